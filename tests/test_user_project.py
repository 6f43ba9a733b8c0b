"""A user's own Scrapy project, outside this repository's packages: a spider that yields only
``{"url", "html"}`` and the README's ``ADDONS`` line, crawled end to end over the loopback sample
site with ``scrapy crawl``; then ``dedup search`` finds the kept pages by their text and every
dropped page is restored with ``dedup dropped restore``."""
from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

from conftest import ALL_PATHS, ROOT, clean_env, read_jsonl
from crawler.sample_site import load_expected, manifest_key

sys.path.insert(0, str(ROOT / "benchmarks"))
import userproject  # noqa: E402  (benchmarks/ is not a package: bench_crawl.py crawls the same project)

pytestmark = pytest.mark.crawl


def closed_port_url() -> str:
    """``http://127.0.0.1:PORT/`` of a port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/"


def run(cmd, cwd, timeout=300):
    env = {**clean_env(), "PYTHONPATH": str(ROOT)}  # the add-on comes from this tree, the project from cwd
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def project(site_url, tmp_path_factory):
    root = userproject.write(tmp_path_factory.mktemp("userproj") / "newsbot-project")
    index = root.parent / "index"
    proc = run([sys.executable, "-m", "scrapy", "crawl", "news", "-a", f"start_url={site_url}",
                "-s", f"DEDUP_INDEX=local://{index}", "-s", "CONCURRENT_REQUESTS=2",
                "-O", str(root.parent / "items.jsonl")], cwd=root)  # Scrapy's default LOG_LEVEL, DEBUG
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "crawler.pipelines.DedupPipeline" in proc.stderr and "'dedup/dropped':" in proc.stderr
    (root.parent / "crawl.log").write_text(proc.stderr, encoding="utf-8")
    return root, f"local://{index}", index / "dropped.jsonl", read_jsonl(root.parent / "items.jsonl")


def dedup(*argv, cwd=ROOT):
    return run([sys.executable, "-m", "dedup.cli", *map(str, argv)], cwd=cwd)


def test_every_page_is_kept_or_dropped_and_kept_items_carry_their_text(project):
    root, uri, log, items = project
    dropped = read_jsonl(log)
    assert sorted({manifest_key(i["url"]) for i in items} | {manifest_key(d["url"]) for d in dropped}) == ALL_PATHS
    articles = [i for i in items if "/articles/" in i["url"]]
    assert articles and all(i["text"] and i["title"] for i in articles)


def test_a_part_marked_not_for_indexing_is_left_out_in_a_users_crawl(project):
    """The sample site's mirror ends each story with an appeal between ``<!--googleoff: index-->`` and
    ``<!--googleon: index-->`` (tests/test_sample_site.py): left out, the mirror's pages are exact copies of
    the originals, whichever of them the user's spider fetched first."""
    root, uri, log, items = project
    verdicts = {manifest_key(i["url"]): i["dedup"] for i in items}
    verdicts.update({manifest_key(d["url"]): d["verdict"] for d in read_jsonl(log) if "verdict" in d})
    groups = [g for g in load_expected()["groups"] if any(p.startswith("/mirror/") for p in g["paths"])]
    assert len(groups) == 2
    for group in groups:
        mirror = next(p for p in group["paths"] if p.startswith("/mirror/"))
        cut = verdicts[mirror]["scores"]["truncated"]["unindexed"]
        assert cut[1] < cut[0]
        # one kept page of the story, every other fetch of it (the mirror's too) an exact copy
        statuses = sorted(verdicts[p]["status"] for p in group["paths"])
        assert statuses == ["exact_duplicate"] * (len(statuses) - 1) + ["unique"], (group["name"], statuses)


def test_the_raw_html_is_neither_exported_nor_logged(project):
    """Issue 30 item 2: the spider's ``html`` was exported (25 MB for 281 pages) and printed in every DEBUG
    "Scraped from" line; it is parsed, then left out (DEDUP_KEEP_HTML keeps it)."""
    root, uri, log, items = project
    assert items and all(set(i) == {"url", "title", "text", "dedup"} for i in items), items[0].keys()
    stderr = (root.parent / "crawl.log").read_text(encoding="utf-8")
    scraped = [line for line in stderr.splitlines() if "Scraped from" in line]
    assert scraped and "<html" not in stderr.lower()


