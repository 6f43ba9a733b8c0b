"""The DedupIndex contract, run against every backend, and the local index's own duties.

The ``open_index`` fixture is parametrized over backends (``memory`` -> MemoryIndex,
``local`` -> LocalIndex in tmp_path, ``es_emulated`` -> ElasticIndex on the noida-db
Elasticsearch-API emulator, or on a real cluster when ``DEDUP_TEST_ES_URL`` is set; see
tests/es_server.py).  Tests that need persistence, locking or crashes use LocalIndex directly.
"""
from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `pytest` without an editable install
    sys.path.insert(0, str(ROOT))

from dedup.bits import MASK64  # noqa: E402
from dedup.record import SKETCH, Record, compact_arrays  # noqa: E402
from dedup.store import DedupIndex, KeyTaken, MemoryIndex  # noqa: E402
from index import open_index as open_uri  # noqa: E402
from index.local import SCHEMA_VERSION, VECTORS_NAME, IndexLocked, LocalIndex, decode_blob, encode_blob  # noqa: E402

REF = "mrc-test-ref"
DIM = 150
HERE = Path(__file__).resolve().parent


# -- records -----------------------------------------------------------------------------------
def make_record(rng: np.random.Generator, i: int, *, simhash: int | None = None,
                signature: np.ndarray | None = None, ref_id: str = REF, **fields) -> Record:
    """A record shaped like the featurizer's (full features of featurizer sizes, sorted hashes, made
    compact as Features.to_record makes them), random values; every fifth without shingle positions, as
    a record stored before them."""
    n_terms = int(rng.integers(20, 300))
    n_shingles = int(rng.integers(0, 256))
    positions = rng.integers(0, 256, n_shingles, dtype=np.uint8)
    fields.setdefault("url", f"https://site{i % 7}.example/page/{i}")
    fields.setdefault("content_hash", f"{int(rng.integers(0, 2**62)):016x}")
    fields.setdefault("title_key", f"title {i % 5}|{i % 3}")
    fields.setdefault("title", f"Page {i}")
    fields.setdefault("status", ("unique", "near_duplicate", "duplicate")[i % 3])
    fields.setdefault("duplicate_of", None if i % 3 == 0 else f"https://orig.example/{i}")
    arrays = compact_arrays(
        terms=np.unique(rng.integers(0, 2**64, n_terms, dtype=np.uint64)),
        weights=rng.random(n_terms, dtype=np.float32) * 4,
        shingles=np.unique(rng.integers(0, 2**64, n_shingles, dtype=np.uint64)),
        shingle_count=n_shingles + (int(rng.integers(0, 900)) if i % 4 else 0),
        signature=rng.random(DIM, dtype=np.float32) ** 2 if signature is None else signature,
        positions=positions if i % 5 else None)
    return Record(
        simhash=int(rng.integers(0, 2**64, dtype=np.uint64)) if simhash is None else simhash,
        ref_id=ref_id, sentences=int(rng.integers(1, 40)), fetched_at=1.7e9 + i,
        extra={"restored_at": 1.7e9} if i % 4 == 1 else {}, **arrays, **fields,
    )


def make_records(n: int, seed: int = 0) -> list[Record]:
    rng = np.random.default_rng(seed)
    return [make_record(rng, i) for i in range(n)]


def assert_same_record(got: Record, want: Record) -> None:
    for name in ("id", "url", "title", "content_hash", "title_key", "simhash", "ref_id", "sentences",
                 "status", "duplicate_of", "fetched_at", "extra", "shingle_count", "term_count", "tdw_norm"):
        assert getattr(got, name) == getattr(want, name), name
    for name, dtype in Record._ARRAYS.items():
        a = getattr(got, name)
        assert a.dtype == dtype, name
        assert np.array_equal(a, np.asarray(getattr(want, name), dtype=dtype)), name


def flip(fp: int, bits) -> int:
    for b in bits:
        fp ^= 1 << b
    return fp


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


# -- backends ----------------------------------------------------------------------------------
BACKENDS = ["memory", "local", "es_emulated"]


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture
def open_index(backend, tmp_path, request):
    """``open_index(**options)`` -> a fresh index of the current backend (closed at teardown)."""
    opened = []
    uri = request.getfixturevalue("es_index_uri") if backend == "es_emulated" else None

    def make(**options):
        if backend == "memory":
            ix = MemoryIndex(**options)
        elif backend == "local":
            ix = LocalIndex(tmp_path / "ix", **options)
        elif backend == "es_emulated":
            ix = open_uri(uri, **options)
        else:  # pragma: no cover
            raise AssertionError(backend)
        opened.append(ix)
        return ix

    yield make
    for ix in opened:
        ix.close()


@pytest.fixture
def index(open_index):
    return open_index()


# -- the DedupIndex contract ---------------------------------------------------------------------
def test_is_a_dedup_index(index):
    assert isinstance(index, DedupIndex)
    assert len(index) == 0
    assert index.near_simhash(12345) == []
    assert index.nearest(np.ones(DIM, np.float32), REF, 5, 0.0) == []
    assert index.get([1, 2]) == []
    assert index.lookup("content_hash", "x") == []
    assert index.remove(1) is False


def test_add_assigns_ids_and_get_round_trips(index):
    records = make_records(30)
    want = [Record(**{**r.__dict__}) for r in records]  # shallow copies, to compare after add
    ids = [index.add(r) for r in records]
    assert len(set(ids)) == len(ids) and all(i > 0 for i in ids)  # unique; increasing only locally
    assert [r.id for r in records] == ids
    assert len(index) == 30
    for w, i in zip(want, ids):
        w.id = i
    got = index.get(ids)
    assert len(got) == 30
    for g, w in zip(got, want):
        assert_same_record(g, w)


def test_get_preserves_order_skips_unknown(index):
    ids = [index.add(r) for r in make_records(10)]
    ask = [ids[7], ids[2], 10**9, ids[7], ids[0]]
    assert [r.id for r in index.get(ask)] == [ids[7], ids[2], ids[7], ids[0]]
    assert [r.id for r in index.get(iter([ids[3]]))] == [ids[3]]
    assert index.get([]) == []


