"""Multireference cosine (seed 000: Mohammadi & Khasteh 2020).

A *reference text* is a sequence of L character 3-grams split into P contiguous
partitions. A page's *signature* is the P cosines between the page's 3-gram count
vector and each partition's 3-gram count vector; two pages are compared by the
cosine of their signatures, which approximates the cosine of their full 3-gram
vectors at a fraction of the cost and storage (P floats per page).

3-grams are taken over the lowercased text with whitespace runs folded to one
space. They are encoded as 63-bit integers (three 21-bit code points), so the
whole signature is computed with numpy on integer arrays: no Python loop over
3-grams.

Every signature carries the id of its reference text; comparing signatures made
with different reference texts raises :class:`IncompatibleSignature`.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from . import _fast
from .bits import run_starts
from .workers import this_process

__all__ = [
    "ReferenceText",
    "Signature",
    "IncompatibleSignature",
    "gram_ids",
    "gram_counts",
    "gram_text",
    "cosine_counts",
    "tfidf_grams",
    "default_reference",
    "DEFAULT_REFERENCE_PATH",
    "REFERENCE_ENV",
]

DEFAULT_REFERENCE_PATH = Path(__file__).with_name("data") / "reference.json"
#: environment variable naming a reference-text file to use instead of the shipped one
REFERENCE_ENV = "DEDUP_REFERENCE"
_WS = re.compile(r"\s+")


class IncompatibleSignature(ValueError):
    """Two signatures (or a signature and an index) come from different reference texts."""


def _codepoints(text: str) -> np.ndarray:
    folded = " ".join(text.lower().split())  # whitespace runs to one space (str.split's \s is re's)
    if folded.isascii():  # the same code points from a quarter of the bytes
        return np.frombuffer(folded.encode("ascii"), dtype=np.uint8).astype(np.uint64)
    return np.frombuffer(folded.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)


def gram_ids(text: str) -> np.ndarray:
    """The character 3-grams of ``text`` in order, as uint64 ids (empty for < 3 chars)."""
    cp = _codepoints(text)
    if cp.size < 3:
        return np.zeros(0, dtype=np.uint64)
    return (cp[:-2] << np.uint64(42)) | (cp[1:-1] << np.uint64(21)) | cp[2:]


def gram_text(gram_id: int) -> str:
    g = int(gram_id)
    return "".join(chr((g >> s) & 0x1FFFFF) for s in (42, 21, 0))


def _gram_id(gram: str) -> int:
    if len(gram) != 3:
        raise ValueError(f"reference 3-grams must have 3 characters (got {gram!r})")
    a, b, c = (ord(ch) for ch in gram)
    return (a << 42) | (b << 21) | c


def gram_counts(text: str) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique 3-gram ids of ``text`` and their counts."""
    ids = gram_ids(text)
    if ids.size == 0:
        return ids, np.zeros(0, dtype=np.float64)
    ids.sort()  # np.unique(ids, return_counts=True), cheaper
    starts = run_starts(ids)
    return ids[starts], np.diff(starts, append=ids.size).astype(np.float64)


