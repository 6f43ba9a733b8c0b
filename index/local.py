"""``local://PATH``: the embedded dedup index, a directory on one machine.

Files in ``PATH`` (created when missing):

``dedup.sqlite``       the source of truth: one row per kept page (table ``records``) and
                       a ``meta`` table (schema version, table parameters, reference text).
``signatures.usearch`` a saved copy of the vector index over the MRC signatures; derived,
                       may be deleted at any time (it is rebuilt from SQLite).
``lock``               holds an exclusive ``flock`` while a :class:`LocalIndex` is open,
                       and the pid of the process holding it.

Durability.  SQLite runs in WAL mode with ``synchronous=NORMAL`` and every :meth:`~LocalIndex.add`
and :meth:`~LocalIndex.remove` is its own committed transaction before it returns.  In WAL
mode a commit appends the transaction to the ``-wal`` file with a plain ``write()``; it
reaches the OS page cache before ``add`` returns, so killing the process (SIGKILL, OOM
killer, a crash) at any point loses no record ``add`` reported as stored.  ``NORMAL`` only
skips the fsync at commit: an OS crash or power cut can lose the last few transactions
(never corrupt the database).  Use ``synchronous="FULL"`` when that matters too (each
commit then waits for the disk).

Derived structures, rebuilt or reloaded on open, never trusted over SQLite:

* the :class:`~dedup.permtables.PermutationTables` of the simhashes: built on every open
  from one ``SELECT id, simhash`` (a covering-index scan) and ``add_many``;
* a usearch HNSW index over the signatures, keyed by record id (cosine metric; ``f16``
  scalars and connectivity 16 by default, see "Memory" below).  It is saved to
  ``signatures.usearch`` on :meth:`~LocalIndex.flush`/:meth:`~LocalIndex.close` (and
  automatically every ``autosave`` adds, at least 10% of the index size, so saving stays
  amortised O(1) per add) together with the record count and largest id it covers.  Ids are
  never reused (``AUTOINCREMENT``) and a record is never changed in place, so a (count, max
  id) pair equal to SQLite's means the file is current; otherwise the file is reconciled with
  SQLite (stale keys removed, missing signatures added from SQLite, in batches), and rebuilt
  from scratch when it is missing, unreadable, or of another dimension, scalar type or
  connectivity.

:meth:`~LocalIndex.nearest` searches exactly (brute force, ``exact=True``) while the index
holds fewer than ``exact_below`` (20,000) signatures: under a millisecond there, and no
HNSW misses (HNSW's recall@20 with usearch's default expansion was 0.93 at 5k and 0.78 at
20k random 150-d vectors).  Above it, HNSW with ``expansion_search`` 128 candidates.
Similarities are ``1 - cosine distance`` of the f16 vectors (error ~1e-4); the floor applies
to them.  With ``vector_dtype="i8"`` (error ~1.5e-3, enough to reorder the close cosines of
MRC signatures) it asks for ``OVERSAMPLE`` (2) x n candidates, reads their float32
signatures from SQLite (only those bytes of each row) and returns the best n by exact cosine.

Memory (RSS growth over opening an index of 1M synthetic records of featurizer size, measured
by ``benchmarks/bench_memory.py``; 2-core VM, usearch 2.26):

* permutation tables: 184 bytes per document (20 tables x an 8-byte entry, the 8-byte
  simhash and doc id, the bucket directory), fixed by k = 3 / 6 blocks and not
  configurable here;
* the vector index: 150 signature scalars, the HNSW graph (2 x connectivity 4-byte
  neighbour slots on the base level, fewer above), the key and usearch's key-lookup map;
* SQLite's page cache (2 MiB) and nothing per record: records stay on disk (8.3 KB each).

=================  ========  ==========================  ==================  ===============
vectors            B/doc     nearest(): near-copy found  recall@20 vs exact  nearest() p50
=================  ========  ==========================  ==================  ===============
f16, 16 (default)  739       1.00                        0.997               0.7 ms
i8, 8              520       0.93                        0.917               5 ms (re-ranking
                                                                             reads 40 rows)
=================  ========  ==========================  ==================  ===============

(100 queries, each a stored signature perturbed to cosine ~0.9987, as a near-copy's is;
"exact" is float32 cosine over all signatures.  At 100k both find every copy.)  Neither
reaches 512 bytes per document: the tables alone take 184, and the vector index cannot
drop below ~330 with 150 dimensions, a graph and key lookups.  ``i8``/8 trades 30% of the
memory for missing 7% of near-copies at 1M, so it is an option, not the default.  Reading the
tables' pairs straight into numpy (not a list of row tuples) saves ~20 bytes per document of
fragmented heap left over from opening (measured at 100k); rebuilding the vector file reads
signatures in batches of 50,000 (it used to hold every row's whole blob, ~7 GB at 1M, until
the end).

Measured (2-core VM, 100k synthetic records of featurizer size, ~6 KB each): ``add``
2,800 records/s, of which the SQLite insert + commit is ~110 us and the HNSW insert
~300 us; reopen 0.3 s (tables from the covering index 0.19 s, vector file 0.05 s); reopen
after a crash that left the vector file 10k adds behind 4 s; full rebuild of the vector
index 32 s.  At 1M: reopen 2.5-3.2 s, full rebuild of the vector index 7 min (f16/16) or
4 min (i8/8).

Single writer: a second :class:`LocalIndex` on the same directory (another process, or the
same one) raises :class:`IndexLocked`; concurrent crawls should share an Elasticsearch
index instead.  One instance may be used from several threads (calls are serialised).
"""
from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import sqlite3
import struct
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np

