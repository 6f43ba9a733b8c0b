"""Permuted simhash tables: every stored fingerprint within Hamming distance k of a query.

Manku, Jain & Das Sarma, "Detecting near-duplicates for web crawling" (WWW 2007),
section 3.  The f = 64 bits are split into ``blocks`` contiguous blocks (sizes as equal
as possible, the larger ones at the top).  Two fingerprints at distance <= k differ in at
most k blocks, so they agree on at least ``blocks - k`` whole blocks (pigeonhole).  There
is one table per choice of ``blocks - k`` blocks, C(blocks, k) tables in all; a table's
key is the fingerprint with the chosen blocks moved to the top bits (in their original
order, the other blocks following), a bit permutation.  In the table whose chosen blocks
are the ones the pair agrees on, both keys start with the same P-bit prefix, P being the
total size of the chosen blocks.  A query therefore binary-searches, in every table, the
range of keys sharing its prefix and checks the Hamming distance of those candidates
(the distance is invariant under a bit permutation, so permuted keys are compared as is).
Nothing within k is missed and nothing farther is returned.

Cost: a random stored fingerprint shares a P-bit prefix with the query with probability
2**-P, so N stored fingerprints give about N / 2**P candidates per table (k=3, blocks=6:
P >= 31, about 0.005 per table at N = 10M).  More blocks mean longer prefixes but more
tables, and every table holds every fingerprint (16 bytes per entry and table).

The "rotate the fingerprint by one bit at a time, sort each rotation, compare neighbours"
scheme found in simpler write-ups is a special case of the same idea (sorted tables of
permuted fingerprints, rotations being permutations), but looking only at sorted neighbours
gives no guarantee; choosing the permutations from blocks as above and scanning the whole
prefix range is what makes the search exact.

Storage, per table: a large sorted run ("main") and a smaller sorted run ("delta") of
uint64 keys with parallel int64 doc ids; plus one unsorted append buffer of raw
fingerprints shared by all tables and scanned by brute force.  ``add`` appends to the
buffer; a full buffer (``buffer_size``) is sorted per table and merged into delta, and
delta is merged into main once it exceeds sqrt(2 * buffer_size * len(main)), which
balances the two O(length) merge copies: a few microseconds per add, amortised, at 10M
instead of copying every table in full every ``buffer_size`` adds.  The price is one long
merge (about a second per 10M entries and 20 tables) each time delta reaches main.
``remove`` tombstones an entry (its doc id becomes -1, so doc ids must be >= 0); the
tombstone is dropped when its run is next merged.

Sharding by key prefix: with ``shard_bits = s``, table t's entry for a fingerprint lives
in shard number "top s bits of its table-t key" (see ``shard_of``).  Every candidate for a
query in table t shares the query's P >= s bit prefix, hence its shard, so a query visits
exactly one shard per table and the union over those shards equals the unsharded answer.
A ``TableShard`` holds, for every table, the entries whose key starts with its index,
plus its own buffer; it is a plain object of numpy arrays (picklable) that could live in
another process.  ``PermutationTables(shard_bits=s)`` keeps its shards in a dict (created
on first use) and routes adds, removes and queries; ``split()`` hands the shards out,
``TableShard(..., index=j)`` builds one directly from the full stream (it keeps its own
slice), and ``query_shards(shards, fp)`` is the fan-out-and-merge a coordinator runs.

Not thread-safe.  No scrapy/elasticsearch imports here: ``keys`` gives strings that an
external store can index instead (one keyword per table).
"""
from __future__ import annotations

import math
from functools import lru_cache
from itertools import combinations
from typing import Mapping, Sequence

import numpy as np

from .bits import MASK64, hamming, to_uint64

__all__ = ["PermutationTables", "TableShard", "query_shards"]

_U64 = np.uint64
_EMPTY_KEYS = np.empty(0, dtype=np.uint64)
_EMPTY_IDS = np.empty(0, dtype=np.int64)
_MAX_TABLES = 10_000


