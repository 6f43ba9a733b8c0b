"""The ``dedup`` console script."""
from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Sequence

__all__ = ["main"]


def _progress(label: str):
    """A one-line progress bar on stderr when it is a terminal."""
    if not sys.stderr.isatty():
        return None

    def show(n: int, total: int) -> None:
        width = 30
        done = int(width * n / total) if total else width
        sys.stderr.write(f"\r{label} [{'#' * done}{'.' * (width - done)}] {n}/{total}")
        if n >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return show


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
    from .deduplicator import DedupConfig
    from .evaluate import evaluate, metric, sweep

    overrides = {k: getattr(args, k) for k in ("t1", "t2", "knn", "weights") if getattr(args, k) is not None}
    config = DedupConfig(**overrides)
    report = evaluate(args.folder, seed=args.seed, config=config, progress=_progress("evaluate"))
    m = metric(report.outcomes)
    pages = len(report.outcomes)
    summary = {
        "precision": m["precision"], "recall": m["recall"], "f1": m["f1"], "pages": pages,
        "seed": args.seed, "flagged": m["flagged"], "relevant": m["relevant"],
        "seconds": round(report.seconds, 2), "pages_per_second": round(pages / report.seconds, 1),
        "thresholds": config.thresholds(),
        "false_positives": [_row(o) for o in m["false_positives"]],
        "misses": [_row(o) for o in m["misses"]],
    }
    if args.sweep:
        summary["sweep"] = sweep(report, _floats(args.sweep))
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    print(f"pages {pages}  seed {args.seed}  {summary['pages_per_second']} pages/s ({summary['seconds']} s)")
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


def cmd_search(args: argparse.Namespace) -> int:
    import os
    import shutil

    from index import open_search  # lazy: dedup's modules do not import index

    uri = args.index or os.environ.get("DEDUP_INDEX") or "local://.dedup"
    options = {"readonly": True} if uri.lower().startswith("local://") else {}
    search = open_search(uri, **options)
    try:
        hits = search.search(args.query, limit=args.limit)
    finally:
        search.close()
    if args.json:
        print(json.dumps([{k: h.get(k) for k in ("url", "title", "snippet", "status", "duplicate_of",
                                                  "score", "fetched_at")} for h in hits],
                         indent=1, ensure_ascii=False))
        return 0
    if not hits:
        print(f"no results for {args.query!r} in {uri}")
        return 0
    width = shutil.get_terminal_size((100, 20)).columns

    def cut(text: str, n: int) -> str:
        text = " ".join((text or "").split())
        return text if len(text) <= n else text[: max(n - 1, 0)] + "\u2026"

    print(f"{'status':<15} {'url':<50} title")
    for h in hits:
        status = h.get("status") or "-"
        print(f"{status:<15} {cut(h['url'], 50):<50} {cut(h.get('title', ''), max(width - 67, 20))}")
        if h.get("duplicate_of"):
            print(f"{'':<15} duplicate of {cut(h['duplicate_of'], width - 29)}")
        if h.get("snippet"):
            print(f"{'':<15} {cut(h['snippet'], max(width - 16, 40))}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dedup", description="Near-duplicate filter for crawls and search indexes.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    sub = parser.add_subparsers(dest="command", required=True)

    ev = sub.add_parser("evaluate", help="online precision/recall over a folder of near-duplicate clusters")
    ev.add_argument("folder", help="folder with one sub-folder of pages per cluster (like goldset-dev)")
    ev.add_argument("--seed", type=int, default=7, help="arrival-order seed (default 7)")
    ev.add_argument("--json", action="store_true", help="print one JSON object")
    ev.add_argument("--sweep", metavar="A:B:STEP", help="also report the metric at these t2 values, e.g. 0.1:0.6:0.05")
    ev.add_argument("--t1", type=float, help="duplicate threshold (containment)")
    ev.add_argument("--t2", type=float, help="near-duplicate threshold (containment)")
    ev.add_argument("--knn", type=int, help="nearest signatures fetched per page")
    ev.add_argument("--weights", choices=("tdw", "wwt"), help="TDW preset")
    ev.add_argument("--show", type=int, default=20, help="false positives / misses listed (default 20)")
    ev.set_defaults(func=cmd_evaluate)

    se = sub.add_parser("search", help="full-text search over the kept pages of a search index")
    se.add_argument("query", help="words to find (plain text: quotes, -, :, * are not operators; word* is a prefix)")
    se.add_argument("--index", help="search index URI (default: $DEDUP_INDEX or local://.dedup)")
    se.add_argument("--limit", type=int, default=10, help="hits shown (default 10)")
    se.add_argument("--json", action="store_true", help="print a JSON list of hits")
    se.set_defaults(func=cmd_search)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args)
    except (FileNotFoundError, ValueError) as exc:
        print(f"dedup: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
