"""Exactness of dedup.permtables against brute-force Hamming search."""
from __future__ import annotations

import math
import pickle
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dedup.bits import MASK64, hamming
from dedup.permtables import PermutationTables, TableShard, query_shards

# (k, blocks): the paper's setting (3, 6), one-block exact match, unequal block sizes
# (64 = 13*4 + 12, 11*4 + 10*2), many small tables, and one bit per block
SETTINGS = [(0, 1), (1, 2), (2, 4), (3, 6), (3, 4), (4, 8), (2, 5), (1, 64)]
ADVERSARIAL = [
    0, MASK64, 0x5555555555555555, 0xAAAAAAAAAAAAAAAA, 1, 1 << 63, 0x00000000FFFFFFFF,
    0xFFFFFFFF00000000, 0x0123456789ABCDEF, 0x8000000000000001, 0x7FFFFFFFFFFFFFFE,
]


def flip(value: int, bits) -> int:
    for b in bits:
        value ^= 1 << b
    return value


def brute(entries: list[tuple[int, int]], query: int, k: int) -> list[tuple[int, int]]:
    """Reference answer: (doc id, distance) over all stored (fingerprint, doc id) pairs."""
    if not entries:
        return []
    dists = hamming(np.array([fp for fp, _ in entries], dtype=np.uint64), query).tolist()
    best: dict[int, int] = {}
    for (_, doc), d in zip(entries, dists):
        if d <= k and d < best.get(doc, 65):
            best[doc] = d
    return sorted(best.items(), key=lambda p: (p[1], p[0]))


