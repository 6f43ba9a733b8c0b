"""Connecting to Elasticsearch: index URIs, client options, and retries with back-off.

``http://HOST:PORT/NAME``, ``https://USER:PASSWORD@HOST:PORT/NAME`` or ``es://HOST:PORT/NAME``
(``es`` means ``http``).  ``NAME`` is the search index of kept pages; the dedup records live
beside it in ``NAME-dedup`` (see :mod:`index.elastic.records`).

Every request goes through :class:`Retrying`: a connection error, a timeout or a 429/502/503/504
answer is retried with exponential back-off (0.5 s doubling to 10 s) for up to
``retry_seconds`` (60 by default); after that :class:`IndexUnavailable` says which cluster, what
was being done, how many tries over how long, and the last error.  The client's own retries are
switched off, so that one budget is the whole story.
"""
from __future__ import annotations

import logging
import re
import time
from typing import Any, Callable, TypeVar
from urllib.parse import unquote, urlsplit

from .serialise import client_serializer

__all__ = ["IndexUnavailable", "IncompatibleClient", "Retrying", "connect", "parse_uri", "check_index_name", "create_index",
           "RETRY_STATUSES"]

log = logging.getLogger(__name__)
T = TypeVar("T")

#: HTTP answers that mean "try again later"
RETRY_STATUSES = (429, 502, 503, 504)
_BAD_NAME = re.compile(r'[\\/*?"<>| ,#:A-Z]')


class IndexUnavailable(RuntimeError):
    """The cluster did not answer, or kept refusing, for the whole retry budget."""


class IncompatibleClient(ValueError):
    """The cluster refuses every request of this client: its API version headers are of a later major
    version than the cluster's (a 9.x client against Elasticsearch 8: ``media_type_header_exception``)."""


def incompatible(exc: BaseException, url: str, client: Any) -> IncompatibleClient | None:
    """The :class:`IncompatibleClient` that ``exc`` (a 400 answer) means, or None. An answer without a body
    (to a HEAD request: ``indices.exists``) is told apart by asking ``client`` for the cluster's info once."""
    if getattr(getattr(exc, "meta", None), "status", None) != 400:
        return None
    if "media_type_header_exception" not in str(exc):
        if getattr(exc, "body", None) not in (None, "", b""):
            return None
        try:
            client.info()
            return None
        except Exception as probe:  # the same refusal, with its body this time
            if "media_type_header_exception" not in str(probe):
                return None
    try:
        from elasticsearch import __versionstr__ as version
    except ImportError:  # pragma: no cover - the client raised exc
        version = "?"
    return IncompatibleClient(
        f"Elasticsearch at {url} refuses the API version headers of this client (elasticsearch-py {version}): "
        f"the cluster is of an older major version; install the client of its major version, e.g. "
        f"pip install 'elasticsearch>=8.13,<9' for Elasticsearch 8 (what the 'es' extra installs)")


def check_index_name(name: str) -> str:
    """``name`` if Elasticsearch accepts it as an index name, else ValueError saying why."""
    if not name or name in (".", "..") or name[0] in "-_+" or _BAD_NAME.search(name) or len(name.encode()) > 255:
        raise ValueError(
            f"{name!r} is not a valid Elasticsearch index name: lowercase, at most 255 bytes, not starting "
            "with -, _ or +, and none of \\ / * ? \" < > | space , # :")
    return name


def create_index(es: "Retrying", name: str, mappings: dict[str, Any], *, shards: int = 1,
                 replicas: int | None = None, settings: dict[str, Any] | None = None) -> None:
    """Create the index ``name``; one another process created first is used as it is."""
    settings = {**(settings or {}), "number_of_shards": shards}
    if replicas is not None:
        settings["number_of_replicas"] = replicas
    try:
        es.call("create the index", es.client.indices.create, index=name, settings=settings, mappings=mappings)
    except Exception as exc:
        if "resource_already_exists" not in str(exc):
            raise


