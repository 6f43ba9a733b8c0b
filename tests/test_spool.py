"""The spool shared by crawls of one project folder (helper-24): each crawl claims whole files, never an entry
another replays too, and an entry goes to a crawl of the spider that spooled it."""
import json
import os

from crawler import spool as spool_module
from crawler.spool import Spool


def entry(url, spider=None):
    line = {"stage": "dedup", "time": "2026-12-07T00:00:00Z", "error": "away", "item": {"url": url, "html": "<p>x</p>"}}
    if spider:
        line["spider"] = spider
    return json.dumps(line) + "\n"


def urls(items):
    return sorted(item["url"] for item in items)


def test_crawls_sharing_a_spool_replay_each_entry_once_and_their_own(tmp_path, monkeypatch):
    path = tmp_path / "spool.jsonl"
    path.write_text(entry("http://a/1", "a") + entry("http://b/1", "b") + entry("http://old/1"), encoding="utf-8")
    first = Spool(path)
    assert urls(first.take("a")) == ["http://a/1", "http://old/1"]  # an entry of no spider: anyone's
    assert urls(json.loads(line)["item"] for line in path.read_text().splitlines()) == ["http://b/1"]
    # a second crawl starting while the first replays: the first's file is a running process's, not claimed
    monkeypatch.setattr(spool_module.os, "getpid", lambda: 4_000_000)
    second = Spool(path)
    assert urls(second.take("b")) == ["http://b/1"] and not path.exists()
    first.done(), second.done()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_replay_left_by_a_crawl_that_is_gone_is_replayed(tmp_path):
    path = tmp_path / "spool.jsonl"
    (tmp_path / "spool.jsonl.replaying.4000001").write_text(entry("http://a/1"), encoding="utf-8")  # no such pid
    (tmp_path / "spool.jsonl.replaying").write_text(entry("http://a/2"), encoding="utf-8")  # an earlier version's
    mine = Spool(path)
    (tmp_path / f"spool.jsonl.replaying.{os.getppid()}").write_text(entry("http://a/3"), encoding="utf-8")  # running
    assert urls(mine.take("a")) == ["http://a/1", "http://a/2"]
    mine.done()
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"spool.jsonl.replaying.{os.getppid()}"]


def test_an_entry_goes_to_a_crawl_of_its_spider_and_jobdir(tmp_path):
    """Two crawls of one spider in one folder, each with its own JOBDIR (helper-24: one crawl's pages went to
    the other's feed): each replays its own; a crawl without JOBDIR leaves a JOBDIR's entries to it."""
    path = tmp_path / "spool.jsonl"
    job_a, job_b = tmp_path / "job-a", tmp_path / "job-b"
    job_a.mkdir(), job_b.mkdir()
    path.write_text(entry("http://a/1", f"pages@{job_a}") + entry("http://b/1", f"pages@{job_b}")
                    + entry("http://c/1", "pages") + entry("http://d/1", "other")
                    + entry("http://e/1", f"pages@{tmp_path / 'gone'}"), encoding="utf-8")
    spool = Spool(path)
    # a JOBDIR that is gone will never be resumed: its entries go to any crawl of the spider
    assert urls(spool.take(f"pages@{job_a}")) == ["http://a/1", "http://c/1", "http://e/1"]
    spool.done()
    assert urls(Spool(path).take("pages")) == []  # b's JOBDIR entry and the other spider's stay spooled
    assert urls(Spool(path).take(f"pages@{job_b}")) == ["http://b/1"]
    assert urls(Spool(path).take("other")) == ["http://d/1"]
