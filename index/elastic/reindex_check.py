"""Inspecting a reindex (see :mod:`.reindex` for the whole job): ``--check``, which compares the
destination, ``DEST-dedup`` and the dropped log with the work folder, and the reading of the
dropped log that a resend and an update need (which documents it holds, with which ``_source``)."""
from __future__ import annotations

import json
from typing import Any

from dedup.droplog import DROPPED_AGAIN, KEPT, iter_lines

from .connect import Retrying
from .reindex_read import source_key
from .reindex_state import WorkState
from .search import field_value, pit_pages

__all__ = ["Inspection"]


class Inspection:
    """The inspection half of :class:`.reindex.Reindex` (a mixin: it reads the job's options, ``dest_uri``,
    ``work_dir``, ``slices``, ``dropped_log``, ``source_uri``, and connects with its ``_connect``)."""

    work_dir: Any
    dropped_log: Any
    source_uri: str
    dest_uri: str
    slices: int
    slice_id: int | None
    merging: bool
    url_source: str

    def _connect(self, uri: str) -> tuple[Retrying, str]:
        raise NotImplementedError

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
            unsent = len(state.unsent_ids())
            merged: set[str] = set()
            if self.slices > 1:
                # the final pass may have dropped kept documents of this slice (into its own log), and
                # the destination holds every slice's documents: only this slice's are compared
                from .slicing import Registry

                merged = set(Registry(es, name).drops(self.slice_id)) & set(kept)
                kept = {k: v for k, v in kept.items() if k not in merged}
            dest = self._documents(es, name)
            dest_ids = {sid for sid, (doc_slice, _, _) in dest.items()
                        if self.slice_id is None or doc_slice in (None, self.slice_id)}
            record_ids = set(self._documents(es, dedup_name(name), verdicts=False))
            want_records = {str(r) for r in kept.values() if r is not None}
            logged, restored = self._log_states()
            pending = set(state.unsent_ids())
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
            groups = _group_problems(dest)
            report.update(groups)
            report["groups_ok"] = not any(groups.values())
            return report
        finally:
            es.close()
            state.close()

    def _documents(self, es: Retrying, index: str, *, verdicts: bool = True
                   ) -> dict[str, tuple[Any, str | None, Any]]:
        """The documents of ``index`` (none when it is missing), read once: ``_id -> (dedup.slice, URL,
        dedup.duplicate_of)`` (``verdicts=False``: ids alone, the rest None). Restored documents carry no slice,
        and count for every slice."""
        if not es.call("check an index", es.client.indices.exists, index=index):
            return {}
        # a run killed with refresh off (reindex_write._pause_refresh) leaves its last writes unsearchable:
        # listed unrefreshed, they read as lost. A key that may not refresh (403) lists what is searchable.
        es.call("make the last writes searchable", es.client.options(ignore_status=403).indices.refresh, index=index)
        fields = [self.url_source, "dedup.slice", "dedup.duplicate_of"] if verdicts else False
        docs: dict[str, tuple[Any, str | None, Any]] = {}
        for hits in pit_pages(es, index, "list documents", size=5000, _source=fields):
            for h in hits:
                src = h.get("_source") or {}
                docs[h["_id"]] = (field_value(src, "dedup.slice"), str(field_value(src, self.url_source) or h["_id"]),
                                  field_value(src, "dedup.duplicate_of")) if verdicts else (None, None, None)
        return docs

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
                        lines.add(logged_key(sid, entry))
                    elif entry.get("event") in ("restored", KEPT) and str(entry.get("url")) in url_ids:
                        state[url_ids[str(entry["url"])]] = entry["event"]
                    elif entry.get("event") == DROPPED_AGAIN and str(entry.get("url")) in url_ids:
                        sid = url_ids[str(entry["url"])]
                        state[sid] = "dropped"
                        lines.add(logged_key(sid, entry))
        return state, lines


def logged_key(sid: str, line: dict[str, Any]) -> tuple[str, str | None]:
    """What tells a line of the dropped log that a resend must not write twice: a drop line by its source id and
    body key (and the key of its ``_source`` when it renews another line of that body); a ``dropped_again`` event
    by the line it names and the pages its verdict names (it has no body, and ``(sid, None)`` is an older drop
    line's: helper-31)."""
    if line.get("event") == DROPPED_AGAIN:
        verdict = line.get("verdict") if isinstance(line.get("verdict"), dict) else {}
        return sid, f"again@{line.get('offset')}:{verdict.get('nearest')}:{verdict.get('duplicate_of')}"
    if line.get("source_key"):  # a drop line logged again with the document's new other fields: Reindex._refresh
        return sid, f"{line.get('body')}:{line['source_key']}"
    return sid, line.get("body")


def _group_problems(docs: dict[str, tuple[Any, str | None, Any]]) -> dict[str, list[str]]:
    """Kept documents whose ``duplicate_of`` names no kept document, or one itself flagged as a copy (a chain or a
    cycle: helper-24 found both after updates, where ``--check`` said "in step"): what a reader who hides flagged
    copies behind their kept page trips on. Ids, sorted; ``docs`` as :meth:`Inspection._documents` reads them."""
    named = {url: duplicate_of for _, url, duplicate_of in docs.values()}
    gone = sorted(sid for sid, (_, _, to) in docs.items() if to and to not in named)
    chained = sorted(sid for sid, (_, _, to) in docs.items() if to and named.get(to))
    return {"naming_a_page_not_kept": gone, "naming_a_flagged_page": chained}
