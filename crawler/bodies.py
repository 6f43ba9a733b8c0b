"""The raw body behind an item's ``response.text``, so dedup decodes it as it decodes any body.

The README's spider yields ``{"url": response.url, "html": response.text}``: text Scrapy decoded, with its
own charset guess (charset-normalizer's, for a page that declares none), which is not dedup's
(:mod:`dedup.encoding`: evidence first, windows-1252 for mostly-ASCII western text). A windows-1252 page
without a charset came out as ``Café crčme, naďve`` through Scrapy's guess and as ``Café crème, naïve``
through dedup's, and an image served as ``text/html`` became text to index. So when an item's HTML field
*is* its response's ``text`` (the same object), :class:`ResponseBodyMiddleware` puts in its place a
:class:`FetchedHTML`: the same string (exported, compared and pickled as one), carrying the response's
bytes and ``Content-Type``; ``DedupPipeline`` parses those bytes, as the ``site`` spider's pages are
parsed. Any other value of the field (edited text, bytes, a project's own decoding) is left as it is.
"""
from __future__ import annotations

from typing import Any, AsyncIterator, Iterable

from itemadapter import ItemAdapter
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Request, TextResponse

from .config import is_enabled, settings_of

__all__ = ["FetchedHTML", "ResponseBodyMiddleware"]


class FetchedHTML(str):
    """A response's decoded text that also carries the response's ``body`` and ``content_type``."""

    body: bytes
    content_type: str | None

    def __new__(cls, text: str, body: bytes, content_type: str | None) -> "FetchedHTML":
        value = super().__new__(cls, text)
        value.body, value.content_type = body, content_type
        return value

    def __reduce__(self) -> Any:
        return FetchedHTML, (str(self), self.body, self.content_type)


def _content_type(response: TextResponse) -> str | None:
    value = response.headers.get("Content-Type")
    return value.decode("latin-1") if isinstance(value, bytes) else value


class ResponseBodyMiddleware:
    """Spider middleware: an item whose HTML field is its response's ``text`` gets a :class:`FetchedHTML`."""

    def __init__(self, html_field: str = "html") -> None:
        self.html_field = html_field

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "ResponseBodyMiddleware":
        if not is_enabled(crawler.settings):
            raise NotConfigured("DEDUP_ENABLED is False")
        return cls(settings_of(crawler).html_field)

    def _mark(self, response: Any, out: Any) -> Any:
        # most of a callback's output is its links: a Request is passed on at once (ItemAdapter.is_item
        # takes ~3 us, ~0.3 ms a page of 130 links, bench_crawl's site)
        if isinstance(out, Request) or not isinstance(response, TextResponse) or not ItemAdapter.is_item(out):
            return out
        adapter = ItemAdapter(out)
        value = adapter.get(self.html_field)
        if isinstance(value, str) and not isinstance(value, FetchedHTML) and value is response.text:
            try:
                adapter[self.html_field] = FetchedHTML(value, response.body, _content_type(response))
            except KeyError:  # pragma: no cover - the field is there, since it was read
                pass
        return out

    async def process_spider_output_async(self, response: Any, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for out in result:
            yield self._mark(response, out)

    def process_spider_output(self, response: Any, result: Iterable[Any]) -> Iterable[Any]:
        for out in result:
            yield self._mark(response, out)
