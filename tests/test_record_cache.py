"""The local index's cache of decoded records (index/local/cache.py) and the query's lazy sentence
simhashes (dedup/query.py), issue 14 item 3: both must change no answer, only its cost."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from crawler.sample_site import PAGES_DIR  # noqa: E402
from dedup.deduplicator import Deduplicator  # noqa: E402
from dedup.features import Featurizer  # noqa: E402
from dedup.page import parse_page  # noqa: E402
from dedup.query import Query  # noqa: E402
from index.local import LocalIndex  # noqa: E402
from index.local.cache import RecordCache  # noqa: E402
from test_local_index import assert_same_record, make_records  # noqa: E402


def test_cached_get_equals_uncached(tmp_path):
    """Random get() calls (repeats, unknown ids, removals) on a small cache give exactly the records
    an index without a cache gives."""
    cached, plain = LocalIndex(tmp_path / "c", record_cache=7), LocalIndex(tmp_path / "p", record_cache=0)
    try:
        for rec in make_records(40):
            assert cached.add(rec) == plain.add(rec)
        rng = random.Random(3)
        for step in range(300):
            ids = [rng.randint(1, 45) for _ in range(rng.randint(0, 14))]
            got, want = cached.get(ids), plain.get(ids)
            assert [r.id for r in got] == [r.id for r in want]
            for g, w in zip(got, want):
                assert_same_record(g, w)
            assert len(cached._cache) <= 7  # the bound holds
            if step % 50 == 49:  # a removed record is never answered from the cache
                victim = rng.choice([r.id for r in plain.iter_records()])
                assert cached.remove(victim) and plain.remove(victim)
                assert cached.get([victim]) == [] and victim not in cached._cache._records
    finally:
        cached.close()
        plain.close()


def test_a_caller_changing_a_record_changes_nothing_cached(tmp_path):
    with LocalIndex(tmp_path / "i") as ix:
        rec = make_records(1)[0]
        rid = ix.add(rec)
        first = ix.get([rid])[0]
        first.extra["changed"] = True
        first.url = "http://changed.example/"
        with pytest.raises(ValueError):  # the arrays are shared, read-only
            first.terms[0] = 1
        again = ix.get([rid])[0]
        assert again.url == rec.url and "changed" not in again.extra
        assert again is not first


def test_cache_is_least_recently_used():
    cache = RecordCache(2)
    recs = make_records(3)
    for i, rec in enumerate(recs, 1):
        rec.id = i
    cache.put(recs[0])
    cache.put(recs[1])
    assert set(cache.get([1])) == {1}  # 1 used last: 2 goes when 3 comes
    cache.put(recs[2])
    assert set(cache.get([1, 2, 3])) == {1, 3}
    assert len(RecordCache(0)) == 0 and RecordCache(0).put(recs[0]) is recs[0]
    with pytest.raises(ValueError):
        RecordCache(-1)


def test_query_sentence_simhashes_are_lazy_and_equal():
    """Query.of_page makes no sentence simhashes until read, and then the page's features' own."""
    fz = Featurizer()
    files = sorted(PAGES_DIR.rglob("*.html"))[:12]
    for f in files:
        page = parse_page(f.read_text(encoding="utf-8"), f"http://site.example/{f.name}")
        features = fz(page)
        q = Query.of_page(page, features)
        assert callable(features._chunks) and callable(q._chunks)  # nothing made yet
        eager = fz(page).chunks  # the same page's features, made at once
        assert q.chunks.dtype == eager.dtype and np.array_equal(q.chunks, eager)
        assert q.chunks is features.chunks  # made once, for both


def test_verdicts_with_and_without_the_cache_are_identical(tmp_path):
    """The sample site's pages, twice each (the second pass answers from the cache), decided by a
    Deduplicator on an index with a 16-record cache and on one without: the same verdicts, scores
    and all."""
    files = sorted(PAGES_DIR.rglob("*.html"))
    assert len(files) >= 30
    pages = [parse_page(f.read_text(encoding="utf-8"), f"http://site.example/{f.relative_to(PAGES_DIR)}")
             for f in files]
    verdicts = {}
    for size in (16, 0):
        with LocalIndex(tmp_path / str(size), record_cache=size) as ix:
            d = Deduplicator(ix)
            verdicts[size] = [d.process(p).to_dict() for p in pages + pages]
            if size:
                assert len(ix._cache) == 16
    assert verdicts[16] == verdicts[0]
    assert {v["status"] for v in verdicts[0]} >= {"unique", "exact_duplicate"}
