"""Several ``scrapy crawl`` processes of a user's project (the README's ``ADDONS`` line) share one
frontier through scrapy-redis (crawler/frontier.py) and one Elasticsearch dedup index (the
noida-db emulator, or DEDUP_TEST_ES_URL): one copy per exact group, and no page lost when one
crawler is SIGKILLed mid-crawl.  Redis is the Debian package's ``redis-server``, started here on
127.0.0.1 on a free port and stopped by PID."""
from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import ALL_PATHS, EXACT, ROOT, clean_env, read_jsonl
from crawler.sample_site import manifest_key

sys.path.insert(0, str(ROOT / "benchmarks"))
import userproject  # noqa: E402  (benchmarks/ is not a package)

REDIS = shutil.which("redis-server")
pytestmark = [pytest.mark.crawl, pytest.mark.skipif(
    REDIS is None, reason="redis-server is not installed (Debian package redis-server; the Makefile's DEB_PACKAGES)")]
pytest.importorskip("scrapy_redis", reason="scrapy-redis is not installed: pip install -e '.[test]'")
import redis  # noqa: E402  (scrapy-redis's client)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def redis_url(tmp_path):
    port = free_port()
    proc = subprocess.Popen([REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    url = f"redis://127.0.0.1:{port}"
    client = redis.Redis.from_url(url)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"redis-server did not start on port {port}") from None
                time.sleep(0.05)
        yield url
    finally:
        client.close()
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def crawler(project: Path, site_url: str, redis_url: str, es_uri: str, out: Path, *settings: str) -> subprocess.Popen:
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "scrapy", "crawl", "news", "-a", f"start_url={site_url}",
           "-s", f"DEDUP_INDEX={es_uri}", "-s", f"DEDUP_DROPPED_LOG={out / 'dropped.jsonl'}",
           # the scrapy-redis settings of docs/reliability.md
           "-s", "SCHEDULER=crawler.frontier.ReliableScheduler", "-s", "SCHEDULER_PERSIST=True",
           "-s", "DUPEFILTER_CLASS=scrapy_redis.dupefilter.RFPDupeFilter", "-s", f"REDIS_URL={redis_url}",
           "-s", "SCHEDULER_HEARTBEAT=1", "-s", "LOG_LEVEL=INFO", "-s", "CONCURRENT_REQUESTS=4", *settings]
    env = {**clean_env(), "PYTHONPATH": str(ROOT)}
    with open(out / "crawl.log", "w") as log:  # the child keeps its own descriptor
        return subprocess.Popen(cmd, cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=log,
                                start_new_session=True)


def kept_paths(es_uri: str) -> list[str]:
    from index import open_search

    search = open_search(es_uri, readonly=True)
    try:
        return [manifest_key(d["url"]) for d in search.iter_docs()]
    finally:
        search.close()


def decided(es_uri: str) -> int:
    """Pages recorded in the shared dedup index (``NAME-dedup``) so far."""
    from index.elastic import connect, dedup_name

    es, name = connect(es_uri, retry_seconds=5)
    try:
        if not es.client.indices.exists(index=dedup_name(name)):
            return 0
        return int(es.client.count(index=dedup_name(name))["count"])
    finally:
        es.close()


