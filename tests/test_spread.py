"""Where the shared text lies (dedup/spread.py): the shingle keys' positions, from the page to every store
and back, and the score the calibrated decision reads."""
from __future__ import annotations

import json

import numpy as np
import pytest

from dedup.deduplicator import DedupConfig, Deduplicator
from dedup.decision import features
from dedup.features import Featurizer
from dedup.page import parse_page
from dedup.query import Query
from dedup.record import POSITION_LEVELS, Record, shingle_keys, sketch_keys
from dedup.simhash import shingle_hashes
from dedup.spread import spread
from dedup.store import MemoryIndex

WORDS = [f"w{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}" for i in range(600)]


def _sentences(start: int, n: int, tag: str = "") -> list[str]:
    return [" ".join(WORDS[(start + 7 * i + j) % 600] for j in range(12)) + f" {tag}{i}." for i in range(n)]


def _html(sentences: list[str], title: str) -> str:
    return (f"<html><head><title>{title}</title></head><body><article>"
            + "".join(f"<p>{s}</p>" for s in sentences) + "</article></body></html>")


def test_positions_are_each_sketch_shingles_first_occurrence():
    page = parse_page(_html(_sentences(0, 30) + _sentences(0, 3), "Repeats"), "http://a.example/x")
    fz = Featurizer()
    terms = fz.terms(page)
    f = fz.fingerprint(page, terms)
    seq = shingle_hashes(terms.body_hashes, fz.shingle)
    assert f.positions.dtype == np.uint8 and f.positions.size == f.shingles.size
    for h, p in zip(f.shingles, f.positions):
        first = int(np.flatnonzero(seq == h)[0])  # the repeated sentences keep their first place
        assert p == first * POSITION_LEVELS // seq.size


def test_sketch_keys_keep_the_lowest_position_of_a_key():
    hashes = np.array([1 << 40, (1 << 40) + 5, 2 << 40, 3 << 40], dtype=np.uint64)  # the first two: one key
    keys, pos = sketch_keys(hashes, np.array([90, 10, 200, 7], dtype=np.uint8))
    assert np.array_equal(keys, shingle_keys(hashes)) and pos.tolist() == [10, 200, 7]
    keys, pos = sketch_keys(hashes, None)
    assert np.array_equal(keys, shingle_keys(hashes)) and pos.size == 0


def _keys(n: int) -> np.ndarray:
    return np.arange(1, n + 1, dtype=np.uint32) * 1000


def test_spread_is_low_for_one_block_high_for_scattered_hits():
    a, b_all = _keys(100), _keys(400)
    pos = np.arange(100, dtype=np.uint8) * 2  # key i at position 2i
    block = np.concatenate([a[70:], b_all[100:330]])  # a's last 30 positions: one "About" paragraph
    scattered = np.concatenate([a[::3][:30], b_all[100:330]])  # every third key of a
    kw = dict(a_pos=pos, a_total=100, b_pos=np.zeros(0, np.uint8))
    assert spread(a, b=np.sort(block), b_total=block.size, **kw) == 0.0
    assert spread(a, b=np.sort(scattered), b_total=scattered.size, **kw) == 1.0
    # nothing to tell (the smaller page wholly shared, or one shared key): no sign of a block
    assert spread(a, b=np.sort(np.concatenate([a, b_all[100:200]])), b_total=200, **kw) == 1.0
    assert spread(a, b=np.sort(np.concatenate([a[:1], b_all[200:300]])), b_total=101, **kw) == 1.0
    assert spread(a, b=b_all[200:300], b_total=100 + 1, **kw) == 0.0  # nothing shared
    # positions come from the smaller page: the larger one's are not read, and without them: unknown
    assert spread(np.sort(block), np.zeros(0, np.uint8), block.size, a, pos, 100) == 0.0
    assert spread(a, np.zeros(0, np.uint8), 100, np.sort(block), np.zeros(block.size, np.uint8), block.size) is None


