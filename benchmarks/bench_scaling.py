"""Target 6: how the cost per page and per query grows with the index, 10k to 1M documents
(embedded index) and 10k to 10M fingerprints (permutation tables).

At each checkpoint (``--checkpoints``, default 10k, 100k, 1M; ``--quick`` 1k, 3k) a
synthetic embedded index (``synth.py``; grown step by step in ``--cache``, shared with
``bench_memory.py``) is reopened in a fresh process and measured: RSS per document, reopen
time, per-query cost of each candidate search and of fetching 20 records, and the per-page
cost after extraction (features, fingerprints, candidate search, verification, insert) of
``--pages`` real pages (goldset-dev when present, else generated ones) checked against it
(the normaliser's word cache warm; the records they add are removed again).

The permutation tables' rows (to 10M) come from ``bench_tables.py``'s JSON when
``--tables-json`` names it (``run.py`` does), else are measured here at the checkpoint sizes.

Cited by: docs/performance.md ("Growth").
"""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np

import bench_memory
import common
import synth

FIGURES = [
    ("t6.page_growth", "per-page cost after extraction, largest / smallest index", "x"),
    ("t6.near_simhash_growth", "simhash query p50, largest / smallest index", "x"),
    ("t6.nearest_growth", "nearest-signature query p50, largest / smallest index", "x"),
    ("t6.lookup_growth", "exact-key lookup p50, largest / smallest index", "x"),
    ("t6.get_growth", "fetch of 20 records p50, largest / smallest index", "x"),
    ("t6.tables_query_growth", "tables query p50, largest / smallest size", "x"),
    ("t6.bytes_per_doc_growth", "RSS per document, largest / smallest index", "x"),
]


def label(n: int) -> str:
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