class _Layout:
    """Block sizes and the per-table bit permutation (immutable, shared)."""

    def __init__(self, k: int, blocks: int):
        self.k, self.blocks = k, blocks
        base, extra = divmod(64, blocks)
        self.sizes = [base + 1] * extra + [base] * (blocks - extra)
        # block b occupies bits [lows[b], lows[b] + sizes[b]) of the fingerprint, block 0 at the top
        lows = [64 - sum(self.sizes[: b + 1]) for b in range(blocks)]
        self.tables = list(combinations(range(blocks), blocks - k))
        dst = np.zeros((len(self.tables), blocks), dtype=_U64)
        prefix_bits = []
        for t, chosen in enumerate(self.tables):
            order = list(chosen) + [b for b in range(blocks) if b not in chosen]
            top = 64
            for b in order:
                top -= self.sizes[b]
                dst[t, b] = top  # block b lands at bit `top` of table t's key
            prefix_bits.append(sum(self.sizes[b] for b in chosen))
        self.n_tables = len(self.tables)
        self.prefix_bits = prefix_bits
        self.src = np.array(lows, dtype=_U64)[:, None]  # (blocks, 1) for broadcasting
        self.masks = np.array([(1 << s) - 1 for s in self.sizes], dtype=_U64)[:, None]
        self.dst = dst[:, :, None]  # (tables, blocks, 1)
        low_bits = [(1 << (64 - p)) - 1 for p in prefix_bits]
        self.low_mask = np.array(low_bits, dtype=_U64)  # the non-prefix bits of each key
        self.prefix_mask = ~self.low_mask

    def permute(self, x: np.ndarray, table: int | None = None) -> np.ndarray:
        """Keys of uint64 fingerprints ``x``: shape (tables, len(x)), or (len(x),) for one table."""
        v = (x[None, :] >> self.src) & self.masks  # (blocks, m): each block's value
        # blocks land on disjoint bits, so OR-ing the shifted blocks assembles the key
        if table is None:
            return np.bitwise_or.reduce(v[None, :, :] << self.dst, axis=1)
        return np.bitwise_or.reduce(v << self.dst[table], axis=0)

    def route(self, keys: np.ndarray, shard_bits: int) -> np.ndarray:
        """Shard numbers of ``keys``: their top ``shard_bits`` bits."""
        if shard_bits == 0:  # a shift by 64 is undefined, hence the special case
            return np.zeros(keys.shape, dtype=np.int64)
        return (keys >> _U64(64 - shard_bits)).astype(np.int64)


@lru_cache(maxsize=None)
def _layout(k: int, blocks: int, f: int, shard_bits: int) -> _Layout:
    if f != 64:
        raise ValueError(f"only f=64-bit fingerprints are supported (got f={f})")
    if k < 0:
        raise ValueError(f"max distance k must be >= 0 (got k={k})")
    if blocks <= k:
        raise ValueError(f"simhash tables need blocks > max distance (got blocks={blocks}, k={k})")
    if blocks > f:
        raise ValueError(f"at most one block per bit (got blocks={blocks}, f={f})")
    if math.comb(blocks, k) > _MAX_TABLES:  # each table holds every fingerprint
        raise ValueError(f"C(blocks={blocks}, k={k}) = {math.comb(blocks, k)} tables is too many "
                         f"(limit {_MAX_TABLES}); use fewer blocks or a smaller k")
    layout = _Layout(k, blocks)
    smallest = min(layout.prefix_bits)
    if not 0 <= shard_bits <= smallest:
        raise ValueError(
            f"shard_bits must be between 0 and {smallest}, the prefix bits of the smallest "
            f"table key (got shard_bits={shard_bits}, k={k}, blocks={blocks})"
        )
    return layout


def _check_fp(fingerprint: int) -> int:
    fingerprint = int(fingerprint)
    if not 0 <= fingerprint <= MASK64:
        raise ValueError(f"fingerprint must be an unsigned 64-bit integer (got {fingerprint!r})")
    return fingerprint


