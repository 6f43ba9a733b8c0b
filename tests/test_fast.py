"""The C module dedup._fast (dedup/_fast.c) gives, bit for bit, what the numpy code it replaced gave
(issue 14 item 3): that code is kept here (or stays in its module as the reference: ``shingle_hashes``,
``gram_counts`` + ``signature_of_counts``) and compared on every goldset-dev page and on hypothesis inputs.
The extension is always built (``make setup``), so there is no runtime fallback to these references."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT
from dedup import _fast
from dedup.bits import run_starts
from dedup.deduplicator import containment_many
from dedup.features import Featurizer
from dedup.mrc import default_reference, gram_counts
from dedup.page import parse_page
from dedup.record import POSITION_LEVELS, SKETCH, sketch_keys, term_keys
from dedup.reducer import ComparisonReducer
from dedup.simhash import _pack, _votes, hash_terms, shingle_hashes, simhash
from dedup.tdw import PRESETS, field_texts, weights_by_field
from dedup.text import Normalizer, tokenize

GOLDSET = ROOT.parent / "shared" / "data" / "goldset-dev"
U64 = st.integers(0, 2**64 - 1)


def former_sketch(body_hashes: np.ndarray, n: int, k: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Featurizer.fingerprint's shingle sketch as it was: shingle hashes, a stable argsort, runs."""
    sequence = shingle_hashes(body_hashes, n)
    order = np.argsort(sequence, kind="stable")
    shingles, first = sequence[order], order
    starts = np.zeros(0, dtype=np.intp)
    if shingles.size:
        starts = run_starts(shingles)
        shingles, first = shingles[starts][:k], first[starts][:k]
    positions = (first * POSITION_LEVELS // max(1, sequence.size)).astype(np.uint8)
    return shingles, positions, int(starts.size) if sequence.size else 0


def c_sketch(body_hashes: np.ndarray, n: int, k: int) -> tuple[np.ndarray, np.ndarray, int]:
    sketch, positions, distinct = _fast.shingle_sketch(body_hashes, n, k)
    return np.frombuffer(sketch, dtype=np.uint64), np.frombuffer(positions, dtype=np.uint8), distinct


def former_simhash(hashes: np.ndarray, weights: np.ndarray) -> int:
    return int(_pack(np.asarray(weights, dtype=np.float32) @ _votes(hashes))[0]) if hashes.size else 0


def former_containment_many(a, a_total, bs, b_totals, *, min_size=10):
    """dedup.deduplicator.containment_many as it was (numpy: one binary search of all candidates' keys)."""
    n = len(bs)
    out = [(0.0, 0.0)] * n
    sizes = [b.size for b in bs]
    live = [j for j, size in enumerate(sizes) if size]
    if a.size == 0 or not live:
        return out
    if len(live) < n:
        bs, sizes, b_totals = [bs[j] for j in live], [sizes[j] for j in live], [b_totals[j] for j in live]
    joined = np.concatenate(bs)
    starts = np.cumsum(sizes) - sizes
    pos = a.searchsorted(joined)
    pos[pos == a.size] = a.size - 1
    shared = np.add.reduceat(a[pos] == joined, starts, dtype=np.intp).tolist()
    b_kept = np.add.reduceat(joined <= a[-1], starts, dtype=np.intp).tolist() if a_total > a.size else sizes
    b_cut = [t > size for t, size in zip(b_totals, sizes)]
    ends = (starts + sizes - 1)[np.array(b_cut)] if any(b_cut) else starts[:0]
    a_kept = iter(a.searchsorted(joined[ends], "right").tolist())
    for i, j in enumerate(live):
        na = next(a_kept) if b_cut[i] else a.size
        nb = b_kept[i]
        if na == 0 or nb == 0:
            continue
        inter = shared[i]
        resemblance = inter / (na + nb - inter)
        if min(a_total, b_totals[i]) < min_size:
            out[j] = (resemblance, resemblance)
        else:
            out[j] = (inter / min(na, nb), resemblance)
    return out


def former_sums(hashes: np.ndarray, token_weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """dedup.tdw.weights_by_field's numpy sums for exact weights: one sort by term hash, each run's weights
    added."""
    order = hashes.argsort()
    hashes = hashes[order]
    starts = run_starts(hashes)
    total = np.add.reduceat(token_weights[order], starts)
    keep = total > 0
    return hashes[starts][keep], total[keep].astype(np.float32)


def former_body_hashes(normalizer, tokens: list[str]) -> np.ndarray:
    return hash_terms(list(filter(None, normalizer.term_list(tokens))))


def former_sketch_keys(hashes, positions, k=None):
    """dedup.record.sketch_keys as it was (with positions): keys, a stable sort when unsorted, runs' minima."""
    hashes = np.asarray(hashes if k is None else np.asarray(hashes)[:k])
    positions = np.asarray(positions, dtype=np.uint8)[:hashes.size]
    keys = term_keys(hashes)
    if not keys.size:
        return keys, np.zeros(0, dtype=np.uint8)
    if keys.size > 1 and not (keys[1:] >= keys[:-1]).all():
        order = np.argsort(keys, kind="stable")
        keys, positions = keys[order], positions[order]
    starts = run_starts(keys)
    return keys[starts], np.minimum.reduceat(positions, starts).astype(np.uint8)


def former_prefix_positional_many(red, r, samples, sizes):
    """ComparisonReducer.prefix_positional_ok_sampled_many as it was (numpy: one binary search of all)."""
    n = len(samples)
    out = [False] * n
    if r.size == 0 or not n:
        return out
    pr = r[: red.prefix_length(r.size)]
    rn, factor = r.size, red.jaccard / (1.0 + red.jaccard)
    full = [s.size >= size for s, size in zip(samples, sizes)]
    whole = [s.size if f else size for s, size, f in zip(samples, sizes, full)]
    prefixes = [s[: red.prefix_length(w)] for s, w in zip(samples, whole)]
    lengths = [p.size for p in prefixes]
    first = {}
    if pr.size and sum(lengths):
        joined = np.concatenate(prefixes)
        pos = np.minimum(pr.searchsorted(joined), pr.size - 1)
        hits = (pr[pos] == joined).nonzero()[0]
        if hits.size:
            ends = np.cumsum(lengths)
            seg = ends.searchsorted(hits, "right")
            firsts = run_starts(seg)
            starts = (ends - lengths).tolist()
            for j, h, p in zip(seg[firsts].tolist(), hits[firsts].tolist(), pos[hits[firsts]].tolist()):
                first[j] = (p, h - starts[j])
    for j in range(n):
        w = whole[j]
        if w == 0:
            continue
        needed = factor * (rn + w)
        if j in first:
            p, q = first[j]
            out[j] = 1 + min(rn - p - 1, w - q - 1) >= needed
        elif not full[j] and lengths[j] >= samples[j].size:
            k = samples[j].size
            after = int(pr.searchsorted(samples[j][-1], "right"))
            out[j] = after < pr.size and 1 + min(rn - after - 1, w - k - 1) >= needed
    return out


def same_array(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.fixture(scope="module")
def featurizer() -> Featurizer:
    return Featurizer()


@pytest.mark.goldset
@pytest.mark.skipif(not GOLDSET.is_dir(), reason=f"Gold Set not found at {GOLDSET}")
def test_every_goldset_dev_page_gets_the_former_sketch_simhash_and_signature(featurizer):
    paths = sorted(p for p in GOLDSET.rglob("*") if p.is_file() and p.suffix in (".html", ".htm"))
    assert len(paths) > 1000
    ref = featurizer.reference
    non_ascii = 0
    for path in paths:
        page = parse_page(path.read_bytes(), f"http://gold.invalid/{path.name}", extractor="native")
        terms = featurizer.terms(page)
        f = featurizer.fingerprint(page, terms)
        tokens = tokenize("\n".join(page.sentences))
        assert same_array(terms.body_hashes, former_body_hashes(featurizer.normalizer, tokens))
        # the numpy sums field by field that term_weights ran before its C path, and runs for other weights
        want = weights_by_field(field_texts(page), featurizer.normalizer, featurizer.weights, None, terms.body_hashes)
        assert same_array(terms.tdw.hashes, want.hashes) and same_array(terms.tdw.weights, want.weights)
        want_shingles, want_positions, want_count = former_sketch(terms.body_hashes, featurizer.shingle,
                                                                  featurizer.sketch)
        assert same_array(f.shingles, want_shingles) and same_array(f.positions, want_positions)
        assert f.shingle_count == want_count
        for k in (None, SKETCH):  # the query's keys and the record's
            got_keys, want_keys = sketch_keys(f.shingles, f.positions, k), former_sketch_keys(f.shingles, f.positions, k)
            assert same_array(got_keys[0], want_keys[0]) and same_array(got_keys[1], want_keys[1])
        assert f.simhash == former_simhash(terms.tdw.hashes, terms.tdw.weights)
        assert _fast.simhash(terms.tdw.hashes, terms.tdw.weights) is not None  # the presets' sums are exact
        assert same_array(f.signature.vector, ref.signature_of_counts(*gram_counts(page.text)).vector)
        if page.text.strip():  # and it was C's, not signature()'s numpy fallback
            folded = page.text if page.text.isascii() else " ".join(page.text.lower().split())
            assert _fast.mrc_signature(folded, ref._unique, ref._rows, ref._cols, ref._values,
                                       ref._part_norm) is not None
        non_ascii += not page.text.isascii()
    assert non_ascii > 100  # both of mrc_signature's tables were compared


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([0, 1, 2**63, 2**64 - 1, 12345]) | U64, max_size=60), st.integers(1, 8),
       st.integers(0, 70))
def test_shingle_sketch_is_the_former_numpy_steps(hashes, n, k):
    h = np.array(hashes, dtype=np.uint64)
    got, want = c_sketch(h, n, k), former_sketch(h, n, k)
    assert same_array(got[0], want[0]) and same_array(got[1], want[1]) and got[2] == want[2]


def test_shingle_sketch_repeats_and_bad_input():
    h = hash_terms(["a", "b", "c", "d", "e"] * 40)  # 5 distinct shingles, each repeated: first positions kept
    got, want = c_sketch(h, 5, 256), former_sketch(h, 5, 256)
    assert got[2] == want[2] == 5 and same_array(got[0], want[0]) and same_array(got[1], want[1])
    with pytest.raises(ValueError):
        _fast.shingle_sketch(h, 0, 10)
    with pytest.raises(TypeError):
        _fast.shingle_sketch(h.astype(np.uint32), 5, 10)


WEIGHTS = st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 2.5, 0.0, 1 / 1024, 2.0**20, 2.0**-40])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(U64, WEIGHTS | st.floats(0, 1e6, width=32)), max_size=80))
def test_simhash_is_blas_product_or_declines(pairs):
    h = np.array([p[0] for p in pairs], dtype=np.uint64)
    w = np.array([p[1] for p in pairs], dtype=np.float32)
    got = _fast.simhash(h, w)
    if got is not None:  # C answers only where every sum is exact: then it is the product's answer
        assert got == former_simhash(h, w)
    assert simhash(h, w) == former_simhash(h, w)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(U64, WEIGHTS), max_size=80))
