"""``dedup reindex``: run an existing Elasticsearch corpus through the filter into a new index.

The source index may have any mapping: options name its URL field, its text field (main text)
or HTML field (parsed and extracted like a crawled page), its title field and its time field.
Documents are read through a point in time with ``search_after``, in the order of the keep
rule, the first document of a group being the one kept:

``oldest`` / ``newest``  by the time field, then the URL;
``field:NAME[:asc|desc]`` by any sortable field, then the URL.

(A "shortest URL" rule needs a URL-length field: a script sort is not used, so the order is the
same on every Elasticsearch-API server.)  The URL field must be sortable (``keyword``; for a
``text`` field with a ``keyword`` sub-field pass ``url.keyword``).

Each document is decided against the destination's dedup index (``DEST-dedup``).  Kept ones
are written to ``DEST`` under their source ``_id`` with their ``_source`` and the verdict in
``dedup``; the destination takes the source's mapping (and analysis settings) plus ``dedup``.
Dropped ones go to the dropped log (the crawl's format; ``item.source`` holds the ``_source``).

Resuming: after every batch, once the destination, its dedup index and the dropped log hold
the batch, a checkpoint (JSON) records the sort values reached and the counts; a rerun with
the same checkpoint continues from there.  Documents of the batch that was under way when the
run was killed are recognised (already in the destination, in the dropped log, or recorded in
the dedup index), so a resumed run ends identical to an uninterrupted one.  ``dry_run``
decides every document against an in-memory index and writes nothing.
"""
from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from dedup.deduplicator import DedupConfig, Deduplicator, Verdict
from dedup.page import Page
from dedup.record import epoch_seconds
from dedup.sources import Source, page_from_source
from dedup.store import MemoryIndex

from .connect import connect
from .search import DEDUP_MAPPING, ElasticSearch, scan

__all__ = ["Reindex", "ReindexReport", "keep_sort", "KEEP_RULES"]

log = logging.getLogger(__name__)

KEEP_RULES = ("oldest", "newest", "field:NAME[:asc|desc]")


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


def _field(source: dict[str, Any], name: str) -> Any:
    value: Any = source
    for part in name.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


