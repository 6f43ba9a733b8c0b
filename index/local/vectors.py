"""The vector index over the MRC signatures of a local index: a usearch HNSW index keyed by
record id, saved to ``signatures.usearch`` (and, for ``i8`` vectors, ``signatures.stats.npz``),
derived from SQLite and rebuilt or reconciled from it on open.

``i8`` vectors (the default of a new index) are held centred (the unit signature minus the mean
of the first :data:`CENTRE_SAMPLE` records), each scaled so that its largest component is 127 and
rounded (:func:`quantise_i8`), with two float32 numbers a record (``m . y`` and ``|y|``) from which
:meth:`LocalIndex.nearest` recovers true cosines (:func:`centred_cosines`).  Why, and the
measurements behind these choices: ``docs/performance.md`` ("The embedded index").
"""
from __future__ import annotations

import hashlib
import logging
import os
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from .records import DB_NAME, signature_of_blob

__all__ = ["SignatureVectors", "VECTORS_NAME", "STATS_NAME", "VECTOR_DTYPES", "DEFAULT_VECTOR_DTYPE", "CENTRED",
           "OVERSAMPLE", "CENTRE_SAMPLE", "quantise_i8", "centred_cosines", "centre_rows",
           "search_centred", "search_width", "interruptible"]

log = logging.getLogger("index.local")

VECTORS_NAME = "signatures.usearch"
VECTOR_DTYPES = ("i8", "f16", "f32")
DEFAULT_VECTOR_DTYPE = "i8"  # of a new index (one made before the index kept its type is f16)
#: vector scalars too coarse for the raw signatures: the index holds them centred (the unit
#: signature minus a fixed mean); nearest() asks it for OVERSAMPLE x n candidates (by the centred
#: cosine, which orders them almost as the true one) and ranks them by their true cosines
CENTRED = ("i8",)
OVERSAMPLE = 4
#: connectivity and expansion_search by vector scalar type (i8: 14 keeps a node within usearch's
#: smaller allocation size, ~60 bytes a document less than 16)
DEFAULTS = {"f32": (16, 128), "f16": (16, 128), "i8": (14, 192)}
#: the default expansion_search widens by one step of itself every WIDEN_EVERY vectors, to at most
#: MAX_WIDEN x (docs/performance.md, 10M: the default 192 found a near-copy's original 0.89 of the time,
#: 768 0.97 at 5.1 ms; at 1M 192 missed none); an expansion_search given by the caller is kept as given
WIDEN_EVERY = 2_500_000
MAX_WIDEN = 4
CENTRE_SAMPLE = 1000  # the centre: mean unit signature of the first this many records
STATS_NAME = "signatures.stats.npz"  # per record id: m . y and |y| of its centred y
STATS_FORMAT = 2  # 1 held fine codes beside vectors usearch had truncated: such files are re-added
# check(): least cosine between a stored (quantised) vector and its signature
STORED_COSINE = {"i8": 0.999, "f16": 0.999, "f32": 0.999}
_VECTOR_BATCH = 50_000  # signatures read and added to the vector index at a time when rebuilding it


@contextmanager
def interruptible():
    """usearch checks for signals while it adds or searches and turns a Ctrl-C into its own
    ``RuntimeError('Operation has been terminated')`` (the KeyboardInterrupt itself is lost): raise
    KeyboardInterrupt again, so that a command interrupted there stops as it does elsewhere.  Nothing is
    left half-made that a reopen does not mend: SQLite is the source of truth, and the vectors of an
    interrupted add (usearch keeps those it had placed) are reconciled with it on open."""
    try:
        yield
    except RuntimeError as exc:
        if "terminated" not in str(exc):
            raise
        raise KeyboardInterrupt from exc


def _save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    with open(path, "wb") as f:  # a file object: np.savez would append ".npz" to a name
        np.savez(f, **arrays)


