"""JSON for the Elasticsearch client and the reindex's payloads: orjson when it is installed (it comes with
``pip install -e '.[es]'``), the standard library's ``json`` otherwise and for what orjson refuses.

A reindex serialises every document it keeps (tens of KB of HTML each) once and decodes every page it
reads: with the standard library that cost ~1 ms of client CPU a document (cProfile: 0.73 ms to write a
payload, 0.42 ms to read it), with orjson 0.16 and 0.22 ms.  orjson is stricter, so a value it refuses
goes through ``json`` as before rather than failing: a lone surrogate (``"\\ud800"``, which ``json``
writes escaped and reads), an integer beyond 64 bits, a dict key that is not a string.
One difference stays: orjson reads an integer beyond 64 bits (in a ``_source``) as a float, where
``json`` keeps it exact.
"""
from __future__ import annotations

import functools
import json
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - depends on the install
    orjson = None  # type: ignore[assignment]

__all__ = ["dumps", "loads", "client_serializer", "FAST"]

#: whether orjson is there
FAST = orjson is not None
# numpy scalars as numbers (a verdict's scores may be numpy floats); dates and dataclasses through
# ``default``, as json's default=str writes them, so both libraries write the same document
_OPTIONS = (orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
            if orjson is not None else 0)


def _default(value: Any) -> Any:
    """A value neither library knows: a subclass of float or int (orjson calls this for them) and a numpy
    scalar (``json`` does) are numbers, anything else is its ``str`` (as ``json.dumps(default=str)``)."""
    if isinstance(value, float):
        return float(value)
    if isinstance(value, int):
        return int(value)
    if type(value).__module__ == "numpy" and getattr(value, "shape", None) == ():
        return value.item()
    return str(value)


def dumps(value: Any) -> bytes:
    """``value`` as UTF-8 JSON bytes (no spaces), values JSON lacks written as their ``str``."""
    if orjson is not None:
        try:
            return orjson.dumps(value, default=_default, option=_OPTIONS)
        except orjson.JSONEncodeError:  # refused by orjson (see the module docstring): json writes it
            pass
    text = json.dumps(value, ensure_ascii=False, default=_default, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escaped ("\\ud800"), so the bytes stay UTF-8 (a drop line
        # is one line of a UTF-8 log, read by `dropped list` and any JSON-lines tool)
        return json.dumps(value, default=_default, separators=(",", ":")).encode("ascii")


def loads(data: bytes | str) -> Any:
    """The value of JSON ``data``."""
    if orjson is not None:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:  # e.g. a lone surrogate's escape: json reads it
            pass
    return json.loads(data)


@functools.cache
def client_serializer() -> Any:
    """The client's ``application/json`` serializer (``Elasticsearch(serializer=...)``): the client's own
    (its ``default`` for dates, UUIDs, numpy and pandas values), with orjson in front when installed; None
    (the client's default) without orjson."""
    if orjson is None:
        return None
    from elasticsearch.serializer import JsonSerializer

    class Serializer(JsonSerializer):
        def json_dumps(self, data: Any) -> bytes:
            try:
                return orjson.dumps(data, default=self.default, option=orjson.OPT_SERIALIZE_NUMPY)
            except orjson.JSONEncodeError:
                return super().json_dumps(data)  # json writes it, or raises the client's SerializationError

        def json_loads(self, data: bytes) -> Any:
            return loads(data)

    return Serializer()