def block_ranges(blocks: int) -> list[list[int]]:
    """Bit positions of each block, block 0 at the top (computed independently of the module)."""
    sizes = [64 // blocks + (i < 64 % blocks) for i in range(blocks)]
    out, top = [], 64
    for s in sizes:
        out.append(list(range(top - 1, top - s - 1, -1)))
        top -= s
    return out


def patterns(k: int, blocks: int) -> dict[str, list[int]]:
    """Named sets of k+1 distinct bit positions to flip."""
    ranges = block_ranges(blocks)
    need = k + 1
    spread = [r[0] for r in ranges]  # top bit of every block
    boundary = []  # the bits on either side of each block boundary
    for upper, lower in zip(ranges, ranges[1:]):
        boundary += [upper[-1], lower[0]]
    out = {
        "spread": spread[:need],
        "top-and-bottom": list(dict.fromkeys([63, 0] + spread))[:need],
        "boundaries": list(dict.fromkeys(boundary + spread))[:need],
        "bottom-bits": list(range(need)),
        "top-bits": list(range(63, 63 - need, -1)),
    }
    if len(ranges[0]) >= need:
        out["one-block"] = ranges[0][:need]
        out["one-block-last"] = ranges[-1][-need:] if len(ranges[-1]) >= need else ranges[0][:need]
    return {name: bits for name, bits in out.items() if len(bits) == need}


# -- hand-built bit patterns ------------------------------------------------------------------
@pytest.mark.parametrize("k,blocks", SETTINGS)
@pytest.mark.parametrize("base", [0, MASK64, 0x5555555555555555, 0xAAAAAAAAAAAAAAAA, 0x0123456789ABCDEF])
def test_distance_k_found_and_k_plus_1_not(k, blocks, base):
    for name, bits in patterns(k, blocks).items():
        for skip in range(k + 1):  # every way of choosing the k flipped bits out of the k+1
            near = flip(base, [b for i, b in enumerate(bits) if i != skip])
            far = flip(base, bits)
            tables = PermutationTables(k, blocks, buffer_size=2)  # merged runs and buffer both
            tables.add(near, 1)
            tables.add(far, 2)
            tables.add(base ^ MASK64, 3)  # distance 64
            assert tables.query(base) == [(1, k)], (name, bits, skip)
            assert tables.query(far) == brute([(near, 1), (far, 2), (base ^ MASK64, 3)], far, k)


# -- properties against brute force -----------------------------------------------------------
fingerprints = st.one_of(
    st.integers(0, MASK64),
    st.sampled_from(ADVERSARIAL),
    st.integers(0, 2**16 - 1),  # clustered in the bottom bits
    st.integers(0, 2**16 - 1).map(lambda v: v << 48),  # clustered in the top bits
    st.integers(0, 63).map(lambda b: 1 << b),  # single bits
)


@st.composite
def scenarios(draw):
    k, blocks = draw(st.sampled_from(SETTINGS))
    stored = draw(st.lists(fingerprints, min_size=1, max_size=25))
    flips = st.lists(st.integers(0, 63), max_size=k + 1, unique=True)
    # planted neighbours: stored fingerprints with 0..k+1 bits flipped
    planted = [flip(draw(st.sampled_from(stored)), draw(flips)) for _ in range(draw(st.integers(0, 10)))]
    dups = [stored[0]] * draw(st.integers(0, 6))  # same fingerprint under different ids
    fps = stored + planted + dups
    entries = [(fp, doc) for doc, fp in enumerate(fps)]
    queries = fps + [flip(draw(st.sampled_from(fps)), draw(flips)) for _ in range(5)]
    queries += draw(st.lists(fingerprints, max_size=5))
    buffer_size = draw(st.sampled_from([1, 2, 3, 7, 4096]))
    bulk = draw(st.booleans())
    shard_bits = draw(st.integers(0, 3))  # every setting's prefixes have >= 16 bits
    return k, blocks, entries, queries, buffer_size, bulk, shard_bits


def _build(k, blocks, entries, buffer_size, bulk, **kw) -> PermutationTables:
    tables = PermutationTables(k, blocks, buffer_size=buffer_size, **kw)
    if bulk:
        tables.add_many(np.array([fp for fp, _ in entries], dtype=np.uint64),
                        np.array([doc for _, doc in entries]))
    else:
        for fp, doc in entries:
            tables.add(fp, doc)
    return tables


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_query_equals_brute_force(scenario):
    k, blocks, entries, queries, buffer_size, bulk, shard_bits = scenario
    tables = _build(k, blocks, entries, buffer_size, bulk)
    sharded = _build(k, blocks, entries, buffer_size, bulk, shard_bits=shard_bits)
    assert len(tables) == len(sharded) == len(entries)
    assert tables.n_tables == math.comb(blocks, k)
    for q in queries:
        expected = brute(entries, q, k)
        assert tables.query(q) == expected, hex(q)
        assert sharded.query(q) == expected, hex(q)
        assert query_shards(sharded.split(), q) == expected, hex(q)
    assert tables.query_many(np.array(queries, dtype=np.uint64)) == [tables.query(q) for q in queries]
    assert sharded.query_many(np.array(queries, dtype=np.uint64)) == [tables.query(q) for q in queries]


@pytest.mark.parametrize("k,blocks", SETTINGS)
def test_random_and_clustered_data_equals_brute_force(k, blocks):
    rng = np.random.default_rng(k * 100 + blocks)
    parts = [
        rng.integers(0, 2**64, 1500, dtype=np.uint64),
        rng.integers(0, 2**12, 300, dtype=np.uint64),  # bottom-bit cluster: long shared prefixes
        rng.integers(0, 2**12, 300, dtype=np.uint64) << np.uint64(52),  # top-bit cluster
        np.full(60, 0x0123456789ABCDEF, dtype=np.uint64),  # many duplicates
        np.array(ADVERSARIAL, dtype=np.uint64),
    ]
    fps = np.concatenate(parts)
    near = fps[rng.integers(0, len(fps), 400)].copy()
    for i in range(len(near)):  # planted neighbours at 0..k+1 bits
        for b in rng.choice(64, rng.integers(0, k + 2), replace=False):
            near[i] ^= np.uint64(1) << np.uint64(b)
    fps = np.concatenate([fps, near])
    entries = [(int(fp), doc) for doc, fp in enumerate(fps.tolist())]
    tables = PermutationTables(k, blocks, buffer_size=97)
    tables.add_many(fps[:1000], np.arange(1000))
    for fp, doc in entries[1000:]:
        tables.add(fp, doc)
    queries = fps[rng.integers(0, len(fps), 150)].tolist() + near[:100].tolist()
    queries += rng.integers(0, 2**64, 50, dtype=np.uint64).tolist()
    for q in queries:
        assert tables.query(q) == brute(entries, q, k), hex(q)


def test_prefix_shorter_than_directory_buckets():
    """k=7, blocks=8: 8-bit prefixes, while 6000 fingerprints per table make the directory
    buckets finer than that, so one prefix range spans several buckets."""
    k, blocks = 7, 8
    rng = np.random.default_rng(11)
    fps = rng.integers(0, 2**64, 6000, dtype=np.uint64)
    near = fps[:300] ^ (rng.integers(0, 2**8, 300, dtype=np.uint64) << np.uint64(20))
    entries = [(fp, doc) for doc, fp in enumerate(fps.tolist() + near.tolist())]
    tables = PermutationTables(k, blocks, buffer_size=500)
    for start in range(0, len(entries), 1000):
        chunk = entries[start:start + 1000]
        tables.add_many(np.array([fp for fp, _ in chunk], dtype=np.uint64), np.array([d for _, d in chunk]))
    main = tables.split()[0]._main
    table_bits = (tables.n_tables - 1).bit_length()
    assert 64 - int(main.shift) - table_bits > 8  # directory buckets finer than the prefix
    for q in near.tolist()[:150] + fps[300:350].tolist():
        assert tables.query(q) == brute(entries, q, k)


def test_inserts_across_merge_thresholds_stay_exact():
    """Queries between single inserts, while the buffer fills, merges into delta and delta
    merges into main (buffer_size=4: delta is merged into main beyond 4 * 4 * 20 entries)."""
    k, blocks = 3, 6
    rng = np.random.default_rng(7)
    base = rng.integers(0, 2**64, 40, dtype=np.uint64).tolist()
    tables = PermutationTables(k, blocks, buffer_size=4)
    shard_sizes = set()
    entries: list[tuple[int, int]] = []
    for doc in range(300):
        fp = flip(base[doc % len(base)], rng.choice(64, rng.integers(0, 5), replace=False).tolist())
        tables.add(fp, doc)
        entries.append((fp, doc))
        for q in (fp, base[doc % len(base)], flip(fp, [0, 63])):
            assert tables.query(q) == brute(entries, q, k)
        shard = tables.split()[0]
        shard_sizes.add((len(shard._main) > 0, len(shard._delta) > 0))
    assert len(tables) == 300
    assert shard_sizes >= {(True, True), (True, False)}  # both sorted runs were exercised
    more = rng.integers(0, 2**64, 5000, dtype=np.uint64)  # a bulk add far past the threshold
    tables.add_many(more, np.arange(300, 5300))
    entries += [(fp, 300 + i) for i, fp in enumerate(more.tolist())]
    for q in base + more[:50].tolist():
        assert tables.query(q) == brute(entries, q, k)


# -- removal ----------------------------------------------------------------------------------
@pytest.mark.parametrize("buffer_size", [1, 3, 4096])
def test_remove_then_query(buffer_size):
    k = 3
    tables = PermutationTables(k, 6, buffer_size=buffer_size)
    entries = [(0x0123456789ABCDEF, 1), (0x0123456789ABCDEE, 2), (0x0123456789ABCDEF, 3), (MASK64, 4)]
    for fp, doc in entries:
        tables.add(fp, doc)
    assert tables.remove(0x0123456789ABCDEF, 1) is True
    assert tables.query(0x0123456789ABCDEF) == [(3, 0), (2, 1)]
    assert len(tables) == 3
    assert tables.remove(0x0123456789ABCDEF, 1) is False  # already gone
    assert tables.remove(0x0123456789ABCDEF, 99) is False  # unknown id
    assert tables.remove(0x1111, 2) is False  # unknown fingerprint
    assert tables.remove(MASK64, 4) is True
    assert tables.query(MASK64) == []
    tables.add(0x0123456789ABCDEF, 1)  # re-add
    assert tables.query(0x0123456789ABCDEF) == [(1, 0), (3, 0), (2, 1)]
    assert len(tables) == 3


def test_remove_duplicates_and_merged_tombstones():
    tables = PermutationTables(2, 4, buffer_size=5)
    entries = [(v, v % 7) for v in range(0, 60)]  # ids repeat with different fingerprints
    entries += [(42, 100), (42, 100)]  # the same pair twice: two copies
    for fp, doc in entries:
        tables.add(fp, doc)
    assert tables.remove(42, 100) and tables.query(42)[0] == (0, 0)
    entries.remove((42, 100))
    assert tables.query(42) == brute(entries, 42, 2) and (100, 0) in tables.query(42)
    assert tables.remove(42, 100) and not tables.remove(42, 100)
    entries.remove((42, 100))
    for fp, doc in entries[::3]:
        assert tables.remove(fp, doc)
    removed = set(entries[::3])
    entries = [e for e in entries if e not in removed]
    for v in range(200, 260):  # later merges drop the tombstones
        tables.add(v, v)
        entries.append((v, v))
    assert len(tables) == len(entries)
    for q in range(0, 270, 3):
        assert tables.query(q) == brute(entries, q, 2)
    assert sum(sh.count(0) for sh in tables.split().values()) == len(entries)


def test_remove_one_copy_per_call_across_runs():
    tables = PermutationTables(3, 6, buffer_size=2)
    tables.add(7, 100)
    tables.add(8, 101)
    tables.split()[0].flush(into_main=True)  # the first copy is now in the main run
    tables.add(7, 100)
    tables.add(9, 102)  # fills the buffer: the second copy goes to the delta run
    assert tables.remove(7, 100)
    assert tables.query(7) == [(100, 0), (102, 3)]  # 7^8 has 4 bits set, 7^9 has 3
    assert tables.remove(7, 100) and not tables.remove(7, 100)
    assert tables.query(7) == [(102, 3)]


def test_remove_among_many_duplicates():
    """Ranges of more than a few candidates take the vectorised path; tombstones hold there too."""
    fp = 0xFEDCBA9876543210
    tables = PermutationTables(3, 6, buffer_size=8)
    tables.add_many(np.full(100, fp, dtype=np.uint64), np.arange(100))
    for doc in range(0, 100, 2):
        assert tables.remove(fp, doc)
    assert tables.query(fp) == [(doc, 0) for doc in range(1, 100, 2)]
    assert tables.query(fp ^ 0b111) == [(doc, 3) for doc in range(1, 100, 2)]
    assert tables.split()[0]._n < 100  # removed rows were compacted away


# -- keys() -----------------------------------------------------------------------------------
def test_keys_pinned_format():
    tables = PermutationTables(3, 6)
    # blocks of 11, 11, 11, 11, 10, 10 bits; table t's prefix holds 3 blocks (31-33 bits)
    assert tables.keys(0) == [
        "t0:000000000", "t1:000000000", "t2:00000000", "t3:00000000", "t4:000000000",
        "t5:00000000", "t6:00000000", "t7:00000000", "t8:00000000", "t9:00000000",
        "t10:000000000", "t11:00000000", "t12:00000000", "t13:00000000", "t14:00000000",
        "t15:00000000", "t16:00000000", "t17:00000000", "t18:00000000", "t19:00000000",
    ]
    assert tables.keys(0x0123456789ABCDEF) == [
        "t0:002468acf", "t1:00246889a", "t2:012346f3", "t3:012345ef", "t4:00256789a",
        "t5:012b3ef3", "t6:012b3def", "t7:01226af3", "t8:012269ef", "t9:009bcdef",
        "t10:03456789a", "t11:1a2b3ef3", "t12:1a2b3def", "t13:1a226af3", "t14:1a2269ef",
        "t15:0d1bcdef", "t16:59e26af3", "t17:59e269ef", "t18:2cfbcdef", "t19:09abcdef",
    ]
    assert not set(tables.keys(0)) & set(tables.keys(MASK64))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(SETTINGS), fingerprints, st.data())
