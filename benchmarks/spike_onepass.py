"""One parse, a spike (issue 14 item 5): can ONE HTML parse give both the tag fields and a main text good
enough to keep accuracy, so that the path drops resiliparse's second parse (and most of trafilatura's fallback)?

Candidates, each HTML -> ``Page`` (decode, parse, tagged fields, main text, sentences), then through the
``Deduplicator`` on the embedded index (``local://`` in a temporary folder), and compared as ``dedup evaluate``
compares (online metric); resiliparse + datasketch (``bench_throughput.py``'s) runs in the same loop on goldset-dev:

* ``today``: ``parse_page`` step by step (lxml parse, fields, resiliparse's main content on its own lexbor
  parse, prose and heading lines, listing reader, trafilatura fallback, navigation check); checked equal to
  ``parse_page``;
* ``lxml``: the same lxml tree and fields; the main text from that tree by a walk that breaks lines at block
  elements and skips boilerplate (script/style, nav, page-level footer and aside, hidden elements, class or
  id naming navigation, menus, footers, sidebars, sharing, comments, ads, popups), the page's one
  ``<article>`` when it has exactly one; then today's 20-word prose rule, headings, listing reader, fallback
  and navigation check unchanged;
* ``lxml-nofallback``: ``lxml`` with the densest block of paragraphs (``dedup.extractcheck.densest_block``) in
  place of trafilatura wherever today's path calls it (too little prose, navigation);
* ``selectolax``, and ``selectolax-nofallback`` (the densest block for trafilatura), only when ``selectolax``
  imports (it is not a dependency of the project): one lexbor parse by selectolax, the fields by one CSS query
  over it, the listing reader's teasers read from that tree, then boilerplate removed (one CSS query, then
  ``lxml``'s rules on the attributes) and inline elements unwrapped, so that each text node left is one line;
  the 20-word rule, headings, listing and navigation check as today. lxml parses the page only when
  trafilatura (or the densest block) has to decide.

Each page goes through every candidate in one loop, the order rotating page by page; each step's cost is
its CPU time (``time.process_time``). Two streams, as ``dedup evaluate`` orders them (seed 7): goldset-dev
alone (P/R/F1) and goldset-dev + negatives-dev (F1, negatives flagged). For each candidate: how many pages'
main text differs from today's (blanks folded; and by more than 10 % of the characters, counted in lines
that only one of the two has), how many pages' fields differ, and how many pages needed
trafilatura. The decision model was fitted on today's extraction: F1 differences are indicative.

    PYTHONPATH=/tmp/sx python benchmarks/spike_onepass.py    # with selectolax installed under /tmp/sx
"""
from __future__ import annotations

import os
import re
import time
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path

import common

CANDIDATES = ("today", "lxml", "lxml-nofallback", "selectolax", "selectolax-nofallback")
NEGATIVES = common.GOLDSET.parent / "negatives-dev"

# -- the main text from lxml's tree (candidate "lxml") ------------------------------------------------------
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


_SEEN: dict[str, bool] = {}  # class and id strings repeat within a page and across a site's pages


def _boiler_words(tag: str, words: str) -> bool:
    found = _SEEN.get(words)
    if found is None:
        if len(_SEEN) > 100_000:
            _SEEN.clear()
        found = _SEEN[words] = _BOILER.search(words) is not None and _KEEP.search(words) is None
    return found and tag not in _KEEP_TAGS


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


# -- one page through each candidate ------------------------------------------------------------------------
class Timer:
    def __init__(self) -> None:
        self.spent: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.clock = time.process_time

    def __call__(self, cand: str, step: str, f, *a, **k):
        c = self.clock()
        out = f(*a, **k)
        self.spent[cand][step] += self.clock() - c
        return out


def _start(html: bytes, url: str, t: Timer, cand: str):
    """The decoded text and an empty Page with its URL's fields."""
    from dedup import page as pg
    from dedup.encoding import decode_html

    text, encoding = t(cand, "decode", decode_html, html, None)
    return text, pg.Page(url=url, encoding=encoding, url_tokens=pg.url_tokens(url))


