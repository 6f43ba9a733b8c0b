"""The calibrated decision (dedup/decision.py) and the extraction check (dedup/extractcheck.py), issue 16.

The figures the decision was chosen by are measurements (benchmarks/calibrate.py,
docs/accuracy.md, docs/decision.md); what is asserted here is behaviour: the shipped model loads and is
well-formed, its features are the documented transforms, the verdict names the signals that
decided it and carries the model's version, and a failed extract is caught and said so.
"""
from __future__ import annotations

import sys

import pytest

from conftest import ROOT
from dedup.decision import FEATURES, Decision, features, load_decision, title_similarity, wilson_lower
from dedup.deduplicator import DedupConfig, Deduplicator
from dedup.extractcheck import checked_text, densest_block, list_share, navigation_share
from dedup.extract import lxml_tree
from dedup.page import parse_page
from dedup.store import MemoryIndex


def test_shipped_decision_is_well_formed():
    d = load_decision()
    assert d.version.startswith("logit-")
    assert set(d.weights) <= set(FEATURES) and d.weights
    assert 0 < d.threshold < 1
    # more containment never lowers the probability; more unshared listing never raises it
    base = {"containment": 0.5, "resemblance": 0.3, "shingles": [200, 220], "listing": 0.0}
    assert d.probability({**base, "containment": 0.9, "resemblance": 0.8}) > d.probability(base)
    assert d.probability({**base, "listing": 1.0}) <= d.probability(base)


def test_decision_rejects_unknown_features_and_bad_thresholds():
    with pytest.raises(ValueError, match="unknown features"):
        Decision("x", {"colour": 1.0}, 0.0, 0.5)
    with pytest.raises(ValueError, match="got 1.5"):
        Decision("x", {"containment": 1.0}, 0.0, 1.5)
    with pytest.raises(ValueError, match="decision must be one of logit, containment"):
        DedupConfig(decision="vote")


def test_features_are_the_documented_transforms():
    x = features({"containment": 0.45, "resemblance": 0.3, "hamming": 16, "shingles": [31, 62], "listing": 1.0,
                  "mrc": None})
    assert x["hamming"] == 0.25 and x["ratio"] == 0.5 and x["mrc"] == 0.0
    assert x["listing"] == pytest.approx(0.55)  # the unshared part of a listing
    assert x["containment_lb"] == pytest.approx(wilson_lower(0.45, 31))
    # a short page is weak evidence: the same containment has a lower bound far below a long page's
    assert wilson_lower(0.45, 31) < 0.32 < 0.39 < wilson_lower(0.45, 250) < 0.45
    assert wilson_lower(0.5, 0) == 0.0
    assert title_similarity("Fire on Elm Street | Courier", "fire on elm street - Gazette") == pytest.approx(4 / 6)
    assert title_similarity("", "x") == 0.0


def test_explain_names_the_deciding_signals():
    d = Decision("t-1", {"containment": 10.0, "ratio": -1.0, "resemblance": 0.5}, -5.0, 0.5)
    why = d.explain({"containment": 0.9, "resemblance": 0.8, "shingles": [100, 100]})
    assert why["copy"] is True and why["p"] > 0.5
    assert why["signals"][0].startswith("containment 0.9 (+9.00)")
    assert d.thresholds() == {"decision": "t-1"} and why["threshold"] == 0.5
    # the probability explain gives is probability's, on the shipped model's weights too
    shipped = load_decision()
    for scores in ({"containment": 0.9, "resemblance": 0.8, "shingles": [100, 100]},
                   {"containment": 0.31, "tdw_cosine": 0.7, "mrc": 0.5, "hamming": 9, "shingles": [12, 300],
                    "listing": 1.0, "spread": 0.4, "title": 0.2}):
        for model in (d, shipped):
            assert model.explain(scores)["p"] == round(model.probability(scores), 4)


STORY = ("<html><head><title>{t}</title></head><body><nav>{nav}</nav><article><h1>{t}</h1>{body}</article>"
         "</body></html>")
NAV = "".join(f'<a href="/s/{i}.html">Section {i}</a> ' for i in range(30))


def _story(title: str, sentences: list[str]) -> str:
    return STORY.format(t=title, nav=NAV, body="".join(f"<p>{s}</p>" for s in sentences))


def test_verdict_carries_the_decision_and_its_version():
    para = [f"Sentence number {i} tells of the harbour bridge repairs, the ferries and the night crews."
            for i in range(14)]
    dedup = Deduplicator(MemoryIndex())
    dedup.process_html(_story("Harbour bridge", para), "http://a.test/1")
    _, v = dedup.process_html(_story("Harbour bridge repairs", para[:12] + ["A new closing line on fares."]),
                              "http://b.test/1")
    assert v.status in ("duplicate", "near_duplicate") and v.duplicate_of == "http://a.test/1"
    assert v.thresholds["decision"] == load_decision().version
    assert v.scores["decision"]["copy"] is True and len(v.scores["decision"]["signals"]) == 3
    old = Deduplicator(MemoryIndex(), DedupConfig(decision="containment"))
    assert "decision" not in old._thresholds or old._thresholds["decision"] == "containment"


