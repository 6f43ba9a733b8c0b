"""One frontier shared by several ``scrapy crawl`` processes, through Redis, that loses no page
when a crawler is killed.

scrapy-redis's scheduler pops a request from Redis destructively: the requests a crawler holds
in flight (downloading, being parsed, its items in the pipelines) exist nowhere else, and a
SIGKILL loses them.  :class:`ReliableScheduler` (a scrapy-redis ``Scheduler``) pops with ``LMOVE``
into a processing list of its own, ``KEY:processing:ID``, in the same atomic step, and removes
a request from it only when the request is done:

* its callback's output is exhausted (the links it found are in the shared queue) and every
  item it yielded has left the item pipelines (``item_scraped``, ``item_dropped`` or
  ``item_error``), and what they stored is safe: a dropped page is in the dropped log, a kept
  page in the index, and if :class:`~crawler.pipelines.IndexPipeline` still holds its document in
  the search index's write buffer (Elasticsearch's bulk writes, 100 documents), the request is
  released when that buffer is sent (``index_flushed``).  :class:`FrontierMiddleware` (a spider
  middleware next to the engine) counts the items and says when the output ends;
* or a redirect / retry of it is in the shared queue;
* or the crawler is idle (nothing downloading, nothing in the scraper): it sends its write
  buffer (``flush_index``), and what is left in its list is done (a download error, a page with
  no item), and is removed.

Every crawler holds a lease, ``KEY:alive:ID``, which expires after 3 heartbeats
(``SCHEDULER_HEARTBEAT`` seconds each, 5 by default), renewed on every heartbeat and every pop,
and is listed in ``KEY:crawlers`` by the same atomic step (a crawler unlisted while it was silent
lists itself again).  On every heartbeat, and whenever it runs out of requests, a crawler moves
the processing list of any listed crawler whose lease expired back into the shared queue and
unlists it, in one atomic step (a Lua script: two crawlers reclaiming at once move each request
once; a crawler renewing its lease meanwhile keeps its list).  A crawler does not finish while
another crawler's processing list holds requests (they may yield links, or come back by reclaim
when its lease expires), so a crawl killed half-way is finished by the others, or, if none is
left, by the next crawler started with the same ``REDIS_URL``.  A crawler silent for longer than
its lease without dying (a stalled process) has its requests crawled again by the others.

A reclaimed request is crawled again from the start.  The middleware marks the items of the
frontier's requests as replays (every URL passes the shared seen-requests set once, so a page
fetched twice is a reclaimed request or a start URL every crawler asks for), so a page whose
item the killed crawler had already indexed comes back as the index's replay of its own record
(kept, the same verdict: :meth:`dedup.deduplicator.Deduplicator.process` finds its URL's record), never as an
exact duplicate of itself; an exact duplicate the killed crawler had dropped is dropped again,
in the other crawler's dropped log (the same verdict).

Settings (besides scrapy-redis's ``REDIS_URL`` and ``SCHEDULER_QUEUE_KEY``):

``SCHEDULER = "crawler.frontier.ReliableScheduler"``, ``SCHEDULER_PERSIST = True`` (without it
the first crawler to finish clears the shared queue and the seen-requests set: refused),
``DUPEFILTER_CLASS = "scrapy_redis.dupefilter.RFPDupeFilter"`` (the seen-requests set shared in
Redis), ``SCHEDULER_HEARTBEAT`` (seconds, 5).  :class:`~crawler.addon.DedupAddon` adds the
middleware when this scheduler is set; the queue is a plain FIFO list (``LPUSH``/``LMOVE``).
"""
from __future__ import annotations

import itertools
import logging
import os
import socket
import uuid
from typing import Any, AsyncIterator, Iterable, Iterator

from itemadapter import ItemAdapter
from scrapy import Request, signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import load_object
from scrapy_redis.queue import Base
from scrapy_redis.scheduler import Scheduler

from .pipelines import flush_index, index_buffered, index_flushed
from .spool import REPLAY_KEY

__all__ = ["ReliableScheduler", "ListQueue", "FrontierMiddleware", "output_done", "item_yielded"]

logger = logging.getLogger(__name__)

#: sent by :class:`FrontierMiddleware`: ``item_yielded(token)`` before an item goes to the
#: pipelines, ``output_done(token)`` when a callback's output is exhausted (or raised)
item_yielded = object()
output_done = object()

TOKEN = "frontier_token"  # the request meta key naming the popped request in the processing list

