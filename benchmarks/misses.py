"""Where the cross-validated misses of the calibrated decision are (docs/accuracy.md).

    python benchmarks/misses.py            # after benchmarks/calibrate.py (reads its cached rows)

The held-out misses of ``calibrate.py``'s leave-cluster-out CV (goldset-dev, seed ``--seed``) are
classified by running the goldset-dev stream once more through the deduplicator, keeping every kept
page's exact set of shingles (the featurizer's word 5-grams of the same text, not the record's sketch):

* ``related cluster``: the page was flagged, but against a page of another cluster (one story in two);
* ``no shared text``: exact containment with every earlier kept page of its cluster below ``--low``
  (``story``: the highest with any other page of the cluster, later ones too: below ``--low``, no test of
  shared text could ever reach the page);
* ``not a candidate``: the earlier page of its cluster of highest exact containment was not among the
  candidates (simhash tables, nearest MRC signatures, containment candidates), and it beats the best
  candidate's containment by more than 0.05;
* ``decision``: it was a candidate; the model did not call it a copy (exact containment and the sketch's
  estimate for that page are printed: how far the sketch is from the exact value; and the exact
  containment of the page in its best candidate read by trafilatura instead: how much the extract,
  e.g. a sidebar's text kept in one page, holds it down).

Cited by: docs/accuracy.md ("Where the misses are"), docs/decision.md.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calib_data  # noqa: E402
import calibrate  # noqa: E402


def exact_rows(folder: Path, seed: int) -> dict[str, dict]:
    """Per page path: the exact containment of the best earlier kept page of its cluster, that page's
    sketch estimate and whether it was a candidate (the stream of ``dedup evaluate``)."""
    from dedup.cli.evaluate import page_url
    from dedup.deduplicator import containment
    from dedup.page import limit_text, parse_page
    from dedup.record import shingle_keys

    pages, order, dedup, unsketched = calib_data.replayer(folder, seed)
    config, featurizer = dedup.config, dedup.featurizer
    asked: list[set[int]] = []
    candidates = dedup._candidates
    dedup._candidates = lambda f, extra: asked.append(set(ids := candidates(f, extra))) or ids  # type: ignore
    kept: dict[int, tuple[np.ndarray, str]] = {}
    every: dict[str, list[tuple[str, np.ndarray]]] = {}  # cluster -> (page, full shingles) of all its pages
    out = {}
    for i in order:
        cluster, path = pages[i]
        page = parse_page(path.read_bytes(), page_url(i), extractor=config.extractor)
        limit_text(page, config.max_text_chars)
        full = unsketched(page)
        every.setdefault(cluster, []).append((_page(path), full.shingles))
        asked.clear()
        before = set(dedup.index._records)  # MemoryIndex's records
        verdict = dedup.process(page, features=featurizer(page))
        best, best_id = 0.0, None
        for rid, (shingles, c) in kept.items():
            if c == cluster and shingles.size and full.shingles.size:
                share = np.intersect1d(shingles, full.shingles, assume_unique=True).size
                share /= min(shingles.size, full.shingles.size)
                if share > best:
                    best, best_id = share, rid
        row = {"exact": round(best, 4)}
        if best_id is not None:
            rec = dedup.index.get([best_id])[0]
            q = shingle_keys(full.shingles[:config.sketch])
            row["sketch"] = round(containment(q, full.shingle_count, rec.shingles, rec.shingle_count)[0], 4)
            row["candidate"] = bool(asked and best_id in asked[0])
            row["size"] = int(kept[best_id][0].size)
        out[_page(path)] = row
        if verdict.kept:
            (new,) = set(dedup.index._records) - before
            kept[new] = (full.shingles, cluster)
    for pages_of in every.values():
        for name, sh in pages_of:
            out[name]["story"] = round(max((np.intersect1d(sh, other, assume_unique=True).size
                                            / min(sh.size, other.size) for n2, other in pages_of
                                            if n2 != name and sh.size and other.size), default=0.0), 4)
    return out


def other_text(a: str, b: str, extractor: str = "trafilatura") -> float:
    """Exact shingle containment of the smaller of pages ``a`` and ``b`` in the other, both read by
    ``extractor`` (the same word 5-grams as the deduplicator's, every one kept)."""
    from dedup.deduplicator import DedupConfig

    config = DedupConfig(extractor=extractor, sketch=1 << 30)
    x, y = (calib_data.file_features(p, config).shingles for p in (a, b))
    if not x.size or not y.size:
        return 0.0
    return round(np.intersect1d(x, y).size / min(x.size, y.size), 4)


def _page(path: str | Path) -> str:
    """``cluster/file``: a page's name whatever folder the cached rows were made from (a worktree's
    ``../shared`` is another absolute path to the same pages)."""
    path = Path(path)
    return f"{path.parent.name}/{path.name}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--goldset", default=str(calibrate.DATA / "goldset-dev"))
    ap.add_argument("--negatives", default=str(calibrate.DATA / "negatives-dev"))
    ap.add_argument("--seed", type=int, default=7, help="arrival-order seed (default 7)")
    ap.add_argument("--train-seeds", default=",".join(map(str, calibrate.DEFAULT_TRAIN_SEEDS)),
                    help="arrival orders whose rows are pooled to fit each fold's model (default: as calibrate.py)")
    ap.add_argument("--low", type=float, default=0.15, help="exact containment below which no text is shared (0.15)")
    args = ap.parse_args(argv)
    gold_dir, neg_dir = Path(args.goldset), Path(args.negatives)
    gold = calib_data.rows("gold", [gold_dir], seed=args.seed)
    mixed = calib_data.rows("gold+neg", [gold_dir, neg_dir], seed=args.seed)
    train_seeds = calibrate.parse_seeds(args.train_seeds, args.seed)
    train, extra = calibrate.training_rows(gold_dir, neg_dir, mixed, train_seeds, seed=args.seed)
    negatives = {p.name for p in neg_dir.iterdir() if p.is_dir()}
    cv = calibrate.cross_validate(mixed, gold, extra, list(calibrate.DEFAULT_FEATURES), 1.0, negatives, negatives,
                                  train, calibrate.DEFAULT_MARGIN)
    by_path = {r["path"]: r for r in gold}
    missed = [(by_path[path], flag) for path, flag in cv["gold"]["missed"]]
    exact = exact_rows(gold_dir, args.seed)
    causes: dict[str, list[str]] = {}
    for r, flag in missed:
        e = exact[_page(r["path"])]
        name = f"{Path(r['path']).parent.name}/{Path(r['path']).stem}"
        if flag:
            cause, what = "related cluster", f"flagged against {r['best_cluster']}"
        elif e["exact"] < args.low:
            cause, what = "no shared text", f"exact {e['exact']}, story {e['story']}"
        elif not e["candidate"] and e["exact"] > float(r["scores"].get("containment") or 0.0) + 0.05:
            cause, what = "not a candidate", f"exact {e['exact']} of a {e['size']}-shingle page"
        else:
            other = other_text(r["path"], r["nearest_path"]) if r.get("nearest_path") else None
            cause, what = "decision", f"exact {e['exact']}, sketch {e['sketch']}, trafilatura's text {other}"
        causes.setdefault(cause, []).append(f"{name} ({what})")
    print(f"{len(missed)} held-out misses (seed {args.seed}, {cv['folds']} folds, fitted on the rows of seeds "
          f"{','.join(map(str, train_seeds))})")
    for cause, rows in sorted(causes.items(), key=lambda x: -len(x[1])):
        print(f"{cause}: {len(rows)}")
        for row in rows:
            print(f"  {row}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
