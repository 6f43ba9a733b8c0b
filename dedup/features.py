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
from typing import Mapping

import numpy as np

from .keys import content_hash, title_key
from .mrc import ReferenceText, Signature, default_reference
from .page import Page
from .record import Record
from .simhash import bottom_k, chunk_simhashes, hash_terms, shingle_hashes, simhash
from .tdw import TermVector, resolve_weights, term_weights
from .text import Normalizer

__all__ = ["Features", "Featurizer"]


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

    def to_record(self, page: Page, **fields) -> Record:
        return Record(
            url=page.url, title=page.title, content_hash=self.content_hash, title_key=self.title_key,
            simhash=self.simhash, chunks=self.chunks, terms=self.tdw.hashes, weights=self.tdw.weights,
            shingles=self.shingles, signature=self.signature.vector, ref_id=self.signature.ref_id,
            sentences=self.sentences, extra={"shingle_count": self.shingle_count}, **fields,
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
        norm = self.normalizer
        sentence_terms = [norm.terms(s) for s in page.sentences]
        lengths = np.fromiter((len(t) for t in sentence_terms), dtype=np.int64, count=len(sentence_terms))
        body = [t for terms in sentence_terms for t in terms]
        body_hashes = hash_terms(body)
        chunks = chunk_simhashes(body_hashes, np.repeat(np.arange(lengths.size), lengths), lengths.size)
        chunks = chunks[lengths > 0]
        shingles = np.unique(shingle_hashes(body_hashes, self.shingle))
        tdw = term_weights(page, norm, self.weights, body_terms=body)
        return Features(
            content_hash=content_hash(page.text),
            title_key=title_key(page.title, page.anchor_count),
            tdw=tdw,
            simhash=simhash(tdw.hashes, tdw.weights),
            chunks=chunks,
            shingles=bottom_k(shingles, self.sketch),
            shingle_count=int(shingles.size),
            signature=self.reference.signature(page.text),
            sentences=len(page.sentences),
        )
