"""Near-duplicate detection for crawled web pages.

The algorithms: page features from HTML (:mod:`dedup.page`), normalisation
(:mod:`dedup.text`), tag-weighted term weights (:mod:`dedup.tdw`), simhash
(:mod:`dedup.simhash`), bit-permutation tables (:mod:`dedup.permtables`),
multireference cosine (:mod:`dedup.mrc`), the comparison reducer
(:mod:`dedup.reducer`) and the decision (:mod:`dedup.deduplicator`).
This package imports neither scrapy nor elasticsearch.
"""
from __future__ import annotations

import logging

try:  # the two C modules (setup.py): a source checkout must be built before use
    from . import _fast, _scan  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised by hand on an unbuilt checkout
    raise ImportError(f"dedup's C modules (dedup/_scan.c, dedup/_fast.c) are not built ({exc}): run `make setup`, "
                      "or `pip install -e .` with gcc and the Python headers installed") from exc

from .deduplicator import ALGORITHM, STATUSES, DedupConfig, Deduplicator, Verdict
from .features import Features, Featurizer
from .mrc import IncompatibleSignature, ReferenceText, Signature, default_reference
from .page import Page, parse_page
from .permtables import PermutationTables
from .record import Record
from .store import DedupIndex, MemoryIndex

__all__ = [
    "ALGORITHM", "STATUSES", "DedupConfig", "Deduplicator", "Verdict", "Features", "Featurizer",
    "IncompatibleSignature", "ReferenceText", "Signature", "default_reference", "Page", "parse_page",
    "PermutationTables", "Record", "DedupIndex", "MemoryIndex",
]

logging.getLogger(__name__).addHandler(logging.NullHandler())