def test_boilerplate_block_and_rewrite_at_the_same_containment():
    """Two releases sharing their closing "About" paragraph are one block; a rewrite sharing every
    fourth sentence of the story is scattered. The decision reads the score; None reads as 0."""
    d = Deduplicator(MemoryIndex(), DedupConfig())
    story = _sentences(0, 30)
    d.process_html(_html(story, "Story"), "http://a.example/story")
    about = _html(_sentences(300, 22, "x") + story[22:], "Release")  # shares the last 8 sentences
    rewrite = _html([s if i % 4 == 0 else _sentences(400 + i, 1, "y")[0] for i, s in enumerate(story)], "Rewrite")
    _, block = d.process_html(about, "http://b.example/about")
    _, scattered = d.process_html(rewrite, "http://c.example/rewrite")
    cb, cs = block.scores["containment"], scattered.scores["containment"]
    assert 0.15 < cb < 0.45 and 0.15 < cs < 0.45
    # 8 shared sentences make 8 runs: fewer than chance would (sentences are contiguous), far more than 1
    assert block.scores["spread"] == 0.0 and scattered.scores["spread"] > 0.3
    assert features(block.scores)["spread"] == block.scores["spread"]
    assert features({**block.scores, "spread": None})["spread"] == 0.0


def test_positions_round_trip_and_records_without_them_still_decide(tmp_path):
    from index.local import LocalIndex, decode_blob, encode_blob

    fz = Featurizer()
    page = parse_page(_html(_sentences(0, 40), "Story"), "http://a.example/story")
    rec = fz(page).to_record(page)
    assert rec.shingle_positions.dtype == np.uint8 and rec.shingle_positions.size == rec.shingles.size > 0
    again = Record.from_dict(json.loads(json.dumps(rec.to_dict())))  # Elasticsearch's document
    assert np.array_equal(again.shingle_positions, rec.shingle_positions)
    blob = encode_blob(rec)
    assert blob[:4] == b"DR4\0" and np.array_equal(decode_blob(blob)["shingle_positions"], rec.shingle_positions)
    dr3 = encode_blob(rec, version=3)  # as an index written before DR4 holds it
    assert dr3[:4] == b"DR3\0" and np.array_equal(decode_blob(dr3)["shingle_positions"], rec.shingle_positions)
    # stored before positions: an ES document without the field, a DR2 blob
    doc = rec.to_dict()
    del doc["shingle_positions"]
    old = Record.from_dict(doc)
    assert old.shingle_positions.size == 0 and np.array_equal(old.shingles, rec.shingles)
    old_blob = encode_blob(old, version=3)
    assert old_blob[:4] == b"DR2\0" and len(dr3) - len(old_blob) == rec.shingles.size
    assert len(blob) - len(encode_blob(old)) == rec.shingles.size  # DR4 without positions
    assert decode_blob(old_blob)["shingle_positions"].size == 0
    # the record without positions is the smaller page: the score is unknown, the page still decided
    longer = parse_page(_html(_sentences(0, 40) + _sentences(500, 30, "z"), "Story, longer"), "http://b.example/s")
    d = Deduplicator(MemoryIndex(), DedupConfig())
    d.index.add(old)
    v = d.check(longer)
    assert v.scores["spread"] is None and v.status in ("near_duplicate", "duplicate")
    d2 = Deduplicator(MemoryIndex(), DedupConfig())
    d2.index.add(rec)
    assert d2.check(longer).scores["spread"] is not None
    # the embedded index keeps them
    with LocalIndex(tmp_path / "ix") as ix:
        rid = ix.add(rec)
        assert np.array_equal(ix.get([rid])[0].shingle_positions, rec.shingle_positions)


