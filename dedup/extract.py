"""Main-text extraction: our own C scanner's main-content lines (``native``, the default: ~0.2 ms a page,
one pass that also gives the fields), resiliparse's main-content heuristics (~1 ms) or trafilatura
(~20 ms, the fallback of both for pages where they find too little prose).

``extractor``: ``"native"`` (default): the scanner (``dedup._scan``) reads the fields, the main-content
lines and the teasers in one pass over the HTML, and lxml parses the page only when trafilatura has to
decide (:func:`native_text`); ``"resiliparse"``: the scanner's fields, resiliparse's text (a second parse,
by lexbor); ``"trafilatura"``; ``"auto"`` (an alias of ``resiliparse``: the fast extractor, then
trafilatura when :func:`too_little` says it failed). Why native is the default (measured in
docs/performance.md, "Native by default"): held-out accuracy equal or ahead at each of seven arrival
orders, and each page parsed once, at 1.7x the pages a second of ``resiliparse``.

Two repairs make the fast extract a page's text rather than a bag of long lines (docs/choices.md,
"Main-text extraction"):

* **listings**: a search-result, tag or section page is a list of teasers (a title link, a snippet,
  a date), and resiliparse keeps only the snippets long enough to be prose, so a result page quoting
  one long sentence of an article read as a near copy of it. When most of the kept prose sits in
  such teasers (:func:`teasers`), the page's text is its teasers, one list line each (``- ``), titles included
  (method ``listing``): a list of other pages, not any one of them. When the prose outside the
  teasers is an article of its own (not :func:`too_little`), the page is that story beside a long
  related-stories list, and its text is that prose (goldset-dev's Plea/p24, Sanitation/s2);
* **headings**: a heading line (one of the page's h1-h6) that introduces prose is kept, though
  short, so the text keeps its outline (dedup.hierarchy nests sentences under it).
"""
from __future__ import annotations

import logging
import re
from typing import Callable, Collection

import lxml.etree
import lxml.html

from ._scan import is_prose as _scan_is_prose
from ._scan import title_words as _title_words

__all__ = ["main_text", "native_text", "main_teasers", "EXTRACTORS", "DEFAULT_EXTRACTOR", "too_little",
           "check_extractor", "teasers", "title_links", "element_text", "tree_of"]

logger = logging.getLogger(__name__)
_WS = re.compile(r"[ \t\r\f\v]+")


