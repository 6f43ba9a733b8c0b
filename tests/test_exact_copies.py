"""Issue 33, item 1: a byte-identical copy is always caught, whatever the extractor reads.

A page no extractor reads (navigation only, an image served as HTML, a story in markup the default
extractor skips) has no main text to hash, and was kept as ``unique``/``unextractable`` and compared with
nothing, so its exact copies were kept too (48 of 50 such documents of a user's 10,000-document reindex).
Such a page's exact key is now its body's (``dedup.keys.raw_key``): the one content-hash lookup and claim
catches its copies in the in-memory, local and Elasticsearch indexes, in a crawl, a reindex and the
final pass of a sliced reindex. An empty body has no key (nothing to compare), and a page the default
extractor reads as empty gets resiliparse's reading before it is called unextractable."""
from __future__ import annotations

import pytest

from dedup.deduplicator import Deduplicator
from dedup.keys import raw_key
from dedup.page import parse_page
from dedup.store import MemoryIndex
from reliability.bad_pages import bad_pages

NAV_ONLY = (b"<html><head><title>Harbour news</title></head><body><nav><a href='/'>Home</a> "
            b"<a href='/news'>News</a> <a href='/sport'>Sport</a></nav><div id='app'></div>"
            b"<script>render({story: 1841})</script></body></html>")
OTHER_NAV_ONLY = NAV_ONLY.replace(b"1841", b"1842")  # the same visible text, another page


@pytest.fixture(params=["memory", "local"])
def dedup(request, tmp_path):
    if request.param == "memory":
        yield Deduplicator(MemoryIndex())
        return
    from index.local import LocalIndex

    index = LocalIndex(tmp_path / "index")
    try:
        yield Deduplicator(index)
    finally:
        index.close()


def test_an_exact_copy_of_an_unextractable_page_is_dropped(dedup):
    page, first = dedup.process_html(NAV_ONLY, "http://a.example/story")
    assert not page.text and (first.status, first.rule, first.kept) == ("unique", "unextractable", True)
    _, copy = dedup.process_html(NAV_ONLY, "http://mirror.example/story")
    assert (copy.status, copy.rule, copy.duplicate_of, copy.kept) == (
        "exact_duplicate", "content_hash", "http://a.example/story", False)
    assert copy.scores["content_hash"] == raw_key(NAV_ONLY.decode()) and copy.scores["content_hash"].startswith("raw:")
    # the same visible text in another body is another page: kept, compared with nothing
    _, other = dedup.process_html(OTHER_NAV_ONLY, "http://a.example/story-2")
    assert (other.status, other.rule) == ("unique", "unextractable")


def test_the_raw_key_folds_whitespace_and_encoding_only():
    wrapped = NAV_ONLY.replace(b"> <", b">\n   <")
    assert raw_key(NAV_ONLY.decode()) == raw_key(wrapped.decode()) != raw_key(OTHER_NAV_ONLY.decode())
    assert raw_key("") == raw_key("  \n\t ") == ""
    page = parse_page(NAV_ONLY.decode("utf-8").encode("utf-16"), "http://a.example/u16",
                      content_type="text/html; charset=utf-16")
    assert page.raw_key == parse_page(NAV_ONLY, "http://a.example/u8").raw_key != ""
    # a page with main text keeps its text's hash: no raw key is made
    story = b"<html><body><p>" + b"The harbour bridge will close for three weeks of repairs, the council said. " * 5 + b"</p></body></html>"
    assert parse_page(story, "http://a.example/s").raw_key == ""


@pytest.mark.parametrize("name", ["binary", "png_as_html", "png_image", "no_main_text"])
def test_byte_identical_bad_pages_are_copies_and_other_bad_pages_are_not(name):
    dedup = Deduplicator(MemoryIndex())
    pages = bad_pages(big_bytes=10)
    body, ctype = pages[name]
    _, first = dedup.process_html(body, f"http://bad.example/{name}/1", content_type=ctype)
    _, second = dedup.process_html(body, f"http://bad.example/{name}/2", content_type=ctype)
    assert (first.status, first.rule) == ("unique", "unextractable")
    assert (second.status, second.duplicate_of) == ("exact_duplicate", f"http://bad.example/{name}/1")
    for other in ("binary", "png_as_html", "png_image", "no_main_text"):
        if other != name:
            _, verdict = dedup.process_html(pages[other][0], f"http://bad.example/{other}", content_type=pages[other][1])
            assert verdict.rule == "unextractable", other


