"""Sliced reindexing: N processes share one corpus, then one final pass joins their decisions.

``dedup reindex SRC DEST --slices N --slice I`` reads slice ``I`` of ``N`` of the source through
a sliced point in time and decides it as an unsliced run decides the whole corpus (its own work
folder, ``reindex-DEST.slice-I-of-N.work``; resumable; bulk writes).  The slice is taken on the
``_id`` field (``slice: {field: _id, id: I, max: N}``), not on Elasticsearch's default for a
point in time (Lucene doc ids), which only partitions the corpus when every slice reads the
*same* point in time: here each process, and each resume after a lost point in time, opens its
own, and ``_id`` hashing gives the same partition every time.

Across slices nothing is decided until the **final pass** (``--merge``), run once when every
slice is finished (on any machine that reaches the cluster):

* During the slices, a kept record that claims its content is written to ``DEST-dedup`` with
  ``op_type=create`` (the crawl path's claim, in bulk).  A 409 naming a record of another slice
  means another slice kept the same content: the record is written under its page id instead,
  so both stay visible to the final pass and the shared index never holds two claims.
* The final pass reads the documents of ``DEST`` in the keep rule's order (the destination has
  the source's mapping, so the same sort works) and decides each kept document again against the
  documents kept before it by *any* slice, in an embedded index holding their records from
  ``DEST-dedup`` as they are: the decisions an unsliced run makes, over the documents the slices
  kept.  A record keeps only a sketch of the page's shingles and its heaviest terms, which is what
  the *candidate* side of a check reads in one process too, but the *query* side reads the page's
  whole features.  So each slice, when it writes a kept page's record, also hands over the page's
  query features (``Deduplicator.query_features``: the whole term vector, the 256-hash shingle
  sketch, the exact signature, the counts, ~4 KB of base64) in ``DEST-slices-features`` (one
  document per source ``_id``, stored, not indexed), and the final pass reads them with each batch's
  records (one ``mget`` a batch) and decides with ``Deduplicator.check_query_features``: the
  verdict ``check`` gives the page, without parsing it again.  That index is deleted when the
  final pass ends.  A kept document with no features handed over (a slice of an older version, or
  a final pass run again after one that ended) is checked from its record
  (``Deduplicator.check_record``), whose verdict is the page's when it is an exact copy or has no
  candidate (``dedup.deduplicator.SAME_FROM_RECORD``); otherwise it is parsed again from ``DEST``
  (which holds the source's fields) and decided from its own features (counted in the report's
  ``reparsed``).  A document that is now an
  exact duplicate (a status of ``drop``) is deleted from ``DEST`` and ``DEST-dedup`` and logged in
  the final pass's dropped log; a document whose verdict changed (a copy of another slice's
  document) gets the new verdict (kept, flagged).

What it gives: one copy per exact group, the earliest in the keep order, as one process keeps
(content equality is transitive, so which slice saw a copy first does not matter); near copies
across slices are flagged.  Where it can differ from one process: a document a slice *dropped*
is not decided again, so when its slice's copy is itself dropped by the final pass, its
``duplicate_of`` names that dropped copy; with a ``drop`` that includes near statuses a chain
of near copies spread over slices can end with a different kept set (near similarity is not
transitive).  Ties of the keep rule (equal sort values) are ordered by shard position, which
may differ between the source and the destination.

The state shared by the slices lives in the cluster, in ``DEST-slices``: one document per slice
(its run, work folder, host, finished or not; the rerun guard of a slice) and one per document the
final pass dropped (the drop line, so a final pass killed half-way and run again decides the
same, and a slice's ``--check`` knows which of its kept documents the final pass took away);
the slices' hand-over of query features lives in ``DEST-slices-features`` until a final pass ends.
"""
from __future__ import annotations

import logging
import shutil
import socket
import tempfile
from pathlib import Path
from typing import Any, Iterator

from dedup.deduplicator import SAME_FROM_RECORD
from dedup.droplog import append_events, drop_line, iso_now
from dedup.record import Record

from .connect import Retrying
from .reindex import Reindex, ReindexReport
from .reindex_write import swap_alias
from .search import pit_pages
from .slicing import SLICE_FIELD, Registry, features_name, slices_name

__all__ = ["SLICE_FIELD", "Registry", "features_name", "merge", "pit_pages", "slices_name"]

log = logging.getLogger(__name__)


def _dest_in_order(es: Retrying, name: str, sort: list[dict[str, Any]], size: int
                   ) -> Iterator[list[dict[str, Any]]]:
    """Batches of ``DEST``'s documents (id and verdict) in keep-rule order."""
    return pit_pages(es, name, "read the destination", size=size, sort=sort, _source=["dedup"])


def _record_ids(es: Retrying, name: str) -> dict[str, int]:
    """Source id -> record id of every record a reindex wrote to ``name`` (``DEST-dedup``)."""
    out: dict[str, int] = {}
    for hits in pit_pages(es, name, "list dedup records", size=5000, _source=["id", "extra.source_id"]):
        for h in hits:
            sid = (h["_source"].get("extra") or {}).get("source_id")
            if sid is not None:
                out[str(sid)] = int(h["_source"]["id"])
    return out


