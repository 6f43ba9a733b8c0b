"""The containment table of ``dedup.sqlite``: each kept record's smallest sketch keys, posted.

:meth:`LocalIndex.contained <index.local.store.LocalIndex.contained>` answers
:meth:`dedup.store.DedupIndex.contained` from it: the records of which at least two posted keys
(:func:`dedup.store.contained_keys`, the :data:`~dedup.store.CONTAINED_KEYS` = 16 smallest of the record's
shingle sketch) are among a page's sketch keys. That finds a short page contained in a longer one (and the
reverse), which the simhash tables and the nearest signatures miss (their fingerprints differ).

Table ``contained``: ``(key, record)``, its primary key, ``WITHOUT ROWID`` (the rows are the B-tree: a table
with a rowid and an index on ``key`` takes twice the bytes, ``docs/performance.md``). A key is stored as
``key - 2**23``: 24-bit keys then fit SQLite's 3-byte integer (half of them would take 4 bytes as they are).
A row is ~10 bytes of cell (record header 3, key 3, record id 1-4) and a 2-byte pointer; 16 rows a record.

The table is derived from the records' blobs (which hold the keys): an index opened without it, or made with
another :data:`~dedup.store.CONTAINED_KEYS` (``meta`` key ``contained_keys``), has it filled again from every
record on open.
"""
from __future__ import annotations

import sqlite3
from typing import Iterable

import numpy as np

from dedup.store import CONTAINED_KEYS, rank_contained

from .records import decode_blob

__all__ = ["SCHEMA", "META_KEY", "post", "unpost", "find", "refill", "keys_of_blob", "wanted"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS contained (
    key INTEGER NOT NULL,
    record INTEGER NOT NULL,
    PRIMARY KEY (key, record)
) WITHOUT ROWID;
"""
#: ``meta`` key: the number of keys a record posts in this file's table (refilled when it differs)
META_KEY = "contained_keys"
_OFFSET = 1 << 23  # stored key = key - 2**23: a 24-bit key in 3 bytes (SQLite integers are signed)
_SQL_VARS = 500  # keys per "IN (...)" statement


def _rows(record_id: int, keys: np.ndarray) -> list[tuple[int, int]]:
    return [(k - _OFFSET, int(record_id)) for k in np.asarray(keys, dtype=np.int64).tolist()]


def post(db: sqlite3.Connection, record_id: int, keys: np.ndarray) -> None:
    """Post ``keys`` (a record's :func:`~dedup.store.contained_keys`) for ``record_id`` (in the caller's
    transaction)."""
    db.executemany("INSERT OR IGNORE INTO contained(key, record) VALUES (?, ?)", _rows(record_id, keys))


def unpost(db: sqlite3.Connection, record_id: int, keys: np.ndarray) -> None:
    """Remove the rows :func:`post` wrote for ``record_id`` (in the caller's transaction)."""
    db.executemany("DELETE FROM contained WHERE key = ? AND record = ?", _rows(record_id, keys))


def find(db: sqlite3.Connection, keys: np.ndarray, min_shared: int, n: int) -> list[tuple[int, int]]:
    """``(record id, shared keys)`` of the records with at least ``min_shared`` posted keys among ``keys``,
    most first, then by id, at most ``n`` (:func:`dedup.store.rank_contained`). One primary-key probe a key,
    counted by SQLite (a row a record, not a row a shared key: ~0.22 ms a query on goldset-dev where counting
    the rows in Python took ~0.25)."""
    shared: dict[int, int] = {}
    stored = (np.asarray(keys, dtype=np.int64) - _OFFSET).tolist()
    for i in range(0, len(stored), _SQL_VARS):
        part = stored[i:i + _SQL_VARS]
        for rid, count in db.execute(f"SELECT record, count(*) FROM contained WHERE key IN "
                                     f"({','.join('?' * len(part))}) GROUP BY record", part):
            shared[rid] = shared.get(rid, 0) + count
    return rank_contained(shared, min_shared, n)


def keys_of_blob(blob: bytes) -> np.ndarray:
    """The keys the record of a ``data`` blob posts (:func:`dedup.store.contained_keys` of its record)."""
    return np.asarray(decode_blob(blob)["shingles"][:CONTAINED_KEYS], dtype=np.uint32)


def refill(db: sqlite3.Connection, records: Iterable[tuple[int, np.ndarray]]) -> int:
    """Empty the table and post every ``(record id, keys)`` of ``records`` (in the caller's transaction);
    returns how many records were posted."""
    db.execute("DELETE FROM contained")
    n = 0
    for rid, keys in records:
        post(db, rid, keys)
        n += 1
    return n


def wanted() -> str:
    """The ``meta`` value of a table holding :data:`~dedup.store.CONTAINED_KEYS` keys a record."""
    return str(CONTAINED_KEYS)
