"""Writing a reindex's decisions (see :mod:`.reindex` for the whole job): the destination, created
with the source's mapping and the run's marker, its dedup records (``DEST-dedup``) and the dropped
log, all in bulk.  One batch is written by a thread of its own while the job decides the next
(:meth:`Sink.flush`), and the batch is marked sent in the work folder only when the cluster has
acknowledged it, so a kill at any moment leaves the unacknowledged decisions to be sent again."""
from __future__ import annotations

import json
import logging
import time
from typing import Any

from dedup.droplog import KEPT, append_events, iso_now
from dedup.record import Record

from .connect import IndexUnavailable, Retrying
from .reindex_state import WorkState
from .search import DEDUP_MAPPING
from .slicing import handover_source

__all__ = ["Sink", "MARKER", "EXTRACTED_TEXT", "swap_alias"]

log = logging.getLogger(__name__)

#: the key of the destination mapping's ``_meta`` naming the run that fills it
MARKER = "dedup_reindex"
#: where a destination reindexed from HTML keeps each kept page's extracted main text (Reindex.extracts_text)
EXTRACTED_TEXT = "dedup.text"

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
        swap_alias(self.es, self.name, alias)

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

