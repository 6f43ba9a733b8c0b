"""``dedup reindex ... --update`` against the noida-db emulator (or a real cluster with DEDUP_TEST_ES_URL):
a corpus of the sample site's pages is reindexed, some source documents are edited (a sentence added to
a distinct page, an exact copy turned into distinct text, a distinct page turned into an exact copy of
another) and one is added, then the same command with ``--update`` brings the destination up to date:
one record per URL in ``DEST-dedup``, no verdict naming its own URL, the destination holding the latest
text and verdicts, the dropped log repeating nothing, and an update with nothing changed sending
nothing. An update killed anywhere and resumed ends as the uninterrupted update."""
from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter

import pytest

from conftest import ALL_PATHS, EXACT, read_jsonl
from crawler.sample_site import manifest_key
from dedup.cli import main
from test_reindex import arrival, dest_docs, killed_run, make_corpus, reindex_args

SENTENCE = ("The robotics team will show its harbour-cleaning drone at the spring fair, its coach said, "
            "after a season of trials along the old quay.")
BAKERY = ("The bakery on Mill Street will open an hour earlier from next month, its owner said, so that commuters "
          "catching the first ferry can buy fresh bread before they leave the harbour. The owner has hired two "
          "apprentices from the technical college and bought a second oven from a closed hotel kitchen in the "
          "valley. Regulars asked for rye loaves on Saturdays, and the bakery says it will try them in May.")
CHOIR = ("The town choir is looking for tenors before its winter concert in the chapel on Quarry Lane. Rehearsals "
         "move to Thursday evenings in the school hall, where the heating was repaired last week. The conductor "
         "said new singers need no audition, only a willingness to learn three carols in Welsh and one in Latin.")

ROOF = next(g for g in EXACT if g["name"] == "library-roof")
ROOF_KEPT = min(ROOF["paths"], key=arrival)  # --keep oldest
ROOF_COPY = next(p for p in sorted(ROOF["paths"], key=arrival, reverse=True) if p != ROOF_KEPT)
GROWN = "/articles/robotics-team.html"  # distinct, a sentence added
COPIED = "/articles/mill-makerspace.html"  # distinct, turned into an exact copy of ROOF_KEPT
ADDED = "/articles/bakery-hours.html"


def outcome(dest: str, out) -> tuple[dict, dict]:
    """``(kept, dropped)``: path -> (status, duplicate_of, rule) of the destination's documents, and of the
    dropped log's entries still dropped (its lines folded per URL: the latest drop, unless a `kept` event follows)."""
    from dedup.droplog import read_log

    kept = {p: (v["status"], v["duplicate_of"], v["rule"]) for p, v in dest_docs(dest).items()}
    dropped = {manifest_key(e.url): (e.status, e.duplicate_of, e.rule) for e in read_log(out / "dropped.jsonl").entries
               if e.state == "dropped"}
    return kept, dropped


def article(title: str, text: str) -> str:
    sentences = [s.strip() + "." for s in text.split(".") if s.strip()]
    paragraphs = "".join(f"<p>{s}</p>" for s in sentences)
    return (f"<html><head><title>{title}</title></head><body><nav><a href='/'>Home</a></nav>"
            f"<article><h1>{title}</h1>{paragraphs}</article></body></html>")


def edit_corpus(es_url: str, corpus: str) -> dict[str, str]:
    """The edits of the module docstring, made to the source index; returns path -> the new HTML."""
    import re

    from elasticsearch import Elasticsearch

    name = corpus.rsplit("/", 1)[1]
    client = Elasticsearch(es_url)
    try:
        hits = client.search(index=name, size=100)["hits"]["hits"]
        by_path = {manifest_key(h["_source"]["url"]): h for h in hits}
        new: dict[str, str] = {}

        def put(path: str, html: str) -> None:
            hit = by_path[path]
            client.index(index=name, id=hit["_id"], document={**hit["_source"], "html": html})
            new[path] = html

        html = by_path[GROWN]["_source"]["html"]
        longest = max(re.findall(r"<p>(.*?)</p>", html, flags=re.S), key=len)
        put(GROWN, html.replace(f"<p>{longest}</p>", f"<p>{longest} {SENTENCE}</p>", 1))
        put(ROOF_COPY, article("Choir seeks tenors", CHOIR))
        put(COPIED, by_path[ROOF_KEPT]["_source"]["html"])
        url = by_path[GROWN]["_source"]["url"].replace(GROWN, ADDED)
        new[ADDED] = article("Bakery hours", BAKERY)
        client.index(index=name, id="doc999", document={
            "url": url, "html": new[ADDED], "title": ADDED, "crawled": "2024-02-01T00:00:00Z", "site": "wrenfield"})
        client.indices.refresh(index=name)
        return new
    finally:
        client.close()


def run(args: list[str]) -> dict:
    """``dedup ARGS --json``: its report, and the bulk requests and documents it sent to the cluster."""
    import contextlib
    import io

    from elasticsearch import helpers

    sent = {"requests": 0, "actions": 0}
    original = helpers.streaming_bulk

    def counting(client, actions, *a, **kw):
        actions = list(actions)
        sent["requests"] += 1
        sent["actions"] += len(actions)
        return original(client, actions, *a, **kw)

    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out):
        mp.setattr(helpers, "streaming_bulk", counting)
        assert main(args + ["--json"]) == 0
    report = json.loads(out.getvalue())
    report["sent"] = sent
    return report


def records(es_url: str, dest: str) -> list[dict]:
    from elasticsearch import Elasticsearch

    name = dest.rsplit("/", 1)[1] + "-dedup"
    client = Elasticsearch(es_url)
    try:
        client.indices.refresh(index=name)
        return [h["_source"] for h in client.search(index=name, size=1000)["hits"]["hits"]]
    finally:
        client.close()