def quantise_i8(y: np.ndarray) -> np.ndarray:
    """Rows of ``y`` as int8 vectors for usearch: each scaled so that its largest component is
    +-127 and rounded (a cosine does not see the scale).  usearch's own cast of a float vector
    keeps trunc(127 y / |y|), ~10 levels a component of a 150-d vector: cosines 2e-3 off, more
    than a near-copy's margin; this keeps recovered cosines ~1.9e-4 off at p50 on goldset-dev's
    signatures (f16: 1.3e-5; ``benchmarks/bench_parts.py cosines``)."""
    y = np.asarray(y, dtype=np.float64)
    y = y.reshape(-1, y.shape[-1])
    peak = np.abs(y).max(axis=1, keepdims=True)
    return np.rint(np.divide(127.0 * y, peak, out=np.zeros_like(y), where=peak > 0)).astype(np.int8)


def centred_cosines(stored: np.ndarray, z: np.ndarray, m: np.ndarray, m_y: np.ndarray,
                    y_norm: np.ndarray) -> np.ndarray:
    """True cosines between a unit query ``q = m + z`` and unit signatures ``x = m + y`` held as
    ``stored`` (a row each, any scale of y) with their ``m . y`` and ``|y|``:
    q . x = |z| |y| cos(z, y) + m . z + m . y + |m|^2."""
    stored = np.asarray(stored, dtype=np.float64).reshape(len(m_y), -1)
    z_norm = float(np.linalg.norm(z))
    norms = np.linalg.norm(stored, axis=1) * max(z_norm, 1e-12)
    cos_zy = np.divide(stored @ z, norms, out=np.zeros(len(stored)), where=norms > 0)
    return np.clip(z_norm * y_norm * cos_zy + float(m @ z) + m_y + float(m @ m), -1.0, 1.0)