def test_crawlers_share_a_frontier_and_lose_nothing_when_one_is_killed(site_url, es_url, redis_url, tmp_path):
    """The two ways the killed crawler's pages were lost (issue 19), each made certain here rather than left
    to timing: the victim runs with the default heartbeat (a 15 s lease), so the survivor empties the queue
    long before the lease expires and must wait for it instead of finishing; and the victim is killed once it
    has decided pages, whose kept documents are still in its search index's bulk buffer, unsent."""
    project = userproject.write(tmp_path / "project")
    es_uri = f"{es_url}/shared-{tmp_path.name.lower()}"
    outs = [tmp_path / "a", tmp_path / "b"]
    # a slow crawler (a delay per request) that is killed while it holds requests in flight
    victim = crawler(project, site_url, redis_url, es_uri, outs[0], "-s", "DOWNLOAD_DELAY=0.4",
                     "-s", "SCHEDULER_HEARTBEAT=5")
    client = redis.Redis.from_url(redis_url)
    try:
        deadline = time.monotonic() + 120
        held = 0
        while time.monotonic() < deadline and victim.poll() is None:
            lists = client.keys("news:requests:processing:*")
            held = sum(client.llen(k) for k in lists)
            if held and decided(es_uri) >= 3:
                break
            time.sleep(0.1)
        assert victim.poll() is None and held, (outs[0] / "crawl.log").read_text()[-3000:]
        survivor = crawler(project, site_url, redis_url, es_uri, outs[1])
        time.sleep(0.5)
        victim.send_signal(signal.SIGKILL)  # mid-crawl, requests in its processing list
        victim.wait(timeout=10)
        assert survivor.wait(timeout=300) == 0, (outs[1] / "crawl.log").read_text()[-3000:]
        assert not [k for k in client.keys("news:requests:processing:*") if client.llen(k)]
    finally:
        for proc in (victim,):
            if proc.poll() is None:
                proc.kill()
        client.close()
    log = (outs[1] / "crawl.log").read_text()
    assert "stopped answering" in log and "frontier/reclaimed" in log  # the victim's requests came back
    kept = kept_paths(es_uri)
    dropped = [manifest_key(d["url"]) for out in outs for d in read_jsonl(out / "dropped.jsonl")]
    assert len(kept) == len(set(kept))
    assert sorted(set(kept) | set(dropped)) == ALL_PATHS  # no page lost
    for group in EXACT:  # one copy per exact group across the two crawlers
        assert len(set(group["paths"]) & set(kept)) == 1, group["name"]
    assert not set(kept) & set(dropped)


def test_reliable_scheduler_refuses_a_queue_that_the_first_crawler_would_clear(redis_url):
    from scrapy.settings import Settings

    from crawler.frontier import ReliableScheduler

    base = {"REDIS_URL": redis_url, "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter"}
    with pytest.raises(ValueError, match="SCHEDULER_PERSIST must be True"):
        ReliableScheduler.from_settings(Settings(base))
    with pytest.raises(ValueError, match="DUPEFILTER_CLASS must be scrapy_redis.dupefilter.RFPDupeFilter"):
        ReliableScheduler.from_settings(Settings({**base, "SCHEDULER_PERSIST": True, "DUPEFILTER_CLASS": None}))
    with pytest.raises(ValueError, match="SCHEDULER_HEARTBEAT must be > 0"):
        ReliableScheduler.from_settings(Settings({**base, "SCHEDULER_PERSIST": True, "SCHEDULER_HEARTBEAT": 0}))


# -- the frontier's rules against the real redis-server, with crawlers made by hand ------------------------

class BufferedSearch:
    """A search index that, like Elasticsearch's, buffers added documents until flushed."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.pending: list[str] = []

    @property
    def buffered(self) -> int:
        return len(self.pending)

    def add(self, doc) -> None:
        self.pending.append(doc["url"])

    def flush(self) -> None:
        self.sent += self.pending
        self.pending = []

    def close(self) -> None:
        pass


class NoLoop:
    """Stands for the heartbeat's looping call (no reactor runs here): the tests beat by hand."""

    running = False

    def __init__(self, *_, **__) -> None:
        pass

    def start(self, *_, **__) -> None:
        pass


@pytest.fixture
def no_reactor(monkeypatch):
    import scrapy.utils.asyncio

    monkeypatch.setattr(scrapy.utils.asyncio, "create_looping_call", NoLoop)


