"""Target 1: per-page cost of the whole verdict path on goldset-dev, stage by stage, against
trafilatura extraction alone.

Pages arrive in the online metric's order (``dedup evaluate --seed``).  For every page, in the
same loop (the two alternate which goes first, so machine load hits both alike):

* **trafilatura alone**: ``trafilatura.extract(html bytes)`` with this project's options
  (its own decoding and parsing): what a crawler pays just to put main text in a search index;
* **the whole path**: ``parse_page`` (charset, lxml, the tagged fields, trafilatura on the
  parsed tree, punkt sentences) = *extraction*, then ``Deduplicator.process`` on the
  embedded index (``local://`` in a temporary folder; ``--index memory`` for ``MemoryIndex``),
  split by wrapping the featurizer and the index: *features* (normalised terms, TDW
  vector), *fingerprints* (exact keys, simhashes, shingle sketch, MRC signature),
  *candidate search* (exact-key lookups, simhash tables, nearest signatures),
  *verification* (fetching the candidates' records and scoring them: the rest of
  ``check``), *insert* (``index.add``).

Two passes: **cold** (a fresh normaliser: every new word costs a WordNet lookup, as at the
start of a crawl) and **warm** (a fresh index, the normaliser's word cache kept, as in a
long crawl).  Then a profiled warm pass (cProfile) says where the time goes, by package.

Cited by: docs/performance.md ("Today's figures": make bench's target 1)."""
from __future__ import annotations

import cProfile
import pstats
import shutil
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import common

FIGURES = [
    ("t1.trafilatura_ms", "trafilatura extraction alone", "ms/page"),
    ("t1.extraction_ms", "extraction (parse_page)", "ms/page"),
    ("t1.features_ms", "features (terms, TDW vector)", "ms/page"),
    ("t1.fingerprints_ms", "fingerprints (keys, simhashes, sketch, MRC)", "ms/page"),
    ("t1.search_ms", "candidate search", "ms/page"),
    ("t1.verification_ms", "verification", "ms/page"),
    ("t1.insert_ms", "insert", "ms/page"),
    ("t1.whole_ms", "whole per-page path (warm)", "ms/page"),
    ("t1.pages_per_s", "whole path throughput (warm)", "pages/s"),
    ("t1.ratio_warm", "whole path / trafilatura alone (warm)", "x"),
    ("t1.whole_cold_ms", "whole per-page path (cold word cache)", "ms/page"),
    ("t1.ratio_cold", "whole path / trafilatura alone (cold)", "x"),
    ("t1.f1", "Gold-Set F1 of this run", "F1"),
]
STAGES = ("extraction", "features", "fingerprints", "search", "verification", "insert")


class TimedFeaturizer:
    """The Deduplicator's featurizer, timing its two stages."""

    def __init__(self, featurizer, timer: common.Timer) -> None:
        self.inner, self.timer = featurizer, timer

    def __call__(self, page):
        pc = time.perf_counter
        t0 = pc()
        terms = self.inner.terms(page)
        t1 = pc()
        features = self.inner.fingerprint(page, terms)
        self.timer.add("features", t1 - t0)
        self.timer.add("fingerprints", pc() - t1)
        return features


class TimedIndex:
    """A DedupIndex proxy: time in lookups and searches is candidate search, in ``get``
    verification (fetching candidates), in ``add`` insert."""

    _STAGE = {"lookup": "search", "near_simhash": "search", "nearest": "search", "get": "fetch", "add": "insert"}

    def __init__(self, index, timer: common.Timer) -> None:
        self.inner, self.timer = index, timer

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        stage = self._STAGE.get(name)
        if stage is None:
            return attr

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return attr(*args, **kwargs)
            finally:
                self.timer.add(stage, time.perf_counter() - t0)
        return timed

    def __len__(self) -> int:
        return len(self.inner)


def open_index(kind: str, folder: Path):
    if kind == "memory":
        from dedup.store import MemoryIndex

        return MemoryIndex()
    from index.local import LocalIndex

    return LocalIndex(folder)