class _NothingFound(logging.Filter):
    """trafilatura logs ``discarding data: None`` at WARNING for every page it finds too little text on. Here
    that is an answer (the next fallback reads the page, or it is ``unextractable``: the verdict says which),
    not a fault, and its lines broke into a reindex's progress (issue 33): the record is made a DEBUG one,
    passed on only where DEBUG is on (``dedup -v``, Scrapy's default log level)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.WARNING or not str(record.msg).startswith("discarding data"):
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


# on trafilatura's own logger, which only this module calls (without importing trafilatura: the filter is
# kept by the logging module, and the records of every other logger pass untouched)
logging.getLogger("trafilatura.core").addFilter(_NothingFound())

EXTRACTORS = ("resiliparse", "trafilatura", "auto", "native")
DEFAULT_EXTRACTOR = "native"

#: resiliparse keeps more boilerplate than trafilatura (share bars, captions, related links, short
#: headings): its lines of fewer than MIN_WORDS words are left out. Measured on goldset-dev (F1):
#: all lines 0.960, >= 8 words 0.972, 14: 0.977, 16: 0.980, 20: 0.979, 24: 0.978; with negatives-dev
#: mixed in, 14 and 16 flag one distinct page, 20 none (docs/accuracy.md, the line filter sweep).
MIN_WORDS = 20
#: The fast result is taken as failed (navigation only, or a page of short items) when fewer than
#: MIN_CHARS characters of prose lines remain; trafilatura then decides.
MIN_CHARS = 200
#: resiliparse's main-content pass is quadratic in nesting depth (4,000 nested divs: 0.23 s; 50,000:
#: minutes). Pages with more tags than this (goldset-dev and negatives-dev: at most 7,000) go to
#: trafilatura, which handled 50,000 nested divs in under a second.
MAX_TAGS = 20_000
#: A heading is kept when prose follows it within this many lines (a byline or a date between them).
HEADING_REACH = 3
#: A page is a listing when at least LISTING_SHARE of its prose (characters) lies in teasers, of
#: which it has at least MIN_TEASERS under one parent.
LISTING_SHARE = 0.5
MIN_TEASERS = 3


def check_extractor(name: str) -> str:
    if name not in EXTRACTORS:
        raise ValueError(f"extractor must be one of {', '.join(EXTRACTORS)} (got {name!r})")
    return name


def _fold(line: str) -> str:
    """Runs of blanks (space, tab, CR, FF, VT) to one space, ends stripped; most lines have none."""
    if "  " in line or "\t" in line or "\r" in line or "\f" in line or "\v" in line:
        line = _WS.sub(" ", line)
    return line.strip()


def _lines(text: str) -> str:
    return "\n".join(_fold(line) for line in text.splitlines() if line.strip())


#: At least MIN_WORDS words (two Han or kana characters a word: Chinese and Japanese have no blanks), at least
#: half of them holding a letter: a row of 20 lottery numbers or scores is not prose. The scanner's own test
#: (dedup/_scan.c ``is_prose``), so the two cannot drift: 0.4-1.4 us a line where a Python regex took 6.5-19
#: (goldset-dev's, negatives-dev's lines; the listing reader asks it of ~30 a page)
_is_prose = _scan_is_prose


#: A site's legal footer (a copyright notice, the wire services' "may not be published, broadcast,
#: rewritten or redistributed") is a long line on every page of the site: prose to the 20-word rule,
#: boilerplate to a reader. trafilatura drops it; resiliparse keeps it when it is not in <footer>.
_LEGAL = re.compile(r"\u00a9|\(c\) ?(?:19|20)\d\d|\ball rights reserved\b|\bmay not be (?:re)?published\b",
                    re.IGNORECASE)


def _legal(line: str) -> bool:
    """``_LEGAL`` matches ``line``. An ASCII line without "(c)", "rights reserved" or "published" in
    any case cannot match (IGNORECASE on ASCII is lowercasing), and most lines have none: the
    regex then is not run (outside ASCII, IGNORECASE also matches e.g. the long s: regex alone)."""
    if line.isascii():
        lower = line.lower()
        if "(c)" not in lower and "rights reserved" not in lower and "published" not in lower:
            return False
    return _LEGAL.search(line) is not None


def _prose(text: str, headings: Collection[str] = ()) -> str:
    """The lines of ``text`` with at least MIN_WORDS words and no legal notice, and the ``headings``
    lines that introduce them (one comes within the next HEADING_REACH lines: a headline over a
    subheading, a byline or a date). A heading over nothing kept (a sidebar's "Most read" over its
    links) goes."""
    lines = text.split("\n")
    kept = []
    for i, line in enumerate(lines):
        if _is_prose(line):
            if not _legal(line):
                kept.append(line)
        elif line in headings:
            if any(map(_is_prose, lines[i + 1: i + 1 + HEADING_REACH])):
                kept.append(line)
    return "\n".join(kept)


def too_little(text: str) -> bool:
    """True when an extract looks failed: too little prose left."""
    return len(text) < MIN_CHARS


_RESILIPARSE = dict(preserve_formatting=True, main_content=True, list_bullets=False, alt_texts=False,
                   links=False, form_fields=False, noscript=False, comments=False)


def _html_parser(**options) -> lxml.html.HTMLParser:
    """lxml.html's parser with every element an ``HtmlElement``, chosen in C: lxml.html's own class
    lookup is a Python call per element object made (~300 a page, 0.1 ms), for form classes
    (FormElement, InputElement, ...) that neither this project nor trafilatura uses."""
    parser = lxml.html.HTMLParser(**options)
    parser.set_element_class_lookup(lxml.etree.ElementDefaultClassLookup(
        element=lxml.html.HtmlElement, comment=lxml.html.HtmlComment, pi=lxml.html.HtmlProcessingInstruction,
        entity=lxml.html.HtmlEntity))
    return parser


_PARSER = _html_parser(remove_comments=True)  # trafilatura's readability fails on comment nodes
_UTF8_PARSER = _html_parser(encoding="utf-8", remove_comments=True)


def lxml_tree(html: str) -> lxml.html.HtmlElement | None:
    """``html`` parsed by lxml, or None when it cannot be."""
    try:
        return lxml.html.document_fromstring(html, parser=_PARSER)
    except (lxml.etree.ParserError, ValueError):
        # lxml refuses str with an encoding declaration and empty documents
        try:
            return lxml.html.document_fromstring(html.encode("utf-8"), parser=_UTF8_PARSER)
        except (lxml.etree.ParserError, ValueError):
            return None


#: lxml's tree of a page, or a function that parses it (called only when the tree is read: the default
#: extractor's fields, teasers and one-<article> HTML come from dedup._scan, and only trafilatura and the
#: densest-block fallback need lxml's tree)
Tree = lxml.html.HtmlElement | None | Callable[[], lxml.html.HtmlElement | None]


def tree_of(tree: Tree) -> lxml.html.HtmlElement | None:
    """The tree itself of a :data:`Tree` (parsing the page when it is a function)."""
    return tree() if callable(tree) else tree


def trafilatura_text(html: str, tree: Tree = None) -> str:
    from trafilatura import extract

    tree = lxml_tree(html) if tree is None else tree_of(tree)  # a parse that failed is not tried again
    if tree is None:
        return ""
    try:
        text = extract(tree, include_comments=False, include_tables=True, deduplicate=False) or ""
    except Exception:  # trafilatura raises a zoo of lxml/Value errors on hostile markup
        logger.debug("trafilatura failed", exc_info=True)
        text = ""
    return _lines(text)


def _article(tree: lxml.html.HtmlElement | None) -> str | None:
    """The HTML of the page's one ``<article>`` element, when it has exactly one: the publisher's own
    mark of the story, which leaves out the banners, ads and footers resiliparse's heuristics keep."""
    if tree is None:
        return None
    found = []
    for el in tree.iter("article"):  # C-level iteration: a tenth of what the XPath //article cost
        found.append(el)
        if len(found) > 1:
            return None
    if not found:
        return None
    return lxml.html.tostring(found[0], encoding="unicode")


