"""Issue 15 items 1 and 2: the request journal's parts, and an honest end when work is lost."""
from __future__ import annotations

import sqlite3

import pytest
from scrapy import Request

from crawler.journal import _SCHEMA, JOURNAL_FILE, FlushingDupeFilter


def test_dupefilter_writes_requests_seen_through(tmp_path):
    """A SIGKILL must not forget what was seen: the file holds every fingerprint at once."""
    df = FlushingDupeFilter(str(tmp_path))
    try:
        assert not df.request_seen(Request("http://a.example/1"))
        assert not df.is_seen(Request("http://a.example/2"))
        assert df.is_seen(Request("http://a.example/1"))
        assert not df.is_seen(Request("http://a.example/1", dont_filter=True))
        size = (tmp_path / "requests.seen").stat().st_size
        assert size > 0  # on disk before close, not in a buffer
        again = FlushingDupeFilter(str(tmp_path))  # what a restarted crawl reads
        assert again.request_seen(Request("http://a.example/1"))
        again.close("finished")
    finally:
        df.close("finished")


@pytest.mark.crawl
def test_a_run_that_cannot_recover_a_request_says_so_and_exits_non_zero(site_url, crawl, tmp_path):
    """A killed run left a request the journal could not serialise (a lambda callback): the next
    run lists it, ends with finish reason finished_incomplete and exit status 1."""
    job = tmp_path / "job"
    job.mkdir()
    db = sqlite3.connect(job / JOURNAL_FILE)
    db.executescript(_SCHEMA)
    db.execute("INSERT INTO state VALUES ('created', 'x')")
    db.execute("INSERT INTO requests (url, data) VALUES (?, NULL)", (site_url + "lost.html",))
    db.commit()
    db.close()
    result = crawl(site_url, tmp_path, f"JOBDIR={job}")
    assert result.returncode == 1, result.log[-3000:]
    assert f"cannot replay {site_url}lost.html" in result.log
    assert "'finish_reason': 'finished_incomplete'" in result.log
    assert "This crawl is incomplete" in result.log and "dedup/journal/lost" in result.log
    assert result.items  # the rest of the crawl ran


@pytest.mark.crawl
def test_a_complete_run_with_jobdir_exits_zero_and_leaves_an_empty_journal(site_url, crawl, tmp_path):
    job = tmp_path / "job"
    result = crawl(site_url, tmp_path, f"JOBDIR={job}")
    assert result.returncode == 0, result.log[-3000:]
    assert "'finish_reason': 'finished'" in result.log
    db = sqlite3.connect(job / JOURNAL_FILE)
    assert db.execute("SELECT count(*) FROM requests").fetchone()[0] == 0
    db.close()


@pytest.mark.crawl
def test_a_jobdir_killed_without_the_journal_is_reported_as_incomplete(site_url, crawl, tmp_path):
    """The issue's own case: a JOBDIR crawl killed while Scrapy alone kept its state (here: the
    journal switched off) loses the requests it had queued; the next run says so and exits 1."""
    import os
    import signal
    import subprocess
    import time

    from conftest import ROOT, clean_env, crawl_command

    job = tmp_path / "job"
    no_journal = '{"crawler.journal.RequestJournal": null}'
    cmd = crawl_command(site_url, tmp_path, f"JOBDIR={job}", f"EXTENSIONS={no_journal}", "DOWNLOAD_DELAY=0.2")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=clean_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        seen = job / "requests.seen"
        while (not seen.exists() or seen.stat().st_size < 200) and time.monotonic() < deadline:
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert not (job / JOURNAL_FILE).exists()
    result = crawl(site_url, tmp_path, f"JOBDIR={job}")
    assert result.returncode == 1, result.log[-3000:]
    assert "was left by a killed crawl that had no request journal" in result.log
    assert "'finish_reason': 'finished_incomplete'" in result.log


def test_a_resumed_run_counts_as_decided_only_pages_the_killed_run_dropped_by_a_drop_line(tmp_path):
    """helper-31: the resumed run skips the replayed items of pages the killed run dropped (their drop lines after
    its start). An event is no such decision: a page decided from its drop line (``dropped_again``, ``kept``) when
    another page changed may not have been fetched by that run; its replayed item is decided, not skipped."""
    from crawler.journal import RequestJournal
    from dedup.droplog import KEPT, DropLogWriter

    log = tmp_path / "dropped.jsonl"
    writer = DropLogWriter(log)
    d = writer.write({"status": "exact_duplicate", "duplicate_of": "http://r/"}, {"url": "http://d/", "text": "t"})
    writer.close()
    journal = RequestJournal(tmp_path / "journal.sqlite", dropped_log=log)
    journal.db = sqlite3.connect(":memory:", isolation_level=None)
    journal.db.execute("CREATE TABLE state (key TEXT PRIMARY KEY, value TEXT)")
    journal._note_dropped_log(False)  # the run that is then killed starts here
    writer = DropLogWriter(log)
    writer.write({"status": "exact_duplicate", "duplicate_of": "http://r/"}, {"url": "http://e/", "text": "e"})
    writer.again("http://d/", d, {"status": "exact_duplicate", "duplicate_of": "http://a/"})
    writer.event(KEPT, "http://f/", status="unique")
    writer.close()
    journal._note_dropped_log(True)  # the resumed run
    assert journal.dropped_last_run == {"http://e/"}
