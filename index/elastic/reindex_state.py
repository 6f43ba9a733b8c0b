"""The local working state of a reindex: what was decided, what reached the cluster.

A reindex decides pages against an embedded :class:`~index.local.LocalIndex` in its work folder
(``index/``) and records every decision in ``state.sqlite`` beside it: one row per source
document (its source ``_id``, verdict, whether it was kept, the local and Elasticsearch record
ids, and, until the cluster has it, where the payload to send is), plus the run's identity and the sort
values of the last document decided.  Decisions and the read position are committed together, a
batch at a time (before the batch is sent; a commit a document cost ~1 ms of a reindex's CPU), so
after a kill at any moment the next run knows exactly which documents are decided (it skips them by
source ``_id``) and which decisions are not yet in the cluster (it sends them again;
every write is keyed, so a repeat overwrites).

The one gap SQLite cannot close is between the local index committing a record and this file
committing the decision: a record whose id is above every record a decision named (the ``record_hw``
high-water mark, or the largest ``record_id``) is such an orphan (up to a batch of them), and the job
removes them before deciding those documents again.  An update (``--update``: a document decided in an earlier run whose
source changed since) may also replace or remove the document's older record before its decision is
committed: the older record is kept in ``meta`` (``intent``) until then, so the job puts it back.

The payloads waiting for the cluster (a kept page's document, tens of KB, or a drop line) are not in
SQLite: written there, checkpointed and deleted, they cost ~0.7 ms of CPU a document.  Each is appended
to a file of ``pending/`` (one file a batch: the file is changed at each commit) as the bytes that are
sent, before its decision's row, which names the file and the bytes' place in it, is committed (the file
is synced first, so a committed row never names bytes a crash lost); the file goes once none of its rows is
left, after the cluster acknowledged them.  Bytes of a decision never committed (a kill) are never
named, and their file goes with the others.

Each decision keeps the keys of what it was made from: ``body`` (:attr:`dedup.sources.Source.body_key`,
what the page is parsed from) and ``source_key`` (a hash of the whole ``_source``), so that an update
skips an unchanged document without parsing it.  A work folder of an earlier version (no such columns)
is opened and given them (empty: its first update decides every document again).
"""
from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import uuid
from pathlib import Path
from typing import Any, Iterable, Iterator

from .serialise import dumps, loads

