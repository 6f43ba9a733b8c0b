"""``scrapy crawl site`` into Elasticsearch: the noida-db emulator of the Elasticsearch API in CI
(a real cluster with DEDUP_TEST_ES_URL; tests/es_server.py).  The same ground truth as the
embedded-index crawl (crawler/sample_site/expected.json), two crawlers sharing one index, and
an outage: the server killed mid-crawl, the items spooled, and the next crawl replaying them."""
from __future__ import annotations

import re
import subprocess
import time
from collections import Counter

import pytest

from conftest import ALL_PATHS, EXACT, MANIFEST, NEAR, ROOT, by_path, clean_env, crawl_command, read_jsonl
from crawler.sample_site import manifest_key
from index import open_index, open_search

pytestmark = pytest.mark.crawl

def check_ground_truth(kept: dict[str, dict], dropped: dict[str, dict]) -> None:
    assert not set(kept) & set(dropped)
    assert sorted(set(kept) | set(dropped)) == ALL_PATHS
    for group in EXACT:
        members = set(group["paths"])
        assert len(members & set(kept)) == 1, group["name"]
        for path in members - set(kept):
            assert dropped[path]["status"] == "exact_duplicate"
            assert manifest_key(dropped[path]["duplicate_of"]) in members
    for group in NEAR:
        statuses = Counter(kept[p]["status"] for p in group["paths"])
        assert statuses["unique"] == 1, group["name"]
    for path in MANIFEST["unique"]:
        assert kept[path]["status"] == "unique", path


def outcome(uri: str, dropped_log) -> tuple[dict[str, dict], dict[str, dict]]:
    """manifest path -> verdict of the pages in the search index at ``uri``, and of those in the dropped log."""
    search = open_search(uri, readonly=True)
    try:
        indexed = {manifest_key(d["url"]): d["dedup"] for d in search.iter_docs()}
    finally:
        search.close()
    return indexed, by_path(read_jsonl(dropped_log))


@pytest.fixture(scope="module")
def es_crawl(site_url, es_url, crawl, tmp_path_factory):
    out = tmp_path_factory.mktemp("es-crawl")
    uri = f"{es_url}/crawl-{out.name.lower()}"
    result = crawl(site_url, out, index_uri=uri)
    assert result.returncode == 0, result.log[-3000:]
    return uri, result


def test_crawl_into_elasticsearch_emulated_matches_ground_truth(es_crawl):
    uri, result = es_crawl
    kept, dropped = by_path(result.items), by_path(result.dropped)
    check_ground_truth(kept, dropped)
    assert "dedup/errors" not in result.log and "dedup/spooled" not in result.log


def test_elasticsearch_emulated_holds_kept_pages_with_flags(es_crawl):
    uri, result = es_crawl
    kept = by_path(result.items)
    search = open_search(uri, readonly=True)
    try:
        docs = {manifest_key(d["url"]): d for d in search.iter_docs()}
        assert {p: d["dedup"]["status"] for p, d in docs.items()} == {p: v["status"] for p, v in kept.items()}
        flagged = [d for d in docs.values() if d["dedup"]["status"] != "unique"]
        assert flagged and all(d["dedup"]["duplicate_of"] for d in flagged)
        hit = search.search(docs[MANIFEST["unique"][0]]["title"], limit=3)
        assert hit and hit[0]["url"].endswith(MANIFEST["unique"][0])
    finally:
        search.close()
    index = open_index(uri)
    try:
        assert len(index) == len(kept)
    finally:
        index.close()


