"""Containment candidates (``DedupIndex.contained``): every backend answers alike, and the deduplicator
finds a short page inside a longer kept one (and the reverse) that neither simhash nor signature proposes."""
from __future__ import annotations

import random
import sqlite3

import numpy as np
import pytest

from dedup.deduplicator import ConfigError, DedupConfig, Deduplicator
from dedup.page import parse_page
from dedup.record import Record, compact_arrays
from dedup.store import CONTAINED_KEYS, MemoryIndex, contained_keys
from index import open_index as open_uri
from index.local import LocalIndex

REF = "mrc-test-ref"
DIM = 150


def record(keys: list[int], i: int) -> Record:
    """A record whose sketch is ``keys`` (24-bit, sorted as the featurizer's) beside random other arrays."""
    rng = np.random.default_rng(i)
    hashes = np.array(sorted(keys), dtype=np.uint64) << np.uint64(40)  # the top 24 bits are the key
    arrays = compact_arrays(terms=np.unique(rng.integers(0, 2**64, 30, dtype=np.uint64)),
                            weights=np.ones(30, dtype=np.float32), shingles=hashes, shingle_count=len(keys),
                            signature=rng.random(DIM, dtype=np.float32), positions=None)
    return Record(url=f"https://a.example/{i}", content_hash=f"{i:016x}", title_key=f"t{i}", title=f"T{i}",
                  simhash=int(rng.integers(0, 2**63)), ref_id=REF, sentences=3, fetched_at=1.7e9 + i,
                  status="unique", duplicate_of=None, **arrays)


@pytest.fixture(params=["memory", "local", "es_emulated"])
def index(request, tmp_path):
    if request.param == "memory":
        ix = MemoryIndex()
    elif request.param == "local":
        ix = LocalIndex(tmp_path / "ix")
    else:
        ix = open_uri(request.getfixturevalue("es_index_uri"))
    yield ix
    ix.close()


def test_posted_keys_are_the_smallest_sketch_keys():
    rec = record(list(range(100, 400, 3)), 1)
    assert CONTAINED_KEYS == 16
    assert contained_keys(rec).tolist() == list(range(100, 148, 3))


def test_contained_finds_records_sharing_two_posted_keys(index):
    a = index.add(record(list(range(1000, 1100)), 1))  # posts 1000..1015
    b = index.add(record(list(range(1010, 1300, 2)), 2))  # posts 1010, 1012, ..., 1040
    c = index.add(record([5, 7000, 7001, 7002], 3))
    index.flush()
    assert index.contained(np.array([], dtype=np.uint32), 2, 10) == []
    # a page holding 1000..1020: 16 of a's keys, 6 of b's (1010..1020 even), one of c's: not c (one key)
    got = index.contained(np.arange(5, 6, dtype=np.uint32).tolist() + list(range(1000, 1021)), 2, 10)
    assert got == [(a, 16), (b, 6)]
    assert index.contained(np.arange(1000, 1021, dtype=np.uint32), 2, 1) == [(a, 16)]
    assert index.contained(np.array([5, 7000], dtype=np.uint32), 2, 10) == [(c, 2)]
    assert index.contained(np.array([5, 7000], dtype=np.uint32), 3, 10) == []
    # keys past a record's 16 smallest are not posted: 1016.. are a's, but not among its posted keys
    assert index.contained(np.arange(1016, 1100, 2, dtype=np.uint32), 2, 10) == [(b, 13)]
    assert index.remove(a)
    index.flush()
    assert index.contained(np.arange(1000, 1021, dtype=np.uint32), 2, 10) == [(b, 6)]


def test_replace_posts_the_new_keys(index):
    rid = index.add(record(list(range(50, 90)), 1))
    new = record(list(range(500, 540)), 2)
    new.url = "https://a.example/1"
    rid2 = index.replace(rid, new)
    index.flush()
    assert index.contained(np.arange(50, 90, dtype=np.uint32), 2, 10) == []
    assert index.contained(np.arange(500, 540, dtype=np.uint32), 2, 10) == [(rid2, 16)]


def test_local_table_is_refilled_when_missing(tmp_path):
    with LocalIndex(tmp_path / "ix") as ix:
        rid = ix.add(record(list(range(1000, 1100)), 1))
    db = sqlite3.connect(tmp_path / "ix" / "dedup.sqlite")
    with db:  # as an index written before the table: no rows, no meta key
        db.execute("DROP TABLE contained")
        db.execute("DELETE FROM meta WHERE key = 'contained_keys'")
    db.close()
    with LocalIndex(tmp_path / "ix") as ix:
        assert ix.contained(np.arange(1000, 1020, dtype=np.uint32), 2, 10) == [(rid, 16)]
    db = sqlite3.connect(tmp_path / "ix" / "dedup.sqlite")
    # stored as key - 2**23: a 24-bit key takes SQLite's 3-byte integer
    assert db.execute("SELECT min(key), max(key), count(*) FROM contained").fetchone() == (1000 - 2**23, 1015 - 2**23, 16)
    db.close()


# -- the deduplicator ----------------------------------------------------------------------------
_SYLLABLES = ["ba", "ko", "ri", "tu", "me", "sa", "lo", "ni", "pe", "da", "gu", "fi", "zo", "ha", "ve", "ny"]


def paragraphs(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    words = [a + b + c for a in _SYLLABLES for b in _SYLLABLES for c in ("n", "r", "l", "s")]
    return [" ".join(rng.choice(words) for _ in range(28)).capitalize() + "." for _ in range(n)]


def page(title: str, paras: list[str], url: str):
    body = "".join(f"<p>{p}</p>" for p in paras)
    return parse_page(f"<html><head><title>{title}</title></head><body><article><h1>{title}</h1>{body}"
                      f"</article></body></html>", url)


def blind(index):
    """Neither simhash nor signature proposes anything: only the containment search can."""
    index.near_simhash = lambda fingerprint: []
    index.nearest = lambda signature, ref_id, n, floor: []
    return index


@pytest.mark.parametrize("backend", ["memory", "local"])
@pytest.mark.parametrize("contained", [10, 0])
def test_short_page_in_a_long_one_and_the_reverse(backend, contained, tmp_path):
    ix = blind(MemoryIndex() if backend == "memory" else LocalIndex(tmp_path / "ix"))
    try:
        d = Deduplicator(ix, DedupConfig(contained=contained))
        story = paragraphs(60, 1)
        assert d.process(page("Harbour plan", story, "https://a.example/long")).status == "unique"
        short = d.process(page("Harbour plan, in brief", story[10:40], "https://b.example/part"))
        brief = paragraphs(12, 2)
        assert d.process(page("Council", brief, "https://c.example/brief")).status == "unique"
        longer = d.process(page("Council, all of it", paragraphs(30, 3) + brief + paragraphs(30, 4),
                                "https://d.example/all"))
        if contained:
            copies = ("duplicate", "near_duplicate")
            assert short.status in copies and short.duplicate_of == "https://a.example/long"
            assert short.scores["containment"] > 0.9
            assert longer.status in copies and longer.duplicate_of == "https://c.example/brief"
        else:
            assert (short.status, short.rule, longer.status, longer.rule) == ("unique", "no_candidate") * 2
    finally:
        ix.close()


@pytest.mark.parametrize("name, value", [("contained", -1), ("contained_shared", 0)])
def test_config_refuses_bad_values(name, value):
    with pytest.raises(ConfigError, match=name):
        DedupConfig(**{name: value})