def test_simhash_answers_for_exact_weights(pairs):
    h = np.array([p[0] for p in pairs], dtype=np.uint64)
    w = np.array([p[1] for p in pairs], dtype=np.float32)
    total, step = float(np.abs(w.astype(np.float64)).sum()), min((x for x in w if x), default=1.0)
    got = _fast.simhash(h, w)
    if total < 2.0**24 * 2.0**np.floor(np.log2(step)) and float(step) > 2.0**-60:
        assert got == former_simhash(h, w)


def test_simhash_ties_and_bad_weights():
    h = np.array([0x0F, 0xF0], dtype=np.uint64)
    assert _fast.simhash(h, np.array([1.0, 1.0], dtype=np.float32)) == former_simhash(h, np.ones(2))  # 0 votes
    assert _fast.simhash(h, np.array([np.nan, 1.0], dtype=np.float32)) is None
    assert _fast.simhash(h, np.array([np.inf, 1.0], dtype=np.float32)) is None
    assert _fast.simhash(h, np.array([0.1, 0.3], dtype=np.float32)) is None  # 0.1 needs 27 fraction bits
    with pytest.raises(ValueError, match="one weight per feature"):
        _fast.simhash(h, np.ones(3, dtype=np.float32))


# whitespace str.split folds (ASCII's \x1c-\x1f included, and beyond ASCII), letters lower() changes in
# length (İ), Latin-1, the BMP, astral characters
TEXT = st.text(alphabet=st.sampled_from(list("abcXYZ 019'.\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0")
                                        + ["é", "É", "İ", "ß", "\u2009", "\u3000", "中", "文", "😀", "\u2028"]),
               max_size=200)


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_mrc_signature_is_the_former_counts(text):
    ref = default_reference()
    assert same_array(ref.signature(text).vector, ref.signature_of_counts(*gram_counts(text)).vector)


