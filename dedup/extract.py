"""Main-text extraction: trafilatura (~20 ms a page) by default, or resiliparse's main-content
heuristics (~1 ms) with trafilatura as the fallback for pages where they find too little prose.

``extractor``: ``"trafilatura"`` (default), ``"resiliparse"``, or ``"auto"`` (an alias of
``resiliparse``: the fast extractor, then trafilatura when :func:`too_little` says it failed).

Why trafilatura stays the default for now (README, "Extraction"): resiliparse + the prose filter
scores higher on goldset-dev (F1 0.979 against 0.974) and flags none of negatives-dev, but on the
sample site's search-result pages, whose text is a few article snippets, it leaves only the
snippets, and one listing page becomes a near copy of the article it quotes.
"""
from __future__ import annotations

import logging
import re

import lxml.etree
import lxml.html

__all__ = ["main_text", "EXTRACTORS", "DEFAULT_EXTRACTOR", "too_little", "check_extractor"]

logger = logging.getLogger(__name__)
_WS = re.compile(r"[ \t\r\f\v]+")

EXTRACTORS = ("resiliparse", "trafilatura", "auto")
DEFAULT_EXTRACTOR = "trafilatura"

#: resiliparse keeps more boilerplate than trafilatura (share bars, captions, related links, short
#: headings): its lines of fewer than MIN_WORDS words are left out. Measured on goldset-dev (F1):
#: all lines 0.960, >= 8 words 0.972, 14: 0.977, 16: 0.980, 20: 0.979, 24: 0.978; with negatives-dev
#: mixed in, 14 and 16 flag one distinct page, 20 none (README, "Extraction").
MIN_WORDS = 20
#: The fast result is taken as failed (navigation only, or a page of short items) when fewer than
#: MIN_CHARS characters of prose lines remain; trafilatura then decides.
MIN_CHARS = 200
#: resiliparse's main-content pass is quadratic in nesting depth (4,000 nested divs: 0.23 s; 50,000:
#: minutes). Pages with more tags than this (goldset-dev and negatives-dev: at most 7,000) go to
#: trafilatura, which handled 50,000 nested divs in under a second.
MAX_TAGS = 20_000


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


def _prose(text: str) -> str:
    """The lines of ``text`` with at least MIN_WORDS words. Headings go too: kept, they made listing
    pages (search results, whose item titles recur) near copies of each other on the sample site."""
    return "\n".join(line for line in text.split("\n") if line.count(" ") >= MIN_WORDS - 1)


def too_little(text: str) -> bool:
    """True when an extract looks failed: too little prose left."""
    return len(text) < MIN_CHARS


_RESILIPARSE = dict(preserve_formatting=True, main_content=True, list_bullets=False, alt_texts=False,
                   links=False, form_fields=False, noscript=False, comments=False)


_PARSER = lxml.html.HTMLParser(remove_comments=True)  # trafilatura's readability fails on comment nodes
_UTF8_PARSER = lxml.html.HTMLParser(encoding="utf-8", remove_comments=True)


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


def trafilatura_text(html: str, tree: lxml.html.HtmlElement | None = None) -> str:
    from trafilatura import extract

    tree = lxml_tree(html) if tree is None else tree
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
    found = tree.xpath("//article")
    if len(found) != 1:
        return None
    return lxml.html.tostring(found[0], encoding="unicode")


def main_text(html: str, tree: lxml.html.HtmlElement | None = None, *,
              extractor: str = DEFAULT_EXTRACTOR) -> tuple[str, str]:
    """Return ``(text, method)``: the page's main text with boilerplate removed, and which extractor
    gave it (``resiliparse``, ``trafilatura``, ``trafilatura-fallback`` or ``none``).

    ``tree``: lxml's tree of ``html`` when the caller already parsed it (trafilatura reuses it).
    """
    if extractor == "trafilatura" or html.count("<") > MAX_TAGS:
        text = trafilatura_text(html, tree)
        return text, "trafilatura" if text else "none"
    from resiliparse.extract.html2text import extract_plain_text

    try:
        raw = _lines(extract_plain_text(_article(tree) or html, **_RESILIPARSE))
    except Exception:  # resiliparse's HTMLParserException on hostile markup: the fallback decides
        logger.debug("resiliparse failed", exc_info=True)
        raw = ""
    text = _prose(raw)
    if too_little(text):
        slow = trafilatura_text(html, tree)
        if slow and (len(slow) > len(text) or not text):
            return slow, "trafilatura-fallback"
    return text, "resiliparse" if text else "none"
