"""``local://PATH``: the embedded dedup index (:class:`LocalIndex`), a directory on one machine.

:mod:`.store` the SQLite store and the :class:`~dedup.store.DedupIndex` methods;
:mod:`.records` a record as a row and its compact ``data`` blob; :mod:`.vectors` the usearch
index over the signatures; :mod:`.lock` the single-writer lock.  Design notes and measurements:
``docs/performance.md`` ("The embedded index"); what a record keeps: ``docs/choices.md``.
"""
from __future__ import annotations

from .lock import LOCK_NAME, IndexLocked
from .records import DB_NAME, decode_blob, encode_blob
from .store import DEFAULT_BLOCKS, DEFAULT_K, SCHEMA_VERSION, LocalIndex
from .vectors import CENTRE_SAMPLE, STATS_NAME, VECTORS_NAME

__all__ = ["LocalIndex", "IndexLocked", "SCHEMA_VERSION", "encode_blob", "decode_blob", "DB_NAME", "VECTORS_NAME",
           "STATS_NAME", "LOCK_NAME", "DEFAULT_K", "DEFAULT_BLOCKS", "CENTRE_SAMPLE"]
