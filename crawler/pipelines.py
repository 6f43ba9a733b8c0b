"""The two item pipelines: ``DedupPipeline`` decides, ``IndexPipeline`` stores the kept pages.

``DedupPipeline`` (priority 300) makes each item's page (:func:`dedup.sources.page_from_source`:
its raw HTML parsed once, else its title and text), gives the item the page's ``title`` and
``text`` where it has none, checks the page against the dedup index at ``DEDUP_INDEX``,
records the verdict in ``item["dedup"]``, adds kept pages to the index, and drops items whose
status is in ``DEDUP_DROP`` after appending them to the dropped log. With ``DEDUP_WORKERS``,
parsing and features run in worker processes (:mod:`dedup.workers`) and the decisions stay
here, one at a time, in the order the items arrived. ``IndexPipeline`` (priority 800) writes the items that survive to
the search index at the same URI. Both open their index when the spider opens and
close it when it closes, so a JOBDIR crawl that is paused and resumed continues
from a consistent index (the dedup index commits every add).

Outages: when the index stays unreachable beyond its retry budget (Elasticsearch,
:class:`index.elastic.IndexUnavailable`), the item goes to the spool (``DEDUP_SPOOL``, see
:mod:`crawler.spool`) instead of being lost, the crawl is stopped with reason
``dedup_index_unavailable``, and the next crawl replays the spool first.

Settings: see :mod:`crawler.config`. The ``spider`` arguments of the pipeline methods are
optional: recent Scrapy versions no longer pass them (older ones do); the crawler's spider is used
for logging.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
from pathlib import Path
from typing import Any

from itemadapter import ItemAdapter
from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem, NotConfigured

from dedup.deduplicator import ALGORITHM, DedupConfig, Deduplicator, Verdict, regrouped_verdict
from dedup.droplog import KEPT, DropLogWriter
from dedup.page import Page
from dedup.record import epoch_seconds
from dedup.sources import LazyFeaturizer, Source, features_from_source, page_from_source, prepare
from dedup.workers import WorkerError, WorkerPool

from .bodies import FetchedHTML
from .config import is_enabled, settings_of
from .dropped_pages import DroppedPages
from .items import TRANSIENT, note, notes_of
from .spool import REPLAY_KEY, Spool, owner as spool_owner

__all__ = ["DedupPipeline", "IndexPipeline", "DuplicateDropped", "item_source", "index_buffered", "flush_index",
           "index_flushed", "remove_document", "regroup_document", "index_document"]

logger = logging.getLogger(__name__)

#: :class:`IndexPipeline`'s write buffer, for the shared frontier (:mod:`crawler.frontier`), which
#: releases a request only once its page is safe: ``index_buffered`` asks each receiver how many kept
#: documents it holds unsent (a killed process loses them), ``flush_index`` asks it to send them now,
#: and ``index_flushed`` is sent when none is left unsent (stored, or spooled to disk)
index_buffered = object()
flush_index = object()
index_flushed = object()
#: sent by :class:`DedupPipeline` with ``url`` when a page fetched again with changed content is dropped:
#: its older version leaves the search index too (:class:`IndexPipeline` removes the document)
remove_document = object()
#: sent by :class:`DedupPipeline` with ``url`` and ``dedup`` when a page's group is kept for another page
#: now (see ``DedupPipeline._regrouped``): :class:`IndexPipeline` writes that verdict into its document
regroup_document = object()
#: sent by :class:`DedupPipeline` with ``doc`` (url, title, text, fetched_at, dedup) when it keeps a dropped page
#: decided again from its drop line (no item carries it): :class:`IndexPipeline` stores that document
index_document = object()

#: key of ``item["dedup"]`` marking a page fetched again that the dedup index recorded under its URL:
#: ``IndexPipeline`` writes it only when the search index does not hold it (a kill between the two writes)
REFETCH_KEY = "refetched"


def _es_errors(*names: str) -> tuple[type[BaseException], ...]:
    """The exception classes ``names`` of :mod:`index.elastic`; none without that backend."""
    try:
        import index.elastic as elastic
    except ImportError:  # pragma: no cover
        return ()
    return tuple(getattr(elastic, name) for name in names)


def _asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop (Scrapy's default asyncio reactor), or None."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _unavailable_errors() -> tuple[type[BaseException], ...]:
    return _es_errors("IndexUnavailable")


def _names(verdict: Verdict) -> tuple[str | None, str | None]:
    """``(nearest, duplicate_of)`` as a drop line of ``verdict`` names them (:meth:`DroppedPages.names`): the page
    matched, else the one named, and the page its group is kept for."""
    return verdict.nearest or verdict.duplicate_of, verdict.duplicate_of


def backend_options(uri: str, es_options: dict[str, Any]) -> dict[str, Any]:
    """``DEDUP_ES_OPTIONS`` for an Elasticsearch URI, nothing for the embedded index."""
    return {} if uri.lower().startswith("local://") else dict(es_options)


def stop_crawl(crawler: Crawler | None, reason: str) -> None:
    """Ask the engine to close the spider (once; later calls are no-ops)."""
    engine = getattr(crawler, "engine", None)
    if engine is None or getattr(engine, "_dedup_stopping", False):
        return
    engine._dedup_stopping = True
    from scrapy.utils.defer import deferred_from_coro

    if hasattr(engine, "close_spider_async"):
        deferred_from_coro(engine.close_spider_async(reason=reason))
    else:  # pragma: no cover - Scrapy < 2.14
        engine.close_spider(crawler.spider, reason)


class DuplicateDropped(DropItem):
    """An item dropped by :class:`DedupPipeline`; carries its :class:`~dedup.deduplicator.Verdict`."""

    def __init__(self, message: str, verdict: Verdict, log_level: str | None = None) -> None:
        super().__init__(message, log_level=log_level)
        self.verdict = verdict


def item_source(adapter: ItemAdapter, html_field: str = "html") -> Source | Page:
    """What the page of an item is made from (:class:`dedup.sources.Source`): raw HTML in
    ``html_field`` (the response's bytes when it holds a :class:`~crawler.bodies.FetchedHTML`), else the
    item's ``url``, ``title`` and ``text``. A parsed page in ``page`` (an item
    replayed from the spool) is taken out of the item and returned as it is."""
    page = adapter.pop("page", None) if "page" in adapter else None
    if isinstance(page, Page):
        return page
    source = Source.from_item(adapter, html_field)
    if isinstance(source.html, FetchedHTML):  # the response's bytes, decoded as dedup decodes a body
        source = dataclasses.replace(source, html=source.html.body,
                                     content_type=source.content_type or source.html.content_type)
    return source


class _PipelineBase:
    """Stats and log context of the pipelines' crawler."""

    crawler: Crawler | None

    def _inc(self, key: str, n: int = 1) -> None:
        if self.crawler is not None and self.crawler.stats is not None and n:
            self.crawler.stats.inc_value(key, n)

    @property
    def _extra(self) -> dict[str, Any]:
        return {"spider": self.crawler.spider if self.crawler is not None else None}