def open_scheduler(redis_url: str):
    """A ReliableScheduler of spider ``news``, opened (heartbeat 1 s, lease 3 s), and its crawler."""
    from scrapy import Spider
    from scrapy.utils.test import get_crawler

    from crawler.frontier import ReliableScheduler

    settings = {"SCHEDULER": "crawler.frontier.ReliableScheduler", "SCHEDULER_PERSIST": True,
                "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter", "REDIS_URL": redis_url,
                "SCHEDULER_HEARTBEAT": 1}
    crawler = get_crawler(Spider, settings)
    spider = Spider.from_crawler(crawler, name="news")
    crawler.spider = spider
    # an engine with nothing downloading or scraping: what the scheduler holds is done once released
    crawler.engine = SimpleNamespace(downloader=SimpleNamespace(active=set()),
                                     scraper=SimpleNamespace(slot=SimpleNamespace(is_idle=lambda: True)))
    scheduler = ReliableScheduler.from_crawler(crawler)
    scheduler.open(spider)
    return scheduler, crawler


def fetch_and_scrape(scheduler, crawler, *, dropped: bool = False):
    """Pop the next request and go through what the engine does with it: one item, through the pipelines
    (``item_scraped``, or ``item_dropped``), then the callback's output ends."""
    from scrapy import signals
    from scrapy.http import HtmlResponse

    from crawler.frontier import TOKEN, item_yielded, output_done

    request = scheduler.next_request()
    token = request.meta[TOKEN]
    response = HtmlResponse(request.url, body=b"<html></html>", request=request)
    item = {"url": request.url, "title": "t", "text": "x", "fetched_at": None, "dedup": {"status": "unique"}}
    crawler.signals.send_catch_log(item_yielded, token=token)
    if dropped:
        crawler.signals.send_catch_log(signals.item_dropped, item=item, response=response, exception=None,
                                       spider=crawler.spider)
    else:
        yield_item = yield item  # the test runs the pipeline here
        crawler.signals.send_catch_log(signals.item_scraped, item=yield_item or item, response=response,
                                       spider=crawler.spider)
    crawler.signals.send_catch_log(output_done, token=token)


def test_a_survivor_waits_for_a_dead_crawlers_lease_to_expire_and_crawls_what_it_held(redis_url, no_reactor):
    """The cause of the lost section pages in CI: the survivor emptied the queue and finished while the
    killed crawler's lease had not expired yet, leaving the killed crawler's requests in its processing
    list (the check named the other crawlers' lists with their ids as bytes, ``...:processing:b'ID'``:
    never a list).  A fake dead crawler: listed, holding two requests, its lease running out."""
    from scrapy import Request

    client = redis.Redis.from_url(redis_url)
    survivor, _ = open_scheduler(redis_url)
    try:
        dead = "otherhost:4242:deadbeef"
        held = [survivor.queue._encode_request(Request(f"http://127.0.0.1:1/section/{n}.html")) for n in "ab"]
        client.sadd("news:requests:crawlers", dead)
        client.rpush(f"news:requests:processing:{dead}", *held)
        client.set(f"news:requests:alive:{dead}", "1", px=1500)  # killed: its last lease runs out
        assert len(survivor.queue) == 0
        assert survivor.has_pending_requests()  # the queue is empty, but it must not finish
        assert client.llen(f"news:requests:processing:{dead}") == 2
        while client.exists(f"news:requests:alive:{dead}"):
            time.sleep(0.05)
        assert survivor.has_pending_requests()  # reclaimed: in the queue now
        assert len(survivor.queue) == 2 and not client.exists(f"news:requests:processing:{dead}")
        assert dead.encode() not in client.smembers("news:requests:crawlers")
        got = {survivor.next_request().url, survivor.next_request().url}
        assert got == {"http://127.0.0.1:1/section/a.html", "http://127.0.0.1:1/section/b.html"}
        assert survivor.next_request() is None
        assert not survivor.has_pending_requests()  # idle, and nobody else holds anything: it may finish
        assert client.llen(survivor.processing) == 0
    finally:
        survivor.close("finished")
        client.close()


