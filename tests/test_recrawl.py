"""A crawler's life: a user's own project (a spider yielding ``{"url", "html"}``, the README's ADDONS line)
crawls one loopback site three times into one index, with pages edited, added and removed between the
crawls. One URL keeps one record; an edited page replaces its record (never a copy of itself); a recrawl of
unchanged pages writes nothing and logs no drop twice; the search index holds the latest text; every
``duplicate_of`` names a kept page that is not itself a copy."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from conftest import ROOT, clean_env, read_jsonl
from crawler.sample_site import PAGES_DIR, spawn, terminate
from dedup.droplog import read_log
from index import open_index, open_search

sys.path.insert(0, str(ROOT / "benchmarks"))
import userproject  # noqa: E402

pytestmark = pytest.mark.crawl

EDITED = ["articles/robotics-team.html", "articles/mill-makerspace.html"]
ADDED = "articles/new-bakery-hours.html"
REMOVED = "articles/observatory-night.html"
ADDED_TEXT = ("The bakery on Mill Street will open an hour earlier from next month, its owner said, so that "
              "commuters catching the first ferry can buy fresh bread before they leave the harbour.")


def add_sentence(path, sentence):
    """Append ``sentence`` to the longest paragraph of the page at ``path``."""
    html = path.read_text(encoding="utf-8")
    paragraphs = re.findall(r"<p>(.*?)</p>", html, flags=re.S)
    longest = max(paragraphs, key=len)
    path.write_text(html.replace(f"<p>{longest}</p>", f"<p>{longest} {sentence}</p>", 1), encoding="utf-8")


def stat(log, name):
    found = re.search(r"'%s': (\d+)" % re.escape(name), log)
    return int(found.group(1)) if found else 0


def all_records(uri):
    """Every record of the dedup index at ``uri`` (embedded or Elasticsearch)."""
    idx = open_index(uri)
    try:
        if hasattr(idx, "iter_records"):
            return list(idx.iter_records())
        from dedup.record import Record

        idx.flush()
        hits = idx.es.client.search(index=idx.name, size=10_000, query={"match_all": {}})["hits"]["hits"]
        return [Record.from_dict(h["_source"]) for h in hits]
    finally:
        idx.close()


def records_by_url(uri):
    records = all_records(uri)
    return Counter(r.url for r in records), {r.url: r for r in records}


class Runs(list):
    """Each crawl's outputs, and the dropped log they share (``dropped_log``)."""

    dropped_log: Path