def dest_sources(es_url: str, dest: str) -> dict[str, dict]:
    from elasticsearch import Elasticsearch

    name = dest.rsplit("/", 1)[1]
    client = Elasticsearch(es_url)
    try:
        client.indices.refresh(index=name)
        return {manifest_key(h["_source"]["url"]): h["_source"]
                for h in client.search(index=name, size=1000)["hits"]["hits"]}
    finally:
        client.close()


@pytest.fixture(scope="module")
def updated(site_url, es_url, tmp_path_factory):
    """The corpus reindexed into two destinations, then edited; the first destination brought up to date
    by one update (then a second update with nothing changed, whose lines and outcome are kept apart)."""
    from elasticsearch import Elasticsearch

    base = tmp_path_factory.mktemp("update")
    name = f"upd-{int(time.time() * 1000) % 10**9}"
    corpus = make_corpus(site_url, es_url, name)
    one, two = base / "one", base / "two"
    one.mkdir(), two.mkdir()
    dest_one, dest_two = f"{es_url}/{name}-one", f"{es_url}/{name}-two"
    args_one, args_two = reindex_args(corpus, dest_one, one), reindex_args(corpus, dest_two, two)
    assert main(args_one + ["--batch-size", "7"]) == 0
    assert main(args_two + ["--batch-size", "5", "--update"]) == 0  # --update on no work folder: a first run
    first = outcome(dest_one, one)
    first_lines = read_jsonl(one / "dropped.jsonl")
    new = edit_corpus(es_url, corpus)
    report = run(args_one + ["--update", "--batch-size", "3"])
    state = {"outcome": outcome(dest_one, one), "lines": read_jsonl(one / "dropped.jsonl"),
             "docs": dest_sources(es_url, dest_one), "records": records(es_url, dest_one),
             "check": main(args_one + ["--check"])}
    again = run(args_one + ["--update", "--batch-size", "4"])
    yield {"corpus": corpus, "dest": dest_one, "out": one, "args": args_one, "first": first,
           "first_lines": first_lines, "new": new, "dest_two": dest_two, "out_two": two, "args_two": args_two,
           "report": report, "again": again, **state}
    client = Elasticsearch(es_url)
    for index in (name, f"{name}-one", f"{name}-one-dedup", f"{name}-two", f"{name}-two-dedup"):
        client.options(ignore_status=404).indices.delete(index=index)
    client.close()


def test_a_finished_reindex_points_to_update(updated, capsys):
    assert main(updated["args"]) == 2
    err = capsys.readouterr().err
    assert "finished already" in err and "--update" in err and len(err.strip().splitlines()) == 1, err


def test_update_brings_the_destination_up_to_date(updated):
    new, report = updated["new"], updated["report"]
    assert report["processed"] == len(ALL_PATHS) + 1
    assert report["updated"] == 3 and report["unchanged"] == len(ALL_PATHS) - 3, report

    kept, dropped = updated["outcome"]
    first_kept, first_dropped = updated["first"]
    docs = updated["docs"]
    # the latest text and verdicts
    assert set(kept) == (set(first_kept) | {ROOF_COPY, ADDED}) - {COPIED}
    for path in (GROWN, ROOF_COPY, ADDED):
        assert docs[path]["html"] == new[path]
    assert kept[GROWN][0] == "unique" and docs[GROWN]["dedup"]["replaced"]["status"] == "unique"
    assert kept[ROOF_COPY][0] == "unique" and docs[ROOF_COPY]["dedup"]["rule"] != "replay_of_recorded_page"
    assert kept[ADDED][0] == "unique" and "replaced" not in docs[ADDED]["dedup"]
    assert COPIED not in docs
    status, dup_of, rule = dropped[COPIED]
    assert status == "exact_duplicate" and manifest_key(dup_of) == ROOF_KEPT and rule == "content_hash"
    for path in set(first_kept) - {GROWN, COPIED}:  # unchanged: the verdict of the first run, as it was
        assert kept[path] == first_kept[path], path
    # no verdict names its own URL
    for path, doc in docs.items():
        assert doc["dedup"]["duplicate_of"] != doc["url"] and doc["dedup"].get("nearest") != doc["url"], path
    lines = updated["lines"]
    for line in lines:
        if "verdict" in line:
            assert line["verdict"]["duplicate_of"] != line["url"]
    # one record per URL, and a record for every kept document (none for the dropped one)
    recs = updated["records"]
    assert Counter(r["url"] for r in recs).most_common(1)[0][1] == 1
    assert {manifest_key(r["url"]) for r in recs} == set(kept)
    assert next(r for r in recs if manifest_key(r["url"]) == GROWN)["status"] == "unique"
    # the dropped log: the first run's lines as they were, one drop line for the page dropped now, one
    # `kept` event for the copy that became distinct; nothing logged twice
    assert lines[:len(updated["first_lines"])] == updated["first_lines"]
    added = lines[len(updated["first_lines"]):]
    assert sorted((line.get("event") or "", manifest_key(line["url"])) for line in added) == [
        ("", COPIED), ("kept", ROOF_COPY)], added
    assert updated["check"] == 0  # --check: in step


def test_an_update_with_nothing_changed_sends_nothing(updated):
    again = updated["again"]
    assert again["sent"] == {"requests": 0, "actions": 0}, again
    assert again["updated"] == 0 and again["unchanged"] == len(ALL_PATHS) + 1
    assert read_jsonl(updated["out"] / "dropped.jsonl") == updated["lines"]
    assert outcome(updated["dest"], updated["out"]) == updated["outcome"]


