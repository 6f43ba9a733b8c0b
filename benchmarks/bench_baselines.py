"""The accuracy table of docs/accuracy.md: this project against datasketch and brute-force containment.

    python benchmarks/bench_baselines.py          # after benchmarks/calibrate.py (reads its cached rows)

The same pages in the same seeded online order through each method; for each: goldset-dev P/R/F1,
negatives-dev pages flagged (goldset-dev + negatives-dev in one stream), same-site negatives flagged
(``negsite.py`` seed 1, 600 pages).

* **brute-force containment**: trafilatura main text (as ``bench_datasketch.py``), lowercased
  ``\\w+`` words, the exact set of word 5-grams; each page against every earlier page, flagged when
  the largest containment (shared 5-grams over the smaller set) is >= t. No sketch, no candidates.
* **datasketch**: ``MinHashLSH(threshold=t, num_perm=128)`` over the same 5-grams (flagged when
  the LSH returns a candidate; the closest by estimated Jaccard is the match).
* **this project**: ``Deduplicator`` as a crawl runs it (the rows ``calibrate.py`` cached), with the
  old rule (containment >= t2 = 0.4) and with the calibrated decision (in sample, and the
  leave-cluster-out CV figures of ``calibrate.py --json``).

The baselines' thresholds are swept and each is shown at its best goldset-dev F1 (in sample, which
favours them: they are not cross-validated).

Cited by: docs/accuracy.md (the accuracy table), README.md."""
from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calib_data  # noqa: E402
import calibrate  # noqa: E402

_WORD = re.compile(r"\w+")
THRESHOLDS = [round(t / 10, 1) for t in range(1, 10)]


def grams(text: str, n: int = 5) -> frozenset[str]:
    words = _WORD.findall(text.lower())
    if len(words) < n:
        return frozenset([" ".join(words)]) if words else frozenset()
    return frozenset(" ".join(words[i:i + n]) for i in range(len(words) - n + 1))


def stream(folders: list[Path], seed: int) -> list[tuple[str, Path]]:
    """``(cluster, path)`` in ``dedup evaluate``'s order over the folders' clusters."""
    from dedup.cli.evaluate import load_clusters

    pages = sorted(p for folder in folders for p in load_clusters(folder))
    order = list(range(len(pages)))
    random.Random(seed).shuffle(order)
    return [pages[i] for i in order]


def texts(name: str, pages: list[tuple[str, Path]]) -> list[str]:
    """trafilatura main texts, cached beside calibrate's rows, keyed by the pages (their paths, sizes and
    times: a regenerated site is read again)."""
    h = hashlib.sha1()
    for _, p in pages:
        st = p.stat()
        h.update(f"{p.resolve()}\0{st.st_size}\0{int(st.st_mtime)}\n".encode())
    path = calib_data.CACHE / "texts" / f"{name}-{len(pages)}-{h.hexdigest()[:12]}.json"
    if path.exists():
        return json.loads(path.read_text())
    import trafilatura

    out = [trafilatura.extract(p.read_bytes(), include_comments=False, include_tables=True, deduplicate=False) or ""
           for _, p in pages]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out))
    return out


def brute_force(pages, sets) -> list[tuple[float, str | None]]:
    """For each page, (largest containment in an earlier page, that page's cluster)."""
    best = []
    for i, a in enumerate(sets):
        top, cluster = 0.0, None
        for j in range(i):
            b = sets[j]
            if not a or not b:
                continue
            c = len(a & b) / min(len(a), len(b))
            if c > top:
                top, cluster = c, pages[j][0]
        best.append((top, cluster))
    return best


def lsh(pages, sets, t: float) -> list[str | None]:
    from datasketch import MinHash, MinHashLSH

    template = MinHash(num_perm=128, seed=1)
    index = MinHashLSH(threshold=t, num_perm=128)
    sketches, out = {}, []
    for i, s in enumerate(sets):
        m = MinHash(num_perm=128, seed=1, permutations=template.permutations, scheme=template.scheme)
        if s:
            m.update_batch([g.encode("utf-8") for g in s])
        match = None
        if s:
            cands = index.query(m)
            if cands:
                match = max(cands, key=lambda k: (m.jaccard(sketches[k]), -k))
            index.insert(i, m)
        sketches[i] = m
        out.append(None if match is None else pages[match][0])
    return out


