"""``dedup reindex --update`` day after day on one corpus, against a plain copy, in one run.

    python benchmarks/bench_update.py --docs 4000 --days 3     # the table of docs/elasticsearch.md
    python benchmarks/bench_update.py --quick                  # 600 documents, 2 days

The corpus is :mod:`reindex_corpus`'s (as ``bench_reindex.py``'s), loaded into the noida-db emulator of
tests/es_server.py. A plain copy (``elasticsearch.helpers.reindex``) is timed first: the floor every row is
a ratio to. Then ``dedup reindex`` (keep oldest) runs once, and each "day" after it ``--edit`` of the documents
change in the source before ``--update`` runs:

* half of them are pages kept with copies (the oldest of a group of two or more), rewritten as another
  article with a new ``crawled`` time: their flagged and dropped copies, left as they were, must be decided
  again (``decided_again``), which the update does after its read;
* the other half are any documents edited as a second site edits a page (a paragraph cut, a sentence added).

A last update follows a day without edits: what an update of an unchanged corpus costs, and that the days
before left nothing to decide again.

Each run is the command users run, ``dedup reindex`` (``--update`` after the first), in a process of its own:
its start-up (imports, ~2 s) is in every row. Each row: wall time and its ratio to the plain copy's, the client's
CPU (the command's process), what the update's report says
(unchanged, changed, decided again), whether ``--check`` finds the destination in step with no group problem,
and what grew: the work folder, the dropped log and the destination's documents. The emulator is not
Elasticsearch: its timings are not a cluster's; the ratios on one machine are what this says.

Cited by: docs/elasticsearch.md ("Updating a reindexed corpus").
"""
from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import common
import reindex_corpus
import sitegen
from bench_reindex import Meter, drop_indices, load, plain_copy


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