def test_update_killed_anywhere_and_resumed_matches_uninterrupted(updated, es_url):
    dest, out, args = updated["dest_two"], updated["out_two"], updated["args_two"] + ["--update"]
    killed_run("record", 2, args + ["--batch-size", "50"])  # the local index changed, the decision not committed
    with sqlite3.connect(out / "checkpoint.work" / "state.sqlite") as db:
        intent = json.loads(db.execute("SELECT value FROM meta WHERE key = 'intent'").fetchone()[0])
    assert intent["own"] is not None  # killed inside the update of a kept page: its older record is put back
    killed_run("sent", 1, args + ["--batch-size", "1"])
    killed_run("decided", 1, args + ["--batch-size", "2"])
    report = run(args + ["--batch-size", "3", "--workers", "2"])
    assert report["processed"] == len(ALL_PATHS) + 1
    assert outcome(dest, out) == updated["outcome"]
    docs = dest_sources(es_url, dest)
    for path, doc in updated["docs"].items():
        a, b = dict(docs[path]["dedup"]), dict(doc["dedup"])
        if "replaced" in b:  # the older version's record id is the local index's own
            a["replaced"] = {k: v for k, v in a["replaced"].items() if k != "record"}
            b["replaced"] = {k: v for k, v in b["replaced"].items() if k != "record"}
        assert {k: v for k, v in a.items() if k != "duplicate_id"} == \
            {k: v for k, v in b.items() if k != "duplicate_id"}, path
    lines = read_jsonl(out / "dropped.jsonl")
    keys = [(line.get("event"), line["url"], line.get("body")) for line in lines]
    assert len(keys) == len(set(keys))  # nothing logged twice
    assert Counter(r["url"] for r in records(es_url, dest)).most_common(1)[0][1] == 1
    assert main(updated["args_two"] + ["--check"]) == 0


def test_an_older_work_folder_opens_and_updates(updated, es_url, tmp_path):
    """A work folder of a version that kept no keys (state.sqlite without the columns): opened, given
    them; its first update decides the kept documents again (their texts unchanged: the same verdicts and
    records) and knows the dropped ones from their drop lines (nothing logged again)."""
    from index.elastic.reindex_state import WorkState

    old = tmp_path / "old"
    old.mkdir()
    with sqlite3.connect(old / "state.sqlite") as db:  # the schema before keys and ops
        db.executescript("""
            CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE docs (source_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, status TEXT NOT NULL,
                kept INTEGER NOT NULL, record_id INTEGER, es_record_id INTEGER, sent INTEGER NOT NULL DEFAULT 0);
            CREATE TABLE pending (source_id TEXT PRIMARY KEY, payload TEXT NOT NULL);
            INSERT INTO docs VALUES ('a', 1, 'unique', 1, 1, 77, 0);
            INSERT INTO pending VALUES ('a', '{"url": "u"}');""")
    state = WorkState(old)
    assert state.doc("a") == ("unique", True, 1, 77, None, None)
    assert list(state.unsent()) == [("a", True, 1, {"url": "u"}, {})]
    state.record("a", status="unique", kept=True, record_id=2, es_record_id=78, payload={"url": "v"}, after=None,
                 body="b", source_key="s", ops={"old_record": 77})
    assert state.doc("a") == ("unique", True, 2, 78, "b", "s") and state.max_record_id() == 2
    assert list(state.unsent()) == [("a", True, 2, {"url": "v"}, {"old_record": 77})]
    state.close()

    out = tmp_path / "out"
    out.mkdir()
    dest = f"{updated['dest']}-three"
    args = reindex_args(updated["corpus"], dest, out)
    try:
        assert main(args) == 0
        before, lines = outcome(dest, out), read_jsonl(out / "dropped.jsonl")
        with sqlite3.connect(out / "checkpoint.work" / "state.sqlite") as db:
            db.execute("UPDATE docs SET body = NULL, source_key = NULL")
        report = run(args + ["--update"])
        kept, dropped = before
        assert report["updated"] == len(kept) and report["unchanged"] == len(dropped), report
        assert outcome(dest, out) == before and read_jsonl(out / "dropped.jsonl") == lines
        assert Counter(r["url"] for r in records(es_url, dest)).most_common(1)[0][1] == 1
        assert main(args + ["--check"]) == 0
        assert run(args + ["--update"])["sent"] == {"requests": 0, "actions": 0}
    finally:
        from elasticsearch import Elasticsearch

        client = Elasticsearch(es_url)
        for index in (dest.rsplit("/", 1)[1], dest.rsplit("/", 1)[1] + "-dedup"):
            client.options(ignore_status=404).indices.delete(index=index)
        client.close()


def test_update_is_refused_with_slices_and_dry_run(tmp_path, capsys):
    for extra, said in ((["--slices", "2", "--slice", "0"], "--update is not supported with --slices"),
                        (["--dry-run"], "it does not preview an --update")):
        args = reindex_args("http://127.0.0.1:9/src", "http://127.0.0.1:9/dest", tmp_path, "--update", *extra)
        assert main(args) == 2
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1, err
    assert list(tmp_path.iterdir()) == []


