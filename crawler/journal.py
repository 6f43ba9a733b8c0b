"""``RequestJournal``: no request lost when a ``JOBDIR`` crawl is killed.

Scrapy's ``JOBDIR`` writes ``requests.seen`` as requests are scheduled but the state of its disk
queue only on a clean close, so after a SIGKILL every request that was queued (or downloading, or
being parsed) is "seen" and never scheduled again. This extension keeps, in
``JOBDIR/dedup-journal.sqlite`` (SQLite, WAL), every request that was scheduled and not yet
decided, and replays them when the same job starts again:

* a row is written (and committed) when the scheduler takes a request -- before its dupefilter
  marks it seen, so no request is ever seen without being journaled, and after every
  ``request_scheduled`` handler, so a request one of them ignores (Scrapy's offsite filter raises
  ``IgnoreRequest`` there for a link outside ``allowed_domains``) leaves no row;
* it is deleted when the engine is done with the request: its response went through the
  callback, every item the callback produced went through the item pipelines (kept or dropped),
  and every request it produced was scheduled (and so journaled), or the download failed for
  good, or the dupefilter refused the request. A redirect or retry replaces the row of the
  request it came from in one transaction;
* ``requests.seen`` is written through (:class:`FlushingDupeFilter`), so a request decided
  before a kill is not found again as a new link;
* at start the rows left by the previous run are scheduled again, past the dupefilter (which has
  seen them) but through the ``request_scheduled`` handlers: a row that one of them now ignores (a
  link outside today's ``allowed_domains``, or a row an older version wrote for a filtered link) is
  deleted, not fetched (``dedup/journal/ignored``); the stats say how many were recovered
  (``dedup/journal/recovered``);
* a run that did not close (SIGKILL, a forced shutdown) leaves Scrapy's disk queue without the state Scrapy
  writes when it closes, and its FIFO start-request queue is then read from its first record, hiding what
  the next run queues itself: the journal notes each run's start and close (``state`` key ``run``) and, after a
  run that did not close, removes ``JOBDIR/requests.queue`` before the scheduler opens it
  (``dedup/journal/stale_queue_removed``); every request it held has a row;
* a start request that a row scheduled again is not scheduled a second time when the spider issues its start
  requests again, as Scrapy does on every run of a job (``dedup/journal/start_requests_replayed``).

The journal id travels in ``request.meta["dedup_journal_id"]`` (so through Scrapy's own disk
queue too); a request whose id is already being processed in this run or was already decided is
skipped when the scheduler hands it out, so a request replayed from the journal and the same
request restored from Scrapy's disk queue are processed once.

"Done with a request" is the moment the engine removes it from its in-progress set (the end of
``ExecutionEngine._start_scheduled_request``'s chain). Scrapy has no signal for it, so the
journal wraps the engine slot's ``remove_request``; without that hook (a Scrapy that renamed it)
the journal logs an error and stays off rather than promise what it cannot keep.

Honest end: requests that cannot be replayed (a callback that is not a spider method, a spider
that no longer has it) are listed in the log, counted in ``dedup/journal/lost`` and make the
finish reason ``finished_incomplete`` and the exit status 1 (see :mod:`crawler.honesty`).
"""
from __future__ import annotations

import json
import logging
import pickle
import shutil
import sqlite3
from pathlib import Path
from typing import Any, Callable

from itemadapter import ItemAdapter
from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.dupefilters import RFPDupeFilter
from scrapy.exceptions import NotConfigured
from scrapy.utils.request import request_from_dict

from .config import is_enabled, settings_of
from .pipelines import index_buffered, index_flushed
from .spool import REPLAY_KEY

__all__ = ["RequestJournal", "JournalMiddleware", "FlushingDupeFilter", "JOURNAL_FILE", "META_KEY"]

logger = logging.getLogger(__name__)