def _check_id(doc_id: int) -> int:
    doc_id = int(doc_id)
    if not 0 <= doc_id < 2**63:  # -1 marks removed entries
        raise ValueError(f"doc_id must be in [0, 2**63) (got {doc_id!r})")
    return doc_id


def _merge(a_keys, a_ids, b_keys, b_ids):
    """Merge sorted run b into sorted run a (both (keys, ids)), dropping tombstones of a."""
    alive = a_ids >= 0
    if not alive.all():
        a_keys, a_ids = a_keys[alive], a_ids[alive]
    if len(a_keys) == 0:
        return b_keys, b_ids
    # b[i] goes after the a-entries <= it and after b[:i]; the rest is filled by a, in order
    pos = a_keys.searchsorted(b_keys, side="right") + np.arange(len(b_keys))
    n = len(a_keys) + len(b_keys)
    keys, ids = np.empty(n, dtype=_U64), np.empty(n, dtype=np.int64)
    keys[pos], ids[pos] = b_keys, b_ids
    rest = np.ones(n, dtype=bool)
    rest[pos] = False
    keys[rest], ids[rest] = a_keys, a_ids
    return keys, ids


def _best(ids: list[int], dists: list[int]) -> list[tuple[int, int]]:
    """Each doc id once at its smallest distance, sorted by (distance, doc id)."""
    nearest: dict[int, int] = {}
    for i, d in zip(ids, dists):
        if d < nearest.get(i, 65):
            nearest[i] = d
    return sorted(nearest.items(), key=lambda p: (p[1], p[0]))


