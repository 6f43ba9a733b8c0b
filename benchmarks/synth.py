"""Synthetic embedded indexes of any size, and the probe that measures one (targets 5 and 6).

    python benchmarks/synth.py build DIR N      # grow the local index in DIR to N records
    python benchmarks/synth.py probe DIR        # reopen it in this fresh process and measure

**Records** have the featurizer's shapes and sizes, measured on goldset-dev (mean 331 TDW
terms, 40 sentences, 335 distinct shingles, 150-d MRC signature), made compact as the
featurizer's are (``dedup.record.compact_arrays``: a ~1.0 KB data blob): sorted random hashes and positions,
random weights, and signatures drawn around 1,000 random
"topic" centres of one common profile, so that signatures of unrelated pages have cosines
around 0.95 as real MRC signatures do (docs/choices.md: median 0.94).  Record ``i`` is the same in
every build (seeded per batch), so an index can be grown in steps.

**Building** is bulk: each batch of :data:`BATCH` records is made (``compact_arrays``), encoded
(``encode_blob``) and turned into the row ``LocalIndex.add`` writes (the index's own ``_row``: the
same columns, key bytes and blob as the product's), then appended by one ``executemany`` of the
``INSERT`` that ``add`` runs, in one transaction a batch (without a commit and an HNSW insert a
row); then the index is opened once, which adds every missing signature to the vector index in
batches of 50,000 (``LocalIndex``'s own reconciliation: for ``i8`` vectors the centre is fixed from
the first 1,000 records, as ``add`` fixes it) and saves it: that is the *rebuild*.  The first
record goes through ``LocalIndex.add`` so the index's metadata is the real thing.  Each row posts its
containment keys (``containment.post`` of ``contained_keys``, as ``add`` does) in its batch's transaction;
a cache made before that has them posted by the next open (``LocalIndex`` refills the table).

**Probing** (in a fresh process, so RSS is this index's alone): RSS before and after
``LocalIndex(DIR)`` (the reopen) and what it is made of (permutation tables, usearch
vectors + graph, SQLite), then per-query costs (exact-key lookup, simhash tables, nearest
signatures, fetching 20 records), HNSW recall@20 against exact search, and, given pages, the
per-page cost of the whole verdict path against this index (the records it adds are
removed again at the end, so the index can be probed again).

Used by: bench_scaling.py, bench_parts.py, bench_memory.py; cited by docs/performance.md.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import xxhash

import common

BATCH = 10_000
DIM = 150
TOPICS = 1_000
RECALL_QUERIES = 100  # queries whose nearest() is checked against exact search


def _profile(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng([seed, 0xC0FFEE])
    base = rng.gamma(2.0, 1.0, DIM).astype(np.float32)
    topics = base * np.exp(0.25 * rng.standard_normal((TOPICS, DIM))).astype(np.float32)
    return base, topics


def batch_records(start: int, seed: int, ref_id: str) -> Iterator[Any]:
    """Records ``start`` .. ``start + BATCH - 1`` (``start`` a multiple of BATCH), compact as the
    featurizer's (``Features.to_record``)."""
    from dedup.record import Record, compact_arrays

    rng = np.random.default_rng([seed, start])
    _, topics = _profile(seed)
    n_terms = np.clip(rng.normal(331, 90, BATCH), 20, 700).astype(int)
    n_chunks = np.clip(rng.geometric(1 / 40, BATCH), 1, 300)
    n_shingle_total = np.clip(rng.normal(335, 150, BATCH), 5, 3000).astype(int)
    simhashes = rng.bit_generator.random_raw(BATCH).astype(np.uint64)
    topic = rng.integers(0, TOPICS, BATCH)
    sigs = topics[topic] * np.exp(0.15 * rng.standard_normal((BATCH, DIM))).astype(np.float32)
    sigs /= np.linalg.norm(sigs, axis=1, keepdims=True) * 2.5  # MRC cosines are in [0, 1]
    for j in range(BATCH):
        i = start + j
        nt, nc, tot = int(n_terms[j]), int(n_chunks[j]), int(n_shingle_total[j])
        ns = min(256, tot)
        terms = np.sort(rng.bit_generator.random_raw(nt).astype(np.uint64))
        shingles = np.sort(rng.bit_generator.random_raw(ns).astype(np.uint64))
        # TDW weights as the presets make them: multiples of 0.5, mostly small (body terms)
        weights = (np.floor(np.minimum(rng.pareto(1.5, nt), 300) * 2) / 2 + 1).astype(np.float32)
        positions = rng.integers(0, 256, ns, dtype=np.uint8)  # where each shingle first occurs (one byte a key)
        # keys of the featurizer's form and spread (xxh3-128 and -64 hex: an index's B-trees fill as a crawl's
        # do), a URL and a title of a crawl's length (79 and 57 characters)
        yield Record(url=f"https://www.site{i % 5000}.example/news/2026/11/{i}/a-synthetic-article-title.html",
                     content_hash=xxhash.xxh3_128_hexdigest(b"c%d" % i), title_key=xxhash.xxh3_64_hexdigest(b"t%d" % i),
                     simhash=int(simhashes[j]),
                     status="unique", duplicate_of=None, fetched_at=1.7e9 + i, ref_id=ref_id, sentences=nc,
                     title=f"Synthetic page {i}: a title of a news article's length",
                     **compact_arrays(shingles=shingles, shingle_count=tot, terms=terms, weights=weights,
                                      signature=sigs[j], positions=positions))


