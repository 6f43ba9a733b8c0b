import json

import pytest

from dedup.deduplicator import DedupConfig, Deduplicator, containment
from dedup.page import parse_page
from dedup.store import MemoryIndex

STORY = [
    "The harbour bridge will close for three weeks of repairs in the spring, the council said on Monday.",
    "Engineers found corrosion in the main cables during an inspection last autumn and recommended urgent work.",
    "Ferries will run every fifteen minutes while the bridge is closed, and buses will be rerouted.",
    "Shops near the bridge fear a drop in trade, but the council promised a support fund for them.",
    "The mayor said the closure was regrettable but that safety had to come before convenience.",
    "Work is expected to cost four million pounds, paid from the regional infrastructure budget.",
]
OTHER = [
    "A local bakery has won a national prize for its sourdough loaf after three years of trying.",
    "The owner credits a starter culture kept alive since her grandmother opened the shop in 1961.",
    "Judges praised the crust and the open crumb, and said the flavour was deep without being sour.",
    "The bakery plans to run weekend classes so that residents can learn to bake the bread at home.",
    "Queues formed outside the shop before dawn on Saturday as news of the award spread online.",
    "The prize comes with a small grant that will pay for a second oven and two new apprentices.",
]


def html(title, paragraphs, nav="Home News Sport", links=3):
    anchors = "".join(f'<a href="/l{i}">{w}</a> ' for i, w in enumerate((nav.split() * 5)[:links]))
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return f"<html><head><title>{title}</title></head><body><nav>{anchors}</nav><article><h1>{title}</h1>{body}</article></body></html>"


@pytest.fixture
def dedup():
    return Deduplicator(MemoryIndex())


def run(d, body, url):
    return d.process(parse_page(body, url))


def test_unique_then_exact_duplicate(dedup):
    v1 = run(dedup, html("Bridge closes", STORY), "http://a.example/1")
    v2 = run(dedup, html("Bridge closes", STORY, nav="Start Politics Weather"), "http://b.example/copy")
    assert v1.status == "unique" and v1.duplicate_of is None
    assert v2.status == "exact_duplicate" and v2.duplicate_of == "http://a.example/1"
    assert v2.rule == "content_hash" and not v2.kept
    assert len(dedup.index) == 1
    json.dumps(v2.to_dict())  # JSON-serialisable


def test_near_duplicate_points_to_original(dedup):
    run(dedup, html("Bridge closes", STORY), "http://a.example/1")
    edited = STORY[:5] + ["A correction: an earlier version misstated the length of the closure."]
    v = run(dedup, html("Bridge to shut", edited), "http://c.example/syndicated")
    assert v.status in ("near_duplicate", "duplicate")
    assert v.duplicate_of == "http://a.example/1" and v.kept
    for key in ("containment", "resemblance", "tdw_cosine", "mrc", "hamming", "chunks"):
        assert key in v.scores
    assert v.thresholds["t1"] == 0.8 and v.reference.startswith("mrc-") and v.algorithm == "dedup-1"


def test_truncated_copy_is_contained(dedup):
    run(dedup, html("Bridge closes", STORY), "http://a.example/1")
    v = run(dedup, html("Bridge closes", STORY[:3], nav="X Y Z"), "http://d.example/short")
    assert v.status in ("near_duplicate", "duplicate") and v.scores["containment"] >= 0.8


def test_different_story_is_unique(dedup):
    run(dedup, html("Bridge closes", STORY), "http://a.example/1")
    v = run(dedup, html("Bakery wins", OTHER), "http://a.example/2")
    assert v.status == "unique" and v.duplicate_of is None


def test_same_template_title_and_anchor_count_needs_confirmation():
    # distinct pages with one template title and the same number of links (search/tag pages)
    confirm = Deduplicator(MemoryIndex())
    literal = Deduplicator(MemoryIndex(), DedupConfig(title_anchor="literal"))
    for d in (confirm, literal):
        run(d, html("Search results", STORY), "http://a.example/search?q=bridge")
    assert run(confirm, html("Search results", OTHER), "http://a.example/search?q=bread").status == "unique"
    v = run(literal, html("Search results", OTHER), "http://a.example/search?q=bread")
    assert v.status == "exact_duplicate" and v.rule == "title_anchor"


