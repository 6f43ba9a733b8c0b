"""Elasticsearch URIs and the retry policy (no server needed: the failures are real client exceptions)."""
from __future__ import annotations

import pytest
from elasticsearch import ApiError, ConnectionError, NotFoundError
from elastic_transport import ApiResponseMeta, HttpHeaders, NodeConfig

from index.elastic.connect import IndexUnavailable, Retrying, parse_uri


def api_error(cls, status: int):
    meta = ApiResponseMeta(status=status, http_version="1.1", headers=HttpHeaders(), duration=0.0,
                           node=NodeConfig("http", "127.0.0.1", 9200))
    return cls(f"status {status}", meta=meta, body={})


def test_parse_uri():
    assert parse_uri("http://127.0.0.1:9200/pages") == ("http://127.0.0.1:9200", "pages", None)
    assert parse_uri("es://es.example/pages") == ("http://es.example:9200", "pages", None)
    assert parse_uri("https://elastic:p%40ss@es.example:9243/pages/") == (
        "https://es.example:9243", "pages", ("elastic", "p@ss"))
    for bad, why in [("http://h:9200/", "one index name"), ("http://h:9200/a/b", "one index name"),
                     ("http://h:9200/Pages", "not a valid"), ("http://h:9200/_x", "not a valid"),
                     ("ftp://h/x", "not an Elasticsearch URI"), ("http:///x", "no host")]:
        with pytest.raises(ValueError, match=why):
            parse_uri(bad)


def test_transient_failures_are_retried_with_back_off():
    sleeps, calls = [], []

    def flaky():
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("connection refused")
        if len(calls) == 2:
            raise api_error(ApiError, 503)
        return "ok"

    es = Retrying(None, "http://h:9200", retry_seconds=60, sleep=sleeps.append)
    assert es.call("do it", flaky) == "ok"
    assert len(calls) == 3 and sleeps == [0.5, 1.0] and es.outages == 1


def test_budget_exhausted_is_a_clear_error():
    def down():
        raise ConnectionError("connection refused")

    es = Retrying(None, "http://h:9200", retry_seconds=0.2, first_delay=0.05, sleep=lambda s: None)
    with pytest.raises(IndexUnavailable, match=r"Elasticsearch at http://h:9200 failed to store a record after "
                                               r"\d+ tries .*retry budget 0.2 s.*connection refused"):
        es.call("store a record", down)


def test_other_errors_are_not_retried():
    def missing():
        raise api_error(NotFoundError, 404)

    es = Retrying(None, "http://h:9200", sleep=lambda s: pytest.fail("slept"))
    with pytest.raises(NotFoundError):
        es.call("read", missing)