class TableShard:
    """The entries of every table whose key starts with ``index`` (top ``shard_bits`` bits).

    With ``shard_bits=0`` (the default) a single shard holds everything.  ``add`` and
    ``add_many`` may be given the full stream of fingerprints: the shard keeps only those
    that belong to it in at least one table.  ``buffer_size`` (entries) sets when the
    unsorted append buffer is merged into the sorted runs.
    """

    def __init__(self, k: int = 3, blocks: int = 6, *, f: int = 64, shard_bits: int = 0,
                 index: int = 0, buffer_size: int = 4096):
        self._layout = _layout(k, blocks, f, shard_bits)
        if not 0 <= index < 2**shard_bits:
            raise ValueError(f"shard index must be in [0, {2**shard_bits}) (got index={index})")
        if buffer_size < 1:
            raise ValueError(f"buffer_size must be >= 1 (got buffer_size={buffer_size})")
        self.k, self.blocks, self.f = k, blocks, f
        self.shard_bits, self.index, self.buffer_size = shard_bits, index, buffer_size
        t = self._layout.n_tables
        # per table: [main keys, main ids, delta keys, delta ids]
        self._runs = [[_EMPTY_KEYS, _EMPTY_IDS, _EMPTY_KEYS, _EMPTY_IDS] for _ in range(t)]
        self._buf_fp = np.empty(buffer_size, dtype=_U64)
        self._buf_id = np.empty(buffer_size, dtype=np.int64)
        self._n_buf = 0

    # -- adding -------------------------------------------------------------------------
    def _mine(self, fps: np.ndarray) -> np.ndarray:
        """Mask of the fingerprints that belong to this shard in at least one table."""
        mine = np.zeros(len(fps), dtype=bool)
        for t in range(self._layout.n_tables):
            keys = self._layout.permute(fps, t)
            mine |= self._layout.route(keys, self.shard_bits) == self.index
        return mine

    def add_many(self, fingerprints: np.ndarray, doc_ids: np.ndarray) -> int:
        """Store (fingerprint, doc id) pairs that belong here; returns how many were kept."""
        fps = to_uint64(fingerprints)
        ids = np.asarray(doc_ids, dtype=np.int64).reshape(-1)
        if len(fps) != len(ids):
            raise ValueError(f"{len(fps)} fingerprints but {len(ids)} doc ids")
        if len(ids) and ids.min() < 0:
            raise ValueError(f"doc ids must be >= 0 (got {int(ids.min())})")
        if self.shard_bits:
            mine = self._mine(fps)
            fps, ids = fps[mine], ids[mine]
        n, m = self._n_buf, len(fps)
        if n + m > len(self._buf_fp):  # only a bulk add outgrows the buffer; it is merged at once
            self._buf_fp = np.concatenate([self._buf_fp[:n], fps])
            self._buf_id = np.concatenate([self._buf_id[:n], ids])
        else:
            self._buf_fp[n:n + m], self._buf_id[n:n + m] = fps, ids
        self._n_buf = n + m
        if self._n_buf >= self.buffer_size:
            self.flush()
        return m

    def add(self, fingerprint: int, doc_id: int) -> None:
        """Store one pair (O(1) until the buffer fills; see the module docstring)."""
        fingerprint, doc_id = _check_fp(fingerprint), _check_id(doc_id)
        if self.shard_bits:
            self.add_many(np.array([fingerprint], dtype=_U64), np.array([doc_id]))
            return
        self._buf_fp[self._n_buf], self._buf_id[self._n_buf] = fingerprint, doc_id
        self._n_buf += 1
        if self._n_buf >= self.buffer_size:
            self.flush()

    def flush(self, *, into_main: bool = False) -> None:
        """Merge the buffer into the sorted runs (and delta into main when it got big)."""
        fps, ids = self._buf_fp[: self._n_buf], self._buf_id[: self._n_buf]
        for t, run in enumerate(self._runs):
            keys, run_ids = self._layout.permute(fps, t), ids
            if self.shard_bits:
                mine = self._layout.route(keys, self.shard_bits) == self.index
                keys, run_ids = keys[mine], run_ids[mine]
            order = np.argsort(keys)
            d_keys, d_ids = _merge(run[2], run[3], keys[order], run_ids[order])
            limit = max(4 * self.buffer_size, math.isqrt(2 * self.buffer_size * len(run[0])))
            if into_main or len(d_keys) > limit:
                run[0], run[1] = _merge(run[0], run[1], d_keys, d_ids)
                d_keys, d_ids = _EMPTY_KEYS, _EMPTY_IDS
            run[2], run[3] = d_keys, d_ids
        self._n_buf = 0
        if len(self._buf_fp) > self.buffer_size:  # shrink back after a bulk add
            self._buf_fp = np.empty(self.buffer_size, dtype=_U64)
            self._buf_id = np.empty(self.buffer_size, dtype=np.int64)

    # -- querying -----------------------------------------------------------------------
    def _tables_here(self, keys: np.ndarray) -> np.ndarray:
        return np.flatnonzero(self._layout.route(keys, self.shard_bits) == self.index).tolist()

    def _lookup(self, fingerprint: int, keys: np.ndarray, tables) -> tuple[list[int], list[int]]:
        """(doc ids, distances) of matches in ``tables`` and the buffer; ids may repeat."""
        lay, k = self._layout, self.k
        # bounds[t] = [first key with t's prefix, one past the last]; the second wraps to 0
        # only for an all-ones prefix, whose range then runs to the end of the run
        lo, hi = keys & lay.prefix_mask, keys | lay.low_mask
        bounds = np.stack([lo, hi + _U64(1)], axis=1)
        open_end = (hi == _U64(MASK64)).tolist()
        qkeys = keys.tolist()
        ids: list[int] = []
        dists: list[int] = []
        for t in tables:
            run = self._runs[t]
            for r in (0, 2):  # main, then delta
                run_keys = run[r]
                if not len(run_keys):
                    continue
                start, end = run_keys.searchsorted(bounds[t]).tolist()
                if open_end[t]:
                    end = len(run_keys)
                if end - start > 32:  # many candidates (duplicates): vectorised check
                    d = np.bitwise_count(run_keys[start:end] ^ keys[t])
                    hit = np.flatnonzero((d <= k) & (run[r + 1][start:end] >= 0))
                    ids += run[r + 1][start:end][hit].tolist()
                    dists += d[hit].tolist()
                elif start < end:  # the usual 0-2 candidates: plain ints are cheaper
                    q = qkeys[t]
                    for key, i in zip(run_keys[start:end].tolist(), run[r + 1][start:end].tolist()):
                        d = (key ^ q).bit_count()
                        if d <= k and i >= 0:  # ids < 0 are tombstones
                            ids.append(i)
                            dists.append(d)
        if self._n_buf:  # the buffer is small and unsorted: brute force
            d = hamming(self._buf_fp[: self._n_buf], np.array([fingerprint], dtype=_U64))
            hit = np.flatnonzero(d <= k)
            ids += self._buf_id[hit].tolist()
            dists += d[hit].tolist()
        return ids, dists

    def query(self, fingerprint: int) -> list[tuple[int, int]]:
        """(doc id, distance) within k found here, as in ``PermutationTables.query``."""
        fp = _check_fp(fingerprint)
        keys = self._layout.permute(np.array([fp], dtype=_U64))[:, 0]
        return _best(*self._lookup(fp, keys, self._tables_here(keys)))

    # -- removing -----------------------------------------------------------------------
    def remove(self, fingerprint: int, doc_id: int) -> bool:
        """Remove one stored copy of the pair; True if this shard had it."""
        fp, doc_id = _check_fp(fingerprint), int(doc_id)
        n = self._n_buf
        at = np.flatnonzero((self._buf_fp[:n] == _U64(fp)) & (self._buf_id[:n] == doc_id))
        if len(at):  # a buffered entry is in no sorted run yet: move the last one into its slot
            i = at[0]
            self._buf_fp[i], self._buf_id[i] = self._buf_fp[n - 1], self._buf_id[n - 1]
            self._n_buf = n - 1
            return True
        keys = self._layout.permute(np.array([fp], dtype=_U64))[:, 0]
        removed = False
        for t in self._tables_here(keys):
            run = self._runs[t]
            for r in (0, 2):
                start = run[r].searchsorted(keys[t])
                end = run[r].searchsorted(keys[t], side="right")
                at = np.flatnonzero(run[r + 1][start:end] == doc_id)
                if len(at):
                    run[r + 1][start + at[0]] = -1
                    removed = True
                    break
        return removed

    def count(self, table: int = 0) -> int:
        """Number of live entries of ``table`` held by this shard (O(size); for checks)."""
        run = self._runs[table]
        buffered = self._buf_fp[: self._n_buf]
        if self.shard_bits:
            keys = self._layout.permute(buffered, table)
            n_buf = int((self._layout.route(keys, self.shard_bits) == self.index).sum())
        else:
            n_buf = len(buffered)
        return int((run[1] >= 0).sum() + (run[3] >= 0).sum()) + n_buf


