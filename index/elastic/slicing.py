"""The parts of a sliced reindex that one slice's run needs (see :mod:`.reindex_slices` for the
whole story): the field slices are cut on, and the registry of slices and final-pass drops kept in
``DEST-slices`` (read with :func:`.search.pit_pages`).  Imported by :mod:`.reindex` and
:mod:`.reindex_slices`; it imports neither, so the final pass can build on the reindex without a
cycle."""
from __future__ import annotations

import json
import socket
from typing import Any, Iterator

from dedup.droplog import iso_now

from .connect import Retrying
from .search import pit_pages

__all__ = ["SLICE_FIELD", "FEATURES_MAPPING", "Registry", "features_name", "slices_name", "ensure_index",
           "handover_json", "handover_source"]

#: the field the source is sliced on: stable across points in time (see the module docstring)
SLICE_FIELD = "_id"

_MAPPING: dict[str, Any] = {
    "dynamic": False,
    "properties": {
        "kind": {"type": "keyword"}, "slice": {"type": "integer"}, "of": {"type": "integer"},
        "run": {"type": "keyword"}, "finished": {"type": "boolean"}, "source_id": {"type": "keyword"},
        "line": {"type": "object", "enabled": False},
    },
}


#: ``DEST-slices-features``: a kept page's query features (``Deduplicator.query_features``), stored, not indexed
FEATURES_MAPPING: dict[str, Any] = {
    "dynamic": False,
    "properties": {"slice": {"type": "integer"}, "q": {"type": "object", "enabled": False}},
}


def handover_json(features: dict[str, Any]) -> str:
    """A kept page's query features (``Deduplicator.query_features``) as JSON text, made once a page:
    the work folder keeps this text until the bulk write is acknowledged, the bulk write's size
    counts it, and :func:`handover_source` puts it in the hand-over document as it is.  ASCII (the
    arrays are base64 already; a title's other characters escaped), so its length is its size."""
    return json.dumps(features, separators=(",", ":"))


def handover_source(slice_id: int, features_json: str) -> bytes:
    """The ``_source`` of a page's document in ``DEST-slices-features``, ``{"slice": I, "q": features}``,
    as the JSON bytes of the bulk body: the features' text (:func:`handover_json`) is put in as it is,
    not read back and serialised again (the client sends bytes unchanged)."""
    return b'{"slice":%d,"q":%s}' % (slice_id, features_json.encode("utf-8"))


def slices_name(dest_name: str) -> str:
    """The index beside ``DEST`` holding the slices' shared state."""
    return f"{dest_name}-slices"


def features_name(dest_name: str) -> str:
    """The temporary index beside ``DEST`` through which the slices hand their kept pages' query
    features to the final pass (one document per kept source ``_id``; deleted by a final pass that
    ends)."""
    return f"{dest_name}-slices-features"


def ensure_index(es: Retrying, name: str, mappings: dict[str, Any], what: str) -> None:
    """Create ``name`` unless it exists (another slice may create it at the same time)."""
    from elasticsearch import BadRequestError

    if es.call(f"check the {what}", es.client.indices.exists, index=name):
        return
    try:
        es.call(f"create the {what}", es.client.indices.create, index=name, mappings=mappings)
    except BadRequestError as exc:  # another slice created it first
        if "resource_already_exists" not in str(exc):
            raise


class Registry:
    """``DEST-slices``: the slices of a sliced reindex and the final pass's drops."""

    def __init__(self, es: Retrying, dest_name: str) -> None:
        self.es, self.name = es, slices_name(dest_name)

    def ensure(self) -> None:
        ensure_index(self.es, self.name, _MAPPING, "slice registry")

    def register(self, slice_id: int, slices: int, run: str, work_dir: str, *, force: bool) -> None:
        """Record that ``run`` works on ``slice_id``; another run already on it is refused (two
        work folders deciding one slice) unless ``force``."""
        self.ensure()
        c = self.es.client
        got = self.es.call("read the slice registry", c.options(ignore_status=404).get, index=self.name,
                           id=f"slice-{slice_id}")
        held = got.get("_source") if got.get("found") else None
        if held and held.get("run") != run and not force:
            raise ValueError(f"slice {slice_id} of {slices} is already decided by another run (work folder "
                             f"{held.get('work_dir')} on {held.get('host')}, started {held.get('started')}); "
                             "resume it there, or pass --force to decide it again from this work folder")
        doc = {"kind": "slice", "slice": slice_id, "of": slices, "run": run, "work_dir": work_dir,
               "host": socket.gethostname(), "started": (held or {}).get("started") if held and
               held.get("run") == run else iso_now(), "finished": False}
        self.es.call("register the slice", c.index, index=self.name, id=f"slice-{slice_id}", document=doc,
                     refresh=True)

    def finish(self, slice_id: int, counts: dict[str, Any]) -> None:
        self.es.call("mark the slice finished", self.es.client.update, index=self.name, id=f"slice-{slice_id}",
                     doc={"finished": True, "ended": iso_now(), "counts": counts}, refresh=True)

    def _scan(self, query: dict[str, Any]) -> Iterator[dict[str, Any]]:
        if not self.es.call("check the slice registry", self.es.client.indices.exists, index=self.name):
            return
        self.es.call("refresh the slice registry", self.es.client.indices.refresh, index=self.name)
        for hits in pit_pages(self.es, self.name, "read the slice registry", query=query):
            yield from hits

    def slices(self) -> dict[int, dict[str, Any]]:
        return {int(h["_source"]["slice"]): h["_source"] for h in self._scan({"term": {"kind": "slice"}})}

    def drops(self, slice_id: int | None = None) -> dict[str, dict[str, Any]]:
        """Source id -> drop line of the documents the final pass dropped (of one slice)."""
        query: dict[str, Any] = {"term": {"kind": "drop"}}
        if slice_id is not None:
            query = {"bool": {"filter": [query, {"term": {"slice": slice_id}}]}}
        return {h["_source"]["source_id"]: h["_source"]["line"] for h in self._scan(query)}

    def mark_merged(self, report: dict[str, Any]) -> None:
        self.es.call("mark the final pass", self.es.client.index, index=self.name, id="merge",
                     document={"kind": "merge", "finished": True, "ended": iso_now(), "report": report},
                     refresh=True)