def _first_record(seed: int):
    """Record 0, for LocalIndex.add (so the index metadata is written by the index itself)."""
    return next(batch_records(0, seed, _ref_id()))


def _ref_id() -> str:
    from dedup.mrc import default_reference

    return default_reference().id


def synthetic_count(path: Path) -> int:
    marker = path / "synthetic.json"
    return json.loads(marker.read_text())["records"] if marker.exists() else 0


def relabel(path: Path, ref_id: str, log=print) -> bool:
    """Give a synthetic index the current reference text's id (its signatures are synthetic,
    made with no reference text, so only the label changes): the per-page probe checks real
    pages, whose signatures carry the current id, against it.  True when it changed anything."""
    import sqlite3

    db = sqlite3.connect(path / "dedup.sqlite")
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'ref_id'").fetchone()
        if row is None or row[0] == ref_id:
            return False
        log(f"  relabelling {path} from reference {row[0]} to {ref_id}")
        db.execute("PRAGMA journal_mode=WAL")
        top = db.execute("SELECT coalesce(max(id), 0) FROM records").fetchone()[0]
        for start in range(0, top + 1, 100_000):  # in steps, checkpointed: the WAL stays small
            with db:
                db.execute("UPDATE records SET ref_id = ? WHERE id > ? AND id <= ? AND ref_id IS NOT NULL",
                           (ref_id, start, start + 100_000))  # schema 4's rows hold none (meta's)
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        with db:
            db.execute("UPDATE meta SET value = ? WHERE key = 'ref_id'", (ref_id,))
        return True
    finally:
        db.close()


