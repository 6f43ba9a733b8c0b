"""Reading a reindex's source (see :mod:`.reindex` for the whole job): the keep rule's sort, the
source mapping's fields, the key of a document's whole ``_source``, and the documents themselves in
keep-rule order through a point in time, read one page ahead by a thread of their own
(:func:`read_ahead`) so that the cluster answers the next read while the job decides this one."""
from __future__ import annotations

import json
import logging
import queue
import threading
from typing import Any, Iterator, TypeVar

from dedup.record import epoch_seconds

from .connect import Retrying, describe
from .search import field_value

__all__ = ["KEEP_RULES", "keep_sort", "keep_order", "mapping_fields", "source_key", "source_keys", "legacy_source_key",
           "read_sorted", "read_ahead"]

log = logging.getLogger(__name__)

T = TypeVar("T")

KEEP_RULES = ("oldest", "newest", "field:NAME[:asc|desc]")


def source_key(source: dict[str, Any], encoded: tuple[str, bytes] | None = None) -> str:
    """A 128-bit hash of a source document's whole ``_source`` (32 hex digits): an update skips a document
    whose key is the one it was decided with.  The strings are hashed as their UTF-8 bytes, each after its
    type and length (no JSON of a page's tens of KB of HTML: it cost ~0.5 ms a document); a key of 16 hex
    digits was made by an earlier version (:func:`legacy_source_key`).  ``encoded``: a string of the
    source (that very object) and its UTF-8 bytes, made already (the HTML, whose body key needs them too)."""
    import xxhash

    h = xxhash.xxh3_128()
    _feed(h, source, encoded)
    return h.hexdigest()


def source_keys(doc: dict[str, Any], source: Any) -> tuple[str, bytes]:
    """:func:`source_key` of a document's ``_source`` and the bytes of its body
    (:meth:`dedup.sources.Source.body` of ``source``, the document's :class:`~dedup.sources.Source`), the HTML's
    UTF-8 made once for both.  The body is the HTML's bytes whenever the HTML is a str: ``Source.from_document``
    leaves no empty HTML (that body is the title and text, and ``""`` is one object in every field holding it)."""
    data = source.body()
    return source_key(doc, (source.html, data)), data


def _feed(h: Any, value: Any, encoded: tuple[str, bytes] | None = None) -> None:
    """``value`` into the hash ``h``, unambiguously: a type tag, a length, then the content."""
    if isinstance(value, str):
        data = encoded[1] if encoded is not None and value is encoded[0] else value.encode("utf-8", "surrogatepass")
        h.update(b"s%d:" % len(data))
        h.update(data)
    elif isinstance(value, dict):
        h.update(b"d%d:" % len(value))
        for key in sorted(value, key=str):
            _feed(h, str(key))
            _feed(h, value[key], encoded)
    elif isinstance(value, (list, tuple)):
        h.update(b"l%d:" % len(value))
        for item in value:
            _feed(h, item, encoded)
    else:  # numbers, booleans, null: their JSON text
        data = json.dumps(value, default=str).encode("utf-8")
        h.update(b"j%d:" % len(data))
        h.update(data)


def legacy_source_key(source: dict[str, Any]) -> str:
    """The key of the ``_source`` as versions before :func:`source_key`'s made it (16 hex digits, from the
    sorted JSON text), compared with the keys their work folders hold."""
    import xxhash

    return xxhash.xxh3_64_hexdigest(json.dumps(source, sort_keys=True, ensure_ascii=False, default=str,
                                               separators=(",", ":")).encode("utf-8", "surrogatepass"))


def keep_sort(rule: str, *, time_field: str, url_field: str) -> list[dict[str, Any]]:
    """The sort of a keep rule (see :mod:`.reindex`)."""
    if rule == "oldest":
        return [{time_field: "asc"}, {url_field: "asc"}]
    if rule == "newest":
        return [{time_field: "desc"}, {url_field: "asc"}]
    if rule.startswith("field:"):
        parts = rule.split(":")
        if len(parts) in (2, 3) and parts[1] and (len(parts) == 2 or parts[2] in ("asc", "desc")):
            return [{parts[1]: parts[2] if len(parts) == 3 else "asc"}, {url_field: "asc"}]
    raise ValueError(f"unknown keep rule {rule!r}; valid: {', '.join(KEEP_RULES)}")