_HEADINGS = frozenset(("h1", "h2", "h3", "h4", "h5", "h6"))
#: a link without a heading is a teaser's title from this many words on (two Han or kana characters a word):
#: the scanner's ``title_words``, which :func:`title_links` asks too
_TITLE_WORDS = 3


_BLOCKS = frozenset(("p", "div", "li", "dd", "dt", "td", "th", "tr", "br", "h1", "h2", "h3", "h4", "h5", "h6",
                     "article", "section", "header", "footer", "ul", "ol", "dl", "table", "blockquote", "figure",
                     "figcaption", "address", "aside", "nav", "main", "pre", "hr"))


def _block_text(el: lxml.html.HtmlElement) -> str:
    """``el``'s text with a space where a block element starts or ends, blanks folded: a teaser's
    title, snippet and date stay apart even when the markup has no blank between them."""
    parts: list[str] = []

    def walk(e: lxml.html.HtmlElement) -> None:
        block = e.tag in _BLOCKS
        if block:
            parts.append(" ")
        if e.text and isinstance(e.tag, str):
            parts.append(e.text)
        for child in e:
            walk(child)
            if child.tail:
                parts.append(child.tail)
        if block:
            parts.append(" ")

    walk(el)
    return " ".join("".join(parts).split())


def element_text(el: lxml.html.HtmlElement) -> str:
    """``el.text_content()`` (an element's text, its tail excluded), read from ``el.text`` when it
    has no child: the same string (all 132,197 such field elements of goldset-dev and negatives-dev)
    at a tenth of the cost of text_content's XPath."""
    return el.text_content() if len(el) else el.text or ""


def title_links(tree: lxml.html.HtmlElement) -> list[lxml.html.HtmlElement]:
    """The links (with an href) of _TITLE_WORDS words or more, in document order: teaser titles can
    only be among them (parse_page collects them in its one walk over the fields instead)."""
    return [a for a in tree.iter("a")
            if a.get("href") is not None and _title_words(" ".join(element_text(a).split()))]


def _has_text(el: lxml.html.HtmlElement) -> bool:
    return bool(element_text(el).strip()) if isinstance(el.tag, str) else False


def _teaser_of(title: lxml.html.HtmlElement) -> lxml.html.HtmlElement | None:
    """The teaser a title link begins: climbing at most three levels while nothing with text comes
    before it, the first ancestor with text after it (a snippet, a date). Read from the structure,
    not the text, so that a link near the top of a big element costs no walk over that element."""
    el = title
    up = el.getparent()
    if up is not None and up.tag in _HEADINGS:  # the heading is the title (within two levels)
        el = up
    elif up is not None and up.getparent() is not None and up.getparent().tag in _HEADINGS:
        el = up.getparent()
    for _ in range(3):
        parent = el.getparent()
        if parent is None or (parent.text and parent.text.strip()):
            return None
        if any(_has_text(s) for s in el.itersiblings(preceding=True)):
            return None  # the title does not begin its container: an inline or later link
        if (el.tail and el.tail.strip()) or any(_has_text(s) for s in el.itersiblings()):
            return parent
        el = parent
    return None