def merge(job: "Reindex") -> "ReindexReport":
    """The final pass of a sliced reindex (see the module docstring)."""
    import time

    from index.local import LocalIndex

    from dedup.deduplicator import Deduplicator

    from . import dedup_name

    start = time.monotonic()
    es, name = job._connect(job.dest_uri)
    report = ReindexReport()
    registry = Registry(es, name)
    work = Path(tempfile.mkdtemp(prefix="dedup-merge-"))
    try:
        held = registry.slices()
        wrong = sorted(i for i, d in held.items() if d.get("of") != job.slices)
        if wrong:
            raise ValueError(f"{registry.name} holds slices of another split ({held[wrong[0]].get('of')} slices, "
                             f"not {job.slices}): run the final pass with that --slices")
        missing = [i for i in range(job.slices) if i not in held]
        unfinished = [i for i in range(job.slices) if i in held and not held[i].get("finished")]
        if missing or unfinished:
            parts = ([f"never started: {', '.join(map(str, missing))}"] if missing else []) + (
                [f"not finished: {', '.join(map(str, unfinished))}"] if unfinished else [])
            raise ValueError(f"cannot run the final pass of {name}: slice(s) {'; '.join(parts)} (of {job.slices}); "
                             "run each `--slices N --slice I` command to its end first")
        records_name = dedup_name(name)
        job.resolve_time_field(es, name)  # the slices' keep order (the destination has the source's mapping)
        es.call("refresh the destination", es.client.indices.refresh, index=f"{name},{records_name}")
        done = registry.drops()
        rids = _record_ids(es, records_name)
        handover = features_name(name)
        if not es.call("check the hand-over index", es.client.indices.exists, index=handover):
            log.warning("Final pass: no %s (slices of an older version, or a final pass that ended before): "
                        "documents with a candidate are parsed again", handover)
            handover = None
        local = LocalIndex(work / "index", k=job.config.max_distance, blocks=job.config.blocks)
        decider = Deduplicator(local, job.config)
        try:
            for hits in _dest_in_order(es, name, job.sort, job.read_size):
                _merge_batch(job, es, name, registry, decider, hits, rids, done, report, handover)
        finally:
            local.close()
        # the dropped log last: the drops are in the registry, so a rerun completes the log
        logged = job._logged_ids()
        lines = [line for sid, line in registry.drops().items() if sid not in logged]
        job.dropped_log.parent.mkdir(parents=True, exist_ok=True)
        job.dropped_log.touch()
        if lines:
            append_events(job.dropped_log, lines)
        es.call("refresh the destination", es.client.indices.refresh, index=f"{name},{records_name}")
        report.dropped = len(done) + report.dropped
        report.seconds = round(time.monotonic() - start, 2)
        report.requests = job.requests
        registry.mark_merged(report.to_dict())
        if handover:  # the final pass is done: the slices' hand-over is no longer needed
            es.call("delete the hand-over index", es.client.options(ignore_status=404).indices.delete,
                    index=handover)
        if job.alias:
            swap_alias(es, name, job.alias)
            report.alias = job.alias
        return report
    finally:
        shutil.rmtree(work, ignore_errors=True)
        es.close()


