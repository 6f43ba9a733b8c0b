"""``NAME-dedup``: the dedup index (records of kept pages) in Elasticsearch.

One document per record, ``_id`` = the record id as decimal text.  Mapping (:data:`MAPPING`):

* page fields: ``url`` keyword, ``title`` text, ``fetched_at`` double (epoch seconds),
  ``status``/``duplicate_of``/``ref_id`` keyword, ``sentences`` integer, ``id`` long;
* exact keys: ``content_hash``, ``title_key`` keyword;
* ``simhash`` (16 hex digits) and ``simhash_keys``: one keyword per permutation table,
  ``t<table>:<key prefix>`` (:meth:`dedup.permtables.PermutationTables.keys`).  Pages within
  k bits share at least one, so the sharded table lives in the cluster and the candidates of a
  page come from one ``terms`` query; the Hamming distance is verified here;
* ``contained_keys``: the record's 16 smallest sketch keys (:func:`dedup.store.contained_keys`) as
  integers, indexed without doc values: :meth:`ElasticIndex.contained` finds the records sharing two of them
  with a page (a short page contained in a longer one, or the reverse) with one ``bool`` query of ``term``
  clauses (``minimum_should_match``). A document written before the field lacks it and is not found so
  (``dedup reindex`` into a new index writes it);
* ``signature_vector``: the multireference-cosine signature as a ``dense_vector`` (cosine,
  HNSW m 16, ef_construction 100), added to the mapping by the first record, whose reference
  id and dimension go to the mapping's ``_meta`` with k and blocks; a zero signature (a page
  with no text) is left out, since cosine is undefined for it;
* the verification arrays of a compact record (:mod:`dedup.record`: shingle sketch, top terms and
  weights, term sample, float16 signature) as ``binary`` and their counts (``shingle_count``,
  ``term_count``, ``tdw_norm``) unindexed, as the local index's blob holds them.  Documents written
  before compact records (full arrays, ``chunks``, no ``term_count``) are read and converted the
  same way; opening such an index adds the new fields to its mapping.

Exact-content claims are atomic across processes: a record that claims its content hash
(:func:`dedup.store.claims_content`) gets the id derived from that hash and is written with
``op_type=create``; a 409 means another process kept that content first, and :meth:`add`
raises :class:`~dedup.store.KeyTaken`.  Other records get an id derived from URL and hash, so
replaying a write is idempotent.  Ids are 63-bit xxh3 hashes: unique, not increasing.

Visibility: searches see writes after a refresh (1 s by default in Elasticsearch).  Records
this process wrote since its last refresh are kept in memory and searched too, so its own
pages are always caught; the content claim (a realtime GET by id) is caught for every
process at once.  Near-duplicates written by *another* process in the last refresh interval
are not seen yet: two crawlers fetching near-copies within the same second both keep them.
"""
from __future__ import annotations

import logging
from typing import Any, Iterable

import numpy as np
import xxhash

from dedup.permtables import DEFAULT_BLOCKS, DEFAULT_K, PermutationTables
from dedup.record import Record
from dedup.store import EXACT_KEYS, KeyTaken, check_reference, claims_content, contained_keys, rank_contained

from .connect import Retrying, check_index_name, create_index

__all__ = ["ElasticIndex", "MAPPING", "record_id", "claim_id", "page_record_id", "record_actions"]

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
_MASK63 = (1 << 63) - 1
_MAX_HITS = 10_000  # Elasticsearch's default index.max_result_window

MAPPING: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "id": {"type": "long"},
        "url": {"type": "keyword"},
        "title": {"type": "text"},
        "fetched_at": {"type": "double"},
        "status": {"type": "keyword"},
        "duplicate_of": {"type": "keyword"},
        "content_hash": {"type": "keyword"},
        "title_key": {"type": "keyword"},
        "simhash": {"type": "keyword"},
        "simhash_keys": {"type": "keyword"},
        "contained_keys": {"type": "integer", "doc_values": False},
        "ref_id": {"type": "keyword"},
        "sentences": {"type": "integer"},
        "extra": {"type": "object", "enabled": False},
        # verification only: stored, not searched
        "shingle_count": {"type": "integer", "index": False},
        "term_count": {"type": "integer", "index": False},
        "tdw_norm": {"type": "float", "index": False},
        **{name: {"type": "binary"} for name in Record._ARRAYS},
        "chunks": {"type": "binary"},  # written before compact records; read, never written
    },
}
#: fields compact records (and then the shingle keys' positions) added to the mapping: put on an index made
#: before them when it is opened. A document stored before positions is read without them (dedup.spread: None)
_COMPACT_FIELDS = ("shingle_count", "term_count", "tdw_norm", "term_sample", "shingle_positions", "contained_keys")


