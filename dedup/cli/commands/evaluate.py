"""``dedup evaluate``: online precision/recall over a folder of near-duplicate clusters."""
from __future__ import annotations

import argparse
import json

from ...extract import EXTRACTORS
from . import config_of, config_options, progress, rounded

__all__ = ["register"]


def _floats(spec: str) -> list[float]:
    """``a:b:step`` or ``a,b,c``."""
    if ":" in spec:
        a, b, step = (float(x) for x in spec.split(":"))
        out, x = [], a
        while x <= b + 1e-9:
            out.append(round(x, 6))
            x += step
        return out
    return [float(x) for x in spec.split(",")]


def cmd_evaluate(args: argparse.Namespace) -> int:
    from ..evaluate import evaluate, metric, sweep

    config = config_of(args, "weights", "extractor")
    report = evaluate(args.folder, seed=args.seed, config=config, progress=progress("evaluate"))
    m = metric(report.outcomes)
    pages = len(report.outcomes)
    summary = {
        "precision": m["precision"], "recall": m["recall"], "f1": m["f1"], "pages": pages,
        "seed": args.seed, "flagged": m["flagged"], "relevant": m["relevant"],
        "seconds": round(report.seconds, 2), "pages_per_second": round(pages / report.seconds, 1),
        "thresholds": rounded(config.thresholds()), "reference": report.reference,
        "false_positives": [_row(o) for o in m["false_positives"]],
        "misses": [_row(o) for o in m["misses"]],
    }
    if args.sweep:
        summary["sweep"] = sweep(report, _floats(args.sweep))
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    print(f"pages {pages}  seed {args.seed}  {summary['pages_per_second']} pages/s ({summary['seconds']} s)")
    ref = report.reference
    print(f"reference text {ref['id']} ({ref['from']}: {ref['file']}"
          + (f"; trained on {ref['corpus']}" if ref.get("corpus") else "") + ")")
    print(f"precision {m['precision']:.4f}  recall {m['recall']:.4f}  F1 {m['f1']:.4f}  "
          f"(flagged {m['flagged']}, correct {m['correct']}, relevant {m['relevant']})")
    for title, rows in (("false positives", summary["false_positives"]), ("misses", summary["misses"])):
        print(f"\n{title}: {len(rows)}")
        for r in rows[: args.show]:
            print(f"  {r['path']}  {r['status']}/{r['rule']}  -> {r['matched_cluster']}  "
                  f"containment={r['containment']} tdw={r['tdw_cosine']} mrc={r['mrc']}")
    if args.sweep:
        print("\n   t2  precision  recall      F1  flagged")
        for r in summary["sweep"]:
            print(f"{r['t2']:5.2f}  {r['precision']:9.4f}  {r['recall']:6.4f}  {r['f1']:6.4f}  {r['flagged']:7d}")
    return 0


def _row(o) -> dict:
    s = o.verdict.scores
    return {"path": o.path, "cluster": o.cluster, "status": o.verdict.status, "rule": o.verdict.rule,
            "matched_cluster": o.best_cluster, "containment": s.get("containment"),
            "tdw_cosine": s.get("tdw_cosine"), "mrc": s.get("mrc"), "hamming": s.get("hamming")}


def register(sub: argparse._SubParsersAction) -> None:
    ev = sub.add_parser("evaluate", help="online precision/recall over a folder of near-duplicate clusters")
    ev.add_argument("folder", help="folder with one sub-folder of pages per cluster (like goldset-dev)")
    ev.add_argument("--seed", type=int, default=7, help="arrival-order seed (default 7)")
    ev.add_argument("--json", action="store_true", help="print one JSON object")
    ev.add_argument("--sweep", metavar="A:B:STEP", help="also report the metric at these t2 values, e.g. 0.1:0.6:0.05")
    config_options(ev)
    ev.add_argument("--weights", choices=("tdw", "wwt"), help="TDW preset")
    ev.add_argument("--extractor", choices=EXTRACTORS,
                    help="main-text extractor (default: DedupConfig's, as a crawl's DEDUP_EXTRACTOR)")
    ev.add_argument("--show", type=int, default=20, help="false positives / misses listed (default 20)")
    ev.set_defaults(func=cmd_evaluate)