def keep_order(docs: list[tuple[str, dict[str, Any]]], sort: list[dict[str, Any]]) -> list[str]:
    """The ids of ``docs`` (id, ``_source`` holding at least the sort's fields) in ``sort``'s order, as a read of
    the source orders them: dates and numbers compared as such, keywords as strings, a document missing a field
    after those holding it, an array by its first value. For documents decided again after the read, which come
    by id (helper-32: taken in the order of their drop lines, the newer of two copies was kept)."""
    def value(doc: dict[str, Any], field: str) -> tuple[int, Any] | None:
        got = field_value(doc, field.removesuffix(".keyword"))
        got = got[0] if isinstance(got, list) and got else got
        if isinstance(got, (int, float)) and not isinstance(got, bool):
            return 0, float(got)
        if isinstance(got, str):
            when = epoch_seconds(got, float("nan"))
            return (0, when) if when == when else (1, got)  # a date, else a keyword
        return None

    order = list(docs)
    for spec in reversed(sort):  # stable sorts, the last key first
        field, direction = next(iter(spec.items()))
        values = {sid: value(doc, field) for sid, doc in order}
        held = sorted((d for d in order if values[d[0]] is not None), key=lambda d: values[d[0]],
                      reverse=direction == "desc")
        order = held + [d for d in order if values[d[0]] is None]
    return [sid for sid, _ in order]


def mapping_fields(mapping: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Dotted field path -> type of every field of an index mapping (multi-fields included)."""
    out: dict[str, str] = {}
    for name, spec in (mapping.get("properties") or {}).items():
        path = prefix + name
        if "properties" in spec:
            out.update(mapping_fields(spec, path + "."))
        else:
            out[path] = spec.get("type", "object")
        for sub, sub_spec in (spec.get("fields") or {}).items():
            out[f"{path}.{sub}"] = sub_spec.get("type", "object")
    return out


def read_sorted(src: Retrying, index: str, *, sort: list[dict[str, Any]], size: int, keep_alive: str,
                slice_: tuple[int, int] | None = None, after: list[Any] | None = None
                ) -> Iterator[tuple[dict[str, Any], list[Any]]]:
    """``(hit, sort values)`` of ``index`` in ``sort`` order after ``after``, ``size`` a request, through a
    point in time that is reopened at the last position when it is lost (expired, or the server
    restarted).  ``slice_``: ``(I, N)``, slice I of N on :data:`.slicing.SLICE_FIELD`."""
    from elasticsearch import NotFoundError

    c = src.client
    pit = None
    try:
        while True:
            if pit is None:
                pit = src.call("open a point in time", c.open_point_in_time, index=index, keep_alive=keep_alive)["id"]
            body: dict[str, Any] = {"pit": {"id": pit, "keep_alive": keep_alive}, "size": size, "sort": sort,
                                    "track_total_hits": False}
            if slice_ is not None:
                from .slicing import SLICE_FIELD

                body["slice"] = {"field": SLICE_FIELD, "id": slice_[0], "max": slice_[1]}
            if after is not None:
                body["search_after"] = after
            try:
                got = src.call("read documents", c.search, **body)
            except NotFoundError as exc:
                log.warning("Point in time on %s lost (%s); reopening it after the last document read",
                            index, describe(exc))
                pit = None
                continue
            pit = got.get("pit_id", pit)
            hits = got["hits"]["hits"]
            for hit in hits:
                yield hit, hit["sort"]
                after = hit["sort"]
            if len(hits) < size:
                return
    finally:
        if pit is not None:
            try:
                c.close_point_in_time(id=pit)
            except Exception:  # the PIT expires by itself; never mask the real error
                log.debug("could not close point in time on %s", index, exc_info=True)


_END = object()


def read_ahead(items: Iterator[T], depth: int) -> Iterator[T]:
    """``items`` as they are, produced by a thread of their own up to ``depth`` ahead of the consumer: the
    reads of the source overlap the decisions.  An exception of ``items`` is raised here, in order; a
    consumer that stops early (a failure, a kill hook) stops the thread and closes ``items`` there (the
    point in time is closed by the thread that opened it)."""
    q: queue.Queue[Any] = queue.Queue(maxsize=max(1, depth))
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        q.put((True, item), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    break
            else:
                q.put((True, _END))
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, which raises it
            q.put((False, exc))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=produce, name="dedup-reindex-read", daemon=True)
    thread.start()
    try:
        while True:
            ok, item = q.get()
            if not ok:
                raise item
            if item is _END:
                return
            yield item
    finally:
        stop.set()
        while thread.is_alive():
            try:  # unblock a producer waiting to put
                q.get(timeout=0.1)
            except queue.Empty:
                pass
        thread.join()