def test_keys_shared_within_k(setting, fp, data):
    k, blocks = setting
    tables = PermutationTables(k, blocks)
    other = flip(fp, data.draw(st.lists(st.integers(0, 63), max_size=k, unique=True)))
    keys = tables.keys(fp)
    assert len(keys) == tables.n_tables == len(set(keys))
    assert set(keys) & set(tables.keys(other))


# -- shards -----------------------------------------------------------------------------------
@pytest.mark.parametrize("k,blocks,shard_bits", [(3, 6, 1), (3, 6, 4), (2, 4, 8), (0, 1, 3), (4, 8, 2)])
def test_sharded_query_equals_unsharded(k, blocks, shard_bits):
    rng = np.random.default_rng(shard_bits)
    fps = np.concatenate([rng.integers(0, 2**64, 1500, dtype=np.uint64), np.array(ADVERSARIAL, dtype=np.uint64)])
    near = fps[rng.integers(0, len(fps), 300)].copy()
    for i in range(len(near)):
        for b in rng.choice(64, rng.integers(0, k + 2), replace=False):
            near[i] ^= np.uint64(1) << np.uint64(b)
    fps = np.concatenate([fps, near])
    ids = np.arange(len(fps))
    plain = PermutationTables(k, blocks, buffer_size=50)
    plain.add_many(fps, ids)
    sharded = PermutationTables(k, blocks, shard_bits=shard_bits, buffer_size=50)
    sharded.add_many(fps[:900], ids[:900])
    for fp, doc in zip(fps[900:].tolist(), ids[900:].tolist()):
        sharded.add(fp, doc)
    # independent shards built straight from the whole stream, as separate processes would
    alone = {j: TableShard(k, blocks, shard_bits=shard_bits, index=j, buffer_size=50)
             for j in range(2**shard_bits)}
    for shard in alone.values():
        shard.add_many(fps, ids)
    alone = {j: pickle.loads(pickle.dumps(shard)) for j, shard in alone.items()}  # as if sent away
    assert len(sharded) == len(plain) == len(fps)
    for t in range(plain.n_tables):  # each table holds every pair exactly once, over all shards
        assert sum(shard.count(t) for shard in sharded.split().values()) == len(fps)
    queries = near.tolist() + rng.integers(0, 2**64, 50, dtype=np.uint64).tolist()
    for q in queries:
        expected = plain.query(q)
        assert sharded.query(q) == expected
        assert query_shards(sharded.split(), q) == expected
        assert query_shards(alone, q) == expected
    for t in range(plain.n_tables):  # shard_of = the top shard_bits bits of the keys() prefix
        width = int(plain.keys(MASK64)[t].split(":")[1], 16).bit_length()  # prefix bits
        for fp in queries[:20]:
            prefix = int(plain.keys(fp)[t].split(":")[1], 16)
            assert sharded.shard_of(t, fp) == prefix >> (width - shard_bits)
            assert plain.shard_of(t, fp) == 0
    # removal reaches every shard holding the pair
    assert sharded.remove(int(fps[0]), 0) and plain.remove(int(fps[0]), 0)
    assert sharded.query(int(fps[0])) == plain.query(int(fps[0]))