def test_an_update_decides_again_a_copy_whose_kept_page_changed(es_url, tmp_path):
    """helper-22: a kept page that had dropped exact copies got new text; ``--update`` skipped the unchanged
    copies, so their text was in no destination document though still in the source (and ``--check`` said
    in step). A crawl decides such a page again; so does an update now: the oldest copy is kept (a ``kept``
    event); the next one's text is held again, by that copy, and it is dropped again naming it."""
    from elasticsearch import Elasticsearch

    from dedup.droplog import read_log
    from index import open_search

    name = f"updcopy-{int(time.time() * 1000) % 10**9}"
    client = Elasticsearch(es_url)
    client.indices.create(index=name, mappings={"properties": {
        "url": {"type": "keyword"}, "html": {"type": "text", "index": False}, "crawled": {"type": "date"}}})
    docs = {"a": (article("Bakery hours", BAKERY), 1), "b": (article("Bakery hours", BAKERY), 2),
            "c": (article("Bakery hours", BAKERY), 3), "d": (article("Choir seeks tenors", CHOIR), 4)}
    try:
        for key, (html, day) in docs.items():
            client.index(index=name, id=key, document={"url": f"http://{key}.example/bakery", "html": html,
                                                       "crawled": f"2024-01-0{day}T00:00:00Z"})
        client.indices.refresh(index=name)
        source, dest = f"{es_url}/{name}", f"{es_url}/{name}-v2"
        args = reindex_args(source, dest, tmp_path)
        assert main(args) == 0
        first = {e.url: e.state for e in read_log(tmp_path / "dropped.jsonl").entries}
        assert first == {"http://b.example/bakery": "dropped", "http://c.example/bakery": "dropped"}, first
        client.index(index=name, id="a", document={"url": "http://a.example/bakery", "crawled": "2024-01-01T00:00:00Z",
                                                   "html": article("Bakery hours", BAKERY + " " + SENTENCE * 3)})
        client.indices.refresh(index=name)
        assert main(args + ["--update"]) == 0
        search = open_search(dest, readonly=True)
        try:
            kept = {d["url"]: d["dedup"]["status"] for d in search.iter_docs()}
        finally:
            search.close()
        assert set(kept) == {"http://a.example/bakery", "http://b.example/bakery", "http://d.example/bakery"}, kept
        assert kept["http://b.example/bakery"] != "exact_duplicate", kept
        log = {e.url: (e.state, e.duplicate_of) for e in read_log(tmp_path / "dropped.jsonl").entries}
        assert log["http://b.example/bakery"][0] == "kept", log
        # the third copy stays dropped, its text b's now, a page of a's group (b names a); decided again, as a
        # crawl does, since a no longer holds it: its drop line names b as the page matched (helper-24: it named
        # a, which `explain` compared it with)
        assert log["http://c.example/bakery"] == ("dropped", "http://a.example/bakery"), log
        assert read_log(tmp_path / "dropped.jsonl").get("http://c.example/bakery").nearest == "http://b.example/bakery"
        assert len(read_jsonl(tmp_path / "dropped.jsonl")) == 4  # three drop lines and b's kept event
        assert main(args + ["--update"]) == 0  # settled: nothing decided again
        assert len(read_jsonl(tmp_path / "dropped.jsonl")) == 4
        assert main(args + ["--check"]) == 0
    finally:
        for index in (name, f"{name}-v2", f"{name}-v2-dedup"):
            client.options(ignore_status=404).indices.delete(index=index)
        client.close()


def test_restore_puts_back_a_document_without_a_url_field_as_it_was(es_url, tmp_path):
    """helper-22: a dropped document with no URL field (logged under its _id) was restored with ``url`` set to
    that _id in its ``_source``; restore puts back the whole ``_source`` as it was, and the verdict beside it."""
    from elasticsearch import Elasticsearch

    name = f"nourl-{int(time.time() * 1000) % 10**9}"
    client = Elasticsearch(es_url)
    client.indices.create(index=name, mappings={"properties": {
        "url": {"type": "keyword"}, "html": {"type": "text", "index": False}, "crawled": {"type": "date"}}})
    html = article("Bakery hours", BAKERY)
    try:
        client.index(index=name, id="first", document={"url": "http://a.example/bakery", "html": html,
                                                       "crawled": "2024-01-01T00:00:00Z"})
        client.index(index=name, id="orphan", document={"html": html, "crawled": "2024-01-02T00:00:00Z"})
        client.indices.refresh(index=name)
        dest = f"{es_url}/{name}-v2"
        args = reindex_args(f"{es_url}/{name}", dest, tmp_path)
        assert main(args) == 0
        log = str(tmp_path / "dropped.jsonl")
        assert main(["dropped", "restore", "orphan", "--log", log, "--index", dest]) == 0
        client.indices.refresh(index=f"{name}-v2")
        got = client.get(index=f"{name}-v2", id="orphan")["_source"]
        assert set(got) == {"html", "crawled", "dedup"} and got["dedup"]["status"] == "restored", got.keys()
    finally:
        for index in (name, f"{name}-v2", f"{name}-v2-dedup"):
            client.options(ignore_status=404).indices.delete(index=index)
        client.close()


def test_an_update_never_leaves_two_documents_naming_each_other(es_url, tmp_path):
    """helper-24: ``--update`` left cycles and pages naming a dropped page. A kept page edited by a sentence,
    whose best match is its own flagged copy, stays its group's kept page (rule group_root); a kept page put
    back as an exact copy of its flagged copy is dropped and that copy becomes its group's kept page
    (``regrouped_from``), in the destination and in the dedup records, as a crawl does."""
    from elasticsearch import Elasticsearch

    from index import open_index, open_search

    name = f"updcycle-{int(time.time() * 1000) % 10**9}"
    client = Elasticsearch(es_url)
    client.indices.create(index=name, mappings={"properties": {
        "url": {"type": "keyword"}, "html": {"type": "text", "index": False}, "crawled": {"type": "date"}}})
    flagged = BAKERY.replace("rye loaves on Saturdays", "spelt loaves on Sundays")
    docs = {"a": (article("Bakery hours", BAKERY), 1), "b": (article("Bakery opens earlier", flagged), 2),
            "c": (article("Choir seeks tenors", CHOIR), 3), "d": (article("Choir wants tenors", CHOIR.replace(
                "three carols in Welsh", "four carols in Cornish")), 4)}

    def put(key, html, day):
        client.index(index=name, id=key, document={"url": f"http://{key}.example/", "html": html,
                                                   "crawled": f"2024-01-0{day}T00:00:00Z"})

    def verdicts():
        search = open_search(dest, readonly=True)
        try:
            return {d["url"]: d["dedup"] for d in search.iter_docs()}
        finally:
            search.close()

    try:
        for key, (html, day) in docs.items():
            put(key, html, day)
        client.indices.refresh(index=name)
        source, dest = f"{es_url}/{name}", f"{es_url}/{name}-v2"
        args = reindex_args(source, dest, tmp_path)
        assert main(args) == 0
        first = {p: (v["status"], v["duplicate_of"]) for p, v in verdicts().items()}
        assert first["http://b.example/"][1] == "http://a.example/" and first["http://a.example/"][0] == "unique"
        put("a", article("Bakery hours", BAKERY + " " + SENTENCE), 1)  # a sentence more: still b's kept page
        put("c", article("Choir wants tenors", CHOIR.replace("three carols in Welsh", "four carols in Cornish")), 3)
        client.indices.refresh(index=name)
        killed_run("record", 2, args + ["--update"])  # killed after c's regroup of d, before c's decision is committed
        with sqlite3.connect(tmp_path / "checkpoint.work" / "state.sqlite") as db:
            intent = json.loads(db.execute("SELECT value FROM meta WHERE key = 'intent'").fetchone()[0])
        assert intent["regroup"]["record"]["url"] == "http://d.example/"  # d's older record, put back on resume
        assert main(args + ["--update"]) == 0
        docs_now = verdicts()
        a, b, d = (docs_now[f"http://{k}.example/"] for k in "abd")
        assert (a["status"], a["duplicate_of"], a["rule"]) == ("unique", None, "group_root"), a
        assert b["duplicate_of"] == "http://a.example/"
        assert "http://c.example/" not in docs_now  # put back as d's text: dropped, d its group's kept page
        assert (d["status"], d["duplicate_of"], d["rule"], d["regrouped_from"]) == (
            "unique", None, "regrouped", "http://c.example/"), d
        with open_index(dest) as index:
            record = index.by_url("http://d.example/")
            assert (record.status, record.duplicate_of) == ("unique", None) and index.by_url("http://c.example/") is None
        assert main(args + ["--check"]) == 0
        assert main(args + ["--update"]) == 0  # nothing changed: nothing moves
        assert verdicts() == docs_now
    finally:
        for index in (name, f"{name}-v2", f"{name}-v2-dedup"):
            client.options(ignore_status=404).indices.delete(index=index)
        client.close()