__all__ = ["WorkState"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs (
    source_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    status TEXT NOT NULL,
    kept INTEGER NOT NULL,
    record_id INTEGER,
    es_record_id INTEGER,
    sent INTEGER NOT NULL DEFAULT 0,
    body TEXT,
    source_key TEXT
);
CREATE INDEX IF NOT EXISTS docs_seq ON docs(seq);
-- the payloads not yet acknowledged by the cluster, apart: the decisions table stays small to scan; each in
-- pending/FILE at START, LENGTH bytes long (an earlier version's: in payload)
CREATE TABLE IF NOT EXISTS pending (source_id TEXT PRIMARY KEY, payload TEXT, ops TEXT, file INTEGER,
                                    start INTEGER, length INTEGER);
-- a slice's kept page's query features for the final pass (index/elastic/reindex_slices.py), until sent
CREATE TABLE IF NOT EXISTS handover (source_id TEXT PRIMARY KEY, features TEXT NOT NULL);
"""
#: columns added since the first version of the schema (``ALTER TABLE`` on an older work folder)
_ADDED = (("docs", "body", "TEXT"), ("docs", "source_key", "TEXT"), ("pending", "ops", "TEXT"),
          ("pending", "file", "INTEGER"), ("pending", "start", "INTEGER"), ("pending", "length", "INTEGER"))


class WorkState:
    """``state.sqlite`` of a reindex work folder (see the module docstring)."""

    def __init__(self, folder: str | Path) -> None:
        self.path = Path(folder) / "state.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path)
        # a new work folder's pages hold a pending payload (tens of KB) in two pages, not seventeen: its
        # write, checkpoint and delete cost a third of 4 KB pages' (a no-op on an existing folder)
        self.db.execute("PRAGMA page_size=65536")
        self.db.execute("PRAGMA cache_size=-32768")  # KiB: the decisions of 100,000 documents stay cached
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")  # survives a killed process, as the local index
        self.uncommitted = 0  # decisions recorded with commit=False and not yet committed
        self.files = self.path.parent / "pending"
        self._file: Any = None  # the pending/ file this process appends payloads to (opened by the first)
        self._file_no = 0
        self._unsynced = False  # payloads written to it since its last sync
        # meta values of the open transaction (the read position, the record high-water mark), written once
        # at its commit rather than at each decision's
        self._meta: dict[str, Any] = {}
        with self.db:
            self.db.executescript(_SCHEMA)
            for table, column, kind in _ADDED:  # a work folder of an earlier version
                have = {row[1] for row in self.db.execute(f"PRAGMA table_info({table})")}
                if column not in have:
                    self.db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
            if any(row[1] == "payload" and row[3] for row in self.db.execute("PRAGMA table_info(pending)")):
                # an earlier version's payload NOT NULL: the table again without it, its rows kept
                self.db.executescript("""
                    ALTER TABLE pending RENAME TO pending_before;
                    CREATE TABLE pending (source_id TEXT PRIMARY KEY, payload TEXT, ops TEXT, file INTEGER,
                                          start INTEGER, length INTEGER);
                    INSERT INTO pending(source_id, payload, ops) SELECT source_id, payload, ops FROM pending_before;
                    DROP TABLE pending_before;""")

    # -- identity ------------------------------------------------------------------------------------
    def get(self, key: str) -> Any:
        if key in self._meta:
            return self._meta[key]
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def set(self, **values: Any) -> None:
        with self._tx():
            self._meta.update(values)

    def _set(self, values: dict[str, Any]) -> None:
        self.db.executemany("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = "
                            "excluded.value", [(k, json.dumps(v, default=str)) for k, v in values.items()])

    def run_id(self) -> str:
        """This work folder's run id (made once): the destination's marker names it."""
        rid = self.get("run_id")
        if rid is None:
            rid = uuid.uuid4().hex
            self.set(run_id=rid)
        return rid

    # -- decisions -----------------------------------------------------------------------------------
    def decided(self, source_id: str) -> bool:
        return self.db.execute("SELECT 1 FROM docs WHERE source_id = ?", (source_id,)).fetchone() is not None

    def doc(self, source_id: str) -> tuple[str, bool, int | None, int | None, str | None, str | None] | None:
        """``(status, kept, local record id, Elasticsearch record id, body key, source key)`` of the
        decision on ``source_id``, or None."""
        row = self.db.execute("SELECT status, kept, record_id, es_record_id, body, source_key FROM docs "
                              "WHERE source_id = ?", (source_id,)).fetchone()
        return None if row is None else (row[0], bool(row[1]), row[2], row[3], row[4], row[5])

    def record(self, source_id: str, *, status: str, kept: bool, record_id: int | None, es_record_id: int | None,
               payload: dict[str, Any] | bytes, after: list[Any] | None, handover: str | None = None,
               body: str | None = None, source_key: str | None = None, ops: dict[str, Any] | None = None,
               commit: bool = True) -> None:
        """One decision and the read position reached, in one transaction (``payload``: a dict, or its JSON
        bytes as sent, kept as they are; with ``handover``, a
        slice's query features of the page as JSON text, kept as they are until sent, as the payload is).
        A decision on a document decided before (an update) takes its place; ``ops``: what else its
        sending does (see :class:`index.elastic.reindex._Sink`). The update's ``intent`` ends here.

        ``commit=False``: the decision joins the open transaction, committed by :meth:`commit` (or by any
        other write of this class) together with the decisions before it: a commit a batch, not a document.
        A kill before that commit loses these decisions as a whole (the local index's records they added
        are orphans, removed before they are decided again); a failure inside this call rolls the open
        transaction back, so no half-written decision is ever committed."""
        if commit:
            with self._tx():
                self._record(source_id, status, kept, record_id, es_record_id, payload, after, handover, body,
                             source_key, ops)
            self.uncommitted = 0
            return
        try:
            self._record(source_id, status, kept, record_id, es_record_id, payload, after, handover, body,
                         source_key, ops)
        except BaseException:
            self._rollback()
            self.uncommitted = 0
            raise
        self.uncommitted += 1

    def commit(self) -> None:
        """Commit the decisions recorded with ``commit=False`` since the last commit; the payloads that
        follow go to a new file (one a batch: a file goes as soon as its batch is acknowledged)."""
        with self._tx():
            pass
        self.uncommitted = 0
        if self._file is not None:
            self._file.close()
            self._file = None
            self._file_no += 1

    @contextlib.contextmanager
    def _tx(self) -> Iterator[None]:
        """A write committed at the end (rolled back on an exception), after the payloads it names are
        on disk."""
        try:
            yield
            if self._meta:
                self._set(self._meta)
                self._meta = {}
            if self._unsynced:
                self._file.flush()
                os.fdatasync(self._file.fileno())
                self._unsynced = False
        except BaseException:
            self._rollback()
            raise
        self.db.commit()

    def _rollback(self) -> None:
        self.db.rollback()
        self._meta = {}

    def _write_payload(self, data: bytes) -> tuple[int, int]:
        """``data`` appended to this process's file of ``pending/``: ``(file number, start)``."""
        if self._file is None:
            self.files.mkdir(exist_ok=True)
            held = self.db.execute("SELECT coalesce(max(file), 0) FROM pending").fetchone()[0]
            on_disk = max((int(p.stem) for p in self.files.glob("*.json") if p.stem.isdigit()), default=0)
            self._file_no = max(self._file_no, held, on_disk) + 1  # never a file an earlier run wrote
            self._file = open(self.files / f"{self._file_no}.json", "ab")
        start = self._file.tell()
        self._file.write(data)
        self._unsynced = True
        return self._file_no, start

    def _read_payloads(self, rows: list[tuple[Any, ...]]) -> Iterator[bytes]:
        """The bytes of each ``(payload, file, start, length)`` (an earlier version's payload: in the row)."""
        if self._file is not None:
            self._file.flush()
        opened: dict[int, Any] = {}
        try:
            for payload, file, start, length in rows:
                if file is None:
                    yield payload.encode("utf-8", "surrogatepass") if isinstance(payload, str) else payload
                    continue
                if file not in opened:
                    opened[file] = open(self.files / f"{file}.json", "rb")
                f = opened[file]
                f.seek(start)
                yield f.read(length)
        finally:
            for f in opened.values():
                f.close()

    def _remove_files(self) -> None:
        """The files of ``pending/`` no payload waiting for the cluster is in (not this process's own)."""
        if not self.files.is_dir():
            return
        held = {row[0] for row in self.db.execute("SELECT DISTINCT file FROM pending WHERE file IS NOT NULL")}
        for path in self.files.glob("*.json"):
            if path.stem.isdigit() and int(path.stem) not in held and not (
                    self._file is not None and int(path.stem) == self._file_no):
                path.unlink(missing_ok=True)

    def _record(self, source_id: str, status: str, kept: bool, record_id: int | None, es_record_id: int | None,
                payload: dict[str, Any] | bytes, after: list[Any] | None, handover: str | None, body: str | None,
                source_key: str | None, ops: dict[str, Any] | None) -> None:
        seq = self.db.execute("SELECT coalesce(max(seq), 0) + 1 FROM docs").fetchone()[0]
        self.db.execute("INSERT INTO docs(source_id, seq, status, kept, record_id, es_record_id, body, source_key) "
                        "VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(source_id) DO UPDATE SET seq = excluded.seq, "
                        "status = excluded.status, kept = excluded.kept, record_id = excluded.record_id, "
                        "es_record_id = excluded.es_record_id, sent = 0, body = excluded.body, "
                        "source_key = excluded.source_key",
                        (source_id, seq, status, int(kept), record_id, es_record_id, body, source_key))
        data = (payload if isinstance(payload, bytes) else payload.encode("utf-8", "surrogatepass")
                if isinstance(payload, str) else dumps(payload))
        file, start = self._write_payload(data)
        self.db.execute("INSERT OR REPLACE INTO pending(source_id, payload, ops, file, start, length) "
                        "VALUES (?, NULL, ?, ?, ?, ?)", (source_id, json.dumps(ops) if ops else None, file, start,
                                                         len(data)))
        if handover is not None:
            self.db.execute("INSERT INTO handover(source_id, features) VALUES (?, ?)", (source_id, handover))
        if after is not None:
            self._meta["search_after"] = after
        if record_id is not None and record_id > (self.get("record_hw") or 0):
            self._meta["record_hw"] = record_id
        self.db.execute("DELETE FROM meta WHERE key = 'intent'")

    def set_keys(self, source_id: str, *, source_key: str, body: str | None = None) -> None:
        """A document whose verdict and writes stay as they are (dropped, its body unchanged) has these keys."""
        with self._tx():
            self.db.execute("UPDATE docs SET source_key = ?, body = coalesce(?, body) WHERE source_id = ?",
                            (source_key, body, source_id))

    def moved(self, source_id: str, record_id: int, *, end_intent: bool = True) -> None:
        """The decision's local record was put back under a new id (an interrupted update); the intent ends
        unless ``end_intent`` is False (a regrouped document's record, put back before the decision's own)."""
        with self._tx():
            self.db.execute("UPDATE docs SET record_id = ? WHERE source_id = ?", (record_id, source_id))
            if record_id > (self.get("record_hw") or 0):
                self._meta["record_hw"] = record_id
            if end_intent:
                self.db.execute("DELETE FROM meta WHERE key = 'intent'")

    def source_of(self, record_id: int) -> str | None:
        """The source id of the document whose decision names local record ``record_id``, or None."""
        row = self.db.execute("SELECT source_id FROM docs WHERE record_id = ?", (int(record_id),)).fetchone()
        return row[0] if row else None

    def flagged(self, batch: int = 500) -> Iterator[list[tuple[int, str]]]:
        """``(local record id, source id)`` of the kept documents flagged as copies (their verdict names a page),
        ``batch`` at a time (a corpus's millions of copies are never all in memory). Read to the end before
        anything is written."""
        cursor = self.db.execute("SELECT record_id, source_id FROM docs WHERE kept = 1 AND status != 'unique' "
                                 "AND record_id IS NOT NULL")
        while rows := cursor.fetchmany(batch):
            yield rows

    def regrouped(self, source_id: str, record_id: int, es_record_id: int) -> None:
        """The kept document ``source_id`` is its group's kept page now, under local record ``record_id``: in the
        open transaction, committed (or lost, then put back from the intent) with the decision that regrouped it."""
        self.db.execute("UPDATE docs SET status = 'unique', record_id = ?, es_record_id = ? WHERE source_id = ?",
                        (int(record_id), int(es_record_id), source_id))
        if record_id > (self.get("record_hw") or 0):
            self._meta["record_hw"] = record_id

    def mark_sent(self, source_ids: Iterable[str]) -> None:
        rows = [(s,) for s in source_ids]
        with self._tx():
            self.db.executemany("UPDATE docs SET sent = 1 WHERE source_id = ?", rows)
            self.db.executemany("DELETE FROM pending WHERE source_id = ?", rows)
            self.db.executemany("DELETE FROM handover WHERE source_id = ?", rows)
        self._remove_files()

    def set_es_record_ids(self, ids: dict[str, int]) -> None:
        """Record that these decisions' records went under other ids (a contested claim)."""
        with self._tx():
            self.db.executemany("UPDATE docs SET es_record_id = ? WHERE source_id = ?",
                                [(rid, sid) for sid, rid in ids.items()])

    def unsent(self) -> Iterator[tuple[str, bool, int | None, dict[str, Any], dict[str, Any]]]:
        """``(source id, kept, local record id, payload, ops)`` of the decisions not yet in the cluster."""
        rows = self.db.execute("SELECT d.source_id, d.kept, d.record_id, p.ops, p.payload, p.file, p.start, p.length "
                               "FROM pending p JOIN docs d USING (source_id) ORDER BY d.seq").fetchall()
        for (sid, kept, rid, ops, *_), data in zip(rows, self._read_payloads([row[4:] for row in rows])):
            yield sid, bool(kept), rid, loads(data), json.loads(ops) if ops else {}

    def unsent_ids(self) -> list[str]:
        """The source ids of the decisions not yet in the cluster."""
        return [row[0] for row in self.db.execute("SELECT source_id FROM pending")]

    def handovers(self) -> dict[str, str]:
        """Source id -> query features (JSON text, as recorded) of the kept decisions not yet in the
        cluster (a slice's)."""
        return dict(self.db.execute("SELECT source_id, features FROM handover").fetchall())

    def max_record_id(self) -> int:
        """The largest local record id a committed decision named (or an orphan removal passed)."""
        top = self.db.execute("SELECT coalesce(max(record_id), 0) FROM docs").fetchone()[0]
        return max(top, self.get("record_hw") or 0)

    def counts(self) -> tuple[int, int, int, dict[str, int]]:
        """``(processed, kept, flagged, statuses)``."""
        statuses: dict[str, int] = {}
        kept = flagged = total = 0
        for status, k, n in self.db.execute("SELECT status, kept, count(*) FROM docs GROUP BY status, kept"):
            statuses[status] = statuses.get(status, 0) + n
            total += n
            if k:
                kept += n
                flagged += n if status in ("near_duplicate", "duplicate") else 0
        return total, kept, flagged, statuses

    def ids(self, *, kept: bool, sent_only: bool = True) -> dict[str, int | None]:
        """Source id -> Elasticsearch record id of the kept (or dropped) decisions."""
        sql = "SELECT source_id, es_record_id FROM docs WHERE kept = ?" + (" AND sent = 1" if sent_only else "")
        return dict(self.db.execute(sql, (int(kept),)).fetchall())

    def close(self) -> None:
        if self._file is not None:  # a process that wrote (the job, holding the work folder's lock)
            self._file.close()
            self._file = None
            self._remove_files()
        self.db.close()