#: DedupPipeline._unchanged's answer for a dropped page whose text's holder is known only in its turn
_IN_TURN = object()


class DedupPipeline(_PipelineBase):
    """Near-duplicate check of every item; drops those whose status is in ``DEDUP_DROP``."""

    def __init__(self, *, index_uri: str, config: DedupConfig, dropped_log: str | Path,
                 html_field: str = "html", debug: bool = False, crawler: Crawler | None = None,
                 index_options: dict[str, Any] | None = None, spool: str | Path | None = None,
                 workers: int = 0, keep_html: bool = False) -> None:
        self.index_uri = index_uri
        self.keep_html = keep_html
        self.config = config
        self.workers = workers
        self.pool: WorkerPool | None = None
        self._pooling = False
        self._turn: asyncio.Future | None = None  # the decision of the item that arrived last
        self.index_options = dict(index_options or {})
        self.spool = Spool(spool or Path(dropped_log).with_name("spool.jsonl"))
        self.unavailable: BaseException | None = None  # the first outage; later items are spooled at once
        self.dropped_log_path = Path(dropped_log)
        self.html_field = html_field
        self.debug = debug
        self.crawler = crawler
        self.index: Any = None
        self.deduplicator: Deduplicator | None = None
        self._dropped_log: DropLogWriter | None = None
        #: the pages the dropped log holds as dropped (their body keys, content hashes, drop lines): read at open
        self._dropped = DroppedPages(self.dropped_log_path)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "DedupPipeline":
        if not is_enabled(crawler.settings):
            raise NotConfigured("DEDUP_ENABLED is False")
        # bad settings fail here, when the engine is built, before any request is sent
        s = settings_of(crawler)
        return cls(index_uri=s.index, config=s.config, dropped_log=s.dropped_log, html_field=s.html_field,
                   debug=s.debug, crawler=crawler, index_options=backend_options(s.index, s.es_options),
                   spool=s.spool, workers=s.workers, keep_html=s.keep_html)

    # -- spider lifecycle ------------------------------------------------------------------------
    def open_spider(self, spider: Spider | None = None) -> None:
        from index import open_index

        self.index = open_index(self.index_uri, k=self.config.max_distance, blocks=self.config.blocks,
                                **self.index_options)
        self._dropped = DroppedPages.read(self.dropped_log_path)
        self._dropped_log = DropLogWriter(self.dropped_log_path, self.index_uri)
        # the worker processes start with the first page to parse (a recrawl of unchanged pages parses none)
        self._pooling = bool(self.workers and _asyncio_loop() is not None)
        # the word tables (~1 s, ~180 MB) load when this process first featurizes a page: never, with
        # workers (unless one fails), nor on a recrawl of unchanged pages
        self.deduplicator = Deduplicator(self.index, self.config, featurizer=LazyFeaturizer(self.config))
        if self.workers and not self._pooling:
            logger.warning("DEDUP_WORKERS=%d needs Scrapy's asyncio reactor; parsing in the crawl process",
                           self.workers, extra=self._extra)
        logger.info("Dedup index %s holds %d pages; dropping %s; dropped log %s; %s", self.index_uri,
                    len(self.index), ", ".join(self.config.drop) or "nothing", self.dropped_log_path,
                    f"{self.workers} worker process(es) parse pages" if self._pooling else "pages parsed in-process",
                    extra=self._extra)

    def close_spider(self, spider: Spider | None = None) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool = None
        if self._dropped_log is not None:
            self._dropped_log.close()
            self._dropped_log = None
        if self.index is not None:
            try:
                self.index.close()
            except _unavailable_errors() as exc:  # every add was acknowledged; only the final refresh failed
                logger.error("Closing dedup index %s: %s", self.index_uri, exc, extra=self._extra)
            self.index = None
        self.deduplicator = None
        if self.spool.added:
            logger.error("%d item(s) could not be decided and are in %s; the next crawl with DEDUP_SPOOL=%s "
                         "replays them first", self.spool.added, self.spool.path, self.spool.path,
                         extra=self._extra)

    # -- items -----------------------------------------------------------------------------------
    def process_item(self, item: Any, spider: Spider | None = None) -> Any:
        adapter = ItemAdapter(item)
        assert self.deduplicator is not None, "open_spider() was not called"
        previous = adapter.get("dedup")
        replay = previous.get(REPLAY_KEY) if isinstance(previous, dict) else None
        if replay == "index":  # decided and recorded by an earlier crawl; IndexPipeline stores it
            del previous[REPLAY_KEY]
            return item
        source = item_source(adapter, self.html_field)
        body = source.body_key if isinstance(source, Source) else None
        if body is not None and self.unavailable is None:
            try:
                seen = self._unchanged(adapter, body)
            except _unavailable_errors() as exc:  # parsed here, then spooled with its page
                return self._decide(adapter, source, None, replay, body, outage=exc)
            if seen is _IN_TURN:
                return self._dropped_in_turn(adapter, source, replay, body, *self._take_turn())
            if seen is not None:
                return seen
        if self._pooling and isinstance(source, Source) and self.unavailable is None:
            if self.pool is None:
                self.pool = WorkerPool(self.workers)
                self.pool.broadcast(prepare, self.config)
            return self._pooled(adapter, source, replay, body, *self._take_turn())
        return self._decide(adapter, source, None, replay, body)

    def _take_turn(self) -> tuple[asyncio.Future | None, asyncio.Future]:
        """The decision before this item's (None when none is pending) and this item's, which the next item
        waits for. Taken when the item arrives, not when its coroutine first runs: an item after it must see
        it pending (``_unchanged``) even before the loop has started it."""
        turn, mine = self._turn, asyncio.get_running_loop().create_future()
        self._turn = mine
        return turn, mine

    def _end_turn(self, mine: asyncio.Future) -> None:
        mine.set_result(None)
        if self._turn is mine:
            self._turn = None

    def _unchanged(self, adapter: ItemAdapter, body: str) -> Any:
        """A page fetched again with the very bytes it had (``body``), known before parsing: the item of a
        kept one (its record's verdict), or a quiet drop of one the dropped log holds; None otherwise."""
        url = adapter.get("url")
        verdict = self.deduplicator.known(url, body)
        if verdict is not None:
            return self._refetched(adapter, verdict)
        dropped = self._dropped.get(url)
        if dropped is not None and dropped[0] == body and dropped[1]:
            if self._turn is not None:  # pages before it are still being decided: one may change that text's holder
                return _IN_TURN
            if self._drop_stands(url, dropped[1]):
                self._seen_dropped(url)  # raises
        return None

    async def _dropped_in_turn(self, adapter: ItemAdapter, source: Source, replay: Any, body: str,
                               turn: asyncio.Future | None, mine: asyncio.Future) -> Any:
        """A page the dropped log holds, fetched again unchanged while pages that arrived before it are decided
        in the workers: its text's holder is looked up after theirs are recorded (one of them may be that
        holder, changed), and the page decided again here if no page holds that text any more."""
        try:
            if turn is not None:
                await turn
            dropped = self._dropped.get(adapter.get("url"))
            try:
                held = dropped is not None and self._drop_stands(adapter.get("url"), dropped[1])
            except _unavailable_errors() as exc:  # parsed here, then spooled with its page (as in process_item)
                return self._decide(adapter, source, None, replay, body, outage=exc)
            if held:
                self._seen_dropped(adapter.get("url"))  # raises
            return self._decide(adapter, source, None, replay, body)
        finally:
            self._end_turn(mine)

    def _refetched(self, adapter: ItemAdapter, verdict: Verdict) -> Any:
        """The item of a page fetched again whose record holds its content: it carries its record's verdict
        to IndexPipeline, which stores it only if the search index misses it (a kill between the writes)."""
        self._inc("dedup/refetched")
        self._set_dedup(adapter, {**verdict.to_dict(), REFETCH_KEY: True})
        self._kept_since(adapter.get("url"), verdict)
        return adapter.item

    def _kept_since(self, url: str | None, verdict: Verdict) -> None:
        """A page its record holds, which the dropped log still holds as dropped: kept by a crawl killed (or cut off
        from the index) before it wrote the ``kept`` event, which is written now (helper-29)."""
        if url and verdict.kept and self._dropped.get(url) is not None:
            self._dropped.pop(url)
            self._dropped_log.event(KEPT, url, status=verdict.status)

    def _regrouped(self, url: str, verdict: Verdict) -> None:
        """The page ``verdict`` names was flagged as a copy of ``url``, whose new text (an edit, or the page put
        back) copies it: the deduplicator made that page its group's kept page (``verdict.regrouped``), and
        IndexPipeline's document of it says so too (helper-21's edit and revert; helper-23's and helper-24's
        edits of a kept page into a copy of its own copy, which left each page naming the other)."""
        named = verdict.regrouped
        if not named:
            return
        self._inc("dedup/regrouped")
        logger.info("%s is its group's kept page now: %s, which it was flagged as a copy of, copies it",
                    named, url, extra=self._extra)
        if self.crawler is not None:
            self.crawler.signals.send_catch_log(regroup_document, url=named, dedup=regrouped_verdict(url))

    def _seen_dropped(self, url: str) -> None:
        """A page the dropped log holds, fetched again with the content it was dropped for: counted, its
        entry told when (a mark in a batched ``seen`` line), and dropped without a second drop line."""
        self._inc("dedup/refetched")
        offset = self._dropped.offset(url)
        if offset is not None:
            self._dropped_log.seen(offset)
        raise DropItem(f"{url}: fetched again, unchanged; dropped before (see the dropped log)", log_level="DEBUG")

    async def _pooled(self, adapter: ItemAdapter, source: Source, replay: Any, body: str | None,
                      turn: asyncio.Future | None, mine: asyncio.Future) -> Any:
        """Parse and featurize in a worker process; decide here, in the order the items arrived (the
        same verdicts as in-process, whichever worker finishes first)."""
        try:
            try:
                assert self.pool is not None
                page, features = await asyncio.wrap_future(self.pool.submit(features_from_source, source,
                                                                            self.config))
            except WorkerError:  # a worker failed or died: this process does the work (and logs any error)
                page, features = source, None
            if turn is not None:
                await turn
            return self._decide(adapter, page, features, replay, body)
        finally:
            self._end_turn(mine)

    def _decide(self, adapter: ItemAdapter, source: Source | Page, features: Any, replay: Any,
                body: str | None = None, outage: BaseException | None = None) -> Any:
        """Check the item's page (parsed here unless ``source`` is already a page), record the verdict,
        and return the item or raise :class:`DuplicateDropped`."""
        item = adapter.item
        url = adapter.get("url")
        page = None
        try:
            page = source if isinstance(source, Page) else page_from_source(source, self.config)
            self._complete(adapter, page)
            if self.unavailable is not None or outage is not None:
                raise self.unavailable or outage
            if features is None:
                features = self.deduplicator.features(page)
            verdict = self.deduplicator.process(page, features=features, body=body,
                                                fetched_at=epoch_seconds(adapter.get("fetched_at")))
        except _unavailable_errors() as exc:
            return self._spool(adapter, page, exc)
        except Exception as exc:  # one bad page must not stop the crawl; the traceback is logged
            logger.exception("Dedup check failed for %s; keeping the item unchecked", url, extra=self._extra)
            self._inc("dedup/errors")
            self._set_dedup(adapter, {"status": "error", "duplicate_of": None, "rule": "error", "scores": {},
                                      "error": f"{type(exc).__name__}: {exc}", "algorithm": ALGORITHM,
                                      "kept": True})
            return item
        if verdict.refetched and not replay:
            # the same URL with the same content is recorded already: the page was fetched again (a second
            # crawl, or Scrapy fetching a start URL again when a page links to it), not a copy of itself.
            return self._refetched(adapter, verdict)
        if verdict.refetched:
            # a replayed page (spooled, or reclaimed after a kill) its record holds already: stored with its record's
            # verdict as it is, and counted as fetched again, not kept again (helper-27, helper-28: a resumed crawl
            # counted 30 such pages in dedup/kept and dedup/unique or duplicate)
            self._inc("dedup/refetched")
            self._set_dedup(adapter, verdict.to_dict())
            self._kept_since(url, verdict)
            return item
        dropped = self._dropped.get(url)
        if not verdict.kept and dropped is not None and dropped[1] == features.content_hash \
                and self._dropped.names(url) == _names(verdict):
            self._seen_dropped(url)  # fetched again with the text it was dropped for: not logged twice
        self._set_dedup(adapter, verdict.to_dict())
        self._inc(f"dedup/{verdict.status}")
        if verdict.replaced is not None:
            self._inc("dedup/updated")
            if verdict.replaced.get("root_changed"):  # unchanged, decided again: its group's kept page changed
                self._inc("dedup/root_changed")
        self._regrouped(url, verdict)
        if verdict.kept:
            self._inc("dedup/kept")
            if dropped is not None:  # dropped before, changed since, and kept now
                self._dropped.pop(url)
                self._dropped_log.event(KEPT, url, status=verdict.status)
            elif verdict.replaced is not None and verdict.replaced.get("restored"):
                # restored, changed since, and decided again: its log entry is no longer a restored copy
                self._dropped_log.event(KEPT, url, status=verdict.status)
            self._text_left(url, verdict, features.content_hash)
            return item
        self._inc("dedup/dropped")
        if verdict.replaced is not None:  # its older version was kept
            if self.crawler is not None:
                self.crawler.signals.send_catch_log(remove_document, url=url)
        self._log_drop(url, verdict, adapter.asdict(), page, body, features.content_hash)
        self._text_left(url, verdict, features.content_hash)
        raise DuplicateDropped(
            f"{url}: {verdict.status} of {verdict.duplicate_of} (rule {verdict.rule}"
            + (f", matched with {verdict.nearest}, a page of its group)" if verdict.nearest and
               verdict.nearest != verdict.duplicate_of else ")"),
            verdict, log_level="INFO" if self.debug else "DEBUG")

    def _log_drop(self, url: str, verdict: Verdict, item: dict[str, Any], page: Page, body: str | None,
                  content_hash: str) -> None:
        """A drop line of ``url``; or, when the log holds it dropped for these very bytes and this text (decided
        again because the page it matched changed or its group's kept page did), a ``dropped_again`` event naming
        that line: its item, text and fields are there already (~4 KB a line on a generated news site)."""
        offset = self._dropped.offset(url)
        if offset is not None and body and self._dropped.get(url) == (body, content_hash):
            self._dropped_log.again(url, offset, verdict.to_dict(), item.get("fetched_at"))
        else:
            offset = self._dropped_log.write(verdict.to_dict(), item, page, omit=(self.html_field,), body=body,
                                             content_hash=None if verdict.rule == "content_hash" else content_hash)
        self._dropped.add(url, body, content_hash, offset, *_names(verdict))

    def _drop_stands(self, url: str, content_hash: str) -> bool:
        """Whether ``url``'s drop holds as its line says, for a page fetched again with the text it was dropped for:
        the page it matched still holds that text and its group is still kept for the page the line names. Else
        it is decided again (dropped again naming the page now, or kept when no page holds the text): helper-27's
        copies of a rewritten page went on naming it. A line that names no page matched (older): held by any kept
        page."""
        nearest, named = self._dropped.names(url)
        if not nearest or not named:
            return bool(self.deduplicator.index.lookup("content_hash", content_hash))
        return self.deduplicator.drop_holds(content_hash, nearest, named)

    def _text_left(self, url: str, verdict: Verdict, content_hash: str) -> None:
        """``url``'s record held another text before (``verdict.replaced``): the dropped pages whose drop no longer
        stands are decided again from their drop lines, as if fetched again unchanged: exact copies of that text
        when no kept page holds it now (else their text was in no index until each was fetched again after
        ``url``: helper-23), and pages that matched ``url`` itself (else one fetched before ``url`` in the crawl
        went on naming it until the next crawl). A page that matched a copy of ``url`` is not: that copy is decided
        again only when fetched, and deciding the page first named that copy, then ``url`` again when the copy
        was still its copy (helper-31), a drop a crawl."""
        old = (verdict.replaced or {}).get("content_hash")
        if not old or old == content_hash:
            return
        copies = [u for u in self._dropped.holding(old) if u != url]
        if copies and not self.deduplicator.index.lookup("content_hash", old):
            for copy in copies:
                self._decide_from_log(copy)
        for copy in self._dropped.matched(url):
            text = (self._dropped.get(copy) or (None, None))[1]
            if copy != url and text and not self._drop_stands(copy, text):
                self._decide_from_log(copy)

    def _decide_from_log(self, url: str) -> None:
        """Decide again the dropped page ``url`` from its drop line (:meth:`_text_left`). Kept: its record is
        added, the log gets a ``kept`` event and IndexPipeline its document (not this crawl's feed: no response
        made it). Dropped naming other pages than its line (an exact copy of another page of the same text, kept
        just before): a ``dropped_again`` event names them. A failure leaves it as it was, for its next fetch to
        decide."""
        body = (self._dropped.get(url) or (None, None))[0]
        try:
            item, source = self._dropped.logged(url)
            page = page_from_source(source, self.config)
            features = self.deduplicator.features(page)
            verdict = self.deduplicator.process(page, features=features, body=body,
                                                fetched_at=epoch_seconds(item.get("fetched_at")))
        except Exception:
            logger.warning("Could not decide %s again from its drop line; its next fetch will", url, exc_info=True,
                           extra=self._extra)
            return
        self._inc("dedup/redecided_from_log")
        if not verdict.kept:
            if self._dropped.names(url) != _names(verdict):
                self._log_drop(url, verdict, item, page, body, features.content_hash)
            return  # else its line says it as it is (a near copy's drop never stands by its text: helper-31)
        self._dropped.pop(url)
        self._dropped_log.event(KEPT, url, status=verdict.status)
        logger.info("%s, dropped before, is kept now (%s): no kept page held its text any more", url,
                    verdict.status, extra=self._extra)
        if self.crawler is not None:
            doc = {"url": url, "title": page.title, "text": page.text,
                   "fetched_at": epoch_seconds(item.get("fetched_at")), "dedup": verdict.to_dict()}
            self.crawler.signals.send_catch_log(index_document, doc=doc)

    def _spool(self, adapter: ItemAdapter, page: Page | None, exc: BaseException) -> Any:
        """Keep an undecided item in the spool, stop the crawl, and drop the item for now."""
        if self.unavailable is None:
            self.unavailable = exc
            logger.error("Dedup index %s is unavailable: %s. Stopping the crawl; undecided items go to %s",
                         self.index_uri, exc, self.spool.path, extra=self._extra)
            stop_crawl(self.crawler, "dedup_index_unavailable")
        item = adapter.asdict()
        item.pop("dedup", None)
        self.spool.add("dedup", item, str(self.unavailable), page, spider=spool_owner(self.crawler))
        self._inc("dedup/spooled")
        raise DropItem(f"{adapter.get('url')}: spooled to {self.spool.path} (dedup index unavailable)",
                       log_level="WARNING")

    def _complete(self, adapter: ItemAdapter, page: Page) -> None:
        """Give the item the page's ``title`` and extracted ``text`` where it has none (an item with only
        raw HTML is searchable and exported with its text), and drop its transient fields and, unless
        ``keep_html``, its raw HTML once it has a text field (an Item class without one keeps it)."""
        for name in (self.html_field, "content_type"):
            if name in adapter and adapter.get_field_meta(name).get(TRANSIENT):
                del adapter[name]
        for name, value in (("title", page.title), ("text", page.text)):
            if adapter.get(name):
                continue
            try:
                adapter[name] = value
            except KeyError:  # an Item class without the field: the search index gets it from a note
                note(adapter.item, name, value)
                if not getattr(self, "_warned_text", False):
                    self._warned_text = True
                    logger.warning("%s has no %r field: items are exported without the extracted title/text "
                                   "(the search index has them)", type(adapter.item).__name__, name,
                                   extra=self._extra)
        if not self.keep_html and self.html_field in adapter and "text" in adapter:
            del adapter[self.html_field]

    def _set_dedup(self, adapter: ItemAdapter, verdict: dict[str, Any]) -> None:
        try:
            adapter["dedup"] = verdict
        except KeyError:  # an Item class without a dedup field: the search index gets it from a note
            note(adapter.item, "dedup", verdict)
            if not getattr(self, "_warned_field", False):
                self._warned_field = True
                logger.warning("%s has no 'dedup' field: items are exported without their verdicts (the dedup "
                               "index, the search index and the dropped log have them)", type(adapter.item).__name__,
                               extra=self._extra)


