#!/usr/bin/env python3
"""Sentence EQ of seed 001 on labelled sentence pairs: precision, recall, F.

    python benchmarks/sentence_eq.py [--pairs tests/data/sentence_pairs.jsonl] [--errors] [--json]

Each line of the pairs file has ``a``, ``b``, ``label`` (1: the same statement —
a copy, a copy with small edits, a paraphrase; 0: different), ``source`` and ``kind``.
Two methods are scored with the shipped tables (``dedup/data/sentence_tables.npz``):

* ``fuzzy``: EQ of Eq. 3.4 (min Sim >= 0.825, |Sim diff| <= 0.15);
* ``4gram``: equal three-least-frequent-4-gram representations.

Reported two ways:

* standard: precision = TP / (TP + FP), recall = TP / (TP + FN), F their harmonic mean;
* seed: what seed 001's Table 4.8 computes from its Table 4.7, "precision" = 1 - FP/negatives
  and "recall" = 1 - FN/positives (its 0.97/0.88 in group 1 are 1 - 3 % and 1 - 13 %, from
  28 FP over ~940 negatives and 13 FN over 100 positives), F their harmonic mean.

``--sweep`` adds seed Figure 3.2's curve: FP and FN rates over the permission threshold.

Cited by: docs/explain.md."""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dedup.explain.fuzzy import Thresholds, eq, sim  # noqa: E402
from dedup.explain.sentences import Refiner, SentenceTables, default_tables  # noqa: E402

DEFAULT_PAIRS = ROOT / "tests" / "data" / "sentence_pairs.jsonl"


def load_pairs(path: str | Path = DEFAULT_PAIRS) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    for r in rows:
        if r.get("label") not in (0, 1) or not r.get("a") or not r.get("b") or not r.get("source"):
            raise ValueError(f"{path}: pair {r.get('id')} needs a, b, source and label 0/1 (got {r})")
    return rows


def score_pairs(rows: list[dict[str, Any]], tables: SentenceTables | None = None) -> list[dict[str, Any]]:
    """Each pair with its refined words, Sims both ways and the 4-gram representations."""
    tables = tables or default_tables()
    out, refine = [], Refiner()
    for r in rows:
        ra, rb = refine(r["a"]), refine(r["b"])
        s_ab, s_ba = sim(ra, rb, tables)
        ga, gb = tables.least_frequent(ra), tables.least_frequent(rb)
        out.append({**r, "sim_ab": s_ab, "sim_ba": s_ba, "grams_a": ga, "grams_b": gb,
                    "gram_equal": bool(ga) and ga == gb})
    return out


def _metrics(labels: list[int], predicted: list[bool]) -> dict[str, Any]:
    tp = sum(1 for y, p in zip(labels, predicted) if y and p)
    fp = sum(1 for y, p in zip(labels, predicted) if not y and p)
    fn = sum(1 for y, p in zip(labels, predicted) if y and not p)
    tn = sum(1 for y, p in zip(labels, predicted) if not y and not p)
    pos, neg = tp + fn, fp + tn

    def f(p: float, r: float) -> float:
        return 2 * p * r / (p + r) if p + r else 0.0

    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / pos if pos else 1.0
    seed_p = 1 - fp / neg if neg else 1.0
    seed_r = 1 - fn / pos if pos else 1.0
    return {"pairs": len(labels), "positives": pos, "negatives": neg, "tp": tp, "fp": fp, "fn": fn, "tn": tn,
            "precision": precision, "recall": recall, "f": f(precision, recall),
            "seed_precision": seed_p, "seed_recall": seed_r, "seed_f": f(seed_p, seed_r)}


def evaluate(scored: list[dict[str, Any]], thresholds: Thresholds = Thresholds()) -> dict[str, Any]:
    """Metrics of both methods, overall and per group (the seed's pairs / ours)."""
    for r in scored:
        r["eq"] = bool(eq(r["sim_ab"], r["sim_ba"], thresholds))
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in scored:
        groups["all"].append(r)
        groups["seed" if r["source"].startswith("seed001") else "own"].append(r)
    report: dict[str, Any] = {"thresholds": thresholds.to_dict(), "methods": {}}
    for method, key in (("fuzzy", "eq"), ("4gram", "gram_equal")):
        report["methods"][method] = {g: _metrics([r["label"] for r in rows], [r[key] for r in rows])
                                     for g, rows in groups.items()}
    return report