def query_shards(shards: Mapping[int, TableShard] | Sequence[TableShard],
                 fingerprint: int) -> list[tuple[int, int]]:
    """Query the shards a fingerprint maps to (one per table) and merge their answers.

    ``shards`` maps shard number to shard (missing numbers are empty shards), or is a
    sequence indexed by shard number; all must share k, blocks and shard_bits.  The result
    is what ``PermutationTables.query`` returns on the same data.  Only each shard's
    ``query`` and attributes are used, so remote proxies with those work too.
    """
    if not isinstance(shards, Mapping):
        shards = dict(enumerate(shards))
    if not shards:
        return []
    params = {(s.k, s.blocks, s.f, s.shard_bits) for s in shards.values()}
    if len(params) != 1 or any(s.index != j for j, s in shards.items()):
        raise ValueError(f"shards disagree on (k, blocks, f, shard_bits) or index: {sorted(params)}")
    k, blocks, f, shard_bits = params.pop()
    lay = _layout(k, blocks, f, shard_bits)
    fp = _check_fp(fingerprint)
    wanted = np.unique(lay.route(lay.permute(np.array([fp], dtype=_U64))[:, 0], shard_bits))
    pairs = [p for j in wanted.tolist() if j in shards for p in shards[j].query(fp)]
    return _best([i for i, _ in pairs], [d for _, d in pairs])


