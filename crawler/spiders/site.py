"""``site``: a generic spider that crawls one site and yields a :class:`PageItem` per HTML page.

    scrapy crawl site -a start_url=URL[,URL...] [-a allow=REGEX] [-a max_pages=N] [-a max_depth=N]

``allow``      regular expression a link's absolute URL must match (``re.search``) to be
               followed; default: links on the same host and port as a start URL.
``max_pages``  stop after about N responses (``CLOSESPIDER_PAGECOUNT``: requests already
               in flight still complete); 0, the default, is unlimited.
``max_depth``  ``DEPTH_LIMIT``: link hops from a start URL; 0 is unlimited. Unset, the
               project setting applies.

Each page's HTML is parsed once, by ``DedupPipeline`` (or its worker processes): the spider
hands over the raw body and its ``Content-Type`` in transient item fields, and finds the links
to follow with a lexical scan of the ``href`` attributes of ``<a>`` and ``<area>`` tags (comments,
scripts and styles skipped, ``<base href>`` honoured, the extensions Scrapy's LinkExtractor
ignores ignored), which costs a fraction of a second parse. URL variants stay distinct: links
are not canonicalised, so ``?utm_source=...``, ``;jsessionid=...`` and ``/print/...`` copies are
all fetched (the point is to find them by content).
"""
from __future__ import annotations

import html
import posixpath
import re
import time
from typing import Any, AsyncIterator, Iterator
from urllib.parse import urljoin, urlsplit

import scrapy
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.linkextractors import IGNORED_EXTENSIONS

from ..items import PageItem

__all__ = ["SiteSpider"]

HTML_TYPES = ("text/html", "application/xhtml+xml")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return (parts.hostname or "").lower(), parts.port or _DEFAULT_PORTS.get(parts.scheme.lower(), 0)


# comments, scripts and styles hold no links to follow (and often hold markup-like text)
_SKIP = re.compile(rb"<!--.*?-->|<script\b.*?</script\s*>|<style\b.*?</style\s*>", re.IGNORECASE | re.DOTALL)
_HREF = re.compile(rb"""<(a|area|base)\b[^>]*?\shref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+))""",
                   re.IGNORECASE)
_IGNORED = frozenset("." + e for e in IGNORED_EXTENSIONS)


def _text(raw: bytes) -> str:
    # hrefs are ASCII in practice; a non-ASCII one is UTF-8, else a single-byte charset
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("cp1252", "replace")


def page_links(body: bytes, url: str) -> list[str]:
    """Absolute http(s) URLs of the ``<a>``/``<area>`` links of ``body``, in document order, each once."""
    base = url
    out: dict[str, None] = {}
    for m in _HREF.finditer(_SKIP.sub(b" ", body)):
        raw = m.group(2) if m.group(2) is not None else m.group(3) if m.group(3) is not None else m.group(4)
        href = html.unescape(_text(raw)).strip()
        if m.group(1).lower() == b"base":
            base = urljoin(url, href) if href else base
            continue
        if not href or href.startswith("#"):
            continue
        link = urljoin(base, href).split("#", 1)[0]
        parts = urlsplit(link)
        if parts.scheme.lower() not in _DEFAULT_PORTS:
            continue
        if posixpath.splitext(parts.path)[1].lower() in _IGNORED:
            continue
        out.setdefault(link, None)
    return list(out)


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

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> "SiteSpider":
        spider = super().from_crawler(crawler, *args, **kwargs)
        # spider priority: an explicit -s on the command line still wins
        if spider.max_pages:
            crawler.settings.set("CLOSESPIDER_PAGECOUNT", spider.max_pages, priority="spider")
        if spider.max_depth is not None:
            crawler.settings.set("DEPTH_LIMIT", spider.max_depth, priority="spider")
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
        declared = content_type.decode("latin-1") if content_type else None
        yield PageItem(url=response.url, html=response.body, content_type=declared, fetched_at=time.time())
        for link in page_links(response.body, response.url):
            if self.follows(link):
                yield scrapy.Request(link, callback=self.parse)