# Lua, so that each is one atomic step in Redis.  KEYS: alive, crawlers (, queue, processing); ARGV: id, lease (ms).
# A beat renews the lease and (re)lists the crawler, whom a reclaimer may have unlisted while it was silent.
_BEAT = """
redis.call('SET', KEYS[1], '1', 'PX', ARGV[2])
return redis.call('SADD', KEYS[2], ARGV[1])
"""
# A pop is a beat too: a request is never moved into the processing list of an unlisted crawler, or of one
# whose lease is about to expire, so whatever a crawler holds is reclaimed when it dies.
_POP = """
redis.call('SET', KEYS[1], '1', 'PX', ARGV[2])
redis.call('SADD', KEYS[2], ARGV[1])
return redis.call('LMOVE', KEYS[3], KEYS[4], 'RIGHT', 'LEFT')
"""
# KEYS: alive, processing, queue, crawlers; ARGV: id.  -1: the lease is live; else the requests moved back
# (pushed at the consuming end: crawled next), and the crawler is unlisted in the same step.
_RECLAIM = """
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
local n = 0
while redis.call('LMOVE', KEYS[2], KEYS[3], 'RIGHT', 'RIGHT') do n = n + 1 end
redis.call('SREM', KEYS[4], ARGV[1])
return n
"""


class ListQueue(Base):
    """A FIFO list (``LPUSH`` / ``RPOP``); :class:`ReliableScheduler` pops it with ``LMOVE``."""

    def __len__(self) -> int:
        return self.server.llen(self.key)

    def push(self, request: Request) -> None:
        self.server.lpush(self.key, self._encode_request(request))

    def pop(self, timeout: int = 0) -> Request | None:  # the plain scrapy-redis path; unused here
        data = self.server.rpop(self.key)
        return self._decode_request(data) if data else None