def _finish(t: Timer, cand: str, page, main, tree):
    """The main text of ``main()`` (``(text, method, fallbacks)``) through today's navigation check (``tree()``
    gives the lxml tree its densest-block fallback reads, when it runs), the list share, the sentences."""
    from dedup.extractcheck import MIN_CHARS, NAV_SHARE, checked_text, list_share, navigation_share
    from dedup.text import split_sentences

    def checked():
        text, method, others = main()
        anchors = page.anchors_same + page.anchors_other
        if len(text) >= MIN_CHARS and navigation_share(text, anchors) < NAV_SHARE:
            page.text, page.extraction = text, method  # what checked_text returns for it
        else:
            page.text, page.extraction = checked_text(text, method, anchors, tree(), others)
        page.list_share = 1.0 if page.extraction == "listing" else round(list_share(page.text), 4)

    t(cand, "main text", checked)
    page.sentences = t(cand, "sentences", split_sentences, page.text)
    return page


def build_today(html: bytes, url: str, t: Timer, cand: str = "today"):
    from resiliparse.extract.html2text import extract_plain_text

    from dedup import extract as ex
    from dedup import page as pg

    text, page = _start(html, url, t, cand)
    tree = t(cand, "parse", ex.lxml_tree, text)
    links = t(cand, "fields", pg._fields, tree, page)

    def main():
        heads = {h for _, h in page.headings}
        if text.count("<") > ex.MAX_TAGS:
            slow = ex.trafilatura_text(text, tree)
            return slow, "trafilatura" if slow else "none", ()
        raw = ex._lines(extract_plain_text(ex._article(tree) or text, **ex._RESILIPARSE))
        prose = ex._prose(raw, heads)
        listing = ex._listing(prose, tree, links)
        if listing is not None:
            return listing[0], listing[1], _others(listing[1])
        if ex.too_little(prose):
            slow = ex.trafilatura_text(text, tree)
            if slow and (len(slow) > len(prose) or not prose):
                return slow, "trafilatura-fallback", ()
        return prose, "resiliparse" if prose else "none", _others("resiliparse" if prose else "none")

    def _others(method):
        return (("trafilatura", lambda: ex.trafilatura_text(text, tree)),) if method == "resiliparse" else ()

    return _finish(t, cand, page, main, lambda: tree)


def build_lxml(html: bytes, url: str, t: Timer, cand: str = "lxml", fallback: bool = True):
    from dedup import extract as ex
    from dedup import page as pg
    from dedup.extractcheck import densest_block

    text, page = _start(html, url, t, cand)
    tree = t(cand, "parse", ex.lxml_tree, text)
    links = t(cand, "fields", pg._fields, tree, page)

    def slow():
        return ex.trafilatura_text(text, tree) if fallback else densest_block(tree)

    def main():
        heads = {h for _, h in page.headings}
        if text.count("<") > ex.MAX_TAGS and fallback:
            s = ex.trafilatura_text(text, tree)
            return s, "trafilatura" if s else "none", ()
        prose = ex._prose(lxml_lines(tree), heads)
        return _decided(prose, ex._listing(prose, tree, links), slow, fallback, others)

    others = (("trafilatura" if fallback else "densest", slow),)
    return _finish(t, cand, page, main, lambda: tree)


def _decided(prose: str, listing, slow, fallback: bool, others: tuple) -> tuple:
    """What both one-parse candidates do with their prose lines, as dedup.extract.main_text does: the
    listing reader's answer, else the fallback when the prose is too little, else the prose."""
    from dedup import extract as ex

    if listing is not None:
        return _onepass(*listing, others)
    if ex.too_little(prose):
        s = slow()
        if s and (len(s) > len(prose) or not prose):
            return s, "trafilatura-fallback" if fallback else "densest-fallback", ()
    return _onepass(prose, "onepass" if prose else "none", others)


def _onepass(text: str, method: str, others: tuple) -> tuple:
    """``(text, method, fallbacks)``: the fast extract is named ``onepass`` (today's ``resiliparse``) and
    gets the fallbacks; a listing gets none (as today)."""
    method = "onepass" if method == "resiliparse" else method
    return text, method, others if method == "onepass" else ()


# -- one lexbor parse by selectolax (candidate "selectolax") ---------------------------------------------------
_SX_FIELDS = "title, meta, h1, h2, h3, h4, h5, h6, b, strong, a"
#: inline elements unwrapped before the text is read, so that each text node left is one line
_SX_INLINE = ["a", "b", "strong", "em", "i", "u", "span", "font", "small", "big", "abbr", "acronym", "cite", "q", "sub",
              "sup", "time", "label", "code", "mark", "s", "strike", "tt", "var", "dfn", "kbd", "samp", "ins", "del",
              "nobr", "img", "wbr"]