def build(path: str | Path, n: int, seed: int = 7, log=print, options: dict | None = None) -> dict[str, Any]:
    """Grow the synthetic local index at ``path`` to ``n`` records (a multiple of BATCH, or fewer
    than BATCH); returns the seconds spent inserting and rebuilding the vector index.
    ``options``: LocalIndex keyword arguments (a vector file made with others is rebuilt)."""
    from dedup.store import contained_keys
    from index.local import LocalIndex, containment, encode_blob

    options = options or {}
    path = Path(path)
    have = synthetic_count(path)
    if have > n:
        raise ValueError(f"{path} holds {have} synthetic records, more than {n}")
    out = {"records": n, "insert_s": 0.0, "rebuild_s": 0.0, "added": n - have}
    if have:
        relabel(path, _ref_id(), log)
        if not json.loads((path / "synthetic.json").read_text()).get("contained"):
            _refill_contained(path, log)  # a cache made before the rows posted their containment keys
    if have == n:  # opening once rebuilds the vector file if it was made with other options
        vec = path / "signatures.usearch"
        before = vec.stat().st_mtime_ns if vec.exists() else None
        t0 = time.perf_counter()
        LocalIndex(path, **options).close()
        if not vec.exists() or vec.stat().st_mtime_ns != before:
            out["rebuild_s"] = time.perf_counter() - t0
        return out
    ref = _ref_id()
    t0 = time.perf_counter()
    ix = LocalIndex(path, **options)
    try:
        if have == 0:
            ix.add(_first_record(seed))
            have = 1
        db = ix._db  # bulk rows through the index's own connection (see the module docstring)
        with ix._mutex:
            for start in range(have - have % BATCH, n, BATCH):
                records = [r for k, r in enumerate(batch_records(start, seed, ref)) if have <= start + k < n]
                with db:
                    db.executemany(ix._insert, [ix._row(r, encode_blob(r)) for r in records])  # add()'s rows
                    last = db.execute("SELECT max(id) FROM records").fetchone()[0]
                    for rid, r in zip(range(last - len(records) + 1, last + 1), records):
                        containment.post(db, rid, contained_keys(r))  # and its containment keys
                if (start // BATCH) % 10 == 9:
                    log(f"    {start + BATCH:,} records inserted ({time.perf_counter() - t0:.0f} s)")
    finally:
        ix.close()
    out["insert_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    LocalIndex(path, **options).close()  # adds the missing signatures to the vector index and saves it
    out["rebuild_s"] = time.perf_counter() - t0
    (path / "synthetic.json").write_text(json.dumps({"records": n, "seed": seed, "contained": True}))
    return out


def _refill_contained(path: Path, log=print) -> None:
    """Have the next open post every record's containment keys (``LocalIndex`` refills the table of a
    file whose ``meta`` does not say it holds them), and mark the cache as holding them."""
    import sqlite3

    from index.local import containment

    log(f"  {path}: its rows' containment keys posted on the next open")
    db = sqlite3.connect(path / "dedup.sqlite")
    with db:
        db.execute("DELETE FROM meta WHERE key = ?", (containment.META_KEY,))
    db.close()
    info = json.loads((path / "synthetic.json").read_text())
    (path / "synthetic.json").write_text(json.dumps({**info, "contained": True}))


def disk_bytes(path: Path) -> int:
    """The index's files: ``dedup.sqlite`` and the vector files (not the WAL, the lock, this module's marker)."""
    return sum(f.stat().st_size for f in path.iterdir() if f.is_file() and f.name.startswith(("dedup.sqlite", "signatures."))
               and not f.name.endswith(("-wal", "-shm")))


def memory_parts(ix) -> dict[str, int]:
    """Bytes held by the tables' arrays and the usearch index (vectors and graph)."""
    tables = 0
    for shard in ix.tables.split().values():
        tables += shard._fp[: shard._n].nbytes + shard._id[: shard._n].nbytes
        for run in (shard._main, shard._delta):
            tables += run._buf.nbytes + run.dir.nbytes
    vec = ix._vectors
    n = len(vec) if vec is not None else 0
    scalar = {"f16": 2, "f32": 4, "i8": 1, "f64": 8, "bf16": 2}.get(str(vec.dtype).split(".")[-1].lower(), 4) if n else 0
    usearch = int(vec.memory_usage) if n else 0
    vectors = n * vec.ndim * scalar if n else 0
    page = ix._db.execute("PRAGMA page_size").fetchone()[0]
    cache = ix._db.execute("PRAGMA cache_size").fetchone()[0]
    stats = getattr(ix, "_stats", None)  # centred vectors' per-record [m . y, |y|]
    return {"tables": tables, "usearch": usearch, "usearch_vectors": vectors, "usearch_graph": usearch - vectors,
            "vector_stats": int(stats.nbytes) if stats is not None else 0,
            "sqlite_cache_max": -cache * 1024 if cache < 0 else cache * page}


def probe(path: str | Path, pages: list[tuple[str, bytes]] | None = None, queries: int = 200,
          seed: int = 7, options: dict | None = None) -> dict[str, Any]:
    """Measure the index at ``path`` in this process (see the module docstring)."""
    import dedup.deduplicator  # noqa: F401 - everything imported before the baseline
    import usearch.index  # noqa: F401
    from index.local import LocalIndex

    path = Path(path)
    common.trim_heap()
    rss0 = common.rss()
    t0 = time.perf_counter()
    ix = LocalIndex(path, **(options or {}))
    reopen_s = time.perf_counter() - t0
    common.trim_heap()
    rss1 = common.rss()
    n = len(ix)
    out: dict[str, Any] = {"records": n, "reopen_s": reopen_s, "disk_bytes": disk_bytes(path),
                           "sqlite_bytes": (path / "dedup.sqlite").stat().st_size,
                           "blob_bytes": ix._db.execute("SELECT avg(length(data)) FROM records").fetchone()[0] or 0,
                           "rss_open": rss1["rss"] - rss0["rss"], "rss_open_anon": rss1["anon"] - rss0["anon"],
                           "rss_open_file": rss1["file"] - rss0["file"], "peak_rss": rss1["hwm"] - rss0["rss"],
                           "parts": memory_parts(ix)}
    try:
        rng = np.random.default_rng(seed)
        ids = rng.choice(np.arange(1, n + 1), size=min(queries, n), replace=False).tolist()
        recs = {r.id: r for r in ix.get(ids)}
        pc = time.perf_counter
        t = {k: [] for k in ("lookup", "near_simhash", "nearest", "get20", "nearest_exact")}
        recall_q, recall_got = [], []
        for j, rid in enumerate(ids):
            r = recs[rid]
            # a near-copy's signature: the stored one, slightly perturbed
            q = (r.signature * np.exp(0.05 * rng.standard_normal(r.signature.size))).astype(np.float32)
            a = pc()
            ix.lookup("content_hash", r.content_hash)
            b = pc()
            ix.near_simhash(r.simhash)
            c = pc()
            got = ix.nearest(q, r.ref_id, 20, 0.0)
            d = pc()
            ix.get([i for i, _ in got])
            e = pc()
            t["lookup"].append(b - a)
            t["near_simhash"].append(c - b)
            t["nearest"].append(d - c)
            t["get20"].append(e - d)
            if j < RECALL_QUERIES:
                recall_q.append(q)
                recall_got.append({i for i, _ in got})
                exact_below, ix.exact_below = ix.exact_below, n + 1  # the same search, brute force
                a = pc()
                ix.nearest(q, r.ref_id, 20, 0.0)
                t["nearest_exact"].append(pc() - a)
                ix.exact_below = exact_below
        for k, v in t.items():
            if v:
                out[f"{k}_us_p50"] = common.pct(v, 50) * 1e6
                out[f"{k}_us_p99"] = common.pct(v, 99) * 1e6
        copies = sum(rid in g for rid, g in zip(ids, recall_got))  # the perturbed original found
        out["copy_found"] = copies / len(recall_got) if recall_got else None
        out["hnsw"] = n >= ix.exact_below
        out["vector_dtype"] = getattr(ix, "vector_dtype", "f16")
        out["connectivity"] = getattr(ix, "connectivity", 16)
        out["k"], out["blocks"], out["n_tables"] = ix.tables.k, ix.tables.blocks, ix.tables.n_tables
        if pages:
            out.update(_pages(ix, pages))
        common.trim_heap()
        rss2 = common.rss()
        out["rss_used"] = rss2["rss"] - rss0["rss"]
        out["rss_used_anon"] = rss2["anon"] - rss0["anon"]
        if recall_q:  # after the RSS figures: a scan of every stored float32 signature
            a = pc()
            want = exact_top(ix, np.array(recall_q), 20)
            out["exact_scan_s"] = pc() - a
            out["recall20"] = sum(len(w & g) for w, g in zip(want, recall_got)) / sum(len(w) for w in want)
    finally:
        t0 = time.perf_counter()
        ix.close()
        out["close_s"] = time.perf_counter() - t0
    return out


def exact_top(ix, queries: np.ndarray, n: int, batch: int = 50_000) -> list[set[int]]:
    """For each row of ``queries``, the ``n`` ids of highest exact cosine: a scan of every
    record's float32 signature in SQLite (whatever the vector index holds), ``batch`` rows at a time."""
    from index.local.records import signature_of_blob

    qs = np.asarray(queries, dtype=np.float64)
    qs = qs / np.linalg.norm(qs, axis=1, keepdims=True)
    dim = qs.shape[1]
    best_s = np.full((len(qs), 0), -np.inf)
    best_i = np.zeros((len(qs), 0), dtype=np.int64)
    cur = ix._db.execute("SELECT id, data FROM records")
    while rows := cur.fetchmany(batch):
        rid = np.array([r[0] for r in rows], dtype=np.int64)
        sigs = np.array([signature_of_blob(r[1]) for r in rows], dtype=np.float64).reshape(len(rows), dim)
        norms = np.linalg.norm(sigs, axis=1)
        sims = np.divide(qs @ sigs.T, norms, out=np.full((len(qs), len(rows)), -np.inf), where=norms > 0)
        best_s = np.concatenate([best_s, sims], axis=1)
        best_i = np.concatenate([best_i, np.broadcast_to(rid, sims.shape)], axis=1)
        keep = np.argsort(-best_s, axis=1)[:, :n]
        best_s, best_i = np.take_along_axis(best_s, keep, 1), np.take_along_axis(best_i, keep, 1)
    return [set(row.tolist()) for row in best_i]


def _pages(ix, pages: list[tuple[str, bytes]]) -> dict[str, Any]:
    """Per-page cost of the verdict path against ``ix``; the records added are removed after."""
    from bench_pipeline import STAGES, TimedFeaturizer, TimedIndex

    from dedup.deduplicator import Deduplicator
    from dedup.features import Featurizer
    from dedup.page import parse_page

    featurizer = Featurizer()
    parsed = [parse_page(html, url) for url, html in pages]
    for page in parsed:  # warm the word cache: the steady state of a long crawl
        featurizer(page)
    timer = common.Timer()
    dedup = Deduplicator(TimedIndex(ix, timer), featurizer=TimedFeaturizer(featurizer, timer))
    candidates = flagged = 0
    pc = time.perf_counter
    top = int(ix._db.execute("SELECT coalesce(max(id), 0) FROM records").fetchone()[0])
    cpu0 = time.process_time()  # the process's CPU (usearch's threads too): what other jobs' load does not inflate
    for page in parsed:
        t0 = pc()
        v = dedup.process(page)
        timer.add("process", pc() - t0)
        candidates += v.candidates
        flagged += v.status != "unique"
    cpu = time.process_time() - cpu0
    t = timer.total
    n = len(parsed)
    t["verification"] = t["process"] - t.get("features", 0) - t.get("fingerprints", 0) - t.get("search", 0) \
        - t.get("insert", 0)
    added = [r[0] for r in ix._db.execute("SELECT id FROM records WHERE id > ?", (top,))]
    for rid in added:
        ix.remove(rid)
    out = {f"page_{s}_ms": timer.ms_per(s, n) for s in STAGES if s != "extraction"}
    out["page_after_extraction_ms"] = sum(out.values())
    out["page_cpu_ms"] = cpu / n * 1e3
    out["page_candidates"] = candidates / n
    out["page_flagged"] = flagged
    out["pages"] = n
    return out


def probe_pages(goldset: str | None, count: int, seed: int) -> tuple[list[tuple[str, bytes]], str]:
    """Pages for the per-page probe: goldset-dev when present, else generated ones."""
    if goldset and not common.goldset_missing(goldset):
        return [(url, html) for _, url, html in common.goldset_pages(goldset, seed, count)], "goldset-dev"
    import sitegen

    site = sitegen.Site(int(count / 0.75) + 10, seed)
    site.build()
    files = sorted(k for k in site.files if k.startswith(("articles/", "print/", "partner/")))[:count]
    return [(f"http://site.invalid/{k}", site.files[k].encode()) for k in files], "generated (sitegen.py)"


def probe_in_subprocess(path: Path, pages_json: Path | None, queries: int, seed: int,
                        options: dict | None = None) -> dict[str, Any]:
    """Run ``probe`` in a fresh interpreter (clean RSS) and return its result."""
    import subprocess
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = Path(f.name)
    cmd = [sys.executable, str(Path(__file__)), "probe", str(path), "--json", str(out), "--queries", str(queries),
           "--seed", str(seed)]
    if pages_json:
        cmd += ["--pages", str(pages_json)]
    if options:
        cmd += ["--options", json.dumps(options)]
    proc = subprocess.run(cmd, env=common.env(), capture_output=True, text=True, timeout=7200)
    if proc.returncode != 0:
        raise RuntimeError(f"probe of {path} failed:\n{proc.stderr[-3000:]}")
    data = json.loads(out.read_text())
    out.unlink()
    return data


def write_pages(pages: list[tuple[str, bytes]], path: Path) -> None:
    """Pages as a file the probe subprocess reads (HTML kept as latin-1 text: bytes round-trip)."""
    path.write_text(json.dumps([[u, h.decode("latin-1")] for u, h in pages]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("dir")
    b.add_argument("n", type=int)
    b.add_argument("--seed", type=int, default=7)
    p = sub.add_parser("probe")
    p.add_argument("dir")
    p.add_argument("--json")
    p.add_argument("--pages", help="JSON file of [url, html] pairs (write_pages)")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--seed", type=int, default=7)
    for sp in (b, p):
        sp.add_argument("--options", default="{}", help="LocalIndex keyword arguments as JSON")
    args = ap.parse_args(argv)
    options = json.loads(args.options)
    if args.cmd == "build":
        print(json.dumps(build(args.dir, args.n, args.seed, options=options)))
        return 0
    pages = None
    if args.pages:
        pages = [(u, h.encode("latin-1")) for u, h in json.loads(Path(args.pages).read_text())]
    result = probe(args.dir, pages, args.queries, args.seed, options)
    text = json.dumps(result, indent=1)
    if args.json:
        Path(args.json).write_text(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