def test_page_without_text_is_unique_and_recorded(dedup):
    v = run(dedup, "<html><head><title>Empty</title></head><body></body></html>", "http://a.example/empty")
    assert v.status == "unique" and v.kept and len(dedup.index) == 1
    # an empty text has no content hash, so a second empty page is not an "exact copy" of it
    v2 = run(dedup, "<html><head><title>Other</title></head><body></body></html>", "http://a.example/empty2")
    assert v2.status == "unique" and v2.rule != "content_hash"


def test_config_validation_quotes_values():
    with pytest.raises(ValueError, match="t1=0.2, t2=0.5"):
        DedupConfig(t1=0.2, t2=0.5)
    with pytest.raises(ValueError, match="title_anchor"):
        DedupConfig(title_anchor="sometimes")
    with pytest.raises(ValueError, match="unknown status .dupe."):
        DedupConfig(drop=("dupe",))


def test_containment_from_sketches():
    import numpy as np

    a = np.arange(100, dtype=np.uint64)
    b = np.arange(50, 300, dtype=np.uint64)
    cont, res = containment(a, 100, b, 250)
    assert cont == pytest.approx(0.5) and res == pytest.approx(50 / 300)
    # tiny pages: resemblance stands in for containment
    assert containment(a[:3], 3, b, 250)[0] == 0.0


class UnrefreshedIndex(MemoryIndex):
    """Another process kept the content, but this one's search does not see it yet: only the
    atomic content claim in ``add`` does (as with an Elasticsearch index before its refresh)."""

    def lookup(self, kind, key):
        return []

    def near_simhash(self, fingerprint):
        return []

    def nearest(self, signature, ref_id, n, floor):
        return []


@pytest.mark.parametrize("drop", [("exact_duplicate",), ()])
def test_lost_content_race_becomes_exact_duplicate(drop):
    index = UnrefreshedIndex()
    d = Deduplicator(index, DedupConfig(drop=drop))
    first = run(d, html("Bridge closes", STORY), "https://a.example/bridge")
    second = run(d, html("Bridge closes", STORY), "https://b.example/bridge")
    assert first.status == "unique" and first.kept
    assert second.status == "exact_duplicate" and second.rule == "content_hash"
    assert second.duplicate_of == "https://a.example/bridge" and second.scores["race"] is True
    assert second.kept is (not drop)
    assert len(index) == (1 if drop else 2)  # a kept exact duplicate claims nothing, so it is stored


THIRD = [
    "The city orchestra will tour four countries next summer, its director announced on Friday evening.",
    "Rehearsals start in January, and the programme mixes new commissions with well-known symphonies.",
    "Tickets for the home concerts go on sale next week, with reduced prices for students and pensioners.",
    "The tour is paid for by a foundation grant and by sponsors from the regional business community.",
    "Musicians said they looked forward to playing in halls they had only heard on recordings before.",
    "A documentary crew will follow the orchestra and film the concerts for a series next autumn.",
]


@pytest.fixture(params=["memory", "local"])
def any_index(request, tmp_path):
    if request.param == "memory":
        yield MemoryIndex()
        return
    from index.local import LocalIndex

    index = LocalIndex(tmp_path / "index")
    yield index
    index.close()


def urls_of(index):
    records = list(index.iter_records()) if hasattr(index, "iter_records") else list(index._records.values())
    return sorted(r.url for r in records)


