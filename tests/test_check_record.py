"""``Deduplicator.check_record``: a page known only by its stored (compact) record is decided from the
record's keys as they are, never compacted again; where the record holds everything the decision
reads, or the verdict is one of ``SAME_FROM_RECORD``, it is the page's own verdict (the final pass of
a sliced reindex relies on it: index/elastic/reindex_slices.py)."""
from __future__ import annotations

import dataclasses
import math
import random

import numpy as np
import pytest

from crawler.sample_site import PAGES_DIR
from dedup.deduplicator import SAME_FROM_RECORD, Deduplicator, Verdict
from dedup.page import parse_page
from dedup.reducer import ComparisonReducer
from dedup.store import MemoryIndex

# short stories: a record keeps every term (TOP_TERMS) and every shingle (SKETCH) of them
BRIDGE = ["The harbour bridge will close for three weeks of repairs in the spring, the council said.",
          "Engineers found corrosion in the main cables during an inspection last autumn.",
          "Ferries will run every fifteen minutes while the bridge is closed."]
BAKERY = ["A local bakery has won a national prize for its sourdough loaf after three years of trying.",
          "Judges praised the crust and the open crumb, and said the flavour was deep.",
          "Queues formed outside the shop before dawn on Saturday as news of the award spread."]


def html(title: str, paragraphs: list[str]) -> str:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return f"<html><head><title>{title}</title></head><body><article><h1>{title}</h1>{body}</article></body></html>"


def short_pages() -> list[tuple[str, str]]:
    return [
        ("http://a.example/bridge", html("Bridge closes", BRIDGE)),
        ("http://b.example/bakery", html("Bakery prize", BAKERY)),
        ("http://c.example/bridge-edited", html("Bridge to shut", BRIDGE[:2] + ["Buses will be rerouted."])),
        ("http://d.example/bridge-copy", html("Bridge closes", BRIDGE)),
        ("http://e.example/bakery-cut", html("Bakery prize", BAKERY[:2])),
        ("http://f.example/bridge-longer", html("Bridge closes", BRIDGE + ["The mayor called it regrettable."])),
        # more terms than the record's term sample (TERM_SAMPLE), all of them kept (TOP_TERMS)
        ("http://g.example/bridge-bakery", html("Bridge and bakery", BRIDGE + BAKERY[:1])),
        ("http://h.example/bridge-bakery-cut", html("Bridge and bakery", BRIDGE[1:] + BAKERY[:1])),
    ]


def site_pages() -> list[tuple[str, str]]:
    files = sorted(PAGES_DIR.rglob("*.html"))
    assert len(files) >= 30
    return [(f"http://site.example/{f.relative_to(PAGES_DIR)}", f.read_text(encoding="utf-8")) for f in files]


def both_verdicts(pages: list[tuple[str, str]]) -> list[tuple[Verdict, Verdict, object]]:
    """Each page checked from its features and from its record, against the pages kept before it."""
    d = Deduplicator(MemoryIndex())
    out = []
    for url, body in pages:
        page = parse_page(body, url)
        f = d.featurizer(page)
        record = f.to_record(page)
        out.append((d.check(page, f), d.check_record(record), record))
        d.process(page, features=f)
    return out


