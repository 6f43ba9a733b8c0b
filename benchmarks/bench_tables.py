"""Target 2: the simhash permutation tables (k = 3, 5 blocks, 10 tables: ``DEDUP_BLOCKS``'s default,
as the crawl, the embedded index and a new Elasticsearch index use them; ``--k``/``--blocks`` for
others, e.g. ``--blocks 6``: the 20 tables of indexes made before) with 1M and 10M random 64-bit
fingerprints, near-duplicates planted, against numpy brute force.

For each size N (``--sizes``; default 10k, 100k, 1M, 10M, which also gives target 6's table
for the tables; ``--quick``: 10k, 100k):

* N random fingerprints (doc id = row), of which ``planted`` groups are copies of a query
  fingerprint at distances 1, 2 and 3 (must be found) and 4 and 5 (must not be);
* **bulk insert** ``add_many`` of all N (what ``LocalIndex`` does on open), then
  **streaming inserts**: one ``add`` at a time on top, as a crawl adds pages, long enough to
  include the merges of the sorted delta into main (the mean includes them; the max is the
  longest single add, a merge);
* **bytes per fingerprint**: the tables' numpy arrays (entries, directory, fingerprints, doc
  ids), and the process's RSS growth over building them;
* **query latency**: ``tables.query(fp)`` one fingerprint at a time (the crawl's call), half
  planted queries, half random, p50 / p99 / mean;
* **brute force**: ``np.flatnonzero(np.bitwise_count(all_fps ^ q) <= 3)`` over the same
  stored array, on a sample of the queries, and **exactness**: on that sample the tables'
  answer equals brute force's (ids and distances).

Cited by: docs/performance.md ("The index's parts at 10M records").
"""
from __future__ import annotations

import math
import time

import numpy as np

import common
from dedup.deduplicator import DedupConfig

K, BLOCKS = DedupConfig.max_distance, DedupConfig.blocks  # DEDUP_MAX_DISTANCE's and DEDUP_BLOCKS's defaults
# "mid": 1M (or the second largest size run), "big": the largest (10M in the full run)
FIGURES = [(f"t2.{role}.{key}", f"{name} ({role} size)", unit) for role in ("mid", "big")
           for key, name, unit in (("bulk_insert", "bulk insert rate", "fp/s"),
                                   ("stream_insert", "streaming insert rate", "fp/s"),
                                   ("query_p50", "query p50", "us"), ("query_p99", "query p99", "us"),
                                   ("bytes_per_fp", "bytes per fingerprint", "B"),
                                   ("exact", "exact vs brute force", "share"),
                                   ("speedup", "speed-up over numpy brute force", "x"))]
PLANT_DIST = (1, 2, 3)
DECOY_DIST = (4, 5)


def flip(fp: np.uint64, bits: int, rng: np.random.Generator) -> np.uint64:
    mask = 0
    for b in rng.choice(64, size=bits, replace=False).tolist():
        mask |= 1 << b
    return np.uint64(int(fp) ^ mask)


def tables_bytes(tables) -> dict[str, int]:
    """Bytes of the tables' arrays: allocated (capacity) and in use."""
    alloc = used = 0
    for shard in tables.split().values():
        for arr, n in ((shard._fp, shard._n), (shard._id, shard._n)):
            alloc += arr.nbytes
            used += n * arr.itemsize
        for run in (shard._main, shard._delta):
            alloc += run._buf.nbytes + run.dir.nbytes
            used += len(run) * 8 + run.dir.nbytes
    return {"allocated": alloc, "used": used}


