"""What the dedup index stores for a kept page: its keys and compact fingerprints.

A :class:`Record` holds no HTML and no full text; it carries what candidate search and
verification need, at a fixed size whatever the page's length (issue 14 item 8: ~1 KB of
arrays, where the full features took ~6.4 KB):

* ``shingles``: a bottom-k sketch (:data:`SKETCH` = 128) of the main text's word 5-gram
  hashes, each cut to its top :data:`KEY_BITS` (24) bits (held as sorted uint32), and
  ``shingle_count`` the number of distinct shingles: containment and resemblance are estimated
  from it (``containment``); ``shingle_positions`` (uint8, one a key) where each key's shingle
  first occurs in the page's shingle sequence, on :data:`POSITION_LEVELS` (256) levels: where the
  shared text lies (:mod:`dedup.spread`). Empty for a record stored before positions;
* ``terms``/``weights``: the :data:`TOP_TERMS` (48) heaviest terms of the TDW vector (term hashes
  cut to 24 bits, weights as float16, exact for the presets' multiples of 0.5 below 1024) and
  ``tdw_norm`` the whole vector's norm: the TDW cosine is estimated from them
  (:func:`tdw_cosine`);
* ``term_sample``: the :data:`TERM_SAMPLE` (32) smallest term hashes of the whole term set and
  ``term_count`` its size: the comparison reducer's prefix and positional filters run on them
  (exact when the first shared term falls within the sample, never stricter otherwise);
* ``signature``: the multireference-cosine vector (float32, made with reference text ``ref_id``)
  on a grid of 256 levels (:func:`quantise_signature`), so that it is stored in one byte a
  dimension; its cosine with the exact vector is above 0.99999.

The per-sentence simhashes (seed 003's chunks) are not kept: no decision reads them, and at
~40 a page they cost more than the shingle sketch. :func:`compact_arrays` turns full features
(a :class:`~dedup.features.Features`, or a record stored before this format) into these arrays.
"""
from __future__ import annotations

import base64
import time
from datetime import datetime, timezone
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _fast
from .bits import run_starts, sorted_common

__all__ = ["Record", "encode_array", "decode_array", "epoch_seconds", "compact_arrays", "term_keys",
           "shingle_keys", "sketch_keys", "POSITION_LEVELS", "tdw_cosine", "quantise_signature", "signature_grid", "SKETCH", "TOP_TERMS",
           "TERM_SAMPLE", "KEY_BITS"]

SKETCH = 128  # shingle hashes a record keeps
TOP_TERMS = 48  # heaviest TDW terms a record keeps
TERM_SAMPLE = 32  # smallest term hashes a record keeps for the comparison reducer
#: bits kept of each 64-bit term and shingle hash: the top ones, so the order is kept.  Two of
#: the ~130 hashes a record compares within a sketch's range share 24 bits about once in 10^3 pairs
KEY_BITS = 24
#: levels of a shingle's position in its page (one byte a sketch key): first occurrence * 256 // shingles
POSITION_LEVELS = 256
_EMPTY64 = np.zeros(0, dtype=np.uint64)
_F16_MAX = np.float32(np.finfo(np.float16).max)


