"""Worker processes for the per-page work that needs no index: parsing and features.

``WorkerPool(n)`` starts ``n`` Python processes and runs module-level functions in them, e.g.
:func:`dedup.sources.features_from_source` (a Source in, ``(Page, Features)`` out): one process
keeps deciding and writing (the index has one writer) while the others parse. :meth:`WorkerPool.submit`
returns a :class:`concurrent.futures.Future` (``asyncio.wrap_future`` awaits it).

Why not :class:`concurrent.futures.ProcessPoolExecutor`: its ``spawn`` and ``forkserver`` children
re-import the parent's ``__main__`` script, which starts the crawl again in every worker when the
script (a ``CrawlerProcess`` script, as Scrapy's docs write them) has no ``if __name__ ==
"__main__"`` guard, and ``fork`` copies a multi-threaded process (Twisted's thread pool), which can
deadlock. These workers are fresh interpreters (``python -c``) that import only this module and what
the functions need, talking over a socket pair with :mod:`multiprocessing.connection`'s framing. Each worker
has a thread that sends its calls and one that reads its answers: ``submit`` only queues, so a crawl's
reactor never waits on the socket of a worker still busy with the pages before.

A worker that dies fails the futures it held with :class:`WorkerDied`; callers redo that work
themselves (nothing is lost) and the pool carries on with the workers left.

What a worker keeps between calls (its featurizer, loaded by the first page) is kept by the process's
:class:`ProcessState`, :data:`this_process`: the module-level functions a worker runs have no other
object to keep it on.
"""
from __future__ import annotations

import itertools
import json
import logging
import os
import pickle
import queue
import signal
import socket
import subprocess
import sys
import threading
import traceback
from concurrent.futures import Future
from multiprocessing.connection import Connection
from typing import Any, Callable, Hashable, TypeVar

__all__ = ["WorkerPool", "WorkerError", "WorkerDied", "default_workers", "ProcessState", "this_process"]

log = logging.getLogger(__name__)

_BOOT = "import sys, json; sys.path[:0] = json.loads(sys.argv[2]); from dedup.workers import serve; serve(int(sys.argv[1]))"


T = TypeVar("T")


class ProcessState:
    """What a process keeps between the calls it runs: objects made once, by the first call that needs
    them, under a key naming what they were made from (a worker's Featurizer: ~180 MB of word tables,
    ~0.3 s to load; the language data every Normalizer shares, dedup.text; the reference text of each
    path, dedup.mrc). Products of pure computations and read-only files only, never dedup state: every
    process agrees."""

    def __init__(self) -> None:
        self._kept: dict[Hashable, Any] = {}

    def get(self, key: Hashable, make: Callable[[], T]) -> T:
        """The object kept under ``key``, made by ``make()`` the first time."""
        if key not in self._kept:
            self._kept[key] = make()
        return self._kept[key]

    def __len__(self) -> int:
        return len(self._kept)


#: this process's state: a worker's (see :func:`serve`), or that of any process running the workers'
#: functions itself
this_process = ProcessState()


def default_workers() -> int:
    """Worker processes by default: one per core beyond the first (the crawl's own process keeps one),
    at most 4; 0 (parse in the crawl process) on a single core."""
    return max(0, min(4, (os.cpu_count() or 1) - 1))


class WorkerError(RuntimeError):
    """A function raised in a worker; the message carries its type, text and traceback."""


class WorkerDied(WorkerError):
    """The worker process exited with this call unanswered."""


class _Worker:
    def __init__(self, number: int) -> None:
        ours, theirs = socket.socketpair()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT, str(theirs.fileno()), json.dumps([p for p in sys.path if p])],
            pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, close_fds=True)
        theirs.close()
        self.conn = Connection(ours.detach())
        self.number = number
        self.pending: dict[int, Future] = {}
        self.alive = True
        # the calls to send, in order: one thread writes them (so no lock), and the caller's thread (a crawl's
        # reactor) never waits on the socket of a worker busy with the pages sent before (a 64-page burst to one
        # busy worker: 128 ms of waits in the caller, up to 10 ms one; queued, 2 ms in all)
        self.outbox: queue.SimpleQueue = queue.SimpleQueue()
        self.reader = threading.Thread(target=self._read, name=f"dedup-worker-{number}", daemon=True)
        self.writer = threading.Thread(target=self._write, name=f"dedup-worker-{number}-send", daemon=True)
        self.reader.start()
        self.writer.start()

    def _fail(self, seq: int, exc: Exception) -> None:
        future = self.pending.pop(seq, None)
        if future is not None and not future.done():
            future.set_exception(exc)

    def _write(self) -> None:
        """Send the queued calls, then (``None`` queued by :meth:`WorkerPool.close`) the stop message."""
        while (message := self.outbox.get()) is not None:
            seq, fn, _ = message
            try:
                if not self.alive:
                    raise OSError("it has exited")
                self.conn.send(message)
            except (OSError, ValueError) as exc:  # the worker is gone (broken pipe, closed connection)
                self.alive = False
                self._fail(seq, WorkerDied(f"dedup worker {self.number} is gone: {exc}"))
            except Exception as exc:  # noqa: BLE001 - arguments that cannot be pickled: the call fails, not the worker
                self._fail(seq, WorkerError(f"the arguments of {getattr(fn, '__qualname__', fn)} cannot be sent "
                                            f"to a worker: {type(exc).__name__}: {exc}"))
        try:  # the pool is closing: the stop message, after every call queued before
            self.conn.send(None)
        except (OSError, ValueError):
            pass

    def _read(self) -> None:
        why = ""
        try:
            while True:
                data = self.conn.recv_bytes()
                try:
                    seq, ok, payload = pickle.loads(data)
                except Exception as exc:  # noqa: BLE001 - e.g. a worker started after the code was upgraded
                    # an answer that cannot be read names no call: the worker is stopped, its calls fail
                    # (their callers do the work themselves), instead of this thread dying and them waiting
                    why = f": its answer could not be read ({type(exc).__name__}: {exc})"
                    log.error("dedup worker %d (pid %d)%s; stopping it", self.number, self.proc.pid, why)
                    self.alive = False
                    self.proc.kill()
                    break
                future = self.pending.pop(seq, None)
                if future is None:
                    continue
                if ok:
                    future.set_result(payload)
                else:
                    future.set_exception(WorkerError(payload))
        except (EOFError, OSError):
            pass
        self.alive = False
        try:  # its end of the socket closed: the process is exiting
            code: int | None = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        for future in list(self.pending.values()):
            if not future.done():
                future.set_exception(WorkerDied(f"dedup worker {self.number} (pid {self.proc.pid}) exited"
                                                f"{'' if code is None else f' with code {code}'}{why}"))
        self.pending.clear()


class WorkerPool:
    """``workers`` processes running picklable module-level functions (see the module docstring)."""

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ValueError(f"a worker pool needs >= 1 worker (got {workers})")
        self._seq = itertools.count()
        self._workers = [_Worker(n) for n in range(workers)]

    @property
    def size(self) -> int:
        """Workers still running."""
        return sum(w.alive for w in self._workers)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        """Run ``fn(*args)`` in the least busy worker; raises WorkerDied when none is left."""
        alive = [w for w in self._workers if w.alive]
        if not alive:
            raise WorkerDied("every dedup worker process has exited")
        return self._send(min(alive, key=lambda w: len(w.pending)), fn, args)

    def broadcast(self, fn: Callable[..., Any], *args: Any) -> list[Future]:
        """Run ``fn(*args)`` once in every worker (e.g. to load what the next calls need)."""
        return [self._send(w, fn, args) for w in self._workers if w.alive]

    def _send(self, worker: _Worker, fn: Callable[..., Any], args: tuple) -> Future:
        """Queue the call for ``worker``'s sending thread (this thread does not wait on its socket)."""
        future: Future = Future()
        seq = next(self._seq)
        worker.pending[seq] = future
        worker.outbox.put((seq, fn, args))
        return future

    def close(self, timeout: float = 10.0) -> None:
        """Stop the workers (each finishes the calls sent to it before), then reap them."""
        # a stop message after the queued calls, not closing our end: a reader thread blocked on it keeps the
        # socket open
        for w in self._workers:
            w.outbox.put(None)
        for w in self._workers:
            try:
                w.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                log.warning("dedup worker %d (pid %d) did not exit; killing it", w.number, w.proc.pid)
                w.proc.kill()
                w.proc.wait()
            w.reader.join(timeout=timeout)  # the worker's exit closed its end: the reader saw EOF
            w.writer.join(timeout=timeout)
            w.conn.close()
        self._workers = []

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def serve(fd: int) -> None:
    """A worker's loop: calls from the parent on ``fd``, answers back, until the parent closes it."""
    # Ctrl-C reaches the whole process group: the parent decides when its workers stop (it closes them)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    conn = Connection(fd)
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None:  # the pool is closing
            return
        seq, fn, args = message
        try:
            answer = (seq, True, fn(*args))
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the caller, with its traceback
            answer = (seq, False, f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
        try:
            conn.send(answer)
        except (BrokenPipeError, ConnectionResetError):
            return
        except Exception as exc:  # noqa: BLE001 - a result that cannot be pickled: say so instead
            conn.send((seq, False, f"the result of {getattr(fn, '__qualname__', fn)} cannot be sent back: "
                                   f"{type(exc).__name__}: {exc}"))
