"""``dedup reindex`` against a plain copy and a user's datasketch script, on one cluster, in one run.

    python benchmarks/bench_reindex.py --docs 10000                  # the table of docs/elasticsearch.md
    python benchmarks/bench_reindex.py --docs 2000 --runs plain,dedup # some rows only
    python benchmarks/bench_reindex.py --docs 2000 --runs dedup,slices --without-handover  # it parses again

The corpus is :mod:`reindex_corpus`'s: real goldset-dev and negatives-dev pages, distinct pages
made from them (their markup, text of their own) and exact and edited copies, with ``url``,
``title``, ``html`` and ``crawled``; it is loaded into the noida-db emulator of tests/es_server.py
(or the cluster of ``--es-url``).  Then, one after the other on the same cluster, each row of the
table reads the whole corpus and writes what it keeps to a new index:

* ``plain``: ``elasticsearch.helpers.reindex(es, "corpus", "plain")``, a copy deciding nothing;
* ``datasketch``: the script a user might write instead: ``helpers.scan`` in keep order ->
  resiliparse main text -> word 5-grams -> datasketch ``MinHash(128)`` + ``MinHashLSH(0.3)``
  -> ``helpers.bulk`` of the documents with no candidate (the others are dropped);
* ``dedup``: ``Reindex(..., keep="oldest")``, as ``dedup reindex`` runs it; ``workers1``, ``workers2``:
  with ``--workers 1`` or ``2`` (worker processes parsing while this one decides); ``slices``:
  ``dedup reindex --slices 2 --slice I`` for both I at once, then the final pass (``--merge``).

Each row has its wall time, documents per second and the ratio to the plain copy's, the client's
CPU a document (this process and its children: worker processes, slice processes), the deciding
process's own CPU over the wall time (``deciding_share``: with ``--workers`` the parsing is the workers'), the cluster's
CPU (the emulator process's, from /proc, counted until it is idle again) and its ratio to the plain copy's,
the part of it the emulator's ``autosave`` thread spent re-writing its store (see :class:`Meter`) and the
rest, its work on the requests, with that ratio to the plain copy's, requests a document,
and its accuracy against the corpus's ground truth in keep-oldest order (:func:`reindex_corpus.accuracy`:
copies found, distinct documents wrongly dropped or flagged).  Each row's indices are deleted after
it, so every row meets a cluster holding the corpus alone.  Beside them, the crawl path's CPU a
document (``features_from_source`` + ``Deduplicator.process`` on the embedded index, the HTML ->
verdict of a crawl) on every document (or the first ``--crawl-sample``), in the same process, timed again just
before each deciding row (a row's client CPU is compared with the reference taken beside it; the copy's
and the script's with their mean: one reference taken once moved 5.4-6.6 ms between runs).  The emulator
is not Elasticsearch: its timings are not a cluster's, the ratios on one machine are what this says.

Cited by: docs/elasticsearch.md ("Throughput"), docs/performance.md, README.md.
"""
from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import common
import reindex_corpus

RUNS = ("plain", "datasketch", "dedup", "workers1", "workers2", "slices")
FIGURES = [("reindex.docs", "documents in the corpus", "docs")]