from dedup.bits import MASK64
from dedup.permtables import PermutationTables
from dedup.record import Record
from dedup.store import EXACT_KEYS, KeyTaken, check_reference, claims_content

__all__ = ["LocalIndex", "IndexLocked", "SCHEMA_VERSION", "encode_blob", "decode_blob"]

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
DB_NAME = "dedup.sqlite"
VECTORS_NAME = "signatures.usearch"
LOCK_NAME = "lock"

_SQL_VARS = 500  # ids per "IN (...)" statement
VECTOR_DTYPES = ("i8", "f16", "f32")
#: vector scalars too coarse to rank close signatures: nearest() asks the index for OVERSAMPLE
#: times n candidates and ranks them by their exact cosines
RERANKED = ("i8",)
OVERSAMPLE = 2
# check(): least cosine between a stored (quantised) vector and its signature; i8 keeps >= 0.9987
_STORED_COSINE = {"i8": 0.995, "f16": 0.999, "f32": 0.999}
_VECTOR_BATCH = 50_000  # signatures read and added to the vector index at a time when rebuilding it

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    url TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    title_key TEXT NOT NULL,
    simhash INTEGER NOT NULL,
    status TEXT NOT NULL,
    duplicate_of TEXT,
    fetched_at REAL NOT NULL,
    ref_id TEXT NOT NULL,
    sentences INTEGER NOT NULL,
    title TEXT NOT NULL,
    data BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS records_content_hash ON records(content_hash);