_SX_INLINE_CSS = ", ".join(_SX_INLINE)
#: blocks inside a link: a teaser card's, left out as _walk leaves them out
_SX_CARDS = ", ".join(f"a {t}" for t in sorted(_BLOCK_TAGS - {"br", "hr"}))
#: _SKIP_TAGS, page-level landmarks, and every element with attributes _boilerplate reads, in one query (the
#: attributes are then read in Python: CSS has no "word between - and _")
_SX_BOILER = ", ".join(
    [t for t in sorted(_SKIP_TAGS) if t not in ("head", "title")]
    + sorted(_PAGE_TAGS) + ["[hidden]", "[aria-hidden]", "[role]", "[style]", "[class]", "[id]"])


def _sx_has_text(node) -> bool:
    return node.is_element_node and bool(node.text().strip())


def _sx_teaser_of(title):
    """dedup.extract._teaser_of on selectolax's nodes."""
    from dedup.extract import _HEADINGS

    el = title
    up = el.parent
    if up is not None and up.tag in _HEADINGS:
        el = up
    elif up is not None and up.parent is not None and up.parent.tag in _HEADINGS:
        el = up.parent
    for _ in range(3):
        parent = el.parent
        if parent is None:
            return None
        child = parent.first_child  # lxml's parent.text: the text before its first child element
        while child is not None and not child.is_element_node:
            if child.is_text_node and child.text_content and child.text_content.strip():
                return None
            child = child.next
        s = el.prev
        while s is not None:
            if _sx_has_text(s):
                return None
            s = s.prev
        s = el.next
        while s is not None and not s.is_element_node:  # lxml's el.tail
            if s.is_text_node and s.text_content and s.text_content.strip():
                return parent
            s = s.next
        while s is not None:
            if _sx_has_text(s):
                return parent
            s = s.next
        el = parent
    return None


def _sx_teasers(links) -> list:
    """dedup.extract.teasers on selectolax's nodes."""
    from dedup.extract import MIN_TEASERS

    groups: dict = {}
    for rank, a in enumerate(links):
        item = _sx_teaser_of(a)
        if item is not None:
            parent = item.parent
            if parent is not None:
                groups.setdefault(parent.mem_id, {}).setdefault(item.mem_id, (rank, item))
    found = [ri for items in groups.values()
             if len(items) >= MIN_TEASERS and len({it.tag for _, it in items.values()}) == 1 for ri in items.values()]
    return [it for _, it in sorted(found, key=lambda x: x[0])]


def _sx_fields(tree, page) -> list:
    """dedup.page._fields on selectolax's tree: one CSS query, in document order."""
    from dedup import page as pg

    clean = pg._clean
    title = None
    titles = []
    own = pg._host(page.url)
    anchors = 0
    for el in tree.css(_SX_FIELDS):
        tag = el.tag
        if tag == "a":
            href = el.attrs.get("href")
            if href is None:
                continue
            anchors += 1
            label = clean(el.text())
            if label:
                if label.count(" ") >= 2:
                    titles.append(el)
                host = pg._href_host(href.strip(), own)
                (page.anchors_same if host == own else page.anchors_other).append(label)
        elif tag == "b" or tag == "strong":
            bold = clean(el.text())
            if bold:
                page.bold.append(bold)
        elif tag == "meta":
            name = el.attrs.get("name")
            if name is None:
                continue
            name = name.lower()
            if name == "keywords" and not page.keywords:
                page.keywords = clean(el.attrs.get("content"))
            elif name == "description" and not page.description:
                page.description = clean(el.attrs.get("content"))
        elif tag == "title":
            if title is None:
                title = el
        else:
            heading = clean(el.text())
            if heading:
                page.headings.append((int(tag[1]), heading))
    page.title = clean(title.text()) if title is not None else ""
    page.anchor_count = anchors
    return titles


def _sx_boilerplate(node) -> bool:
    tag = node.tag
    if tag in _SKIP_TAGS:
        return True
    if tag in _PAGE_TAGS:
        depth, up = 0, node.parent  # as _walk counts: a child of body is at depth 0
        while up is not None and up.tag != "body":
            depth, up = depth + 1, up.parent
        if up is not None and depth < _PAGE_DEPTH:
            return True
    return _boiler_attrs(tag, node.attributes)


