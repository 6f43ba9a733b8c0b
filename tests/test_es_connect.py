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


def test_a_cluster_refusing_the_clients_major_version_is_one_line(capsys):
    """helper-22: a 9.x client (what ``elasticsearch<10`` installed) sends ``compatible-with=9``, which an
    Elasticsearch 8 cluster refuses on every request (400 ``media_type_header_exception``): reindex and search
    ended in a traceback and a crawl in asyncio noise. A server answering as such a cluster does (to this
    client's headers, whatever its version) gives one line, and a crawl is refused before it starts."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from dedup.cli import main
    from index import unavailable

    body = json.dumps({"error": {"root_cause": [{"type": "media_type_header_exception", "reason": "Invalid media-type "
                      "value on headers [Accept, Content-Type]"}], "type": "media_type_header_exception",
                      "reason": "Invalid media-type value on headers [Accept, Content-Type]"}, "status": 400}).encode()

    class OlderCluster(BaseHTTPRequestHandler):
        def answer(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_HEAD = do_POST = do_PUT = answer

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), OlderCluster)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    uri = f"http://127.0.0.1:{server.server_address[1]}/pages"
    try:
        why = unavailable(uri, {"retry_seconds": 1})
        assert why and "refuses the API version headers" in why and "pip install" in why, why
        capsys.readouterr()
        assert main(["search", "harbour", "--index", uri]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("dedup: error: Elasticsearch at") and len(err.splitlines()) == 1, err
    finally:
        server.shutdown()
        server.server_close()