def test_state_round_trip(tmp_path):
    rng = np.random.default_rng(3)
    fps = rng.integers(0, 2**64, 3000, dtype=np.uint64)
    for shard_bits in (0, 2):
        tables = PermutationTables(3, 6, shard_bits=shard_bits, buffer_size=64)
        tables.add_many(fps[:2000], np.arange(2000))
        for i in range(2000, 2100):
            tables.add(int(fps[i]), i)
        tables.remove(int(fps[5]), 5)
        before = [tables.query(int(fp) ^ 0b101) for fp in fps[:200]]
        np.savez(tmp_path / "t.npz", **tables.state())
        with np.load(tmp_path / "t.npz") as state:
            loaded = PermutationTables.from_state(state)
        assert len(loaded) == len(tables) == 2099
        assert [loaded.query(int(fp) ^ 0b101) for fp in fps[:200]] == before


def test_state_arrays_are_not_written_later():
    """state() hands out live arrays and from_state() adopts the given ones: merges that
    follow, in either object, must not write into them."""
    rng = np.random.default_rng(4)
    fps = rng.integers(0, 2**64, 4000, dtype=np.uint64)
    tables = PermutationTables(2, 4, buffer_size=10)  # small merges: they fit in spare room
    tables.add_many(fps[:1000], np.arange(1000))
    for i in range(1000, 1600):  # main grows, with spare room after its entries
        tables.add(int(fps[i]), i)
    main = tables.split()[0]._main
    assert len(main._buf) > len(main)
    state = tables.state()
    saved = {name: array.copy() for name, array in state.items()}
    loaded = PermutationTables.from_state(state)  # shares the arrays with `state`
    for i in range(1600, 4000):  # through many buffer, delta and main merges
        tables.add(int(fps[i]), i)
        loaded.add(int(fps[i]), i)
    for name, array in state.items():
        assert np.array_equal(array, saved[name]), name
    entries = [(fp, doc) for doc, fp in enumerate(fps.tolist())]
    for q in fps[::40].tolist():
        assert tables.query(q) == loaded.query(q) == brute(entries, q, 2)


