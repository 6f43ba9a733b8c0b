"""Target 3: this project against datasketch (MinHashLSH, num_perm 128, word 5-grams), the
same goldset-dev pages in the same order through both, in one run.

For every page (online metric order, ``--seed``), in one loop, alternating which goes first:

* **ours**: ``parse_page`` + ``Deduplicator.process`` on the embedded index (``local://`` in a
  temporary folder), the end-to-end verdict path of a crawl;
* **datasketch**: main text by ``trafilatura.extract(html bytes)`` (same options as ours),
  lowercased ``\\w+`` words, their 5-grams (a shorter text is one shingle), one
  ``MinHash(num_perm=128)`` (``update_batch``, permutations shared: datasketch's fast path),
  then for each threshold of the sweep its own ``MinHashLSH``: ``query`` (a page is flagged
  when it returns candidates; ``duplicate_of`` is the candidate of highest estimated Jaccard)
  and ``insert`` (every page with text is inserted; nothing is dropped).

Throughput is compared two ways, both measured here: datasketch **given its text extraction
for free** (only MinHash + LSH timed) and datasketch **paying its own extraction** (the
trafilatura call timed too).  Gold-Set F1 is the online metric of ``dedup.cli.evaluate`` for both.

Cited by: docs/performance.md ("Today's figures": make bench's target 3)."""
from __future__ import annotations

import re
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

import common

FIGURES = [
    ("t3.ours_ms", "ours: end-to-end verdict path", "ms/page"),
    ("t3.ds_free_ms", "datasketch, extraction free (MinHash + LSH)", "ms/page"),
    ("t3.ds_charged_ms", "datasketch + its trafilatura extraction", "ms/page"),
    ("t3.ratio_free", "our throughput / datasketch's (extraction free)", "x"),
    ("t3.ratio_charged", "our throughput / datasketch's (both extract)", "x"),
    ("t3.ours_f1", "ours: Gold-Set F1", "F1"),
    ("t3.ds_best_f1", "datasketch: best F1 over the threshold sweep", "F1"),
    ("t3.f1_margin", "our F1 - datasketch's best", "F1"),
    ("t3.ours_best_f1", "ours: best F1 over the same sweep of t2", "F1"),
]
_WORD = re.compile(r"\w+")


def shingles(text: str, n: int = 5) -> list[bytes]:
    words = _WORD.findall(text.lower())
    if not words:
        return []
    if len(words) < n:
        return [" ".join(words).encode("utf-8")]
    return [" ".join(words[i:i + n]).encode("utf-8") for i in range(len(words) - n + 1)]


