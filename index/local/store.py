"""``local://PATH``: the embedded dedup index, a directory on one machine.

Files in ``PATH`` (created when missing): ``dedup.sqlite``, the source of truth (table
``records``, one row per kept page, :mod:`index.local.records`; table ``contained``, each record's
smallest sketch keys, :mod:`index.local.containment`; table ``meta``: schema version,
table parameters, reference text); ``signatures.usearch`` (and ``signatures.stats.npz``), the
vector index over the signatures, derived and rebuilt from SQLite when missing or stale
(:mod:`index.local.vectors`); ``lock``, the single-writer lock (:mod:`index.local.lock`).  The
simhash permutation tables are rebuilt in memory on every open from one covering-index scan.

Durability: SQLite in WAL mode, ``synchronous=NORMAL``, and every :meth:`~LocalIndex.add` and
:meth:`~LocalIndex.remove` its own committed transaction: killing the process loses no record
``add`` reported as stored; an OS crash or power cut can lose the last few (``synchronous="FULL"``
waits for the disk instead).  One writer: a second :class:`LocalIndex` on the same directory
raises :class:`IndexLocked`; one instance may be used from several threads (calls are
serialised).  Measurements and the reasons behind the defaults: ``docs/performance.md``.
"""
from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np

from dedup.bits import MASK64
from dedup.permtables import PermutationTables
from dedup.record import Record
from dedup.store import EXACT_KEYS, KeyTaken, check_reference, claims_content, contained_keys

from . import containment, lock
from .cache import DEFAULT_SIZE as _CACHE_SIZE, RecordCache
from .records import COLUMNS as _COLUMNS, DB_NAME, encode_blob, key_value, record_of_row, signature_of_blob, to_signed, \
    url_key
from .vectors import CENTRED, DEFAULT_VECTOR_DTYPE, DEFAULTS as _DEFAULTS, STORED_COSINE as _STORED_COSINE, \
    VECTOR_DTYPES, SignatureVectors, interruptible, search_centred, search_width

__all__ = ["LocalIndex", "SCHEMA_VERSION", "DEFAULT_K", "DEFAULT_BLOCKS"]

log = logging.getLogger("index.local")

#: 2: records are compact (blob DR2); version-1 indexes open and their DR1 records are read too.
#: 3: records carry their shingle keys' positions (blob DR3); DR2 and DR1 records are read (no positions)
#: 4: blob DR4 (keys Elias-Fano coded); a new index's rows hold the exact keys as bytes and no ref_id
#: (docs/performance.md#bytes-per-record); an index made before keeps its columns, and DR1-DR3 records are read
#: 5: a new index's URL is found by ``url_key`` (an integer hash of it, see _URL_INDEX), not by an index of its text
SCHEMA_VERSION = 5
_SQL_VARS = 500  # ids per "IN (...)" statement
PAGE_SIZE = 8192  # SQLite page size of a new index file
DEFAULT_K, DEFAULT_BLOCKS = 3, 5  # a new index's simhash tables: C(5, 3) = 10 tables

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    url TEXT NOT NULL,
    url_key INTEGER NOT NULL,
    content_hash BLOB NOT NULL,
    title_key BLOB NOT NULL,
    simhash INTEGER NOT NULL,
    status TEXT NOT NULL,
    duplicate_of TEXT,
    fetched_at REAL NOT NULL,
    ref_id TEXT,
    sentences INTEGER NOT NULL,
    title TEXT NOT NULL,
    data BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS records_content_hash ON records(content_hash);
