"""A what-if: containment candidates from an inverted index on each kept record's smallest sketch keys.

    python benchmarks/containment_candidates.py                # part 1 (seeds 7,1,2), CV, SQLite bytes
    python benchmarks/containment_candidates.py --seeds 7 --cv ""    # part 1 at seed 7 alone, no what-if CV
    python benchmarks/containment_candidates.py --sqlite-only  # the storage cost alone (no data needed)

Candidate generation (simhash tables, nearest MRC signatures, title keys) misses a short page contained in
a longer one (benchmarks/misses.py, "not a candidate"). The extra source measured here: every kept record
posts its ``m`` smallest sketch keys (``Record.shingles[:m]``, 24-bit keys, m in :data:`MS`) in a key ->
record inverted index; a page queries it with the keys of all its shingles (the whole set, made by a
second, unsketched featurizer as misses.py does: ``Features`` keeps a bottom-256 sketch only), and the
records sharing >= ``s`` keys (s in 1, 2), at most ``--cap`` of them (most shared keys first) are added
to the candidates. Nothing in dedup/ changes: the script wraps ``Deduplicator._candidates`` in the
replay. Kept pages are the same whatever the candidates (only exact duplicates, found before any
candidate, are dropped), so one replay per stream gives the verdict of every variant.

Streams as calibrate.py's, each in a seed's arrival order (``--seeds``, default 7,1,2): goldset-dev
alone, goldset-dev + negatives-dev, same-site seed 1 and seed 2 (calib_data.same_site). Printed:

1. per variant: the held-out misses of the "not a candidate" kind (misses.py's rule, on this replay's
   rows) whose best earlier page of their cluster (exact containment) becomes a candidate (with the full
   query; ``sk``: with the page's 256-hash sketch as query); the extra candidates a page gets on average
   (not already candidates); the new cross-cluster candidate pairs with sketch containment >= 0.3 on the
   negatives (every pair touching a negatives-dev page; every pair of the same-site seed-1 stream);
2. the leave-cluster-out CV of calibrate.py (``cross_validate`` with the default features, fitted on the
   rows of seeds 7,1,2 pooled + same-site seed 2) on each variant's rows: held-out correct pages,
   negatives-dev flagged when held out, same-site seed-1 pages flagged by the model fitted on all;
3. the SQLite bytes per record of a ``(key, record id)`` table with an index on key, for m keys, on a
   real file of 10,000 synthetic records (and the WITHOUT ROWID form).

Rows are cached under ``$DEDUP_CALIB_CACHE/contcand`` (keyed like calib_data's). Skips (exit 0, a message)
when ../shared/data is absent.
"""
from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import os
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calib_data  # noqa: E402
import calibrate  # noqa: E402

MS = (8, 16, 32, 128)
SHARES = (1, 2)
LOW = 0.15  # misses.py: exact containment below which no text is shared
RISK = 0.3  # containment of a new cross-cluster pair counted as a false-positive risk


def variants() -> list[str]:
    return [f"m{m}s{s}" for m in MS for s in SHARES]


def _parse(name: str) -> tuple[int, int]:
    m, s = name[1:].split("s")
    return int(m), int(s)