def main(argv=None) -> int:
    p = common.parser(__doc__)
    common.goldset_arg(p)
    p.add_argument("--checkpoints", default=None, help="index sizes (default 10000,100000,1000000; --quick 1000,3000)")
    p.add_argument("--pages", type=int, default=None, help="pages checked per checkpoint (default 200; --quick 20)")
    p.add_argument("--cache", default=None, help="synthetic index folder (shared with bench_memory.py)")
    p.add_argument("--tables-json", default=None, help="bench_tables.py results to take the tables' rows from")
    bench_memory.option_args(p)
    args = p.parse_args(argv)
    options = bench_memory.index_options(args)
    sizes = [int(float(s)) for s in (args.checkpoints or ("1000,3000" if args.quick else
                                                          "10000,100000,1000000")).split(",")]
    n_pages = args.pages or (20 if args.quick else 200)
    cache = Path(args.cache) if args.cache else bench_memory.default_cache(args.seed)
    res = common.Results("bench_scaling.py", 6, "scaling: cost per page and per query vs index size", args)
    pages, source = synth.probe_pages(args.goldset, n_pages, args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="bench-scaling-"))
    pages_file = tmp / "pages.json"
    synth.write_pages(pages, pages_file)
    probes = {}
    try:
        for n in sorted(sizes):
            path, info, temporary = bench_memory.ensure(cache, n, args.seed, options=options)
            try:
                probes[n] = r = synth.probe_in_subprocess(path, pages_file, 200, args.seed, options)
            finally:
                if temporary:
                    shutil.rmtree(path, ignore_errors=True)
            print(f"  {label(n)}: {r['page_after_extraction_ms']:.2f} ms/page after extraction, near_simhash "
                  f"{r['near_simhash_us_p50']:.0f} us, nearest {r['nearest_us_p50']:.0f} us, "
                  f"{r['rss_open'] / r['records']:.0f} B/doc", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    rows = []
    for n in sorted(probes):
        r = probes[n]
        rows.append([label(n), r["page_features_ms"], r["page_fingerprints_ms"], r["page_search_ms"],
                     r["page_verification_ms"], r["page_insert_ms"], r["page_after_extraction_ms"], r["page_cpu_ms"],
                     r["page_candidates"], r["lookup_us_p50"], r["near_simhash_us_p50"], r["nearest_us_p50"],
                     r["nearest_us_p99"], r["get20_us_p50"], r["recall20"], r["rss_open"] / r["records"],
                     r["disk_bytes"] / r["records"], r["sqlite_bytes"] / r["records"], r["reopen_s"]])
    res.table(f"embedded index by size ({source} pages, {n_pages} per size; per page in ms, per query in us)",
              ["documents", "features", "fingerprints", "search", "verification", "insert", "after extraction",
               "of it CPU", "candidates/page", "lookup p50", "simhash p50", "nearest p50", "nearest p99", "get 20 p50",
               "recall@20", "B/doc RSS", "B/doc disk", "of which SQLite", "reopen s"], rows,
              note="nearest() is exact below 20,000 signatures, HNSW above; 'of it CPU': the process's CPU time a "
                   "page (wall time grows with the other jobs on the machine, CPU time much less)")

    tables = None
    if args.tables_json and Path(args.tables_json).exists():
        tables = json.loads(Path(args.tables_json).read_text()).get("sizes")
    if not tables:
        import bench_tables

        rng = np.random.default_rng(args.seed)

        class A:  # bench_tables' arguments: its defaults (the product's tables)
            quick = True
            k, blocks = bench_tables.K, bench_tables.BLOCKS

        tables = {label(n): bench_tables.measure(n, A, rng) for n in sorted(set(sizes) | {10_000})}
    trows = [[k, v["q_p50"], v["q_p99"], v["add_us_mean"], v["bytes_used"], v["brute_ms"], v["speedup"]]
             for k, v in sorted(tables.items(), key=lambda kv: kv[1]["n"])]
    res.table("permutation tables by size", ["fingerprints", "query p50 us", "query p99 us", "add us (mean)",
                                             "bytes/fp", "brute force ms", "speed-up x"], trows)

    lo, hi = probes[min(probes)], probes[max(probes)]
    span = f"{label(min(probes))} -> {label(max(probes))} documents"

    def growth(fid, name, key, note=""):
        res.figure(fid, name, hi[key] / lo[key], "x", note=f"{span}: {lo[key]:.3g} -> {hi[key]:.3g}. {note}".strip())

    growth("t6.page_growth", "per-page cost after extraction, largest / smallest index", "page_after_extraction_ms")
    growth("t6.near_simhash_growth", "simhash query p50, largest / smallest index", "near_simhash_us_p50")
    growth("t6.nearest_growth", "nearest-signature query p50, largest / smallest index", "nearest_us_p50")
    growth("t6.lookup_growth", "exact-key lookup p50, largest / smallest index", "lookup_us_p50")
    growth("t6.get_growth", "fetch of 20 records p50, largest / smallest index", "get20_us_p50")
    ts = sorted(tables.values(), key=lambda v: v["n"])
    res.figure("t6.tables_query_growth", "tables query p50, largest / smallest size", ts[-1]["q_p50"] / ts[0]["q_p50"],
               "x", note=f"{label(ts[0]['n'])} -> {label(ts[-1]['n'])} fingerprints: "
                         f"{ts[0]['q_p50']:.0f} -> {ts[-1]['q_p50']:.0f} us")
    res.figure("t6.bytes_per_doc_growth", "RSS per document, largest / smallest index",
               (hi["rss_open"] / hi["records"]) / (lo["rss_open"] / lo["records"]), "x")
    # where growth is more than logarithmic: a step of 10x documents costing > 1.5x
    steps = sorted(probes)
    flags = []
    for a, b in zip(steps, steps[1:]):
        for key, name in (("page_after_extraction_ms", "per-page cost"), ("near_simhash_us_p50", "simhash query"),
                          ("nearest_us_p50", "nearest query"), ("get20_us_p50", "fetch of 20 records"),
                          ("lookup_us_p50", "key lookup")):
            f = probes[b][key] / probes[a][key]
            if f > 1.5:
                flags.append(f"{name} x{f:.1f} from {label(a)} to {label(b)}")
    res.note("steps growing faster than 1.5x per step: " + ("; ".join(flags) if flags else "none"))
    res.set("probes", {label(n): r for n, r in probes.items()})
    res.finish(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