def cosine_counts(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> float:
    """Cosine of two sparse count vectors given as (sorted ids, counts)."""
    (ia, ca), (ib, cb) = a, b
    if ia.size == 0 or ib.size == 0:
        return 0.0
    common, xa, xb = np.intersect1d(ia, ib, assume_unique=True, return_indices=True)
    dot = float(ca[xa] @ cb[xb]) if common.size else 0.0
    return dot / float(np.sqrt((ca * ca).sum() * (cb * cb).sum()))


@dataclass(frozen=True)
class Signature:
    """A multireference-cosine signature: ``vector`` (P float32) made with reference ``ref_id``."""

    vector: np.ndarray
    ref_id: str

    def similarity(self, other: "Signature") -> float:
        """Cosine of the two signature vectors, in [0, 1]."""
        if other.ref_id != self.ref_id:
            raise IncompatibleSignature(
                f"signatures come from different reference texts ({self.ref_id!r} vs {other.ref_id!r}); "
                "recompute the older one with the current reference text: rebuild the index it came from "
                "(crawl again into a new, empty index, or `dedup reindex` an Elasticsearch corpus into a new "
                f"index), or keep using the old reference text by pointing ${REFERENCE_ENV} at its file"
            )
        return signature_cosine(self.vector, other.vector)


def signature_cosine(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if not na or not nb:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


class ReferenceText:
    """L character 3-grams in P partitions (defaults 1000 and 150), with an id.

    ``grams`` is the sequence of 3-gram strings; partition ``p`` is the contiguous
    slice ``grams[bounds[p]:bounds[p+1]]`` (sizes differ by at most one).
    """

    def __init__(self, grams: Sequence[str], partitions: int = 150, *, provenance: dict | None = None) -> None:
        grams = list(grams)
        if not 1 <= partitions <= len(grams):
            raise ValueError(
                f"a reference text needs 1 <= partitions <= length (got partitions={partitions}, length={len(grams)})"
            )
        self.grams = grams
        self.partitions = partitions
        self.provenance = dict(provenance or {})
        ids = np.array([_gram_id(g) for g in grams], dtype=np.uint64)
        bounds = np.linspace(0, len(ids), partitions + 1).round().astype(np.int64)
        part_of = np.repeat(np.arange(partitions), np.diff(bounds))
        self._unique, inverse = np.unique(ids, return_inverse=True)
        # dense P x U count matrix: U <= L, so at most 150 x 1000 floats
        matrix = np.zeros((partitions, self._unique.size), dtype=np.float64)
        np.add.at(matrix, (part_of, inverse), 1.0)
        # the matrix's non-zero entries (~1 a column): the products with a page's counts summed by bincount,
        # ~3x cheaper than the dense product and equal to it (integer counts: every sum exact in float64)
        rows, cols = matrix.nonzero()
        self._rows, self._cols = rows.astype(np.int64), cols.astype(np.int64)  # int64 for _fast.mrc_signature
        self._values = np.ascontiguousarray(matrix[rows, cols])
        self._part_norm = np.ascontiguousarray(np.sqrt((matrix * matrix).sum(axis=1)))
        digest = hashlib.sha256(("\x00".join(grams) + f"|{partitions}").encode("utf-8")).hexdigest()
        self.id = f"mrc-{len(grams)}x{partitions}-{digest[:12]}"

    @property
    def length(self) -> int:
        return len(self.grams)

    def signature_of_counts(self, ids: np.ndarray, counts: np.ndarray) -> Signature:
        """Signature from a page's sorted unique 3-gram ids and counts."""
        if ids.size == 0:
            return Signature(np.zeros(self.partitions, dtype=np.float32), self.id)
        pos = np.searchsorted(ids, self._unique)
        pos[pos == ids.size] = 0
        hit = ids[pos] == self._unique
        doc_at_ref = np.where(hit, counts[pos], 0.0)
        norm = float(np.sqrt((counts * counts).sum()))
        products = np.bincount(self._rows, weights=doc_at_ref[self._cols] * self._values, minlength=self.partitions)
        scale = self._part_norm * norm
        if scale.all():  # the usual case: no 0/0, and nan_to_num would change nothing
            return Signature((products / scale).astype(np.float32), self.id)
        with np.errstate(invalid="ignore", divide="ignore"):
            sig = products / scale
        return Signature(np.nan_to_num(sig).astype(np.float32), self.id)

    def signature(self, text: str) -> Signature:
        """The P-dimensional signature of ``text``: in one C call (dedup/_fast.c: the 3-grams counted in a
        hash table, the same integer sums and the same float divisions as :meth:`signature_of_counts` of
        :func:`gram_counts`, tests/test_fast.py), that one where C declines (a surrogate, a zero scale)."""
        # ASCII text is lowercased and its whitespace folded in C, as _codepoints does
        folded = text if text.isascii() else " ".join(text.lower().split())
        made = _fast.mrc_signature(folded, self._unique, self._rows, self._cols, self._values, self._part_norm)
        if made is None:
            return self.signature_of_counts(*gram_counts(text))
        return Signature(np.frombuffer(made, dtype=np.float32), self.id)

    def to_json(self) -> dict:
        return {"id": self.id, "length": self.length, "partitions": self.partitions,
                "grams": self.grams, "provenance": self.provenance}

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), ensure_ascii=False, indent=1), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> "ReferenceText":
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        ref = cls(data["grams"], data["partitions"], provenance=data.get("provenance"))
        if data.get("id") and data["id"] != ref.id:
            raise ValueError(f"reference text {path} says id {data['id']!r} but its grams hash to {ref.id!r}")
        return ref

    @classmethod
    def from_tfidf(cls, documents: Iterable[str], length: int = 1000, partitions: int = 150,
                   *, provenance: dict | None = None) -> "ReferenceText":
        """The top-``length`` tf-idf 3-grams of ``documents``, in score order."""
        return cls(tfidf_grams(documents, length), partitions, provenance=provenance)


def tfidf_grams(documents: Iterable[str], top: int) -> list[str]:
    """The ``top`` 3-grams by corpus tf-idf: total count x log(N / document frequency).

    3-grams made only of spaces, digits or punctuation are left out: they say little
    about content and differ with formatting.
    """
    n = 0
    all_ids, all_counts = [], []
    for doc in documents:
        ids, counts = gram_counts(doc)
        if ids.size:
            n += 1
            all_ids.append(ids)
            all_counts.append(counts)
    if not n:
        raise ValueError("no documents with text to build a reference text from")
    ids = np.concatenate(all_ids)
    counts = np.concatenate(all_counts)
    uniq, inverse = np.unique(ids, return_inverse=True)
    tf = np.bincount(inverse, weights=counts)
    df = np.bincount(inverse)
    score = tf * np.log(n / df)
    grams = [gram_text(g) for g in uniq]
    keep = np.array([sum(ch.isalpha() for ch in g) >= 2 for g in grams])
    order = np.argsort(-np.where(keep, score, -np.inf), kind="stable")[:top]
    if len(order) < top or not keep[order].all():
        raise ValueError(f"corpus has only {int(keep.sum())} usable 3-grams, fewer than {top}")
    return [grams[i] for i in order]


def default_reference() -> ReferenceText:
    """The reference text every :class:`~dedup.features.Featurizer` uses unless given one.

    The file named by ``$DEDUP_REFERENCE`` (e.g. one written by ``dedup train-reference``)
    when that is set, else the one shipped in ``dedup/data/reference.json``; loaded once
    per path and process (kept by :data:`dedup.workers.this_process`).
    """
    chosen = os.environ.get(REFERENCE_ENV)
    path = chosen or str(DEFAULT_REFERENCE_PATH)

    def load() -> ReferenceText:
        if not Path(path).is_file():
            raise FileNotFoundError(f"no reference text at {path}" + (f" (from ${REFERENCE_ENV})" if chosen else ""))
        return ReferenceText.load(path)

    return this_process.get(("reference text", path), load)