CREATE INDEX IF NOT EXISTS records_title_key ON records(title_key);
CREATE INDEX IF NOT EXISTS records_simhash ON records(simhash);
"""
# records_simhash is not for lookups: it makes "SELECT id, simhash" (rebuilding the tables
# on open) a scan of a compact covering index instead of every row's page and blob.
# The URL's index (by_url): schema 5 indexes url_key, the first 8 bytes of the URL's xxh3-64 as an
# INTEGER (9 bytes in the row, ~20 an index entry, where an index of the URL's text took ~2 bytes a
# character: ~95 for a crawl's 79-character URLs); by_url compares the URL too, so a collision is only
# one more row read. An index made before has no url_key column and keeps its index of the text.
_URL_INDEX = {True: "CREATE INDEX IF NOT EXISTS records_url_key ON records(url_key)",
              False: "CREATE INDEX IF NOT EXISTS records_url ON records(url)"}
# Schema 4 (a new index): content_hash and title_key hold the featurizer's hex keys as their bytes
# (records.key_value: 16 and 8 instead of 32 and 16, in the row and in its index) and ref_id is NULL,
# the index's own being in meta (a row once held 25 bytes of it). An index made before keeps its
# text columns (``_keys_binary`` False) and gets rows as it always did, with DR4 blobs.


class LocalIndex(SignatureVectors):
    """A :class:`~dedup.store.DedupIndex` in a local directory (see the module docstring).

    ``k``/``blocks``: the simhash tables' parameters; ``None`` takes the values the index
    was last opened with (3 and 5, 10 tables, for a new one).  Other values work too: the
    tables are rebuilt from SQLite on every open anyway.
    ``synchronous``: SQLite's ``NORMAL`` (default; survives process crashes) or ``FULL``
    (also OS crashes).  ``exact_below``: brute-force kNN below this many signatures.
    ``autosave``: save the vector index after this many adds since the last save (and at
    least 10% of its size); ``0`` saves only on flush/close.
    ``vector_dtype`` / ``connectivity`` / ``expansion_search``: scalars, graph degree and
    search breadth of the HNSW index over the signatures; ``vector_dtype=None`` (default) takes
    the index's own, the one it was last opened with (kept in ``meta``); ``"i8"`` (centred
    vectors, 14 and 192) for a new index, within 512 bytes of RAM a record; ``"f16"`` (16 and
    128) for one made before the index kept it, ~170 bytes a record more: see
    docs/performance.md.  A saved vector file made with other values is rebuilt from SQLite on open.
    The default search breadth widens with the index from 5M vectors (``vectors.search_width``:
    768 from 10M, where 192 missed a near-copy's original 11% of the time); one given stays.
    ``record_cache``: decoded records kept for the next :meth:`get` (:mod:`index.local.cache`;
    ~3.3 KB each, 4,096 by default: ~14 MB at most; ``0`` keeps none).
    """

    def __init__(self, path: str | os.PathLike, *, k: int | None = None, blocks: int | None = None,
                 synchronous: str = "NORMAL", exact_below: int = 20_000, expansion_search: int | None = None,
                 autosave: int = 10_000, vector_dtype: str | None = None, connectivity: int | None = None,
                 record_cache: int = _CACHE_SIZE) -> None:
        if synchronous.upper() not in ("NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"synchronous must be NORMAL, FULL or EXTRA (got {synchronous!r})")
        if vector_dtype is not None and vector_dtype not in VECTOR_DTYPES:
            raise ValueError(f"vector_dtype must be one of {', '.join(VECTOR_DTYPES)} (got {vector_dtype!r})")
        if connectivity is not None and not 2 <= int(connectivity) <= 64:
            raise ValueError(f"connectivity must be between 2 and 64 (got {connectivity!r})")
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.exact_below = int(exact_below)
        self.autosave = int(autosave)
        self._mutex = threading.RLock()
        self._cache = RecordCache(record_cache)
        self._db: sqlite3.Connection | None = None
        self._lock_fd: int | None = None
        self._vectors = None  # usearch Index, created with the first signature
        self._unsaved = 0  # vector-index changes since it was last saved
        self._lock_fd = lock.acquire(self.path)
        try:
            self._open_db(synchronous.upper())
            self._init_meta(k, blocks)
            self._init_vector_options(vector_dtype, connectivity, expansion_search)
            self._load_tables()
            self._load_contained()
            self._load_vectors()
        except BaseException:
            self._close_files()
            raise

    # -- opening -------------------------------------------------------------------------------
    def _open_db(self, synchronous: str) -> None:
        db = sqlite3.connect(self.path / DB_NAME, check_same_thread=False)
        self._db = db
        # a new file only (an existing one keeps its own): rows of ~1.1 KB left a quarter of each
        # 4 KB page unused (3 fit), ~8% of an 8 KB one (docs/choices.md)
        db.execute(f"PRAGMA page_size={PAGE_SIZE}")
        mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise RuntimeError(f"could not put {self.path / DB_NAME} in WAL mode (got {mode!r})")
        db.execute(f"PRAGMA synchronous={synchronous}")
        db.execute("PRAGMA busy_timeout=5000")
        with db:
            db.executescript(_SCHEMA)
            db.executescript(containment.SCHEMA)
        columns = dict(db.execute("SELECT name, type FROM pragma_table_info('records')").fetchall())
        self._keys_binary = columns["content_hash"].upper() == "BLOB"  # schema 4's row (see _SCHEMA)
        self._url_key = "url_key" in columns  # schema 5's
        with db:
            db.execute(_URL_INDEX[self._url_key])
        self._insert = ("INSERT INTO records(url, " + "url_key, " * self._url_key + "content_hash, title_key, simhash, "
                        "status, duplicate_of, fetched_at, ref_id, sentences, title, data) VALUES "
                        f"({'?,' * (11 + self._url_key)}"[:-1] + ")")

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

    def _init_vector_options(self, vector_dtype: str | None, connectivity: int | None,
                             expansion_search: int | None) -> None:
        """The vector index's scalars (see the class docstring), kept in meta; connectivity and
        expansion_search by scalar type unless given: the measured settings (docs/performance.md)."""
        if vector_dtype is None:
            kept = self._meta().get("vector_dtype")
            if kept in VECTOR_DTYPES:
                vector_dtype = kept
            else:  # an index made before it kept its type held f16 vectors
                made = self._db.execute("SELECT 1 FROM records LIMIT 1").fetchone() is not None
                vector_dtype = "f16" if made else DEFAULT_VECTOR_DTYPE
        self.vector_dtype = vector_dtype
        self.connectivity = int(_DEFAULTS[vector_dtype][0] if connectivity is None else connectivity)
        self.expansion_search = int(_DEFAULTS[vector_dtype][1] if expansion_search is None else expansion_search)
        self._widen = expansion_search is None  # the default widens with the index (vectors.search_width)
        with self._db:
            self._set_meta(vector_dtype=vector_dtype)

    def _load_tables(self) -> None:
        self.tables = PermutationTables(k=self.k, blocks=self.blocks)
        # straight into a numpy array: a list of row tuples first leaves ~20 bytes a record
        # of fragmented Python heap behind it
        pairs = np.fromiter(self._db.execute("SELECT id, simhash FROM records"),
                            dtype=np.dtype([("id", "<i8"), ("simhash", "<i8")]))
        if pairs.size:
            self.tables.add_many(pairs["simhash"].view(np.uint64), pairs["id"])

    def _load_contained(self) -> None:
        """Fill the containment table from the records when this file's lacks them (made before it, or
        with another number of keys a record): once, in one transaction."""
        if self._meta().get(containment.META_KEY) == containment.wanted():
            return
        with self._db:
            rows = self._db.execute("SELECT id, data FROM records ORDER BY id")
            n = containment.refill(self._db, ((rid, containment.keys_of_blob(blob)) for rid, blob in rows))
            self._set_meta(**{containment.META_KEY: containment.wanted()})
        if n:
            log.info("%s: containment keys of %d records posted", self.path, n)

    def _select(self, sql: str, ids: list[int]) -> Iterator[tuple]:
        for i in range(0, len(ids), _SQL_VARS):
            part = ids[i:i + _SQL_VARS]
            yield from self._db.execute(sql.format(",".join("?" * len(part))), part)


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
                self._claim(db, record, None)
                cur = db.execute(self._insert, self._row(record, blob))
                containment.post(db, cur.lastrowid, contained_keys(record))
                if first:
                    self._set_meta(ref_id=record.ref_id, dim=sig.size)
            record.id = cur.lastrowid
            if first:
                self.ref_id, self.dim = record.ref_id, sig.size
                self._centre = np.zeros(self.dim)
                self._reset_stats(0)
                self._vectors = self._new_vectors()
            self.tables.add(int(record.simhash) & MASK64, record.id)
            self._add_vectors(np.array([record.id], dtype=np.uint64), sig.reshape(1, -1))
            self._unsaved += 1
            self._centre_when_due(record.id)
            if self.autosave and self._unsaved >= max(self.autosave, len(self._vectors) // 10):
                self._save_vectors()
            return record.id

    def _row(self, record: Record, blob: bytes) -> tuple:
        """The values of ``self._insert`` for ``record``."""
        if self._url_key:  # schema 5
            return (record.url, url_key(record.url), key_value(record.content_hash), key_value(record.title_key),
                    to_signed(record.simhash), record.status, record.duplicate_of, float(record.fetched_at), None,
                    int(record.sentences), record.title or "", blob)
        if self._keys_binary:  # schema 4: the keys' bytes, no ref_id (the index's, checked by add)
            return (record.url, key_value(record.content_hash), key_value(record.title_key), to_signed(record.simhash),
                    record.status, record.duplicate_of, float(record.fetched_at), None, int(record.sentences),
                    record.title or "", blob)
        return (record.url, record.content_hash, record.title_key, to_signed(record.simhash), record.status,
                record.duplicate_of, float(record.fetched_at), record.ref_id, int(record.sentences),
                record.title or "", blob)

    def _key(self, key: str) -> bytes | str:
        """An exact key as this index's rows hold it."""
        return key_value(key) if self._keys_binary else key

    def _record(self, row: tuple) -> Record:
        return record_of_row(row, self.ref_id)

    def _claim(self, db: sqlite3.Connection, record: Record, own: int | None) -> None:
        """Raise KeyTaken when another record than ``own`` claims ``record``'s content (the writer
        lock makes check-then-write atomic)."""
        if not claims_content(record):
            return
        holder = db.execute("SELECT id FROM records WHERE content_hash = ? AND status != 'exact_duplicate' "
                            "AND id != ? ORDER BY id LIMIT 1", (self._key(record.content_hash), own or 0)).fetchone()
        if holder:
            raise KeyTaken(record.content_hash, holder[0])

    def replace(self, record_id: int, record: Record) -> int:
        """Store ``record`` in place of record ``record_id`` in one transaction (committed when this
        returns): the older row goes, the new one gets a new id (so a vector file saved before is seen
        to be stale on the next open, as after any add), and the simhash tables and vectors follow."""
        sig = np.asarray(record.signature, dtype=np.float32).reshape(-1)
        if not 0 <= int(record.simhash) <= MASK64:
            raise ValueError(f"simhash must be an unsigned 64-bit integer (got {record.simhash!r})")
        with self._mutex:
            db = self._require_open()
            row = db.execute("SELECT simhash, data FROM records WHERE id = ?", (int(record_id),)).fetchone()
            if row is None or self.ref_id is None:
                return self.add(record)
            self._check_ref(record.ref_id, sig.size, "signature")
            blob = encode_blob(record)
            with db:
                self._claim(db, record, int(record_id))
                db.execute("DELETE FROM records WHERE id = ?", (int(record_id),))
                containment.unpost(db, int(record_id), containment.keys_of_blob(row[1]))
                cur = db.execute(self._insert, self._row(record, blob))
                containment.post(db, cur.lastrowid, contained_keys(record))
            record.id = cur.lastrowid
            self._cache.discard(int(record_id))
            self.tables.remove(row[0] & MASK64, int(record_id))
            self.tables.add(int(record.simhash) & MASK64, record.id)
            if self._vectors is not None:
                self._vectors.remove(int(record_id))
                self._add_vectors(np.array([record.id], dtype=np.uint64), sig.reshape(1, -1))
                self._unsaved += 2
            return record.id

    def _check_ref(self, ref_id: str, dim: int, what: str) -> None:
        check_reference(ref_id, dim, self.ref_id, self.dim, what=what, where=f"this index ({self.path})")

    def lookup(self, kind: str, key: str) -> list[int]:
        if kind not in EXACT_KEYS:
            raise ValueError(f"unknown exact key kind {kind!r}; valid: {', '.join(EXACT_KEYS)}")
        with self._mutex:
            rows = self._require_open().execute(
                f"SELECT id FROM records WHERE {kind} = ? ORDER BY id", (self._key(key),)).fetchall()
        return [r[0] for r in rows]

    def near_simhash(self, fingerprint: int) -> list[tuple[int, int]]:
        with self._mutex:
            self._require_open()
            return self.tables.query(fingerprint)

    def nearest(self, signature: np.ndarray, ref_id: str, n: int, floor: float) -> list[tuple[int, float]]:
        """Up to ``n`` ``(id, cosine)``, best first, cosine >= ``floor``.

        With ``f16``/``f32`` vectors the similarities are the vector index's (error ~3e-5).
        With ``i8`` vectors (centred), the index proposes ``OVERSAMPLE`` x ``n`` candidates
        by the cosine of the centred signatures; their true cosines are recovered from the
        stored vectors and two numbers a record (error ~1.9e-4 at p50, docs/performance.md) and the best
        ``n`` returned (ties by id).  No SQLite reads.
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
            width = search_width(self.expansion_search, size) if self._widen else self.expansion_search
            if width != self._vectors.expansion_search:
                self._vectors.expansion_search = width
            if not self._centred:
                with interruptible():
                    matches = self._vectors.search(q, min(int(n), size), exact=size < self.exact_below)
                keys = np.asarray(matches.keys, dtype=np.int64).reshape(-1)
                sims = 1.0 - np.asarray(matches.distances, dtype=np.float64).reshape(-1)
                return [(int(i), float(s)) for i, s in zip(keys.tolist(), sims.tolist()) if s >= floor]
            ids, sims = search_centred(self._vectors, self._stats, self._centre, q, n, size < self.exact_below)
        return [(i, s) for i, s in zip(ids.tolist(), sims.tolist()) if s >= floor]

    def contained(self, keys: np.ndarray, min_shared: int, n: int) -> list[tuple[int, int]]:
        """Up to ``n`` ``(id, shared keys)`` of the records sharing at least ``min_shared`` of their posted
        sketch keys with ``keys`` (:mod:`index.local.containment`), most first, then by id."""
        with self._mutex:
            return containment.find(self._require_open(), keys, min_shared, n)

    def get(self, ids: Iterable[int]) -> list[Record]:
        """Records for ``ids`` in the order asked (unknown ids skipped, repeats repeated)."""
        wanted = [int(i) for i in ids]
        if not wanted:
            return []
        with self._mutex:
            self._require_open()
            found = self._cache.get(dict.fromkeys(wanted))
            missing = sorted(set(wanted).difference(found))
            if missing:
                put = self._cache.put
                for row in self._select(f"SELECT {_COLUMNS} FROM records WHERE id IN ({{}})", missing):
                    found[row[0]] = put(self._record(row))
        return [found[i] for i in wanted if i in found]

    def remove(self, record_id: int) -> bool:
        with self._mutex:
            db = self._require_open()
            row = db.execute("SELECT simhash, data FROM records WHERE id = ?", (int(record_id),)).fetchone()
            if row is None:
                return False
            self._cache.discard(int(record_id))
            with db:
                db.execute("DELETE FROM records WHERE id = ?", (int(record_id),))
                containment.unpost(db, int(record_id), containment.keys_of_blob(row[1]))
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
        self._cache.clear()
        if self._db is not None:
            self._db.close()
            self._db = None
        self._vectors = None
        if self._lock_fd is not None:
            try:
                lock.release(self._lock_fd)
            finally:
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
                yield self._record(row)
            last = rows[-1][0]

    def by_url(self, url: str) -> Record | None:
        """The record of ``url`` (the latest, in an index written before one record per URL), or None."""
        with self._mutex:
            if self._url_key:
                row = self._require_open().execute(
                    f"SELECT {_COLUMNS} FROM records WHERE url_key = ? AND url = ? ORDER BY id DESC LIMIT 1",
                    (url_key(url), url)).fetchone()
            else:
                row = self._require_open().execute(
                    f"SELECT {_COLUMNS} FROM records WHERE url = ? ORDER BY id DESC LIMIT 1", (url,)).fetchone()
        return self._record(row) if row else None

    def check(self, sample: int | None = 1000, *, sqlite_integrity: bool = False) -> dict[str, Any]:
        """Compare the derived structures with SQLite; ``report["ok"]`` says whether all agree.

        Counts of records, table entries and vectors; the vector index's keys against the
        record ids (all of them); for ``sample`` random records (all when None), that the
        simhash tables return the record at distance 0 and that its stored vector has
        cosine >= 0.999 with its SQLite signature.
        ``sqlite_integrity`` adds SQLite's ``PRAGMA quick_check`` (reads the whole file).
        """
        with self._mutex:
            db = self._require_open()
            rows = db.execute("SELECT id, simhash FROM records ORDER BY id").fetchall()
            ids = np.array([r[0] for r in rows], dtype=np.int64)
            report: dict[str, Any] = {"records": len(rows), "tables": len(self.tables),
                                      "vectors": 0 if self._vectors is None else len(self._vectors)}
            ref_ids = [r[0] for r in db.execute("SELECT DISTINCT coalesce(ref_id, ?) FROM records", (self.ref_id,))]
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
                    want = signature_of_blob(blob).astype(np.float64)
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
