"""Tag-weighted term-document weights (TDW).

A term's weight is the sum over the page's fields of (frequency of the term in the
field) x (field weight). Two presets:

``tdw``  seed 002 (Arun & Sumesh): URL 2, headings 2, title 2, anchor text to the
         same site 1, to another site 0.5, meta keywords 3, meta description 3,
         main block 1.
``wwt``  seed 004 (weighted inverted index): title 6, h1-h3 5, anchors 4, bold 3,
         body 1. Fields a preset does not name weigh 0.

Field names: ``url``, ``title``, ``keywords``, ``description``, ``h1`` .. ``h6``,
``bold``, ``anchors_same``, ``anchors_other``, ``body`` (the extracted main text).
A custom mapping of these names to non-negative weights is accepted.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from . import _fast
from .bits import sorted_common
from .page import Page
from .simhash import hash_terms
from .text import Normalizer, tokenize

__all__ = ["FIELDS", "PRESETS", "resolve_weights", "field_texts", "term_weights", "weights_by_field", "TermVector", "cosine"]

FIELDS = ("url", "title", "keywords", "description", "h1", "h2", "h3", "h4", "h5", "h6",
          "bold", "anchors_same", "anchors_other", "body")

_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
PRESETS: dict[str, dict[str, float]] = {
    "tdw": {"url": 2, "title": 2, **{h: 2 for h in _HEADINGS}, "anchors_same": 1, "anchors_other": 0.5,
            "keywords": 3, "description": 3, "body": 1},
    "wwt": {"title": 6, "h1": 5, "h2": 5, "h3": 5, "anchors_same": 4, "anchors_other": 4, "bold": 3, "body": 1},
}


def resolve_weights(weights: str | Mapping[str, float]) -> dict[str, float]:
    """A preset name or a custom mapping, validated, as a complete field -> weight dict."""
    if isinstance(weights, str):
        if weights not in PRESETS:
            raise ValueError(f"unknown TDW preset {weights!r}; valid: {', '.join(PRESETS)} or a field->weight mapping")
        weights = PRESETS[weights]
    unknown = set(weights) - set(FIELDS)
    if unknown:
        raise ValueError(f"unknown TDW fields {sorted(unknown)}; valid: {', '.join(FIELDS)}")
    out = {f: float(weights.get(f, 0.0)) for f in FIELDS}
    bad = {f: w for f, w in out.items() if not w >= 0}
    if bad:
        raise ValueError(f"TDW field weights must be >= 0 (got {bad})")
    return out


def field_texts(page: Page) -> dict[str, list[str]]:
    """The texts of each field of ``page``."""
    out: dict[str, list[str]] = {
        "url": [" ".join(page.url_tokens)],
        "title": [page.title],
        "keywords": [page.keywords],
        "description": [page.description],
        "bold": page.bold,
        "anchors_same": page.anchors_same,
        "anchors_other": page.anchors_other,
        "body": [page.text],
    }
    for h in _HEADINGS:
        out[h] = []
    for level, text in page.headings:
        out[f"h{level}"].append(text)
    return out


class TermVector:
    """A sparse term vector: sorted unique term hashes (uint64) and weights (float32).

    Treat the arrays as read-only: the Euclidean norm is computed once and kept.
    """

    __slots__ = ("hashes", "weights", "_norm")

    def __init__(self, hashes: np.ndarray, weights: np.ndarray) -> None:
        self.hashes = hashes
        self.weights = weights
        self._norm: float | None = None

    def __len__(self) -> int:
        return int(self.hashes.size)

    @property
    def norm(self) -> float:
        """Euclidean norm of the weights, in float64 (what ``np.linalg.norm`` computes)."""
        if self._norm is None:
            w = self.weights.astype(np.float64)
            self._norm = float(np.sqrt(w.dot(w)))
        return self._norm

    @classmethod
    def from_counts(cls, counts: Mapping[str, float]) -> "TermVector":
        terms = list(counts)
        hashes = hash_terms(terms)
        weights = np.fromiter(map(counts.__getitem__, terms), dtype=np.float32, count=len(terms))
        order = np.argsort(hashes)
        return cls(hashes[order], weights[order])


def term_weights(page: Page, normalizer: Normalizer, weights: Mapping[str, float],
                 body_terms: list[str] | None = None, body_hashes: np.ndarray | None = None) -> TermVector:
    """The TDW vector of ``page``: sum over fields of frequency x field weight.

    ``body_terms``: the main text's normalised terms when the caller has them already;
    ``body_hashes``: their :func:`~dedup.simhash.hash_terms`, when the caller has those too.

    When every sum of the weights is exact in float64 (:func:`_exact_sums`: the presets' are), the order
    of the sums does not matter: the fields of one weight are tokenised together, their terms' hashes
    looked up in the normaliser's cache (:meth:`~dedup.text.Normalizer.term_hashes`) and every hash's
    weights summed in one C call (dedup/_fast.c, ``tdw_sums``). Otherwise summed by term hash with numpy:
    per field, each distinct term's count x the field weight, then the fields' products added in field
    order (the order the former dict of sums added them in, so the float sums are the same,
    tests/test_features_equal.py).
    """
    texts_of = field_texts(page)
    used = {name: float(weights.get(name, 0.0)) for name, texts in texts_of.items()
            if weights.get(name, 0.0) and any(texts)}
    if _exact_sums(list(used.values()), 0):
        by_weight: dict[float, list[str]] = {}
        parts, part_weights = [], []
        for name, w in used.items():
            if name == "body" and (body_hashes is not None or body_terms is not None):
                parts.append(hash_terms(body_terms) if body_hashes is None else body_hashes)
                part_weights.append(w)
            else:
                by_weight.setdefault(w, []).extend(texts_of[name])
        for w, texts in by_weight.items():  # a weight's fields tokenised in one call (no token spans a newline)
            parts.append(normalizer.term_hashes(tokenize("\n".join(texts))))
            part_weights.append(w)
        if sum(p.size for p in parts) < 1 << 26:
            hashes, sums = _fast.tdw_sums(parts, part_weights)
            return TermVector(np.frombuffer(hashes, dtype=np.uint64), np.frombuffer(sums, dtype=np.float32))
    return weights_by_field(texts_of, normalizer, weights, body_terms, body_hashes)


def weights_by_field(texts_of: dict[str, list[str]], normalizer: Normalizer, weights: Mapping[str, float],
                     body_terms: list[str] | None = None, body_hashes: np.ndarray | None = None) -> TermVector:
    """:func:`term_weights` of the page of these :func:`field_texts` with numpy, field by field: for any
    weights (their sums added in field order), and the reference of its C path (tests/test_fast.py)."""
    field_weights: list[float] = []
    tokens: list[str] = []  # every field's tokens but the given body's, field after field
    field_of: list[int] = []  # their field's position in field_weights, a field's run of tokens at a time
    runs: list[int] = []
    body_at = -1  # the given body's position
    for name, texts in texts_of.items():
        w = weights.get(name, 0.0)
        if not w or not any(texts):
            continue
        if name == "body" and (body_terms is not None or body_hashes is not None):
            body_at = len(field_weights)
        else:
            # a field's texts tokenised in one call (no token spans a newline)
            field_tokens = tokenize("\n".join(texts))
            tokens += field_tokens
            field_of.append(len(field_weights))
            runs.append(len(field_tokens))
        field_weights.append(float(w))
    # the fields' tokens normalised and hashed in one call each; stop words ('' terms) left out
    words = normalizer.term_list(tokens)
    kept = np.fromiter(map(bool, words), dtype=bool, count=len(words))
    hashes = hash_terms(list(filter(None, words)))
    fields = np.repeat(np.array(field_of, dtype=np.intp), runs)[kept]
    if body_at >= 0:
        body = hash_terms(body_terms) if body_hashes is None else body_hashes
        hashes = np.concatenate((hashes, body))
        fields = np.concatenate((fields, np.full(body.size, body_at, dtype=np.intp)))
    if not hashes.size:
        return TermVector(np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.float32))
    order = np.lexsort((fields, hashes))  # by term, then field (the sums below add in field order)
    hashes, fields = hashes[order], fields[order]
    # runs of one term in one field: count x weight
    run = np.flatnonzero(np.concatenate(([True], (hashes[1:] != hashes[:-1]) | (fields[1:] != fields[:-1]))))
    amounts = np.diff(np.append(run, hashes.size)) * np.array(field_weights)[fields[run]]
    run_terms = hashes[run]
    first = np.concatenate(([True], run_terms[1:] != run_terms[:-1]))
    terms = run_terms[first]
    total = np.bincount(np.cumsum(first) - 1, weights=amounts, minlength=terms.size)  # in field order
    keep = total > 0
    return TermVector(terms[keep], total[keep].astype(np.float32))


def _exact_sums(weights: list[float], tokens: int) -> bool:
    """Whether every sum of up to ``tokens`` of ``weights`` is exact in float64, whatever the order: each
    weight a multiple of 1/1024 below 2^16, fewer than 2^26 tokens (sums multiples of 1/1024 below 2^42, held
    exactly by a 53-bit mantissa). The presets' weights (0.5 to 6) are."""
    return tokens < 1 << 26 and all(0 <= w < 1 << 16 and (w * 1024).is_integer() for w in weights)


def cosine(a: TermVector, b: TermVector) -> float:
    """Cosine of two TDW vectors."""
    if not len(a) or not len(b):
        return 0.0
    ia, ib = sorted_common(a.hashes, b.hashes)
    dot = float(np.dot(a.weights[ia].astype(np.float64), b.weights[ib]))
    na, nb = a.norm, b.norm
    return dot / (na * nb) if na and nb else 0.0

