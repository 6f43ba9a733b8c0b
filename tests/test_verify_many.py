"""A check verifies all its candidates at once (issue 14 item 3): the batched reducer filters and
containments give, pair by pair, exactly what the one-pair functions they replace in the check give
(the reducer's stays, and is the reference here; containment's pair-by-pair code, which
``dedup.deduplicator.containment`` now runs through ``containment_many``, is kept below as
``former_containment``), on random sets of every kind the check meets."""
import numpy as np
import pytest

from dedup.bits import sorted_common
from dedup.deduplicator import containment, containment_many
from dedup.reducer import ComparisonReducer


def _sets(rng, universe: int, count: int):
    u = np.unique(rng.integers(0, 2**24, universe, dtype=np.uint64)).astype(np.uint32)
    out = []
    for _ in range(count):
        size = int(rng.choice([0, 1, 2, 5, 9, 10, 11, 30, 128, 300]))
        out.append(np.unique(rng.choice(u, min(size, u.size), replace=False)))
    return u, out


def former_containment(a, a_total, b, b_total, *, min_size=10):
    """``dedup.deduplicator.containment`` as it was, pair by pair (cut both sketches at the smaller of
    their largest kept keys, intersect by binary search)."""
    if a.size == 0 or b.size == 0:
        return 0.0, 0.0
    cut_a = a[-1] if a_total > a.size else np.uint64(2**64 - 1)
    cut_b = b[-1] if b_total > b.size else np.uint64(2**64 - 1)
    cut = min(cut_a, cut_b)
    sa, sb = a[: a.searchsorted(cut, "right")], b[: b.searchsorted(cut, "right")]
    if sa.size == 0 or sb.size == 0:
        return 0.0, 0.0
    inter = sorted_common(sa, sb)[0].size
    resemblance = inter / (sa.size + sb.size - inter)
    if min(a_total, b_total) < min_size:
        return resemblance, resemblance
    return inter / min(sa.size, sb.size), resemblance


@pytest.mark.parametrize("jaccard", [0.1, 0.3, 0.6, 1.0])
def test_reducer_many_equals_pair_by_pair(jaccard):
    rng = np.random.default_rng(11)
    red = ComparisonReducer(jaccard=jaccard)
    for _ in range(300):
        u, sets = _sets(rng, int(rng.choice([50, 400, 3000])), int(rng.integers(1, 16)))
        r = sets.pop() if len(sets) > 1 else np.unique(rng.choice(u, 40, replace=False))
        samples, sizes = [], []
        for s in sets:
            if s.size and rng.random() < 0.6:  # a record's sample: its smallest terms, of a larger set
                k = int(rng.integers(1, max(2, s.size + 1)))
                samples.append(s[:k])
                sizes.append(int(s.size) + int(rng.integers(0, 3)) * int(rng.integers(0, 50)))
            else:  # a record that kept every term
                samples.append(s)
                sizes.append(int(s.size) - int(rng.integers(0, 2)) * min(int(s.size), 3))
        one = [red.prefix_positional_ok_sampled(r, s, n) for s, n in zip(samples, sizes)]
        assert red.prefix_positional_ok_sampled_many(r, samples, sizes) == one
    assert red.prefix_positional_ok_sampled_many(np.zeros(0, np.uint32), [np.arange(3, dtype=np.uint32)], [3]) == [False]
    assert red.prefix_positional_ok_sampled_many(np.arange(3, dtype=np.uint32), [], []) == []


@pytest.mark.parametrize("min_size", [1, 10, 50])
def test_containment_many_equals_pair_by_pair(min_size):
    rng = np.random.default_rng(3)
    for _ in range(300):
        _, sets = _sets(rng, int(rng.choice([60, 600, 5000])), int(rng.integers(2, 16)))
        a, bs = sets[0], sets[1:]
        # a sketch is a set's smallest keys (total > size: cut) or the whole set (total == size)
        a_total = int(a.size) + int(rng.choice([0, 0, 1, 200]))
        totals = [int(b.size) + int(rng.choice([0, 0, 1, 200])) for b in bs]
        want = [former_containment(a, a_total, b, n, min_size=min_size) for b, n in zip(bs, totals)]
        assert containment_many(a, a_total, bs, totals, min_size=min_size) == want
        assert [containment(a, a_total, b, n, min_size=min_size) for b, n in zip(bs, totals)] == want
    b = np.arange(5, 50, dtype=np.uint32)
    assert containment_many(np.zeros(0, np.uint32), 0, [b], [45]) == [(0.0, 0.0)]
    assert containment_many(b, 45, [], []) == []


