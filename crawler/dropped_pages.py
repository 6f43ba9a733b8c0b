"""The pages a crawl's dropped log holds as dropped, as :class:`~crawler.pipelines.DedupPipeline` knows them.

For each dropped URL: the key of the bytes it was dropped for (the same page fetched again is known before
parsing), the content hash of its text (the text a kept page must hold), where its drop line starts in
the log (the page is rebuilt from that line when no kept page holds its text any more: :meth:`holding`,
:meth:`logged`; a seen mark names it), and the pages its line names (:meth:`names`: the drop stands while they
still hold its text and its group; :meth:`matched`: the dropped pages to decide again when the page they matched
changes).
Read from the log when the crawl opens it, kept up to date as the crawl drops and keeps.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, NamedTuple

from dedup.droplog import read_log
from dedup.sources import Source

__all__ = ["DroppedPages"]


class _Dropped(NamedTuple):
    body: str | None  # the key of the bytes it was dropped for
    text: str | None  # the content hash of its text
    offset: int  # where its drop line starts
    nearest: str | None  # the page it matched
    named: str | None  # the page its group was kept for (its line's duplicate_of)


class DroppedPages:
    def __init__(self, path: str | os.PathLike) -> None:
        """None yet (:meth:`read` reads the log at ``path``)."""
        self.path = Path(path)
        self._pages: dict[str, _Dropped] = {}
        #: a field of :class:`_Dropped` -> its value -> the urls of that value (``text``: :meth:`holding`,
        #: ``nearest``: :meth:`matched`), each made when first asked
        self._by: dict[str, dict[str, set[str]]] = {}

    @classmethod
    def read(cls, path: str | os.PathLike) -> "DroppedPages":
        """The pages the log at ``path`` holds as dropped (none when there is no log)."""
        pages = cls(path)
        if pages.path.is_file():
            pages._pages = {e.url: _Dropped(e.body, e.content_hash, e.offset, e.nearest, e.duplicate_of)
                            for e in read_log(pages.path).entries if e.state == "dropped"}
        return pages

    def get(self, url: str | None) -> tuple[str | None, str | None] | None:
        """``(body key, content hash)`` of ``url`` when the log holds it as dropped, else None."""
        found = self._pages.get(url) if url else None
        return None if found is None else (found.body, found.text)

    def names(self, url: str) -> tuple[str | None, str | None]:
        """``(nearest, duplicate_of)`` of ``url``'s drop line: the page it matched and the page its group was
        kept for, as the line says (``(None, None)`` when the log does not hold it as dropped)."""
        found = self._pages.get(url)
        return (None, None) if found is None else (found.nearest, found.named)

    def matched(self, page: str) -> list[str]:
        """The dropped URLs whose line says they matched ``page`` (``nearest``), in the order they were dropped."""
        return self._having("nearest", page)

    def offset(self, url: str) -> int | None:
        """Where ``url``'s latest drop line starts in the log, when the log holds it as dropped."""
        found = self._pages.get(url)
        return None if found is None else found.offset

    def add(self, url: str, body: str | None, content_hash: str | None, offset: int, nearest: str | None = None,
            duplicate_of: str | None = None) -> None:
        self.pop(url)
        self._pages[url] = found = _Dropped(body, content_hash, offset, nearest, duplicate_of)
        for name, by in self._by.items():
            if getattr(found, name):
                by.setdefault(getattr(found, name), set()).add(url)

    def pop(self, url: str) -> None:
        found = self._pages.pop(url, None)
        for name, by in self._by.items() if found is not None else ():
            by.get(getattr(found, name), set()).discard(url)

    def holding(self, content_hash: str) -> list[str]:
        """The dropped URLs whose text has ``content_hash``, in the order they were dropped."""
        return self._having("text", content_hash)

    def _having(self, name: str, value: str) -> list[str]:
        """The dropped URLs whose ``name`` (a :class:`_Dropped` field) is ``value``, in the order they were dropped."""
        by = self._by.get(name)
        if by is None:
            by = self._by[name] = {}
            for url, found in self._pages.items():
                if getattr(found, name):
                    by.setdefault(getattr(found, name), set()).add(url)
        return sorted(by.get(value, ()), key=lambda u: self._pages[u].offset)

    def logged(self, url: str) -> tuple[dict[str, Any], Source]:
        """The item ``url`` was dropped as, and its page as a source to rebuild it from: read from its drop line."""
        with open(self.path, "rb") as f:
            f.seek(self._pages[url].offset)
            line: dict[str, Any] = json.loads(f.readline())
        item = {**(line.get("item") if isinstance(line.get("item"), dict) else {}), "url": url}
        page = line.get("page") if isinstance(line.get("page"), dict) else None
        return item, Source.from_logged(item, page)
