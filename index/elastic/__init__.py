"""The Elasticsearch backend (``pip install -e '.[es]'``): official client 8.x or 9.x.

:func:`open_dedup` and :func:`open_search` take a URI ``http(s)://HOST:PORT/NAME`` (or ``es://``)
and the connection options of :func:`~index.elastic.connect.connect`; ``NAME`` is the search
index, ``NAME-dedup`` the dedup records.  Modules: :mod:`.connect` (URIs, retries),
:mod:`.records` (the dedup index), :mod:`.search` (the search index), :mod:`.reindex`.
"""
from __future__ import annotations

import inspect
from typing import Any

from .connect import IndexUnavailable, connect, parse_uri
from .records import ElasticIndex
from .search import BulkIndexError, ElasticSearch

__all__ = ["open_dedup", "open_search", "dedup_name", "ElasticIndex", "ElasticSearch", "IndexUnavailable",
           "BulkIndexError", "CONNECT_OPTIONS", "ES_OPTIONS", "option_defaults", "parse_uri"]

#: options that go to the client connection (:func:`~index.elastic.connect.connect`)
CONNECT_OPTIONS = ("api_key", "ca_certs", "verify_certs", "request_timeout", "retry_seconds")
#: options of the dedup-records index and of the search index (the other's are ignored)
DEDUP_OPTIONS = ("k", "blocks", "refresh_every", "shards", "replicas")
SEARCH_OPTIONS = ("bulk_size", "shards", "replicas", "readonly", "create")
#: what DEDUP_ES_OPTIONS may hold
ES_OPTIONS = CONNECT_OPTIONS + ("refresh_every", "bulk_size", "shards", "replicas")


def option_defaults() -> dict[str, Any]:
    """The default of every option of :data:`ES_OPTIONS`, read from the signatures that apply them
    (:func:`~index.elastic.connect.connect`, :class:`ElasticIndex`, :class:`ElasticSearch`), so that
    the settings table (``crawler.config``) cannot drift from the code."""
    defaults: dict[str, Any] = {}
    for fn in (connect, ElasticIndex.__init__, ElasticSearch.__init__):
        for name, param in inspect.signature(fn).parameters.items():
            if name in ES_OPTIONS and param.default is not inspect.Parameter.empty:
                defaults.setdefault(name, param.default)
    return defaults


def dedup_name(name: str) -> str:
    """The dedup-records index beside the search index ``name``."""
    return f"{name}-dedup"


def _split(options: dict[str, Any], mine: tuple[str, ...]) -> tuple[dict[str, Any], dict[str, Any]]:
    unknown = set(options) - set(CONNECT_OPTIONS + DEDUP_OPTIONS + SEARCH_OPTIONS)
    if unknown:
        raise ValueError(f"unknown Elasticsearch option(s) {sorted(unknown)}; valid: {', '.join(ES_OPTIONS)}")
    conn = {k: v for k, v in options.items() if k in CONNECT_OPTIONS}
    return conn, {k: v for k, v in options.items() if k in mine}


def open_dedup(uri: str, **options: Any) -> ElasticIndex:
    conn, rest = _split(options, DEDUP_OPTIONS)
    es, name = connect(uri, **conn)
    try:
        return ElasticIndex(es, dedup_name(name), **rest)
    except BaseException:
        es.close()
        raise


def open_search(uri: str, **options: Any) -> ElasticSearch:
    conn, rest = _split(options, SEARCH_OPTIONS)
    es, name = connect(uri, **conn)
    try:
        return ElasticSearch(es, name, **rest)
    except BaseException:
        es.close()
        raise
