"""From a :class:`~dedup.page.Page` to the numbers the deduplicator compares.

Which text feeds which signal (measured on goldset-dev: docs/decision.md, docs/choices.md):

* exact keys: the normalised main text (content hash) and title + anchor count;
* TDW vector (tag-weighted, all fields) -> the page simhash and the comparison reducer;
* main-text terms -> word 5-gram shingles (bottom-k sketch, each with where it first occurs in
  the page) for containment and where the shared text lies, and one simhash per sentence (seed
  003's chunks);
* main-text characters -> the multireference-cosine signature.

Boilerplate-heavy fields (navigation anchors, URL) stay out of the shingles and
the signature: two copies of a story on different sites share their story, not
their navigation.
"""
from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from . import _fast
from .keys import content_hash, title_key
from .mrc import ReferenceText, Signature, default_reference
from .page import Page
from .record import Record, compact_arrays
from .simhash import chunk_simhashes, simhash
from .tdw import TermVector, resolve_weights, term_weights
from .text import Normalizer, normalizer_of, tokenize

__all__ = ["Features", "Featurizer", "PageTerms", "SentenceChunks"]


class PageTerms:
    """The normalised terms of a page: the main text's (``body``, made on first use from its tokens, and
    their hashes), per sentence (made on first use), and the TDW vector."""

    __slots__ = ("_tokens", "_body", "body_hashes", "tdw", "_lines", "_normalizer", "_sentences")

    def __init__(self, tokens: list[str], body_hashes: np.ndarray, tdw: TermVector, lines: list[str],
                 normalizer: Normalizer) -> None:
        self._tokens, self.body_hashes, self.tdw = tokens, body_hashes, tdw
        self._lines, self._normalizer = lines, normalizer  # the page's sentences, what maps their tokens
        self._body: list[str] | None = None
        self._sentences: list[list[str]] | None = None

    @property
    def body(self) -> list[str]:
        """The main text's terms, stop words left out (``body_hashes`` are their hashes)."""
        if self._body is None:
            self._body = list(filter(None, self._normalizer.term_list(self._tokens)))
        return self._body

    @property
    def sentences(self) -> list[list[str]]:
        """The terms of each sentence of the main text (together, ``body``)."""
        if self._sentences is None:
            self._sentences = self._normalizer.sentence_terms(self._lines)
        return self._sentences


class SentenceChunks:
    """The recipe of a page's chunks (:attr:`Features.chunks`, one simhash per sentence), followed when
    they are first read: its body's term hashes, split at its sentences (``lines``) by the terms the
    normaliser gives each.  Pickled with the normaliser's settings, not the normaliser (~180 MB of tables): a
    worker process hands its features back without making chunks its caller's decision never reads (~0.45 ms
    a page, 8% of a worker's time), and a process that does read them makes them with a normaliser of those
    settings, made once (:func:`dedup.text.normalizer_of`)."""

    __slots__ = ("body_hashes", "lines", "normalizer")

    def __init__(self, body_hashes: np.ndarray, lines: list[str],
                 normalizer: Normalizer | tuple[bool, bool, bool]) -> None:
        self.body_hashes, self.lines, self.normalizer = body_hashes, lines, normalizer

    def __call__(self) -> np.ndarray:
        norm = self.normalizer if isinstance(self.normalizer, Normalizer) else normalizer_of(self.normalizer)
        lengths = np.fromiter(map(len, norm.sentence_terms(self.lines)), dtype=np.int64, count=len(self.lines))
        made = chunk_simhashes(self.body_hashes, np.repeat(np.arange(lengths.size), lengths), lengths.size)
        return made[lengths > 0]

    def __reduce__(self) -> tuple:
        norm = self.normalizer
        return SentenceChunks, (self.body_hashes, self.lines, norm.settings if isinstance(norm, Normalizer) else norm)


