"""What the dedup index stores for a kept page: its keys and compact fingerprints.

A :class:`Record` holds no HTML and no full text; it carries exactly what candidate
search and verification need, so any backend (SQLite, Elasticsearch, memory) can
store it as a handful of scalar fields and byte blobs.
"""
from __future__ import annotations

import base64
import time
from datetime import datetime, timezone
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Record", "encode_array", "decode_array", "epoch_seconds"]


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


@dataclass
class Record:
    """One page in the dedup index.

    ``id`` is assigned by the index on :meth:`DedupIndex.add` (0 until then).
    Arrays: ``chunks`` per-sentence simhashes (uint64), ``terms``/``weights`` the
    TDW vector as sorted term hashes (uint64) and weights (float32), ``shingles``
    a bottom-k sketch of word-shingle hashes (uint64, sorted), ``signature`` the
    multireference-cosine vector (float32) made with reference text ``ref_id``.
    """

    url: str
    content_hash: str
    title_key: str
    simhash: int
    chunks: np.ndarray
    terms: np.ndarray
    weights: np.ndarray
    shingles: np.ndarray
    signature: np.ndarray
    ref_id: str
    sentences: int
    title: str = ""
    status: str = "unique"
    duplicate_of: str | None = None
    fetched_at: float = 0.0
    id: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    _ARRAYS = {
        "chunks": np.uint64,
        "terms": np.uint64,
        "weights": np.float32,
        "shingles": np.uint64,
        "signature": np.float32,
    }

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
            "status": self.status,
            "duplicate_of": self.duplicate_of,
            "fetched_at": self.fetched_at,
            "extra": self.extra,
        }
        for name, dtype in self._ARRAYS.items():
            out[name] = encode_array(np.asarray(getattr(self, name), dtype=dtype))
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Record":
        arrays = {name: decode_array(data[name], dtype) for name, dtype in cls._ARRAYS.items()}
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
            extra=dict(data.get("extra") or {}),
            **arrays,
        )
