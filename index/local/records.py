"""A record as a row of ``dedup.sqlite``: its ``data`` blob (the compact arrays of
:mod:`dedup.record`) and the conversion of a row back to a :class:`~dedup.record.Record`.

Blob ``DR4`` (this version): ``DR3``'s arrays, the three arrays of sorted keys (shingle sketch, term
keys, term sample) each as an Elias-Fano code (``dedup._fast.ef_encode``: per key its low ``l`` bits
and its high part in unary, ``l`` chosen for the fewest bytes) instead of 3 bytes a key: a bottom-128
sketch of a 335-shingle page takes ~280 bytes instead of 384, ~150 fewer a record in all, the same
keys read back.  A 38-byte header -- magic ``b"DR4\0"``, uint16 lengths (in elements) of shingles,
terms, term sample, signature and positions (0 or the shingles'), uint16 byte length of the three codes,
uint32 ``shingle_count``, ``term_count``, float32 ``tdw_norm``, the signature's grid (float32 low and
step), uint16 byte length of ``extra`` -- then the codes, the float16 weights, the signature's grid
codes, the positions and ``extra``.  A record whose keys are not sorted, or whose codes or ``extra``
pass 65,535 bytes, is written as ``DR3`` (or ``DR2``).

Blob ``DR3``: ``DR2``'s layout with the shingle keys' positions (one byte a key,
:data:`dedup.record.POSITION_LEVELS`) between the signature's codes and ``extra``; a record without
positions (one stored before them, copied) is written as ``DR2``.

Blob ``DR2``, little-endian: a 36-byte header -- magic ``b"DR2\\0"``, uint16
lengths (in elements) of shingles, terms, term sample and signature, uint32 ``shingle_count``,
``term_count``, float32 ``tdw_norm``, the signature's grid (float32 low and step), uint32 byte
length of the ``extra`` JSON -- then the shingle sketch, term keys and term sample at 3 bytes a
key (:data:`dedup.record.KEY_BITS` = 24), the float16 weights, the signature's grid codes (one
byte a dimension) and ``extra`` as compact JSON (empty when ``{}``).  ~1 KB for a long page.
No compression: hashes do not compress.

Blob ``DR1`` (records stored before compact records: every feature at full width, ~7 KB) is
still read: its arrays are converted as :func:`dedup.record.compact_arrays` converts features,
so old and new records compare alike; new records are always written as ``DR3`` (or ``DR2``).
``DR2`` and ``DR1`` records have no positions (``shingle_positions`` empty: :mod:`dedup.spread` says None).
"""
from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np
import xxhash

from dedup import _fast
from dedup.bits import MASK64
from dedup.record import KEY_BITS, Record, compact_arrays, signature_grid

__all__ = ["encode_blob", "decode_blob", "record_of_row", "COLUMNS", "DB_NAME", "to_signed", "key_value", "key_text", "url_key"]

DB_NAME = "dedup.sqlite"
COLUMNS = "id, url, content_hash, title_key, simhash, status, duplicate_of, fetched_at, ref_id, sentences, title, data"

_MAGIC = b"DR2\0"
_MAGIC3 = b"DR3\0"  # DR2 + positions
_HEADER = struct.Struct("<4s4H2I3fI")
_MAGIC4 = b"DR4\0"  # DR3's arrays, the keys Elias-Fano coded
_HEADER4 = struct.Struct("<4s6H2I3fH")
_U32, _F16 = np.dtype("<u4"), np.dtype("<f2")
_KEY_BYTES = 3
assert KEY_BITS <= 8 * _KEY_BYTES
#: DR1: magic, uint32 lengths of signature, chunks, terms, shingles, weights and extra
_MAGIC1 = b"DR1\0"
_HEADER1 = struct.Struct("<4s6I4x")
_U64, _F32 = np.dtype("<u8"), np.dtype("<f4")


def _array(values: Any, dtype: np.dtype) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=dtype).reshape(-1)


def _check_keys(keys: np.ndarray) -> None:
    if keys.size and int(keys.max()) >> 8 * _KEY_BYTES:
        raise ValueError(f"record keys must be below 2**{8 * _KEY_BYTES}: make them with dedup.record.term_keys")


def _pack_keys(keys: np.ndarray) -> bytes:
    """24-bit keys (uint32 below 2**24) as 3 little-endian bytes each."""
    return keys.view(np.uint8).reshape(-1, 4)[:, :_KEY_BYTES].tobytes()


_KEY_MASK = np.uint32((1 << 8 * _KEY_BYTES) - 1)


def _unpack_keys(buf: bytes, n: int, offset: int) -> np.ndarray:
    """``n`` keys of 3 bytes from ``offset``: 4-byte reads 3 bytes apart (the last reads one byte
    past them, which a DR2 blob always has: weights or signature follow), masked to 24 bits."""
    if not n:
        return np.zeros(0, dtype=np.uint32)
    if offset + n * _KEY_BYTES + 1 > len(buf):  # nothing after the keys: pad a copy
        buf, offset = bytes(buf[offset:offset + n * _KEY_BYTES]) + b"\0", 0
    return np.ndarray((n,), dtype=_U32, buffer=buf, offset=offset, strides=(_KEY_BYTES,)) & _KEY_MASK