class ReliableScheduler(Scheduler):
    """A scrapy-redis scheduler whose popped requests survive a killed crawler (see the module docstring).

    ``heartbeat``: seconds between the alive key's refreshes and the reclaim checks (5); a
    crawler silent for three heartbeats is dead and its requests go back to the queue."""

    def __init__(self, server: Any, *, heartbeat: float = 5.0, **kwargs: Any) -> None:
        kwargs["queue_cls"] = f"{__name__}.ListQueue"
        super().__init__(server, **kwargs)
        if heartbeat <= 0:
            raise ValueError(f"SCHEDULER_HEARTBEAT must be > 0 seconds (got {heartbeat})")
        if not self.persist:
            raise ValueError("SCHEDULER_PERSIST must be True with crawler.frontier.ReliableScheduler: several "
                             "crawlers share the queue, and the first to finish would clear it")
        self.heartbeat = heartbeat
        self.id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.inflight: dict[str, bytes] = {}  # token -> the raw request in our processing list
        self.items: dict[str, int] = {}  # token -> items yielded and not yet out of the pipelines
        self.ended: set[str] = set()  # tokens whose callback output is exhausted
        self.stored: set[str] = set()  # tokens with an item that went to the search index
        self.unsent: set[str] = set()  # done tokens released when the search index's write buffer is sent
        self._tokens = itertools.count(1)
        self._loop: Any = None
        self.crawler: Any = None

    @classmethod
    def from_settings(cls, settings: Any) -> "ReliableScheduler":
        from scrapy_redis.dupefilter import RFPDupeFilter

        dupefilter = settings.get("DUPEFILTER_CLASS")
        if not (dupefilter and isinstance(load_object(dupefilter), type)
                and issubclass(load_object(dupefilter), RFPDupeFilter)):
            raise ValueError(f"DUPEFILTER_CLASS must be scrapy_redis.dupefilter.RFPDupeFilter with "
                             f"crawler.frontier.ReliableScheduler (got {dupefilter!r}): the crawlers share the "
                             "requests they have seen through Redis")
        instance = super().from_settings(settings)  # scrapy-redis reads its own settings
        heartbeat = settings.getfloat("SCHEDULER_HEARTBEAT", 5.0)
        if heartbeat <= 0:
            raise ValueError(f"SCHEDULER_HEARTBEAT must be > 0 seconds (got {heartbeat})")
        instance.heartbeat = heartbeat
        return instance

    @classmethod
    def from_crawler(cls, crawler: Any) -> "ReliableScheduler":
        instance = super().from_crawler(crawler)
        instance.crawler = crawler
        for signal in (signals.item_scraped, signals.item_dropped, signals.item_error):
            crawler.signals.connect(instance._item_left, signal=signal)
        crawler.signals.connect(instance._item_yielded, signal=item_yielded)
        crawler.signals.connect(instance._output_done, signal=output_done)
        crawler.signals.connect(instance._index_flushed, signal=index_flushed)
        return instance

    # -- keys -------------------------------------------------------------------------------------
    def _key(self, kind: str, cid: str | None = None) -> str:
        return f"{self.queue.key}:{kind}" + (f":{cid}" if cid else "")

    # -- life -------------------------------------------------------------------------------------
    def open(self, spider: Any) -> None:
        # scrapy-redis's open, without its deprecated Spider.log call
        self.spider = spider
        self.queue = ListQueue(server=self.server, spider=spider, key=self.queue_key % {"spider": spider.name},
                               serializer=self.serializer)
        if not self.df:
            self.df = load_object(self.dupefilter_cls).from_spider(spider)
        if self.flush_on_start:
            self.flush()
        if len(self.queue):
            logger.info("Resuming crawl (%d requests scheduled)", len(self.queue))
        self.processing = self._key("processing", self.id)
        self._lease_ms = int(self.heartbeat * 3000)
        self._beat_script = self.server.register_script(_BEAT)
        self._pop_script = self.server.register_script(_POP)
        self._reclaim_script = self.server.register_script(_RECLAIM)
        self._beat()
        self.reclaim()
        from scrapy.utils.asyncio import create_looping_call

        self._loop = create_looping_call(self._tick)
        self._loop.start(self.heartbeat, now=False)

    def close(self, reason: str) -> Any:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        # the engine is stopped: what is left in our list was handled (an error, a page with no
        # item) when the crawl finished; otherwise it goes back, to be crawled again
        left = self.server.llen(self.processing)
        if reason == "finished":
            self.server.delete(self.processing)
        else:
            self._move_back(self.processing)
            if left:
                logger.info("Frontier: %d request(s) in flight returned to the shared queue (%s)", left, reason)
        self.server.srem(self._key("crawlers"), self.id)
        self.server.delete(self._key("alive", self.id))
        return super().close(reason)

    def _beat(self) -> None:
        """Renew this crawler's lease (3 heartbeats) and list it in ``KEY:crawlers``."""
        self._beat_script(keys=[self._key("alive", self.id), self._key("crawlers")], args=[self.id, self._lease_ms])

    def _tick(self) -> None:
        try:
            self._beat()
            self.reclaim()
        except Exception:  # Redis away for a moment: the next beat tries again
            logger.warning("Frontier heartbeat failed", exc_info=True)

    # -- the queue ----------------------------------------------------------------------------------
    def enqueue_request(self, request: Request) -> bool:
        parent = request.meta.pop(TOKEN, None)
        if not request.dont_filter and self.df.request_seen(request):
            self.df.log(request, self.spider)
            added = False
        else:
            if self.stats:
                self.stats.inc_value("scheduler/enqueued/redis")
            self.queue.push(request)
            added = True
        if parent and ("redirect_times" in request.meta or "retry_times" in request.meta):
            self._ack(parent)  # a redirect or retry of a popped request is in the queue now: it replaces it
        return added

    def next_request(self) -> Request | None:
        raw = self._pop_script(keys=[self._key("alive", self.id), self._key("crawlers"), self.queue.key,
                                     self.processing], args=[self.id, self._lease_ms])
        if raw is None:
            return None
        request = self.queue._decode_request(raw)
        token = f"{next(self._tokens)}"
        self.inflight[token] = raw
        request.meta[TOKEN] = token
        if self.stats:
            self.stats.inc_value("scheduler/dequeued/redis")
        return request

    def has_pending_requests(self) -> bool:
        if len(self.queue):
            return True
        self.reclaim()
        if len(self.queue):
            return True
        if self._idle():
            # nothing downloading or scraping: send what the search index buffers, then what is left is done
            self.crawler.signals.send_catch_log(flush_index)
            self._purge()
        # another crawler's requests in flight may yield links, or come back when it dies
        return any(self.server.llen(self._key("processing", cid)) for cid in self._others())

    # -- acknowledgements ---------------------------------------------------------------------------
    def _ack(self, token: str) -> None:
        raw = self.inflight.pop(token, None)
        self.items.pop(token, None)
        self.ended.discard(token)
        self.stored.discard(token)
        self.unsent.discard(token)
        if raw is not None:
            self.server.lrem(self.processing, 1, raw)

    def _done(self, token: str) -> None:
        """The request's links are queued and its items out of the pipelines: released now, or, when an
        item of it may still wait in the search index's write buffer, once that buffer is sent."""
        if token in self.stored and self._buffered():
            self.unsent.add(token)
        else:
            self._ack(token)

    def _buffered(self) -> int:
        got = self.crawler.signals.send_catch_log(index_buffered) if self.crawler is not None else []
        return sum(n for _, n in got if isinstance(n, int))

    def _index_flushed(self, **_: Any) -> None:
        for token in list(self.unsent):
            self._ack(token)

    def _token(self, response: Any) -> str | None:
        request = getattr(response, "request", None)
        return request.meta.get(TOKEN) if request is not None else None

    def _item_yielded(self, token: str) -> None:
        self.items[token] = self.items.get(token, 0) + 1

    def _item_left(self, item: Any = None, response: Any = None, signal: Any = None, **_: Any) -> None:
        token = self._token(response)
        if token is None or token not in self.items:
            return
        if signal is signals.item_scraped:
            self.stored.add(token)
        self.items[token] -= 1
        if self.items[token] <= 0 and token in self.ended:
            self._done(token)

    def _output_done(self, token: str) -> None:
        self.ended.add(token)
        if self.items.get(token, 0) <= 0:
            self._done(token)

    def _idle(self) -> bool:
        engine = getattr(self.crawler, "engine", None)
        if engine is None:
            return False
        slot = getattr(engine.scraper, "slot", None)
        return not engine.downloader.active and slot is not None and slot.is_idle()

    def _purge(self) -> None:
        """Nothing downloading, nothing being scraped: requests still listed as ours are done, except
        those whose documents the search index could not send yet (kept until it does)."""
        done = [t for t in self.inflight if t not in self.unsent]
        if done:
            logger.debug("Frontier: %d finished request(s) left in the processing list", len(done))
        if not self.unsent:
            self.inflight.clear()
            self.items.clear()
            self.ended.clear()
            self.stored.clear()
            self.server.delete(self.processing)
            return
        for token in done:
            self._ack(token)

    # -- reclaiming ---------------------------------------------------------------------------------
    def _others(self) -> list[str]:
        """The ids of the other listed crawlers, as text (the client answers bytes: formatted into a key as
        they are, ``b'…'``, they named no list, and a crawler never saw another's requests in flight)."""
        return [cid for cid in map(_text, self.server.smembers(self._key("crawlers"))) if cid != self.id]

    def reclaim(self) -> int:
        """Move the processing lists of dead crawlers (lease expired) back to the shared queue and unlist
        them, each in one atomic step; how many requests."""
        moved = 0
        for cid in self._others():
            n = int(self._reclaim_script(keys=[self._key("alive", cid), self._key("processing", cid), self.queue.key,
                                               self._key("crawlers")], args=[cid]))
            if n < 0:  # alive
                continue
            if n:
                logger.warning("Frontier: crawler %s stopped answering; %d request(s) it held returned to the "
                               "queue", cid, n)
                if self.stats:
                    self.stats.inc_value("frontier/reclaimed", n)
            moved += n
        return moved

    def _move_back(self, processing: str) -> int:
        n = 0
        while self.server.lmove(processing, self.queue.key, "RIGHT", "RIGHT") is not None:
            n += 1  # pushed at the consuming end: reclaimed requests are crawled next
        return n


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class FrontierMiddleware:
    """Counts the items a popped request's callback yields and says when its output ends, so
    :class:`ReliableScheduler` releases the request only once all of it is safe.  Next to the
    engine (order 0), so it sees exactly what reaches the pipelines."""

    def __init__(self, crawler: Any) -> None:
        self.signals = crawler.signals

    @classmethod
    def from_crawler(cls, crawler: Any) -> "FrontierMiddleware":
        scheduler = crawler.settings.get("SCHEDULER")
        if not (scheduler and issubclass(load_object(scheduler), ReliableScheduler)):
            raise NotConfigured("the scheduler is not crawler.frontier.ReliableScheduler")
        return cls(crawler)

    def _count(self, token: str | None, element: Any) -> None:
        if token is None or isinstance(element, Request):
            return
        self.signals.send_catch_log(item_yielded, token=token)
        # every URL passes the shared seen-requests set once, so a page fetched again is a replay (a
        # reclaimed request, or a start URL every crawler asks for): an exact copy of its own URL in
        # the index is its own record, kept with that record's verdict, not a duplicate to drop
        try:
            adapter = ItemAdapter(element)
            if not adapter.get("dedup"):
                adapter["dedup"] = {REPLAY_KEY: "dedup"}
        except (KeyError, TypeError):  # an Item class without a dedup field, or not an item
            pass

    def _done(self, token: str | None) -> None:
        if token is not None:
            self.signals.send_catch_log(output_done, token=token)

    def process_spider_output(self, response: Any, result: Iterable[Any]) -> Iterator[Any]:
        token = response.request.meta.get(TOKEN) if response.request is not None else None
        try:
            for element in result:
                self._count(token, element)
                yield element
        finally:
            self._done(token)

    async def process_spider_output_async(self, response: Any, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        token = response.request.meta.get(TOKEN) if response.request is not None else None
        try:
            async for element in result:
                self._count(token, element)
                yield element
        finally:
            self._done(token)