def epoch_seconds(value: Any, default: float | None = None) -> float:
    """A time as epoch seconds: numbers as they are (above 1e11 they are read as milliseconds, as
    Elasticsearch dates are), ISO 8601 strings parsed (UTC when no zone is given); anything else
    gives ``default``, or now when ``default`` is None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) / (1000.0 if value > 1e11 else 1.0)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            parsed = None
        if parsed is not None:
            return (parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)).timestamp()
    return time.time() if default is None else default


def encode_array(array: np.ndarray) -> str:
    """Little-endian bytes of ``array`` as base64 text (for JSON and ES ``binary``)."""
    return base64.b64encode(np.ascontiguousarray(array).tobytes()).decode("ascii")


def decode_array(text: str | bytes, dtype: Any) -> np.ndarray:
    raw = base64.b64decode(text) if isinstance(text, str) else bytes(text)
    return np.frombuffer(raw, dtype=dtype).copy()


def term_keys(hashes: np.ndarray) -> np.ndarray:
    """64-bit term or shingle hashes (sorted) as the keys records hold: their top :data:`KEY_BITS`
    bits (uint32), which keep the order."""
    return (np.asarray(hashes, dtype=np.uint64) >> np.uint64(64 - KEY_BITS)).astype(np.uint32)


def shingle_keys(hashes: np.ndarray, k: int | None = None) -> np.ndarray:
    """The bottom-``k`` sketch (all when None) of sorted 64-bit shingle hashes as sorted, distinct keys."""
    keys = term_keys(hashes if k is None else np.asarray(hashes)[:k])
    if keys.size > 1 and (keys[1:] >= keys[:-1]).all():  # sorted, as given: np.unique's answer without its sort
        return keys[run_starts(keys)]
    return np.unique(keys)


def sketch_keys(hashes: np.ndarray, positions: np.ndarray | None, k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`shingle_keys` of ``hashes`` with each key's position: the first (lowest) of the positions of
    the hashes cut to it. ``positions`` (uint8, one a hash) empty or None: none (an empty array)."""
    hashes = np.asarray(hashes if k is None else np.asarray(hashes)[:k])
    if positions is None or not np.asarray(positions).size:
        return shingle_keys(hashes), np.zeros(0, dtype=np.uint8)
    positions = np.asarray(positions, dtype=np.uint8)[:hashes.size]
    if positions.size != hashes.size:
        raise ValueError(f"one position a shingle hash (got {positions.size} for {hashes.size})")
    # in one C call (dedup/_fast.c): the keys (term_keys), sorted stably when they are not, each key once with
    # the lowest of its hashes' positions (tests/test_fast.py keeps the numpy steps and compares)
    keys, first = _fast.sketch_keys(np.ascontiguousarray(hashes, dtype=np.uint64), np.ascontiguousarray(positions))
    return np.frombuffer(keys, dtype=np.uint32), np.frombuffer(first, dtype=np.uint8)


def signature_grid(signature: np.ndarray) -> tuple[float, float]:
    """``(low, step)`` of the grid :func:`quantise_signature` puts ``signature`` on: ``step`` the
    least power of two spanning its range in 255 steps, ``low`` its minimum rounded down to a step
    (so a signature already on its grid has the same grid: quantising twice changes nothing)."""
    s = np.asarray(signature, dtype=np.float32)
    if not s.size:
        return 0.0, 1.0
    lo, hi = float(s.min()), float(s.max())
    step = 2.0 ** np.ceil(np.log2((hi - lo) / 255)) if hi > lo else 1.0
    low = np.floor(lo / step) * step
    while (hi - low) / step > 255:  # flooring low can widen the span past 255 steps
        step *= 2
        low = np.floor(lo / step) * step
    return float(low), float(step)


def quantise_signature(signature: np.ndarray) -> np.ndarray:
    """``signature`` (float32) on its :func:`signature_grid`: low + code x step, codes 0..255."""
    s = np.asarray(signature, dtype=np.float32).reshape(-1)
    low, step = signature_grid(s)
    codes = np.clip(np.rint((s.astype(np.float64) - low) / step), 0, 255)
    return (low + codes * step).astype(np.float32)


def compact_arrays(*, shingles: np.ndarray, shingle_count: int, terms: np.ndarray, weights: np.ndarray,
                   signature: np.ndarray, positions: np.ndarray | None = None) -> dict[str, Any]:
    """The record's arrays and counts from full features: ``shingles`` sorted distinct 64-bit
    shingle hashes (a bottom-k sketch of ``shingle_count``) and their ``positions`` (uint8; None: a
    record without), ``terms``/``weights`` the whole TDW vector (sorted 64-bit hashes), ``signature``
    the MRC vector."""
    terms = np.asarray(terms, dtype=np.uint64)
    w = np.asarray(weights, dtype=np.float32)
    norm = float(np.float32(np.sqrt(np.dot(w.astype(np.float64), w)))) if w.size else 0.0  # as stored
    top = np.lexsort((terms, -w))[:TOP_TERMS] if terms.size > TOP_TERMS else np.arange(terms.size)
    top.sort()  # back in hash order
    keys, key_positions = sketch_keys(shingles, positions, SKETCH)
    return {
        "shingles": keys,
        "shingle_positions": key_positions,
        "shingle_count": int(shingle_count),
        "terms": term_keys(terms[top]),
        "weights": np.minimum(w[top], _F16_MAX).astype(np.float16),  # a term 65,504 times over: capped
        "term_sample": term_keys(terms[:TERM_SAMPLE]),
        "term_count": int(terms.size),
        "tdw_norm": norm,
        "signature": quantise_signature(signature),
    }


