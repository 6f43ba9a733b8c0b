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
``reindex-DEST.work`` beside the checkpoint), and the decision is committed there with the read
position (:mod:`.reindex_state`).  The cluster only sees bulk requests: the point-in-time reads,
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
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from dedup.deduplicator import DedupConfig, Deduplicator, Verdict
from dedup.droplog import KEPT, append_events, drop_line, iso_now, iter_lines
from dedup.page import Page
from dedup.record import Record, epoch_seconds
from dedup.sources import LazyFeaturizer, Source, features_from_source, page_from_source, prepare
from dedup.workers import WorkerError, WorkerPool

from .connect import IndexUnavailable, Retrying, connect, describe
from .reindex_state import WorkState
from .search import DEDUP_MAPPING, field_value, pit_pages
from .slicing import handover_json, handover_source

__all__ = ["Reindex", "ReindexReport", "keep_sort", "mapping_fields", "KEEP_RULES", "MARKER"]

log = logging.getLogger(__name__)

KEEP_RULES = ("oldest", "newest", "field:NAME[:asc|desc]")
#: the key of the destination mapping's ``_meta`` naming the run that fills it
MARKER = "dedup_reindex"
#: where a destination reindexed from HTML keeps each kept page's extracted main text (Reindex.extracts_text)
EXTRACTED_TEXT = "dedup.text"
_TEXT_TYPES = ("text", "match_only_text", "keyword", "wildcard")  # what a text, HTML or title field may be
_ANALYSED_TYPES = ("text", "match_only_text")  # of those, the ones an error names as text fields
#: the time field ``oldest`` and ``newest`` sort by when none is named and the source has it
DEFAULT_TIME_FIELD = "fetched_at"
_DATE_TYPES = ("date", "date_nanos")
_SORTABLE = ("keyword", "date", "date_nanos", "long", "integer", "short", "byte", "double", "float",
             "half_float", "scaled_float", "unsigned_long", "boolean", "ip", "version")


def source_key(source: dict[str, Any]) -> str:
    """A 64-bit hash of a source document's whole ``_source`` (16 hex digits): an update skips a document
    whose key is the one it was decided with."""
    import xxhash

    return xxhash.xxh3_64_hexdigest(json.dumps(source, sort_keys=True, ensure_ascii=False, default=str,
                                               separators=(",", ":")).encode("utf-8", "surrogatepass"))


def keep_sort(rule: str, *, time_field: str, url_field: str) -> list[dict[str, Any]]:
    """The sort of a keep rule (see the module docstring)."""
    if rule == "oldest":
        return [{time_field: "asc"}, {url_field: "asc"}]
    if rule == "newest":
        return [{time_field: "desc"}, {url_field: "asc"}]
    if rule.startswith("field:"):
        parts = rule.split(":")
        if len(parts) in (2, 3) and parts[1] and (len(parts) == 2 or parts[2] in ("asc", "desc")):
            return [{parts[1]: parts[2] if len(parts) == 3 else "asc"}, {url_field: "asc"}]
    raise ValueError(f"unknown keep rule {rule!r}; valid: {', '.join(KEEP_RULES)}")