@pytest.fixture(scope="module", params=["local", "es_emulated"])
def life(request, tmp_path_factory):
    """Three crawls of one site into one index (embedded, or Elasticsearch: the emulator, or a real cluster
    with DEDUP_TEST_ES_URL): the site as shipped; two pages edited, one added, one removed; nothing
    changed. Returns the site's URL, the index URI and each crawl's (stderr, items, dropped log, records)."""
    base = tmp_path_factory.mktemp("recrawl")
    site = base / "site"
    shutil.copytree(PAGES_DIR, site)
    project = userproject.write(base / "project")
    if request.param == "local":
        index = f"local://{base / 'index'}"
    else:
        index = f"{request.getfixturevalue('es_url')}/recrawl-{base.name.lower()}"
    log = base / "dropped.jsonl"
    env = {**clean_env(), "PYTHONPATH": str(ROOT)}
    proc, url = spawn(env=clean_env(), root=site)
    runs = Runs()
    runs.dropped_log = log

    def crawl(n):
        items = base / f"items{n}.jsonl"
        done = subprocess.run([sys.executable, "-m", "scrapy", "crawl", "news", "-a", f"start_url={url}",
                               "-s", f"DEDUP_INDEX={index}", "-s", f"DEDUP_DROPPED_LOG={log}",
                               "-s", "LOG_LEVEL=INFO", "-O", str(items)],
                              cwd=project, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        runs.append((done.stderr, read_jsonl(items), read_jsonl(log), records_by_url(index)))

    try:
        crawl(1)
        for page in EDITED:
            add_sentence(site / page, "A late addition: the council confirmed the figures on Thursday evening.")
        new_page = (site / "articles" / "library-roof.html").read_text(encoding="utf-8")
        paragraphs = re.findall(r"<p>(.*?)</p>", new_page, flags=re.S)
        new_page = new_page.replace(f"<p>{max(paragraphs, key=len)}</p>", f"<p>{ADDED_TEXT}</p>", 1)
        for p in paragraphs:
            if p != max(paragraphs, key=len):
                new_page = new_page.replace(f"<p>{p}</p>", "", 1)
        (site / ADDED).write_text(new_page.replace("<title>", "<title>Bakery hours - "), encoding="utf-8")
        index_html = site / "index.html"
        index_html.write_text(index_html.read_text(encoding="utf-8").replace(
            "</body>", f'<a href="/{ADDED}">Bakery hours</a></body>'), encoding="utf-8")
        (site / REMOVED).unlink()
        crawl(2)
        crawl(3)
    finally:
        terminate(proc)
    return url, index, runs


def test_one_url_one_record_whatever_the_number_of_crawls(life):
    url, index, runs = life
    for _, _, _, (counts, _) in runs:
        assert max(counts.values()) == 1, [u for u, n in counts.items() if n > 1]
    first, second, third = (r[3][0] for r in runs)
    assert set(second) == set(first) | {url + ADDED}  # the added page; the removed one keeps its record
    assert third == second


def test_an_edited_page_is_an_update_not_a_copy_of_itself(life):
    url, index, runs = life
    log, items, _, (_, records) = runs[1]
    by_url = {i["url"]: i["dedup"] for i in items}
    for page in EDITED:
        verdict = by_url[url + page]
        assert verdict["duplicate_of"] != url + page and verdict["status"] == "unique", verdict
        assert verdict["replaced"] and verdict["replaced"]["status"] == "unique"
        before, after = runs[0][3][1][url + page], records[url + page]
        assert after.content_hash != before.content_hash  # the one record now holds the new text
    assert stat(log, "dedup/updated") == len(EDITED)
    unchanged = set(records) - {url + page for page in EDITED} - {url + ADDED}
    assert all(records[u].content_hash == runs[0][3][1][u].content_hash for u in unchanged)
    assert not any(v["duplicate_of"] == u for u, v in by_url.items())
    with open_search(index, readonly=True) as search:
        for page in EDITED:
            assert "A late addition" in search.get(url + page)["text"]
        assert ADDED_TEXT.split(",")[0] in search.get(url + ADDED)["text"]


def test_a_recrawl_of_unchanged_pages_writes_and_logs_nothing_again(life):
    url, index, runs = life
    first_drops = [line for line in runs[0][2] if "event" not in line]
    assert first_drops, "the sample site has exact copies: the first crawl drops some"
    for log, items, dropped, _ in runs[1:]:
        drops = [line for line in dropped if "event" not in line]
        assert len(drops) == len(first_drops)  # no page dropped twice
        assert stat(log, "dedup/dropped") == 0
    log3, items3, dropped3, _ = runs[2]
    assert stat(log3, "dedup/updated") == 0 and stat(log3, "dedup/kept") == 0
    fetched = stat(log3, "response_received_count") - stat(log3, "downloader/response_status_count/404")  # removed
    assert fetched and stat(log3, "dedup/refetched") == fetched
    assert items3 == []  # every page is in the search index already
    # each later crawl marks every dropped page seen again, in batched lines of drop-line offsets (no URL)
    marks = [line["lines"] for line in dropped3 if line.get("event") == "seen"]
    assert marks and all("url" not in line for line in dropped3 if line.get("event") == "seen")
    assert sum(map(len, marks)) == 2 * len(first_drops) and all(len(set(m)) == len(m) for m in marks)
    seen = {e.url: e.seen for e in read_log(runs.dropped_log).entries}
    assert seen == {line["url"]: 2 for line in first_drops}  # seen again once in each later crawl


def test_duplicate_of_names_a_kept_page_that_is_not_itself_a_copy(life):
    url, index, runs = life
    _, records = runs[2][3]
    flagged = [r for r in records.values() if r.status != "unique"]
    assert flagged, "the sample site has near-copies"
    for record in flagged:
        root = records.get(record.duplicate_of)
        assert root is not None and root.status == "unique", (record.url, record.duplicate_of)
    for line in runs[0][2]:
        if "event" not in line:
            root = records.get(line["verdict"]["duplicate_of"])
            assert root is not None and root.status == "unique", line["url"]