def run_pass(pages, featurizer, kind: str, folder: Path, *, trafilatura_too: bool = True,
             profile: cProfile.Profile | None = None) -> dict[str, Any]:
    """One online pass over ``pages``; per-stage seconds and the outcomes for the metric."""
    import trafilatura

    from dedup.deduplicator import Deduplicator
    from dedup.cli.evaluate import Outcome
    from dedup.page import parse_page

    shutil.rmtree(folder, ignore_errors=True)
    timer = common.Timer()
    index = open_index(kind, folder)
    dedup = Deduplicator(TimedIndex(index, timer), featurizer=TimedFeaturizer(featurizer, timer))
    outcomes, seen, url_cluster = [], set(), {}
    whole = []
    pc = time.perf_counter
    try:
        for n, (cluster, url, html) in enumerate(pages):
            def ours():
                t0 = pc()
                page = parse_page(html, url)
                t1 = pc()
                verdict = dedup.process(page)
                t2 = pc()
                timer.add("extraction", t1 - t0)
                timer.add("process", t2 - t1)
                whole.append(t2 - t0)
                return verdict

            def alone():
                t0 = pc()
                trafilatura.extract(html, include_comments=False, include_tables=True, deduplicate=False)
                timer.add("trafilatura", pc() - t0)

            if profile is not None:
                profile.enable()
            if trafilatura_too and n % 2:
                alone()
            verdict = ours()
            if trafilatura_too and not n % 2:
                alone()
            if profile is not None:
                profile.disable()
            url_cluster[url] = cluster
            best = url_cluster.get(common.compared_url(verdict))
            outcomes.append(Outcome(cluster, url, url, verdict, cluster in seen, best))
            seen.add(cluster)
    finally:
        index.close()
        shutil.rmtree(folder, ignore_errors=True)
    t = timer.total
    t["verification"] = t["process"] - t.get("features", 0) - t.get("fingerprints", 0) - t.get("search", 0) \
        - t.get("insert", 0)
    return {"timer": timer, "n": len(pages), "outcomes": outcomes, "whole": whole}


_AREAS = (("/trafilatura/", "trafilatura"), ("/justext/", "trafilatura"), ("/courlan/", "trafilatura"),
          ("/htmldate/", "trafilatura"), ("/lxml_html_clean/", "lxml"), ("/lxml/", "lxml"),
          ("/nltk/tokenize/", "nltk punkt (sentences)"), ("/nltk/corpus/", "nltk wordnet"),
          ("/nltk/stem/", "nltk porter stemmer"), ("/dedup/text.py", "dedup.text (tokenise, normalise)"),
          ("/dedup/page.py", "dedup.page (tagged fields)"), ("/dedup/encoding.py", "dedup.encoding"),
          ("/dedup/tdw.py", "dedup.tdw"), ("/dedup/features.py", "dedup.features"),
          ("/dedup/simhash.py", "dedup.simhash"), ("/dedup/mrc.py", "dedup.mrc"),
          ("/dedup/deduplicator.py", "dedup.deduplicator (verification)"), ("/dedup/reducer.py", "dedup.reducer"),
          ("/dedup/permtables.py", "dedup.permtables"), ("/dedup/", "dedup (other modules)"),
          ("/charset_normalizer/", "charset_normalizer"), ("/usearch/", "usearch"), ("/numpy/", "numpy"),
          ("/index/", "index (SQLite, usearch glue)"), ("/nltk/", "nltk (other)"), ("/benchmarks/", "benchmark harness"))


def _own_area(filename: str) -> str | None:
    f = filename.replace("\\", "/")
    for key, name in _AREAS:
        if key in f:
            return name
    return None


def _area(func: tuple, stats: dict, depth: int = 0) -> dict[str, float]:
    """Shares of ``func``'s own time by area: its own package, or, for builtins and the
    standard library (``dict.get``, lxml's C calls, ``copy``), its callers' packages."""
    filename, _, name = func
    own = _own_area(filename)
    if own is not None:
        return {own: 1.0}
    callers = stats[func][4] if func in stats else {}
    total = sum(v[2] for v in callers.values())
    if depth >= 3 or not callers or total <= 0:
        return {"python (builtins, standard library)": 1.0}
    out: dict[str, float] = defaultdict(float)
    for caller, v in callers.items():
        for a, share in _area(caller, stats, depth + 1).items():
            out[a] += share * v[2] / total
    return out


def profile_tables(prof: cProfile.Profile, n: int) -> tuple[list[list[Any]], list[list[Any]]]:
    stats = pstats.Stats(prof).stats
    by_area: dict[str, float] = defaultdict(float)
    funcs = []
    total = 0.0
    for func, (cc, nc, tt, ct, callers) in stats.items():
        for a, share in _area(func, stats).items():
            by_area[a] += tt * share
        total += tt
        filename, line, name = func
        short = filename.split("site-packages/")[-1].split("/main/")[-1]
        funcs.append((tt, f"{short}:{line}({name})" if filename != "~" else name, nc))
    areas = [[name, round(sec / n * 1e3, 2), round(100 * sec / total, 1)]
             for name, sec in sorted(by_area.items(), key=lambda kv: -kv[1]) if sec / total >= 0.001]
    top = [[name, calls, round(tt / n * 1e3, 3), round(100 * tt / total, 1)]
           for tt, name, calls in sorted(funcs, reverse=True)[:15]]
    return areas, top


