"""Page features from HTML: the tagged fields that TDW weights, and the main text.

:func:`parse_page` is the single entry point from HTML (bytes or str) plus the page
URL to a :class:`Page`. It never raises on bad markup: an unparseable or empty page
gives a Page with empty fields and ``extraction`` saying why.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from functools import cache
from urllib.parse import urlsplit, unquote

import lxml.html

from .encoding import decode_html, looks_binary
from .extract import DEFAULT_EXTRACTOR, MAX_TAGS, check_extractor, element_text, lxml_tree, main_teasers, too_little
from .extractcheck import checked_main_text, checked_native_text, list_share
from .indexmarks import unindexed
from .keys import raw_key
from .text import split_sentences

from ._scan import scan as _c_scan  # the C scanner (setup.py builds it; dedup/__init__ requires it)

__all__ = ["Page", "parse_page", "text_page", "url_tokens", "limit_text", "MAX_PAGE_BYTES", "MAX_TEXT_CHARS",
           "site_host"]

#: Input limits (docs/reliability.md, "Input limits"). A body longer than MAX_PAGE_BYTES is cut there
#: before decoding and parsing; main text longer than MAX_TEXT_CHARS is cut before featurizing.
#: Measured: a 20 MB page takes minutes to parse and featurize uncut, seconds cut at 5 MB.
MAX_PAGE_BYTES = 5_000_000
MAX_TEXT_CHARS = 200_000

logger = logging.getLogger(__name__)
_URL_SPLIT = re.compile(r"[^\w]+|_", re.UNICODE)
_URL_NOISE = {"http", "https", "www", "html", "htm", "php", "asp", "aspx", "jsp", "shtml", "index"}


@dataclass
class Page:
    """The fields of one page, as plain text."""

    url: str
    title: str = ""
    keywords: str = ""
    description: str = ""
    headings: list[tuple[int, str]] = field(default_factory=list)
    bold: list[str] = field(default_factory=list)
    anchors_same: list[str] = field(default_factory=list)
    anchors_other: list[str] = field(default_factory=list)
    anchor_count: int = 0
    url_tokens: list[str] = field(default_factory=list)
    text: str = ""
    sentences: list[str] = field(default_factory=list)
    encoding: str = ""
    extraction: str = ""
    #: share of the main text in list items: ~1 on a listing page (archive, tag, section; extractcheck)
    list_share: float = 0.0
    #: set when an input limit cut the page: {"bytes": [original, kept]} and/or {"chars": [original, kept]}
    truncated: dict = field(default_factory=dict)
    #: the exact key of a page with HTML and no main text (dedup.keys.raw_key: its body's hash), '' otherwise:
    #: its content hash, so that a copy of it is caught though there is no text to compare (issue 33)
    raw_key: str = ""


def _clean(text: str | None) -> str:
    """Whitespace runs folded to one space, ends stripped (str.split's whitespace is re's \\s)."""
    return " ".join(text.split()) if text else ""


def url_tokens(url: str) -> list[str]:
    """Words of a URL's host, path and query, lowercased, without scheme noise."""
    parts = urlsplit(url)
    raw = " ".join((parts.hostname or "", unquote(parts.path), unquote(parts.query)))
    return [t for t in _URL_SPLIT.split(raw.lower()) if t and t not in _URL_NOISE and not t.isdigit()]


def site_host(url: str | None) -> str:
    """``url``'s host, lowercased, without a leading ``www.`` ("" when there is none or it cannot be read): the
    site a same-site anchor is of, and the site whose own text the exact-copy rule keeps (dedup.deduplicator)."""
    try:
        host = (urlsplit(url).hostname or "").lower() if url else ""
    except ValueError:
        return ""
    return host[4:] if host.startswith("www.") else host


def _cut_bytes(html: bytes | str, limit: int) -> bytes | str:
    """The first ``limit`` bytes (characters of a str), not splitting a UTF-8 sequence."""
    if isinstance(html, str):
        return html[:limit]
    end = limit
    while end > max(0, limit - 3) and 0x80 <= html[end] <= 0xBF:  # a continuation byte: back off
        end -= 1
    return html[:end]


def limit_text(page: Page, max_chars: int | None = MAX_TEXT_CHARS) -> Page:
    """Cut ``page.text`` (and its sentences) to ``max_chars`` characters, recording it in ``truncated``."""
    if max_chars is None or len(page.text) <= max_chars:
        return page
    original = len(page.text)
    cut = page.text[:max_chars]
    space = cut.rfind(" ", max(0, max_chars - 100))  # do not end on half a word
    page.text = cut[:space] if space > 0 else cut
    page.sentences = split_sentences(page.text)
    page.truncated["chars"] = [original, len(page.text)]
    return page


