import math

import numpy as np
import pytest

from dedup.page import Page
from dedup.reducer import ComparisonReducer
from dedup.simhash import hash_terms
from dedup.tdw import PRESETS, TermVector, cosine, resolve_weights, term_weights
from dedup.text import Normalizer

NORM = Normalizer(word_mapping=False)


def _page(**kw):
    return Page(url=kw.pop("url", "http://example.org/a"), **kw)


def _weights(vec: TermVector, term: str) -> float:
    h = hash_terms([term])[0]
    i = np.searchsorted(vec.hashes, h)
    return float(vec.weights[i]) if i < len(vec) and vec.hashes[i] == h else 0.0


def test_weight_is_sum_of_frequency_times_field_weight():
    page = _page(title="Harbour bridge", text="bridge bridge repairs", headings=[(1, "Bridge news")],
                 anchors_same=["bridge"], anchors_other=["bridge"], keywords="bridge", description="x")
    vec = term_weights(page, NORM, resolve_weights("tdw"))
    # title 2 + body 2x1 + h1 2 + same-site anchor 1 + other-site anchor 0.5 + keywords 3
    assert _weights(vec, "bridg") == pytest.approx(2 + 2 + 2 + 1 + 0.5 + 3)
    wwt = term_weights(page, NORM, resolve_weights("wwt"))
    # title 6 + body 2 + h1 5 + anchors 4 + 4; keywords weigh nothing in wwt
    assert _weights(wwt, "bridg") == pytest.approx(6 + 2 + 5 + 4 + 4)


def test_custom_weights_and_validation():
    assert resolve_weights({"body": 2})["title"] == 0.0
    with pytest.raises(ValueError, match="unknown TDW preset 'nope'"):
        resolve_weights("nope")
    with pytest.raises(ValueError, match="unknown TDW fields"):
        resolve_weights({"footer": 1})
    with pytest.raises(ValueError, match=">= 0"):
        resolve_weights({"body": -1})
    assert set(PRESETS) == {"tdw", "wwt"}


def test_cosine_of_term_vectors():
    a = TermVector.from_counts({"x": 1.0, "y": 1.0})
    b = TermVector.from_counts({"x": 1.0})
    assert cosine(a, b) == pytest.approx(1 / math.sqrt(2))
    assert cosine(a, TermVector.from_counts({})) == 0.0


def _set(*terms):
    return np.sort(hash_terms(list(terms)))


def test_prefix_positional_is_safe_for_jaccard():
    rng = np.random.default_rng(1)
    red = ComparisonReducer(jaccard=0.6)
    for _ in range(300):
        u = rng.integers(0, 2**63, 40, dtype=np.uint64)
        r = np.unique(rng.choice(u, rng.integers(5, 40), replace=False))
        s = np.unique(rng.choice(u, rng.integers(5, 40), replace=False))
        jac = np.intersect1d(r, s).size / np.union1d(r, s).size
        if jac >= 0.6:
            assert red.prefix_positional_ok(r, s), "a pair above the threshold was pruned"


def test_prefix_filter_prunes_disjoint_sets():
    red = ComparisonReducer(jaccard=0.5)
    assert not red.prefix_positional_ok(_set("a", "b", "c"), _set("d", "e", "f"))
    assert red.prefix_length(10) == 6


def test_sentence_filter_and_angle():
    red = ComparisonReducer(jaccard=0.8, sentence_tolerance=3)
    assert red.passes(_set("a"), 10, _set("a"), 14) == "sentence_count"
    assert red.passes(_set("a"), 10, _set("a"), 12) is None
    assert red.angle == pytest.approx(36.0)
    ok, angle = red.angle_ok(TermVector.from_counts({"x": 1.0}), TermVector.from_counts({"x": 1.0, "y": 1.0}))
    assert angle == pytest.approx(45.0, abs=1e-4) and not ok


def test_reducer_rejects_bad_parameters():
    with pytest.raises(ValueError, match="got 0"):
        ComparisonReducer(jaccard=0)
    with pytest.raises(ValueError, match="got 0"):
        ComparisonReducer(sentence_tolerance=0)


@pytest.mark.parametrize("jaccard", [0.1, 0.3, 0.6])
def test_sampled_filter_is_never_stricter_and_mostly_exact(jaccard):
    """Against a record's term sample (its smallest terms) and size, the prefix and positional
    filters keep every pair the full sets keep, and decide as the full sets do when the first
    shared term lies within the sample."""
    rng = np.random.default_rng(5)
    red = ComparisonReducer(jaccard=jaccard)
    same = 0
    for _ in range(500):
        u = np.unique(rng.integers(0, 2**24, 400, dtype=np.uint64)).astype(np.uint32)
        r = np.unique(rng.choice(u, rng.integers(5, 300), replace=False))
        s = np.unique(rng.choice(u, rng.integers(5, 300), replace=False))
        k = int(rng.integers(4, 40))
        full, sampled = red.prefix_positional_ok(r, s), red.prefix_positional_ok_sampled(r, s[:k], s.size)
        assert sampled or not full, "the sample pruned a pair the full set keeps"
        common = np.intersect1d(r[: red.prefix_length(r.size)], s[: red.prefix_length(s.size)])
        if common.size and common[0] <= s[min(k, s.size) - 1]:
            assert sampled == full
        same += sampled == full
    assert same > 400
