"""Where the shared text lies: in many stretches of the smaller page, or in one block? (issue 16)

Two press releases of one company share its "About" paragraph; two items of a site share a template
line; two write-ups of one wire story share its quotes and sentences.  At the same containment the
first two share one contiguous block, the third many stretches over the page.  :func:`spread` counts
the stretches from the two pages' shingle sketches: the smaller page's sketch keys (within the hash
range both sketches cover, as containment is estimated) are put in the order of their positions in
the page, each marked shared or not; a run of shared keys is one stretch of shared text.  With ``m``
keys of which ``h`` are shared, hits placed at random would make ``h (m - h + 1) / m`` runs on
average; the score is ``(runs - 1) / (that - 1)``, clipped to 0..1:

* 0: one block (boilerplate, a template line), or nothing shared;
* 1: as scattered as chance (a rewrite that shares sentences here and there), or nothing to tell
  (fewer than 2 runs expected: a single shared key, or a smaller page shared almost wholly, as a
  copy or a truncated copy is): no sign of a block;
* ``None`` when the smaller page has no positions (a record stored before them): the decision then
  takes 0, the side of a block (it can make a copy less likely, never more).

The positions are each key's first occurrence on 256 levels of the page's shingle sequence
(:data:`dedup.record.POSITION_LEVELS`); keys on one level keep their key order.
"""
from __future__ import annotations

import numpy as np

from .bits import sorted_common

__all__ = ["spread"]


def spread(a: np.ndarray, a_pos: np.ndarray, a_total: int, b: np.ndarray, b_pos: np.ndarray,
           b_total: int) -> float | None:
    """How scattered the shared text is over the smaller of two pages (module docstring), from their
    sorted, distinct sketch keys ``a``/``b``, their positions (uint8, one a key; empty: unknown) and
    their distinct shingle counts."""
    if a_total > b_total or (a_total == b_total and not a_pos.size):
        a, a_pos, a_total, b, b_pos, b_total = b, b_pos, b_total, a, a_pos, a_total
    if not a.size or not b.size:
        return 0.0
    if a_pos.size != a.size:
        return None
    # the range both sketches cover, as dedup.deduplicator.containment cuts it
    cut = min(a[-1] if a_total > a.size else np.iinfo(a.dtype).max,
              b[-1] if b_total > b.size else np.iinfo(b.dtype).max)
    n_a, n_b = int(a.searchsorted(cut, "right")), int(b.searchsorted(cut, "right"))
    hit = np.zeros(n_a, dtype=np.int8)
    hit[sorted_common(a[:n_a], b[:n_b])[0]] = 1
    h = int(hit.sum())
    expected = h * (n_a - h + 1) / n_a if n_a else 0.0
    if not h:
        return 0.0
    if expected < 2:
        return 1.0
    ordered = hit[np.argsort(a_pos[:n_a], kind="stable")]
    # a run starts at a shared key first or after an unshared one (np.diff's wrapper is ~5 us of ~20)
    runs = int(ordered[0]) + int(np.count_nonzero(ordered[1:] > ordered[:-1]))
    return float(min(1.0, max(0.0, (runs - 1) / (expected - 1))))
