"""From a :class:`~dedup.page.Page` to the numbers the deduplicator compares.

Which text feeds which signal (measured on goldset-dev, see README):

* exact keys: the normalised main text (content hash) and title + anchor count;
* TDW vector (tag-weighted, all fields) -> the page simhash and the comparison reducer;
* main-text terms -> word 5-gram shingles (bottom-k sketch) for containment, and
  one simhash per sentence (seed 003's chunks);
* main-text characters -> the multireference-cosine signature.

Boilerplate-heavy fields (navigation anchors, URL) stay out of the shingles and
the signature: two copies of a story on different sites share their story, not
their navigation.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import Mapping

import numpy as np

from .keys import content_hash, title_key
from .mrc import ReferenceText, Signature, default_reference
from .page import Page
from .record import Record, compact_arrays
from .simhash import chunk_simhashes, hash_terms, shingle_hashes, simhash
from .tdw import TermVector, resolve_weights, term_weights
from .text import Normalizer, tokenize

__all__ = ["Features", "Featurizer", "PageTerms"]


@dataclass
class PageTerms:
    """The normalised terms of a page: per sentence of the main text, and the TDW vector."""

    sentences: list[list[str]]
    tdw: TermVector


@dataclass
class Features:
    content_hash: str
    title_key: str
    tdw: TermVector
    simhash: int
    chunks: np.ndarray
    shingles: np.ndarray
    shingle_count: int
    signature: Signature
    sentences: int

    def _extra(self, page: Page) -> dict:
        extra: dict = {}
        if page.list_share:  # a listing page: the decision weighs it (dedup.decision, "listing")
            extra["list_share"] = page.list_share
        return extra

    def to_record(self, page: Page, **fields) -> Record:
        """The compact record of these features (:func:`dedup.record.compact_arrays`)."""
        return Record(
            url=page.url, title=page.title, content_hash=self.content_hash, title_key=self.title_key,
            simhash=self.simhash, ref_id=self.signature.ref_id, sentences=self.sentences,
            **compact_arrays(shingles=self.shingles, shingle_count=self.shingle_count, terms=self.tdw.hashes,
                             weights=self.tdw.weights, signature=self.signature.vector),
            extra=self._extra(page), **fields,
        )


class Featurizer:
    """Computes :class:`Features`; owns the normaliser (and its cache) and the reference text.

    ``weights``: a TDW preset name (``tdw``, ``wwt``) or a field -> weight mapping.
    ``shingle``: words per shingle (5). ``sketch``: shingle hashes kept per page (bottom-k, 256).
    """

    def __init__(self, *, weights: str | Mapping[str, float] = "tdw", shingle: int = 5, sketch: int = 256,
                 reference: ReferenceText | None = None, normalizer: Normalizer | None = None,
                 word_mapping: bool | None = None) -> None:
        if shingle < 1:
            raise ValueError(f"shingle size must be >= 1 (got {shingle})")
        if sketch < 16:
            raise ValueError(f"shingle sketch must keep >= 16 hashes (got {sketch})")
        self.weights = resolve_weights(weights)
        self.shingle = shingle
        self.sketch = sketch
        self.reference = reference or default_reference()
        self.normalizer = normalizer or Normalizer(word_mapping=word_mapping)

    def __call__(self, page: Page) -> Features:
        return self.fingerprint(page, self.terms(page))

    def terms(self, page: Page) -> PageTerms:
        """Normalised terms (stop words removed, words mapped, stemmed) and the TDW vector."""
        norm = self.normalizer
        # norm.terms() of every sentence, with each distinct token normalised once per page
        tokens = [tokenize(s) for s in page.sentences]
        mapped = norm.term_map(list(dict.fromkeys(chain.from_iterable(tokens))))
        sentence_terms = [list(filter(None, map(mapped.__getitem__, ts))) for ts in tokens]
        body = list(chain.from_iterable(sentence_terms))
        return PageTerms(sentence_terms, term_weights(page, norm, self.weights, body_terms=body))

    def fingerprint(self, page: Page, terms: PageTerms) -> Features:
        """Exact keys, simhashes, the shingle sketch and the MRC signature of ``page``."""
        sentence_terms = terms.sentences
        lengths = np.fromiter((len(t) for t in sentence_terms), dtype=np.int64, count=len(sentence_terms))
        body_hashes = hash_terms(list(chain.from_iterable(sentence_terms)))
        chunks = chunk_simhashes(body_hashes, np.repeat(np.arange(lengths.size), lengths), lengths.size)
        chunks = chunks[lengths > 0]
        shingles = np.unique(shingle_hashes(body_hashes, self.shingle))  # sorted, distinct
        tdw = terms.tdw
        return Features(
            content_hash=content_hash(page.text),
            title_key=title_key(page.title, page.anchor_count),
            tdw=tdw,
            simhash=simhash(tdw.hashes, tdw.weights),
            chunks=chunks,
            shingles=shingles[: self.sketch],  # the bottom-k sketch (simhash.bottom_k)
            shingle_count=int(shingles.size),
            signature=self.reference.signature(page.text),
            sentences=len(page.sentences),
        )
