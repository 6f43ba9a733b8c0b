"""What a check compares of a page, in the form dedup records hold it (:mod:`dedup.record`).

:class:`Query` is made once per check by :class:`~dedup.deduplicator.Deduplicator`: from a page's
features, from a stored record (the final pass of a sliced reindex), or from the JSON form a slice
hands to that final pass (:meth:`Query.to_dict`/:meth:`Query.from_dict`, versioned by
:data:`QUERY_FORMAT`).
"""
from __future__ import annotations

import base64
import zlib
from typing import Any, Callable

import numpy as np

from .features import Features
from .keys import is_raw_key
from .page import Page
from .record import Record, sketch_keys, tdw_cosine, term_keys

__all__ = ["Query", "QUERY_FORMAT"]

#: the version of :meth:`Query.to_dict`'s form (another version is not read: the page is decided from itself).
#: 2: the shingle keys' positions (``positions``) are handed over too
QUERY_FORMAT = 2


class Query:
    """What a check compares, in the form records hold it (24-bit keys, :mod:`dedup.record`), made
    once per check: from a page's features (:meth:`of_page`: the shingle sketch cut to keys with each
    key's position, :func:`dedup.record.sketch_keys`; the whole TDW vector's term keys), or from a stored record (:meth:`of_record`: its arrays as they
    are, since compacting them again would shift keys already cut to 24 bits).

    From a record the query holds less than the page's features did: a sketch of ``SKETCH`` shingle
    keys (containment is estimated on the range both sketches cover: the same estimate as the
    page's when the candidate's sketch ends first), the heaviest ``TOP_TERMS`` terms (the TDW cosine
    misses the candidate's heavy terms that are light in the page) and a sample of the smallest
    terms for the comparison reducer (never stricter than on the whole set); a record stored before
    positions has none (``positions`` empty: :func:`dedup.spread.spread` says None)."""

    __slots__ = ("has_text", "title", "list_share", "content_hash", "title_key", "simhash", "vector", "ref_id",
                 "sentences", "_chunks", "shingles", "positions", "shingle_count", "sample", "term_count", "terms", "weights",
                 "norm")

    @classmethod
    def of_page(cls, page: Page, f: Features) -> "Query":
        q = cls._common(bool(page.text.strip()), page.title, page.list_share, f.content_hash, f.title_key, f.simhash,
                        f.signature.vector, f.signature.ref_id, f.sentences, lambda: f.chunks)
        (q.shingles, q.positions), q.shingle_count = sketch_keys(f.shingles, f.positions), f.shingle_count
        q.terms = q.sample = term_keys(f.tdw.hashes)  # the whole set: the reducer's exact filters
        q.term_count = None
        q.weights, q.norm = f.tdw.weights, f.tdw.norm
        return q

    @classmethod
    def of_record(cls, rec: Record) -> "Query":
        # a page with text has a content hash (dedup.keys.content_hash is '' for an empty text only); a page
        # without has its raw body's key or none (dedup.keys.raw_key)
        q = cls._common(bool(rec.content_hash) and not is_raw_key(rec.content_hash), rec.title, float(rec.extra.get("list_share", 0.0)), rec.content_hash,
                        rec.title_key, rec.simhash, rec.signature, rec.ref_id, rec.sentences, rec.chunks)
        q.shingles, q.positions, q.shingle_count = rec.shingles, rec.shingle_positions, rec.shingle_count
        # a record that kept every term (TOP_TERMS or fewer) holds the whole set: the reducer's exact filters
        q.sample, q.term_count = (rec.terms, None) if rec.terms.size >= rec.term_count else (rec.term_sample, rec.term_count)
        q.terms, q.weights, q.norm = rec.terms, rec.weights.astype(np.float32), rec.tdw_norm
        return q

    #: the arrays of :meth:`to_dict`, in the order they are packed, and their (little-endian) types
    _ARRAYS = (("shingles", "<u4"), ("terms", "<u4"), ("weights", "<f4"), ("vector", "<f4"), ("positions", "<u1"))
    _DELTAS = ("shingles", "terms")  # sorted keys: packed as differences (modulo 2**32), which zlib shrinks

    def to_dict(self) -> dict[str, Any]:
        """A query made :meth:`of_page` in JSON-safe form (:meth:`from_dict` reads it back exactly):
        the scalars as JSON, the arrays packed in one zlib-compressed base64 string (``arrays``, their
        sizes in ``sizes``).  The chunks (sentence simhashes) are left out: every candidate is a
        record, which keeps none, so no score reads the query's; the reducer's sample is ``terms``."""
        if self.term_count is not None:
            raise ValueError("only a query made from a page's features has the whole sets to hand over")
        parts, sizes = [], []
        for name, dtype in self._ARRAYS:
            a = np.asarray(getattr(self, name))
            if a.dtype != np.dtype(dtype).newbyteorder("="):
                raise ValueError(f"query {name} of type {a.dtype}, not {dtype}: it would not be exact")
            a = a.astype(dtype)
            if name in self._DELTAS:
                a = np.diff(a, prepend=np.zeros(1, dtype=dtype)).astype(dtype)
            parts.append(a.tobytes())
            sizes.append(int(a.size))
        return {
            "v": QUERY_FORMAT, "has_text": self.has_text, "title": self.title, "list_share": float(self.list_share),
            "content_hash": self.content_hash, "title_key": self.title_key, "simhash": f"{self.simhash:016x}",
            "ref_id": self.ref_id, "sentences": int(self.sentences), "shingle_count": int(self.shingle_count),
            "norm": float(self.norm), "sizes": sizes,
            "arrays": base64.b64encode(zlib.compress(b"".join(parts), 6)).decode("ascii"),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Query":
        if data.get("v") != QUERY_FORMAT:
            raise ValueError(f"query features of format {data.get('v')!r}, not {QUERY_FORMAT}")
        raw, at, native = zlib.decompress(base64.b64decode(data["arrays"])), 0, {}
        for (name, dtype), size in zip(cls._ARRAYS, data["sizes"]):
            dt = np.dtype(dtype)
            a = np.frombuffer(raw, dtype=dt, count=size, offset=at)
            at += size * dt.itemsize
            if name in cls._DELTAS:
                a = np.cumsum(a, dtype=dt)
            native[name] = a.astype(dt.newbyteorder("="))
        if at != len(raw):
            raise ValueError(f"query features of {len(raw)} bytes, not {at}")
        q = cls._common(bool(data["has_text"]), data["title"], float(data["list_share"]), data["content_hash"],
                        data["title_key"], int(data["simhash"], 16), native["vector"], data["ref_id"],
                        int(data["sentences"]), np.zeros(0, dtype=np.uint64))
        q.shingles, q.positions, q.shingle_count = native["shingles"], native["positions"], int(data["shingle_count"])
        q.terms = q.sample = native["terms"]
        q.term_count = None
        q.weights, q.norm = native["weights"], float(data["norm"])
        return q

    @classmethod
    def _common(cls, has_text: bool, title: str, list_share: float, content_hash: str, title_key: str, simhash: int,
                vector: np.ndarray, ref_id: str, sentences: int,
                chunks: np.ndarray | Callable[[], np.ndarray]) -> "Query":
        q = cls.__new__(cls)
        q.has_text, q.title, q.list_share, q.content_hash, q.title_key = has_text, title, list_share, content_hash, title_key
        q.simhash, q.vector, q.ref_id, q.sentences, q._chunks = simhash, vector, ref_id, sentences, chunks
        return q

    @property
    def chunks(self) -> np.ndarray:
        """The sentence simhashes, made on first use: only a candidate that keeps its own reads them
        (records keep none, so a check against an index never does; they cost ~0.2 ms a page)."""
        if callable(self._chunks):
            self._chunks = self._chunks()
        return self._chunks

    def cosine(self, rec: Record) -> float:
        return tdw_cosine(self.terms, self.weights, self.norm, rec)
