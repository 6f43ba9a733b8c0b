"""Issue 14 item 5: the whole path HTML -> verdict, side by side with two datasketch pipelines, on the
same goldset-dev pages in the same order, in one run.

* **ours**: ``parse_page`` with the default extractor, ``native`` (charset, one pass of the C scanner
  ``dedup._scan`` for the tagged fields, the teasers and the main-content lines; lxml's parse only when
  trafilatura runs) + ``Deduplicator.process`` on the embedded index (``local://`` in a temporary folder),
  as a crawl;
* **ours (resiliparse)**: the same with ``extractor="resiliparse"`` (the scanner's fields, resiliparse's
  main text: a second parse of each page, by lexbor), into its own index;
* **resiliparse + datasketch**: resiliparse's own charset detection and decoding, its main-content
  extraction (``extract_plain_text(main_content=True)``), lowercased ``\\w+`` word 5-grams, one
  ``MinHash(num_perm=128)`` (``update_batch``, shared permutations), a ``MinHashLSH(threshold=0.3)``
  ``query`` (flagged when it returns a candidate; ``duplicate_of`` the one of highest estimated
  Jaccard) then ``insert``;
* **trafilatura + datasketch**: ``trafilatura.extract(html bytes)`` (this project's options), the
  same MinHash and LSH.

Every page goes through the four in one loop, the order rotating page by page, so machine load hits
all alike. Each pipeline's cost is its CPU time (``time.process_time``) on these 2 shared cores, where
wall time mostly measures the other tenants; both are reported. F1 is the online metric of
``dedup.cli.evaluate``. The goal: ours >= 1.0x the pages per second of resiliparse + datasketch, at higher F1.

Cited by: docs/performance.md ("Today's figures", "One page from HTML to verdict"),
README.md."""
from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import common
from bench_datasketch import shingles  # the same word 5-grams as target 3's datasketch run

FIGURES = [
    ("t14.ours_pps", "ours: HTML -> verdict", "pages/s"),
    ("t14.rp_ds_pps", "resiliparse + datasketch MinHashLSH(0.3)", "pages/s"),
    ("t14.tf_ds_pps", "trafilatura + datasketch MinHashLSH(0.3)", "pages/s"),
    ("t14.ratio", "our pages/s / resiliparse + datasketch's", "x"),
    ("t14.ratio_trafilatura", "our pages/s / trafilatura + datasketch's", "x"),
    ("t14.ours_f1", "ours: Gold-Set F1", "F1"),
    ("t14.rp_ds_f1", "resiliparse + datasketch: Gold-Set F1", "F1"),
    ("t14.tf_ds_f1", "trafilatura + datasketch: Gold-Set F1", "F1"),
    ("t14.f1_margin", "our F1 - resiliparse + datasketch's", "F1"),
    ("t14.resiliparse_pps", "ours (resiliparse extractor): HTML -> verdict", "pages/s"),
    ("t14.resiliparse_ratio", "our pages/s with the resiliparse extractor / resiliparse + datasketch's", "x"),
    ("t14.resiliparse_f1", "ours (resiliparse extractor): Gold-Set F1", "F1"),
]
THRESHOLD = 0.3


class MinHashPipeline:
    """Main text by ``extract`` (HTML bytes -> str), then datasketch MinHash(128) + MinHashLSH(0.3)."""

    def __init__(self, extract) -> None:
        from datasketch import MinHash, MinHashLSH

        self.extract = extract
        self.template = MinHash(num_perm=128, seed=1)
        self.lsh = MinHashLSH(threshold=THRESHOLD, num_perm=128)
        self.sketches = {}

    def __call__(self, html: bytes, url: str) -> str | None:
        from datasketch import MinHash

        sh = shingles(self.extract(html))
        if not sh:
            return None
        m = MinHash(num_perm=128, seed=1, permutations=self.template.permutations, scheme=self.template.scheme)
        m.update_batch(sh)
        dup = None
        cands = self.lsh.query(m)
        if cands:
            dup = max(cands, key=lambda c: (m.jaccard(self.sketches[c]), c))
        self.lsh.insert(url, m)
        self.sketches[url] = m
        return dup


def resiliparse_text(html: bytes) -> str:
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.encoding import bytes_to_str, detect_encoding

    return extract_plain_text(bytes_to_str(html, detect_encoding(html)), main_content=True)


def trafilatura_text(html: bytes) -> str:
    import trafilatura

    return trafilatura.extract(html, include_comments=False, include_tables=True, deduplicate=False) or ""


def warm_justext() -> None:
    """Load the stop lists trafilatura's justext rescue reads on its first use (all languages)."""
    from trafilatura import external

    if not external.JT_STOPLIST:
        external.jt_stoplist_init()