def test_kept_pages_are_searchable_by_their_text(project):
    root, uri, log, items = project
    item = next(i for i in items if "/articles/" in i["url"])
    words = " ".join(item["text"].split()[3:9])
    proc = dedup("search", words, "--index", uri, "--json")
    assert proc.returncode == 0, proc.stderr
    hits = json.loads(proc.stdout)
    assert item["url"] in [h["url"] for h in hits]
    assert next(h for h in hits if h["url"] == item["url"])["snippet"]


def test_every_dropped_page_restores_from_a_compact_log(project):
    root, uri, log, items = project
    dropped = read_jsonl(log)
    assert dropped
    for line in dropped:  # what restore needs, without the raw HTML and without the verdict twice
        assert "html" not in line["item"] and "dedup" not in line["item"] and line["item"]["text"]
        # the index's absolute path (a pytest temporary folder, longer on some machines) is not counted
        sized = {k: v for k, v in line.items() if k != "index"}
        assert len(json.dumps(sized)) < 3 * len(json.dumps(next(i for i in items if i["url"] ==
                                                                line["verdict"]["duplicate_of"])))
    proc = subprocess.run([sys.executable, "-m", "dedup.cli", "dropped", "restore", "-", "--index", uri, "--log",
                           str(log), "--json"], input="\n".join(d["url"] for d in dropped), cwd=ROOT,
                          env={**clean_env(), "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    assert [r["outcome"] for r in results] == ["restored"] * len({d["url"] for d in dropped})
    assert {r["index"] for r in results} == {uri}
    for line in dropped[:3]:
        words = " ".join(line["item"]["text"].split()[2:8])
        hits = json.loads(dedup("search", words, "--index", uri, "--json", "--limit", "50").stdout)
        assert line["url"] in [h["url"] for h in hits]


def test_no_page_is_both_kept_and_dropped(project):
    """Scrapy fetches a start URL again when a page links to it (start requests skip the dupefilter):
    the second fetch is the same page, not a copy of itself, so it is neither dropped nor logged."""
    root, uri, log, items = project
    dropped = [line for line in read_jsonl(log) if "verdict" in line]  # not the restore test's events
    assert [d["url"] for d in dropped if d["verdict"]["duplicate_of"] == d["url"]] == []
    assert {i["url"] for i in items} & {d["url"] for d in dropped} == set()


def test_a_spiders_own_held_index_is_refused_in_one_line(tmp_path):
    """The spider names its index in custom_settings (Scrapy applies them after the add-on's early check):
    a crawl on it while another process holds it is refused in one line, the project's index untouched;
    a command-line -s DEDUP_INDEX still wins over the spider's."""
    from index.local import LocalIndex

    root = userproject.write(tmp_path / "newsbot-project")
    spider = root / "newsbot" / "spiders" / "news.py"
    held = tmp_path / "held"
    spider.write_text(spider.read_text().replace(
        '    allowed_domains = ["127.0.0.1"]\n',
        f'    allowed_domains = ["127.0.0.1"]\n    custom_settings = {{"DEDUP_INDEX": "local://{held}"}}\n'))
    holder = LocalIndex(held)
    try:
        # a closed port: the crawl, if it started, would end at once
        proc = run([sys.executable, "-m", "scrapy", "crawl", "news", "-a", "start_url=http://127.0.0.1:9/"], cwd=root,
                   timeout=120)
        assert proc.returncode == 1, proc.stderr[-3000:]
        assert "in use by another process" in proc.stderr and str(held) in proc.stderr
        assert "Traceback" not in proc.stderr and "Spider opened" not in proc.stderr, proc.stderr[-3000:]
        free = tmp_path / "free"
        proc = run([sys.executable, "-m", "scrapy", "crawl", "news", "-a", "start_url=http://127.0.0.1:9/",
                    "-s", f"DEDUP_INDEX=local://{free}"], cwd=root, timeout=120)
        assert "in use by another process" not in proc.stderr and "Spider opened" in proc.stderr, proc.stderr[-3000:]
        assert (free / "lock").exists() or free.is_dir()
    finally:
        holder.close()


def test_a_start_url_that_refuses_connections_fails_the_crawl(tmp_path):
    """Issue 30 item 1: ~240 lines of tracebacks, exit 0 and ``finish_reason: finished`` with an empty index.
    Now: each download error in one line, exit status 1, and the last line names the URL and the reason."""
    root = userproject.write(tmp_path / "newsbot-project")
    url = closed_port_url()
    proc = run([sys.executable, "-m", "scrapy", "crawl", "news", "-a", f"start_url={url}",
                "-s", f"DEDUP_INDEX=local://{tmp_path / 'index'}"], cwd=root, timeout=120)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "The above exception" not in proc.stderr, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert url in last and "refused" in last.lower() and "no page was fetched" in last.lower(), last
    assert "'finish_reason': 'finished'" not in proc.stderr and "'finish_reason': 'no_page_fetched'" in proc.stderr


def test_a_misspelt_setting_stops_the_crawl_before_anything_is_written(site_url, tmp_path):
    """Issue 30 item 3: ``-s DEDUP_INDX=...`` warned (outside the log) and the crawl filled ./.dedup. A name
    close to a known one stops the crawl with one line, which the log file gets too; an unknown name with no
    close one is a warning in Scrapy's log."""
    root = userproject.write(tmp_path / "newsbot-project")
    logfile = tmp_path / "crawl.log"
    proc = run([sys.executable, "-m", "scrapy", "crawl", "news", "-a", f"start_url={site_url}",
                "-s", f"DEDUP_INDX=local://{tmp_path / 'x'}", "-s", f"LOG_FILE={logfile}",
                "-O", str(tmp_path / "items.jsonl")], cwd=root, timeout=120)
    assert proc.returncode == 1, proc.stderr[-3000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "DEDUP_INDX" in lines[0] and "did you mean DEDUP_INDEX?" in lines[0], proc.stderr
    assert "DEDUP_INDX" in logfile.read_text() and "did you mean DEDUP_INDEX?" in logfile.read_text()
    assert not (root / ".dedup").exists() and not (tmp_path / "x").exists()
    assert not (tmp_path / "items.jsonl").exists()

    proc = run([sys.executable, "-m", "scrapy", "crawl", "news", "-a", f"start_url={closed_port_url()}",
                "-s", "DEDUP_ZZZ=1", "-s", f"DEDUP_INDEX=local://{tmp_path / 'index'}", "-s", f"LOG_FILE={logfile}",
                "-s", "RETRY_TIMES=0"], cwd=root, timeout=120)
    assert "Spider opened" in logfile.read_text()
    warning = next(line for line in logfile.read_text().splitlines() if "DEDUP_ZZZ" in line)
    assert "WARNING" in warning and "DEDUP_INDEX" in warning, warning
    assert "DEDUP_ZZZ" not in proc.stderr


def test_links_outside_allowed_domains_leave_no_journal_row_and_are_never_fetched(tmp_path):
    """A user-seat finding: Scrapy's offsite filter ignores a link in a ``request_scheduled`` handler, after the
    request journal had written its row; the row outlived every run ("keeps 6 undecided request(s)") and the
    next run of the job replayed it with ``dont_filter``, past the offsite filter: the crawl left
    ``allowed_domains``. Rows an older version left are ignored, not fetched."""
    import pickle
    import sqlite3

    from scrapy import Request

    from crawler.journal import JOURNAL_FILE
    from crawler.sample_site import serve, stop

    site = tmp_path / "site"
    site.mkdir()
    server, url = serve(directory=site)  # 127.0.0.1, a free port; the same server answers as localhost
    offsite = url.replace("127.0.0.1", "localhost")
    words = "harbour bridge ship crane tide dock ferry quay sail mast rope anchor wave gull pier".split()
    for n in range(1, 4):
        text = " ".join(words[(n * k) % len(words)] for k in range(200))
        (site / f"p{n}.html").write_text(
            f"<html><head><title>Page {n}</title></head><body><h1>Page {n}</h1><p>{text}</p>"
            f'<a href="p{n % 3 + 1}.html">next</a> <a href="{offsite}off{n}.html">elsewhere</a></body></html>')
        (site / f"off{n}.html").write_text(f"<html><body><p>off {n} {text}</p></body></html>")
    root = userproject.write(tmp_path / "newsbot-project")
    job = tmp_path / "job"
    crawl = [sys.executable, "-m", "scrapy", "crawl", "news", "-a", f"start_url={url}p1.html",
             "-s", f"JOBDIR={job}", "-s", f"DEDUP_INDEX=local://{tmp_path / 'index'}"]
    try:
        first = run(crawl, cwd=root, timeout=120)
        assert first.returncode == 0, first.stderr[-3000:]
        assert "'offsite/filtered':" in first.stderr and "'item_scraped_count': 3" in first.stderr, first.stderr[-3000:]
        db = sqlite3.connect(job / JOURNAL_FILE)
        assert db.execute("SELECT count(*) FROM requests").fetchone()[0] == 0
        assert "undecided" not in first.stderr
        # a row as the older journal wrote it for a filtered link
        db.execute("INSERT INTO requests (url, data) VALUES (?, ?)",
                   (f"{offsite}off1.html", pickle.dumps(Request(f"{offsite}off1.html").to_dict(), protocol=4)))
        db.commit()
        db.close()
        second = run(crawl, cwd=root, timeout=120)
        assert second.returncode == 0, second.stderr[-3000:]
        assert "'dedup/journal/ignored': 1" in second.stderr and "1 ignored" in second.stderr, second.stderr[-3000:]
        fetched = [line for line in second.stderr.splitlines() if "Crawled (" in line and f"<GET {offsite}" in line]
        assert not fetched, fetched
        db = sqlite3.connect(job / JOURNAL_FILE)
        assert db.execute("SELECT count(*) FROM requests").fetchone()[0] == 0
        db.close()
    finally:
        stop(server)


def _run_until(cmd: list[str], cwd, seen, more: int, stop) -> None:
    """Start ``cmd``, wait until its JOBDIR's ``seen`` (``requests.seen``, written through) has grown by ``more``
    bytes (a fingerprint takes 22 in Scrapy 2.19's file, 41 in older ones), then ``stop(pid)``."""
    import time

    def size() -> int:
        return seen.stat().st_size if seen.exists() else 0

    before = size()
    env = {**clean_env(), "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None and size() < before + more:
            time.sleep(0.02)
        assert proc.poll() is None, "the crawl ended before it could be stopped"
        stop(proc.pid)
    finally:
        proc.wait(timeout=60)


def test_a_run_after_two_kills_finishes_with_an_empty_journal(site_url, tmp_path):
    """A user-seat finding (10 of 10 trials on a generated site): SIGKILL, run again, Ctrl-C twice (a forced
    shutdown) or SIGKILL, run again to the end: the finished run kept its start request's row ("keeps 1
    undecided request(s)") and never fetched it. Scrapy writes its disk queues' state only when it closes,
    and its FIFO start-request queue left without that state is read from its first record: the new run
    popped the dead runs' records in place of its own. The journal now removes the queue that a run which
    did not close left (its rows recover what the queue held). Two SIGKILLs: the second SIGINT of a forced
    shutdown races Scrapy's own close."""
    import os
    import signal
    import sqlite3

    from crawler.journal import JOURNAL_FILE

    root = userproject.write(tmp_path / "newsbot-project")
    job = tmp_path / "job"
    crawl = [sys.executable, "-m", "scrapy", "crawl", "news", "-a", f"start_url={site_url}",
             "-s", f"JOBDIR={job}", "-s", f"DEDUP_INDEX=local://{tmp_path / 'index'}", "-s", "DOWNLOAD_DELAY=0.1"]
    _run_until(crawl, root, job / "requests.seen", 150, lambda pid: os.kill(pid, signal.SIGKILL))
    _run_until(crawl, root, job / "requests.seen", 60, lambda pid: os.kill(pid, signal.SIGKILL))
    last = run(crawl + ["-s", "DOWNLOAD_DELAY=0"], cwd=root, timeout=120)
    assert last.returncode == 0, last.stderr[-3000:]
    assert "undecided request(s) for the next run" not in last.stderr, last.stderr[-3000:]
    assert "Scrapy's request queue it left was removed" in last.stderr
    # the start request a row scheduled again is not fetched a second time as the run's own start request
    assert last.stderr.count(f"<GET {site_url}> (referer: None)") == 1, last.stderr[-3000:]
    db = sqlite3.connect(job / JOURNAL_FILE)
    try:
        assert db.execute("SELECT url FROM requests").fetchall() == []
        assert db.execute("SELECT value FROM state WHERE key = 'run'").fetchone() == ("closed",)
    finally:
        db.close()
    index = sqlite3.connect(tmp_path / "index" / "dedup.sqlite")  # nothing lost: every page kept or dropped
    try:
        kept = {manifest_key(url) for (url,) in index.execute("SELECT url FROM records")}
    finally:
        index.close()
    dropped = {manifest_key(d["url"]) for d in read_jsonl(tmp_path / "index" / "dropped.jsonl")}
    assert sorted(kept | dropped) == ALL_PATHS