def main(argv=None) -> int:
    p = common.parser(__doc__)
    common.goldset_arg(p)
    p.add_argument("--limit", type=int, default=None, help="pages (default: all; --quick: 40)")
    p.add_argument("--thresholds", default=None,
                   help="datasketch LSH thresholds (default 0.1,0.2,...,0.9; --quick 0.3,0.5)")
    args = p.parse_args(argv)
    res = common.Results("bench_datasketch.py", 3, "against datasketch MinHashLSH", args)
    missing = common.goldset_missing(args.goldset) or common.datasketch_missing()
    if missing:
        res.skip_all(FIGURES, missing)
        res.finish(args.json)
        return 0
    from datasketch import MinHash, MinHashLSH
    import trafilatura

    from dedup.deduplicator import Deduplicator, Verdict
    from dedup.cli.evaluate import Outcome, Report, metric, sweep
    from dedup.page import parse_page
    from index.local import LocalIndex

    thresholds = [float(t) for t in (args.thresholds or ("0.3,0.5" if args.quick else
                                                           ",".join(f"{t / 10:.1f}" for t in range(1, 10)))).split(",")]
    pages = common.goldset_pages(args.goldset, args.seed, args.limit or (40 if args.quick else None))
    n = len(pages)
    tmp = Path(tempfile.mkdtemp(prefix="bench-datasketch-"))
    index = LocalIndex(tmp / "index")
    dedup = Deduplicator(index)
    template = MinHash(num_perm=128, seed=1)
    lshs = {t: MinHashLSH(threshold=t, num_perm=128) for t in thresholds}
    sketches: dict[str, MinHash] = {}
    t_ours = np.zeros(n)
    t_extract = np.zeros(n)
    t_minhash = np.zeros(n)
    t_update_loop = np.zeros(n)
    t_lsh = {t: np.zeros(n) for t in thresholds}
    ours_out, ds_out = [], {t: [] for t in thresholds}
    seen, cluster_of = set(), {}
    pc = time.perf_counter
    # warm-up outside the timed loop: WordNet, punkt and trafilatura load on first use
    dedup.featurizer(parse_page(pages[0][2], "http://warm.invalid/"))
    try:
        for i, (cluster, url, html) in enumerate(pages):
            cluster_of[url] = cluster

            def ours():
                t0 = pc()
                verdict = dedup.process(parse_page(html, url))
                t_ours[i] = pc() - t0
                best = cluster_of.get(common.compared_url(verdict))
                ours_out.append(Outcome(cluster, url, url, verdict, cluster in seen, best))

            def theirs():
                t0 = pc()
                text = trafilatura.extract(html, include_comments=False, include_tables=True,
                                           deduplicate=False) or ""
                t1 = pc()
                sh = shingles(text)
                m = MinHash(num_perm=128, seed=1, permutations=template.permutations, scheme=template.scheme)
                if sh:
                    m.update_batch(sh)
                t2 = pc()
                t_extract[i], t_minhash[i] = t1 - t0, t2 - t1
                for t, lsh in lshs.items():
                    t3 = pc()
                    dup = None
                    if sh:
                        cands = lsh.query(m)
                        if cands:
                            dup = max(cands, key=lambda c: (m.jaccard(sketches[c]), c))
                        lsh.insert(url, m)
                    t_lsh[t][i] = pc() - t3
                    status = "near_duplicate" if dup else "unique"
                    v = Verdict(status, dup, "minhash_lsh" if dup else "no_candidate")
                    ds_out[t].append(Outcome(cluster, url, url, v, cluster in seen, cluster_of.get(dup or "")))
                sketches[url] = m
                # datasketch's documented per-value loop, for reference (not in the comparison)
                t4 = pc()
                m2 = MinHash(num_perm=128, seed=1, permutations=template.permutations, scheme=template.scheme)
                for s in sh:
                    m2.update(s)
                t_update_loop[i] = pc() - t4

            if i % 2:
                theirs()
                ours()
            else:
                ours()
                theirs()
            seen.add(cluster)
    finally:
        index.close()
        shutil.rmtree(tmp, ignore_errors=True)

    ours_m = metric(ours_out)
    rows, best_t, best_f1 = [], None, -1.0
    for t in thresholds:
        m = metric(ds_out[t])
        ms = (t_minhash.sum() + t_lsh[t].sum()) / n * 1e3
        rows.append([t, m["precision"], m["recall"], m["f1"], ms, ms + t_extract.sum() / n * 1e3])
        if m["f1"] > best_f1:
            best_t, best_f1 = t, m["f1"]
    ours_ms = t_ours.sum() / n * 1e3
    free_ms = (t_minhash.sum() + t_lsh[best_t].sum()) / n * 1e3
    charged_ms = free_ms + t_extract.sum() / n * 1e3
    res.table("datasketch MinHashLSH threshold sweep (same pages, same order)",
              ["threshold", "precision", "recall", "F1", "ms/page (extraction free)", "ms/page (with extraction)"],
              rows, note=f"{n} pages, seed {args.seed}")
    res.table("per-page cost, ms", ["ours end-to-end", "datasketch extraction (trafilatura)", "MinHash (update_batch)",
                                    f"LSH query+verify+insert (t={best_t})", "MinHash with per-value update() loop"],
              [[ours_ms, t_extract.mean() * 1e3, t_minhash.mean() * 1e3, t_lsh[best_t].mean() * 1e3,
                t_update_loop.mean() * 1e3]])
    res.figure("t3.ours_ms", "ours: end-to-end verdict path", ours_ms, "ms/page",
               note=f"{1e3 / ours_ms:.1f} pages/s; parse_page + Deduplicator.process on local://")
    res.figure("t3.ds_free_ms", "datasketch, extraction free (MinHash + LSH)", free_ms, "ms/page",
               note=f"at its best threshold {best_t}; {1e3 / free_ms:.0f} pages/s")
    res.figure("t3.ds_charged_ms", "datasketch + its trafilatura extraction", charged_ms, "ms/page",
               note=f"{1e3 / charged_ms:.1f} pages/s")
    res.figure("t3.ratio_free", "our throughput / datasketch's (extraction free)", free_ms / ours_ms, "x",
               goal=(">=", 3))
    res.figure("t3.ratio_charged", "our throughput / datasketch's (both extract)", charged_ms / ours_ms, "x",
               goal=(">=", 3))
    res.figure("t3.ours_f1", "ours: Gold-Set F1", ours_m["f1"], "F1",
               note=f"P {ours_m['precision']} R {ours_m['recall']}, {n} pages, seed {args.seed}")
    res.figure("t3.ds_best_f1", "datasketch: best F1 over the threshold sweep", best_f1, "F1",
               note=f"threshold {best_t}")
    res.figure("t3.f1_margin", "our F1 - datasketch's best", ours_m["f1"] - best_f1, "F1", goal=(">=", 0),
               note="ours at its defaults (t2 = 0.4) against datasketch at its best threshold")
    ours_sweep = sweep(Report(ours_out, 0.0, args.seed, dedup.config), thresholds)
    best_ours = max(ours_sweep, key=lambda row: row["f1"])
    res.figure("t3.ours_best_f1", "ours: best F1 over the same sweep of t2", best_ours["f1"], "F1",
               note=f"at t2 = {best_ours['t2']} (P {best_ours['precision']} R {best_ours['recall']}); one run, "
                    "dedup.cli.evaluate.sweep")
    res.table("ours: near-duplicate threshold t2 swept over the same run", ["t2", "precision", "recall", "F1"],
              [[row["t2"], row["precision"], row["recall"], row["f1"]] for row in ours_sweep])
    res.finish(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