def test_mrc_signature_edges():
    ref = default_reference()
    for text in ("", "ab", " a b ", "the", "THE the\x1cthe", "é" * 50, "😀😀😀 the end", "x" * 10_000):
        assert same_array(ref.signature(text).vector, ref.signature_of_counts(*gram_counts(text)).vector), text
    with pytest.raises(UnicodeEncodeError):  # a lone surrogate: the former path, which refuses it
        ref.signature("the \ud800 end")


KEYS = st.lists(st.integers(0, 400), max_size=60, unique=True).map(lambda v: np.array(sorted(v), dtype=np.uint32))


@settings(max_examples=300, deadline=None)
@given(KEYS, st.integers(0, 100), st.lists(st.tuples(KEYS, st.integers(0, 100)), max_size=8), st.integers(1, 20))
def test_containment_many_is_the_former_numpy(a, extra, candidates, min_size):
    bs = [b for b, _ in candidates]
    totals = [b.size + e for b, e in candidates]
    want = former_containment_many(a, a.size + extra, bs, totals, min_size=min_size)
    assert containment_many(a, a.size + extra, bs, totals, min_size=min_size) == want
    # 64-bit hashes are read as well (dedup.deduplicator.containment of two full sketches)
    wide = [b.astype(np.uint64) for b in bs]
    assert containment_many(a.astype(np.uint64), a.size + extra, wide, totals, min_size=min_size) == want


