"""Real ``scrapy crawl site`` runs against the sample site on loopback, checked against expected.json;
and the ``site`` spider's parsing and arguments, on hand-made responses."""
from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import scrapy

from scrapy.http import HtmlResponse, Response
from scrapy.crawler import AsyncCrawlerRunner
from scrapy.utils.test import get_reactor_settings

from crawler.items import PageItem
from conftest import ALL_PATHS, EXACT, MANIFEST, NEAR, SAME_TITLE, by_path
from crawler.sample_site import manifest_key
from crawler.spiders.site import SiteSpider
from index import open_index, open_search

CRAWL = pytest.mark.crawl  # the tests that run at least one real crawl

ROOT = Path(__file__).resolve().parents[1]
FLAGGED = ("near_duplicate", "duplicate")


#: texts and a page template the crawl-path tests below share
LINE = ("The regional line will close for three weekends in spring while engineers replace the signals "
        "between the two market towns, the operator said on Monday. Buses will replace trains. ")
BAKERY = ("A bakery on the harbour front has won a national prize for its sourdough after years of trying, "
          "and its owner plans weekend classes for residents who want to learn. ")
ARTICLE = "<html><head><title>{}</title></head><body><article><p>{}</p></article></body></html>"

def index_statuses(index: Path) -> dict[str, str]:
    idx = open_index(f"local://{index}")
    try:
        return {manifest_key(r.url): r.status for r in idx.iter_records()}
    finally:
        idx.close()


@pytest.fixture(scope="module")
def first(site_url, crawl, tmp_path_factory):
    result = crawl(site_url, tmp_path_factory.mktemp("first"))
    assert result.returncode == 0, result.log[-3000:]
    return result


@pytest.fixture(scope="module")
def kept(first):
    return by_path(first.items)


@pytest.fixture(scope="module")
def dropped(first):
    return by_path(first.dropped)


@CRAWL
def test_every_url_fetched_once_variants_distinct(first, kept, dropped):
    assert not set(kept) & set(dropped)
    assert sorted(set(kept) | set(dropped)) == ALL_PATHS
    assert re.search(r"'item_scraped_count': %d\b" % len(kept), first.log)
    assert first.seconds < 60


@CRAWL
@pytest.mark.parametrize("group", EXACT, ids=lambda g: g["name"])
def test_exact_copies_one_kept_rest_dropped(group, kept, dropped):
    members = set(group["paths"])
    survivors = members & set(kept)
    assert len(survivors) == 1, f"kept {sorted(survivors)}"
    assert kept[survivors.pop()]["status"] == "unique"
    for path in members - set(kept):
        verdict = dropped[path]
        assert verdict["status"] == "exact_duplicate", (path, verdict)
        assert manifest_key(verdict["duplicate_of"]) in members, (path, verdict["duplicate_of"])
        assert verdict["kept"] is False


@CRAWL
@pytest.mark.parametrize("group", NEAR, ids=lambda g: g["name"])
def test_near_copies_all_kept_and_flagged(group, kept):
    members = group["paths"]
    assert set(members) <= set(kept), f"dropped: {sorted(set(members) - set(kept))}"
    statuses = Counter(kept[p]["status"] for p in members)
    assert statuses["unique"] == 1, {p: kept[p]["status"] for p in members}
    for path in members:
        verdict = kept[path]
        if verdict["status"] != "unique":
            assert verdict["status"] in FLAGGED, (path, verdict)
            assert manifest_key(verdict["duplicate_of"]) in members, (path, verdict["duplicate_of"])


@CRAWL
@pytest.mark.parametrize("group", SAME_TITLE, ids=lambda g: g["name"])
def test_same_title_distinct_pages_all_kept(group, kept):
    assert set(group["paths"]) <= set(kept)
    assert {kept[p]["rule"] for p in group["paths"]}.isdisjoint({"title_anchor"})


@CRAWL
@pytest.mark.parametrize("group", SAME_TITLE, ids=lambda g: g["name"])
def test_same_title_distinct_pages_all_unique(group, kept):
    assert {p: kept[p]["status"] for p in group["paths"]} == {p: "unique" for p in group["paths"]}


@CRAWL
def test_unique_pages_kept_as_unique(kept):
    assert {p: kept[p]["status"] for p in MANIFEST["unique"]} == {p: "unique" for p in MANIFEST["unique"]}


@CRAWL
def test_exported_item_fields(first):
    for item in first.items:
        assert set(item) == {"url", "title", "text", "fetched_at", "dedup"}, item.keys()
        assert item["url"].startswith("http://127.0.0.1:") and item["title"] and item["text"]
        assert isinstance(item["fetched_at"], float)
        assert {"status", "duplicate_of", "rule", "scores"} <= set(item["dedup"])
        assert item["dedup"]["kept"] is True


@CRAWL
def test_dropped_log_lines(first):
    assert first.dropped
    for line in first.dropped:
        assert {"url", "time", "index", "verdict", "item", "page", "body"} <= set(line) <= \
            {"url", "time", "index", "verdict", "item", "page", "body", "content_hash"}
        assert datetime.fromisoformat(line["time"].replace("Z", "+00:00")).utcoffset().total_seconds() == 0
        assert line["item"]["url"] == line["url"] and line["index"] == f"local://{first.index}"
        # the verdict once; no raw HTML: title, text and the tagged fields rebuild the page
        assert set(line["item"]) == {"url", "title", "text", "fetched_at"} and line["item"]["text"]
        assert line["page"]["anchor_count"] >= 1 and line["page"]["extraction"]