def test_a_page_fetched_again_unchanged_is_its_own_record_not_a_copy(any_index):
    d = Deduplicator(any_index)
    first = run(d, html("Bridge closes", STORY), "https://a.example/bridge")
    again = run(d, html("Bridge closes", STORY), "https://a.example/bridge")
    assert again.refetched and again.kept and again.status == first.status == "unique"
    assert again.rule == "replay_of_recorded_page" and again.duplicate_of is None
    assert urls_of(any_index) == ["https://a.example/bridge"]
    other = run(d, html("Bakery prize", OTHER), "https://a.example/bakery")
    assert not other.refetched and other.replaced is None


def test_known_finds_the_same_bytes_before_parsing(any_index):
    from dedup.sources import Source

    d = Deduplicator(any_index)
    body = html("Bridge closes", STORY)
    source = Source(url="https://a.example/bridge", html=body.encode())
    assert d.known(source.url, source.body_key) is None  # nothing recorded yet
    d.process(parse_page(body, source.url), body=source.body_key)
    hit = d.known(source.url, source.body_key)
    assert hit is not None and hit.refetched and hit.status == "unique"
    changed = Source(url=source.url, html=body.replace("Monday", "Tuesday").encode())
    assert d.known(changed.url, changed.body_key) is None  # other bytes: parsed and decided
    assert d.known("https://b.example/bridge", source.body_key) is None  # another URL


def test_process_reuses_the_lookup_known_made_once(monkeypatch):
    """A page known() could not answer is decided with the record it found (one lookup of its URL, a term
    query on Elasticsearch, not two); used once, and not after LOOKED_UP_SECONDS (a page spooled through
    an outage is looked up again)."""
    import dedup.deduplicator as module
    from dedup.sources import Source

    class Counting(MemoryIndex):
        lookups = 0

        def by_url(self, url):
            Counting.lookups += 1
            return super().by_url(url)

    d = Deduplicator(Counting())
    body = html("Bridge closes", STORY)
    source = Source(url="https://a.example/bridge", html=body.encode())
    assert d.known(source.url, source.body_key) is None and Counting.lookups == 1
    first = d.process(parse_page(body, source.url), body=source.body_key)
    assert Counting.lookups == 1 and first.status == "unique" and not first.refetched
    changed = Source(url=source.url, html=body.replace("Monday", "Tuesday").encode())
    assert d.known(changed.url, changed.body_key) is None and Counting.lookups == 2
    second = d.process(parse_page(changed.html.decode(), changed.url), body=changed.body_key)
    assert Counting.lookups == 2 and second.replaced and second.replaced["status"] == "unique"
    d.process(parse_page(changed.html.decode(), changed.url))  # nothing left from known(): looked up
    assert Counting.lookups == 3
    monkeypatch.setattr(module, "LOOKED_UP_SECONDS", 0.0)
    assert d.known(source.url, source.body_key) is None
    assert d.process(parse_page(body, source.url)).replaced and Counting.lookups == 5


def test_a_changed_page_replaces_its_record_and_is_never_a_copy_of_itself(any_index):
    d = Deduplicator(any_index)
    url = "https://a.example/bridge"
    first = run(d, html("Bridge closes", STORY), url)
    edited = STORY[:5] + ["Update: the council has since moved the start of the work to the summer holidays."]
    second = run(d, html("Bridge closes", edited), url)
    assert first.status == "unique"
    assert second.status == "unique" and second.duplicate_of is None and second.kept  # not its own copy
    assert second.replaced is not None and second.replaced["status"] == "unique"
    assert urls_of(any_index) == [url]
    record = any_index.by_url(url)
    assert record.content_hash != second.replaced["content_hash"]
    # the new text is what candidates are found from: a copy of it names the URL
    copy = run(d, html("Bridge closes", edited, nav="Start Politics Weather"), "https://b.example/copy")
    assert copy.status == "exact_duplicate" and copy.duplicate_of == url


