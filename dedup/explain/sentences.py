"""Sentence representations of seed 001 (Yerra 2005, chapter 3) and the counts behind them.

A sentence is first *refined*: tokenised, stop words removed, Porter-stemmed (no
WordNet word mapping: the seed wants no thesaurus). From a refined sentence:

* its **three least-frequent 4-grams** — 4-*character* substrings of the refined
  words written together without spaces (the seed's example: ``iraqs top shiite``
  gives ``iraq raqs aqst qsto stop tops opsh ...``); the three with the lowest
  frequency in a reference collection, kept in sentence order, stand for the
  sentence, and two sentences are "the same" when those three are equal;
* its **word set**, compared with another sentence's through the word-word
  correlation ``c_ij = n_ij / (n_i + n_j - n_ij)`` of document co-occurrence
  counts (Equation 3.1; see :mod:`dedup.explain.fuzzy`).

Both need counts from a collection, held by :class:`SentenceTables`: unit (document)
frequencies of words, co-occurrence counts of word pairs, unit frequencies of
4-grams. The shipped default (``dedup/data/sentence_tables.npz``, built by
``scripts/build_sentence_tables.py``) counts the 117,659 WordNet 3.0 synsets (lemmas
plus gloss, one unit each); :meth:`SentenceTables.extended` adds the distinct
sentences of any texts, e.g. the kept pages of a crawl, so the words of the crawled
domain get counts too.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from ..text import Normalizer, split_sentences, tokenize

__all__ = [
    "REFINE_VERSION",
    "DEFAULT_TABLES_PATH",
    "Refiner",
    "refine",
    "char_grams",
    "least_frequent_grams",
    "SentenceTables",
    "default_tables",
    "cached_extension",
]

#: Changes whenever :func:`refine` would give other words: tables built by another version are refused.
REFINE_VERSION = "refine-1"
DEFAULT_TABLES_PATH = Path(__file__).resolve().parent.parent / "data" / "sentence_tables.npz"
GRAM = 4
_DIGIT = re.compile(r"\d")

class Refiner:
    """The seed's "refined" sentences (:meth:`__call__`) and the stop words they leave out
    (:attr:`stop_words`, which the hierarchy's heading test reads too). It keeps its stemmer's
    cache: make one for a job (a page pair, a table extension) and call it for every sentence."""

    def __init__(self) -> None:
        self._norm = Normalizer(word_mapping=False)
        self.stop_words: frozenset[str] = self._norm.stopwords

    def __call__(self, sentence: str) -> list[str]:
        """Non-stop, Porter-stemmed words in order.

        Numbers, one-letter tokens and possessive ``'s`` go (the seed removes numbers and
        non-alphabetic characters); other apostrophes are dropped (``shi'ite`` -> ``shiite``).
        """
        norm, stop = self._norm, self.stop_words
        out: list[str] = []
        for tok in tokenize(sentence):
            if len(tok) < 2 or _DIGIT.search(tok) or tok in stop:
                continue
            if "'" in tok:
                tok = (tok[:-2] if tok.endswith("'s") else tok).replace("'", "")
                if len(tok) < 2 or tok in stop:
                    continue
            term = norm.term(tok)
            if term:
                out.append(term)
        return out


def refine(sentence: str) -> list[str]:
    """One sentence refined by a new :class:`Refiner` (for many sentences, make one and call it)."""
    return Refiner()(sentence)


def char_grams(terms: Sequence[str], n: int = GRAM) -> list[str]:
    """Character n-grams of the refined words written together (the seed's "concatenated 4-grams")."""
    s = "".join(terms)
    if len(s) < n:
        return [s] if s else []
    return [s[i : i + n] for i in range(len(s) - n + 1)]


def least_frequent_grams(terms: Sequence[str], frequency: Callable[[Sequence[str]], np.ndarray],
                         k: int = 3) -> tuple[str, ...]:
    """The ``k`` least-frequent distinct 4-grams of a refined sentence, in sentence order.

    Ties go to the earlier gram. ``frequency`` maps a list of grams to their counts.
    """
    grams = list(dict.fromkeys(char_grams(terms)))  # distinct, first occurrence order
    if len(grams) <= k:
        return tuple(grams)
    freq = frequency(grams)
    chosen = sorted(sorted(range(len(grams)), key=lambda i: (int(freq[i]), i))[:k])
    return tuple(grams[i] for i in chosen)


def _pair_keys(ids: np.ndarray) -> np.ndarray:
    """``lo << 32 | hi`` for every unordered pair of the sorted, distinct ``ids``."""
    i, j = np.triu_indices(ids.size, 1)
    return (ids[i].astype(np.int64) << 32) | ids[j].astype(np.int64)


def _expand_ranges(sorted_ids: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each of ``ids``, the positions in ``sorted_ids`` holding it: ``(owner, position)`` arrays."""
    start = np.searchsorted(sorted_ids, ids, side="left")
    count = np.searchsorted(sorted_ids, ids, side="right") - start
    owner = np.repeat(np.arange(ids.size), count)
    offsets = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    return owner, np.repeat(start, count) + offsets


def _sum_by_key(keys: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    uniq, inverse = np.unique(keys, return_inverse=True)
    return uniq, np.bincount(inverse, weights=counts, minlength=uniq.size).astype(np.int64)


def _count_units(units: Iterable[Sequence[str]], words: list[str], index: dict[str, int],
                 grams: dict[str, int], seen: set[tuple[str, ...]]) -> tuple[dict[int, int], list[np.ndarray]]:
    """Count the distinct ``units`` not in ``seen`` (which gains them): new words are appended to
    ``words``/``index`` and each unit's 4-grams added to ``grams``; returns the units per word id
    and the chunks of the units' word-pair keys."""
    df: dict[int, int] = {}
    chunks: list[np.ndarray] = []
    for unit in units:
        key = tuple(unit)
        if not unit or key in seen:
            continue
        seen.add(key)
        ids = []
        for w in dict.fromkeys(unit):
            i = index.get(w)
            if i is None:
                i = index[w] = len(words)
                words.append(w)
            ids.append(i)
            df[i] = df.get(i, 0) + 1
        if len(ids) > 1:
            chunks.append(_pair_keys(np.array(sorted(ids), dtype=np.int64)))
        for g in set(char_grams(unit)):
            grams[g] = grams.get(g, 0) + 1
    return df, chunks


@dataclass
class SentenceTables:
    """Counts over a collection of units (documents): what seed 001 precomputes.

    ``words``/``df``: unit frequency of each refined word. ``pair_keys``/``pair_counts``:
    sorted ``lo << 32 | hi`` word-id pairs and the number of units holding both (pairs
    may have been pruned when the table was built; see ``provenance``). ``grams``: unit
    frequency of each character 4-gram. ``min_pair``: co-occurrence counts below this
    give ``c = 0`` — two rare words seen together once would otherwise get ``c = 1``.
    """

    words: list[str]
    df: np.ndarray
    units: int
    pair_keys: np.ndarray
    pair_counts: np.ndarray
    grams: dict[str, int]
    min_pair: int = 2
    provenance: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.min_pair < 1:
            raise ValueError(f"min_pair must be >= 1 (got {self.min_pair})")
        if len(self.words) != self.df.size:
            raise ValueError(f"{len(self.words)} words but {self.df.size} frequencies")
        if self.pair_keys.size != self.pair_counts.size:
            raise ValueError(f"{self.pair_keys.size} pair keys but {self.pair_counts.size} counts")
        if self.pair_keys.size > 1 and not np.all(self.pair_keys[1:] > self.pair_keys[:-1]):
            raise ValueError("pair keys must be sorted and distinct")
        self.index = {w: i for i, w in enumerate(self.words)}
        self._by_hi: tuple[np.ndarray, np.ndarray] | None = None

    # -- identity ----------------------------------------------------------------------------------
    @property
    def id(self) -> str:
        """Short content id: differs whenever the counts could."""
        h = hashlib.sha1(json.dumps(self.provenance, sort_keys=True).encode())
        h.update(f"{self.units}:{len(self.words)}:{self.pair_keys.size}:{len(self.grams)}:{self.min_pair}".encode())
        return "st-" + h.hexdigest()[:12]

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "units": self.units, "words": len(self.words), "pairs": int(self.pair_keys.size),
                "grams": len(self.grams), "min_pair": self.min_pair, "provenance": self.provenance}

    # -- lookups -----------------------------------------------------------------------------------
    def gram_frequency(self, grams: Sequence[str]) -> np.ndarray:
        get = self.grams.get
        return np.fromiter((get(g, 0) for g in grams), dtype=np.int64, count=len(grams))

    def least_frequent(self, terms: Sequence[str], k: int = 3) -> tuple[str, ...]:
        return least_frequent_grams(terms, self.gram_frequency, k)

    def correlation(self, words_a: Sequence[str], words_b: Sequence[str], *, rows: int = 256) -> np.ndarray:
        """``c_ij`` (Equation 3.1) for every word of ``words_a`` against every word of ``words_b``.

        Equal words correlate 1 (also when the tables never saw them); unseen words 0
        with everything else. Returned as float64, ``len(words_a) x len(words_b)``.
        """
        ia = np.array([self.index.get(w, -1) for w in words_a], dtype=np.int64)
        ib = np.array([self.index.get(w, -1) for w in words_b], dtype=np.int64)
        out = np.zeros((ia.size, ib.size), dtype=np.float64)
        if ia.size and ib.size and self.pair_keys.size:
            for start in range(0, ia.size, rows):  # bounds the key matrix on long pages
                a = ia[start : start + rows, None]
                lo, hi = np.minimum(a, ib[None, :]), np.maximum(a, ib[None, :])
                keys = (lo << 32) | hi
                pos = np.searchsorted(self.pair_keys, keys)
                pos[pos >= self.pair_keys.size] = 0
                n = np.where((self.pair_keys[pos] == keys) & (lo >= 0), self.pair_counts[pos], 0)
                n[n < self.min_pair] = 0
                da = np.where(a >= 0, self.df[np.maximum(a, 0)], 0)
                db = np.where(ib >= 0, self.df[np.maximum(ib, 0)], 0)[None, :]
                denom = da + db - n
                out[start : start + rows] = np.divide(n, denom, out=np.zeros(n.shape), where=denom > 0)
        same = {w: j for j, w in enumerate(words_b)}
        for i, w in enumerate(words_a):
            j = same.get(w)
            if j is not None:
                out[i, j] = 1.0
        return out

    def correlation_triplets(self, words_a: Sequence[str],
                             words_b: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The non-zero entries of :meth:`correlation` as ``(rows, cols, c)`` arrays.

        Found from each word's own pairs in the table, never from the full
        ``len(words_a) x len(words_b)`` grid, so long pages cost what their pairs cost.
        """
        ga = np.array([self.index.get(w, -1) for w in words_a], dtype=np.int64)
        gb = np.array([self.index.get(w, -1) for w in words_b], dtype=np.int64)
        rows: list[np.ndarray] = []
        cols: list[np.ndarray] = []
        vals: list[np.ndarray] = []
        known_a = np.nonzero(ga >= 0)[0]
        if known_a.size and (gb >= 0).any() and self.pair_keys.size:
            col_of = np.full(self.df.size, -1, dtype=np.int64)
            col_of[gb[gb >= 0]] = np.nonzero(gb >= 0)[0]
            lo = self.pair_keys >> 32
            hi = self.pair_keys & 0xFFFFFFFF
            if self._by_hi is None:
                order = np.argsort(hi, kind="stable")
                self._by_hi = (order, hi[order])
            order, hi_sorted = self._by_hi
            for sorted_ids, positions, partner in ((lo, None, hi), (hi_sorted, order, lo)):
                owner, pos = _expand_ranges(sorted_ids, ga[known_a])
                if positions is not None:
                    pos = positions[pos]
                col = col_of[partner[pos]]
                keep = col >= 0
                row, pos, col = known_a[owner[keep]], pos[keep], col[keep]
                n = self.pair_counts[pos]
                ok = n >= self.min_pair
                row, col, n = row[ok], col[ok], n[ok]
                rows.append(row)
                cols.append(col)
                vals.append(n / (self.df[ga[row]] + self.df[gb[col]] - n))
        same = {w: j for j, w in enumerate(words_b)}
        eq_rows = [i for i, w in enumerate(words_a) if w in same]
        rows.append(np.array(eq_rows, dtype=np.int64))
        cols.append(np.array([same[words_a[i]] for i in eq_rows], dtype=np.int64))
        vals.append(np.ones(len(eq_rows)))
        return np.concatenate(rows), np.concatenate(cols), np.concatenate(vals).astype(np.float64)

    # -- extension ---------------------------------------------------------------------------------
    def extended(self, texts: Iterable[str], *, label: str = "texts") -> "SentenceTables":
        """New tables with the distinct sentences of ``texts`` added as units.

        A sentence is one unit (a repeated sentence counts once, so the copies a crawl
        holds do not make their own words look correlated); its words add to ``df`` and
        to the pair counts, its 4-grams to ``grams``.
        """
        words = list(self.words)
        index = dict(self.index)
        grams = dict(self.grams)
        seen: set[tuple[str, ...]] = set()
        n_texts = 0

        refine_one = Refiner()

        def units() -> Iterator[list[str]]:
            nonlocal n_texts
            for text in texts:
                n_texts += 1
                for sentence in split_sentences(text or ""):
                    yield refine_one(sentence)

        df_new, key_chunks = _count_units(units(), words, index, grams, seen)
        df = np.zeros(len(words), dtype=np.int64)
        df[: self.df.size] = self.df
        for i, n in df_new.items():
            df[i] += n
        keys, counts = self.pair_keys, self.pair_counts
        if key_chunks:
            new = np.concatenate(key_chunks)
            keys, counts = _sum_by_key(np.concatenate([keys, new]),
                                       np.concatenate([counts, np.ones(new.size, dtype=np.int64)]))
        provenance = dict(self.provenance)
        provenance["extended"] = list(self.provenance.get("extended", [])) + [
            {"label": label, "texts": n_texts, "units": len(seen)}]
        return SentenceTables(words=words, df=df, units=self.units + len(seen), pair_keys=keys,
                              pair_counts=counts, grams=grams, min_pair=self.min_pair, provenance=provenance)

    # -- files -------------------------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        gram_names = sorted(self.grams)
        meta = {"refine": REFINE_VERSION, "units": self.units, "min_pair": self.min_pair,
                "provenance": self.provenance}
        tmp = path.with_name(path.name + ".tmp")
        with tmp.open("wb") as fh:
            np.savez_compressed(
                fh, meta=np.array(json.dumps(meta, sort_keys=True)),
                words=np.array(self.words, dtype=str), df=self.df.astype(np.int64),
                pair_keys=self.pair_keys.astype(np.int64), pair_counts=self.pair_counts.astype(np.int64),
                gram_names=np.array(gram_names, dtype=str),
                gram_counts=np.array([self.grams[g] for g in gram_names], dtype=np.int64))
        tmp.replace(path)

    @classmethod
    def load(cls, path: str | Path) -> "SentenceTables":
        with np.load(Path(path), allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            if meta.get("refine") != REFINE_VERSION:
                raise ValueError(f"{path}: sentence tables built with {meta.get('refine')!r}, this version "
                                 f"refines sentences as {REFINE_VERSION!r}; rebuild them "
                                 f"(python scripts/build_sentence_tables.py)")
            return cls(words=z["words"].tolist(), df=z["df"], units=int(meta["units"]),
                       pair_keys=z["pair_keys"], pair_counts=z["pair_counts"],
                       grams=dict(zip(z["gram_names"].tolist(), z["gram_counts"].tolist())),
                       min_pair=int(meta["min_pair"]), provenance=meta.get("provenance", {}))

    @classmethod
    def from_units(cls, units: Iterable[Sequence[str]], *, min_pair: int = 2, prune_pairs: int = 1,
                   prune_c: float = 0.0, prune_grams: int = 1,
                   provenance: dict[str, Any] | None = None) -> "SentenceTables":
        """Tables counted over refined ``units`` (lists of words); identical units count once.

        Pruning (for a table that ships): pairs seen in fewer than ``prune_pairs`` units or
        with ``c < prune_c``, and 4-grams seen in fewer than ``prune_grams`` units, are left out.
        """
        words: list[str] = []
        grams: dict[str, int] = {}
        seen: set[tuple[str, ...]] = set()
        df, chunks = _count_units(units, words, {}, grams, seen)
        dfa = np.zeros(len(words), dtype=np.int64)
        for i, n in df.items():
            dfa[i] = n
        keys = np.zeros(0, dtype=np.int64)
        counts = np.zeros(0, dtype=np.int64)
        if chunks:
            allk = np.concatenate(chunks)
            keys, counts = _sum_by_key(allk, np.ones(allk.size, dtype=np.int64))
        keep = counts >= prune_pairs
        if prune_c > 0 and keys.size:
            lo, hi = keys >> 32, keys & 0xFFFFFFFF
            keep &= counts / (dfa[lo] + dfa[hi] - counts) >= prune_c
        if prune_grams > 1:
            grams = {g: n for g, n in grams.items() if n >= prune_grams}
        prov = dict(provenance or {})
        prov.setdefault("pruning", {"pairs_min_units": prune_pairs, "pairs_min_c": prune_c,
                                    "grams_min_units": prune_grams})
        return cls(words=words, df=dfa, units=len(seen), pair_keys=keys[keep], pair_counts=counts[keep],
                   grams=grams, min_pair=min_pair, provenance=prov)


def default_tables() -> SentenceTables:
    """The shipped tables (WordNet 3.0 synsets), read from disk (~0.05 s CPU): a caller comparing
    many pairs reads them once and passes them on (``explain(..., tables=)``)."""
    if not DEFAULT_TABLES_PATH.is_file():
        raise FileNotFoundError(f"{DEFAULT_TABLES_PATH} is missing: run python scripts/build_sentence_tables.py")
    return SentenceTables.load(DEFAULT_TABLES_PATH)


def cached_extension(base: SentenceTables, key: str, texts: Callable[[], Iterable[str]],
                     cache_dir: str | Path, *, label: str = "corpus") -> SentenceTables:
    """``base.extended(texts())``, kept in ``cache_dir`` under a name made of ``key`` and ``base.id``.

    ``key`` must change whenever the texts do (e.g. index URI plus page count); the
    texts are only read when no cached file matches.
    """
    digest = hashlib.sha1(f"{REFINE_VERSION}\0{base.id}\0{key}".encode()).hexdigest()[:16]
    path = Path(cache_dir) / f"sentence-tables-{digest}.npz"
    if path.is_file():
        try:
            return SentenceTables.load(path)
        except (OSError, ValueError, KeyError):
            path.unlink(missing_ok=True)  # a torn or stale cache file is rebuilt
    tables = base.extended(texts(), label=label)
    try:
        tables.save(path)
    except OSError:
        pass  # a read-only cache dir only costs the recount next time
    return tables