def _sx_lines(tree) -> str:
    """The main-content text of selectolax's tree (changed: boilerplate removed, inline elements unwrapped)."""
    for node in tree.css(_SX_BOILER):
        if _sx_boilerplate(node):
            node.decompose()  # unlinks (lexbor keeps the memory until the tree goes): nested matches are safe
    for node in tree.css(_SX_CARDS):
        node.decompose()
    articles = tree.css("article")
    root = articles[0] if len(articles) == 1 else (tree.body or tree.root)
    if root is None:
        return ""
    for node in root.css("a"):  # the link marks of _walk, as text nodes around each link
        node.insert_before(_A0)
        node.insert_after(_A1)
    for node in root.css(_SX_INLINE_CSS):  # one query (unwrap_tags makes one a tag)
        node.unwrap(delete_empty=True)
    root.merge_text_nodes()
    return _text_lines(root.text(separator=_LINE, skip_empty=True))


def build_selectolax(html: bytes, url: str, t: Timer, cand: str = "selectolax", fallback: bool = True):
    from selectolax.lexbor import LexborHTMLParser

    from dedup import extract as ex
    from dedup.extractcheck import densest_block

    text, page = _start(html, url, t, cand)
    tree = t(cand, "parse", LexborHTMLParser, text)
    links = t(cand, "fields", _sx_fields, tree, page)
    lx: list = []

    def lxml():  # lxml parses the page only when trafilatura or the densest block must decide
        if not lx:
            lx.append(ex.lxml_tree(text))
        return lx[0]

    def slow():
        return ex.trafilatura_text(text, lxml()) if fallback else densest_block(lxml())

    def main():
        heads = {h for _, h in page.headings}
        if text.count("<") > ex.MAX_TAGS and fallback:
            s = slow()
            return s, "trafilatura" if s else "none", ()
        items = _sx_teasers(links)
        blobs = [" ".join(el.text().split()) for el in items]
        prose = ex._prose(_sx_lines(tree), heads)
        return _decided(prose, _sx_listing(prose, items, blobs), slow, fallback, others)

    others = (("trafilatura" if fallback else "densest", slow),)
    return _finish(t, cand, page, main, lxml)


def _sx_listing(prose: str, items: list, blobs: list[str]):
    """dedup.extract._listing with the teasers read before the tree was changed."""
    from dedup import extract as ex

    # the teasers' text with a blank between blocks (their inline elements are unwrapped by now)
    return ex._teaser_listing(prose, blobs, lambda: [" ".join(el.text(separator=" ").split()) for el in items],
                              "onepass")


BUILDERS = {
    "today": build_today,
    "lxml": build_lxml,
    "lxml-nofallback": lambda html, url, t: build_lxml(html, url, t, "lxml-nofallback", fallback=False),
    "selectolax": build_selectolax,
    "selectolax-nofallback": lambda html, url, t: build_selectolax(html, url, t, "selectolax-nofallback", fallback=False),
}


# -- the run --------------------------------------------------------------------------------------------------
def stream(folders: list[Path], seed: int) -> list[tuple[str, str, bytes]]:
    """``(cluster, url, html)`` in ``dedup evaluate``'s order over the folders' clusters."""
    import random

    from dedup.cli.evaluate import load_clusters

    pages = sorted(p for folder in folders for p in load_clusters(folder))
    order = list(range(len(pages)))
    random.Random(seed).shuffle(order)
    return [(pages[i][0], f"http://eval.invalid/p{i}", pages[i][1].read_bytes()) for i in order]


def changed_share(a: str, b: str) -> float:
    """The share of the two texts' characters in lines (blanks folded) that only one of them has."""
    la = {" ".join(line.split()) for line in a.split("\n")} - {""}
    lb = {" ".join(line.split()) for line in b.split("\n")} - {""}
    total = sum(map(len, la)) + sum(map(len, lb))
    return (sum(map(len, la ^ lb)) / total) if total else 0.0


def fields_of(page) -> tuple:
    return (page.title, page.keywords, page.description, page.headings, page.bold, page.anchors_same,
            page.anchors_other, page.anchor_count)


PEER = "resiliparse + datasketch"