def test_a_changed_page_that_became_a_copy_of_another_loses_its_record(any_index):
    d = Deduplicator(any_index)
    run(d, html("Bakery prize", OTHER), "https://b.example/bakery")
    run(d, html("Bridge closes", STORY), "https://a.example/page")
    now = run(d, html("Bakery prize", OTHER, nav="Start Politics Weather"), "https://a.example/page")
    assert now.status == "exact_duplicate" and not now.kept and now.replaced["status"] == "unique"
    assert urls_of(any_index) == ["https://b.example/bakery"]


def test_duplicate_of_names_the_root_and_nearest_the_page_matched(any_index):
    d = Deduplicator(any_index)
    root = "https://a.example/1"
    run(d, html("Bridge closes", STORY), root)
    middle = run(d, html("Bridge to shut", STORY[:5] + ["An extra line from the second site about the ferries."]),
                 "https://b.example/2")
    assert middle.duplicate_of == root and middle.nearest == root
    # an exact copy of the middle page (a flagged copy): matched with it, named after the root
    last = run(d, html("Bridge to shut", STORY[:5] + ["An extra line from the second site about the ferries."],
                       nav="Start Politics Weather"), "https://c.example/3")
    assert last.status == "exact_duplicate"
    assert last.nearest == "https://b.example/2" and last.duplicate_of == root


def test_unextractable_page_fetched_again_keeps_one_record(any_index):
    d = Deduplicator(any_index)
    for _ in range(3):
        v = run(d, "<html><body><nav><a href='/a'>Home</a> <a href='/b'>News</a></nav></body></html>",
                "https://a.example/")
    assert v.status == "unique" and v.rule in ("unextractable", "replay_of_recorded_page")
    assert urls_of(any_index) == ["https://a.example/"]


def test_title_anchor_match_with_edited_text_is_flagged_not_dropped():
    # issue 20: same title and anchor count, a paragraph added: resemblance >= t1 confirms the
    # title rule, but the text is not an exact copy, so the page is kept as a duplicate
    d = Deduplicator(MemoryIndex())
    run(d, html("Bridge closes", STORY), "http://a.example/1")
    v = run(d, html("Bridge closes", STORY + ["The mayor will speak about the bridge on the radio on Friday."]),
            "http://b.example/1")
    assert (v.status, v.rule, v.kept) == ("duplicate", "title_anchor", True)
    assert v.scores["resemblance"] >= 0.8 and v.duplicate_of == "http://a.example/1"
    # the exact copy of the text is still dropped, by the content hash
    v = run(d, html("Bridge closes", STORY), "http://c.example/1")
    assert (v.status, v.rule, v.kept) == ("exact_duplicate", "content_hash", False)


#: two sites' copies of STORY, each with a line of its own
COPY_A = html("Bridge to shut", STORY + ["An extra line from the second site about the ferries."])
COPY_B = html("Bridge shuts", STORY + ["A line of the third site: the council will meet on Friday."])


def kept_and_flagged(d, root_at, copy_at):
    """A kept page and its flagged copy (with its body key), decided at those times: ``(root URL, copy URL, the
    copy's HTML, its Source, its verdict)``."""
    from dedup.sources import Source

    root, copy = "https://a.example/bridge", "https://b.example/bridge"
    d.process(parse_page(html("Bridge closes", STORY), root), fetched_at=root_at)
    body = html("Bridge to shut", STORY[:5] + ["An extra line from the second site about the ferries."])
    source = Source(url=copy, html=body.encode())
    return root, copy, body, source, d.process(parse_page(body, copy), body=source.body_key, fetched_at=copy_at)