def claim_id(content_hash: str) -> int:
    """The record id of the claim on ``content_hash``."""
    return (xxhash.xxh3_64_intdigest(f"claim\x00{content_hash}".encode()) & _MASK63) or 1


def page_record_id(record: Record) -> int:
    """The id of a record that claims nothing: derived from its URL and content hash."""
    return (xxhash.xxh3_64_intdigest(f"page\x00{record.url}\x00{record.content_hash}".encode()) & _MASK63) or 1


def record_id(record: Record) -> int:
    """The id ``record`` is stored under (see the module docstring)."""
    if claims_content(record):
        return claim_id(record.content_hash)
    return page_record_id(record)



def _unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(v))
    return v / norm if norm else v


class _Pending:
    """Records written since the last refresh, searched in memory (see the module docstring).

    Every record here passed :meth:`ElasticIndex.add`'s reference check, so all signatures share
    one reference text and dimension; they are kept as unit vectors, normalised once."""

    def __init__(self) -> None:
        self.records: dict[int, Record] = {}
        self._units: dict[int, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.records)

    def add(self, rid: int, record: Record) -> None:
        self.records[rid] = record
        unit = _unit(record.signature)
        if unit.any():
            self._units[rid] = unit

    def remove(self, rid: int) -> None:
        self.records.pop(rid, None)
        self._units.pop(rid, None)

    def clear(self) -> None:
        self.records.clear()
        self._units.clear()

    def lookup(self, kind: str, key: str) -> list[int]:
        return [i for i, r in self.records.items() if getattr(r, kind) == key]

    def near(self, fingerprint: int, k: int) -> list[tuple[int, int]]:
        return [(i, d) for i, r in self.records.items() if (d := (r.simhash ^ fingerprint).bit_count()) <= k]

    def contained(self, keys: np.ndarray) -> dict[int, int]:
        wanted = set(np.asarray(keys).tolist())
        shared = {i: sum(k in wanted for k in contained_keys(r).tolist()) for i, r in self.records.items()}
        return {i: c for i, c in shared.items() if c}

    def nearest(self, q: np.ndarray) -> list[tuple[int, float]]:
        if not self._units:
            return []
        ids = list(self._units)
        sims = np.stack([self._units[i] for i in ids]) @ q
        return list(zip(ids, sims.tolist()))


