"""Drop messages for dedup: the first one of a run at INFO, the rest at DEBUG.

A crawl of a site with many copies would otherwise print a line per copy. As
Scrapy's ``DUPEFILTER_DEBUG``, the one INFO line says which setting shows them
all: with ``DEDUP_DEBUG = True`` every dedup drop is logged at INFO. Drops raised
by other pipelines keep Scrapy's own behaviour (their ``log_level`` or
``DEFAULT_DROPITEM_LOG_LEVEL``, the item in the message).

The items printed in "Scraped from" and "Dropped:" lines leave out the raw HTML field
(``DEDUP_HTML_FIELD``; ``DEDUP_KEEP_HTML`` keeps it): ``DedupPipeline`` removes it once an item
is parsed, and an item passed on or dropped before that (a page fetched again) would otherwise
print the whole page.
"""
from __future__ import annotations

import logging
from typing import Any

from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.http import Response
from itemadapter import ItemAdapter
from scrapy.logformatter import LogFormatter, LogFormatterResult
from twisted.python.failure import Failure

from .config import settings_of
from .pipelines import DuplicateDropped

__all__ = ["DedupLogFormatter"]


class DedupLogFormatter(LogFormatter):
    def __init__(self, *, debug: bool = False, html_field: str = "html", keep_html: bool = False) -> None:
        super().__init__()
        self.debug = debug
        self.html_field = html_field
        self.keep_html = keep_html
        self._logged_once = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "DedupLogFormatter":
        try:
            s = settings_of(crawler)
        except ValueError:
            # reported by the pipelines, which fail the crawl; logging must not fail first
            return cls()
        return cls(debug=s.debug, html_field=s.html_field, keep_html=s.keep_html)

    def _shown(self, result: LogFormatterResult) -> LogFormatterResult:
        """``result`` with its item printed without the raw HTML field (the item itself untouched)."""
        args = result.get("args")
        item = args.get("item") if isinstance(args, dict) else None
        if self.keep_html or item is None or not ItemAdapter.is_item(item):
            return result
        adapter = ItemAdapter(item)
        if self.html_field not in adapter:
            return result
        shown = {k: v for k, v in adapter.items() if k != self.html_field}
        return {**result, "args": {**args, "item": shown}}

    def scraped(self, item: Any, response: Response | Failure | None, spider: Spider) -> LogFormatterResult:
        return self._shown(super().scraped(item, response, spider))

    def dropped(self, item: Any, exception: BaseException, response: Response | Failure | None,
                spider: Spider) -> LogFormatterResult:
        if not isinstance(exception, DuplicateDropped):
            return self._shown(super().dropped(item, exception, response, spider))
        if self.debug:
            return {"level": logging.INFO, "msg": "Dropped: %(exception)s", "args": {"exception": exception}}
        if not self._logged_once:
            self._logged_once = True
            return {"level": logging.INFO,
                    "msg": "Dropped: %(exception)s - no more dedup drops will be shown at INFO "
                           "(see DEDUP_DEBUG to show all; each one is in the dropped log)",
                    "args": {"exception": exception}}
        return {"level": logging.DEBUG, "msg": "Dropped: %(exception)s", "args": {"exception": exception}}
