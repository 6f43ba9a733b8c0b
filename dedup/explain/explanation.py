"""Why two pages are copies, sentence by sentence (seed 001: Yerra 2005, chapters 3 and 4).

:func:`explain` compares every sentence of page A with every sentence of page B:

* **fuzzy-set EQ** (:mod:`dedup.explain.fuzzy`): ``Sim`` both ways from word-word correlations,
  equal when the smaller is >= 0.825 and they differ by <= 0.15. These pairs are the
  ``matches``; the seed adopts this method for HTML documents;
* **three least-frequent 4-grams** (:mod:`dedup.explain.sentences`): each sentence's
  representation, and the pairs whose representations are identical (``gram_matches``;
  the seed's first method, exact copies only);
* the **degrees of resemblance** A->B and B->A (share of a page's sentences equal to a
  sentence of the other) and their **odds ratio**;
* the **semantic hierarchies** of both pages with the share of each node's sentences
  matched (:mod:`dedup.explain.hierarchy`).

The counts behind the correlations and 4-gram frequencies default to the shipped
tables (:func:`dedup.explain.sentences.default_tables`); pass ``tables=`` to use ones extended
from a crawl (:meth:`SentenceTables.extended`). :func:`dedup.explain.dotplot.dotplot_svg` draws the matches.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..page import Page
from .fuzzy import Thresholds, eq, odds_ratio, resemblance, similarity_matrices
from .hierarchy import MIN_SENTENCE_WORDS, build_hierarchy, match_hierarchies
from .sentences import Refiner, SentenceTables, default_tables

__all__ = ["Explanation", "explain", "METHOD"]

METHOD = "fuzzy-set IR EQ (seed 001, Eq. 3.1-3.4); RS and odds ratio (Eq. 4.1-4.3)"


def _r(x: float) -> float:
    return round(float(x), 4)


@dataclass
class Explanation:
    """The sentence-level comparison of page A with page B. Indices are 0-based positions in
    ``sentences_a``/``sentences_b``.

    ``matches``: ``(i, j, score)`` for every pair with EQ = 1, ``score`` the smaller of the two
    Sims; ``sims``: ``(Sim(a_i, b_j), Sim(b_j, a_i))`` of each match, same order.
    ``nearest_a[i]``: ``(j, Sim(a_i, b_j), Sim(b_j, a_i))`` of the sentence of B closest to
    a_i (largest smaller Sim), matched or not; None when B has no sentence (``nearest_b`` alike).
    ``gram_matches``: ``(i, j)`` with identical three-least-frequent-4-gram representations
    (``grams_a``/``grams_b``). ``resemblance_ab``: share of A's sentences equal to one of B's.
    ``hierarchy``: ``{"a": {"nodes": [...]}, "b": {...}, "edges": [[node_a, node_b, pairs], ...]}``.
    """

    url_a: str
    url_b: str
    title_a: str
    title_b: str
    sentences_a: list[str]
    sentences_b: list[str]
    matches: list[tuple[int, int, float]]
    resemblance_ab: float
    resemblance_ba: float
    odds_ratio: float
    hierarchy: dict[str, Any]
    thresholds: dict[str, float]
    sims: list[tuple[float, float]] = field(default_factory=list)
    nearest_a: list[tuple[int, float, float] | None] = field(default_factory=list)
    nearest_b: list[tuple[int, float, float] | None] = field(default_factory=list)
    gram_matches: list[tuple[int, int]] = field(default_factory=list)
    grams_a: list[list[str]] = field(default_factory=list)
    grams_b: list[list[str]] = field(default_factory=list)
    tables: dict[str, Any] = field(default_factory=dict)
    method: str = METHOD

    @property
    def matched_a(self) -> int:
        """Sentences of A equal to at least one sentence of B."""
        return len({i for i, _, _ in self.matches})

    @property
    def matched_b(self) -> int:
        return len({j for _, j, _ in self.matches})

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable data (lists, not tuples; floats rounded to 4 places)."""
        return {
            "url_a": self.url_a, "url_b": self.url_b, "title_a": self.title_a, "title_b": self.title_b,
            "sentences_a": list(self.sentences_a), "sentences_b": list(self.sentences_b),
            "matches": [[int(i), int(j), _r(s)] for i, j, s in self.matches],
            "sims": [[_r(x), _r(y)] for x, y in self.sims],
            "matched_a": self.matched_a, "matched_b": self.matched_b,
            "resemblance_ab": _r(self.resemblance_ab), "resemblance_ba": _r(self.resemblance_ba),
            "odds_ratio": _r(self.odds_ratio),
            "nearest_a": [None if n is None else [int(n[0]), _r(n[1]), _r(n[2])] for n in self.nearest_a],
            "nearest_b": [None if n is None else [int(n[0]), _r(n[1]), _r(n[2])] for n in self.nearest_b],
            "gram_matches": [[int(i), int(j)] for i, j in self.gram_matches],
            "grams_a": [list(g) for g in self.grams_a], "grams_b": [list(g) for g in self.grams_b],
            "hierarchy": self.hierarchy, "thresholds": dict(self.thresholds), "tables": dict(self.tables),
            "method": self.method,
        }


