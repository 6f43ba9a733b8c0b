"""``dedup reindex`` throughput: documents per second and requests per document, on the emulator.

    python benchmarks/bench_reindex.py --docs 10000 --workers 1,2      # text corpus
    python benchmarks/bench_reindex.py --docs 2000 --html              # HTML corpus (parsed)
    python benchmarks/bench_reindex.py --docs 10000 --workers 1 --slices 2   # and 2 slices + final pass
    python benchmarks/bench_reindex.py --docs 2000 --workers 1 --slices 2 --without-handover   # it parses again

A synthetic corpus is loaded into the noida-db emulator of tests/es_server.py (or the cluster of
``--es-url``): articles written from WordNet sentences (``sitegen.load_sentences``), 10% exact
copies and 10% near copies (a paragraph dropped, a sentence added), each with ``url``, ``title``,
``body`` (or ``html``: the article in a page template), ``crawled`` and ``site``.  Each ``--workers``
value reindexes it into a new destination; the figures are documents per second (wall time of
``Reindex.run``, reads, decisions and bulk writes included) and the requests made to the cluster
per document (target: well under one).  With ``--slices N`` the corpus is also reindexed by N
``dedup reindex --slices N --slice I`` processes at once, then the final pass (``--merge``): the
figures are the slices' wall time, the final pass's wall time and requests, and whether the
kept set equals the first ``--workers`` run's; ``--without-handover`` deletes the slices' hand-over
(``DEST-slices-features``) before the final pass, which then parses the documents again, as after
slices of an older version.  The emulator is not Elasticsearch: its timings are not a
cluster's, but the request count is the design's.
"""
from __future__ import annotations

import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import common
import sitegen

FIGURES = [("reindex.docs", "documents in the corpus", "docs")]


def corpus(n: int, seed: int, html: bool) -> list[dict]:
    """``n`` documents: 80% originals, 10% exact and 10% near copies of them (shuffled arrival)."""
    rng = random.Random(seed)
    sents = sitegen.load_sentences(20_000)
    originals = max(1, int(n * 0.8))
    docs: list[dict] = []
    for i in range(originals):
        paras = [" ".join(rng.choice(sents) for _ in range(rng.randint(4, 7))) for _ in range(rng.randint(5, 8))]
        docs.append({"title": " ".join(rng.choice(sents).split()[:7]), "paras": paras, "kind": "original"})
    while len(docs) < n:
        src = docs[rng.randrange(originals)]
        if len(docs) % 2:
            docs.append({**src, "kind": "exact"})
        else:
            paras = list(src["paras"])
            paras.pop(rng.randrange(len(paras)))
            paras[0] = paras[0] + " " + rng.choice(sents)
            docs.append({"title": src["title"], "paras": paras, "kind": "near"})
    rng.shuffle(docs)
    out = []
    for i, d in enumerate(docs):
        body = "\n\n".join(d["paras"])
        doc = {"url": f"http://corpus.invalid/{d['kind']}/{i:07d}.html", "title": d["title"],
               "crawled": 1_700_000_000 + i * 60, "site": "corpus.invalid"}
        if html:
            paras = "".join(f"<p>{sitegen.esc(p)}</p>" for p in d["paras"])
            doc["html"] = (f"<html><head><title>{sitegen.esc(d['title'])}</title></head><body><nav><a href='/'>Home"
                           f"</a></nav><article><h1>{sitegen.esc(d['title'])}</h1>{paras}</article>"
                           "<footer>Corpus news</footer></body></html>")
        else:
            doc["body"] = body
        out.append(doc)
    return out


def load(es_url: str, name: str, docs: list[dict], html: bool) -> None:
    from elasticsearch import Elasticsearch, helpers

    client = Elasticsearch(es_url, request_timeout=120)
    client.options(ignore_status=404).indices.delete(index=name)
    text = {"html": {"type": "text", "index": False}} if html else {"body": {"type": "text"}}
    client.indices.create(index=name, mappings={"properties": {
        "url": {"type": "keyword"}, "title": {"type": "text"}, "crawled": {"type": "date", "format": "epoch_second"},
        "site": {"type": "keyword"}, **text}})
    helpers.bulk(client, ({"_index": name, "_id": f"d{i}", "_source": d} for i, d in enumerate(docs)),
                 chunk_size=500)
    client.indices.refresh(index=name)
    client.close()