def tdw_cosine(keys: np.ndarray, weights: np.ndarray, norm: float, rec: "Record") -> float:
    """The TDW cosine of a page (its whole vector: 32-bit ``keys`` from :func:`term_keys`,
    ``weights``, ``norm``) and a record holding its :data:`TOP_TERMS` heaviest terms.

    The dot product over the record's kept terms is scaled by the share of the record's squared
    norm they hold (the unkept light terms are assumed to overlap the page as the heavy ones do),
    capped at 1.  Exact when the record kept every term; on goldset-dev pairs the median error
    is 0.02 (the unscaled dot product underestimates by 0.10).
    """
    if not keys.size or not rec.terms.size or not norm or not rec.tdw_norm:
        return 0.0
    ia, ib = sorted_common(rec.terms, keys)
    rw = rec.weights.astype(np.float64)
    dot = float(np.dot(rw[ia], np.asarray(weights, dtype=np.float64)[ib]))
    kept = float(np.dot(rw, rw))
    scale = rec.tdw_norm ** 2 / kept if kept and rec.term_count > rec.terms.size else 1.0
    return min(1.0, dot * scale / (norm * rec.tdw_norm))


@dataclass
class Record:
    """One page in the dedup index (see the module docstring for what the arrays hold).

    ``id`` is assigned by the index on :meth:`DedupIndex.add` (0 until then).
    """

    url: str
    content_hash: str
    title_key: str
    simhash: int
    terms: np.ndarray
    weights: np.ndarray
    shingles: np.ndarray
    signature: np.ndarray
    ref_id: str
    sentences: int
    shingle_count: int = 0
    term_sample: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint32))
    term_count: int = 0
    tdw_norm: float = 0.0
    title: str = ""
    status: str = "unique"
    duplicate_of: str | None = None
    fetched_at: float = 0.0
    id: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    #: seed 003's sentence simhashes: not stored (see the module docstring), empty
    chunks: np.ndarray = field(default_factory=lambda: _EMPTY64)
    #: one a shingle key (uint8, :data:`POSITION_LEVELS`); empty for a record stored before them
    shingle_positions: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint8))

    _ARRAYS = {
        "terms": np.uint32,
        "weights": np.float16,
        "shingles": np.uint32,
        "term_sample": np.uint32,
        "signature": np.float32,
        "shingle_positions": np.uint8,
    }
    #: arrays a record stored before them lacks (read as empty)
    _OPTIONAL = ("shingle_positions",)
    #: the arrays of a record stored before compact records (dedup-1 full features)
    _FULL_ARRAYS = {"chunks": np.uint64, "terms": np.uint64, "weights": np.float32, "shingles": np.uint64,
                    "signature": np.float32}

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form: arrays as base64, the simhash as 16 hex digits."""
        out: dict[str, Any] = {
            "id": self.id,
            "url": self.url,
            "title": self.title,
            "content_hash": self.content_hash,
            "title_key": self.title_key,
            "simhash": f"{self.simhash:016x}",
            "ref_id": self.ref_id,
            "sentences": self.sentences,
            "shingle_count": self.shingle_count,
            "term_count": self.term_count,
            "tdw_norm": float(self.tdw_norm),
            "status": self.status,
            "duplicate_of": self.duplicate_of,
            "fetched_at": self.fetched_at,
            "extra": self.extra,
        }
        for name, dtype in self._ARRAYS.items():
            out[name] = encode_array(np.asarray(getattr(self, name), dtype=np.dtype(dtype).newbyteorder("<")))
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Record":
        """A record from :meth:`to_dict`'s form, or from a full-features record stored before compact
        records (no ``term_count``), converted as :func:`compact_arrays` converts features."""
        extra = dict(data.get("extra") or {})
        if "term_count" in data:
            arrays = {name: decode_array(data[name], np.dtype(dt).newbyteorder("<")) for name, dt in cls._ARRAYS.items()
                      if name in data or name not in cls._OPTIONAL}
            arrays.update(shingle_count=int(data["shingle_count"]), term_count=int(data["term_count"]),
                          tdw_norm=float(np.float32(data["tdw_norm"])))  # stored as float32
        else:
            full = {name: decode_array(data[name], np.dtype(dt).newbyteorder("<"))
                    for name, dt in cls._FULL_ARRAYS.items() if name in data}
            full.pop("chunks", None)
            arrays = compact_arrays(shingle_count=int(extra.pop("shingle_count", full["shingles"].size)), **full)
        return cls(
            id=int(data.get("id", 0)),
            url=data["url"],
            title=data.get("title", ""),
            content_hash=data["content_hash"],
            title_key=data["title_key"],
            simhash=int(data["simhash"], 16),
            ref_id=data["ref_id"],
            sentences=int(data["sentences"]),
            status=data.get("status", "unique"),
            duplicate_of=data.get("duplicate_of"),
            fetched_at=float(data.get("fetched_at", 0.0)),
            extra=extra,
            **arrays,
        )
