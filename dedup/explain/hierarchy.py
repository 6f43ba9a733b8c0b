"""Semantic hierarchies and their matching (seed 001, sections 4.1 and 4.3).

A page's *semantic hierarchy* is a tree: the document at the root, headings nesting
by level (an h3 under the h2 before it), and the text blocks (paragraphs, list items)
under the heading they follow. Every sentence of the page belongs to exactly one node
(a heading holds its own text), in document order, so a node's sentences are a run of
the page's sentence positions.

It is built from a :class:`~dedup.page.Page`, not from HTML: the main text keeps one
block per line and :attr:`Page.headings` says which lines are headings, so the same
code serves parsed HTML and the title/text records of the search index and the dropped
log. A page without headings (a record) gets them inferred: a short line without
closing punctuation that is followed by more text.

Real pages need two repairs before their lines are split into sentences:

* **hard wraps** (:func:`unwrap`): text copied from e-mail or ``<pre>`` keeps its line
  breaks, so one sentence arrives as four lines ("... the parents of" / "a severely
  disabled child ..."). A line is joined to the next when it ends no sentence (no
  ``.!?…:;`` or ``。！？：；`` before closing quotes or brackets) and the next continues it: it begins in
  lower case, or the line ends with a comma or a dash, or it has four words or more and
  ends with a stop word ("... identified only as" / "Ashley ..."), or (on a page whose
  headings are known, so a long line is no heading) it is 50 characters or more. Lines the
  page marks as headings are never joined; a line ending in ``)`` ("(AP)") only before
  lower case;
* **boilerplate**: "(AP)", "Advertisement", "(Story continues below)", "All Access" are
  lines, not sentences; a sentence of fewer than five words and fewer than
  :data:`MIN_SENTENCE_WORDS` refined words (:func:`dedup.explain.sentences.refine`: stop words and
  numbers out) is left out of the tree, so it can neither match nor count as unmatched.

Matching (the seed's Tree_Matching / Node_Comparison / Graphical_Display): given the
pairs of equal sentences, every node gets the number of its sentences equal to some
sentence of the other page, the share of its sentences that is (the seed's shaded
area), the same over its whole section (node plus descendants), and the nodes of the
other tree it shares sentences with. The seed walks binary trees in order to visit
every node pair; a node's sentences are visited once either way, so the result is the
same as that walk, at O(matched pairs) after the sentence comparison.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Sequence

from ..page import Page
from .sentences import Refiner
from ..text import HAN_KANA, split_sentences

__all__ = ["Node", "Hierarchy", "build_hierarchy", "match_hierarchies", "unwrap", "MIN_SENTENCE_WORDS"]

#: sentences with fewer refined words than this are boilerplate, not sentences (module docstring)
MIN_SENTENCE_WORDS = 3
#: a line this long that ends no sentence, on a page whose headings are known, is a hard wrap
WRAPPED_LINE_CHARS = 50
# Chinese and Japanese stops, commas and closing brackets are full-width: 。！？：；，、」』）】〕
_FULL_STOPS = "\u3002\uff01\uff1f\uff1a\uff1b"
_FULL_CLOSERS = "\u300d\u300f\uff09\u3011\u3015"
_ENDS_SENTENCE = tuple(".!?:;\u2026" + _FULL_STOPS)
_TRAILING = "\"'\u201d\u2019)]*" + _FULL_CLOSERS
_CONTINUES = tuple(",-\u2013\u2014\uff0c\u3001")

_WS = re.compile(r"\s+")
_ITEM = re.compile(r"^(?:[-*\u2022\u2013\u00b7]|\d{1,3}[.)])\s+")
_CLOSING = tuple(".!?:;,\u2026\"'\u201d\u2019)]" + _FULL_STOPS + _FULL_CLOSERS + "\uff0c\u3001")
_HAN_KANA = re.compile(f"[{HAN_KANA}]")
INFERRED_HEADING_WORDS = 14


@dataclass
class Node:
    """One node: ``kind`` is ``document``, ``heading``, ``block`` or ``item``; ``level`` is
    0 for the document, the heading level (1-6) for headings, and the enclosing level + 1
    for blocks. ``sentences`` are positions in the page's sentence list."""

    id: int
    kind: str
    label: str
    level: int
    parent: int | None
    children: list[int] = field(default_factory=list)
    sentences: list[int] = field(default_factory=list)
    matched: int = 0
    section_sentences: int = 0
    section_matched: int = 0
    partners: dict[int, int] = field(default_factory=dict)

    @property
    def share(self) -> float | None:
        """Share of this node's sentences equal to a sentence of the other page (None: no sentences)."""
        return self.matched / len(self.sentences) if self.sentences else None

    @property
    def section_share(self) -> float | None:
        return self.section_matched / self.section_sentences if self.section_sentences else None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["partners"] = [[k, v] for k, v in sorted(self.partners.items())]
        d["share"] = None if self.share is None else round(self.share, 4)
        d["section_share"] = None if self.section_share is None else round(self.section_share, 4)
        return d