class ElasticIndex:
    """A :class:`~dedup.store.DedupIndex` in the Elasticsearch index ``name`` (see the module docstring).

    ``k``/``blocks``: the simhash tables' parameters; ``None`` takes the index's own (3 and 5 for
    a new index), and a different value for an existing index is refused (its keys were made
    with the other).  ``refresh_every``: records this process buffers for its own searches before
    it refreshes the index (200).  ``shards``/``replicas`` apply when the index is created.
    """

    def __init__(self, es: Retrying, name: str, *, k: int | None = None, blocks: int | None = None,
                 refresh_every: int = 200, shards: int = 1, replicas: int | None = None) -> None:
        self.es = es
        self.name = check_index_name(name)
        if refresh_every < 1:
            raise ValueError(f"refresh_every must be >= 1 (got {refresh_every})")
        self.refresh_every = refresh_every
        self._pending = _Pending()
        #: records this process removed since the last refresh, which searches still find until it
        self._removed: set[int] = set()
        meta = self._open(k, blocks, shards, replicas)
        self.k, self.blocks = int(meta["k"]), int(meta["blocks"])
        self.ref_id: str | None = meta.get("ref_id")
        self.dim: int | None = meta.get("dim")
        self._keys = PermutationTables(k=self.k, blocks=self.blocks)

    # -- set-up ------------------------------------------------------------------------------------
    def _open(self, k: int | None, blocks: int | None, shards: int, replicas: int | None) -> dict[str, Any]:
        c = self.es.client
        if not self.es.call("check the index", c.indices.exists, index=self.name):
            meta = {"schema": SCHEMA_VERSION, "k": DEFAULT_K if k is None else k,
                    "blocks": DEFAULT_BLOCKS if blocks is None else blocks}
            PermutationTables(k=meta["k"], blocks=meta["blocks"])  # validates
            create_index(self.es, self.name, {**MAPPING, "_meta": meta}, shards=shards, replicas=replicas)
        meta = self._meta()
        self._add_compact_fields()
        if meta.get("schema", 0) > SCHEMA_VERSION:
            raise RuntimeError(f"Elasticsearch index {self.name} has dedup schema {meta.get('schema')}, this "
                               f"program knows {SCHEMA_VERSION}: upgrade scrapy-dedup")
        for key, want in (("k", k), ("blocks", blocks)):
            if want is not None and int(meta.get(key, -1)) != want:
                raise ValueError(
                    f"Elasticsearch index {self.name} was built with simhash tables k={meta.get('k')}, "
                    f"blocks={meta.get('blocks')}; this run asks {key}={want}: use the index's values "
                    "(DEDUP_MAX_DISTANCE/DEDUP_BLOCKS) or reindex into a new index")
        return meta

    def _add_compact_fields(self) -> None:
        """An index made before compact records or positions lacks their fields: add them (a mapping may grow)."""
        got = self.es.call("read the mapping", self.es.client.indices.get_mapping, index=self.name)
        have = next(iter(got.values()))["mappings"].get("properties", {})
        missing = {f: MAPPING["properties"][f] for f in _COMPACT_FIELDS if f not in have}
        if missing:
            self.es.call("add the compact record fields", self.es.client.indices.put_mapping, index=self.name,
                         properties=missing)

    def _meta(self) -> dict[str, Any]:
        got = self.es.call("read the mapping", self.es.client.indices.get_mapping, index=self.name)
        mapping = next(iter(got.values()))["mappings"]
        meta = dict(mapping.get("_meta") or {})
        if "signature_vector" not in mapping.get("properties", {}):
            meta.pop("ref_id", None)
        return meta

    def _set_reference(self, ref_id: str, dim: int) -> None:
        """Add the vector field and record the reference text: the first record decides."""
        meta = self._meta()
        if meta.get("ref_id") is None:
            meta.update(ref_id=ref_id, dim=dim)
            vector = {"type": "dense_vector", "dims": dim, "index": True, "similarity": "cosine",
                      "index_options": {"type": "hnsw", "m": 16, "ef_construction": 100}}
            self.es.call("add the signature field", self.es.client.indices.put_mapping, index=self.name,
                         meta=meta, properties={"signature_vector": vector})
            meta = self._meta()  # a concurrent first writer may have won: take what is there
        self.ref_id, self.dim = meta["ref_id"], int(meta["dim"])

    def _check_ref(self, ref_id: str, dim: int, what: str) -> None:
        check_reference(ref_id, dim, self.ref_id, self.dim, what=what, where=f"Elasticsearch index {self.name}")

    # -- DedupIndex ----------------------------------------------------------------------------------
    def _document(self, record: Record, rid: int) -> dict[str, Any]:
        """The ``_source`` of ``record`` stored as record ``rid`` (see the module docstring), its reference
        text checked against the index's (the first record's sets it)."""
        sig = np.asarray(record.signature, dtype=np.float32).reshape(-1)
        if self.ref_id is None:
            self._set_reference(record.ref_id, sig.size)
        self._check_ref(record.ref_id, sig.size, "signature")
        doc = record.to_dict()
        doc.update(id=rid, simhash_keys=self._keys.keys(int(record.simhash)),
                   contained_keys=contained_keys(record).tolist())
        if np.linalg.norm(sig) > 0:
            doc["signature_vector"] = _unit(sig).tolist()
        return doc

    def add(self, record: Record) -> int:
        if not 0 <= int(record.simhash) < 1 << 64:
            raise ValueError(f"simhash must be an unsigned 64-bit integer (got {record.simhash!r})")
        rid = record_id(record)
        doc = self._document(record, rid)
        from elasticsearch import ConflictError

        try:
            self.es.call("store a record", self.es.client.create, index=self.name, id=str(rid), document=doc)
        except ConflictError:
            if claims_content(record):
                raise KeyTaken(record.content_hash, rid) from None
            log.debug("record %d (%s) was already stored: the write is a replay", rid, record.url)
        record.id = rid
        self._pending.add(rid, record)
        self._removed.discard(rid)
        if len(self._pending) >= self.refresh_every:
            self.flush()
        return rid

    def lookup(self, kind: str, key: str) -> list[int]:
        if kind not in EXACT_KEYS:
            raise ValueError(f"unknown exact key kind {kind!r}; valid: {', '.join(EXACT_KEYS)}")
        first: list[int] = []
        if kind == "content_hash" and key:
            claim = claim_id(key)
            got = self.es.call("read a record", self.es.client.options(ignore_status=404).get,
                               index=self.name, id=str(claim), source_includes=["content_hash"])
            if got.get("found") and got["_source"].get("content_hash") == key:
                first = [claim]
        hits = self._search("look up an exact key", {"term": {kind: key}}, ["id"])
        rest = {int(h["_source"]["id"]) for h in hits} - self._removed | set(self._pending.lookup(kind, key))
        return first + sorted(rest - set(first))

    def near_simhash(self, fingerprint: int) -> list[tuple[int, int]]:
        fingerprint = int(fingerprint)
        hits = self._search("find simhash candidates", {"terms": {"simhash_keys": self._keys.keys(fingerprint)}},
                            ["id", "simhash"])
        found = {int(h["_source"]["id"]): (int(h["_source"]["simhash"], 16) ^ fingerprint).bit_count() for h in hits}
        found.update(self._pending.near(fingerprint, self.k))
        return sorted(((i, d) for i, d in found.items() if d <= self.k), key=lambda p: (p[1], p[0]))

    def nearest(self, signature: np.ndarray, ref_id: str, n: int, floor: float) -> list[tuple[int, float]]:
        q = _unit(signature)
        if n <= 0 or not q.any() or self.ref_id is None:  # no reference yet: nothing was ever added
            return []
        self._check_ref(ref_id, q.size, "query signature")
        found: dict[int, float] = dict(self._pending.nearest(q))
        k = min(n, _MAX_HITS)
        knn: dict[str, Any] = {"field": "signature_vector", "query_vector": q.tolist(), "k": k,
                               "num_candidates": min(max(2 * k, 100), _MAX_HITS),
                               "filter": {"term": {"ref_id": ref_id}}}
        if floor > -1.0:
            knn["similarity"] = float(floor)
        got = self.es.call("find nearest signatures", self.es.client.search, index=self.name, knn=knn,
                           size=k, source=["id"])
        for h in got["hits"]["hits"]:  # cosine similarity's _score is (1 + cos) / 2
            found.setdefault(int(h["_source"]["id"]), 2.0 * float(h["_score"]) - 1.0)
        best = sorted(found.items(), key=lambda p: (-p[1], p[0]))
        return [(i, s) for i, s in best if s >= floor][:n]

    def contained(self, keys: np.ndarray, min_shared: int, n: int) -> list[tuple[int, int]]:
        """Up to ``n`` ``(id, shared keys)`` of the records sharing at least ``min_shared`` of their
        ``contained_keys`` with ``keys``, most first, then by id: one query (a ``term`` clause a key,
        ``minimum_should_match``); the shared keys are counted here from each hit's field, so the order does
        not hang on the cluster's scores."""
        keys = [int(k) for k in np.asarray(keys).tolist()]
        if not keys or n <= 0:
            return []
        query = {"bool": {"should": [{"term": {"contained_keys": k}} for k in keys],
                          "minimum_should_match": int(min_shared)}}
        hits = self._search("find containment candidates", query, ["id", "contained_keys"])
        wanted = set(keys)
        shared = {int(h["_source"]["id"]): sum(k in wanted for k in h["_source"].get("contained_keys") or ())
                  for h in hits}
        shared.update(self._pending.contained(np.asarray(keys)))
        return rank_contained(shared, min_shared, n)

    def get(self, ids: Iterable[int]) -> list[Record]:
        ids = [int(i) for i in ids]
        if not ids:
            return []
        unique = list(dict.fromkeys(ids))
        got = self.es.call("read records", self.es.client.mget, index=self.name, ids=[str(i) for i in unique])
        records = {int(d["_id"]): Record.from_dict(d["_source"]) for d in got["docs"] if d.get("found")}
        return [records[i] for i in ids if i in records]

    def by_url(self, url: str) -> Record | None:
        """The record of ``url`` (one term query; this process's unrefreshed records first). Where the
        index holds several (written before one record per URL, or a :meth:`replace` killed between its
        write and its delete), the latest fetched, and the others are removed: the URL is back to one."""
        found = [(r.fetched_at, i, r) for i, r in self._pending.records.items() if r.url == url]
        if not found:
            got = self.es.call("look up a URL", self.es.client.search, index=self.name,
                               query={"bool": {"filter": [{"term": {"url": url}}]}}, size=10,
                               track_total_hits=False)
            found = [(float(h["_source"].get("fetched_at") or 0.0), int(h["_id"]), h["_source"])
                     for h in got["hits"]["hits"]]
        if not found:
            return None
        _, rid, best = max(found, key=lambda f: (f[0], f[1]))
        for _, other, source in found:
            if other != rid and not isinstance(source, Record):
                self.remove(other)
        record = best if isinstance(best, Record) else Record.from_dict(best)
        record.id = rid
        return record

    def replace(self, old: int, record: Record) -> int:
        """Store ``record`` (under the id its content gives it, :func:`record_id`) and remove record
        ``old`` (the same URL's older version). Written first, removed second: a process killed
        between the two leaves both, and the next :meth:`by_url` of the URL removes the older."""
        rid = record_id(record)
        if rid == int(old):  # the same id means the same content: written again in its place
            self.remove(rid)
            return self.add(record)
        new = self.add(record)  # KeyTaken leaves the older version as it was
        self.remove(int(old))
        return new

    def remove(self, record_id: int) -> bool:
        self._pending.remove(int(record_id))
        self._removed.add(int(record_id))  # a search finds it until the next refresh: lookup leaves it out
        got = self.es.call("remove a record", self.es.client.options(ignore_status=404).delete,
                           index=self.name, id=str(int(record_id)))
        return got.get("result") == "deleted"

    def flush(self) -> None:
        """Refresh the index: every record written so far becomes searchable by every process."""
        self.es.call("refresh the index", self.es.client.indices.refresh, index=self.name)
        self._pending.clear()
        self._removed.clear()

    def close(self) -> None:
        if self.es is not None:
            try:
                self.flush()
            finally:
                self.es.close()
                self.es = None  # type: ignore[assignment]

    def __len__(self) -> int:
        self.flush()
        return int(self.es.call("count records", self.es.client.count, index=self.name)["count"])

    def __enter__(self) -> "ElasticIndex":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ElasticIndex({self.es.url if self.es else 'closed'}/{self.name})"

    # -- helpers ------------------------------------------------------------------------------------
    def _search(self, what: str, query: dict[str, Any], source: list[str]) -> list[dict[str, Any]]:
        got = self.es.call(what, self.es.client.search, index=self.name, query={"bool": {"filter": [query]}},
                           size=_MAX_HITS, source=source, track_total_hits=False)
        hits = got["hits"]["hits"]
        if len(hits) == _MAX_HITS:
            log.warning("%s: %s hit the %d-document window; some candidates were not read",
                        self.name, what, _MAX_HITS)
        return hits


def record_actions(index: ElasticIndex, records: Iterable[Record], *, claim: bool = False,
                   ids: dict[int, int] | None = None) -> list[dict[str, Any]]:
    """Bulk actions storing ``records`` in ``index`` under their :func:`record_id` (or ``ids[n]``
    for the n-th record), for a writer that decided them elsewhere (a reindex's local state).
    Without ``claim`` every action is an ``index``: a repeat overwrites, so resending after an
    interruption is harmless.  With ``claim`` a record claiming its content is a ``create`` (the
    claim of the crawl path, made in bulk): a 409 says another writer holds that content."""
    actions = []
    for n, record in enumerate(records):
        rid = ids[n] if ids and n in ids else record_id(record)
        doc = index._document(record, rid)
        op = "create" if claim and rid == claim_id(record.content_hash) and claims_content(record) else "index"
        actions.append({"_op_type": op, "_index": index.name, "_id": str(rid), "_source": doc})
    return actions
