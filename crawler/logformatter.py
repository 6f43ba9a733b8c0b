"""Drop messages for dedup: the first one of a run at INFO, the rest at DEBUG.

A crawl of a site with many copies would otherwise print a line per copy. As
Scrapy's ``DUPEFILTER_DEBUG``, the one INFO line says which setting shows them
all: with ``DEDUP_DEBUG = True`` every dedup drop is logged at INFO. Drops raised
by other pipelines keep Scrapy's own behaviour (their ``log_level`` or
``DEFAULT_DROPITEM_LOG_LEVEL``, the item in the message).
"""
from __future__ import annotations

import logging
from typing import Any

from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.logformatter import LogFormatter, LogFormatterResult
from twisted.python.failure import Failure

from .config import settings_of
from .pipelines import DuplicateDropped

__all__ = ["DedupLogFormatter"]


class DedupLogFormatter(LogFormatter):
    def __init__(self, *, debug: bool = False) -> None:
        super().__init__()
        self.debug = debug
        self._logged_once = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "DedupLogFormatter":
        try:
            debug = settings_of(crawler).debug
        except ValueError:
            # reported by the pipelines, which fail the crawl; logging must not fail first
            debug = False
        return cls(debug=debug)

    def dropped(self, item: Any, exception: BaseException, response: Response | Failure | None,
                spider: Spider) -> LogFormatterResult:
        if not isinstance(exception, DuplicateDropped):
            return super().dropped(item, exception, response, spider)
        if self.debug:
            return {"level": logging.INFO, "msg": "Dropped: %(exception)s", "args": {"exception": exception}}
        if not self._logged_once:
            self._logged_once = True
            return {"level": logging.INFO,
                    "msg": "Dropped: %(exception)s - no more dedup drops will be shown at INFO "
                           "(see DEDUP_DEBUG to show all; each one is in the dropped log)",
                    "args": {"exception": exception}}
        return {"level": logging.DEBUG, "msg": "Dropped: %(exception)s", "args": {"exception": exception}}