def _merge_batch(job: "Reindex", es: Retrying, name: str, registry: Registry, decider: Any,
                 hits: list[dict[str, Any]], rids: dict[str, int], done: dict[str, Any],
                 report: "ReindexReport", handover: str | None = None) -> None:
    from . import dedup_name

    c = es.client
    todo = [h for h in hits if h["_id"] not in done]
    want = [rids[h["_id"]] for h in todo if h["_id"] in rids]
    got = es.call("read records", c.mget, index=dedup_name(name), ids=[str(i) for i in want]) if want else {"docs": []}
    records = {}
    for d in got["docs"]:
        if d.get("found"):
            r = Record.from_dict(d["_source"])
            records[str(r.extra.get("source_id"))] = r
    # the query features each slice handed over for its kept pages (one request for the batch)
    queries: dict[str, dict[str, Any]] = {}
    if handover and records:
        got = es.call("read the slices' query features", c.mget, index=handover, ids=list(records))
        queries = {d["_id"]: d["_source"]["q"] for d in got["docs"] if d.get("found") and "q" in d["_source"]}
    drops: list[tuple[str, Any, Record]] = []
    updates: list[dict[str, Any]] = []
    # the batch's documents, read when one must be parsed (then they also serve the drop lines)
    sources: dict[str, dict[str, Any]] | None = None
    for hit in todo:
        sid = str(hit["_id"])
        report.processed += 1
        record = records.get(sid)
        old = (hit.get("_source") or {}).get("dedup") or {}
        if record is None:  # kept without a record (a document that could not be read): nothing to compare
            _count(report, old.get("status", "unique"), kept=True)
            continue
        query = queries.get(sid)
        if query is not None:
            try:  # the page's own features, as its slice computed them: the decision of one process
                verdict = decider.check_query_features(query)
            except (ValueError, KeyError) as exc:  # another version's form: decided as if none was handed
                log.warning("Final pass: query features of %s unreadable (%s)", sid, exc)
                query = None
            else:
                report.handed_over += 1
        if query is None:
            verdict = decider.check_record(record)
        if query is None and verdict.rule not in SAME_FROM_RECORD:
            # a candidate to compare: the record holds a sketch of the page's shingles and its heaviest
            # terms, not the whole sets, so the page is built again (as its slice built it) and decided
            # from its own features: the decision one process makes
            if sources is None:
                got_docs = es.call("read documents to decide again", c.mget, index=name, ids=[h["_id"] for h in todo])
                sources = {d["_id"]: d for d in got_docs["docs"] if d.get("found")}
            verdict = _decide_page(job, decider, sources.get(sid), verdict)
            report.reparsed += 1
        _count(report, verdict.status, kept=not job.config.drops(verdict))
        if job.config.drops(verdict):
            drops.append((sid, verdict, record))
            continue
        if (verdict.status, verdict.duplicate_of) != (old.get("status", "unique"), old.get("duplicate_of")):
            # a copy of another slice's document (or a closer one there): flagged as one process flags it
            new = {**old, **verdict.to_dict(), "slice": old.get("slice")}
            updates.append({"_op_type": "update", "_index": name, "_id": sid, "doc": {"dedup": new}})
            updates.append({"_op_type": "update", "_index": dedup_name(name), "_id": str(record.id),
                            "doc": {"status": verdict.status, "duplicate_of": verdict.duplicate_of}})
            report.changed += 1
        decider.add_record(record, verdict)  # a kept exact duplicate (a drop without exact copies) claims nothing
    if drops:
        if sources is None:  # else read above, unchanged since: the batch writes nothing before this
            got_docs = es.call("read dropped documents", c.mget, index=name, ids=[s for s, *_ in drops])
            sources = {d["_id"]: d for d in got_docs["docs"] if d.get("found")}
        by_id = {sid: sources[sid].get("_source") or {} for sid, *_ in drops if sid in sources}
        entries = []
        for sid, verdict, record in drops:
            source = {k: v for k, v in by_id.get(sid, {}).items() if k != "dedup"}
            item = {"id": sid, "url": record.url, "fetched_at": record.fetched_at,
                    "source_index": job.source_uri, "source": source}
            line = drop_line(verdict.to_dict(), item, None, index=job.dest_uri)
            slice_of = (by_id.get(sid, {}).get("dedup") or {}).get("slice")
            entries.append({"_op_type": "index", "_index": registry.name, "_id": f"drop-{sid}",
                            "_source": {"kind": "drop", "source_id": sid, "slice": slice_of, "line": line}})
            done[sid] = line
        _bulk(es, entries, "record the final pass's drops")
        es.call("refresh the slice registry", c.indices.refresh, index=registry.name)
        deletes = [{"_op_type": "delete", "_index": name, "_id": sid} for sid, *_ in drops]
        deletes += [{"_op_type": "delete", "_index": dedup_name(name), "_id": str(r.id)} for *_, r in drops]
        _bulk(es, deletes, "delete the documents the final pass dropped")
    _bulk(es, updates, "flag near copies across slices")


def _count(report: "ReindexReport", status: str, *, kept: bool) -> None:
    """One document the final pass decided, in the report: its status, and kept (flagged, as a one-process
    run counts them: near_duplicate or duplicate) or not."""
    report.statuses[status] = report.statuses.get(status, 0) + 1
    if kept:
        report.kept += 1
        report.flagged += status in ("near_duplicate", "duplicate")


def _decide_page(job: "Reindex", decider: Any, doc: dict[str, Any] | None, fallback: Any) -> Any:
    """The verdict of a destination document built again into its page and features (the source's
    fields are in it), or ``fallback`` (its record's verdict) when it cannot be read or built."""
    if doc is None:
        log.warning("Final pass: document gone from the destination; decided from its record")
        return fallback
    try:
        page = job._page_maker()(doc)
        features = decider.featurizer(page)
    except Exception as exc:  # as in the slices: a bad document never ends the job
        log.warning("Final pass: document %s could not be parsed again (%s); decided from its record",
                    doc.get("_id"), exc)
        return fallback
    return decider.check(page, features)


def _bulk(es: Retrying, actions: list[dict[str, Any]], what: str) -> None:
    from elasticsearch import helpers

    if not actions:
        return

    def send() -> None:
        bad = []
        for ok, item in helpers.streaming_bulk(es.client, actions, chunk_size=500, raise_on_error=False,
                                               max_retries=3):
            info = next(iter(item.values()))
            if not ok and not (info.get("status") == 404 and next(iter(item)) == "delete"):
                bad.append(f"{info.get('_id')} ({info.get('status')}: {str(info.get('error'))[:200]})")
        if bad:
            raise ValueError(f"{es.url} refused {len(bad)} action(s) while trying to {what}: {'; '.join(bad[:3])}")

    es.call(what, send)
