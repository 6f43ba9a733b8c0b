"""``dedup dropped restore``: put dropped pages back into the dedup and search indexes and mark them
restored in the dropped log (an appended event; the log is never rewritten). The application layer:
it opens indexes (:mod:`index`), which the log's format (:mod:`dedup.droplog`) never does."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from index import open_index, open_search

from ..deduplicator import DedupConfig
from ..droplog import RESTORED, DropLog, Entry, append_event, index_identity, iso_now
from ..record import epoch_seconds
from ..sources import make_featurizer, page_from_source
from ..store import KeyTaken  # raised by DedupIndex.add when another record holds the content

__all__ = ["restore", "RestoreResult", "restored_dedup"]


def restored_dedup(verdict: dict[str, Any], when: str) -> dict[str, Any]:
    """The ``dedup`` dict of a restored page's search document: status ``restored``, kept, with
    the original verdict under ``original``."""
    return {"status": RESTORED, "duplicate_of": verdict.get("duplicate_of"), "rule": verdict.get("rule"),
            "scores": verdict.get("scores") or {}, "kept": True, "restored_at": when, "original": verdict}


@dataclass
class RestoreResult:
    url: str
    outcome: str  # "restored", "already_restored", "not_found", "refused", "error"
    message: str
    record_id: int | None = None
    index: str | None = None  # the index written (restored) or refused

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.url, "outcome": self.outcome, "message": self.message, "record_id": self.record_id,
                "index": self.index}


def restore(log: DropLog, urls: Sequence[str], index_uri: str, *, weights: Any = "tdw", force: bool = False,
            progress: Callable[[int, int], None] | None = None) -> list[RestoreResult]:
    """Put the dropped pages ``urls`` back: into the dedup index (a record made from the logged
    title, text and tagged fields), into the search index (document with ``dedup.status ==
    "restored"``), and mark them restored in the log (an appended event naming the index).
    Works through the :class:`~index.base.DedupIndex`/:class:`~index.base.SearchIndex` Protocols only.

    Safe: an index that does not exist, or that is not the one a page was dropped from (the drop
    line's ``index``), is refused (outcome ``refused``, the entry stays restorable) unless ``force``;
    ``force`` creates a missing index. Safe to repeat: an entry already restored into this index is
    reported, not added again; a restore interrupted after the index writes is completed without a
    second record (the dedup index is asked, by content hash, whether it already holds this URL's record).
    """
    target = index_identity(index_uri)
    results: list[RestoreResult] = []
    todo: list[Entry] = []
    seen: set[str] = set()
    for url in urls:
        entry = log.get(url)
        if url in seen:
            continue
        seen.add(url)
        if entry is None:
            results.append(RestoreResult(url, "not_found", f"{url} is not in the dropped log {log.path}"))
        elif entry.state == RESTORED and entry.restored_into in (None, target):
            results.append(RestoreResult(url, "already_restored",
                                         f"{url} was already restored at {entry.restored_at or '(unknown time)'}"
                                         f" into {entry.restored_into or '(index not recorded)'}; nothing added",
                                         index=entry.restored_into))
        else:
            todo.append(entry)
    if todo and not force:
        exists = _exists(index_uri)
        ok = []
        for entry in todo:
            if not exists:
                results.append(RestoreResult(
                    entry.url, "refused", f"{entry.url}: there is no index at {target} (the page was dropped from "
                    f"{entry.index or 'an index its log line does not name'}); nothing restored (--force creates it)",
                    index=target))
            elif entry.index and entry.index != target:
                results.append(RestoreResult(
                    entry.url, "refused", f"{entry.url} was dropped from {entry.index}, not from {target}; nothing "
                    f"restored (--force restores it into {target} anyway)", index=target))
            else:
                ok.append(entry)
        todo = ok
    if not todo:
        return results
    config = DedupConfig(weights=weights)
    featurizer = make_featurizer(config)  # this restore's, for every page it puts back
    index = open_index(index_uri)
    try:
        search = open_search(index_uri)
        try:
            for n, entry in enumerate(todo, 1):
                results.append(_restore_one(log, entry, index, search, config, featurizer, target))
                if progress:
                    progress(n, len(todo))
        finally:
            search.flush()
            search.close()
    finally:
        index.flush()
        index.close()
    return results


def _exists(uri: str) -> bool:
    """Whether the search index at ``uri`` exists (opened read-only: never created)."""
    try:
        open_search(uri, readonly=True).close()
    except FileNotFoundError:
        return False
    return True


def _restore_one(log: DropLog, entry: Entry, index: Any, search: Any, config: Any, featurizer: Any,
                 target: str) -> RestoreResult:
    source = log.source(entry)
    if not source.has_content:
        return RestoreResult(entry.url, "error", f"line {entry.line} logs no title or text for {entry.url}; "
                             "nothing to restore")
    item = log.item(entry)
    page = page_from_source(source, config)  # the crawl's limits and extractor
    features = featurizer(page)
    when = iso_now()
    fetched_at = epoch_seconds(item.get("fetched_at"))
    current = index.by_url(entry.url)
    if current is not None and current.content_hash != features.content_hash:
        # fetched again since, with other text, and kept: one record per URL, and the newer text is the page
        return RestoreResult(entry.url, "refused",
                             f"{entry.url} was fetched again after this drop and is kept in {target} with newer "
                             f"text (dedup record {current.id}); nothing to restore", current.id, target)
    record_id = current.id if current is not None else None
    if record_id is not None and entry.duplicate_of == entry.url:
        # a second fetch of a kept page, logged as its own copy (logs written before refetches were
        # recognised): the page is in the index already, and its search document must keep its verdict
        return RestoreResult(entry.url, "already_restored",
                             f"{entry.url} is kept in {target} (dedup record {record_id}); its drop line logged a "
                             "second fetch of the same page, so nothing is restored", record_id, target)
    if record_id is None:
        record = features.to_record(page, status=entry.status or "exact_duplicate",
                                    duplicate_of=entry.duplicate_of, fetched_at=fetched_at)
        record.extra["restored_at"] = when
        try:
            record_id = index.add(record)
        except KeyTaken as exc:
            # another record holds this content; a kept exact duplicate claims none: store it as one
            holder = index.get([exc.record_id])
            record.status = "exact_duplicate"
            record.duplicate_of = holder[0].url if holder else entry.duplicate_of
            record_id = index.add(record)
    doc = {"url": entry.url, "title": page.title, "text": page.text,
           "fetched_at": fetched_at, "dedup": restored_dedup(entry.verdict, when)}
    source = item.get("source")
    if isinstance(source, dict) and item.get("id") is not None:
        # a reindex's log: the whole original document, under its original _id
        search.add({**source, "dedup": doc["dedup"]}, doc_id=str(item["id"]))  # no field added: no url if it had none
    else:
        search.add(doc)
    search.flush()  # durable before the log says so (a backend may buffer adds)
    append_event(log.path, {"event": RESTORED, "url": entry.url, "time": when, "record_id": record_id,
                            "index": target})
    entry.state, entry.restored_at, entry.restored_into = RESTORED, when, target
    empty = "" if page.text.strip() else "; its drop line holds no text (edited by hand?), so it has its title alone"
    return RestoreResult(entry.url, "restored", f"{entry.url} restored into {target} (dedup record {record_id})"
                         + empty, record_id, target)