def test_navigation_share_and_fallback_to_the_densest_block():
    anchors = [f"Section {i}" for i in range(30)] + ["Home"]
    menu = "\n".join(anchors)
    assert navigation_share(menu, anchors) == 1.0
    assert navigation_share("The council met on Monday and voted to fix the roof.", anchors) == 0.0
    html = _story("Roof", ["There is an opening in the sales department."])
    tree = lxml_tree(html)
    assert densest_block(tree) == "There is an opening in the sales department."
    assert checked_text(menu, "trafilatura", anchors, tree) == (
        "There is an opening in the sales department.", "trafilatura>densest")
    # navigation and no fallback that is not navigation: no text rather than the menu
    nav_only = lxml_tree(f"<html><body><nav>{NAV}</nav></body></html>")
    assert checked_text(menu, "trafilatura", anchors, nav_only) == ("", "trafilatura>navigation")
    # a good extract is left alone, and the other extractor is tried before the densest block
    long = "A long enough paragraph about the harbour bridge repairs. " * 5
    assert checked_text(long, "trafilatura", anchors, tree) == (long, "trafilatura")
    assert checked_text("", "none", anchors, tree, [("resiliparse", lambda: long)]) == (long, "none>resiliparse")


def test_a_brief_in_a_heavy_template_is_not_its_menu():
    page = parse_page(_story("Sales opening", ["There is an opening in the sales department."]), "http://c.test/b")
    assert page.text == "There is an opening in the sales department."
    assert page.extraction.endswith(">densest") or page.extraction == "resiliparse"


def test_list_share_marks_listings():
    assert list_share("- one teaser\n- two teaser") == 1.0
    assert list_share("A paragraph.\n- a single item") == pytest.approx(len("- a single item") / (12 + 15))
    assert list_share("") == 0.0


def test_same_site_listings_are_not_copies(tmp_path):
    """Two archive pages of one site that share half their teasers (benchmarks/negsite.py) are not copies."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import negsite
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    negsite.generate(tmp_path, pages=200, seed=5)
    dedup = Deduplicator(MemoryIndex())
    flagged = []
    for i, path in enumerate(sorted(tmp_path.glob("archive-*/page.html"))):
        _, v = dedup.process_html(path.read_bytes(), f"http://site.test/{path.parent.name}")
        if v.status != "unique":
            flagged.append((path.parent.name, v.duplicate_of, v.scores.get("decision")))
    assert i >= 5 and flagged == []


def test_calibrate_sentence_shares_fill_decided_rows_from_the_pages(tmp_path, monkeypatch):
    """calibrate.py --sentences (issue 31's what-if): a decided row's ``chunks`` is seed 003's sentence share of
    its page and its best candidate's page, made from the pages (records keep no sentence simhashes); rows the
    decision did not make are left as they are."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import calib_data
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    monkeypatch.setattr(calib_data, "CACHE", tmp_path / "cache")
    story = ["The council voted on Tuesday to close the old bridge for repairs after an inspection found cracks.",
             "Engineers said the work would take six months and cost about two million dollars in all.",
             "Residents will use a ferry that runs every twenty minutes from the north bank to the town square."]
    other = ["A new bakery opened on the high street this weekend and sold out of bread before noon on Saturday.",
             "Its owner trained in Lyon and plans to teach evening classes for children in the spring term."]

    def page(name: str, lines: list[str]) -> str:
        path = tmp_path / f"{name}.html"
        path.write_text("<html><body><article>" + "".join(f"<p>{s}</p>" for s in lines) + "</article></body></html>")
        return str(path)

    a, b, c = page("a", story), page("b", story[:2]), page("c", other)
    rows = [{"path": b, "nearest_path": a, "rule": "below_decision", "scores": {"chunks": None}},
            {"path": c, "nearest_path": a, "rule": "decision", "scores": {"chunks": None}},
            {"path": a, "nearest_path": None, "rule": "no_candidate", "scores": {"chunks": None}},
            {"path": b, "nearest_path": a, "rule": "exact", "scores": {"chunks": None}}]
    out = calib_data.sentence_shares(rows)
    assert [r["scores"]["chunks"] for r in out] == [1.0, 0.0, None, None]
    assert list((tmp_path / "cache" / "chunks").glob("*.pkl"))  # the pages' simhashes are kept for the next run


def test_calibrate_exact_containments_read_the_whole_pages(tmp_path):
    """calibrate.py --exact (a what-if): a decided row's containment is that of the two pages' whole shingle
    sets, over the smaller one, not the sketches' estimate; a row of a page too short to measure, or one the
    decision did not make, keeps its figure."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import calib_data
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    words = [f"w{i:04d}x" for i in range(1200)]  # 1,196 distinct 5-grams: more than a page's 256-key sketch

    def page(name: str, ws: list[str]) -> str:
        path = tmp_path / f"{name}.html"
        lines = [" ".join(ws[i:i + 24]) + "." for i in range(0, len(ws), 24)]
        path.write_text("<html><body><article>" + "".join(f"<p>{s}</p>" for s in lines) + "</article></body></html>")
        return str(path)

    whole, half, tiny = page("whole", words), page("half", words[:600]), page("tiny", words[:6])
    # its first 600 words the whole page's, then 600 others: 596 of the 1,196 5-grams of each are shared
    mixed = page("mixed", words[:600] + [f"v{i:04d}y" for i in range(600)])
    rows = [{"path": half, "nearest_path": whole, "rule": "below_decision", "scores": {"containment": 0.1}},
            {"path": tiny, "nearest_path": whole, "rule": "below_decision", "scores": {"containment": 0.2}},
            {"path": half, "nearest_path": whole, "rule": "content_hash", "scores": {"containment": 0.3}},
            {"path": mixed, "nearest_path": whole, "rule": "decision", "scores": {"containment": 0.4}}]
    out = calib_data.exact_containments(rows)
    assert [r["scores"]["containment"] for r in out] == [1.0, 0.2, 0.3, round(596 / 1196, 4)]
    # the sketches' estimate of the same pair is another figure: the whole sets were read
    from dedup.deduplicator import DedupConfig, containment
    a, b = (calib_data.file_features(p, DedupConfig()) for p in (mixed, whole))
    assert round(containment(a.shingles, a.shingle_count, b.shingles, b.shingle_count)[0], 4) != round(596 / 1196, 4)
