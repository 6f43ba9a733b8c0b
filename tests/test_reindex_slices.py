"""``dedup reindex --slices N --slice I`` then ``--merge``, against the noida-db emulator (or a real
cluster with DEDUP_TEST_ES_URL): two slice processes run at once against one server, and after the
final pass the destination holds the same documents, with the same verdicts up to what
index/elastic/reindex_slices.py documents, as one uninterrupted process."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ALL_PATHS, EXACT, NEAR, ROOT, clean_env, read_jsonl
from crawler.sample_site import manifest_key
from dedup.cli import main
from test_reindex import arrival, corpus, killed_run, outcome, reindex_args  # noqa: F401  (the corpus fixture)

def slice_args(source: str, dest: str, out: Path, slices: int, *extra: str) -> list[str]:
    return ["reindex", source, dest, "--html-field", "html", "--time-field", "crawled", "--keep", "oldest",
            "--dropped-log", str(out / "dropped.jsonl"), "--slices", str(slices), *extra]


@pytest.fixture(scope="module")
def single(corpus, tmp_path_factory, es_url):  # noqa: F811
    out = tmp_path_factory.mktemp("single")
    dest = f"{es_url}/single-{out.name.lower()}"
    assert main(reindex_args(corpus, dest, out, "--batch-size", "9")) == 0
    return dest, out


@pytest.fixture(scope="module")
def sliced(corpus, tmp_path_factory, es_url):  # noqa: F811
    """Two slices as two processes at once (each in its own folder, as on two machines), slice 1
    SIGKILLed first right after its second bulk write (claims already in the shared index, not yet
    marked sent: resumed, they come back as its own 409s), then the final pass."""
    dest = f"{es_url}/sliced-{tmp_path_factory.mktemp('name').name.lower()}"
    outs = [tmp_path_factory.mktemp(f"slice{i}") for i in range(2)]
    killed_run("sent", 2, slice_args(corpus, dest, outs[1], 2, "--slice", "1", "--batch-size", "4"))
    procs = [subprocess.Popen([sys.executable, "-m", "dedup.cli", *slice_args(corpus, dest, out, 2, "--slice", str(i),
                                                                              "--batch-size", "5")],
                              cwd=ROOT, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i, out in enumerate(outs)]
    for p in procs:
        stdout, stderr = p.communicate(timeout=600)
        assert p.returncode == 0, stderr[-3000:]
    merge_out = tmp_path_factory.mktemp("merge")
    before = outcome(dest, merge_out)[0]  # no dropped log yet: the documents the slices kept
    assert main(slice_args(corpus, dest, merge_out, 2, "--merge", "--alias", f"alias-{merge_out.name.lower()}")) == 0
    return dest, outs, merge_out, before, merge_report(dest)


def merge_report(dest: str) -> dict:
    """The report the final pass left in ``DEST-slices``, and whether ``DEST-slices-features`` remains."""
    from elasticsearch import Elasticsearch

    base, name = dest.rsplit("/", 1)
    client = Elasticsearch(base)
    try:
        report = client.get(index=f"{name}-slices", id="merge")["_source"]["report"]
        report["features_left"] = bool(client.indices.exists(index=f"{name}-slices-features"))
        return report
    finally:
        client.close()


def test_merge_refused_until_every_slice_is_finished(corpus, tmp_path, es_url, capsys):  # noqa: F811
    dest = f"{es_url}/early-{tmp_path.name.lower()}"
    assert main(slice_args(corpus, dest, tmp_path, 2, "--merge")) != 0
    assert "slice(s) never started: 0, 1 (of 2)" in capsys.readouterr().err
    assert main(slice_args(corpus, dest, tmp_path, 2)) != 0
    assert "give --slice I" in capsys.readouterr().err


def test_two_slices_keep_what_one_process_keeps(single, sliced, corpus):  # noqa: F811
    dest, outs, merge_out, before, report = sliced
    # every kept document was decided from the query features its slice handed over: none parsed again
    assert report["reparsed"] == 0
    assert report["handed_over"] == len(before) - sum(s == "error" for s, *_ in before.values()) > 0
    assert not report["features_left"]  # the hand-over index goes with a final pass that ended
    kept, dropped = outcome(dest, merge_out)
    for out in outs:
        dropped.update({manifest_key(d["url"]): (d["verdict"]["status"], d["verdict"]["duplicate_of"],
                                                 d["verdict"]["rule"]) for d in read_jsonl(out / "dropped.jsonl")})
    want_kept, want_dropped = outcome(*single)
    assert set(kept) == set(want_kept)  # the same kept set
    assert set(dropped) == set(want_dropped) and sorted(set(kept) | set(dropped)) == ALL_PATHS
    split = 0
    for group in EXACT:
        members = set(group["paths"])
        assert members & set(kept) == {min(members, key=arrival)}, group["name"]
        split += len(members & set(before)) > 1  # each slice kept its first copy: the final pass decided
    assert split, "no exact group was split over the two slices: the test proves nothing"
    for group in NEAR:  # near copies in different slices are flagged as one process flags them
        for p in group["paths"]:
            assert (kept[p][0] == "unique") == (want_kept[p][0] == "unique"), (group["name"], p)
    # the final pass decides every kept document as one process does: same status, same copy named
    assert {p: v[:2] for p, v in kept.items()} == {p: v[:2] for p, v in want_kept.items()}
    # every exact duplicate dropped names the copy one process names, or (dropped in its slice as a
    # copy of its slice's first copy, which the final pass then dropped) a chain of drops ending there
    for path, (status, dup_of, _) in dropped.items():
        if status == "exact_duplicate":
            seen = [path]
            while manifest_key(dup_of) not in kept:
                seen.append(manifest_key(dup_of))
                assert seen[-1] in dropped and len(seen) < 5, seen
                dup_of = dropped[seen[-1]][1]
            assert manifest_key(dup_of) == manifest_key(want_dropped[path][1]), seen
    # a second final pass changes nothing and logs nothing twice
    before = len(read_jsonl(merge_out / "dropped.jsonl"))
    assert main(slice_args(corpus, dest, merge_out, 2, "--merge")) == 0
    assert len(read_jsonl(merge_out / "dropped.jsonl")) == before
    assert outcome(dest, merge_out)[0] == kept
    # each slice's --check knows what the final pass took away
    for i, out in enumerate(outs):
        assert main(slice_args(corpus, dest, out, 2, "--slice", str(i), "--check")) == 0


def test_one_record_per_exact_group_in_the_shared_index(sliced, es_url):
    from elasticsearch import Elasticsearch

    dest = sliced[0]
    client = Elasticsearch(es_url)
    try:
        name = dest.rsplit("/", 1)[1]
        client.indices.refresh(index=f"{name}-dedup")
        hits = client.search(index=f"{name}-dedup", size=1000, source=["content_hash", "url"])["hits"]["hits"]
    finally:
        client.close()
    hashes = [h["_source"]["content_hash"] for h in hits if h["_source"]["content_hash"]]
    assert hashes and len(hashes) == len(set(hashes))


def test_a_slice_of_another_split_is_refused(sliced, corpus, tmp_path, capsys):  # noqa: F811
    dest = sliced[0]
    assert main(slice_args(corpus, dest, tmp_path, 3, "--slice", "0")) != 0
    assert "already exists and holds another reindex" in capsys.readouterr().err


def test_a_final_pass_that_parses_again_reads_each_document_once(single, corpus, tmp_path_factory, es_url,
                                                                  monkeypatch):  # noqa: F811
    """Slices whose hand-over is gone (as from slices of an older version): the final pass parses
    again, reading the batch's documents once, and its drop lines come from that read (no second
    ``mget`` of the dropped ones); it keeps and flags as one process does."""
    from collections import Counter

    from elasticsearch import Elasticsearch

    from index.elastic import reindex

    dest = f"{es_url}/nohand-{tmp_path_factory.mktemp('name').name.lower()}"
    outs = [tmp_path_factory.mktemp(f"nohand{i}") for i in range(2)]
    for i, out in enumerate(outs):
        assert main(slice_args(corpus, dest, out, 2, "--slice", str(i))) == 0
    base, name = dest.rsplit("/", 1)
    client = Elasticsearch(base)
    try:
        client.indices.delete(index=f"{name}-slices-features")
    finally:
        client.close()
    reads: Counter[str] = Counter()
    call = reindex._Counting.call

    def counted(self, what, fn, *args, **kwargs):
        if getattr(fn, "__name__", "") == "mget" and kwargs.get("index") == name:
            reads.update(kwargs["ids"])
        return call(self, what, fn, *args, **kwargs)

    monkeypatch.setattr(reindex._Counting, "call", counted)
    merge_out = tmp_path_factory.mktemp("nohand-merge")
    assert main(slice_args(corpus, dest, merge_out, 2, "--merge")) == 0
    report = merge_report(dest)
    assert report["reparsed"] > 0 and report["handed_over"] == 0 and report["dropped"] > 0
    assert reads and max(reads.values()) == 1, reads.most_common(3)
    lines = read_jsonl(merge_out / "dropped.jsonl")
    assert len(lines) == report["dropped"]
    for line in lines:  # each drop line holds the document's source fields (restorable), not its verdict
        assert line["item"]["source"]["html"] and "dedup" not in line["item"]["source"]
        assert reads[line["item"]["id"]] == 1
    kept, _ = outcome(dest, merge_out)
    assert {p: v[:2] for p, v in kept.items()} == {p: v[:2] for p, v in outcome(*single)[0].items()}


def test_the_final_pass_counts_what_the_destination_holds(sliced):
    """Issue 33, item 4: the summary's flagged count is the destination's flagged documents (it printed the
    number of verdicts the final pass changed); that number is ``changed``, and the statuses are counted."""
    dest, _, merge_out, before, report = sliced
    kept, _ = outcome(dest, merge_out)
    flagged = sum(status in ("near_duplicate", "duplicate") for status, *_ in kept.values())
    assert report["kept"] == len(kept) and report["flagged"] == flagged > 0, (report, flagged)
    changed = sum(1 for p, v in kept.items() if before[p][:2] != v[:2])
    assert report["changed"] == changed
    assert report["changed"] < report["flagged"]  # most flags were the slices' own: the two counts differ here
    assert {s: n for s, n in report["statuses"].items() if s not in ("exact_duplicate",)} == dict(
        __import__("collections").Counter(status for status, *_ in kept.values()))


def test_a_slice_shows_its_own_document_count(corpus, tmp_path, es_url, capsys):  # noqa: F811
    """Issue 33, item 5: a slice's progress showed the corpus's count over N as if it were exact
    (``5097/5097`` on a slice of 10,000 in two); the slice's own count is asked of the cluster."""
    dest = f"{es_url}/counted-{tmp_path.name.lower()}"
    counts = []
    for i in range(2):
        out = tmp_path / f"s{i}"
        assert main(slice_args(corpus, dest, out, 2, "--slice", str(i), "--json")) == 0
        captured = capsys.readouterr()
        processed = __import__("json").loads(captured.out)["processed"]
        lines = [line for line in captured.err.splitlines() if line.startswith("reindex: ")]
        assert lines[0] == f"reindex: 1/{processed} documents", lines
        assert lines[-1].startswith(f"reindex: {processed}/{processed} documents ("), lines
        counts.append(processed)
    assert sum(counts) == len(ALL_PATHS)
