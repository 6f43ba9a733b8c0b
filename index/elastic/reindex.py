"""``dedup reindex``: run an existing Elasticsearch corpus through the filter into a new index.

The source index may have any mapping: options name its URL field, its text field (main text)
or HTML field (parsed and extracted like a crawled page), its title field and its time field;
each is checked against the source mapping before anything is written.  Documents are read
through a point in time with ``search_after``, in the order of the keep rule, the first document
of a group being the one kept:

``oldest`` / ``newest``  by the time field, then the URL;
``field:NAME[:asc|desc]`` by any sortable field, then the URL.

The time field is the one named (``--time-field``), else ``fetched_at``, else the source's only date
field (a corpus with none, or several, is refused in one line saying what to pass).

(A "shortest URL" rule needs a URL-length field: a script sort is not used, so the order is the
same on every Elasticsearch-API server.)  The URL field must be sortable (``keyword``; for a
``text`` field with a ``keyword`` sub-field pass ``url.keyword``).

**Decided locally, written in bulk.**  Every document is decided against an embedded
:class:`~index.local.LocalIndex` in the job's work folder (``--work-dir``, by default
``reindex-DEST.work`` beside the checkpoint), and the decisions are committed there with the read
position a batch at a time, before the batch is sent (:mod:`.reindex_state`).  The cluster only sees bulk requests: the point-in-time reads,
and every ``batch_size`` documents (or ``bulk_bytes``) one ``streaming_bulk`` of the kept
documents to ``DEST`` (under their source ``_id``, with their ``_source`` and the verdict in
``dedup``), one of their records to ``DEST-dedup``, and the dropped documents appended to the
dropped log (the crawl's format; ``item.id`` the source ``_id``, ``item.source`` the whole
``_source``).  The destination takes the source's mapping (and analysis settings) plus ``dedup``,
and its mapping's ``_meta.dedup_reindex`` names the run and the source's fields.

**Resuming.**  Kill the job at any moment and run the same command again (any ``--batch-size``):
documents already decided are skipped by source ``_id``, decisions not yet acknowledged by the
cluster are sent again (keyed writes: a repeat overwrites), and the read goes on after the last
decided document with a fresh point in time.  The end is the same kept set and verdicts as an
uninterrupted run.  The checkpoint file is a readable summary of the work folder's state.

**Outages.**  Every request has the retry budget of :mod:`.connect`; a point in time lost to
expiry or a restarted server is reopened at the last position.  When the budget runs out the job
stops with one line (:class:`~.connect.IndexUnavailable`); nothing is decided wrongly, and the
next run continues.

**Updates.**  A finished job run again with ``update`` brings the destination up to date with the
source: it reads the whole source again in keep-rule order; a document whose ``_source`` is what it
was decided from (a hash of it is kept per source ``_id`` in the work state, with the body key of
:attr:`dedup.sources.Source.body_key`) is skipped without parsing; a document added since is
decided as in a first run; a changed document is decided again as an *update* of its own record
(:meth:`Deduplicator.process`, so it is never a copy of its older version): its destination
document is overwritten with the new verdict, or deleted and logged when it is dropped now (a
``kept`` event when it was dropped before and is kept now), and its record in ``DEST-dedup``
replaced (one record per URL there too).  A document whose body is unchanged but whose other
fields changed keeps its verdict and gets its new ``_source`` in the destination.  An update is
resumable as a first run is.  Not with ``slices`` (refused).

**Reruns.**  A destination whose marker names another run (another work folder), or an existing
index without the marker, is refused unless ``force``; a finished job run again without ``update``
is refused; a second process on the same work folder is refused by the local index's lock.
``dry_run`` decides every document in a temporary folder and writes nothing.  :meth:`Reindex.check`
compares the destination, ``DEST-dedup`` and the dropped log with the work folder.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from dedup.deduplicator import DedupConfig, Deduplicator, Verdict
from dedup.droplog import Entry, drop_line, dropped_again, iso_now, read_log
from dedup.page import Page
from dedup.record import Record, epoch_seconds
from dedup.sources import LazyFeaturizer, body_key

from .connect import Retrying, connect
from .reindex_check import Inspection
from .reindex_decide import Capture, PageMaker, featured
from .reindex_read import (KEEP_RULES, keep_order, keep_sort, legacy_source_key, mapping_fields, read_ahead,
                           read_sorted, source_key, source_keys)
from .reindex_state import WorkState
from .reindex_write import EXTRACTED_TEXT, MARKER, Sink, payload_json
from .search import field_value
from .slicing import handover_json

__all__ = ["Reindex", "ReindexReport", "keep_sort", "mapping_fields", "KEEP_RULES", "MARKER"]

log = logging.getLogger(__name__)

_TEXT_TYPES = ("text", "match_only_text", "keyword", "wildcard")  # what a text, HTML or title field may be
_ANALYSED_TYPES = ("text", "match_only_text")  # of those, the ones an error names as text fields
#: the time field ``oldest`` and ``newest`` sort by when none is named and the source has it
DEFAULT_TIME_FIELD = "fetched_at"
#: rounds of an update's decisions after its read (see Reindex._loop): one, and one for the chains it leaves
STALE_ROUNDS = 3
_DATE_TYPES = ("date", "date_nanos")
_SORTABLE = ("keyword", "date", "date_nanos", "long", "integer", "short", "byte", "double", "float",
             "half_float", "scaled_float", "unsigned_long", "boolean", "ip", "version")


def drop_stale(decider: Deduplicator, entry: Entry) -> bool:
    """Whether a dropped document's drop line no longer says what holds its text: the page it matched (``nearest``)
    went, or holds other text (an exact copy's), or its group is kept for another page than the line names (that
    page rewritten: helper-27). Then it is decided again, as a crawl decides such a page again: kept if no kept page
    holds the text, else dropped naming the one that does (helper-24: its line kept naming the changed page, which
    ``explain`` compared it with). A line without the text's key or the page matched (older): False."""
    if not entry.content_hash or not entry.nearest:
        return False
    return not decider.drop_holds(entry.content_hash, entry.nearest, entry.duplicate_of,
                                  exact=entry.status == "exact_duplicate")


