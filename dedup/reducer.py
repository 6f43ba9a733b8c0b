"""Seed 002's comparison reducer: sentence-count, prefix and positional filters, then an angle test.

Records are term *sets* in one global order. Any fixed total order keeps prefix
filtering exact; the original (Xiao et al.) orders by ascending document
frequency for pruning power, which needs corpus statistics a streaming crawler
does not have, so we order by term hash (the sorted ``hashes`` of a
:class:`~dedup.tdw.TermVector`). The filters are *safe* for the Jaccard threshold
``t``: a pair with Jaccard >= t always survives them.

* sentence filter: ``|S_a - S_b| < Ts`` (``None`` switches it off);
* prefix filter: the first ``|r| - ceil(t |r|) + 1`` terms of both records share a term;
* positional filter: for the first shared prefix term at 1-based positions p and q,
  ``1 + min(|r| - p, |s| - q) >= t / (1 + t) * (|r| + |s|)``;
* cosine test: the angle between TDW vectors is at most ``theta = 180 (1 - t)`` degrees.
"""
from __future__ import annotations

import math

import numpy as np

from . import _fast
from .bits import sorted_common
from .tdw import TermVector, cosine

__all__ = ["ComparisonReducer"]


class ComparisonReducer:
    """Prune candidate pairs for a Jaccard threshold ``jaccard`` (0 < t <= 1)."""

    def __init__(self, jaccard: float = 0.2, sentence_tolerance: int | None = None) -> None:
        if not 0.0 < jaccard <= 1.0:
            raise ValueError(f"reducer Jaccard threshold must be in (0, 1] (got {jaccard})")
        if sentence_tolerance is not None and sentence_tolerance < 1:
            raise ValueError(f"sentence tolerance Ts must be >= 1 or None (got {sentence_tolerance})")
        self.jaccard = jaccard
        self.sentence_tolerance = sentence_tolerance

    @property
    def angle(self) -> float:
        """The angle threshold in degrees, 180 (1 - t)."""
        return 180.0 * (1.0 - self.jaccard)

    def prefix_length(self, size: int) -> int:
        return size - math.ceil(self.jaccard * size) + 1 if size else 0

    def sentences_ok(self, a: int, b: int) -> bool:
        return self.sentence_tolerance is None or abs(a - b) < self.sentence_tolerance

    def prefix_positional_ok(self, r: np.ndarray, s: np.ndarray) -> bool:
        """Prefix and positional filters on two sorted unique term-hash arrays."""
        if r.size == 0 or s.size == 0:
            return False
        pr, ps = r[: self.prefix_length(r.size)], s[: self.prefix_length(s.size)]
        # both prefixes are sorted, so the first shared term has the smallest positions
        ia, ib = sorted_common(pr, ps)
        if ia.size == 0:
            return False
        p, q = int(ia[0]) + 1, int(ib[0]) + 1
        needed = self.jaccard / (1.0 + self.jaccard) * (r.size + s.size)
        return 1 + min(r.size - p, s.size - q) >= needed

    def prefix_positional_ok_sampled(self, r: np.ndarray, sample: np.ndarray, size: int) -> bool:
        """The prefix and positional filters against a set known by its ``sample`` (its smallest
        terms, sorted) and ``size`` (a stored record's): exact when the first shared prefix term
        falls within the sample, or when no term of ``r``'s prefix lies beyond it; otherwise the
        pair is pruned only when even the best case beyond the sample fails (never stricter)."""
        if sample.size >= size:
            return self.prefix_positional_ok(r, sample)
        if r.size == 0 or size == 0:
            return False
        pr, k = r[: self.prefix_length(r.size)], sample.size
        ps = sample[: self.prefix_length(size)]
        needed = self.jaccard / (1.0 + self.jaccard) * (r.size + size)
        ia, ib = sorted_common(pr, ps)
        if ia.size:
            return 1 + min(r.size - int(ia[0]) - 1, size - int(ib[0]) - 1) >= needed
        if ps.size < k:  # the other's whole prefix is in the sample: no shared prefix term
            return False
        first = int(pr.searchsorted(sample[-1], "right"))  # r's first prefix term beyond the sample
        if first == pr.size:
            return False
        return 1 + min(r.size - first - 1, size - k - 1) >= needed

    def prefix_positional_ok_sampled_many(self, r: np.ndarray, samples: list[np.ndarray],
                                          sizes: list[int]) -> list[bool]:
        """:meth:`prefix_positional_ok_sampled` of ``r`` against each set ``samples[i]`` of ``sizes[i]``
        terms, all at once, in one C call (dedup/_fast.c): each candidate's prefix terms searched in ``r``'s
        prefix until the first shared one. The same answers, pair by pair (tests/test_verify_many.py), and
        the numpy code it replaces (tests/test_fast.py)."""
        return _fast.prefix_positional_many(r, samples, sizes, self.jaccard, self.jaccard / (1.0 + self.jaccard))

    def prefix_positional_ok_samples(self, a: np.ndarray, a_size: int, b: np.ndarray, b_size: int) -> bool:
        """The prefix and positional filters when both sets are known by a sample (their smallest
        terms, sorted) and a size (two stored records): exact when the samples share a prefix term
        (the smallest shared term of the samples is the sets' first shared term) or when neither set
        can have a shared prefix term beyond its sample; otherwise the pair is pruned only when even
        the best case beyond the samples fails (never stricter than the filters on the whole sets)."""
        if a.size >= a_size:
            return self.prefix_positional_ok_sampled(a, b, b_size)
        if b.size >= b_size:
            return self.prefix_positional_ok_sampled(b, a, a_size)
        if a.size == 0 or b.size == 0:  # an empty set (an empty sample of a non-empty set is not kept)
            return False
        la, lb = self.prefix_length(a_size), self.prefix_length(b_size)
        needed = self.jaccard / (1.0 + self.jaccard) * (a_size + b_size)
        ia, ib = sorted_common(a[:la], b[:lb])
        if ia.size:
            return 1 + min(a_size - int(ia[0]) - 1, b_size - int(ib[0]) - 1) >= needed
        # a shared term lies beyond the smaller of the samples' last terms: at the earliest, just after it
        last = min(a[-1], b[-1])
        p, q = int(a.searchsorted(last, "right")), int(b.searchsorted(last, "right"))
        if p >= la or q >= lb:
            return False
        return 1 + min(a_size - p - 1, b_size - q - 1) >= needed

    def angle_ok(self, a: TermVector, b: TermVector) -> tuple[bool, float]:
        """``(passes, angle in degrees)`` of the cosine test."""
        return self.angle_test(cosine(a, b))

    def angle_test(self, cos: float) -> tuple[bool, float]:
        """``(passes, angle in degrees)`` for an already computed cosine."""
        angle = math.degrees(math.acos(max(-1.0, min(1.0, cos))))
        return angle <= self.angle + 1e-9, angle

    def passes(self, a_terms: np.ndarray, a_sentences: int, b_terms: np.ndarray, b_sentences: int,
               b_size: int | None = None, a_size: int | None = None) -> str | None:
        """``None`` when the pair survives, else the name of the filter that pruned it.
        ``b_size``: when given, ``b_terms`` is the sample of a set of that size (a stored record's);
        ``a_size`` likewise for ``a_terms`` (with ``b_size``: both are records)."""
        if not self.sentences_ok(a_sentences, b_sentences):
            return "sentence_count"
        if b_size is None:
            ok = self.prefix_positional_ok(a_terms, b_terms)
        elif a_size is None:
            ok = self.prefix_positional_ok_sampled(a_terms, b_terms, b_size)
        else:
            ok = self.prefix_positional_ok_samples(a_terms, a_size, b_terms, b_size)
        return None if ok else "prefix_positional"