def test_lookup_exact_keys(index):
    rng = np.random.default_rng(1)
    a = index.add(make_record(rng, 0, content_hash="h1", title_key="T|1"))
    b = index.add(make_record(rng, 1, content_hash="h2", title_key="T|1"))
    # a kept exact duplicate shares the content hash without claiming it
    c = index.add(make_record(rng, 2, content_hash="h1", title_key="U|2", status="exact_duplicate"))
    assert index.lookup("content_hash", "h1")[0] == a  # the holder of the claim first
    assert sorted(index.lookup("content_hash", "h1")) == sorted([a, c])
    assert index.lookup("content_hash", "h2") == [b]
    assert sorted(index.lookup("title_key", "T|1")) == sorted([a, b])
    assert index.lookup("title_key", "nope") == []
    with pytest.raises(ValueError, match="unknown exact key"):
        index.lookup("url", "x")


def test_remove(index, backend):
    rng = np.random.default_rng(2)
    recs = [make_record(rng, i, content_hash=f"h{i}") for i in range(5)]
    ids = [index.add(r) for r in recs]
    victim = recs[2]
    assert index.remove(ids[2]) is True
    assert index.remove(ids[2]) is False
    assert len(index) == 4
    assert index.get([ids[2]]) == []
    assert index.lookup("content_hash", "h2") == []
    assert ids[2] not in [i for i, _ in index.near_simhash(victim.simhash)]
    found = index.nearest(victim.signature, REF, 10, 0.01)
    assert ids[2] not in [i for i, _ in found]
    assert {i for i, _ in found} <= set(ids) - {ids[2]}
    # the content is free again: the new record holds it and is stored
    again = index.add(make_record(rng, 9, content_hash="h2"))
    assert again > 0 and index.lookup("content_hash", "h2") == [again] and len(index) == 5
    if backend != "es_emulated":  # Elasticsearch derives a record's id from its content claim
        assert again > max(ids)  # ids are never reused


def test_content_claim_is_exclusive(index):
    """A second record claiming the same content is refused with the holder's id, and stores nothing."""
    rng = np.random.default_rng(12)
    holder = index.add(make_record(rng, 0, content_hash="same"))
    for status in ("unique", "near_duplicate", "duplicate"):
        with pytest.raises(KeyTaken) as taken:
            index.add(make_record(rng, 1, content_hash="same", status=status, url="https://other.example/"))
        assert taken.value.record_id == holder and taken.value.content_hash == "same"
    assert len(index) == 1
    assert index.lookup("content_hash", "same") == [holder]
    # an empty hash (a page without text) claims nothing
    assert index.add(make_record(rng, 2, content_hash="")) != index.add(make_record(rng, 3, content_hash=""))


def test_by_url_and_replace_keep_one_record_per_url(index):
    """A URL's newer version replaces its record: the row, its exact keys, simhash table entries and
    vector; the older content is free again; a replace whose new content another record claims is
    refused and leaves the older version as it was."""
    rng = np.random.default_rng(21)
    url = "https://a.example/page"
    old = make_record(rng, 0, url=url, content_hash="v1", status="unique", duplicate_of=None)
    other = make_record(rng, 1, url="https://b.example/x", content_hash="taken")
    old_id, _ = index.add(old), index.add(other)
    assert index.by_url(url).id == old_id and index.by_url(url).content_hash == "v1"
    assert index.by_url("https://nowhere.example/") is None
    new = make_record(rng, 2, url=url, content_hash="v2", status="unique", duplicate_of=None)
    new_id = index.replace(old_id, new)
    assert new.id == new_id and len(index) == 2
    got = index.by_url(url)
    assert got.id == new_id and got.content_hash == "v2"
    assert index.lookup("content_hash", "v1") == [] and index.lookup("content_hash", "v2") == [new_id]
    if new_id != old_id:
        assert index.get([old_id]) == []
    assert (new_id, 0) in index.near_simhash(new.simhash)
    assert old_id == new_id or old_id not in [i for i, _ in index.near_simhash(old.simhash)]
    assert index.nearest(new.signature, REF, 1, 0.0)[0][0] == new_id
    with pytest.raises(KeyTaken):
        index.replace(new_id, make_record(rng, 3, url=url, content_hash="taken"))
    assert index.by_url(url).content_hash == "v2" and len(index) == 2
    assert index.add(make_record(rng, 4, url="https://c.example/", content_hash="v1")) > 0  # v1 is free


def test_a_replace_killed_between_its_write_and_its_delete_heals_on_the_next_lookup(es_index_uri):
    """Elasticsearch's replace writes the new version before deleting the old (no transaction): a process
    killed between the two leaves two records of one URL; the next by_url returns the latest and removes
    the other, whether the page then comes back unchanged (refetched) or changed."""
    rng = np.random.default_rng(22)
    url = "https://a.example/page"
    with open_uri(es_index_uri) as ix:
        old_id = ix.add(make_record(rng, 0, url=url, content_hash="v1"))
        new_id = ix.add(make_record(rng, 1, url=url, content_hash="v2"))  # killed before remove(old_id)
        ix.flush()
    with open_uri(es_index_uri) as ix:
        assert len(ix) == 2
        got = ix.by_url(url)
        assert got.id == new_id and got.content_hash == "v2"
        assert len(ix) == 1 and ix.get([old_id]) == [] and ix.lookup("content_hash", "v1") == []


@pytest.mark.parametrize("k,blocks", [(3, 6), (4, 7), (0, 2)])
def test_near_simhash_is_exact(open_index, k, blocks):
    index = open_index(k=k, blocks=blocks)
    rng = np.random.default_rng(3)
    base = 0xF00D_CAFE_DEAD_BEEF  # top bit set: stored as a negative int64 in SQLite
    planted = {}
    for d in list(range(k + 1)) + [k + 1, k + 2, 2 * k + 5]:
        for _ in range(3):
            fp = flip(base, rng.choice(64, size=d, replace=False).tolist())
            planted[index.add(make_record(rng, len(planted), simhash=fp))] = fp
    for i in range(300):  # background
        fp = int(rng.integers(0, 2**64, dtype=np.uint64))
        planted[index.add(make_record(rng, 1000 + i, simhash=fp))] = fp
    ids = np.array(list(planted), dtype=np.int64)
    fps = np.array(list(planted.values()), dtype=np.uint64)
    queries = [base, flip(base, [63]), flip(base, [0, 31]), MASK64, 0] + fps[:10].tolist()
    for q in queries:
        d = np.bitwise_count(fps ^ np.uint64(q)).astype(np.int64)
        hit = d <= k
        want = sorted(zip(ids[hit].tolist(), d[hit].tolist()), key=lambda p: (p[1], p[0]))
        assert index.near_simhash(q) == want
    assert len(index.near_simhash(base)) >= 3 * (k + 1)  # every planted fingerprint within k


