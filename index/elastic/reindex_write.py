"""Writing a reindex's decisions (see :mod:`.reindex` for the whole job): the destination, created
with the source's mapping and the run's marker, its dedup records (``DEST-dedup``) and the dropped
log, all in bulk.  One batch is written by a thread of its own while the job decides the next
(:meth:`Sink.flush`), and the batch is marked sent in the work folder only when the cluster has
acknowledged it, so a kill at any moment leaves the unacknowledged decisions to be sent again."""
from __future__ import annotations

import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from dedup.deduplicator import regrouped_verdict
from dedup.droplog import KEPT, append_events, iso_now
from dedup.record import Record

from .connect import IndexUnavailable, Retrying, describe
from .reindex_check import logged_key
from .reindex_state import WorkState
from .search import DEDUP_MAPPING
from .serialise import dumps
from .slicing import handover_source

__all__ = ["Sink", "MARKER", "EXTRACTED_TEXT", "swap_alias", "payload_json"]

log = logging.getLogger(__name__)

#: the key of the destination mapping's ``_meta`` naming the run that fills it
MARKER = "dedup_reindex"
#: where a destination reindexed from HTML keeps each kept page's extracted main text (Reindex.extracts_text)
EXTRACTED_TEXT = "dedup.text"

def payload_json(payload: dict[str, Any]) -> bytes:
    """A decision's payload (the destination's document, or the drop line) as the JSON bytes the work folder
    keeps and the bulk request sends: serialised once a document (a source page is tens of KB), with orjson
    when installed (:mod:`.serialise`)."""
    return dumps(payload)


def swap_alias(es: Retrying, name: str, alias: str) -> None:
    """Point ``alias`` at ``name`` alone, in one request (the other indices it named are removed from it)."""
    c = es.client
    got = es.call("read the alias", c.options(ignore_status=404).indices.get_alias, name=alias)
    actions = [{"remove": {"index": other, "alias": alias}} for other in got
               if isinstance(got.get(other), dict) and other != name]
    actions.append({"add": {"index": name, "alias": alias}})
    es.call("swap the alias", c.indices.update_aliases, actions=actions)
    log.info("Alias %s now points to %s", alias, name)


