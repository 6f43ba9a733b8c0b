"""Training a reference text with a genetic algorithm (seed 000 §3.6).

A reference text is a *chromosome* of L genes, each gene one 3-gram out of a
*pool*: the top tf-idf 3-grams of the training corpus (9,000 by default, §3.6.1).
The corpus is split 80/20 (§4.2): the first part scores reference texts during
training, the second part evaluates the winner once, at the end.

* initial population: texts of L distinct pool 3-grams drawn at random (§3.6.1), and
  (``tfidf_start``, our addition) the top-L tf-idf 3-grams in score order, so that the
  result is never worse than the tf-idf-only text on the fitness part;
* crossover: single cut — two parents are cut at the same random position and
  their tails swapped, giving two children (§3.6.2);
* mutation: a random 10% of a child's positions get a 3-gram drawn at random from
  the pool (§3.6.2);
* fitness (Eq. 1): the mean absolute error, over all pairs of a fixed random sample
  of documents, between the multireference-cosine similarity (cosine of the two
  signatures) and the cosine of the two full 3-gram count vectors; lower is better;
* selection: parents and children together, the ``population`` fittest survive
  (§3.6.4), so the best fitness never gets worse;
* stop after ``generations`` generations, or earlier once the best fitness is at
  or below ``target``.

Fast fitness. The documents' counts at the pool's 3-grams are one dense
N x K float32 matrix (N sampled documents, K pool 3-grams). The dot product of
document d with partition p of a text is then the sum of that matrix over the
partition's genes (a gather ``A[:, genes]`` and ``np.add.reduceat`` over the
partition starts: a 3-gram that occurs twice in a partition counts twice, as in
:class:`~dedup.mrc.ReferenceText`); partition norms come from one
``np.unique``/``np.bincount`` over (text, partition, gene) keys; signatures of a
whole batch of texts are normalised and multiplied as one (texts, N, P) stack.
The exact pair cosines are computed once, by blocks of vocabulary columns. No
scipy: the sparse side is numpy index arithmetic.

Everything random comes from one ``numpy.random.Generator`` seeded with ``seed``:
the same documents in the same order with the same parameters give the same text.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..mrc import ReferenceText, gram_counts, gram_text

__all__ = ["TrainConfig", "PairSet", "load_corpus", "Generation", "TrainResult", "tfidf_pool", "crossover", "mutate",
           "initial_population", "train_reference", "reference_from_genes", "mae_of_reference"]

Counts = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class TrainConfig:
    """Parameters of :func:`train_reference` (defaults from seed 000)."""

    length: int = 1000          # L: 3-grams per reference text
    partitions: int = 150       # P: contiguous partitions (signature size)
    population: int = 100       # texts kept per generation
    generations: int = 50       # G: generations at most
    pool: int = 9000            # K: top tf-idf 3-grams that texts are made of
    mutation: float = 0.1       # share of a text's 3-grams one mutation replaces
    mutation_rate: float = 1.0  # share of children that are mutated
    sample: int = 200           # documents of the fitness part scored pairwise (N(N-1)/2 pairs)
    eval_sample: int = 400      # documents of the evaluation part scored pairwise at the end
    holdout: float = 0.2        # share of the corpus kept for evaluation
    target: float | None = None  # stop once the best fitness MAE is <= target
    seed: int = 0
    tfidf_start: bool = True    # one text of the initial population is the top-L tf-idf 3-grams in score order

    def check(self) -> None:
        problems = []
        if not 1 <= self.partitions <= self.length:
            problems.append(f"partitions must be in [1, length] (got {self.partitions}, length {self.length})")
        if self.pool < self.length:
            problems.append(f"pool must be >= length (got pool {self.pool}, length {self.length})")
        if self.population < 2:
            problems.append(f"population must be >= 2 (got {self.population})")
        if self.generations < 0:
            problems.append(f"generations must be >= 0 (got {self.generations})")
        if not 0.0 <= self.mutation <= 1.0 or not 0.0 <= self.mutation_rate <= 1.0:
            problems.append(f"mutation and mutation_rate must be in [0, 1] (got {self.mutation}, {self.mutation_rate})")
        if self.sample < 2 or self.eval_sample < 2:
            problems.append(f"sample and eval_sample must be >= 2 (got {self.sample}, {self.eval_sample})")
        if not 0.0 < self.holdout < 1.0:
            problems.append(f"holdout must be in (0, 1) (got {self.holdout})")
        if problems:
            raise ValueError("; ".join(problems))


# -- the corpus ---------------------------------------------------------------------------------

TEXT_SUFFIXES = (".txt", ".text", ".md")
HTML_SUFFIXES = (".htm", ".html", ".xhtml")


def load_corpus(path: str | Path, *, field: str = "text",
                progress: Callable[[int, int], None] | None = None) -> list[str]:
    """The documents of a training corpus, in a stable order (empty ones left out).

    * a folder: every ``*.txt``/``*.text``/``*.md`` file below it is one document, and
      every ``*.htm``/``*.html``/``*.xhtml`` page's main text is one (parsed as a crawl
      parses it), in path order;
    * ``*.jsonl``/``*.jl``/``*.ndjson``: one JSON object per line, text in ``field``
      (a crawl's ``-O items.jsonl`` export works as it is);
    * ``*.json``: a list of such objects, or of strings;
    * any other file: one document per line.

    ``progress(done, total)`` is called after each file of a folder (parsing HTML pages is
    the slow part: about 20 s for a thousand pages).
    """
    p = Path(path)
    if p.is_dir():
        files = sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in TEXT_SUFFIXES + HTML_SUFFIXES)
        if not files:
            raise ValueError(f"{p} holds no *.txt, *.md or *.htm(l) files")
        docs = []
        for n, f in enumerate(files, 1):
            if f.suffix.lower() in HTML_SUFFIXES:
                from ..page import parse_page  # lazy: it loads trafilatura

                docs.append(parse_page(f.read_bytes(), f.resolve().as_uri()).text)
            else:
                docs.append(f.read_text(encoding="utf-8", errors="replace"))
            if progress:
                progress(n, len(files))
    elif not p.is_file():
        raise FileNotFoundError(f"no such corpus: {p}")
    elif p.suffix.lower() in (".jsonl", ".jl", ".ndjson"):
        docs = []
        with p.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if line.strip():
                    docs.append(_json_text(json.loads(line), field, f"{p}:{n}"))
    elif p.suffix.lower() == ".json":
        data = json.loads(p.read_text(encoding="utf-8"))
        if not isinstance(data, list):
            raise ValueError(f"{p} must hold a JSON list of documents")
        docs = [_json_text(d, field, f"{p}[{n}]") for n, d in enumerate(data)]
    else:
        docs = p.read_text(encoding="utf-8", errors="replace").splitlines()
    return [d for d in docs if d.strip()]


def _json_text(item, field: str, where: str) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, dict) and isinstance(item.get(field, ""), str):
        return item.get(field, "")
    raise ValueError(f"{where}: expected a string or an object with a string {field!r} field")


# -- the pool -----------------------------------------------------------------------------------

def tfidf_pool(doc_counts: Sequence[Counts], top: int) -> np.ndarray:
    """Ids of the ``top`` 3-grams by corpus tf-idf (total count x log(N/df)), best first.

    Same score and filter as :func:`dedup.mrc.tfidf_grams` (3-grams with fewer than two
    letters are left out); fewer than ``top`` when the corpus has fewer usable 3-grams.
    """
    docs = [(i, c) for i, c in doc_counts if i.size]
    if not docs:
        raise ValueError("no documents with text to train a reference text on")
    ids = np.concatenate([i for i, _ in docs])
    counts = np.concatenate([c for _, c in docs])
    uniq, inverse = np.unique(ids, return_inverse=True)
    tf = np.bincount(inverse, weights=counts)
    df = np.bincount(inverse)
    score = tf * np.log(len(docs) / df)
    keep = np.array([sum(ch.isalpha() for ch in gram_text(g)) >= 2 for g in uniq], dtype=bool)
    order = np.argsort(-np.where(keep, score, -np.inf), kind="stable")
    order = order[keep[order]][:top]
    return uniq[order]


# -- fitness --------------------------------------------------------------------------------------

def _bounds(length: int, partitions: int) -> np.ndarray:
    """Partition boundaries, exactly as :class:`~dedup.mrc.ReferenceText` cuts them."""
    return np.linspace(0, length, partitions + 1).round().astype(np.int64)


class PairSet:
    """N documents, their counts at the pool's 3-grams, and their exact pairwise cosines.

    ``exact`` holds the full 3-gram cosine of every pair ``i < j`` (row-major upper
    triangle); :meth:`mrc` gives the multireference cosines of the same pairs for a
    batch of texts and :meth:`mae` Eq. 1.
    """

    #: elements of the (N, texts, L) gather and of the (texts, N, N) cosines done at once (~128 MB)
    BATCH_ELEMENTS = 16_000_000

    def __init__(self, doc_counts: Sequence[Counts], pool: np.ndarray) -> None:
        docs = [(i, c) for i, c in doc_counts if i.size]
        if len(docs) < 2:
            raise ValueError(f"need at least 2 documents with text to score pairs (got {len(docs)})")
        self.n = len(docs)
        self.pool = np.asarray(pool, dtype=np.uint64)
        k = self.pool.size
        order = np.argsort(self.pool)
        sorted_pool = self.pool[order]
        at_pool = np.zeros((self.n, k), dtype=np.float32)
        for d, (ids, counts) in enumerate(docs):
            pos = np.searchsorted(sorted_pool, ids)
            pos[pos == k] = 0
            hit = sorted_pool[pos] == ids
            at_pool[d, order[pos[hit]]] = counts[hit]
        self.at_pool = at_pool
        self.iu = np.triu_indices(self.n, 1)
        gram = _gram_matrix(docs)
        norm = np.sqrt(np.diag(gram))
        self.exact = (gram / np.outer(norm, norm))[self.iu]
        self.pairs = self.exact.size

    def mrc(self, genes: np.ndarray, partitions: int) -> np.ndarray:
        """(texts, pairs) multireference cosines for texts given as (texts, L) pool indices."""
        genes = np.atleast_2d(np.asarray(genes, dtype=np.int64))
        m, length = genes.shape
        bounds = _bounds(length, partitions)
        step = max(1, self.BATCH_ELEMENTS // (self.n * max(length, self.n)))
        out = np.empty((m, self.pairs), dtype=np.float64)
        for a in range(0, m, step):
            out[a:a + step] = self._mrc_batch(genes[a:a + step], bounds)
        return out

    def _mrc_batch(self, genes: np.ndarray, bounds: np.ndarray) -> np.ndarray:
        m, length = genes.shape
        parts = bounds.size - 1
        k = self.pool.size
        # dot[d, t, p] = sum over the genes of partition p of text t of doc d's count
        dots = np.add.reduceat(self.at_pool[:, genes], bounds[:-1], axis=2)
        # partition norms: sqrt(sum of squared multiplicities of each 3-gram in the partition)
        part_of = np.repeat(np.arange(parts, dtype=np.int64), np.diff(bounds))
        keys = (np.arange(m, dtype=np.int64)[:, None] * parts + part_of[None, :]) * k + genes
        uniq, mult = np.unique(keys.ravel(), return_counts=True)
        part_norm = np.sqrt(np.bincount(uniq // k, weights=mult.astype(np.float64) ** 2, minlength=m * parts))
        sig = np.transpose(dots, (1, 0, 2)).astype(np.float64) / part_norm.reshape(m, 1, parts)
        # the division by the document norm of the signature cancels in the signature cosine
        norms = np.linalg.norm(sig, axis=2, keepdims=True)
        sig = np.divide(sig, norms, out=np.zeros_like(sig), where=norms > 0)
        cos = sig @ np.transpose(sig, (0, 2, 1))
        return cos[:, self.iu[0], self.iu[1]]

    def mae(self, genes: np.ndarray, partitions: int) -> np.ndarray:
        """Eq. 1 for each text: mean |multireference cosine - 3-gram cosine| over all pairs."""
        return np.abs(self.mrc(genes, partitions) - self.exact[None, :]).mean(axis=1)


def _gram_matrix(docs: Sequence[Counts], block_bytes: int = 64 << 20) -> np.ndarray:
    """Dot products of the documents' full 3-gram count vectors, by blocks of vocabulary columns."""
    n = len(docs)
    rows = np.repeat(np.arange(n), [i.size for i, _ in docs])
    ids = np.concatenate([i for i, _ in docs])
    counts = np.concatenate([c for _, c in docs])
    _, cols = np.unique(ids, return_inverse=True)
    vocab = int(cols.max()) + 1
    width = max(1, block_bytes // (8 * n))
    order = np.argsort(cols, kind="stable")
    rows, cols, counts = rows[order], cols[order], counts[order]
    starts = np.searchsorted(cols, np.arange(0, vocab + width, width))
    gram = np.zeros((n, n), dtype=np.float64)
    for b in range(starts.size - 1):
        lo, hi = starts[b], starts[b + 1]
        if lo == hi:
            continue
        block = np.zeros((n, width), dtype=np.float64)
        block[rows[lo:hi], cols[lo:hi] - b * width] = counts[lo:hi]
        gram += block @ block.T
    return gram


# -- variation ------------------------------------------------------------------------------------

def initial_population(rng: np.random.Generator, size: int, length: int, pool: int) -> np.ndarray:
    """``size`` texts of ``length`` distinct pool indices each, in random order (§3.6.1)."""
    return np.argsort(rng.random((size, pool)), axis=1)[:, :length].astype(np.int64)


def crossover(a: np.ndarray, b: np.ndarray, cut: int) -> tuple[np.ndarray, np.ndarray]:
    """Single-cut crossover: ``a[:cut] + b[cut:]`` and ``b[:cut] + a[cut:]``."""
    return np.concatenate([a[:cut], b[cut:]]), np.concatenate([b[:cut], a[cut:]])


def mutate(genes: np.ndarray, positions: np.ndarray, replacements: np.ndarray) -> np.ndarray:
    """A copy of ``genes`` with ``genes[positions] = replacements``."""
    out = genes.copy()
    out[positions] = replacements
    return out


def _offspring(rng: np.random.Generator, pop: np.ndarray, count: int, pool: int, config: TrainConfig) -> np.ndarray:
    m, length = pop.shape
    pairs = (count + 1) // 2
    first = rng.integers(0, m, size=pairs)
    second = (first + rng.integers(1, m, size=pairs)) % m  # a different parent
    cuts = rng.integers(1, length, size=pairs) if length > 1 else np.ones(pairs, dtype=np.int64)
    children = np.empty((2 * pairs, length), dtype=np.int64)
    for i in range(pairs):
        children[2 * i], children[2 * i + 1] = crossover(pop[first[i]], pop[second[i]], int(cuts[i]))
    children = children[:count]
    k = int(round(config.mutation * length))
    if k:
        mutated = np.flatnonzero(rng.random(count) < config.mutation_rate)
        for c in mutated:
            positions = rng.choice(length, size=k, replace=False)
            children[c] = mutate(children[c], positions, rng.integers(0, pool, size=k))
    return children


# -- the loop -------------------------------------------------------------------------------------

@dataclass
class Generation:
    number: int
    best: float
    mean: float
    seconds: float


@dataclass
class TrainResult:
    reference: ReferenceText
    fitness_mae: float
    evaluation_mae: float
    tfidf_fitness_mae: float
    tfidf_evaluation_mae: float
    tfidf: ReferenceText
    history: list[Generation] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def seconds_per_generation(self) -> float:
        gens = [g for g in self.history if g.number > 0]
        return sum(g.seconds for g in gens) / len(gens) if gens else 0.0


def reference_from_genes(pool: np.ndarray, genes: np.ndarray, partitions: int,
                         provenance: dict | None = None) -> ReferenceText:
    return ReferenceText([gram_text(g) for g in np.asarray(pool)[genes]], partitions, provenance=provenance)


def mae_of_reference(reference: ReferenceText, doc_counts: Sequence[Counts]) -> float:
    """Eq. 1 of an existing reference text over all pairs of ``doc_counts``."""
    from ..mrc import _gram_id

    ids = np.array([_gram_id(g) for g in reference.grams], dtype=np.uint64)
    pool, genes = np.unique(ids, return_inverse=True)
    pairs = PairSet(doc_counts, pool)
    return float(pairs.mae(genes.reshape(1, -1), reference.partitions)[0])


def split(n: int, holdout: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the fitness part and of the evaluation part (at least one document each)."""
    order = rng.permutation(n)
    n_eval = min(max(1, int(round(holdout * n))), n - 1)
    return np.sort(order[n_eval:]), np.sort(order[:n_eval])


def train_reference(documents: Sequence[str], config: TrainConfig = TrainConfig(), *,
                    corpus: str = "", provenance: dict | None = None,
                    on_generation: Callable[[Generation, int], None] | None = None) -> TrainResult:
    """Train a reference text on ``documents``; see the module docstring.

    ``on_generation(stats, total)`` is called after the initial population (number 0)
    and after every generation. ``provenance`` entries are added to the text's own.
    """
    config.check()
    start = time.perf_counter()
    counts = [gram_counts(d) for d in documents]
    counts = [c for c in counts if c[0].size]
    if len(counts) < 4:
        raise ValueError(f"need at least 4 documents with text to train on (got {len(counts)})")
    rng = np.random.default_rng(config.seed)
    fit_idx, eval_idx = split(len(counts), config.holdout, rng)
    fit_docs = [counts[i] for i in fit_idx]
    pool = tfidf_pool(fit_docs, config.pool)
    if pool.size < config.length:
        raise ValueError(f"the fitness part has only {pool.size} usable 3-grams, fewer than the "
                         f"reference length {config.length}: use a larger corpus or a shorter text")
    sample = np.sort(rng.choice(len(fit_docs), size=min(config.sample, len(fit_docs)), replace=False))
    fit_pairs = PairSet([fit_docs[i] for i in sample], pool)
    eval_sample = np.sort(rng.choice(eval_idx.size, size=min(config.eval_sample, eval_idx.size), replace=False))
    eval_docs = [counts[eval_idx[i]] for i in eval_sample]

    P, L, M = config.partitions, config.length, config.population
    t0 = time.perf_counter()
    pop = initial_population(rng, M, L, pool.size)
    if config.tfidf_start:
        pop[-1] = np.arange(L)  # the tf-idf-only text competes too: the result is never worse on the fitness part
    fit = fit_pairs.mae(pop, P)
    order = np.argsort(fit, kind="stable")
    pop, fit = pop[order], fit[order]
    history = [Generation(0, float(fit[0]), float(fit.mean()), time.perf_counter() - t0)]
    if on_generation:
        on_generation(history[-1], config.generations)
    for g in range(1, config.generations + 1):
        if config.target is not None and fit[0] <= config.target:
            break
        t0 = time.perf_counter()
        children = _offspring(rng, pop, M, pool.size, config)
        child_fit = fit_pairs.mae(children, P)
        both = np.concatenate([pop, children])
        both_fit = np.concatenate([fit, child_fit])
        keep = np.argsort(both_fit, kind="stable")[:M]
        pop, fit = both[keep], both_fit[keep]
        history.append(Generation(g, float(fit[0]), float(fit.mean()), time.perf_counter() - t0))
        if on_generation:
            on_generation(history[-1], config.generations)

    best = pop[0]
    tfidf_genes = np.arange(L, dtype=np.int64)
    eval_pairs = PairSet(eval_docs, pool) if len(eval_docs) >= 2 else None
    tfidf_fit = float(fit_pairs.mae(tfidf_genes, P)[0])
    ev, tfidf_ev = (float(x) for x in eval_pairs.mae(np.stack([best, tfidf_genes]), P)) if eval_pairs else (math.nan,) * 2
    params = asdict(config)
    seed = params.pop("seed")
    prov = {
        "method": "genetic algorithm (seed 000 section 3.6)",
        "corpus": corpus,
        "fitness": "Eq. 1: mean |multireference cosine - full 3-gram cosine| over pairs of sampled documents",
        "documents": len(counts),
        "fitness_documents": int(fit_idx.size),
        "evaluation_documents": int(eval_idx.size),
        "fitness_pairs": int(fit_pairs.pairs),
        "evaluation_pairs": int(eval_pairs.pairs) if eval_pairs else 0,
        "parameters": params,
        "seed": seed,
        "generations_run": len(history) - 1,
        "fitness_mae": round(float(fit[0]), 6),
        "evaluation_mae": round(ev, 6),
        "tfidf_fitness_mae": round(tfidf_fit, 6),
        "tfidf_evaluation_mae": round(tfidf_ev, 6),
        "best_mae_by_generation": [round(h.best, 6) for h in history],
    }
    prov.update(provenance or {})
    ref = reference_from_genes(pool, best, P, prov)
    tfidf = reference_from_genes(pool, tfidf_genes, P, {"method": "tfidf", "corpus": corpus,
                                                          "documents": int(fit_idx.size)})
    return TrainResult(ref, float(fit[0]), ev, tfidf_fit, tfidf_ev, tfidf, history, time.perf_counter() - start)
