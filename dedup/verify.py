"""The pair scores of one page against all its candidates at once: seed 002's prefix and positional
filters (:meth:`ComparisonReducer.prefix_positional_ok`) and the bottom-k containment and
resemblance (:func:`dedup.deduplicator.containment`), each a few numpy calls over the candidates'
arrays laid end to end instead of a Python call per candidate (a page has ~12 on goldset-dev).

Results are equal to the pairwise functions' (tests/test_verify.py checks them pair by pair): the
same integer counts, divided in the same order.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .reducer import ComparisonReducer

__all__ = ["containments", "prefix_positional"]

_TOP = np.uint64(2**64 - 1)


def _concat(arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The arrays end to end, each element's array number, and each array's size."""
    sizes = np.fromiter(map(len, arrays), dtype=np.int64, count=len(arrays))
    flat = np.concatenate(arrays).astype(np.uint64, copy=False) if len(arrays) else np.zeros(0, np.uint64)
    return flat, np.repeat(np.arange(len(arrays)), sizes), sizes


def _member(sorted_a: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Which of ``values`` are in ``sorted_a`` (sorted, distinct), and where."""
    pos = sorted_a.searchsorted(values)
    pos[pos == sorted_a.size] = 0
    return sorted_a[pos] == values, pos


def containments(a: np.ndarray, a_total: int, sketches: Sequence[np.ndarray], totals: Sequence[int], *,
                 min_size: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """``(containment, resemblance)`` of sketch ``a`` with each of ``sketches`` (float64 arrays)."""
    n = len(sketches)
    cont, res = np.zeros(n), np.zeros(n)
    if a.size == 0 or n == 0:
        return cont, res
    flat, owner, sizes = _concat(sketches)
    totals = np.asarray(totals, dtype=np.int64)
    last = np.zeros(n, dtype=np.uint64)
    has = sizes > 0
    last[has] = flat[np.cumsum(sizes)[has] - 1]
    cut_b = np.where(totals > sizes, last, _TOP)
    cut = np.minimum(a[-1] if a_total > a.size else _TOP, cut_b)
    na = a.searchsorted(cut, "right")
    below = flat <= cut[owner]
    nb = np.bincount(owner[below], minlength=n)
    hit, _ = _member(a, flat)
    inter = np.bincount(owner[hit & below], minlength=n)
    ok = has & (na > 0) & (nb > 0)
    union = na + nb - inter
    res[ok] = inter[ok] / union[ok]
    cont[ok] = inter[ok] / np.minimum(na, nb)[ok]
    small = ok & (np.minimum(a_total, totals) < min_size)
    cont[small] = res[small]
    return cont, res


def prefix_positional(reducer: ComparisonReducer, r: np.ndarray, others: Sequence[np.ndarray]) -> np.ndarray:
    """``reducer.prefix_positional_ok(r, s)`` for each ``s`` of ``others``, as a bool array."""
    n = len(others)
    out = np.zeros(n, dtype=bool)
    if r.size == 0 or n == 0:
        return out
    pr = r[: reducer.prefix_length(r.size)]
    s_sizes = np.fromiter(map(len, others), dtype=np.int64, count=n)
    prefixes = [s[: reducer.prefix_length(s.size)] for s in others]
    flat, owner, sizes = _concat(prefixes)
    hit, pos = _member(pr, flat)
    if not hit.any():
        return out
    starts = np.cumsum(sizes) - sizes
    # both prefixes sorted: the first shared term is the first hit of each candidate's prefix
    idx = np.flatnonzero(hit)
    cands, first = np.unique(owner[idx], return_index=True)
    at = idx[first]
    p = pos[at] + 1
    q = at - starts[cands] + 1
    needed = reducer.jaccard / (1.0 + reducer.jaccard) * (r.size + s_sizes[cands])
    out[cands] = 1 + np.minimum(r.size - p, s_sizes[cands] - q) >= needed
    return out