@CRAWL
def test_index_holds_the_kept_pages(first, kept):
    assert index_statuses(first.index) == {p: v["status"] for p, v in kept.items()}
    search = open_search(f"local://{first.index}")
    try:
        assert search.count() == len(kept)
        assert {manifest_key(d["url"]): d["dedup"]["status"] for d in search.iter_docs()} == \
            {p: v["status"] for p, v in kept.items()}
    finally:
        search.close()


@CRAWL
def test_stats_and_drop_logging(first, kept, dropped):
    statuses = Counter(v["status"] for v in kept.values()) + Counter(v["status"] for v in dropped.values())
    for status, n in statuses.items():
        assert re.search(r"'dedup/%s': %d\b" % (status, n), first.log), status
    assert re.search(r"'dedup/kept': %d\b" % len(kept), first.log)
    assert re.search(r"'dedup/dropped': %d\b" % len(dropped), first.log)
    assert "dedup/errors" not in first.log
    # the noisy-event-once pattern: one drop at INFO, pointing at DEDUP_DEBUG
    drops = re.findall(r"\[scrapy\.core\.scraper\] INFO: Dropped: (.*)", first.log)
    assert len(drops) == 1 and "DEDUP_DEBUG" in drops[0], drops


@CRAWL
def test_second_crawl_drops_everything(site_url, crawl, first, kept, dropped, tmp_path):
    before = index_statuses(first.index)
    again = crawl(site_url, tmp_path, index=first.index)
    assert again.returncode == 0, again.log[-3000:]
    assert again.items == []
    # a kept page fetched again is its own record, not a copy of itself: dropped unlogged, counted
    assert sorted(by_path(again.dropped)) == sorted(dropped)
    assert {v["status"] for v in by_path(again.dropped).values()} == {"exact_duplicate"}
    assert re.search(r"'dedup/refetched': %d\b" % len(kept), again.log)
    assert index_statuses(first.index) == before


@CRAWL
def test_jobdir_pause_and_resume_matches_uninterrupted_crawl(site_url, crawl, tmp_path):
    ref = crawl(site_url, tmp_path / "ref", f"JOBDIR={tmp_path / 'ref' / 'job'}")
    assert ref.returncode == 0, ref.log[-3000:]

    out = tmp_path / "paused"
    job = f"JOBDIR={out / 'job'}"
    part = crawl(site_url, out, job, "CLOSESPIDER_PAGECOUNT=12", items="items1.jsonl")
    assert part.returncode == 0, part.log[-3000:]
    assert "'finish_reason': 'closespider_pagecount'" in part.log
    done_first = index_statuses(out / "index")
    assert 0 < len(done_first) < len(index_statuses(ref.index))

    rest = crawl(site_url, out, job, items="items2.jsonl")
    assert rest.returncode == 0, rest.log[-3000:]
    assert "Resuming crawl" in rest.log
    assert "'finish_reason': 'finished'" in rest.log
    # nothing fetched twice, nothing missed
    seen = [manifest_key(i["url"]) for i in part.items + rest.items] + \
           [manifest_key(d["url"]) for d in rest.dropped]  # one dropped log, appended by both runs
    assert sorted(seen) == ALL_PATHS
    assert index_statuses(out / "index") == index_statuses(ref.index)


@CRAWL
def test_worker_processes_give_the_verdicts_of_one_process(site_url, crawl, tmp_path):
    """DEDUP_WORKERS parse pages in other processes; decisions stay in the crawl process, in arrival order."""
    alone = crawl(site_url, tmp_path / "alone", "DEDUP_WORKERS=0")
    pooled = crawl(site_url, tmp_path / "pooled", "DEDUP_WORKERS=2")
    assert alone.returncode == 0 and pooled.returncode == 0, pooled.log[-3000:]
    assert "pages parsed in-process" in alone.log and "2 worker process(es) parse pages" in pooled.log
    for a, b in ((alone.items, pooled.items), (alone.dropped, pooled.dropped)):
        assert {manifest_key(x["url"]): (x.get("dedup") or x["verdict"])["status"] for x in a} == \
               {manifest_key(x["url"]): (x.get("dedup") or x["verdict"])["status"] for x in b}
    assert {i["url"]: i["text"] for i in alone.items} == {i["url"]: i["text"] for i in pooled.items}


