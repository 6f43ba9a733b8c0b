"""The Python reference of the C scanner's main-content rules (dedup/_scan.c, ``walk`` and ``text_lines``):
a walk over lxml's tree that gives the lines the scanner gives in one pass over the HTML. tests/test_scan.py
checks the scanner against it; the rules themselves are described in dedup.extract.native_text. (It began
as the "lxml" candidate of the one-parse spike, benchmarks/spike_onepass.py, which git keeps.)"""
from __future__ import annotations

import re

_BLOCK_TAGS = frozenset((
    "p", "div", "li", "dd", "dt", "td", "th", "tr", "br", "h1", "h2", "h3", "h4", "h5", "h6", "article",
    "section", "header", "footer", "ul", "ol", "dl", "table", "blockquote", "figure", "figcaption", "address",
    "aside", "nav", "main", "pre", "hr", "form", "center", "caption", "tbody", "thead", "tfoot", "fieldset"))
#: never text: scripts, styles, form controls, embedded objects, the head, and navigation elements
_SKIP_TAGS = frozenset(("script", "style", "noscript", "head", "title", "template", "iframe", "textarea", "input",
                        "button", "select", "option", "object", "embed", "svg", "nav", "map"))
#: page-level landmarks (fewer than _PAGE_DEPTH levels below body, or below the one <article>) that are not the
#: story; a <header> goes only by its class or id (an article's header holds its headline)
_PAGE_TAGS = frozenset(("footer", "aside"))
_PAGE_DEPTH = 3
_ROLES = frozenset(("navigation", "contentinfo", "menu", "menubar", "dialog", "alert", "banner", "complementary",
                    "search"))
#: class or id tokens of boilerplate: a token that is one of _BOILER_WORDS, or begins or ends with one of
#: _BOILER_AFFIXES joined by "-" or "_" ("main-nav", "footer-links"); a word inside a longer token is not
#: enough ("field-label-hidden", "and-w-sidebar", "m-advertisement-off-canvas" wrap stories in negatives-dev)
_BOILER_WORDS = ("nav", "navbar", "navigation", "menu", "menubar", "footer", "sidebar", "breadcrumb", "breadcrumbs",
                 "share", "sharing", "social", "comment", "comments", "ad", "ads", "advert", "advertisement",
                 "banner", "promo", "popup", "modal", "cookie", "cookies", "newsletter", "skip", "hidden",
                 "invisible", "masthead", "toolbar")
_BOILER_AFFIXES = ("nav", "navbar", "navigation", "menu", "footer", "breadcrumb", "breadcrumbs", "share", "sharing",
                   "social", "comments", "ad", "ads", "advert", "promo", "newsletter", "cookie")
_BOILER = re.compile(r"(?:^|\s)(?:" + "|".join(_BOILER_WORDS) + r")(?:$|\s)"
                     r"|(?:^|\s)(?:" + "|".join(_BOILER_AFFIXES) + r")[-_]"
                     r"|[-_](?:" + "|".join(_BOILER_AFFIXES) + r")(?:$|\s)", re.IGNORECASE)
#: a container whose class or id names the story or a wrapper is kept whatever else it names ("ad_body",
#: "article__content-well url-breadcrumb"); <article> and <main> are never boilerplate by class
_KEEP = re.compile(r"wrap|content|article|story|main|body|post|entry", re.IGNORECASE)
_KEEP_TAGS = frozenset(("article", "main", "body"))
MIN_PROSE_WORDS = 20  # dedup.extract.MIN_WORDS
_DISPLAY_NONE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_LINE = "\u2029"  # a line break the walk inserts (source newlines inside a paragraph are only blanks)
#: where a link's text begins and ends in the walk's text (private-use characters)
_A0, _A1 = "\ue000", "\ue001"
#: a prose-length line (20 words or more) with at least this share of its characters in links is a row of
#: links (a site footer's "Advertising | Privacy Policy | ...", related headlines run together), not prose
LINK_SHARE = 0.5


def _boilerplate(el, depth: int) -> bool:
    tag = el.tag
    if tag in _SKIP_TAGS or (tag in _PAGE_TAGS and depth < _PAGE_DEPTH):
        return True
    a = el.attrib
    return bool(a) and _boiler_attrs(tag, a)


def _boiler_attrs(tag: str, a) -> bool:
    """Hidden, a boilerplate role, or a class or id of boilerplate (``a``: the element's attributes)."""
    if "hidden" in a or a.get("aria-hidden") == "true" or a.get("role") in _ROLES:
        return True
    style = a.get("style")
    if style and _DISPLAY_NONE.search(style):
        return True
    cls, ident = a.get("class"), a.get("id")
    return bool(cls or ident) and _boiler_words(tag, f"{cls or ''} {ident or ''}")


def _boiler_words(tag: str, words: str) -> bool:
    return _BOILER.search(words) is not None and _KEEP.search(words) is None and tag not in _KEEP_TAGS


def _walk(el, out: list, depth: int, link: bool = False) -> None:
    """``el``'s children's text into ``out``. ``link``: inside a link, where a block (a paragraph, a heading)
    is a teaser card's, not the story's (negatives-dev's CBS pages wrap each related story's title and
    summary in one link), and is left out."""
    for child in el:
        tag = child.tag
        if tag.__class__ is str and not _boilerplate(child, depth):
            if tag in _BLOCK_TAGS:
                if not link or tag == "br" or tag == "hr":
                    out.append(_LINE)
                    if child.text:
                        out.append(child.text)
                    if len(child):
                        _walk(child, out, depth + 1)
                    out.append(_LINE)
            elif tag == "a" and not link:
                out.append(_A0)
                if child.text:
                    out.append(child.text)
                if len(child):
                    _walk(child, out, depth + 1, True)
                out.append(_A1)
            else:
                if child.text:
                    out.append(child.text)
                if len(child):
                    _walk(child, out, depth + 1, link)
        if child.tail:  # a skipped element's tail is its parent's text
            out.append(child.tail)


def lxml_lines(tree) -> str:
    """The main-content text of an lxml tree, one line per block (blanks folded)."""
    root = _one_article(tree)
    if root is None:
        root = tree.find("body")
        if root is None:
            root = tree
    out: list[str] = []
    if root.text and root.tag != "html":
        out.append(root.text)
    _walk(root, out, 0)
    return _text_lines("".join(out))


def _text_lines(raw: str) -> str:
    """The lines of ``raw`` (split at _LINE), blanks folded, link marks removed, rows of links left out."""
    lines = []
    for line in raw.split(_LINE):
        line = " ".join(line.split())
        if _A0 in line:
            plain = line.replace(_A0, "").replace(_A1, "")
            if plain.count(" ") >= MIN_PROSE_WORDS - 1:
                linked = sum(len(part.partition(_A1)[0]) for part in line.split(_A0)[1:])
                if linked >= LINK_SHARE * len(plain):
                    continue
            line = " ".join(plain.split())
        if line:
            lines.append(line)
    return "\n".join(lines)


def _one_article(tree):
    found = None
    for el in tree.iter("article"):
        if found is not None:
            return None
        found = el
    return found
