"""The batched pair scores equal the pairwise functions' on every candidate, edge cases included."""
import numpy as np

from dedup.deduplicator import containment
from dedup.reducer import ComparisonReducer
from dedup.verify import containments, prefix_positional


def sketches(rng, n, k=64):
    out = []
    for i in range(n):
        size = int(rng.integers(0, 3 * k))
        full = np.unique(rng.integers(0, 5000, size=size).astype(np.uint64))  # small range: overlaps
        out.append((full[:k], int(full.size)))
    return out


def test_containments_equal_the_pairwise_containment():
    rng = np.random.default_rng(7)
    for trial in range(200):
        a, a_total = sketches(rng, 1)[0]
        others = sketches(rng, int(rng.integers(0, 15)))
        cont, res = containments(a, a_total, [s for s, _ in others], [t for _, t in others], min_size=10)
        for i, (s, t) in enumerate(others):
            assert (cont[i], res[i]) == containment(a, a_total, s, t, min_size=10), (trial, i)


def test_prefix_positional_equals_the_reducer():
    rng = np.random.default_rng(8)
    for jaccard in (0.1, 0.3, 0.8):
        red = ComparisonReducer(jaccard)
        for trial in range(100):
            r = np.unique(rng.integers(0, 400, size=int(rng.integers(0, 80))).astype(np.uint64))
            others = [np.unique(rng.integers(0, 400, size=int(rng.integers(0, 80))).astype(np.uint64))
                      for _ in range(int(rng.integers(0, 12)))]
            got = prefix_positional(red, r, others)
            assert list(got) == [red.prefix_positional_ok(r, s) for s in others], (jaccard, trial)
