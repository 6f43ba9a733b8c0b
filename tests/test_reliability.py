"""Issues 8 and 15: a JOBDIR crawl SIGKILLed (more than once) and resumed loses nothing and
records nothing twice, for the project's spider and for a user's own with the add-on; a second
crawl on the same embedded index is refused at start; the soak script runs."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ALL_PATHS, MANIFEST, ROOT, clean_env, crawl_command, read_jsonl, run_crawl
from crawler.sample_site import manifest_key
from index.local import LocalIndex



def _records(index: Path) -> int:
    db = index / "dedup.sqlite"
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
        try:
            return con.execute("SELECT count(*) FROM records").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


@pytest.mark.crawl
def test_sigkill_twice_then_resume_every_page_once_for_a_users_spider(tmp_path):
    """Issue 15 item 1, short form of reliability/kill_resume.py: a user's own project with the
    add-on, a generated site of ~300 pages, SIGKILL twice at random points with 8 requests in
    flight, then the same command: every page in the index or the dropped log exactly once, and
    each resumed run says how many requests it recovered."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import sitegen
    from crawler.sample_site import serve, stop
    from reliability.kill_resume import kill_and_resume, site_urls

    sitegen.generate(tmp_path / "site", 300, seed=7)
    server, base = serve(directory=tmp_path / "site")
    try:
        report = kill_and_resume(base, site_urls(tmp_path / "site", base), tmp_path / "crawl", kills=2, seed=3,
                                 timeout=300)
    finally:
        stop(server)
    assert report["kills"] == 2, report
    assert report["ok"], report["problems"]
    assert report["missing"] == 0 and report["recorded_twice"] == 0
    assert all(run["recovered"] for run in report["runs"][1:]), report["runs"]


@pytest.mark.crawl
def test_sigkill_site_spider_then_resume_and_second_crawl_refused(site_url, tmp_path):
    """The project's own ``site`` spider: killed after 10 records and resumed, nothing lost, none
    kept twice; meanwhile a second crawl on the same embedded index is refused at start."""
    out = tmp_path / "crawl"
    index = out / "index"
    job = f"JOBDIR={out / 'job'}"
    cmd = crawl_command(site_url, out, job, "DOWNLOAD_DELAY=0.3", items="items1.jsonl")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=clean_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while _records(index) < 10 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert proc.poll() is None, "the crawl ended before it could be killed"
        second = run_crawl(site_url, tmp_path / "second", index=index, timeout=60)
        assert second.returncode != 0 or "'finish_reason'" not in second.log
        assert "in use by another process" in second.log and "Elasticsearch" in second.log, second.log[-2000:]
        # refused in one line before the crawl starts, not through a traceback out of the pipelines
        assert second.returncode == 1 and "Traceback" not in second.log and "Spider opened" not in second.log, \
            second.log[-3000:]
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    rest = run_crawl(site_url, out, job, items="items2.jsonl", timeout=120)
    assert rest.returncode == 0, rest.log[-3000:]
    assert "'finish_reason': 'finished'" in rest.log
    assert "'dedup/journal/recovered'" in rest.log
    assert "dedup/errors" not in rest.log

    with LocalIndex(index) as ix:  # reopens after the kill; derived tables rebuilt and checked
        report = ix.check(sample=None, sqlite_integrity=True)
        assert report["ok"], report
        kept = [manifest_key(r.url) for r in ix.iter_records()]
    dropped_paths = [manifest_key(d["url"]) for d in read_jsonl(out / "dropped.jsonl")]
    assert len(kept) == len(set(kept))
    # every page exactly once: in the index or in the dropped log
    assert sorted(kept + dropped_paths) == ALL_PATHS
    for group in (g for g in MANIFEST["groups"] if g["kind"] == "exact"):
        assert len(set(group["paths"]) & set(kept)) == 1, group["name"]


def test_soak_script_runs(tmp_path):
    out = tmp_path / "soak.json"
    proc = subprocess.run([sys.executable, "-m", "reliability.soak", "--pages", "200", "--every", "50",
                           "--out", str(out)], cwd=ROOT, env=clean_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["pages"] == 200 and len(report["samples"]) == 4
    assert report["statuses"]["exact_duplicate"] >= 75  # half the pages are copies
    assert {"rss_kib", "open_files", "threads", "pages", "seconds"} <= set(report["samples"][0])
    assert "RSS" in proc.stdout