def text_page(url: str, title: str | None, text: str | None, extraction: str = "item") -> Page:
    """A page known only by its URL, title and main text (an item without HTML, a logged or
    indexed page); ``extraction`` says where the text came from."""
    text = str(text or "")
    return Page(url=url, title=str(title or ""), text=text, sentences=split_sentences(text),
                url_tokens=url_tokens(url), extraction=extraction)


def parse_page(html: bytes | str, url: str, *, content_type: str | None = None,
               max_bytes: int | None = MAX_PAGE_BYTES, max_text_chars: int | None = MAX_TEXT_CHARS,
               extractor: str = DEFAULT_EXTRACTOR) -> Page:
    """Extract a :class:`Page` from ``html`` fetched from ``url``.

    ``max_bytes``: a longer body is cut there before anything else (a str is cut at that many
    characters); ``max_text_chars``: longer main text is cut there. Either cut is recorded in
    ``page.truncated``. ``None`` turns a limit off. ``extractor``: see :mod:`dedup.extract`;
    ``page.extraction`` names the one that gave the text.

    Our C scanner (dedup/_scan.c) gives the tagged fields, the listing reader's teasers and, with the
    default ``extractor="native"``, the main-content lines, in one pass over the HTML. With
    ``extractor="resiliparse"`` it gives the page's one ``<article>`` instead, resiliparse's input when
    there is one, and resiliparse parses the page (or that article) again with its own (lexbor) parser for
    the main text: 0.3 ms, against ~75 us per element to reach lexbor's nodes from Python in resiliparse
    2.0. lxml parses the page only when trafilatura or the densest-block fallback has to read it (too
    little prose, more than MAX_TAGS tags, navigation). When the scanner cannot read a page, lxml's tree
    gives the fields (:func:`_fields`, the reference the scanner is tested against) and resiliparse the
    text. A page left without main text gets its body's exact key (``raw_key``, :func:`dedup.keys.raw_key`).
    """
    check_extractor(extractor)
    page, body = _parse(html, url, content_type, max_bytes, max_text_chars, extractor)
    if not page.text.strip():
        page.raw_key = raw_key(body)
    return page


def _parse(html: bytes | str | None, url: str, content_type: str | None, max_bytes: int | None,
           max_text_chars: int | None, extractor: str) -> tuple[Page, bytes | str]:
    """:func:`parse_page`'s page, and the body it was read from (decoded; as it came when binary)."""
    truncated = {}
    if html is None:
        html = b""
    if max_bytes is not None and len(html) > max_bytes:
        original = len(html)
        html = _cut_bytes(html, max_bytes)
        truncated["bytes"] = [original, len(html)]
    if looks_binary(html):  # an image or an archive served as HTML: no text to find in it
        return Page(url=url, url_tokens=url_tokens(url), truncated=truncated, extraction="binary"), html
    text, encoding = decode_html(html, content_type)
    tokens = url_tokens(url)
    page = Page(url=url, encoding=encoding, url_tokens=tokens, truncated=truncated)
    if not text.strip():
        page.extraction = "empty"
        return page, text
    cuts = dict(truncated)  # before the read adds its own (the text limit's)
    page, marked = _read(text, page, extractor, max_text_chars)
    if marked:  # parts the page marks as not for indexing: left out, unless that leaves too little text
        cut = unindexed(text)
        if cut is not text:
            unmarked, _ = _read(cut, Page(url=url, encoding=encoding, url_tokens=list(tokens),
                                          truncated={**cuts, "unindexed": [len(text), len(cut)]}),
                                extractor, max_text_chars)
            if not too_little(unmarked.text):
                return unmarked, text
    return page, text


def _read(text: str, page: Page, extractor: str, max_text_chars: int | None) -> tuple[Page, bool]:
    """``page`` (its URL, encoding and cuts set) read from the decoded, non-blank ``text``, and whether it
    may hold a part not for indexing (:mod:`dedup.indexmarks`): the scanner met a comment opening one, or,
    on lxml's path, the page holds a comment."""
    own = site_host(page.url)
    scanned = _scan(text, own, lines=extractor == "native")
    if scanned is not None:
        return _scanned_page(text, page, own, scanned, extractor, max_text_chars), scanned[12]
    if extractor == "native":
        extractor = "resiliparse"  # the scanner failed on this page: lxml's path decides it
    tree = lxml_tree(text)
    if tree is None:
        page.extraction = "unparseable"
        return page, False
    links = _fields(tree, page)
    page.text, page.extraction = checked_main_text(text, tree, page.anchors_same + page.anchors_other,
                                                   extractor=extractor, headings={h for _, h in page.headings},
                                                   links=links)
    # the scanner did not read it, so did not say whether a part is marked: unindexed looks (a comment opens one)
    return _finish(page, max_text_chars), "<!--" in text