class IndexPipeline(_PipelineBase):
    """Writes the items that survive dedup to the search index at ``DEDUP_INDEX``."""

    FIELDS = ("url", "title", "text", "fetched_at", "dedup")

    def __init__(self, *, index_uri: str, crawler: Crawler | None = None,
                 index_options: dict[str, Any] | None = None, spool: str | Path | None = None,
                 html_field: str = "html", config: DedupConfig | None = None, keep_html: bool = False) -> None:
        self.index_uri = index_uri
        self.html_field = html_field
        self.keep_html = keep_html
        self.limits = config or DedupConfig()
        self.crawler = crawler
        self.index_options = dict(index_options or {})
        self.spool = Spool(spool or "spool.jsonl")
        self.search: Any = None
        self._unsent = False  # documents were left in the search index's write buffer

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "IndexPipeline":
        if not is_enabled(crawler.settings):
            raise NotConfigured("DEDUP_ENABLED is False")
        s = settings_of(crawler)
        pipeline = cls(index_uri=s.index, crawler=crawler, index_options=backend_options(s.index, s.es_options),
                       spool=s.spool, html_field=s.html_field, config=s.config, keep_html=s.keep_html)
        crawler.signals.connect(pipeline.buffered, signal=index_buffered)
        crawler.signals.connect(pipeline.flush, signal=flush_index)
        crawler.signals.connect(pipeline.remove, signal=remove_document)
        crawler.signals.connect(pipeline.regroup, signal=regroup_document)
        crawler.signals.connect(pipeline.store, signal=index_document)
        return pipeline

    def open_spider(self, spider: Spider | None = None) -> None:
        from index import open_search

        self.search = open_search(self.index_uri, **self.index_options)

    def close_spider(self, spider: Spider | None = None) -> None:
        if self.search is not None:
            try:
                self.search.flush()
            except Exception as exc:
                self._failed(exc)
            try:
                self.search.close()
            except Exception:
                logger.exception("Closing search index %s", self.index_uri, extra=self._extra)
            self.search = None
            self._sent()

    def remove(self, url: str, **_: Any) -> None:
        """Remove ``url``'s document: the page was fetched again with changed content and dropped."""
        if self.search is not None:
            self.search.remove(url)
            self._inc("dedup/index/removed")

    def store(self, doc: dict[str, Any], **_: Any) -> None:
        """Store ``doc``: an item's, or (``index_document``) a page DedupPipeline kept without an item, decided
        again from its drop line. A write the index refuses for an outage is spooled, replayed by the next crawl."""
        try:
            self.search.add(doc)
        except _es_errors("IndexUnavailable", "BulkIndexError") as exc:
            self._failed(exc)
            return
        except Exception:  # an item is still exported; the index misses it, which the stats show
            logger.exception("Search index %s failed to add %s", self.index_uri, doc["url"], extra=self._extra)
            self._inc("dedup/index/errors")
            return
        finally:
            self._sent()
        self._inc("dedup/index/added")

    def regroup(self, url: str, dedup: dict[str, Any], **_: Any) -> None:
        """``url``'s document gets ``dedup`` over its verdict: its group is kept for it now."""
        doc = self.search.get(url) if self.search is not None else None
        if doc is not None:
            self.search.add({**doc, "dedup": {**(doc.get("dedup") or {}), **dedup}})
            self._inc("dedup/index/regrouped")

    # -- the write buffer (Elasticsearch's bulk writes; the local index commits every add) ----------------
    def buffered(self, **_: Any) -> int:
        """Kept documents added and not sent yet (a killed process loses them)."""
        return int(getattr(self.search, "buffered", 0) or 0) if self.search is not None else 0

    def flush(self, **_: Any) -> None:
        """Send the buffered documents now (a failed write is spooled, as at close)."""
        if self.buffered():
            try:
                self.search.flush()
            except Exception as exc:
                self._failed(exc)
        self._sent()

    def _sent(self) -> None:
        """Say ``index_flushed`` when the documents left in the buffer have all gone out."""
        if self.buffered():
            self._unsent = True
        elif self._unsent:
            self._unsent = False
            if self.crawler is not None:
                self.crawler.signals.send_catch_log(index_flushed)

    def _failed(self, exc: BaseException) -> None:
        """Spool the documents a failed (bulk) write did not store; nothing is lost."""
        from index.elastic import BulkIndexError

        docs = getattr(exc, "docs", None) or []
        for doc in docs:
            self.spool.add("index", doc, str(exc), spider=spool_owner(self.crawler))
        self._inc("dedup/index/errors", len(docs))
        self._inc("dedup/spooled", len(docs))
        logger.error("Search index %s did not store %d document(s) (%s); they are in %s and the next crawl "
                     "replays them", self.index_uri, len(docs), exc, self.spool.path, extra=self._extra)
        if not isinstance(exc, BulkIndexError):
            stop_crawl(self.crawler, "dedup_index_unavailable")

    def process_item(self, item: Any, spider: Spider | None = None) -> Any:
        adapter = ItemAdapter(item)
        noted = notes_of(item)  # what DedupPipeline could not set on an Item class without those fields
        verdict = adapter.get("dedup") or noted.get("dedup")
        if isinstance(verdict, dict) and verdict.pop(REFETCH_KEY, False) and self.search.get(adapter["url"]):
            raise DropItem(f"{adapter['url']}: fetched again; recorded and in the search index already",
                           log_level="DEBUG")
        doc = {name: adapter.get(name) if adapter.get(name) is not None else noted.get(name) for name in self.FIELDS}
        doc["fetched_at"] = epoch_seconds(doc["fetched_at"])
        if not doc["text"] and adapter.get(self.html_field):
            # raw HTML that DedupPipeline did not turn into text (an Item class without a text field, or
            # this pipeline alone): the search index still gets the page's title and text
            page = page_from_source(Source.from_item(adapter, self.html_field), self.limits)
            doc["title"], doc["text"] = doc["title"] or page.title, page.text
            try:  # exported as every other item: its title and text, its raw HTML only with DEDUP_KEEP_HTML
                adapter["title"], adapter["text"] = doc["title"], doc["text"]
                if not self.keep_html:
                    del adapter[self.html_field]
            except KeyError:  # an Item class without those fields keeps what it has
                pass
        self.store(doc)
        return item