@dataclass
class ReindexReport:
    processed: int = 0
    kept: int = 0
    flagged: int = 0
    dropped: int = 0
    errors: int = 0
    resumed_from: int = 0
    resent: int = 0
    seconds: float = 0.0
    requests: int = 0
    #: the final pass of a sliced reindex: kept documents parsed again (no query features handed over
    #: by their slice, and a candidate to compare)
    reparsed: int = 0
    #: an update (``--update``): documents of earlier runs skipped unchanged, decided again (their source
    #: changed) and documents added since, in this run
    unchanged: int = 0
    updated: int = 0
    added: int = 0
    #: an update not resumed: documents decided before that this run did not read (deleted from the source;
    #: they stay in the destination)
    gone: int = 0
    #: an update: documents with unchanged text decided again after the read, because the page their verdict names
    #: changed or went in the source (a flagged copy's kept page, a dropped copy's holder)
    decided_again: int = 0
    #: a slice: kept pages whose query features it handed to the final pass, and their JSON bytes;
    #: the final pass: kept documents decided from them
    handed_over: int = 0
    handover_bytes: int = 0
    #: the final pass: kept documents whose verdict it changed (a copy of another slice's document)
    changed: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    dry_run: bool = False
    alias: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class Reindex(Inspection):
    """One reindex job; :meth:`run` does it (see the module docstring).

    ``batch_size``: documents per bulk write (500); ``bulk_bytes``: and at most this many bytes
    of documents per bulk request (10 MB).  ``read_size``: documents per read (1000).
    ``keep_alive``: the point in time's keep-alive between reads ("5m").
    """

    def __init__(self, source: str, dest: str, *, url_field: str = "url", text_field: str | None = "text",
                 html_field: str | None = None, title_field: str | None = "title", time_field: str | None = None,
                 keep: str = "oldest", config: DedupConfig | None = None, dropped_log: str | os.PathLike,
                 checkpoint: str | os.PathLike | None = None, work_dir: str | os.PathLike | None = None,
                 batch_size: int = 500, bulk_bytes: int = 10 << 20, read_size: int = 1000, keep_alive: str = "5m",
                 workers: int = 0, slices: int = 1, slice_id: int | None = None, merge: bool = False,
                 dry_run: bool = False, force: bool = False, alias: str | None = None, update: bool = False,
                 es_options: dict[str, Any] | None = None, progress: Callable[[int, int], None] | None = None,
                 on_decided: Callable[[int], None] | None = None) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1 (got {batch_size})")
        if read_size < 1:
            raise ValueError(f"read_size must be >= 1 (got {read_size})")
        if workers < 0:
            raise ValueError(f"workers must be >= 0 (got {workers})")
        self.workers = workers
        if slices < 1:
            raise ValueError(f"slices must be >= 1 (got {slices})")
        if merge and slices < 2:
            raise ValueError("--merge is the final pass of a sliced reindex: give it the --slices N of the slices")
        if slices > 1 and not merge and (slice_id is None or not 0 <= slice_id < slices):
            raise ValueError(f"with --slices {slices} give --slice I, 0 <= I < {slices} (got {slice_id}), "
                             "or --merge for the final pass")
        if slices == 1 and slice_id not in (None, 0):
            raise ValueError(f"--slice {slice_id} needs --slices N > {slice_id}")
        if slices > 1 and not merge and alias:
            raise ValueError("--alias belongs to the final pass (--merge): a slice alone is not the whole corpus")
        if update and slices > 1:
            raise ValueError("--update is not supported with --slices: a sliced reindex is run once (update its "
                             "destination with an unsliced reindex into a new one)")
        if update and dry_run:
            raise ValueError("--dry-run decides the whole corpus afresh in a temporary folder: it does not preview "
                             "an --update (run --update; its report says what changed)")
        self.update = update
        self.slices, self.slice_id, self.merging = slices, (slice_id or 0) if slices > 1 else None, merge
        if not text_field and not html_field:
            raise ValueError("name the source's main-text field (--text-field) or HTML field (--html-field)")
        self.source_uri, self.dest_uri = source, dest
        self.url_field, self.url_source = url_field, url_field.removesuffix(".keyword")
        self.text_field, self.html_field, self.title_field = text_field, html_field, title_field
        # None: DEFAULT_TIME_FIELD, else the source's only date field (resolve_time_field, from the mapping)
        self.time_field_named = time_field is not None
        self.time_field = time_field or DEFAULT_TIME_FIELD
        self.sort = keep_sort(keep, time_field=self.time_field, url_field=url_field)
        self.keep = keep
        self.config = config or DedupConfig()
        self.dropped_log = Path(dropped_log)
        dest_name = dest.rstrip("/").rsplit("/", 1)[-1]
        part = ("" if slices == 1 else f".merge-of-{slices}" if merge else f".slice-{slice_id}-of-{slices}")
        self.checkpoint = Path(checkpoint) if checkpoint else self.dropped_log.with_name(
            f"reindex-{dest_name}{part}.checkpoint.json")
        self.work_dir = Path(work_dir) if work_dir else self.checkpoint.with_name(
            self.checkpoint.name.removesuffix(".json").removesuffix(".checkpoint") + ".work")
        self.batch_size, self.bulk_bytes, self.read_size = batch_size, bulk_bytes, read_size
        self.keep_alive = keep_alive
        self.dry_run, self.force = dry_run, force
        self.alias = alias
        self.es_options = dict(es_options or {})
        self.progress = progress
        self.on_decided = on_decided  # a test hook: called with the count after every decision
        self.requests = 0
        self._requests_lock = threading.Lock()  # counted by the job, its reader and its writer threads

    def count_requests(self, n: int) -> None:
        with self._requests_lock:
            self.requests += n

    def _connect(self, uri: str) -> tuple[Retrying, str]:
        from . import CONNECT_OPTIONS

        es, name = connect(uri, **{k: v for k, v in self.es_options.items() if k in CONNECT_OPTIONS})
        return _Counting(es, self), name

    # -- the job ------------------------------------------------------------------------------------
    def run(self) -> ReindexReport:
        if self.merging:
            raise ValueError("the final pass of a sliced reindex runs through index.elastic.reindex_slices.merge(job)")
        start = time.monotonic()
        src, src_name = self._connect(self.source_uri)
        work = Path(tempfile.mkdtemp(prefix="dedup-reindex-")) if self.dry_run else self.work_dir
        fresh = self.dry_run or not work.exists()
        try:
            total = self._check_source(src, src_name)
            report = self._run(src, src_name, work, total)
        except BaseException:
            if fresh and not self._decisions(work):  # a failed start leaves no work folder behind
                shutil.rmtree(work, ignore_errors=True)
            raise
        finally:
            src.close()
            if self.dry_run:
                shutil.rmtree(work, ignore_errors=True)
        report.seconds = round(time.monotonic() - start, 2)
        report.requests = self.requests
        return report

    def _run(self, src: Retrying, src_name: str, work: Path, total: int) -> ReindexReport:
        from index.local import IndexLocked, LocalIndex

        try:
            local = LocalIndex(work / "index", k=self.config.max_distance, blocks=self.config.blocks)
        except IndexLocked as exc:
            holder = str(exc).split("(pid ", 1)[-1].split(")", 1)[0] if "(pid " in str(exc) else "unknown"
            raise ValueError(f"another reindex (pid {holder}) is running with work folder {work}: two runs on "
                             "one destination are refused; wait for it, or stop it and run this again") from None
        state = WorkState(work)
        try:
            self._check_identity(state)
            report = ReindexReport(dry_run=self.dry_run)
            report.resumed_from = state.counts()[0] if (state.get("pass") or 1) == 1 else 0
            self._remove_orphans(local, state)
            sink = None if self.dry_run else Sink(self, src, src_name, state, local)
            try:
                if sink is not None:
                    report.resent = sink.resend()
                whole = (state.get("pass") or 1) > 1 and state.get("search_after") is None  # an update from its start
                self._loop(src, src_name, local, state, sink, report, total)
                if sink is not None:
                    sink.flush(wait=True)
                    if self.slices > 1:
                        processed, kept, _, statuses = state.counts()
                        sink.registry.finish(self.slice_id, {"processed": processed, "kept": kept,
                                                             "statuses": statuses})
                    if self.alias:
                        sink.swap_alias(self.alias)
                        report.alias = self.alias
            except BaseException:
                if sink is not None:
                    sink.abort()
                raise
            else:
                if sink is not None:
                    sink.close()
            processed, kept, flagged, statuses = state.counts()
            report.processed, report.kept, report.flagged, report.statuses = processed, kept, flagged, statuses
            if whole:
                report.gone = max(0, processed - report.unchanged - report.updated - report.added)
            if sink is not None:
                report.handed_over, report.handover_bytes = sink.handed_over, sink.handover_bytes
            report.dropped, report.errors = processed - kept, statuses.get("error", 0)
            if not self.dry_run:
                state.set(finished=True)
                self._save_checkpoint(state, report, finished=True)
            return report
        finally:
            state.close()
            local.close()

    @staticmethod
    def _decisions(work: Path) -> int:
        if not (work / "state.sqlite").exists():
            return 0
        state = WorkState(work)
        try:
            return state.counts()[0]
        finally:
            state.close()

    def _check_identity(self, state: WorkState) -> None:
        identity = self._identity()
        held = state.get("identity")
        if held is None:
            state.set(identity=identity)
        elif held != identity:
            raise ValueError(f"work folder {self.work_dir} belongs to another reindex ({held}); delete it or "
                             "pass another --work-dir")
        elif state.get("finished"):
            if not self.update:
                raise ValueError(f"work folder {self.work_dir} says this reindex finished already; run it with "
                                 f"--update to bring the destination up to date with the source, or delete it (and "
                                 f"{self.checkpoint}) to run again into a new destination")
            run = (state.get("pass") or 1) + 1
            state.set(finished=False, search_after=None, **{"pass": run})
            log.warning("Updating the destination from %s: run %d over the source", self.work_dir, run)
        elif state.counts()[0]:
            log.warning("Resuming reindex from %s: %d documents decided", self.work_dir, state.counts()[0])

    def _remove_orphans(self, local: Any, state: WorkState) -> None:
        """A record the local index committed for a document whose decision was not: remove it,
        so that document is decided again from the state it was first decided in."""
        top = state.max_record_id()
        removed = []
        # decisions are committed a batch at a time: every record of the last uncommitted batch is an orphan
        # (ids are never reused, so they are the ones above top, without gaps wider than a batch)
        window, start = self.batch_size + 3, top + 1
        while found := local.get(range(start, start + window)):
            for record in found:
                log.info("Removing record %d (%s): its decision was not committed", record.id, record.url)
                local.remove(record.id)
                removed.append(record.id)
            start += window
        if removed:  # the next record's id is above these: a later orphan is looked for from there
            state.set(record_hw=max(removed))
        intent = state.get("intent")
        if intent:  # an update replaced or removed a document's record, and its decision was not committed
            group = intent.get("regroup")  # and regrouped another document's record
            if group and not local.get([int(group["record"]["id"])]):
                rid = local.add(Record.from_dict(group["record"]))
                log.info("Putting back record %s of %s as %d: the regroup was not committed", group["record"]["id"],
                         group["record"]["url"], rid)
                state.moved(group["sid"], rid, end_intent=False)
            own = intent.get("own")
            if own and not local.get([int(own["id"])]):
                rid = local.add(Record.from_dict(own))
                log.info("Putting back record %s of %s as %d: its update was not committed", own["id"],
                         own["url"], rid)
                state.moved(intent["sid"], rid)
            else:
                state.set(intent=None)

    def _loop(self, src: Retrying, src_name: str, local: Any, state: WorkState, sink: "Sink | None",
              report: ReindexReport, total: int) -> None:
        capture = Capture(local)
        # with worker processes, this one featurizes only a document a worker failed on (as a crawl's)
        decider = Deduplicator(capture, self.config,
                               featurizer=LazyFeaturizer(self.config) if self.workers else None)
        updating = (state.get("pass") or 1) > 1  # an update: every document is read again
        make = self._page_maker()
        done = report.resumed_from
        if self.progress:
            self.progress(done, total)
        # source id -> (its earlier decision, body key, source key, the stale drop line it is decided again for: URL,
        # offset and the key of the _source it holds; None when not decided again for one)
        known: dict[str, tuple[Any, str, str, tuple[str, int, str | None] | None]] = {}
        logged: dict[str, str] = {}

        def logged_source(sid: str) -> str | None:
            """The source key of the ``_source`` in ``sid``'s latest drop line (read once, when first asked)."""
            if not logged:
                logged.update(self._logged_sources() or {"": ""})
            return logged.get(sid)

        drops: list[Any] = []  # the dropped log, folded (read once, when first asked)

        def drop_line_of(url: str) -> dict[str, Any] | None:
            """The drop line of ``url`` when the log holds it as dropped (its verdict the latest), else None."""
            if not drops:
                drops.append(read_log(self.dropped_log) if self.dropped_log.is_file() else None)
            entry = drops[0].get(url) if drops[0] is not None else None
            return drops[0].line(entry) if entry is not None and entry.state == "dropped" else None

        def todo() -> Iterator[tuple[dict[str, Any], list[Any]]]:
            nonlocal done
            for hit, sort in self._read(src, src_name, state.get("search_after")):
                sid = str(hit["_id"])
                row = state.doc(sid)
                if row is not None and row[4] is None and not updating:
                    continue  # read again after a resume: decided before (by a version keeping no keys)
                source = make.source(hit)
                skey, data = source_keys(hit["_source"], source)
                same = row is not None and row[5] is not None and row[5] == (
                    skey if len(row[5]) != 16 else legacy_source_key(hit["_source"]))  # 16: an earlier version's
                body = None if same else body_key(data)
                if row is not None and row[4] is None and not row[1] and logged_source(sid) == skey:
                    # dropped by a version keeping no keys: its drop line holds the _source it was decided on
                    state.set_keys(sid, source_key=skey, body=body)
                    body = None
                if row is not None and body in (None, row[4]):
                    if body is None:  # unchanged since it was decided: nothing to do, nothing to write
                        report.unchanged += updating
                    else:  # the same page, other fields changed
                        self._refresh(hit, row, skey, state, sink, drop_line_of(source.url or sid) if not row[1]
                                      else None)
                        report.updated += 1
                    if updating:
                        done += 1
                        if self.progress:
                            self.progress(done, max(total, done))
                    continue
                known[sid] = (row, body, skey, None)
                yield hit, sort

        def again(todo: dict[str, dict[str, tuple[int, str | None]] | None]) -> Iterator[tuple[dict[str, Any], None]]:
            """The documents of ``todo`` (source id -> where each of its stale drop lines starts and the key of the
            ``_source`` it holds, by URL; None: a flagged one) read again by id, a batch a request, to be decided
            as updates (the read position stays where the read ended). One at another URL now is not: that line is
            an older URL's, which its document no longer has."""
            ids_all = self._keep_order(src, src_name, list(todo))
            for i in range(0, len(ids_all), self.read_size):
                ids = ids_all[i:i + self.read_size]
                got = src.call("read documents to decide again", src.client.mget, index=src_name, ids=ids)
                for hit in got.get("docs", []):
                    if not hit.get("found"):
                        continue  # gone from the source since it was read
                    sid = str(hit["_id"])
                    row = state.doc(sid)
                    source = make.source(hit)
                    url, lines = source.url or sid, todo.get(sid)
                    if lines and url not in lines:
                        continue
                    skey, data = source_keys(hit["_source"], source)
                    known[sid] = (row, body_key(data), skey, (url, *lines[url]) if lines else None)
                    report.decided_again += 1
                    yield hit, None

        def decide(hit: dict[str, Any], sort: list[Any] | None, page: Page | None, features: Any) -> None:
            nonlocal done
            sid = str(hit["_id"])
            row, body, skey, at = known.pop(sid)
            capture.added.clear()
            if row is None:
                verdict = self._decide(hit, page, features, decider)
                record = capture.added[-1] if capture.added else None
                rid, ops = record.id if record else None, None
                report.added += updating
            else:
                verdict, record, rid, ops = self._redecide(hit, page, features, decider, capture, row, state)
                report.updated += sort is not None
            es_rid = None
            if rid is not None and record is None:  # the record stays as it was (an unchanged text)
                es_rid = row[3]
            elif record is not None:
                from .records import record_id

                es_rid = record_id(record)
            if at is not None and not verdict.kept and row is not None and not row[1] and at[2] == skey:
                # dropped again with the very _source its drop line holds: an event naming that line, not the _source
                # again (another _source, if only a tag changed, is logged whole: restore puts back the one logged)
                payload = dropped_again(at[0], at[1], verdict.to_dict(), self._fetched_at(hit["_source"]))
            else:
                payload = self._payload(hit, verdict, page, body)
            # a slice hands its kept pages' query features to the final pass (decided without parsing):
            # serialised here once, then kept, sized and sent as this text
            handover = (handover_json(decider.query_features(page, features)) if self.slices > 1
                        and record is not None and page is not None and not isinstance(features, str) else None)
            sent = payload_json(payload)  # serialised once: kept in the work folder, sized and sent as it is
            state.record(sid, status=verdict.status, kept=verdict.kept, record_id=rid, es_record_id=es_rid,
                         payload=sent, after=sort, handover=handover, body=body, source_key=skey, ops=ops,
                         commit=False)
            # committed a batch at a time: by the sink before it sends the batch, else (a dry run) here
            if sink is not None:
                sink.add(sid, verdict.kept, record, payload, handover, ops, body=sent)
            elif state.uncommitted >= self.batch_size:
                state.commit()
            if sort is None:
                return  # decided again after the read: not one more document read
            done += 1
            if self.on_decided:
                self.on_decided(done)
            if self.progress:
                self.progress(done, max(total, done))

        for hit, sort, page, features in self._featured(todo(), decider):
            decide(hit, sort, page, features)
        # Once every document was read, the unchanged ones whose verdict the update's changes made stale
        # (_stale_ids): the page a copy was decided against may come after it in the read order (an edited page has
        # a newer time). A round's decisions can leave a copy naming another copy decided after it (copies of a
        # rewritten page each match another): the next round decides it again, up to STALE_ROUNDS rounds.
        for _ in range(STALE_ROUNDS if updating else 0):
            if sink is not None:
                sink.flush(wait=True)  # the drop lines of this run's decisions are in the log before it is read
            todo = self._stale_ids(state, local, decider)
            before = report.decided_again
            for hit, _, page, features in self._featured(again(todo), decider):
                decide(hit, None, page, features)
            if report.decided_again == before:
                break  # nothing to decide again (or only documents gone from the source, or moved to another URL)

    def _stale_ids(self, state: WorkState, local: Any, decider: Deduplicator
                   ) -> dict[str, dict[str, tuple[int, str | None]] | None]:
        """Source ids of the documents decided before whose text is unchanged but whose verdict is stale: kept
        as copies of a page that changed or went (:meth:`Deduplicator.root_changed`, as a crawl decides such a
        page again: one ``get`` of their records a batch, one ``by_url`` each), or dropped as copies of a page
        that holds their text no more or whose group is kept for another page now (:func:`drop_stale`, from their
        drop lines: the log read once, its line read again for the source id of a stale one; only the line of the
        URL the document has now counts, read again). helper-22, helper-24: such copies stayed out of the
        destination, or named a page with other text, after ``--update``."""
        # source id -> URL -> its stale drop line's offset and the key of the _source it holds (None: a flagged one)
        out: dict[str, dict[str, tuple[int, str | None]] | None] = {}
        for rows in state.flagged():
            part = dict(rows)  # record id -> source id
            out.update((part[r.id], None) for r in local.get(list(part)) if decider.root_changed(r))
        if not self.dropped_log.is_file():
            return out
        drop_log = read_log(self.dropped_log)
        for entry in drop_log.entries:
            if entry.state == "dropped" and drop_stale(decider, entry):
                item = drop_log.item(entry)
                sid = str(item.get("id")) if item.get("source_index") == self.source_uri else None
                row = state.doc(sid) if sid is not None else None
                if row is not None and not row[1]:  # this reindex's, and still dropped
                    logged = item.get("source")
                    out.setdefault(sid, {})[entry.url] = (  # type: ignore[index]
                        entry.offset, source_key(logged) if isinstance(logged, dict) else None)
        return out

    def _keep_order(self, src: Retrying, name: str, ids: list[str]) -> list[str]:
        """``ids`` in the keep rule's order (:func:`.reindex_read.keep_order`), from their sort fields alone (one
        ``mget`` a batch): decided in that order, the page a group keeps is the one the rule keeps."""
        if len(ids) < 2:
            return ids
        fields = [next(iter(spec)).removesuffix(".keyword") for spec in self.sort]
        docs: list[tuple[str, dict[str, Any]]] = []
        for i in range(0, len(ids), self.read_size):
            got = src.call("read the keep fields of documents to decide again", src.client.mget, index=name,
                           ids=ids[i:i + self.read_size], source_includes=fields)
            docs += [(str(h["_id"]), h.get("_source") or {}) for h in got.get("docs", []) if h.get("found")]
        found = keep_order(docs, self.sort)
        return found + sorted(set(ids) - set(found))  # gone since: skipped when read

    def _redecide(self, hit: dict[str, Any], page: Page | None, features: Any, decider: Deduplicator,
                  capture: Capture, row: tuple, state: WorkState
                  ) -> tuple[Verdict, Record | None, int | None, dict[str, Any]]:
        """The decision on a document decided before whose page changed: an update of its own record
        (``Deduplicator.process``, with the record of its URL being that one). Returns the verdict, the
        record to send (None: none, or the older one unchanged), the local record id the decision names
        and what else its sending does: ``old_record``, the Elasticsearch id of the older record to delete;
        ``delete_doc``, the destination document to delete (dropped now); ``kept_event``, the URL whose
        drop the log is told is over (kept now); ``keep_verdict``, the destination's verdict stays (the
        text is unchanged: only the ``_source`` is written)."""
        _, was_kept, own_id, own_es, _, _ = row
        own = capture.index.get([own_id])[0] if own_id else None
        if page is None or isinstance(features, str):  # unreadable now: reported, its older record stays
            verdict = self._decide(hit, page, features, decider)
            return verdict, None, own.id if own else None, {}
        # the older record is kept in the work state until this decision is committed (a kill between
        # the local index's change and the commit puts it back: see _remove_orphans)
        intent = {"sid": str(hit["_id"]), "own": own.to_dict() if own else None}
        state.set(intent=intent)
        fetched_at = self._fetched_at(hit["_source"])
        capture.own = (page.url, own)
        try:
            verdict = decider.process(page, features=features, fetched_at=fetched_at, regroup=False)
        finally:
            capture.own = None
        regroup = self._regroup(decider, capture, state, verdict, page.url, intent)
        if verdict.refetched and own is not None and verdict.scores.get("record") == own.id:
            # the same text (other HTML around it): the record and the destination's verdict stay
            return verdict, None, own.id, {"keep_verdict": True}
        if verdict.refetched:
            # another document of the corpus with this URL holds this text: a copy of it, as a first run says
            verdict = decider.check(page, features, own=own)
            verdict.extraction = page.extraction
            verdict.kept = not self.config.drops(verdict)
            if verdict.kept:
                decider.add(page, features, verdict, instead_of=own, fetched_at=fetched_at)
            elif own is not None:
                capture.index.remove(own.id)
        ops: dict[str, Any] = {}
        record = capture.added[-1] if capture.added and verdict.kept else None
        from .records import record_id

        if own_es is not None and (record is None or record_id(record) != own_es):
            ops["old_record"] = own_es
        if not verdict.kept:
            ops["delete_doc"] = True
        elif not was_kept:
            ops["kept_event"] = page.url
        if regroup:
            ops["regroup"] = regroup
        return verdict, record, record.id if record else None, ops

    def _regroup(self, decider: Deduplicator, capture: Capture, state: WorkState, verdict: Verdict, url: str,
                 intent: dict[str, Any]) -> dict[str, Any] | None:
        """A document put back as an exact copy of its own flagged copy: that copy is its group's kept page now
        (:meth:`Deduplicator.regroup`, as a crawl's), in the local index and the work folder here, in the
        destination and the dedup records when the decision is sent (the ``regroup`` op). The intent holds its
        older record until the decision is committed."""
        target = decider.regroup_target(verdict, url)
        sid = state.source_of(target.id) if target is not None else None
        if sid is None:
            return None
        state.set(intent={**intent, "regroup": {"sid": sid, "record": target.to_dict()}})
        now = decider.regroup(verdict, target)
        capture.added[:] = [r for r in capture.added if r is not now]  # not this decision's record
        from .records import record_id

        row = state.doc(sid)
        state.regrouped(sid, now.id, record_id(now))
        return {"sid": sid, "url": target.url, "from": url, "record": now.id, "old_es": row[3] if row else None}

    def _refresh(self, hit: dict[str, Any], row: tuple, skey: str, state: WorkState, sink: "Sink | None",
                 line: dict[str, Any] | None = None) -> None:
        """A document whose page is unchanged but whose other fields changed: a kept one gets its new
        ``_source`` with the verdict it has in the destination; a dropped one stays out, and its drop line
        (``line``, as the log holds it) is logged again with the new ``_source``: what ``restore`` puts back
        (helper-31: it put back the older one). The read position is not committed: documents read before it may
        still be undecided."""
        sid = str(hit["_id"])
        status, kept, rid, es_rid, body, _ = row
        if not kept:
            item = (line or {}).get("item")
            if not isinstance(item, dict) or str(item.get("id")) != sid or item.get("source_index") != self.source_uri:
                state.set_keys(sid, source_key=skey)  # no drop line of it to renew (restored since, or an older log)
                return
            # source_key: a resend tells this line from the one it renews (same body key): reindex_check.logged_key
            renewed = {**line, "time": iso_now(), "source_key": skey,  # type: ignore[dict-item]
                       "item": {**item, "fetched_at": self._fetched_at(hit["_source"]), "source": hit["_source"]}}
            state.record(sid, status=status, kept=False, record_id=rid, es_record_id=es_rid, payload=renewed,
                         after=None, body=body, source_key=skey, ops={}, commit=False)
            if sink is not None:
                sink.add(sid, False, None, renewed, None, {})
            return
        # the verdict the destination holds is read when it is sent; this one stands in when it lacks it
        payload = {**hit["_source"], "dedup": {"status": status, "duplicate_of": None,
                                               "rule": "replay_of_recorded_page", "refetched": True}}
        ops = {"keep_verdict": True}
        state.record(sid, status=status, kept=True, record_id=rid, es_record_id=es_rid, payload=payload, after=None,
                     body=body, source_key=skey, ops=ops, commit=False)
        if sink is not None:
            sink.add(sid, True, None, payload, None, ops)

    def _fetched_at(self, source: dict[str, Any]) -> float:
        """A document's time (its time field, as epoch seconds; 0 without one): its record's ``fetched_at``."""
        return epoch_seconds(field_value(source, self.time_field), 0.0)

    def _featured(self, hits: Iterator[tuple[dict[str, Any], list[Any]]], decider: Deduplicator
                  ) -> Iterator[tuple[dict[str, Any], list[Any], Page | None, Any]]:
        return featured(hits, self._page_maker(), decider, workers=self.workers)

    def _read(self, src: Retrying, index: str, after: list[Any] | None) -> Iterator[tuple[dict[str, Any], list[Any]]]:
        """``(hit, sort values)`` in keep-rule order after ``after`` (:func:`.reindex_read.read_sorted`), read one
        page ahead by a thread (:func:`.reindex_read.read_ahead`) while this one decides."""
        return read_ahead(read_sorted(src, index, sort=self.sort, size=self.read_size, keep_alive=self.keep_alive,
                                      slice_=(self.slice_id, self.slices) if self.slices > 1 else None, after=after),
                          depth=self.read_size)

    def _decide(self, hit: dict[str, Any], page: Page | None, features: Any, decider: Deduplicator) -> Verdict:
        """The verdict of a page whose features are computed (``Deduplicator.process`` with the
        features given); a document that could not be read is kept with status ``error``."""
        if page is None or isinstance(features, str):
            log.warning("Reindex: document %s could not be checked: %s", hit["_id"], features)
            return Verdict("error", None, "error", {"error": str(features)}, kept=True)
        verdict = decider.check(page, features)
        verdict.kept = not self.config.drops(verdict)
        if verdict.kept:
            decider.add(page, features, verdict, fetched_at=self._fetched_at(hit["_source"]))
        return verdict

    @property
    def extracts_text(self) -> bool:
        """Whether the pages' text comes from HTML alone (no text field in the source): the destination then
        keeps each kept page's extracted main text in :data:`EXTRACTED_TEXT`, which ``dedup search``
        searches (the HTML field would match navigation and markup, and be slow to highlight)."""
        return bool(self.html_field) and not self.text_field

    def _page_maker(self) -> PageMaker:
        return PageMaker(self.url_source, self.html_field, self.text_field, self.title_field, self.config)

    def _payload(self, hit: dict[str, Any], verdict: Verdict, page: Page | None,
                 body: str | None = None) -> dict[str, Any]:
        """What the cluster (kept) or the dropped log (dropped) gets for this decision."""
        source = hit["_source"]
        if verdict.kept:
            dedup = verdict.to_dict()
            if self.extracts_text and page is not None:
                dedup["text"] = page.text  # what dedup search searches (EXTRACTED_TEXT)
            if self.slices > 1:  # which slice decided it: a slice's --check looks at its own documents only
                dedup["slice"] = self.slice_id
            return {**source, "dedup": dedup}
        url = page.url if page else str(hit["_id"])
        item = {"id": hit["_id"], "url": url, "fetched_at": self._fetched_at(source),
                "source_index": self.source_uri, "source": source}
        # the body key: a drop line is known by (source id, body) when a resend asks whether it is logged
        return drop_line(verdict.to_dict(), item, page, index=self.dest_uri, body=body)

    # -- checks ---------------------------------------------------------------------------------------
    def _identity(self) -> dict[str, Any]:
        return {"source": self.source_uri, "dest": self.dest_uri, "sort": self.sort, "dry_run": self.dry_run,
                "fields": [self.url_field, self.text_field, self.html_field, self.title_field],
                "thresholds": self.config.thresholds(), "slices": self.slices, "slice": self.slice_id}

    def job_key(self) -> str:
        """What every slice of one sliced reindex shares (the destination's marker names it)."""
        import hashlib

        same = {k: v for k, v in self._identity().items() if k not in ("slice", "dry_run")}
        return hashlib.sha1(json.dumps(same, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def _check_source(self, src: Retrying, name: str) -> int:
        """The source's document count, after checking every named field against its mapping."""
        c = src.client
        if not src.call("check the source", c.indices.exists, index=name):
            raise ValueError(f"no source index {name} at {src.url}")
        got = src.call("read the source mapping", c.indices.get_mapping, index=name)
        fields = mapping_fields(next(iter(got.values()))["mappings"])
        texts = sorted(f for f, t in fields.items() if t in _TEXT_TYPES)

        def kinds(types: tuple[str, ...], what: str) -> str:
            """The fields of ``types``; for text, the analysed ones named apart from the keywords (also accepted)."""
            if types != _TEXT_TYPES:
                return f"{what} fields are: {', '.join(sorted(f for f, t in fields.items() if t in types)) or '(none)'}"
            analysed = sorted(f for f, t in fields.items() if t in _ANALYSED_TYPES)
            keywords = sorted(f for f, t in fields.items() if t in _TEXT_TYPES and t not in _ANALYSED_TYPES)
            return (f"text fields are: {', '.join(analysed) or '(none)'}"
                    + (f" (keyword fields: {', '.join(keywords)})" if keywords else ""))

        def need(option: str, name_: str | None, types: tuple[str, ...], what: str) -> None:
            if not name_:
                return
            if name_ not in fields:
                raise ValueError(f"{option} field `{name_}` not in the mapping of `{name}`; {kinds(types, what)}")
            if fields[name_] not in types:
                raise ValueError(f"{option} field `{name_}` of `{name}` is {fields[name_]}, not {what}; "
                                 f"{kinds(types, what)}")

        if self.html_field:
            need("--html-field", self.html_field, _TEXT_TYPES, "text")
            if self.text_field not in fields:
                self.text_field = None  # the default name, absent: the text comes from the HTML only
        if self.text_field and not self.html_field:
            need("--text-field", self.text_field, _TEXT_TYPES, "text")
        if self.title_field == "title" and "title" not in fields:
            self.title_field = None  # the default name, absent: this corpus has no title field
        need("--title-field", self.title_field, _TEXT_TYPES, "text")
        need("--url-field", self.url_field, _SORTABLE, "sortable (keyword)")
        self._pick_time_field(fields, name)
        for spec in self.sort[:-1]:
            key = next(iter(spec))
            need("--time-field" if self.keep in ("oldest", "newest") else "--keep", key, _SORTABLE, "sortable")
        if not texts:
            raise ValueError(f"the mapping of `{name}` has no text field to deduplicate on")
        if self.slices == 1:
            return int(src.call("count the source", c.count, index=name)["count"])
        return self._slice_count(src, name)

    def _slice_count(self, src: Retrying, name: str) -> int:
        """This slice's document count, for the progress (the count API takes no slice: a sliced search of
        no hits in a point in time counts them; the corpus's count over N was shown as if exact)."""
        from .slicing import SLICE_FIELD

        c = src.client
        pit = src.call("open a point in time", c.open_point_in_time, index=name, keep_alive="1m")["id"]
        try:
            got = src.call("count the slice", c.search, pit={"id": pit, "keep_alive": "1m"}, size=0,
                           track_total_hits=True, slice={"field": SLICE_FIELD, "id": self.slice_id, "max": self.slices})
        finally:
            try:
                c.close_point_in_time(id=pit)
            except Exception:  # the point in time expires by itself; never mask the real error
                log.debug("could not close point in time on %s", name, exc_info=True)
        return int(got["hits"]["total"]["value"])

    def resolve_time_field(self, es: Retrying, index: str) -> None:
        """:meth:`_pick_time_field` from the mapping of ``index`` (the final pass reads the destination,
        which has the source's mapping)."""
        if self.time_field_named or self.keep not in ("oldest", "newest"):
            return
        got = es.call("read the mapping", es.client.indices.get_mapping, index=index)
        self._pick_time_field(mapping_fields(next(iter(got.values()))["mappings"]), index)

    def _pick_time_field(self, fields: dict[str, str], name: str) -> None:
        """With ``oldest``/``newest`` and no time field named: ``fetched_at`` when the mapping of ``name``
        has it, else its only date field (said on the log), else ValueError saying what to pass."""
        if self.time_field_named or self.keep not in ("oldest", "newest") or DEFAULT_TIME_FIELD in fields:
            return
        dates = sorted(f for f, t in fields.items() if t in _DATE_TYPES)
        if len(dates) != 1:
            sortable = ", ".join(sorted(f for f, t in fields.items() if t in _SORTABLE)) or "(none)"
            found = f"several date fields: {', '.join(dates)}" if dates else "no date field"
            raise ValueError(f"--keep {self.keep} needs each document's time: `{name}` has no field "
                             f"`{DEFAULT_TIME_FIELD}` and {found}; pass --time-field NAME (sortable fields are: "
                             f"{sortable}) or another keep rule (--keep field:NAME)")
        self.time_field = dates[0]
        self.sort = keep_sort(self.keep, time_field=self.time_field, url_field=self.url_field)
        log.warning("--keep %s: by `%s`, the only date field of `%s` (no `%s`; --time-field names another)",
                    self.keep, self.time_field, name, DEFAULT_TIME_FIELD)

    # -- checkpoint ------------------------------------------------------------------------------------
    def _save_checkpoint(self, state: WorkState, report: ReindexReport | None = None, finished: bool = False) -> None:
        processed, kept, flagged, statuses = state.counts()
        summary = {"identity": self._identity(), "work_dir": str(self.work_dir), "finished": finished,
                   "search_after": state.get("search_after"), "processed": processed, "kept": kept,
                   "flagged": flagged, "dropped": processed - kept, "errors": statuses.get("error", 0),
                   "statuses": statuses}
        tmp = self.checkpoint.with_name(f"{self.checkpoint.name}.{os.getpid()}.tmp")
        tmp.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(summary, indent=1, default=str), encoding="utf-8")
        os.replace(tmp, self.checkpoint)


class _Counting(Retrying):
    """A :class:`Retrying` client that counts the requests it makes (for the report)."""

    def __init__(self, inner: Retrying, job: Reindex) -> None:
        super().__init__(inner.client, inner.url, retry_seconds=inner.retry_seconds)
        self._job = job

    def call(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self._job.count_requests(1)
        return super().call(what, fn, *args, **kwargs)