JOURNAL_FILE = "dedup-journal.sqlite"
META_KEY = "dedup_journal_id"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS requests (id INTEGER PRIMARY KEY AUTOINCREMENT, url TEXT NOT NULL, data BLOB);
CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS decided (journal_id INTEGER NOT NULL, url TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS decided_journal_id ON decided (journal_id);
"""


class FlushingDupeFilter(RFPDupeFilter):
    """Scrapy's dupefilter, with ``requests.seen`` written through at every new fingerprint.

    Scrapy's buffers some kilobytes, so a SIGKILL forgets the last few hundred requests it had seen;
    they are then both replayed by the journal and found again as links, and fetched twice. The
    add-on makes this the ``DUPEFILTER_CLASS`` unless the project chose its own.
    """

    #: the request the journal is scheduling again (:meth:`RequestJournal._replay`), while it does: seen by
    #: the run that journaled it, so not filtered (only that object: a request a callback makes with its meta is)
    replaying: Request | None = None

    def is_seen(self, request: Request) -> bool:
        """Whether :meth:`request_seen` would filter ``request``, without marking it seen."""
        return not request.dont_filter and self._fingerprint(request) in self._fingerprints

    def request_seen(self, request: Request) -> bool:
        if request is self.replaying:
            return False
        seen = super().request_seen(request)
        if not seen and self.file:
            self.file.flush()
        return seen


class RequestJournal:
    """Extension; enabled by ``JOBDIR`` (and ``DEDUP_ENABLED``)."""

    def __init__(self, path: str | Path, *, dropped_log: str | Path | None = None,
                 crawler: Crawler | None = None) -> None:
        self.path = Path(path)
        self.dropped_log = Path(dropped_log) if dropped_log else None
        self.crawler = crawler
        self.db: sqlite3.Connection | None = None
        self.active: set[int] = set()     # handed out by the scheduler, not yet done
        self.received: set[int] = set()   # ... and whose response reached the spider
        self.replaying: set[int] = set()  # scheduled again from the journal, keep their row
        self.lost: list[str] = []         # URLs the journal could not replay
        self.dupefilter: FlushingDupeFilter | None = None
        self.decided_before: dict[int, set[str]] = {}
        self.dropped_last_run: set[str] = set()  # URLs the killed run appended to the dropped log
        self.replayed: set[int] = set()   # ids scheduled again from the journal in this run  # replayed id -> item URLs its killed run decided
        self.unsent: set[int] = set()     # done, but a kept page of theirs waits in the search index's write buffer
        self._warned_unserializable = False
        self.queue_set_aside = False      # requests.queue of a run that did not close was removed at start
        self.replayed_starts: set[bytes] = set()  # fingerprints of the start requests scheduled again from rows

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "RequestJournal":
        jobdir = crawler.settings.get("JOBDIR")
        if not jobdir:
            raise NotConfigured("no JOBDIR: a killed crawl starts again from its start requests")
        if not is_enabled(crawler.settings):
            raise NotConfigured("DEDUP_ENABLED is False")
        journal = cls(Path(jobdir) / JOURNAL_FILE, dropped_log=settings_of(crawler).dropped_log,
                      crawler=crawler)
        crawler.signals.connect(journal.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(journal.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(journal.request_dropped, signal=signals.request_dropped)
        crawler.signals.connect(journal.response_received, signal=signals.response_received)
        crawler.signals.connect(journal.item_decided, signal=signals.item_scraped)
        crawler.signals.connect(journal.item_decided, signal=signals.item_dropped)
        crawler.signals.connect(journal.index_flushed, signal=index_flushed)
        journal.queue_set_aside = journal._drop_stale_queue()  # before the engine opens the scheduler's queue
        return journal

    def _drop_stale_queue(self) -> bool:
        """Remove ``JOBDIR/requests.queue`` when the last run of this job did not close (SIGKILL, a forced
        shutdown): Scrapy writes its disk queues' state only when it closes, and a FIFO queue (the one it keeps
        start requests in) left without it is read from its first record, so the new run pops the dead run's
        records in place of its own and never hands out what it queued itself (a start request kept its row
        through a finished run). Every request that queue held has a row here, so the replay recovers them.
        Called before the scheduler opens the queue; True when removed."""
        queue = self.path.parent / "requests.queue"
        if not self.path.exists() or not queue.exists():
            return False
        try:
            db = sqlite3.connect(self.path)
            try:
                row = db.execute("SELECT value FROM state WHERE key = 'run'").fetchone()
            finally:
                db.close()
        except sqlite3.Error:
            return False  # spider_opened reports a journal it cannot use
        if row is None or row[0] != "running":
            return False
        shutil.rmtree(queue, ignore_errors=True)
        return True

    # -- storage -----------------------------------------------------------------------------------
    def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # autocommit mode; every change is its own (or an explicit) transaction. WAL with
        # synchronous=NORMAL survives a killed process (not a power cut) without an fsync per request.
        self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(_SCHEMA)

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None

    def pending(self) -> int:
        assert self.db is not None
        return self.db.execute("SELECT count(*) FROM requests").fetchone()[0]

    def _exists(self, journal_id: int) -> bool:
        assert self.db is not None
        return self.db.execute("SELECT 1 FROM requests WHERE id = ?", (journal_id,)).fetchone() is not None

    def _delete(self, journal_id: int) -> None:
        assert self.db is not None
        self.db.execute("DELETE FROM requests WHERE id = ?", (journal_id,))
        self.db.execute("DELETE FROM decided WHERE journal_id = ?", (journal_id,))

    def _inc(self, key: str, n: int = 1) -> None:
        if self.crawler is not None and self.crawler.stats is not None and n:
            self.crawler.stats.inc_value(key, n)

    # -- signals -----------------------------------------------------------------------------------
    def spider_opened(self, spider: Spider) -> None:
        assert self.crawler is not None and self.crawler.engine is not None
        engine = self.crawler.engine
        slot = getattr(engine, "_slot", None)
        if (slot is None or not callable(getattr(slot, "remove_request", None)) or slot.scheduler is None
                or not callable(getattr(slot.scheduler, "enqueue_request", None))):
            # without the hook no row would ever be deleted, and every run would replay them all
            logger.error("The request journal needs Scrapy's engine slot (remove_request, the scheduler's "
                         "enqueue_request), which this Scrapy "
                         "version does not have: it is off, and a killed crawl loses its queued requests",
                         extra={"spider": spider})
            return
        self.open()
        assert self.db is not None
        self.db.execute("INSERT OR REPLACE INTO state VALUES ('run', 'running')")  # 'closed' in spider_closed
        if self.queue_set_aside:
            self._inc("dedup/journal/stale_queue_removed")
            logger.info("Request journal %s: the last run of this job did not close (killed, or a forced shutdown); "
                        "Scrapy's request queue it left was removed, and the journal's rows are scheduled again",
                        self.path, extra={"spider": spider})
        slot.remove_request = self._wrap_remove(slot.remove_request)
        slot.scheduler.next_request = self._wrap_next(slot.scheduler.next_request)  # type: ignore[method-assign]
        # the engine calls it after every request_scheduled handler (any may ignore the request) and only then
        slot.scheduler.enqueue_request = self._wrap_enqueue(slot.scheduler.enqueue_request)  # type: ignore[method-assign]
        dupefilter = getattr(slot.scheduler, "df", None)
        self.dupefilter = dupefilter if isinstance(dupefilter, FlushingDupeFilter) else None
        self._check_unjournaled_kill(spider)
        self._replay(spider)

    def spider_closed(self, spider: Spider, reason: str) -> None:
        if self.db is not None:
            # after the scheduler closed, its queue's state written: the next run may trust the queue
            self.db.execute("INSERT OR REPLACE INTO state VALUES ('run', 'closed')")
            left = self.pending()
            if left:
                logger.info("Request journal %s keeps %d undecided request(s) for the next run of this job",
                            self.path, left, extra={"spider": spider})
        self.close()

    def journal_request(self, request: Request, spider: Spider) -> None:
        """Journal ``request``, which the scheduler is about to take (see :meth:`_wrap_enqueue`)."""
        if self.db is None:
            return
        previous = request.meta.get(META_KEY)
        if previous is not None and previous in self.replaying:
            self.replaying.discard(previous)  # its row is already there
            return
        # a request made by a downloader middleware from one still downloading (redirect, retry)
        # replaces it; a request made by a callback (which may copy meta) does not
        replaces = (previous if previous is not None and previous in self.active and previous not in self.received
                    else None)
        if replaces is None and self.dupefilter is not None and self.dupefilter.is_seen(request):
            return  # the scheduler drops it: a row now would be replayed if the crawl died before the drop
        data = self._serialize(request, spider)
        db = self.db
        db.execute("BEGIN")
        try:
            cursor = db.execute("INSERT INTO requests (url, data) VALUES (?, ?)", (request.url, data))
            if replaces is not None:
                self._delete(replaces)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        request.meta[META_KEY] = cursor.lastrowid

    def request_dropped(self, request: Request, spider: Spider) -> None:
        journal_id = request.meta.get(META_KEY)
        if self.db is not None and journal_id is not None and journal_id not in self.active:
            self._delete(journal_id)

    def response_received(self, response: Any, request: Request, spider: Spider) -> None:
        journal_id = request.meta.get(META_KEY)
        if journal_id is not None:
            self.received.add(journal_id)

    def item_decided(self, item: Any, response: Any, spider: Spider, **kwargs: Any) -> None:
        """An item went through the pipelines (kept, or dropped): if its request is replayed after a
        kill, that item is not decided a second time (:class:`JournalMiddleware`). A kept item that
        waits in the search index's write buffer (Elasticsearch's bulk writes) is not safe yet: its
        request keeps its row until the buffer is sent, and a replay decides the item again (the
        dedup index recognises its own record) so that it reaches the search index."""
        request = getattr(response, "request", None)
        journal_id = request.meta.get(META_KEY) if request is not None else None
        url = ItemAdapter(item).get("url") if ItemAdapter.is_item(item) else None
        if self.db is None or journal_id is None or not url:
            return
        if "exception" not in kwargs and self._buffered():  # item_scraped (kept) into a buffer not yet sent
            self.unsent.add(journal_id)
            return
        self.db.execute("INSERT INTO decided VALUES (?, ?)", (journal_id, str(url)))

    def index_flushed(self, **_: Any) -> None:
        """The search index's buffer was sent: the requests whose pages waited there are done."""
        if self.db is None or not self.unsent:
            return
        # those still in progress are deleted as usual when done (their pages went out with this buffer)
        held, self.unsent = self.unsent - self.active, set()
        self.db.execute("BEGIN")
        for journal_id in held:
            self._delete(journal_id)
        self.db.execute("COMMIT")

    def _buffered(self) -> int:
        """Kept documents the search index holds unsent (:data:`crawler.pipelines.index_buffered`)."""
        if self.crawler is None:
            return 0
        return sum(n for _, n in self.crawler.signals.send_catch_log(index_buffered) if isinstance(n, int))

    def already_decided(self, request: Request, url: Any) -> bool:
        journal_id = request.meta.get(META_KEY)
        return str(url) in self.decided_before.get(journal_id, ()) or str(url) in self.dropped_last_run

    # -- engine hooks ------------------------------------------------------------------------------
    def _wrap_remove(self, remove: Callable[[Request], None]) -> Callable[[Request], None]:
        def remove_request(request: Request) -> None:
            journal_id = request.meta.get(META_KEY)
            if journal_id is not None and journal_id in self.active and self.db is not None:
                if journal_id not in self.unsent:  # else its row goes when the search index's buffer is sent
                    self.db.execute("BEGIN")
                    self._delete(journal_id)
                    self.db.execute("COMMIT")
                self.active.discard(journal_id)
                self.decided_before.pop(journal_id, None)
                self.replayed.discard(journal_id)
                self.received.discard(journal_id)
            remove(request)
        return remove_request

    def _wrap_enqueue(self, enqueue: Callable[[Request], bool]) -> Callable[[Request], bool]:
        def enqueue_request(request: Request) -> bool:
            assert self.crawler is not None
            if self._start_replayed(request):
                return False  # the engine signals request_dropped
            self.journal_request(request, self.crawler.spider)
            return enqueue(request)
        return enqueue_request

    def _start_replayed(self, request: Request) -> bool:
        """Whether ``request`` is one of this run's start requests (Scrapy issues them again on every run of a
        job, ``dont_filter``) that a row of the previous run already scheduled again: fetched once, not twice."""
        if not self.replayed_starts or META_KEY in request.meta or not request.meta.get("is_start_request"):
            return False
        fingerprint = self._fingerprint(request)
        if fingerprint not in self.replayed_starts:
            return False
        self.replayed_starts.discard(fingerprint)
        self._inc("dedup/journal/start_requests_replayed")
        return True

    def _fingerprint(self, request: Request) -> bytes:
        assert self.crawler is not None
        return self.crawler.request_fingerprinter.fingerprint(request)  # type: ignore[union-attr]

    def _wrap_next(self, next_request: Callable[[], Request | None]) -> Callable[[], Request | None]:
        def wrapped() -> Request | None:
            while True:
                request = next_request()
                if request is None:
                    return None
                journal_id = request.meta.get(META_KEY)
                if journal_id is None or self.db is None:
                    return request
                if journal_id in self.active or not self._exists(journal_id):
                    # a second copy (journal replay + Scrapy's own disk queue), or already decided
                    self._inc("dedup/journal/skipped_copies")
                    continue
                self.active.add(journal_id)
                return request
        return wrapped

    # -- (de)serialisation -------------------------------------------------------------------------
    def _serialize(self, request: Request, spider: Spider) -> bytes | None:
        try:
            return pickle.dumps(request.to_dict(spider=spider), protocol=4)
        except Exception as exc:  # a lambda callback, an unpicklable meta value: kept as a URL only
            self._inc("dedup/journal/unserializable")
            if not self._warned_unserializable:
                self._warned_unserializable = True
                logger.warning("Request %s cannot be journaled (%s: %s); if this crawl is killed such requests "
                               "cannot be replayed (they are listed then). Use spider methods as callbacks and "
                               "picklable meta, as JOBDIR needs anyway", request.url, type(exc).__name__, exc,
                               extra={"spider": spider})
            return None

    def _check_unjournaled_kill(self, spider: Spider) -> None:
        """A JOBDIR whose last run was killed before this journal existed: what it had queued is lost."""
        jobdir = self.path.parent
        seen = jobdir / "requests.seen"
        first_use = self.db is not None and self.db.execute(
            "SELECT value FROM state WHERE key = 'created'").fetchone() is None
        if first_use and self.db is not None:
            self.db.execute("INSERT INTO state VALUES ('created', datetime('now'))")
            if seen.exists() and seen.stat().st_size and not (jobdir / "requests.queue" / "active.json").exists():
                self.lost.append(f"(the requests queued in {jobdir} when its last run was killed)")
                logger.error("JOBDIR %s was left by a killed crawl that had no request journal: the requests it "
                             "had queued are marked seen and cannot be recovered. Start a new JOBDIR to crawl "
                             "them", jobdir, extra={"spider": spider})

    def _note_dropped_log(self, replaying: bool) -> None:
        """The URLs the previous (killed) run dropped: an item dropped in the instant between its
        line in the dropped log and :meth:`item_decided` is not dropped (and logged) again. Only the
        part of the log written since that run started is read; this run's start is noted."""
        assert self.db is not None
        if self.dropped_log is None:
            return
        size = self.dropped_log.stat().st_size if self.dropped_log.exists() else 0
        row = self.db.execute("SELECT value FROM state WHERE key = 'dropped_log_offset'").fetchone()
        if replaying and row is not None and int(row[0]) < size:
            with self.dropped_log.open("rb") as fh:
                fh.seek(int(row[0]))
                for line in fh:
                    try:
                        obj = json.loads(line)
                        if "event" not in obj:  # drop lines: an event may be of a page the run did not fetch
                            self.dropped_last_run.add(str(obj["url"]))  # (a dropped page decided from its line)
                    except (ValueError, KeyError, TypeError):
                        continue  # a line cut by the kill
        self.db.execute("INSERT OR REPLACE INTO state VALUES ('dropped_log_offset', ?)", (str(size),))

    def _replay(self, spider: Spider) -> None:
        assert self.db is not None and self.crawler is not None and self.crawler.engine is not None
        rows = self.db.execute("SELECT id, url, data FROM requests ORDER BY id").fetchall()
        for journal_id, url in self.db.execute("SELECT journal_id, url FROM decided"):
            self.decided_before.setdefault(journal_id, set()).add(url)
        recovered = ignored = 0
        for journal_id, url, data in rows:
            try:
                if data is None:
                    raise ValueError("it could not be serialised when it was scheduled")
                request = request_from_dict(pickle.loads(data), spider=spider)
            except Exception as exc:
                self.lost.append(url)
                logger.error("Request journal: cannot replay %s (%s: %s); this page is not recovered",
                             url, type(exc).__name__, exc, extra={"spider": spider})
                self._delete(journal_id)
                continue
            request.meta[META_KEY] = journal_id
            if self.dupefilter is None:  # the project's own dupefilter: it would filter what requests.seen has
                request.dont_filter = True  # (and the offsite filter then lets it through, as before)
            self.replaying.add(journal_id)
            self.replayed.add(journal_id)
            if self.dupefilter is not None:
                self.dupefilter.replaying = request
            try:
                self.crawler.engine.crawl(request)
            finally:
                if self.dupefilter is not None:
                    self.dupefilter.replaying = None
            if journal_id in self.replaying:  # a request_scheduled handler ignored it: the scheduler never took it
                self.replaying.discard(journal_id)
                self.replayed.discard(journal_id)
                self._delete(journal_id)
                ignored += 1
                continue
            if request.meta.get("is_start_request"):
                self.replayed_starts.add(self._fingerprint(request))
            recovered += 1
        self._note_dropped_log(bool(rows))
        self._inc("dedup/journal/recovered", recovered)
        self._inc("dedup/journal/ignored", ignored)
        self._inc("dedup/journal/lost", len(self.lost))
        if rows:
            logger.info("Request journal %s: %d undecided request(s) of the previous run scheduled again%s%s",
                        self.path, recovered, f", {len(self.lost)} could not be" if self.lost else "",
                        f", {ignored} ignored (filtered when scheduled: offsite, ...)" if ignored else "",
                        extra={"spider": spider})


