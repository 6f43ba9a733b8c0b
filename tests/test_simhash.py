import numpy as np
import pytest

from dedup.bits import hamming
from dedup.simhash import bottom_k, chunk_simhashes, hash_terms, shingle_hashes, simhash


def test_pinned_fingerprints():
    # pinned: a change of hashing or bit order shows up here
    assert f"{simhash(hash_terms(['alpha', 'beta', 'gamma'])):016x}" == "2878f7bff79dab52"
    assert [f"{h:016x}" for h in hash_terms(["alpha", "beta"])] == ["be6903b5f625ab5a", "28faff7f97dff641"]
    got = [f"{h:016x}" for h in shingle_hashes(hash_terms(list("abcdef")), 5)]
    assert got == ["c8a38f7085836d86", "4132f0e33b745b9e"]


def test_single_feature_simhash_is_its_hash():
    h = hash_terms(["only"])
    assert simhash(h) == int(h[0])


def test_weights_decide_the_vote():
    a, b = np.array([0x0F], dtype=np.uint64), np.array([0xF0], dtype=np.uint64)
    hashes = np.concatenate([a, b])
    assert simhash(hashes, np.array([3.0, 1.0])) == 0x0F
    assert simhash(hashes, np.array([1.0, 3.0])) == 0xF0


def test_similar_texts_are_close_and_different_far():
    base = "the council approved the new budget for the harbour bridge repairs this spring".split()
    edited = base[:-1] + ["summer"]
    other = "a recipe for bread with flour water salt and yeast baked slowly overnight".split()
    d_near = hamming(simhash(hash_terms(base)), simhash(hash_terms(edited)))[0]
    d_far = hamming(simhash(hash_terms(base)), simhash(hash_terms(other)))[0]
    assert d_near < d_far


def test_weight_count_mismatch_rejected():
    with pytest.raises(ValueError, match="one weight per feature"):
        simhash(hash_terms(["a", "b"]), np.ones(3))


def test_chunk_simhashes_match_per_chunk_simhash():
    chunks = [["a", "b", "c"], ["d"], ["e", "f"]]
    hashes = hash_terms([t for c in chunks for t in c])
    ids = np.repeat(np.arange(3), [len(c) for c in chunks])
    got = chunk_simhashes(hashes, ids, 3)
    assert [int(x) for x in got] == [simhash(hash_terms(c)) for c in chunks]


def test_shingles_order_sensitive_and_short_text():
    h = hash_terms(["a", "b", "c"])
    assert shingle_hashes(h, 5).size == 1
    assert shingle_hashes(h, 2)[0] != shingle_hashes(h[::-1], 2)[-1]
    with pytest.raises(ValueError, match="n=0"):
        shingle_hashes(h, 0)


def test_bottom_k_is_sorted_unique_prefix():
    h = np.array([5, 3, 9, 3, 1], dtype=np.uint64)
    assert bottom_k(h, 3).tolist() == [1, 3, 5]
