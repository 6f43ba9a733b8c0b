"""The embedded index's parts at 10M records (issue 28 item 4): built in bulk, then each part's query.

    nice python benchmarks/bench_parts.py build-sql DIR 10000000 &   # rows, then probe-sql
    nice python benchmarks/bench_parts.py build-vectors DIR 10000000 [--expansion-add 128] [--vectors-only]
    python benchmarks/bench_parts.py probe-sql DIR      # exact keys, simhash tables, record fetch, row insert
    python benchmarks/bench_parts.py probe DIR          # the whole LocalIndex: the above + nearest() + add()
    python benchmarks/bench_parts.py probe-vectors DIR [--expansion-search 384,768]  # nearest()'s path, HNSW vs exact
    python benchmarks/bench_parts.py graph DIR 200000 --expansion-add 32   # HNSW connectivity 16, 12, 8
    python benchmarks/bench_parts.py cosines            # i8's recovered cosines on goldset-dev's signatures

Not in ``make test``: at 10M the rows take ~14 GB of SQLite and ~35 min on 2 shared cores; the f16 vectors
~4.5 GB and, at the product's expansion_add, hours (see docs/performance.md).  Where :mod:`synth` makes every record (``compact_arrays`` + ``encode_blob``: ~0.3 ms
each, ~50 min for 10M on one core), this build encodes a pool of :data:`POOL` synthetic records once and gives
each row its own keys and its own signature: URL, ``content_hash`` and ``title_key`` (xxh3 of the row number, the
featurizer's forms), a random simhash, and a signature drawn from :mod:`synth`'s topic model, put on its grid as
``quantise_signature`` does and written into the blob (its grid and codes), so that ``signature_of_blob`` reads
it back.  Rows are appended 100,000 a transaction by one ``executemany`` of the ``INSERT`` that
``LocalIndex.add`` runs; record 1 goes through ``LocalIndex.add`` so the index's metadata is the real thing.
The vector file is made beside it (``build-vectors``) by usearch's batch add (2 threads) over those same
signatures, with the index's own settings (scalar type, connectivity, expansion_search) and ``--expansion-add``
(default usearch's and the product's 128, ~0.65 ms of CPU an insert here; 32 takes a quarter of that but its
graph found the perturbed copy for 82% of queries at 1M, recall@20 0.73: see docs/performance.md), probed
(``nearest()``'s search, recall@20 against usearch's exact search) at every million vectors, and saved with the
``meta`` rows that tell ``LocalIndex`` it is current (no rebuild on open).

``probe-sql`` needs no vectors (run it while they build): it measures, with the product's SQL on one
connection, an exact-key lookup (``content_hash``, ``title_key``; ``url`` as ``by_url`` selects it), the simhash
tables (rebuilt as ``LocalIndex`` rebuilds them on open, then queried), a fetch of 20 random records (decoded),
and an insert (the ``content_hash`` claim check, the row, the commit).  ``probe`` opens the index (reopen time,
RSS) and runs :func:`synth.probe` (lookup, tables, ``nearest()`` with recall@20 against an exact scan, a fetch of
20) and times ``LocalIndex.add`` of new records (row, tables, HNSW node), removed after.

Cited by: docs/performance.md ("Bytes per record", "The index's parts at 10M records").
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import struct
import sys
import time
from pathlib import Path

import numpy as np
import xxhash

import common
import synth

POOL = 2_000  # distinct encoded records whose blobs the rows reuse (each with its own signature)
BATCH = 100_000  # rows a transaction, signatures a usearch batch
_GRID = struct.Struct("<2f")  # DR4 header: the signature's low and step, at byte 28
_GRID_AT = 28
_INSERT = ("INSERT INTO records(url, url_key, content_hash, title_key, simhash, status, duplicate_of, fetched_at, "
           "ref_id, sentences, title, data) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)")  # schema 5's (LocalIndex._insert)


def _signatures(start: int, count: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows ``start`` .. ``start + count - 1``: grid codes (uint8), low and step (float64), as
    ``dedup.record.signature_grid`` puts each signature on its grid (same every time)."""
    rng = np.random.default_rng([seed, start, 0x5A])
    _, topics = synth._profile(seed)
    sigs = topics[rng.integers(0, synth.TOPICS, count)] * np.exp(0.15 * rng.standard_normal((count, synth.DIM)))
    sigs = sigs.astype(np.float32)
    sigs /= np.linalg.norm(sigs, axis=1, keepdims=True) * 2.5
    s = sigs.astype(np.float64)
    lo, hi = s.min(axis=1), s.max(axis=1)
    step = np.where(hi > lo, 2.0 ** np.ceil(np.log2(np.maximum(hi - lo, 1e-300) / 255)), 1.0)
    low = np.floor(lo / step) * step
    while (wide := (hi - low) / step > 255).any():
        step = np.where(wide, step * 2, step)
        low = np.floor(lo / step) * step
    codes = np.clip(np.rint((s - low[:, None]) / step[:, None]), 0, 255).astype(np.uint8)
    return codes, low, step