def test_an_update_decides_again_a_flagged_copy_whose_kept_page_went(es_url, tmp_path, capsys):
    """helper-24: flagged documents went on naming a page the update had dropped (``--check`` listed them, an
    update decided them again only when they changed). Here b, flagged as a copy of a, after a became an exact
    copy of c: the update decides b again after its read (a comes before b in the read order: it was not
    changed yet when b was read) and b is its group's kept page now; ``--check`` finds no group problem."""
    from elasticsearch import Elasticsearch

    name = f"updgroups-{int(time.time() * 1000) % 10**9}"
    client = Elasticsearch(es_url)
    client.indices.create(index=name, mappings={"properties": {
        "url": {"type": "keyword"}, "html": {"type": "text", "index": False}, "crawled": {"type": "date"}}})
    flagged = BAKERY.replace("rye loaves on Saturdays", "spelt loaves on Sundays")

    def put(key, html, day):
        client.index(index=name, id=key, document={"url": f"http://{key}.example/", "html": html,
                                                   "crawled": f"2024-01-0{day}T00:00:00Z"})

    try:
        put("a", article("Bakery hours", BAKERY), 1)
        put("b", article("Bakery opens earlier", flagged), 2)
        put("c", article("Choir seeks tenors", CHOIR), 3)
        put("d", article("Bakery hours", SENTENCE), 4)
        client.indices.refresh(index=name)
        args = reindex_args(f"{es_url}/{name}", f"{es_url}/{name}-v2", tmp_path)
        assert main(args) == 0 and main(args + ["--check"]) == 0
        put("a", article("Choir seeks tenors", CHOIR), 1)  # a is c's exact copy now: dropped
        client.delete(index=name, id="d")  # gone from the source: it stays in the destination, and is said so
        client.indices.refresh(index=name)
        capsys.readouterr()
        assert main(args + ["--update"]) == 0
        summary = capsys.readouterr().out
        assert "update: 2 unchanged, 1 changed and decided again, 0 added, 1 decided before and no longer in the" \
            in summary, summary
        assert "update: 1 unchanged decided again, the page their verdict named having changed or gone" in summary
        dest = {h["_id"]: h["_source"]["dedup"] for h in client.search(index=f"{name}-v2", size=10)["hits"]["hits"]}
        assert dest["b"]["status"] == "unique" and not dest["b"].get("duplicate_of"), dest
        assert "a" not in dest and dest["c"]["status"] == "unique", dest
        assert main(args + ["--check"]) == 0
        out = capsys.readouterr().out
        assert "in step" in out and "GROUPS:" not in out, out
        capsys.readouterr()
        assert main(args + ["--update"]) == 0  # and settled: the next update decides nothing again
        assert "decided again, the page" not in capsys.readouterr().out
    finally:
        for index in (name, f"{name}-v2", f"{name}-v2-dedup"):
            client.options(ignore_status=404).indices.delete(index=index)
        client.close()


def test_check_lists_flagged_documents_naming_a_page_not_kept_or_flagged():
    """``--check``'s group test, on the destination's documents as it reads them (``_id -> (slice, URL,
    duplicate_of)``): a flagged document naming a page not kept, or one itself flagged (a chain or a cycle)."""
    from index.elastic.reindex_check import _group_problems

    docs = {"a": (None, "http://a/", None), "b": (None, "http://b/", "http://gone/"),
            "c": (None, "http://c/", "http://a/"), "d": (None, "http://d/", "http://c/")}
    assert _group_problems(docs) == {"naming_a_page_not_kept": ["b"], "naming_a_flagged_page": ["d"]}