class Features:
    """A page's keys, fingerprints and signature. ``chunks`` (one simhash per sentence, seed 003)
    may be given as a function that makes them (:class:`SentenceChunks`): they are made on first use
    (a record keeps none, so a crawl's check never reads them); pickled features carry the function.
    ``positions``: one a sketch hash (uint8): where it first occurs in the page's shingle sequence,
    ``index * POSITION_LEVELS // len(sequence)`` (:data:`dedup.record.POSITION_LEVELS`)."""

    __slots__ = ("content_hash", "title_key", "tdw", "simhash", "_chunks", "shingles", "shingle_count",
                 "signature", "sentences", "positions")

    def __init__(self, content_hash: str, title_key: str, tdw: TermVector, simhash: int,
                 chunks: np.ndarray | Callable[[], np.ndarray], shingles: np.ndarray, shingle_count: int,
                 signature: Signature, sentences: int, positions: np.ndarray | None = None) -> None:
        self.content_hash, self.title_key, self.tdw, self.simhash = content_hash, title_key, tdw, simhash
        self._chunks = chunks
        self.shingles, self.shingle_count, self.signature, self.sentences = shingles, shingle_count, signature, sentences
        self.positions = np.zeros(0, dtype=np.uint8) if positions is None else positions

    @property
    def chunks(self) -> np.ndarray:
        if callable(self._chunks):
            self._chunks = self._chunks()
        return self._chunks

    def __getstate__(self) -> dict:
        # chunks not made yet go as their recipe (SentenceChunks), made where they are read, if ever
        return {name: getattr(self, name) for name in self.__slots__}

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            setattr(self, name, value)

    def __repr__(self) -> str:
        return (f"Features(content_hash={self.content_hash!r}, title_key={self.title_key!r}, "
                f"simhash={self.simhash}, shingle_count={self.shingle_count}, sentences={self.sentences})")

    def _extra(self, page: Page) -> dict:
        extra: dict = {}
        if page.list_share:  # a listing page: the decision weighs it (dedup.decision, "listing")
            extra["list_share"] = page.list_share
        if page.truncated:  # how the page was cut before it was read: a verdict from the record says it too
            extra["truncated"] = dict(page.truncated)
        return extra

    def to_record(self, page: Page, **fields) -> Record:
        """The compact record of these features (:func:`dedup.record.compact_arrays`)."""
        return Record(
            url=page.url, title=page.title, content_hash=self.content_hash, title_key=self.title_key,
            simhash=self.simhash, ref_id=self.signature.ref_id, sentences=self.sentences,
            **compact_arrays(shingles=self.shingles, shingle_count=self.shingle_count, terms=self.tdw.hashes,
                             weights=self.tdw.weights, signature=self.signature.vector, positions=self.positions),
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
        # the sentences tokenised in one call (no token spans a newline: the same tokens as
        # sentence by sentence), their terms' hashes looked up in the normaliser's cache in one C call
        tokens = tokenize("\n".join(page.sentences))
        body_hashes = norm.term_hashes(tokens)
        tdw = term_weights(page, norm, self.weights, body_hashes=body_hashes)
        return PageTerms(tokens, body_hashes, tdw, list(page.sentences), norm)

    def fingerprint(self, page: Page, terms: PageTerms) -> Features:
        """Exact keys, simhashes, the shingle sketch and the MRC signature of ``page``."""
        body_hashes = terms.body_hashes
        # in one C call (dedup/_fast.c): the shingle hashes (simhash.shingle_hashes), their bottom-k distinct
        # values and where each first occurs, on POSITION_LEVELS levels of the shingle sequence, and how many
        # are distinct (tests/test_fast.py keeps the numpy steps this replaces and compares)
        sketch, first, distinct = _fast.shingle_sketch(body_hashes, self.shingle, self.sketch)
        shingles, positions = np.frombuffer(sketch, dtype=np.uint64), np.frombuffer(first, dtype=np.uint8)
        tdw = terms.tdw

        return Features(
            # a page without main text: its raw body's key (dedup.keys.raw_key), which catches its exact copies
            content_hash=content_hash(page.text) or page.raw_key,
            title_key=title_key(page.title, page.anchor_count),
            tdw=tdw,
            simhash=simhash(tdw.hashes, tdw.weights),
            chunks=SentenceChunks(body_hashes, terms._lines, terms._normalizer),
            shingles=shingles,  # the bottom-k sketch (simhash.bottom_k)
            shingle_count=distinct,
            signature=self.reference.signature(page.text),
            sentences=len(page.sentences),
            positions=positions,
        )
