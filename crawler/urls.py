"""Session ids out of request URLs, so the page a group keeps has a URL people can share.

    ADDONS = {"crawler.addon.DedupAddon": 100, "crawler.urls.SessionIdAddon": 200}

(``-s ADDONS=...`` on the command line replaces the project's whole ``ADDONS``: name both there too.)

A site that puts a session id in its links (``/a.html;jsessionid=ABC123``, ``/a.html?sid=7f3a``)
serves one page under many URLs. Dedup finds those copies by content, but it keeps whichever
URL arrived first, and that can be the session URL. :class:`SessionIdMiddleware` rewrites
every request a spider yields (start requests included) to the URL without its session id
(:func:`strip_session_ids`), so Scrapy's request filter fetches the page once, under its
clean URL. Other variants (``?utm_source=``, print and mirror copies) are untouched: they are
the content copies dedup exists to find.

Why here and not in dedup's choice of the kept page: the kept page is the first one seen, and
changing that later would mean re-pointing ``duplicate_of`` of every copy already flagged or
dropped; a session id is not content, so it is cheapest removed before the fetch. Opt-in
(``make demo`` turns it on): a site where a listed name is a real parameter keeps it off.
"""
from __future__ import annotations

import re
from typing import Any, AsyncIterator, Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from scrapy import Request
from scrapy.settings import BaseSettings

__all__ = ["SESSION_PARAMS", "SessionIdAddon", "SessionIdMiddleware", "strip_session_ids"]

#: parameter names (lowercase) taken for session ids, in a path (``;name=value``) or a query
SESSION_PARAMS = frozenset({"jsessionid", "phpsessid", "aspsessionid", "sessionid", "session_id", "sid",
                            "cfid", "cftoken"})

_PATH_PARAM = re.compile(r";([A-Za-z_]+)=[^/;]*")


def strip_session_ids(url: str, names: Iterable[str] = SESSION_PARAMS) -> str:
    """``url`` without session-id path parameters and query fields (other fields keep their
    order and spelling); ``url`` itself when it has none."""
    names = frozenset(n.lower() for n in names)
    parts = urlsplit(url)
    path = _PATH_PARAM.sub(lambda m: "" if m.group(1).lower() in names else m.group(0), parts.path)
    query = parts.query
    if query:
        fields = parse_qsl(query, keep_blank_values=True)
        kept = [(k, v) for k, v in fields if k.lower() not in names]
        if len(kept) != len(fields):
            query = urlencode(kept)
    if path == parts.path and query == parts.query:
        return url
    return urlunsplit((parts.scheme, parts.netloc, path, query, parts.fragment))


class SessionIdMiddleware:
    """Spider middleware: every Request a spider yields goes out without its session ids."""

    def _clean(self, result: Any) -> Any:
        if isinstance(result, Request):
            url = strip_session_ids(result.url)
            if url != result.url:
                return result.replace(url=url)
        return result

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for result in start:
            yield self._clean(result)

    def process_spider_output(self, response: Any, result: Iterable[Any]) -> Iterable[Any]:
        for r in result:
            yield self._clean(r)

    async def process_spider_output_async(self, response: Any, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for r in result:
            yield self._clean(r)


class SessionIdAddon:
    """Adds :class:`SessionIdMiddleware` (priority 60) to ``SPIDER_MIDDLEWARES``, keeping the
    project's entries."""

    def update_settings(self, settings: BaseSettings) -> None:
        settings.setdefault_in_component_priority_dict("SPIDER_MIDDLEWARES", SessionIdMiddleware, 60)