class Meter:
    """Wall time, this process's and its children's CPU, and the cluster process's CPU, of one row.

    Of the emulator's CPU, its ``autosave`` thread's is told apart: noida-db keeps its whole store in one
    JSON file, written again a second or so after any write (0.45 s of CPU for a 136 MB store), so that
    thread works all through a row that writes and its CPU grows with the row's wall time times the store's
    size, the source included; an Elasticsearch node appends its translog instead.  What the emulator
    spends on the requests is the rest (``cluster work``)."""

    def __init__(self, cluster_pid: int | None) -> None:
        self.pid = cluster_pid

    @staticmethod
    def _cpu(stat: Path) -> float:
        fields = stat.read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def cluster_cpu(self) -> float:
        if not self.pid:
            return float("nan")
        return self._cpu(Path(f"/proc/{self.pid}/stat"))

    def cluster_saving(self) -> float:
        """The CPU of the emulator's ``autosave`` thread (see the class docstring)."""
        if not self.pid:
            return float("nan")
        total = 0.0
        for task in Path(f"/proc/{self.pid}/task").iterdir():
            try:
                if (task / "comm").read_text().strip() == "autosave":
                    total += self._cpu(task / "stat")
            except OSError:  # a thread that ended meanwhile
                continue
        return total

    def settle(self, quiet: float = 0.5, limit: float = 300.0) -> None:
        """Wait until the cluster process spends no CPU for ``quiet`` seconds: the saves a row's writes
        started are counted in that row, not in the next."""
        if not self.pid:
            return
        end, last = time.monotonic() + limit, self.cluster_cpu()
        while time.monotonic() < end:
            time.sleep(quiet)
            now = self.cluster_cpu()
            if now - last < 0.02:
                return
            last = now

    @staticmethod
    def client_cpu() -> float:
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return Meter.own_cpu() + kids.ru_utime + kids.ru_stime

    @staticmethod
    def own_cpu() -> float:
        """This process's CPU alone (the deciding process of a row run in it; its workers are children)."""
        own = resource.getrusage(resource.RUSAGE_SELF)
        return own.ru_utime + own.ru_stime

    def measure(self, fn: Callable[[], Any]) -> tuple[Any, dict[str, float]]:
        self.settle()
        c0, o0, k0, s0 = self.client_cpu(), self.own_cpu(), self.cluster_cpu(), self.cluster_saving()
        t0, l0 = time.perf_counter(), common.loadavg()
        out = fn()
        wall = time.perf_counter() - t0
        own = self.own_cpu() - o0
        self.settle()
        return out, {"wall": wall, "client": self.client_cpu() - c0, "own": own, "cluster": self.cluster_cpu() - k0,
                     "saving": self.cluster_saving() - s0, "load": (l0 + common.loadavg()) / 2}


def load(client: Any, name: str, docs: list[dict[str, Any]]) -> None:
    from elasticsearch import helpers

    client.options(ignore_status=404).indices.delete(index=name)
    client.indices.create(index=name, mappings={"properties": {
        "url": {"type": "keyword"}, "title": {"type": "text"}, "html": {"type": "text", "index": False},
        "crawled": {"type": "date", "format": "epoch_second"}}})
    helpers.bulk(client, ({"_index": name, "_id": d["id"], "_source": {k: v for k, v in d.items() if k != "id"}}
                          for d in docs), chunk_size=200, max_chunk_bytes=20 << 20)
    client.indices.refresh(index=name)


def drop_indices(client: Any, prefix: str) -> None:
    for name in client.indices.get(index=f"{prefix}*", expand_wildcards="all"):
        client.indices.delete(index=name)


# -- the rows ---------------------------------------------------------------------------------------
def plain_copy(client: Any) -> dict[str, tuple[str, str | None]]:
    from elasticsearch import helpers

    # the emulator has no data streams: the helper's look-up of one answers 400, which it reads as "an index"
    helpers.reindex(client, "corpus", "plain", target_client=client.options(ignore_status=400))
    return {}


_WORD = re.compile(r"\w+")


def datasketch_script(client: Any) -> dict[str, tuple[str, str | None]]:
    """The script a user might write (see the module docstring); returns the dropped ids -> (status, copy of)."""
    from datasketch import MinHash, MinHashLSH
    from elasticsearch import helpers
    from resiliparse.extract.html2text import extract_plain_text

    lsh = MinHashLSH(threshold=0.3, num_perm=128)
    dropped: dict[str, tuple[str, str | None]] = {}

    def kept() -> Any:
        hits = helpers.scan(client, index="corpus", preserve_order=True, size=500,
                            query={"sort": [{"crawled": "asc"}, {"url": "asc"}]})
        for hit in hits:
            text = extract_plain_text(hit["_source"]["html"], main_content=True)
            words = _WORD.findall(text.lower())
            grams = {" ".join(words[i:i + 5]).encode() for i in range(max(1, len(words) - 4))}
            m = MinHash(num_perm=128)
            m.update_batch(list(grams))
            found = lsh.query(m)
            if found:
                dropped[hit["_id"]] = ("duplicate", found[0])
                continue
            lsh.insert(hit["_source"]["url"], m)
            yield {"_index": "script", "_id": hit["_id"], "_source": hit["_source"]}

    helpers.bulk(client, kept(), chunk_size=500, max_chunk_bytes=20 << 20)
    return dropped