def dest_verdicts(es_url: str, name: str) -> dict[str, tuple[str, str | None]]:
    """Each kept document's id -> (status, duplicate_of) of its ``dedup`` verdict."""
    from elasticsearch import Elasticsearch, helpers

    client = Elasticsearch(es_url, request_timeout=120)
    try:
        client.indices.refresh(index=name)
        hits = helpers.scan(client, index=name, _source=["dedup.status", "dedup.duplicate_of"], size=5000)
        return {h["_id"]: ((h["_source"].get("dedup") or {}).get("status"),
                           (h["_source"].get("dedup") or {}).get("duplicate_of")) for h in hits}
    finally:
        client.close()


def sliced(res: "common.Results", base: str, tmp: Path, args, single_dest: str) -> None:
    """N slice processes at once, then the final pass; kept set compared with ``single_dest``."""
    import subprocess

    from dedup.deduplicator import DedupConfig
    from index.elastic.reindex import Reindex
    from index.elastic.reindex_slices import merge

    n = args.slices
    dest = f"{base}/bench-dest-s{n}"
    fields = ["--text-field", "", "--html-field", "html"] if args.html else ["--text-field", "body"]
    common_args = ["reindex", f"{base}/bench-corpus", dest, "--url-field", "url", "--title-field", "title",
                   "--time-field", "crawled", *fields, "--slices", str(n), "--json"]
    t = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-m", "dedup.cli", *common_args, "--slice", str(i),
                               "--dropped-log", str(tmp / f"s{i}" / "dropped.jsonl")], cwd=common.ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) for i in range(n)]
    import json

    reports = [json.loads(p.communicate()[0]) for p in procs]
    slices_wall = time.perf_counter() - t
    job = Reindex(f"{base}/bench-corpus", dest, url_field="url", text_field=None if args.html else "body",
                  html_field="html" if args.html else None, title_field="title", time_field="crawled",
                  config=DedupConfig(), dropped_log=tmp / "merge" / "dropped.jsonl", slices=n, merge=True)
    if args.without_handover:  # as after slices of an older version: the final pass parses again
        from elasticsearch import Elasticsearch

        client = Elasticsearch(base, request_timeout=120)
        client.indices.delete(index=f"{dest.rsplit('/', 1)[1]}-slices-features")
        client.close()
    t = time.perf_counter()
    merged = merge(job)
    merge_wall = time.perf_counter() - t
    total = sum(r["processed"] for r in reports)
    got, want = (dest_verdicts(base, d.rsplit("/", 1)[1]) for d in (dest, single_dest))
    same = set(got) == set(want)
    differ = sum(got[i] != want[i] for i in set(got) & set(want))
    res.figure(f"reindex.s{n}.docs_per_s", f"documents per second, {n} slices at once then the final pass",
               total / (slices_wall + merge_wall), "docs/s", note=f"load {common.loadavg():.1f}")
    res.figure(f"reindex.s{n}.merge_s", "final pass wall time", merge_wall, "s",
               note=f"{merged.processed} kept documents decided again ({merged.handed_over} from the query features "
                    f"their slice handed over, {merged.reparsed} parsed again), {merged.dropped} dropped, "
                    f"{merged.flagged} flagged; load {common.loadavg():.1f}")
    res.figure(f"reindex.s{n}.reparsed", "kept documents the final pass parsed again", merged.reparsed, "docs",
               goal=None if args.without_handover else ("==", 0))
    handed, handed_bytes = (sum(r.get(k, 0) for r in reports) for k in ("handed_over", "handover_bytes"))
    res.figure(f"reindex.s{n}.handover_bytes_per_doc", "bytes of query features a slice hands the final pass per "
               "kept document (JSON _source in DEST-slices-features)", handed_bytes / max(handed, 1), "bytes")
    res.figure(f"reindex.s{n}.merge_requests_per_doc", "final pass requests per document of the corpus",
               merged.requests / max(total, 1), "requests/doc", goal=("<", 0.1))
    res.figure(f"reindex.s{n}.same_kept_set", "kept set equals the unsliced run's", int(same), "bool", goal=("==", 1))
    res.figure(f"reindex.s{n}.verdicts_differ", "kept documents whose status or duplicate_of differs from the "
               "unsliced run's", differ, "docs", goal=("==", 0))
    print(f"  --slices {n}: {total} docs in {slices_wall:.1f} s + final pass {merge_wall:.1f} s "
          f"({merged.requests} requests, parsed again {merged.reparsed}, dropped {merged.dropped}, flagged "
          f"{merged.flagged}; {handed} query features handed over, {handed_bytes / max(handed, 1):.0f} bytes each); "
          f"same kept set as one process: {same}; verdicts differing: {differ}", flush=True)