def test_nearest_closest_first_and_floor(index):
    rng = np.random.default_rng(4)
    base = rng.random(DIM, dtype=np.float32)
    sigs = {}
    for i in range(200):
        sigs[index.add(make_record(rng, i))] = None
    near = base + 0.02 * rng.random(DIM, dtype=np.float32)
    mid = base + 0.6 * rng.random(DIM, dtype=np.float32)
    near_id = index.add(make_record(rng, 500, signature=near))
    mid_id = index.add(make_record(rng, 501, signature=mid))
    found = index.nearest(base, REF, 5, 0.0)
    assert len(found) == 5
    assert found[0][0] == near_id
    assert found[0][1] == pytest.approx(float(unit(base) @ unit(near)), abs=2e-3)
    sims = [s for _, s in found]
    assert sims == sorted(sims, reverse=True)
    # a floor between the near and mid cosines keeps only the near one
    cos_near, cos_mid = float(unit(base) @ unit(near)), float(unit(base) @ unit(mid))
    floor = (cos_near + cos_mid) / 2
    assert floor > cos_mid + 1e-3 and cos_near > floor + 1e-3
    top = index.nearest(base, REF, 50, floor)
    assert [i for i, _ in top] == [near_id]
    assert all(s >= floor for _, s in top)
    assert mid_id in [i for i, _ in index.nearest(base, REF, 50, cos_mid - 0.01)]
    assert index.nearest(base, REF, 0, 0.0) == []
    assert len(index.nearest(base, REF, 1000, -1.0)) == 202  # n larger than the index
    assert index.nearest(np.zeros(DIM, np.float32), REF, 5, 0.0) == []  # no direction


def test_nearest_matches_brute_force(index):
    rng = np.random.default_rng(5)
    recs = make_records(300, seed=5)
    for r in recs:
        index.add(r)
    mat = np.array([unit(r.signature) for r in recs])
    position = {r.id: j for j, r in enumerate(recs)}
    for r in recs[:20]:
        q = r.signature + 0.05 * rng.random(DIM, dtype=np.float32)
        cos = mat @ unit(q)
        want = [recs[j].id for j in np.argsort(-cos)[:3]]
        got = index.nearest(q, REF, 3, 0.0)
        assert [i for i, _ in got][:1] == want[:1]
        for i, s in got:
            assert s == pytest.approx(float(cos[position[i]]), abs=2e-3)


def test_ref_id_mismatch_refused(index):
    rng = np.random.default_rng(6)
    index.add(make_record(rng, 0))
    with pytest.raises(ValueError, match="recompute"):
        index.add(make_record(rng, 1, ref_id="mrc-other"))
    with pytest.raises(ValueError, match="mrc-other"):
        index.nearest(np.ones(DIM, np.float32), "mrc-other", 3, 0.0)


def test_refused_record_is_not_stored(index):
    rng = np.random.default_rng(6)
    index.add(make_record(rng, 0, content_hash="kept"))
    bad = make_record(rng, 1, ref_id="mrc-other", content_hash="refused")
    with pytest.raises(ValueError):
        index.add(bad)
    assert len(index) == 1
    assert index.lookup("content_hash", "refused") == []
    assert index.near_simhash(bad.simhash) == []


def test_realistic_records_from_pages(index):
    """Records made by the featurizer from HTML survive the backend unchanged."""
    from dedup.features import Featurizer
    from dedup.page import parse_page

    fz = Featurizer()
    words = ("harbour ferry council timetable winter service island morning evening weather "
             "passengers bridge schedule volunteers library roof repair orchard frost").split()
    rng = np.random.default_rng(7)
    pages = []
    for i in range(4):
        paras = "".join(f"<p>{' '.join(rng.choice(words, 25))}. {' '.join(rng.choice(words, 18))}.</p>"
                        for _ in range(4))
        html = f"<html><head><title>Story {i}</title></head><body><h1>Story {i}</h1>{paras}</body></html>"
        pages.append(parse_page(html, f"https://news.example/{i}"))
    records = [fz(p).to_record(p) for p in pages]
    ids = [index.add(r) for r in records]
    for got, want in zip(index.get(ids), records):
        assert_same_record(got, want)
    best = index.nearest(records[2].signature, records[2].ref_id, 1, 0.0)
    assert best[0][0] == ids[2] and best[0][1] == pytest.approx(1.0, abs=1e-3)
    assert (ids[1], 0) in index.near_simhash(records[1].simhash)


def test_deduplicator_verdicts_match_memory_index(tmp_path):
    """The Deduplicator gives the same verdicts over the local index as over memory."""
    from dedup.deduplicator import Deduplicator

    pages_dir = ROOT / "crawler" / "sample_site" / "pages"
    files = sorted(pages_dir.rglob("*.html"))
    assert files
    verdicts = {}
    with LocalIndex(tmp_path / "ix") as local:
        for name, ix in (("memory", MemoryIndex()), ("local", local)):
            dd = Deduplicator(ix)
            verdicts[name] = [
                (v.status, v.duplicate_of, v.rule)
                for v in (dd.process_html(f.read_bytes(), "http://town.test/" + str(f.relative_to(pages_dir)))[1]
                          for f in files)]
        assert len(local) == sum(1 for s, _, _ in verdicts["local"] if s != "exact_duplicate")
    assert verdicts["local"] == verdicts["memory"]
    assert any(s != "unique" for s, _, _ in verdicts["local"])


# -- LocalIndex: files, persistence, derived structures ----------------------------------------------
def snapshot(ix, records) -> dict:
    """Every answer the index gives about ``records``."""
    return {
        "len": len(ix),
        "lookup": [(ix.lookup("content_hash", r.content_hash), ix.lookup("title_key", r.title_key))
                   for r in records],
        "near": [ix.near_simhash(r.simhash) for r in records],
        "nearest": [[(i, round(s, 5)) for i, s in ix.nearest(r.signature, REF, 4, 0.0)] for r in records[:40]],
        "get": [r.to_dict() for r in ix.get([r.id for r in records])],
    }