class PermutationTables:
    """Exact Hamming-distance search over 64-bit simhash fingerprints (see module doc).

    ``k``: maximum distance in bits (default 3); ``blocks``: number of bit blocks (default
    6, giving C(6, 3) = 20 tables); ``f``: fingerprint width in bits, only 64 is supported;
    ``shard_bits``: split each table into 2**shard_bits shards by key prefix (default 0,
    unsharded); ``buffer_size``: entries appended before a merge into the sorted runs.
    """

    def __init__(self, k: int = 3, blocks: int = 6, *, f: int = 64, shard_bits: int = 0,
                 buffer_size: int = 4096):
        self._layout = _layout(k, blocks, f, shard_bits)
        if buffer_size < 1:
            raise ValueError(f"buffer_size must be >= 1 (got buffer_size={buffer_size})")
        self._k, self._blocks, self._f = k, blocks, f
        self.shard_bits, self.buffer_size = shard_bits, buffer_size
        self._shards: dict[int, TableShard] = {}
        self._len = 0

    k = property(lambda self: self._k, doc="Maximum Hamming distance (bits).")
    blocks = property(lambda self: self._blocks, doc="Number of bit blocks.")
    f = property(lambda self: self._f, doc="Fingerprint width (bits); always 64.")
    n_tables = property(lambda self: self._layout.n_tables, doc="C(blocks, k).")

    def __len__(self) -> int:
        """Number of stored (fingerprint, doc id) entries."""
        return self._len

    def _shard(self, j: int) -> TableShard:
        shard = self._shards.get(j)
        if shard is None:
            shard = self._shards[j] = TableShard(
                self._k, self._blocks, f=self._f, shard_bits=self.shard_bits, index=j,
                buffer_size=self.buffer_size)
        return shard

    def _keys(self, fp: int) -> np.ndarray:
        return self._layout.permute(np.array([fp], dtype=_U64))[:, 0]

    def add(self, fingerprint: int, doc_id: int) -> None:
        """Store a pair (adding the same pair twice stores two copies)."""
        if self.shard_bits == 0:
            self._shard(0).add(fingerprint, doc_id)
        else:
            fp, doc_id = _check_fp(fingerprint), _check_id(doc_id)
            for j in np.unique(self._layout.route(self._keys(fp), self.shard_bits)).tolist():
                self._shard(j).add(fp, doc_id)
        self._len += 1

    def add_many(self, fingerprints: np.ndarray, doc_ids: np.ndarray) -> None:
        """Store many pairs at once (uint64 or int64 fingerprints, int doc ids >= 0)."""
        fps = to_uint64(fingerprints)
        ids = np.asarray(doc_ids, dtype=np.int64).reshape(-1)
        if len(fps) != len(ids):
            raise ValueError(f"{len(fps)} fingerprints but {len(ids)} doc ids")
        if self.shard_bits == 0:
            self._shard(0).add_many(fps, ids)
        else:
            targets = set()
            for t in range(self.n_tables):
                keys = self._layout.permute(fps, t)
                targets.update(np.unique(self._layout.route(keys, self.shard_bits)).tolist())
            for j in sorted(targets):  # each shard keeps its own slice of the batch
                self._shard(j).add_many(fps, ids)
        self._len += len(fps)

    def remove(self, fingerprint: int, doc_id: int) -> bool:
        """Remove one stored copy of the pair; True if it was there."""
        fp = _check_fp(fingerprint)
        removed = False
        for j in np.unique(self._layout.route(self._keys(fp), self.shard_bits)).tolist():
            if j in self._shards:
                removed |= self._shards[j].remove(fp, doc_id)
        self._len -= removed
        return removed

    def query(self, fingerprint: int) -> list[tuple[int, int]]:
        """Every stored (doc id, distance) with distance <= k, each doc id once (at its
        smallest distance), sorted by (distance, doc id)."""
        fp = _check_fp(fingerprint)
        keys = self._keys(fp)
        if self.shard_bits == 0:
            shard = self._shards.get(0)
            return _best(*shard._lookup(fp, keys, range(self.n_tables))) if shard else []
        route = self._layout.route(keys, self.shard_bits)
        ids: list[int] = []
        dists: list[int] = []
        for j in np.unique(route).tolist():
            if j in self._shards:
                found = self._shards[j]._lookup(fp, keys, np.flatnonzero(route == j).tolist())
                ids += found[0]
                dists += found[1]
        return _best(ids, dists)

    def query_many(self, fingerprints: np.ndarray) -> list[list[tuple[int, int]]]:
        """``query`` for each fingerprint (a loop: same per-query cost)."""
        return [self.query(fp) for fp in to_uint64(fingerprints).tolist()]

    def keys(self, fingerprint: int) -> list[str]:
        """One string per table, ``"t<table>:<key prefix in hex>"``.

        Fingerprints within distance k share at least one string, so an external store can
        index these (e.g. an Elasticsearch keyword field), fetch candidates with one terms
        query and verify the Hamming distance itself.
        """
        keys = self._keys(_check_fp(fingerprint)).tolist()
        return [f"t{t}:{key >> (64 - p):0{(p + 3) // 4}x}"
                for t, (key, p) in enumerate(zip(keys, self._layout.prefix_bits))]

    def shard_of(self, table: int, fingerprint: int) -> int:
        """Shard holding the fingerprint's entry of ``table``: the top ``shard_bits`` bits
        of its permuted key (0 when unsharded)."""
        if not 0 <= table < self.n_tables:
            raise ValueError(f"table must be in [0, {self.n_tables}) (got table={table})")
        key = self._layout.permute(np.array([_check_fp(fingerprint)], dtype=_U64), table)
        return int(self._layout.route(key, self.shard_bits)[0])

    def split(self) -> dict[int, TableShard]:
        """The shards, by shard number (only non-empty ones exist).

        They are this object's own storage, not copies: hand them to other processes and
        query them with ``query_shards``; stop using this object afterwards.
        """
        return dict(self._shards)

    # -- persistence --------------------------------------------------------------------
    def state(self) -> dict[str, np.ndarray]:
        """Arrays to persist (e.g. ``np.savez(path, **tables.state())``); merges every
        shard's buffer and delta into main first, so reloading needs no sorting."""
        out = {"params": np.array([self._k, self._blocks, self._f, self.shard_bits,
                                   self.buffer_size], dtype=np.int64)}
        for j, shard in sorted(self._shards.items()):
            shard.flush(into_main=True)
            for t, run in enumerate(shard._runs):
                alive = run[1] >= 0
                out[f"s{j}.t{t}.keys"], out[f"s{j}.t{t}.ids"] = run[0][alive], run[1][alive]
        return out

    @classmethod
    def from_state(cls, state: Mapping[str, np.ndarray]) -> "PermutationTables":
        """Rebuild from ``state()`` (or the ``np.load`` of its ``.npz``)."""
        k, blocks, f, shard_bits, buffer_size = (int(v) for v in state["params"])
        tables = cls(k, blocks, f=f, shard_bits=shard_bits, buffer_size=buffer_size)
        shard_nums = {int(name[1:].split(".")[0]) for name in state if name.startswith("s")}
        for j in sorted(shard_nums):
            shard = tables._shard(j)
            for t, run in enumerate(shard._runs):
                keys = np.asarray(state[f"s{j}.t{t}.keys"], dtype=_U64)
                ids = np.asarray(state[f"s{j}.t{t}.ids"], dtype=np.int64)
                if len(keys) != len(ids) or np.any(keys[1:] < keys[:-1]):
                    raise ValueError(f"corrupt state: table {t} of shard {j} is not a sorted run")
                run[0], run[1] = keys, ids
            tables._len += shard.count(0)
        return tables