@dataclass
class Hierarchy:
    """A page's nodes (``nodes[0]`` is the root; ids are positions, in document order) and sentences."""

    nodes: list[Node]
    sentences: list[str]

    def node_of_sentence(self) -> list[int]:
        out = [0] * len(self.sentences)
        for node in self.nodes:
            for s in node.sentences:
                out[s] = node.id
        return out

    def depth(self, node_id: int) -> int:
        d, n = 0, self.nodes[node_id]
        while n.parent is not None:
            d, n = d + 1, self.nodes[n.parent]
        return d

    def to_dict(self) -> dict[str, Any]:
        return {"nodes": [n.to_dict() for n in self.nodes]}


def _key(text: str) -> str:
    return _WS.sub(" ", text).strip().casefold()


def _words(text: str) -> int:
    """Words of ``text``: blank-separated, two Han or kana characters counting as one (as the scanner's)."""
    han = len(_HAN_KANA.findall(text))
    return (len(_HAN_KANA.sub(" ", text).split()) + (han + 1) // 2) if han else len(text.split())


def _label(text: str, words: int = 12) -> str:
    if _HAN_KANA.search(text):  # no blanks to cut at: two characters a word
        return text[: 2 * words] + ("\u2026" if len(text) > 2 * words else "")
    parts = text.split()
    return " ".join(parts[:words]) + (" \u2026" if len(parts) > words else "")


def _inferred_heading(line: str, is_last: bool) -> bool:
    return (not is_last and not _ITEM.match(line) and _words(line) <= INFERRED_HEADING_WORDS
            and not line.rstrip().endswith(_CLOSING))


def _joins(line: str, following: str, long_wraps: bool, stop_words: frozenset[str]) -> bool:
    """Whether ``following`` continues the sentence ``line`` leaves open (a hard wrap)."""
    end = line.rstrip(_TRAILING)
    if not end or end.endswith(_ENDS_SENTENCE):
        return False
    first = following.lstrip("\"'\u201c\u2018([")[:1]
    if first.islower():
        return True
    if line.endswith((")", "]")):  # "(AP)", "(Story continues below)": a whole aside
        return False
    if end.endswith(_CONTINUES):
        return True
    words = end.split()
    if len(words) >= 4 and words[-1].lower() in stop_words:  # a short "Title here" may be a heading
        return True
    return long_wraps and len(line) >= WRAPPED_LINE_CHARS


def unwrap(lines: Sequence[str], keep: Iterable[str] = (), stop_words: frozenset[str] | None = None) -> list[str]:
    """``lines`` (stripped, non-empty) with hard-wrapped runs joined by a space (none between CJK) (module
    docstring); a line whose :func:`_key` is in ``keep`` (a heading) is never joined. When
    ``keep`` names headings, a line of :data:`WRAPPED_LINE_CHARS` or more that ends no
    sentence is also joined (it is no heading, and few paragraphs end without punctuation).
    ``stop_words``: a line ending in one continues (default: :attr:`Refiner.stop_words`)."""
    stop = Refiner().stop_words if stop_words is None else stop_words
    fixed = {_key(k) for k in keep}
    out: list[str] = []
    for line in lines:
        if out and _key(out[-1]) not in fixed and _key(line) not in fixed and _joins(out[-1], line, bool(fixed), stop):
            # Chinese and Japanese put no blank between the two halves of a wrapped sentence
            cjk = _HAN_KANA.match(out[-1].rstrip(_TRAILING + "\uff0c\u3001")[-1:]) and _HAN_KANA.match(line[:1])
            out[-1] = f"{out[-1]}{line}" if cjk else f"{out[-1]} {line}"
        else:
            out.append(line)
    return out


def _sentence(text: str, min_words: int, refine: Refiner) -> bool:
    """A sentence, not boilerplate: ``min_words`` refined words, or a clause of 5 words or more
    ("The village has no shop." has two refined words and is a sentence; "(Story continues below)"
    has two and is not)."""
    return min_words <= 0 or _words(text) >= 5 or len(refine(text)) >= min_words


def build_hierarchy(page: Page, *, min_words: int = MIN_SENTENCE_WORDS, refiner: Refiner | None = None) -> Hierarchy:
    """The semantic hierarchy of ``page`` (see the module docstring): hard-wrapped lines joined,
    sentences with fewer than ``min_words`` refined words left out (0 keeps every one);
    ``refiner``: the :class:`~dedup.explain.sentences.Refiner` to count them with (default: a new one)."""
    refine = refiner or Refiner()
    root = Node(id=0, kind="document", label=page.title or page.url, level=0, parent=None)
    nodes = [root]
    sentences: list[str] = []
    lines = unwrap([ln.strip() for ln in (page.text or "").splitlines() if ln.strip()],
                   (text for _, text in page.headings), refine.stop_words)
    if not lines:
        kept = [x for x in page.sentences if _sentence(x, min_words, refine)]
        if kept:  # a page given as sentences only: one block
            block = Node(id=1, kind="block", label=_label(kept[0]), level=1, parent=0,
                         sentences=list(range(len(kept))))
            root.children.append(1)
            nodes.append(block)
            sentences = kept
        return Hierarchy(nodes, sentences)
    levels: dict[str, int] = {}
    for level, text in page.headings:
        levels.setdefault(_key(text), int(level))
    stack: list[Node] = [root]
    for n, line in enumerate(lines):
        if page.headings:
            level = levels.get(_key(line))
        else:
            level = (1 if n == 0 else 2) if _inferred_heading(line, n == len(lines) - 1) else None
        parts = [p for p in (split_sentences(line) or [line]) if _sentence(p, min_words, refine)]
        if not parts and level is None:
            continue  # boilerplate: no node
        if level is not None:
            while stack[-1].kind == "heading" and stack[-1].level >= level:
                stack.pop()
            kind = "heading"
        else:
            level = stack[-1].level + 1
            kind = "item" if _ITEM.match(line) else "block"
        parent = stack[-1]
        node = Node(id=len(nodes), kind=kind, label=_label(_ITEM.sub("", line)), level=level, parent=parent.id,
                    sentences=list(range(len(sentences), len(sentences) + len(parts))))
        sentences.extend(parts)
        parent.children.append(node.id)
        nodes.append(node)
        if kind == "heading":
            stack.append(node)
    return Hierarchy(nodes, sentences)


def match_hierarchies(a: Hierarchy, b: Hierarchy, pairs: Iterable[Sequence[int]]) -> list[list[int]]:
    """Fill in the match fields of both trees' nodes from the equal sentence ``pairs``
    (``(i, j, ...)``: sentence i of a equals sentence j of b); return the edges
    ``[node_a, node_b, sentence pairs]`` sorted by node ids."""
    node_a, node_b = a.node_of_sentence(), b.node_of_sentence()
    hit_a: set[int] = set()
    hit_b: set[int] = set()
    edges: Counter[tuple[int, int]] = Counter()
    for pair in pairs:
        i, j = int(pair[0]), int(pair[1])
        hit_a.add(i)
        hit_b.add(j)
        edges[(node_a[i], node_b[j])] += 1
    for tree, hits in ((a, hit_a), (b, hit_b)):
        for node in tree.nodes:
            node.matched = sum(1 for s in node.sentences if s in hits)
            node.section_sentences = len(node.sentences)
            node.section_matched = node.matched
            node.partners = {}
        for node in reversed(tree.nodes):  # children come after their parent
            if node.parent is not None:
                up = tree.nodes[node.parent]
                up.section_sentences += node.section_sentences
                up.section_matched += node.section_matched
    for (na, nb), count in edges.items():
        a.nodes[na].partners[nb] = a.nodes[na].partners.get(nb, 0) + count
        b.nodes[nb].partners[na] = b.nodes[nb].partners.get(na, 0) + count
    return [[na, nb, c] for (na, nb), c in sorted(edges.items())]