class Undated:
    """A source index of ``url`` and ``html`` with no date field, reindexed with ``--keep field:url``."""

    def __init__(self, es_url: str, out) -> None:
        from elasticsearch import Elasticsearch

        self.name = f"undated-{int(time.time() * 1000) % 10**9}"
        self.client = Elasticsearch(es_url)
        self.client.indices.create(index=self.name, mappings={"properties": {
            "url": {"type": "keyword"}, "html": {"type": "text", "index": False}}})
        self.args = ["reindex", f"{es_url}/{self.name}", f"{es_url}/{self.name}-v2", "--html-field", "html",
                     "--keep", "field:url", "--dropped-log", str(out / "dropped.jsonl"),
                     "--checkpoint", str(out / "checkpoint.json")]
        self.log = out / "dropped.jsonl"

    def put(self, *pages: tuple[str, str]) -> None:
        """``(key, html)`` pages at ``http://KEY.example/``, ``_id`` KEY; then a refresh."""
        for key, html in pages:
            self.client.index(index=self.name, id=key, document={"url": f"http://{key}.example/", "html": html})
        self.client.indices.refresh(index=self.name)

    def verdicts(self) -> dict[str, dict]:
        """``_id`` -> the destination document's verdict."""
        self.client.indices.refresh(index=f"{self.name}-v2")
        hits = self.client.search(index=f"{self.name}-v2", size=100)["hits"]["hits"]
        return {h["_id"]: h["_source"]["dedup"] for h in hits}

    def close(self) -> None:
        for index in (self.name, f"{self.name}-v2", f"{self.name}-v2-dedup"):
            self.client.options(ignore_status=404).indices.delete(index=index)
        self.client.close()


@pytest.fixture
def undated(es_url, tmp_path):
    source = Undated(es_url, tmp_path)
    yield source
    source.close()


def settled(undated, capsys) -> None:
    """``--check`` finds the destination in step, and an update with nothing changed decides nothing again."""
    assert main(undated.args + ["--check"]) == 0
    capsys.readouterr()
    assert main(undated.args + ["--update"]) == 0
    assert "decided again, the page" not in capsys.readouterr().out


@pytest.mark.parametrize("killed", [0, 3, 4])
def test_an_update_decides_again_copies_whose_page_was_rewritten_without_dates(undated, capsys, killed):
    """helper-26: a source without a date field; a, kept, with b flagged as its near copy; c, kept, with d dropped
    as its exact copy. a and c are then rewritten as other articles, b and d left as they were. The update decides
    b and d again after its read (by the content hash each verdict read of its page, not by dates, which there are
    none of): b is unique now, d is kept (its drop undone by a ``kept`` event), and a second update decides
    nothing again. ``killed``: the update is killed (SIGKILL) right after that decision of the run (3, 4: the two
    decided after the read, before their batch is committed), then run again, to the same end."""
    from dedup.droplog import read_log

    near = BAKERY.replace("rye loaves on Saturdays", "spelt loaves on Sundays")
    undated.put(("a", article("Bakery hours", BAKERY)), ("b", article("Bakery opens earlier", near)),
                ("d", article("Choir seeks tenors", CHOIR)), ("c", article("Choir seeks tenors", CHOIR)))
    assert main(undated.args) == 0
    first = undated.verdicts()
    assert first["b"]["status"] in ("near_duplicate", "duplicate") and first["b"]["duplicate_of"] == "http://a.example/"
    assert set(first) == {"a", "b", "c"}, first  # d dropped as c's exact copy (c's URL sorts first)
    undated.put(("a", article("Robotics fair", SENTENCE * 4)),
                ("c", article("Robotics team", SENTENCE + " The drone was built from parts of an old lawn mower.")))
    capsys.readouterr()
    if killed:
        killed_run("decided", killed, undated.args + ["--update"])
    assert main(undated.args + ["--update"]) == 0
    summary = capsys.readouterr().out
    assert killed or "update: 2 unchanged decided again" in summary, summary
    now = undated.verdicts()
    assert set(now) == {"a", "b", "c", "d"}, now
    assert now["b"]["status"] == "unique" and now["d"]["status"] == "unique", now
    assert read_log(undated.log).get("http://d.example/").state == "kept"
    settled(undated, capsys)


@pytest.mark.parametrize("kill", [None, ("decided", 4), ("sent", 2)])
def test_an_update_leaves_no_copy_naming_a_rewritten_page_through_another_copy(undated, capsys, kill):
    """helper-27's groups, in a reindex: r kept; a and b flagged as its copies; c dropped as an exact copy of a (its
    line names r). r rewritten as another article: decided again after the read, a and b each match the other,
    which named r; neither may name r now (one is the group's kept page, the other names it), and c, dropped again
    for the same ``_source``, names that group's page by a ``dropped_again`` event (not its ``_source`` logged
    twice). A second update decides nothing again; restored, c comes back as it was. ``kill``: the update is killed
    (SIGKILL) after its fourth decision, or before the work folder marks its batch sent, then run again, to the
    same end (the event sent again counts once)."""
    from dedup.droplog import read_log

    near_a = BAKERY.replace("two apprentices", "three apprentices")
    near_b = BAKERY.replace("a second oven", "a larger oven")
    undated.put(("a", article("Bakery hours", near_a)), ("b", article("Bakery hours", near_b)),
                ("c", article("Bakery hours", near_a)),  # an exact copy of a's text
                ("0", article("Bakery hours", BAKERY)))  # read first (--keep field:url): the group's kept page
    assert main(undated.args) == 0
    first, root = undated.verdicts(), "http://0.example/"
    assert first["a"]["duplicate_of"] == root and first["b"]["duplicate_of"] == root and "c" not in first, first
    assert read_log(undated.log).get("http://c.example/").duplicate_of == root
    undated.put(("0", article("Choir seeks tenors", CHOIR)))
    size = undated.log.stat().st_size
    if kill:
        killed_run(*kill, undated.args + ["--update"])
    assert main(undated.args + ["--update"]) == 0
    now = undated.verdicts()
    assert not any(v.get("duplicate_of") == root for v in now.values()), now
    kept = [k for k in ("a", "b") if now[k]["status"] == "unique"]
    assert len(kept) == 1 and now[{"a": "b", "b": "a"}[kept[0]]]["duplicate_of"] == f"http://{kept[0]}.example/"
    added = [json.loads(x) for x in undated.log.read_bytes()[size:].splitlines()]
    assert {(x.get("event"), x["url"]) for x in added} == {("dropped_again", "http://c.example/")}, added
    entry = read_log(undated.log).get("http://c.example/")
    assert entry.duplicate_of == f"http://{kept[0]}.example/" and entry.drops == 2
    settled(undated, capsys)
    assert main(["dropped", "restore", "http://c.example/", "--log", str(undated.log), "--index", undated.args[2]]) == 0
    restored = undated.verdicts()["c"]
    assert restored["status"] == "restored" and restored["duplicate_of"] == f"http://{kept[0]}.example/", restored