def dedup_run(base: str, tmp: Path, workers: int) -> tuple[Any, dict[str, tuple[str, str | None]]]:
    from dedup.deduplicator import DedupConfig
    from index.elastic.reindex import Reindex

    dest = f"dedup-w{workers}"
    job = Reindex(f"{base}/corpus", f"{base}/{dest}", url_field="url", text_field=None, html_field="html",
                  title_field="title", time_field="crawled", keep="oldest", config=DedupConfig(),
                  dropped_log=tmp / dest / "dropped.jsonl", workers=workers)
    return job.run(), tmp / dest / "dropped.jsonl"


def sliced_run(base: str, tmp: Path, n: int, without_handover: bool) -> Any:
    from dedup.deduplicator import DedupConfig
    from index.elastic.reindex import Reindex
    from index.elastic.reindex_slices import merge

    dest = f"{base}/dedup-s{n}"
    args = ["reindex", f"{base}/corpus", dest, "--url-field", "url", "--title-field", "title", "--time-field",
            "crawled", "--text-field", "", "--html-field", "html", "--keep", "oldest", "--slices", str(n), "--json"]
    procs = [subprocess.Popen([sys.executable, "-m", "dedup.cli", *args, "--slice", str(i), "--dropped-log",
                               str(tmp / f"s{i}" / "dropped.jsonl")], cwd=common.ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True) for i in range(n)]
    reports = [json.loads(p.communicate()[0]) for p in procs]
    if without_handover:  # as after slices of an older version: the final pass parses again
        from elasticsearch import Elasticsearch

        client = Elasticsearch(base, request_timeout=300)
        client.indices.delete(index=f"dedup-s{n}-slices-features")
        client.close()
    job = Reindex(f"{base}/corpus", dest, url_field="url", text_field=None, html_field="html", title_field="title",
                  time_field="crawled", keep="oldest", config=DedupConfig(), dropped_log=tmp / "merge" / "dropped.jsonl",
                  slices=n, merge=True)
    merged = merge(job)
    logs = [tmp / f"s{i}" / "dropped.jsonl" for i in range(n)] + [tmp / "merge" / "dropped.jsonl"]
    return reports, merged, logs


def verdicts(client: Any, index: str, logs: list[Path]) -> dict[str, tuple[str, str | None]]:
    """Each flagged or dropped document's id -> (status, duplicate_of): the destination's flagged ones, then
    the dropped log's."""
    from elasticsearch import helpers

    client.indices.refresh(index=index)
    out: dict[str, tuple[str, str | None]] = {}
    for h in helpers.scan(client, index=index, _source=["dedup.status", "dedup.duplicate_of"], size=5000):
        d = h["_source"].get("dedup") or {}
        if d.get("status") not in (None, "unique"):
            out[h["_id"]] = (d["status"], d.get("duplicate_of"))
    for log in logs:
        if log.exists():
            for line in log.read_text(encoding="utf-8").split("\n"):  # not splitlines: text holds U+2028
                if not line.strip():
                    continue
                e = json.loads(line)
                item = e.get("item") or {}
                v = e.get("verdict") or {}
                if "id" in item:
                    out[str(item["id"])] = (v.get("status", "exact_duplicate"), v.get("duplicate_of"))
    return out


