#!/usr/bin/env python3
"""Sentence resemblance of ``dedup explain`` on real pages: each goldset-dev page against its
cluster's ``original.htm`` (the same story, copied, trimmed or rewritten by other sites).

    python benchmarks/explain_goldset.py [--goldset DIR] [--min-words N] [--json PATH]

Prints, over those pairs, the median of the smaller degree of resemblance (RS both ways, seed
001 Eq. 4.1), how many pairs are below 0.5, and the sentences per page before (``Page.sentences``,
one per line piece) and after the hierarchy's repairs (hard wraps joined, boilerplate left out).
``--min-words 0`` keeps every fragment (the repairs' boilerplate rule off). Shipped tables only.
Skips with a message when goldset-dev is absent (it is never copied into the repository).

Cited by: docs/explain.md."""
from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

from dedup.explain import explain  # noqa: E402
from dedup.explain.hierarchy import MIN_SENTENCE_WORDS  # noqa: E402
from dedup.page import parse_page  # noqa: E402
from dedup.explain.sentences import Refiner, default_tables  # noqa: E402


def main() -> int:
    p = common.parser(__doc__)
    common.goldset_arg(p)
    p.add_argument("--min-words", type=int, default=MIN_SENTENCE_WORDS,
                   help=f"refined words a short sentence needs (default {MIN_SENTENCE_WORDS}; 0 keeps all)")
    args = p.parse_args()
    missing = common.goldset_missing(args.goldset)
    if missing:
        print(missing)
        return 0
    tables, refiner = default_tables(), Refiner()  # made once for every pair
    rows = []
    start = time.perf_counter()
    for cluster in sorted(d for d in Path(args.goldset).iterdir() if d.is_dir()):
        files = sorted(cluster.glob("*.htm*"))
        original = next((f for f in files if f.stem == "original"), files[0] if files else None)
        if original is None:
            continue
        b = parse_page(original.read_bytes(), original.as_uri())
        for f in files:
            if f == original:
                continue
            a = parse_page(f.read_bytes(), f.as_uri())
            e = explain(a, b, tables=tables, min_words=args.min_words, refiner=refiner)
            rows.append({"cluster": cluster.name, "page": f.name, "lines": len(a.sentences),
                         "sentences": len(e.sentences_a), "rs_ab": e.resemblance_ab, "rs_ba": e.resemblance_ba})
            if args.quick and len(rows) >= 60:
                break
        if args.quick and len(rows) >= 60:
            break
    seconds = time.perf_counter() - start
    low = [min(r["rs_ab"], r["rs_ba"]) for r in rows]
    summary = {"pairs": len(rows), "median_min_resemblance": round(statistics.median(low), 4),
               "below_0_5": sum(x < 0.5 for x in low), "at_least_0_7": sum(x >= 0.7 for x in low),
               "sentences_before": sum(r["lines"] for r in rows), "sentences_after": sum(r["sentences"] for r in rows),
               "min_words": args.min_words, "seconds": round(seconds, 1)}
    print(f"{summary['pairs']} pairs (page vs its cluster's original.htm), {summary['seconds']} s")
    print(f"median of the smaller resemblance {summary['median_min_resemblance']}; below 0.5: "
          f"{summary['below_0_5']}; at least 0.7: {summary['at_least_0_7']}")
    print(f"sentences of the copies: {summary['sentences_before']} as Page.sentences, "
          f"{summary['sentences_after']} after the repairs")
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "pairs": rows}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