def test_a_dropped_document_moved_to_another_url_is_decided_again_once(undated, capsys):
    """helper-29: c, dropped as an exact copy of 0, then moved to another URL and dropped as a copy of 1, has two drop
    entries (the log folds by URL). Both pages it matched rewritten, both entries are stale: the old URL's line is
    not c's now and is left alone (it was decided again, a drop line a round, on every update), and c is listed once
    (twice, it made ``--workers`` fail with KeyError). The next update decides nothing again."""
    undated.put(("0", article("Bakery hours", BAKERY)), ("c", article("Bakery hours", BAKERY)),
                ("x", article("Choir seeks tenors", CHOIR)), ("1", article("Choir seeks tenors", CHOIR)))
    assert main(undated.args) == 0
    undated.client.index(index=undated.name, id="c",
                         document={"url": "http://c2.example/", "html": article("Choir seeks tenors", CHOIR)})
    undated.put()
    assert main(undated.args + ["--update"]) == 0
    undated.put(("0", article("Robotics fair", SENTENCE * 4)),
                ("1", article("Robotics team", SENTENCE + " The drone was built from parts of an old lawn mower.")))
    capsys.readouterr()
    assert main(undated.args + ["--update", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "update: 2 unchanged decided again" in out, out  # c, and x (dropped as a copy of 1)
    lines = len(undated.log.read_text(encoding="utf-8").splitlines())
    settled(undated, capsys)
    assert len(undated.log.read_text(encoding="utf-8").splitlines()) == lines


def test_a_copy_naming_a_copy_gone_from_the_source_is_not_decided_again_each_update(undated, capsys):
    """helper-29: b, flagged as a copy of 0, is deleted from the source (its record stays); 0 is rewritten, so b's
    link is stale; d, added, matches b and names it (b holds its text). d names a copy, but deciding it again would
    name b again: it is not decided again on every update (it was, its record replaced each time)."""
    near_a = BAKERY.replace("two apprentices", "three apprentices")
    near_b = BAKERY.replace("a second oven", "a larger oven")
    undated.put(("0", article("Bakery hours", BAKERY)), ("b", article("Bakery hours", near_a)))
    assert main(undated.args) == 0
    undated.client.delete(index=undated.name, id="b")
    undated.put(("0", article("Choir seeks tenors", CHOIR)))
    assert main(undated.args + ["--update"]) == 0
    undated.put(("d", article("Bakery hours", near_b)))
    assert main(undated.args + ["--update"]) == 0
    assert undated.verdicts()["d"]["duplicate_of"] == "http://b.example/"
    capsys.readouterr()
    assert main(undated.args + ["--update"]) == 0
    assert "decided again, the page" not in capsys.readouterr().out


def test_check_prints_the_group_problems_of_a_destination_changed_by_hand(undated, capsys):
    """``--check`` through the command: a flagged document whose ``duplicate_of`` was changed in the destination by
    hand to a page not kept is listed (``GROUPS:``, exit 1), the documents themselves in step with the work folder."""
    near = BAKERY.replace("rye loaves on Saturdays", "spelt loaves on Sundays")
    undated.put(("a", article("Bakery hours", BAKERY)), ("b", article("Bakery opens earlier", near)))
    assert main(undated.args) == 0
    assert undated.verdicts()["b"]["duplicate_of"] == "http://a.example/"
    capsys.readouterr()
    undated.client.update(index=f"{undated.name}-v2", id="b", doc={"dedup": {"duplicate_of": "http://gone.example/"}})
    undated.client.indices.refresh(index=f"{undated.name}-v2")
    assert main(undated.args + ["--check"]) == 1
    out = capsys.readouterr().out
    assert "in step" in out and "naming a page not kept: 1 (b)" in out and "GROUPS:" in out, out


def test_a_document_dropped_again_after_its_other_fields_changed_is_logged_whole(undated, capsys):
    """helper-31: c dropped as an exact copy of a (its line names 0); then c's other fields change (a tag, not its
    page) and 0 is rewritten. The update logs c's drop line again with its new ``_source`` when it reads it, then
    drops it again for the same page naming the page that holds its text: a ``dropped_again`` event names that new
    line (not the older one), so a restore puts back the ``_source`` the source has now."""
    near_a = BAKERY.replace("two apprentices", "three apprentices")
    near_b = BAKERY.replace("a second oven", "a larger oven")
    client = undated.client
    undated.put(("a", article("Bakery hours", near_a)), ("b", article("Bakery hours", near_b)),
                ("0", article("Bakery hours", BAKERY)))
    for tag in ("old", "new"):
        if tag == "new":
            undated.put(("0", article("Choir seeks tenors", CHOIR)))
        client.index(index=undated.name, id="c", refresh=True,
                     document={"url": "http://c.example/", "html": article("Bakery hours", near_a), "tag": tag})
        size = undated.log.stat().st_size if undated.log.exists() else 0
        assert main(undated.args + (["--update"] if tag == "new" else [])) == 0
    added = [json.loads(x) for x in undated.log.read_bytes()[size:].splitlines()]
    assert [(x.get("event"), (x.get("item") or {}).get("source", {}).get("tag")) for x in added] == \
        [(None, "new"), ("dropped_again", None)], added
    assert added[1]["offset"] == size  # the line logged again, with the new _source
    assert main(["dropped", "restore", "http://c.example/", "--log", str(undated.log), "--index", undated.args[2]]) == 0
    client.indices.refresh(index=f"{undated.name}-v2")
    assert client.get(index=f"{undated.name}-v2", id="c")["_source"]["tag"] == "new"


def test_a_resend_tells_a_logged_dropped_again_event_from_an_older_drop_line(tmp_path):
    """helper-31: a resend after a kill skips the lines the log has already, a drop line by (source id, body key); a
    ``dropped_again`` event has no body, and was taken for a drop line of a version keeping no keys ``(sid, None)``:
    not resent. Each is told by what it is; an event once appended is not sent twice."""
    from dedup.droplog import append_events, dropped_again
    from index.elastic.reindex import Reindex
    from index.elastic.reindex_check import logged_key

    log = tmp_path / "dropped.jsonl"
    job = Reindex("http://127.0.0.1:9/src", "http://127.0.0.1:9/dst", dropped_log=log, html_field="html")
    older = {"url": "http://c/", "time": "t", "verdict": {"status": "exact_duplicate", "duplicate_of": "http://0/"},
             "item": {"id": "c", "url": "http://c/", "source_index": job.source_uri, "source": {"html": "x"}}}
    log.write_text(json.dumps(older) + "\n", encoding="utf-8")
    event = dropped_again("http://c/", 0, {"status": "exact_duplicate", "duplicate_of": "http://a/",
                                           "nearest": "http://a/"})
    logged, _ = job._logged_lines()
    assert logged == {("c", None)} and logged_key("c", event) not in logged
    append_events(log, [event])
    assert logged_key("c", event) in job._logged_lines()[0]


@pytest.mark.parametrize("kill", [None, ("decided", 1), ("sent", 1)])
def test_a_dropped_document_whose_other_fields_changed_is_restored_as_it_is_now(undated, capsys, kill):
    """helper-31: c dropped as an exact copy of a; then c's other fields change (a tag, not its page). The update
    keeps it dropped, and its drop line (what ``restore`` puts back) holds the ``_source`` it has now: a new drop line
    with its verdict, as the dropped log holds the page it dropped. An update with nothing changed writes nothing.
    ``kill``: the update is killed (SIGKILL) after that decision, or before its batch is marked sent, then run again:
    the line is logged once."""
    from dedup.droplog import read_log

    client = undated.client
    undated.put(("a", article("Bakery hours", BAKERY)))
    for tag in ("old", "new"):
        client.index(index=undated.name, id="c", refresh=True,
                     document={"url": "http://c.example/", "html": article("Bakery hours", BAKERY), "tag": tag})
        if kill and tag == "new":
            killed_run(*kill, undated.args + ["--update"])
            # killed before the batch was marked sent: the line is in the log already, and not logged twice
            assert len(undated.log.read_text(encoding="utf-8").splitlines()) == (2 if kill[0] == "sent" else 1)
        assert main(undated.args + (["--update"] if tag == "new" else [])) == 0
    assert len(undated.log.read_text(encoding="utf-8").splitlines()) == 2
    entry = read_log(undated.log).get("http://c.example/")
    assert (entry.state, entry.duplicate_of, entry.drops) == ("dropped", "http://a.example/", 1), entry  # renewed
    assert read_log(undated.log).item(entry)["source"]["tag"] == "new"
    size = undated.log.stat().st_size
    settled(undated, capsys)
    assert undated.log.stat().st_size == size
    assert main(["dropped", "restore", "http://c.example/", "--log", str(undated.log), "--index", undated.args[2]]) == 0
    client.indices.refresh(index=f"{undated.name}-v2")
    assert client.get(index=f"{undated.name}-v2", id="c")["_source"]["tag"] == "new"


@pytest.mark.parametrize("tags", [False, True])
def test_copies_decided_again_after_the_read_keep_the_keep_rules_page(es_url, tmp_path, tags):
    """helper-32: a kept (oldest), b and c its exact copies (b older than c). b's tags changed on an update (its
    drop line logged again, after c's); then a is rewritten. The copies decided again after the read were taken in
    the order of their drop lines: c kept, b dropped as its copy, against ``--keep oldest``. They are taken in the
    keep rule's order: b kept, c names it."""
    from elasticsearch import Elasticsearch

    name = f"keeporder-{int(time.time() * 1000) % 10**9}"
    client = Elasticsearch(es_url)
    client.indices.create(index=name, mappings={"properties": {
        "url": {"type": "keyword"}, "html": {"type": "text", "index": False}, "crawled": {"type": "date"},
        "tags": {"type": "keyword"}}})
    try:
        for key, day in (("a", 1), ("b", 3), ("c", 5)):
            client.index(index=name, id=key, document={"url": f"http://{key}.example/bakery", "tags": ["x"],
                                                       "html": article("Bakery hours", BAKERY),
                                                       "crawled": f"2024-01-0{day}T00:00:00Z"})
        client.indices.refresh(index=name)
        args = reindex_args(f"{es_url}/{name}", f"{es_url}/{name}-v2", tmp_path)
        assert main(args) == 0
        if tags:
            client.update(index=name, id="b", doc={"tags": ["y"]}, refresh=True)
            assert main(args + ["--update"]) == 0
        client.update(index=name, id="a", doc={"html": article("Choir seeks tenors", CHOIR),
                                               "crawled": "2024-02-01T00:00:00Z"}, refresh=True)
        assert main(args + ["--update"]) == 0
        client.indices.refresh(index=f"{name}-v2")
        kept = {h["_id"]: h["_source"]["dedup"] for h in client.search(index=f"{name}-v2")["hits"]["hits"]}
        assert set(kept) == {"a", "b"} and kept["b"]["status"] == "unique", kept
        named = [x["verdict"]["duplicate_of"] for x in read_jsonl(tmp_path / "dropped.jsonl")
                 if x.get("url") == "http://c.example/bakery" and "verdict" in x]
        assert named[-1] == "http://b.example/bakery", named
        assert main(args + ["--check"]) == 0
    finally:
        for index in (name, f"{name}-v2", f"{name}-v2-dedup"):
            client.options(ignore_status=404).indices.delete(index=index)
        client.close()