def score(pages, matches, negatives: set[str]) -> dict:
    seen, flagged, ok, rel, neg = set(), 0, 0, 0, 0
    for (cluster, _), match in zip(pages, matches):
        rel += cluster in seen and cluster not in negatives
        if match is not None:
            flagged += 1
            ok += match == cluster
            neg += cluster in negatives
        seen.add(cluster)
    p = ok / flagged if flagged else 1.0
    r = ok / rel if rel else 1.0
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0, "negatives_flagged": neg,
            "flagged": flagged}


def main(argv: list[str] | None = None) -> int:
    # No options (seed 7, calibrate.py's cached rows); the data folder is $DEDUP_DATA, as calibrate.py's
    argparse.ArgumentParser(description=__doc__.strip().splitlines()[0]).parse_args(argv)
    data = calibrate.DATA
    gold_dir, neg_dir = data / "goldset-dev", data / "negatives-dev"
    for folder in (gold_dir, neg_dir):
        if not folder.is_dir():
            print(f"bench_baselines: {folder} not found: the accuracy table needs goldset-dev and negatives-dev "
                  "(set DEDUP_DATA to the folder holding both; the pages are never copied into the repository)",
                  file=sys.stderr)
            return 2
    site = calib_data.same_site(1)
    seed = 7
    negatives = {p.name for p in neg_dir.iterdir() if p.is_dir()}
    site_clusters = {p.name for p in site.iterdir() if p.is_dir()}
    streams = {"gold": [gold_dir], "mixed": [gold_dir, neg_dir], "site": [site]}
    rows = {}
    t0 = time.perf_counter()
    for name, folders in streams.items():
        pages = stream(folders, seed)
        sets = [grams(t) for t in texts(name, pages)]
        bf = brute_force(pages, sets)
        neg = negatives if name == "mixed" else site_clusters if name == "site" else set()
        for t in THRESHOLDS:
            rows.setdefault(("brute-force containment", t), {})[name] = score(
                pages, [c if v >= t else None for v, c in bf], neg)
            rows.setdefault(("datasketch MinHashLSH", t), {})[name] = score(pages, lsh(pages, sets, t), neg)
    print(f"# baselines computed in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    cal = json.loads(subprocess.run([sys.executable, str(Path(__file__).parent / "calibrate.py"), "--json"],
                                    capture_output=True, text=True, check=True).stdout)
    print("| method | threshold | goldset-dev P | R | F1 | negatives-dev flagged (of 181) | same-site flagged (of 600) |")
    print("|---|---|---|---|---|---|---|")
    for method in ("brute-force containment", "datasketch MinHashLSH"):
        t, r = max(((t, rows[(m, t)]) for m, t in rows if m == method), key=lambda x: x[1]["gold"]["f1"])
        g = r["gold"]
        print(f"| {method} (best F1, in sample) | {t} | {g['precision']:.4f} | {g['recall']:.4f} | {g['f1']:.4f} | "
              f"{r['mixed']['negatives_flagged']} | {r['site']['negatives_flagged']} |")
        if method == "brute-force containment":
            r5 = rows[(method, 0.5)]
            g = r5["gold"]
            print(f"| {method} | 0.5 | {g['precision']:.4f} | {g['recall']:.4f} | {g['f1']:.4f} | "
                  f"{r5['mixed']['negatives_flagged']} | {r5['site']['negatives_flagged']} |")
    for label, key in (("this project, containment >= t2 (old rule, in sample)", "t2=0.4"),
                       ("this project, calibrated decision (in sample)", "calibrated")):
        x = cal[key]
        g = x["goldset_in_sample"]
        print(f"| {label} | {'0.4' if key == 't2=0.4' else 'p >= ' + str(cal['model']['threshold'])} | "
              f"{g['precision']:.4f} | {g['recall']:.4f} | {g['f1']:.4f} | {x['negatives_dev_flagged'][0]} | "
              f"{x['same_site_flagged'][0]} |")
    cv = cal["cv"]
    print(f"| this project, calibrated decision, **leave-cluster-out CV** ({cal['folds']} folds) | chosen per fold | "
          f"{cv['gold']['precision']:.4f} | {cv['gold']['recall']:.4f} | {cv['gold']['f1']:.4f} | "
          f"{cv['mixed']['negatives_flagged']} (held out) | {cal['calibrated']['same_site_flagged'][0]} |")
    print("\nthreshold sweeps (goldset-dev F1 / negatives-dev flagged / same-site flagged):")
    for method in ("brute-force containment", "datasketch MinHashLSH"):
        print(f"  {method}: " + "; ".join(
            f"{t} {rows[(method, t)]['gold']['f1']:.3f}/{rows[(method, t)]['mixed']['negatives_flagged']}/"
            f"{rows[(method, t)]['site']['negatives_flagged']}" for t in THRESHOLDS))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
