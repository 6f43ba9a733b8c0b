"""Permuted simhash tables: every stored fingerprint within Hamming distance k of a query.

Manku, Jain & Das Sarma, "Detecting near-duplicates for web crawling" (WWW 2007),
section 3.  The f = 64 bits are split into ``blocks`` contiguous blocks (sizes as equal
as possible, the larger ones at the top).  Two fingerprints at distance <= k differ in at
most k blocks, so they agree on at least ``blocks - k`` whole blocks (pigeonhole).  There
is one table per choice of ``blocks - k`` blocks, C(blocks, k) tables in all; a table's
key is the fingerprint with the chosen blocks moved to the top bits (in their original
order, the other blocks following), a bit permutation.  In the table whose chosen blocks
are the ones the pair agrees on, both keys start with the same P-bit prefix, P being the
total size of the chosen blocks.  A query therefore looks up, in every table, the range of
keys sharing its prefix and checks the Hamming distance of those candidates, so nothing
within k is missed and nothing farther is returned.

The "rotate the fingerprint by one bit at a time, sort each rotation, compare neighbours"
scheme of simpler write-ups is a special case of the same idea (sorted tables of
permuted fingerprints; rotations are permutations), but comparing sorted neighbours only
gives no guarantee: the block construction and the scan of the whole prefix range make
the search exact.

Storage (one ``TableShard``): the stored pairs are rows of two arrays, fingerprints
(uint64) and doc ids (int64), and every table entry is one uint64 in a single sorted array
shared by all tables::

    | table index (tb bits) | top 32 - tb bits of the permuted key | row (32 bits) |

Sorting by that integer sorts by table, then key prefix; the row makes entries unique and
points at the fingerprint and doc id.  The entries a query needs, in every table, are the
ones whose stored key bits equal its prefix: a range of the sorted array (a superset of
the exact prefix range when P > 32 - tb, so a few extra candidates).  The fingerprints of
those rows are then checked for distance <= k, which is exact, so truncating the key
costs time, never correctness.  A binary search per table would be ~28 dependent cache
misses at 10M fingerprints, so each sorted array has a directory (``_Run``) of where each
bucket of entries (same table and first d key bits, 8-16 entries on average) starts: all
tables' ranges come from a few vectorised reads.  Memory: 8 bytes per entry and table,
16 per row, and 4 per directory bucket (8-16 bytes per row with 20 tables).

Inserts: rows are appended; the newest rows (up to ``buffer_size``) are the unsorted
buffer, which queries scan by brute force.  A full buffer is turned into entries, sorted
and merged into a smaller sorted "delta" array, and delta into "main" once it exceeds
sqrt(2 * entries per merge * len(main)), which balances the two O(length) merge copies.
That is a few microseconds per add, amortised, at 10M fingerprints instead of copying
everything every ``buffer_size`` adds; the price is one long merge (about a second at 10M
with 20 tables) each time delta reaches main, needing a second copy of main meanwhile.
``remove`` sets the row's doc id to -1 (so doc ids must be >= 0); removed rows are
dropped, and all entries rebuilt, once they are a quarter of the rows.

Sharding by key prefix: with ``shard_bits = s``, table t's entry for a fingerprint lives
in shard number "top s bits of its table-t key" (``shard_of``).  Every candidate for a
query in table t shares the query's P >= s bit prefix, hence its shard, so a query visits
exactly one shard per table and the union over those shards equals the unsharded answer.
A ``TableShard`` holds, for every table, the entries whose key starts with its index (its
buffer holds the rows belonging to it in at least one table; any match found there is a
true one).  It is a plain object of numpy arrays (picklable) that can live in another
process.  ``PermutationTables(shard_bits=s)`` keeps its shards in a dict (created on
first use) and routes adds, removes and queries; ``split()`` hands the shards out,
``TableShard(..., index=j)`` builds one directly from the full stream (it keeps its own
slice) and ``query_shards(shards, fp)`` is the fan-out and merge a coordinator runs.

Not thread-safe.  No scrapy/elasticsearch imports here: ``keys`` gives strings an external
store can index instead (one keyword per table).
"""
from __future__ import annotations

import math
from itertools import combinations
from typing import Callable, Mapping, Sequence

import numpy as np

