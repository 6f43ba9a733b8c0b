"""64-bit Charikar simhash over weighted features, and per-sentence (chunk) simhashes.

Features are hashed with xxh3-64. The bit votes are computed for all features at
once: the hashes are unpacked into an (n, 64) bit matrix and multiplied by the
weights, so there is no per-bit Python loop. Bit ``i`` of the fingerprint is bit
``i`` of the integer (little-endian bit order).

Seed 003 represents a document by one simhash per chunk (sentence) and compares
documents by the chunks they share within a few bits; :func:`chunk_simhashes`
computes those for all sentences in one pass.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import xxhash

from . import _fast

__all__ = ["hash_terms", "simhash", "chunk_simhashes", "shingle_hashes", "bottom_k"]

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLD = np.uint64(0x9E3779B97F4A7C15)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def hash_terms(terms: Sequence[str]) -> np.ndarray:
    """xxh3-64 of each term's UTF-8 bytes, as uint64."""
    # map() over C functions: no Python frame per term (str.encode's default is strict UTF-8)
    return np.fromiter(map(xxhash.xxh3_64_intdigest, map(str.encode, terms)), dtype=np.uint64, count=len(terms))


def _mix_into(x: np.ndarray, tmp: np.ndarray) -> None:
    """splitmix64 finaliser, in place: a bijective avalanche on a uint64 array (``tmp``: scratch of its size)."""
    np.right_shift(x, _S30, out=tmp)
    x ^= tmp
    x *= _M1
    np.right_shift(x, _S27, out=tmp)
    x ^= tmp
    x *= _M2
    np.right_shift(x, _S31, out=tmp)
    x ^= tmp


def shingle_hashes(term_hashes: np.ndarray, n: int = 5) -> np.ndarray:
    """Hashes of the word ``n``-grams of a sequence of term hashes (order-sensitive).

    A text shorter than ``n`` terms gives one shingle of all its terms.
    """
    if n < 1:
        raise ValueError(f"shingle size must be >= 1 (got n={n})")
    h = np.asarray(term_hashes, dtype=np.uint64)
    if h.size == 0:
        return h
    m = max(1, h.size - n + 1)
    # acc = mix(acc * _GOLD + h[j : j + m]) from acc = 0, in place (no new array per operation)
    acc = h[:m].copy()
    tmp = np.empty_like(acc)
    with np.errstate(over="ignore"):
        for j in range(min(n, h.size)):
            if j:
                acc *= _GOLD
                acc += h[j : j + m]
            _mix_into(acc, tmp)
    return acc


def bottom_k(hashes: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` smallest distinct hashes, sorted (a bottom-k sketch of the set)."""
    return np.unique(hashes)[:k]


def _votes(hashes: np.ndarray) -> np.ndarray:
    bits = np.unpackbits(np.ascontiguousarray(hashes, dtype="<u8").view(np.uint8), bitorder="little")
    return bits.reshape(-1, 64).astype(np.float32) * 2.0 - 1.0


def _pack(v: np.ndarray) -> np.ndarray:
    return np.packbits(v > 0, axis=-1, bitorder="little").view("<u8").reshape(-1)


def simhash(hashes: np.ndarray, weights: np.ndarray | None = None) -> int:
    """Charikar simhash of features given by their 64-bit ``hashes`` and ``weights`` (default 1)."""
    hashes = np.asarray(hashes, dtype=np.uint64)
    if hashes.size == 0:
        return 0
    w = np.ones(hashes.size, dtype=np.float32) if weights is None else np.asarray(weights, dtype=np.float32)
    if w.shape != hashes.shape:
        raise ValueError(f"simhash needs one weight per feature (got {w.size} weights, {hashes.size} features)")
    # the votes summed in C when every sum of the weights is exact in float32 (the presets' always are):
    # then in any order the same sums as BLAS's product below, so the same bits (tests/test_fast.py)
    exact = _fast.simhash(np.ascontiguousarray(hashes), np.ascontiguousarray(w))
    return int(_pack(w @ _votes(hashes))[0]) if exact is None else exact


def chunk_simhashes(hashes: np.ndarray, chunk_ids: np.ndarray, n_chunks: int) -> np.ndarray:
    """One unweighted simhash per chunk: ``hashes[i]`` belongs to chunk ``chunk_ids[i]``.

    Empty chunks get fingerprint 0. Returns ``n_chunks`` uint64 values.
    """
    if n_chunks == 0:
        return np.zeros(0, dtype=np.uint64)
    hashes = np.asarray(hashes, dtype=np.uint64)
    ids = np.asarray(chunk_ids, dtype=np.int64).reshape(-1)
    v = np.zeros((n_chunks, 64), dtype=np.int32)
    if hashes.size:
        if ids.size != hashes.size:
            raise ValueError(f"chunk_simhashes needs one chunk id per hash (got {ids.size} ids, {hashes.size} hashes)")
        if ids.size > 1 and np.any(ids[1:] < ids[:-1]):  # group each chunk's hashes together
            order = np.argsort(ids, kind="stable")
            ids, hashes = ids[order], hashes[order]
        # votes are +-1, so a bit's vote sum is 2 * (ones) - (hashes in the chunk), exactly;
        # one reduceat over the runs of equal ids instead of np.add.at's scattered adds
        starts = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1])))
        bits = np.unpackbits(np.ascontiguousarray(hashes, dtype="<u8").view(np.uint8), bitorder="little")
        ones = np.add.reduceat(bits.reshape(-1, 64), starts, axis=0, dtype=np.int32)
        sizes = np.diff(np.append(starts, ids.size)).astype(np.int32)
        v[ids[starts]] = 2 * ones - sizes[:, None]
    return _pack(v)
