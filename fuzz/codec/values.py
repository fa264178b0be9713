"""Value streams: the varints, 32-bit ints, floats and texts fields are made of (read
from a bytes iterator, written to a bytearray), and the values the decoder generates from a
seed."""
from __future__ import annotations

import enum
import struct
from collections import deque
from itertools import chain, islice
from operator import length_hint
from typing import Iterable, Iterator, Sequence

import numpy as np

from driver.hal import OperandType

from .grammar import (INT32_MAX, INT32_MIN, MAX_LONG_RANK, MAX_NAME_BYTES, MAX_RANK,
                     MAX_REPEATED_RANK, NUM_SEEDS, REPEATED_RANK_BASE,
                     UINT32_MAX, CodecLimitError)


# --- generated values ------------------------------------------------------------------------

class ElementKind(enum.IntEnum):
    """How generated values look: chosen from the operand type so that they are useful
    (small non-negative ints that make sensible loop counters and sizes, finite floats in
    [-4, 4], 0/1 booleans, the full range for quantized bytes)."""
    BYTES = 0
    FLOAT32 = 1
    FLOAT16 = 2
    INT32 = 3
    UINT32 = 4
    BOOL = 5
    INT8 = 6
    INT16 = 7
    UINT16 = 8


_T = OperandType
ELEMENT_KIND_OF_TYPE: dict[int, ElementKind] = {
    _T.FLOAT32: ElementKind.FLOAT32, _T.TENSOR_FLOAT32: ElementKind.FLOAT32,
    _T.FLOAT16: ElementKind.FLOAT16, _T.TENSOR_FLOAT16: ElementKind.FLOAT16,
    _T.INT32: ElementKind.INT32, _T.TENSOR_INT32: ElementKind.INT32,
    _T.UINT32: ElementKind.UINT32,
    _T.BOOL: ElementKind.BOOL, _T.TENSOR_BOOL8: ElementKind.BOOL,
    _T.TENSOR_QUANT8_ASYMM: ElementKind.BYTES,
    _T.TENSOR_QUANT8_ASYMM_SIGNED: ElementKind.INT8, _T.TENSOR_QUANT8_SYMM: ElementKind.INT8,
    _T.TENSOR_QUANT8_SYMM_PER_CHANNEL: ElementKind.INT8,
    _T.TENSOR_QUANT16_SYMM: ElementKind.INT16, _T.TENSOR_QUANT16_ASYMM: ElementKind.UINT16,
}

_ITEM_SIZE = {ElementKind.BYTES: 1, ElementKind.FLOAT32: 4, ElementKind.FLOAT16: 2,
              ElementKind.INT32: 4, ElementKind.UINT32: 4, ElementKind.BOOL: 1,
              ElementKind.INT8: 1, ElementKind.INT16: 2, ElementKind.UINT16: 2}

_GOLDEN = np.uint64(0x9E37_79B9_7F4A_7C15)
_MIX1 = np.uint64(0xBF58_476D_1CE4_E5B9)
_MIX2 = np.uint64(0x94D0_49BB_1331_11EB)


def element_kind(operand_type: int) -> ElementKind:
    return ELEMENT_KIND_OF_TYPE.get(operand_type, ElementKind.BYTES)


def _generate(kind: ElementKind, seed: int, count: int) -> bytes:
    """``count`` elements of a splitmix64 stream keyed by (kind, seed), shaped by kind."""
    key = np.uint64((((int(kind) << 16) | seed) * 0xD1B5_4A32_D192_ED03 + 1) & ((1 << 64) - 1))
    x = np.arange(count, dtype=np.uint64) * _GOLDEN + key
    x ^= x >> np.uint64(30)
    x *= _MIX1
    x ^= x >> np.uint64(27)
    x *= _MIX2
    x ^= x >> np.uint64(31)
    if kind in (ElementKind.FLOAT32, ElementKind.FLOAT16):
        steps = (x >> np.uint64(11)) % np.uint64(2001)
        values = (steps.astype(np.int32) - 1000) / 250.0
        return values.astype("<f4" if kind == ElementKind.FLOAT32 else "<f2").tobytes()
    if kind == ElementKind.INT32:
        return (x % np.uint64(8)).astype("<i4").tobytes()
    if kind == ElementKind.UINT32:
        return (x % np.uint64(8)).astype("<u4").tobytes()
    if kind == ElementKind.BOOL:
        return (x & np.uint64(1)).astype(np.uint8).tobytes()
    if kind in (ElementKind.INT16, ElementKind.UINT16):
        return (x & np.uint64(0xFFFF)).astype("<u2").tobytes()
    return (x & np.uint64(0xFF)).astype(np.uint8).tobytes()


