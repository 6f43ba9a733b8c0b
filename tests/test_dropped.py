"""``dedup dropped list | stats | show | restore`` on dropped logs written by real crawls of the
sample site (loopback), and :mod:`dedup.droplog` on hand-broken copies of them."""
from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from conftest import ALL_PATHS, MANIFEST
from crawler.sample_site import manifest_key
from dedup import droplog
from dedup.cli import main, summary
from dedup.cli.restore import restore
from dedup.store import MemoryIndex
from index import open_index, open_search

CRAWL = pytest.mark.crawl

EXACT_PATHS = {p for g in MANIFEST["groups"] if g["kind"] == "exact" for p in g["paths"]}
NEAR_PATHS = {p for g in MANIFEST["groups"] if g["kind"] == "near" for p in g["paths"]}
DROP = "DEDUP_DROP=exact_duplicate,duplicate"  # near copies flagged "duplicate" are dropped too: two rules


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    for name in ("DEDUP_INDEX", "DEDUP_DROPPED_LOG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "250")  # human tables: no URL cut short


def dedup(capsys, *argv: str) -> tuple[int, str, str]:
    """Run the ``dedup`` CLI in this process: ``(exit code, stdout, stderr)``."""
    capsys.readouterr()
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def dedup_json(capsys, *argv: str):
    code, out, err = dedup(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def log_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# -- crawls ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def first(site_url, crawl, tmp_path_factory):
    """A crawl that drops exact copies (rule content_hash) and near copies scored >= t1
    (rule containment>=t1); its output is read only: tests that write use :func:`work`."""
    result = crawl(site_url, tmp_path_factory.mktemp("dropped"), DROP)
    assert result.returncode == 0, result.log[-3000:]
    assert result.dropped
    return result


@pytest.fixture
def work(first, tmp_path):
    """A private copy of the crawl's index and dropped log: ``(log, index URI, index dir)``."""
    out = tmp_path / "crawl"
    shutil.copytree(first.index, out / "index")
    # the log names the index its pages were dropped from: the copy's, as if the crawl had written it
    text = first.dropped_log.read_text(encoding="utf-8")
    (out / "dropped.jsonl").write_text(text.replace(f'"local://{first.index}"', f'"local://{out / "index"}"'),
                                       encoding="utf-8")
    return out / "dropped.jsonl", f"local://{out / 'index'}", out / "index"


@pytest.fixture(scope="module")
def recrawled(site_url, crawl, first, tmp_path_factory):
    """The same site crawled again into a copy of the first index, appending to a copy of its
    log: nothing changed, so every page is fetched again (``dedup/refetched``), the kept ones are their
    own records and the dropped ones are not logged a second time."""
    out = tmp_path_factory.mktemp("recrawled")
    shutil.copytree(first.index, out / "index")
    shutil.copy(first.dropped_log, out / "dropped.jsonl")
    result = crawl(site_url, out, DROP)
    assert result.returncode == 0, result.log[-3000:]
    return result


def args(log: Path, uri: str | None = None) -> list[str]:
    return ["--log", str(log)] + (["--index", uri] if uri else [])


# -- list -----------------------------------------------------------------------------------------
@CRAWL
def test_list_json_is_the_crawl_s_dropped_log(first, capsys):
    rows = dedup_json(capsys, "dropped", "list", *args(first.dropped_log))
    logged = {d["url"]: d for d in first.dropped}
    assert [r["url"] for r in rows] == [d["url"] for d in first.dropped]  # log order
    assert len(rows) == len(logged)
    for row in rows:
        verdict = logged[row["url"]]["verdict"]
        assert row["state"] == "dropped" and row["restored_at"] is None and row["drops"] == 1
        assert (row["status"], row["rule"], row["duplicate_of"]) == \
            (verdict["status"], verdict["rule"], verdict["duplicate_of"])
        assert row["host"] == row["url"].split("/")[2]
        if row["rule"] == "content_hash":
            assert manifest_key(row["url"]) in EXACT_PATHS and row["score"] == 1.0
        else:
            assert manifest_key(row["url"]) in NEAR_PATHS
            assert row["score"] == verdict["scores"]["containment"] >= verdict["thresholds"]["t1"]
    assert {r["rule"] for r in rows} == {"content_hash", "containment>=t1"}
    with_verdicts = dedup_json(capsys, "dropped", "list", *args(first.dropped_log), "--verdicts")
    assert [r["verdict"] for r in with_verdicts] == [d["verdict"] for d in first.dropped]


@CRAWL
def test_list_filters(first, capsys):
    log = first.dropped
    base = ["dropped", "list", *args(first.dropped_log)]

    def urls(*extra: str) -> set[str]:
        return {r["url"] for r in dedup_json(capsys, *base, *extra)}

    def expect(pred) -> set[str]:
        return {d["url"] for d in log if pred(d["verdict"], d)}

    exact = expect(lambda v, d: v["rule"] == "content_hash")
    near = expect(lambda v, d: v["rule"] == "containment>=t1")
    assert exact and near and exact | near == {d["url"] for d in log}
    assert urls("--rule", "content_hash") == exact
    assert urls("--rule", "containment>=t1") == near
    assert urls("--rule", "content_hash,containment>=t1") == urls("--rule", "content_hash", "--rule",
                                                                   "containment>=t1") == exact | near
    assert urls("--status", "duplicate") == near
    assert urls("--status", "exact_duplicate", "--rule", "containment>=t1") == set()
    host = log[0]["url"].split("/")[2]
    assert urls("--host", host) == urls("--host", "127.0.0.1") == exact | near
    assert urls("--host", "example.org") == set()
    # scores: containment of the verdict; content_hash drops count as 1.0
    scores = sorted(d["verdict"]["scores"]["containment"] for d in log if d["url"] in near)
    lo, hi = scores[0], scores[-1]
    assert urls("--min-score", str(lo), "--max-score", str(hi)) == near
    assert urls("--max-score", "0.99") == expect(lambda v, d: v["scores"].get("containment", 1.0) <= 0.99)
    assert urls("--min-score", "1") == exact
    mid = scores[len(scores) // 2]
    assert urls("--min-score", str(mid), "--rule", "containment>=t1") == \
        expect(lambda v, d: v["rule"] == "containment>=t1" and v["scores"]["containment"] >= mid)
    # time: ISO dates (a date --until includes its whole day) and date-times
    times = sorted(datetime.fromisoformat(d["time"].replace("Z", "+00:00")) for d in log)
    day = times[0].date()
    assert urls("--since", day.isoformat(), "--until", times[-1].date().isoformat()) == exact | near
    assert urls("--since", (times[-1].date() + timedelta(days=1)).isoformat()) == set()
    assert urls("--until", (day - timedelta(days=1)).isoformat()) == set()
    cut = times[len(times) // 2]
    assert urls("--since", cut.isoformat()) == \
        expect(lambda v, d: datetime.fromisoformat(d["time"].replace("Z", "+00:00")) >= cut)
    assert urls("--until", cut.isoformat().replace("+00:00", "Z")) == \
        expect(lambda v, d: datetime.fromisoformat(d["time"].replace("Z", "+00:00")) <= cut)
    assert len(dedup_json(capsys, *base, "--limit", "3")) == 3


@CRAWL
def test_list_table_and_argument_errors(first, capsys):
    code, out, err = dedup(capsys, "dropped", "list", *args(first.dropped_log))
    assert code == 0 and not err
    lines = out.splitlines()
    assert lines[0].split() == ["time", "(UTC)", "status", "rule", "score", "url"]
    for d in first.dropped:
        row = next(line for line in lines if line.rstrip().endswith(d["url"]))
        assert d["verdict"]["status"] in row and d["verdict"]["rule"] in row
        assert d["time"][:19].replace("T", " ") in row
    assert any(f"copy of {first.dropped[0]['verdict']['duplicate_of']}" in line for line in lines)
    assert lines[-1] == f"{len(first.dropped)} pages"
    code, out, _ = dedup(capsys, "dropped", "list", *args(first.dropped_log), "--host", "example.org")
    assert code == 0 and out.startswith("no dropped pages match")
    for bad, message in ((["--since", "yesterday"], "not an ISO date"), (["--min-score", "2"], "--min-score"),
                         (["--min-score", "0.9", "--max-score", "0.5"], "above --max-score")):
        code, _, err = dedup(capsys, "dropped", "list", *args(first.dropped_log), *bad)
        assert code == 2 and message in err, err


@CRAWL
def test_list_prints_whole_urls_on_a_narrow_terminal(first, capsys, monkeypatch):
    """A user-seat finding: on an 80-column terminal the table cut long URLs ("...?utm_sourc\u2026"), and the URL
    copied from it was not found by ``dropped show``. The URL is the key the other commands take: printed whole."""
    monkeypatch.setenv("COLUMNS", "40")
    code, out, _ = dedup(capsys, "dropped", "list", *args(first.dropped_log))
    assert code == 0 and "\u2026" not in out
    url = out.splitlines()[1].split()[-1]  # the first row's URL, as a user copies it
    assert url in {d["url"] for d in first.dropped}
    code, out, err = dedup(capsys, "dropped", "show", url, *args(first.dropped_log))
    assert code == 0, err


# -- stats ----------------------------------------------------------------------------------------
@CRAWL
def test_stats_counts_and_histogram(first, capsys):
    stats = dedup_json(capsys, "dropped", "stats", *args(first.dropped_log))
    log = first.dropped
    assert stats["pages"] == stats["drops"] == len(log)
    assert stats["by_rule"] == dict(Counter(d["verdict"]["rule"] for d in log))
    assert stats["by_status"] == dict(Counter(d["verdict"]["status"] for d in log))
    assert stats["by_host"] == {log[0]["url"].split("/")[2]: len(log)}
    assert stats["bad_lines"] == 0 and stats["restored_hidden"] == 0
    score = stats["score"]
    assert score["name"] == "containment" and score["scored"] == len(log) and score["unscored"] == 0
    containments = [d["verdict"]["scores"].get("containment", 1.0) for d in log]
    assert score["min"] == min(containments) and score["max"] == 1.0
    bins = score["histogram"]
    assert len(bins) == 10 and bins[0]["low"] == pytest.approx(int(min(containments) * 10) / 10)
    assert bins[-1]["high"] == pytest.approx(1.0)
    assert sum(b["count"] for b in bins) == len(log)
    for b in bins[:-1]:
        assert b["count"] == sum(1 for c in containments if b["low"] - 1e-9 <= c < b["high"] - 1e-9)
    assert bins[-1]["count"] >= Counter(d["verdict"]["rule"] for d in log)["content_hash"]

    code, out, _ = dedup(capsys, "dropped", "stats", *args(first.dropped_log))
    assert code == 0
    assert f"{len(log)} dropped pages" in out
    for section in ("by status:", "by rule:", "by host:", "containment score"):
        assert section in out
    bars = [line for line in out.splitlines() if line.strip().startswith("[")]
    assert len(bars) == 10 and bars[-1].strip().startswith("[0.") and "1.00]" in bars[-1]
    assert "#" in bars[-1] and bars[-1].split()[-1] == str(bins[-1]["count"])
    filtered = dedup_json(capsys, "dropped", "stats", *args(first.dropped_log), "--rule", "containment>=t1",
                          "--bins", "4", "--score-floor", "0.8")
    assert filtered["by_rule"] == {"containment>=t1": stats["by_rule"]["containment>=t1"]}
    assert [(b["low"], b["high"]) for b in filtered["score"]["histogram"]] == \
        [(0.8, 0.85), (0.85, 0.9), (0.9, 0.95), (0.95, 1.0)]


# -- show -----------------------------------------------------------------------------------------
@CRAWL
def test_show_prints_verdict_and_both_texts(first, capsys):
    near = next(d for d in first.dropped if d["verdict"]["rule"] == "containment>=t1")
    uri = f"local://{first.index}"
    search = open_search(uri, readonly=True)
    try:
        original = search.get(near["verdict"]["duplicate_of"])
    finally:
        search.close()
    assert original is not None
    shown = dedup_json(capsys, "dropped", "show", near["url"], *args(first.dropped_log, uri))
    assert shown["verdict"] == near["verdict"]
    assert shown["page"]["text"] == near["item"]["text"] and shown["page"]["title"] == near["item"]["title"]
    assert shown["copies"]["url"] == near["verdict"]["duplicate_of"]
    assert shown["copies"]["text"] == original["text"]
    assert shown["copies_source"] == f"search index {uri}" and shown["copies_note"] is None

    code, out, err = dedup(capsys, "dropped", "show", near["url"], *args(first.dropped_log, uri))
    assert code == 0, err
    assert f"verdict    duplicate by rule containment>=t1; copy of {near['verdict']['duplicate_of']}" in out
    assert f"containment {near['verdict']['scores']['containment']:.2f}" in out
    first_words = lambda text: " ".join(text.split()[:8])  # noqa: E731
    assert first_words(near["item"]["text"]) in " ".join(out.split())
    assert first_words(original["text"]) in " ".join(out.split())
    assert "from the search index" in out

    code, _, err = dedup(capsys, "dropped", "show", near["url"] + "#nope", *args(first.dropped_log, uri))
    assert code == 2 and "is not in the dropped log" in err and "did you mean" in err


@CRAWL
def test_show_falls_back_to_the_log_without_an_index(first, capsys, tmp_path):
    """When the copied page was itself dropped later (the log holds a line for it) and there is no index,
    the copied page's text comes from the log."""
    entry = next(d for d in first.dropped if manifest_key(d["url"]) == "/print/library-roof.html")
    kept = next(i for i in first.items if i["url"] == entry["verdict"]["duplicate_of"])
    copied = {**entry, "url": kept["url"], "item": {"url": kept["url"], "title": kept["title"], "text": kept["text"]},
              "verdict": {**entry["verdict"], "duplicate_of": "http://elsewhere.example/roof.html"}}
    log = tmp_path / "dropped.jsonl"
    log.write_text(first.dropped_log.read_text(encoding="utf-8") + json.dumps(copied) + "\n", encoding="utf-8")
    missing = f"local://{tmp_path / 'no-index'}"
    shown = dedup_json(capsys, "dropped", "show", entry["url"], *args(log, missing))
    assert shown["copies"]["text"] == kept["text"]
    assert shown["copies_source"] == f"dropped log {log}"
    assert "no search index" in shown["copies_note"]
    assert not (tmp_path / "no-index").exists()  # showing never creates an index


@CRAWL
def test_recrawl_log_folds_to_one_entry_per_url(recrawled, first, capsys):
    """A page dropped before and fetched again unchanged is not dropped twice: its entry says when it was
    seen again (a short ``seen`` line, not a second drop line)."""
    rows = dedup_json(capsys, "dropped", "list", *args(recrawled.dropped_log))
    once = {d["url"] for d in first.dropped}
    assert {r["url"] for r in rows} == once  # the kept pages were fetched again, not dropped
    assert {r["url"]: (r["drops"], r["seen"]) for r in rows} == {u: (1, 1) for u in once}
    assert all(r["seen_at"] for r in rows)
    latest = {d["url"]: d["verdict"] for d in recrawled.dropped if "verdict" in d}
    assert {r["url"]: (r["status"], r["duplicate_of"]) for r in rows} == \
        {u: (v["status"], v["duplicate_of"]) for u, v in latest.items()}
    assert all(r["duplicate_of"] != r["url"] for r in rows)
    assert re.search(r"'dedup/refetched': %d\b" % len(first.items + first.dropped), recrawled.log)
    stats = dedup_json(capsys, "dropped", "stats", *args(recrawled.dropped_log))
    assert stats["pages"] == len(once) and stats["drops"] == len(once)
    code, out, _ = dedup(capsys, "dropped", "list", *args(recrawled.dropped_log))  # the table says so too
    assert code == 0 and out.count("(fetched again unchanged 1 time since, last ") == len(once), out


# -- broken logs ----------------------------------------------------------------------------------
@CRAWL
def test_corrupt_lines_are_reported_by_number_and_skipped(first, capsys, tmp_path):
    lines = first.dropped_log.read_text(encoding="utf-8").splitlines(keepends=True)
    broken = tmp_path / "dropped.jsonl"
    torn = lines[-1][: len(lines[-1]) // 2]  # an interrupted write: half a line, no newline
    content = (lines[:2] + ["{not json\n", "[1, 2]\n", '{"url": "http://x.example/"}\n', "\n"]
               + lines[2:-1] + [torn])
    broken.write_text("".join(content), encoding="utf-8")
    good = [json.loads(line)["url"] for line in lines[:-1]]

    code, out, err = dedup(capsys, "dropped", "list", *args(broken), "--json")
    assert code == 0
    assert [r["url"] for r in json.loads(out)] == good
    assert f"{broken} line 3: not JSON" in err
    assert "line 4: not a JSON object (list)" in err
    assert "line 5: no verdict object for http://x.example/" in err
    assert f"line {len(content)}: not JSON" in err and "truncated last line" in err
    stats = dedup_json(capsys, "dropped", "stats", *args(broken))
    assert stats["bad_lines"] == 4 and stats["pages"] == len(good)
    code, out, err = dedup(capsys, "dropped", "stats", *args(broken))
    assert code == 0 and "4 bad lines skipped" in out


@CRAWL
def test_restore_after_a_torn_line_starts_a_new_line(work, capsys):
    log, uri, _ = work
    data = log.read_bytes()
    log.write_bytes(data + data.splitlines(keepends=True)[0][:40])  # torn last line
    url = log_lines_before(data)[0]["url"]
    code, _, err = dedup(capsys, "dropped", "restore", url, *args(log, uri))
    assert code == 0, err
    rows = dedup_json(capsys, "dropped", "list", *args(log), "--restored")
    assert [r["url"] for r in rows] == [url]
    assert log.read_bytes().startswith(data)


def test_a_page_kept_when_fetched_again_is_listed_with_all(work, capsys):
    """A dropped page whose text changed and was kept by a later crawl or reindex --update (a ``kept`` event):
    hidden from the default list and stats like a restored page, and said so; ``--all`` lists and counts it
    with its state (it was in neither, and the stats' drop lines did not add up)."""
    log, _, _ = work
    url = log_lines(log)[0]["url"]
    with open(log, "a", encoding="utf-8") as f:
        f.write(json.dumps({"event": "kept", "url": url, "time": "2030-01-01T00:00:00Z", "status": "unique"}) + "\n")
    rows = dedup_json(capsys, "dropped", "list", *args(log))
    assert url not in {r["url"] for r in rows}
    code, out, _ = dedup(capsys, "dropped", "list", *args(log))
    assert code == 0 and "1 kept again not shown (--all shows them)" in out
    listed = {r["url"]: r for r in dedup_json(capsys, "dropped", "list", *args(log), "--all")}
    assert listed[url]["state"] == "kept" and len(listed) == len(rows) + 1
    code, out, _ = dedup(capsys, "dropped", "list", *args(log), "--all")
    assert next(line for line in out.splitlines() if line.rstrip().endswith(url)).startswith("kept")
    stats = dedup_json(capsys, "dropped", "stats", *args(log))
    assert stats["pages"] == len(rows) and stats["restored_hidden"] == 1
    assert dedup_json(capsys, "dropped", "stats", *args(log), "--all")["by_state"]["kept"] == 1


def test_explain_reads_a_dropped_page_fetched_again(work, capsys):
    """A dropped page a later crawl fetched again unchanged has a ``seen`` event as its last log line: explain
    still reads its drop line (it failed: "carries no duplicate_of"); after a ``kept`` event it reads the index."""
    log, uri, _ = work
    line = log_lines(log)[0]
    url = line["url"]
    with open(log, "a", encoding="utf-8") as f:
        f.write(json.dumps({"event": "seen", "url": url, "time": "2030-01-01T00:00:00Z"}) + "\n")
    explained = dedup_json(capsys, "explain", url, *args(log, uri), "--no-corpus")
    assert explained["sources"]["a"].startswith("dropped log") and explained["url_b"] == (
        line["verdict"].get("nearest") or line["verdict"]["duplicate_of"])
    with open(log, "a", encoding="utf-8") as f:
        f.write(json.dumps({"event": "kept", "url": url, "time": "2030-01-02T00:00:00Z", "status": "unique"}) + "\n")
    code, _, err = dedup(capsys, "explain", url, *args(log, uri), "--no-corpus")
    assert code != 0 and "not found" in err  # not in this index copy: the log's drop line is not read for it


def log_lines_before(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]


def test_missing_empty_and_directory_logs(capsys, tmp_path):
    code, _, err = dedup(capsys, "dropped", "list", "--log", tmp_path / "none.jsonl")
    assert code == 2 and f"no dropped log at {tmp_path / 'none.jsonl'}" in err
    code, _, err = dedup(capsys, "dropped", "stats", "--log", tmp_path)
    assert code == 2 and "is a directory" in err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    code, out, err = dedup(capsys, "dropped", "list", "--log", empty)
    assert code == 0 and out.startswith("no dropped pages match") and not err
    assert dedup_json(capsys, "dropped", "stats", "--log", empty)["pages"] == 0
    code, _, err = dedup(capsys, "dropped", "restore", "http://x.example/", "--log", empty,
                         "--index", f"local://{tmp_path / 'idx'}")
    assert code == 1 and "not in the dropped log" in err
    assert not (tmp_path / "idx").exists()  # nothing to restore: no index opened


def test_default_log_is_beside_the_index(capsys, tmp_path, monkeypatch):
    (tmp_path / "idx").mkdir()
    (tmp_path / "idx" / "dropped.jsonl").write_text("")
    assert dedup_json(capsys, "dropped", "list", "--index", f"local://{tmp_path / 'idx'}") == []
    monkeypatch.setenv("DEDUP_DROPPED_LOG", str(tmp_path / "elsewhere.jsonl"))
    code, _, err = dedup(capsys, "dropped", "list", "--index", f"local://{tmp_path / 'idx'}")
    assert code == 2 and "elsewhere.jsonl" in err


# -- restore --------------------------------------------------------------------------------------
def _records(index_dir: Path) -> list:
    idx = open_index(f"local://{index_dir}")
    try:
        return list(idx.iter_records())
    finally:
        idx.close()


@CRAWL
@pytest.mark.parametrize("rule", ["containment>=t1", "content_hash"])
def test_restore_round_trip(work, first, capsys, rule):
    log, uri, index_dir = work
    entry = next(d for d in first.dropped if d["verdict"]["rule"] == rule)
    url = entry["url"]
    before_bytes = log.read_bytes()
    before_records = _records(index_dir)
    before_stats = dedup_json(capsys, "dropped", "stats", *args(log))
    with open_search(uri, readonly=True) as search:
        assert search.get(url) is None
        before_docs = search.count()

    code, out, err = dedup(capsys, "dropped", "restore", url, *args(log, uri))
    assert code == 0, err
    assert f"{url} restored into {uri} (dedup record" in out and f"1 restored into {uri}" in out

    # the dedup index counts it as kept: one more record, for this URL
    after_records = _records(index_dir)
    assert len(after_records) == len(before_records) + 1
    record = after_records[-1]
    assert record.url == url and record.title == entry["item"]["title"]
    assert record.status == entry["verdict"]["status"] and record.duplicate_of == entry["verdict"]["duplicate_of"]
    # searchable, flagged restored, original verdict kept
    with open_search(uri, readonly=True) as search:
        assert search.count() == before_docs + 1
        doc = search.get(url)
    assert doc["text"] == entry["item"]["text"] and doc["fetched_at"] == entry["item"]["fetched_at"]
    assert doc["dedup"]["status"] == "restored" and doc["dedup"]["kept"] is True
    assert doc["dedup"]["original"] == entry["verdict"]
    words = " ".join(entry["item"]["text"].split()[:6])
    hits = dedup_json(capsys, "search", words, "--index", uri, "--limit", "50")
    assert url in [h["url"] for h in hits]
    assert next(h for h in hits if h["url"] == url)["status"] == "restored"
    # the log: append-only, one event; list/stats no longer count it as dropped
    assert log.read_bytes().startswith(before_bytes)
    events = [line for line in log_lines(log) if line.get("event")]
    assert len(events) == 1 and events[0]["event"] == "restored" and events[0]["url"] == url
    assert events[0]["record_id"] == record.id and events[0]["index"] == uri
    stats = dedup_json(capsys, "dropped", "stats", *args(log))
    assert stats["pages"] == before_stats["pages"] - 1 and stats["restored_hidden"] == 1
    assert stats["by_rule"].get(rule, 0) == before_stats["by_rule"][rule] - 1
    assert url not in [r["url"] for r in dedup_json(capsys, "dropped", "list", *args(log))]
    listed = {r["url"]: r for r in dedup_json(capsys, "dropped", "list", *args(log), "--all")}
    assert listed[url]["state"] == "restored" and listed[url]["restored_at"] == events[0]["time"]
    assert [r["url"] for r in dedup_json(capsys, "dropped", "list", *args(log), "--restored")] == [url]
    all_stats = dedup_json(capsys, "dropped", "stats", *args(log), "--all")
    assert all_stats["by_state"] == {"dropped": before_stats["pages"] - 1, "restored": 1}
    code, out, _ = dedup(capsys, "dropped", "list", *args(log), "--all")
    assert next(line for line in out.splitlines() if line.rstrip().endswith(url)).startswith("restored")
    assert f"state      restored at {events[0]['time'][:19].replace('T', ' ')}" in \
        dedup(capsys, "dropped", "show", url, *args(log, uri))[1]

    # twice: a clear message, no second copy anywhere
    code, out, err = dedup(capsys, "dropped", "restore", url, *args(log, uri))
    assert code == 0, err
    assert f"{url} was already restored at {events[0]['time']} into {uri}; nothing added" in out
    assert "0 restored" in out and "1 already restored" in out
    assert len(_records(index_dir)) == len(before_records) + 1
    with open_search(uri, readonly=True) as search:
        assert search.count() == before_docs + 1
    assert len([line for line in log_lines(log) if line.get("event")]) == 1


@CRAWL
def test_restore_several_and_unknown_urls(work, first, capsys):
    log, uri, index_dir = work
    urls = [d["url"] for d in first.dropped[:3]]
    before = len(_records(index_dir))
    results = dedup_json(capsys, "dropped", "restore", urls[0], urls[1], urls[0], *args(log, uri))
    assert [r["outcome"] for r in results] == ["restored", "restored"]
    code, out, err = dedup(capsys, "dropped", "restore", urls[1], urls[2], "http://x.example/", *args(log, uri))
    assert code == 1
    assert "already restored" in out and f"{urls[2]} restored" in out
    assert "dedup: error: http://x.example/ is not in the dropped log" in err
    assert len(_records(index_dir)) == before + 3


@CRAWL
def test_restore_interrupted_before_the_log_event_adds_no_second_copy(work, first, monkeypatch):
    log, uri, index_dir = work
    url = first.dropped[0]["url"]
    before = len(_records(index_dir))

    def crash(*a, **k):
        raise OSError("disk full")

    from dedup.cli import restore as restore_module

    with monkeypatch.context() as m:
        m.setattr(restore_module, "append_event", crash)
        with pytest.raises(OSError):
            restore(droplog.read_log(log), [url], uri)
    assert len(_records(index_dir)) == before + 1  # the index writes happened, the event did not
    assert droplog.read_log(log).get(url).state == "dropped"
    results = restore(droplog.read_log(log), [url], uri)
    assert [r.outcome for r in results] == ["restored"]
    assert len(_records(index_dir)) == before + 1
    assert droplog.read_log(log).get(url).state == "restored"


@CRAWL
def test_restore_reports_a_locked_index(work, first, capsys):
    log, uri, _ = work
    held = open_index(uri)  # a crawl writing the index holds its lock
    try:
        code, _, err = dedup(capsys, "dropped", "restore", first.dropped[0]["url"], *args(log, uri))
    finally:
        held.close()
    assert code == 2 and "in use by" in err
    assert not [line for line in log_lines(log) if line.get("event")]


class DictSearch:
    """A SearchIndex Protocol implementation in a dict (no local:// specifics)."""

    def __init__(self) -> None:
        self.docs: dict[str, dict] = {}

    def add(self, doc):
        self.docs[doc["url"]] = dict(doc)

    def get(self, url):
        return self.docs.get(url)

    def search(self, query, limit=10):
        return [dict(d, score=1.0) for d in self.docs.values() if query.lower() in d["text"].lower()][:limit]

    def remove(self, url):
        return self.docs.pop(url, None) is not None

    def count(self):
        return len(self.docs)

    def iter_docs(self):
        return iter(list(self.docs.values()))

    def flush(self):
        pass

    def close(self):
        pass


@CRAWL
def test_restore_uses_only_the_protocols(first, monkeypatch, tmp_path):
    """Any backend open_index/open_search return works, e.g. Elasticsearch's http:// URIs."""
    from dedup.cli import restore as restore_module  # where restore finds the backends

    log = tmp_path / "dropped.jsonl"
    shutil.copy(first.dropped_log, log)
    dedup_index, search = MemoryIndex(), DictSearch()
    opened = []
    monkeypatch.setattr(restore_module, "open_index", lambda uri, **kw: opened.append(("index", uri, kw)) or dedup_index)
    monkeypatch.setattr(restore_module, "open_search", lambda uri, **kw: opened.append(("search", uri, kw)) or search)
    uri = "http://127.0.0.1:9/crawl"
    urls = [d["url"] for d in first.dropped]
    # the pages were dropped from a local index: restoring them elsewhere is deliberate (force)
    assert {r.outcome for r in restore(droplog.read_log(log), urls, uri)} == {"refused"}
    assert opened == [("search", uri, {"readonly": True})]  # only looked whether it exists
    opened.clear()
    results = restore(droplog.read_log(log), urls, uri, force=True)
    assert [r.outcome for r in results] == ["restored"] * len(urls)
    assert opened == [("index", uri, {}), ("search", uri, {})]
    assert len(dedup_index) == len(urls) and search.count() == len(urls)
    assert {r.url for r in dedup_index.get(range(1, len(urls) + 1))} == set(urls)
    assert {d["dedup"]["status"] for d in search.docs.values()} == {"restored"}
    again = restore(droplog.read_log(log), urls, uri)
    assert {r.outcome for r in again} == {"already_restored"} and len(dedup_index) == len(urls)


def test_restore_into_elasticsearch(es_index_uri, tmp_path, capsys):
    """The real Elasticsearch backend (or its test emulator), through the CLI."""
    import index

    log = tmp_path / "dropped.jsonl"
    text = ("The ferry will leave the north quay at seven every morning from Monday. "
            "Passengers with bicycles should board first. The evening crossing is cancelled in winter.")
    item = {"url": "http://a.example/ferry?utm=1", "title": "Ferry", "text": text, "fetched_at": 1795252067.5}
    verdict = {"status": "exact_duplicate", "duplicate_of": "http://a.example/ferry", "rule": "content_hash",
               "scores": {"content_hash": "x"}, "kept": False}
    log.write_text(json.dumps({"url": item["url"], "time": "2026-11-21T09:00:00.000Z", "verdict": verdict,
                               "item": dict(item, dedup=verdict)}) + "\n", encoding="utf-8")
    # a line of an older log names no index; the index does not exist yet: created with --force only
    code, out, err = dedup(capsys, "dropped", "restore", item["url"], "--log", log, "--index", es_index_uri)
    assert code == 1 and "there is no index at" in err and "--force creates it" in err
    code, out, err = dedup(capsys, "dropped", "restore", item["url"], "--log", log, "--index", es_index_uri,
                           "--force")
    assert code == 0, err
    code, out, err = dedup(capsys, "dropped", "restore", item["url"], "--log", log, "--index", es_index_uri)
    assert code == 0 and "already restored" in out
    idx = index.open_index(es_index_uri)
    try:
        assert len(idx) == 1
    finally:
        idx.close()
    search = index.open_search(es_index_uri)
    try:
        doc = search.get(item["url"])
        assert doc["dedup"]["status"] == "restored" and doc["dedup"]["original"] == verdict
        assert doc["text"] == text
    finally:
        search.close()


# -- library details (no crawl) -------------------------------------------------------------------
def test_parse_when_scores_hosts_and_histogram_edges():
    utc = timezone.utc
    assert summary.parse_when("2026-11-21") == datetime(2026, 11, 21, tzinfo=utc)
    assert summary.parse_when("2026-11-21", end=True) == datetime(2026, 11, 21, 23, 59, 59, 999999, tzinfo=utc)
    assert summary.parse_when("2026-11-21T10:30+02:00") == datetime(2026, 11, 21, 8, 30, tzinfo=utc)
    assert summary.parse_when("2026-11-21T08:30:00Z") == summary.parse_when("2026-11-21T08:30")
    with pytest.raises(ValueError, match="not an ISO date"):
        summary.parse_when("21/11/2026")
    assert droplog.score_of({"rule": "content_hash", "scores": {"content_hash": "ab"}}) == 1.0
    assert droplog.score_of({"rule": "containment>=t2", "scores": {"containment": 0.52}}) == 0.52
    assert droplog.score_of({"rule": "title_anchor", "scores": {"title_key": "k"}}) is None
    assert droplog.host_of("https://News.Example.org:8443/a") == "news.example.org:8443"
    assert droplog.host_of("http://[::1]:8080/x") == "[::1]:8080"
    f = summary.Filter(hosts=["example.org"])
    entry = lambda url: droplog.Entry(url, "", {}, "", 1, 0)  # noqa: E731
    assert f(entry("https://news.example.org/a")) and f(entry("http://example.org:81/"))
    assert not f(entry("http://badexample.org/"))
    assert summary.Filter(hosts=["[::1]:8080"])(entry("http://[::1]:8080/x"))
    bins = summary.histogram([0.8, 0.98, 1.0, 0.5], bins=10, lo=0.8)
    assert [c for _, _, c in bins] == [2, 0, 0, 0, 0, 0, 0, 0, 0, 2]  # below lo: first bin; 1.0: last
    assert summary.histogram_floor([0.83, 1.0]) == 0.8 and summary.histogram_floor([1.0]) == 0.9



@CRAWL
def test_restore_refuses_a_missing_or_other_index_and_forces_on_request(work, first, capsys, tmp_path):
    log, uri, index_dir = work
    url = first.dropped[0]["url"]
    missing = f"local://{tmp_path / 'fresh'}"
    code, out, err = dedup(capsys, "dropped", "restore", url, "--log", log, "--index", missing)
    assert code == 1 and f"there is no index at {missing}" in err and f"dropped from {uri}" in err
    assert not (tmp_path / "fresh").exists()  # nothing created
    # another index that exists (a second crawl's): refused, naming both
    other_dir = tmp_path / "other"
    shutil.copytree(index_dir, other_dir)
    other = f"local://{other_dir}"
    code, out, err = dedup(capsys, "dropped", "restore", url, "--log", log, "--index", other)
    assert code == 1 and f"{url} was dropped from {uri}, not from {other}" in err and "--force" in err
    assert "0 restored" in out
    assert [r["url"] for r in dedup_json(capsys, "dropped", "list", *args(log)) if r["url"] == url] == [url]
    # deliberate: --force, and the output says which index it wrote
    code, out, err = dedup(capsys, "dropped", "restore", url, "--log", log, "--index", other, "--force")
    assert code == 0 and f"{url} restored into {other} (dedup record" in out
    with open_search(other, readonly=True) as search:
        assert search.get(url) is not None
    # still restorable into the index it was dropped from
    code, out, err = dedup(capsys, "dropped", "restore", url, *args(log, uri))
    assert code == 0 and f"{url} restored into {uri}" in out, err
    code, out, err = dedup(capsys, "dropped", "restore", url, *args(log, uri))
    assert code == 0 and "already restored" in out
    # --force also creates a missing index
    code, out, err = dedup(capsys, "dropped", "restore", first.dropped[1]["url"], "--log", log, "--index", missing,
                           "--force")
    assert code == 0 and f"restored into {missing}" in out and (tmp_path / "fresh").exists()


@CRAWL
def test_restoring_a_logged_second_fetch_leaves_the_kept_page_alone(work, first, capsys):
    """Logs written before refetches were recognised hold a kept page's second fetch as an exact duplicate
    of its own URL. Restoring that line must not turn the kept page's search document into a 'restored'
    copy of itself: nothing is written, and the command says why."""
    log, uri, index_dir = work
    kept = next(i for i in first.items if i["dedup"]["status"] == "unique")
    template = first.dropped[0]
    line = {**template, "url": kept["url"], "item": {"url": kept["url"], "title": kept["title"], "text": kept["text"],
                                                     "fetched_at": kept["fetched_at"]},
            "verdict": {**template["verdict"], "status": "exact_duplicate", "rule": "content_hash",
                        "duplicate_of": kept["url"]}}
    line["index"] = uri
    with log.open("a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")
    before_records = len(_records(index_dir))
    code, out, err = dedup(capsys, "dropped", "restore", kept["url"], *args(log, uri))
    assert code == 0, err
    assert f"{kept['url']} is kept in {uri}" in out and "0 restored" in out
    assert len(_records(index_dir)) == before_records
    with open_search(uri, readonly=True) as search:
        assert search.get(kept["url"])["dedup"]["status"] == "unique"
    assert not [e for e in log_lines(log) if e.get("event")]


# -- issue 30: from the user's seat ---------------------------------------------------------------------
def test_inspection_commands_on_a_path_with_no_index_say_so(capsys, tmp_path):
    """Item 4: ``dropped list --index local:///no/such/dir`` said "no dropped log ... a crawl writes it when it
    drops its first page", as if a crawl had run there and dropped nothing."""
    where = tmp_path / "no" / "such" / "dir"
    uri = f"local://{where}"
    for argv in (["dropped", "list"], ["dropped", "stats"], ["dropped", "show", "http://x.example/"],
                 ["dropped", "restore", "http://x.example/"], ["report", "-o", str(tmp_path / "r.html")],
                 ["search", "harbour"], ["explain", "http://x.example/"]):
        code, out, err = dedup(capsys, *argv, "--index", uri)
        assert code == 2 and not out, (argv, out)
        assert len(err.strip().splitlines()) == 1 and "dropped its first page" not in err, (argv, err)
        assert f"no index at {where}" in err or f"no search index at {where}" in err, (argv, err)
    assert not where.exists() and not (tmp_path / "r.html").exists()


@CRAWL
def test_show_on_a_kept_page_says_it_is_kept_and_why(first, capsys):
    """Item 5: ``dropped show`` on a kept page answered "did you mean:" with unrelated URLs."""
    uri = f"local://{first.index}"
    flagged = next(i for i in first.items if i["dedup"]["status"] == "near_duplicate")
    code, out, err = dedup(capsys, "dropped", "show", flagged["url"], *args(first.dropped_log, uri))
    assert code == 0 and "did you mean" not in out + err, err
    assert "was not dropped: it is kept" in out and f"near_duplicate of {flagged['dedup']['duplicate_of']}" in out
    assert "not a duplicate:" in out  # what separates it from a duplicate (item 6)
    unique = next(i for i in first.items if i["dedup"]["status"] == "unique")
    code, out, err = dedup(capsys, "dropped", "show", unique["url"], *args(first.dropped_log, uri))
    assert code == 0 and "was not dropped: it is kept" in out and "unique" in out and "did you mean" not in err
    shown = dedup_json(capsys, "dropped", "show", unique["url"], *args(first.dropped_log, uri))
    assert shown["state"] == "kept" and shown["verdict"]["status"] == "unique"
    # a URL crawled nowhere: no unrelated suggestions from the same site
    code, out, err = dedup(capsys, "dropped", "show", unique["url"] + "nothing-like-it.html",
                           *args(first.dropped_log, uri))
    assert code == 2 and "not in the dropped log" in err and "did you mean" not in err, err


@CRAWL
def test_show_says_what_separates_duplicate_from_near_duplicate(first, capsys):
    """Items 6 and 7: the verdict's reason in words, thresholds without float noise (36, not 35.99999999999999)."""
    near = next(d for d in first.dropped if d["verdict"]["rule"] == "containment>=t1")
    code, out, _ = dedup(capsys, "dropped", "show", near["url"], *args(first.dropped_log, f"local://{first.index}"))
    assert code == 0 and "35.99999" not in out and "angle 36.0," in out
    why = next(line for line in out.splitlines() if line.startswith("why "))
    assert "containment" in why and ">= t1 0.8" in why and "TDW angle" in why and "<= 36°" in why, why
    assert any(line.startswith("statuses ") and "near_duplicate: any other copy" in line for line in out.splitlines())


def test_stats_draws_no_histogram_when_every_score_is_the_same(capsys, tmp_path):
    """Item 7: ten bins were drawn for scores all 1.00."""
    log = tmp_path / "dropped.jsonl"
    log.write_text("".join(json.dumps({"url": f"http://a.example/{n}", "time": "2026-11-29T06:00:00Z",
                                       "index": "local://x", "verdict": {"status": "exact_duplicate",
                                                                         "duplicate_of": "http://a.example/",
                                                                         "rule": "content_hash", "scores": {}},
                                       "item": {"url": f"http://a.example/{n}", "title": "t", "text": "x"}}) + "\n"
                           for n in range(3)))
    code, out, err = dedup(capsys, "dropped", "stats", "--log", log)
    assert code == 0, err
    assert not [line for line in out.splitlines() if line.strip().startswith("[")], out
    assert "every score is 1.00" in out


def test_a_verdicts_reason_tells_duplicate_from_near_duplicate():
    """Item 6: two copies with containment 1.0, a ``duplicate`` (angle 30.95) and a ``near_duplicate`` (40.19)."""
    from dedup.deduplicator import DedupConfig
    from dedup.verdicts import legend, reason

    t = {**DedupConfig().thresholds(), "decision": "logit-1-594f5c"}
    assert t["angle"] == 36.0
    decision = {"p": 0.99, "threshold": 0.31, "copy": True}
    dup = {"status": "duplicate", "rule": "containment>=t1", "thresholds": t,
           "scores": {"containment": 1.0, "angle": 30.95, "decision": decision}}
    near = {"status": "near_duplicate", "rule": "decision", "thresholds": t,
            "scores": {"containment": 1.0, "angle": 40.19, "decision": decision}}
    assert reason(dup) == ("a copy by the calibrated decision (p 0.99 >= 0.31); containment 1 >= t1 0.8 and TDW angle "
                           "30.95° <= 36°")
    assert reason(near, why_copy=False) == "not a duplicate: TDW angle 40.19° > 36° (containment 1 >= t1 0.8)"
    low = {**near, "scores": {"containment": 0.39, "angle": 20.0, "decision": decision}}
    assert reason(low, why_copy=False) == "not a duplicate: containment 0.39 < t1 0.8"
    assert reason({"status": "unique", "rule": "below_decision"}) == ""
    assert "TDW angle <= 36°" in legend(t) and "calibrated decision" in legend(t)


def test_show_names_the_root_and_compares_with_the_page_matched(capsys, tmp_path):
    """A copy of a flagged copy: ``duplicate_of`` names the group's root, ``show`` says which page it was
    matched with and prints that page's text beside it."""
    from dedup.deduplicator import Deduplicator
    from dedup.droplog import DropLogWriter
    from dedup.page import parse_page

    story = ["The harbour bridge will close for three weeks of repairs in the spring, the council said.",
             "Engineers found corrosion in the main cables during an inspection last autumn.",
             "Ferries will run every fifteen minutes while the bridge is closed, and buses rerouted.",
             "Shops near the bridge fear a drop in trade, but the council promised a support fund.",
             "The mayor said the closure was regrettable but that safety had to come first."]

    def html(paragraphs, nav="Home News"):
        body = "".join(f"<p>{p}</p>" for p in paragraphs)
        return f"<html><head><title>Bridge</title></head><body><nav>{nav}</nav><article>{body}</article></body></html>"

    uri = f"local://{tmp_path / 'index'}"
    index, search = open_index(uri), open_search(uri)
    log = tmp_path / "index" / "dropped.jsonl"
    writer = DropLogWriter(log, uri)
    try:
        d = Deduplicator(index)
        edited = story + ["A late addition from the second site about the ferry timetable and its fares."]
        pages = [("http://a.example/root", html(story)), ("http://b.example/copy", html(edited)),
                 ("http://c.example/copy-of-copy", html(edited, nav="Start Weather"))]
        for url, body in pages:
            page = parse_page(body, url)
            verdict = d.process(page)
            if verdict.kept:
                search.add({"url": url, "title": page.title, "text": page.text, "fetched_at": 0.0,
                            "dedup": verdict.to_dict()})
            else:
                writer.write(verdict.to_dict(), {"url": url}, page)
    finally:
        writer.close()
        search.close()
        index.close()
    rc, out, _ = dedup(capsys, "dropped", "show", "http://c.example/copy-of-copy", "--index", uri, "--log", str(log))
    assert rc == 0
    assert "copy of http://a.example/root (matched with http://b.example/copy, itself a copy of it)" in out
    assert "the page it was matched with (from the search index" in out and "ferry timetable and its fares" in out
    row = dedup_json(capsys, "dropped", "list", "--log", str(log))[0]
    assert row["duplicate_of"] == "http://a.example/root" and row["nearest"] == "http://b.example/copy"


def test_restore_refuses_a_url_kept_since_with_newer_text(capsys, tmp_path):
    """A page dropped as an exact copy, fetched again later with its own text and kept: restoring the old
    drop would give its URL a second record, so it is refused in one line and the index keeps one record."""
    from dedup.deduplicator import Deduplicator
    from dedup.droplog import DropLogWriter
    from dedup.page import parse_page

    def html(text):
        return f"<html><head><title>T</title></head><body><article><p>{text}</p></article></body></html>"

    first = ("The harbour bridge will close for three weeks of repairs in the spring, the council said on "
             "Monday, and ferries will run every fifteen minutes while the work goes on.")
    later = ("A local bakery has won a national prize for its sourdough loaf after three years of trying, and "
             "its owner credits a starter kept alive since her grandmother opened the shop.")
    uri = f"local://{tmp_path / 'index'}"
    index = open_index(uri)
    log = tmp_path / "index" / "dropped.jsonl"
    writer = DropLogWriter(log, uri)
    try:
        d = Deduplicator(index)
        d.process(parse_page(html(first), "http://a.example/original"))
        page = parse_page(html(first), "http://b.example/copy")
        dropped = d.process(page)
        assert not dropped.kept
        writer.write(dropped.to_dict(), {"url": page.url}, page)
        kept = d.process(parse_page(html(later), "http://b.example/copy"))
        assert kept.kept and kept.status == "unique" and kept.replaced is None  # the URL had no record
    finally:
        writer.close()
        index.close()
    open_search(uri).close()
    rc, out, err = dedup(capsys, "dropped", "restore", "http://b.example/copy", "--index", uri, "--log", str(log))
    assert rc != 0 and "fetched again after this drop and is kept" in out + err
    index = open_index(uri)
    try:
        assert sorted(r.url for r in index.iter_records()) == ["http://a.example/original", "http://b.example/copy"]
    finally:
        index.close()


def test_a_writer_names_the_index_as_spelt_when_the_log_opened(tmp_path, monkeypatch):
    """The drop log's writer spells its index once, when it opens (droplog.index_identity): every line names
    the same index, though the process later moves to another directory (a relative local:// path)."""
    from dedup.droplog import DropLogWriter, drop_line, index_identity

    monkeypatch.chdir(tmp_path)
    writer = DropLogWriter(tmp_path / "dropped.jsonl", "local://.dedup")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    verdict = {"status": "exact_duplicate", "duplicate_of": "http://a.example/"}
    writer.write(verdict, {"url": "http://a.example/copy", "text": "a"})
    writer.close()
    line = json.loads((tmp_path / "dropped.jsonl").read_text().splitlines()[0])
    assert line["index"] == f"local://{tmp_path}/.dedup"
    # a one-off line (a reindex's batch) spells the index it is given, the same way
    assert drop_line(verdict, {"url": "u"}, index="es://Search.example/pages")["index"] == index_identity(
        "es://Search.example/pages") == "http://search.example:9200/pages"


def test_show_on_a_page_kept_again_shows_what_it_is_now_then_the_drop(tmp_path, capsys):
    """helper-21: ``dropped show`` on a page dropped, then kept when fetched again with other text (state
    ``kept``), printed the old drop's verdict and text as if current. What the page is now comes first (the
    search index's verdict), then the drop it undid."""
    from crawler.pipelines import DedupPipeline, DuplicateDropped, IndexPipeline
    from dedup.deduplicator import DedupConfig

    story = ("The regional line will close for three weekends in spring while engineers replace the signals "
             "between the two market towns, the operator said on Monday. ") * 3
    page = "<html><head><title>Line to close</title></head><body><article><p>{}</p></article></body></html>"
    uri, log = f"local://{tmp_path / 'index'}", tmp_path / "dropped.jsonl"
    first, copy = "http://m.example/a4", "http://a.example/a4"
    for pages in (((first, story), (copy, story)), ((copy, story + "Buses replace the trains on Sundays."),)):
        dedup_pipeline = DedupPipeline(index_uri=uri, config=DedupConfig(), dropped_log=log)
        store = IndexPipeline(index_uri=uri)
        dedup_pipeline.open_spider(), store.open_spider()
        try:
            for url, text in pages:
                try:
                    store.process_item(dedup_pipeline.process_item({"url": url, "html": page.format(text)}))
                except DuplicateDropped:
                    pass
        finally:
            dedup_pipeline.close_spider(), store.close_spider()
    code, out, err = dedup(capsys, "dropped", "show", copy, *args(log, uri))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"{copy} is kept in {uri}, flagged") and first in lines[0], out
    assert lines[1].startswith("before     dropped") and "exact_duplicate" in lines[1], out
    shown = dedup_json(capsys, "dropped", "show", copy, *args(log, uri))
    assert shown["state"] == "kept" and shown["verdict"]["status"] != "exact_duplicate"
    assert shown["dropped_before"]["status"] == "exact_duplicate"


def test_a_writer_opening_a_log_with_a_torn_last_line_starts_on_a_new_line(tmp_path, caplog):
    """helper-23: a crash left half a line at the log's end; the next crawl's first drop line was glued to it
    and skipped with it by every reader, its page then in no index and no readable line."""
    from dedup.droplog import DropLogWriter, read_log

    path = tmp_path / "dropped.jsonl"
    whole = json.dumps({"verdict": {"status": "exact_duplicate", "duplicate_of": "http://a.example/"},
                        "item": {"url": "http://b.example/", "text": "b"}, "url": "http://b.example/"})
    path.write_text(whole + "\n" + whole[:30], encoding="utf-8")
    with caplog.at_level("WARNING"):
        writer = DropLogWriter(path)
    assert "torn line" in caplog.text
    writer.write({"status": "exact_duplicate", "duplicate_of": "http://a.example/"},
                 {"url": "http://c.example/", "text": "c"})
    writer.close()
    log = read_log(path)
    assert sorted(e.url for e in log.entries) == ["http://b.example/", "http://c.example/"]
    caplog.clear()
    DropLogWriter(path).close()  # a log that ends its last line: nothing written, nothing said
    assert path.read_text(encoding="utf-8").count("\n") == 3 and not caplog.text


@CRAWL
def test_show_and_explain_suggest_another_spelling_of_a_crawled_url(first, capsys):
    """helper-23: a site's root without its ``/`` (the same URL), an upper-case scheme or host, a trailing
    slash: ``show`` said "not in the dropped log nor kept" with no suggestion for the root, ``explain`` never
    suggested anything. Both name the spelling that was crawled."""
    uri = f"local://{first.index}"
    from urllib.parse import urlsplit

    root = next(i["url"] for i in first.items if urlsplit(i["url"]).path == "/")
    dropped = first.dropped[0]["url"]
    for asked, meant in ((root.rstrip("/"), root), (dropped.replace("http://", "HTTP://"), dropped),
                         (dropped + "/", dropped)):
        code, _, err = dedup(capsys, "dropped", "show", asked, *args(first.dropped_log, uri))
        assert code == 2 and f"did you mean: {meant}" in err, err
        code, _, err = dedup(capsys, "explain", asked, "--index", uri, "--log", str(first.dropped_log))
        assert code == 2 and f"did you mean: {meant}" in err, err


@CRAWL
def test_restoring_a_line_without_text_says_so(work, first, capsys):
    """helper-23: a drop line whose item text was deleted by hand was restored with its title alone, and the
    restore said nothing of it."""
    log, uri, _ = work
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    url = lines[0]["url"]
    lines[0]["item"].pop("text", None)
    lines[0].pop("page", None)
    log.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    code, out, err = dedup(capsys, "dropped", "restore", url, *args(log, uri))
    assert code == 0 and f"{url} restored into {uri}" in out and "holds no text" in out, out + err


def test_seen_marks_are_batched_offsets_of_drop_lines(tmp_path, monkeypatch):
    """A page fetched again unchanged is marked seen by the offset of its drop line, many to a line (a line a page
    took ~125 bytes a recrawl): the fold counts each mark on the entry of that drop line, not on one a later drop
    of its URL replaced; the older one-URL lines are read too; a batch is written when full and at close."""
    from dedup import droplog
    from dedup.droplog import DropLogWriter, read_log

    monkeypatch.setattr(droplog, "SEEN_BATCH", 3)
    path = tmp_path / "dropped.jsonl"
    writer = DropLogWriter(path)
    verdict = {"status": "exact_duplicate", "duplicate_of": "http://a.example/"}
    b1 = writer.write(verdict, {"url": "http://b.example/", "text": "b"})
    c = writer.write(verdict, {"url": "http://c.example/", "text": "c"})
    for offset in (b1, c, b1):
        writer.seen(offset)
    assert path.read_text(encoding="utf-8").count("\n") == 3  # the batch of three, written when full
    b2 = writer.write(verdict, {"url": "http://b.example/", "text": "b, dropped again"})
    writer.seen(b1)  # a mark of the drop line b2 replaced: counts for nothing
    writer.seen(b2)
    writer.close()  # the last batch, at close
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [line["lines"] for line in lines if line.get("event") == "seen"] == [[b1, c, b1], [b1, b2]]
    with open(path, "a", encoding="utf-8") as f:  # a line of an older version
        f.write(json.dumps({"event": "seen", "url": "http://c.example/", "time": "2030-01-01T00:00:00Z"}) + "\n")
    entries = {e.url: (e.drops, e.seen, bool(e.seen_at)) for e in read_log(path).entries}
    assert entries == {"http://b.example/": (2, 1, True), "http://c.example/": (1, 2, True)}
    assert not read_log(path).problems


def test_two_writers_on_one_log_tell_where_their_own_lines_start(tmp_path):
    """helper-29: two crawls appending to one log: a writer told where a line starts by its own file position, which
    another crawl's lines had moved past; that offset named the other crawl's line (a seen mark, or the line a page
    is rebuilt from). Each offset is where that writer's line starts."""
    from dedup.droplog import DropLogWriter

    path = tmp_path / "dropped.jsonl"
    one, two = DropLogWriter(path), DropLogWriter(path)
    verdict = {"status": "exact_duplicate", "duplicate_of": "http://a.example/"}
    offsets = {url: writer.write(verdict, {"url": url, "text": url})
               for writer, url in ((one, "http://b.example/"), (two, "http://c.example/"), (one, "http://d.example/"))}
    one.close(), two.close()
    data = path.read_bytes()
    for url, offset in offsets.items():
        assert json.loads(data[offset:data.index(b"\n", offset)])["url"] == url


def test_a_page_dropped_again_for_the_same_page_is_an_event_naming_its_drop_line(tmp_path, capsys):
    """A dropped page decided again with the very page it was dropped for (the page it matched was rewritten) and
    dropped again logs a ``dropped_again`` event: the verdict, not the item and its text a second time. The fold
    gives the entry that verdict, one drop more, its seen count from then, and moves it last; ``line`` and ``show``
    read the new verdict with the logged page; an event naming no drop line of its URL is a problem, skipped."""
    from dedup.droplog import DropLogWriter, read_log

    path = tmp_path / "dropped.jsonl"
    writer = DropLogWriter(path)
    b = writer.write({"status": "exact_duplicate", "rule": "content_hash", "duplicate_of": "http://r.example/"},
                     {"url": "http://b.example/", "title": "Line", "text": "The line closes. " * 40,
                      "fetched_at": 1.0})
    writer.write({"status": "exact_duplicate", "duplicate_of": "http://r.example/"},
                 {"url": "http://c.example/", "text": "c"})
    writer.seen(b)  # before the event: the fold starts counting again at it, so the writer leaves it out
    size = path.stat().st_size
    writer.again("http://b.example/", b, {"status": "exact_duplicate", "rule": "content_hash",
                                          "duplicate_of": "http://a.example/"}, fetched_at=2.0)
    writer.again("http://c.example/", b, {"status": "exact_duplicate", "duplicate_of": "http://a.example/"})
    writer.seen(b)
    writer.close()
    assert path.stat().st_size - size < 600  # two events and a seen line; the drop line is not repeated
    log = read_log(path)
    assert [e.url for e in log.entries] == ["http://c.example/", "http://b.example/"]
    entry = log.get("http://b.example/")
    assert (entry.duplicate_of, entry.drops, entry.seen, entry.offset, entry.fetched_at) == \
        ("http://a.example/", 2, 1, b, 2.0)
    assert log.get("http://c.example/").duplicate_of == "http://r.example/" and log.get("http://c.example/").drops == 1
    assert [p.line for p in log.problems] == [4] and "names no drop line" in log.problems[0].message
    line = log.line(entry)
    assert line["verdict"]["duplicate_of"] == "http://a.example/" and line["item"]["fetched_at"] == 2.0
    assert line["item"]["text"].startswith("The line closes.") and log.line(log.get("http://c.example/"))["url"] \
        == "http://c.example/"
    assert main(["dropped", "show", "http://b.example/", "--log", str(path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["entry"]["duplicate_of"] == "http://a.example/" and shown["entry"]["drops"] == 2, shown
    assert (shown["entry"]["line"], shown["entry"]["verdict_line"]) == (1, 3)  # where each is, for a reader of the file
    assert main(["dropped", "show", "http://b.example/", "--log", str(path)]) == 0
    assert "(log line 1, its verdict now line 3, dropped 2 times)" in capsys.readouterr().out
    assert main(["dropped", "stats", "--log", str(path)]) == 0
    assert "2 dropped pages (dropped 3 times)" in capsys.readouterr().out