def _finish(page: Page, max_text_chars: int | None) -> Page:
    """The list share, the text limit and the sentences of a page whose main text is known."""
    page.list_share = round(list_share(page.text), 4)
    if max_text_chars is not None and len(page.text) > max_text_chars:
        return limit_text(page, max_text_chars)
    page.sentences = split_sentences(page.text)
    return page


def _scan(text: str, own: str, lines: bool = True) -> tuple | None:
    """The C scanner's reading of ``text`` (dedup/_scan.c; ``own``: the page's host, :func:`_host`;
    ``lines``: the native extractor's main-content lines too), or None when it cannot read it (a lone
    surrogate, any error): the caller then takes lxml's path."""
    try:
        return _c_scan(text, own=own, lines=lines, max_tags=MAX_TAGS)  # main-content only within MAX_TAGS tags
    except Exception:  # whatever goes wrong (memory), lxml's path still reads the page
        logger.warning("the native scanner failed; lxml reads the page", exc_info=True)
        return None


def _scanned_page(text: str, page: Page, own: str, scanned: tuple, extractor: str,
                  max_text_chars: int | None) -> Page:
    """``page`` from the scanner's fields, and its main text: resiliparse's from the scanner's one-<article>
    HTML and teasers, or (extractor ``native``) the scanner's main-content lines. lxml parses the page only
    when trafilatura or the densest block has to read it (once: the tree is cached)."""
    (page.title, page.keywords, page.description, page.headings, page.bold, anchors, page.anchor_count,
     lines, teasers, nodes, prose, article, _) = scanned
    if not nodes:  # nothing but comments, a doctype or stray end tags: lxml finds no document either
        page.extraction = "unparseable"
        return page
    for href, label, same in anchors:  # same: the scanner read the href's host, None where it left it to us
        if same is None:
            same = _href_host(href.strip(), own) == own
        (page.anchors_same if same else page.anchors_other).append(label)
    labels = page.anchors_same + page.anchors_other
    if extractor == "native":
        page.text, page.extraction = checked_native_text(text, prose, main_teasers(teasers, lines), labels,
                                                         {h for _, h in page.headings})
    else:
        page.text, page.extraction = checked_main_text(
            text, cache(lambda: lxml_tree(text)), labels, extractor=extractor,
            headings={h for _, h in page.headings}, scanned=(article and article[2], teasers))
    return _finish(page, max_text_chars)


_FIELD_TAGS = ("title", "meta", "h1", "h2", "h3", "h4", "h5", "h6", "b", "strong", "a")
_HOST = re.compile(r"(?:[a-z][a-z0-9+.\-]*:)?//(?:[^/?#@]*@)?(\[[^\]]*\]|[^/?#:]*)", re.IGNORECASE)


def _href_host(href: str, own: str) -> str:
    """The host an anchor points to: its own for a relative link (what :func:`site_host` gives, cheaper)."""
    if "//" not in href[:8] and not href.startswith("//"):
        return own
    m = _HOST.match(href)
    if m is None:  # a scheme urlsplit does not take as one: let it decide
        return site_host(href)
    host = m.group(1).lower().strip("[]")
    return host[4:] if host.startswith("www.") else host


def _fields(tree: lxml.html.HtmlElement, page: Page) -> list[lxml.html.HtmlElement]:
    """The tagged fields, in document order, from one walk over the tree. Returns the links of three
    words or more (dedup.extract.title_links), which the listing test reads."""
    title = None
    titles = []
    own = site_host(page.url)
    anchors = 0
    for el in tree.iter(_FIELD_TAGS):
        tag = el.tag
        if tag == "a":
            href = el.get("href")
            if href is None:
                continue
            anchors += 1
            label = _clean(element_text(el))
            if label:
                if label.count(" ") >= 2:
                    titles.append(el)
                host = _href_host(href.strip(), own)
                (page.anchors_same if host == own else page.anchors_other).append(label)
        elif tag == "b" or tag == "strong":
            bold = _clean(element_text(el))
            if bold:
                page.bold.append(bold)
        elif tag == "meta":
            name = el.get("name")
            if name is None:
                continue
            name = name.lower()
            if name == "keywords" and not page.keywords:
                page.keywords = _clean(el.get("content"))
            elif name == "description" and not page.description:
                page.description = _clean(el.get("content"))
        elif tag == "title":
            if title is None:
                title = el
        else:
            heading = _clean(element_text(el))
            if heading:
                page.headings.append((int(tag[1]), heading))
    page.title = _clean(element_text(title)) if title is not None else ""
    page.anchor_count = anchors
    return titles