from .bits import MASK64, hamming, to_uint64

__all__ = ["PermutationTables", "TableShard", "query_shards", "DEFAULT_K", "DEFAULT_BLOCKS"]

#: The one home of the tables' defaults (DedupConfig, the indexes and the settings table read them):
#: Hamming distance k = 3 and 5 blocks, C(5, 3) = 10 tables (the paper's 6 blocks make 20; 5 measured
#: better, docs/performance.md).
DEFAULT_K = 3
DEFAULT_BLOCKS = 5

_U64 = np.uint64
_ROW_BITS = 32  # low bits of an entry: row number, so at most 2**32 rows per shard
_ROW_MASK = _U64((1 << _ROW_BITS) - 1)
_MAX_TABLES = 10_000
_QUERY_CHUNK = 4096  # query_many works on this many fingerprints at a time (bounded temporaries)
_EMPTY = np.empty(0, dtype=_U64)


class _Layout:
    """Block sizes, the per-table bit permutations and the entry encoding (immutable)."""

    def __init__(self, k: int, blocks: int):
        base, extra = divmod(64, blocks)
        self.sizes = [base + 1] * extra + [base] * (blocks - extra)
        # block b occupies bits [lows[b], lows[b] + sizes[b]) of the fingerprint, block 0 at the top
        lows = [64 - sum(self.sizes[: b + 1]) for b in range(blocks)]
        self.tables = list(combinations(range(blocks), blocks - k))
        self.n_tables = len(self.tables)
        dst = np.zeros((self.n_tables, blocks), dtype=_U64)
        self.prefix_bits = []
        for t, chosen in enumerate(self.tables):
            top = 64
            for b in list(chosen) + [b for b in range(blocks) if b not in chosen]:
                top -= self.sizes[b]
                dst[t, b] = top  # block b lands at bit `top` of table t's key
            self.prefix_bits.append(sum(self.sizes[b] for b in chosen))
        self.src = np.array(lows, dtype=_U64)[:, None]  # (blocks, 1), broadcasts over fingerprints
        self.masks = np.array([(1 << s) - 1 for s in self.sizes], dtype=_U64)[:, None]
        self.dst = dst[:, :, None]  # (tables, blocks, 1)
        low = [(1 << (64 - p)) - 1 for p in self.prefix_bits]
        self.low_mask = np.array(low, dtype=_U64)[:, None]  # non-prefix bits of each key
        self.prefix_mask = ~self.low_mask
        # entry = table index in the top tb bits | key >> shift (its top 32 - tb bits) | row
        self.tb = tb = (self.n_tables - 1).bit_length()
        self.shift = _U64(tb + _ROW_BITS)
        tables = np.arange(self.n_tables, dtype=_U64)
        self.table_part = (tables << _U64(64 - tb) if tb else tables)[:, None]  # 0 when tb = 0
        self.table_span = _U64(MASK64 >> tb)  # table t's entries: table_part[t] | 0 .. table_span
        # bounds(): the prefix bits as they sit in an entry, and the rest (row included)
        self._lo_mask = (self.prefix_mask >> self.shift) << _U64(_ROW_BITS)
        self._hi_bits = self.table_part | ((self.low_mask >> self.shift) << _U64(_ROW_BITS)) | _ROW_MASK

    def permute(self, x: np.ndarray, table: int | None = None) -> np.ndarray:
        """Keys of uint64 fingerprints ``x``: shape (tables, len(x)), or (len(x),) for one table."""
        v = (x[None, :] >> self.src) & self.masks  # (blocks, m): each block's value
        # blocks land on disjoint bits, so OR-ing the shifted blocks assembles the key
        if table is None:
            return np.bitwise_or.reduce(v[None, :, :] << self.dst, axis=1)
        return np.bitwise_or.reduce(v << self.dst[table], axis=0)

    def entries(self, keys: np.ndarray, rows: np.ndarray, table: int) -> np.ndarray:
        """Entries of table ``table`` for its keys ``keys`` of the rows ``rows``."""
        return self.table_part[table] | ((keys >> self.shift) << _U64(_ROW_BITS)) | rows

    def bounds(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """First and last possible entry sharing each (tables, m) key's prefix."""
        stored = (keys >> self.shift) << _U64(_ROW_BITS)  # the key bits an entry keeps
        return (stored & self._lo_mask) | self.table_part, stored | self._hi_bits

    def route(self, keys: np.ndarray, shard_bits: int) -> np.ndarray:
        """Shard numbers of ``keys``: their top ``shard_bits`` bits."""
        if shard_bits == 0:  # a shift by 64 is undefined, hence the special case
            return np.zeros(keys.shape, dtype=np.int64)
        return (keys >> _U64(64 - shard_bits)).astype(np.int64)


def _layout(k: int, blocks: int, f: int, shard_bits: int) -> _Layout:
    """The checked layout of these parameters (~40 us to make): each PermutationTables and TableShard
    keeps its own; query_shards borrows its shards' (or makes one for proxies of remote shards)."""
    if f != 64:
        raise ValueError(f"only f=64-bit fingerprints are supported (got f={f})")
    if k < 0:
        raise ValueError(f"max distance k must be >= 0 (got k={k})")
    if blocks <= k:
        raise ValueError(f"simhash tables need blocks > max distance (got blocks={blocks}, k={k})")
    if blocks > f:
        raise ValueError(f"at most one block per bit (got blocks={blocks}, f={f})")
    if math.comb(blocks, k) > _MAX_TABLES:  # every table holds every fingerprint
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


class _Run:
    """A sorted array of entries plus a directory: where each bucket of entries (same top
    ``bits`` bits, i.e. table index and first d key bits) starts.  Finding a key range is
    then two reads instead of a ~28-step binary search, whose dependent cache misses make
    up most of a query at 10M fingerprints.  d keeps 8-16 entries per bucket on average;
    a bucket costs 4 bytes (uint32 offsets).

    Merges happen in place in a buffer with spare room (grown by a quarter when full):
    touching freshly allocated memory (page faults) costs more than the merge itself, and
    a copy would need a second full-size array."""

    def __init__(self, layout: _Layout, entries: np.ndarray = _EMPTY):
        self._tb, self._n_tables = layout.tb, layout.n_tables
        self._buf, self._n = entries, len(entries)
        self._owned = False  # a borrowed array (or one handed out) is never written to
        self._rebuild()

    def __len__(self) -> int:
        return self._n

    @property
    def entries(self) -> np.ndarray:
        return self._buf[: self._n]

    def export(self) -> np.ndarray:
        """The entries, for the caller to keep: later merges will not write to them."""
        self._owned = False
        return self.entries

    def _bits(self, n: int) -> int:
        d = max(n // self._n_tables // 8, 1).bit_length() - 1
        return max(1, self._tb + min(d, 32 - self._tb))  # buckets no finer than the stored key bits

    def _rebuild(self) -> None:
        bits = self._bits(self._n)
        self.shift = _U64(64 - bits)
        counts = np.zeros(1 << bits, dtype=np.int64)
        for i in range(0, self._n, 1 << 24):  # in chunks: no full-size temporary
            chunk = self._buf[i:min(i + (1 << 24), self._n)]
            counts += np.bincount((chunk >> self.shift).astype(np.intp), minlength=1 << bits)
        dtype = np.uint32 if self._n < 1 << 32 else np.int64
        self.dir = np.zeros((1 << bits) + 1, dtype=dtype)
        self.dir[1:] = np.cumsum(counts)

    def merge(self, new: np.ndarray, *, adopt: bool = False) -> None:
        """Merge in the sorted entries ``new`` (``adopt``: into an empty run, take the array
        itself, which nobody else may use)."""
        n, m = self._n, len(new)
        if not m:
            return
        if adopt and not n:
            self._buf, self._n, self._owned = new, m, True
            self._rebuild()
            return
        if not self._owned or n + m > len(self._buf):
            buf = np.empty((n + m) * 5 // 4, dtype=_U64)
            buf[:n] = self._buf[:n]
            self._buf, self._owned = buf, True
        self._buf[n:n + m] = new
        self._n = n + m
        self.entries.sort(kind="stable")  # timsort finds the two sorted runs: an O(n) merge
        if self._bits(self._n) != 64 - int(self.shift) or self._n >= 1 << 32:
            self._rebuild()  # the size doubled: new bucket width
        else:  # every bucket starts later by the number of new entries in earlier buckets
            added = np.bincount((new >> self.shift).astype(np.intp), minlength=len(self.dir) - 1)
            np.cumsum(added, out=added)
            np.add(self.dir[1:], added, out=self.dir[1:], casting="unsafe")

    def absorb(self, other: "_Run") -> None:
        """Merge ``other`` in and empty it (keeping its buffer for reuse)."""
        if not self._n:  # just swap arrays: nothing to merge
            self._buf, other._buf = other._buf, self._buf
            self._n, other._n = other._n, self._n
            self._owned, other._owned = other._owned, self._owned
            self.shift, self.dir = other.shift, other.dir
        else:
            self.merge(other.entries)
            other._n = 0
        other._rebuild()

    def ranges(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Index ranges [start, end) covering every entry in [lo[i], hi[i]] (whole buckets,
        so possibly more; crowded buckets are narrowed by binary search)."""
        start = self.dir[lo >> self.shift].astype(np.int64)
        end = self.dir[(hi >> self.shift) + _U64(1)].astype(np.int64)
        for i in np.flatnonzero(end - start > 64).tolist():  # duplicates, clustered keys
            base, part = start[i], self.entries[start[i]:end[i]]
            start[i], end[i] = base + part.searchsorted(lo[i]), base + part.searchsorted(hi[i], "right")
        return start, end

    def find(self, lo, hi) -> np.ndarray:
        """Rows of the entries in [lo, hi] (scalars)."""
        part = self.entries[self.entries.searchsorted(lo): self.entries.searchsorted(hi, "right")]
        return (part & _ROW_MASK).astype(np.int64)


def _check_fp(fingerprint: int) -> int:
    fingerprint = int(fingerprint)
    if not 0 <= fingerprint <= MASK64:
        raise ValueError(f"fingerprint must be an unsigned 64-bit integer (got {fingerprint!r})")
    return fingerprint


def _check_pairs(fingerprints, doc_ids) -> tuple[np.ndarray, np.ndarray]:
    fps = to_uint64(fingerprints)
    ids = np.asarray(doc_ids, dtype=np.int64).reshape(-1)
    if len(fps) != len(ids):
        raise ValueError(f"{len(fps)} fingerprints but {len(ids)} doc ids")
    if len(ids) and ids.min() < 0:  # -1 marks removed rows
        raise ValueError(f"doc ids must be >= 0 (got {int(ids.min())})")
    return fps, ids


def _best(ids: list[int], dists: list[int]) -> list[tuple[int, int]]:
    """Each doc id once at its smallest distance, sorted by (distance, doc id)."""
    nearest: dict[int, int] = {}
    for i, d in zip(ids, dists):
        if d < nearest.get(i, 65):
            nearest[i] = d
    return sorted(nearest.items(), key=lambda p: (p[1], p[0]))


def _query_chunks(layout: _Layout, fingerprints: np.ndarray,
                  found: Callable[[np.ndarray, np.ndarray], list[tuple[np.ndarray, np.ndarray, np.ndarray]]]
                  ) -> list[list[tuple[int, int]]]:
    """``query_many``'s loop (bounded temporaries): ``found(chunk, keys)`` gives the (query index,
    doc id, distance) arrays of a chunk of fingerprints and their keys."""
    fps, out = to_uint64(fingerprints), []
    for i in range(0, len(fps), _QUERY_CHUNK):
        chunk = fps[i:i + _QUERY_CHUNK]
        out += _per_query(len(chunk), found(chunk, layout.permute(chunk)))
    return out


def _per_query(m: int, found: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> list[list[tuple[int, int]]]:
    """Split (query index, doc id, distance) arrays into one ``_best`` list per query."""
    ids: list[list[int]] = [[] for _ in range(m)]
    dists: list[list[int]] = [[] for _ in range(m)]
    for q_arr, id_arr, d_arr in found:
        for q, i, d in zip(q_arr.tolist(), id_arr.tolist(), d_arr.tolist()):
            ids[q].append(i)
            dists[q].append(d)
    return [_best(i, d) for i, d in zip(ids, dists)]


class TableShard:
    """The entries of every table whose key starts with ``index`` (top ``shard_bits`` bits).

    ``k``, ``blocks``, ``f``, ``shard_bits``: as for ``PermutationTables``; ``index``: this
    shard's number, 0 <= index < 2**shard_bits; ``buffer_size``: rows appended before they
    are merged into the sorted entries.  With ``shard_bits=0`` one shard holds everything.
    ``add``/``add_many`` may be given the full stream: the shard keeps only the pairs that
    belong to it in at least one table.
    """

    def __init__(self, k: int = DEFAULT_K, blocks: int = DEFAULT_BLOCKS, *, f: int = 64, shard_bits: int = 0,
                 index: int = 0, buffer_size: int = 4096):
        self._layout = _layout(k, blocks, f, shard_bits)
        if not 0 <= index < 2**shard_bits:
            raise ValueError(f"shard index must be in [0, {2**shard_bits}) (got index={index})")
        if buffer_size < 1:
            raise ValueError(f"buffer_size must be >= 1 (got buffer_size={buffer_size})")
        self.k, self.blocks, self.f = k, blocks, f
        self.shard_bits, self.index, self.buffer_size = shard_bits, index, buffer_size
        self._fp = np.empty(buffer_size, dtype=_U64)  # rows [0, _n): stored pairs
        self._id = np.empty(buffer_size, dtype=np.int64)  # -1: removed
        self._n = self._merged = self._dead = 0  # rows [_merged, _n) are the buffer
        self._main, self._delta = _Run(self._layout), _Run(self._layout)  # sorted entries

    # -- adding -------------------------------------------------------------------------
    def _routed(self, keys: np.ndarray) -> np.ndarray:
        """Which (table, fingerprint) keys of shape (tables, m) belong to this shard."""
        return self._layout.route(keys, self.shard_bits) == self.index

    def add_many(self, fingerprints: np.ndarray, doc_ids: np.ndarray) -> int:
        """Store the pairs that belong here (uint64 or int64 fingerprints, doc ids >= 0);
        return how many were kept."""
        fps, ids = _check_pairs(fingerprints, doc_ids)
        if self.shard_bits:
            mine = np.zeros(len(fps), dtype=bool)
            for t in range(self._layout.n_tables):  # table by table: no (tables, m) temporary
                mine |= self._routed(self._layout.permute(fps, t))
            fps, ids = fps[mine], ids[mine]
        self._append(fps, ids)
        return len(fps)

    def add(self, fingerprint: int, doc_id: int) -> None:
        """Store one pair (O(1) until the buffer is full; see the module docstring)."""
        self.add_many(np.array([_check_fp(fingerprint)], dtype=_U64), np.array([doc_id]))

    def _append(self, fps: np.ndarray, ids: np.ndarray) -> None:
        n, m = self._n, len(fps)
        if n + m > 1 << _ROW_BITS:
            raise ValueError(f"a shard holds at most 2**{_ROW_BITS} rows (has {n}, adding {m})")
        if n + m > len(self._fp):  # grow geometrically: amortised O(1) per row
            size = max(n + m, 2 * len(self._fp))
            self._fp = np.concatenate([self._fp[:n], np.empty(size - n, dtype=_U64)])
            self._id = np.concatenate([self._id[:n], np.empty(size - n, dtype=np.int64)])
        self._fp[n:n + m], self._id[n:n + m] = fps, ids
        self._n = n + m
        if self._n - self._merged >= self.buffer_size:
            self.flush()

    def flush(self, *, into_main: bool = False) -> None:
        """Merge the buffer into the sorted entries (and delta into main when it got big)."""
        lay = self._layout
        rows = np.arange(self._merged, self._n, dtype=_U64)
        rows = rows[self._id[self._merged:self._n] >= 0]  # rows removed while buffered
        fps = self._fp[rows.astype(np.int64)]
        new, n = np.empty(len(rows) * lay.n_tables, dtype=_U64), 0
        for t in range(lay.n_tables):
            keys, t_rows = lay.permute(fps, t), rows
            if self.shard_bits:
                mine = self._routed(keys)
                keys, t_rows = keys[mine], rows[mine]
            new[n:n + len(keys)] = lay.entries(keys, t_rows, t)
            new[n:n + len(keys)].sort()
            n += len(keys)
        # tables occupy increasing ranges of entries, so the per-table sorted parts are sorted
        self._merged = self._n
        self._delta.merge(new[:n], adopt=True)
        per_flush = self.buffer_size * lay.n_tables
        limit = max(4 * per_flush, math.isqrt(2 * per_flush * len(self._main)))
        if into_main or len(self._delta) > limit:
            self._main.absorb(self._delta)

    # -- querying -----------------------------------------------------------------------
    def _lookup(self, fps: np.ndarray, keys: np.ndarray, routed: np.ndarray | None):
        """Matches of fingerprints ``fps`` (m,) with table keys ``keys`` (tables, m), in the
        (table, query) pairs where ``routed`` is true (all if None), and in the buffer.
        Returns (query index, doc id, distance) arrays; a doc id may repeat."""
        lo, hi = self._layout.bounds(keys)
        if routed is None:  # flattened (tables, m): query index = position % m
            lo, hi, query = lo.ravel(), hi.ravel(), np.arange(lo.size) % len(fps)
        else:
            lo, hi, query = lo[routed], hi[routed], np.nonzero(routed)[1]
        cand_q, cand_rows = [], []
        for run in (self._main, self._delta):
            if not len(run):
                continue
            start, end = run.ranges(lo, hi)
            count = end - start
            total = int(count.sum())
            if total:  # indexes start[i] .. end[i] - 1 for every i, flattened
                first = np.repeat(start - (np.cumsum(count) - count), count)
                found = run.entries[first + np.arange(total)]
                inside = (found >= np.repeat(lo, count)) & (found <= np.repeat(hi, count))
                cand_rows.append(found[inside] & _ROW_MASK)
                cand_q.append(np.repeat(query, count)[inside])
        n_buf = self._n - self._merged
        if n_buf:  # the buffer is small and unsorted: brute force, one query at a time
            buf = self._fp[self._merged:self._n]
            for q in range(len(fps)):
                rows = np.flatnonzero(np.bitwise_count(buf ^ fps[q]) <= self.k)
                if len(rows):
                    cand_rows.append(rows.astype(_U64) + _U64(self._merged))
                    cand_q.append(np.full(len(rows), q))
        if not cand_rows:
            return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64)
        rows = np.concatenate(cand_rows).astype(np.int64)
        query = np.concatenate(cand_q)
        dist = hamming(self._fp[rows], fps[query])  # exact: filters the truncation's extras
        ids = self._id[rows]
        hit = (dist <= self.k) & (ids >= 0)
        return query[hit], ids[hit], dist[hit]

    def query(self, fingerprint: int) -> list[tuple[int, int]]:
        """(doc id, distance) within k held by this shard, as ``PermutationTables.query``."""
        return self.query_many(np.array([_check_fp(fingerprint)], dtype=_U64))[0]

    def query_many(self, fingerprints: np.ndarray) -> list[list[tuple[int, int]]]:
        """``query`` for each fingerprint, vectorised."""
        return _query_chunks(self._layout, fingerprints, self._found)

    def _found(self, chunk: np.ndarray, keys: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        return [self._lookup(chunk, keys, self._routed(keys) if self.shard_bits else None)]

    # -- removing -----------------------------------------------------------------------
    def remove(self, fingerprint: int, doc_id: int) -> bool:
        """Remove one stored copy of the pair; True if this shard had it."""
        fp, doc_id = _check_fp(fingerprint), int(doc_id)
        if doc_id < 0:  # -1 marks removed rows: never "remove" those
            return False
        fps = np.array([fp], dtype=_U64)
        keys = self._layout.permute(fps)
        # the buffer, then the entries of one table that routes here (all tables hold all rows)
        buf = np.arange(self._merged, self._n)
        rows = [buf[(self._fp[buf] == fps[0]) & (self._id[buf] == doc_id)]]
        tables = np.flatnonzero(self._routed(keys)[:, 0])
        if len(tables):
            t = int(tables[0])
            lo = self._layout.entries(keys[t], _U64(0), t)[0]
            for run in (self._main, self._delta):
                found = run.find(lo, lo | _ROW_MASK)
                rows.append(found[(self._fp[found] == fps[0]) & (self._id[found] == doc_id)])
        rows = np.concatenate(rows)
        if not len(rows):
            return False
        self._id[rows[0]] = -1
        self._dead += 1
        if self._dead > max(self.buffer_size, self._n // 4):
            self._compact()
        return True

    def _compact(self) -> None:
        """Drop removed rows: renumber the live ones and rebuild the entries."""
        live = self._id[: self._n] >= 0
        fps, ids = self._fp[: self._n][live], self._id[: self._n][live]
        self._n = self._merged = self._dead = 0
        self._main, self._delta = _Run(self._layout), _Run(self._layout)
        self._append(fps, ids)
        self.flush(into_main=True)

    def count(self, table: int = 0) -> int:
        """Number of live entries of ``table`` in this shard (O(size); for checks)."""
        lay = self._layout
        lo = lay.table_part[table, 0]
        hi = lo | lay.table_span
        total = 0
        for run in (self._main, self._delta):
            total += int((self._id[run.find(lo, hi)] >= 0).sum())
        buf = self._fp[self._merged:self._n][self._id[self._merged:self._n] >= 0]
        return total + int(self._routed(lay.permute(buf, table)).sum())


def query_shards(shards: Mapping[int, TableShard] | Sequence[TableShard],
                 fingerprint: int) -> list[tuple[int, int]]:
    """Query the shards a fingerprint maps to (one per table) and merge their answers.

    ``shards`` maps shard number to shard (missing numbers are empty shards), or is a
    sequence indexed by shard number; all must share k, blocks and shard_bits.  The result
    is what ``PermutationTables.query`` returns on the same data.  Only each shard's
    ``query`` and attributes are used, so proxies to remote shards work too.
    """
    if not isinstance(shards, Mapping):
        shards = dict(enumerate(shards))
    if not shards:
        return []
    params = {(s.k, s.blocks, s.f, s.shard_bits) for s in shards.values()}
    if len(params) != 1 or any(s.index != j for j, s in shards.items()):
        raise ValueError(f"shards disagree on (k, blocks, f, shard_bits) or index: {sorted(params)}")
    k, blocks, f, shard_bits = params.pop()
    first = next(iter(shards.values()))  # a shard's own layout; a proxy to a remote shard has none
    lay = first._layout if isinstance(first, TableShard) else _layout(k, blocks, f, shard_bits)
    fp = _check_fp(fingerprint)
    wanted = np.unique(lay.route(lay.permute(np.array([fp], dtype=_U64)), shard_bits))
    pairs = [p for j in wanted.tolist() if j in shards for p in shards[j].query(fp)]
    return _best([i for i, _ in pairs], [d for _, d in pairs])


class PermutationTables:
    """Exact Hamming-distance search over 64-bit simhash fingerprints (see module doc).

    ``k``: maximum distance in bits (default 3); ``blocks``: number of bit blocks (default
    6, giving C(6, 3) = 20 tables); ``f``: fingerprint width in bits, only 64 is supported;
    ``shard_bits``: split each table into 2**shard_bits shards by key prefix (default 0,
    unsharded); ``buffer_size``: rows appended before they are merged into the sorted
    entries (default 4096; queries scan up to that many rows by brute force).
    """

    def __init__(self, k: int = DEFAULT_K, blocks: int = DEFAULT_BLOCKS, *, f: int = 64, shard_bits: int = 0,
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
        if j not in self._shards:
            self._shards[j] = TableShard(self._k, self._blocks, f=self._f, shard_bits=self.shard_bits,
                                         index=j, buffer_size=self.buffer_size)
        return self._shards[j]

    def add(self, fingerprint: int, doc_id: int) -> None:
        """Store a pair (adding the same pair twice stores two copies)."""
        self.add_many(np.array([_check_fp(fingerprint)], dtype=_U64), np.array([doc_id]))

    def add_many(self, fingerprints: np.ndarray, doc_ids: np.ndarray) -> None:
        """Store many pairs at once (uint64 or int64 fingerprints, doc ids >= 0)."""
        fps, ids = _check_pairs(fingerprints, doc_ids)
        if self.shard_bits == 0:
            self._shard(0)._append(fps, ids)
        else:
            route = np.stack([self._layout.route(self._layout.permute(fps, t), self.shard_bits)
                              for t in range(self.n_tables)])
            for j in np.unique(route).tolist():  # each shard gets the pairs it holds in any table
                mine = (route == j).any(axis=0)
                self._shard(j)._append(fps[mine], ids[mine])
        self._len += len(fps)

    def remove(self, fingerprint: int, doc_id: int) -> bool:
        """Remove one stored copy of the pair; True if it was there."""
        fp = _check_fp(fingerprint)
        route = self._layout.route(self._layout.permute(np.array([fp], dtype=_U64)), self.shard_bits)
        removed = False
        for j in np.unique(route).tolist():
            if j in self._shards:
                removed |= self._shards[j].remove(fp, doc_id)
        self._len -= removed
        return removed

    def query(self, fingerprint: int) -> list[tuple[int, int]]:
        """Every stored (doc id, distance) with distance <= k, each doc id once (at its
        smallest distance), sorted by (distance, doc id)."""
        return self.query_many(np.array([_check_fp(fingerprint)], dtype=_U64))[0]

    def query_many(self, fingerprints: np.ndarray) -> list[list[tuple[int, int]]]:
        """``query`` for each fingerprint, vectorised over fingerprints and tables."""
        return _query_chunks(self._layout, fingerprints, self._found)

    def _found(self, chunk: np.ndarray, keys: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        if self.shard_bits == 0:
            return [self._shards[0]._lookup(chunk, keys, None)] if self._shards else []
        route = self._layout.route(keys, self.shard_bits)
        return [self._shards[j]._lookup(chunk, keys, route == j)
                for j in np.unique(route).tolist() if j in self._shards]

    def keys(self, fingerprint: int) -> list[str]:
        """One string per table, ``"t<table>:<key prefix in hex>"``.

        Fingerprints within distance k share at least one string, so an external store can
        index these (e.g. an Elasticsearch keyword field), fetch candidates with one terms
        query and verify the Hamming distance itself.
        """
        keys = self._layout.permute(np.array([_check_fp(fingerprint)], dtype=_U64))[:, 0].tolist()
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
        """The shards by shard number (only non-empty ones exist).

        They are this object's own storage, not copies: hand them to other processes and
        query them with ``query_shards``; stop using this object afterwards.
        """
        return dict(self._shards)

    # -- persistence --------------------------------------------------------------------
    def state(self) -> dict[str, np.ndarray]:
        """Arrays to persist, e.g. ``np.savez(path, **tables.state())`` (views of the live
        arrays: save them before changing the tables).  Drops removed rows and merges each
        shard's buffer and delta into main first, so reloading needs no sort."""
        out = {"params": np.array([self._k, self._blocks, self._f, self.shard_bits,
                                   self.buffer_size], dtype=np.int64)}
        for j, shard in sorted(self._shards.items()):
            if shard._dead:
                shard._compact()
            shard.flush(into_main=True)
            out[f"s{j}.fp"], out[f"s{j}.id"] = shard._fp[: shard._n], shard._id[: shard._n]
            out[f"s{j}.entries"] = shard._main.export()
        return out

    @classmethod
    def from_state(cls, state: Mapping[str, np.ndarray]) -> "PermutationTables":
        """Rebuild from ``state()`` (or the ``np.load`` of its ``.npz``)."""
        k, blocks, f, shard_bits, buffer_size = (int(v) for v in state["params"])
        tables = cls(k, blocks, f=f, shard_bits=shard_bits, buffer_size=buffer_size)
        for name in state:
            if not name.endswith(".entries"):
                continue
            j = int(name[1:].split(".")[0])
            fps = np.asarray(state[f"s{j}.fp"], dtype=_U64)
            ids = np.asarray(state[f"s{j}.id"], dtype=np.int64)
            entries = np.asarray(state[name], dtype=_U64)
            if (len(fps) != len(ids) or np.any(entries[1:] <= entries[:-1])
                    or (len(entries) and int((entries & _ROW_MASK).max()) >= len(fps))):
                raise ValueError(f"corrupt state for shard {j}")
            shard = tables._shard(j)
            shard._fp, shard._id, shard._main = fps.copy(), ids.copy(), _Run(tables._layout, entries)
            shard._n = shard._merged = len(fps)
            tables._len += shard.count(0) if shard_bits else len(fps)
        return tables
