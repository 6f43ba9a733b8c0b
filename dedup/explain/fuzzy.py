"""The fuzzy-set IR model of seed 001 (Yerra 2005, section 3.2.2 and chapter 4).

For refined sentences S_i and S_j (lists of words, see :func:`dedup.explain.sentences.refine`):

* word-sentence correlation ``mu(w, S_j) = 1 - prod_{k in S_j} (1 - c_wk)`` (Eq. 3.2),
  with the word-word correlation ``c`` of Eq. 3.1 (:meth:`SentenceTables.correlation`);
* ``Sim(S_i, S_j)`` = mean of ``mu(w, S_j)`` over the distinct words w of S_i (Eq. 3.3);
* ``EQ(S_i, S_j) = 1`` iff ``min(Sim(S_i,S_j), Sim(S_j,S_i)) >= 0.825`` (permission
  threshold) and ``|Sim(S_i,S_j) - Sim(S_j,S_i)| <= 0.15`` (variation threshold) (Eq. 3.4);
* degree of resemblance ``RS(d1, d2)`` = share of d1's sentences equal to some
  sentence of d2 (Eq. 4.1), and the odds ratio ``p / (1 - p)`` with
  ``p = RS(d1,d2) * RS(d2,d1)`` (Eq. 4.3), 100 standing for infinity.

All sentence pairs of two documents are scored at once, in logs (the product of
Eq. 3.2 is a sum of ``log(1 - c)``) and over the non-zero correlations only.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Protocol, Sequence

import numpy as np

__all__ = [
    "PERMISSION",
    "VARIATION",
    "ODDS_INFINITY",
    "Thresholds",
    "Correlation",
    "PairCorrelation",
    "similarity_matrices",
    "sim",
    "eq",
    "resemblance",
    "odds_ratio",
]

PERMISSION = 0.825
VARIATION = 0.15
#: The seed assigns 100 to the odds ratio when the product of resemblances is 1.
ODDS_INFINITY = 100.0
_LOG_FLOOR = np.log(1e-12)  # log(1 - c) for c = 1: keeps 0 * log() finite in the products


@dataclass(frozen=True)
class Thresholds:
    """EQ thresholds (Eq. 3.4): ``permission`` 0.825, ``variation`` 0.15."""

    permission: float = PERMISSION
    variation: float = VARIATION

    def __post_init__(self) -> None:
        if not 0.0 < self.permission <= 1.0:
            raise ValueError(f"permission threshold must be in (0, 1] (got {self.permission})")
        if not 0.0 <= self.variation <= 1.0:
            raise ValueError(f"variation threshold must be in [0, 1] (got {self.variation})")

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


class Correlation(Protocol):
    """Anything giving the ``c_ij`` matrix between two word lists (e.g. :class:`SentenceTables`)."""

    def correlation(self, words_a: Sequence[str], words_b: Sequence[str]) -> np.ndarray: ...


class PairCorrelation:
    """A correlation given as explicit word pairs, e.g. the seed's Tables 3.3 and 3.4.

    Pairs are symmetric; equal words correlate 1; unlisted pairs 0.
    """

    def __init__(self, pairs: dict[tuple[str, str], float]) -> None:
        self.pairs: dict[tuple[str, str], float] = {}
        for (a, b), c in pairs.items():
            if not 0.0 <= c <= 1.0:
                raise ValueError(f"correlation of {a!r} and {b!r} must be in [0, 1] (got {c})")
            self.pairs[(a, b)] = self.pairs[(b, a)] = float(c)

    def correlation(self, words_a: Sequence[str], words_b: Sequence[str]) -> np.ndarray:
        return np.array([[1.0 if a == b else self.pairs.get((a, b), 0.0) for b in words_b] for a in words_a],
                        dtype=np.float64).reshape(len(words_a), len(words_b))


def _postings(sentences: Sequence[Sequence[str]], vocab: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """CSR of word -> sentences holding it: ``(ptr, sentence ids)``, each word's ids ascending."""
    word_ids: list[int] = []
    sent_ids: list[int] = []
    for j, words in enumerate(sentences):
        for w in dict.fromkeys(words):
            word_ids.append(vocab[w])
            sent_ids.append(j)
    w = np.array(word_ids, dtype=np.int64)
    order = np.argsort(w, kind="stable")
    ptr = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(np.bincount(w, minlength=len(vocab)), out=ptr[1:])
    return ptr, np.array(sent_ids, dtype=np.int64)[order]


