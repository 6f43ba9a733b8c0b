"""Deciding a reindex's documents (see :mod:`.reindex` for the whole job), through the crawl's one
page path: a source document becomes a :class:`dedup.sources.Source`, its page and features are made
by :func:`dedup.sources.features_from_source` (in :class:`dedup.workers.WorkerPool` processes with
``--workers N``, as a crawl's are with ``DEDUP_WORKERS``) or by the deciding process's own
featurizer, and the decision is the crawl's :class:`~dedup.deduplicator.Deduplicator`'s, against the
job's embedded index."""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Iterator

from dedup.deduplicator import DedupConfig, Deduplicator
from dedup.page import Page
from dedup.record import Record
from dedup.sources import Source, features_from_source, page_from_source, prepare
from dedup.workers import WorkerError, WorkerPool

from .search import field_value

__all__ = ["PageMaker", "Capture", "featured"]


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


class Capture:
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


def featured(hits: Iterator[tuple[dict[str, Any], list[Any]]], make: PageMaker, decider: Deduplicator, *,
             workers: int = 0, ahead: int = 0) -> Iterator[tuple[dict[str, Any], list[Any], Page | None, Any]]:
    """``(hit, sort, page, features or error text)`` in read order: computed here with no
    worker, else by ``workers`` worker processes (:class:`dedup.workers.WorkerPool` running
    :func:`dedup.sources.features_from_source`, as a crawl's do) while this process decides the
    documents before them.  At most ``ahead`` documents (default four a worker) are out with the
    workers: the oldest is handed on as soon as its features are back, so the deciding and the
    parsing overlap from the first document to the last (a whole read page sent at once kept this
    process waiting on the workers' socket for the page, then the workers waiting on it).  A
    document a worker failed on is done again here, which reports its error as a run without workers
    does."""

    def here(hit: dict[str, Any]) -> tuple[Page | None, Any]:
        try:
            page = make(hit)
            return page, decider.featurizer(page)
        except Exception as exc:  # a bad document is reported and kept, never the end of the job
            return None, f"{type(exc).__name__}: {exc}"

    if not workers:
        for hit, sort in hits:
            yield hit, sort, *here(hit)
        return
    with WorkerPool(workers) as pool:
        pool.broadcast(prepare, make.config)  # the workers load while the first page is read
        ahead = ahead or 4 * workers

        def ask(hit: dict[str, Any]) -> Any:
            try:
                return pool.submit(features_from_source, make.source(hit), make.config)
            except Exception:  # every worker has exited, or a hit that is no document: done here
                return None

        def answer(hit: dict[str, Any], sort: list[Any], future: Any
                   ) -> tuple[dict[str, Any], list[Any], Page | None, Any]:
            try:
                return hit, sort, *(here(hit) if future is None else future.result())
            except WorkerError:  # a bad document (reported as without workers) or a worker that died
                return hit, sort, *here(hit)

        out: deque[tuple[dict[str, Any], list[Any], Any]] = deque()
        for hit, sort in hits:
            out.append((hit, sort, ask(hit)))
            while out and (len(out) > ahead or out[0][2] is None or out[0][2].done()):
                yield answer(*out.popleft())
        while out:
            yield answer(*out.popleft())