def test_query_hands_over_its_positions():
    fz = Featurizer()
    page = parse_page(_html(_sentences(0, 40), "Story"), "http://a.example/story")
    f = fz(page)
    q = Query.of_page(page, f)
    back = Query.from_dict(json.loads(json.dumps(q.to_dict())))
    assert np.array_equal(back.positions, q.positions) and np.array_equal(back.shingles, q.shingles)
    assert q.positions.size == q.shingles.size > 0
    rec = f.to_record(page)
    assert np.array_equal(Query.of_record(rec).positions, rec.shingle_positions)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_spread_of_sketches_is_the_spread_of_whole_sets_for_short_pages(seed):
    """Pages of fewer shingles than the record's sketch keep every key: the score from the sketches is
    the one from the whole sets (hits in page order, runs against chance), computed here directly."""
    rng = np.random.default_rng(seed)
    fz = Featurizer()
    story = _sentences(seed * 50, 10)
    other = [s if rng.random() < 0.5 else _sentences(450 + i, 1, "q")[0] for i, s in enumerate(story)]
    pa = parse_page(_html(story, "A"), "http://a.example/a")
    pb = parse_page(_html(other, "B"), "http://b.example/b")
    fa, fb = fz(pa), fz(pb)
    assert max(fa.shingle_count, fb.shingle_count) <= 128
    ka, pos_a = sketch_keys(fa.shingles, fa.positions)
    rb = fb.to_record(pb)
    got = spread(ka, pos_a, fa.shingle_count, rb.shingles, rb.shingle_positions, rb.shingle_count)
    small_k, small_p, big_k = (ka, pos_a, rb.shingles) if fa.shingle_count <= fb.shingle_count else \
        (rb.shingles, rb.shingle_positions, ka)
    hit = np.isin(small_k, big_k)[np.argsort(small_p, kind="stable")]
    m, h = hit.size, int(hit.sum())
    runs = sum(1 for i in range(m) if hit[i] and (i == 0 or not hit[i - 1]))
    expected = h * (m - h + 1) / m
    want = 0.0 if not h else 1.0 if expected < 2 else min(1.0, max(0.0, (runs - 1) / (expected - 1)))
    assert got == pytest.approx(want)


def test_an_elasticsearch_index_made_before_positions_gets_the_field(es_index_uri):
    """An index whose mapping predates positions (``dynamic: strict``) is given the field when opened;
    its documents without positions read as records without them, new ones keep theirs."""
    from elasticsearch import Elasticsearch

    from index import open_index
    from index.elastic.records import MAPPING

    base, name = es_index_uri.rsplit("/", 1)
    old = {**MAPPING, "properties": {k: v for k, v in MAPPING["properties"].items() if k != "shingle_positions"},
           "_meta": {"schema": 1, "k": 3, "blocks": 5}}
    client = Elasticsearch(base)
    try:
        client.indices.create(index=f"{name}-dedup", mappings=old)
    finally:
        client.close()
    fz = Featurizer()
    page = parse_page(_html(_sentences(0, 40), "Story"), "http://a.example/story")
    rec = fz(page).to_record(page)
    other = parse_page(_html(_sentences(100, 40), "Other"), "http://b.example/other")
    doc = fz(other).to_record(other).to_dict()
    del doc["shingle_positions"]
    before = Record.from_dict(doc)  # as a program before positions wrote it
    ix = open_index(es_index_uri)
    try:
        new_id, old_id = ix.add(rec), ix.add(before)
        got = {r.id: r for r in ix.get([new_id, old_id])}
        assert np.array_equal(got[new_id].shingle_positions, rec.shingle_positions) and rec.shingle_positions.size
        assert got[old_id].shingle_positions.size == 0 and np.array_equal(got[old_id].shingles, before.shingles)
    finally:
        ix.close()


def test_truncated_and_lightly_edited_copies_stay_copies():
    """A truncated copy's smaller page is the truncation, shared wholly: nothing to tell (1). A copy with
    two sentences edited is a few runs where chance would make more (low), and containment decides it."""
    d = Deduplicator(MemoryIndex(), DedupConfig())
    story = _sentences(0, 30)
    d.process_html(_html(story, "Story"), "http://a.example/story")
    _, cut = d.process_html(_html(story[:18], "Story, cut"), "http://b.example/cut")
    edited = list(story)
    edited[5], edited[20] = _sentences(500, 1, "e")[0], _sentences(520, 1, "f")[0]
    _, two = d.process_html(_html(edited, "Story, edited"), "http://c.example/edited")
    assert cut.scores["spread"] == 1.0 and cut.status in ("duplicate", "near_duplicate")
    assert two.scores["containment"] > 0.9 and two.scores["spread"] < 0.5
    assert two.status in ("duplicate", "near_duplicate") and two.scores["decision"]["p"] > 0.9
