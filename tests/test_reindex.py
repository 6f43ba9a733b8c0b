"""``dedup reindex`` against the noida-db emulator of the Elasticsearch API (or a real cluster with
DEDUP_TEST_ES_URL; tests/es_server.py): a corpus index holding the sample site's pages (known
exact and near-duplicate groups, crawler/sample_site/expected.json) is reindexed; killed half-way
and resumed it ends identical to an uninterrupted run; --dry-run writes nothing."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from conftest import ALL_PATHS, EXACT, NEAR, ROOT, clean_env, read_jsonl
from crawler.sample_site import manifest_key
from dedup.cli import main

DEDUP = str(Path(sys.executable).with_name("dedup"))


def arrival(path: str) -> int:
    """The corpus document's arrival slot (hours from 2024-01-01): distinct while len(ALL_PATHS) is no multiple of 7."""
    return (ALL_PATHS.index(path) * 7) % len(ALL_PATHS)


def make_corpus(site_url: str, es_url: str, name: str) -> str:
    """An index ``name`` of the sample site's pages: url (keyword), html, title, a date, a site."""
    from elasticsearch import Elasticsearch, helpers

    client = Elasticsearch(es_url)
    client.indices.create(index=name, mappings={"properties": {
        "url": {"type": "keyword"}, "html": {"type": "text", "index": False}, "title": {"type": "text"},
        "crawled": {"type": "date"}, "site": {"type": "keyword"}}})
    docs = []
    for n, path in enumerate(ALL_PATHS):
        url = site_url.rstrip("/") + path
        with urllib.request.urlopen(url, timeout=10) as r:
            html = r.read().decode("utf-8")
        # a fixed, shuffled arrival time: the keep rule "oldest" decides which copy is kept
        day = arrival(path)
        docs.append({"_index": name, "_id": f"doc{n:03d}", "_source": {
            "url": url, "html": html, "title": path, "crawled": f"2024-01-{1 + day // 24:02d}T{day % 24:02d}:00:00Z",
            "site": "wrenfield"}})
    helpers.bulk(client, docs, refresh=True)
    client.close()
    return f"{es_url}/{name}"


@pytest.fixture(scope="module")
def corpus(site_url, es_url):
    """An index ``corpus-…`` of the sample site's pages (:func:`make_corpus`)."""
    from elasticsearch import Elasticsearch

    name = f"corpus-{int(time.time() * 1000) % 10**9}"
    yield make_corpus(site_url, es_url, name)
    client = Elasticsearch(es_url)
    client.options(ignore_status=404).indices.delete(index=name)
    client.close()


def reindex_args(source: str, dest: str, out: Path, *extra: str) -> list[str]:
    return ["reindex", source, dest, "--html-field", "html", "--time-field", "crawled", "--keep", "oldest",
            "--dropped-log", str(out / "dropped.jsonl"), "--checkpoint", str(out / "checkpoint.json"), *extra]


def dest_docs(dest: str) -> dict[str, dict]:
    from index import open_search

    search = open_search(dest, readonly=True)
    try:
        return {manifest_key(d["url"]): d["dedup"] for d in search.iter_docs()}
    finally:
        search.close()


def outcome(dest: str, out: Path) -> tuple[dict, dict]:
    kept = {p: (v["status"], v["duplicate_of"], v["rule"]) for p, v in dest_docs(dest).items()}
    dropped = {manifest_key(d["url"]): (d["verdict"]["status"], d["verdict"]["duplicate_of"], d["verdict"]["rule"])
               for d in read_jsonl(out / "dropped.jsonl")}
    return kept, dropped


@pytest.fixture(scope="module")
def uninterrupted(corpus, tmp_path_factory, es_url):
    out = tmp_path_factory.mktemp("reindex")
    dest = f"{es_url}/dest-{out.name.lower()}"
    assert main(reindex_args(corpus, dest, out, "--batch-size", "7", "--alias", f"alias-{out.name.lower()}")) == 0
    return dest, out


