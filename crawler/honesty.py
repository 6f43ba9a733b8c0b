"""``HonestEnd``: a crawl that knows it lost or left work, or fetched nothing, says so, in the log, the
finish reason and the exit status.

At ``spider_closed`` it reads the stats keys of :data:`LOSS_KEYS` (requests the request journal
could not replay, items spooled because the index was unavailable); when any is non-zero it logs
one ERROR line with the figures, turns a ``finished`` finish reason into ``finished_incomplete``
and makes ``scrapy crawl`` exit with status 1.

A crawl that fetched no page (no response below HTTP 400 but robots.txt) while requests failed ends
the same way, with finish reason ``no_page_fetched`` and, as its last line, each failed URL and why
(a start URL that refuses connections, a host that does not resolve, an HTTP error): before, it
exited 0 with ``finish_reason: finished`` and an empty index. While the crawl runs, a network error
(refused, timed out, host not found) is logged in one line with its reason, without the traceback
Scrapy attaches (it shows Twisted's internals, not the cause).

Scrapy has no public way for a component to set the exit status of ``scrapy crawl``: the command
exits 1 when its crawler process reports ``bootstrap_failed``, which it computes, when the crawl
ends, as "the crawler has no spider". So at ``engine_stopped`` (after the stats are dumped and
every component is closed) this extension clears ``crawler.spider``.
"""
from __future__ import annotations

import logging
from typing import Any

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import (CannotResolveHostError, DownloadConnectionRefusedError, DownloadFailedError,
                               DownloadTimeoutError, NotConfigured)
from scrapy.http import Response
from twisted.internet import error as tx_error

from .config import is_enabled

__all__ = ["HonestEnd", "LOSS_KEYS", "INCOMPLETE_REASON", "NO_PAGE_REASON", "NETWORK_ERRORS"]

logger = logging.getLogger(__name__)

#: stats key -> what it counts
LOSS_KEYS = {
    "dedup/journal/lost": "request(s) of a killed run that could not be recovered",
    "dedup/spooled": "item(s) left undecided in the spool (the next crawl replays them)",
}
INCOMPLETE_REASON = "finished_incomplete"
NO_PAGE_REASON = "no_page_fetched"

#: download errors whose cause is their message: logged in one line, without a traceback
NETWORK_ERRORS: tuple[type[BaseException], ...] = (
    DownloadConnectionRefusedError, CannotResolveHostError, DownloadTimeoutError, DownloadFailedError,
    tx_error.ConnectError, tx_error.DNSLookupError, tx_error.TimeoutError, tx_error.ConnectionLost)
#: the loggers that attach a traceback to a download error (the scraper; the robots.txt middleware)
_DOWNLOAD_LOGGERS = ("scrapy.core.scraper", "scrapy.downloadermiddlewares.robotstxt")
#: failed URLs the last line names, at most
_NAMED = 3


class _OneLineDownloadErrors(logging.Filter):
    """Drops the traceback of a network error's log record (adding its reason to the message when it has
    none) and tells ``failed(url, reason)`` of each download that failed for good (the scraper's record)."""

    def __init__(self, failed: Any) -> None:
        super().__init__()
        self.failed = failed

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None:
            return True
        request = record.args.get("request") if isinstance(record.args, dict) else None
        reason = " ".join(str(exc).split()) or type(exc).__name__
        if isinstance(request, Request) and record.name == "scrapy.core.scraper":
            self.failed(request.url, reason)
        if isinstance(exc, NETWORK_ERRORS):
            message = record.getMessage()
            record.msg, record.args = (message if reason in message else f"{message}: {reason}"), None
            record.exc_info = record.exc_text = None
        return True


class HonestEnd:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.incomplete = False
        self.pages = 0  # responses below HTTP 400, robots.txt aside
        self.failures: dict[str, str] = {}  # URL -> why its download failed, in order
        self.no_page: str | None = None  # the last line of a crawl that fetched nothing
        self._filter = _OneLineDownloadErrors(self._failed)
        for name in _DOWNLOAD_LOGGERS:
            logging.getLogger(name).addFilter(self._filter)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "HonestEnd":
        if not is_enabled(crawler.settings):
            raise NotConfigured("DEDUP_ENABLED is False")
        ext = cls(crawler)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(ext.engine_stopped, signal=signals.engine_stopped)
        crawler.signals.connect(ext.response_received, signal=signals.response_received)
        return ext

    def _failed(self, url: str, reason: str) -> None:
        self.failures.setdefault(url, reason)

    def response_received(self, response: Response, request: Request, **_: Any) -> None:
        if request.meta.get("dont_obey_robotstxt") and request.url.endswith("/robots.txt"):
            return
        if response.status < 400:
            self.pages += 1
        else:
            self._failed(response.url, f"HTTP status {response.status}")

    def spider_closed(self, spider: Spider, reason: str) -> None:
        stats = self.crawler.stats
        if stats is None:
            return
        if not self.pages and self.failures and reason == "finished":
            # nothing to resume, nothing indexed: the crawl failed, and says why at the very end
            stats.set_value("finish_reason", NO_PAGE_REASON)
            named = [f"{url} ({why})" for url, why in list(self.failures.items())[:_NAMED]]
            more = len(self.failures) - len(named)
            self.no_page = "No page was fetched: " + "; ".join(named) + (f"; and {more} more" if more > 0 else "")
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
        for name in _DOWNLOAD_LOGGERS:
            logging.getLogger(name).removeFilter(self._filter)
        if self.no_page:
            logger.error("%s", self.no_page)
        if self.incomplete or self.no_page:
            self.crawler.spider = None  # -> CrawlerProcess.bootstrap_failed -> exit status 1