def test_two_crawlers_share_one_elasticsearch_emulated_index(site_url, es_url, tmp_path):
    """Both crawl every page at once; across both, exactly one copy of each exact group is kept."""
    uri = f"{es_url}/shared-{tmp_path.name.lower()}"
    procs, outs = [], []
    for n in (1, 2):
        out = tmp_path / f"crawler{n}"
        cmd = crawl_command(site_url, out, "CONCURRENT_REQUESTS=4", index_uri=uri)
        procs.append(subprocess.Popen(cmd, cwd=ROOT, env=clean_env(), stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
        outs.append(out)
    logs = [p.communicate(timeout=180)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], "\n".join(log[-2000:] for log in logs)
    # a page found recorded under its URL by the other crawler is the same page, not a copy of itself: not
    # logged, counted in dedup/refetched, and exported (with its record's verdict) only when this crawler
    # wrote it to the search index (the other's document still in its bulk buffer)
    items = [by_path(read_jsonl(o / "items.jsonl")) for o in outs]
    kept = [{p: v for p, v in i.items() if v["rule"] != "replay_of_recorded_page"} for i in items]
    dropped = [by_path(read_jsonl(o / "dropped.jsonl")) for o in outs]
    for k, d, other, log in zip(kept, dropped, kept[::-1], logs):
        # each crawler saw every page once: kept, dropped, or found recorded by the other crawler
        assert not set(k) & set(d)
        refetched = set(ALL_PATHS) - set(k) - set(d)
        assert refetched <= set(other), sorted(refetched - set(other))
        assert re.search(r"'dedup/refetched': %d\b" % len(refetched), log) if refetched else \
            "dedup/refetched" not in log
        assert all(manifest_key(v["duplicate_of"]) != p for p, v in d.items())
    for group in EXACT:
        copies = [p for k in kept for p in group["paths"] if p in k]
        assert len(copies) == 1, (group["name"], copies)
    from index.elastic.search import scan

    index = open_index(uri)
    try:
        hashes = Counter(hit["_source"]["content_hash"] for hit, _ in scan(index.es, index.name,
                                                                          source=["content_hash"]))
        assert sum(hashes.values()) == len(index) == sum(len(k) for k in kept)  # one record per kept page
        assert max(hashes.values()) == 1  # no content recorded twice
    finally:
        index.close()


def test_outage_mid_crawl_spools_and_the_next_crawl_replays(site_url, crawl, tmp_path):
    """The Elasticsearch (emulator) server stops mid-crawl: the crawl retries, stops saying so and
    spools what it could not write; with the server back, the resumed crawl (JOBDIR) replays the
    spool.  Every page ends kept once in the index or in the dropped log; none lost, none twice."""
    from elasticsearch import Elasticsearch
    from es_server import Emulator

    server = Emulator(tmp_path / "es-data")
    url = server.start()
    uri = f"{url}/outage"
    out = tmp_path / "crawl"
    settings = ("DEDUP_ES_OPTIONS={\"retry_seconds\": 3}", f"JOBDIR={out / 'job'}", "DOWNLOAD_DELAY=0.25")
    cmd = crawl_command(site_url, out, *settings, index_uri=uri, items="items1.jsonl")
    try:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
        client = Elasticsearch(url)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None:
            if client.indices.exists(index="outage-dedup") and client.count(index="outage-dedup")["count"] >= 8:
                break
            time.sleep(0.1)
        client.close()
        server.stop()  # the outage
        log1 = proc.communicate(timeout=120)[0]
        # issue 15 item 2: a run that left items undecided says so and exits non-zero
        assert proc.returncode == 1, log1[-3000:]
        assert "'finish_reason': 'dedup_index_unavailable'" in log1, log1[-3000:]
        assert "This crawl is incomplete" in log1 and "dedup/spooled" in log1
        assert "is unavailable" in log1 and "spool.jsonl" in log1
        spooled = read_jsonl(out / "spool.jsonl")
        assert spooled, log1[-3000:]

        server.start()  # the cluster is back
        second = crawl(site_url, out, *settings, index_uri=uri, items="items2.jsonl")
        assert second.returncode == 0, second.log[-3000:]
        assert "Resuming crawl" in second.log and "Replaying items spooled" in second.log
        assert "'finish_reason': 'finished'" in second.log
        assert not (out / "spool.jsonl").exists() and not list(out.glob("spool.jsonl.replaying*"))

        indexed, dropped = outcome(uri, out / "dropped.jsonl")
        check_ground_truth(indexed, dropped)  # every page once: kept in the index or dropped
        index = open_index(uri)
        try:
            assert len(index) == len(indexed)
        finally:
            index.close()
    finally:
        server.stop()


def test_sigkill_with_kept_pages_in_the_bulk_buffer_loses_none(site_url, es_url, es_index_uri, crawl, tmp_path):
    """A JOBDIR crawl into Elasticsearch (emulator) SIGKILLed while kept pages wait in the search index's
    bulk buffer (100 documents): their records were in NAME-dedup, their requests done, and the resumed
    crawl never wrote them to NAME (48 of 371 kept pages of a generated site were missing from search).
    Every page must end once in the search index or the dropped log, every record with its document."""
    import os
    import signal

    from elasticsearch import Elasticsearch

    out = tmp_path / "crawl"
    name = es_index_uri.rsplit("/", 1)[1]
    settings = (f"JOBDIR={out / 'job'}", "DOWNLOAD_DELAY=0.1")
    cmd = crawl_command(site_url, out, *settings, index_uri=es_index_uri, items="items1.jsonl")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=clean_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = Elasticsearch(es_url)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None:
            if client.indices.exists(index=f"{name}-dedup"):
                client.indices.refresh(index=f"{name}-dedup")
                if client.count(index=f"{name}-dedup")["count"] >= 10:
                    break
            time.sleep(0.05)
        assert proc.poll() is None, "the crawl ended before the kill"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        client.close()
    second = crawl(site_url, out, *settings, index_uri=es_index_uri, items="items2.jsonl")
    assert second.returncode == 0, second.log[-3000:]
    assert "undecided request(s) of the previous run scheduled again" in second.log

    indexed, dropped = outcome(es_index_uri, out / "dropped.jsonl")
    from elasticsearch import helpers

    client = Elasticsearch(es_url)
    try:
        client.indices.refresh(index=f"{name}-dedup")
        recorded = Counter(manifest_key(h["_source"]["url"]) for h in helpers.scan(client, index=f"{name}-dedup"))
    finally:
        client.close()
    assert sorted(p for p, n in recorded.items() if n > 1) == []
    assert sorted(set(recorded) - set(indexed)) == []  # every kept page searchable
    check_ground_truth(indexed, dropped)  # every page once: kept in the index or dropped


def test_a_cluster_away_at_start_is_one_line(site_url, crawl, tmp_path):
    """No cluster answers at the URI: the crawl is refused before it starts, in one line naming the cluster
    and what failed, exit 1 (it was a traceback out of the pipelines' open_spider after the spider started)."""
    import socket

    with socket.socket() as s:  # a free port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = crawl(site_url, tmp_path, 'DEDUP_ES_OPTIONS={"retry_seconds": 1}',
                   index_uri=f"http://127.0.0.1:{port}/pages", timeout=60)
    assert result.returncode == 1, result.log[-3000:]
    assert "Traceback" not in result.log and "Spider opened" not in result.log, result.log[-3000:]
    assert f"scrapy-dedup: Elasticsearch at http://127.0.0.1:{port} failed to reach the cluster" in result.log


@pytest.mark.parametrize("name", ["Pages", "", "pages/extra"])
def test_an_index_name_elasticsearch_refuses_is_one_line(site_url, crawl, tmp_path, name):
    """helper-24: an upper-case index name, none, or a path after it: the crawl ended in two tracebacks out
    of open_spider; it is refused before it starts in the one line the dedup commands print."""
    result = crawl(site_url, tmp_path, index_uri=f"http://127.0.0.1:9/{name}", timeout=60)
    assert result.returncode == 1, result.log[-3000:]
    assert "Traceback" not in result.log and "Spider opened" not in result.log, result.log[-3000:]
    assert "scrapy-dedup: " in result.log and ("index name" in result.log), result.log[-2000:]