def test_reindex_keeps_one_per_exact_group_and_flags_near_copies(uninterrupted, corpus):
    dest, out = uninterrupted
    kept, dropped = outcome(dest, out)
    assert not set(kept) & set(dropped)
    assert sorted(set(kept) | set(dropped)) == ALL_PATHS  # the dropped log is complete
    for group in EXACT:
        members = set(group["paths"])
        assert len(members & set(kept)) == 1, group["name"]
        oldest = min(members, key=arrival)
        assert members & set(kept) == {oldest}, group["name"]  # --keep oldest: the first to arrive
        for path in members - set(kept):
            status, dup_of, _ = dropped[path]
            assert status == "exact_duplicate" and manifest_key(dup_of) in members
            assert manifest_key(dup_of) == oldest, path
    for group in NEAR:
        statuses = Counter(kept[p][0] for p in group["paths"])
        assert statuses["unique"] == 1, group["name"]
        for p in group["paths"]:
            if kept[p][0] != "unique":
                assert kept[p][0] in ("near_duplicate", "duplicate") and manifest_key(kept[p][1]) in group["paths"]


def test_reindex_destination_mirrors_the_source(uninterrupted, corpus, es_url):
    from elasticsearch import Elasticsearch

    dest, out = uninterrupted
    client = Elasticsearch(es_url)
    try:
        name = dest.rsplit("/", 1)[1]
        hit = client.search(index=name, size=1)["hits"]["hits"][0]
        assert hit["_id"].startswith("doc") and {"url", "html", "crawled", "site", "dedup"} <= set(hit["_source"])
        mapping = client.indices.get_mapping(index=name)[name]["mappings"]["properties"]
        assert mapping["crawled"]["type"] == "date" and mapping["dedup"]["properties"]["status"]["type"] == "keyword"
        assert name in client.indices.get_alias(name=f"alias-{out.name.lower()}")
    finally:
        client.close()
    lines = read_jsonl(out / "dropped.jsonl")
    assert all(line["item"]["source"]["url"] == line["url"] for line in lines)  # the whole document is kept
    assert json.loads((out / "checkpoint.json").read_text())["finished"] is True


# A run that SIGKILLs itself at a chosen point: ``where`` is ``record`` (the K-th decision, before
# its commit: the local index holds a record no decision names), ``decided`` (right after the K-th
# decision is recorded; it is committed with its batch, so the records of the batch are orphans) or ``sent`` (the K-th bulk write reached the cluster and the log, before the work folder
# says so).  Deterministic, unlike a timed kill, and it reaches the windows a timer rarely hits.
KILLER = """
import os, signal, sys, time
from index.elastic import reindex_state
where, k = sys.argv[1], int(sys.argv[2])
if where == "slow":  # a decision every 0.1 s, so a test can take the server away mid-run
    # Ctrl-C as a terminal's: a suite started with SIGINT ignored (a background `make test` of a shell without
    # job control) passes SIG_IGN on, Python then installs no KeyboardInterrupt handler and the run ignores it
    signal.signal(signal.SIGINT, signal.default_int_handler)
    original = reindex_state.WorkState.record
    def slow(self, *a, **kw):
        time.sleep(0.1)
        return original(self, *a, **kw)
    reindex_state.WorkState.record = slow
    from dedup.cli import main
    sys.exit(main(sys.argv[3:]))
name = {"record": "record", "decided": "record", "sent": "mark_sent"}[where]
original = getattr(reindex_state.WorkState, name)
calls = [0]
def patched(self, *a, **kw):
    calls[0] += 1
    if calls[0] == k and where != "decided":
        os.kill(os.getpid(), signal.SIGKILL)
    result = original(self, *a, **kw)
    if calls[0] == k:
        os.kill(os.getpid(), signal.SIGKILL)
    return result
setattr(reindex_state.WorkState, name, patched)
from dedup.cli import main
sys.exit(main(sys.argv[3:]))
"""