def teasers(tree: lxml.html.HtmlElement | None,
            links: list[lxml.html.HtmlElement] | None = None) -> list[lxml.html.HtmlElement]:
    """The page's teasers, in document order: elements that begin with a title link (or the heading
    holding it) followed by more text (a snippet, a date), at least MIN_TEASERS of them with the
    same tag under one parent, as a search-result, tag or section page lists them. A navigation
    list (short links alone) has none; nor has an article whose inline links sit mid-paragraph (a
    teaser begins with its title). ``links``: :func:`title_links` of ``tree``, when known."""
    if tree is None:
        return []
    groups: dict = {}
    for rank, a in enumerate(title_links(tree) if links is None else links):
        item = _teaser_of(a)
        if item is not None:
            parent = item.getparent()
            if parent is not None:
                groups.setdefault(parent, {}).setdefault(item, rank)
    found = [(rank, el) for items in groups.values()
             if len(items) >= MIN_TEASERS and len({el.tag for el in items}) == 1 for el, rank in items.items()]
    return [el for _, el in sorted(found, key=lambda x: x[0])]


def _listing(prose: str, tree: lxml.html.HtmlElement | None,
             links: list[lxml.html.HtmlElement] | None) -> tuple[str, str] | None:
    """``(text, method)`` of a page most of whose ``prose`` (at least LISTING_SHARE) lies in teasers:
    the teasers, one list line each (``listing``), or, when the prose outside them is an article of its own
    (not :func:`too_little`: a story beside a long related-stories list), that prose (``resiliparse``).
    None when the page is not mostly teasers."""
    if not any(map(_is_prose, prose.split("\n"))):
        return None
    items = teasers(tree, links)
    return _teaser_listing(prose, [" ".join(element_text(el).split()) for el in items],
                           lambda: [_block_text(el) for el in items], "resiliparse")


def _teaser_listing(prose: str, texts: list[str], block_texts: Callable[[], list[str]],
                    method: str) -> tuple[str, str] | None:
    """:func:`_listing` given the teasers' ``texts`` (blanks folded) and their :func:`_block_text`;
    ``method`` names the prose when the page is a story beside a teaser list."""
    lines = [line for line in prose.split("\n") if _is_prose(line)]
    if not lines or not texts:
        return None
    blob = "\n".join(texts)
    inside = sum(len(line) for line in lines if " ".join(line.split()) in blob)
    if inside < LISTING_SHARE * sum(len(line) for line in lines):
        return None
    outside = [line for line in prose.split("\n") if " ".join(line.split()) not in blob]
    if not too_little("\n".join(line for line in outside if _is_prose(line))):
        return "\n".join(outside), method
    # each teaser a list line, marked "- " as trafilatura marks list items: list_share reads a listing
    # from its text, whichever extractor read it
    return "\n".join("- " + line for line in block_texts()), "listing"


# -- the native extractor: dedup._scan's main-content lines ------------------------------------------------
def main_teasers(items: list[tuple[str, str]], lines: str | None) -> list[tuple[str, str]]:
    """The teasers (``(text, block text)`` each, the scanner's) that lie in the main content the scanner's
    walk kept: those whose block text begins with one of its ``lines`` (the title, or the whole teaser when
    title and snippet share a line). A "most read" or "related" list in an ``<aside>``, a ``nav`` or a
    boilerplate block is left out of the listing test and of a listing's text: on a site whose every page
    carries the same sidebar teasers, two listings otherwise share those lines (same-site seed 1's
    ``archive-0011`` read as ``archive-0010``; docs/performance.md, "Why native loses three pages").
    ``lines`` None (not asked for): ``items`` unchanged."""
    if lines is None or not items:
        return items
    starts: dict[str, list[str]] = {}
    for line in lines.split("\n"):
        if line:
            starts.setdefault(line.split(" ", 1)[0], []).append(line)
    out = []
    for item in items:
        block = item[1]
        if any(block.startswith(line) and (len(block) == len(line) or block[len(line)] == " ")
               for line in starts.get(block.split(" ", 1)[0], ())):
            out.append(item)
    return out