def edit_day(client: Any, docs: list[dict[str, Any]], groups: dict[str, str], share: float, day: int,
             rng: random.Random, sents: list[str]) -> int:
    """Change ``share`` of the documents in the source (see the module docstring); returns how many."""
    from elasticsearch import helpers

    by_group: dict[str, list[dict[str, Any]]] = {}
    for d in docs:
        by_group.setdefault(groups[d["id"]], []).append(d)
    roots = [min(g, key=lambda d: (d["crawled"], d["url"])) for g in by_group.values() if len(g) > 1]
    k = max(2, int(len(docs) * share))
    changed = rng.sample(roots, min(k // 2, len(roots))) + rng.sample(docs, k - k // 2)
    now = 1_800_000_000 + day * 86_400
    seen: set[str] = set()
    for i, d in enumerate(changed):
        if d["id"] in seen:
            continue
        seen.add(d["id"])
        if i < k // 2:  # rewritten: another article on the same page
            d["html"] = reindex_corpus._rewrite(d["html"], sents, rng)
            groups[d["id"]] = f"rewritten/{d['id']}/{day}"
        else:
            d["html"] = reindex_corpus._edit(d["html"], sents, rng)
        d["crawled"] = now
    helpers.bulk(client, ({"_index": "corpus", "_id": d["id"], "_source": {k_: v for k_, v in d.items() if k_ != "id"}}
                          for d in changed), chunk_size=200)
    client.indices.refresh(index="corpus")
    return len(seen)


def main(argv=None) -> int:
    p = common.parser(__doc__)
    p.add_argument("--docs", type=int, default=4000, help="documents in the corpus (default 4,000)")
    p.add_argument("--days", type=int, default=3, help="updates, each after a day's edits (default 3)")
    p.add_argument("--edit", type=float, default=0.02, help="share of the documents changed a day (default 0.02)")
    args = p.parse_args(argv)
    n, days = (600, 2) if args.quick else (args.docs, args.days)
    try:
        reindex_corpus.check_data()
    except FileNotFoundError as exc:
        p.exit(2, f"bench_update.py: {exc}\n")
    res = common.Results("bench_update.py", 31, "dedup reindex --update day after day against a plain copy", args)
    from elasticsearch import Elasticsearch

    from dedup.deduplicator import DedupConfig
    from index.elastic.reindex import Reindex

    sys.path.insert(0, str(common.ROOT / "tests"))
    from es_server import Emulator  # the test suite's noida-db runner

    tmp = Path(tempfile.mkdtemp(prefix="bench-update-"))
    emulator = Emulator(tmp / "noida")
    try:
        base = emulator.start()
        client = Elasticsearch(base, request_timeout=600)
        meter = Meter(emulator.proc.pid if emulator.proc else None)
        docs, groups = reindex_corpus.corpus(n, args.seed)
        load(client, "corpus", docs)
        rng, sents = random.Random(args.seed), sitegen.load_sentences(20_000)
        _, plain = meter.measure(lambda: plain_copy(client))
        drop_indices(client, "plain")
        out = tmp / "dedup"

        def job(**kw: Any) -> Reindex:
            return Reindex(f"{base}/corpus", f"{base}/dest", url_field="url", text_field=None, html_field="html",
                           title_field="title", time_field="crawled", keep="oldest", config=DedupConfig(),
                           dropped_log=out / "dropped.jsonl", **kw)

        def command(update: bool) -> dict[str, Any]:
            """``dedup reindex`` as a user runs it (the job above, spelt as options); its JSON report."""
            argv = [sys.executable, "-m", "dedup.cli", "reindex", f"{base}/corpus", f"{base}/dest",
                    "--url-field", "url", "--text-field", "", "--html-field", "html", "--title-field", "title",
                    "--time-field", "crawled", "--keep", "oldest", "--dropped-log", str(out / "dropped.jsonl"),
                    "--json"] + (["--update"] if update else [])
            done = subprocess.run(argv, cwd=common.ROOT, capture_output=True, text=True)
            if done.returncode:
                raise SystemExit(f"bench_update.py: dedup reindex failed ({done.returncode}): {done.stderr[-2000:]}")
            return json.loads(done.stdout)

        rows = []
        for day in range(days + 2):
            # the last day changes nothing: what an update costs when the corpus did not move, and that it settled
            edited = edit_day(client, docs, groups, args.edit, day, rng, sents) if 0 < day <= days else 0
            report, m = meter.measure(lambda: command(update=bool(day)))
            check = job().check()
            client.indices.refresh(index="dest")
            row = {"day": day, "edited": edited, "wall_s": round(m["wall"], 1),
                   "wall_vs_plain": round(m["wall"] / plain["wall"], 2),
                   "client_ms_per_doc": round(m["client"] / n * 1000, 2),
                   "unchanged": report["unchanged"], "changed": report["updated"],
                   "decided_again": report["decided_again"],
                   "in_step": bool(check["ok"] and check["groups_ok"]),
                   "work_kb": folder_bytes(job().work_dir) // 1000,
                   "log_kb": (out / "dropped.jsonl").stat().st_size // 1000 if (out / "dropped.jsonl").exists() else 0,
                   "dest_docs": client.count(index="dest")["count"], "load": round(m["load"], 1)}
            rows.append(row)
            print("  " + "  ".join(f"{k} {v}" for k, v in row.items()), flush=True)
            key = "first" if not day else f"day{day}"
            res.figure(f"update.{key}.wall_vs_plain", f"{key}: wall against the plain copy", row["wall_vs_plain"], "x",
                       note=f"load {row['load']}")
        res.figure("update.plain_s", "plain copy, wall", plain["wall"], "s")
        columns = list(rows[0])
        res.table("days", columns, [[r[c] for c in columns] for r in rows],
                  note="day 0: the first reindex; each later day: --edit of the documents changed (none the last day), "
                       "then --update; "
                       "ratios to the plain copy of this run; work_kb the work folder, log_kb the dropped log")
        res.note("Elasticsearch API of the noida-db emulator (not Elasticsearch: its timings are not a cluster's)")
        client.close()
    finally:
        emulator.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    res.finish(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