def test_a_flagged_page_fetched_again_is_decided_again_when_its_kept_page_changed(any_index):
    """A flagged copy names the page its group was kept for. Fetched again unchanged it keeps its verdict, until
    that page's text changes (or its record goes): then it is decided again, not left naming a page that no
    longer holds its text (a reader hiding flagged copies would hide text no kept page holds)."""
    d = Deduplicator(any_index)
    root, copy, body, source, first = kept_and_flagged(d, 50.0, 100.0)
    assert first.status in ("near_duplicate", "duplicate") and first.duplicate_of == root and first.kept
    again = d.process(parse_page(body, copy), body=source.body_key)
    assert again.refetched and d.known(copy, source.body_key).refetched  # the kept page unchanged: as it was
    d.process(parse_page(html("Bakery prize", OTHER), root), fetched_at=200.0)  # the kept page has other text now
    assert d.known(copy, source.body_key) is None  # not answered before parsing: decided again
    now = d.process(parse_page(body, copy), body=source.body_key, fetched_at=300.0)
    assert not now.refetched and now.status == "unique" and now.duplicate_of is None and now.kept
    assert now.replaced["root_changed"] and now.replaced["duplicate_of"] == root
    assert sorted(urls_of(any_index)) == sorted([root, copy])
    assert d.process(parse_page(body, copy), body=source.body_key).refetched  # and settled


def test_a_flagged_page_is_decided_again_by_its_kept_pages_text_not_by_dates(any_index):
    """The kept page's text is told by the content hash the copy's record keeps, not by the pages' dates: a
    reindex's time field may be absent or earlier for the edited page (helper-26). Put back to the text the copy
    was decided against, the kept page holds it again and the copy is answered as before, unparsed."""
    from dedup.deduplicator import ROOT_HASH

    d = Deduplicator(any_index)
    root, copy, body, source, first = kept_and_flagged(d, 0.0, 0.0)
    assert first.kept and first.duplicate_of == root and first.root_hash
    assert any_index.by_url(copy).extra["root"] == any_index.by_url(root).content_hash[-ROOT_HASH:]
    assert "root_hash" not in first.to_dict()  # the record keeps it; items and drop lines do not
    d.process(parse_page(html("Bakery prize", OTHER), root), fetched_at=0.0)  # the same date, other text
    assert d.known(copy, source.body_key) is None
    d.process(parse_page(html("Bridge closes", STORY), root), fetched_at=0.0)  # and back again
    assert d.known(copy, source.body_key).refetched  # it holds the copy's text again: nothing to decide
    d.process(parse_page(html("Bakery prize", OTHER), root), fetched_at=0.0)
    now = d.process(parse_page(body, copy), body=source.body_key, fetched_at=0.0)
    assert now.status == "unique" and now.replaced["root_changed"] and "root" not in any_index.by_url(copy).extra


def test_copies_of_a_rewritten_page_decided_again_never_name_it_through_each_other(any_index):
    """helper-27: R kept, A and B flagged as its copies; R rewritten as another article. A, decided again, matched
    B best, and B's verdict still named R: A was flagged as a copy of R again (with R's new text's hash, so it never
    looked stale after). A link whose page holds another text now ends the walk: A names B; B, decided again,
    matches A (which names it) and stays its group's kept page. Nothing names R."""
    d = Deduplicator(any_index)
    root, a, b = "https://r.example/bridge", "https://a.example/bridge", "https://b.example/bridge"
    run(d, html("Bridge closes", STORY), root)
    assert run(d, COPY_A, a).duplicate_of == root and run(d, COPY_B, b).duplicate_of == root
    run(d, html("Bakery prize", OTHER), root)  # R is another article now
    again_a = run(d, COPY_A, a)
    assert again_a.replaced["root_changed"] and again_a.duplicate_of == b and again_a.nearest == b, again_a
    again_b = run(d, COPY_B, b)
    assert again_b.replaced["root_changed"] and again_b.status == "unique" and again_b.rule == "group_root"
    records = {r.url: r for r in (any_index.by_url(u) for u in (root, a, b))}
    assert records[a].duplicate_of == b and records[b].status == "unique" and records[root].status == "unique"
    assert run(d, COPY_A, a).refetched and run(d, COPY_B, b).refetched  # settled