def native_text(html: str, prose: str | None, items: list[tuple[str, str]],
                tree: Callable[[], lxml.html.HtmlElement | None]) -> tuple[str, str]:
    """:func:`main_text` from the scanner's output: ``prose`` (what :func:`_prose` keeps of its
    main-content lines with the page's headings, None when they were not asked for: a page of more than
    MAX_TAGS tags, which trafilatura reads) and ``items`` (the teasers, ``(text, block text)`` each).
    ``tree()`` parses the page with lxml, for trafilatura: only called when it has to decide (too little
    prose). The method is ``native`` where today's is ``resiliparse``.

    The scanner's lines (dedup/_scan.c, ``walk`` and ``text_lines``; docs/performance.md, "The native
    extractor: one compiled pass"): block tags break lines, blanks folded; script, style, form controls, ``nav``, a
    ``footer`` or ``aside`` fewer than three levels below the root, hidden elements, ARIA roles of
    navigation and class or id tokens of boilerplate are left out, and so are blocks inside a link and
    rows of links (a line of MIN_WORDS words or more, half its characters in links); the root is the
    page's one ``<article>`` when it has exactly one, else ``<body>``."""
    if prose is None:
        text = trafilatura_text(html, tree())
        return text, "trafilatura" if text else "none"
    return _decided(prose, _scanned_listing(prose, items, "native"), html, tree, "native")


def _scanned_listing(prose: str, items: list[tuple[str, str]], method: str) -> tuple[str, str] | None:
    """:func:`_teaser_listing` of the scanner's teasers (``(text, block text)`` each)."""
    return _teaser_listing(prose, [t for t, _ in items], lambda: [b for _, b in items], method)


def _decided(text: str, listing: tuple[str, str] | None, html: str, tree: Tree, method: str) -> tuple[str, str]:
    """The fast extract's answer: the listing reader's when it read the page as one, else trafilatura's
    text when the fast one is too little and trafilatura's is longer, else ``text`` (named ``method``)."""
    if listing is not None:
        return listing
    if too_little(text):
        slow = trafilatura_text(html, tree)
        if slow and (len(slow) > len(text) or not text):
            return slow, "trafilatura-fallback"
    return text, method if text else "none"


def main_text(html: str, tree: Tree = None, *,
              extractor: str = "resiliparse", headings: Collection[str] = (),
              links: list[lxml.html.HtmlElement] | None = None,
              scanned: tuple[str | None, list[tuple[str, str]]] | None = None) -> tuple[str, str]:
    """Return ``(text, method)``: the page's main text with boilerplate removed, and which extractor
    gave it (``resiliparse``, ``listing``, ``trafilatura``, ``trafilatura-fallback`` or ``none``).

    ``tree``: lxml's tree of ``html`` when the caller already parsed it (trafilatura reuses it;
    the listing test reads it), or a function that parses it. ``headings``: the page's heading texts
    (Page.headings), which the fast extract keeps where they introduce prose. ``links``:
    :func:`title_links` of ``tree``, when the caller collected them. ``scanned``: ``(article, teasers)``
    from dedup._scan (parse_page): the source of the page's one ``<article>`` without its comments (None
    when it has not exactly one) and the teasers as ``(text, block text)``, read instead of the tree's
    (:func:`_article`, :func:`teasers`); the tree is then parsed only when trafilatura runs.
    ``extractor``: ``resiliparse`` (``auto``) or ``trafilatura``; ``native``'s text comes from the scanner's
    lines, :func:`native_text` (``dedup.page.parse_page`` routes it), so it is refused here.
    """
    if extractor == "native":
        raise ValueError("main_text reads resiliparse's or trafilatura's text; native's is native_text's "
                         "(parse_page(..., extractor='native'))")
    if extractor == "trafilatura" or html.count("<") > MAX_TAGS:
        text = trafilatura_text(html, tree)
        return text, "trafilatura" if text else "none"
    from resiliparse.extract.html2text import extract_plain_text

    if scanned is None:
        tree = tree_of(tree)
        article = _article(tree)
    else:
        article, items = scanned
    try:
        raw = _lines(extract_plain_text(article or html, **_RESILIPARSE))
    except Exception:  # resiliparse's HTMLParserException on hostile markup: the fallback decides
        logger.debug("resiliparse failed", exc_info=True)
        raw = ""
    text = _prose(raw, headings)
    listing = _listing(text, tree, links) if scanned is None else _scanned_listing(text, items, "resiliparse")
    return _decided(text, listing, html, tree, "resiliparse")
