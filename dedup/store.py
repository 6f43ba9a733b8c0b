"""The dedup index interface, and an in-memory implementation.

``index/`` implements :class:`DedupIndex` for SQLite and Elasticsearch; the
:class:`~dedup.deduplicator.Deduplicator` only ever talks to this Protocol.
"""
from __future__ import annotations

from typing import Iterable, Protocol, runtime_checkable

import numpy as np

from .permtables import DEFAULT_BLOCKS, DEFAULT_K, PermutationTables
from .record import Record

__all__ = ["DedupIndex", "MemoryIndex", "EXACT_KEYS", "KeyTaken", "claims_content", "check_reference",
           "CONTAINED_KEYS", "contained_keys", "rank_contained"]

#: exact-key kinds understood by :meth:`DedupIndex.lookup`
EXACT_KEYS = ("content_hash", "title_key")
#: sketch keys a kept record posts for :meth:`DedupIndex.contained`: the 16 smallest of its shingle sketch
#: (a page sharing two of them is proposed). Measured on goldset-dev (docs/accuracy.md): 8 found fewer of
#: the short pages contained in a longer one, 32 and 128 no more, at 2 and 8 times the bytes
CONTAINED_KEYS = 16


def contained_keys(record: Record) -> np.ndarray:
    """The keys ``record`` posts for containment candidates: the :data:`CONTAINED_KEYS` smallest of its
    sketch (sorted uint32, 24-bit: :mod:`dedup.record`). A longer page holding the record's whole text holds
    all of them, in its own sketch unless it is 16 times longer (they are its smallest keys in that range);
    a shorter page contained in the record's page holds about 16 times its share of that page's shingles
    (two when it is an eighth of it). Two shared keys propose the record, so the search finds a short kept
    page in a longer new one, and a new page that is a good part of a longer kept one."""
    return np.asarray(record.shingles[:CONTAINED_KEYS], dtype=np.uint32)


def rank_contained(shared: dict[int, int], min_shared: int, n: int) -> list[tuple[int, int]]:
    """``(id, shared keys)`` of the records sharing at least ``min_shared`` keys, most first, then by id,
    at most ``n``: the order every backend's :meth:`DedupIndex.contained` answers in."""
    best = sorted(((i, c) for i, c in shared.items() if c >= min_shared), key=lambda p: (-p[1], p[0]))
    return best[:max(0, n)]


class KeyTaken(Exception):
    """:meth:`DedupIndex.add` refused a record because another record already claims its content.

    A record claims its ``content_hash`` unless it is itself a kept ``exact_duplicate`` (see
    :func:`claims_content`); the claim is atomic in every backend, so two processes sharing an
    Elasticsearch index never both keep the same content.  ``record_id`` is the holder's id.
    """

    def __init__(self, content_hash: str, record_id: int) -> None:
        super().__init__(f"content {content_hash} is already kept as record {record_id}")
        self.content_hash = content_hash
        self.record_id = record_id


def check_reference(ref_id: str, dim: int, held_ref: str | None, held_dim: int | None, *,
                    what: str, where: str) -> None:
    """Refuse a signature made with another reference text (or of another size) than the index's."""
    if ref_id != held_ref:
        raise ValueError(
            f"{what} made with reference text {ref_id!r}, {where} holds {held_ref!r}: recompute it with the "
            "index's reference text, or rebuild the index with the new one (dedup reindex into a new index)")
    if dim != held_dim:
        raise ValueError(f"{what} has {dim} dimensions, {where}'s signatures {held_dim}")


def claims_content(record: Record) -> bool:
    """Whether ``record`` claims its content hash: it has one and is not a kept exact duplicate."""
    return bool(record.content_hash) and record.status != "exact_duplicate"


