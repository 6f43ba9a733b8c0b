"""``HonestEnd``: a crawl that knows it lost or left work says so, in the log, the finish reason
and the exit status.

At ``spider_closed`` it reads the stats keys of :data:`LOSS_KEYS` (requests the request journal
could not replay, items spooled because the index was unavailable); when any is non-zero it logs
one ERROR line with the figures, turns a ``finished`` finish reason into ``finished_incomplete``
and makes ``scrapy crawl`` exit with status 1.

Scrapy has no public way for a component to set the exit status of ``scrapy crawl``: the command
exits 1 when its crawler process reports ``bootstrap_failed``, which it computes, when the crawl
ends, as "the crawler has no spider". So at ``engine_stopped`` (after the stats are dumped and
every component is closed) this extension clears ``crawler.spider``.
"""
from __future__ import annotations

import logging

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from .config import is_enabled

__all__ = ["HonestEnd", "LOSS_KEYS", "INCOMPLETE_REASON"]

logger = logging.getLogger(__name__)

#: stats key -> what it counts
LOSS_KEYS = {
    "dedup/journal/lost": "request(s) of a killed run that could not be recovered",
    "dedup/spooled": "item(s) left undecided in the spool (the next crawl replays them)",
}
INCOMPLETE_REASON = "finished_incomplete"


class HonestEnd:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.incomplete = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "HonestEnd":
        if not is_enabled(crawler.settings):
            raise NotConfigured("DEDUP_ENABLED is False")
        ext = cls(crawler)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(ext.engine_stopped, signal=signals.engine_stopped)
        return ext

    def spider_closed(self, spider: Spider, reason: str) -> None:
        stats = self.crawler.stats
        if stats is None:
            return
        losses = {key: stats.get_value(key, 0) for key in LOSS_KEYS}
        losses = {key: n for key, n in losses.items() if n}
        if not losses:
            return
        self.incomplete = True
        if reason == "finished":
            stats.set_value("finish_reason", INCOMPLETE_REASON)
        logger.error("This crawl is incomplete (finish reason %s): %s", stats.get_value("finish_reason", reason),
                     "; ".join(f"{n} {LOSS_KEYS[key]} ({key})" for key, n in losses.items()),
                     extra={"spider": spider})

    def engine_stopped(self) -> None:
        if self.incomplete:
            self.crawler.spider = None  # -> CrawlerProcess.bootstrap_failed -> exit status 1