# -- validation -------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs,numbers", [
    (dict(k=3, blocks=3), ["blocks=3", "k=3"]),
    (dict(k=4, blocks=2), ["blocks=2", "k=4"]),
    (dict(k=-1, blocks=6), ["k=-1"]),
    (dict(k=3, blocks=6, f=32), ["f=32"]),
    (dict(k=3, blocks=65), ["blocks=65"]),
    (dict(k=3, blocks=6, shard_bits=32), ["shard_bits=32", "31"]),
    (dict(k=3, blocks=6, shard_bits=-1), ["shard_bits=-1"]),
    (dict(k=0, blocks=1, shard_bits=65), ["shard_bits=65", "64"]),
    (dict(k=10, blocks=64), ["blocks=64", "k=10"]),  # C(64, 10) tables
])
def test_bad_parameters(kwargs, numbers):
    with pytest.raises(ValueError) as err:
        PermutationTables(**kwargs)
    for number in numbers:
        assert number in str(err.value)


def test_bad_values():
    tables = PermutationTables()
    with pytest.raises(ValueError, match="-1"):
        tables.add(-1, 1)
    with pytest.raises(ValueError, match=str(2**64)):
        tables.query(2**64)
    with pytest.raises(ValueError, match="-5"):
        tables.add(5, -5)
    with pytest.raises(ValueError, match="3 fingerprints but 2"):
        tables.add_many(np.arange(3, dtype=np.uint64), np.arange(2))
    with pytest.raises(ValueError, match="table=20"):
        tables.shard_of(20, 0)
    assert len(tables) == 0 and tables.query(0) == []


def test_no_crawler_or_search_imports():
    code = "import sys, dedup.permtables; assert not {'scrapy', 'elasticsearch'} & set(sys.modules)"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_query_many_across_chunks():
    rng = np.random.default_rng(5)
    fps = rng.integers(0, 2**64, 3000, dtype=np.uint64)
    for shard_bits in (0, 2):
        tables = PermutationTables(3, 6, shard_bits=shard_bits, buffer_size=700)
        tables.add_many(fps, np.arange(len(fps)))
        queries = np.concatenate([fps ^ np.uint64(0b1011), rng.integers(0, 2**64, 2000, dtype=np.uint64)])
        assert tables.query_many(queries) == [tables.query(q) for q in queries.tolist()]