@runtime_checkable
class DedupIndex(Protocol):
    """Storage of kept pages' records, with the three candidate searches."""

    def add(self, record: Record) -> int:
        """Store ``record``, assign and return its ``id`` (also set on the record).

        Ids are positive and unique, not necessarily increasing.  Raises :class:`KeyTaken`
        when ``record`` claims a content hash (:func:`claims_content`) another record holds.
        """

    def lookup(self, kind: str, key: str) -> list[int]:
        """Ids of records whose exact key ``kind`` (one of :data:`EXACT_KEYS`) equals ``key``."""

    def near_simhash(self, fingerprint: int) -> list[tuple[int, int]]:
        """``(id, hamming distance)`` of records whose simhash is within the table's k bits."""

    def nearest(self, signature: np.ndarray, ref_id: str, n: int, floor: float) -> list[tuple[int, float]]:
        """Up to ``n`` ``(id, cosine)`` of the closest signatures with cosine >= ``floor``."""

    def contained(self, keys: np.ndarray, min_shared: int, n: int) -> list[tuple[int, int]]:
        """Up to ``n`` ``(id, shared)`` of the records of which at least ``min_shared`` posted keys
        (:func:`contained_keys`) are among ``keys`` (a page's sketch keys), most shared first, then by id
        (:func:`rank_contained`)."""

    def get(self, ids: Iterable[int]) -> list[Record]:
        """Records for ``ids`` (unknown ids are skipped)."""

    def by_url(self, url: str) -> Record | None:
        """The record of ``url``, or None. An index holds one record per URL (a page fetched again
        with other content replaces its record); of an index written before that, the latest."""

    def replace(self, record_id: int, record: Record) -> int:
        """Store ``record`` in place of record ``record_id`` (the same URL's older version): its
        tables, vector and keys are replaced too. Returns the id it is stored under now, which may
        differ from ``record_id`` (a new row id in SQLite, the id of its content claim in Elasticsearch).
        Raises :class:`KeyTaken` as :meth:`add` does (another record claims the new content): the
        older version is then left as it was."""

    def remove(self, record_id: int) -> bool:
        """Forget a record; True when it existed."""

    def flush(self) -> None: ...

    def close(self) -> None: ...

    def __len__(self) -> int: ...


