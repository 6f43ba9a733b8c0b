"""``local://PATH``: the embedded dedup index, a directory on one machine.

Files in ``PATH`` (created when missing):

``dedup.sqlite``       the source of truth: one row per kept page (table ``records``) and
                       a ``meta`` table (schema version, table parameters, reference text).
``signatures.usearch`` a saved copy of the vector index over the MRC signatures; derived,
                       may be deleted at any time (it is rebuilt from SQLite).
``signatures.stats.npz`` with ``i8`` vectors only: per record id, two float32 numbers and
                       the fine codes that recover cosines from the centred vectors (see
                       "Memory"); derived too, saved with the vector file.
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
  from one ``SELECT id, simhash`` (a covering-index scan) and ``add_many``; k = 3 and 5
  blocks (10 tables) for a new index, the ``k``/``blocks`` kept in ``meta`` for an existing
  one (indexes made before this default have 6 blocks, 20 tables, until opened with ``blocks=5``);
* a usearch HNSW index over the signatures, keyed by record id (cosine metric; ``f16``
  scalars and connectivity 16 by default, see "Memory" below).  It is saved to
  ``signatures.usearch`` on :meth:`~LocalIndex.flush`/:meth:`~LocalIndex.close` (and
  automatically every ``autosave`` adds, at least 10% of the index size, so saving stays
  amortised O(1) per add) together with the record count and largest id it covers.  Ids are
  never reused (``AUTOINCREMENT``) and a record is never changed in place, so a (count, max
  id) pair equal to SQLite's means the file is current; otherwise the file is reconciled with
  SQLite (stale keys removed, missing signatures added from SQLite, in batches), and rebuilt
  from scratch when it is missing, unreadable, or of another dimension, scalar type or
  connectivity (or, for ``i8``, made before the index's centre was fixed).

:meth:`~LocalIndex.nearest` searches exactly (brute force, ``exact=True``) while the index
holds fewer than ``exact_below`` (20,000) signatures: under a millisecond there, and no
HNSW misses (HNSW's recall@20 with usearch's default expansion was 0.93 at 5k and 0.78 at
20k random 150-d vectors).  Above it, HNSW with ``expansion_search`` 128 candidates (256
for ``i8``).  Similarities are ``1 - cosine distance`` of the f16 vectors (error ~3e-5); the
floor applies to them.  ``i8`` vectors are centred, see below; nothing in ``nearest()``
reads SQLite.

Memory (RSS growth over opening an index of 1M synthetic records of featurizer size, measured
by ``benchmarks/bench_memory.py``; 2-core VM shared with other benchmarks, usearch 2.26):

* permutation tables: 8 bytes per entry and table, the 8-byte simhash and doc id, the bucket
  directory: 100 bytes per document with the 10 tables of k = 3 / 5 blocks (a new index's
  default; 184 with 6 blocks / 20 tables, 49 with 4 blocks / 4 tables).  Fewer tables only
  mean more candidates to check, never a miss: ``benchmarks/bench_tables.py --blocks 5`` at
  10M fingerprints gives query p99 118-132 us and 396-440x numpy brute force in two runs
  (6 blocks: 134-146 us, 191-409x; 4 blocks: 182-196 us in three runs, 261-279x, too close
  to the 200 us target);
* the vector index: 150 signature scalars, the HNSW graph (2 x connectivity 4-byte
  neighbour slots on the base level, fewer above), the key and usearch's key-lookup map;
  with ``i8``, 46 bytes more per document (below);
* SQLite's page cache (2 MiB) and nothing per record: records stay on disk (8.2 KB each).

=================================  =====  ==============  ===========  =========  =========
vectors                            B/doc  of which        near-copy    recall@20  nearest()
                                          vectors; graph  found in 20  vs exact   p50
                                          and keys
=================================  =====  ==============  ===========  =========  =========
f16, 16 (default)                  655    300; 253        1.00         0.997      0.7 ms
i8 centred + fine codes, 14, 256   486    196; 187        1.00         0.984      1.3 ms
=================================  =====  ==============  ===========  =========  =========

(10 tables in both; 100 queries, each a stored signature perturbed to cosine ~0.9987, as a
near-copy's is; "exact" is the float32 cosine over all 1M stored signatures.)  The f16
default does not reach 512 bytes: 300 bytes of vectors and ~250 of graph and keys leave no
room for the tables, and f16 with connectivity 8 or 12 still holds ~490 bytes in usearch
alone (measured at 200k).  ``vector_dtype="i8"`` does:

* MRC signatures are all positive and alike (unrelated pages have cosines ~0.95), and
  usearch's i8 (each vector scaled to unit length x 127, truncated) spends its resolution on
  what they all share: raw i8 vectors have a cosine error of ~3e-3, more than the gap between
  a near-copy (0.9987) and its neighbours (the former raw ``i8``/8 option found 93% of
  near-copies at 1M).  So an ``i8`` index stores y = s/|s| - m, m the mean unit signature of
  its first 1,000 records (fixed in ``meta`` once; until then m = 0), and searches the
  centred query z = q/|q| - m by cosine;
* the true cosine of a candidate is ``|z| |y| cos(z, y) + m.z + m.y + |m|^2``: ``m.y`` and
  ``|y|`` are kept per record (float32, 8 bytes), and cos(z, y) is recomputed from the float
  query and the stored vector completed by its *fine codes*, 2 more bits per dimension of
  what usearch's truncation dropped (38 bytes; ``signatures.stats.npz`` holds both arrays):
  error ~1e-4;
* centred cosines rank differently from true ones, so it asks for ``OVERSAMPLE`` (8) x n
  candidates (16 x n in an exact search) and returns the best n by true cosine.

Measured at 1M: 4 x n candidates gave recall@20 0.969 (1.1 ms), 16 x n 0.985 (1.7 ms);
expansion_search 384 instead of 256 changed nothing; without fine codes (and 4 x n) 0.938,
and with expansion_search 128 2% of near-copies were missed. At 3k records (exact search)
recall@20 is 0.986. Connectivity 14, not 16: a node then fits usearch's smaller allocation
(344 against 407 bytes per document at 200k). With 4 blocks (49 bytes of tables) ``i8`` held
396 bytes per document before the fine codes (38 more). On goldset-dev, with the
deduplicator on a LocalIndex instead of the in-memory index, F1 is 0.9737 with f16 and with
centred i8, exact or HNSW search (800 records: a small test of the kNN path). Reading the
tables' pairs straight into numpy (not a list of row tuples) saves ~20 bytes per document of
fragmented heap left over from opening (measured at 100k); rebuilding the vector file reads
signatures in batches of 50,000, and starts a new usearch index when a quarter or more of
its vectors would be removed (usearch only marks removed nodes; re-adding 1M vectors over 1M
tombstones found 88% of near-copies).

Measured (2-core VM, 100k synthetic records of featurizer size, ~6 KB each): ``add``
2,800 records/s, of which the SQLite insert + commit is ~110 us and the HNSW insert
~300 us; reopen 0.3 s (tables from the covering index 0.19 s, vector file 0.05 s); reopen
after a crash that left the vector file 10k adds behind 4 s; full rebuild of the vector
index 32 s.  At 1M: reopen 1.6-3.2 s, full rebuild of the vector index 7 min (f16/16) or
3-6 min (i8/14).

Single writer: a second :class:`LocalIndex` on the same directory (another process, or the
same one) raises :class:`IndexLocked`; concurrent crawls should share an Elasticsearch
index instead.  One instance may be used from several threads (calls are serialised).
"""
from __future__ import annotations

import errno
import fcntl
import hashlib
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
#: vector scalars too coarse for the raw signatures: the index holds them centred (the unit
#: signature minus a fixed mean, see "Memory"); nearest() asks it for OVERSAMPLE x n candidates
#: and ranks them by their true cosines, recovered with two numbers and fine codes a record
CENTRED = ("i8",)
OVERSAMPLE = 8  # (twice that in an exact search: cheap there, and small indexes need it most)
#: connectivity and expansion_search by vector scalar type (i8: 14 keeps a node within usearch's
#: smaller allocation size, ~60 bytes a document less than 16; 256 finds every near-copy at 1M)
_DEFAULTS = {"f32": (16, 128), "f16": (16, 128), "i8": (14, 256)}
CENTRE_SAMPLE = 1000  # the centre: mean unit signature of the first this many records
DEFAULT_K, DEFAULT_BLOCKS = 3, 5  # a new index's simhash tables: C(5, 3) = 10 tables
STATS_NAME = "signatures.stats.npz"  # per record id: m . y, |y| and the fine codes of its centred y
FINE_BITS = 2  # i8 vectors: bits per dimension of the part of y's code that usearch's i8 drops
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


def _save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    with open(path, "wb") as f:  # a file object: np.savez would append ".npz" to a name
        np.savez(f, **arrays)


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
    was last opened with (3 and 5, 10 tables, for a new one).  Other values work too: the
    tables are rebuilt from SQLite on every open anyway.
    ``synchronous``: SQLite's ``NORMAL`` (default; survives process crashes) or ``FULL``
    (also OS crashes).  ``exact_below``: brute-force kNN below this many signatures.
    ``autosave``: save the vector index after this many adds since the last save (and at
    least 10% of its size); ``0`` saves only on flush/close.
    ``vector_dtype`` / ``connectivity`` / ``expansion_search``: scalars, graph degree and
    search breadth of the HNSW index over the signatures (default ``"f16"``, 16 and 128;
    ``"i8"``: centred vectors, 14 and 256, ~170 fewer bytes per document, every near-copy
    still found but the tail of the top 20 a little less exact and nearest() ~0.6 ms
    slower at 1M: see "Memory" in the module docstring).  A saved vector file made with
    other values is rebuilt from SQLite on open.
    """

    def __init__(self, path: str | os.PathLike, *, k: int | None = None, blocks: int | None = None,
                 synchronous: str = "NORMAL", exact_below: int = 20_000, expansion_search: int | None = None,
                 autosave: int = 10_000, vector_dtype: str = "f16", connectivity: int | None = None) -> None:
        if synchronous.upper() not in ("NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"synchronous must be NORMAL, FULL or EXTRA (got {synchronous!r})")
        if vector_dtype not in VECTOR_DTYPES:
            raise ValueError(f"vector_dtype must be one of {', '.join(VECTOR_DTYPES)} (got {vector_dtype!r})")
        # defaults by scalar type: the measured settings of "Memory" in the module docstring
        connectivity = _DEFAULTS[vector_dtype][0] if connectivity is None else connectivity
        expansion_search = _DEFAULTS[vector_dtype][1] if expansion_search is None else expansion_search
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
        self.k = int(meta.get("k", DEFAULT_K)) if k is None else int(k)
        self.blocks = int(meta.get("blocks", DEFAULT_BLOCKS)) if blocks is None else int(blocks)
        self.ref_id: str | None = meta.get("ref_id")
        self.dim: int | None = int(meta["dim"]) if "dim" in meta else None
        # centred vectors: m (float64, zeros until CENTRE_SAMPLE records exist) and its name
        self._centre = np.zeros(self.dim or 0)
        self._centre_id = "none"
        if "vector_centre" in meta:
            self._centre = np.frombuffer(bytes.fromhex(meta["vector_centre"]), dtype="<f8").copy()
            self._centre_id = hashlib.sha1(meta["vector_centre"].encode("ascii")).hexdigest()[:16]
        self._reset_stats(0)
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

    @property
    def _centred(self) -> bool:
        return self.vector_dtype in CENTRED

    def _make_centre(self) -> None:
        """Fix the centre of the vectors: the mean unit signature of the first CENTRE_SAMPLE records."""
        rows = self._db.execute("SELECT data FROM records ORDER BY id LIMIT ?", (CENTRE_SAMPLE,))
        sigs = np.array([_signature_of_blob(r[0]) for r in rows], dtype=np.float64)
        norms = np.linalg.norm(sigs, axis=1, keepdims=True)
        centre = np.divide(sigs, norms, out=np.zeros_like(sigs), where=norms > 0).mean(axis=0)
        text = centre.astype("<f8").tobytes().hex()
        with self._db:
            self._set_meta(vector_centre=text)
        self._centre = centre
        self._centre_id = hashlib.sha1(text.encode("ascii")).hexdigest()[:16]

    def _centre_rows(self, sigs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Centred unit signatures y = s / |s| - m of the rows of ``sigs`` (float32, for the
        index) and their [m . y, |y|] (2, rows)."""
        sigs = np.asarray(sigs, dtype=np.float64).reshape(-1, self.dim)
        norms = np.linalg.norm(sigs, axis=1, keepdims=True)
        y = np.divide(sigs, norms, out=np.zeros_like(sigs), where=norms > 0) - self._centre
        return y.astype(np.float32), np.stack([y @ self._centre, np.linalg.norm(y, axis=1)])

    def _fine_width(self) -> int:
        return -(-(self.dim or 0) * FINE_BITS // 8)

    def _reset_stats(self, size: int) -> None:
        """Empty per-id arrays for ids < ``size``: ``_stats`` [m . y, |y|] (NaN: unknown) and
        ``_fine``, FINE_BITS per dimension packed into bytes (see ``_fine_codes``)."""
        self._stats = np.full((2, size), np.nan, dtype=np.float32)
        self._fine = np.zeros((size, self._fine_width()), dtype=np.uint8)

    def _set_stats(self, ids: np.ndarray, stats: np.ndarray, fine: np.ndarray) -> None:
        top, have = int(ids.max()) + 1, self._stats.shape[1]
        if top > have:  # grown by a quarter: amortised O(1) per add
            stats_, fine_ = self._stats, self._fine
            self._reset_stats(max(top, have * 5 // 4))
            self._stats[:, :have], self._fine[:have] = stats_, fine_
        self._stats[:, ids] = stats
        self._fine[ids] = fine

    def _fine_codes(self, keys: np.ndarray, y: np.ndarray) -> np.ndarray:
        """What usearch's i8 code of each row of ``y`` lacks: usearch keeps trunc(127 y/|y|),
        the rest r is in (-1, 1); FINE_BITS of it per dimension, packed (4 to a byte for 2 bits)."""
        stored = np.asarray(self._vectors.get(keys), dtype=np.float64).reshape(len(keys), -1)
        y = np.asarray(y, dtype=np.float64)
        norms = np.linalg.norm(y, axis=1, keepdims=True)
        rest = np.divide(127 * y, norms, out=np.zeros_like(y), where=norms > 0) - stored
        levels = 1 << FINE_BITS
        codes = np.clip(np.floor((rest + 1) * (levels / 2)), 0, levels - 1).astype(np.uint8)
        per_byte = 8 // FINE_BITS
        codes = np.pad(codes, ((0, 0), (0, -codes.shape[1] % per_byte)))
        packed = np.zeros((len(keys), codes.shape[1] // per_byte), dtype=np.uint8)
        for j in range(per_byte):
            packed |= codes[:, j::per_byte] << np.uint8(j * FINE_BITS)
        return packed

    def _fine_vectors(self, ids: np.ndarray) -> np.ndarray:
        """The stored i8 vectors of ``ids`` with their fine codes added back (x 127, float64)."""
        stored = np.asarray(self._vectors.get(ids.astype(np.uint64)), dtype=np.float64).reshape(len(ids), -1)
        packed, per_byte, levels = self._fine[ids], 8 // FINE_BITS, 1 << FINE_BITS
        codes = np.empty((len(ids), packed.shape[1] * per_byte), dtype=np.uint8)
        for j in range(per_byte):
            codes[:, j::per_byte] = (packed >> np.uint8(j * FINE_BITS)) & np.uint8(levels - 1)
        return stored + (codes[:, :stored.shape[1]] + 0.5) * (2 / levels) - 1

    def _load_stats(self, max_id: int) -> None:
        """The saved stats and fine codes (ids the file does not cover stay NaN: their vectors
        are added again)."""
        self._reset_stats(max_id + 1)
        try:
            with np.load(self.path / STATS_NAME) as saved:
                stats, fine = saved["stats"], saved["fine"]
        except (OSError, ValueError, KeyError) as exc:
            log.warning("cannot read %s (%s): re-adding the vectors it covered", self.path / STATS_NAME, exc)
            return
        if (stats.ndim == 2 and stats.shape[0] == 2 and stats.dtype == np.float32 and fine.dtype == np.uint8
                and fine.shape == (stats.shape[1], self._fine_width())):
            n = min(stats.shape[1], max_id + 1)
            self._stats[:, :n], self._fine[:n] = stats[:, :n], fine[:n]

    def _load_vectors(self) -> None:
        if self.ref_id is None:
            return
        file = self.path / VECTORS_NAME
        count, max_id = self._db.execute("SELECT count(*), coalesce(max(id), 0) FROM records").fetchone()
        if self._centred and self._centre_id == "none" and count >= CENTRE_SAMPLE:
            self._make_centre()
        meta = self._meta()
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
            if vectors is not None and self._centred and meta.get("vectors_centre") != self._centre_id:
                log.warning("%s was not made with this index's centre: rebuilding it", file)
                vectors = None
        if vectors is not None:
            vectors.expansion_search = self.expansion_search
            current = (meta.get("vectors_count") == str(count) and meta.get("vectors_max_id") == str(max_id)
                       and len(vectors) == count)
            if self._centred:
                self._load_stats(max_id)
                current = current and not np.isnan(self._stats[1, max_id])
            self._vectors = vectors
            if current:
                return
            log.info("%s does not match %s: reconciling", file, DB_NAME)
        else:
            self._vectors = self._new_vectors()
            self._reset_stats(max_id + 1)
        self._reconcile_vectors()
        self._save_vectors()

    def _reconcile_vectors(self) -> None:
        """Make the vector index hold exactly SQLite's ids (signatures never change)."""
        ids = np.fromiter((r[0] for r in self._db.execute("SELECT id FROM records")), dtype=np.int64)
        keys = np.asarray(self._vectors.keys, dtype=np.int64) if len(self._vectors) else np.zeros(0, np.int64)
        stale = np.setdiff1d(keys, ids, assume_unique=True)
        if self._centred and keys.size:  # vectors whose [m . y, |y|] were not saved: added again
            known = keys[keys < self._stats.shape[1]]
            unknown = np.concatenate([keys[keys >= self._stats.shape[1]], known[np.isnan(self._stats[1, known])]])
            stale = np.union1d(stale, unknown)
            keys = np.setdiff1d(keys, unknown, assume_unique=True)
        if stale.size and stale.size * 4 >= len(self._vectors):
            # usearch only marks removed nodes: a graph of many tombstones searches badly
            # (re-adding all 1M vectors of a file over them found 88% of near-copies), so start afresh
            self._vectors = self._new_vectors()
            keys, stale = np.zeros(0, np.int64), np.zeros(0, np.int64)
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
                    self._add_vectors(keys, matrix)
                    added, j = added + j, 0
            if j:
                self._add_vectors(keys[:j], matrix[:j])
                added += j
            log.info("added %d signatures to the vector index in %.1f s", added, time.perf_counter() - t)
        if stale.size or missing.size:
            self._unsaved += int(stale.size + missing.size)

    def _add_vectors(self, keys: np.ndarray, sigs: np.ndarray) -> None:
        """Add signatures (float32 rows) under ``keys``: as they are, or centred with their stats."""
        if not self._centred:
            self._vectors.add(keys, sigs)  # usearch copies the vectors in
            return
        y, stats = self._centre_rows(sigs)
        self._vectors.add(keys, y)
        self._set_stats(keys.astype(np.int64), stats, self._fine_codes(keys, y))

    def _select(self, sql: str, ids: list[int]) -> Iterator[tuple]:
        for i in range(0, len(ids), _SQL_VARS):
            part = ids[i:i + _SQL_VARS]
            yield from self._db.execute(sql.format(",".join("?" * len(part))), part)

    def _save_vectors(self) -> None:
        """Write the vector index (atomically) and record the SQLite state it covers."""
        if self._vectors is None:
            return
        count, max_id = self._db.execute("SELECT count(*), coalesce(max(id), 0) FROM records").fetchone()
        if self._centred:  # before the vectors: a newer stats file is harmless, an older one is not
            arrays = {"stats": self._stats[:, :max_id + 1], "fine": self._fine[:max_id + 1]}
            self._write_atomically(self.path / STATS_NAME, lambda tmp: _save_npz(tmp, arrays))
        self._write_atomically(self.path / VECTORS_NAME, lambda tmp: self._vectors.save(str(tmp)))
        with self._db:
            self._set_meta(vectors_count=count, vectors_max_id=max_id)
            if self._centred:
                self._set_meta(vectors_centre=self._centre_id)
        self._unsaved = 0

    @staticmethod
    def _write_atomically(file: Path, write) -> None:
        """``write(tmp)`` a temporary file, fsync it and rename it to ``file``."""
        tmp = file.with_name(file.name + ".tmp")
        write(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, file)

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
                self._centre = np.zeros(self.dim)
                self._reset_stats(0)  # the fine codes' width depends on the dimension
                self._vectors = self._new_vectors()
            self.tables.add(int(record.simhash) & MASK64, record.id)
            self._add_vectors(np.array([record.id], dtype=np.uint64), sig.reshape(1, -1))
            self._unsaved += 1
            if self._centred and self._centre_id == "none" and len(self._vectors) >= CENTRE_SAMPLE:
                self._make_centre()  # once in an index's life: re-add the vectors centred
                self._vectors = self._new_vectors()
                self._reset_stats(record.id + 1)
                self._reconcile_vectors()
                self._save_vectors()
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

        With ``f16``/``f32`` vectors the similarities are the vector index's (error ~3e-5).
        With ``i8`` vectors (centred), the index proposes ``OVERSAMPLE`` x ``n`` candidates
        by the cosine of the centred signatures; their cosines are recovered (error ~1e-4,
        see "Memory") and the best ``n`` returned (ties by id).  No SQLite reads.
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
            if not self._centred:
                matches = self._vectors.search(q, min(int(n), size), exact=size < self.exact_below)
                keys = np.asarray(matches.keys, dtype=np.int64).reshape(-1)
                sims = 1.0 - np.asarray(matches.distances, dtype=np.float64).reshape(-1)
                return [(int(i), float(s)) for i, s in zip(keys.tolist(), sims.tolist()) if s >= floor]
            # q.x for unit q, x and x = m + y: |z| |y| cos(z, y) + m . z + m . y + |m|^2, z = q - m
            m = self._centre
            z = q.astype(np.float64) / np.linalg.norm(q.astype(np.float64)) - m
            z_norm = float(np.linalg.norm(z))
            exact = size < self.exact_below
            matches = self._vectors.search((z if z_norm > 1e-9 else z + m).astype(np.float32),
                                           min(OVERSAMPLE * (2 if exact else 1) * int(n), size), exact=exact)
            ids = np.asarray(matches.keys, dtype=np.int64).reshape(-1)
            if not ids.size:
                return []
            # cos(z, y) again: the float query (the index quantised it too) and the stored
            # vectors with their fine codes (10 bits a dimension: error ~1e-4 against ~3e-3 raw)
            stored = self._fine_vectors(ids)
            norms = np.linalg.norm(stored, axis=1) * max(z_norm, 1e-12)
            cos_zy = np.divide(stored @ z, norms, out=np.zeros(ids.size), where=norms > 0)
            m_y, y_norm = self._stats[:, ids].astype(np.float64)
        sims = np.clip(z_norm * y_norm * cos_zy + float(m @ z) + m_y + float(m @ m), -1.0, 1.0)
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
                    if self._centred:  # what the index holds: the centred unit signature
                        want, stats = self._centre_rows(want)
                        want = want.reshape(-1).astype(np.float64)
                        have = self._stats[:, rid] if rid < self._stats.shape[1] else np.full(2, np.nan)
                        if not np.allclose(have, stats[:, 0], rtol=1e-4, atol=1e-6):
                            bad_vec.append(rid)
                            continue
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
