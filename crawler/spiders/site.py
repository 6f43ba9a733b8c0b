"""``site``: a generic spider that crawls one site and yields a :class:`PageItem` per HTML page.

    scrapy crawl site -a start_url=URL[,URL...] [-a allow=REGEX] [-a max_pages=N] [-a max_depth=N]

``allow``      regular expression a link's absolute URL must match (``re.search``) to be
               followed; default: links on the same host and port as a start URL.
``max_pages``  stop after about N responses (``CLOSESPIDER_PAGECOUNT``: requests already
               in flight still complete); 0, the default, is unlimited.
``max_depth``  ``DEPTH_LIMIT``: link hops from a start URL; 0 is unlimited. Unset, the
               project setting applies.

Each page is parsed once, here, with :func:`dedup.page.parse_page`; the parsed page
travels in ``item["page"]`` to ``DedupPipeline``, which removes it. URL variants stay
distinct: links are not canonicalised, so ``?utm_source=...``, ``;jsessionid=...`` and
``/print/...`` copies are all fetched (the point is to find them by content).
"""
from __future__ import annotations

import re
import time
from typing import Any, AsyncIterator, Iterator
from urllib.parse import urlsplit

import scrapy
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.linkextractors import LinkExtractor

from dedup.page import parse_page

from ..config import read_settings
from ..items import PageItem

__all__ = ["SiteSpider"]

HTML_TYPES = ("text/html", "application/xhtml+xml")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return (parts.hostname or "").lower(), parts.port or _DEFAULT_PORTS.get(parts.scheme.lower(), 0)


def _count(name: str, value: Any) -> int:
    try:
        n = int(str(value).strip())
    except ValueError:
        n = -1
    if n < 0:
        raise ValueError(f"-a {name} must be an integer >= 0, got {value!r}")
    return n


class SiteSpider(scrapy.Spider):
    name = "site"

    def __init__(self, start_url: str | None = None, allow: str | None = None, max_pages: str | int = 0,
                 max_depth: str | int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        urls = [u.strip() for u in (start_url or "").split(",") if u.strip()]
        if not urls:
            raise ValueError("the site spider needs -a start_url=URL[,URL...]")
        for url in urls:
            if urlsplit(url).scheme.lower() not in _DEFAULT_PORTS or not urlsplit(url).hostname:
                raise ValueError(f"-a start_url must be http(s) URLs, got {url!r}")
        self.start_urls = urls
        self.origins = {_origin(u) for u in urls}
        try:
            self.allow = re.compile(allow) if allow else None
        except re.error as exc:
            raise ValueError(f"-a allow must be a regular expression, got {allow!r}: {exc}") from None
        self.max_pages = _count("max_pages", max_pages)
        self.max_depth = None if max_depth in (None, "") else _count("max_depth", max_depth)
        # canonicalize=False (the default, stated because it matters): tracking and
        # session-id variants must stay distinct requests
        self.links = LinkExtractor(canonicalize=False, unique=True)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> "SiteSpider":
        spider = super().from_crawler(crawler, *args, **kwargs)
        # spider priority: an explicit -s on the command line still wins
        if spider.max_pages:
            crawler.settings.set("CLOSESPIDER_PAGECOUNT", spider.max_pages, priority="spider")
        if spider.max_depth is not None:
            crawler.settings.set("DEPTH_LIMIT", spider.max_depth, priority="spider")
        config = read_settings(crawler.settings).config  # the input limits, applied before parsing
        spider.limits = {"max_bytes": config.max_page_bytes, "max_text_chars": config.max_text_chars}
        return spider

    async def start(self) -> AsyncIterator[scrapy.Request]:
        # filtered like any request, so a resumed JOBDIR crawl does not fetch the start page again
        for url in self.start_urls:
            yield scrapy.Request(url, callback=self.parse)

    def follows(self, url: str) -> bool:
        """Whether a link to ``url`` is followed (``-a allow``, else same host:port as a start URL)."""
        if self.allow is not None:
            return self.allow.search(url) is not None
        return urlsplit(url).scheme.lower() in _DEFAULT_PORTS and _origin(url) in self.origins

    def parse(self, response: Response, **kwargs: Any) -> Iterator[PageItem | scrapy.Request]:
        content_type = response.headers.get("Content-Type")
        mime = (content_type or b"").split(b";", 1)[0].strip().decode("latin-1").lower()
        if mime not in HTML_TYPES and not (not mime and isinstance(response, scrapy.http.HtmlResponse)):
            if self.crawler.stats is not None:
                self.crawler.stats.inc_value("site/non_html")
                self.crawler.stats.inc_value(f"site/non_html/{mime or 'unknown'}")
            return
        page = parse_page(response.body, response.url,
                          content_type=content_type.decode("latin-1") if content_type else None,
                          **getattr(self, "limits", {}))
        yield PageItem(url=response.url, title=page.title, text=page.text, fetched_at=time.time(), page=page)
        for link in self.links.extract_links(response):
            if self.follows(link.url):
                yield scrapy.Request(link.url, callback=self.parse)