class JournalMiddleware:
    """Spider middleware: when a request replayed after a kill yields an item its killed run had
    already decided (the kill came between the item's decision and the end of its request), that
    item is dropped here, before the pipelines, so no page is decided (or logged) twice."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "JournalMiddleware":
        if not crawler.settings.get("JOBDIR"):
            raise NotConfigured("no JOBDIR")
        return cls(crawler)

    def _journal(self) -> RequestJournal | None:
        extensions = getattr(self.crawler, "extensions", None)
        for ext in getattr(extensions, "middlewares", ()):
            if isinstance(ext, RequestJournal):
                return ext
        return None

    def _filter(self, journal: RequestJournal | None, request: Any, out: Any) -> bool:
        """False for an item the killed run already decided; marks the other items of a replayed
        request as replays, so a kept page the index recorded just before the kill is recognised
        as itself (``replay_of_recorded_page``) rather than as its own duplicate."""
        if journal is None or request is None or not ItemAdapter.is_item(out):
            return True
        journal_id = request.meta.get(META_KEY)
        if journal_id is None or journal_id not in journal.replayed:
            return True
        adapter = ItemAdapter(out)
        if journal.already_decided(request, adapter.get("url")):
            if self.crawler.stats is not None:
                self.crawler.stats.inc_value("dedup/journal/already_decided")
            return False
        try:
            if not adapter.get("dedup"):
                adapter["dedup"] = {REPLAY_KEY: "dedup"}
        except KeyError:  # an Item class without a dedup field
            pass
        return True

    async def process_spider_output_async(self, response: Any, result: Any) -> Any:
        journal, request = self._journal(), getattr(response, "request", None)
        async for out in result:
            if self._filter(journal, request, out):
                yield out

    def process_spider_output(self, response: Any, result: Any) -> Any:
        journal, request = self._journal(), getattr(response, "request", None)
        for out in result:
            if self._filter(journal, request, out):
                yield out