def run(pages, candidates, negatives: set[str], check: bool, peer: bool) -> dict:
    """Every page through every candidate (and the peer), the order rotating page by page."""
    import shutil
    import tempfile

    from dedup.cli.evaluate import Outcome, metric
    from dedup.deduplicator import Deduplicator, Verdict
    from dedup.page import parse_page
    from index.local import LocalIndex

    tmp = Path(tempfile.mkdtemp(prefix="spike-onepass-"))
    indexes = {c: LocalIndex(tmp / c) for c in candidates}
    dedups = {c: Deduplicator(indexes[c]) for c in candidates}
    lsh = None
    if peer:
        from bench_throughput import MinHashPipeline, resiliparse_text

        lsh = MinHashPipeline(resiliparse_text)
    timer = Timer()
    outcomes = defaultdict(list)
    differs = defaultdict(int)
    differs_10 = defaultdict(int)
    fields_differ = defaultdict(int)
    slow = defaultdict(int)
    url_cluster: dict[str, str] = {}
    seen: set[str] = set()
    turns = list(candidates) + ([PEER] if peer else [])
    try:
        for n, (cluster, url, html) in enumerate(pages):
            url_cluster[url] = cluster
            k = n % len(turns)
            built = {}
            for c in turns[k:] + turns[:k]:
                if c == PEER:
                    dup = timer(PEER, "whole path", lsh, html, url)
                    verdict = Verdict("near_duplicate" if dup else "unique", dup, "minhash_lsh" if dup else "none")
                    outcomes[PEER].append(Outcome(cluster, url, url, verdict, cluster in seen, url_cluster.get(dup)))
                    continue
                built[c] = page = BUILDERS[c](html, url, timer)
                verdict = timer(c, "decision", dedups[c].process, page)
                outcomes[c].append(Outcome(cluster, url, url, verdict, cluster in seen,
                                           url_cluster.get(verdict.duplicate_of or verdict.scores.get("candidate", ""))))
            ref = built.get("today")
            if check and ref is not None and asdict(ref) != asdict(parse_page(html, url)):
                raise SystemExit(f"{url}: the steps of 'today' made another page than parse_page: update this script")
            for c in candidates:
                page = built[c]
                if ref is not None:
                    differs[c] += " ".join(page.text.split()) != " ".join(ref.text.split())
                    differs_10[c] += changed_share(page.text, ref.text) > 0.1
                    fields_differ[c] += fields_of(page) != fields_of(ref)
                slow[c] += "trafilatura" in page.extraction
            seen.add(cluster)
    finally:
        for index in indexes.values():
            index.close()
        shutil.rmtree(tmp, ignore_errors=True)
    out = {}
    for c in turns:
        m = metric(outcomes[c])
        ms = {step: sec / len(pages) * 1e3 for step, sec in timer.spent[c].items()}
        ms["whole path"] = sum(ms.values()) if c != PEER else ms["whole path"]
        out[c] = {"P": m["precision"], "R": m["recall"], "F1": m["f1"],
                  "misses": [f"{o.cluster}/{o.url.rsplit('/', 1)[-1]}" for o in m["misses"]],
                  "negatives_flagged": sum(o.cluster in negatives and o.verdict.status != "unique" for o in outcomes[c]),
                  "negatives": [f"{o.cluster} ({o.verdict.status}, like {o.best_cluster})" for o in outcomes[c]
                                if o.cluster in negatives and o.verdict.status != "unique"],
                  "text_differs": differs.get(c), "text_differs_10": differs_10.get(c), "fields_differ": fields_differ.get(c), "trafilatura": slow.get(c),
                  "ms": ms, "pages": len(pages)}
    return out