def main(argv=None) -> int:
    p = common.parser(__doc__)
    common.goldset_arg(p)
    p.add_argument("--limit", type=int, default=None, help="pages (default: all; --quick: 40)")
    args = p.parse_args(argv)
    res = common.Results("bench_throughput.py", 14, "HTML -> verdict against resiliparse/trafilatura + datasketch",
                         args)
    missing = common.goldset_missing(args.goldset) or common.datasketch_missing()
    if missing:
        res.skip_all(FIGURES, missing)
        res.finish(args.json)
        return 0
    from dedup.deduplicator import Deduplicator, Verdict
    from dedup.cli.evaluate import Outcome, metric
    from dedup.page import parse_page
    from index.local import LocalIndex

    pages = common.goldset_pages(args.goldset, args.seed, args.limit or (40 if args.quick else None))
    n = len(pages)
    tmp = Path(tempfile.mkdtemp(prefix="bench-throughput-"))
    index = LocalIndex(tmp / "index")
    dedup = Deduplicator(index)
    other_index = LocalIndex(tmp / "resiliparse")
    other = Deduplicator(other_index)
    names = ("ours", "resiliparse + datasketch", "trafilatura + datasketch", "ours (resiliparse)")
    peers = {names[1]: MinHashPipeline(resiliparse_text), names[2]: MinHashPipeline(trafilatura_text)}
    cpu = dict.fromkeys(names, 0.0)
    wall = dict.fromkeys(names, 0.0)
    outcomes = {name: [] for name in names}
    cluster_of: dict[str, str] = {}
    seen: set[str] = set()
    # warm-up outside the timed loop: WordNet, punkt, trafilatura and resiliparse load on first use,
    # and so do the stop lists of every language that trafilatura's justext rescue reads (~0.4 s, paid
    # inside the loop by whichever pipeline first meets a page that needs the rescue: ours or
    # trafilatura + datasketch)
    dedup.featurizer(parse_page(pages[0][2], "http://warm.invalid/"))
    other.featurizer(parse_page(pages[0][2], "http://warm.invalid/", extractor="resiliparse"))
    resiliparse_text(pages[0][2])
    trafilatura_text(pages[0][2])
    warm_justext()
    try:
        for i, (cluster, url, html) in enumerate(pages):
            cluster_of[url] = cluster
            had = cluster in seen
            for k in range(len(names)):
                name = names[(i + k) % len(names)]
                c0, w0 = time.process_time(), time.perf_counter()
                if name == "ours":
                    verdict = dedup.process(parse_page(html, url))
                elif name == "ours (resiliparse)":
                    verdict = other.process(parse_page(html, url, extractor="resiliparse"))
                else:
                    dup = peers[name](html, url)
                c1, w1 = time.process_time(), time.perf_counter()
                cpu[name] += c1 - c0
                wall[name] += w1 - w0
                if name in peers:
                    verdict = Verdict("near_duplicate" if dup else "unique", dup, "minhash_lsh" if dup else "none")
                best = cluster_of.get(common.compared_url(verdict))
                outcomes[name].append(Outcome(cluster, url, url, verdict, had, best))
            seen.add(cluster)
    finally:
        index.close()
        other_index.close()
        shutil.rmtree(tmp, ignore_errors=True)

    m = {name: metric(outcomes[name]) for name in names}
    pps = {name: n / cpu[name] for name in names}
    rows = [[name, round(pps[name], 1), round(cpu[name] / n * 1e3, 3), round(n / wall[name], 1),
             m[name]["precision"], m[name]["recall"], m[name]["f1"]] for name in names]
    res.table(f"HTML -> verdict on {Path(args.goldset).name}, same pages, same order",
              ["pipeline", "pages/s (CPU)", "ms/page (CPU)", "pages/s (wall)", "precision", "recall", "F1"], rows,
              note=f"{n} pages, seed {args.seed}; LSH threshold {THRESHOLD}, num_perm 128")
    ours, rp, tf, alt = names
    note = "CPU time (process_time); wall-clock pages/s in the table"
    res.figure("t14.ours_pps", "ours: HTML -> verdict", pps[ours], "pages/s", note=note, digits=1)
    res.figure("t14.rp_ds_pps", "resiliparse + datasketch MinHashLSH(0.3)", pps[rp], "pages/s", note=note, digits=1)
    res.figure("t14.tf_ds_pps", "trafilatura + datasketch MinHashLSH(0.3)", pps[tf], "pages/s", note=note, digits=1)
    res.figure("t14.ratio", "our pages/s / resiliparse + datasketch's", pps[ours] / pps[rp], "x", goal=(">=", 1.0),
               note=f"wall clock: {wall[rp] / wall[ours]:.3f}x")
    res.figure("t14.ratio_trafilatura", "our pages/s / trafilatura + datasketch's", pps[ours] / pps[tf], "x",
               note=f"wall clock: {wall[tf] / wall[ours]:.3f}x")
    for fid, name in (("t14.ours_f1", ours), ("t14.rp_ds_f1", rp), ("t14.tf_ds_f1", tf)):
        res.figure(fid, f"{name}: Gold-Set F1" if name != ours else "ours: Gold-Set F1", m[name]["f1"], "F1",
                   note=f"P {m[name]['precision']} R {m[name]['recall']}, {n} pages, seed {args.seed}", digits=4)
    res.figure("t14.f1_margin", "our F1 - resiliparse + datasketch's", m[ours]["f1"] - m[rp]["f1"], "F1",
               goal=(">", 0), digits=4)
    res.figure("t14.resiliparse_pps", "ours (resiliparse extractor): HTML -> verdict", pps[alt], "pages/s",
               note=note, digits=1)
    res.figure("t14.resiliparse_ratio", "our pages/s with the resiliparse extractor / resiliparse + datasketch's",
               pps[alt] / pps[rp], "x", note=f"wall clock: {wall[rp] / wall[alt]:.3f}x")
    res.figure("t14.resiliparse_f1", "ours (resiliparse extractor): Gold-Set F1", m[alt]["f1"], "F1",
               note=f"P {m[alt]['precision']} R {m[alt]['recall']}, {n} pages, seed {args.seed}", digits=4)
    res.finish(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