@CRAWL
def test_addon_enables_dedup_in_another_project(site_url, subprocess_env, tmp_path):
    """A project-less CrawlerProcess with only ADDONS set gets both pipelines and the log formatter."""
    script = tmp_path / "run.py"
    script.write_text(
        "import sys\n"
        "from scrapy.crawler import CrawlerProcess\n"
        "from crawler.spiders.site import SiteSpider\n"
        "process = CrawlerProcess({\n"
        "    'ADDONS': {'crawler.addon.DedupAddon': 100},\n"
        f"    'DEDUP_INDEX': 'local://{tmp_path / 'index'}',\n"
        f"    'FEEDS': {{'{tmp_path / 'items.jsonl'}': {{'format': 'jsonlines', 'fields': ['url', 'dedup']}}}},\n"
        "    'LOG_LEVEL': 'INFO',\n"
        "})\n"
        "process.crawl(SiteSpider, start_url=sys.argv[1])\n"
        "process.start()\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script), site_url], cwd=tmp_path,
                          env={**subprocess_env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = proc.stderr
    assert "crawler.pipelines.DedupPipeline" in log and "crawler.pipelines.IndexPipeline" in log
    items = [json.loads(line) for line in (tmp_path / "items.jsonl").read_text().splitlines()]
    dropped = [json.loads(line) for line in (tmp_path / "index" / "dropped.jsonl").read_text().splitlines()]
    assert sorted({manifest_key(i["url"]) for i in items} | {manifest_key(d["url"]) for d in dropped}) == ALL_PATHS
    assert len(re.findall(r"INFO: Dropped: .*DEDUP_DEBUG", log)) == 1


# -- the spider -----------------------------------------------------------------------------------

def _spider(**kwargs) -> SiteSpider:
    """The spider as ``Crawler.crawl`` makes it: created before the settings are frozen."""
    runner = AsyncCrawlerRunner({"REMOTE_CONTROL_ENABLED": False, **get_reactor_settings()})
    crawler = runner.create_crawler(SiteSpider)
    spider = SiteSpider.from_crawler(crawler, **kwargs)
    crawler._apply_settings()
    return spider


def test_spider_yields_the_raw_page_and_follows_same_origin_links_verbatim():
    spider = _spider(start_url="http://a.example:8080/")
    body = (b"<html><head><title>Roof</title></head><body><article><p>The council voted to repair the roof."
            b"</p></article><a href='/b.html;jsessionid=X1?utm_source=n&amp;utm_medium=e'>b</a>"
            b"<a href='http://a.example:8080/print/b.html'>print</a><a href='http://a.example/c.html'>port 80</a>"
            b"<a href='https://other.example/'>other</a><a href='/logo.png'>logo</a></body></html>")
    response = HtmlResponse("http://a.example:8080/a.html?sid=1", body=body,
                            headers={"Content-Type": "text/html; charset=utf-8"})
    item, *requests = list(spider.parse(response))
    # not parsed here: DedupPipeline parses the body once and fills in title and text
    assert isinstance(item, PageItem) and item["html"] is response.body
    assert item["content_type"] == "text/html; charset=utf-8" and "title" not in item
    assert item["url"] == "http://a.example:8080/a.html?sid=1"
    assert isinstance(item["fetched_at"], float)
    assert [r.url for r in requests] == ["http://a.example:8080/b.html;jsessionid=X1?utm_source=n&utm_medium=e",
                                         "http://a.example:8080/print/b.html"]


def test_spider_skips_and_counts_non_html_responses():
    spider = _spider(start_url="http://a.example/")
    pdf = Response("http://a.example/report", body=b"%PDF-1.4", headers={"Content-Type": "application/pdf"})
    assert list(spider.parse(pdf)) == []
    assert spider.crawler.stats.get_value("site/non_html") == 1
    assert spider.crawler.stats.get_value("site/non_html/application/pdf") == 1


def test_spider_arguments():
    spider = _spider(start_url="http://a.example/, http://b.example/x", allow=r"/news/", max_pages="5",
                     max_depth="2")
    assert spider.start_urls == ["http://a.example/", "http://b.example/x"]
    assert spider.follows("http://c.example/news/1") and not spider.follows("http://a.example/about")
    assert spider.crawler.settings.getint("CLOSESPIDER_PAGECOUNT") == 5
    assert spider.crawler.settings.getint("DEPTH_LIMIT") == 2
    for bad, message in [({}, "start_url"), ({"start_url": "ftp://a/"}, "start_url"),
                         ({"start_url": "http://a/", "max_pages": "many"}, "max_pages"),
                         ({"start_url": "http://a/", "max_depth": "-1"}, "max_depth"),
                         ({"start_url": "http://a/", "allow": "("}, "allow")]:
        with pytest.raises(ValueError, match=message):
            _spider(**bad)


@CRAWL
def test_crawl_with_allow_and_max_pages(site_url, crawl, tmp_path):
    result = crawl(site_url, tmp_path, spider_args=[r"allow=/articles/[a-z-]+\.html$", "max_pages=6"])
    assert result.returncode == 0, result.log[-3000:]
    assert "'finish_reason': 'closespider_pagecount'" in result.log
    urls = [manifest_key(i["url"]) for i in result.items + result.dropped]
    assert urls and urls[0] == "/"
    assert 1 < len(urls) <= 6  # 6 responses, robots.txt's included
    assert all(re.fullmatch(r"/articles/[a-z-]+\.html", u) for u in urls[1:]), urls


class BareItem(scrapy.Item):
    """A user's Item class with raw HTML but no title/text fields."""

    url = scrapy.Field()
    html = scrapy.Field()
    dedup = scrapy.Field()


def test_an_item_class_without_text_fields_still_reaches_search_with_its_text(tmp_path, caplog):
    from crawler.pipelines import DedupPipeline, IndexPipeline
    from dedup.deduplicator import DedupConfig

    uri = f"local://{tmp_path / 'index'}"
    dedup = DedupPipeline(index_uri=uri, config=DedupConfig(), dropped_log=tmp_path / "dropped.jsonl")
    store = IndexPipeline(index_uri=uri)
    html = ("<html><head><title>Roof</title></head><body><article><p>The council voted on Tuesday to repair the "
            "library roof before winter; work starts in March.</p></article></body></html>")
    dedup.open_spider()
    store.open_spider()
    try:
        with caplog.at_level("WARNING", logger="crawler.pipelines"):
            for n in range(2):
                item = dedup.process_item(BareItem(url=f"http://a.example/{n}", html=html.replace("Tuesday",
                                                                                                 f"day {n}")))
                store.process_item(item)
        assert caplog.text.count("has no 'title' field") == 1  # said once, not per item
    finally:
        dedup.close_spider()
        store.close_spider()
    with open_search(uri, readonly=True) as search:
        doc = search.get("http://a.example/1")
        assert doc["title"] == "Roof" and "library roof" in doc["text"] and doc["dedup"]["status"]


class UrlHtmlItem(scrapy.Item):
    """A user's Item class with only the page: no title, text or dedup field."""

    url = scrapy.Field()
    html = scrapy.Field()
    category = scrapy.Field()


@dataclasses.dataclass
class UrlHtmlRecord:
    url: str
    html: str


@pytest.mark.parametrize("kind", [UrlHtmlItem, UrlHtmlRecord])
def test_an_item_class_without_a_dedup_field_still_gives_the_search_index_its_verdict(tmp_path, caplog, kind):
    """helper-21: with a ``scrapy.Item`` or a dataclass declaring only url and html, the near copy's flag
    reached the dedup index but not the search index (status and duplicate_of empty: ``dedup report`` said
    0 flagged, ``dropped show`` "kept ... as -"). The verdict, title and text go there beside the item now."""
    from crawler.pipelines import DedupPipeline, IndexPipeline
    from dedup.deduplicator import DedupConfig

    uri = f"local://{tmp_path / 'index'}"
    dedup = DedupPipeline(index_uri=uri, config=DedupConfig(), dropped_log=tmp_path / "dropped.jsonl")
    store = IndexPipeline(index_uri=uri)
    story = ("The council voted on Tuesday to repair the library roof before winter, after rain damaged the "
             "reading room twice this autumn; work starts in March and takes six weeks, the clerk said. ") * 3
    html = "<html><head><title>Roof</title></head><body><article><p>{}</p></article></body></html>"
    dedup.open_spider()
    store.open_spider()
    try:
        with caplog.at_level("WARNING", logger="crawler.pipelines"):
            for n, text in enumerate((story, story + "A spokesperson for the library thanked readers.")):
                item = kind(url=f"http://a.example/{n}", html=html.format(text))
                assert store.process_item(dedup.process_item(item)) is item
        assert "has no 'dedup' field: items are exported without their verdicts" in caplog.text
    finally:
        dedup.close_spider()
        store.close_spider()
    with open_search(uri, readonly=True) as search:
        first, copy = search.get("http://a.example/0"), search.get("http://a.example/1")
    assert first["dedup"]["status"] == "unique" and first["title"] == "Roof" and "library roof" in first["text"]
    assert copy["dedup"]["status"] in ("duplicate", "near_duplicate") and \
        copy["dedup"]["duplicate_of"] == "http://a.example/0", copy["dedup"]
    assert not hasattr(item, "_dedup_notes")  # read once, then gone from the item


@CRAWL
def test_a_recorded_page_missing_from_the_search_index_is_written_when_fetched_again(site_url, crawl, tmp_path):
    """A kill between the dedup index's write and the search index's (or an Elasticsearch bulk buffer lost
    without JOBDIR) leaves a record without its document. Fetched again, such a page is its own record
    (not a copy of itself) and goes to the search index; pages that are there are not written again."""
    first = crawl(site_url, tmp_path / "first")
    assert first.returncode == 0, first.log[-3000:]
    uri = f"local://{first.index}"
    lost = sorted(i["url"] for i in first.items)[:2]
    search = open_search(uri)
    try:
        assert all(search.remove(url) for url in lost)
    finally:
        search.close()
    before = index_statuses(first.index)
    again = crawl(site_url, tmp_path / "again", index=first.index)
    assert again.returncode == 0, again.log[-3000:]
    assert sorted(i["url"] for i in again.items) == lost
    assert {i["dedup"]["rule"] for i in again.items} == {"replay_of_recorded_page"}
    assert all(i["text"] and i["title"] and "html" not in i for i in again.items)  # exported as any other item
    assert re.search(r"'dedup/refetched': %d\b" % len(first.items), again.log)
    assert index_statuses(first.index) == before
    search = open_search(uri, readonly=True)
    try:
        for url in lost:
            assert search.get(url)["dedup"]["status"] == before[manifest_key(url)]
        assert len(search) == len(first.items)
    finally:
        search.close()


@CRAWL
def test_a_site_crawl_whose_start_url_refuses_connections_fails(crawl, tmp_path):
    """Issue 30 item 1, the ``site`` spider: exit status 1, no traceback, the last line names the URL and why."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/"
    result = crawl(url, tmp_path, "RETRY_TIMES=1")
    assert result.returncode == 1, result.log[-3000:]
    assert "Traceback" not in result.log, result.log[-3000:]
    last = result.log.strip().splitlines()[-1]
    assert "No page was fetched" in last and url in last and "refused" in last, last
    assert "'finish_reason': 'no_page_fetched'" in result.log


@pytest.mark.parametrize("keep_html", [False, True])
def test_a_dict_items_raw_html_is_removed_once_parsed_unless_kept(tmp_path, keep_html):
    """Issue 30 item 2: ``{"url", "html"}`` items leave the pipeline with ``title``, ``text`` and ``dedup``;
    ``DEDUP_KEEP_HTML`` keeps the ``html`` (an Item class without a text field keeps it, as above)."""
    from crawler.config import read_settings
    from crawler.pipelines import DedupPipeline

    assert read_settings({}).keep_html is False and read_settings({"DEDUP_KEEP_HTML": "1"}).keep_html is True
    html = ("<html><head><title>Roof</title></head><body><article><p>The council voted on Tuesday to repair the "
            "library roof before winter; work starts in March.</p></article></body></html>")
    from dedup.deduplicator import DedupConfig

    dedup = DedupPipeline(index_uri=f"local://{tmp_path / 'index'}", config=DedupConfig(),
                          dropped_log=tmp_path / "dropped.jsonl", keep_html=keep_html)
    dedup.open_spider()
    try:
        item = dedup.process_item({"url": "http://a.example/1", "html": html})
        empty = dedup.process_item({"url": "http://a.example/2", "html": "<html><body><img src=a.png></body></html>"})
    finally:
        dedup.close_spider()
    assert item["title"] == "Roof" and "library roof" in item["text"] and item["dedup"]["status"] == "unique"
    assert ("html" in item) is keep_html
    assert empty["dedup"]["rule"] == "unextractable" and ("html" in empty) is keep_html  # no text: gone all the same


def test_a_dropped_page_fetched_again_waits_for_the_pages_before_it_in_the_workers(tmp_path):
    """helper-21: with worker processes (DEDUP_WORKERS, auto on 2+ cores) a page dropped as an exact copy and
    fetched again unchanged was dropped again at once, while the page it copied, fetched just before it with
    new text, was still in a worker: the text then was in neither index. With DEDUP_WORKERS=0 it was decided
    again and kept. Now it waits for the pages before it, as their decisions do."""
    import asyncio

    from crawler.pipelines import DedupPipeline, DuplicateDropped
    from dedup.deduplicator import DedupConfig

    story = ("The regional line will close for three weekends in spring while engineers replace the signals "
             "between the two market towns, the operator said on Monday. ")
    edit = "A replacement bus will run every twenty minutes and tickets remain valid on it, a spokesperson added. "

    def page(title: str, text: str) -> str:
        return f"<html><head><title>{title}</title></head><body><article><p>{text}</p></article></body></html>"

    mirror, article = "http://m.example/a4", "http://a.example/a4"
    uri, log = f"local://{tmp_path / 'index'}", tmp_path / "dropped.jsonl"

    day1 = DedupPipeline(index_uri=uri, config=DedupConfig(), dropped_log=log)
    day1.open_spider()
    try:
        day1.process_item({"url": mirror, "html": page("Line to close", story * 3)})
        with pytest.raises(DuplicateDropped):
            day1.process_item({"url": article, "html": page("Line to close | News", story * 3)})
    finally:
        day1.close_spider()

    async def day2() -> tuple[dict, dict]:
        pipeline = DedupPipeline(index_uri=uri, config=DedupConfig(), dropped_log=log, workers=1)
        pipeline.open_spider()
        pipeline._pooling = True  # as under Scrapy's asyncio reactor
        try:
            first = pipeline.process_item({"url": mirror, "html": page("Line to close", story * 2 + edit * 2)})
            second = pipeline.process_item({"url": article, "html": page("Line to close | News", story * 3)})
            assert asyncio.iscoroutine(second)  # the old code raised DropItem here, before the mirror's turn
            return await first, await second
        finally:
            pipeline.close_spider()

    changed, again = asyncio.run(day2())
    assert changed["dedup"]["replaced"] and again["dedup"]["status"] != "exact_duplicate", again["dedup"]
    with open_index(uri) as index:
        assert index.by_url(article) is not None  # the text is kept: its page's record is there


def backend_uri(tmp_path: Path, request: Any, backend: str, name: str) -> str:
    """The index a test runs against: ``local`` (a folder of ``tmp_path``) or ``es_emulated`` (an index ``name``-...
    on the emulator)."""
    if backend == "local":
        return f"local://{tmp_path / 'index'}"
    return f"{request.getfixturevalue('es_url')}/{name}-{tmp_path.name.lower()}"


def pipelines_crawl(uri: str, log: Path, *pages: tuple[str, str], **settings: Any
                    ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Items ``(url, html)`` through DedupPipeline and IndexPipeline in order, as one crawl's (no worker):
    url -> the item's verdict, ``"dropped"`` (logged as a copy) or ``"refetched"`` (fetched again, in the
    search index already); and the crawl's stats. ``settings``: more of the crawl's settings."""
    from scrapy.exceptions import DropItem
    from scrapy.utils.test import get_crawler

    from crawler.pipelines import DedupPipeline, DuplicateDropped, IndexPipeline

    crawler = get_crawler(settings_dict={"DEDUP_INDEX": uri, "DEDUP_DROPPED_LOG": str(log), "DEDUP_WORKERS": 0,
                                         **settings})
    dedup, store = DedupPipeline.from_crawler(crawler), IndexPipeline.from_crawler(crawler)
    dedup.open_spider(), store.open_spider()
    out: dict[str, Any] = {}
    try:
        for url, html in pages:
            try:
                out[url] = store.process_item(dedup.process_item({"url": url, "html": html}))["dedup"]
            except DuplicateDropped:
                out[url] = "dropped"
            except DropItem:
                out[url] = "refetched"
    finally:
        dedup.close_spider(), store.close_spider()
    return out, crawler.stats.get_stats()


@pytest.mark.parametrize("backend", ["local", "es_emulated"])
def test_a_kept_page_put_back_after_an_edit_leaves_its_copy_as_the_groups_kept_page(tmp_path, request, backend):
    """helper-21: a kept page M with a dropped exact copy A; M edited (A decided again: kept, flagged a copy of
    M); M put back (an exact copy of A now: dropped). Each named the other: A kept but flagged as a copy of a
    page no index holds, M dropped as a copy of A. A search that hides flagged copies lost the story. A is the
    group's kept page now, in the dedup index and in the search index."""
    from dedup.droplog import read_log

    story = ("The regional line will close for three weekends in spring while engineers replace the signals "
             "between the two market towns, the operator said on Monday. ") * 3
    edit = "A replacement bus will run every twenty minutes and tickets remain valid on it, a spokesperson added. "
    page = "<html><head><title>Line to close</title></head><body><article><p>{}</p></article></body></html>"
    mirror, article = "http://m.example/a4", "http://a.example/a4"
    uri = f"local://{tmp_path / 'index'}" if backend == "local" else request.getfixturevalue("es_index_uri")
    log = tmp_path / "dropped.jsonl"

    def crawl(*pages: tuple[str, str]) -> dict[str, str]:
        out, _ = pipelines_crawl(uri, log, *((url, page.format(text)) for url, text in pages))
        return {url: v if isinstance(v, str) else v["status"] for url, v in out.items()}

    assert crawl((mirror, story), (article, story)) == {mirror: "unique", article: "dropped"}
    day2 = crawl((mirror, story + edit * 3), (article, story))
    assert day2[article] == "refetched", day2  # decided again from its drop line when the mirror changed
    with open_index(uri) as index:
        assert index.by_url(article).status in ("duplicate", "near_duplicate")
    assert crawl((article, story), (mirror, story)) == {article: "refetched", mirror: "dropped"}
    with open_index(uri) as index:
        kept = index.by_url(article)
        assert index.by_url(mirror) is None and (kept.status, kept.duplicate_of) == ("unique", None)
    with open_search(uri, readonly=True) as search:
        doc = search.get(article)
        assert (doc["dedup"]["status"], doc["dedup"]["duplicate_of"], doc["dedup"]["rule"]) == (
            "unique", None, "regrouped"), doc["dedup"]
        assert search.get(mirror) is None
    last = read_log(log).entries
    assert {e.url: (e.state, e.duplicate_of) for e in last}[mirror] == ("dropped", article)


@pytest.mark.parametrize("backend", ["local", "es_emulated"])
def test_a_flagged_page_is_decided_again_once_the_page_it_names_has_other_text(tmp_path, request, backend):
    """A flagged copy C names its group's kept page M. M rewritten (another story at the same URL), C fetched
    again unchanged is decided again, not left naming a page that no longer holds its text: in the crawl that
    fetches it after M's change (the next one when it came first), in both indexes, counted."""


    story = LINE * 3
    other = BAKERY * 3
    page = ARTICLE
    main, copy = "http://m.example/line", "http://c.example/line"
    uri = backend_uri(tmp_path, request, backend, "flagged")

    def crawl(*pages: tuple[str, str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
        return pipelines_crawl(uri, tmp_path / "d.jsonl", *((url, page.format(t, text)) for url, t, text in pages))

    flagged = story.replace("Buses will replace trains.", "Replacement buses will run instead.", 1)
    day1, _ = crawl((main, "Line to close", story), (copy, "Line closes", flagged))
    assert day1[copy]["status"] in ("duplicate", "near_duplicate") and day1[copy]["duplicate_of"] == main
    day2, stats2 = crawl((copy, "Line closes", flagged), (main, "Bakery prize", other))  # the copy first
    assert day2[copy] == "refetched" and day2[main]["replaced"] and "dedup/root_changed" not in stats2
    day3, stats3 = crawl((copy, "Line closes", flagged), (main, "Bakery prize", other))
    assert day3[main] == "refetched" and stats3["dedup/root_changed"] == 1
    assert (day3[copy]["status"], day3[copy]["duplicate_of"]) == ("unique", None), day3[copy]
    assert day3[copy]["replaced"]["duplicate_of"] == main
    with open_index(uri) as index:
        assert index.by_url(copy).status == "unique"
    with open_search(uri, readonly=True) as search:
        assert search.get(copy)["dedup"]["status"] == "unique"
    day4, _ = crawl((copy, "Line closes", flagged), (main, "Bakery prize", other))
    assert day4 == {copy: "refetched", main: "refetched"}  # settled
    # the kept page edited by a sentence matches its flagged copy best: it stays its group's kept page (it was
    # flagged as a copy of its copy, which named it: a cycle, helper-23 and helper-24), in both indexes
    edited = other.replace("residents who want to learn.", "anyone in town who wants to learn to bake.", 1)
    day5, _ = crawl((main, "Bakery prize", edited), (copy, "Line closes", flagged))
    assert (day5[main]["status"], day5[main]["duplicate_of"]) == ("unique", None), day5[main]
    day6, _ = crawl((copy, "Bakery prize", other), (main, "Bakery prize", edited.replace("town", "the town")))
    assert day6[copy]["duplicate_of"] == main and day6[main]["rule"] == "group_root", day6
    with open_index(uri) as index:
        assert index.by_url(main).status == "unique" and index.by_url(copy).duplicate_of == main
    with open_search(uri, readonly=True) as search:
        assert (search.get(main)["dedup"]["status"], search.get(copy)["dedup"]["duplicate_of"]) == ("unique", main)


def test_a_restored_page_decided_again_with_new_text_leaves_the_restored_state(tmp_path, capsys):
    """helper-23: a page restored, then edited, is decided again (flagged); its log entry stayed `restored`
    with the old exact-copy verdict, so the report counted it twice (restored and flagged). The log gets a
    `kept` event, as for a dropped page kept when fetched again."""

    from dedup.cli import main
    from dedup.droplog import read_log

    story = LINE * 3
    page = "<html><head><title>Line to close</title></head><body><article><p>{}</p></article></body></html>"
    first, copy = "http://m.example/line", "http://c.example/line"
    uri, log = f"local://{tmp_path / 'index'}", tmp_path / "dropped.jsonl"

    def crawl(*pages: tuple[str, str]) -> dict[str, Any]:
        return pipelines_crawl(uri, log, *((url, page.format(text)) for url, text in pages))[0]

    assert crawl((first, story), (copy, story))[copy] == "dropped"
    assert main(["dropped", "restore", copy, "--index", uri, "--log", str(log)]) == 0
    assert read_log(log).get(copy).state == "restored"
    edited = story.replace("Buses will replace trains.", "Replacement buses will run instead.", 1)
    now = crawl((copy, edited))[copy]
    assert now["status"] in ("duplicate", "near_duplicate") and now["replaced"]["restored"], now
    entry = read_log(log).get(copy)
    assert entry.state == "kept", entry
    capsys.readouterr()


@pytest.mark.parametrize("backend", ["local", "es_emulated"])
def test_a_dropped_copy_whose_text_no_kept_page_holds_is_decided_again_from_its_drop_line(tmp_path, request,
                                                                                         backend):
    """helper-23: b and c dropped as exact copies of a; next crawl fetched b and c first (seen: a still held
    their text), then a with other text. Their text was in no index until they were fetched again. When a's
    older text leaves the index, its dropped copies are decided again from their drop lines: b kept (a
    ``kept`` event, its search document), c dropped again as b's copy (a ``dropped_again`` event naming b)."""
    from dedup.droplog import read_log

    story = LINE * 3
    other = BAKERY * 3
    page = ARTICLE
    a, b, c = "http://a.example/line", "http://b.example/line", "http://c.example/line"
    uri = backend_uri(tmp_path, request, backend, "orphans")
    log = tmp_path / "dropped.jsonl"
    first, _ = pipelines_crawl(uri, log, *((u, page.format("Line to close", story)) for u in (a, b, c)))
    assert (first[b], first[c]) == ("dropped", "dropped")
    second, stats = pipelines_crawl(uri, log, (b, page.format("Line to close", story)),
                                    (c, page.format("Line to close", story)), (a, page.format("Bakery prize", other)))
    assert second[b] == second[c] == "refetched" and second[a]["replaced"]  # seen, still held; then a changed
    assert stats["dedup/redecided_from_log"] == 2
    entries = {e.url: (e.state, e.duplicate_of) for e in read_log(log).entries}
    assert entries[b][0] == "kept" and entries[c] == ("dropped", b), entries
    with open_index(uri) as index:
        assert index.by_url(b).status == "unique" and index.by_url(c) is None
    with open_search(uri, readonly=True) as search:
        assert "regional line" in search.get(b)["text"] and search.get(b)["dedup"]["status"] == "unique"
    third, _ = pipelines_crawl(uri, log, *((u, page.format("Line to close", story)) for u in (b, c)))
    assert third == {b: "refetched", c: "refetched"}  # settled: b recorded, c seen (held by b)
    assert [e.seen for e in read_log(log).entries if e.url == c] == [1]


@pytest.mark.parametrize("backend", ["local", "es_emulated"])
def test_copies_of_a_rewritten_page_name_the_page_that_holds_their_text_now(tmp_path, request, backend):
    """helper-27: r kept, a flagged as its near copy, d dropped as an exact copy of a (its line names r, matched
    with a). r rewritten as another article: a, fetched again unchanged, is decided again (unique); d's drop line
    named r although a still holds d's text, and d was only marked seen. Now d is decided again: a
    ``dropped_again`` event names a (its page is in its drop line already: not logged twice). The next crawl, where
    nothing changed, marks it seen (no third line). Restored, d comes back with the text it was dropped for."""
    from dedup.cli import main
    from dedup.droplog import read_log

    story = LINE
    near = story * 3 + "The second site adds that the ticket office at the junction stays open on Saturdays. "
    other = BAKERY * 3
    page = ARTICLE
    r, a, d = "http://r.example/line", "http://a.example/line", "http://d.example/line"
    uri = backend_uri(tmp_path, request, backend, "rewritten")
    log = tmp_path / "dropped.jsonl"
    pages = [(r, page.format("Line to close", story * 3)), (a, page.format("Line to close", near)),
             (d, page.format("Line closes", near))]
    first, _ = pipelines_crawl(uri, log, *pages)
    assert first[a]["duplicate_of"] == r and first[d] == "dropped"
    assert (read_log(log).get(d).duplicate_of, read_log(log).get(d).nearest) == (r, a)
    pages[0] = (r, page.format("Bakery prize", other))
    size = log.stat().st_size
    second, stats = pipelines_crawl(uri, log, *pages)
    assert second[a]["status"] == "unique" and second[a]["replaced"]["root_changed"]
    assert second[d] == "dropped" and stats["dedup/exact_duplicate"] == 1
    added = log.read_bytes()[size:].decode().splitlines()
    assert [json.loads(x).get("event") for x in added] == ["dropped_again"], added
    dropped = read_log(log)
    entry = dropped.get(d)
    assert (entry.duplicate_of, entry.nearest, entry.drops) == (a, a, 2) and entry.verdict_line > entry.line
    line = dropped.line(entry)  # the drop line holding the page, with the verdict of the event
    assert line["verdict"]["duplicate_of"] == a and "junction stays open" in line["item"]["text"]
    third, _ = pipelines_crawl(uri, log, *pages)
    assert third == {r: "refetched", a: "refetched", d: "refetched"}
    entry = read_log(log).get(d)
    assert (entry.drops, entry.seen) == (2, 1)
    assert main(["dropped", "restore", d, "--index", uri, "--log", str(log)]) == 0
    assert read_log(log).get(d).state == "restored"
    with open_search(uri, readonly=True) as search:
        assert "junction stays open" in search.get(d)["text"]


@pytest.mark.parametrize("backend", ["local", "es_emulated"])
def test_a_dropped_copy_fetched_before_the_page_it_matched_is_decided_again_when_that_page_changes(tmp_path, request,
                                                                                                  backend):
    """With near copies dropped too: d dropped as a near copy of r. The next crawl fetches d first (the page it
    matched unchanged yet: dropped, named as before, seen), then r rewritten as another article: d is decided again
    from its drop line then (kept: unique), not left naming r until the next crawl."""
    from dedup.droplog import read_log

    near = LINE * 3 + "The second site adds that the ticket office at the junction stays open on Saturdays. "
    r, d = "http://r.example/line", "http://d.example/line"
    uri = backend_uri(tmp_path, request, backend, "order")
    log, drop = tmp_path / "dropped.jsonl", {"DEDUP_DROP": "exact_duplicate,duplicate,near_duplicate"}
    first, _ = pipelines_crawl(uri, log, (r, ARTICLE.format("Line to close", LINE * 3)),
                               (d, ARTICLE.format("Line closes", near)), **drop)
    assert first[d] == "dropped" and read_log(log).get(d).nearest == r
    second, stats = pipelines_crawl(uri, log, (d, ARTICLE.format("Line closes", near)),
                                    (r, ARTICLE.format("Bakery prize", BAKERY * 3)), **drop)
    assert second[d] == "refetched" and second[r]["replaced"] and stats["dedup/redecided_from_log"] == 1
    assert read_log(log).get(d).state == "kept"
    with open_search(uri, readonly=True) as search:
        assert search.get(d)["dedup"]["status"] == "unique"


def test_a_copy_of_a_copy_is_not_dropped_again_each_crawl_its_root_is_edited(tmp_path):
    """helper-31: r kept, a flagged as its near copy, d dropped as an exact copy of a (its line names r). Each crawl
    edits a word of r, then fetches r, a, d: d was decided again when r changed (a not yet decided again: its
    link to r stale), named a, then r again once a was still r's copy, two events a crawl. It is seen, once a crawl,
    its drop line as it was."""
    from dedup.droplog import read_log

    near = LINE * 3 + "The second site adds that the ticket office at the junction stays open on Saturdays. "
    r, a, d = "http://r.example/line", "http://a.example/line", "http://d.example/line"
    uri, log = f"local://{tmp_path / 'index'}", tmp_path / "dropped.jsonl"
    pipelines_crawl(uri, log, (r, ARTICLE.format("Line to close", LINE * 3)),
                    (a, ARTICLE.format("Line to close", near)), (d, ARTICLE.format("Line closes", near)))
    for n in (1, 2, 3):
        got, _ = pipelines_crawl(uri, log, (r, ARTICLE.format("Line to close", LINE * 3 + f"Update {n}.")),
                                 (a, ARTICLE.format("Line to close", near)), (d, ARTICLE.format("Line closes", near)))
        entry = read_log(log).get(d)
        assert got[d] == "refetched" and (entry.drops, entry.seen, entry.duplicate_of) == (1, n, r), (n, got, entry)
    assert '"dropped_again"' not in log.read_text(encoding="utf-8")


def test_a_replayed_page_its_record_holds_counts_as_fetched_again_not_kept(tmp_path):
    """helper-27, helper-28: a crawl resumed after a kill replays the items of its reclaimed requests; one whose
    record holds its text already (decided before the kill; its HTML around the text may differ) was counted in
    ``dedup/kept`` and ``dedup/unique`` again. It is counted as fetched again, and goes on with its record's verdict."""
    from scrapy.utils.test import get_crawler

    from crawler.pipelines import DedupPipeline
    from crawler.spool import REPLAY_KEY

    uri, log = f"local://{tmp_path / 'index'}", tmp_path / "dropped.jsonl"
    text = LINE * 3
    url = "http://a.example/line"
    first, _ = pipelines_crawl(uri, log, (url, f"<html><head><title>Line</title></head><body><p>{text}</p></body></html>"))
    assert first[url]["status"] == "unique"
    crawler = get_crawler(settings_dict={"DEDUP_INDEX": uri, "DEDUP_DROPPED_LOG": str(log), "DEDUP_WORKERS": 0})
    dedup = DedupPipeline.from_crawler(crawler)
    dedup.open_spider()
    try:
        html = f"<html><head><title>Line</title></head><body><nav>Home</nav><p>{text}</p></body></html>"
        item = dedup.process_item({"url": url, "html": html, "dedup": {REPLAY_KEY: "dedup"}})
    finally:
        dedup.close_spider()
    stats = crawler.stats.get_stats()
    assert item["dedup"]["status"] == "unique" and item["dedup"]["rule"] == "replay_of_recorded_page"
    assert stats.get("dedup/refetched") == 1 and not stats.get("dedup/kept") and not stats.get("dedup/unique")


def test_a_page_kept_by_a_killed_crawl_before_its_kept_event_gets_it_when_fetched_again(tmp_path):
    """helper-29: a page the dropped log holds as dropped, changed and kept by a crawl killed after its record was
    added and before the ``kept`` event was written: fetched again (replayed, or in the next crawl), its record
    holds it, and the log gets the event (it listed a kept page as dropped for good)."""
    from dedup.deduplicator import Deduplicator
    from dedup.droplog import read_log
    from dedup.page import parse_page
    from dedup.sources import Source
    from index import open_index

    uri, log = f"local://{tmp_path / 'index'}", tmp_path / "dropped.jsonl"
    text = LINE * 3
    other = BAKERY * 3
    page = "<html><head><title>{}</title></head><body><p>{}</p></body></html>"
    a, b = "http://a.example/line", "http://b.example/line"
    first, _ = pipelines_crawl(uri, log, (a, page.format("Line", text)), (b, page.format("Line", text)))
    assert first[b] == "dropped"
    changed = page.format("Bakery", other)
    with open_index(uri) as index:  # the killed crawl: b decided and recorded, no event written
        Deduplicator(index).process(parse_page(changed, b), body=Source(url=b, html=changed.encode()).body_key)
    assert read_log(log).get(b).state == "dropped"
    again, stats = pipelines_crawl(uri, log, (b, changed))
    assert again[b]["rule"] == "replay_of_recorded_page" and stats["dedup/refetched"] == 1  # stored: it was not
    assert read_log(log).get(b).state == "kept"