def test_containment_many_refuses_signed_keys():
    with pytest.raises(TypeError):
        containment_many(np.arange(5), 5, [np.arange(3, dtype=np.uint32)], [3])


WORDS = st.sampled_from(["the", "a", "and", "running", "ran", "geese", "mice", "data", "été", "中文", "x1",
                         "don't", "it's", "ibm", "zzzq", "", "better", "was"])


@settings(max_examples=200, deadline=None)
@given(st.lists(WORDS, max_size=60), st.lists(WORDS, max_size=20))
def test_term_hashes_are_the_terms_hashes(tokens, more):
    norm = Normalizer()
    want = former_body_hashes(norm, tokens)
    assert same_array(norm.term_hashes(tokens), want)  # every token a miss first
    assert isinstance(_fast.term_hashes(tokens, norm._hashes), bytearray)  # then C finds every one
    assert same_array(norm.term_hashes(tokens), want)  # then all cached
    assert same_array(norm.term_hashes(tokens + more), former_body_hashes(norm, tokens + more))


def test_term_hashes_past_the_cache_and_bad_tokens():
    norm = Normalizer()
    norm._hashes.update((f"filler{i}", 1) for i in range(500_000))  # full: nothing more is cached
    tokens = ["the", "geese", "ran", "geese"]
    assert same_array(norm.term_hashes(tokens), former_body_hashes(norm, tokens))
    assert "geese" not in norm._hashes
    with pytest.raises(TypeError):
        _fast.term_hashes(["a", 1], {})
    assert _fast.term_hashes(["a", "b", "a"], {"b": None}) == ["a", "a"]  # the misses, in order