@dataclass
class ReindexReport:
    processed: int = 0
    kept: int = 0
    flagged: int = 0
    dropped: int = 0
    errors: int = 0
    resumed_from: int = 0
    seconds: float = 0.0
    statuses: dict[str, int] = field(default_factory=dict)
    dry_run: bool = False
    alias: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class Reindex:
    """One reindex job; :meth:`run` does it (see the module docstring)."""

    def __init__(self, source: str, dest: str, *, url_field: str = "url", text_field: str | None = "text",
                 html_field: str | None = None, title_field: str | None = "title", time_field: str = "fetched_at",
                 keep: str = "oldest", config: DedupConfig | None = None, dropped_log: str | os.PathLike,
                 checkpoint: str | os.PathLike | None = None, batch_size: int = 500, dry_run: bool = False,
                 alias: str | None = None, es_options: dict[str, Any] | None = None,
                 progress: Callable[[int, int], None] | None = None) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1 (got {batch_size})")
        if not text_field and not html_field:
            raise ValueError("name the source's main-text field (--text-field) or HTML field (--html-field)")
        self.source_uri, self.dest_uri = source, dest
        self.url_field, self.url_source = url_field, url_field.removesuffix(".keyword")
        self.text_field, self.html_field, self.title_field = text_field, html_field, title_field
        self.sort = keep_sort(keep, time_field=time_field, url_field=url_field)
        self.time_field = time_field
        self.keep = keep
        self.config = config or DedupConfig()
        self.dropped_log = Path(dropped_log)
        self.checkpoint = Path(checkpoint) if checkpoint else self.dropped_log.with_name(
            f"reindex-{dest.rstrip('/').rsplit('/', 1)[-1]}.checkpoint.json")
        self.batch_size = batch_size
        self.dry_run = dry_run
        self.alias = alias
        self.es_options = dict(es_options or {})
        self.progress = progress

    def _connect_options(self) -> dict[str, Any]:
        from . import CONNECT_OPTIONS

        return {k: v for k, v in self.es_options.items() if k in CONNECT_OPTIONS}

    # -- the job ------------------------------------------------------------------------------------
    def run(self) -> ReindexReport:
        start = time.monotonic()
        src, src_name = connect(self.source_uri, **self._connect_options())
        state = self._load_checkpoint()
        report = ReindexReport(dry_run=self.dry_run, **{k: state.get(k, 0) for k in
                                                        ("processed", "kept", "flagged", "dropped", "errors")})
        report.statuses = dict(state.get("statuses", {}))
        report.resumed_from = report.processed
        try:
            if not src.call("check the source", src.client.indices.exists, index=src_name):
                raise ValueError(f"no source index {src_name} at {src.url}")
            total = int(src.call("count the source", src.client.count, index=src_name)["count"])
            dedup_index, dest = self._open_dest(src, src_name)
            try:
                self._loop(src, src_name, dedup_index, dest, state, report, total)
                if self.alias and not self.dry_run:
                    self._swap_alias(dest)
                    report.alias = self.alias
            finally:
                if dest is not None:
                    dest.close()
                dedup_index.close()
        finally:
            src.close()
        report.seconds = round(time.monotonic() - start, 2)
        return report

    def _open_dest(self, src, src_name: str) -> tuple[Any, ElasticSearch | None]:
        if self.dry_run:
            return MemoryIndex(k=self.config.max_distance, blocks=self.config.blocks), None
        from . import open_dedup

        dest_es, dest_name = connect(self.dest_uri, **self._connect_options())
        if not dest_es.call("check the destination", dest_es.client.indices.exists, index=dest_name):
            mapping = next(iter(src.call("read the source mapping", src.client.indices.get_mapping,
                                         index=src_name).values()))["mappings"]
            mapping = {**mapping, "properties": {**mapping.get("properties", {}), "dedup": DEDUP_MAPPING}}
            settings = next(iter(src.call("read the source settings", src.client.indices.get_settings,
                                          index=src_name).values()))["settings"]["index"]
            new_settings = {"analysis": settings["analysis"]} if "analysis" in settings else {}
            dest_es.call("create the destination", dest_es.client.indices.create, index=dest_name,
                         mappings=mapping, settings=new_settings)
        dest = ElasticSearch(dest_es, dest_name, bulk_size=self.batch_size, create=False)
        options = {k: v for k, v in self.es_options.items() if k not in ("bulk_size",)}
        dedup_index = open_dedup(self.dest_uri, k=self.config.max_distance, blocks=self.config.blocks, **options)
        return dedup_index, dest

    def _loop(self, src, src_name, dedup_index, dest, state, report: ReindexReport, total: int) -> None:
        decider = Deduplicator(dedup_index, self.config)
        after = state.get("search_after")
        recheck = after is not None or report.processed > 0  # the batch under way when killed
        done_dropped = self._dropped_ids() if recheck else {}
        batch: list[tuple[dict[str, Any], list[Any]]] = []
        if not self.dry_run:
            self.dropped_log.parent.mkdir(parents=True, exist_ok=True)
        dropped_out = None if self.dry_run else self.dropped_log.open("a", encoding="utf-8")
        try:
            for hit, sort in scan(src, src_name, sort=self.sort, size=self.batch_size, search_after=after):
                batch.append((hit, sort))
                if len(batch) == self.batch_size:
                    self._batch(batch, decider, dest, dropped_out, report, recheck, done_dropped)
                    recheck = False
                    after = batch[-1][1]
                    self._save(after, report, dedup_index, dest, dropped_out)
                    batch = []
                    if self.progress:
                        self.progress(report.processed, total)
            if batch:
                self._batch(batch, decider, dest, dropped_out, report, recheck, done_dropped)
                after = batch[-1][1]
            self._save(after, report, dedup_index, dest, dropped_out, finished=True)
            if self.progress:
                self.progress(report.processed, max(total, report.processed))
        finally:
            if dropped_out is not None:
                dropped_out.close()

    def _batch(self, batch, decider: Deduplicator, dest: ElasticSearch | None, dropped_out, report: ReindexReport,
               recheck: bool, done_dropped: dict[str, str]) -> None:
        already: dict[str, str] = {}
        if recheck and dest is not None:  # the batch the interrupted run was writing
            got = dest.es.call("check written documents", dest.es.client.mget, index=dest.name,
                               ids=[h["_id"] for h, _ in batch], source_includes=["dedup.status"])
            already = {d["_id"]: d["_source"]["dedup"]["status"] for d in got["docs"] if d.get("found")}
        for hit, _ in batch:
            status = already.get(hit["_id"]) or (done_dropped.get(hit["_id"]) if recheck else None)
            if status is None:
                self._one(hit, decider, dest, dropped_out, report, recheck)
                continue
            # decided and written before the interruption, after the last checkpoint: count it only
            report.processed += 1
            report.statuses[status] = report.statuses.get(status, 0) + 1
            if hit["_id"] in already:
                report.kept += 1
                report.flagged += status in ("near_duplicate", "duplicate")
            else:
                report.dropped += 1

    def _one(self, hit, decider: Deduplicator, dest, dropped_out, report: ReindexReport, recheck: bool) -> None:
        source = hit["_source"]
        url = str(_field(source, self.url_source) or hit["_id"])
        try:
            page = self._page(source, url)
            verdict = decider.process(page, fetched_at=epoch_seconds(_field(source, self.time_field), 0.0))
            if recheck:  # recorded before the interruption, not yet written to the destination
                verdict = decider.recorded_copy(verdict, url) or verdict
        except Exception as exc:  # a bad document is reported and skipped, never the end of the job
            log.exception("Reindex: document %s (%s) could not be checked", hit["_id"], url)
            report.errors += 1
            verdict = Verdict("error", None, "error", {"error": f"{type(exc).__name__}: {exc}"}, kept=True)
        report.processed += 1
        report.statuses[verdict.status] = report.statuses.get(verdict.status, 0) + 1
        if verdict.kept:
            report.kept += 1
            report.flagged += verdict.status in ("near_duplicate", "duplicate")
            if dest is not None:
                dest.add({**source, "dedup": verdict.to_dict()}, doc_id=hit["_id"])
        else:
            report.dropped += 1
            if dropped_out is not None:
                line = {"url": url, "time": datetime.now(timezone.utc).isoformat(timespec="milliseconds")
                        .replace("+00:00", "Z"), "verdict": verdict.to_dict(),
                        "item": {"id": hit["_id"], "url": url, "title": page.title, "text": page.text,
                                 "fetched_at": epoch_seconds(_field(source, self.time_field), 0.0),
                                 "dedup": verdict.to_dict(), "source_index": self.source_uri, "source": source}}
                dropped_out.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")

    def _page(self, source: dict[str, Any], url: str) -> Page:
        # the one path from any source to a page, with the crawl's input limits
        return page_from_source(Source.from_document(source, url, html_field=self.html_field,
                                                     text_field=self.text_field, title_field=self.title_field),
                                self.config)

    # -- checkpoint ------------------------------------------------------------------------------------
    def _identity(self) -> dict[str, Any]:
        return {"source": self.source_uri, "dest": self.dest_uri, "sort": self.sort, "dry_run": self.dry_run,
                "thresholds": self.config.thresholds()}

    def _load_checkpoint(self) -> dict[str, Any]:
        if self.dry_run or not self.checkpoint.exists():
            return {}
        state = json.loads(self.checkpoint.read_text(encoding="utf-8"))
        if state.get("identity") != self._identity():
            raise ValueError(f"checkpoint {self.checkpoint} belongs to another reindex "
                             f"({state.get('identity')}); delete it or pass another --checkpoint")
        if state.get("finished"):
            raise ValueError(f"checkpoint {self.checkpoint} says this reindex finished already; "
                             "delete it to run again into a new destination")
        log.warning("Resuming reindex from %s: %d documents done", self.checkpoint, state.get("processed", 0))
        return state

    def _save(self, sort_values, report: ReindexReport, dedup_index, dest, dropped_out, finished: bool = False) -> None:
        if self.dry_run:
            return
        dest.flush()
        dedup_index.flush()
        dropped_out.flush()
        os.fsync(dropped_out.fileno())
        state = {"identity": self._identity(), "search_after": sort_values, "finished": finished,
                 **{k: getattr(report, k) for k in ("processed", "kept", "flagged", "dropped", "errors", "statuses")}}
        tmp = self.checkpoint.with_name(self.checkpoint.name + ".tmp")
        tmp.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(state, indent=1), encoding="utf-8")
        os.replace(tmp, self.checkpoint)

    def _dropped_ids(self) -> dict[str, str]:
        """Source id -> status of the documents this reindex has in the dropped log."""
        if not self.dropped_log.exists():
            return {}
        ids: dict[str, str] = {}
        for line in self.dropped_log.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            item = entry.get("item") or {}
            if item.get("source_index") == self.source_uri and "id" in item:
                ids[str(item["id"])] = (entry.get("verdict") or {}).get("status", "exact_duplicate")
        return ids

    def _swap_alias(self, dest: ElasticSearch) -> None:
        c = dest.es.client
        got = dest.es.call("read the alias", c.options(ignore_status=404).indices.get_alias, name=self.alias)
        actions = [{"remove": {"index": name, "alias": self.alias}} for name in got
                   if isinstance(got.get(name), dict) and name != dest.name]
        actions.append({"add": {"index": dest.name, "alias": self.alias}})
        dest.es.call("swap the alias", c.indices.update_aliases, actions=actions)
        log.info("Alias %s now points to %s", self.alias, dest.name)
