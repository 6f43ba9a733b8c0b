"""Target 5: RAM per document of the embedded index (``index/local.py`` LocalIndex) at 1M
documents, and how long a 1M-document index takes to reopen.

A synthetic index of ``--records`` (default 1,000,000; ``--quick`` 3,000) records of
realistic size (``synth.py``) is built, or reused from ``--cache`` (default
``out/bench-cache/synthetic-seed<seed>``; about 1.9 KB of disk per record), then reopened
in a fresh process that measures its RSS before and after ``LocalIndex(path)``: what the
open index holds, per document, and what that is made of (permutation tables, usearch
vectors and graph, the rest: SQLite's page cache, key maps, the allocator).  RSS is measured
again after a few hundred queries.  The *rebuild* (vector index from SQLite, when the
saved vector file is missing or stale) is reported when the build did one.

Options choose the index's configuration: ``--vector-dtype f16`` (2-byte vectors, connectivity
16; the default of an index made before i8) against the default centred i8 (within 512 bytes);
use another ``--cache`` for it (e.g. a folder holding a copy of the cached ``dedup.sqlite`` and
its ``synthetic.json``) so that the cached vector file is not rebuilt.

Cited by: docs/performance.md.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import common
import synth

FIGURES = [
    ("t5.bytes_per_doc", "RSS growth per document, index open", "B/doc"),
    ("t5.bytes_per_doc_used", "RSS growth per document after queries", "B/doc"),
    ("t5.tables_bytes", "  of which permutation tables", "B/doc"),
    ("t5.vectors_bytes", "  of which signature vectors", "B/doc"),
    ("t5.graph_bytes", "  of which HNSW graph, keys, key map, allocator", "B/doc"),
    ("t5.other_bytes", "  of which SQLite's page cache (at most)", "B/doc"),
    ("t5.reopen_s", "reopen time", "s"),
    ("t5.copy_found", "nearest(): near-copy found among 20", "share"),
    ("t5.recall20", "nearest(): recall@20 vs exact search", "share"),
    ("t5.disk_bytes", "disk per document", "B/doc"),
    ("t5.sqlite_bytes", "  of which SQLite (records and their indexes)", "B/doc"),
]

#: the same figures for the ``--vector-dtype f16`` configuration (run.py's ``memory_f16``)
F16_FIGURES = common.figures_of(FIGURES, "t5.", "t5f16.", "f16 vectors")


def default_cache(seed: int) -> Path:
    return common.ROOT / "out" / "bench-cache" / f"synthetic-seed{seed}"


def ensure(cache: Path, n: int, seed: int, log=print, options: dict | None = None) -> tuple[Path, dict, bool]:
    """A synthetic index of exactly ``n`` records: ``cache`` grown to ``n`` when it holds
    fewer, else a fresh temporary one.  Returns (path, build info, is temporary)."""
    have = synth.synthetic_count(cache)
    if have <= n:
        if have < n:
            log(f"  building a synthetic index of {n:,} records in {cache} (from {have:,})")
        return cache, synth.build(cache, n, seed, log=log, options=options), False
    tmp = Path(tempfile.mkdtemp(prefix="bench-synth-"))
    log(f"  building a synthetic index of {n:,} records in {tmp}")
    return tmp, synth.build(tmp, n, seed, log=log, options=options), True


def index_options(args) -> dict:
    out = {}
    if getattr(args, "vector_dtype", None):
        out["vector_dtype"] = args.vector_dtype
    if getattr(args, "connectivity", None):
        out["connectivity"] = args.connectivity
    if getattr(args, "blocks", None):
        out["blocks"] = args.blocks
    if getattr(args, "expansion_search", None):
        out["expansion_search"] = args.expansion_search
    return out


def option_args(p) -> None:
    p.add_argument("--vector-dtype", default=None, help="LocalIndex vector_dtype (default: the index's default)")
    p.add_argument("--connectivity", type=int, default=None, help="LocalIndex connectivity (default: its default)")
    from index.local import DEFAULT_BLOCKS

    p.add_argument("--blocks", type=int, default=DEFAULT_BLOCKS,
                   help=f"LocalIndex simhash blocks, C(blocks, 3) tables (default {DEFAULT_BLOCKS}, a new "
                        "index's: the cached index may have been made with other defaults); the index keeps it")
    p.add_argument("--expansion-search", type=int, default=None,
                   help="LocalIndex expansion_search (default: its default for the vector dtype)")


def main(argv=None) -> int:
    p = common.parser(__doc__)
    p.add_argument("--records", type=int, default=None, help="documents (default 1000000; --quick 3000)")
    p.add_argument("--cache", default=None, help="synthetic index folder to build or reuse")
    p.add_argument("--fresh", action="store_true", help="delete the cached index first")
    option_args(p)
    args = p.parse_args(argv)
    options = index_options(args)
    n = args.records or (3_000 if args.quick else 1_000_000)
    cache = Path(args.cache) if args.cache else default_cache(args.seed)
    if args.fresh:
        shutil.rmtree(cache, ignore_errors=True)
    res = common.Results("bench_memory.py", 5, "embedded index: RAM per document, reopen time", args)
    path, info, temporary = ensure(cache, n, args.seed, options=options)
    try:
        r = synth.probe_in_subprocess(path, None, 200, args.seed, options)
    finally:
        if temporary:
            shutil.rmtree(path, ignore_errors=True)
    docs = r["records"]
    parts = r["parts"]
    per = {k: v / docs for k, v in parts.items()}
    # the graph's share by difference: usearch's memory_usage counts reserved, untouched capacity
    stats = per.get("vector_stats", 0)
    graph = r["rss_open"] / docs - per["tables"] - per["usearch_vectors"] - stats - per["sqlite_cache_max"]
    res.figure("t5.bytes_per_doc", "RSS growth per document, index open", r["rss_open"] / docs, "B/doc",
               goal=("<=", 512),
               note=f"{docs:,} documents; anonymous {r['rss_open_anon'] / docs:.0f} B, file-backed "
                    f"{r['rss_open_file'] / docs:.0f} B; peak during open {r['peak_rss'] / docs:.0f} B")
    res.figure("t5.bytes_per_doc_used", "RSS growth per document after queries", r["rss_used"] / docs, "B/doc",
               goal=("<=", 512), note="after 200 lookups, simhash and nearest queries and record fetches")
    res.figure("t5.tables_bytes", "  of which permutation tables", per["tables"], "B/doc",
               note=f"{r.get('n_tables', 20)} tables (k = {r.get('k', 3)}, {r.get('blocks', 6)} blocks) x 8 B entries "
                    "+ 8 B simhash + 8 B id + bucket directory")
    res.figure("t5.vectors_bytes", "  of which signature vectors", per["usearch_vectors"] + stats, "B/doc",
               note=f"{r.get('vector_dtype')} scalars" + (f", of which {stats:.0f} B the centred vectors' "
                                                         "[m . y, |y|] (float32) and fine codes" if stats else ""))
    res.figure("t5.graph_bytes", "  of which HNSW graph, keys, key map, allocator", graph, "B/doc",
               note=f"RSS growth minus the rest; usearch's own memory_usage, reserved capacity included: "
                    f"{per['usearch']:.0f} B/doc")
    res.figure("t5.other_bytes", "  of which SQLite's page cache (at most)", per["sqlite_cache_max"], "B/doc",
               note=f"{parts['sqlite_cache_max'] / 2**20:.0f} MiB; records stay on disk")
    res.figure("t5.reopen_s", "reopen time", r["reopen_s"], "s", goal=("<=", 10),
               note="tables from SQLite's covering index + vector file loaded")
    res.figure("t5.copy_found", "nearest(): near-copy found among 20", r["copy_found"], "share",
               note="the record a query was perturbed from (cosine ~0.9987), 100 queries")
    res.figure("t5.recall20", "nearest(): recall@20 vs exact search", r["recall20"], "share",
               note="against exact float32 cosines, 100 near-copy queries; "
                    + ("HNSW" if r["hnsw"] else "below exact_below: exact scan") +
                    f"; vectors {r.get('vector_dtype')}, connectivity {r.get('connectivity')}")
    res.figure("t5.disk_bytes", "disk per document", r["disk_bytes"] / docs, "B/doc", goal=("<=", 2048),
               note="SQLite (records, 4 indexes) + vector file (issue 14 item 8: <= 2 KB a kept page)")
    res.figure("t5.sqlite_bytes", "  of which SQLite (records and their indexes)", r["sqlite_bytes"] / docs,
               "B/doc", note=f"compact records: mean data blob {r['blob_bytes']:.0f} B")
    res.table("queries on the reopened index (us)", ["query", "p50", "p99"],
              [[k, r.get(f"{k}_us_p50"), r.get(f"{k}_us_p99")] for k in
               ("lookup", "near_simhash", "nearest", "get20", "nearest_exact")])
    if info.get("added") or info.get("rebuild_s"):
        res.table("build", ["records", "SQLite insert s", "vector index rebuild s"],
                  [[n, info["insert_s"], info["rebuild_s"]]],
                  note="rebuild: LocalIndex making the vector file from SQLite (missing, stale or other options)")
    res.set("probe", r)
    if args.vector_dtype == "f16":
        res.rename("t5.", "t5f16.", ", f16 vectors")
    res.finish(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