class MemoryIndex:
    """A :class:`DedupIndex` held in process memory (tests, evaluation, small jobs)."""

    def __init__(self, *, k: int = DEFAULT_K, blocks: int = DEFAULT_BLOCKS) -> None:
        self.tables = PermutationTables(k=k, blocks=blocks)
        self._records: dict[int, Record] = {}
        self._keys: dict[tuple[str, str], list[int]] = {}
        self._next = 1
        # signatures are kept in a growing matrix; rows of removed records are zeroed
        self._sig = np.zeros((0, 0), dtype=np.float32)
        self._sig_ids = np.zeros(0, dtype=np.int64)
        self._sig_n = 0
        self._ref_id: str | None = None
        self._claims: dict[str, int] = {}
        self._urls: dict[str, int] = {}
        self._posted: dict[int, list[int]] = {}  # contained_keys -> record ids

    def __len__(self) -> int:
        return len(self._records)

    def add(self, record: Record) -> int:
        self._check_ref(record.ref_id)
        claim = claims_content(record)
        if claim and record.content_hash in self._claims:
            raise KeyTaken(record.content_hash, self._claims[record.content_hash])
        record.id = self._next
        self._next += 1
        self._store(record, claim)
        return record.id

    def _store(self, record: Record, claim: bool) -> None:
        if claim:
            self._claims[record.content_hash] = record.id
        self._records[record.id] = record
        self._urls[record.url] = record.id
        for kind in EXACT_KEYS:
            self._keys.setdefault((kind, getattr(record, kind)), []).append(record.id)
        self.tables.add(record.simhash, record.id)
        for key in contained_keys(record).tolist():
            self._posted.setdefault(key, []).append(record.id)
        self._add_signature(record)

    def replace(self, record_id: int, record: Record) -> int:
        if record_id not in self._records:
            return self.add(record)
        self._check_ref(record.ref_id)
        claim = claims_content(record)
        holder = self._claims.get(record.content_hash) if claim else None
        if holder is not None and holder != record_id:
            raise KeyTaken(record.content_hash, holder)
        self.remove(record_id)
        record.id = record_id
        self._store(record, claim)
        return record_id

    def by_url(self, url: str) -> Record | None:
        rid = self._urls.get(url)
        return self._records.get(rid) if rid is not None else None

    def _check_ref(self, ref_id: str) -> None:
        if self._ref_id is not None and ref_id != self._ref_id:
            check_reference(ref_id, 0, self._ref_id, 0, what="signature", where="this in-memory index")

    def _add_signature(self, record: Record) -> None:
        sig = np.asarray(record.signature, dtype=np.float32)
        if self._ref_id is None:
            self._ref_id = record.ref_id
            self._sig = np.zeros((64, sig.size), dtype=np.float32)
            self._sig_ids = np.zeros(64, dtype=np.int64)
        if self._sig_n == len(self._sig):
            self._sig = np.concatenate([self._sig, np.zeros_like(self._sig)])
            self._sig_ids = np.concatenate([self._sig_ids, np.zeros_like(self._sig_ids)])
        norm = float(np.linalg.norm(sig))
        self._sig[self._sig_n] = sig / norm if norm else sig
        self._sig_ids[self._sig_n] = record.id
        self._sig_n += 1

    def lookup(self, kind: str, key: str) -> list[int]:
        if kind not in EXACT_KEYS:
            raise ValueError(f"unknown exact key kind {kind!r}; valid: {', '.join(EXACT_KEYS)}")
        return list(self._keys.get((kind, key), ()))

    def near_simhash(self, fingerprint: int) -> list[tuple[int, int]]:
        return self.tables.query(fingerprint)

    def nearest(self, signature: np.ndarray, ref_id: str, n: int, floor: float) -> list[tuple[int, float]]:
        if self._sig_n == 0:
            return []
        check_reference(ref_id, np.asarray(signature).size, self._ref_id, self._sig.shape[1],
                        what="query signature", where="this in-memory index")
        q = np.asarray(signature, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        if not norm:
            return []
        sims = self._sig[: self._sig_n] @ (q / norm)
        sims[self._sig_ids[: self._sig_n] == 0] = -np.inf  # rows of removed records
        top = np.argsort(-sims)[:n]
        return [(int(self._sig_ids[i]), float(sims[i])) for i in top if sims[i] >= floor]

    def contained(self, keys: np.ndarray, min_shared: int, n: int) -> list[tuple[int, int]]:
        shared: dict[int, int] = {}
        posted = self._posted
        for key in np.asarray(keys).tolist():
            for rid in posted.get(key, ()):
                shared[rid] = shared.get(rid, 0) + 1
        return rank_contained(shared, min_shared, n)

    def get(self, ids: Iterable[int]) -> list[Record]:
        return [self._records[i] for i in ids if i in self._records]

    def remove(self, record_id: int) -> bool:
        record = self._records.pop(record_id, None)
        if record is None:
            return False
        if self._claims.get(record.content_hash) == record_id:
            del self._claims[record.content_hash]
        if self._urls.get(record.url) == record_id:
            del self._urls[record.url]
        for kind in EXACT_KEYS:
            ids = self._keys.get((kind, getattr(record, kind)), [])
            if record_id in ids:
                ids.remove(record_id)
        self.tables.remove(record.simhash, record_id)
        for key in contained_keys(record).tolist():
            ids = self._posted.get(key, [])
            if record_id in ids:
                ids.remove(record_id)
            if not ids:
                self._posted.pop(key, None)
        rows = np.flatnonzero(self._sig_ids[: self._sig_n] == record_id)
        self._sig[rows] = 0.0
        self._sig_ids[rows] = 0
        return True

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass
