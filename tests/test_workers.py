"""``dedup.workers.WorkerPool``: fresh worker processes for parsing and features; failures come back
as exceptions, a dead worker fails only its own calls, and closing reaps every process."""
from __future__ import annotations

import os
import threading
import time

import pytest

from dedup.deduplicator import DedupConfig
from dedup.sources import Source, features_from_source, page_from_source, prepare
from dedup.workers import WorkerDied, WorkerError, WorkerPool

HTML = ("<html><head><title>Ferry</title></head><body><article><p>The evening ferry across the river will stop "
        "running in November, the operator said. Commuters asked for a later bus instead.</p></article></body></html>")


def test_pool_runs_features_from_source_like_this_process():
    config = DedupConfig()
    with WorkerPool(2) as pool:
        assert all(f.result(timeout=60) is None for f in pool.broadcast(prepare, config))
        futures = [pool.submit(features_from_source, Source(f"http://a.example/{i}", html=HTML), config)
                   for i in range(6)]
        results = [f.result(timeout=60) for f in futures]
    here = features_from_source(Source("http://a.example/0", html=HTML), config)
    assert results[0][0] == here[0] == page_from_source(Source("http://a.example/0", html=HTML), config)
    assert {r[1].simhash for r in results} == {here[1].simhash}


def test_errors_come_back_and_a_dead_worker_fails_only_its_calls():
    with WorkerPool(2) as pool:
        bad = pool.submit(features_from_source, Source("http://a.example/x", html=12345), DedupConfig())
        with pytest.raises(WorkerError, match="TypeError: HTML of http://a.example/x must be bytes or str"):
            bad.result(timeout=60)
        unpicklable = pool.submit(threading.Lock)  # a lock cannot be sent back
        with pytest.raises(WorkerError, match="cannot be sent back"):
            unpicklable.result(timeout=60)
        died = pool.submit(os._exit, 3)
        with pytest.raises(WorkerDied, match="exited with code 3"):
            died.result(timeout=60)
        assert pool.size == 1
        assert pool.submit(len, "abc").result(timeout=60) == 3  # the other worker carries on
        start = time.monotonic()
    assert time.monotonic() - start < 5  # closing does not wait for a timeout
    with pytest.raises(ValueError, match=">= 1 worker"):
        WorkerPool(0)



class _Unreadable:
    """Pickled by a worker, not unpickled by its caller: as a worker started after the code was upgraded."""

    def __reduce__(self):
        return _refuse, ()


def _refuse():
    raise ValueError("made by another version")


def _unreadable():
    return _Unreadable()


def test_an_answer_the_caller_cannot_read_stops_its_worker_not_the_pool():
    """The reader thread of a worker whose answer failed to unpickle died, and every later call of that
    worker waited for ever (a reindex hung so, its code edited while it ran): now that worker is stopped
    and its calls fail (their callers do the work themselves)."""
    with WorkerPool(2) as pool:
        lost = pool.submit(_unreadable)
        with pytest.raises(WorkerDied, match=r"could not be read \(ValueError: made by another version\)"):
            lost.result(timeout=60)
        assert pool.size == 1
        assert pool.submit(len, "abcd").result(timeout=60) == 4  # the other worker carries on

def test_a_process_keeps_what_it_made_once_per_key():
    from dedup.sources import featurizer_for
    from dedup.workers import ProcessState, this_process

    state, made = ProcessState(), []
    assert state.get("a", lambda: made.append("a") or 1) == state.get("a", lambda: made.append("again") or 2) == 1
    assert state.get("b", lambda: made.append("b") or 3) == 3
    assert made == ["a", "b"] and len(state) == 2
    first = featurizer_for(DedupConfig())  # what features_from_source uses: the process keeps one per settings
    kept = len(this_process)
    assert featurizer_for(DedupConfig()) is first and len(this_process) == kept


def test_submit_does_not_wait_for_a_busy_worker():
    """The caller's thread (a crawl's reactor) only queues a call: sending it, however big, is the pool's
    sending thread's wait. Before, 10 MB sent to a worker busy for 3 s waited in the caller until it read."""
    with WorkerPool(1) as pool:
        busy = pool.submit(time.sleep, 3)
        big = [pool.submit(len, b"x" * 1_000_000) for _ in range(10)]  # far beyond a socket's buffer
        assert not busy.done()  # every call above was handed over while the worker slept
        assert [f.result(timeout=60) for f in big] == [1_000_000] * 10 and busy.result(timeout=60) is None


def test_a_call_whose_arguments_cannot_be_sent_fails_alone():
    with WorkerPool(1) as pool:
        bad = pool.submit(len, threading.Lock())
        with pytest.raises(WorkerError, match="cannot be sent to a worker"):
            bad.result(timeout=60)
        assert pool.size == 1 and pool.submit(len, "abcd").result(timeout=60) == 4