def test_a_record_and_a_hand_over_of_an_unextractable_page_decide_as_the_page():
    """The final pass of a sliced reindex decides from a record or the handed-over query features."""
    dedup = Deduplicator(MemoryIndex())
    page = parse_page(NAV_ONLY, "http://a.example/story")
    f = dedup.featurizer(page)
    record = f.to_record(page, status="unique")
    # against an empty index: unextractable, never a comparison of empty sketches
    assert dedup.check_record(record).rule == "unextractable"
    assert dedup.check_query_features(dedup.query_features(page, f)).rule == "unextractable"
    dedup.process(page)
    copy = parse_page(NAV_ONLY, "http://mirror.example/story")
    fc = dedup.featurizer(copy)
    for verdict in (dedup.check_record(fc.to_record(copy, status="unique")),
                    dedup.check_query_features(dedup.query_features(copy, fc))):
        assert (verdict.status, verdict.rule, verdict.duplicate_of) == (
            "exact_duplicate", "content_hash", "http://a.example/story")


def test_elasticsearch_claims_an_unextractable_page_for_every_crawler(es_index_uri):
    """Two crawlers sharing a cluster: the second one's copy is caught by the first one's claim."""
    from index.elastic import open_dedup

    one, two = open_dedup(es_index_uri), open_dedup(es_index_uri)
    try:
        assert Deduplicator(one).process_html(NAV_ONLY, "http://a.example/story")[1].rule == "unextractable"
        _, copy = Deduplicator(two).process_html(NAV_ONLY, "http://b.example/story")
        assert (copy.status, copy.duplicate_of) == ("exact_duplicate", "http://a.example/story")
    finally:
        one.close()
        two.close()


def test_the_default_extractor_reading_nothing_gives_resiliparse_its_chance(monkeypatch):
    """A story in a block the native scanner skips as boilerplate (``class="ad"``) on a page trafilatura
    discards ("discarding data"): resiliparse reads it, and the page has text, not ``unextractable``."""
    import dedup.extract
    import dedup.extractcheck

    sentences = "".join(f"<div>The harbour bridge council met on day {i} to discuss the ferry timetable and the "
                        "new tolls for trucks and buses crossing the river at night in winter.</div>" for i in range(12))
    html = f"<html><head><title>Tolls</title></head><body><div class='ad'>{sentences}</div></body></html>"
    monkeypatch.setattr(dedup.extract, "trafilatura_text", lambda *a, **k: "")
    monkeypatch.setattr(dedup.extractcheck, "trafilatura_text", lambda *a, **k: "")
    page = parse_page(html, "http://a.example/tolls")
    assert len(page.text) > 1500 and page.extraction.endswith(">resiliparse"), page.extraction
    assert page.raw_key == ""


def test_a_reindex_drops_the_exact_copies_of_an_unextractable_document(es_url, tmp_path):
    """The reindex path (HTML field, decided locally, claims in bulk) drops them too."""
    from elasticsearch import Elasticsearch, helpers

    from dedup.cli import main
    from conftest import read_jsonl

    name = f"corpus-unext-{tmp_path.name.lower()[-20:]}"
    client = Elasticsearch(es_url)
    client.indices.create(index=name, mappings={"properties": {
        "url": {"type": "keyword"}, "html": {"type": "text", "index": False}, "crawled": {"type": "date"}}})
    bodies = [NAV_ONLY, NAV_ONLY, OTHER_NAV_ONLY, NAV_ONLY]
    helpers.bulk(client, [{"_index": name, "_id": f"d{n}", "_source": {
        "url": f"http://site.example/{n}", "html": body.decode(), "crawled": f"2024-01-0{n + 1}T00:00:00Z"}}
        for n, body in enumerate(bodies)], refresh=True)
    try:
        dest = f"{es_url}/{name}-v2"
        assert main(["reindex", f"{es_url}/{name}", dest, "--html-field", "html", "--time-field", "crawled",
                     "--dropped-log", str(tmp_path / "dropped.jsonl")]) == 0
        dropped = {d["url"]: d["verdict"] for d in read_jsonl(tmp_path / "dropped.jsonl")}
        assert sorted(dropped) == ["http://site.example/1", "http://site.example/3"]
        assert {v["duplicate_of"] for v in dropped.values()} == {"http://site.example/0"}
        client.indices.refresh(index=f"{name}-v2")
        kept = {h["_source"]["url"]: h["_source"]["dedup"]["rule"] for h in client.search(index=f"{name}-v2")["hits"]["hits"]}
        assert kept == {"http://site.example/0": "unextractable", "http://site.example/2": "unextractable"}
    finally:
        for index in (name, f"{name}-v2", f"{name}-v2-dedup"):
            client.options(ignore_status=404).indices.delete(index=index)
        client.close()