def killed_run(where: str, k: int, args: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-c", KILLER, where, str(k), *args], cwd=ROOT, env=clean_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]


def test_reindex_killed_anywhere_and_resumed_matches_uninterrupted(uninterrupted, corpus, tmp_path, es_url):
    """Five kills, each with another --batch-size: before the first bulk write with a record the
    decision never named, after a bulk write the work folder never marked, right after a decision;
    then a run to the end, with two worker processes.  Same kept set, verdicts and dropped log as one uninterrupted run."""
    dest = f"{es_url}/resumed-{tmp_path.name.lower()}"
    args = reindex_args(corpus, dest, tmp_path)
    killed_run("record", 3, args + ["--batch-size", "50"])
    assert not (tmp_path / "dropped.jsonl").exists()  # killed before anything was written
    # twelve decisions of a batch of 50, none committed: their records, more than the next run's window
    # (--batch-size 4, + 3) looks at a time, are all orphans it removes
    killed_run("decided", 12, args + ["--batch-size", "50"])
    assert decided(tmp_path / "checkpoint.work") == 0
    killed_run("sent", 2, args + ["--batch-size", "4"])
    assert list((tmp_path / "checkpoint.work" / "pending").iterdir())  # the batch the work folder never marked
    # killed with refresh off: --check refreshes before it lists (it read the unrefreshed writes as lost: helper-22)
    assert main(args + ["--check"]) == 0
    killed_run("decided", 9, args + ["--batch-size", "3"])
    assert main(args + ["--batch-size", "7", "--workers", "2", "--json"]) == 0  # features in 2 processes
    got, want = outcome(dest, tmp_path), outcome(*uninterrupted)
    for part, (a, b) in enumerate(zip(got, want)):
        assert {k: v for k, v in a.items() if b.get(k) != v} == {k: v for k, v in b.items() if a.get(k) != v}, part
    lines = read_jsonl(tmp_path / "dropped.jsonl")
    assert len(lines) == len({line["item"]["id"] for line in lines})  # none logged twice
    assert json.loads((tmp_path / "checkpoint.json").read_text())["processed"] == len(ALL_PATHS)
    assert not list((tmp_path / "checkpoint.work" / "pending").iterdir())  # every payload acknowledged: gone
    assert main(args + ["--check"]) == 0


def test_work_folder_payloads_are_named_only_once_committed(tmp_path):
    """The payloads waiting for the cluster live in files of pending/ (one a batch): a committed decision's
    are read back as they were written, an uncommitted one's are never named, and a file goes once the
    cluster has acknowledged all its decisions."""
    from index.elastic.reindex_state import WorkState

    state = WorkState(tmp_path)
    for n in range(3):
        state.record(f"d{n}", status="unique", kept=True, record_id=n + 1, es_record_id=None,
                     payload=b'{"html":"<p>%d</p>"}' % n, after=[n], commit=False)
    state.commit()
    state.record("d3", status="unique", kept=False, record_id=None, es_record_id=None, payload={"drop": "\u00e9"},
                 after=[3], commit=False)
    state.close()  # killed before the second batch's commit

    state = WorkState(tmp_path)
    assert [(sid, payload) for sid, _, _, payload, _ in state.unsent()] == [
        (f"d{n}", {"html": f"<p>{n}</p>"}) for n in range(3)]
    assert state.counts()[0] == 3 and state.get("search_after") == [2]
    assert len(list((tmp_path / "pending").iterdir())) == 2  # the committed batch's file and the killed one's
    state.record("d3", status="unique", kept=False, record_id=None, es_record_id=None, payload={"drop": "\u00e9"},
                 after=[3])
    state.mark_sent(["d0", "d1", "d2"])
    assert state.unsent_ids() == ["d3"] and [p for *_, p, _ in state.unsent()] == [{"drop": "\u00e9"}]
    assert len(list((tmp_path / "pending").iterdir())) == 1  # d3's, still to send
    state.mark_sent(["d3"])
    state.close()
    assert not list((tmp_path / "pending").iterdir())


def decided(work: Path) -> int:
    import sqlite3

    try:
        with sqlite3.connect(work / "state.sqlite", timeout=5) as db:
            return db.execute("SELECT count(*) FROM docs").fetchone()[0]
    except sqlite3.Error:
        return 0


def wait_for(condition, proc, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, "the reindex ended too early: " + proc.stderr.read()[-2000:]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def slow_run(args: list[str], work: Path, decisions: int) -> subprocess.Popen:
    """``dedup ARGS`` in a subprocess deciding a document every 0.1 s, once it has made ``decisions``."""
    proc = subprocess.Popen([sys.executable, "-c", KILLER, "slow", "0", *args], cwd=ROOT, env=clean_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: decided(work) >= decisions, proc)
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    return proc


def test_reindex_survives_outages(uninterrupted, site_url, tmp_path):
    """A server gone longer than the retry budget stops the run with one line and no document in
    `error`; the same command continues.  A server restarted within the budget (its point in time
    lost) costs nothing: the read resumes after the last document with a fresh point in time."""
    from es_server import ENV_URL, Emulator

    if os.environ.get(ENV_URL):
        pytest.skip("stops and restarts the server: emulator only")
    server = Emulator(tmp_path / "es")
    server.start()
    try:
        corpus = make_corpus(site_url, server.url, "corpus")
        dest = f"{server.url}/dest"
        args = reindex_args(corpus, dest, tmp_path, "--batch-size", "5", "--read-size", "5")
        work = tmp_path / "checkpoint.work"
        run = [sys.executable, "-c", KILLER, "slow", "0"]

        proc = subprocess.Popen([*run, *args, "--es-options", '{"retry_seconds": 2}'], cwd=ROOT, env=clean_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: decided(work) >= 8, proc)
        server.stop()
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 1, err
        assert "Traceback" not in err and "retry budget 2 s" in err, err
        assert 8 <= decided(work) < len(ALL_PATHS)
        server.start()

        proc = subprocess.Popen([*run, *args, "--es-options", '{"retry_seconds": 60}'], cwd=ROOT, env=clean_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        before = decided(work)
        # decisions are committed a batch (5) at a time: the next commit, with pages of the source still unread
        wait_for(lambda: decided(work) > before, proc)
        server.stop()
        server.start()
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert "Traceback" not in err and "Point in time" in err, err
        got, want = outcome(dest, tmp_path), outcome(*uninterrupted)
        assert got == want
        assert all(v[0] != "error" for v in got[0].values())
    finally:
        server.stop()


def test_inspection_tools_read_a_reindexed_destination(corpus, tmp_path, es_url, capsys):
    """dropped list/show/restore, explain and search on a reindex's output, as on a crawl's."""
    from elasticsearch import Elasticsearch

    dest = f"{es_url}/tools-{tmp_path.name.lower()}"
    log = str(tmp_path / "dropped.jsonl")
    assert main(reindex_args(corpus, dest, tmp_path)) == 0
    capsys.readouterr()
    assert main(["dropped", "list", "--log", log, "--index", dest, "--json"]) == 0
    dropped = json.loads(capsys.readouterr().out)
    assert len(dropped) == sum(len(g["paths"]) - 1 for g in EXACT)
    url = dropped[0]["url"]
    line = next(d for d in read_jsonl(tmp_path / "dropped.jsonl") if d["url"] == url)
    copied = line["verdict"]["duplicate_of"]

    assert main(["dropped", "show", url, "--log", log, "--index", dest]) == 0
    out = capsys.readouterr().out
    assert f"search index {dest}" in out and "not in the search index" not in out
    assert main(["explain", url, "--index", dest, "--log", log, "--no-corpus", "--json"]) == 0
    explained = json.loads(capsys.readouterr().out)
    assert explained["sources"]["b"] == f"index {dest}" and explained["odds_ratio"] >= 100  # exact copies

    title_word = next(w for w in line["item"]["text"].split() if len(w) > 6 and w.isalpha())
    assert main(["search", title_word, "--index", dest, "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert any(h["url"] == copied for h in hits), (title_word, copied, [h["url"] for h in hits])

    report = tmp_path / "report.html"
    assert main(["report", log, "-o", str(report), "--index", dest]) == 0
    said = capsys.readouterr().out
    flagged = sum(1 for v in dest_docs(dest).values() if v["status"] in ("near_duplicate", "duplicate"))
    assert f"{len(dropped)} dropped" in said and f"{flagged} flagged" in said, said
    assert copied in report.read_text()

    client = Elasticsearch(es_url)
    try:
        name = dest.rsplit("/", 1)[1]
        before = client.count(index=name)["count"]
        assert main(["dropped", "restore", url, "--log", log, "--index", dest]) == 0
        client.indices.refresh(index=name)
        got = client.get(index=name, id=line["item"]["id"])["_source"]  # its own _id, its whole _source
        assert {k: got[k] for k in line["item"]["source"]} == line["item"]["source"]
        assert got["dedup"]["status"] == "restored" and client.count(index=name)["count"] == before + 1
        # its main text, extracted as the reindex extracted the others' (issue 33: dedup search searches it)
        kept_copy = client.search(index=name, query={"term": {"url": copied}})["hits"]["hits"][0]["_source"]
        assert got["dedup"]["text"] == kept_copy["dedup"]["text"] != ""
        assert not client.options(ignore_status=404).get(index=name, id=url).get("found")

        # --check: in step (the restored page counted), then out of step once the server loses writes
        args = reindex_args(corpus, dest, tmp_path)
        assert main(args + ["--check"]) == 0
        assert "in step" in capsys.readouterr().out
        kept_id = next(h["_id"] for h in client.search(index=name, size=50)["hits"]["hits"]
                       if h["_id"] != line["item"]["id"])
        record = client.search(index=f"{name}-dedup", size=1)["hits"]["hits"][0]["_id"]
        client.delete(index=name, id=kept_id, refresh=True)
        client.delete(index=f"{name}-dedup", id=record, refresh=True)
        assert main(args + ["--check", "--json"]) == 1
        found = json.loads(capsys.readouterr().out)
        assert found["missing_in_destination"] == [kept_id] and found["missing_records"] == [record]
        assert not found["ok"] and found["restored"] == 1 and not found["dropped_but_in_destination"]
    finally:
        client.close()


def test_a_document_whose_html_is_no_string_leaves_the_tools_working(site_url, tmp_path, es_url, capsys):
    """A source document whose HTML is an array of strings (valid for an Elasticsearch text field) or a number
    is kept with status ``error``; explain and report still read the destination (they crashed on it)."""
    from elasticsearch import Elasticsearch

    name = f"bad-{int(time.time() * 1000) % 10**9}"
    source = make_corpus(site_url, es_url, name)
    client = Elasticsearch(es_url)
    try:
        client.index(index=name, id="array", document={"url": "http://bad.example/array", "crawled": "2020-01-01",
                                                        "html": ["<p>one</p>", "<p>two</p>"]})
        client.index(index=name, id="number", document={"url": "http://bad.example/number", "crawled": "2020-01-01",
                                                         "html": 42}, refresh=True)
        dest = f"{es_url}/bad-{tmp_path.name.lower()}"
        log = str(tmp_path / "dropped.jsonl")
        assert main(reindex_args(source, dest, tmp_path)) == 0
        errors = {u: v for u, v in dest_docs(dest).items() if v["status"] == "error"}
        assert len(errors) == 2, errors
        capsys.readouterr()
        url = read_jsonl(tmp_path / "dropped.jsonl")[0]["url"]
        assert main(["explain", url, "--index", dest, "--log", log, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["odds_ratio"] >= 100
        report = tmp_path / "report.html"
        assert main(["report", log, "-o", str(report), "--index", dest]) == 0
        said = capsys.readouterr().out
        assert "failed" not in said and "0 in the search index" not in said, said
    finally:
        client.options(ignore_status=404).indices.delete(index=name)
        client.close()


def test_reindex_dry_run_writes_nothing(corpus, tmp_path, es_url, capsys):
    from elasticsearch import Elasticsearch

    dest = f"{es_url}/dry-{tmp_path.name.lower()}"
    assert main(reindex_args(corpus, dest, tmp_path, "--dry-run", "--json")) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["dry_run"] is True and report["processed"] == len(ALL_PATHS)
    assert report["dropped"] == sum(len(g["paths"]) - 1 for g in EXACT)
    client = Elasticsearch(es_url)
    try:
        name = dest.rsplit("/", 1)[1]
        assert not client.indices.exists(index=name) and not client.indices.exists(index=f"{name}-dedup")
    finally:
        client.close()
    assert list(tmp_path.iterdir()) == []


def test_reindex_clear_errors(corpus, tmp_path, es_url, capsys):
    from elasticsearch import Elasticsearch

    name = corpus.rsplit("/", 1)[1]
    dest = f"{es_url}/x-{tmp_path.name.lower()}"
    assert main(reindex_args(f"{es_url}/no-such-index", dest, tmp_path)) == 2
    assert "no source index no-such-index" in capsys.readouterr().err
    assert main(reindex_args(corpus, f"{es_url}/y", tmp_path, "--keep", "shortest")) == 2
    assert "unknown keep rule" in capsys.readouterr().err
    for option, value, said in [
            ("--html-field", "html_body", f"--html-field field `html_body` not in the mapping of `{name}`; text fields "
                                          "are: html, title (keyword fields: site, url)"),
            ("--url-field", "link", f"--url-field field `link` not in the mapping of `{name}`"),
            ("--url-field", "html", f"--url-field field `html` of `{name}` is text, not sortable"),
            ("--time-field", "fetched", f"--time-field field `fetched` not in the mapping of `{name}`; sortable "
                                        "fields are: crawled, site, url"),
            ("--title-field", "headline", f"--title-field field `headline` not in the mapping of `{name}`")]:
        assert main(reindex_args(corpus, dest, tmp_path, option, value)) == 2
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1, err
    assert main(reindex_args(corpus, "http://127.0.0.1:9/dest", tmp_path, "--es-options",
                             '{"retry_seconds": 0.3}')) == 1
    err = capsys.readouterr().err
    assert "Elasticsearch at http://127.0.0.1:9 failed to check the destination" in err or "127.0.0.1:9" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    client = Elasticsearch(es_url)
    try:  # nothing left behind by the failed starts
        assert not client.indices.exists(index=dest.rsplit("/", 1)[1])
        assert not client.indices.exists(index=dest.rsplit("/", 1)[1] + "-dedup")
    finally:
        client.close()


def test_reindex_refuses_reruns_into_a_filled_destination(uninterrupted, corpus, tmp_path, capsys):
    dest, out = uninterrupted
    args = reindex_args(corpus, dest, tmp_path)  # another dropped log, so another work folder
    assert main(args) == 2
    err = capsys.readouterr().err
    assert f"destination {dest.rsplit('/', 1)[1]} already exists and holds another reindex" in err
    assert str(out) in err and "--force" in err
    assert main(reindex_args(corpus, dest, out)) == 2  # the finished run itself
    assert "finished already" in capsys.readouterr().err
    assert main(args + ["--force"]) == 0  # keyed writes: the same documents again
    assert "holds another reindex" not in capsys.readouterr().err


def test_reindex_refuses_a_second_run_at_once(corpus, tmp_path, es_url, capsys):
    dest = f"{es_url}/twice-{tmp_path.name.lower()}"
    args = reindex_args(corpus, dest, tmp_path, "--batch-size", "5")
    proc = slow_run(args, tmp_path / "checkpoint.work", 2)
    try:
        assert main(args) == 2
        err = capsys.readouterr().err
        assert f"another reindex (pid {proc.pid}) is running with work folder" in err, err
    finally:
        proc.kill()
        proc.communicate()
    assert main(args + ["--json"]) == 0  # and the interrupted one continues
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["processed"] == len(ALL_PATHS) and report["resumed_from"] >= 2
    # no terminal: progress as log lines, the last one for the whole corpus
    assert f"reindex: {len(ALL_PATHS)}/{len(ALL_PATHS)} documents (" in captured.err


def test_progress_bar_starts_at_the_resumed_count(monkeypatch):
    """After a resume the bar starts where the run starts: skipped documents make no rate or ETA."""
    import io

    from dedup.cli.commands import progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    show = progress("reindex", unit="doc")
    show(7000, 10000)
    show(7001, 10000)
    assert "7000/10000" in err.getvalue() and " 7000/10000 [00:00<?, ?doc/s]" in err.getvalue()


def test_worker_processes_give_what_this_process_gives(tmp_path, monkeypatch):
    """--workers N runs the crawl's worker path (dedup.workers.WorkerPool and
    dedup.sources.features_from_source) in N processes, a few documents ahead of the decisions: the same
    pages and features as without workers, in read order, and a document a worker fails on reported with the same error."""
    from dedup.deduplicator import DedupConfig, Deduplicator
    from dedup.store import MemoryIndex
    from index.elastic.reindex import Reindex

    story = ("<html><head><title>Ferry {0}</title></head><body><article><p>The evening ferry number {0} will "
             "stop running in November, the operator said. Commuters asked for a later bus.</p></article></body></html>")
    hits = [({"_id": str(i), "_source": {"url": f"http://a.example/{i}", "html": story.format(i)}}, [i])
            for i in range(7)]
    hits.insert(3, ({"_id": "bad", "_source": {"url": "http://a.example/bad", "html": 12345}}, ["bad"]))

    def featured(workers: int) -> list:
        job = Reindex("http://127.0.0.1:9/src", "http://127.0.0.1:9/dest", html_field="html", text_field=None,
                      dropped_log=tmp_path / "dropped.jsonl", workers=workers, read_size=3)
        out = []
        for hit, sort, page, features in job._featured(iter(hits), Deduplicator(MemoryIndex(), DedupConfig())):
            out.append((hit["_id"], sort, page, features if isinstance(features, str) else
                        (features.content_hash, features.simhash, features.shingles.tolist(),
                         features.signature.vector.tolist())))
        return out

    import index.elastic.reindex_decide as decide

    pools: list[int] = []

    class Counted(decide.WorkerPool):
        def __init__(self, workers: int) -> None:
            pools.append(workers)
            super().__init__(workers)

    monkeypatch.setattr(decide, "WorkerPool", Counted)
    none, one, two = featured(0), featured(1), featured(2)
    assert pools == [1, 2]  # --workers N: N worker processes; 0: none
    assert [r[0] for r in two] == [h["_id"] for h, _ in hits] and two == one == none
    assert two[3][2] is None and two[3][3] == "TypeError: HTML of http://a.example/bad must be bytes or str, got int"



def test_worker_processes_get_a_few_documents_ahead_not_a_read_page():
    """The first decision is handed on once the worker has it, with at most four documents a worker read
    ahead of it: sending a whole read page first kept the deciding process waiting on the workers' socket
    until they had parsed most of it (parsing and deciding did not overlap)."""
    from dedup.deduplicator import DedupConfig, Deduplicator
    from dedup.store import MemoryIndex
    from index.elastic.reindex_decide import PageMaker, featured

    story = ("<html><head><title>Ferry {0}</title></head><body><article><p>The evening ferry {0} stops."
             "</p></article></body></html>")
    read = []

    def hits():
        for i in range(40):
            read.append(i)
            yield {"_id": str(i), "_source": {"url": f"http://a.example/{i}", "html": story.format(i)}}, [i]

    make = PageMaker("url", "html", None, None, DedupConfig())
    out = featured(hits(), make, Deduplicator(MemoryIndex(), DedupConfig()), workers=1)
    first = next(out)
    assert first[0]["_id"] == "0" and first[2] is not None and len(read) <= 5
    assert [r[0]["_id"] for r in out] == [str(i) for i in range(1, 40)]

def test_progress_lines_time_the_rate_from_the_first_decision(monkeypatch, capsys):
    """Without a terminal, the rate and ETA are measured from the first decided document: the start-up
    before it (worker processes loading their tables, ~10 s) made the first line say '0.1/s, ETA 15096 s'."""
    from dedup.cli.commands import reindex as command

    clock = iter([0.0, 10.0, 12.0, 14.0])
    monkeypatch.setattr(command.time, "monotonic", lambda: next(clock))
    show = command.log_progress("reindex", every=1)
    show(0, 1000)    # the run starts
    show(1, 1000)    # its first decision, after 10 s of start-up
    show(101, 1000)  # 100 more in 2 s
    show(201, 1000)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "reindex: 1/1000 documents"
    assert lines[1] == "reindex: 101/1000 documents (50.0/s, ETA 17 s)"
    assert lines[2] == "reindex: 201/1000 documents (50.0/s, ETA 15 s)"


def test_ctrl_c_stops_with_one_line_and_the_same_command_resumes(uninterrupted, corpus, tmp_path, es_url):
    """Ctrl-C (SIGINT) mid-run: one line saying what is kept and how to resume, exit status 130, no
    traceback (it was a 40-line KeyboardInterrupt traceback); the same command then finishes the job
    with the uninterrupted run's verdicts."""
    import signal

    dest = f"{es_url}/ctrlc-{tmp_path.name.lower()}"
    args = reindex_args(corpus, dest, tmp_path, "--batch-size", "5")
    proc = slow_run(args, tmp_path / "checkpoint.work", 3)
    try:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert "interrupted" in err and "run the same command again" in err and str(tmp_path / "checkpoint.work") in err
    assert main(args) == 0
    assert outcome(dest, tmp_path) == outcome(*uninterrupted)


def test_the_readme_recipe_keeps_the_oldest_by_the_corpus_own_date_field(uninterrupted, corpus, tmp_path, es_url,
                                                                         capsys, caplog):
    """Issue 33, item 2: the README's command (no --time-field) on a corpus without ``fetched_at`` keeps the
    oldest by its one date field, as --time-field crawled does, and says which field it sorted by; a corpus
    with no date field, or with several, is refused in one line saying what to pass."""
    from elasticsearch import Elasticsearch

    dest = f"{es_url}/readme-{tmp_path.name.lower()}"
    assert main(["reindex", corpus, dest, "--url-field", "url", "--html-field", "html", "--keep", "oldest",
                 "--dropped-log", str(tmp_path / "dropped.jsonl")]) == 0
    assert "Traceback" not in capsys.readouterr().err
    assert "--keep oldest: by `crawled`, the only date field of" in caplog.text, caplog.text
    assert outcome(dest, tmp_path) == outcome(*uninterrupted)
    client = Elasticsearch(es_url)
    try:
        for name, dates in (("nodate", {}), ("twodates", {"crawled": {"type": "date"}, "published": {"type": "date"}})):
            index = f"{name}-{tmp_path.name.lower()}"
            client.indices.create(index=index, mappings={"properties": {
                "url": {"type": "keyword"}, "html": {"type": "text"}, "rank": {"type": "long"}, **dates}})
            try:
                assert main(["reindex", f"{es_url}/{index}", f"{es_url}/{index}-v2", "--html-field", "html",
                             "--dropped-log", str(tmp_path / f"{name}.jsonl")]) == 2
                err = capsys.readouterr().err
                assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
                assert f"--keep oldest needs each document's time: `{index}` has no field `fetched_at`" in err, err
                said = ("and no date field" if not dates else "and several date fields: crawled, published")
                assert said in err and "pass --time-field NAME (sortable fields are: " in err, err
                assert "or another keep rule (--keep field:NAME)" in err, err
                assert not client.indices.exists(index=f"{index}-v2")
            finally:
                client.options(ignore_status=404).indices.delete(index=index)
    finally:
        client.close()


def test_source_key_is_the_sources_content_not_its_order():
    """The update key: the same for the same ``_source`` whatever its keys' order, another for any other value
    or type (a string against the number it spells, a split string), 32 hex digits (16: an earlier version's)."""
    from index.elastic.reindex_read import legacy_source_key, source_key

    doc = {"url": "http://a/1", "html": "<p>h\u00e9llo \u2028</p>" * 500, "crawled": 1700000000, "tags": ["a", "b"]}
    key = source_key(doc)
    assert len(key) == 32 and len(legacy_source_key(doc)) == 16
    assert source_key(dict(reversed(list(doc.items())))) == key
    for other in ({**doc, "crawled": "1700000000"}, {**doc, "tags": ["ab"]}, {**doc, "tags": ["a", "b", None]},
                  {**doc, "html": doc["html"] + " "}, {k: v for k, v in doc.items() if k != "tags"}):
        assert source_key(other) != key
    # the reindex's keys (source_keys): the HTML's UTF-8 made once for both, the same source key as without and
    # the body key's bytes, whatever the HTML field holds (an empty one's body is the title and text, and "" is
    # one object in every field holding it; a value of a wrong type; none)
    from dedup.deduplicator import DedupConfig
    from dedup.sources import body_key
    from index.elastic.reindex_decide import PageMaker
    from index.elastic.reindex_read import source_keys

    make = PageMaker("url", "html", "text", "title", DedupConfig())
    base = {"url": "http://a/2", "title": "T", "text": "Some text.", "note": "", "tags": ["", "x"]}
    for html in (doc["html"], "", None, 5, ["<p>x</p>"]):
        one = {**base, "html": html} if html is not None else base
        source = make.source({"_id": "2", "_source": one})
        skey, data = source_keys(one, source)
        assert skey == source_key(one) and data == source.body() and body_key(data) == source.body_key, html
    assert source_keys(doc, make.source({"_id": "1", "_source": doc}))[1] == doc["html"].encode("utf-8")