def test_a_request_whose_page_waits_in_the_bulk_buffer_is_not_released_before_the_buffer_is_sent(redis_url, no_reactor):
    """The cause of the pages lost by a killed crawler: a page's request was released once its item left
    the pipelines, while the search index (Elasticsearch: bulk writes of 100) still held its document in
    memory; SIGKILL lost both. Now the request stays in the processing list until the buffer is sent,
    and a dead crawler's lease expiring gives it back to the others."""
    from scrapy import Request

    from crawler.pipelines import IndexPipeline

    client = redis.Redis.from_url(redis_url)
    victim, crawler_a = open_scheduler(redis_url)
    survivor, _ = open_scheduler(redis_url)
    try:
        pipeline = IndexPipeline.from_crawler(crawler_a)
        pipeline.search = BufferedSearch()
        for path in ("/section/business.html", "/section/schools.html", "/dropped.html"):
            victim.enqueue_request(Request(f"http://127.0.0.1:1{path}"))
        for _ in range(2):  # two kept pages: their documents are buffered
            steps = fetch_and_scrape(victim, crawler_a)
            item = next(steps)
            pipeline.process_item(item)
            next(steps, None)
        list(fetch_and_scrape(victim, crawler_a, dropped=True))  # in the dropped log at once: released
        assert pipeline.search.pending and not pipeline.search.sent
        assert client.llen(victim.processing) == 2  # not released: a kill now must not lose them
        assert survivor.has_pending_requests()  # the survivor waits for them (the victim's lease is live)
        assert survivor.reclaim() == 0
        client.delete(victim._key("alive", victim.id))  # the victim is SIGKILLed: its lease expires
        assert survivor.reclaim() == 2 and len(survivor.queue) == 2  # both come back, to be crawled again
        assert victim.id.encode() not in client.smembers("news:requests:crawlers")

        # the same without the kill: sending the buffer releases them
        pipeline.search = BufferedSearch()  # the killed process's buffer died with it
        victim._beat()
        for _ in range(2):
            steps = fetch_and_scrape(victim, crawler_a)
            pipeline.process_item(next(steps))
            next(steps, None)
        assert client.llen(victim.processing) == 2
        pipeline.flush()
        assert client.llen(victim.processing) == 0 and len(pipeline.search.sent) == 2
    finally:
        victim.close("shutdown")
        survivor.close("shutdown")
        client.close()


def test_a_crawler_unlisted_while_silent_lists_itself_again_so_its_later_requests_are_reclaimed(redis_url, no_reactor):
    """A crawler silent for longer than its lease (a stalled process under load) is reclaimed and unlisted
    by the others; it goes on and pops more requests. Its next pop renews its lease and lists it again,
    so when it is killed later, what it then holds still comes back (before: held by an unlisted crawler,
    invisible to every survivor, lost)."""
    from scrapy import Request

    client = redis.Redis.from_url(redis_url)
    slow, crawler_a = open_scheduler(redis_url)
    other, _ = open_scheduler(redis_url)
    try:
        for n in range(3):
            slow.enqueue_request(Request(f"http://127.0.0.1:1/page{n}.html"))
        slow.next_request()
        client.delete(slow._key("alive", slow.id))  # silent for 3 heartbeats
        assert other.reclaim() == 1  # given back to the queue, and unlisted
        assert slow.id.encode() not in client.smembers("news:requests:crawlers")
        slow.next_request()  # it was only slow: it pops again
        assert slow.id.encode() in client.smembers("news:requests:crawlers")
        assert client.pttl(slow._key("alive", slow.id)) > 0
        assert other.reclaim() == 0  # its lease is live again
        client.delete(slow._key("alive", slow.id))  # now it is killed
        assert other.reclaim() == 1
        assert client.llen(slow.processing) == 0 and len(other.queue) == 3
    finally:
        slow.close("shutdown")
        other.close("shutdown")
        client.close()
