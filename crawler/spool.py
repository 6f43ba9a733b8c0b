"""The spool: items an unreachable index could not decide or store, replayed by the next crawl.

When the Elasticsearch cluster stays away for longer than its retry budget, ``DedupPipeline``
(stage ``dedup``: not decided yet; the parsed page is kept) and ``IndexPipeline`` (stage
``index``: decided, recorded in the dedup index, not yet in the search index) append the item
to ``DEDUP_SPOOL`` instead of losing it, and the crawl stops with reason
``dedup_index_unavailable``.  :class:`SpoolMiddleware` hands the spooled items back at the start
of the next crawl, before any request, through the spider-middleware ``process_start`` hook, so
they go through every pipeline and feed like freshly scraped items.  The file is renamed to
``<spool>.replaying`` while its items are replayed and deleted when that crawl finishes
normally; a replay that is itself interrupted is replayed again (the dedup index recognises a
page it already recorded, see ``DedupPipeline``).
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from dedup.page import Page

from .config import is_enabled, settings_of

__all__ = ["Spool", "SpoolMiddleware", "REPLAY_KEY"]

log = logging.getLogger(__name__)

#: key of ``item["dedup"]`` marking an item replayed at the ``index`` stage (already decided)
REPLAY_KEY = "replay"


class Spool:
    """An append-only JSON-lines file of ``{"stage", "time", "error", "item"}`` entries."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.replaying = self.path.with_name(self.path.name + ".replaying")
        self.added = 0
        self._keep = False  # an unreadable line was left in the replaying file

    def add(self, stage: str, item: dict[str, Any], error: str, page: Page | None = None) -> None:
        entry = {"stage": stage, "time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
                 "error": error, "item": {k: v for k, v in item.items() if k != "page"}}
        if page is not None:
            entry["page"] = dataclasses.asdict(page)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry, ensure_ascii=False, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self.added += 1

    def take(self) -> Iterator[dict[str, Any]]:
        """The spooled items to replay: a previous unfinished replay's, then the spool's."""
        if self.path.exists():
            with self.replaying.open("a", encoding="utf-8") as out:
                out.write(self.path.read_text(encoding="utf-8"))
                out.flush()
                os.fsync(out.fileno())
            self.path.unlink()
        if not self.replaying.exists():
            return
        for n, line in enumerate(self.replaying.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                yield _item(entry)
            except (ValueError, KeyError, TypeError) as exc:
                log.error("Spool %s line %d is not a spooled item (%s); left in the file", self.replaying, n, exc)
                self._keep = True

    def done(self) -> None:
        """The replay finished: forget the replayed entries (kept if a line was unreadable)."""
        if self.replaying.exists() and not self._keep:
            self.replaying.unlink()


def _item(entry: dict[str, Any]) -> dict[str, Any]:
    item = dict(entry["item"])
    if entry["stage"] == "index":
        item["dedup"] = {**(item.get("dedup") or {}), REPLAY_KEY: "index"}
    elif entry["stage"] == "dedup":
        if entry.get("page"):
            fields = dict(entry["page"])
            fields["headings"] = [tuple(h) for h in fields.get("headings", [])]
            known = {f.name for f in dataclasses.fields(Page)}
            item["page"] = Page(**{k: v for k, v in fields.items() if k in known})
        item["dedup"] = {REPLAY_KEY: "dedup"}
    else:
        raise ValueError(f"unknown stage {entry['stage']!r}")
    return item


class SpoolMiddleware:
    """Spider middleware: replays ``DEDUP_SPOOL`` before the spider's own start requests."""

    def __init__(self, *, spool: str | os.PathLike, crawler: Crawler | None = None) -> None:
        self.spool = Spool(spool)
        self.crawler = crawler
        self.replayed = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "SpoolMiddleware":
        if not is_enabled(crawler.settings):
            raise NotConfigured("DEDUP_ENABLED is False")
        mw = cls(spool=settings_of(crawler).spool, crawler=crawler)
        crawler.signals.connect(mw.spider_closed, signal=signals.spider_closed)
        return mw

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        for item in self.spool.take():
            if self.replayed == 0:
                log.warning("Replaying items spooled by an earlier crawl from %s", self.spool.path)
            self.replayed += 1
            if self.crawler is not None and self.crawler.stats is not None:
                self.crawler.stats.inc_value("dedup/spool/replayed")
            yield item
        async for request_or_item in start:
            yield request_or_item

    def spider_closed(self, spider: Spider, reason: str) -> None:
        if self.replayed and reason == "finished":
            self.spool.done()
            log.info("Replayed %d spooled items; %s removed", self.replayed, self.spool.replaying)