def measure(n: int, args, rng: np.random.Generator) -> dict:
    from dedup.permtables import PermutationTables

    n_queries = 2000 if not args.quick else 400
    planted = min(n_queries // 2, n // 20)
    fps = rng.bit_generator.random_raw(n).astype(np.uint64)
    queries = rng.bit_generator.random_raw(n_queries).astype(np.uint64)
    # plant: query i (i < planted) has stored copies at distances 1-3 and decoys at 4-5
    slots = rng.choice(n, size=planted * (len(PLANT_DIST) + len(DECOY_DIST)), replace=False).reshape(planted, -1)
    for i in range(planted):
        for j, d in enumerate(PLANT_DIST + DECOY_DIST):
            fps[slots[i, j]] = flip(queries[i], d, rng)
    stream = 300_000 if n >= 5_000_000 else (100_000 if n >= 500_000 else min(n // 5, 50_000))
    if args.quick:
        stream = min(stream, 5_000)
    extra = rng.bit_generator.random_raw(stream).astype(np.uint64)

    common.trim_heap()
    rss0 = common.rss()["rss"]
    tables = PermutationTables(k=args.k, blocks=args.blocks)
    t0 = time.perf_counter()
    tables.add_many(fps, np.arange(n, dtype=np.int64))
    bulk_s = time.perf_counter() - t0
    common.trim_heap()
    rss_bulk = common.rss()["rss"]
    size_bulk = tables_bytes(tables)

    add_times = np.empty(stream)
    pc = time.perf_counter
    for i in range(stream):
        t0 = pc()
        tables.add(int(extra[i]), n + i)
        add_times[i] = pc() - t0
    common.trim_heap()
    rss_stream = common.rss()["rss"]
    size_stream = tables_bytes(tables)
    total = n + stream
    all_fps = np.concatenate([fps, extra])
    del fps

    order = rng.permutation(n_queries)  # planted and random queries interleaved
    for q in queries[order[:100]]:  # warm-up
        tables.query(int(q))
    lat = np.empty(n_queries)
    answers = {}
    for j, i in enumerate(order.tolist()):
        q = int(queries[i])
        t0 = pc()
        got = tables.query(q)
        lat[j] = pc() - t0
        answers[i] = got
    found_planted = sum(sum(1 for _, d in answers[i] if d in PLANT_DIST) for i in range(planted))
    decoys_returned = sum(sum(1 for _, d in answers[i] if d > args.k) for i in range(planted))

    sample = order[: (200 if n >= 1_000_000 else 500) if not args.quick else 50]
    # each method timed in its own loop, so neither runs with the other's data in the caches
    # (a brute-force pass streams all fingerprints through them); then interleaved, for the
    # cost of a tables query right after a pass over the caches ("cold")
    table_t, brute, cold = np.empty(len(sample)), np.empty(len(sample)), np.empty(len(sample))
    got = {}
    for j, i in enumerate(sample.tolist()):
        t0 = pc()
        got[i] = tables.query(int(queries[i]))
        table_t[j] = pc() - t0
    wrong = 0
    for j, i in enumerate(sample.tolist()):
        q = queries[i]
        t0 = pc()
        hit = np.flatnonzero(np.bitwise_count(all_fps ^ q) <= args.k)
        brute[j] = pc() - t0
        t0 = pc()
        tables.query(int(q))
        cold[j] = pc() - t0
        want = sorted(((int(r), int(np.bitwise_count(all_fps[r] ^ q))) for r in hit), key=lambda p: (p[1], p[0]))
        wrong += got[i] != want
    return {
        "n": n, "stored": total, "tables": tables.n_tables, "k": args.k, "blocks": args.blocks,
        "bulk_s": bulk_s, "bulk_rate": n / bulk_s,
        "stream": stream, "add_us_mean": add_times.mean() * 1e6, "add_us_p50": common.pct(add_times, 50) * 1e6,
        "add_us_p99": common.pct(add_times, 99) * 1e6, "add_ms_max": add_times.max() * 1e3,
        "stream_rate": stream / add_times.sum(),
        "bytes_alloc": size_stream["allocated"] / total, "bytes_used": size_stream["used"] / total,
        "bytes_bulk": size_bulk["used"] / n, "rss_bulk": (rss_bulk - rss0) / n, "rss_stream": (rss_stream - rss0) / total,
        "q_p50": common.pct(lat, 50) * 1e6, "q_p99": common.pct(lat, 99) * 1e6, "q_mean": lat.mean() * 1e6,
        "queries": n_queries, "planted": planted, "planted_found": found_planted,
        "planted_expected": planted * len(PLANT_DIST), "decoys_returned": decoys_returned,
        "sample": len(sample), "wrong": int(wrong), "brute_ms": brute.mean() * 1e3,
        "sample_q_us": table_t.mean() * 1e6, "speedup": brute.mean() / table_t.mean(),
        "cold_q_us": cold.mean() * 1e6, "speedup_cold": brute.mean() / cold.mean(),
    }


def label(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 and n % 1_000_000 == 0 else (
        f"{n // 1000}k" if n % 1000 == 0 else str(n))


def main(argv=None) -> int:
    p = common.parser(__doc__)
    p.add_argument("--sizes", default=None, help="comma-separated fingerprint counts "
                   "(default 10000,100000,1000000,10000000; --quick 10000,100000)")
    p.add_argument("--k", type=int, default=K, help=f"maximum Hamming distance (default {K})")
    p.add_argument("--blocks", type=int, default=BLOCKS, help=f"bit blocks: C(blocks, k) tables (default {BLOCKS})")
    args = p.parse_args(argv)
    sizes = [int(float(s)) for s in (args.sizes or ("10000,100000" if args.quick else
                                                     "10000,100000,1000000,10000000")).split(",")]
    res = common.Results("bench_tables.py", 2, "permutation tables vs numpy brute force", args)
    rng = np.random.default_rng(args.seed)
    rows = []
    out = {}
    for n in sizes:
        r = measure(n, args, rng)
        out[n] = r
        rows.append([label(n), r["bulk_rate"], r["stream_rate"], r["add_us_mean"], r["add_ms_max"],
                     r["q_p50"], r["q_p99"], r["bytes_used"], r["rss_stream"], r["brute_ms"], r["speedup"],
                     r["speedup_cold"],
                     f"{r['sample'] - r['wrong']}/{r['sample']}", f"{r['planted_found']}/{r['planted_expected']}"])
        print(f"  {label(n)}: query p50 {r['q_p50']:.0f} us p99 {r['q_p99']:.0f} us, brute {r['brute_ms']:.2f} ms, "
              f"{r['speedup']:.0f}x", flush=True)
    res.table(f"permutation tables by size (target 6 for the tables): k = {args.k}, {args.blocks} blocks, "
              f"{math.comb(args.blocks, args.k)} tables",
              ["fingerprints", "bulk add/s", "stream add/s", "add us (mean)", "add max ms", "query p50 us",
               "query p99 us", "bytes/fp (arrays)", "bytes/fp (RSS)", "brute force ms", "speedup x",
               "speedup x (cold)",
               "exact on sample", "planted found"], rows,
              note="stream adds on top of the bulk load; their mean includes merges, the max is the longest merge")
    # two roles with stable figure ids: "big" is the largest size run (10M in the full run),
    # "mid" 1M when run, else the second largest
    big = out[max(sizes)]
    mid = out.get(1_000_000) if max(sizes) != 1_000_000 else None
    if mid is None:
        mid = out[sorted(sizes)[-2]] if len(sizes) > 1 else big
    for role, r in (("mid", mid), ("big", big)):
        t = label(r["n"])
        last = role == "big"
        res.figure(f"t2.{role}.bulk_insert", f"bulk insert rate at {t}", r["bulk_rate"], "fp/s")
        res.figure(f"t2.{role}.stream_insert", f"streaming insert rate at {t} (one add at a time)", r["stream_rate"],
                   "fp/s", note=f"{r['stream']:,} adds; longest single add {r['add_ms_max']:.0f} ms (a merge)")
        res.figure(f"t2.{role}.query_p50", f"query p50 at {t}", r["q_p50"], "us")
        res.figure(f"t2.{role}.query_p99", f"query p99 at {t}", r["q_p99"], "us", goal=("<=", 200) if last else None)
        res.figure(f"t2.{role}.bytes_per_fp", f"bytes per fingerprint at {t} (arrays in use)", r["bytes_used"], "B",
                   note=f"allocated {r['bytes_alloc']:.0f} B; RSS growth {r['rss_stream']:.0f} B; "
                        f"{r['tables']} tables x 8 B entries + 8 B fingerprint + 8 B doc id + directory")
        res.figure(f"t2.{role}.exact", f"exact vs brute force at {t} (sample)", (r["sample"] - r["wrong"]) / r["sample"],
                   "share", goal=(">=", 1.0),
                   note=f"{r['sample']} queries; planted found {r['planted_found']}/{r['planted_expected']}, "
                        f"decoys at 4-5 bits returned {r['decoys_returned']}")
        res.figure(f"t2.{role}.speedup", f"speed-up over numpy brute force at {t}", r["speedup"], "x",
                   goal=(">=", 100) if last else None,
                   note=f"brute force {r['brute_ms']:.2f} ms/query vs tables {r['sample_q_us']:.0f} us/query (mean); "
                        f"a tables query right after a brute-force pass: {r['cold_q_us']:.0f} us "
                        f"({r['speedup_cold']:.0f}x)")
    if big["n"] < 10_000_000:
        res.note(f"largest size in this run: {label(big['n'])}; the issue's 1M/10M figures need the full run")
    res.set("sizes", {label(n): r for n, r in out.items()})
    res.finish(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