def test_open_index_uri_and_files(tmp_path):
    path = tmp_path / "a" / "b"
    with open_uri(f"local://{path}") as ix:
        assert isinstance(ix, LocalIndex)
        ix.add(make_records(1)[0])
    assert (path / "dedup.sqlite").exists() and (path / VECTORS_NAME).exists() and (path / "lock").exists()
    db = sqlite3.connect(path / "dedup.sqlite")
    try:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        meta = dict(db.execute("SELECT key, value FROM meta"))
        cols = [r[1] for r in db.execute("PRAGMA table_info(records)")]
    finally:
        db.close()
    assert meta["schema_version"] == str(SCHEMA_VERSION) and meta["k"] == "3" and meta["blocks"] == "5"
    assert meta["ref_id"] == REF and meta["dim"] == str(DIM)
    assert meta["vectors_count"] == "1" and meta["vectors_max_id"] == "1"
    assert cols == ["id", "url", "url_key", "content_hash", "title_key", "simhash", "status", "duplicate_of",
                    "fetched_at", "ref_id", "sentences", "title", "data"]


def test_simhash_stored_as_signed_int64(tmp_path):
    rng = np.random.default_rng(8)
    fps = [0, 1, 2**63 - 1, 2**63, MASK64, 0xDEAD_BEEF_0000_0001]
    with LocalIndex(tmp_path / "ix") as ix:
        ids = [ix.add(make_record(rng, i, simhash=fp)) for i, fp in enumerate(fps)]
        assert [r.simhash for r in ix.get(ids)] == fps
        with pytest.raises(ValueError, match="unsigned 64-bit"):
            ix.add(make_record(rng, 9, simhash=-1))
    db = sqlite3.connect(tmp_path / "ix" / "dedup.sqlite")
    try:
        stored = [r[0] for r in db.execute("SELECT simhash FROM records ORDER BY id")]
    finally:
        db.close()
    assert stored == [fp - 2**64 if fp >= 2**63 else fp for fp in fps]
    with LocalIndex(tmp_path / "ix") as ix:
        for i, fp in zip(ids, fps):
            assert (i, 0) in ix.near_simhash(fp)


def test_blob_round_trip():
    rng = np.random.default_rng(9)
    empty = make_record(rng, 0)
    empty.shingles = np.zeros(0, np.uint32)
    empty.extra = {}
    unsorted = make_record(rng, 2)
    unsorted.terms = unsorted.terms[::-1].copy()  # not sorted: written as DR3, read back as given
    for r, version, magic in ((empty, 4, b"DR4\0"), (make_record(rng, 1), 4, b"DR4\0"), (make_record(rng, 5), 4, b"DR4\0"),
                              (make_record(rng, 5), 3, b"DR2\0"), (unsorted, 4, b"DR3\0")):
        blob = encode_blob(r, version)
        assert blob[:4] == magic
        out = decode_blob(blob)
        for name, dtype in Record._ARRAYS.items():
            assert np.array_equal(out[name], getattr(r, name)) and out[name].dtype == dtype
            out[name][:1] = 0  # writable
        assert out["extra"] == r.extra
        assert (out["shingle_count"], out["term_count"], out["tdw_norm"]) == (
            r.shingle_count, r.term_count, np.float32(r.tdw_norm))
    with pytest.raises(ValueError, match="format"):
        decode_blob(b"XXXX" + bytes(28))
    wide = make_record(rng, 5)
    wide.shingles = np.array([1, 2**24], dtype=np.uint32)
    with pytest.raises(ValueError, match="below 2"):
        encode_blob(wide)