def test_trafilatura_finding_nothing_is_no_warning(caplog):
    """Issue 33, item 5: ``WARNING trafilatura.core: discarding data: None`` interleaved with a reindex's
    progress, once a page trafilatura reads as empty: to dedup that is an answer (the next fallback, then
    ``unextractable``), not a fault. It is a debug record (``dedup -v`` shows it), never a warning."""
    import logging

    app = b"<html><head><title>App</title></head><body><div id='app'></div><script>render(1)</script></body></html>"
    caplog.set_level(logging.WARNING)
    page = parse_page(app, "http://a.example/app")
    assert page.text == "" and page.extraction == "none"
    assert not [r for r in caplog.records if r.name.startswith("trafilatura") and r.levelno >= logging.WARNING], \
        caplog.text
    caplog.clear()
    caplog.set_level(logging.DEBUG)
    parse_page(app, "http://a.example/app")
    assert any(r.name == "trafilatura.core" and "discarding data" in r.getMessage() and r.levelno == logging.DEBUG
               for r in caplog.records), caplog.text


@pytest.mark.crawl
def test_a_crawl_drops_the_exact_copy_of_a_page_without_main_text(tmp_path, crawl, subprocess_env):
    """The crawl path (``scrapy crawl site``, pages parsed in worker processes): the same bytes under two
    URLs, one kept and one dropped as its exact copy; another page with the same visible text kept."""
    from crawler.sample_site import terminate
    from test_bad_input import _serve

    site = tmp_path / "site"
    site.mkdir()
    for name, body in (("a", NAV_ONLY), ("b", NAV_ONLY), ("c", OTHER_NAV_ONLY)):
        (site / f"{name}.html").write_bytes(body)
    story = "The harbour bridge will close for three weeks of repairs in the spring, the council said. " * 4
    (site / "index.html").write_text(f"<html><body><p>{story}</p><a href='a.html'>a</a> <a href='b.html'>b</a> "
                                     "<a href='c.html'>c</a></body></html>", encoding="utf-8")
    proc, url = _serve(site, subprocess_env)
    try:
        result = crawl(url, tmp_path / "out", "DEDUP_WORKERS=1", timeout=120)
    finally:
        terminate(proc)
    assert result.returncode == 0, result.log[-3000:]
    kept = {item["url"][len(url):]: item["dedup"] for item in result.items}
    dropped = {line["url"][len(url):]: line["verdict"] for line in result.dropped}
    first, copy = sorted(kept.keys() & {"a.html", "b.html"}), sorted(dropped)  # whichever was fetched first is kept
    assert len(first) == 1 and sorted(kept) == sorted(["", "c.html", *first]) and len(copy) == 1, (kept, dropped)
    assert (kept[first[0]]["rule"], kept["c.html"]["rule"]) == ("unextractable", "unextractable")
    assert (dropped[copy[0]]["status"], dropped[copy[0]]["rule"], dropped[copy[0]]["duplicate_of"]) == (
        "exact_duplicate", "content_hash", url + first[0])


def _footer_page(title: str, body: str = "") -> bytes:
    """A page of a site whose only prose is the site's footer blurb (a sign-in form, an archive of bare links)."""
    footer = ("Daily Courier Ltd. Registered office: 5 Printers Yard. Reproduction of our journalism without a licence "
              "is not allowed and subscribers agree to our terms of service and privacy policy when they sign in.")
    return (f"<html><head><title>{title}</title></head><body><div id='menu'><a href='/'>Front page</a> "
            f"<a href='/archive'>Archive</a></div><div id='content'>{body}</div>"
            f"<div id='bottom'>{footer}</div></body></html>").encode()