def test_term_hashes_asks_make_for_the_misses_in_one_pass():
    """make(token) gives a miss's hash (None: a stop word, left out), cached while the cache holds fewer than
    cap: a repeated miss is asked once then; past cap it is asked each time and nothing is added."""
    asked = []

    def make(token):
        asked.append(token)
        return None if token == "the" else len(token)

    cache = {"b": 7}
    got = _fast.term_hashes(["aa", "b", "the", "aa", "ccc"], cache, make, 10)
    assert np.frombuffer(got, dtype=np.uint64).tolist() == [2, 7, 2, 3]
    assert asked == ["aa", "the", "ccc"] and cache == {"b": 7, "aa": 2, "the": None, "ccc": 3}
    asked.clear()
    full = {"b": 7}
    got = _fast.term_hashes(["aa", "b", "aa"], full, make, 1)
    assert np.frombuffer(got, dtype=np.uint64).tolist() == [2, 7, 2] and asked == ["aa", "aa"] and full == {"b": 7}

    def broken(token):
        raise KeyError(token)

    with pytest.raises(KeyError):
        _fast.term_hashes(["x"], {}, broken, 10)
    with pytest.raises(TypeError):
        _fast.term_hashes(["x"], {}, 3, 10)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from([0, 1, 7, 2**63, 2**64 - 1]) | U64, max_size=40),
                          st.sampled_from(sorted({w for p in PRESETS.values() for w in p.values()}))),
                max_size=6))
def test_tdw_sums_are_the_numpy_sums(parts):
    arrays = [np.array(h, dtype=np.uint64) for h, _ in parts]
    weights = [float(w) for _, w in parts]
    hashes, sums = _fast.tdw_sums(arrays, weights)
    got = np.frombuffer(hashes, dtype=np.uint64), np.frombuffer(sums, dtype=np.float32)
    if not sum(a.size for a in arrays):
        assert got[0].size == got[1].size == 0
        return
    joined = np.concatenate(arrays)
    want = former_sums(joined, np.repeat(np.array(weights), [a.size for a in arrays]))
    assert same_array(got[0], want[0]) and same_array(got[1], want[1])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0, 2**40 - 1, 2**40, 5 * 2**40, 2**64 - 1]) | U64, st.integers(0, 255)),
                max_size=60), st.booleans(), st.none() | st.integers(0, 70))
def test_sketch_keys_are_the_former_numpy(pairs, in_order, k):
    if in_order:
        pairs = sorted(pairs)
    h = np.array([p[0] for p in pairs], dtype=np.uint64)
    pos = np.array([p[1] for p in pairs], dtype=np.uint8)
    got, want = sketch_keys(h, pos, k), former_sketch_keys(h, pos, k)
    assert same_array(got[0], want[0]) and same_array(got[1], want[1])


TERMS = st.lists(st.integers(0, 300), max_size=50, unique=True).map(lambda v: np.array(sorted(v), dtype=np.uint32))


@settings(max_examples=400, deadline=None)
@given(TERMS, st.lists(st.tuples(TERMS, st.integers(0, 60)), max_size=8), st.sampled_from([0.1, 0.2, 0.5, 0.8, 1.0]))
def test_prefix_positional_many_is_the_former_numpy(r, candidates, jaccard):
    red = ComparisonReducer(jaccard)
    # a sample is a set's smallest terms: of a set of its size (whole) or more; an empty set has no sample
    samples = [s for s, _ in candidates]
    sizes = [s.size + extra if s.size else 0 for s, extra in candidates]
    want = former_prefix_positional_many(red, r, samples, sizes)
    assert red.prefix_positional_ok_sampled_many(r, samples, sizes) == want