def replay(folder: Path, seed: int, cap: int, negative: set[str] | None) -> dict:
    """One stream in ``seed``'s order: rows (calib_data's form) of the baseline and of every variant, and
    per page the candidate figures. ``negative``: clusters whose cross-cluster pairs count (None: all)."""
    from dedup.deduplicator import containment_many
    from dedup.page import limit_text, parse_page
    from dedup.query import Query
    from dedup.record import shingle_keys

    pages, order, dedup, unsketched = calib_data.replayer(folder, seed)
    config, featurizer = dedup.config, dedup.featurizer
    base_call = dedup._candidates
    state: dict = {"extra": set(), "base": None}

    def candidates(q, extra):
        ids = base_call(q, extra)
        state["base"] = set(ids)
        return sorted(state["base"] | state["extra"])

    dedup._candidates = candidates  # type: ignore[method-assign]
    postings: dict[int, list[tuple[int, int]]] = {}  # key -> [(record id, rank of the key in its sketch)]
    kept: dict[int, tuple[np.ndarray, str]] = {}  # record id -> (full shingle hashes, cluster)
    url_cluster: dict[str, str] = {}
    seen: set[str] = set()
    rows: dict[str, list] = {name: [] for name in ["base", *variants()]}
    info = []
    for i in order:
        cluster, path = pages[i]
        url = f"http://eval.invalid/p{i}"
        url_cluster[url] = cluster
        page = parse_page(path.read_bytes(), url, extractor=config.extractor)
        limit_text(page, config.max_text_chars)
        f = featurizer(page)
        full = unsketched(page)
        q = Query.of_page(page, f)
        hits = {}
        for qname, keys in (("full", shingle_keys(full.shingles)), ("sk", q.shingles)):
            count = {m: Counter() for m in MS}
            for key in keys.tolist():
                for rid, rank in postings.get(key, ()):
                    for m in MS:
                        if rank < m:
                            count[m][rid] += 1
            hits[qname] = count
        found = {}
        for name in variants():
            m, s = _parse(name)
            found[name] = {qn: [rid for rid, c in sorted(hits[qn][m].items(), key=lambda x: (-x[1], x[0]))
                                if c >= s][:cap] for qn in hits}
        # the variants' verdicts (the index is not changed by check), then the baseline's (which keeps the page)
        verdicts = {}
        for name in variants():
            state["extra"] = set(found[name]["full"])
            verdicts[name] = dedup.check(page, f)
            verdicts[name].extraction = page.extraction
        state["extra"] = set()
        state["base"] = None
        verdicts["base"] = dedup.process(page, features=f)
        base = state["base"] or set()
        for name, v in verdicts.items():
            rows[name].append({"cluster": cluster, "path": str(path), "had_earlier": cluster in seen,
                               "status": v.status, "rule": v.rule,
                               "best_cluster": url_cluster.get(v.duplicate_of or v.scores.get("candidate", "")),
                               "extraction": v.extraction,
                               "scores": {k: val for k, val in v.scores.items() if k != "candidate"}})
        # the best earlier kept page of the cluster by exact containment (misses.py)
        best, best_id = 0.0, None
        for rid, (sh, c) in kept.items():
            if c == cluster and sh.size and full.shingles.size:
                share = np.intersect1d(sh, full.shingles, assume_unique=True).size / min(sh.size, full.shingles.size)
                if share > best:
                    best, best_id = share, rid
        row = {"path": str(path), "cluster": cluster, "exact": round(best, 4), "base": len(base),
               "size": int(kept[best_id][0].size) if best_id else 0,
               "right_base": best_id in base if best_id else None, "variants": {}}
        for name in variants():
            new = [rid for rid in found[name]["full"] if rid not in base]
            risky = 0
            if new and (negative is None or cluster in negative or any(kept[r][1] in negative for r in new)):
                recs = dedup.index.get(new)
                conts = containment_many(q.shingles, q.shingle_count, [r.shingles for r in recs],
                                         [r.shingle_count for r in recs], min_size=config.min_shingles)
                for rid, (cont, _) in zip(new, conts):
                    other = kept[rid][1]
                    if other != cluster and cont >= RISK and (negative is None or cluster in negative
                                                              or other in negative):
                        risky += 1
            row["variants"][name] = {"extra": len(new), "risky": risky,
                                     "right": best_id in found[name]["full"] if best_id else None,
                                     "right_sk": best_id in found[name]["sk"] if best_id else None}
        info.append(row)
        seen.add(cluster)
        if verdicts["base"].kept:
            rid = dedup.index._next - 1  # MemoryIndex numbers records in order
            rec = dedup.index._records[rid]
            kept[rid] = (full.shingles, cluster)
            for rank, key in enumerate(rec.shingles[:max(MS)].tolist()):
                postings.setdefault(key, []).append((rid, rank))
    return {"rows": rows, "pages": info}