def encode_blob(record: Record, version: int = 4) -> bytes:
    """The ``data`` column of ``record``: its compact arrays, counts and ``extra`` (``version`` 3: as
    ``DR3``/``DR2`` were written, for what must write an older index's format)."""
    shingles, terms = _array(record.shingles, _U32), _array(record.terms, _U32)
    sample, weights = _array(record.term_sample, _U32), _array(record.weights, _F16)
    sig = _array(record.signature, np.float32)
    positions = _array(record.shingle_positions, np.uint8)
    if positions.size not in (0, shingles.size):
        raise ValueError(f"a record needs one position per shingle key or none (got {positions.size} for {shingles.size})")
    low, step = signature_grid(sig)  # the grid it is on (dedup.record.quantise_signature)
    codes = np.clip(np.rint((sig.astype(np.float64) - low) / step), 0, 255).astype(np.uint8)
    if weights.size != terms.size:
        raise ValueError(f"a record needs one weight per term (got {weights.size} weights, {terms.size} terms)")
    if max(shingles.size, terms.size, sample.size, sig.size) > 0xFFFF:
        raise ValueError("a record's arrays hold at most 65,535 values: make it with dedup.record.compact_arrays")
    extra = json.dumps(record.extra, separators=(",", ":")).encode("utf-8") if record.extra else b""
    for keys in (shingles, terms, sample):
        _check_keys(keys)
    codes_ = [_fast.ef_encode(keys) for keys in (shingles, terms, sample)] if version >= 4 else [None]
    if version >= 4 and None not in codes_ and sum(map(len, codes_)) <= 0xFFFF and len(extra) <= 0xFFFF:
        keys = b"".join(codes_)
        header = _HEADER4.pack(_MAGIC4, shingles.size, terms.size, sample.size, sig.size, positions.size, len(keys),
                               int(record.shingle_count), int(record.term_count), float(record.tdw_norm), low, step,
                               len(extra))
        return b"".join((header, keys, weights.tobytes(), codes.tobytes(), positions.tobytes(), extra))
    header = _HEADER.pack(_MAGIC3 if positions.size else _MAGIC, shingles.size, terms.size, sample.size, sig.size, int(record.shingle_count),
                          int(record.term_count), float(record.tdw_norm), low, step, len(extra))
    return b"".join((header, _pack_keys(shingles), _pack_keys(terms), _pack_keys(sample), weights.tobytes(),
                     codes.tobytes(), positions.tobytes(), extra))


def decode_blob(blob: bytes) -> dict[str, Any]:
    """The record fields held in a ``data`` column value (``DR4``, ``DR3``, ``DR2``, or ``DR1`` converted)."""
    magic = bytes(blob[:4])
    if magic == _MAGIC4:
        return _decode_dr4(blob)
    if magic == _MAGIC1:
        return _decode_dr1(blob)
    if magic not in (_MAGIC, _MAGIC3):
        raise ValueError(f"unknown record data format {magic!r}")
    _, n_sh, n_terms, n_sample, n_sig, shingle_count, term_count, norm, low, step, n_extra = \
        _HEADER.unpack_from(blob)
    out: dict[str, Any] = {"shingle_count": shingle_count, "term_count": term_count, "tdw_norm": norm}
    keys = _unpack_keys(blob, n_sh + n_terms + n_sample, _HEADER.size)  # the three arrays at once
    out["shingles"], out["terms"], out["term_sample"] = keys[:n_sh], keys[n_sh:n_sh + n_terms], keys[n_sh + n_terms:]
    offset = _HEADER.size + keys.size * _KEY_BYTES
    out["weights"] = np.frombuffer(blob, dtype=_F16, count=n_terms, offset=offset).copy()
    offset += 2 * n_terms
    out["signature"] = _signature(blob, n_sig, offset, low, step)
    offset += n_sig
    n_pos = n_sh if magic == _MAGIC3 else 0
    out["shingle_positions"] = np.frombuffer(blob, dtype=np.uint8, count=n_pos, offset=offset).copy()
    offset += n_pos
    out["extra"] = json.loads(bytes(blob[offset:offset + n_extra])) if n_extra else {}
    return out


