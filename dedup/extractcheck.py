"""Catch a failed main-text extract and try a fallback (issue 16, item 3).

A main-text extractor fails two ways on real sites: it returns the site's navigation (trafilatura
on a one-paragraph brief in a heavy template returns the 60-link menu, and every such brief of the
site then looks like a copy of every other), or it returns almost nothing. :func:`checked_text`
detects either and tries, in order, the other extractor and the densest block of paragraphs; the
first that is not navigation and not shorter wins, and the method says which it was, e.g.
``trafilatura>densest`` (read: trafilatura failed, the densest block was used). When every
fallback is navigation too, the text is dropped (``...>navigation``): the page is kept as
unextractable and compared with nothing, rather than matched on its menu.

Kept apart from :mod:`dedup.extract` (the extractors themselves) so that either can change alone.
"""
from __future__ import annotations

import re
from functools import cache
from typing import Any, Callable, Collection, Iterable

import lxml.html

from .extract import Tree, lxml_tree, main_text, native_text, trafilatura_text, tree_of
from .keys import normalise_texts

__all__ = ["navigation_share", "is_navigation", "list_share", "densest_block", "checked_text", "checked_main_text",
           "checked_native_text", "NAV_SHARE", "MIN_CHARS"]

#: an extract whose characters are at least this share of link labels is navigation. Measured on
#: goldset-dev + negatives-dev (trafilatura): no page above 0.25; the same-site briefs: 0.9 and up.
NAV_SHARE = 0.5
#: fewer characters than this is "too little" (as dedup.extract.MIN_CHARS); a fallback is tried
MIN_CHARS = 200
_BLOCKS = ("p", "pre", "blockquote")
_WS = re.compile(r"\s+")


def navigation_share(text: str, anchors: Iterable[str]) -> float:
    """The share of ``text``'s characters in lines that are link labels (or runs of them)."""
    return _share(_lines(text), anchors)


def _lines(text: str) -> list[str]:
    """``text``'s lines normalised, empty ones left out."""
    return [norm for norm in normalise_texts(text.split("\n")) if norm]


def _short(norm: str) -> bool:
    """A normalised line of at most 12 words (one space between words): it may be several labels run together."""
    return norm.count(" ") <= 11


def _share(norms: list[str], anchors: Iterable[str]) -> float:
    """:func:`navigation_share` of the normalised lines ``norms``."""
    labels = set(normalise_texts(list(anchors)))
    labels.discard("")
    words = None  # every label's words, for the short lines that are no label (made on first need)
    total = nav = 0
    for norm in norms:
        total += len(norm)
        if norm in labels:
            nav += len(norm)
        elif _short(norm):
            if words is None:
                words = _label_words(labels)
            if _all_labels(norm, words):
                nav += len(norm)
    return nav / total if total else 0.0


def is_navigation(text: str, anchors: Iterable[str]) -> bool:
    """``navigation_share(text, anchors) >= NAV_SHARE``, most often without normalising every label: a line of
    more than 12 words is navigation only when it is a label itself, and an ASCII anchor normalises to at most
    its own length, so when the short lines are less than NAV_SHARE of the text, only the anchors that could be
    one of its long lines (as long as the shortest of them, or not ASCII) are normalised to tell (on goldset-dev,
    every page is told so: 0.074 -> 0.038 ms a page)."""
    anchors = list(anchors)
    norms = _lines(text)
    total = sum(map(len, norms))
    short, longs = 0, []
    for norm in norms:
        if _short(norm):
            short += len(norm)
        else:
            longs.append(norm)
    # nav / total as navigation_share divides, with nav at most short + the long lines that are labels
    if longs and short / total < NAV_SHARE:  # (no long line: all is short, the share decides)
        least = min(map(len, longs))
        labels = set(normalise_texts([a for a in anchors if len(a) >= least or not a.isascii()]))
        if (short + sum(len(norm) for norm in longs if norm in labels)) / total < NAV_SHARE:
            return False
    return _share(norms, anchors) >= NAV_SHARE  # the lines normalised once


def list_share(text: str) -> float:
    """The share of ``text``'s characters in list items (lines trafilatura marks with ``- ``): 1.0 on
    a listing (archive, tag and section pages: their text is the teaser list), ~0 in an article.
    Measured with trafilatura: same-site listings 1.0, articles 0; goldset-dev and negatives-dev
    pages: median 0, 99th percentile 0.23. resiliparse marks no list items (its prose filter drops
    short teaser lines instead), so with it this is 0."""
    if not text.startswith("- ") and "\n- " not in text:  # no list item: most pages, without the walk
        return 0.0
    total = listed = 0
    for line in text.split("\n"):
        total += len(line)
        if line.startswith("- "):
            listed += len(line)
    return listed / total if total else 0.0