def stream(name: str, folders: list[Path], seed: int, cap: int, negative: set[str] | None) -> dict:
    """:func:`replay`, cached (keyed by dedup/'s source, this script, the pages, seed and cap)."""
    script = hashlib.sha1(inspect.getsource(replay).encode()).hexdigest()[:8]  # the replay's code, not the report's
    key = f"{name}-s{seed}-cap{cap}-{calib_data.source_key()}-{script}-{calib_data._pages_key(folders)}"
    path = calib_data.CACHE / "contcand" / f"{key}.json"
    if path.exists():
        return json.loads(path.read_text())
    folder = folders[0] if len(folders) == 1 else calib_data.mixed_folder(name, folders)
    t0 = time.perf_counter()
    out = replay(folder, seed, cap, negative)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out))
    print(f"# {name} seed {seed}: {len(out['pages'])} pages in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return out


def not_a_candidate(cv: dict, gold: dict) -> list[dict]:
    """The held-out misses of misses.py's "not a candidate" kind, with their page figures."""
    by_path = {r["path"]: r for r in gold["rows"]["base"]}
    info = {p["path"]: p for p in gold["pages"]}
    out = []
    for path, flagged in cv["gold"]["missed"]:
        r, e = by_path[path], info[path]
        if flagged or e["exact"] < LOW or e["right_base"] is None:
            continue
        if not e["right_base"] and e["exact"] > float(r["scores"].get("containment") or 0.0) + 0.05:
            out.append(e)
    return out


def sqlite_bytes(m: int, records: int = 10_000, without_rowid: bool = False) -> tuple[float, float]:
    """Bytes per record of a (key, record id) table with an index on key (or one WITHOUT ROWID table of
    primary key (key, record)) holding ``m`` random 24-bit keys per record, on a real SQLite file (page size
    4096, WAL and synchronous=NORMAL as LocalIndex, one transaction per record as its ``add``), less the
    empty file's size: ``(as written, after VACUUM)``."""
    rng = np.random.default_rng(m)
    with tempfile.TemporaryDirectory() as tmp:
        sizes = []
        for n in (0, records):
            path = Path(tmp) / f"k{n}.sqlite"
            db = sqlite3.connect(path, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            if without_rowid:
                db.execute("CREATE TABLE sketch_keys (key INTEGER NOT NULL, record INTEGER NOT NULL, "
                           "PRIMARY KEY (key, record)) WITHOUT ROWID")
            else:
                db.execute("CREATE TABLE sketch_keys (key INTEGER NOT NULL, record INTEGER NOT NULL)")
                db.execute("CREATE INDEX sketch_keys_key ON sketch_keys(key)")
            for rid in range(1, n + 1):
                keys = np.unique(rng.integers(0, 1 << 24, size=m))
                db.execute("BEGIN")
                db.executemany("INSERT OR IGNORE INTO sketch_keys VALUES (?, ?)", [(int(k), rid) for k in keys])
                db.execute("COMMIT")
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            written = path.stat().st_size
            db.execute("VACUUM")
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            db.close()
            sizes.append((written, path.stat().st_size))
    return ((sizes[1][0] - sizes[0][0]) / records, (sizes[1][1] - sizes[0][1]) / records)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--goldset", default=str(calibrate.DATA / "goldset-dev"))
    ap.add_argument("--negatives", default=str(calibrate.DATA / "negatives-dev"))
    ap.add_argument("--seeds", default="7,1,2", help="arrival orders evaluated (default 7,1,2)")
    ap.add_argument("--cap", type=int, default=10, help="containment candidates kept, most shared keys first (10)")
    ap.add_argument("--cv", default=",".join(variants()),
                    help="variants whose rows are cross-validated (part 2; default all; '' none)")
    ap.add_argument("--sqlite-only", action="store_true", help="only the SQLite bytes per record (part 3)")
    ap.add_argument("--records", type=int, default=10_000, help="synthetic records of the SQLite file (10000)")
    ap.add_argument("--json", help="also write the figures to this JSON file")
    args = ap.parse_args(argv)
    result: dict = {}
    if not args.sqlite_only:
        gold_dir, neg_dir = Path(args.goldset), Path(args.negatives)
        if not gold_dir.is_dir() or not neg_dir.is_dir():
            print(f"containment_candidates: {gold_dir} not found (goldset-dev is never copied into the repo): "
                  "skipped", file=sys.stderr)
            return 0
        result = what_if(gold_dir, neg_dir, [int(s) for s in args.seeds.split(",")], args.cap,
                         [v for v in args.cv.split(",") if v.strip()])
    print(f"\nSQLite, {args.records} synthetic records: bytes per record as written / after VACUUM")
    print(f"  {'m':>5}  {'table + index on key':>22}  {'WITHOUT ROWID (key, record)':>28}")
    result["sqlite"] = {}
    for m in MS:
        a, b = sqlite_bytes(m, args.records), sqlite_bytes(m, args.records, without_rowid=True)
        result["sqlite"][m] = {"table_index": [round(x, 1) for x in a], "without_rowid": [round(x, 1) for x in b]}
        print(f"  {m:>5}  {a[0]:>10.1f} / {a[1]:>9.1f}  {b[0]:>13.1f} / {b[1]:>12.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


def what_if(gold_dir: Path, neg_dir: Path, seeds: list[int], cap: int, cv_on: list[str]) -> dict:
    negatives = {p.name for p in neg_dir.iterdir() if p.is_dir()}
    train_seeds = list(calibrate.DEFAULT_TRAIN_SEEDS)
    streams: dict = {}
    for s in sorted(set(seeds) | set(train_seeds), key=lambda s: (s not in seeds, s)):
        streams[("gold", s)] = stream("gold", [gold_dir], s, cap, negatives)
        streams[("mixed", s)] = stream("gold+neg", [gold_dir, neg_dir], s, cap, negatives)
        streams[("site1", s)] = stream("site1", [calib_data.same_site(1)], s, cap, None)
        streams[("site2", s)] = stream("site2", [calib_data.same_site(2)], s, cap, None)
    names = list(calibrate.DEFAULT_FEATURES)
    out: dict = {"cap": cap, "seeds": {}}
    for s in seeds:
        gold, mixed, site1 = streams[("gold", s)], streams[("mixed", s)], streams[("site1", s)]
        cvs = {}
        for name in ["base", *cv_on]:  # the baseline's CV gives the misses (misses.py's, fitted on seeds 7,1,2)
            train = [r for t in train_seeds for r in streams[("mixed", t)]["rows"][name]]
            extra = [r for t in train_seeds for r in streams[("site2", t)]["rows"][name]]
            cv = calibrate.cross_validate(mixed["rows"][name], gold["rows"][name], extra, names, 1.0, negatives,
                                          negatives, train)
            final = calibrate.choose(train, extra, names, 1.0, negatives)
            site_fp = calibrate.fp(site1["rows"][name], lambda sc, d=final: d.probability(sc) >= d.threshold)
            cvs[name] = {"correct": cv["gold"]["correct"], "relevant": cv["gold"]["relevant"],
                         "flagged": cv["gold"]["flagged"], "negatives_flagged": cv["mixed"]["negatives_flagged"],
                         "site1_flagged": site_fp[0],
                         "missed": {f"{Path(p).parent.name}/{Path(p).stem}" for p, _ in cv["gold"]["missed"]},
                         "cv": cv}
        misses = not_a_candidate(cvs["base"]["cv"], gold)
        print(f"\nseed {s}: {len(misses)} held-out misses 'not a candidate' (baseline: {cvs['base']['correct']} "
              f"correct of {cvs['base']['relevant']}; candidates a page: gold {_mean(gold, 'base'):.1f})")
        for e in misses:
            print(f"  {Path(e['path']).parent.name}/{Path(e['path']).stem}: exact {e['exact']} of a "
                  f"{e['size']}-shingle page")
        print(f"  {'variant':<8} {'found':>5} {'sk':>3} {'extra/page gold':>15} {'mixed':>6} {'site1':>6} "
              f"{'risky neg-dev':>13} {'risky site1':>11}" + ("  CV correct  neg-dev  site1 fp" if cv_on else ""))
        figures = {"misses": [f"{Path(e['path']).parent.name}/{Path(e['path']).stem}" for e in misses], "variants": {}}
        for name in variants():
            found = sum(bool(e["variants"][name]["right"]) for e in misses)
            found_sk = sum(bool(e["variants"][name]["right_sk"]) for e in misses)
            ex = {k: _mean(streams[(k, s)], name) for k in ("gold", "mixed", "site1")}
            risky = {k: sum(p["variants"][name]["risky"] for p in streams[(k, s)]["pages"]) for k in ("mixed", "site1")}
            fig = {"found": found, "found_sketch_query": found_sk, "extra_per_page": {k: round(v, 2) for k, v in ex.items()},
                   "risky_pairs": risky}
            line = (f"  {name:<8} {found:>3}/{len(misses)} {found_sk:>3} {ex['gold']:>15.2f} {ex['mixed']:>6.2f} "
                    f"{ex['site1']:>6.2f} {risky['mixed']:>13} {risky['site1']:>11}")
            if name in cvs:
                c = cvs[name]
                fixed = [m for m in figures["misses"] if m not in c["missed"]]
                fig.update(correct=c["correct"], negatives_flagged=c["negatives_flagged"],
                           site1_flagged=c["site1_flagged"], misses_fixed=fixed)
                line += (f"  {c['correct']:>4} ({c['correct'] - cvs['base']['correct']:+d})  {c['negatives_flagged']:>7}"
                         f"  {c['site1_flagged']:>8}  fixed: {', '.join(fixed) or '-'}")
            figures["variants"][name] = fig
            print(line)
        b = cvs["base"]
        figures["base"] = {"correct": b["correct"], "negatives_flagged": b["negatives_flagged"],
                           "site1_flagged": b["site1_flagged"]}
        if cv_on:
            print(f"  {'base':<8} {'':>5} {'':>3} {'0':>15} {'0':>6} {'0':>6} {'':>13} {'':>11}  {b['correct']:>4}"
                  f"       {b['negatives_flagged']:>7}  {b['site1_flagged']:>8}")
        out["seeds"][s] = figures
    return out


def _mean(st: dict, name: str) -> float:
    pages = st["pages"]
    if name == "base":
        return sum(p["base"] for p in pages) / max(1, len(pages))
    return sum(p["variants"][name]["extra"] for p in pages) / max(1, len(pages))


if __name__ == "__main__":
    raise SystemExit(main())