class Sink:
    """The cluster side of a run: destination, its dedup records and the dropped log, written in bulk."""

    def __init__(self, job: Any, src: Retrying, src_name: str, state: WorkState, local: Any) -> None:
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
            self.refresh_paused: dict[str, Any] | None = None
            self._pause_refresh()
        except BaseException:
            self._remove_created()
            self.es.close()
            raise
        self.kept: list[tuple[str, dict[str, Any], Record | None, bytes]] = []
        self.handover: dict[str, str] = {}  # source id -> query features (JSON text), with the kept
        self.dropped: list[tuple[str, dict[str, Any], bytes]] = []  # (source id, drop line, its JSON bytes)
        self.ops: dict[str, dict[str, Any]] = {}  # source id -> what else sending its decision does (updates)
        self.pending_bytes = 0
        self.sent_any = False
        # while resending: what tells the lines already in the dropped log (reindex_check.logged_key), and the
        # source ids whose latest word there is a `kept` event
        self.logged: set[tuple[str, str | None]] | None = None
        self.kept_logged: set[str] = set()
        # one batch is written while the next is decided (flush); made last: every path out of a Sink
        # that was made ends in close() or abort(), which stop it
        self.in_flight: tuple[tuple[Any, ...], Future] | None = None
        self.writer = ThreadPoolExecutor(1, thread_name_prefix="dedup-reindex-write")

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
        self.flush(wait=True)
        self.logged, self.kept_logged = None, set()
        log.warning("Resent %d decisions the interrupted run had not written", len(rows))
        return len(rows)

    def add(self, sid: str, kept: bool, record: Record | None, payload: dict[str, Any],
            handover: str | None = None, ops: dict[str, Any] | None = None, *, body: bytes | None = None) -> None:
        """One decision to send; ``handover``: a kept page's query features as JSON text (a slice's);
        ``ops``: an update's other writes (:meth:`Reindex._redecide` says which); ``body``: the payload as
        the JSON bytes it is sent as (:func:`payload_json`, made once by the caller, which keeps the same
        text in the work folder), made here when not given."""
        if body is None:
            body = payload_json(payload)
        size = len(body)
        if ops and ops.get("regroup"):  # the regrouped document's record, read here (this thread owns the index)
            group = ops["regroup"]
            found = self.local.get([int(group["record"])])
            ops = {**ops, "regroup": {**group, "_record": found[0] if found else None}}
        if ops:
            self.ops[sid] = ops
        if kept:
            self.kept.append((sid, payload, record, body))
            if handover is not None and self.features:
                self.handover[sid] = handover
                size += len(handover)
        else:
            self.dropped.append((sid, payload, body))
        self.pending_bytes += size
        if len(self.kept) + len(self.dropped) >= self.job.batch_size or self.pending_bytes >= self.job.bulk_bytes:
            self.flush()

    def flush(self, *, wait: bool = False) -> None:
        """Send the decisions added since the last flush, as one batch written by the writer thread while
        the job decides on; the batch before is waited for first (one batch in flight: at most two
        batches of decisions are held in memory, and the work folder marks a batch sent, in this thread,
        only once the cluster has acknowledged every write of it).  ``wait``: and wait for this one."""
        # the batch's decisions are committed in the work folder before any of it is sent (a resend asks the
        # work folder what was decided: a write or a drop line of an uncommitted decision would be repeated)
        self.state.commit()
        if self.kept or self.dropped:
            batch = (self.kept, self.dropped, self.handover, self.ops)
            self.kept, self.dropped, self.pending_bytes, self.handover, self.ops = [], [], 0, {}, {}
            self.wait()
            self.in_flight = (batch, self.writer.submit(self._write, *batch))
        if wait:
            self.wait()

    def wait(self) -> None:
        """Wait for the batch in flight; when the cluster acknowledged it, log its drops and mark it sent."""
        if self.in_flight is None:
            return
        batch, future = self.in_flight
        self.in_flight = None
        self._sent(*batch, *future.result())

    def _write(self, kept: list[tuple[str, dict[str, Any], Record | None, bytes]],
               dropped: list[tuple[str, Any, bytes]],
               handover: dict[str, str], ops: dict[str, dict[str, Any]]
               ) -> tuple[list[dict[str, Any]], list[tuple[str, Record]]]:
        """The cluster's writes of one batch (in the writer thread): the kept documents and the deletes of
        an update's dropped ones, their records, a slice's hand-over.  Returns the refused content claims
        and the batch's kept records (for :meth:`_contested`)."""
        keep = [(sid, payload) for sid, payload, _, _ in kept if ops.get(sid, {}).get("keep_verdict")]
        self._keep_verdicts([p for _, p in keep], [sid for sid, _ in keep])
        kept_verdict = {sid for sid, _ in keep}
        # the payload's JSON bytes go as they are (the client sends bytes unchanged); a payload whose verdict
        # the destination's replaced is serialised again
        docs = [{"_op_type": "index", "_index": self.name, "_id": sid,
                 "_source": payload if sid in kept_verdict else body} for sid, payload, _, body in kept]
        docs += [{"_op_type": "delete", "_index": self.name, "_id": sid}  # an update dropped it
                 for sid, *_ in dropped if ops.get(sid, {}).get("delete_doc")]
        from .records import record_actions

        groups = [o["regroup"] for o in ops.values() if o.get("regroup")]
        # a document put back as an exact copy of its own copy: that copy's document and record say it is its
        # group's kept page now (Reindex._regroup)
        docs += [{"_op_type": "update", "_index": self.name, "_id": g["sid"], "doc": {"dedup": regrouped_verdict(g["from"])}}
                 for g in groups]
        regrouped = [g["_record"] for g in groups if g.get("_record") is not None]
        kept_records = [(sid, r) for sid, _, r, _ in kept if r is not None]
        sliced = self.job.slices > 1
        if sliced:
            for sid, r in kept_records:  # the final pass finds a document's record by its source id
                r.extra["source_id"] = sid
        records = record_actions(self.records, [r for _, r in kept_records] + regrouped, claim=sliced)
        # an updated document's older record goes (one record per URL); an id written in this batch is
        # not deleted: within one run over the source, a delete of an id always comes before its write
        written = {a["_id"] for a in records}
        older = [o.get("old_record") for o in ops.values()] + [g.get("old_es") for g in groups if g.get("_record")]
        records += [{"_op_type": "delete", "_index": self.records.name, "_id": str(rid)}
                    for rid in older if rid and str(rid) not in written]
        self._bulk(docs, f"write {len(docs)} documents to {self.name}")
        conflicts = self._bulk(records, f"write {len(records)} dedup records to {self.records.name}",
                               conflicts=sliced)
        if handover:  # after the records: the final pass reads a page's features beside its record
            handed = [{"_op_type": "index", "_index": self.features, "_id": sid,
                       "_source": handover_source(self.job.slice_id, q)} for sid, q in handover.items()]
            self._bulk(handed, f"hand {len(handed)} pages' query features to the final pass ({self.features})")
            self.handed_over += len(handed)
            self.handover_bytes += sum(len(a["_source"]) for a in handed)
        return conflicts, kept_records

    def _sent(self, kept: list[tuple[str, dict[str, Any], Record | None, bytes]], dropped: list[tuple[str, Any, bytes]],
              handover: dict[str, str], ops: dict[str, dict[str, Any]], conflicts: list[dict[str, Any]],
              kept_records: list[tuple[str, Record]]) -> None:
        """A batch the cluster acknowledged (in the job's thread, which owns the work folder): contested
        claims moved, drops and ``kept`` events logged, the batch marked sent, the checkpoint saved."""
        if conflicts:
            self._contested(conflicts, dict(kept_records))
        events = [{"event": KEPT, "url": ops[sid]["kept_event"], "time": iso_now(),
                   "status": payload["dedup"]["status"]}
                  for sid, payload, _, _ in kept
                  if ops.get(sid, {}).get("kept_event") and sid not in self.kept_logged]
        if dropped or events:
            self.job.dropped_log.parent.mkdir(parents=True, exist_ok=True)
            self.job.dropped_log.touch()
            # a drop line goes as the bytes the work folder kept (serialised once)
            append_events(self.job.dropped_log, [body for sid, line, body in dropped if self.logged is None
                                                 or logged_key(sid, line) not in self.logged] + events)
        self.state.mark_sent([sid for sid, *_ in kept] + [sid for sid, *_ in dropped])
        self.job._save_checkpoint(self.state)
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
            self.job.count_requests(max(0, -(-len(todo) // self.job.batch_size) - 1))  # one call counted per chunk
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
        swap_alias(self.es, self.name, alias)

    # -- refresh off during the run ----------------------------------------------------------------------
    def _pause_refresh(self) -> None:
        """Refresh off (``refresh_interval: -1``) on the destination and ``DEST-dedup`` for the run: nothing
        searches them before it ends (the job decides against its embedded index; what it reads back, an
        update's verdicts and a slice's contested claims, are realtime GETs), and a refresh every second
        makes a new segment of each index to merge later.  The intervals they had are kept in the work
        folder first, so that a run killed with refresh off has them put back by the run that ends the job.
        An interval of -1 found there is taken for another slice's pause (restored as the default)."""
        names = [self.name, self.records.name]
        held = self.state.get("refresh_intervals")
        if held is None:
            got = self.es.call("read the refresh intervals", self.es.client.indices.get_settings, index=",".join(names))
            held = {n: ((got.get(n) or {}).get("settings", {}).get("index", {}) or {}).get("refresh_interval")
                    for n in names}
            held = {n: None if v in ("-1", -1) else v for n, v in held.items()}
            self.state.set(refresh_intervals=held)
        self.es.call("turn refresh off for the run", self.es.client.indices.put_settings, index=",".join(names),
                     settings={"index": {"refresh_interval": "-1"}})
        self.refresh_paused = held

    def _restore_refresh(self) -> None:
        """The refresh intervals the indices had before the run (None: the cluster's default, 1 s)."""
        if self.refresh_paused is None:
            return
        for name, value in self.refresh_paused.items():
            self.es.call("restore the refresh interval", self.es.client.indices.put_settings, index=name,
                         settings={"index": {"refresh_interval": value}})
        self.refresh_paused = None

    def close(self) -> None:
        """The run's end: the last batch acknowledged, refresh back on, everything written searchable."""
        try:
            self.wait()
            self._restore_refresh()
            self.state.set(refresh_intervals=None)
            self.es.call("refresh the destination", self.es.client.indices.refresh,
                         index=f"{self.name},{self.records.name}")
        finally:
            self.writer.shutdown()
            self.es.close()

    def abort(self) -> None:
        """The run failed: the batch in flight is let end (acknowledged: marked sent; refused: sent again by
        the next run), refresh goes back on (the next run turns it off again), and indices it created and
        never wrote to go (a failed start leaves nothing)."""
        try:
            try:
                self.wait()
            except Exception:  # the failure being handled is the one the caller raises
                log.debug("the batch in flight failed too", exc_info=True)
            try:
                self._restore_refresh()
            except Exception as exc:  # the cluster is gone too: one line, the failure itself is reported
                log.warning("Could not turn refresh back on for %s (%s): the next run of this job does", self.name,
                            describe(exc))
            if not self.sent_any and not self.state.counts()[0]:
                self._remove_created()
        finally:
            self.writer.shutdown()
            self.es.close()