def test_a_copy_naming_a_page_that_is_itself_a_copy_is_decided_again(any_index):
    """A chain (a names b, b names c), as copies of a rewritten page decided again one after another can leave it
    (a named b while b's link was stale, then b was decided again as a copy of c). Fetched again unchanged, a is
    decided again and names the group's kept page, c; fetched again after that, it is settled."""
    from dataclasses import replace

    from dedup.deduplicator import ROOT_HASH

    d = Deduplicator(any_index)
    c, b, a = "https://c.example/bridge", "https://b.example/bridge", "https://a.example/bridge"
    run(d, html("Bridge closes", STORY), c)
    assert run(d, COPY_B, b).duplicate_of == c and run(d, COPY_A, a).duplicate_of == c
    rec_a, rec_b = any_index.by_url(a), any_index.by_url(b)
    any_index.replace(rec_a.id, replace(rec_a, duplicate_of=b, extra={**rec_a.extra,
                                                                      "root": rec_b.content_hash[-ROOT_HASH:]}))
    again = run(d, COPY_A, a)
    assert again.replaced["root_changed"] and again.duplicate_of == c and any_index.by_url(a).duplicate_of == c
    assert run(d, COPY_A, a).refetched


def test_a_flagged_page_whose_kept_page_went_is_decided_again(any_index):
    d = Deduplicator(any_index)
    root, copy = "https://a.example/bridge", "https://b.example/bridge"
    run(d, html("Bakery prize", OTHER), "https://c.example/bakery")
    run(d, html("Bridge closes", STORY), root)
    body = html("Bridge to shut", STORY[:5] + ["An extra line from the second site about the ferries."])
    assert run(d, body, copy).duplicate_of == root
    gone = run(d, html("Bakery prize", OTHER, nav="Start Politics Weather"), root)  # now a copy: its record goes
    assert not gone.kept and any_index.by_url(root) is None
    now = run(d, body, copy)
    assert now.status == "unique" and now.replaced["root_changed"] and not now.refetched


def test_a_kept_page_edited_stays_its_groups_kept_page_not_a_copy_of_its_copy(any_index):
    """helper-23, helper-24: R kept, M flagged as a copy of R; R edited by a sentence matched M best and was
    flagged as a copy of M, which still named R: a cycle, no page of the group kept. R stays the kept page."""
    d = Deduplicator(any_index)
    root, copy = "https://a.example/bridge", "https://b.example/bridge"
    run(d, html("Bridge closes", STORY), root)
    flagged = run(d, html("Bridge to shut", STORY[:5] + ["An extra line from the second site about the ferries."]),
                  copy)
    assert flagged.duplicate_of == root and flagged.kept
    edited = run(d, html("Bridge closes", STORY[:4] + ["The council added a line about the ferries today.",
                                                       STORY[5]]), root)
    assert (edited.status, edited.duplicate_of, edited.rule) == ("unique", None, "group_root"), edited
    assert edited.nearest == copy and edited.replaced and edited.regrouped is None
    assert any_index.by_url(root).status == "unique" and any_index.by_url(copy).duplicate_of == root


def test_a_kept_page_put_back_as_an_exact_copy_of_its_copy_makes_that_copy_the_kept_page(any_index):
    """The exact case: one of the two texts must go, and the page decided now is the one that can; the copy
    it names becomes its group's kept page (``regrouped``), so no page names a page that names it."""
    d = Deduplicator(any_index)
    root, copy = "https://a.example/bridge", "https://b.example/bridge"
    text = STORY[:5] + ["An extra line from the second site about the ferries."]
    run(d, html("Bridge closes", STORY), root)
    assert run(d, html("Bridge closes", text), copy).duplicate_of == root
    now = run(d, html("Bridge closes", text, nav="Start Politics Weather"), root)
    assert now.status == "exact_duplicate" and not now.kept and now.duplicate_of == copy
    assert now.regrouped == copy and now.to_dict()["regrouped"] == copy
    assert any_index.by_url(root) is None
    kept = any_index.by_url(copy)
    assert (kept.status, kept.duplicate_of) == ("unique", None)
    assert "regrouped" not in run(d, html("Bakery prize", OTHER), "https://c.example/").to_dict()