def _spread(keys_of: np.ndarray, values: np.ndarray, ptr: np.ndarray, ids: np.ndarray,
            other: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Repeat each entry ``(keys_of[e] -> values[e], other[e])`` once per id in ``keys_of[e]``'s posting list:
    ``(posting id, other, value)``."""
    count = ptr[keys_of + 1] - ptr[keys_of]
    rep = np.repeat(np.arange(keys_of.size), count)
    offsets = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    return ids[np.repeat(ptr[keys_of], count) + offsets], other[rep], values[rep]


def _triplets(correlation: Correlation, words_a: list[str],
              words_b: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    sparse = getattr(correlation, "correlation_triplets", None)
    if sparse is not None:
        rows, cols, c = sparse(words_a, words_b)
    else:
        dense = correlation.correlation(words_a, words_b)
        rows, cols = np.nonzero(dense)
        c = dense[rows, cols]
    return rows.astype(np.int64), cols.astype(np.int64), np.clip(np.asarray(c, dtype=np.float64), 0.0, 1.0)


def _directed_sim(rows: np.ndarray, cols: np.ndarray, log_rest: np.ndarray, post_rows: tuple[np.ndarray, np.ndarray],
                  post_cols: tuple[np.ndarray, np.ndarray], n_rows: int, n_cols: int,
                  lengths: np.ndarray) -> np.ndarray:
    """``Sim(x_s, y_t)`` for sentences x (words on ``rows``) against sentences y (words on ``cols``)."""
    # Eq. 3.2 in logs: log prod_{k in y_t} (1 - c_wk) summed per (word w, sentence t), only where non-zero
    t, w, lv = _spread(cols, log_rest, post_cols[0], post_cols[1], rows)
    key = w * n_cols + t
    uniq, inverse = np.unique(key, return_inverse=True)
    mu = 1.0 - np.exp(np.bincount(inverse, weights=lv, minlength=uniq.size))
    # Eq. 3.3: mean of mu over the words of x_s
    s, t2, mv = _spread(uniq // n_cols, mu, post_rows[0], post_rows[1], uniq % n_cols)
    total = np.bincount(s * n_cols + t2, weights=mv, minlength=n_rows * n_cols).reshape(n_rows, n_cols)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.nan_to_num(total / lengths[:, None])


def similarity_matrices(sentences_a: Sequence[Sequence[str]], sentences_b: Sequence[Sequence[str]],
                        correlation: Correlation) -> tuple[np.ndarray, np.ndarray]:
    """``(sim_ab, sim_ba)``, both ``len(a) x len(b)``: ``sim_ab[i, j] = Sim(a_i, b_j)`` and
    ``sim_ba[i, j] = Sim(b_j, a_i)``. A sentence without words has Sim 0 both ways.

    Only the non-zero correlations are visited (a word pair with ``c = 0`` leaves the
    product of Eq. 3.2 unchanged), so the cost follows the correlated word pairs and the
    output, not the product of the two vocabularies.
    """
    na, nb = len(sentences_a), len(sentences_b)
    va = {w: i for i, w in enumerate(dict.fromkeys(w for s in sentences_a for w in s))}
    vb = {w: i for i, w in enumerate(dict.fromkeys(w for s in sentences_b for w in s))}
    if not va or not vb:
        return np.zeros((na, nb)), np.zeros((na, nb))
    rows, cols, c = _triplets(correlation, list(va), list(vb))
    keep = c > 0
    rows, cols, c = rows[keep], cols[keep], c[keep]
    log_rest = np.maximum(np.log1p(-np.minimum(c, 1.0 - 1e-12)), _LOG_FLOOR)  # log(1 - c_ij)
    post_a, post_b = _postings(sentences_a, va), _postings(sentences_b, vb)
    len_a = np.array([len(set(s)) for s in sentences_a], dtype=np.float64)
    len_b = np.array([len(set(s)) for s in sentences_b], dtype=np.float64)
    sim_ab = _directed_sim(rows, cols, log_rest, post_a, post_b, na, nb, len_a)
    sim_ba = _directed_sim(cols, rows, log_rest, post_b, post_a, nb, na, len_b).T
    return np.clip(sim_ab, 0.0, 1.0), np.clip(sim_ba, 0.0, 1.0)


def sim(a: Sequence[str], b: Sequence[str], correlation: Correlation) -> tuple[float, float]:
    """``(Sim(a, b), Sim(b, a))`` of two refined sentences."""
    ab, ba = similarity_matrices([a], [b], correlation)
    return float(ab[0, 0]), float(ba[0, 0])


def eq(sim_ab: np.ndarray | float, sim_ba: np.ndarray | float, thresholds: Thresholds = Thresholds()) -> np.ndarray:
    """EQ (Eq. 3.4), elementwise; a small tolerance keeps the seed's rounded examples on the right side."""
    ab, ba = np.asarray(sim_ab, dtype=np.float64), np.asarray(sim_ba, dtype=np.float64)
    return (np.minimum(ab, ba) >= thresholds.permission - 1e-9) & (np.abs(ab - ba) <= thresholds.variation + 1e-9)


def resemblance(equal: np.ndarray) -> tuple[float, float]:
    """``(RS(a, b), RS(b, a))`` from the EQ matrix (``len(a) x len(b)``).

    Eq. 4.1 sums EQ over all pairs, which exceeds 1 when a sentence equals several; here
    a sentence counts once if it equals any sentence of the other document.
    """
    na, nb = equal.shape
    rs_ab = float(equal.any(axis=1).sum() / na) if na else 0.0
    rs_ba = float(equal.any(axis=0).sum() / nb) if nb else 0.0
    return rs_ab, rs_ba


def odds_ratio(rs_ab: float, rs_ba: float) -> float:
    """``p / (1 - p)`` with ``p = rs_ab * rs_ba`` (Eq. 4.3), capped at 100 (the seed's "infinity")."""
    for name, v in (("rs_ab", rs_ab), ("rs_ba", rs_ba)):
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"degree of resemblance {name} must be in [0, 1] (got {v})")
    p = rs_ab * rs_ba
    if p >= 1.0:
        return ODDS_INFINITY
    return min(p / (1.0 - p), ODDS_INFINITY)
