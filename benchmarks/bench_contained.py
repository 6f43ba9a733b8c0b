"""The containment candidates' search (``index.local.containment.find``) as the index grows.

    python benchmarks/bench_contained.py --sizes 10000,100000,1000000

Synthetic records in an in-memory SQLite ``contained`` table (the product's schema): each posts the 16
smallest of L uniform 24-bit shingle keys, L drawn from goldset-dev's shingle counts at their 5th-95th
percentiles (67, 155, 254, 387, 615), made by order statistics (cumulated exponential spacings). Each query is a
fresh page's 256 smallest keys; 280 timed after 20 warm-up queries at each size; printed: p50 and p90 of
``find(keys, 2, 10)`` and the records it proposes (all spurious here: the pages share no text). Real pages share
phrases that random keys do not, so their posting lists are longer: this is the floor of the search's growth.

Cited by: docs/performance.md ("Growth").
"""
from __future__ import annotations

import argparse
import sqlite3
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from index.local import containment  # noqa: E402

SHINGLE_COUNTS = (67, 155, 254, 387, 615)


def smallest(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    """The ``k`` smallest of ``n`` uniform 24-bit keys (distinct, sorted)."""
    k = min(k, n)
    return np.unique(np.floor(np.cumsum(rng.exponential(size=k)) / (n + 1) * 2**24).astype(np.int64))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000", help="record counts, ascending")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    db = sqlite3.connect(":memory:")
    db.executescript(containment.SCHEMA)
    n = 0
    for target in (int(x) for x in args.sizes.split(",")):
        start, rows = time.perf_counter(), []
        for rid in range(n, target):
            keys = smallest(rng, int(rng.choice(SHINGLE_COUNTS)), 16)
            rows += [(int(k) - (1 << 23), rid) for k in keys]
            if len(rows) > 2_000_000 or rid == target - 1:
                rows.sort()
                db.executemany("INSERT OR IGNORE INTO contained VALUES (?, ?)", rows)
                rows = []
        db.commit()
        n = target
        queries = [smallest(rng, int(rng.choice(SHINGLE_COUNTS)), 256) for _ in range(300)]
        for q in queries[:20]:
            containment.find(db, q, 2, 10)
        times, proposed = [], []
        for q in queries[20:]:
            t0 = time.perf_counter()
            proposed.append(len(containment.find(db, q, 2, 10)))
            times.append(time.perf_counter() - t0)
        print(f"{n:>11,} records: find p50 {np.median(times) * 1e3:.2f} ms, p90 "
              f"{np.percentile(times, 90) * 1e3:.2f} ms; records proposed a query {np.mean(proposed):.2f}; "
              f"built in {time.perf_counter() - start:.0f} s", flush=True)
    db.close()


if __name__ == "__main__":
    main()