CREATE INDEX IF NOT EXISTS records_title_key ON records(title_key);
CREATE INDEX IF NOT EXISTS records_url ON records(url);
CREATE INDEX IF NOT EXISTS records_simhash ON records(simhash);
"""
# records_simhash is not for lookups: it makes "SELECT id, simhash" (rebuilding the tables
# on open) a scan of a compact covering index instead of every row's page and blob.

_COLUMNS = "id, url, content_hash, title_key, simhash, status, duplicate_of, fetched_at, ref_id, sentences, title, data"


class IndexLocked(RuntimeError):
    """Another process (or another open LocalIndex) is using this local index."""


# -- the data blob -------------------------------------------------------------------------
# Header (32 bytes, little-endian): magic b"DR1\0", then uint32 lengths (in elements) of
# signature, chunks, terms, shingles, weights, and the byte length of the extra JSON; then
# the arrays' raw little-endian bytes: signature (float32) first so that a rebuild of the
# vector index parses the least, the uint64 arrays next (8-byte aligned), the float32
# weights, and extra as compact JSON ("" when empty).  No compression: hashes are random
# bytes and do not compress.
_MAGIC = b"DR1\0"
_HEADER = struct.Struct("<4s6I4x")
_LE_U64, _LE_F32 = np.dtype("<u8"), np.dtype("<f4")


def encode_blob(record: Record) -> bytes:
    """The ``data`` column of ``record``: its arrays and ``extra``, compactly."""
    sig = np.ascontiguousarray(record.signature, dtype=_LE_F32).reshape(-1)
    chunks = np.ascontiguousarray(record.chunks, dtype=_LE_U64).reshape(-1)
    terms = np.ascontiguousarray(record.terms, dtype=_LE_U64).reshape(-1)
    shingles = np.ascontiguousarray(record.shingles, dtype=_LE_U64).reshape(-1)
    weights = np.ascontiguousarray(record.weights, dtype=_LE_F32).reshape(-1)
    extra = json.dumps(record.extra, separators=(",", ":")).encode("utf-8") if record.extra else b""
    header = _HEADER.pack(_MAGIC, sig.size, chunks.size, terms.size, shingles.size, weights.size, len(extra))
    return b"".join((header, sig.tobytes(), chunks.tobytes(), terms.tobytes(), shingles.tobytes(),
                     weights.tobytes(), extra))


def _blob_header(blob: bytes) -> tuple[int, ...]:
    magic, *sizes = _HEADER.unpack_from(blob)
    if magic != _MAGIC:
        raise ValueError(f"unknown record data format {magic!r}")
    return tuple(sizes)


def decode_blob(blob: bytes) -> dict[str, Any]:
    """Arrays (writable, native dtypes) and ``extra`` from a ``data`` column value."""
    n_sig, n_chunks, n_terms, n_shingles, n_weights, n_extra = _blob_header(blob)
    buf = bytearray(blob)  # one copy; the arrays are writable views of it
    out: dict[str, Any] = {}
    offset = _HEADER.size
    for name, n, dtype in (("signature", n_sig, _LE_F32), ("chunks", n_chunks, _LE_U64),
                           ("terms", n_terms, _LE_U64), ("shingles", n_shingles, _LE_U64),
                           ("weights", n_weights, _LE_F32)):
        out[name] = np.frombuffer(buf, dtype=dtype, count=n, offset=offset)
        offset += n * dtype.itemsize
    out["extra"] = json.loads(bytes(buf[offset:offset + n_extra])) if n_extra else {}
    return out


def _signature_of_blob(blob: bytes) -> np.ndarray:
    n_sig = _blob_header(blob)[0]
    return np.frombuffer(blob, dtype=_LE_F32, count=n_sig, offset=_HEADER.size)


def _dtype_name(vectors) -> str:
    """``"f16"`` for a usearch index of ``ScalarKind.F16`` scalars."""
    return str(vectors.dtype).lower().split(".")[-1]


def _to_signed(fp: int) -> int:
    fp = int(fp) & MASK64
    return fp - (1 << 64) if fp >= 1 << 63 else fp


# -- the index --------------------------------------------------------------------------------
class LocalIndex:
    """A :class:`~dedup.store.DedupIndex` in a local directory (see the module docstring).

    ``k``/``blocks``: the simhash tables' parameters; ``None`` takes the values the index
    was last opened with (3 and 6 for a new one).  Other values work too: the tables are
    rebuilt from SQLite on every open anyway.
    ``synchronous``: SQLite's ``NORMAL`` (default; survives process crashes) or ``FULL``
    (also OS crashes).  ``exact_below``: brute-force kNN below this many signatures.
    ``autosave``: save the vector index after this many adds since the last save (and at
    least 10% of its size); ``0`` saves only on flush/close.
    ``vector_dtype`` / ``connectivity``: scalars and graph degree of the HNSW index over the
    signatures (default ``"f16"`` and 16; ``"i8"`` and 8 hold ~220 fewer bytes per document
    for some recall at scale: see "Memory" in the module docstring).  A saved vector file
    made with other values is rebuilt from SQLite on open.
    """

    def __init__(self, path: str | os.PathLike, *, k: int | None = None, blocks: int | None = None,
                 synchronous: str = "NORMAL", exact_below: int = 20_000, expansion_search: int = 128,
                 autosave: int = 10_000, vector_dtype: str = "f16", connectivity: int = 16) -> None:
        if synchronous.upper() not in ("NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"synchronous must be NORMAL, FULL or EXTRA (got {synchronous!r})")
        if vector_dtype not in VECTOR_DTYPES:
            raise ValueError(f"vector_dtype must be one of {', '.join(VECTOR_DTYPES)} (got {vector_dtype!r})")
        if not 2 <= int(connectivity) <= 64:
            raise ValueError(f"connectivity must be between 2 and 64 (got {connectivity!r})")
        self.vector_dtype, self.connectivity = vector_dtype, int(connectivity)
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.exact_below = int(exact_below)
        self.expansion_search = int(expansion_search)
        self.autosave = int(autosave)
        self._mutex = threading.RLock()
        self._db: sqlite3.Connection | None = None
        self._lock_fd: int | None = None
        self._vectors = None  # usearch Index, created with the first signature
        self._unsaved = 0  # vector-index changes since it was last saved
        self._acquire_lock()
        try:
            self._open_db(synchronous.upper())
            self._init_meta(k, blocks)
            self._load_tables()
            self._load_vectors()
        except BaseException:
            self._close_files()
            raise

    # -- opening -------------------------------------------------------------------------------
    def _acquire_lock(self) -> None:
        lock_path = self.path / LOCK_NAME
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            try:
                holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
            finally:
                os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            who = (f"this process (pid {holder}), through another open LocalIndex"
                   if holder == str(os.getpid()) else f"another process (pid {holder})")
            raise IndexLocked(
                f"the local dedup index {str(self.path)!r} is in use by {who}; lock file "
                f"{lock_path}. A local index has a single writer: "
                "run one crawl at a time on it, or let concurrent crawls share an Elasticsearch "
                "index instead (DEDUP_INDEX=http://host:9200/name)."
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self._lock_fd = fd

    def _open_db(self, synchronous: str) -> None:
        db = sqlite3.connect(self.path / DB_NAME, check_same_thread=False)
        self._db = db
        mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise RuntimeError(f"could not put {self.path / DB_NAME} in WAL mode (got {mode!r})")
        db.execute(f"PRAGMA synchronous={synchronous}")
        db.execute("PRAGMA busy_timeout=5000")
        with db:
            db.executescript(_SCHEMA)

    def _meta(self) -> dict[str, str]:
        return dict(self._db.execute("SELECT key, value FROM meta").fetchall())

    def _set_meta(self, **values: Any) -> None:
        self._db.executemany("INSERT INTO meta(key, value) VALUES (?, ?) "
                             "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                             [(k, str(v)) for k, v in values.items()])

    def _init_meta(self, k: int | None, blocks: int | None) -> None:
        meta = self._meta()
        version = int(meta.get("schema_version", SCHEMA_VERSION))
        if version > SCHEMA_VERSION:
            raise RuntimeError(f"{self.path / DB_NAME} has schema version {version}, newer than this "
                               f"program's ({SCHEMA_VERSION}); upgrade scrapy-dedup to open it")
        self.k = int(meta.get("k", 3)) if k is None else int(k)
        self.blocks = int(meta.get("blocks", 6)) if blocks is None else int(blocks)
        self.ref_id: str | None = meta.get("ref_id")
        self.dim: int | None = int(meta["dim"]) if "dim" in meta else None
        with self._db:
            self._set_meta(schema_version=SCHEMA_VERSION, k=self.k, blocks=self.blocks)

    def _load_tables(self) -> None:
        self.tables = PermutationTables(k=self.k, blocks=self.blocks)
        # straight into a numpy array: a list of row tuples first leaves ~20 bytes a record
        # of fragmented Python heap behind it
        pairs = np.fromiter(self._db.execute("SELECT id, simhash FROM records"),
                            dtype=np.dtype([("id", "<i8"), ("simhash", "<i8")]))
        if pairs.size:
            self.tables.add_many(pairs["simhash"].view(np.uint64), pairs["id"])

    def _new_vectors(self):
        from usearch.index import Index

        return Index(ndim=self.dim, metric="cos", dtype=self.vector_dtype, connectivity=self.connectivity,
                     expansion_search=self.expansion_search)

    def _load_vectors(self) -> None:
        if self.ref_id is None:
            return
        file = self.path / VECTORS_NAME
        meta = self._meta()
        count, max_id = self._db.execute("SELECT count(*), coalesce(max(id), 0) FROM records").fetchone()
        vectors = None
        if file.exists():
            from usearch.index import Index

            try:
                vectors = Index.restore(str(file))
            except Exception as exc:  # noqa: BLE001 - any unreadable file is rebuilt
                log.warning("cannot read %s (%s): rebuilding it from SQLite", file, exc)
            if vectors is not None and (vectors.ndim != self.dim or _dtype_name(vectors) != self.vector_dtype
                                        or vectors.connectivity != self.connectivity):
                log.warning("%s has %d dimensions (%s, connectivity %d), the index %d (%s, %d): rebuilding it",
                            file, vectors.ndim, _dtype_name(vectors), vectors.connectivity, self.dim,
                            self.vector_dtype, self.connectivity)
                vectors = None
        if vectors is not None:
            vectors.expansion_search = self.expansion_search
            current = (meta.get("vectors_count") == str(count) and meta.get("vectors_max_id") == str(max_id)
                       and len(vectors) == count)
            self._vectors = vectors
            if current:
                return
            log.info("%s does not match %s: reconciling", file, DB_NAME)
        else:
            self._vectors = self._new_vectors()
        self._reconcile_vectors()
        self._save_vectors()

    def _reconcile_vectors(self) -> None:
        """Make the vector index hold exactly SQLite's ids (signatures never change)."""
        ids = np.fromiter((r[0] for r in self._db.execute("SELECT id FROM records")), dtype=np.int64)
        keys = np.asarray(self._vectors.keys, dtype=np.int64) if len(self._vectors) else np.zeros(0, np.int64)
        stale = np.setdiff1d(keys, ids, assume_unique=True)
        if stale.size:
            self._vectors.remove(stale.astype(np.uint64))
        missing = np.setdiff1d(ids, keys, assume_unique=True)
        if missing.size:
            t = time.perf_counter()
            if missing.size * 4 >= ids.size:  # most are missing: one scan, skipping the others
                want = None if missing.size == ids.size else set(missing.tolist())
                rows = (r for r in self._db.execute("SELECT id, data FROM records") if want is None or r[0] in want)
            else:
                rows = self._select("SELECT id, data FROM records WHERE id IN ({})", missing.tolist())
            # in batches, each signature copied out of its row at once: a signature is a view of
            # its row's whole data blob (~7 KB), so collecting views would hold every blob
            matrix = np.empty((_VECTOR_BATCH, self.dim), dtype=np.float32)
            keys = np.empty(_VECTOR_BATCH, dtype=np.uint64)
            added = j = 0
            for rid, blob in rows:
                matrix[j], keys[j] = _signature_of_blob(blob), rid
                j += 1
                if j == _VECTOR_BATCH:
                    self._vectors.add(keys, matrix)  # usearch copies the vectors in
                    added, j = added + j, 0
            if j:
                self._vectors.add(keys[:j], matrix[:j])
                added += j
            log.info("added %d signatures to the vector index in %.1f s", added, time.perf_counter() - t)
        if stale.size or missing.size:
            self._unsaved += int(stale.size + missing.size)

    def _select(self, sql: str, ids: list[int]) -> Iterator[tuple]:
        for i in range(0, len(ids), _SQL_VARS):
            part = ids[i:i + _SQL_VARS]
            yield from self._db.execute(sql.format(",".join("?" * len(part))), part)

    def _save_vectors(self) -> None:
        """Write the vector index (atomically) and record the SQLite state it covers."""
        if self._vectors is None:
            return
        count, max_id = self._db.execute("SELECT count(*), coalesce(max(id), 0) FROM records").fetchone()
        file = self.path / VECTORS_NAME
        tmp = file.with_name(file.name + ".tmp")
        self._vectors.save(str(tmp))
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, file)
        with self._db:
            self._set_meta(vectors_count=count, vectors_max_id=max_id)
        self._unsaved = 0

    # -- DedupIndex -----------------------------------------------------------------------------
    def __len__(self) -> int:
        with self._mutex:
            return self._db.execute("SELECT count(*) FROM records").fetchone()[0]

    def add(self, record: Record) -> int:
        """Store ``record`` (committed when this returns), set and return its id."""
        sig = np.asarray(record.signature, dtype=np.float32).reshape(-1)
        if not 0 <= int(record.simhash) <= MASK64:
            raise ValueError(f"simhash must be an unsigned 64-bit integer (got {record.simhash!r})")
        with self._mutex:
            db = self._require_open()
            first = self.ref_id is None
            if not first:
                self._check_ref(record.ref_id, sig.size, "signature")
            blob = encode_blob(record)
            with db:
                if claims_content(record):  # the writer lock makes check-then-insert atomic
                    holder = db.execute(
                        "SELECT id FROM records WHERE content_hash = ? AND status != 'exact_duplicate' "
                        "ORDER BY id LIMIT 1", (record.content_hash,)).fetchone()
                    if holder:
                        raise KeyTaken(record.content_hash, holder[0])
                cur = db.execute(
                    "INSERT INTO records(url, content_hash, title_key, simhash, status, duplicate_of, "
                    "fetched_at, ref_id, sentences, title, data) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                    (record.url, record.content_hash, record.title_key, _to_signed(record.simhash),
                     record.status, record.duplicate_of, float(record.fetched_at), record.ref_id,
                     int(record.sentences), record.title or "", blob))
                if first:
                    self._set_meta(ref_id=record.ref_id, dim=sig.size)
            record.id = cur.lastrowid
            if first:
                self.ref_id, self.dim = record.ref_id, sig.size
                self._vectors = self._new_vectors()
            self.tables.add(int(record.simhash) & MASK64, record.id)
            self._vectors.add(record.id, sig)
            self._unsaved += 1
            if self.autosave and self._unsaved >= max(self.autosave, len(self._vectors) // 10):
                self._save_vectors()
            return record.id

    def _check_ref(self, ref_id: str, dim: int, what: str) -> None:
        check_reference(ref_id, dim, self.ref_id, self.dim, what=what, where=f"this index ({self.path})")

    def lookup(self, kind: str, key: str) -> list[int]:
        if kind not in EXACT_KEYS:
            raise ValueError(f"unknown exact key kind {kind!r}; valid: {', '.join(EXACT_KEYS)}")
        with self._mutex:
            rows = self._require_open().execute(
                f"SELECT id FROM records WHERE {kind} = ? ORDER BY id", (key,)).fetchall()
        return [r[0] for r in rows]

    def near_simhash(self, fingerprint: int) -> list[tuple[int, int]]:
        with self._mutex:
            self._require_open()
            return self.tables.query(fingerprint)

    def nearest(self, signature: np.ndarray, ref_id: str, n: int, floor: float) -> list[tuple[int, float]]:
        """Up to ``n`` ``(id, cosine)``, best first, cosine >= ``floor``.

        With ``f16``/``f32`` vectors the similarities are the vector index's (error ~1e-4).
        With ``i8`` vectors, the index proposes ``OVERSAMPLE`` x ``n`` candidates, ranked
        (ties by id) and returned with their exact cosines, from the float32 signatures in SQLite.
        """
        q = np.asarray(signature, dtype=np.float32).reshape(-1)
        with self._mutex:
            self._require_open()
            if self.ref_id is None or n <= 0:
                return []
            self._check_ref(ref_id, q.size, "query signature")
            size = len(self._vectors)
            if size == 0 or not np.any(q):
                return []
            rerank = self.vector_dtype in RERANKED
            matches = self._vectors.search(q, min((OVERSAMPLE if rerank else 1) * int(n), size),
                                           exact=size < self.exact_below)
            keys = np.asarray(matches.keys, dtype=np.int64).reshape(-1)
            if rerank:  # the signature is the blob's first array: read only its bytes
                sql = f"SELECT id, substr(data, {_HEADER.size + 1}, {4 * q.size}) FROM records WHERE id IN ({{}})"
                found = list(self._select(sql, keys.tolist())) if keys.size else []
        if not rerank:
            sims = 1.0 - np.asarray(matches.distances, dtype=np.float64).reshape(-1)
            return [(int(i), float(s)) for i, s in zip(keys.tolist(), sims.tolist()) if s >= floor]
        if not found:
            return []
        ids = np.array([r[0] for r in found], dtype=np.int64)
        sigs = np.frombuffer(b"".join(r[1] for r in found), dtype=_LE_F32).reshape(len(found), q.size)
        sigs = sigs.astype(np.float64)
        q64 = q.astype(np.float64)
        norms = np.linalg.norm(sigs, axis=1) * np.linalg.norm(q64)
        sims = np.divide(sigs @ q64, norms, out=np.zeros(len(found)), where=norms > 0)
        order = np.lexsort((ids, -sims))[: int(n)]
        return [(int(ids[i]), float(sims[i])) for i in order.tolist() if sims[i] >= floor]

    def get(self, ids: Iterable[int]) -> list[Record]:
        """Records for ``ids`` in the order asked (unknown ids skipped, repeats repeated)."""
        wanted = [int(i) for i in ids]
        if not wanted:
            return []
        with self._mutex:
            self._require_open()
            found = {row[0]: row for row in
                     self._select(f"SELECT {_COLUMNS} FROM records WHERE id IN ({{}})", sorted(set(wanted)))}
        return [_record(found[i]) for i in wanted if i in found]

    def remove(self, record_id: int) -> bool:
        with self._mutex:
            db = self._require_open()
            row = db.execute("SELECT simhash FROM records WHERE id = ?", (int(record_id),)).fetchone()
            if row is None:
                return False
            with db:
                db.execute("DELETE FROM records WHERE id = ?", (int(record_id),))
            self.tables.remove(row[0] & MASK64, int(record_id))
            if self._vectors is not None:
                self._vectors.remove(int(record_id))
                self._unsaved += 1
            return True

    def flush(self) -> None:
        """Save the vector index (records are committed by every add already)."""
        with self._mutex:
            self._require_open()
            if self._unsaved:
                self._save_vectors()

    def close(self) -> None:
        with self._mutex:
            if self._db is None:
                return
            try:
                if self._unsaved:
                    self._save_vectors()
                try:
                    self._db.execute("PRAGMA optimize")
                except sqlite3.Error:
                    pass
            finally:
                self._close_files()

    def _close_files(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        self._vectors = None
        if self._lock_fd is not None:
            try:
                os.ftruncate(self._lock_fd, 0)
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            finally:
                os.close(self._lock_fd)
                self._lock_fd = None

    def _require_open(self) -> sqlite3.Connection:
        if self._db is None:
            raise ValueError(f"the local index {self.path} is closed")
        return self._db

    def __enter__(self) -> "LocalIndex":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._db is None else f"{len(self)} records"
        return f"LocalIndex({str(self.path)!r}, {state}, k={self.k}, blocks={self.blocks})"

    # -- helpers ---------------------------------------------------------------------------------
    def iter_records(self, batch: int = 1000) -> Iterator[Record]:
        """Every record, by id (fetched ``batch`` at a time; no cursor is held between)."""
        last = 0
        while True:
            with self._mutex:
                rows = self._require_open().execute(
                    f"SELECT {_COLUMNS} FROM records WHERE id > ? ORDER BY id LIMIT ?", (last, batch)).fetchall()
            if not rows:
                return
            for row in rows:
                yield _record(row)
            last = rows[-1][0]

    def get_by_url(self, url: str) -> Record | None:
        """The latest record stored for ``url``, or None."""
        with self._mutex:
            row = self._require_open().execute(
                f"SELECT {_COLUMNS} FROM records WHERE url = ? ORDER BY id DESC LIMIT 1", (url,)).fetchone()
        return _record(row) if row else None

    def check(self, sample: int | None = 1000, *, sqlite_integrity: bool = False) -> dict[str, Any]:
        """Compare the derived structures with SQLite; ``report["ok"]`` says whether all agree.

        Counts of records, table entries and vectors; the vector index's keys against the
        record ids (all of them); for ``sample`` random records (all when None), that the
        simhash tables return the record at distance 0 and that its stored vector has
        cosine >= 0.999 (0.995 for ``i8`` vectors) with its SQLite signature.
        ``sqlite_integrity`` adds SQLite's ``PRAGMA quick_check`` (reads the whole file).
        """
        with self._mutex:
            db = self._require_open()
            rows = db.execute("SELECT id, simhash FROM records ORDER BY id").fetchall()
            ids = np.array([r[0] for r in rows], dtype=np.int64)
            report: dict[str, Any] = {"records": len(rows), "tables": len(self.tables),
                                      "vectors": 0 if self._vectors is None else len(self._vectors)}
            ref_ids = [r[0] for r in db.execute("SELECT DISTINCT ref_id FROM records")]
            report["ref_ids"] = ref_ids
            problems = []
            if ref_ids and ref_ids != [self.ref_id]:
                problems.append(f"records made with reference texts {ref_ids}, index holds {self.ref_id!r}")
            if report["tables"] != report["records"]:
                problems.append("simhash table entries != records")
            if self._vectors is not None and len(self._vectors):
                keys = np.asarray(self._vectors.keys, dtype=np.int64)
            else:
                keys = np.zeros(0, dtype=np.int64)
            missing_vec = np.setdiff1d(ids, keys)
            extra_vec = np.setdiff1d(keys, ids)
            report["missing_from_vectors"] = missing_vec[:20].tolist()
            report["extra_in_vectors"] = extra_vec[:20].tolist()
            if missing_vec.size or extra_vec.size:
                problems.append(f"vector index: {missing_vec.size} ids missing, {extra_vec.size} stale")
            pick = np.arange(len(rows))
            if sample is not None and len(rows) > sample:
                pick = np.sort(np.random.default_rng().choice(len(rows), size=sample, replace=False))
            missing_tab, bad_vec = [], []
            for i in pick.tolist():
                rid, fp = rows[i][0], rows[i][1] & MASK64
                if (rid, 0) not in self.tables.query(fp):
                    missing_tab.append(rid)
            report["sampled"] = len(pick)
            report["missing_from_tables"] = missing_tab[:20]
            if missing_tab:
                problems.append(f"{len(missing_tab)} sampled records not found in the simhash tables")
            if self._vectors is not None and len(pick):
                absent = set(missing_vec.tolist())
                sample_ids = [rows[i][0] for i in pick.tolist() if rows[i][0] not in absent]
                for rid, blob in self._select("SELECT id, data FROM records WHERE id IN ({})", sample_ids):
                    stored = self._vectors.get(rid)
                    want = _signature_of_blob(blob).astype(np.float64)
                    got = np.asarray(stored, dtype=np.float64).reshape(-1) if stored is not None else None
                    if got is None or got.size != want.size:
                        bad_vec.append(rid)
                        continue
                    nw, ng = np.linalg.norm(want), np.linalg.norm(got)
                    least = _STORED_COSINE[self.vector_dtype]
                    if (nw == 0) != (ng == 0) or (nw and float(want @ got) / (nw * ng) < least):
                        bad_vec.append(rid)
            report["bad_vectors"] = bad_vec[:20]
            if bad_vec:
                problems.append(f"{len(bad_vec)} sampled vectors differ from their SQLite signatures")
            if sqlite_integrity:
                result = [r[0] for r in db.execute("PRAGMA quick_check")]
                report["sqlite"] = result
                if result != ["ok"]:
                    problems.append("SQLite quick_check failed")
            report["problems"] = problems
            report["ok"] = not problems
            return report


def _record(row: tuple) -> Record:
    rid, url, content_hash, title_key, simhash, status, duplicate_of, fetched_at, ref_id, sentences, title, data = row
    arrays = decode_blob(data)
    return Record(
        id=rid, url=url, content_hash=content_hash, title_key=title_key, simhash=simhash & MASK64,
        status=status, duplicate_of=duplicate_of, fetched_at=fetched_at, ref_id=ref_id,
        sentences=sentences, title=title, **arrays,
    )