def main(argv=None) -> int:
    p = common.parser(__doc__)
    common.goldset_arg(p)
    p.add_argument("--index", choices=("local", "memory"), default="local",
                   help="dedup index: local:// in a temporary folder (default, as a crawl) or in memory")
    p.add_argument("--limit", type=int, default=None, help="pages (default: all; --quick: 40)")
    p.add_argument("--no-profile", action="store_true", help="skip the profiled pass")
    args = p.parse_args(argv)
    res = common.Results("bench_pipeline.py", 1, "per-page cost on goldset-dev", args)
    missing = common.goldset_missing(args.goldset)
    if missing:
        res.skip_all(FIGURES, missing)
        res.finish(args.json)
        return 0
    from dedup.cli.evaluate import metric
    from dedup.features import Featurizer

    limit = args.limit or (40 if args.quick else None)
    pages = common.goldset_pages(args.goldset, args.seed, limit)
    n = len(pages)
    tmp = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    try:
        featurizer = Featurizer()  # cold: its normaliser has seen no word yet
        cold = run_pass(pages, featurizer, args.index, tmp / "cold")
        warm = run_pass(pages, featurizer, args.index, tmp / "warm")
        prof = None
        if not args.no_profile:
            prof = cProfile.Profile()
            run_pass(pages, featurizer, args.index, tmp / "profiled", trafilatura_too=False, profile=prof)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    tw, tc = warm["timer"], cold["timer"]
    traf = tw.ms_per("trafilatura", n)
    stage_ms = {s: tw.ms_per(s, n) for s in STAGES}
    whole = sum(stage_ms.values())
    whole_cold = sum(tc.ms_per(s, n) for s in STAGES)
    traf_cold = tc.ms_per("trafilatura", n)
    goal = ("<=", 1.25)
    res.figure("t1.trafilatura_ms", "trafilatura extraction alone", traf, "ms/page",
               note="trafilatura.extract(html bytes): its own decoding and parsing")
    notes = {"extraction": "decode + lxml + tagged fields + trafilatura(tree) + punkt sentences",
             "verification": "index.get of the candidates + scoring them",
             "search": "content/title key lookups + simhash tables + nearest MRC signatures"}
    for s in STAGES:
        name = dict((f[0], f[1]) for f in FIGURES)[f"t1.{s}_ms"]
        res.figure(f"t1.{s}_ms", name, stage_ms[s], "ms/page", note=notes.get(s, ""))
    res.figure("t1.whole_ms", "whole per-page path (warm)", whole, "ms/page", note=f"index {args.index}")
    res.figure("t1.pages_per_s", "whole path throughput (warm)", 1e3 / whole, "pages/s")
    res.figure("t1.ratio_warm", "whole path / trafilatura alone (warm)", whole / traf, "x", goal=goal)
    res.figure("t1.whole_cold_ms", "whole per-page path (cold word cache)", whole_cold, "ms/page",
               note=f"features {tc.ms_per('features', n):.2f} ms/page cold vs {stage_ms['features']:.2f} warm "
                    "(WordNet lookups of words not seen before)")
    res.figure("t1.ratio_cold", "whole path / trafilatura alone (cold)", whole_cold / traf_cold, "x", goal=goal)
    m = metric(warm["outcomes"])
    res.figure("t1.f1", "Gold-Set F1 of this run", m["f1"], "F1",
               note=f"P {m['precision']} R {m['recall']}, {n} pages, seed {args.seed}, index {args.index}")
    rows = []
    for label, t, tr in (("cold", tc, traf_cold), ("warm", tw, traf)):
        stages = [t.ms_per(s, n) for s in STAGES]
        rows.append([label, tr, *stages, sum(stages), sum(stages) / tr])
    res.table("ms per page by stage", ["pass", "trafilatura alone", *STAGES, "whole", "ratio"], rows,
              note=f"{n} pages, index {args.index}")
    ws = sorted(warm["whole"])
    res.table("whole path per page, warm (ms)", ["p50", "p90", "p99", "max"],
              [[common.pct(ws, 50) * 1e3, common.pct(ws, 90) * 1e3, common.pct(ws, 99) * 1e3, ws[-1] * 1e3]])
    if prof is not None:
        areas, top = profile_tables(prof, n)
        res.table("where the time goes (cProfile of a warm pass, whole path; tottime)",
                  ["area", "ms/page (profiled)", "% of total"], areas,
                  note="profiling inflates Python-heavy code; the stage timings above are unprofiled")
        res.table("top functions by own time (profiled warm pass)",
                  ["function", "calls", "ms/page", "%"], top)
    res.finish(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
