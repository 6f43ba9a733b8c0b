"""The spool: items an unreachable index could not decide or store, replayed by the next crawl.

When the Elasticsearch cluster stays away for longer than its retry budget, ``DedupPipeline``
(stage ``dedup``: not decided yet; the parsed page is kept) and ``IndexPipeline`` (stage
``index``: decided, recorded in the dedup index, not yet in the search index) append the item
to ``DEDUP_SPOOL`` instead of losing it, and the crawl stops with reason
``dedup_index_unavailable``.  :class:`SpoolMiddleware` hands the spooled items back at the start
of the next crawl, before any request, through the spider-middleware ``process_start`` hook, so
they go through every pipeline and feed like freshly scraped items.  The file is renamed to
``<spool>.replaying.<pid>`` while its items are replayed (each crawl claims whole files by a rename,
so crawls sharing a spool never replay one entry twice, and an entry goes to a crawl of the spider that
spooled it) and deleted when that crawl finishes normally; a replay that is itself interrupted is
replayed again by the next crawl (the dedup index recognises a page it already recorded, see
``DedupPipeline``).
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

__all__ = ["Spool", "SpoolMiddleware", "REPLAY_KEY", "owner"]

log = logging.getLogger(__name__)

#: key of ``item["dedup"]`` marking an item replayed at the ``index`` stage (already decided)
REPLAY_KEY = "replay"


class Spool:
    """An append-only JSON-lines file of ``{"stage", "time", "error", "item"}`` entries."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        # this process's replay: several crawls may share one spool (one project folder), each claims whole files
        self.replaying = self.path.with_name(f"{self.path.name}.replaying.{os.getpid()}")
        self.added = 0
        self._keep = False  # an unreadable line was left in the replaying file

    def add(self, stage: str, item: dict[str, Any], error: str, page: Page | None = None, *,
            spider: str | None = None) -> None:
        entry = {"stage": stage, "time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
                 "error": error, "item": {k: v for k, v in item.items() if k != "page"}}
        if spider:
            entry["spider"] = spider
        if page is not None:
            entry["page"] = dataclasses.asdict(page)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _append(self.path, json.dumps(entry, ensure_ascii=False, default=str) + "\n")
        self.added += 1

    def take(self, spider: str | None = None) -> Iterator[dict[str, Any]]:
        """The spooled items to replay: the spool's, and those of replays left unfinished by crawls that are gone.
        Each file is claimed by a rename, so two crawls starting at once never replay the same entry (helper-24:
        both replayed all of it, and logged drops twice). An entry another crawl spooled (``spider``: its
        :func:`owner`) goes back to the spool for that crawl's next run, rather than into this crawl's feed."""
        self._claim()
        if not self.replaying.exists():
            return
        mine, others = [], []
        for line in self.replaying.read_text(encoding="utf-8").splitlines():
            if line.strip():
                entry = _entry(line)
                theirs = isinstance(entry, dict) and not _replays(spider, entry.get("spider"))
                (others if theirs else mine).append((line, entry))
        if others:  # back to the spool for their crawl, and out of this replay before any is replayed
            _append(self.path, "".join(line + "\n" for line, _ in others))
            part = self.replaying.with_name(self.replaying.name + ".part")
            part.write_text("".join(line + "\n" for line, _ in mine), encoding="utf-8")
            os.replace(part, self.replaying)
            log.warning("%d spooled items of other crawls (another spider, or another JOBDIR that is still there) "
                        "are left in %s for them", len(others), self.path)
        for n, (_, entry) in enumerate(mine, 1):
            try:
                if isinstance(entry, Exception):
                    raise entry
                yield _item(entry)
            except (ValueError, KeyError, TypeError) as exc:
                log.error("Spool %s item %d is not a spooled item (%s); left in the file", self.replaying, n, exc)
                self._keep = True

    def _claim(self) -> None:
        """Move the spool and every replay file of a process that is gone into this process's replay file."""
        left = [p for p in self.path.parent.glob(self.path.name + ".replaying*")
                if p != self.replaying and not p.name.endswith(".part") and not _running(p)]
        for source in [self.path, *left]:
            part = self.replaying.with_name(self.replaying.name + ".part")
            try:
                os.rename(source, part)  # atomic: another crawl claiming the same file gets FileNotFoundError
            except FileNotFoundError:
                continue
            _append(self.replaying, part.read_text(encoding="utf-8"))
            part.unlink()

    def done(self) -> None:
        """The replay finished: forget the replayed entries (kept if a line was unreadable)."""
        if self.replaying.exists() and not self._keep:
            self.replaying.unlink()


def owner(crawler: Crawler | None) -> str | None:
    """Whose spooled entries a crawl replays: its spider's name, and its ``JOBDIR`` when it has one (two crawls
    of one spider sharing a folder, each with its own JOBDIR, replay their own)."""
    name = getattr(getattr(crawler, "spider", None), "name", None)
    jobdir = crawler.settings.get("JOBDIR") if crawler is not None and crawler.settings is not None else None
    return f"{name}@{os.path.abspath(jobdir)}" if name and jobdir else name


def _entry(line: str) -> Any:
    """A spool line's entry, or the error that reading it raised (the replay reports it, and keeps the line)."""
    try:
        return json.loads(line)
    except ValueError as exc:
        return exc


def _replays(crawl: str | None, spooled: Any) -> bool:
    """Whether a crawl of :func:`owner` ``crawl`` replays an entry spooled by ``spooled``: one of no owner (an
    earlier version's), else one of its spider, spooled by a crawl of its JOBDIR, of none, or of a JOBDIR that is
    gone (a crawl leaves another JOBDIR's entries to that JOBDIR's next run while the folder is there)."""
    if not crawl or not isinstance(spooled, str):
        return True
    name, _, jobdir = crawl.partition("@")
    their_name, _, their_jobdir = spooled.partition("@")
    return name == their_name and (their_jobdir in ("", jobdir) or not os.path.isdir(their_jobdir))


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())


def _running(path: Path) -> bool:
    """Whether the replay file ``path`` is a running process's (``<spool>.replaying.<pid>``); one named
    ``<spool>.replaying`` (an earlier version's) is nobody's."""
    pid = path.name.rsplit(".", 1)[-1]
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


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
        for item in self.spool.take(owner(self.crawler)):
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