def test_pages_of_one_site_whose_text_is_the_sites_own_are_kept(dedup):
    """A site's footer blurb read as the main text of pages that have none (a user's crawl dropped a sign-in
    page and archive pages as exact copies of the front page): the same text under another title on the same
    host is the site's, so it is an exact copy that is never dropped (rule ``site_text``). The same text under
    the same title (a URL variant of the page) or on another site is dropped as before."""
    front = dedup.process_html(_footer_page("Daily Courier - Front page"), "http://courier.example/")[1]
    login = dedup.process_html(_footer_page("Daily Courier - Sign in", "<form><input name=u></form>"),
                               "http://courier.example/login")[1]
    archive = dedup.process_html(_footer_page("Daily Courier - Archive"), "http://www.courier.example/archive/1")[1]
    variant = dedup.process_html(_footer_page("Daily Courier - Front page"), "http://courier.example/?utm=rss")[1]
    mirror = dedup.process_html(_footer_page("Mirror - Front page"), "http://mirror.example/")[1]
    assert front.status == "unique"
    for v in (login, archive):
        assert (v.status, v.rule, v.kept, v.duplicate_of) == ("exact_duplicate", "site_text", True,
                                                              "http://courier.example/")
    for v in (variant, mirror):
        assert (v.status, v.rule, v.kept, v.duplicate_of) == ("exact_duplicate", "content_hash", False,
                                                              "http://courier.example/")
    assert len(dedup.index) == 3 and dedup.index.by_url("http://www.courier.example/archive/1") is not None
    # fetched again: its own record, not a copy of anything
    again = dedup.process_html(_footer_page("Daily Courier - Sign in", "<form><input name=u></form>"),
                               "http://courier.example/login")[1]
    assert again.refetched and again.kept


def test_a_short_story_retitled_on_its_print_url_is_still_dropped(dedup):
    """The rule is for a footer's sentence or two: a 60-word brief (32 shingles) and its print copy under another
    title on the same host is an exact copy, dropped (a user's re-test found 100 shingles reached such briefs)."""
    brief = ("The harbour bridge reopened to traffic on Monday after two years of repairs, the council said, and "
             "buses returned to the route at once. Engineers replaced the corroded main cables and resurfaced the "
             "deck; cyclists get a lane of their own from next month, and tolls stay suspended until the spring. "
             "Shop owners near the bridge said trade had already picked up by lunchtime.")
    assert len(brief.split()) >= 60
    page = "<html><head><title>{}</title></head><body><article><p>{}</p></article></body></html>"
    first = dedup.process_html(page.format("Bridge reopens | News", brief), "http://news.example/bridge")[1]
    printed = dedup.process_html(page.format("Print: Bridge reopens", brief), "http://news.example/print/bridge")[1]
    assert first.status == "unique"
    assert (printed.status, printed.rule, printed.kept) == ("exact_duplicate", "content_hash", False)


def test_elasticsearch_keeps_a_pages_site_text_unclaimed(es_index_uri):
    """In Elasticsearch too (a kept exact copy claims no content): the second page of the site is kept, and
    a copy on another site is still caught by the first page's claim."""
    from index.elastic import open_dedup

    index = open_dedup(es_index_uri)
    try:
        d = Deduplicator(index)
        assert d.process_html(_footer_page("Courier - Front page"), "http://courier.example/")[1].status == "unique"
        login = d.process_html(_footer_page("Courier - Sign in"), "http://courier.example/login")[1]
        assert (login.rule, login.kept) == ("site_text", True)
        mirror = d.process_html(_footer_page("Mirror"), "http://mirror.example/")[1]
        assert (mirror.rule, mirror.kept, mirror.duplicate_of) == ("content_hash", False, "http://courier.example/")
    finally:
        index.close()


def test_a_crawl_keeps_the_pages_whose_text_is_the_sites_footer(tmp_path, crawl, subprocess_env):
    """The crawl path: a sign-in page and an archive page whose only prose is the site's footer are both
    kept (the second as rule ``site_text``); nothing is in the dropped log."""
    from crawler.sample_site import terminate
    from test_bad_input import _serve

    site = tmp_path / "site"
    site.mkdir()
    links = "<a href='login.html'>Sign in</a> <a href='archive.html'>Archive</a>"
    (site / "login.html").write_bytes(_footer_page("Courier - Sign in", "<form><input name=u></form>"))
    (site / "archive.html").write_bytes(_footer_page("Courier - Archive", "<ul><li><a href='/'>2025</a></li></ul>"))
    story = "The harbour bridge will close for three weeks of repairs in the spring, the council said. " * 4
    (site / "index.html").write_text(f"<html><body><p>{story}</p>{links}</body></html>", encoding="utf-8")
    proc, url = _serve(site, subprocess_env)
    try:
        result = crawl(url, tmp_path / "out", timeout=120)
    finally:
        terminate(proc)
    assert result.returncode == 0, result.log[-3000:]
    kept = {item["url"][len(url):]: item["dedup"] for item in result.items}
    assert sorted(kept) == ["", "archive.html", "login.html"] and not result.dropped, (kept, result.dropped)
    assert sorted(kept[p]["rule"] == "site_text" for p in ("archive.html", "login.html")) == [False, True]