def crawl_path_cpu(docs: list[dict[str, Any]], folder: Path) -> float:
    """CPU seconds a document of the crawl's HTML -> verdict (page, features, decision on a new embedded index
    in ``folder``)."""
    from dedup.deduplicator import DedupConfig, Deduplicator
    from dedup.sources import Source, features_from_source
    from index.local import LocalIndex

    config = DedupConfig()
    index = LocalIndex(folder, k=config.max_distance, blocks=config.blocks)
    try:
        decider = Deduplicator(index, config)
        features_from_source(Source(url="http://warm.invalid/", html=docs[0]["html"]), config)  # loads the tables
        t = time.process_time()
        for d in sorted(docs, key=lambda d: (d["crawled"], d["url"])):
            page, features = features_from_source(Source(url=d["url"], html=d["html"]), config)
            decider.process(page, features=features, fetched_at=float(d["crawled"]))
        return (time.process_time() - t) / len(docs)
    finally:
        index.close()


def main(argv=None) -> int:
    p = common.parser(__doc__)
    p.add_argument("--docs", type=int, default=10_000, help="documents in the corpus (default 10,000)")
    p.add_argument("--runs", default=",".join(RUNS), help=f"comma list of rows (default all: {','.join(RUNS)})")
    p.add_argument("--slices", type=int, default=2, help="slices of the `slices` row (default 2)")
    p.add_argument("--crawl-sample", type=int, help="documents the crawl path is timed on (default all: its index "
                                                     "grows as the reindex's does)")
    p.add_argument("--es-url", help="a cluster to use instead of starting the emulator")
    p.add_argument("--without-handover", action="store_true",
                   help="slices row: delete the slices' hand-over before --merge, which then parses again")
    args = p.parse_args(argv)
    n = 300 if args.quick else args.docs
    runs = [r for r in args.runs.split(",") if r]
    unknown = sorted(set(runs) - set(RUNS))
    if unknown:
        p.error(f"unknown rows {unknown}; valid: {', '.join(RUNS)}")
    try:  # before an emulator starts
        reindex_corpus.check_data()
    except FileNotFoundError as exc:
        p.exit(2, f"bench_reindex.py: {exc}\n")
    res = common.Results("bench_reindex.py", 29, "dedup reindex against a plain copy and a datasketch script", args)
    from elasticsearch import Elasticsearch

    tmp = Path(tempfile.mkdtemp(prefix="bench-reindex-"))
    emulator = None
    try:
        base = args.es_url
        if not base:
            sys.path.insert(0, str(common.ROOT / "tests"))
            from es_server import Emulator  # the test suite's noida-db runner

            emulator = Emulator(tmp / "noida")
            base = emulator.start()
        client = Elasticsearch(base, request_timeout=600)
        meter = Meter(emulator.proc.pid if emulator and emulator.proc else None)
        t = time.perf_counter()
        docs, groups = reindex_corpus.corpus(n, args.seed)
        size = sum(len(d["html"].encode("utf-8", "surrogatepass")) for d in docs) / n
        load(client, "corpus", docs)
        print(f"corpus of {n} documents ({size / 1000:.0f} KB of HTML each) made and loaded in "
              f"{time.perf_counter() - t:.0f} s", flush=True)
        res.figure("reindex.docs", "documents in the corpus", n, "docs",
                   note=f"goldset-dev and negatives-dev pages, distinct pages made from them, exact and edited "
                        f"copies; {size / 1000:.0f} KB of HTML a document")
        crawl_docs = docs[:min(args.crawl_sample or n, n)]
        crawls: list[float] = []
        rows, plain = [], None
        for run in runs:
            requests = None
            if run not in ("plain", "datasketch"):  # item 2's reference, timed just before the row it is paired with
                crawl = crawl_path_cpu(crawl_docs, tmp / f"crawl-{run}")
                crawls.append(crawl)
            if run == "plain":
                got, m = meter.measure(lambda: plain_copy(client))
                drop_indices(client, "plain")
            elif run == "datasketch":
                got, m = meter.measure(lambda: datasketch_script(client))
                drop_indices(client, "script")
            elif run in ("dedup", "workers1", "workers2"):
                w = 0 if run == "dedup" else int(run[-1])
                (report, log), m = meter.measure(lambda: dedup_run(base, tmp, w))
                got = verdicts(client, f"dedup-w{w}", [log])
                requests = report.requests
                drop_indices(client, f"dedup-w{w}")
            else:
                (reports, merged, logs), m = meter.measure(lambda: sliced_run(base, tmp, args.slices,
                                                                              args.without_handover))
                got = verdicts(client, f"dedup-s{args.slices}", logs)
                requests = sum(r["requests"] for r in reports) + merged.requests
                drop_indices(client, f"dedup-s{args.slices}")
            acc = reindex_corpus.accuracy(docs, groups, got) if run != "plain" else None
            if run == "plain":
                plain = m
            rate = n / m["wall"]
            row = {"run": run, "wall_s": round(m["wall"], 1), "docs_per_s": round(rate, 1),
                   "wall_vs_plain": round(m["wall"] / plain["wall"], 2) if plain else None,
                   "client_ms_per_doc": round(m["client"] / n * 1000, 2),
                   "crawl_ms_per_doc": round(crawl * 1000, 2) if run not in ("plain", "datasketch") else None,
                   "client_vs_crawl": (round(m["client"] / n / crawl, 2) if run not in ("plain", "datasketch")
                                       else None),
                   "deciding_share": (round(m["own"] / m["wall"], 2) if run in ("dedup", "workers1", "workers2")
                                      else None),
                   "cluster_cpu_s": round(m["cluster"], 1),
                   "cluster_vs_plain": round(m["cluster"] / plain["cluster"], 2) if plain else None,
                   "cluster_save_s": round(m["saving"], 1),
                   "cluster_work_s": round(m["cluster"] - m["saving"], 1),
                   "work_vs_plain": (round((m["cluster"] - m["saving"]) / (plain["cluster"] - plain["saving"]), 2)
                                     if plain else None),
                   "requests_per_doc": round(requests / n, 3) if requests is not None else None,
                   "copies": acc["copies"] if acc else None, "found": acc["found"] if acc else None,
                   "wrong": acc["wrong"] if acc else None, "load": round(m["load"], 1)}
            rows.append(row)
            for key in ("docs_per_s", "wall_vs_plain", "client_ms_per_doc", "deciding_share", "cluster_vs_plain",
                        "work_vs_plain", "found", "wrong"):
                if row[key] is not None:
                    res.figure(f"reindex.{run}.{key}", f"{run}: {key.replace('_', ' ')}", row[key], "",
                               note=f"load {row['load']}")
            print("  " + "  ".join(f"{k} {v}" for k, v in row.items()), flush=True)
        for row in rows:  # the copy's and the script's against the mean reference
            if row["client_vs_crawl"] is None and crawls:
                row["client_vs_crawl"] = round(row["client_ms_per_doc"] / (sum(crawls) / len(crawls) * 1000), 2)
        if crawls:
            res.figure("reindex.crawl_cpu_ms", "crawl path CPU a document (HTML -> verdict, embedded index)",
                       sum(crawls) / len(crawls) * 1000, "ms",
                       note=f"{len(crawl_docs)} documents, timed before each deciding row: "
                            + ", ".join(f"{c * 1000:.2f}" for c in crawls))
        columns = list(rows[0]) if rows else []
        res.table("runs", columns, [[r[c] for c in columns] for r in rows],
                  note="crawl_ms_per_doc: the crawl path timed just before the row (client_vs_crawl's reference); "
                       "deciding_share: the deciding process's own CPU over the wall time (its workers left out); "
                       "ratios to the plain copy of this run")
        res.note("Elasticsearch API of the noida-db emulator (not Elasticsearch: its timings are not a cluster's)"
                 if emulator else f"cluster {base}")
        client.close()
    finally:
        if emulator is not None:
            emulator.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    res.finish(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