def _nearest(score: np.ndarray, ab: np.ndarray, ba: np.ndarray, axis: int) -> list[tuple[int, float, float] | None]:
    n_other = score.shape[1 - axis]
    count = score.shape[axis]
    if not n_other:
        return [None] * count
    best = score.argmax(axis=1 - axis)
    out: list[tuple[int, float, float] | None] = []
    for k in range(count):
        other = int(best[k])
        i, j = (k, other) if axis == 0 else (other, k)
        first, second = (ab[i, j], ba[i, j]) if axis == 0 else (ba[i, j], ab[i, j])
        out.append((other, float(first), float(second)))
    return out


def explain(a: Page, b: Page, *, tables: SentenceTables | None = None, thresholds: Thresholds | None = None,
            min_words: int = MIN_SENTENCE_WORDS, refiner: Refiner | None = None) -> Explanation:
    """Compare pages ``a`` and ``b`` sentence by sentence (see the module docstring).

    ``tables`` default to the shipped WordNet tables and ``refiner`` to a new
    :class:`~dedup.explain.sentences.Refiner`, both made for this call: a caller explaining many pairs
    makes them once and passes them. ``thresholds`` default to permission 0.825 and variation 0.15.
    The sentences are those of each page's semantic hierarchy
    (:func:`dedup.explain.hierarchy.build_hierarchy`): the extracted main text (``Page.text``, from
    :func:`dedup.page.parse_page` or a title/text record) with hard-wrapped lines joined,
    split by :func:`dedup.text.split_sentences`, boilerplate-sized fragments ("(AP)",
    "Advertisement") left out unless ``min_words`` is 0. For well-formed pages that is
    ``Page.sentences``.
    """
    tables = tables if tables is not None else default_tables()
    thresholds = thresholds or Thresholds()
    refine = refiner or Refiner()
    tree_a = build_hierarchy(a, min_words=min_words, refiner=refine)
    tree_b = build_hierarchy(b, min_words=min_words, refiner=refine)
    refined_a = [refine(s) for s in tree_a.sentences]
    refined_b = [refine(s) for s in tree_b.sentences]
    ab, ba = similarity_matrices(refined_a, refined_b, tables)
    equal = eq(ab, ba, thresholds)
    score = np.minimum(ab, ba)
    ii, jj = np.nonzero(equal)
    matches = [(int(i), int(j), float(score[i, j])) for i, j in zip(ii, jj)]
    sims = [(float(ab[i, j]), float(ba[i, j])) for i, j in zip(ii, jj)]
    rs_ab, rs_ba = resemblance(equal)

    grams_a = [tables.least_frequent(t) for t in refined_a]
    grams_b = [tables.least_frequent(t) for t in refined_b]
    where_b: dict[tuple[str, ...], list[int]] = {}
    for j, g in enumerate(grams_b):
        if g:
            where_b.setdefault(g, []).append(j)
    gram_matches = [(i, j) for i, g in enumerate(grams_a) if g for j in where_b.get(g, ())]

    edges = match_hierarchies(tree_a, tree_b, matches)
    return Explanation(
        url_a=a.url, url_b=b.url, title_a=a.title, title_b=b.title,
        sentences_a=list(tree_a.sentences), sentences_b=list(tree_b.sentences),
        matches=matches, sims=sims, resemblance_ab=rs_ab, resemblance_ba=rs_ba,
        odds_ratio=odds_ratio(rs_ab, rs_ba),
        nearest_a=_nearest(score, ab, ba, 0), nearest_b=_nearest(score, ab, ba, 1),
        gram_matches=gram_matches, grams_a=[list(g) for g in grams_a], grams_b=[list(g) for g in grams_b],
        hierarchy={"a": tree_a.to_dict(), "b": tree_b.to_dict(), "edges": edges},
        thresholds=thresholds.to_dict(), tables=tables.describe(),
    )