def table(r: dict) -> list[str]:
    peer = r.get(PEER)
    rows = ["| candidate | parse | fields | main text | parse+fields+main | whole path HTML -> verdict | pages/s "
            "against resiliparse + datasketch | P | R | F1 | negatives flagged | text differs from today (> 10 %) | "
            "fields differ | trafilatura ran |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c, x in r.items():
        ms = x["ms"]
        core = ms.get("parse", 0) + ms.get("fields", 0) + ms.get("main text", 0)
        ratio = f"{peer['ms']['whole path'] / ms['whole path']:.2f}x" if peer else "-"
        if c == PEER:
            rows.append(f"| {c} | - | - | - | - | {ms['whole path']:.3f} | 1.00x | {x['P']:.4f} | {x['R']:.4f} | "
                        f"{x['F1']:.4f} | {x['negatives_flagged']} | - | - | - |")
            continue
        rows.append(f"| {c} | {ms.get('parse', 0):.3f} | {ms.get('fields', 0):.3f} | {ms.get('main text', 0):.3f} | "
                    f"{core:.3f} | {ms['whole path']:.3f} | {ratio} | {x['P']:.4f} | {x['R']:.4f} | {x['F1']:.4f} | "
                    f"{x['negatives_flagged']} | {x['text_differs']} ({x['text_differs_10']}) | {x['fields_differ']} | {x['trafilatura']} |")
    return rows


def main(argv=None) -> int:
    p = common.parser(__doc__)
    common.goldset_arg(p)
    p.add_argument("--negatives", default=os.environ.get("DEDUP_NEGATIVES", str(NEGATIVES)),
                   help=f"negatives-dev folder (default {NEGATIVES}; $DEDUP_NEGATIVES)")
    p.add_argument("--candidates", default=",".join(CANDIDATES),
                   help=f"comma-separated, of {', '.join(CANDIDATES)} (default all; selectolax only if it imports)")
    p.add_argument("--limit", type=int, default=None, help="pages of each stream (default all; --quick: 60)")
    p.add_argument("--check", action="store_true", help="check that 'today' makes parse_page's page (slower)")
    p.add_argument("--no-peer", action="store_true",
                   help="leave out resiliparse + datasketch (timed in the same loop on goldset-dev by default)")
    args = p.parse_args(argv)
    if common.goldset_missing(args.goldset):
        print(common.goldset_missing(args.goldset))
        return 0
    candidates = [c.strip() for c in args.candidates.split(",") if c.strip()]
    for c in candidates:
        if c not in CANDIDATES:
            p.error(f"unknown candidate {c!r}")
    if any(c.startswith("selectolax") for c in candidates):
        try:
            import selectolax  # noqa: F401
        except ImportError as e:
            print(f"selectolax candidates skipped ({e}): pip install --target /tmp/sx selectolax, PYTHONPATH=/tmp/sx")
            candidates = [c for c in candidates if not c.startswith("selectolax")]
    peer = not args.no_peer and common.datasketch_missing() is None
    limit = args.limit or (60 if args.quick else None)
    gold = Path(args.goldset)
    streams = {"goldset-dev": [gold]}
    negatives: set[str] = set()
    if Path(args.negatives).is_dir():
        streams["goldset-dev + negatives-dev"] = [gold, Path(args.negatives)]
        negatives = {d.name for d in Path(args.negatives).iterdir() if d.is_dir()}
    else:
        print(f"negatives-dev not found at {args.negatives}: the mixed stream is skipped")
    # warm-up: punkt, WordNet, resiliparse, trafilatura and its justext stop lists load on first use
    warm = stream([gold], args.seed)[:3]
    for c in candidates:
        for _, url, html in warm:
            BUILDERS[c](html, url, Timer())
    from trafilatura import external  # the stop lists trafilatura's justext rescue reads on its first use

    if not external.JT_STOPLIST:
        external.jt_stoplist_init()
    if peer:
        from bench_throughput import resiliparse_text

        resiliparse_text(warm[0][2])
    print(f"load average {common.loadavg():.2f}; {common.machine_line(common.machine())}")
    print("CPU ms a page (time.process_time); decisions on the embedded index (local://, a temporary folder)")
    results = {}
    for name, folders in streams.items():
        pages = stream(folders, args.seed)
        pages = pages[:limit] if limit else pages
        results[name] = r = run(pages, candidates, negatives, args.check, peer and name == "goldset-dev")
        print(f"\n{name}: {len(pages)} pages, seed {args.seed}, load average now {common.loadavg():.2f}")
        print("\n".join(table(r)))
        misses = {c: set(x["misses"]) for c, x in r.items()}
        for c, x in r.items():
            if x["negatives"]:
                print(f"{c}: negatives-dev pages flagged: {', '.join(x['negatives'])}")
            if c not in ("today", PEER) and "today" in misses:
                extra, fewer = sorted(misses[c] - misses["today"]), sorted(misses["today"] - misses[c])
                print(f"{c}: missed where today finds the copy: {', '.join(extra) or 'none'}; "
                      f"found where today misses: {', '.join(fewer) or 'none'}")
    if args.json:
        import json

        Path(args.json).write_text(json.dumps({"machine": common.machine(), "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
