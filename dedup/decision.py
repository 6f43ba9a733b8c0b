"""The calibrated decision: is the best candidate a copy? (issue 16, item 2)

The deduplicator computes, for a page's best candidate, the scores listed in :data:`FEATURES`
(shingle containment and resemblance, TDW cosine, multireference cosine, simhash distance,
sentence-chunk share, title similarity, text lengths).  A containment threshold alone (the old
``t2`` rule) misses rewrites whose 5-gram containment is low but whose vocabulary is the same,
and flags a site's listing pages that share half their teasers.  This module combines the scores
in one logistic model::

    p = 1 / (1 + exp(-(bias + sum(weight[f] * x[f]))))     copy when p >= threshold

``x`` are the features below (each a plain transform of one score, so the weights read as "how
much this signal counts").  The weights, bias and threshold are fitted by
``benchmarks/calibrate.py`` (leave-cluster-out cross-validation on goldset-dev, README of that
script) and shipped in ``dedup/data/decision.json`` with a version string that every verdict
carries in its ``thresholds``.  ``decision="containment"`` in :class:`~dedup.deduplicator.DedupConfig`
keeps the old rule (containment >= t2).
"""
from __future__ import annotations

import json
import math
import re
import unicodedata
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Mapping

__all__ = ["FEATURES", "Decision", "features", "title_similarity", "load_decision", "DECISIONS"]

DECISIONS = ("logit", "containment")

#: name -> (score it comes from, what it is). Lengths are in shingles (distinct word 5-grams).
FEATURES: dict[str, str] = {
    "containment": "shingle containment of the smaller page in the other (0..1)",
    "containment_lb": "containment's Wilson lower bound (z 1.64) over the smaller page's shingles, at most the "
                      "sketch's 256: 0.45 of 31 shingles is 0.31, of 250 0.40 (a short page is weak evidence)",
    "resemblance": "shingle Jaccard (0..1)",
    "tdw_cosine": "cosine of the tag-weighted term vectors (0..1)",
    "mrc": "multireference cosine of the character signatures (0..1; 0 when not comparable)",
    "hamming": "simhash distance / 64 (0..1; low is close)",
    "chunks": "share of the shorter page's sentence simhashes found in the other (0..1)",
    "title": "Jaccard of the two titles' words (0..1)",
    "short": "log10 of the smaller page's shingle count (a short page is weak evidence)",
    "ratio": "smaller / larger shingle count (0..1; a truncated copy is low)",
    "spread": "how scattered the shared text is over the smaller page: runs of shared sketch keys in page order "
              "against as many hits at random (0: one block, boilerplate or a template line; 1: as scattered as "
              "chance, a rewrite; 0 when the record has no positions), dedup.spread",
    "listing": "the larger share of list items of the two pages, times (1 - containment): the unshared part "
               "of a listing (archive pages k and k+1 share half their teasers, and are not copies)",
}

_WORD = re.compile(r"\w+", re.UNICODE)


def title_similarity(a: str, b: str) -> float:
    """Jaccard of the case-folded word sets of two titles (0.0 when either is empty)."""
    wa = set(_WORD.findall(unicodedata.normalize("NFKC", a).casefold()))
    wb = set(_WORD.findall(unicodedata.normalize("NFKC", b).casefold()))
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


#: shingle hashes kept per page (DedupConfig.sketch): containment is measured on at most this many
SKETCH = 256


def wilson_lower(p: float, n: int, z: float = 1.64) -> float:
    """Wilson score lower bound of a proportion ``p`` measured on ``n`` items (0.0 when n is 0)."""
    if n <= 0:
        return 0.0
    z2 = z * z
    centre = p + z2 / (2 * n)
    margin = z * math.sqrt(max(0.0, p * (1 - p) / n + z2 / (4 * n * n)))
    return max(0.0, (centre - margin) / (1 + z2 / n))