def mapping_fields(mapping: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Dotted field path -> type of every field of an index mapping (multi-fields included)."""
    out: dict[str, str] = {}
    for name, spec in (mapping.get("properties") or {}).items():
        path = prefix + name
        if "properties" in spec:
            out.update(mapping_fields(spec, path + "."))
        else:
            out[path] = spec.get("type", "object")
        for sub, sub_spec in (spec.get("fields") or {}).items():
            out[f"{path}.{sub}"] = sub_spec.get("type", "object")
    return out


@dataclass(frozen=True)
class PageMaker:
    """Builds the page of a source document through the one page path
    (:func:`dedup.sources.page_from_source`): its HTML field parsed, else its text and title
    fields, with the config's input limits, as a crawl builds them.  Picklable, for the worker
    processes."""

    url_field: str
    html_field: str | None
    text_field: str | None
    title_field: str | None
    config: DedupConfig

    def source(self, hit: dict[str, Any]) -> Source:
        """The :class:`~dedup.sources.Source` of a source document (what a worker process is sent)."""
        source = hit["_source"]
        url = str(field_value(source, self.url_field) or hit["_id"])
        return Source.from_document(source, url, html_field=self.html_field, text_field=self.text_field,
                                    title_field=self.title_field)

    def __call__(self, hit: dict[str, Any]) -> Page:
        return page_from_source(self.source(hit), self.config)


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


class _Capture:
    """The local index, remembering the record a decision added (to store its ids with it).  While
    ``own`` is set, ``(url, record)``, the record of ``url`` is that one: an update is decided
    against its own older record, whatever other document of the corpus shares its URL."""

    def __init__(self, index: Any) -> None:
        self.index = index
        self.added: list[Record] = []
        self.own: tuple[str, Record | None] | None = None

    def add(self, record: Record) -> int:
        rid = self.index.add(record)
        self.added.append(record)
        return rid

    def replace(self, record_id: int, record: Record) -> int:
        rid = self.index.replace(record_id, record)
        self.added.append(record)
        return rid

    def by_url(self, url: str) -> Record | None:
        if self.own is not None and self.own[0] == url:
            return self.own[1]
        return self.index.by_url(url)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.index, name)


class Reindex:
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
                 workers: int = 1, slices: int = 1, slice_id: int | None = None, merge: bool = False,
                 dry_run: bool = False, force: bool = False, alias: str | None = None, update: bool = False,
                 es_options: dict[str, Any] | None = None, progress: Callable[[int, int], None] | None = None,
                 on_decided: Callable[[int], None] | None = None) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1 (got {batch_size})")
        if read_size < 1:
            raise ValueError(f"read_size must be >= 1 (got {read_size})")
        if workers < 1:
            raise ValueError(f"workers must be >= 1 (got {workers})")
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
            sink = None if self.dry_run else _Sink(self, src, src_name, state, local)
            try:
                if sink is not None:
                    report.resent = sink.resend()
                self._loop(src, src_name, local, state, sink, report, total)
                if sink is not None:
                    sink.flush()
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
        for record in local.get(range(top + 1, top + 4)):
            log.info("Removing record %d (%s): its decision was not committed", record.id, record.url)
            local.remove(record.id)
            removed.append(record.id)
        if removed:  # the next record's id is above these: a later orphan is looked for from there
            state.set(record_hw=max(removed))
        intent = state.get("intent")
        if intent:  # an update replaced or removed a document's record, and its decision was not committed
            own = intent.get("own")
            if own and not local.get([int(own["id"])]):
                rid = local.add(Record.from_dict(own))
                log.info("Putting back record %s of %s as %d: its update was not committed", own["id"],
                         own["url"], rid)
                state.moved(intent["sid"], rid)
            else:
                state.set(intent=None)

    def _loop(self, src: Retrying, src_name: str, local: Any, state: WorkState, sink: "_Sink | None",
              report: ReindexReport, total: int) -> None:
        capture = _Capture(local)
        # with worker processes, this one featurizes only a document a worker failed on (as a crawl's)
        decider = Deduplicator(capture, self.config,
                               featurizer=LazyFeaturizer(self.config) if self.workers > 1 else None)
        updating = (state.get("pass") or 1) > 1  # an update: every document is read again
        make = self._page_maker()
        done = report.resumed_from
        if self.progress:
            self.progress(done, total)
        known: dict[str, tuple[Any, str, str]] = {}  # source id -> (its earlier decision, body key, source key)
        logged: dict[str, str] = {}

        def logged_source(sid: str) -> str | None:
            """The source key of the ``_source`` in ``sid``'s latest drop line (read once, when first asked)."""
            if not logged:
                logged.update(self._logged_sources() or {"": ""})
            return logged.get(sid)

        def todo() -> Iterator[tuple[dict[str, Any], list[Any]]]:
            nonlocal done
            for hit, sort in self._read(src, src_name, state.get("search_after")):
                sid = str(hit["_id"])
                row = state.doc(sid)
                if row is not None and row[4] is None and not updating:
                    continue  # read again after a resume: decided before (by a version keeping no keys)
                skey = source_key(hit["_source"])
                body = None if row is not None and row[5] == skey else make.source(hit).body_key
                if row is not None and row[4] is None and not row[1] and logged_source(sid) == skey:
                    # dropped by a version keeping no keys: its drop line holds the _source it was decided on
                    state.set_keys(sid, source_key=skey, body=body)
                    body = None
                if row is not None and body in (None, row[4]):
                    if body is None:  # unchanged since it was decided: nothing to do, nothing to write
                        report.unchanged += updating
                    else:  # the same page, other fields changed
                        self._refresh(hit, row, skey, state, sink)
                        report.updated += 1
                    if updating:
                        done += 1
                        if self.progress:
                            self.progress(done, max(total, done))
                    continue
                known[sid] = (row, body, skey)
                yield hit, sort

        for hit, sort, page, features in self._featured(todo(), decider):
            sid = str(hit["_id"])
            row, body, skey = known.pop(sid)
            capture.added.clear()
            if row is None:
                verdict = self._decide(hit, page, features, decider)
                record = capture.added[-1] if capture.added else None
                rid, ops = record.id if record else None, None
                report.added += updating
            else:
                verdict, record, rid, ops = self._redecide(hit, page, features, decider, capture, row, state)
                report.updated += 1
            es_rid = None
            if rid is not None and record is None:  # the record stays as it was (an unchanged text)
                es_rid = row[3]
            elif record is not None:
                from .records import record_id

                es_rid = record_id(record)
            payload = self._payload(hit, verdict, page, body)
            # a slice hands its kept pages' query features to the final pass (decided without parsing):
            # serialised here once, then kept, sized and sent as this text
            handover = (handover_json(decider.query_features(page, features)) if self.slices > 1
                        and record is not None and page is not None and not isinstance(features, str) else None)
            state.record(sid, status=verdict.status, kept=verdict.kept, record_id=rid, es_record_id=es_rid,
                         payload=payload, after=sort, handover=handover, body=body, source_key=skey, ops=ops)
            done += 1
            if sink is not None:
                sink.add(sid, verdict.kept, record, payload, handover, ops)
            if self.on_decided:
                self.on_decided(done)
            if self.progress:
                self.progress(done, max(total, done))

    def _redecide(self, hit: dict[str, Any], page: Page | None, features: Any, decider: Deduplicator,
                  capture: _Capture, row: tuple, state: WorkState
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
        state.set(intent={"sid": str(hit["_id"]), "own": own.to_dict() if own else None})
        fetched_at = epoch_seconds(field_value(hit["_source"], self.time_field), 0.0)
        capture.own = (page.url, own)
        try:
            verdict = decider.process(page, features=features, fetched_at=fetched_at)
        finally:
            capture.own = None
        if verdict.refetched and own is not None and verdict.scores.get("record") == own.id:
            # the same text (other HTML around it): the record and the destination's verdict stay
            return verdict, None, own.id, {"keep_verdict": True}
        if verdict.refetched:
            # another document of the corpus with this URL holds this text: a copy of it, as a first run says
            verdict = decider.check(page, features, own=own)
            verdict.extraction = page.extraction
            verdict.kept = verdict.status not in self.config.drop
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
        return verdict, record, record.id if record else None, ops

    def _refresh(self, hit: dict[str, Any], row: tuple, skey: str, state: WorkState, sink: "_Sink | None") -> None:
        """A document whose page is unchanged but whose other fields changed: a kept one gets its new
        ``_source`` with the verdict it has in the destination; a dropped one stays out (its keys are kept).
        The read position is not committed: documents read before it may still be undecided."""
        sid = str(hit["_id"])
        status, kept, rid, es_rid, body, _ = row
        if not kept:
            state.set_keys(sid, source_key=skey)
            return
        # the verdict the destination holds is read when it is sent; this one stands in when it lacks it
        payload = {**hit["_source"], "dedup": {"status": status, "duplicate_of": None,
                                               "rule": "replay_of_recorded_page", "refetched": True}}
        ops = {"keep_verdict": True}
        state.record(sid, status=status, kept=True, record_id=rid, es_record_id=es_rid, payload=payload, after=None,
                     body=body, source_key=skey, ops=ops)
        if sink is not None:
            sink.add(sid, True, None, payload, None, ops)

    def _featured(self, hits: Iterator[tuple[dict[str, Any], list[Any]]], decider: Deduplicator
                  ) -> Iterator[tuple[dict[str, Any], list[Any], Page | None, Any]]:
        """``(hit, sort, page, features or error text)`` in read order: computed here with one
        worker, else by worker processes (:class:`dedup.workers.WorkerPool` running
        :func:`dedup.sources.features_from_source`, as a crawl's do) one read page ahead of the
        decisions (which stay here).  A document a worker failed on is done again here, which
        reports its error as the one-worker run does."""
        make = self._page_maker()

        def here(hit: dict[str, Any]) -> tuple[Page | None, Any]:
            try:
                page = make(hit)
                return page, decider.featurizer(page)
            except Exception as exc:  # a bad document is reported and kept, never the end of the job
                return None, f"{type(exc).__name__}: {exc}"

        if self.workers == 1:
            for hit, sort in hits:
                yield hit, sort, *here(hit)
            return
        from itertools import islice

        with WorkerPool(self.workers) as pool:
            pool.broadcast(prepare, self.config)  # the workers load while the first page is read

            def ask(hit: dict[str, Any]) -> Any:
                try:
                    return pool.submit(features_from_source, make.source(hit), self.config)
                except Exception:  # every worker has exited, or a hit that is no document: done here
                    return None

            ahead: list[tuple[dict[str, Any], list[Any], Any]] = []
            while True:
                batch = [(hit, sort, ask(hit)) for hit, sort in islice(hits, self.read_size)]
                for hit, sort, future in ahead:
                    try:
                        page, features = here(hit) if future is None else future.result()
                    except WorkerError:  # a bad document (reported as with one worker) or a worker that died
                        page, features = here(hit)
                    yield hit, sort, page, features
                if not batch:
                    return
                ahead = batch

    def _read(self, src: Retrying, index: str, after: list[Any] | None) -> Iterator[tuple[dict[str, Any], list[Any]]]:
        """``(hit, sort values)`` in keep-rule order after ``after``, through a point in time that is
        reopened at the last position when it is lost (expired, or the server restarted)."""
        from elasticsearch import NotFoundError

        c = src.client
        pit = None
        try:
            while True:
                if pit is None:
                    pit = src.call("open a point in time", c.open_point_in_time, index=index,
                                   keep_alive=self.keep_alive)["id"]
                body: dict[str, Any] = {"pit": {"id": pit, "keep_alive": self.keep_alive}, "size": self.read_size,
                                        "sort": self.sort, "track_total_hits": False}
                if self.slices > 1:
                    from .slicing import SLICE_FIELD

                    body["slice"] = {"field": SLICE_FIELD, "id": self.slice_id, "max": self.slices}
                if after is not None:
                    body["search_after"] = after
                try:
                    got = src.call("read documents", c.search, **body)
                except NotFoundError as exc:
                    log.warning("Point in time on %s lost (%s); reopening it after the last document read",
                                index, describe(exc))
                    pit = None
                    continue
                pit = got.get("pit_id", pit)
                hits = got["hits"]["hits"]
                for hit in hits:
                    yield hit, hit["sort"]
                    after = hit["sort"]
                if len(hits) < self.read_size:
                    return
        finally:
            if pit is not None:
                try:
                    c.close_point_in_time(id=pit)
                except Exception:  # the PIT expires by itself; never mask the real error
                    log.debug("could not close point in time on %s", index, exc_info=True)

    def _decide(self, hit: dict[str, Any], page: Page | None, features: Any, decider: Deduplicator) -> Verdict:
        """The verdict of a page whose features are computed (``Deduplicator.process`` with the
        features given); a document that could not be read is kept with status ``error``."""
        if page is None or isinstance(features, str):
            log.warning("Reindex: document %s could not be checked: %s", hit["_id"], features)
            return Verdict("error", None, "error", {"error": str(features)}, kept=True)
        verdict = decider.check(page, features)
        verdict.kept = verdict.status not in self.config.drop
        if verdict.kept:
            fetched_at = epoch_seconds(field_value(hit["_source"], self.time_field), 0.0)
            decider.add(page, features, verdict, fetched_at=fetched_at)
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
        item = {"id": hit["_id"], "url": url, "fetched_at": epoch_seconds(field_value(source, self.time_field), 0.0),
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

    # -- consistency check -------------------------------------------------------------------------------
    def check(self) -> dict[str, Any]:
        """Compare the destination, ``DEST-dedup`` and the dropped log with the work folder: what
        each lacks, what each holds that no decision explains.  ``report["ok"]`` when all agree."""
        from . import dedup_name

        if self.merging:
            raise ValueError("--check compares one run's work folder with the cluster: check each slice "
                             "(--slices N --slice I --check); the final pass keeps no work folder")
        if not (self.work_dir / "state.sqlite").exists():
            raise ValueError(f"no work folder {self.work_dir} to check against (pass --work-dir)")
        state = WorkState(self.work_dir)
        es, name = self._connect(self.dest_uri)
        try:
            kept, dropped = state.ids(kept=True), state.ids(kept=False)
            unsent = sum(1 for _ in state.unsent())
            merged: set[str] = set()
            if self.slices > 1:
                # the final pass may have dropped kept documents of this slice (into its own log), and
                # the destination holds every slice's documents: only this slice's are compared
                from .slicing import Registry

                merged = set(Registry(es, name).drops(self.slice_id)) & set(kept)
                kept = {k: v for k, v in kept.items() if k not in merged}
            dest_ids = self._all_ids(es, name, slice_id=self.slice_id)
            record_ids = self._all_ids(es, dedup_name(name))
            want_records = {str(r) for r in kept.values() if r is not None}
            logged, restored = self._log_states()
            pending = {k for k, *_ in state.unsent()}
            report = {
                "destination": name, "decided": len(kept) + len(dropped) + unsent, "unsent": unsent,
                "kept": len(kept), "dropped": len(dropped), "restored": len(restored),
                "dropped_by_final_pass": len(merged),
                "missing_in_destination": sorted((set(kept) | restored) - dest_ids),
                "unexpected_in_destination": sorted(dest_ids - set(kept) - set(dropped) - pending),
                "dropped_but_in_destination": sorted(((set(dropped) | merged) - restored) & dest_ids),
                "missing_records": sorted(want_records - record_ids),
                "missing_in_dropped_log": sorted(set(dropped) - logged - restored),
                "kept_but_in_dropped_log": sorted(set(kept) & (logged | restored)),
            }
            report["ok"] = not any(v for k, v in report.items() if isinstance(v, list))
            return report
        finally:
            es.close()
            state.close()

    def _all_ids(self, es: Retrying, index: str, slice_id: int | None = None) -> set[str]:
        """The ids of ``index`` (with ``slice_id``: of the documents that slice wrote, by their
        ``dedup.slice``; restored documents, which carry none, count for every slice)."""
        if not es.call("check an index", es.client.indices.exists, index=index):
            return set()
        ids: set[str] = set()
        for hits in pit_pages(es, index, "list document ids", size=5000,
                              _source=["dedup.slice"] if slice_id is not None else False):
            ids.update(h["_id"] for h in hits if slice_id is None or
                       ((h.get("_source") or {}).get("dedup") or {}).get("slice", slice_id) == slice_id)
        return ids

    def _logged_ids(self) -> set[str]:
        """Source ids this reindex has in the dropped log (restored ones included)."""
        dropped, restored = self._log_states()
        return dropped | restored

    def _log_states(self) -> tuple[set[str], set[str]]:
        """``(dropped, restored)`` source ids of this reindex in the dropped log, read line by line
        (append-only: a later ``restored`` event of a URL restores the latest drop of it, a ``kept``
        event says an update kept it)."""
        state, _ = self._read_log()
        return ({s for s, v in state.items() if v == "dropped"}, {s for s, v in state.items() if v == "restored"})

    def _logged_lines(self) -> tuple[set[tuple[str, str | None]], set[str]]:
        """``(source id, body key)`` of this reindex's drop lines in the dropped log, and the source ids
        whose latest line is a ``kept`` event: what a resend must not log again."""
        state, lines = self._read_log()
        return lines, {s for s, v in state.items() if v == KEPT}

    def _logged_sources(self) -> dict[str, str]:
        """Source id -> :func:`source_key` of the ``_source`` its latest drop line in the dropped log holds."""
        out: dict[str, str] = {}
        if self.dropped_log.exists():
            for _, _, entry, _ in iter_lines(self.dropped_log):
                item = (entry or {}).get("item")
                if isinstance(item, dict) and item.get("source_index") == self.source_uri and "id" in item \
                        and isinstance(item.get("source"), dict):
                    out[str(item["id"])] = source_key(item["source"])
        return out

    def _read_log(self) -> tuple[dict[str, str], set[tuple[str, str | None]]]:
        state: dict[str, str] = {}
        lines: set[tuple[str, str | None]] = set()
        url_ids: dict[str, str] = {}
        if self.dropped_log.exists():
            with self.dropped_log.open(encoding="utf-8") as f:
                for line in f:
                    try:
                        entry = json.loads(line)
                    except ValueError:
                        continue
                    if not isinstance(entry, dict):
                        continue
                    item = entry.get("item")
                    if isinstance(item, dict) and item.get("source_index") == self.source_uri and "id" in item:
                        sid = str(item["id"])
                        state[sid], url_ids[str(entry.get("url"))] = "dropped", sid
                        lines.add((sid, entry.get("body")))
                    elif entry.get("event") in ("restored", KEPT) and str(entry.get("url")) in url_ids:
                        state[url_ids[str(entry["url"])]] = entry["event"]
        return state, lines


class _Counting(Retrying):
    """A :class:`Retrying` client that counts the requests it makes (for the report)."""

    def __init__(self, inner: Retrying, job: Reindex) -> None:
        super().__init__(inner.client, inner.url, retry_seconds=inner.retry_seconds)
        self._job = job

    def call(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self._job.requests += 1
        return super().call(what, fn, *args, **kwargs)


class _Sink:
    """The cluster side of a run: destination, its dedup records and the dropped log, written in bulk."""

    def __init__(self, job: Reindex, src: Retrying, src_name: str, state: WorkState, local: Any) -> None:
        from . import dedup_name
        from .records import ElasticIndex

        self.job, self.state, self.local = job, state, local
        self.es, self.name = job._connect(job.dest_uri)
        self.created: list[str] = []
        self.registry: Any = None
        self.features: str | None = None  # a slice's hand-over index (DEST-slices-features)
        self.handed_over = self.handover_bytes = 0
        try:
            self._open_dest(src, src_name)
            if job.slices > 1:
                from .slicing import FEATURES_MAPPING, Registry, ensure_index, features_name

                self.registry = Registry(self.es, self.name)
                self.registry.register(job.slice_id, job.slices, state.run_id(), str(job.work_dir.resolve()),
                                       force=job.force)
                self.features = features_name(self.name)
                ensure_index(self.es, self.features, FEATURES_MAPPING, "final pass's hand-over index")
            existed = self.es.call("check the dedup index", self.es.client.indices.exists,
                                   index=dedup_name(self.name))
            self.records = ElasticIndex(self.es, dedup_name(self.name), k=job.config.max_distance,
                                        blocks=job.config.blocks)
            if not existed:
                self.created.append(dedup_name(self.name))
        except BaseException:
            self._remove_created()
            self.es.close()
            raise
        self.kept: list[tuple[str, dict[str, Any], Record | None]] = []
        self.handover: dict[str, str] = {}  # source id -> query features (JSON text), with the kept
        self.dropped: list[tuple[str, dict[str, Any]]] = []
        self.ops: dict[str, dict[str, Any]] = {}  # source id -> what else sending its decision does (updates)
        self.pending_bytes = 0
        self.sent_any = False
        # while resending: (source id, body key) of the drop lines already in the dropped log, and the
        # source ids whose latest word there is a `kept` event
        self.logged: set[tuple[str, str | None]] | None = None
        self.kept_logged: set[str] = set()

    # -- set-up and the rerun guard -------------------------------------------------------------------
    def _open_dest(self, src: Retrying, src_name: str) -> None:
        c = self.es.client
        job = self.job
        run = self.state.run_id()
        marker = {"run": run, "source": job.source_uri, "work_dir": str(job.work_dir.resolve()),
                  "url_field": job.url_source, "url_key": job.url_field, "text_field": job.text_field, "html_field": job.html_field,
                  "title_field": job.title_field, "started": iso_now()}
        if job.extracts_text:  # the main text extracted from the HTML, which dedup search searches
            marker["extracted_text_field"] = EXTRACTED_TEXT
        if job.slices > 1:  # every slice of the job writes here: the marker names the job, not one run
            marker.update(job=job.job_key(), slices=job.slices)
        if not self.es.call("check the destination", c.indices.exists, index=self.name):
            got = src.call("read the source mapping", src.client.indices.get_mapping, index=src_name)
            mapping = next(iter(got.values()))["mappings"]
            mapping = {**mapping, "properties": {**mapping.get("properties", {}), "dedup": DEDUP_MAPPING},
                       "_meta": {**(mapping.get("_meta") or {}), MARKER: marker}}
            got = src.call("read the source settings", src.client.indices.get_settings, index=src_name)
            settings = next(iter(got.values()))["settings"]["index"]
            new_settings = {"analysis": settings["analysis"]} if "analysis" in settings else {}
            self._searchable(mapping, new_settings)
            from elasticsearch import BadRequestError

            try:
                self.es.call("create the destination", c.indices.create, index=self.name, mappings=mapping,
                             settings=new_settings)
            except BadRequestError as exc:
                if "resource_already_exists" not in str(exc):
                    raise
                self._guard(marker)  # another run created it between our check and our create
                return
            self.created.append(self.name)
            return
        self._guard(marker)

    def _searchable(self, mapping: dict[str, Any], settings: dict[str, Any]) -> None:
        """Make the text ``dedup search`` searches searchable in the destination: of a corpus whose text
        comes from HTML alone, the extracted main text (:data:`EXTRACTED_TEXT`, analysed as a crawl's index
        analyses ``text``: case and accent folding, Porter stemming; the HTML field is left as the source maps
        it); else a text field left unindexed in the source is indexed, and an HTML field beside it through the
        ``html_strip`` character filter.  Only top-level source fields are changed."""
        job = self.job
        name = job.html_field or job.text_field
        props = mapping["properties"]
        if job.extracts_text:
            settings.setdefault("analysis", {}).setdefault("analyzer", {})["dedup_text"] = {
                "type": "custom", "tokenizer": "standard", "filter": ["lowercase", "asciifolding", "porter_stem"]}
            dedup = props["dedup"]
            props["dedup"] = {**dedup, "properties": {**dedup["properties"],
                                                      "text": {"type": "text", "analyzer": "dedup_text"}}}
            return
        if not name or "." in name or name not in props:
            return
        spec = dict(props[name])
        if job.html_field:
            analysis = settings.setdefault("analysis", {})
            analysis.setdefault("analyzer", {})["dedup_html"] = {
                "type": "custom", "char_filter": ["html_strip"], "tokenizer": "standard",
                "filter": ["lowercase", "asciifolding"]}
            spec.update(type="text", analyzer="dedup_html", index=True)
        elif spec.get("index") is False:
            spec["index"] = True
        props[name] = spec

    def _guard(self, marker: dict[str, Any]) -> None:
        got = self.es.call("read the destination mapping", self.es.client.indices.get_mapping, index=self.name)
        held = (next(iter(got.values()))["mappings"].get("_meta") or {}).get(MARKER)
        if held and held.get("run") == marker["run"]:
            return
        if held and marker.get("job") and held.get("job") == marker["job"]:
            return  # another slice of the same sliced reindex
        if not self.job.force:
            who = (f"another reindex (run {held.get('run')}, from {held.get('source')}, work folder "
                   f"{held.get('work_dir')}, started {held.get('started')})" if held else
                   "documents no reindex of this tool wrote")
            raise ValueError(f"destination {self.name} already exists and holds {who}; pick a new destination, "
                             "resume that run with its work folder, or pass --force to write into it anyway")
        log.warning("--force: taking over destination %s (marker %s)", self.name, held)
        self.es.call("mark the destination", self.es.client.indices.put_mapping, index=self.name,
                     meta={MARKER: marker})

    def _remove_created(self) -> None:
        for name in self.created:  # a failed start leaves nothing behind
            try:
                self.es.client.options(ignore_status=404).indices.delete(index=name)
            except Exception:
                log.debug("could not delete %s", name, exc_info=True)
        self.created = []

    # -- writing ----------------------------------------------------------------------------------------
    def resend(self) -> int:
        """Send the decisions an interrupted run made but the cluster never acknowledged."""
        rows = list(self.state.unsent())
        if not rows:
            return 0
        self.logged, self.kept_logged = self.job._logged_lines()
        records = {r.id: r for r in self.local.get([rid for _, _, rid, _, ops in rows if rid and not
                                                    ops.get("keep_verdict")])}
        handovers = self.state.handovers()
        for sid, kept, rid, payload, ops in rows:
            self.add(sid, kept, records.get(rid) if rid else None, payload, handovers.get(sid), ops)
        self.flush()
        self.logged, self.kept_logged = None, set()
        log.warning("Resent %d decisions the interrupted run had not written", len(rows))
        return len(rows)

    def add(self, sid: str, kept: bool, record: Record | None, payload: dict[str, Any],
            handover: str | None = None, ops: dict[str, Any] | None = None) -> None:
        """One decision to send; ``handover``: a kept page's query features as JSON text (a slice's);
        ``ops``: an update's other writes (:meth:`Reindex._redecide` says which)."""
        size = len(json.dumps(payload, default=str))
        if ops:
            self.ops[sid] = ops
        if kept:
            self.kept.append((sid, payload, record))
            if handover is not None and self.features:
                self.handover[sid] = handover
                size += len(handover)
        else:
            self.dropped.append((sid, payload))
        self.pending_bytes += size
        if len(self.kept) + len(self.dropped) >= self.job.batch_size or self.pending_bytes >= self.job.bulk_bytes:
            self.flush()

    def flush(self) -> None:
        if not self.kept and not self.dropped:
            return
        ops = self.ops
        self._keep_verdicts([payload for sid, payload, _ in self.kept if ops.get(sid, {}).get("keep_verdict")],
                            [sid for sid, _, _ in self.kept if ops.get(sid, {}).get("keep_verdict")])
        docs = [{"_op_type": "index", "_index": self.name, "_id": sid, "_source": payload}
                for sid, payload, _ in self.kept]
        docs += [{"_op_type": "delete", "_index": self.name, "_id": sid}  # an update dropped it
                 for sid, _ in self.dropped if ops.get(sid, {}).get("delete_doc")]
        from .records import record_actions

        kept_records = [(sid, r) for sid, _, r in self.kept if r is not None]
        sliced = self.job.slices > 1
        if sliced:
            for sid, r in kept_records:  # the final pass finds a document's record by its source id
                r.extra["source_id"] = sid
        records = record_actions(self.records, [r for _, r in kept_records], claim=sliced)
        # an updated document's older record goes (one record per URL); an id written in this batch is
        # not deleted: within one run over the source, a delete of an id always comes before its write
        written = {a["_id"] for a in records}
        records += [{"_op_type": "delete", "_index": self.records.name, "_id": str(o["old_record"])}
                    for o in ops.values() if o.get("old_record") and str(o["old_record"]) not in written]
        self._bulk(docs, f"write {len(docs)} documents to {self.name}")
        conflicts = self._bulk(records, f"write {len(records)} dedup records to {self.records.name}",
                               conflicts=sliced)
        if conflicts:
            self._contested(conflicts, dict(kept_records))
        if self.handover:  # after the records: the final pass reads a page's features beside its record
            handed = [{"_op_type": "index", "_index": self.features, "_id": sid,
                       "_source": handover_source(self.job.slice_id, q)} for sid, q in self.handover.items()]
            self._bulk(handed, f"hand {len(handed)} pages' query features to the final pass ({self.features})")
            self.handed_over += len(handed)
            self.handover_bytes += sum(len(a["_source"]) for a in handed)
        events = [{"event": KEPT, "url": ops[sid]["kept_event"], "time": iso_now(),
                   "status": payload["dedup"]["status"]}
                  for sid, payload, _ in self.kept
                  if ops.get(sid, {}).get("kept_event") and sid not in self.kept_logged]
        if self.dropped or events:
            self.job.dropped_log.parent.mkdir(parents=True, exist_ok=True)
            self.job.dropped_log.touch()
            append_events(self.job.dropped_log, [line for sid, line in self.dropped if self.logged is None
                                                 or (sid, line.get("body")) not in self.logged] + events)
        self.state.mark_sent([sid for sid, *_ in self.kept] + [sid for sid, _ in self.dropped])
        self.job._save_checkpoint(self.state)
        self.kept, self.dropped, self.pending_bytes, self.handover, self.ops = [], [], 0, {}, {}
        self.sent_any = True
        self.created = []  # the destination holds this run's documents now: never removed

    def _keep_verdicts(self, payloads: list[dict[str, Any]], sids: list[str]) -> None:
        """Documents whose text is unchanged keep the verdict the destination holds (one ``mget``);
        the payload's own verdict stands in for one the destination lacks."""
        if not sids:
            return
        got = self.es.call("read the verdicts of unchanged texts", self.es.client.mget, index=self.name, ids=sids,
                           source_includes=["dedup"])
        held = {d["_id"]: d["_source"]["dedup"] for d in got["docs"]
                if d.get("found") and isinstance((d.get("_source") or {}).get("dedup"), dict)}
        for sid, payload in zip(sids, payloads):
            if sid in held:
                payload["dedup"] = held[sid]

    def _contested(self, conflicts: list[dict[str, Any]], by_sid: dict[str, Record]) -> None:
        """Content claims refused with 409: a claim this slice wrote before an interruption is
        its own (a replay); another slice's means another slice kept the same content, and the
        record goes under its page id, for the final pass to decide (see :mod:`.reindex_slices`)."""
        from .records import page_record_id, record_actions

        got = self.es.call("read contested claims", self.es.client.mget, index=self.records.name,
                           ids=[a["_id"] for a in conflicts])
        holders = {d["_id"]: ((d.get("_source") or {}).get("extra") or {}).get("source_id")
                   for d in got["docs"] if d.get("found")}
        moved: list[tuple[str, Record]] = []
        for action in conflicts:
            sid = action["_source"]["extra"]["source_id"]
            if holders.get(action["_id"]) != sid:
                moved.append((sid, by_sid[sid]))
        if not moved:
            return
        ids = {n: page_record_id(r) for n, (_, r) in enumerate(moved)}
        self._bulk(record_actions(self.records, [r for _, r in moved], ids=ids),
                   f"write {len(moved)} contested dedup records to {self.records.name}")
        self.state.set_es_record_ids({sid: ids[n] for n, (sid, _) in enumerate(moved)})
        log.info("%d record(s) hold content another slice kept too: the final pass (--merge) decides them",
                 len(moved))

    @staticmethod
    def swap_alias_on(es: Retrying, name: str, alias: str) -> None:
        c = es.client
        got = es.call("read the alias", c.options(ignore_status=404).indices.get_alias, name=alias)
        actions = [{"remove": {"index": other, "alias": alias}} for other in got
                   if isinstance(got.get(other), dict) and other != name]
        actions.append({"add": {"index": name, "alias": alias}})
        es.call("swap the alias", c.indices.update_aliases, actions=actions)
        log.info("Alias %s now points to %s", alias, name)

    def _bulk(self, actions: list[dict[str, Any]], what: str, *, conflicts: bool = False) -> list[dict[str, Any]]:
        """``actions`` through ``streaming_bulk``; items refused for a transient reason are sent again
        within the retry budget, any other refusal is an error naming the document, except, with
        ``conflicts``, a 409 of a ``create``: those actions are returned."""
        from elasticsearch import helpers

        if not actions:
            return []
        todo = actions
        refused: list[dict[str, Any]] = []
        start, delay = time.monotonic(), 0.5
        while True:
            failed: list[tuple[dict[str, Any], int, str]] = []

            def send() -> None:
                failed.clear()
                for (ok, item), action in zip(helpers.streaming_bulk(
                        self.es.client, todo, chunk_size=self.job.batch_size, max_chunk_bytes=self.job.bulk_bytes,
                        raise_on_error=False, raise_on_exception=True, max_retries=0), todo):
                    if not ok:
                        info = next(iter(item.values()))
                        if action["_op_type"] == "delete" and int(info.get("status", 0)) == 404:
                            continue  # deleted already (a resend, or a document never written)
                        failed.append((action, int(info.get("status", 0)), str(info.get("error", ""))[:200]))

            self.es.call(what, send)
            self.job.requests += max(0, -(-len(todo) // self.job.batch_size) - 1)  # one call counted per chunk
            if conflicts:
                refused += [a for a, status, _ in failed if status == 409 and a["_op_type"] == "create"]
                failed = [f for f in failed if not (f[1] == 409 and f[0]["_op_type"] == "create")]
            if not failed:
                return refused
            transient = [f for f in failed if f[1] in (429, 502, 503, 504)]
            if len(transient) < len(failed):
                bad = [f for f in failed if f[1] not in (429, 502, 503, 504)]
                shown = "; ".join(f"{a['_id']} ({s}: {r})" for a, s, r in bad[:3])
                raise ValueError(f"{self.es.url}/{self.name} refused {len(bad)} document(s) while trying to {what}: "
                                 f"{shown}")
            if time.monotonic() - start + delay > self.es.retry_seconds:
                raise IndexUnavailable(f"Elasticsearch at {self.es.url} kept refusing {len(transient)} document(s) "
                                       f"while trying to {what} for {self.es.retry_seconds:g} s")
            time.sleep(delay)
            delay = min(delay * 2, 10.0)
            todo = [a for a, _, _ in transient]

    def swap_alias(self, alias: str) -> None:
        self.swap_alias_on(self.es, self.name, alias)

    def close(self) -> None:
        try:
            self.es.call("refresh the destination", self.es.client.indices.refresh,
                         index=f"{self.name},{self.records.name}")
        finally:
            self.es.close()

    def abort(self) -> None:
        """The run failed: indices it created and never wrote to go (a failed start leaves nothing)."""
        try:
            if not self.sent_any and not self.state.counts()[0]:
                self._remove_created()
        finally:
            self.es.close()