def _vectors_of(codes: np.ndarray, low: np.ndarray, step: np.ndarray) -> np.ndarray:
    """The float32 signatures ``records.signature_of_blob`` decodes."""
    out = codes.astype(np.float32) * step.astype(np.float32)[:, None]
    out += low.astype(np.float32)[:, None]
    return out


def _pool(seed: int, ref: str) -> list[tuple[bytes, int, int]]:
    """POOL encoded records: (blob, offset of its signature codes, sentences)."""
    from index.local.records import _HEADER4, encode_blob

    out = []
    for r in synth.batch_records(0, seed, ref):
        blob = encode_blob(r)
        _, _, n_terms, _, n_sig, _, n_keys, *_ = _HEADER4.unpack_from(blob)
        assert n_sig == synth.DIM
        out.append((blob, _HEADER4.size + n_keys + 2 * n_terms, int(r.sentences)))
        if len(out) == POOL:
            return out
    return out


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path / "dedup.sqlite")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA cache_size=-2000000")  # 2 GB: the indexes' B-trees stay in memory while they grow
    return db


def build_sql(path: Path, n: int, seed: int, log=print) -> float:
    from index.local import LocalIndex
    from index.local.records import to_signed, url_key

    ref = synth._ref_id()
    marker = path / "parts.json"
    if marker.exists() and json.loads(marker.read_text()).get("rows") == n:
        return 0.0
    with LocalIndex(path) as ix:  # record 1 and the metadata, by the index itself
        if len(ix) == 0:
            ix.add(synth._first_record(seed))
    pool = _pool(seed, ref)
    db = _connect(path)
    db.execute("PRAGMA synchronous=OFF")  # a bulk build: a crash means building again
    have = db.execute("SELECT max(id) FROM records").fetchone()[0]
    t0 = time.perf_counter()
    for start in range(have + 1, n + 1, BATCH):
        count = min(BATCH, n + 1 - start)
        codes, low, step = _signatures(start, count, seed)
        rng = np.random.default_rng([seed, start])
        simhash = rng.bit_generator.random_raw(count)
        pick = rng.integers(0, len(pool), count)
        rows = []
        for j in range(count):
            i = start + j
            blob, at, sentences = pool[pick[j]]
            b = bytearray(blob)
            _GRID.pack_into(b, _GRID_AT, low[j], step[j])
            b[at:at + synth.DIM] = codes[j].tobytes()
            url = f"https://www.site{i % 5000}.example/news/2026/11/{i}/a-synthetic-article-title.html"
            rows.append((url, url_key(url), xxhash.xxh3_128_digest(b"c%d" % i), xxhash.xxh3_64_digest(b"t%d" % i),
                         to_signed(int(simhash[j])), "unique", None, 1.7e9 + i, None, sentences,
                         f"Synthetic page {i}: a title of a news article's length", bytes(b)))
        with db:
            db.executemany(_INSERT, rows)
        log(f"  {start + count - 1:,} rows ({time.perf_counter() - t0:.0f} s)")
    # the planner's statistics: LocalIndex's close left those of a 1-row table (PRAGMA optimize), with which
    # "id IN (...)" scans a whole index
    db.execute("PRAGMA analysis_limit=1000")
    db.execute("ANALYZE")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    marker.write_text(json.dumps({"rows": n, "seed": seed}))
    return time.perf_counter() - t0