def features(scores: Mapping[str, Any]) -> dict[str, float]:
    """The model's inputs from a verdict's ``scores`` (as :meth:`Deduplicator._scores` makes them)."""
    shingles = scores.get("shingles") or [0, 0]
    small, large = min(shingles), max(shingles)
    c = float(scores.get("containment") or 0.0)
    return {
        "containment": c,
        "containment_lb": wilson_lower(c, min(small, SKETCH)),
        "resemblance": float(scores.get("resemblance") or 0.0),
        "tdw_cosine": float(scores.get("tdw_cosine") or 0.0),
        "mrc": float(scores.get("mrc") or 0.0),
        "hamming": float(scores.get("hamming") or 0) / 64.0,
        "chunks": float(scores.get("chunks") or 0.0),
        "title": float(scores.get("title") or 0.0),
        "short": math.log10(1 + small),
        "ratio": small / large if large else 0.0,
        "listing": float(scores.get("listing") or 0.0) * (1.0 - float(scores.get("containment") or 0.0)),
        "spread": float(scores.get("spread") or 0.0),
    }


@dataclass(frozen=True)
class Decision:
    """A fitted logistic decision. ``weights``: feature -> weight; ``threshold``: on p."""

    version: str
    weights: dict[str, float]
    bias: float
    threshold: float
    fitted: dict[str, Any] = field(default_factory=dict)  # how it was chosen (data, CV figures)

    def __post_init__(self) -> None:
        unknown = set(self.weights) - set(FEATURES)
        if unknown:
            raise ValueError(f"decision {self.version!r} weighs unknown features {sorted(unknown)}; "
                             f"known: {', '.join(FEATURES)}")
        if not 0.0 < self.threshold < 1.0:
            raise ValueError(f"decision threshold must be in (0, 1) (got {self.threshold})")

    def terms(self, scores: Mapping[str, Any]) -> dict[str, float]:
        """Each feature's contribution ``weight * x`` to the log-odds."""
        return self._terms(features(scores))

    def _terms(self, x: Mapping[str, float]) -> dict[str, float]:
        return {name: w * x[name] for name, w in self.weights.items()}

    def probability(self, scores: Mapping[str, Any]) -> float:
        return self._probability(self.terms(scores))

    def _probability(self, terms: Mapping[str, float]) -> float:
        z = self.bias + sum(terms.values())
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

    def explain(self, scores: Mapping[str, Any]) -> dict[str, Any]:
        """``{"p", "threshold", "copy", "signals"}``: the probability, the call, and the three features that
        moved the log-odds most (name, value, contribution), for the verdict's readers. The features are
        read from ``scores`` once (probability and terms would each read them again)."""
        x = features(scores)
        terms = self._terms(x)
        p = self._probability(terms)
        top = sorted(terms, key=lambda k: -abs(terms[k]))[:3]
        return {"p": round(p, 4), "threshold": self.threshold, "copy": p >= self.threshold,
                "signals": [f"{k} {x[k]:.3g} ({terms[k]:+.2f})" for k in top]}

    def thresholds(self) -> dict[str, Any]:
        """What a verdict's ``thresholds`` records of this decision: its version, which names the
        fitted numbers (weights, bias, threshold; kept in ``dedup/data/decision.json``). The numbers stay
        out: every dropped-log line carries the thresholds, and must stay smaller than the page."""
        return {"decision": self.version}

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "weights": self.weights, "bias": self.bias,
                "threshold": self.threshold, "fitted": self.fitted}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Decision":
        return cls(str(data["version"]), {k: float(v) for k, v in data["weights"].items()}, float(data["bias"]),
                   float(data["threshold"]), dict(data.get("fitted") or {}))


def load_decision(path: str | None = None) -> Decision:
    """The shipped decision (``dedup/data/decision.json``), or the one in ``path``."""
    if path:
        with open(path, encoding="utf-8") as fh:
            return Decision.from_dict(json.load(fh))
    text = resources.files("dedup").joinpath("data/decision.json").read_text(encoding="utf-8")
    return Decision.from_dict(json.loads(text))