def centre_rows(sigs: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Centred unit signatures y = s / |s| - ``m`` of the rows of ``sigs`` (float32, for the index) and their
    [m . y, |y|] (2, rows)."""
    sigs = np.asarray(sigs, dtype=np.float64).reshape(-1, m.size)
    norms = np.linalg.norm(sigs, axis=1, keepdims=True)
    y = np.divide(sigs, norms, out=np.zeros_like(sigs), where=norms > 0) - m
    return y.astype(np.float32), np.stack([y @ m, np.linalg.norm(y, axis=1)])


def search_centred(vectors, stats: np.ndarray, m: np.ndarray, q: np.ndarray, n: int,
                   exact: bool) -> tuple[np.ndarray, np.ndarray]:
    """The best ``n`` (ids, true cosines) of a centred i8 index for the signature ``q``: OVERSAMPLE x n
    proposed by the centred cosine, ranked by the true one recovered from the stored vectors and ``stats``
    ([m . y, |y|] by id); ties by id."""
    q = np.asarray(q, dtype=np.float64).reshape(-1)
    z = q / np.linalg.norm(q) - m
    probe = z if np.linalg.norm(z) > 1e-9 else z + m
    with interruptible():
        matches = vectors.search(quantise_i8(probe)[0], min(OVERSAMPLE * int(n), len(vectors)), exact=exact)
    ids = np.asarray(matches.keys, dtype=np.int64).reshape(-1)
    if not ids.size:
        return ids, np.zeros(0)
    m_y, y_norm = stats[:, ids].astype(np.float64)
    sims = centred_cosines(vectors.get(ids.astype(np.uint64)), z, m, m_y, y_norm)
    order = np.lexsort((ids, -sims))[: int(n)]
    return ids[order], sims[order]


def search_width(base: int, size: int) -> int:
    """The default expansion_search of an index of ``size`` vectors: ``base`` below 2 x WIDEN_EVERY, then
    ``base`` x ``size // WIDEN_EVERY`` up to MAX_WIDEN x (192, 384 at 5M, 576 at 7.5M, 768 from 10M)."""
    return int(base) * min(MAX_WIDEN, max(1, int(size) // WIDEN_EVERY))


def dtype_name(vectors) -> str:
    """``"f16"`` for a usearch index of ``ScalarKind.F16`` scalars."""
    return str(vectors.dtype).lower().split(".")[-1]


class SignatureVectors:
    """The vector-index part of :class:`~index.local.LocalIndex` (a base class of it: these
    methods run under its mutex, on its SQLite connection ``_db``, and set ``_vectors``)."""

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
        sigs = np.array([signature_of_blob(r[0]) for r in rows], dtype=np.float64)
        norms = np.linalg.norm(sigs, axis=1, keepdims=True)
        centre = np.divide(sigs, norms, out=np.zeros_like(sigs), where=norms > 0).mean(axis=0)
        text = centre.astype("<f8").tobytes().hex()
        with self._db:
            self._set_meta(vector_centre=text)
        self._centre = centre
        self._centre_id = hashlib.sha1(text.encode("ascii")).hexdigest()[:16]

    def _centre_when_due(self, last_id: int) -> None:
        """After an add: once in an index's life, when CENTRE_SAMPLE vectors exist, fix the
        centre and re-add the vectors centred."""
        if self._centred and self._centre_id == "none" and len(self._vectors) >= CENTRE_SAMPLE:
            self._make_centre()
            self._vectors = self._new_vectors()
            self._reset_stats(last_id + 1)
            self._reconcile_vectors()
            self._save_vectors()

    def _centre_rows(self, sigs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:func:`centre_rows` by this index's centre."""
        return centre_rows(sigs, self._centre)

    def _reset_stats(self, size: int) -> None:
        """Empty per-id ``_stats`` [m . y, |y|] for ids < ``size`` (NaN: unknown)."""
        self._stats = np.full((2, size), np.nan, dtype=np.float32)

    def _set_stats(self, ids: np.ndarray, stats: np.ndarray) -> None:
        top, have = int(ids.max()) + 1, self._stats.shape[1]
        if top > have:  # grown by a quarter: amortised O(1) per add
            stats_ = self._stats
            self._reset_stats(max(top, have * 5 // 4))
            self._stats[:, :have] = stats_
        self._stats[:, ids] = stats

    def _load_stats(self, max_id: int) -> None:
        """The saved stats (ids the file does not cover stay NaN: their vectors are added again, as
        are all of a file of another format)."""
        self._reset_stats(max_id + 1)
        try:
            with np.load(self.path / STATS_NAME) as saved:
                stats = saved["stats"]
                fmt = int(saved["format"]) if "format" in saved.files else 1
        except (OSError, ValueError, KeyError) as exc:
            log.warning("cannot read %s (%s): re-adding the vectors it covered", self.path / STATS_NAME, exc)
            return
        if fmt != STATS_FORMAT:
            log.warning("%s is of format %d (fine codes beside truncated vectors): re-adding every vector",
                        self.path / STATS_NAME, fmt)
            return
        if stats.ndim == 2 and stats.shape[0] == 2 and stats.dtype == np.float32:
            n = min(stats.shape[1], max_id + 1)
            self._stats[:, :n] = stats[:, :n]

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
            if vectors is not None and (vectors.ndim != self.dim or dtype_name(vectors) != self.vector_dtype
                                        or vectors.connectivity != self.connectivity):
                log.warning("%s has %d dimensions (%s, connectivity %d), the index %d (%s, %d): rebuilding it",
                            file, vectors.ndim, dtype_name(vectors), vectors.connectivity, self.dim,
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
            # in batches, each signature copied out of its row at once (a view of a DR1 blob would
            # hold the whole blob)
            matrix = np.empty((_VECTOR_BATCH, self.dim), dtype=np.float32)
            keys = np.empty(_VECTOR_BATCH, dtype=np.uint64)
            added = j = 0
            for rid, blob in rows:
                matrix[j], keys[j] = signature_of_blob(blob), rid
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
            with interruptible():
                self._vectors.add(keys, sigs)  # usearch copies the vectors in
            return
        y, stats = self._centre_rows(sigs)
        with interruptible():
            self._vectors.add(keys, quantise_i8(y))
        self._set_stats(keys.astype(np.int64), stats)

    def _save_vectors(self) -> None:
        """Write the vector index (atomically) and record the SQLite state it covers."""
        if self._vectors is None:
            return
        count, max_id = self._db.execute("SELECT count(*), coalesce(max(id), 0) FROM records").fetchone()
        if self._centred:  # before the vectors: a newer stats file is harmless, an older one is not
            arrays = {"stats": self._stats[:, :max_id + 1], "format": np.int64(STATS_FORMAT)}
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