def main(argv=None) -> int:
    p = common.parser(__doc__)
    p.add_argument("--docs", type=int, default=10_000, help="documents in the corpus (default 10,000)")
    p.add_argument("--workers", default="1,2", help="comma list of --workers values to run (default 1,2)")
    p.add_argument("--html", action="store_true", help="an HTML field, parsed and extracted (default: text)")
    p.add_argument("--es-url", help="a cluster to use instead of starting the emulator")
    p.add_argument("--slices", type=int, default=0, help="also run N slices in parallel, then --merge (default: no)")
    p.add_argument("--without-handover", action="store_true",
                   help="with --slices: delete the slices' hand-over before --merge, which then parses again")
    args = p.parse_args(argv)
    n = 300 if args.quick else args.docs
    workers = [int(w) for w in args.workers.split(",")]
    res = common.Results("bench_reindex.py", 19, "dedup reindex: documents per second, requests per document", args)
    from dedup.deduplicator import DedupConfig
    from index.elastic.reindex import Reindex

    tmp = Path(tempfile.mkdtemp(prefix="bench-reindex-"))
    emulator = None
    try:
        base = args.es_url
        if not base:
            sys.path.insert(0, str(common.ROOT / "tests"))
            from es_server import Emulator  # the test suite's noida-db runner

            emulator = Emulator(tmp / "noida")
            base = emulator.start()
        t = time.perf_counter()
        docs = corpus(n, args.seed, args.html)
        load(base, "bench-corpus", docs, args.html)
        print(f"corpus of {n} documents loaded in {time.perf_counter() - t:.1f} s", flush=True)
        res.figure("reindex.docs", "documents in the corpus", n, "docs",
                   note="80% originals, 10% exact, 10% near copies; " + ("HTML field" if args.html else "text field"))
        rows = []
        for w in workers:
            job = Reindex(f"{base}/bench-corpus", f"{base}/bench-dest-w{w}", url_field="url",
                          text_field=None if args.html else "body", html_field="html" if args.html else None,
                          title_field="title", time_field="crawled", config=DedupConfig(),
                          dropped_log=tmp / f"w{w}" / "dropped.jsonl", workers=w)
            load_start = common.loadavg()
            t = time.perf_counter()
            report = job.run()
            wall = time.perf_counter() - t
            rate = report.processed / wall
            res.figure(f"reindex.w{w}.docs_per_s", f"documents per second, --workers {w}", rate, "docs/s",
                       note=f"load {load_start:.1f}")
            res.figure(f"reindex.w{w}.requests_per_doc", f"requests per document, --workers {w}",
                       report.requests / max(report.processed, 1), "requests/doc", goal=("<", 0.1))
            rows.append([w, report.processed, report.kept, report.dropped, report.flagged, round(wall, 1),
                         round(rate, 1), report.requests])
            print(f"  --workers {w}: {report.processed} docs in {wall:.1f} s ({rate:.1f}/s), {report.requests} "
                  f"requests, kept {report.kept}, dropped {report.dropped}", flush=True)
        res.table("runs", ["workers", "documents", "kept", "dropped", "flagged", "wall s", "docs/s", "requests"], rows)
        if args.slices > 1:
            sliced(res, base, tmp, args, f"{base}/bench-dest-w{workers[0]}")
        res.note("Elasticsearch API of the noida-db emulator (not Elasticsearch: its timings are not a cluster's)"
                 if emulator else f"cluster {base}")
    finally:
        if emulator is not None:
            emulator.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    res.finish(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