def former_sketch_keys(hashes, positions):
    """``dedup.record.sketch_keys`` as it was (with positions): always a stable sort of the keys."""
    from dedup.bits import run_starts
    from dedup.record import term_keys

    keys = term_keys(hashes)
    if not keys.size:
        return keys, np.zeros(0, dtype=np.uint8)
    positions = np.asarray(positions, dtype=np.uint8)[:hashes.size]
    order = np.argsort(keys, kind="stable")
    keys, positions = keys[order], positions[order]
    starts = run_starts(keys)
    return keys[starts], np.minimum.reduceat(positions, starts).astype(np.uint8)


def test_sketch_keys_skip_the_sort_of_sorted_hashes_with_the_same_answer():
    from dedup.record import sketch_keys

    rng = np.random.default_rng(8)
    for n in (0, 1, 2, 5, 128, 256):
        for shape in ("sorted", "shuffled", "repeats"):
            hashes = np.sort(rng.integers(0, 2**64, n, dtype=np.uint64))
            if shape == "repeats":  # hashes sharing their top bits: keys that repeat
                hashes = np.sort(hashes >> np.uint64(50) << np.uint64(50))
            if shape == "shuffled":
                hashes = rng.permutation(hashes)
            positions = rng.integers(0, 256, n).astype(np.uint8)
            got, want = sketch_keys(hashes, positions), former_sketch_keys(hashes, positions)
            assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
            assert got[0].dtype == want[0].dtype and got[1].dtype == want[1].dtype


def test_spread_gives_what_it_gave_with_np_diff():
    """``spread`` counts runs of shared keys without ``np.diff``: the same scores as the former count."""
    import dedup.spread as sp

    rng = np.random.default_rng(4)
    for _ in range(400):
        u = np.unique(rng.integers(0, 2**24, 300)).astype(np.uint32)
        a = np.unique(rng.choice(u, int(rng.integers(1, 120)), replace=False))
        b = np.unique(rng.choice(u, int(rng.integers(1, 120)), replace=False))
        a_pos = rng.integers(0, 256, a.size).astype(np.uint8)
        b_pos = rng.integers(0, 256, b.size).astype(np.uint8)
        a_total, b_total = a.size + int(rng.choice([0, 50])), b.size + int(rng.choice([0, 50]))
        got = sp.spread(a, a_pos, a_total, b, b_pos, b_total)
        # the former code, step by step, on the smaller page (as spread swaps them)
        if a_total > b_total or (a_total == b_total and not a_pos.size):
            a, a_pos, a_total, b, b_pos, b_total = b, b_pos, b_total, a, a_pos, a_total
        cut = min(a[-1] if a_total > a.size else np.iinfo(a.dtype).max,
                  b[-1] if b_total > b.size else np.iinfo(b.dtype).max)
        n_a, n_b = int(a.searchsorted(cut, "right")), int(b.searchsorted(cut, "right"))
        hit = np.isin(a[:n_a], b[:n_b]).astype(np.int8)
        h = int(hit.sum())
        expected = h * (n_a - h + 1) / n_a if n_a else 0.0
        if not h:
            want = 0.0
        elif expected < 2:
            want = 1.0
        else:
            ordered = hit[np.argsort(a_pos[:n_a], kind="stable")]
            runs = int(np.count_nonzero(np.diff(ordered, prepend=np.int8(0)) == 1))
            want = float(min(1.0, max(0.0, (runs - 1) / (expected - 1))))
        assert got == want