def sweep(scored: list[dict[str, Any]], variation: float = 0.15) -> list[dict[str, Any]]:
    out = []
    for k in range(11):
        v = round(0.5 + 0.05 * k, 3)
        m = _metrics([r["label"] for r in scored],
                     [bool(eq(r["sim_ab"], r["sim_ba"], Thresholds(v, variation))) for r in scored])
        out.append({"permission": v, "fp_rate": m["fp"] / m["negatives"], "fn_rate": m["fn"] / m["positives"],
                    "precision": m["precision"], "recall": m["recall"], "f": m["f"]})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=Path, default=DEFAULT_PAIRS)
    ap.add_argument("--tables", type=Path, help="sentence tables (.npz); default: the shipped ones")
    ap.add_argument("--permission", type=float, default=Thresholds().permission)
    ap.add_argument("--variation", type=float, default=Thresholds().variation)
    ap.add_argument("--errors", action="store_true", help="list the misclassified pairs")
    ap.add_argument("--sweep", action="store_true", help="FP/FN rates over the permission threshold 0.5..1.0")
    ap.add_argument("--by-kind", action="store_true", help="pairs judged right per kind of pair")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    tables = SentenceTables.load(args.tables) if args.tables else default_tables()
    scored = score_pairs(load_pairs(args.pairs), tables)
    report = evaluate(scored, Thresholds(args.permission, args.variation))
    report["tables"] = tables.id
    if args.sweep:
        report["sweep"] = sweep(scored, args.variation)
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    t = report["thresholds"]
    print(f"{len(scored)} pairs from {args.pairs.name}; tables {tables.id}; "
          f"permission {t['permission']}, variation {t['variation']}")
    print(f"{'method':<7} {'group':<5} {'pairs':>5} {'pos':>4} {'TP':>4} {'FP':>4} {'FN':>4}   "
          f"{'P':>5} {'R':>5} {'F':>5}   {'seed P':>6} {'seed R':>6} {'seed F':>6}")
    for method, groups in report["methods"].items():
        for g, m in groups.items():
            print(f"{method:<7} {g:<5} {m['pairs']:>5} {m['positives']:>4} {m['tp']:>4} {m['fp']:>4} {m['fn']:>4}   "
                  f"{m['precision']:.3f} {m['recall']:.3f} {m['f']:.3f}   "
                  f"{m['seed_precision']:>6.3f} {m['seed_recall']:>6.3f} {m['seed_f']:>6.3f}")
    if args.sweep:
        print("\npermission  FP rate  FN rate      P      R      F")
        for r in report["sweep"]:
            print(f"{r['permission']:>10.2f}  {r['fp_rate']:7.3f}  {r['fn_rate']:7.3f}  "
                  f"{r['precision']:.3f}  {r['recall']:.3f}  {r['f']:.3f}")
    if args.by_kind:
        kinds: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in scored:
            kinds[f"{'same' if r['label'] else 'different'}: {r['kind']}"].append(r)
        print("\nright / pairs per kind (fuzzy EQ, 4-gram)")
        for kind, rows in sorted(kinds.items()):
            fz = sum(r["eq"] == bool(r["label"]) for r in rows)
            gr = sum(r["gram_equal"] == bool(r["label"]) for r in rows)
            print(f"  {kind:<32} {fz:>3}/{len(rows):<3} {gr:>3}/{len(rows)}")
    if args.errors:
        print("\nmisclassified by fuzzy EQ (label, Sim(a,b), Sim(b,a), kind, source):")
        for r in scored:
            if r["eq"] != bool(r["label"]):
                print(f"  #{r['id']:<3} label {r['label']}  {r['sim_ab']:.3f} {r['sim_ba']:.3f}  {r['kind']:<18} {r['source']}")
                print(f"        a: {r['a']}\n        b: {r['b']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