def _decode_dr4(blob: bytes) -> dict[str, Any]:
    _, n_sh, n_terms, n_sample, n_sig, n_pos, n_keys, shingle_count, term_count, norm, low, step, n_extra = \
        _HEADER4.unpack_from(blob)
    out: dict[str, Any] = {"shingle_count": shingle_count, "term_count": term_count, "tdw_norm": norm}
    keys, offset = _fast.ef_decode(blob, _HEADER4.size, n_sh, n_terms, n_sample)  # the three arrays at once
    keys = np.frombuffer(keys, dtype=np.uint32)
    out["shingles"], out["terms"], out["term_sample"] = keys[:n_sh], keys[n_sh:n_sh + n_terms], keys[n_sh + n_terms:]
    if offset != _HEADER4.size + n_keys:
        raise ValueError(f"record data DR4: key codes of {offset - _HEADER4.size} bytes, header says {n_keys}")
    out["weights"] = np.frombuffer(blob, dtype=_F16, count=n_terms, offset=offset).copy()
    offset += 2 * n_terms
    out["signature"] = _signature(blob, n_sig, offset, low, step)
    offset += n_sig
    out["shingle_positions"] = np.frombuffer(blob, dtype=np.uint8, count=n_pos, offset=offset).copy()
    offset += n_pos
    out["extra"] = json.loads(bytes(blob[offset:offset + n_extra])) if n_extra else {}
    return out


def _signature(blob: bytes, n: int, offset: int, low: float, step: float) -> np.ndarray:
    codes = np.frombuffer(blob, dtype=np.uint8, count=n, offset=offset)
    # exact in float32: a power-of-two step times at most 255, plus a multiple of the step
    out = np.multiply(codes, step, dtype=np.float32)
    out += low
    return out


def _decode_dr1(blob: bytes) -> dict[str, Any]:
    _, n_sig, n_chunks, n_terms, n_shingles, n_weights, n_extra = _HEADER1.unpack_from(blob)
    full: dict[str, Any] = {}
    offset = _HEADER1.size
    for name, n, dtype in (("signature", n_sig, _F32), ("chunks", n_chunks, _U64), ("terms", n_terms, _U64),
                           ("shingles", n_shingles, _U64), ("weights", n_weights, _F32)):
        full[name] = np.frombuffer(blob, dtype=dtype, count=n, offset=offset)
        offset += n * dtype.itemsize
    extra = json.loads(bytes(blob[offset:offset + n_extra])) if n_extra else {}
    del full["chunks"]  # records keep no sentence simhashes (dedup.record)
    out = compact_arrays(shingle_count=int(extra.pop("shingle_count", n_shingles)), **full)
    out["extra"] = extra
    return out


def signature_of_blob(blob: bytes) -> np.ndarray:
    """The signature (float32) of a ``data`` column value, parsing no other array."""
    magic = bytes(blob[:4])
    if magic == _MAGIC4:
        _, _, n_terms, _, n_sig, _, n_keys, _, _, _, low, step, _ = _HEADER4.unpack_from(blob)
        return _signature(blob, n_sig, _HEADER4.size + n_keys + 2 * n_terms, low, step)
    if magic == _MAGIC1:
        n_sig = _HEADER1.unpack_from(blob)[1]
        return np.frombuffer(blob, dtype=_F32, count=n_sig, offset=_HEADER1.size)
    _, n_sh, n_terms, n_sample, n_sig, _, _, _, low, step, _ = _HEADER.unpack_from(blob)
    return _signature(blob, n_sig, _HEADER.size + _KEY_BYTES * (n_sh + n_terms + n_sample) + 2 * n_terms, low, step)


def to_signed(fp: int) -> int:
    """A 64-bit simhash as SQLite's signed INTEGER."""
    fp = int(fp) & MASK64
    return fp - (1 << 64) if fp >= 1 << 63 else fp


_HEX = frozenset("0123456789abcdef")


def key_value(key: str) -> bytes | str:
    """An exact key (``content_hash``, ``title_key``) as a schema-4 row holds it: the bytes of the 32 or 16
    lowercase hex digits the featurizer makes (xxh3-128, xxh3-64), any other text as it is (so a key and its
    column value map one to one: :func:`key_text` gives the key back)."""
    if len(key) in (16, 32) and _HEX.issuperset(key):
        return bytes.fromhex(key)
    return key


def key_text(value: bytes | str) -> str:
    """The exact key a column value of :func:`key_value` holds."""
    return value.hex() if isinstance(value, bytes) else value


def url_key(url: str) -> int:
    """The ``url_key`` column of ``url`` (schema 5): its xxh3-64 as SQLite's signed INTEGER."""
    return to_signed(xxhash.xxh3_64_intdigest(url.encode("utf-8", "surrogatepass")))


def record_of_row(row: tuple, ref_id: str | None = None) -> Record:
    """The :class:`Record` of a ``SELECT {COLUMNS}`` row (``ref_id``: the index's, for a row that holds none:
    schema 4 keeps it once, in ``meta``)."""
    rid, url, content_hash, title_key, simhash, status, duplicate_of, fetched_at, ref, sentences, title, data = row
    return Record(
        id=rid, url=url, content_hash=key_text(content_hash), title_key=key_text(title_key), simhash=simhash & MASK64,
        status=status, duplicate_of=duplicate_of, fetched_at=fetched_at, ref_id=ref if ref is not None else ref_id,
        sentences=sentences, title=title, **decode_blob(data),
    )
