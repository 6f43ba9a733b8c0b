"""Training a reference text for the multireference cosine (seed 000 §3.6): a research tool beside
the algorithms. :mod:`~dedup.train.genetic` holds the genetic algorithm; the trained text is used by
:class:`dedup.mrc.ReferenceText`, which never imports this package."""
from __future__ import annotations

from .genetic import (Generation, PairSet, TrainConfig, TrainResult, crossover, initial_population, load_corpus,
                      mae_of_reference, mutate, reference_from_genes, tfidf_pool, train_reference)

__all__ = ["TrainConfig", "PairSet", "load_corpus", "Generation", "TrainResult", "tfidf_pool", "crossover", "mutate",
           "initial_population", "train_reference", "reference_from_genes", "mae_of_reference"]