def _label_words(labels: set[str]) -> set[str]:
    """Every word of the (normalised) labels."""
    return {w for label in labels for w in label.split()}


def _all_labels(norm: str, label_words: set[str]) -> bool:
    """A short line of several labels run together ("Home News Sport"): every word is a label's."""
    return all(w in label_words for w in norm.split())


def _own_text(el: lxml.html.HtmlElement) -> str:
    """``el``'s text without the text of its links."""
    parts = [el.text or ""]
    for child in el:
        if child.tag != "a":
            parts.append(_own_text(child) if isinstance(child.tag, str) else "")
        parts.append(child.tail or "")
    return "".join(parts)


def densest_block(tree: lxml.html.HtmlElement | None) -> str:
    """The paragraphs of the element holding the most paragraph text outside links (one line each).

    The classic "densest text block" fallback: the story is the run of <p> under one parent;
    menus, teaser lists and footers are links or list items, not paragraphs."""
    if tree is None:
        return ""
    groups: dict[lxml.html.HtmlElement, list[str]] = {}
    for el in tree.iter(_BLOCKS):
        parent = el.getparent()
        if parent is None or any(a.tag in ("nav", "header", "footer", "aside") for a in el.iterancestors()):
            continue
        text = _WS.sub(" ", _own_text(el)).strip()
        if text:
            groups.setdefault(parent, []).append(text)
    if not groups:
        return ""
    best = max(groups.values(), key=lambda texts: sum(map(len, texts)))
    return "\n".join(best)


def checked_text(text: str, method: str, anchors: list[str],
                 tree: Tree,
                 others: Iterable[tuple[str, Callable[[], str]]] = ()) -> tuple[str, str]:
    """``(text, method)``: the extract, or a fallback when it is navigation or too little.

    ``tree``: the page's lxml tree, which the densest block reads, or a function that parses it (called
    only when the densest block is tried). ``others``: ``(name, extract)`` of the alternative extractors
    to try before the densest block. A fallback replaces navigation when it is not navigation itself; it
    replaces a short extract when it is longer (and not navigation).
    """
    is_nav = bool(text) and is_navigation(text, anchors)
    if not is_nav and len(text) >= MIN_CHARS:
        return text, method
    for name, extract in (*others, ("densest", lambda: densest_block(tree_of(tree)))):
        alt = extract()
        if not alt or is_navigation(alt, anchors):
            continue
        if is_nav or len(alt) > len(text):
            return alt, f"{method}>{name}"
    if is_nav:
        return "", f"{method}>navigation"
    return text, method


def checked_main_text(html: str, tree: Tree, anchors: list[str], *,
                      extractor: str, **options: Any) -> tuple[str, str]:
    """:func:`dedup.extract.main_text`, then :func:`checked_text` with the other extractor as the
    first fallback (resiliparse after trafilatura, trafilatura after resiliparse). The method
    names the extractor(s) used, e.g. ``trafilatura`` or ``trafilatura>densest``. ``tree``: lxml's
    tree, or a function that parses it (once: parse_page caches it), when the options carry the
    scanner's reading (``scanned``)."""
    text, method = main_text(html, tree, extractor=extractor, **options)
    others: tuple[tuple[str, Callable[[], str]], ...] = ()
    if method == "trafilatura":
        others = (("resiliparse", lambda: main_text(html, tree, extractor="resiliparse", **options)[0]),)
    elif method == "resiliparse":
        others = (("trafilatura", lambda: trafilatura_text(html, tree)),)
    return checked_text(text, method, anchors, tree, others)


def checked_native_text(html: str, prose: str | None, teasers: list[tuple[str, str]],
                        anchors: list[str], headings: Collection[str] = ()) -> tuple[str, str]:
    """:func:`dedup.extract.native_text` from the scanner's ``prose`` and ``teasers``, then
    :func:`checked_text` with trafilatura as the first fallback of a ``native`` text. lxml parses the
    page (once) only when trafilatura or the densest block has to read it.

    When all of that leaves no text, resiliparse (with the page's ``headings``) reads the page before it
    is called unextractable (method ``...>resiliparse``): the scanner leaves out blocks whose class names
    boilerplate, where resiliparse's main-content rules may keep a story (issue 33). Only a page left
    without text pays for it, so no other page's text changes."""
    tree = cache(lambda: lxml_tree(html))
    text, method = native_text(html, prose, teasers, tree)
    others: tuple[tuple[str, Callable[[], str]], ...] = ()
    if method == "native":
        others = (("trafilatura", lambda: trafilatura_text(html, tree())),)
    text, method = checked_text(text, method, anchors, tree, others)
    if not text.strip():
        alt = main_text(html, tree, extractor="resiliparse", headings=headings)[0]
        if alt.strip() and not is_navigation(alt, anchors):
            return alt, f"{method}>resiliparse"
    return text, method
