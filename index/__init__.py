"""Storage backends for the dedup index and the search index, chosen by URI.

``local://PATH``  the embedded default: a directory with a SQLite database (source
                  of truth), permutation tables and a usearch vector index.
``http(s)://HOST:PORT/INDEX``, ``es://HOST:PORT/INDEX``  Elasticsearch (``pip install -e '.[es]'``):
                  ``INDEX`` is the search index of kept pages, ``INDEX-dedup`` the dedup records
                  (:mod:`index.elastic`).
"""
from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from .base import DedupIndex, SearchIndex

__all__ = ["open_index", "open_search", "SCHEMES", "DEFAULT_INDEX", "DedupIndex", "SearchIndex", "default_dropped_log",
           "unavailable"]

SCHEMES = ("local", "http", "https", "es")
#: the index a crawl (DEDUP_INDEX) and every `dedup` command use when none is named
DEFAULT_INDEX = "local://.dedup"


def _scheme(uri: str) -> str:
    scheme = urlsplit(uri).scheme.lower()
    if scheme not in SCHEMES:
        raise ValueError(f"unknown index URI scheme {scheme or '(none)'!r} in {uri!r}; "
                         f"valid schemes: {', '.join(s + '://' for s in SCHEMES)}")
    return scheme


def _local_path(uri: str) -> str:
    rest = uri.split("://", 1)[1]
    if not rest:
        raise ValueError(f"local index URI needs a path, e.g. local://.dedup (got {uri!r})")
    return rest


def open_index(uri: str, **options: Any) -> DedupIndex:
    """Open (creating when missing) the dedup index at ``uri``."""
    scheme = _scheme(uri)
    if scheme == "local":
        from .local import LocalIndex

        return LocalIndex(_local_path(uri), **options)
    from .elastic import open_dedup

    return open_dedup(uri, **options)


def open_search(uri: str, **options: Any) -> SearchIndex:
    """Open (creating when missing) the search index of kept pages at ``uri``."""
    scheme = _scheme(uri)
    if scheme == "local":
        from .search import LocalSearch

        return LocalSearch(_local_path(uri), **options)
    from .elastic import open_search as open_es_search

    return open_es_search(uri, **options)


def default_dropped_log(uri: str) -> str:
    """Where the dropped-page log goes when DEDUP_DROPPED_LOG is not set: beside the index."""
    if _scheme(uri) == "local":
        return _local_path(uri).rstrip("/") + "/dropped.jsonl"
    return "dropped.jsonl"


def unavailable(uri: str, es_options: dict[str, Any] | None = None, *, hold: bool = False) -> str | None:
    """Why the index at ``uri`` cannot be used now, for a refusal in one line before a crawl starts, or
    None: an embedded index another process holds (its lock) or that cannot be made where it is named (a
    file on its path, a folder this user may not write), or an Elasticsearch cluster that refuses this client's
    major version or does not answer within its retry budget (``retry_seconds`` of ``es_options``,
    DEDUP_ES_OPTIONS), or a URI or option it cannot read. Anything else (another error, no client) is None:
    opening the index reports it as before. ``hold``: an embedded index's lock is taken now and kept for this process's pipelines
    (:func:`index.local.lock.hold`), so that no crawl started at the same time passes the check too."""
    try:
        scheme = _scheme(uri)
        if scheme == "local":
            from pathlib import Path

            from .local import lock

            path = Path(_local_path(uri))
            return lock.cannot_make(path) or (lock.hold(path) if hold else lock.in_use(path))
        from .elastic import IndexUnavailable, _split
        from .elastic.connect import IncompatibleClient, connect

        es, name = connect(uri, **_split(es_options or {}, ())[0])
    except ValueError as exc:  # a bad URI or option (an index name Elasticsearch refuses): said now, in one line
        return str(exc)
    except Exception:
        return None
    try:
        es.call("reach the cluster", es.client.indices.exists, index=name)
    except (IndexUnavailable, IncompatibleClient) as exc:
        return str(exc)
    except Exception:
        return None
    finally:
        es.close()
    return None