# Generated streams are cached per (kind, seed) and sliced: a value of n bytes is the first
# n bytes of its stream, so a shape change keeps the values it already had.
_stream_cache: dict[tuple[int, int], bytes] = {}
_stream_cache_bytes = 0
_STREAM_CACHE_LIMIT = 16 << 20
_prefix_tables: dict[int, dict[bytes, list[int]]] = {}
_PREFIX = 16


def generated_bytes(kind: ElementKind, seed: int, nbytes: int) -> bytes:
    """The first ``nbytes`` bytes of the value stream of (kind, seed)."""
    global _stream_cache_bytes
    if nbytes <= 0:
        return b""
    key = (kind, seed)
    stream = _stream_cache.get(key)
    if stream is None or len(stream) < nbytes:
        want = max(nbytes, 256, 2 * len(stream) if stream else 0)
        item = _ITEM_SIZE[kind]
        stream = _generate(kind, seed, -(-want // item))
        if _stream_cache_bytes + len(stream) > _STREAM_CACHE_LIMIT:
            _stream_cache.clear()
            _stream_cache_bytes = 0
        _stream_cache[key] = stream
        _stream_cache_bytes += len(stream)
    return stream[:nbytes]


def find_seed(kind: ElementKind, data: bytes) -> int | None:
    """The smallest seed whose stream of ``kind`` starts with ``data``, or None."""
    if not data:
        return 0
    table = _prefix_tables.get(kind)
    if table is None:
        table = {}
        for seed in range(NUM_SEEDS):
            table.setdefault(generated_bytes(kind, seed, _PREFIX), []).append(seed)
        _prefix_tables[kind] = table
    if len(data) >= _PREFIX:
        candidates: Iterable[int] = table.get(bytes(data[:_PREFIX]), ())
    else:
        candidates = sorted(seed for prefix, seeds in table.items()
                            if prefix.startswith(data) for seed in seeds)
    for seed in candidates:
        if generated_bytes(kind, seed, len(data)) == data:
            return seed
    return None


_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
_INF = float("inf")

# --- reading -------------------------------------------------------------------------------
# Parsing runs once per fuzz iteration (twice with the custom mutator), so the hot fields are
# read inline with ``next(it, 0)`` on a bytes iterator: a builtin call per byte and no
# per-field Python calls. Past the end of the input every field reads as zero. The readers
# of a record's fields (see grammar.Kind) take the input's bytes too, which those of short
# fields ignore, so that the fields of a record are all read alike.

def varint_tail(it: Iterator[int], first: int) -> int:
    """The rest of a varint whose first byte had its continuation bit set (at most 10
    bytes are read; a varint cut off by the end of the input ends there)."""
    result = first & 0x7F
    shift = 7
    while shift < 70:
        b = next(it, 0)
        result |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    return result


def read_varint(it: Iterator[int]) -> int:
    b = next(it, 0)
    return b if b < 0x80 else varint_tail(it, b)


def read_count(it: Iterator[int], cap: int) -> int:
    b = next(it, 0)
    if b >= 0x80:
        b = varint_tail(it, b)
    return b if b <= cap else cap


def capped(it: Iterator[int], first: int, cap: int) -> int:
    """A count whose first byte ``first`` (already read) is over ``cap``: the cap, unless
    the varint it starts ends under the cap."""
    return cap if first < 0x80 else min(varint_tail(it, first), cap)


def long_dimensions(it: Iterator[int], first: int) -> list[int]:
    """The dimensions of a rank whose first byte ``first`` (already read) is over MAX_RANK:
    a longer varint up to MAX_LONG_RANK is the rank, as many dimensions follow; one in the
    repeated range (see REPEATED_RANK_BASE) is followed by the one dimension it repeats;
    anything else reads as MAX_RANK."""
    if first < 0x80:
        return read_u32s(it, MAX_RANK)
    rank = varint_tail(it, first)
    if rank <= MAX_LONG_RANK:
        return read_u32s(it, rank)
    if REPEATED_RANK_BASE < rank <= REPEATED_RANK_BASE + MAX_REPEATED_RANK:
        return [read_u32(it)] * (rank - REPEATED_RANK_BASE)
    return read_u32s(it, MAX_RANK)


def read_dimensions(it: Iterator[int], data: bytes = b"") -> list[int]:
    """A rank, then as many dimensions."""
    n = next(it, 0)
    if not n:
        return []
    return read_u32s(it, n) if n <= MAX_RANK else long_dimensions(it, n)


def read_u32(it: Iterator[int], data: bytes = b"") -> int:
    b = next(it, 0)
    if b < 0x80:
        return b
    b = varint_tail(it, b)
    return b if b <= UINT32_MAX else UINT32_MAX


def _u32s_from(source: Iterator[int], n: int) -> list[int]:
    values = []
    for _ in range(n):
        b = next(source, 0)
        values.append(b if b < 0x80 else min(varint_tail(source, b), UINT32_MAX))
    return values


def read_u32s(it: Iterator[int], n: int) -> list[int]:
    """``n`` varints capped at UINT32_MAX (dimensions, indexes). Nearly always each is one
    byte: they are taken in one slice, and only decoded one by one when some is longer."""
    if n == 1:
        b = next(it, 0)
        return [b if b < 0x80 else min(varint_tail(it, b), UINT32_MAX)]
    values = list(islice(it, n))
    if len(values) < n or (values and max(values) >= 0x80):
        return finish_u32s(it, values, n)
    return values


def finish_u32s(it: Iterator[int], taken: list[int], n: int) -> list[int]:
    """``n`` varints of which the first ``taken`` bytes were read in one slice, found to be
    cut short by the end of the input or to hold a multi-byte varint."""
    if len(taken) < n:                      # the input ended: the rest reads as zeros
        taken += bytes(n - len(taken))
    if max(taken) < 0x80:
        return taken
    # The bytes taken start the n varints (each is at least one byte long): decode them
    # again one by one, reading on into the input where the varints go on.
    return _u32s_from(chain(taken, it), n)


def read_i32(it: Iterator[int], data: bytes = b"") -> int:
    value = read_varint(it)
    value = (value >> 1) ^ -(value & 1)
    return min(max(value, INT32_MIN), INT32_MAX)


def take(it: Iterator[int], data: bytes, n: int) -> bytes:
    """The next n bytes (fewer at the end of the input)."""
    if n <= 64:
        return bytes(islice(it, n)) if n > 0 else b""
    pos = len(data) - length_hint(it)
    chunk = data[pos:pos + n]
    if chunk:
        deque(islice(it, len(chunk)), maxlen=0)     # advance at C speed
    return chunk


def read_float(it: Iterator[int], wide: bool) -> float:
    size = 8 if wide else 4
    raw = bytes([next(it, 0) for _ in range(size)])
    value = (_F64 if wide else _F32).unpack(raw)[0]
    return _INF if value != value else value    # NaN never compares equal to itself


def read_text(it: Iterator[int], data: bytes) -> str:
    return take(it, data, read_count(it, MAX_NAME_BYTES)).decode("utf-8", "surrogateescape")


def read_memory_name(it: Iterator[int], data: bytes) -> str:
    # A memory's name becomes a memfd name, a C string: NUL bytes are dropped (before
    # decoding, so that the name encodes back to the same bytes).
    raw = take(it, data, read_count(it, MAX_NAME_BYTES)).replace(b"\0", b"")
    return raw.decode("utf-8", "surrogateescape")



def read_indexes(it: Iterator[int], cap: int) -> list[int]:
    n = next(it, 0)
    if n >= 0x80 or n > cap:
        n = capped(it, n, cap)
    elif not n:
        return []
    return read_u32s(it, n)


# --- writing -------------------------------------------------------------------------------
# Serializing runs once per custom mutation. Field checks are cheap comparisons; the
# message naming the field at fault is only built when a check fails, from ``where`` (a
# tuple such as ("main", "operand", 3)) and the field's name.

def place_name(where: tuple) -> str:
    return " ".join(str(part) for part in where)


def limit_error(where: tuple, what: str, value: object, allowed: str) -> CodecLimitError:
    return CodecLimitError(f"{place_name(where)}: {what} = {value} outside {allowed}")


def write_varint(out: bytearray, value: int, cap: int, where: tuple, what: str) -> None:
    if 0 <= value < 0x80 and value <= cap:
        out.append(value)
        return
    if not 0 <= value <= cap:
        raise limit_error(where, what, value, f"[0, {cap}]")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def write_u32(out: bytearray, value: int, where: tuple, what: str) -> None:
    if 0 <= value < 0x80:
        out.append(value)
    else:
        write_varint(out, value, UINT32_MAX, where, what)


def write_i32(out: bytearray, value: int, where: tuple, what: str) -> None:
    if not INT32_MIN <= value <= INT32_MAX:
        raise limit_error(where, what, value, "the int32 range")
    write_varint(out, (value << 1) if value >= 0 else ((-value) << 1) - 1, UINT32_MAX, where, what)


def _is_float32(value: float) -> bool:
    try:
        return _F32.unpack(_F32.pack(value))[0] == value
    except OverflowError:       # finite but beyond float32's range
        return False


def write_floats(out: bytearray, values: Sequence[float], count_cap: int | None,
                where: tuple, what: str) -> None:
    """A width flag, [a count,] then the values: float32 if all are exactly float32 (the
    usual case: the HAL's scales are floats), else float64."""
    narrow = all(_is_float32(v) for v in values)
    out.append(0 if narrow else 1)
    if count_cap is not None:
        write_varint(out, len(values), count_cap, where, f"{what} count")
    packer = _F32 if narrow else _F64
    for v in values:
        out += packer.pack(v)


def write_text(out: bytearray, value: str, where: tuple, what: str) -> None:
    raw = value.encode("utf-8", "surrogateescape")
    write_varint(out, len(raw), MAX_NAME_BYTES, where, f"{what} length")
    out += raw


#: Whether every element of a list of ints is a one-byte varint: one C call, where a
#: min() and a max() of it were two.
all_one_byte = frozenset(range(0x80)).issuperset


def write_dimensions(out: bytearray, dims: Sequence[int], where: tuple,
                     what: str = "dimension") -> None:
    """A rank, then the dimensions; a rank over MAX_RANK as a two-byte varint, and one over
    MAX_LONG_RANK of a dimension repeated as a repeated rank (see long_dimensions)."""
    rank = len(dims)
    if rank <= MAX_RANK:
        write_indexes(out, dims, MAX_RANK, where, what, "rank")
        return
    if rank <= MAX_LONG_RANK:
        out += bytes((0x80 | rank & 0x7F, rank >> 7))
        for d in dims:
            write_u32(out, d, where, what)
        return
    if rank > MAX_REPEATED_RANK or dims.count(dims[0]) != rank:
        raise limit_error(where, "rank", rank, f"[0, {MAX_LONG_RANK}], or up to "
                          f"{MAX_REPEATED_RANK} of one dimension repeated")
    write_varint(out, REPEATED_RANK_BASE + rank, REPEATED_RANK_BASE + MAX_REPEATED_RANK, where,
                 "rank")
    write_u32(out, dims[0], where, what)


def write_indexes(out: bytearray, indexes: Sequence[int], cap: int, where: tuple,
                  what: str, count_what: str | None = None) -> None:
    n = len(indexes)
    if n < 0x80 and n <= cap and all_one_byte(indexes):
        out.append(n)
        out += bytes(indexes)      # all one-byte varints: the usual case
        return
    write_varint(out, n, cap, where, count_what or f"{what} count")
    for i in indexes:
        write_u32(out, i, where, what)