def test_dr4_keys_take_fewer_bytes_and_sizes_of_real_sketches():
    """A bottom-128 sketch of a 335-shingle page: its keys lie below ~128/335 of the 24-bit range, ~17 bits
    a key coded, against 24 in DR3; a record of uniform keys still gains a little."""
    from dedup import _fast

    rng = np.random.default_rng(13)
    for n, top in ((128, 2**24 * 128 // 335), (48, 2**24), (32, 2**24 * 32 // 331), (1, 5), (3, 1)):
        keys = np.sort(rng.choice(top, n, replace=False) if n <= top else rng.integers(0, top, n)).astype(np.uint32)
        code = _fast.ef_encode(keys)
        assert len(code) <= 3 * n + 1
        got, end = _fast.ef_decode(b"ab" + code + b"cd", 2, n)
        assert np.array_equal(np.frombuffer(got, np.uint32), keys) and end == 2 + len(code)
    assert len(_fast.ef_encode(np.sort(rng.choice(2**24 * 128 // 335, 128, replace=False)).astype(np.uint32))) < 290
    assert _fast.ef_encode(np.array([3, 1], dtype=np.uint32)) is None
    with pytest.raises(ValueError, match="truncated"):
        _fast.ef_decode(_fast.ef_encode(np.arange(0, 1000, 10, dtype=np.uint32))[:-5], 0, 100)


def test_reopen_gives_identical_answers(tmp_path):
    records = make_records(400, seed=10)
    with LocalIndex(tmp_path / "ix") as ix:
        for r in records:
            ix.add(r)
        for r in records[::50]:
            ix.remove(r.id)
        before = snapshot(ix, records)
    vec_file = tmp_path / "ix" / VECTORS_NAME
    saved = vec_file.read_bytes()
    with LocalIndex(tmp_path / "ix") as ix:  # tables rebuilt, vector index loaded
        assert snapshot(ix, records) == before
        assert ix.check(sample=None)["ok"]
    assert vec_file.read_bytes() == saved  # nothing changed: not rewritten
    vec_file.unlink()
    with LocalIndex(tmp_path / "ix") as ix:  # vector index rebuilt from SQLite
        assert snapshot(ix, records) == before
        assert ix.check(sample=None)["ok"]
    assert vec_file.exists()
    vec_file.write_bytes(b"not a usearch index" * 10)
    with LocalIndex(tmp_path / "ix") as ix:  # unreadable: rebuilt
        assert snapshot(ix, records) == before


def test_stale_vector_file_is_reconciled(tmp_path):
    path = tmp_path / "ix"
    records = make_records(120, seed=11)
    with LocalIndex(path) as ix:
        for r in records[:100]:
            ix.add(r)
    old = (path / VECTORS_NAME).read_bytes()  # covers ids 1..100
    with LocalIndex(path) as ix:
        ix.remove(records[5].id)
        ix.remove(records[99].id)
        for r in records[100:]:
            ix.add(r)
        want = snapshot(ix, records)
    (path / VECTORS_NAME).write_bytes(old)  # as if the last save had not happened
    with LocalIndex(path) as ix:
        report = ix.check(sample=None)
        assert report["ok"], report
        assert report["vectors"] == report["records"] == 118
        assert snapshot(ix, records) == want
        gone = [i for i, _ in ix.nearest(records[5].signature, REF, 200, -1.0)]
        assert records[5].id not in gone and records[99].id not in gone and len(gone) == 118


def test_other_k_blocks_on_reopen(tmp_path):
    rng = np.random.default_rng(12)
    base = 0x0123_4567_89AB_CDEF
    with LocalIndex(tmp_path / "ix") as ix:  # k=3, blocks=5 (a new index's default)
        assert (ix.k, ix.blocks) == (3, 5)
        a = ix.add(make_record(rng, 0, simhash=flip(base, [1, 9, 17, 40])))  # distance 4
        b = ix.add(make_record(rng, 1, simhash=flip(base, [2, 50])))
        assert ix.near_simhash(base) == [(b, 2)]
    with LocalIndex(tmp_path / "ix", k=4, blocks=8) as ix:
        assert (ix.k, ix.blocks) == (4, 8)
        assert ix.near_simhash(base) == [(b, 2), (a, 4)]
    with LocalIndex(tmp_path / "ix") as ix:  # None: the parameters it was last opened with
        assert (ix.k, ix.blocks) == (4, 8)
        assert ix.near_simhash(base) == [(b, 2), (a, 4)]


def test_ref_id_is_persistent(tmp_path):
    rng = np.random.default_rng(13)
    with LocalIndex(tmp_path / "ix") as ix:
        ix.add(make_record(rng, 0))
        ix.remove(1)
    with LocalIndex(tmp_path / "ix") as ix:
        assert ix.ref_id == REF and len(ix) == 0
        with pytest.raises(ValueError, match="recompute"):
            ix.add(make_record(rng, 1, ref_id="mrc-new"))
        with pytest.raises(ValueError, match="dimensions"):
            ix.add(make_record(rng, 2, signature=np.ones(DIM + 1, np.float32)))
        assert ix.add(make_record(rng, 3)) == 2


def test_helpers_and_closed_index(tmp_path):
    records = make_records(25, seed=14)
    records[7].url = records[3].url
    ix = LocalIndex(tmp_path / "ix")
    with ix:
        for r in records:
            ix.add(r)
        assert [r.id for r in ix.iter_records(batch=4)] == [r.id for r in records]
        assert ix.by_url(records[3].url).id == records[7].id  # the latest
        assert ix.by_url("https://nowhere.example/") is None
        assert "25 records" in repr(ix)
    assert "closed" in repr(ix)
    ix.close()  # idempotent
    with pytest.raises(ValueError, match="closed"):
        ix.add(records[0])
    with pytest.raises(ValueError, match="closed"):
        ix.lookup("content_hash", "x")


def test_check_reports_inconsistency(tmp_path):
    records = make_records(30, seed=15)
    with LocalIndex(tmp_path / "ix") as ix:
        for r in records:
            ix.add(r)
        assert ix.check()["ok"]
        ix._vectors.remove(records[4].id)  # break the derived vector index on purpose
        ix.tables.remove(records[6].simhash, records[6].id)
        report = ix.check(sample=None)
        assert not report["ok"]
        assert report["missing_from_vectors"] == [records[4].id]
        assert report["missing_from_tables"] == [records[6].id]
        assert report["tables"] == 29 and report["vectors"] == 29 and report["records"] == 30
        ix._vectors.add(records[4].id, np.asarray(records[4].signature))
        ix.flush()
    with LocalIndex(tmp_path / "ix") as ix:  # reopening rebuilds the tables from SQLite
        assert ix.check(sample=None, sqlite_integrity=True)["ok"]


# -- single writer ---------------------------------------------------------------------------------
def test_lock_in_process(tmp_path):
    with LocalIndex(tmp_path / "ix") as ix:
        ix.add(make_records(1)[0])
        with pytest.raises(IndexLocked) as err:
            LocalIndex(tmp_path / "ix")
        msg = str(err.value)
        assert str(os.getpid()) in msg and "DEDUP_INDEX=http://host:9200/name" in msg
        assert isinstance(err.value, RuntimeError)
        assert len(ix) == 1  # the failed open did not disturb the open one
    with LocalIndex(tmp_path / "ix") as ix:  # released on close
        assert len(ix) == 1


def _python(code: str, *args: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)])}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kw)


def test_lock_across_processes(tmp_path):
    holder = _python("""
        import sys
        from index.local import LocalIndex
        with LocalIndex(sys.argv[1]):
            print("ready", flush=True)
            sys.stdin.readline()
    """, str(tmp_path / "ix"))
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(IndexLocked) as err:
            LocalIndex(tmp_path / "ix")
        msg = str(err.value)
        assert f"another process (pid {holder.pid})" in msg
        assert "Elasticsearch" in msg and "DEDUP_INDEX=http://host:9200/name" in msg
    finally:
        out, errs = holder.communicate("\n", timeout=60)
    assert holder.returncode == 0, errs
    with LocalIndex(tmp_path / "ix") as ix:
        assert len(ix) == 0


def test_lock_released_when_holder_is_killed(tmp_path):
    holder = _python("""
        import sys, time
        from index.local import LocalIndex
        ix = LocalIndex(sys.argv[1])
        print("ready", flush=True)
        time.sleep(600)
    """, str(tmp_path / "ix"))
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(IndexLocked):
            LocalIndex(tmp_path / "ix")
    finally:
        holder.kill()
        holder.communicate(timeout=60)
    with LocalIndex(tmp_path / "ix") as ix:  # the kernel dropped the flock with the process
        assert len(ix) == 0


def test_the_check_before_a_crawl_holds_the_lock_until_the_pipelines_open_the_index(tmp_path):
    """helper-21: two crawls started at the same instant both passed the check before the crawl (a lock taken
    and let go), and the second failed when its pipelines opened the index, with two tracebacks. The check
    now keeps the lock for this process's opener: a second process is refused by the check, in one line."""
    from index import unavailable

    uri = f"local://{tmp_path / 'ix'}"
    assert unavailable(uri, hold=True) is None and unavailable(uri, hold=True) is None  # held, once
    other = _python("""
        import sys
        from index import unavailable
        print(unavailable(sys.argv[1], hold=True))
    """, uri)
    out, errs = other.communicate(timeout=60)
    assert f"in use by another process (pid {os.getpid()})" in out, out + errs
    with LocalIndex(tmp_path / "ix") as ix:  # the check's lock, handed to the opener
        ix.add(make_records(1)[0])
        with pytest.raises(IndexLocked):
            LocalIndex(tmp_path / "ix")
    with LocalIndex(tmp_path / "ix") as ix:  # released on close, as any
        assert len(ix) == 1


# -- crash safety ----------------------------------------------------------------------------------
@pytest.mark.parametrize("autosave", [0, 40])
def test_sigkill_after_add_loses_nothing(tmp_path, autosave):
    n = 150
    proc = _python("""
        import os, sys
        from index.local import LocalIndex
        from test_local_index import make_records
        ix = LocalIndex(sys.argv[1], autosave=int(sys.argv[3]))
        for r in make_records(int(sys.argv[2]), seed=16):
            ix.add(r)
        print("done", flush=True)
        os.kill(os.getpid(), 9)
    """, str(tmp_path / "ix"), str(n), str(autosave))
    out, errs = proc.communicate(timeout=120)
    assert out.strip() == "done", errs
    assert proc.returncode == -signal.SIGKILL
    assert (tmp_path / "ix" / "dedup.sqlite-wal").exists()  # killed before any checkpoint on close
    records = make_records(n, seed=16)
    for i, r in enumerate(records, 1):
        r.id = i
    with LocalIndex(tmp_path / "ix") as ix:
        assert len(ix) == n
        report = ix.check(sample=None)
        assert report["ok"], report
        assert report["vectors"] == report["tables"] == n
        for got, want in zip(ix.iter_records(), records):
            assert_same_record(got, want)
        for r in records[:20]:
            assert ix.nearest(r.signature, REF, 1, 0.0)[0][0] == r.id
            assert (r.id, 0) in ix.near_simhash(r.simhash)


def test_copy_of_index_directory_opens(tmp_path):
    """A copied directory (e.g. a backup taken after close) is a complete index."""
    records = make_records(50, seed=17)
    with LocalIndex(tmp_path / "ix") as ix:
        for r in records:
            ix.add(r)
        want = snapshot(ix, records)
    shutil.copytree(tmp_path / "ix", tmp_path / "copy")
    with LocalIndex(tmp_path / "copy") as ix:
        assert snapshot(ix, records) == want


def test_i8_vectors_are_centred(tmp_path, monkeypatch):
    """i8 vectors hold the centred unit signatures once CENTRE_SAMPLE records exist, each scaled to a largest
    component of 127; nearest() still ranks by (and returns) the raw cosine, within the quantisation error,
    from memory; a statistics file of the first format (fine codes beside usearch's truncated vectors) has
    every vector added again."""
    import index.local as local

    monkeypatch.setattr(local.vectors, "CENTRE_SAMPLE", 60)  # where the vector index reads it
    rng = np.random.default_rng(21)
    profile = rng.gamma(2.0, 1.0, DIM)  # signatures alike, as MRC signatures are (cosines ~0.95)
    sigs = (profile * np.exp(0.2 * rng.standard_normal((200, DIM)))).astype(np.float32)
    path = tmp_path / "ix"
    with LocalIndex(path, vector_dtype="i8", exact_below=50) as ix:
        ids = [ix.add(make_record(rng, i, signature=sigs[i])) for i in range(40)]
        assert ix._centre_id == "none"  # too few records for a centre: raw unit signatures
        ids += [ix.add(make_record(rng, i, signature=sigs[i])) for i in range(40, 200)]
        assert ix._centre_id != "none" and ix.check(None)["ok"]
        unit = sigs / np.linalg.norm(sigs, axis=1, keepdims=True)
        for j in (0, 7, 150):
            q = sigs[j] * np.exp(0.03 * rng.standard_normal(DIM)).astype(np.float32)
            got = ix.nearest(q, REF, 5, 0.0)
            exact = unit @ (q / np.linalg.norm(q))
            assert got[0][0] == ids[j]
            assert all(abs(s - exact[ids.index(i)]) < 3e-4 for i, s in got)  # usearch's own cast: ~3e-3
        stored = np.asarray(ix._vectors.get(np.array(ids, dtype=np.uint64)), dtype=np.int64).reshape(len(ids), -1)
        assert (np.abs(stored).max(axis=1) == 127).all()
        centre = ix._centre.copy()
    meta = dict(sqlite3.connect(path / "dedup.sqlite").execute("SELECT key, value FROM meta"))
    assert len(meta["vectors_centre"]) == 16 and len(meta["vector_centre"]) == 16 * DIM
    mtime = (path / VECTORS_NAME).stat().st_mtime_ns
    with LocalIndex(path, vector_dtype="i8", exact_below=50) as ix:  # current file: loaded as is
        assert np.array_equal(ix._centre, centre) and ix.check(None)["ok"]
        assert ix.nearest(sigs[3], REF, 1, 0.0)[0][0] == ids[3]
    assert (path / VECTORS_NAME).stat().st_mtime_ns == mtime
    (path / "signatures.stats.npz").unlink()  # lost statistics: the vectors are added again
    with LocalIndex(path, vector_dtype="i8", exact_below=50) as ix:
        assert ix.check(None)["ok"] and ix.nearest(sigs[3], REF, 1, 0.0)[0][0] == ids[3]
    with open(path / "signatures.stats.npz", "wb") as f:  # the first format: vectors usearch had truncated
        np.savez(f, stats=np.zeros((2, 201), np.float32), fine=np.zeros((201, -(-DIM * 2 // 8)), np.uint8))
    with LocalIndex(path, vector_dtype="i8", exact_below=50) as ix:
        assert not np.isnan(ix._stats[1, ids]).any() and ix._stats[1, ids].min() > 0  # added again
        assert ix.check(None)["ok"] and ix.nearest(sigs[3], REF, 1, 0.0)[0][0] == ids[3]
    with LocalIndex(path, vector_dtype="f16") as ix:  # f16: rebuilt raw, the centre kept for later
        assert ix.check(None)["ok"] and ix.nearest(sigs[3], REF, 1, 0.0)[0][0] == ids[3]


def _dr1_blob(sig, chunks, terms, shingles, weights, extra) -> bytes:
    """A data blob as indexes made before compact records hold it (format DR1: full features)."""
    import json
    import struct

    extra = json.dumps(extra, separators=(",", ":")).encode() if extra else b""
    head = struct.pack("<4s6I4x", b"DR1\0", sig.size, chunks.size, terms.size, shingles.size, weights.size, len(extra))
    return b"".join((head, sig.astype("<f4").tobytes(), chunks.astype("<u8").tobytes(), terms.astype("<u8").tobytes(),
                     shingles.astype("<u8").tobytes(), weights.astype("<f4").tobytes(), extra))


def test_old_full_records_are_read_as_compact(tmp_path):
    """An index made before compact records (schema 1, DR1 blobs) opens: its records read as the
    compact records the same features make today, old and new ones side by side."""
    rng = np.random.default_rng(4)
    full = dict(terms=np.unique(rng.integers(0, 2**64, 200, dtype=np.uint64)),
                shingles=np.unique(rng.integers(0, 2**64, 256, dtype=np.uint64)),
                signature=rng.random(DIM, dtype=np.float32))
    full["weights"] = (rng.integers(1, 9, full["terms"].size) / 2).astype(np.float32)
    with LocalIndex(tmp_path / "ix") as ix:
        new_id = ix.add(make_record(rng, 0))
        fresh = make_record(rng, 1)
        blob = _dr1_blob(full["signature"], np.arange(5, dtype=np.uint64), full["terms"], full["shingles"],
                         full["weights"], {"shingle_count": 700, "restored_at": 1.5})
        with ix._db:
            ix._db.execute(ix._insert, ix._row(fresh, blob)[:2] + (fresh.content_hash, fresh.title_key, 5, "unique",
                                                                  None, 1.0, REF, 9, "Old", blob))
            ix._db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    with LocalIndex(tmp_path / "ix") as ix:
        (old,) = [r for r in ix.iter_records() if r.id != new_id]
        want = compact_arrays(shingle_count=700, **full)
        for name in ("shingles", "terms", "weights", "term_sample", "signature"):
            assert np.array_equal(getattr(old, name), want[name]), name
        assert (old.shingle_count, old.term_count, old.extra) == (700, 200, {"restored_at": 1.5})
        assert old.tdw_norm == pytest.approx(want["tdw_norm"])
        assert ix.check(None)["ok"] and ix.get([new_id])[0].id == new_id
    meta = dict(sqlite3.connect(tmp_path / "ix" / "dedup.sqlite").execute("SELECT key, value FROM meta"))
    assert meta["schema_version"] == str(SCHEMA_VERSION)  # an older program now refuses it


def test_record_size_is_bounded():
    """However long the page, a record's blob stays near 1 KB (issue 14 item 8: <= 2 KB on disk): 1,000 B and
    one byte a shingle key for its position."""
    rng = np.random.default_rng(6)
    shingles = np.unique(rng.integers(0, 2**64, 20000, dtype=np.uint64))
    arrays = compact_arrays(terms=np.unique(rng.integers(0, 2**64, 5000, dtype=np.uint64)),
                            weights=rng.random(5000, dtype=np.float32) * 9,
                            shingles=shingles, shingle_count=20000, signature=rng.random(DIM, dtype=np.float32),
                            positions=rng.integers(0, 256, shingles.size, dtype=np.uint8))
    rec = Record(url="u", content_hash="h", title_key="t", simhash=1, ref_id=REF, sentences=400, **arrays)
    assert rec.shingle_positions.size == rec.shingles.size == SKETCH
    assert len(encode_blob(rec)) <= 1000 + SKETCH


_SCHEMA3 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE records (id INTEGER PRIMARY KEY AUTOINCREMENT, url TEXT NOT NULL, content_hash TEXT NOT NULL,
    title_key TEXT NOT NULL, simhash INTEGER NOT NULL, status TEXT NOT NULL, duplicate_of TEXT,
    fetched_at REAL NOT NULL, ref_id TEXT NOT NULL, sentences INTEGER NOT NULL, title TEXT NOT NULL, data BLOB NOT NULL);
CREATE INDEX records_content_hash ON records(content_hash);
CREATE INDEX records_title_key ON records(title_key);
CREATE INDEX records_url ON records(url);
CREATE INDEX records_simhash ON records(simhash);
"""


def test_schema3_index_opens_and_grows(tmp_path):
    """An index written before schema 4 (text keys and ref_id in every row, DR3 blobs) opens: its records read
    as written, its keys found, and records added to it are stored in its own columns (DR4 blobs)."""
    from index.local.records import to_signed

    rng = np.random.default_rng(21)
    hexkeys = [make_record(rng, i, content_hash=f"{i:032x}", title_key=f"{i * 7:016x}") for i in range(6)]
    path = tmp_path / "ix"
    path.mkdir()
    db = sqlite3.connect(path / "dedup.sqlite")
    with db:
        db.executescript(_SCHEMA3)
        db.executemany("INSERT INTO meta VALUES (?, ?)", [("schema_version", "3"), ("k", "3"), ("blocks", "5"),
                                                          ("ref_id", REF), ("dim", str(DIM))])
        db.executemany("INSERT INTO records(url, content_hash, title_key, simhash, status, duplicate_of, fetched_at, "
                       "ref_id, sentences, title, data) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                       [(r.url, r.content_hash, r.title_key, to_signed(r.simhash), r.status, r.duplicate_of, r.fetched_at,
                         r.ref_id, r.sentences, r.title, encode_blob(r, version=3)) for r in hexkeys[:4]])
    db.close()
    with LocalIndex(path) as ix:
        assert not ix._keys_binary
        got = ix.get([1, 2, 3, 4])
        assert [(r.content_hash, r.title_key, r.ref_id) for r in got] == [
            (r.content_hash, r.title_key, REF) for r in hexkeys[:4]]
        assert ix.lookup("content_hash", hexkeys[2].content_hash) == [3]
        for r in hexkeys[4:]:
            ix.add(r)
        assert ix.lookup("title_key", hexkeys[5].title_key) == [6] and ix.check(None)["ok"]
        assert not ix._url_key and ix.by_url(hexkeys[1].url).id == 2 and ix.by_url(hexkeys[5].url).id == 6
    db = sqlite3.connect(path / "dedup.sqlite")
    rows = db.execute("SELECT typeof(content_hash), ref_id, substr(data, 1, 3) FROM records ORDER BY id").fetchall()
    db.close()
    assert rows == [("text", REF, b"DR3" if r.shingle_positions.size else b"DR2") for r in hexkeys[:4]] + [
        ("text", REF, b"DR4")] * 2


def test_schema5_finds_urls_by_their_integer_key(tmp_path):
    """A new index finds a URL through url_key (an integer hash, indexed; no index of the URL's text), and
    compares the URL itself: two URLs of one key (made here by hand) are told apart."""
    from index.local.records import url_key

    rng = np.random.default_rng(24)
    records = [make_record(rng, i) for i in range(3)]
    with LocalIndex(tmp_path / "ix") as ix:
        ids = [ix.add(r) for r in records]
        indexes = {r[1] for r in ix._db.execute("PRAGMA index_list(records)")}
        assert "records_url_key" in indexes and "records_url" not in indexes
        assert ix._db.execute("SELECT url_key FROM records WHERE id = ?", (ids[1],)).fetchone()[0] == url_key(records[1].url)
        with ix._db:  # a collision: record 3 under record 2's key
            ix._db.execute("UPDATE records SET url_key = ? WHERE id = ?", (url_key(records[1].url), ids[2]))
        assert [ix.by_url(r.url).id for r in records[:2]] == ids[:2]  # not the latest row of the key: its URL
        assert ix.by_url("http://absent.invalid/") is None
        plan = " ".join(r[3] for r in ix._db.execute("EXPLAIN QUERY PLAN SELECT id FROM records WHERE url_key = ? AND url = ?",
                                                      (1, "x")))
        assert "records_url_key" in plan


def test_vector_dtype_is_the_index_own(tmp_path):
    """A new index takes i8 vectors; an index keeps the scalar type it was last opened with (no rebuild of
    an f16 index opened without the option), and one made before the index kept it is read as f16."""
    rng = np.random.default_rng(23)
    with LocalIndex(tmp_path / "new") as ix:
        assert (ix.vector_dtype, ix.connectivity, ix.expansion_search) == ("i8", 14, 192)
    with LocalIndex(tmp_path / "new", vector_dtype="f16") as ix:
        assert (ix.vector_dtype, ix.connectivity, ix.expansion_search) == ("f16", 16, 128)
        ix.add(make_record(rng, 0))
    saved = (tmp_path / "new" / VECTORS_NAME).read_bytes()
    with LocalIndex(tmp_path / "new") as ix:
        assert ix.vector_dtype == "f16" and ix.check(None)["ok"]
    assert (tmp_path / "new" / VECTORS_NAME).read_bytes() == saved  # not rebuilt
    with LocalIndex(tmp_path / "new", vector_dtype="i8") as ix:
        with ix._db:
            ix._db.execute("DELETE FROM meta WHERE key = 'vector_dtype'")  # as an index made before schema 4
    with LocalIndex(tmp_path / "new") as ix:
        assert ix.vector_dtype == "f16" and ix.check(None)["ok"]


def test_default_search_widens_with_the_index(tmp_path, monkeypatch):
    """nearest() searches the HNSW graph wider as the index grows (one step of the default every
    WIDEN_EVERY vectors from twice that, at most MAX_WIDEN x); an expansion_search given is kept."""
    from index.local import vectors

    assert [vectors.search_width(192, n) for n in (0, 1_000_000, 4_999_999, 5_000_000, 7_500_000, 10_000_000,
                                                    50_000_000)] == [192, 192, 192, 384, 576, 768, 768]
    monkeypatch.setattr(vectors, "WIDEN_EVERY", 10)
    rng = np.random.default_rng(29)
    records = [make_record(rng, i) for i in range(45)]
    with LocalIndex(tmp_path / "auto", exact_below=0) as ix:
        for r in records[:15]:
            ix.add(r)
        ix.nearest(records[0].signature, records[0].ref_id, 5, 0.0)
        assert ix._vectors.expansion_search == 192  # 15 vectors: below 2 x 10
        for r in records[15:]:
            ix.add(r)
        found = ix.nearest(records[0].signature, records[0].ref_id, 5, 0.0)
        assert ix._vectors.expansion_search == 192 * 4 and found[0][0] == 1  # 45 vectors: 4 steps
    with LocalIndex(tmp_path / "given", exact_below=0, expansion_search=100) as ix:
        for r in records:
            ix.add(r)
        ix.nearest(records[0].signature, records[0].ref_id, 5, 0.0)
        assert ix._vectors.expansion_search == 100


def test_schema4_rows_hold_key_bytes_and_no_ref_id(tmp_path):
    """A new index stores the featurizer's hex keys as their bytes and the reference text once (meta); keys of
    any other form are kept as text, and every key reads back and is found as it was given."""
    rng = np.random.default_rng(22)
    records = [make_record(rng, 0, content_hash="ab" * 16, title_key="cd" * 8),
               make_record(rng, 1, content_hash="", title_key=""),
               make_record(rng, 2, content_hash="AB" * 16, title_key="not hex at all!!")]
    with LocalIndex(tmp_path / "ix") as ix:
        ids = [ix.add(r) for r in records]
        for r, rid in zip(records, ids):
            (back,) = ix.get([rid])
            assert (back.content_hash, back.title_key, back.ref_id) == (r.content_hash, r.title_key, REF)
            assert rid in ix.lookup("title_key", r.title_key)
        assert ix.lookup("content_hash", "ab" * 16) == [ids[0]] and ix.lookup("content_hash", "AB" * 16) == [ids[2]]
        assert ix.check(None)["ref_ids"] == [REF]
    db = sqlite3.connect(tmp_path / "ix" / "dedup.sqlite")
    rows = db.execute("SELECT content_hash, title_key, ref_id FROM records ORDER BY id").fetchall()
    db.close()
    assert rows == [(bytes.fromhex("ab" * 16), bytes.fromhex("cd" * 8), None), ("", "", None),
                    ("AB" * 16, "not hex at all!!", None)]


def test_ctrl_c_inside_usearch_is_a_keyboard_interrupt(tmp_path):
    """usearch answers a SIGINT that lands while it adds or searches with its own RuntimeError('Operation has
    been terminated'): `dedup reindex` then printed a traceback instead of its one line (a rare flake of
    test_reindex's Ctrl-C test). The index's own add path raises KeyboardInterrupt again, and the index
    reopened after it holds exactly SQLite's records (the vectors usearch had placed are reconciled away)."""
    import threading

    from index.local.vectors import interruptible

    records = make_records(30, seed=5)
    batch = np.random.default_rng(3).random((20_000, DIM), dtype=np.float32)
    with LocalIndex(tmp_path / "ix") as ix:
        for r in records:
            ix.add(r)
        # Python's own SIGINT handler (a background `make test` starts with SIGINT ignored)
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                for start in range(1000, 1000 + 20 * len(batch), len(batch)):  # until the signal lands (in add)
                    ix._add_vectors(np.arange(start, start + len(batch), dtype=np.uint64), batch)
        finally:
            timer.cancel()
            signal.signal(signal.SIGINT, previous)
    with LocalIndex(tmp_path / "ix") as ix:
        report = ix.check(sample=None)
        assert report["ok"] and report["vectors"] == report["records"] == 30, report
        assert records[7].id in [i for i, _ in ix.nearest(records[7].signature, REF, 5, -1.0)]
    with pytest.raises(RuntimeError, match="other"), interruptible():  # any other error passes through
        raise RuntimeError("other")