class Centred:
    """What an ``i8`` LocalIndex holds beside its vectors (:mod:`index.local.vectors`): the centre m (the mean
    unit signature of the first CENTRE_SAMPLE records) and each record's m . y and |y|."""

    def __init__(self, first: np.ndarray):
        from index.local.vectors import CENTRE_SAMPLE

        unit = first / np.linalg.norm(first, axis=1, keepdims=True)
        self.m = unit[:CENTRE_SAMPLE].mean(axis=0)
        self.stats = np.full((2, 0), np.nan, dtype=np.float32)

    def rows(self, keys: np.ndarray, sigs: np.ndarray) -> np.ndarray:
        """The int8 vectors of ``sigs`` (rows), their stats kept under ``keys`` (the index's own centring)."""
        from index.local.vectors import centre_rows, quantise_i8

        y, stats = centre_rows(sigs, self.m)
        top = int(keys.max()) + 1
        if top > self.stats.shape[1]:
            grown = np.full((2, max(top, self.stats.shape[1] * 5 // 4)), np.nan, dtype=np.float32)
            grown[:, :self.stats.shape[1]] = self.stats
            self.stats = grown
        self.stats[:, keys.astype(np.int64)] = stats
        return quantise_i8(y)

    def nearest(self, vec, sig: np.ndarray, n: int, exact: bool = False) -> np.ndarray:
        """``LocalIndex.nearest``'s i8 search (:func:`index.local.vectors.search_centred`): the best n ids."""
        from index.local.vectors import search_centred

        return search_centred(vec, self.stats, self.m, sig, n, exact)[0]


def probe_vectors(vec, seed: int, queries: int = 200, exact: int = 30, sample: tuple | None = None,
                  centred: Centred | None = None) -> dict:
    """The search ``LocalIndex.nearest`` makes (20 of a near-copy's signature: a stored one perturbed as
    :func:`synth.probe` perturbs it), on the index as built so far: time, and recall@20 against the same
    search made exact (usearch's brute force) for ``exact`` of them.  ``sample``: (ids, signatures) of stored
    rows to perturb (an i8 index's vectors are centred and scaled: its stored rows are not signatures)."""
    n = len(vec)
    rng = np.random.default_rng([seed, n])
    if sample is None:
        ids = rng.integers(1, n + 1, queries).astype(np.uint64)
        base = np.asarray(vec.get(ids), dtype=np.float32)
    else:
        pick = rng.integers(0, len(sample[0]), queries)
        ids, base = sample[0][pick].astype(np.uint64), sample[1][pick]
    qs = (base * np.exp(0.05 * rng.standard_normal((queries, synth.DIM)))).astype(np.float32)

    def search(q, exact_=False):
        if centred is not None:
            return centred.nearest(vec, q, 20, exact_)
        return np.asarray(vec.search(q, 20, exact=exact_).keys, dtype=np.int64)

    a = time.perf_counter()
    want = [set(search(q, True).tolist()) for q in qs[:exact]]
    exact_s = (time.perf_counter() - a) / exact
    return {"vectors": n, **_searched(search, qs, ids, want), "exact_search_s": round(exact_s, 2),
            "memory_usage_B_rec": round(vec.memory_usage / n)}


def _searched(search, qs: np.ndarray, ids: np.ndarray, exact: list[set[int]]) -> dict:
    """``search(q)`` (20 keys) timed on each near-copy ``qs`` of the rows ``ids``: its latency percentiles, its
    recall@20 against ``exact`` (the exact search's keys for the first ``len(exact)`` queries) and how often it
    finds the row the query was made from."""
    t, got = [], []
    for q in qs:
        a = time.perf_counter()
        got.append(set(search(q).tolist()))
        t.append(time.perf_counter() - a)
    recall = sum(len(w & g) for w, g in zip(exact, got)) / (20 * len(exact))
    return {"nearest": _pcts(t), "recall20": round(recall, 3),
            "copy_found": round(float(np.mean([int(i) in g for i, g in zip(ids, got)])), 3)}


def build_vectors(path: Path, n: int, seed: int, expansion_add: int, checkpoint: int = 1_000_000,
                  log=print, vectors_only: bool = False) -> float:
    """The vector file over rows 1..n, as LocalIndex would hold it (the default scalar type: i8, centred, with
    its statistics file and centre), probed (:func:`probe_vectors`) every ``checkpoint`` vectors.
    ``vectors_only``: no build-sql beside it; the centre goes to ``vectors-meta.json`` (enough for probe-vectors,
    not for ``probe``), and the two cores are the graph's alone."""
    from usearch.index import Index

    from index.local.records import encode_blob, signature_of_blob
    from index.local.vectors import CENTRE_SAMPLE, CENTRED, DEFAULT_VECTOR_DTYPE, DEFAULTS, STATS_FORMAT, \
        STATS_NAME, VECTORS_NAME

    dtype = DEFAULT_VECTOR_DTYPE  # build-sql's index is a new one, opened without options
    connectivity, expansion_search = DEFAULTS[dtype]
    vec = Index(ndim=synth.DIM, metric="cos", dtype=dtype, connectivity=connectivity,
                expansion_search=expansion_search, expansion_add=expansion_add)
    t0 = time.perf_counter()
    first = signature_of_blob(encode_blob(synth._first_record(seed)))  # record 1's, as build-sql stores it
    head = np.vstack([first, _vectors_of(*_signatures(2, BATCH, seed))[:CENTRE_SAMPLE - 1]])
    centred = Centred(head) if dtype in CENTRED else None
    add = (lambda k, v: vec.add(k, centred.rows(k, v), threads=2)) if centred else \
        (lambda k, v: vec.add(k, v, threads=2))
    add(np.array([1], dtype=np.uint64), first.reshape(1, -1))
    sample_ids, sample_sigs = [], []
    rng = np.random.default_rng([seed, 0x51])
    for start in range(2, n + 1, BATCH):
        count = min(BATCH, n + 1 - start)
        sigs = _vectors_of(*_signatures(start, count, seed))
        add(np.arange(start, start + count, dtype=np.uint64), sigs)
        pick = rng.integers(0, count, 20)
        sample_ids.append(start + pick)
        sample_sigs.append(sigs[pick])
        log(f"  {start + count - 1:,} vectors ({time.perf_counter() - t0:.0f} s, {time.process_time():.0f} s CPU)")
        if (start + count - 1) // checkpoint > (start - 1) // checkpoint:
            sample = (np.concatenate(sample_ids), np.vstack(sample_sigs))
            log(json.dumps(probe_vectors(vec, seed, sample=sample, centred=centred)), flush=True)
    vec.save(str(path / VECTORS_NAME))
    meta = [("vectors_count", str(n)), ("vectors_max_id", str(n))]
    if centred is not None:
        with open(path / STATS_NAME, "wb") as f:
            np.savez(f, stats=centred.stats[:, :n + 1], format=np.int64(STATS_FORMAT))
        text = centred.m.astype("<f8").tobytes().hex()
        meta += [("vector_centre", text), ("vectors_centre", hashlib.sha1(text.encode("ascii")).hexdigest()[:16])]
    if vectors_only:  # no rows: the meta rows go to a file probe-vectors reads
        (path / "vectors-meta.json").write_text(json.dumps(dict(meta)))
        return time.perf_counter() - t0
    while not (path / "parts.json").exists():  # build-sql, run beside this, still appending rows
        time.sleep(10)
    db = _connect(path)
    count, max_id = db.execute("SELECT count(*), max(id) FROM records").fetchone()
    assert (count, max_id) == (n, n), (count, max_id)
    with db:
        db.executemany("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                       meta)
    db.close()
    return time.perf_counter() - t0


def probe_vector_file(path: Path, queries: int, seed: int, expansion_searches: list[int] | None = None) -> dict:
    """The i8 vector files ``build-vectors`` saved (no SQLite rows needed): ``nearest()``'s path by HNSW against
    the same path searched exactly, for ``queries`` near-copies of stored signatures (regenerated from their
    rows' seeds), and how often each finds the original; at the product's expansion_search and at each of
    ``expansion_searches``."""
    import sqlite3

    from usearch.index import Index

    from index.local.vectors import DEFAULTS, STATS_NAME, VECTORS_NAME

    t = time.perf_counter()
    vec = Index.restore(str(path / VECTORS_NAME))
    restore_s = time.perf_counter() - t
    n = len(vec)
    centred = Centred.__new__(Centred)
    with np.load(path / STATS_NAME) as saved:
        centred.stats = saved["stats"]
    if (path / "vectors-meta.json").exists():  # build-vectors --vectors-only
        meta = json.loads((path / "vectors-meta.json").read_text())
    else:
        db = sqlite3.connect(path / "dedup.sqlite")
        meta = dict(db.execute("SELECT key, value FROM meta"))
        db.close()
    centred.m = np.frombuffer(bytes.fromhex(meta["vector_centre"]), dtype="<f8").copy()
    rng = np.random.default_rng([seed, 10])
    ids = np.sort(rng.integers(2, n + 1, queries))
    sigs = np.empty((queries, synth.DIM), dtype=np.float32)
    for start in sorted({2 + (i - 2) // BATCH * BATCH for i in ids.tolist()}):  # as build-vectors made them
        rows = _vectors_of(*_signatures(start, min(BATCH, n + 1 - start), seed))
        sel = (ids >= start) & (ids < start + BATCH)
        sigs[sel] = rows[ids[sel] - start]
    qs = (sigs * np.exp(0.05 * rng.standard_normal(sigs.shape))).astype(np.float32)
    exact = [set(centred.nearest(vec, q, 20, exact=True).tolist()) for q in qs]
    out = {"vectors": n, "restore_s": round(restore_s, 1), "memory_usage_B_rec": round(vec.memory_usage / n),
           "copy_found_exact": round(float(np.mean([int(i) in e for i, e in zip(ids, exact)])), 3)}
    for es in [DEFAULTS["i8"][1]] + [e for e in expansion_searches or [] if e != DEFAULTS["i8"][1]]:
        vec.expansion_search = es
        out[f"expansion_search {es}"] = _searched(lambda q: centred.nearest(vec, q, 20), qs, ids, exact)
    return out


def cosines(goldset: str, step: int = 5) -> dict:
    """How far the true cosines an i8 index recovers (:func:`index.local.vectors.centred_cosines`) are from the
    exact ones, on the distinct signatures of goldset-dev + negatives-dev (on their grid, as a record holds them;
    the centre their first CENTRE_SAMPLE), for every ``step``-th page against all; f16's error beside it, and the
    gap between a page's 20th and 21st neighbours (the kNN search's tail)."""
    from dedup.cli.evaluate import load_clusters, page_url
    from dedup.features import Featurizer
    from dedup.page import parse_page
    from dedup.record import quantise_signature
    from index.local.vectors import CENTRE_SAMPLE, centred_cosines, quantise_i8

    fz = Featurizer()
    sigs = []
    negatives = Path(goldset).parent / "negatives-dev"
    paths = [p for _, p in load_clusters(goldset)] + ([p for _, p in load_clusters(negatives)] if negatives.is_dir() else [])
    for j, path in enumerate(paths):
        page = parse_page(path.read_bytes(), page_url(j))
        s = quantise_signature(np.asarray(fz(page).to_record(page).signature, dtype=np.float64))
        if np.any(s):
            sigs.append(s)
    u = np.unique(np.array(sigs, dtype=np.float64), axis=0)  # an exact copy's record is refused
    u = u[np.random.default_rng(7).permutation(len(u))]
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    m = u[:CENTRE_SAMPLE].mean(axis=0)
    y = u - m
    stored, m_y, y_norm = quantise_i8(y), y @ m, np.linalg.norm(y, axis=1)
    half = u.astype(np.float16).astype(np.float64)
    half /= np.linalg.norm(half, axis=1, keepdims=True)
    err, err16, gaps = [], [], []
    for j in range(0, len(u), step):
        exact = u @ u[j]
        err.append(np.abs(centred_cosines(stored, u[j] - m, m, m_y, y_norm) - exact))
        err16.append(np.abs(half @ u[j] - exact))
        top = np.sort(exact)[::-1]
        gaps.append(top[19] - top[20])
    e, e16 = np.concatenate(err), np.concatenate(err16)
    return {"signatures": len(u), "i8_error": f"p50 {np.median(e):.1e}, p99 {np.percentile(e, 99):.1e}, max {e.max():.1e}",
            "f16_error": f"p50 {np.median(e16):.1e}, max {e16.max():.1e}",
            "gap_20th_21st": f"p50 {np.median(gaps):.1e}"}


def graph_sizes(n: int, seed: int, expansion_add: int, connectivities: list[int]) -> list[dict]:
    """The HNSW graph's bytes against its search: ``n`` signatures indexed at each connectivity (f16), each
    probed as :func:`probe_vectors` probes, with the size of its saved file."""
    import tempfile

    from usearch.index import Index

    from index.local.vectors import DEFAULTS

    codes, low, step = _signatures(1, n, seed)
    vectors = _vectors_of(codes, low, step)
    out = []
    for connectivity in connectivities:
        vec = Index(ndim=synth.DIM, metric="cos", dtype="f16", connectivity=connectivity,
                    expansion_search=DEFAULTS["f16"][1], expansion_add=expansion_add)
        cpu = time.process_time()
        vec.add(np.arange(1, n + 1, dtype=np.uint64), vectors, threads=2)
        cpu = time.process_time() - cpu
        with tempfile.TemporaryDirectory() as tmp:
            vec.save(f"{tmp}/v.usearch")
            size = Path(f"{tmp}/v.usearch").stat().st_size
        out.append({"connectivity": connectivity, "file_B_rec": round(size / n), "build_cpu_s": round(cpu),
                    **probe_vectors(vec, seed)})
        print(json.dumps(out[-1]), flush=True)
    return out


def _pcts(values: list[float]) -> str:
    return f"p50 {common.pct(values, 50) * 1e6:,.0f} us, p99 {common.pct(values, 99) * 1e6:,.0f} us"


def probe_sql(path: Path, queries: int, seed: int) -> dict:
    """The parts that need no vectors, with the product's SQL and tables (see the module docstring)."""
    from dedup.permtables import PermutationTables
    from index.local.records import COLUMNS, record_of_row, to_signed, url_key

    db = _connect(path)
    db.execute("PRAGMA cache_size=-2000")  # SQLite's default: the OS page cache holds the file, as in use
    n = db.execute("SELECT max(id) FROM records").fetchone()[0]
    ref = dict(db.execute("SELECT key, value FROM meta"))["ref_id"]
    rng = np.random.default_rng(seed)
    ids = rng.integers(2, n + 1, queries).tolist()
    pc = time.perf_counter
    out: dict = {"records": n}
    for kind, key in (("content_hash", lambda i: xxhash.xxh3_128_digest(b"c%d" % i)),
                      ("title_key", lambda i: xxhash.xxh3_64_digest(b"t%d" % i))):
        t = []
        for i in ids:
            a = pc()
            got = db.execute(f"SELECT id FROM records WHERE {kind} = ? ORDER BY id", (key(i),)).fetchall()
            t.append(pc() - a)
            assert got == [(i,)], (kind, i, got)
        out[f"lookup_{kind}"] = _pcts(t)
    t = []
    for i in ids:
        url = f"https://www.site{i % 5000}.example/news/2026/11/{i}/a-synthetic-article-title.html"
        a = pc()
        row = db.execute(f"SELECT {COLUMNS} FROM records WHERE url_key = ? AND url = ? ORDER BY id DESC LIMIT 1",
                         (url_key(url), url)).fetchone()
        record_of_row(row, ref)
        t.append(pc() - a)
    out["by_url"] = _pcts(t)
    t = []
    for _ in range(queries):
        want = rng.integers(1, n + 1, 20).tolist()
        a = pc()
        rows = db.execute(f"SELECT {COLUMNS} FROM records WHERE id IN ({','.join('?' * 20)})", want).fetchall()
        [record_of_row(r, ref) for r in rows]
        t.append(pc() - a)
    out["fetch20"] = _pcts(t)
    a = pc()
    pairs = np.fromiter(db.execute("SELECT id, simhash FROM records"),
                        dtype=np.dtype([("id", "<i8"), ("simhash", "<i8")]))
    tables = PermutationTables(k=3, blocks=5)
    tables.add_many(pairs["simhash"].view(np.uint64), pairs["id"])
    out["tables_load_s"] = round(pc() - a, 1)
    t = []
    for i in rng.integers(0, len(pairs), queries).tolist():
        fp = int(pairs["simhash"][i].view(np.uint64)) ^ (1 << int(rng.integers(0, 64)))  # a near-copy's
        a = pc()
        got = tables.query(fp)
        t.append(pc() - a)
        assert (int(pairs["id"][i]), 1) in got
    out["near_simhash"] = _pcts(t)
    del pairs, tables
    rec = synth._first_record(seed)
    from index.local.records import encode_blob, key_value

    db.execute("PRAGMA synchronous=NORMAL")
    t = []
    for j in range(queries):
        i = n + 1 + j
        ch = xxhash.xxh3_128_digest(b"c%d" % i)
        a = pc()
        with db:
            db.execute("SELECT id FROM records WHERE content_hash = ? AND status != 'exact_duplicate' AND id != ? "
                       "ORDER BY id LIMIT 1", (ch, 0)).fetchone()
            db.execute(_INSERT, (f"https://insert.example/{i}", url_key(f"https://insert.example/{i}"), ch, key_value(rec.title_key),
                                       to_signed(rec.simhash), "unique", None, 1.8e9, None, 1, rec.title,
                                       encode_blob(rec)))
        t.append(pc() - a)
    with db:
        db.execute("DELETE FROM records WHERE id > ?", (n,))
    out["insert_row"] = _pcts(t)
    db.close()
    return out


def probe(path: Path, queries: int, seed: int) -> dict:
    from index.local import LocalIndex

    ref = synth._ref_id()
    rng = np.random.default_rng(seed)
    out = synth.probe(path, queries=queries, seed=seed)
    with LocalIndex(path) as ix:
        n = len(ix)
        t, added = [], []
        for j, r in enumerate(synth.batch_records(0, seed + 1, ref)):
            if j == queries:
                break
            r.url, r.content_hash = f"https://add.example/{j}", xxhash.xxh3_128_hexdigest(b"add%d" % j)
            r.signature = _vectors_of(*_signatures(10**9 + j * 7919 + int(rng.integers(7919)), 1, seed))[0]
            a = time.perf_counter()
            added.append(ix.add(r))
            t.append(time.perf_counter() - a)
        for i in added:
            ix.remove(i)
        ix._unsaved = 0  # the probe's adds are gone again: do not rewrite the 10M vector file on close
    out["add"] = _pcts(t)
    out["records"] = n
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("build-sql", "build-vectors", "probe-sql", "probe", "probe-vectors", "graph", "cosines"))
    ap.add_argument("dir", nargs="?", default=None)
    ap.add_argument("records", nargs="?", type=int, default=10_000_000)
    ap.add_argument("--expansion-add", type=int, default=128, help="usearch's expansion_add of the build (default %(default)s)")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--connectivity", default="16,12,8", help="graph: the connectivities compared (default %(default)s)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--vectors-only", action="store_true", help="build-vectors without build-sql beside it")
    ap.add_argument("--expansion-search", default="", help="probe-vectors: wider searches to compare, e.g. 384,768")
    common.goldset_arg(ap)
    args = ap.parse_args(argv)
    if args.command == "cosines":
        if common.goldset_missing(args.goldset):
            print(common.goldset_missing(args.goldset))
            return 0
        print(json.dumps(cosines(args.goldset), indent=1))
        return 0
    if args.dir is None:
        ap.error(f"{args.command} needs DIR")
    path = Path(args.dir)
    path.mkdir(parents=True, exist_ok=True)
    if args.command == "build-sql":
        s = build_sql(path, args.records, args.seed)
        print(f"rows: {s:.0f} s")
        print(json.dumps(probe_sql(path, args.queries, args.seed), indent=1), flush=True)
    elif args.command == "build-vectors":  # beside build-sql (it waits for its rows to write the meta rows)
        v = build_vectors(path, args.records, args.seed, args.expansion_add, vectors_only=args.vectors_only)
        print(f"vectors: {v:.0f} s (expansion_add {args.expansion_add})")
    elif args.command == "graph":  # DIR unused
        graph_sizes(args.records, args.seed, args.expansion_add, [int(c) for c in args.connectivity.split(",")])
    elif args.command == "probe-vectors":
        wider = [int(e) for e in args.expansion_search.split(",") if e]
        print(json.dumps(probe_vector_file(path, args.queries, args.seed, wider), indent=1))
    elif args.command == "probe-sql":
        print(json.dumps(probe_sql(path, args.queries, args.seed), indent=1))
    else:
        print(json.dumps(probe(path, args.queries, args.seed), indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