def assert_same_scores(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key, x in a.items():
        y = b[key]
        if isinstance(x, float) and isinstance(y, float):
            # rounded to 4 digits (2 for the angle) from float32/float16 copies: one last digit at most
            assert math.isclose(x, y, abs_tol=2e-4 if key != "angle" else 2e-2), (key, x, y)
        elif key == "decision":
            assert x["copy"] == y["copy"]
            assert math.isclose(x["p"], y["p"], abs_tol=1e-3), (x, y)
        else:
            assert x == y, (key, x, y)


def test_a_complete_record_decides_as_its_page():
    verdicts = both_verdicts(short_pages())
    for v, r, record in verdicts:
        assert record.term_count <= record.terms.size and record.shingle_count <= record.shingles.size
        assert (r.status, r.duplicate_of, r.rule, r.candidates) == (v.status, v.duplicate_of, v.rule, v.candidates)
        assert_same_scores(v.scores, r.scores)
    assert any(record.term_count > record.term_sample.size for _, _, record in verdicts)
    statuses = {v.status for v, _, _ in verdicts}
    assert {"unique", "exact_duplicate"} <= statuses and statuses & {"near_duplicate", "duplicate"}


def test_a_record_decides_as_its_page_on_its_rules():
    """Long pages (the sample site's): verdicts with a rule of SAME_FROM_RECORD are the page's, and
    the record never loses a candidate the page compares (the reducer on a sample is never stricter)."""
    verdicts = both_verdicts(site_pages())
    same = 0
    for v, r, _ in verdicts:
        if r.rule in SAME_FROM_RECORD:
            same += 1
            assert (r.status, r.duplicate_of, r.rule, r.candidates, r.scores) == (
                v.status, v.duplicate_of, v.rule, v.candidates, v.scores)
        if v.rule not in ("no_candidate", "content_hash", "unextractable"):
            assert r.rule not in SAME_FROM_RECORD, (v.rule, r.rule)
    rules = {r.rule for _, r, _ in verdicts}
    assert {"content_hash", "no_candidate"} <= rules and rules - SAME_FROM_RECORD and same >= 5


def test_record_keys_are_compared_as_they_are():
    """The defect this replaces: a record's 24-bit keys compacted again (shifted once more) matched nothing."""
    d = Deduplicator(MemoryIndex())
    page = parse_page(html("Bridge closes", BRIDGE + BAKERY), "http://a.example/1")
    d.process(page)
    f = d.featurizer(page)
    twin = dataclasses.replace(f.to_record(page), url="http://b.example/2", content_hash="0" * 32)
    v = d.check_record(twin)
    assert (v.status, v.duplicate_of) == ("duplicate", "http://a.example/1")
    assert v.scores["containment"] == v.scores["resemblance"] == 1.0 and v.scores["tdw_cosine"] == 1.0


def test_add_record_stores_the_arrays_as_they_are():
    d = Deduplicator(MemoryIndex())
    page = parse_page(html("Bridge closes", BRIDGE), "http://a.example/1")
    record = d.featurizer(page).to_record(page)
    record.id = 77  # an id of another index (DEST-dedup's): not the one it gets here
    verdict = d.check_record(record)
    rid = d.add_record(record, verdict)
    stored = d.index.get([rid])[0]
    assert record.id == 77 and stored.status == verdict.status == "unique"
    for name in ("shingles", "terms", "weights", "term_sample", "signature"):
        assert np.array_equal(getattr(stored, name), getattr(record, name)), name


@pytest.mark.parametrize("seed", range(5))
def test_the_reducer_on_two_samples_is_never_stricter(seed):
    """prefix_positional_ok_samples against the exact filters on the whole sets: never prunes a pair
    they keep, and agrees with them whenever the samples share a prefix term."""
    rng = random.Random(seed)
    reducer = ComparisonReducer(0.1)
    agree = 0
    for _ in range(400):
        pool = rng.sample(range(1, 5000), 400)
        shared = rng.randint(0, 120)
        a = np.array(sorted(set(pool[:shared] + rng.sample(pool[shared:], rng.randint(1, 120)))), dtype=np.uint32)
        b = np.array(sorted(set(pool[:shared] + rng.sample(pool[shared:], rng.randint(1, 120)))), dtype=np.uint32)
        exact = reducer.prefix_positional_ok(a, b)
        sampled = reducer.prefix_positional_ok_samples(a[:32], a.size, b[:32], b.size)
        assert sampled or not exact, (a.size, b.size)
        agree += sampled == exact
    assert agree > 300


def test_query_features_decide_exactly_as_the_page():
    """What a slice hands the final pass (``query_features``, through JSON as the cluster stores it)
    gives the verdict ``check`` gives the page, every score included, on the rules a record cannot
    decide too; and a truncated page keeps its ``truncated`` score."""
    import json

    d = Deduplicator(MemoryIndex())
    rules, sizes = set(), []
    pages = site_pages() + short_pages() + [("http://empty.example/", "<html><body></body></html>")]
    for url, body in pages:
        page = parse_page(body, url, max_text_chars=4000)
        f = d.featurizer(page)
        handed = json.loads(json.dumps(d.query_features(page, f)))
        sizes.append(len(json.dumps(handed)))
        want, got = d.check(page, f), d.check_query_features(handed)
        assert got.to_dict() == want.to_dict(), url
        rules.add(want.rule)
        d.process(page, features=f)
    assert rules - SAME_FROM_RECORD - {"unextractable"} and "unextractable" in rules
    cut = parse_page(html("Bridge closes", BRIDGE + BAKERY), "http://cut.example/", max_text_chars=120)
    handed = json.loads(json.dumps(d.query_features(cut, d.featurizer(cut))))
    assert cut.truncated and d.check_query_features(handed).scores["truncated"] == cut.truncated
    assert max(sizes) < 8000  # compact: zlib-packed arrays, not the JSON of the arrays


def test_query_features_of_another_version_are_refused():
    d = Deduplicator(MemoryIndex())
    page = parse_page(html("Bridge closes", BRIDGE), "http://a.example/1")
    handed = {**d.query_features(page, d.featurizer(page)), "v": 0}
    with pytest.raises(ValueError, match="format 0"):
        d.check_query_features(handed)