def parse_uri(uri: str) -> tuple[str, str, tuple[str, str] | None]:
    """``(base URL, index name, basic auth or None)`` of an Elasticsearch index URI."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https", "es"):
        raise ValueError(f"not an Elasticsearch URI: {uri!r} (use http://HOST:PORT/INDEX)")
    if not parts.hostname:
        raise ValueError(f"Elasticsearch URI {uri!r} has no host")
    name = parts.path.strip("/")
    if not name or "/" in name:
        raise ValueError(f"Elasticsearch URI {uri!r} needs exactly one index name after the host, "
                         "e.g. http://127.0.0.1:9200/pages")
    check_index_name(name)
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    base = f"{'http' if scheme == 'es' else scheme}://{host}:{parts.port or 9200}"
    auth = (unquote(parts.username), unquote(parts.password or "")) if parts.username else None
    return base, name, auth


def connect(uri: str, *, api_key: str | None = None, ca_certs: str | None = None, verify_certs: bool | None = None,
            request_timeout: float = 30.0, retry_seconds: float = 60.0) -> tuple["Retrying", str]:
    """A :class:`Retrying` client for the cluster of ``uri``, and the index name."""
    try:
        from elasticsearch import Elasticsearch
    except ImportError:  # pragma: no cover - depends on the install
        raise ImportError("the Elasticsearch backend needs the official client: pip install -e '.[es]'") from None
    base, name, auth = parse_uri(uri)
    options: dict[str, Any] = {"request_timeout": request_timeout, "max_retries": 0, "retry_on_timeout": False}
    if auth:
        options["basic_auth"] = auth
    if api_key:
        options["api_key"] = api_key
    if ca_certs:
        options["ca_certs"] = ca_certs
    if verify_certs is not None:
        options["verify_certs"] = verify_certs
    serializer = client_serializer()  # orjson when installed: a reindex's bulk bodies and reads are its JSON
    if serializer is not None:
        options["serializer"] = serializer
    return Retrying(Elasticsearch(base, **options), base, retry_seconds=retry_seconds), name


class Retrying:
    """The client, with :meth:`call` retrying transient failures (see the module docstring)."""

    def __init__(self, client: Any, url: str, *, retry_seconds: float = 60.0, first_delay: float = 0.5,
                 max_delay: float = 10.0, sleep: Callable[[float], None] = time.sleep) -> None:
        if retry_seconds < 0:
            raise ValueError(f"retry_seconds must be >= 0 (got {retry_seconds})")
        self.client = client
        self.url = url
        self.retry_seconds = retry_seconds
        self.first_delay = first_delay
        self.max_delay = max_delay
        self._sleep = sleep
        self.outages = 0  # transient failures seen, for stats and tests

    def call(self, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)``, retried on transient failures; ``what`` names it in messages."""
        start = time.monotonic()
        delay, tries = self.first_delay, 0
        while True:
            tries += 1
            try:
                result = fn(*args, **kwargs)
            except Exception as exc:
                if not is_transient(exc):
                    refused = incompatible(exc, self.url, self.client)
                    if refused is not None:
                        raise refused from None
                    raise
                waited = time.monotonic() - start
                if waited + delay > self.retry_seconds:
                    raise IndexUnavailable(
                        f"Elasticsearch at {self.url} failed to {what} after {tries} tries over {waited:.1f} s "
                        f"(retry budget {self.retry_seconds:g} s): {describe(exc)}") from exc
                if tries == 1:
                    self.outages += 1
                    log.warning("Elasticsearch at %s: %s failed (%s); retrying for up to %g s",
                                self.url, what, describe(exc), self.retry_seconds)
                self._sleep(delay)
                delay = min(delay * 2, self.max_delay)
                continue
            if tries > 1:
                log.warning("Elasticsearch at %s answered again: %s succeeded after %d tries, %.1f s",
                            self.url, what, tries, time.monotonic() - start)
            return result

    def close(self) -> None:
        self.client.close()


def is_transient(exc: BaseException) -> bool:
    """A connection error, a timeout, or an HTTP answer in :data:`RETRY_STATUSES`."""
    from elasticsearch import ApiError, ConnectionError, ConnectionTimeout

    if isinstance(exc, (ConnectionError, ConnectionTimeout)):
        return True
    return isinstance(exc, ApiError) and exc.meta.status in RETRY_STATUSES


def describe(exc: BaseException) -> str:
    status = getattr(getattr(exc, "meta", None), "status", None)
    message = getattr(exc, "message", None)
    message = message if isinstance(message, str) and message else str(exc)
    text = message.splitlines()[0] if message else ""
    return f"{type(exc).__name__}{f' {status}' if status else ''}: {text[:300]}"
