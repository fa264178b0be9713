"""Bytes <-> FuzzCase: the structure-aware encoding of one fuzz input.

Two layers:

``parse`` / ``serialize``
    bytes <-> :class:`CaseSpec`, a description of the case that mirrors the HAL structures
    but leaves to the decoder what it can work out itself: where constants and request
    arguments are placed in their pools (``location=None``), how many consumers an operand
    has (``consumers=None``), and operand contents as a small recipe (:class:`ValueSpec`:
    zeros, values generated from a one-byte seed, or literal bytes). Mutating a spec (the
    custom mutator does) therefore changes types and shapes without breaking the layout.
``lower`` / ``lift``
    CaseSpec <-> FuzzCase (HAL Model + Request + ExecutionChoices). ``lift`` finds the most
    compact spec that lowers to exactly the given case, falling back to explicit locations
    and literal bytes where the case cannot be described more compactly.

``decode(data) = lower(parse(data))`` accepts any byte string: every count is capped, every
read past the end yields zeros, and sizes the decoder fills itself (zeros, generated values)
draw on a per-case budget, so decoding stays cheap. Values the HAL would reject (huge or
unknown dimensions, out-of-range indexes, unknown types and lifetimes, overlapping or
out-of-bounds locations, zero or infinite scales) all remain expressible.

``encode_parts(spec)`` serializes as ``serialize`` does, keeping the bytes of each part of the
spec (and of the operands, operations and arguments in it) in an :class:`EncodedSpec`: the
custom mutator changes a copy of such a spec and serializes only what changed.
``parse_parts(data)`` is ``encode_parts(parse(data))``.

``encode(case)`` is the exact inverse on everything ``decode`` produces:
``decode(encode(decode(b))) == decode(b)``. The one value the decoder never produces is a
NaN scale (read as +inf), because NaN would not compare equal to itself.

The wire format (``v`` a LEB128 varint, ``b`` a byte; counts are capped at the MAX_* limits
below, 32-bit fields at 2^32-1; every byte string is some case)::

    case      = choices model request
    choices   = b(path:2 second_path:2 measure:1 priority:2 has_deadline:1)
                b(preference:2 wait_fences:2 has_fenced_duration:1)
                v(loop timeout µs + 1, 0 = omitted) [v deadline µs] [v fence delay µs]
                [v fenced duration µs]
    model     = b(relaxed:1 has_extensions:1) v(#referenced) segments(operandValues)
                v(#pools) blob* subgraph(main) subgraph(referenced)* [v(#) (text v)*]
    blob      = b(name: 0-2 known, else text) segments
    segments  = v(#) (b0 v(zero length) | b1 v(n) n*b | b(2+element kind) b(seed) v(length))*
    subgraph  = v(#operands) operand* v(#operations) (v type  v(#) v*  v(#) v*)*
                v(#) v*(inputIndexes) v(#) v*(outputIndexes)
    operand   = b(lifetime:3 quant:1 consumers:1 location:1 channelQuant:1 extension:1)
                v(type) v(rank) v*(dims) [v raw lifetime when the 3 bits are 7]
                [b(wide) f32|f64 scale, zigzag-v zeroPoint] [v numberOfConsumers]
                (v v v location | placed: [v target (REFERENCE, SUBGRAPH)] [value (constants)])
                [b(wide) v(#) scales channelDim] [v(n) n*b extension]
    value     = b0 zeros | b1 v(n) n*b literal | b(2 + seed) generated
    request   = v(#pools) (b1 v token | b0 blob)* v(#inputs) argument* v(#outputs) argument*
    argument  = b(hasNoValue:1 location:1 size_delta:1) v(rank) v*(dims) [zigzag-v size_delta]
                (v v v location | placed unless hasNoValue: v pool, value)

Placed values are appended, 4-aligned, after their pool's explicit segments: constants in
operand order (main, then referenced), arguments inputs first. A placed value is as long as
its operand's storage (the argument's dimensions when given, plus size_delta) except a
literal, which is its bytes.
"""
from __future__ import annotations

import enum
import struct
from collections import deque
from dataclasses import dataclass, field, fields, replace
from itertools import chain, compress, islice
from math import copysign, prod
from operator import is_not, length_hint
from typing import Any, Callable, Iterable, Iterator, Sequence, TypeVar

import numpy as np

from driver.hal import (DataLocation, ExecutionPreference, ExtensionNameAndPrefix,
                        MeasureTiming, MemoryPool, Model, Operand, OperandExtraParams,
                        OperandLifeTime, OperandType, Operation, OperationType, Priority,
                        Request, RequestArgument, Subgraph, SymmPerChannelQuantParams)
from driver.hal.enums import SCALAR_OPERAND_TYPES
from driver.memory import Memory
from driver.operations.common import STORAGE_DTYPE

from ..case import ExecutionChoices, ExecutionPath, FuzzCase

# --- limits --------------------------------------------------------------------------------
# Generous enough for every conformance model (at most 218 operands, 61 operation inputs,
# 56 subgraph inputs, rank 5, 4 referenced subgraphs), small enough to keep decoding cheap.

UINT16_MAX = 0xFFFF
UINT32_MAX = 0xFFFF_FFFF
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1

MAX_REFERENCED = 8
MAX_OPERANDS = 256
MAX_OPERATIONS = 128
MAX_OPERATION_INPUTS = 128
MAX_OPERATION_OUTPUTS = 16
MAX_IO_INDEXES = 128
MAX_RANK = 8
MAX_POOLS = 8
MAX_SEGMENTS = 16
MAX_CHANNEL_SCALES = 64
MAX_EXTENSION_BYTES = 64
MAX_EXTENSIONS = 8
MAX_NAME_BYTES = 64
MAX_REQUEST_ARGUMENTS = 128
MAX_WAIT_FENCES = 3

#: Largest single value the decoder generates from a seed.
MAX_GENERATED_VALUE = 64 * 1024
#: Per case: bytes the decoder fills itself (zeros + generated values) ...
FILL_BUDGET = 1 << 20
#: ... of which generated (the more expensive kind).
GENERATED_BUDGET = 256 * 1024
#: Request buffers may be this many bytes larger or smaller than their operand needs.
MAX_SIZE_DELTA = 1 << 20

#: Time choices are encoded in microseconds and capped so a fuzz input can never make one
#: execution slow: a loop runs at most 100 ms unless the timeout is omitted (2 s default).
LOOP_TIMEOUT_CAP_US = 100_000
DEADLINE_CAP_US = 10_000_000
WAIT_FENCE_DELAY_CAP_US = 5_000
FENCED_DURATION_CAP_US = 10_000_000

#: Seeds an operand value can name (its recipe byte is 2 + seed).
NUM_SEEDS = 254

MEMORY_NAMES = ("ashmem", "mmap_fd", "hardware_buffer_blob")


_P = TypeVar("_P")
_D = TypeVar("_D", "OperandSpec", "ArgumentSpec")


class CodecLimitError(ValueError):
    """A case or spec holds something the encoding cannot express (a count over its cap, a
    time that is not a whole number of microseconds, ...)."""


# --- generated values ----------------------------------------------------------------------

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


# --- the spec ------------------------------------------------------------------------------

class ValueKind(enum.IntEnum):
    ZERO = 0
    LITERAL = 1
    GENERATED = 2


@dataclass(frozen=True)
class ValueSpec:
    """The content of a constant or request argument whose place the decoder chooses. Its
    length follows from the operand type and dimensions (plus a request argument's
    ``size_delta``), except for literals, which are exactly ``data``. Immutable, so that
    operands and arguments can share one (the decoder shares one per seed)."""
    kind: ValueKind = ValueKind.ZERO
    seed: int = 0          # GENERATED: 0 .. NUM_SEEDS-1
    data: bytes = b""      # LITERAL


_ZERO_VALUE = ValueSpec()


@dataclass
class Segment:
    """A run of explicitly laid-out pool content."""
    kind: ValueKind = ValueKind.ZERO
    length: int = 0                        # ZERO, GENERATED
    element: ElementKind = ElementKind.BYTES   # GENERATED
    seed: int = 0                          # GENERATED: 0..255
    data: bytes = b""                      # LITERAL


@dataclass
class BlobSpec:
    """A memory pool: explicit segments first, then the values placed by the decoder."""
    name: str = "ashmem"
    segments: list[Segment] = field(default_factory=list)


@dataclass
class OperandSpec:
    type: OperandType | int
    dimensions: list[int] = field(default_factory=list)
    scale: float = 0.0
    zeroPoint: int = 0
    lifetime: OperandLifeTime | int = OperandLifeTime.TEMPORARY_VARIABLE
    #: None: counted from the operations of the subgraph.
    consumers: int | None = None
    #: None: placed by the decoder. CONSTANT_COPY values go to operandValues,
    #: CONSTANT_REFERENCE values to pool ``target``, SUBGRAPH operands refer to referenced
    #: subgraph ``target``; any other lifetime gets the all-zero location.
    location: DataLocation | None = None
    target: int = 0
    value: ValueSpec = _ZERO_VALUE
    extraParams: OperandExtraParams = field(default_factory=OperandExtraParams)


@dataclass
class SubgraphSpec:
    operands: list[OperandSpec] = field(default_factory=list)
    operations: list[Operation] = field(default_factory=list)
    inputIndexes: list[int] = field(default_factory=list)
    outputIndexes: list[int] = field(default_factory=list)


@dataclass
class ModelSpec:
    main: SubgraphSpec = field(default_factory=SubgraphSpec)
    referenced: list[SubgraphSpec] = field(default_factory=list)
    operandValues: list[Segment] = field(default_factory=list)
    pools: list[BlobSpec] = field(default_factory=list)
    relaxComputationFloat32toFloat16: bool = False
    extensionNameToPrefix: list[ExtensionNameAndPrefix] = field(default_factory=list)

    def subgraphs(self) -> list[SubgraphSpec]:
        return [self.main, *self.referenced]


@dataclass
class ArgumentSpec:
    hasNoValue: bool = False
    dimensions: list[int] = field(default_factory=list)
    #: None: placed by the decoder in request pool ``target`` (no location for hasNoValue).
    location: DataLocation | None = None
    target: int = 0
    value: ValueSpec = _ZERO_VALUE
    #: Added to the operand's storage size (not for literals): < 0 gives a too-small buffer.
    size_delta: int = 0


@dataclass
class RequestPoolSpec:
    """A hidl_memory pool (``token`` None) or a driver-allocated buffer's token."""
    token: int | None = None
    blob: BlobSpec = field(default_factory=BlobSpec)


@dataclass
class RequestSpec:
    inputs: list[ArgumentSpec] = field(default_factory=list)
    outputs: list[ArgumentSpec] = field(default_factory=list)
    pools: list[RequestPoolSpec] = field(default_factory=list)


@dataclass
class CaseSpec:
    model: ModelSpec = field(default_factory=ModelSpec)
    request: RequestSpec = field(default_factory=RequestSpec)
    choices: ExecutionChoices = field(default_factory=ExecutionChoices)


# --- enum tables ---------------------------------------------------------------------------

_OPERAND_TYPES = {int(t): t for t in OperandType}
_OPERATION_TYPES = {int(t): t for t in OperationType}
_LIFETIMES = {int(t): t for t in OperandLifeTime}
# Codes that fit one varint byte (all but OEM's) are looked up by index: cheaper than a dict
# lookup with a default, and decoding does one per operand and operation.
_OPERAND_TYPE_OF_BYTE = tuple(_OPERAND_TYPES.get(b, b) for b in range(0x80))
_OPERATION_TYPE_OF_BYTE = tuple(_OPERATION_TYPES.get(b, b) for b in range(0x80))
_PATHS = tuple(ExecutionPath)
_PRIORITIES = (Priority.LOW, Priority.MEDIUM, Priority.HIGH, Priority.MEDIUM)
_PREFERENCES = (ExecutionPreference.LOW_POWER, ExecutionPreference.FAST_SINGLE_ANSWER,
                ExecutionPreference.SUSTAINED_SPEED, ExecutionPreference.FAST_SINGLE_ANSWER)
_KINDS = tuple(ElementKind)
_MEASURE = (MeasureTiming.NO, MeasureTiming.YES)

# Plain ints: they are compared with raw codes as well as with enum members.
_COPY = int(OperandLifeTime.CONSTANT_COPY)
_REFERENCE = int(OperandLifeTime.CONSTANT_REFERENCE)
_SUBGRAPH = int(OperandLifeTime.SUBGRAPH)
_PLACED_LIFETIMES = frozenset((_COPY, _REFERENCE, _SUBGRAPH))
_LIFETIME_ESCAPE = 7        # operand head lifetime bits: the raw lifetime follows
_LIFETIME_OF_CODE = tuple(_LIFETIMES.get(b, b) for b in range(_LIFETIME_ESCAPE))

#: A value recipe byte -> its ValueSpec (1, a literal, is followed by its bytes).
_VALUE_OF_TAG: tuple[ValueSpec, ...] = (
    _ZERO_VALUE, ValueSpec(ValueKind.LITERAL),
    *(ValueSpec(ValueKind.GENERATED, seed) for seed in range(NUM_SEEDS)))

# Operand head byte.
_OP_QUANT = 0x08
_OP_CONSUMERS = 0x10
_OP_LOCATION = 0x20
_OP_CHANNEL_QUANT = 0x40
_OP_EXTENSION = 0x80
# Request argument head byte.
_ARG_NO_VALUE = 0x01
_ARG_LOCATION = 0x02
_ARG_DELTA = 0x04
# Choices bytes.
_CH_DEADLINE = 0x80
_CH_FENCED_DURATION = 0x10

_GENERATED = ValueKind.GENERATED

_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
_INF = float("inf")


# --- reading -------------------------------------------------------------------------------
# Parsing runs once per fuzz iteration (twice with the custom mutator), so the hot fields are
# read inline with ``next(it, 0)`` on a bytes iterator: a builtin call per byte and no
# per-field Python calls. Past the end of the input every field reads as zero.

def _varint_tail(it: Iterator[int], first: int) -> int:
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


def _varint(it: Iterator[int]) -> int:
    b = next(it, 0)
    return b if b < 0x80 else _varint_tail(it, b)


def _count(it: Iterator[int], cap: int) -> int:
    b = next(it, 0)
    if b >= 0x80:
        b = _varint_tail(it, b)
    return b if b <= cap else cap


def _capped(it: Iterator[int], first: int, cap: int) -> int:
    """A count whose first byte ``first`` (already read) is over ``cap``: the cap, unless
    the varint it starts ends under the cap."""
    return cap if first < 0x80 else min(_varint_tail(it, first), cap)


def _u32(it: Iterator[int]) -> int:
    b = next(it, 0)
    if b < 0x80:
        return b
    b = _varint_tail(it, b)
    return b if b <= UINT32_MAX else UINT32_MAX


def _u32s_from(source: Iterator[int], n: int) -> list[int]:
    values = []
    for _ in range(n):
        b = next(source, 0)
        values.append(b if b < 0x80 else min(_varint_tail(source, b), UINT32_MAX))
    return values


def _u32s(it: Iterator[int], n: int) -> list[int]:
    """``n`` varints capped at UINT32_MAX (dimensions, indexes). Nearly always each is one
    byte: they are taken in one slice, and only decoded one by one when some is longer."""
    if n == 1:
        b = next(it, 0)
        return [b if b < 0x80 else min(_varint_tail(it, b), UINT32_MAX)]
    values = list(islice(it, n))
    if len(values) < n or (values and max(values) >= 0x80):
        return _finish_u32s(it, values, n)
    return values


def _finish_u32s(it: Iterator[int], taken: list[int], n: int) -> list[int]:
    """``n`` varints of which the first ``taken`` bytes were read in one slice, found to be
    cut short by the end of the input or to hold a multi-byte varint."""
    if len(taken) < n:                      # the input ended: the rest reads as zeros
        taken += bytes(n - len(taken))
    if max(taken) < 0x80:
        return taken
    # The bytes taken start the n varints (each is at least one byte long): decode them
    # again one by one, reading on into the input where the varints go on.
    return _u32s_from(chain(taken, it), n)


def _i32(it: Iterator[int]) -> int:
    value = _varint(it)
    value = (value >> 1) ^ -(value & 1)
    return min(max(value, INT32_MIN), INT32_MAX)


def _take(it: Iterator[int], data: bytes, n: int) -> bytes:
    """The next n bytes (fewer at the end of the input)."""
    if n <= 64:
        return bytes(islice(it, n)) if n > 0 else b""
    pos = len(data) - length_hint(it)
    chunk = data[pos:pos + n]
    if chunk:
        deque(islice(it, len(chunk)), maxlen=0)     # advance at C speed
    return chunk


def _float(it: Iterator[int], wide: bool) -> float:
    size = 8 if wide else 4
    raw = bytes([next(it, 0) for _ in range(size)])
    value = (_F64 if wide else _F32).unpack(raw)[0]
    return _INF if value != value else value    # NaN never compares equal to itself


def _text(it: Iterator[int], data: bytes) -> str:
    return _take(it, data, _count(it, MAX_NAME_BYTES)).decode("utf-8", "surrogateescape")


def _memory_name(it: Iterator[int], data: bytes) -> str:
    # A memory's name becomes a memfd name, a C string: NUL bytes are dropped (before
    # decoding, so that the name encodes back to the same bytes).
    raw = _take(it, data, _count(it, MAX_NAME_BYTES)).replace(b"\0", b"")
    return raw.decode("utf-8", "surrogateescape")


def _wide_operand_type(it: Iterator[int], first: int) -> OperandType | int:
    value = min(_varint_tail(it, first), UINT32_MAX)
    return _OPERAND_TYPES.get(value, value)


def _wide_operation_type(it: Iterator[int], first: int) -> OperationType | int:
    value = min(_varint_tail(it, first), UINT32_MAX)
    return _OPERATION_TYPES.get(value, value)


def _indexes(it: Iterator[int], cap: int) -> list[int]:
    n = next(it, 0)
    if n >= 0x80 or n > cap:
        n = _capped(it, n, cap)
    elif not n:
        return []
    return _u32s(it, n)


def _read_value(it: Iterator[int], data: bytes) -> ValueSpec:
    tag = next(it, 0)
    if tag == 1:
        return ValueSpec(ValueKind.LITERAL, 0, _take(it, data, _varint(it)))
    return _VALUE_OF_TAG[tag]


def _read_segments(it: Iterator[int], data: bytes) -> list[Segment]:
    segments = []
    for _ in range(_count(it, MAX_SEGMENTS)):
        tag = next(it, 0)
        if tag == 0:
            segments.append(Segment(ValueKind.ZERO, _count(it, FILL_BUDGET)))
        elif tag == 1:
            segments.append(Segment(ValueKind.LITERAL, data=_take(it, data, _varint(it))))
        else:
            kind = _KINDS[(tag - 2) % len(_KINDS)]
            seed = next(it, 0)
            segments.append(Segment(ValueKind.GENERATED, _count(it, MAX_GENERATED_VALUE),
                                    kind, seed))
    return segments


def _blob_name(it: Iterator[int], data: bytes) -> str:
    code = next(it, 0)
    return MEMORY_NAMES[code] if code < len(MEMORY_NAMES) else _memory_name(it, data)


def _read_blob(it: Iterator[int], data: bytes) -> BlobSpec:
    name = _blob_name(it, data)
    return BlobSpec(name, _read_segments(it, data))


def _read_operands(it: Iterator[int], data: bytes) -> list[OperandSpec]:
    """A subgraph's operands: the common operand (a lifetime in range, no quantization,
    counted consumers, placed, no extra params, one-byte type and dimensions) read inline,
    with locals rather than globals, as the decoder does: parse_parts runs on every input
    the custom mutator has not seen."""
    nx, take, finish = next, islice, _finish_u32s
    type_of, lifetime_of = _OPERAND_TYPE_OF_BYTE, _LIFETIME_OF_CODE
    operand_of, extra_of, read_value = OperandSpec, OperandExtraParams, _read_value
    operands: list[OperandSpec] = []
    append = operands.append
    for _ in range(_count(it, MAX_OPERANDS)):
        head = nx(it, 0)
        operand_type = nx(it, 0)
        operand_type = (type_of[operand_type] if operand_type < 0x80
                        else _wide_operand_type(it, operand_type))
        rank = nx(it, 0)
        if not rank:
            dims = []
        elif rank <= MAX_RANK:
            dims = list(take(it, rank))
            if len(dims) < rank or max(dims) >= 0x80:
                dims = finish(it, dims, rank)
        else:
            dims = _u32s(it, _capped(it, rank, MAX_RANK))
        if head >= _LIFETIME_ESCAPE:
            append(_read_flagged_operand(it, data, head, operand_type, dims))
        elif head == _COPY:
            append(operand_of(operand_type, dims, 0.0, 0, lifetime_of[head], None, None, 0,
                              read_value(it, data), extra_of()))
        elif head == _REFERENCE:
            target = _u32(it)
            append(operand_of(operand_type, dims, 0.0, 0, lifetime_of[head], None, None,
                              target, read_value(it, data), extra_of()))
        else:
            append(operand_of(operand_type, dims, 0.0, 0, lifetime_of[head], None, None,
                              _u32(it) if head == _SUBGRAPH else 0, _ZERO_VALUE, extra_of()))
    return operands


def _read_flagged_operand(it: Iterator[int], data: bytes, head: int,
                          operand_type: OperandType | int, dims: list[int]) -> OperandSpec:
    """The rest of an operand whose head byte has flags or an escaped lifetime."""
    lifetime = head & 7
    if lifetime == _LIFETIME_ESCAPE:
        lifetime = _u32(it)
    lifetime = _LIFETIMES.get(lifetime, lifetime)
    spec = OperandSpec(operand_type, dims, lifetime=lifetime)
    if head & _OP_QUANT:
        wide = next(it, 0) & 1
        spec.scale = _float(it, bool(wide))
        spec.zeroPoint = _i32(it)
    if head & _OP_CONSUMERS:
        spec.consumers = _u32(it)
    if head & _OP_LOCATION:
        spec.location = DataLocation(_u32(it), _u32(it), _u32(it))
    else:
        if lifetime == _REFERENCE or lifetime == _SUBGRAPH:
            spec.target = _u32(it)
        if lifetime == _COPY or lifetime == _REFERENCE:
            spec.value = _read_value(it, data)
    _read_extra(it, data, head, spec.extraParams)
    return spec


def _read_extra(it: Iterator[int], data: bytes, head: int, extra: OperandExtraParams) -> None:
    if head & _OP_CHANNEL_QUANT:
        wide = bool(next(it, 0) & 1)
        scales = [_float(it, wide) for _ in range(_count(it, MAX_CHANNEL_SCALES))]
        extra.channelQuant = SymmPerChannelQuantParams(scales, _u32(it))
    if head & _OP_EXTENSION:
        extra.extension = _take(it, data, _count(it, MAX_EXTENSION_BYTES))


def _read_operation_indexes(it: Iterator[int]) -> tuple[list[int], list[int]]:
    """An operation's inputs and outputs (one-byte counts and indexes read inline): shared
    by parse and decode."""
    nx = next
    n = nx(it, 0)       # (every one-byte count is within MAX_OPERATION_INPUTS)
    if not n:
        inputs = []
    elif n < 0x80:
        inputs = list(islice(it, n))
        if len(inputs) < n or max(inputs) >= 0x80:
            inputs = _finish_u32s(it, inputs, n)
    else:
        inputs = _u32s(it, _capped(it, n, MAX_OPERATION_INPUTS))
    n = nx(it, 0)
    if n == 1:          # one output: the usual case
        b = nx(it, 0)
        outputs = [b if b < 0x80 else min(_varint_tail(it, b), UINT32_MAX)]
    elif not n:
        outputs = []
    else:
        outputs = _u32s(it, n if n <= MAX_OPERATION_OUTPUTS
                        else _capped(it, n, MAX_OPERATION_OUTPUTS))
    return inputs, outputs


def _read_operations(it: Iterator[int]) -> list[Operation]:
    """A subgraph's operations, one-byte codes read inline (see _read_operands)."""
    nx, indexes = next, _read_operation_indexes
    type_of, operation_of = _OPERATION_TYPE_OF_BYTE, Operation
    operations: list[Operation] = []
    append = operations.append
    for _ in range(_count(it, MAX_OPERATIONS)):
        operation_type = nx(it, 0)
        operation_type = (type_of[operation_type] if operation_type < 0x80
                          else _wide_operation_type(it, operation_type))
        inputs, outputs = indexes(it)
        append(operation_of(operation_type, inputs, outputs))
    return operations


def _read_subgraph(it: Iterator[int], data: bytes) -> SubgraphSpec:
    operands = _read_operands(it, data)
    operations = _read_operations(it)
    inputs = _indexes(it, MAX_IO_INDEXES)
    return SubgraphSpec(operands, operations, inputs, _indexes(it, MAX_IO_INDEXES))


def _read_extensions(it: Iterator[int], data: bytes) -> list[ExtensionNameAndPrefix]:
    extensions = []
    for _ in range(_count(it, MAX_EXTENSIONS)):
        name = _text(it, data)
        extensions.append(ExtensionNameAndPrefix(name, min(_varint(it), UINT16_MAX)))
    return extensions


def _read_model_head(it: Iterator[int],
                     data: bytes) -> tuple[int, int, list[Segment], list[BlobSpec]]:
    """The model up to its subgraphs: flags, referenced count, operandValues, pools."""
    flags = next(it, 0)
    referenced_count = _count(it, MAX_REFERENCED)
    values = _read_segments(it, data)
    pools = [_read_blob(it, data) for _ in range(_count(it, MAX_POOLS))]
    return flags, referenced_count, values, pools


def _read_model(it: Iterator[int], data: bytes) -> ModelSpec:
    flags, referenced_count, values, pools = _read_model_head(it, data)
    main = _read_subgraph(it, data)
    referenced = [_read_subgraph(it, data) for _ in range(referenced_count)]
    extensions = _read_extensions(it, data) if flags & 2 else []
    return ModelSpec(main, referenced, values, pools, bool(flags & 1), extensions)


def _read_dims(it: Iterator[int]) -> list[int]:
    """A request argument's dimensions."""
    return _indexes(it, MAX_RANK)


def _read_argument(it: Iterator[int], data: bytes) -> ArgumentSpec:
    head = next(it, 0)
    dims = _read_dims(it)
    if head == 0:
        # The common case: a value placed by the decoder, no size delta.
        target = _u32(it)
        return ArgumentSpec(False, dims, None, target, _read_value(it, data), 0)
    spec = ArgumentSpec(bool(head & _ARG_NO_VALUE), dims)
    if head & _ARG_DELTA:
        spec.size_delta = min(max(_i32(it), -MAX_SIZE_DELTA), MAX_SIZE_DELTA)
    if head & _ARG_LOCATION:
        spec.location = DataLocation(_u32(it), _u32(it), _u32(it))
    elif not spec.hasNoValue:
        spec.target = _u32(it)
        spec.value = _read_value(it, data)
    return spec


def _read_request(it: Iterator[int], data: bytes) -> RequestSpec:
    pools = []
    for _ in range(_count(it, MAX_POOLS)):
        if next(it, 0) & 1:
            pools.append(RequestPoolSpec(token=_u32(it)))
        else:
            pools.append(RequestPoolSpec(blob=_read_blob(it, data)))
    inputs = [_read_argument(it, data) for _ in range(_count(it, MAX_REQUEST_ARGUMENTS))]
    outputs = [_read_argument(it, data) for _ in range(_count(it, MAX_REQUEST_ARGUMENTS))]
    return RequestSpec(inputs, outputs, pools)


def _read_choices(it: Iterator[int]) -> ExecutionChoices:
    a, b = next(it, 0), next(it, 0)
    wait_fences = (b >> 2) & 3
    loop = _varint(it)
    deadline = min(_varint(it), DEADLINE_CAP_US) * 1000 if a & _CH_DEADLINE else None
    delay = min(_varint(it), WAIT_FENCE_DELAY_CAP_US) * 1000 if wait_fences else 0
    duration = (min(_varint(it), FENCED_DURATION_CAP_US) * 1000
                if b & _CH_FENCED_DURATION else None)
    return ExecutionChoices(
        _PATHS[a & 3], _PATHS[(a >> 2) & 3], _MEASURE[(a >> 4) & 1], _PREFERENCES[b & 3],
        _PRIORITIES[(a >> 5) & 3], deadline,
        min(loop - 1, LOOP_TIMEOUT_CAP_US) * 1000 if loop else None,
        wait_fences, delay, duration)


#: The most bytes the execution choices at the head of an input take: two bytes and at most
#: four varints of at most 10 bytes.
CHOICES_MAX_BYTES = 2 + 4 * 10


def read_choices(data: bytes) -> tuple[ExecutionChoices, int]:
    """The execution choices an input starts with, and how many of its bytes they take
    (without parsing the rest)."""
    head = bytes(data[:CHOICES_MAX_BYTES])
    it = iter(head)
    choices = _read_choices(it)
    return choices, len(head) - length_hint(it)


def with_choices(data: bytes, choices: ExecutionChoices) -> bytes:
    """``data`` with its execution choices replaced; the rest decodes as it did."""
    _, used = read_choices(data)
    out = bytearray()
    _choices_out(out, choices)
    return bytes(out) + bytes(data[used:])


def parse(data: bytes) -> CaseSpec:
    """Any byte string -> its CaseSpec (never raises)."""
    data = bytes(data)
    it = iter(data)
    choices = _read_choices(it)
    model = _read_model(it, data)
    return CaseSpec(model, _read_request(it, data), choices)


# --- writing -------------------------------------------------------------------------------
# Serializing runs once per custom mutation. Field checks are cheap comparisons; the
# message naming the field at fault is only built when a check fails, from ``where`` (a
# tuple such as ("main", "operand", 3)) and the field's name.

def _place(where: tuple) -> str:
    return " ".join(str(part) for part in where)


def _limit(where: tuple, what: str, value: object, allowed: str) -> CodecLimitError:
    return CodecLimitError(f"{_place(where)}: {what} = {value} outside {allowed}")


def _varint_out(out: bytearray, value: int, cap: int, where: tuple, what: str) -> None:
    if 0 <= value < 0x80 and value <= cap:
        out.append(value)
        return
    if not 0 <= value <= cap:
        raise _limit(where, what, value, f"[0, {cap}]")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _u32_out(out: bytearray, value: int, where: tuple, what: str) -> None:
    if 0 <= value < 0x80:
        out.append(value)
    else:
        _varint_out(out, value, UINT32_MAX, where, what)


def _i32_out(out: bytearray, value: int, where: tuple, what: str) -> None:
    if not INT32_MIN <= value <= INT32_MAX:
        raise _limit(where, what, value, "the int32 range")
    _varint_out(out, (value << 1) if value >= 0 else ((-value) << 1) - 1, UINT32_MAX, where, what)


def _is_float32(value: float) -> bool:
    try:
        return _F32.unpack(_F32.pack(value))[0] == value
    except OverflowError:       # finite but beyond float32's range
        return False


def _floats_out(out: bytearray, values: Sequence[float], count_cap: int | None,
                where: tuple, what: str) -> None:
    """A width flag, [a count,] then the values: float32 if all are exactly float32 (the
    usual case: the HAL's scales are floats), else float64."""
    narrow = all(_is_float32(v) for v in values)
    out.append(0 if narrow else 1)
    if count_cap is not None:
        _varint_out(out, len(values), count_cap, where, f"{what} count")
    packer = _F32 if narrow else _F64
    for v in values:
        out += packer.pack(v)


def _text_out(out: bytearray, value: str, where: tuple, what: str) -> None:
    raw = value.encode("utf-8", "surrogateescape")
    _varint_out(out, len(raw), MAX_NAME_BYTES, where, f"{what} length")
    out += raw


#: Whether every element of a list of ints is a one-byte varint: one C call, where a
#: min() and a max() of it were two.
_all_one_byte = frozenset(range(0x80)).issuperset
_LITERAL = ValueKind.LITERAL


def _value_out(out: bytearray, value: ValueSpec, where: tuple) -> None:
    if value.kind == _GENERATED:
        if not 0 <= value.seed < NUM_SEEDS:
            raise _limit(where, "value seed", value.seed, f"[0, {NUM_SEEDS})")
        out.append(2 + value.seed)
    elif value.kind == _LITERAL:
        out.append(1)
        _varint_out(out, len(value.data), 1 << 62, where, "literal length")
        out += value.data
    else:
        out.append(0)


def _segments_out(out: bytearray, segments: Sequence[Segment], where: tuple) -> None:
    _varint_out(out, len(segments), MAX_SEGMENTS, where, "segment count")
    for segment in segments:
        if segment.kind == ValueKind.ZERO:
            out.append(0)
            _varint_out(out, segment.length, FILL_BUDGET, where, "zero segment length")
        elif segment.kind == ValueKind.LITERAL:
            out.append(1)
            _varint_out(out, len(segment.data), 1 << 62, where, "literal length")
            out += segment.data
        else:
            if not 0 <= segment.seed <= 0xFF:
                raise _limit(where, "segment seed", segment.seed, "[0, 255]")
            out.append(2 + int(segment.element))
            out.append(segment.seed)
            _varint_out(out, segment.length, MAX_GENERATED_VALUE, where, "generated length")


def _blob_out(out: bytearray, blob: BlobSpec, where: tuple) -> None:
    if blob.name in MEMORY_NAMES:
        out.append(MEMORY_NAMES.index(blob.name))
    else:
        out.append(0xFF)
        _text_out(out, blob.name, where, "memory name")
    _segments_out(out, blob.segments, where)


def _dims_out(out: bytearray, dims: Sequence[int], where: tuple) -> None:
    _indexes_out(out, dims, MAX_RANK, where, "dimension", "rank")


def _indexes_out(out: bytearray, indexes: Sequence[int], cap: int, where: tuple,
                 what: str, count_what: str | None = None) -> None:
    n = len(indexes)
    if n < 0x80 and n <= cap and _all_one_byte(indexes):
        out.append(n)
        out += bytes(indexes)      # all one-byte varints: the usual case
        return
    _varint_out(out, n, cap, where, count_what or f"{what} count")
    for i in indexes:
        _u32_out(out, i, where, what)


def _location_out(out: bytearray, location: DataLocation, where: tuple) -> None:
    _u32_out(out, location.poolIndex, where, "location.poolIndex")
    _u32_out(out, location.offset, where, "location.offset")
    _u32_out(out, location.length, where, "location.length")


def _operand_out(out: bytearray, o: OperandSpec, where: tuple) -> None:
    head = o.lifetime
    operand_type = o.type
    dims = o.dimensions
    extra = o.extraParams
    if (0 <= head < _LIFETIME_ESCAPE and 0 <= operand_type < 0x80
            and o.location is None and o.consumers is None and not o.scale
            and not o.zeroPoint and extra.channelQuant is None and extra.extension is None
            and len(dims) <= MAX_RANK and _all_one_byte(dims)):
        # The common operand, written at once: a lifetime in range, one-byte type and
        # dimensions, placed, nothing else set.
        out += bytes((head, operand_type, len(dims), *dims))
        if head in _PLACED_LIFETIMES:
            if head != _COPY:
                target = o.target
                if 0 <= target < 0x80:
                    out.append(target)
                else:
                    _u32_out(out, target, where, "target")
            if head != _SUBGRAPH:
                value = o.value
                if value.kind == _GENERATED and 0 <= value.seed < NUM_SEEDS:
                    out.append(2 + value.seed)
                else:
                    _value_out(out, value, where)
        return
    lifetime = int(o.lifetime)
    head = lifetime if 0 <= lifetime < _LIFETIME_ESCAPE else _LIFETIME_ESCAPE
    quant = o.scale != 0 or o.zeroPoint != 0
    extra = o.extraParams
    head |= ((_OP_QUANT if quant else 0) | (_OP_CONSUMERS if o.consumers is not None else 0)
             | (_OP_LOCATION if o.location is not None else 0)
             | (_OP_CHANNEL_QUANT if extra.channelQuant is not None else 0)
             | (_OP_EXTENSION if extra.extension is not None else 0))
    out.append(head)
    _u32_out(out, int(o.type), where, "type")
    _dims_out(out, o.dimensions, where)
    if head & 7 == _LIFETIME_ESCAPE:
        _u32_out(out, lifetime, where, "lifetime")
    if quant:
        _floats_out(out, [o.scale], None, where, "scale")
        _i32_out(out, o.zeroPoint, where, "zeroPoint")
    if o.consumers is not None:
        _u32_out(out, o.consumers, where, "numberOfConsumers")
    if o.location is not None:
        _location_out(out, o.location, where)
    else:
        if lifetime == _REFERENCE or lifetime == _SUBGRAPH:
            _u32_out(out, o.target, where, "target")
        if lifetime == _COPY or lifetime == _REFERENCE:
            _value_out(out, o.value, where)
    if extra.channelQuant is not None:
        _floats_out(out, extra.channelQuant.scales, MAX_CHANNEL_SCALES, where, "channel scale")
        _u32_out(out, extra.channelQuant.channelDim, where, "channelDim")
    if extra.extension is not None:
        _varint_out(out, len(extra.extension), MAX_EXTENSION_BYTES, where, "extension length")
        out += extra.extension


def _operation_out(out: bytearray, op: Operation, where: tuple) -> None:
    operation_type = op.type
    inputs = op.inputs
    outputs = op.outputs
    if (0 <= operation_type < 0x80 and len(inputs) < 0x80
            and _all_one_byte(inputs)
            and len(outputs) <= MAX_OPERATION_OUTPUTS
            and _all_one_byte(outputs)):
        # One-byte type and indexes (the usual case), written at once.
        out += bytes((operation_type, len(inputs), *inputs, len(outputs), *outputs))
        return
    _u32_out(out, int(operation_type), where, "type")
    _indexes_out(out, inputs, MAX_OPERATION_INPUTS, where, "input")
    _indexes_out(out, outputs, MAX_OPERATION_OUTPUTS, where, "output")


def _list_out(out: bytearray, items: Sequence[_P], write: Callable[[bytearray, _P, tuple], None],
              where: tuple, offsets: list[list[int]] | None) -> None:
    """The items, one after the other; with ``offsets``, the offset each item starts at
    (and the end of the last) is added to it as one list."""
    if offsets is None:
        for i, item in enumerate(items):
            write(out, item, (*where, i))
        return
    starts = [len(out)]
    for i, item in enumerate(items):
        write(out, item, (*where, i))
        starts.append(len(out))
    offsets.append(starts)


def _subgraph_out(out: bytearray, sg: SubgraphSpec, name: str,
                  offsets: list[list[int]] | None = None) -> None:
    """The subgraph; with ``offsets``, where its operands, then its operations, start (see
    _list_out)."""
    _varint_out(out, len(sg.operands), MAX_OPERANDS, (name,), "operand count")
    _list_out(out, sg.operands, _operand_out, (name, "operand"), offsets)
    _varint_out(out, len(sg.operations), MAX_OPERATIONS, (name,), "operation count")
    _list_out(out, sg.operations, _operation_out, (name, "operation"), offsets)
    _indexes_out(out, sg.inputIndexes, MAX_IO_INDEXES, (name,), "inputIndexes")
    _indexes_out(out, sg.outputIndexes, MAX_IO_INDEXES, (name,), "outputIndexes")


def _model_head_out(out: bytearray, m: ModelSpec) -> None:
    """The model up to its subgraphs."""
    out.append((1 if m.relaxComputationFloat32toFloat16 else 0)
               | (2 if m.extensionNameToPrefix else 0))
    _varint_out(out, len(m.referenced), MAX_REFERENCED, ("model",), "referenced count")
    _segments_out(out, m.operandValues, ("operandValues",))
    _varint_out(out, len(m.pools), MAX_POOLS, ("model",), "pool count")
    for j, pool in enumerate(m.pools):
        _blob_out(out, pool, ("model pool", j))


def _model_tail_out(out: bytearray, m: ModelSpec) -> None:
    """The model after its subgraphs."""
    if m.extensionNameToPrefix:
        _varint_out(out, len(m.extensionNameToPrefix), MAX_EXTENSIONS, ("model",),
                    "extension count")
        for ext in m.extensionNameToPrefix:
            _text_out(out, ext.name, ("extension",), "name")
            _varint_out(out, ext.prefix, UINT16_MAX, ("extension", ext.name), "prefix")


def _subgraph_name(k: int) -> str:
    """Subgraph k (0: main) as error messages name it."""
    return "main" if k == 0 else f"subgraph {k}"


def _model_out(out: bytearray, m: ModelSpec) -> None:
    _model_head_out(out, m)
    _subgraph_out(out, m.main, "main")
    for i, sg in enumerate(m.referenced):
        _subgraph_out(out, sg, _subgraph_name(i + 1))
    _model_tail_out(out, m)


def _argument_out(out: bytearray, a: ArgumentSpec, where: tuple) -> None:
    out.append((_ARG_NO_VALUE if a.hasNoValue else 0)
               | (_ARG_LOCATION if a.location is not None else 0)
               | (_ARG_DELTA if a.size_delta else 0))
    _dims_out(out, a.dimensions, where)
    if a.size_delta:
        if abs(a.size_delta) > MAX_SIZE_DELTA:
            raise _limit(where, "size_delta", a.size_delta, f"±{MAX_SIZE_DELTA}")
        _i32_out(out, a.size_delta, where, "size_delta")
    if a.location is not None:
        _location_out(out, a.location, where)
    elif not a.hasNoValue:
        _u32_out(out, a.target, where, "pool")
        _value_out(out, a.value, where)


def _request_pools_out(out: bytearray, r: RequestSpec) -> None:
    _varint_out(out, len(r.pools), MAX_POOLS, ("request",), "pool count")
    for j, pool in enumerate(r.pools):
        if pool.token is not None:
            out.append(1)
            _u32_out(out, pool.token, ("request pool", j), "token")
        else:
            out.append(0)
            _blob_out(out, pool.blob, ("request pool", j))


def _request_out(out: bytearray, r: RequestSpec, offsets: list[list[int]] | None = None) -> None:
    """The request; with ``offsets``, where its inputs, then its outputs, start (see
    _list_out)."""
    _request_pools_out(out, r)
    for role, args in (("input", r.inputs), ("output", r.outputs)):
        _varint_out(out, len(args), MAX_REQUEST_ARGUMENTS, ("request",), f"{role} count")
        _list_out(out, args, _argument_out, ("request", role), offsets)


def _microseconds(ns: int, cap_us: int, what: str) -> int:
    if ns % 1000 or not 0 <= ns // 1000 <= cap_us:
        raise CodecLimitError(f"choices: {what} = {ns} ns is not a whole number of"
                              f" microseconds in [0, {cap_us}] µs")
    return ns // 1000


def _choices_out(out: bytearray, c: ExecutionChoices) -> None:
    where = ("choices",)
    if not 0 <= c.wait_fences <= MAX_WAIT_FENCES:
        raise _limit(where, "wait_fences", c.wait_fences, f"[0, {MAX_WAIT_FENCES}]")
    out.append(int(c.path) | int(c.second_path) << 2 | int(c.measureTiming) << 4
               | int(c.priority) << 5 | (_CH_DEADLINE if c.deadline_ns is not None else 0))
    out.append(int(c.preference) | c.wait_fences << 2
               | (_CH_FENCED_DURATION if c.fenced_duration_ns is not None else 0))
    if c.loopTimeoutDuration_ns is None:
        out.append(0)
    else:
        us = _microseconds(c.loopTimeoutDuration_ns, LOOP_TIMEOUT_CAP_US, "loopTimeoutDuration")
        _varint_out(out, us + 1, LOOP_TIMEOUT_CAP_US + 1, where, "loopTimeoutDuration")
    if c.deadline_ns is not None:
        _varint_out(out, _microseconds(c.deadline_ns, DEADLINE_CAP_US, "deadline"),
                    DEADLINE_CAP_US, where, "deadline")
    if c.wait_fences:
        _varint_out(out, _microseconds(c.wait_fence_delay_ns, WAIT_FENCE_DELAY_CAP_US,
                                       "wait_fence_delay"),
                    WAIT_FENCE_DELAY_CAP_US, where, "wait_fence_delay")
    elif c.wait_fence_delay_ns:
        raise CodecLimitError("choices: wait_fence_delay_ns without wait fences")
    if c.fenced_duration_ns is not None:
        _varint_out(out, _microseconds(c.fenced_duration_ns, FENCED_DURATION_CAP_US,
                                       "fenced duration"),
                    FENCED_DURATION_CAP_US, where, "fenced duration")


def serialize(spec: CaseSpec) -> bytes:
    """CaseSpec -> bytes; raises CodecLimitError for what the encoding cannot express."""
    out = bytearray()
    _choices_out(out, spec.choices)
    _model_out(out, spec.model)
    _request_out(out, spec.request)
    return bytes(out)


# --- serializing part by part --------------------------------------------------------------
# The custom mutator changes a few things of a spec per call. An EncodedSpec keeps the bytes
# of each part of a spec (choices, model head (flags .. pools), each subgraph (main first),
# model tail (extensions), request) and of each element of the lists a part holds (operands,
# operations, request inputs and outputs). Its copy() is the spec to change, noting where
# each part came from; encode_parts then serializes what no longer is what it came from.
# with_choices() and with_request() make a result that replaces one part of a spec and
# keeps the others as they are, without looking at those.

#: The bytes of the elements of a part: (operands, operations) of a subgraph, (inputs,
#: outputs) of the request, nothing for the other parts.
Elements = tuple[tuple[bytes, ...], tuple[bytes, ...]]
_NO_ELEMENTS: Elements = ((), ())

#: id() of a part of a copied spec -> (that part, the part it was copied from, its bytes,
#: its elements' bytes). Holding the copy keeps its id from being reused by another object.
Origins = dict[int, tuple[object, object, bytes, Elements]]

_new_instance = object.__new__


@dataclass(frozen=True)
class EncodedSpec:
    """A spec with the serialized bytes of its parts and their elements. The spec must not
    change afterwards (copy() gives one that may): that is what makes the bytes reusable."""
    spec: CaseSpec
    parts: tuple[bytes, ...]
    elements: tuple[Elements, ...]      # per part

    @property
    def data(self) -> bytes:
        return b"".join(self.parts)

    def copy(self, origins: Origins) -> CaseSpec:
        """A copy of the spec to change; its parts' origins are added to ``origins``."""
        r = self.spec.request
        request = RequestSpec(r.inputs.copy(), r.outputs.copy(), r.pools.copy())
        origins[id(request)] = (request, r, self.parts[-1], self.elements[-1])
        return CaseSpec(self.copy_model(origins), request, self.copy_choices(origins))

    def with_choices(self, choices: ExecutionChoices, origins: Origins) -> EncodedSpec:
        """This spec's model and request as they are (shared, so they must not change)
        with other execution choices: encode_parts of such a spec, taking the choices'
        bytes from their origin in ``origins`` when they still equal it."""
        spec = self.spec
        data, elements = _choices_part(choices, _origin(origins, choices))
        return EncodedSpec(CaseSpec(spec.model, spec.request, choices),
                           (data, *self.parts[1:]), (elements, *self.elements[1:]))

    def with_request(self, request: RequestSpec, choices: EncodedSpec) -> EncodedSpec:
        """This spec's model as it is (shared) with a new request, serialized, and the
        execution choices of ``choices`` (shared): encode_parts of such a spec."""
        data, elements = _request_part(request, None, _UNLIMITED)
        return EncodedSpec(CaseSpec(self.spec.model, request, choices.spec.choices),
                           (choices.parts[0], *self.parts[1:-1], data),
                           (choices.elements[0], *self.elements[1:-1], elements))

    def copy_choices(self, origins: Origins) -> ExecutionChoices:
        c = self.spec.choices
        copy = _copy_choices(c)
        origins[id(copy)] = (copy, c, self.parts[0], self.elements[0])
        return copy

    def copy_subgraph(self, k: int, origins: Origins) -> SubgraphSpec:
        """A copy of subgraph k (0: main, k: referenced[k - 1])."""
        model = self.spec.model
        sg = model.main if k == 0 else model.referenced[k - 1]
        copy = _copy_subgraph(sg)
        origins[id(copy)] = (copy, sg, self.parts[2 + k], self.elements[2 + k])
        return copy

    def copy_model(self, origins: Origins) -> ModelSpec:
        m = self.spec.model
        parts, elements = self.parts, self.elements
        # (Not through copy_subgraph: a copy is made per custom mutation, and the calls cost
        # as much again.)
        copies = []
        for k, sg in enumerate([m.main, *m.referenced]):
            copy = _copy_subgraph(sg)
            origins[id(copy)] = (copy, sg, parts[2 + k], elements[2 + k])
            copies.append(copy)
        model = ModelSpec(copies[0], copies[1:], m.operandValues.copy(), m.pools.copy(),
                          m.relaxComputationFloat32toFloat16, m.extensionNameToPrefix.copy())
        origins[id(model)] = (model, m, parts[1], elements[1])
        return model


def _copy_subgraph(sg: SubgraphSpec) -> SubgraphSpec:
    """A copy with lists of its own, sharing their elements."""
    copy = _new_instance(SubgraphSpec)
    copy.operands = sg.operands.copy()
    copy.operations = sg.operations.copy()
    copy.inputIndexes = sg.inputIndexes.copy()
    copy.outputIndexes = sg.outputIndexes.copy()
    return copy


# A copy has lists of its own (operands, operations, indexes, arguments, pools, ...) and
# shares their elements with the original: a mutation changes few of them, and replaces
# each by a copy first (writable_operand, writable_operation, writable_argument). Values,
# locations, extra params, segments and pools are only ever replaced, never changed.

def _writable(items: list[_D], i: int) -> _D:
    """items[i] (an OperandSpec or ArgumentSpec), first replaced by a copy with its own
    list of dimensions."""
    # Copying the instance's __dict__: copy.copy without the cost of its generic protocol.
    item = items[i]
    fields = item.__dict__.copy()
    fields["dimensions"] = fields["dimensions"].copy()
    copy = _new_instance(type(item))
    copy.__dict__ = fields
    items[i] = copy
    return copy


def writable_operand(sg: SubgraphSpec, i: int) -> OperandSpec:
    """Operand i of ``sg``, first replaced by a copy of its own (with its own dimensions):
    change an operand only through this, as copies of an EncodedSpec share operands."""
    return _writable(sg.operands, i)


def writable_operation(sg: SubgraphSpec, k: int) -> Operation:
    """Operation k of ``sg``, first replaced by a copy of its own: change an operation only
    through this, as copies of an EncodedSpec share operations."""
    op = sg.operations[k]
    copy = Operation(op.type, op.inputs.copy(), op.outputs.copy())
    sg.operations[k] = copy
    return copy


def writable_argument(arguments: list[ArgumentSpec], i: int) -> ArgumentSpec:
    """Argument i of a request's ``arguments`` (inputs or outputs), first replaced by a copy
    of its own: change an argument only through this, as copies of an EncodedSpec share
    arguments."""
    return _writable(arguments, i)


# Fields the encoding leaves out are set back to their defaults in what is serialized anew,
# so that a spec encode_parts made is the one its bytes parse to.

def _is_zero_value(value: ValueSpec) -> bool:
    return value is _ZERO_VALUE or value == _ZERO_VALUE


def _encoded_operand(operands: list[OperandSpec], i: int) -> OperandSpec:
    """operands[i] without a value or target where its lifetime or location has no use for
    them."""
    o = operands[i]
    placed = o.location is None
    lifetime = o.lifetime
    value_unused = not (placed and (lifetime == _COPY or lifetime == _REFERENCE))
    target_unused = not (placed and (lifetime == _REFERENCE or lifetime == _SUBGRAPH))
    if (value_unused and not _is_zero_value(o.value)) or (target_unused and o.target):
        o = _writable(operands, i)
        if value_unused:
            o.value = _ZERO_VALUE
        if target_unused:
            o.target = 0
    return o


def _encoded_argument(arguments: list[ArgumentSpec], i: int) -> ArgumentSpec:
    """arguments[i] without a pool or value where it has a location or no value."""
    a = arguments[i]
    if (a.location is not None or a.hasNoValue) and (a.target or not _is_zero_value(a.value)):
        a = _writable(arguments, i)
        a.target, a.value = 0, _ZERO_VALUE
    return a


#: The ``room`` of an encoding without a size limit.
_UNLIMITED = 1 << 62


def _too_long(where: tuple, size: int, room: int) -> CodecLimitError:
    return CodecLimitError(f"{_place(where)}: {size} bytes, more than the {max(room, 0)} bytes"
                           " left of the size allowed")


def _elements_out(out: bytearray, items: list[_P], origin_items: Sequence[_P],
                  origin_bytes: tuple[bytes, ...], write: Callable[[bytearray, _P, tuple], None],
                  where: tuple, encoded: Callable[[list[_P], int], _P] | None,
                  room: int) -> tuple[bytes, ...]:
    """The items (which are not those of the origin) serialized and appended to ``out``,
    each item the origin holds taking the origin's bytes; returns each item's bytes.
    ``encoded`` gives an item as it is to be serialized anew. Raises CodecLimitError as
    soon as one item serialized anew is longer than ``room``: a mutation that expands a
    large value into literal bytes makes a result too long to use, and writing a megabyte
    into every buffer on the way would cost milliseconds."""
    n, count = len(origin_items), len(items)
    if not n:
        return _new_elements_out(out, items, write, where, encoded, room)
    if count >= n:
        # Mostly the origin's own list with an element or two replaced, or appended (a new
        # element is only ever appended): find those at C speed. An element the origin
        # holds elsewhere only happens when some were deleted.
        pieces = [*origin_bytes, *[b""] * (count - n)]
        fresh: Iterable[int] = chain(compress(range(n), map(is_not, items, origin_items)),
                                     range(n, count))
        known: dict[int, bytes] = {}
    else:
        pieces = [b""] * count
        fresh = range(count)
        known = {id(x): data for x, data in zip(origin_items, origin_bytes)}
    for i in fresh:
        item = items[i]
        data = known.get(id(item))
        if data is None:
            if encoded is not None:
                item = encoded(items, i)
                # (Operands and arguments: their literal value, if any, is written whole.)
                if len(item.value.data) > room:
                    raise _too_long((*where, i), len(item.value.data), room)
            piece = bytearray()
            write(piece, item, (*where, i))
            if len(piece) > room:
                raise _too_long((*where, i), len(piece), room)
            data = bytes(piece)
        pieces[i] = data
    out += b"".join(pieces)
    return tuple(pieces)


def _new_elements_out(out: bytearray, items: list[_P],
                      write: Callable[[bytearray, _P, tuple], None], where: tuple,
                      encoded: Callable[[list[_P], int], _P] | None,
                      room: int) -> tuple[bytes, ...]:
    """_elements_out without an origin: the items are serialized one after the other into
    one buffer, which is then cut into each item's bytes."""
    written = bytearray()
    ends = []
    for i, item in enumerate(items):
        write(written, item if encoded is None else encoded(items, i), (*where, i))
        if len(written) > room:
            raise _too_long((*where, i), len(written), room)
        ends.append(len(written))
    whole = bytes(written)
    out += whole
    return tuple([whole[start:end] for start, end in zip([0, *ends], ends)])


# Each part is written by a function of the part and its origin (None: no origin), which
# returns the part's bytes and its elements' bytes: the origin's own when the part still
# equals the origin. The elements a mutation left alone are the very objects of the origin,
# which lists compare at C speed; one replaced compares by value (an equal copy still counts
# as unchanged). Equal parts serialize to the same bytes, but for the sign of a zero scale,
# which no mutation produces on purpose. Each list is compared once: a list equal to the
# origin's takes the origin's bytes, the others are serialized element by element.

_Origin = tuple[object, Any, bytes, Elements]
_Part = tuple[bytes, Elements]
# What a part without an origin is compared with: nothing (never changed).
_NO_SUBGRAPH = SubgraphSpec()
_NO_REQUEST = RequestSpec()


def _choices_part(c: ExecutionChoices, origin: _Origin | None) -> _Part:
    if origin is not None and vars(c) == vars(origin[1]):
        return origin[2], origin[3]
    out = bytearray()
    _choices_out(out, c)
    return bytes(out), _NO_ELEMENTS


def _model_head_part(m: ModelSpec, origin: _Origin | None) -> _Part:
    if origin is not None:
        known = origin[1]
        if (m.relaxComputationFloat32toFloat16 == known.relaxComputationFloat32toFloat16
                and bool(m.extensionNameToPrefix) == bool(known.extensionNameToPrefix)
                and len(m.referenced) == len(known.referenced)
                and m.operandValues == known.operandValues and m.pools == known.pools):
            return origin[2], origin[3]
    out = bytearray()
    _model_head_out(out, m)
    return bytes(out), _NO_ELEMENTS


def _kept_list_out(out: bytearray, items: list[_P], same: bool, origin_items: Sequence[_P],
                   origin_bytes: tuple[bytes, ...],
                   write: Callable[[bytearray, _P, tuple], None], where: tuple,
                   encoded: Callable[[list[_P], int], _P] | None,
                   room: int) -> tuple[bytes, ...]:
    """_elements_out, or, for a list equal to its origin's (``same``), the origin's bytes
    as they are."""
    if same:
        out += b"".join(origin_bytes)
        return origin_bytes
    return _elements_out(out, items, origin_items, origin_bytes, write, where, encoded, room)


def _subgraph_part(sg: SubgraphSpec, k: int, origin: _Origin | None, room: int) -> _Part:
    """_subgraph_out of subgraph k, taking the bytes of the origin's operands and
    operations that ``sg`` still holds (see _elements_out for ``room``)."""
    if origin is None:
        known, known_bytes = _NO_SUBGRAPH, _NO_ELEMENTS
        same_operands = same_operations = False
    else:
        known, known_bytes = origin[1], origin[3]
        same_operands = sg.operands == known.operands
        same_operations = sg.operations == known.operations
        if (same_operands and same_operations and sg.inputIndexes == known.inputIndexes
                and sg.outputIndexes == known.outputIndexes):
            return origin[2], known_bytes
    name = _subgraph_name(k)
    out = bytearray()
    _varint_out(out, len(sg.operands), MAX_OPERANDS, (name,), "operand count")
    operand_bytes = _kept_list_out(out, sg.operands, same_operands, known.operands,
                                   known_bytes[0], _operand_out, (name, "operand"),
                                   _encoded_operand, room)
    _varint_out(out, len(sg.operations), MAX_OPERATIONS, (name,), "operation count")
    operation_bytes = _kept_list_out(out, sg.operations, same_operations, known.operations,
                                     known_bytes[1], _operation_out, (name, "operation"), None,
                                     room)
    _indexes_out(out, sg.inputIndexes, MAX_IO_INDEXES, (name,), "inputIndexes")
    _indexes_out(out, sg.outputIndexes, MAX_IO_INDEXES, (name,), "outputIndexes")
    return bytes(out), (operand_bytes, operation_bytes)


def _request_part(r: RequestSpec, origin: _Origin | None, room: int) -> _Part:
    """_request_out, taking the bytes of the origin's arguments that ``r`` still holds (see
    _elements_out for ``room``)."""
    if origin is None:
        known, known_bytes = _NO_REQUEST, _NO_ELEMENTS
        same_inputs = same_outputs = False
    else:
        known, known_bytes = origin[1], origin[3]
        same_inputs = r.inputs == known.inputs
        same_outputs = r.outputs == known.outputs
        if same_inputs and same_outputs and r.pools == known.pools:
            return origin[2], known_bytes
    out = bytearray()
    _request_pools_out(out, r)
    pieces = []
    for role, args, same, known_args, bytes_of_known in (
            ("input", r.inputs, same_inputs, known.inputs, known_bytes[0]),
            ("output", r.outputs, same_outputs, known.outputs, known_bytes[1])):
        _varint_out(out, len(args), MAX_REQUEST_ARGUMENTS, ("request",), f"{role} count")
        pieces.append(_kept_list_out(out, args, same, known_args, bytes_of_known, _argument_out,
                                     ("request", role), _encoded_argument, room))
    return bytes(out), (pieces[0], pieces[1])


def _origin(origins: Origins, part: object) -> _Origin | None:
    origin = origins.get(id(part))
    return origin if origin is not None and origin[0] is part else None


def encode_parts(spec: CaseSpec, origins: Origins | None = None,
                 max_size: int | None = None) -> EncodedSpec:
    """``spec`` serialized part by part, as serialize() does (and raising as it does), taking
    the bytes of a part, or else of its elements, from its origin in ``origins`` where the
    spec still holds them. Fields the encoding leaves out are reset in what is serialized
    (the value or target of an operand whose lifetime or explicit location has no use for
    them, and of an argument with a location or no value), so that the EncodedSpec made can
    stand for the parsed bytes. With ``max_size``, bytes longer than that raise
    CodecLimitError too (as soon as that is certain)."""
    if origins is None:
        origins = {}
    room = _UNLIMITED if max_size is None else max_size
    m = spec.model
    written = [_choices_part(spec.choices, _origin(origins, spec.choices)),
               _model_head_part(m, _origin(origins, m))]
    room -= len(written[0][0]) + len(written[1][0])
    for k, sg in enumerate(m.subgraphs()):
        part = _subgraph_part(sg, k, _origin(origins, sg), room)
        room -= len(part[0])
        written.append(part)
    tail = bytearray()
    _model_tail_out(tail, m)
    written.append((bytes(tail), _NO_ELEMENTS))
    request = _request_part(spec.request, _origin(origins, spec.request), room)
    written.append(request)
    room -= len(tail) + len(request[0])
    if room < 0:
        raise CodecLimitError(f"the spec takes {max_size - room} bytes, more than the"
                              f" {max_size} allowed")
    parts, elements = zip(*written)
    return EncodedSpec(spec, parts, elements)


def parse_parts(data: bytes, near: EncodedSpec | None = None) -> EncodedSpec:
    """``encode_parts(parse(data))``, cheaper: a spec parse() made has no field to reset
    and no part to take from an origin, so it is serialized in one go, as serialize()
    does, noting where each part and element ends, and the bytes are cut up afterwards.

    ``near`` is an EncodedSpec that ``data`` is likely to share parts with (the input a
    byte-level mutation made ``data`` from): see _parse_parts_near."""
    if near is not None:
        return _parse_parts_near(bytes(data), near)
    spec = parse(data)
    m = spec.model
    out = bytearray()
    part_ends: list[int] = []
    part_offsets: list[list[list[int]]] = []     # per part: see _list_out
    _choices_out(out, spec.choices)
    part_ends.append(len(out))
    part_offsets.append([])
    _model_head_out(out, m)
    part_ends.append(len(out))
    part_offsets.append([])
    for k, sg in enumerate(m.subgraphs()):
        offsets: list[list[int]] = []
        _subgraph_out(out, sg, _subgraph_name(k), offsets)
        part_ends.append(len(out))
        part_offsets.append(offsets)
    _model_tail_out(out, m)
    part_ends.append(len(out))
    part_offsets.append([])
    offsets = []
    _request_out(out, spec.request, offsets)
    part_ends.append(len(out))
    part_offsets.append(offsets)
    whole = bytes(out)
    parts = tuple([whole[start:end] for start, end in zip([0, *part_ends], part_ends)])
    elements = tuple([(_cut(whole, offsets[0]), _cut(whole, offsets[1])) if offsets
                      else _NO_ELEMENTS for offsets in part_offsets])
    return EncodedSpec(spec, parts, elements)


def _cut(whole: bytes, offsets: list[int]) -> tuple[bytes, ...]:
    """The bytes between each offset and the next."""
    return tuple([whole[start:end] for start, end in zip(offsets, offsets[1:])])


# Parsing near a known spec. A byte-level mutation changes an input in one place or a few, and
# the custom mutator is then called on the result: most of its parts are those of the input it
# was made from. Parsing reads the fields of a part one after the other and nothing past them,
# and the bytes of a part of an EncodedSpec parse to that part: so where ``data`` holds, at the
# point a part starts, the bytes of the same part of the known spec, that part is the known
# one, which is taken (spec and bytes) instead of being parsed and serialized again.

def _holds(data: bytes, it: Iterator[int], part: bytes) -> bool:
    """Whether the bytes of ``data`` that ``it`` is at start with ``part``."""
    return data.startswith(part, len(data) - length_hint(it))


def _skip(it: Iterator[int], n: int) -> None:
    deque(islice(it, n), maxlen=0)      # at C speed


def _drops_a_negative_zero(sg: SubgraphSpec) -> bool:
    """Whether an operand of ``sg`` has a scale of -0.0 that its bytes leave out (with
    zeroPoint 0 no quantization is written): they parse to +0.0, so the subgraph equals what
    they parse to but is not quite it (a later zeroPoint change would write the -0.0)."""
    return any(not o.scale and not o.zeroPoint and copysign(1.0, o.scale) < 0
               for o in sg.operands)


def _listed_part(write: Callable[[bytearray, list[list[int]]], None]) -> _Part:
    """A subgraph or request serialized by ``write`` (with offsets: see _list_out), with
    its elements' bytes."""
    out = bytearray()
    offsets: list[list[int]] = []
    write(out, offsets)
    part = bytes(out)
    return part, (_cut(part, offsets[0]), _cut(part, offsets[1]))


def _parse_parts_near(data: bytes, near: EncodedSpec) -> EncodedSpec:
    """parse_parts(data), taking from ``near`` the parts ``data`` holds as they are."""
    it = iter(data)
    known, known_parts, known_elements = near.spec, near.parts, near.elements
    known_model = known.model
    parts: list[bytes] = []
    elements: list[Elements] = []
    if _holds(data, it, known_parts[0]):
        _skip(it, len(known_parts[0]))
        choices = known.choices
        parts.append(known_parts[0])
    else:
        choices = _read_choices(it)
        out = bytearray()
        _choices_out(out, choices)
        parts.append(bytes(out))
    elements.append(_NO_ELEMENTS)
    # The model head's bytes are written once the extensions are known (they have a flag).
    head_kept = _holds(data, it, known_parts[1])
    if head_kept:
        _skip(it, len(known_parts[1]))
        relaxed = known_model.relaxComputationFloat32toFloat16
        has_extensions = bool(known_model.extensionNameToPrefix)
        referenced_count = len(known_model.referenced)
        values, pools = known_model.operandValues, known_model.pools
    else:
        flags, referenced_count, values, pools = _read_model_head(it, data)
        relaxed, has_extensions = bool(flags & 1), bool(flags & 2)
    parts.append(b"")
    elements.append(_NO_ELEMENTS)
    known_subgraphs = known_model.subgraphs()
    subgraphs = []
    for k in range(referenced_count + 1):
        if (k < len(known_subgraphs) and _holds(data, it, known_parts[2 + k])
                and not _drops_a_negative_zero(known_subgraphs[k])):
            _skip(it, len(known_parts[2 + k]))
            sg = known_subgraphs[k]
            part, part_elements = known_parts[2 + k], known_elements[2 + k]
        else:
            sg = _read_subgraph(it, data)
            name = _subgraph_name(k)
            part, part_elements = _listed_part(
                lambda out, offsets: _subgraph_out(out, sg, name, offsets))
        subgraphs.append(sg)
        parts.append(part)
        elements.append(part_elements)
    known_extensions = known_model.extensionNameToPrefix
    if not has_extensions:
        extensions: list[ExtensionNameAndPrefix] = []
    elif known_extensions and _holds(data, it, known_parts[-2]):
        _skip(it, len(known_parts[-2]))
        extensions = known_extensions
    else:
        extensions = _read_extensions(it, data)
    model = ModelSpec(subgraphs[0], subgraphs[1:], values, pools, relaxed, extensions)
    if head_kept and bool(extensions) == has_extensions:
        parts[1] = known_parts[1]
    else:
        out = bytearray()
        _model_head_out(out, model)
        parts[1] = bytes(out)
    if extensions is known_extensions:
        parts.append(known_parts[-2])
    else:
        out = bytearray()
        _model_tail_out(out, model)
        parts.append(bytes(out))
    elements.append(_NO_ELEMENTS)
    if _holds(data, it, known_parts[-1]):
        request = known.request
        parts.append(known_parts[-1])
        elements.append(known_elements[-1])
    else:
        request = _read_request(it, data)
        part, part_elements = _listed_part(
            lambda out, offsets: _request_out(out, request, offsets))
        parts.append(part)
        elements.append(part_elements)
    return EncodedSpec(CaseSpec(model, request, choices), tuple(parts), tuple(elements))


# --- lowering: spec -> HAL -----------------------------------------------------------------

class _Fill:
    """What is left of the per-case budget of bytes the decoder fills itself."""
    __slots__ = ("fill", "generated")

    def __init__(self) -> None:
        self.fill = FILL_BUDGET
        self.generated = GENERATED_BUDGET

    def zero_count(self, n: int) -> int:
        """How many of ``n`` zero bytes the budget grants (they are taken from it)."""
        n = n if n <= self.fill else self.fill
        self.fill -= n
        return n

    def zeros(self, n: int) -> bytes:
        return bytes(self.zero_count(n))

    def generate(self, kind: ElementKind, seed: int, n: int) -> bytes:
        n = min(n, MAX_GENERATED_VALUE, self.generated, self.fill)
        self.generated -= n
        self.fill -= n
        return generated_bytes(kind, seed, n)


_SCALAR_TYPES = frozenset(int(t) for t in SCALAR_OPERAND_TYPES)
_SCALAR_BYTES = {int(t): dtype.itemsize for t, dtype in STORAGE_DTYPE.items()
                 if int(t) in _SCALAR_TYPES}
_TENSOR_ELEMENT_BYTES = {int(t): dtype.itemsize for t, dtype in STORAGE_DTYPE.items()
                         if int(t) not in _SCALAR_TYPES}


def storage_bytes(operand_type: int, dims: Sequence[int]) -> int:
    """Bytes an operand of this type and shape takes; 0 when that is unknown (unknown
    dimensions, SUBGRAPH and extension types). Scalars ignore their dimensions."""
    size = _TENSOR_ELEMENT_BYTES.get(operand_type)
    if size is None:
        return _SCALAR_BYTES.get(operand_type, 0)
    if not dims or 0 in dims:
        return 0
    return size * prod(dims)


def _value_size(operand_type: int, dims: Sequence[int], value: ValueSpec, delta: int) -> int:
    """Bytes a placed value takes before the budget applies."""
    if value.kind == ValueKind.LITERAL:
        return len(value.data)
    size = max(0, storage_bytes(operand_type, dims) + delta)
    return min(size, MAX_GENERATED_VALUE if value.kind == ValueKind.GENERATED else FILL_BUDGET)


def value_bytes(operand_type: int, dims: Sequence[int], value: ValueSpec, delta: int = 0) -> bytes:
    """The bytes a placed value stands for, on its own (no per-case budget applies)."""
    return _value_bytes(operand_type, value, _value_size(operand_type, dims, value, delta), _Fill())


def _value_bytes(operand_type: int, value: ValueSpec, size: int, fill: _Fill) -> bytes:
    if value.kind == ValueKind.LITERAL:
        return value.data
    if value.kind == ValueKind.GENERATED:
        return fill.generate(element_kind(operand_type), value.seed, size)
    return fill.zeros(size)


#: Placed values start at multiples of this, as the conformance loader and the NN runtime
#: place them, so a driver may view any value as an aligned array of its element type.
VALUE_ALIGNMENT = 4


def _aligned(offset: int) -> int:
    return -(-offset // VALUE_ALIGNMENT) * VALUE_ALIGNMENT


#: Zeros that runs of zeros are copied from when a blob's content is joined. A fresh zero
#: bytes object of a megabyte has none of its pages mapped yet, and reading it faults every
#: one of them in (that took as long as the rest of decoding); this buffer is resident.
_ZERO_BYTES = b"\0" * (FILL_BUDGET + 4096)
_ZEROS = memoryview(_ZERO_BYTES)
#: Pools larger than this are written piece by piece, leaving their zeros to the pages of
#: a new memfd (writing a megabyte of zeros faulted every page of it in); smaller ones are
#: written whole, in one copy.
_PIECEWISE_POOL_BYTES = 64 * 1024


def _zeros(n: int) -> bytes | memoryview:
    return _ZEROS[:n] if n <= len(_ZEROS) else bytes(n)


def _is_zeros(part: bytes | memoryview) -> bool:
    return isinstance(part, memoryview) and part.obj is _ZERO_BYTES


class _Blob:
    """The content of a memory pool (or of operandValues) as the decoder lays it out: its
    size and its parts, runs of zeros (zero segments and values, alignment padding) being
    views of _ZEROS. So a large zero fill is never built, and never written into a
    shared-memory pool, whose pages start out as zeros."""
    __slots__ = ("size", "parts")

    def __init__(self) -> None:
        self.size = 0
        self.parts: list[bytes | memoryview] = []

    def extend(self, raw: bytes) -> None:
        """``raw`` appended right at the end (an explicit segment)."""
        if raw:
            self.parts.append(raw)
            self.size += len(raw)

    def extend_zeros(self, n: int) -> None:
        """``n`` zero bytes appended right at the end (a zero segment)."""
        if n:
            self.parts.append(_zeros(n))
            self.size += n

    def place(self, raw: bytes) -> int:
        """``raw`` appended at the next aligned offset, which is returned."""
        offset = self.size
        padding = -offset % VALUE_ALIGNMENT
        if padding:
            self.parts.append(_ZEROS[:padding])
            offset += padding
        if raw:
            self.parts.append(raw)
        self.size = offset + len(raw)
        return offset

    def place_zeros(self, n: int) -> int:
        """``n`` zero bytes appended at the next aligned offset, which is returned."""
        offset = self.size
        padding = -offset % VALUE_ALIGNMENT
        if padding + n:
            self.parts.append(_zeros(padding + n))
        self.size = offset + padding + n
        return offset + padding

    def content(self) -> bytes:
        return b"".join(self.parts)

    def memory(self, name: str) -> Memory:
        """A new shared-memory pool holding the content."""
        if self.size <= _PIECEWISE_POOL_BYTES:
            return Memory.from_bytes(self.content(), name)
        memory = Memory.create(self.size, name)
        view = memory.buffer()
        try:
            offset = 0
            for part in self.parts:
                if not _is_zeros(part):
                    view[offset:offset + len(part)] = part
                offset += len(part)
        finally:
            view.release()
        return memory


def _segment_blob(segments: Sequence[Segment], fill: _Fill) -> _Blob:
    blob = _Blob()
    for segment in segments:
        if segment.kind == ValueKind.LITERAL:
            blob.extend(segment.data)
        elif segment.kind == ValueKind.GENERATED:
            blob.extend(fill.generate(segment.element, segment.seed, segment.length))
        else:
            blob.extend_zeros(len(fill.zeros(segment.length)))
    return blob


def _place_spec_value(blob: _Blob, pool_index: int, operand_type: int, value: ValueSpec,
                      size: int, fill: _Fill) -> DataLocation:
    """Place a value of ``size`` bytes (before the budget applies) at the end of ``blob``."""
    if value.kind == ValueKind.ZERO:
        n = fill.zero_count(size)
        return DataLocation(pool_index, blob.place_zeros(n), n)
    data = _value_bytes(operand_type, value, size, fill)
    return DataLocation(pool_index, blob.place(data), len(data))


def _lower_extra(extra: OperandExtraParams) -> OperandExtraParams:
    quant = extra.channelQuant
    if quant is None and extra.extension is None:
        return OperandExtraParams()
    return OperandExtraParams(
        None if quant is None else SymmPerChannelQuantParams(list(quant.scales), quant.channelDim),
        extra.extension)


def _lower_subgraph(sg: SubgraphSpec, values: _Blob, blobs: list[_Blob],
                    fill: _Fill) -> Subgraph:
    n = len(sg.operands)
    consumers = [0] * n
    for op in sg.operations:
        for i in op.inputs:
            if i < n:
                consumers[i] += 1
    operands = []
    for k, o in enumerate(sg.operands):
        loc = o.location
        lifetime = o.lifetime
        if loc is not None:
            location = DataLocation(loc.poolIndex, loc.offset, loc.length)
        elif lifetime == _COPY:
            size = _value_size(o.type, o.dimensions, o.value, 0)
            location = _place_spec_value(values, 0, o.type, o.value, size, fill)
        elif lifetime == _REFERENCE:
            size = _value_size(o.type, o.dimensions, o.value, 0)
            if o.target < len(blobs):
                location = _place_spec_value(blobs[o.target], o.target, o.type, o.value, size,
                                             fill)
            else:
                location = DataLocation(o.target, 0, size)
        elif lifetime == _SUBGRAPH:
            location = DataLocation(0, o.target, 0)
        else:
            location = DataLocation()
        operands.append(Operand(
            o.type, list(o.dimensions), consumers[k] if o.consumers is None else o.consumers,
            o.scale, o.zeroPoint, lifetime, location, _lower_extra(o.extraParams)))
    operations = [Operation(op.type, list(op.inputs), list(op.outputs)) for op in sg.operations]
    return Subgraph(operands, operations, list(sg.inputIndexes), list(sg.outputIndexes))


def _lower_model(m: ModelSpec, fill: _Fill) -> Model:
    values = _segment_blob(m.operandValues, fill)
    blobs = [_segment_blob(pool.segments, fill) for pool in m.pools]
    main = _lower_subgraph(m.main, values, blobs, fill)
    referenced = [_lower_subgraph(sg, values, blobs, fill) for sg in m.referenced]
    pools = [blob.memory(pool.name) for blob, pool in zip(blobs, m.pools)]
    extensions = [ExtensionNameAndPrefix(e.name, e.prefix) for e in m.extensionNameToPrefix]
    return Model(main, referenced, values.content(), pools,
                 m.relaxComputationFloat32toFloat16, extensions)


_NO_TYPE = -1   # an argument without a matching model operand: no storage size


def _io_operand(main: Subgraph, indexes: Sequence[int], i: int) -> Operand | None:
    if i < len(indexes) and indexes[i] < len(main.operands):
        return main.operands[indexes[i]]
    return None


def _lower_request(r: RequestSpec, main: Subgraph, fill: _Fill) -> Request:
    blobs: list[_Blob | None] = [
        None if pool.token is not None else _segment_blob(pool.blob.segments, fill)
        for pool in r.pools]
    lowered: list[list[RequestArgument]] = [[], []]
    for role, (args, indexes) in enumerate(((r.inputs, main.inputIndexes),
                                            (r.outputs, main.outputIndexes))):
        for i, a in enumerate(args):
            if a.location is not None:
                location = DataLocation(a.location.poolIndex, a.location.offset, a.location.length)
            elif a.hasNoValue:
                location = DataLocation()
            else:
                operand = _io_operand(main, indexes, i)
                operand_type = _NO_TYPE if operand is None else operand.type
                dims = a.dimensions or ([] if operand is None else operand.dimensions)
                size = _value_size(operand_type, dims, a.value, a.size_delta)
                target = a.target
                if target >= len(blobs):
                    location = DataLocation(target, 0, size)
                elif blobs[target] is None:        # driver-allocated buffer: whole buffer
                    location = DataLocation(target, 0, 0)
                else:
                    location = _place_spec_value(blobs[target], target, operand_type, a.value,
                                                 size, fill)
            lowered[role].append(RequestArgument(a.hasNoValue, location, list(a.dimensions)))
    pools = [MemoryPool(token=pool.token) if blob is None
             else MemoryPool(hidlMemory=blob.memory(pool.blob.name))
             for pool, blob in zip(r.pools, blobs)]
    return Request(lowered[0], lowered[1], pools)


def lower(spec: CaseSpec) -> FuzzCase:
    """The FuzzCase a spec describes (fresh objects: later changes to the spec do not leak)."""
    fill = _Fill()
    model = _lower_model(spec.model, fill)
    request = _lower_request(spec.request, model.main, fill)
    return FuzzCase(model, request, _copy_choices(spec.choices))


def _copy_choices(c: ExecutionChoices) -> ExecutionChoices:
    # Copying the instance's __dict__: copy.copy without the cost of its generic protocol
    # (every field is an int, an enum member or None).
    copy = _new_instance(ExecutionChoices)
    copy.__dict__ = c.__dict__.copy()
    return copy


# --- decoding: bytes -> HAL in one pass ------------------------------------------------------
# decode(data) == lower(parse(data)), without building the spec first: decoding runs once per
# fuzz iteration, and skipping the intermediate objects roughly halves its cost. The wire
# order makes this possible: pools come before the operands and arguments placed in them.
#
# A decoded case holds dozens to hundreds of HAL structures, and building them is a large
# part of decoding: they are made as their dataclass __init__ makes them (every field
# assigned, in declaration order, to a bare instance), without the generic dispatch of
# type.__call__ and the __init__ frame around the assignments. The hottest loops (operands,
# operations) assign inline.

def _require_fields(cls: type, *names: str) -> None:
    """Fail at import, not with half-built objects, if a structure the decoder builds field
    by field gains, loses or reorders a field, or gains a __post_init__ it would skip."""
    declared = tuple(f.name for f in fields(cls))
    if declared != names:
        raise TypeError(f"the decoder builds {cls.__name__} with the fields {names}, "
                        f"but it declares {declared}")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"the decoder builds {cls.__name__} field by field, which would skip "
                        "its __post_init__")


_require_fields(DataLocation, "poolIndex", "offset", "length")
_require_fields(OperandExtraParams, "channelQuant", "extension")
_require_fields(Operand, "type", "dimensions", "numberOfConsumers", "scale", "zeroPoint",
                "lifetime", "location", "extraParams")
_require_fields(Operation, "type", "inputs", "outputs")
_require_fields(Subgraph, "operands", "operations", "inputIndexes", "outputIndexes")
_require_fields(RequestArgument, "hasNoValue", "location", "dimensions")
_require_fields(MemoryPool, "hidlMemory", "token")
_require_fields(Request, "inputs", "outputs", "pools")
_require_fields(Model, "main", "referenced", "operandValues", "pools",
                "relaxComputationFloat32toFloat16", "extensionNameToPrefix")
_require_fields(FuzzCase, "model", "request", "choices")


def _location(pool_index: int, offset: int, length: int) -> DataLocation:
    location = _new_instance(DataLocation)
    location.poolIndex = pool_index
    location.offset = offset
    location.length = length
    return location


def _no_extra_params() -> OperandExtraParams:
    extra = _new_instance(OperandExtraParams)
    extra.channelQuant = None
    extra.extension = None
    return extra


def _subgraph(operands: list[Operand], operations: list[Operation], inputs: list[int],
              outputs: list[int]) -> Subgraph:
    subgraph = _new_instance(Subgraph)
    subgraph.operands = operands
    subgraph.operations = operations
    subgraph.inputIndexes = inputs
    subgraph.outputIndexes = outputs
    return subgraph


def _argument(has_no_value: bool, location: DataLocation, dims: list[int]) -> RequestArgument:
    argument = _new_instance(RequestArgument)
    argument.hasNoValue = has_no_value
    argument.location = location
    argument.dimensions = dims
    return argument


def _memory_pool(memory: Memory | None, token: int | None) -> MemoryPool:
    pool = _new_instance(MemoryPool)
    pool.hidlMemory = memory
    pool.token = token
    return pool


def _model(main: Subgraph, referenced: list[Subgraph], operand_values: bytes,
           pools: list[Memory], relaxed: bool,
           extensions: list[ExtensionNameAndPrefix]) -> Model:
    model = _new_instance(Model)
    model.main = main
    model.referenced = referenced
    model.operandValues = operand_values
    model.pools = pools
    model.relaxComputationFloat32toFloat16 = relaxed
    model.extensionNameToPrefix = extensions
    return model


def _request(inputs: list[RequestArgument], outputs: list[RequestArgument],
             pools: list[MemoryPool]) -> Request:
    request = _new_instance(Request)
    request.inputs = inputs
    request.outputs = outputs
    request.pools = pools
    return request


def _case(model: Model, request: Request, choices: ExecutionChoices) -> FuzzCase:
    case = _new_instance(FuzzCase)
    case.model = model
    case.request = request
    case.choices = choices
    return case


def _decode_segments(it: Iterator[int], data: bytes, fill: _Fill) -> _Blob:
    """The content of ``segments`` (the same as _segment_blob of _read_segments)."""
    blob = _Blob()
    for _ in range(_count(it, MAX_SEGMENTS)):
        tag = next(it, 0)
        if tag == 0:
            blob.extend_zeros(fill.zero_count(_count(it, FILL_BUDGET)))
        elif tag == 1:
            blob.extend(_take(it, data, _varint(it)))
        else:
            kind = _KINDS[(tag - 2) % len(_KINDS)]
            seed = next(it, 0)
            blob.extend(fill.generate(kind, seed, _count(it, MAX_GENERATED_VALUE)))
    return blob


def _place_value(it: Iterator[int], data: bytes, pool_index: int, blob: _Blob,
                 operand_type: int, dims: Sequence[int], delta: int,
                 fill: _Fill) -> DataLocation:
    """Read a value recipe, append the bytes it stands for to ``blob`` (at the next aligned
    offset) and return where they went: _read_value + _value_size + _place_spec_value in
    one, without the ValueSpec."""
    tag = next(it, 0)
    if tag == 1:
        raw = _take(it, data, _varint(it))
    else:
        size = storage_bytes(operand_type, dims) + delta
        if size < 0:
            size = 0
        if tag == 0:
            # (fill.zero_count inline: zero values are the most common kind.)
            n = size if size <= FILL_BUDGET else FILL_BUDGET
            if n > fill.fill:
                n = fill.fill
            fill.fill -= n
            return _location(pool_index, blob.place_zeros(n), n)
        raw = fill.generate(ELEMENT_KIND_OF_TYPE.get(operand_type, ElementKind.BYTES),
                            tag - 2, size if size <= MAX_GENERATED_VALUE
                            else MAX_GENERATED_VALUE)
    return _location(pool_index, blob.place(raw), len(raw))


def _placed_location(it: Iterator[int], data: bytes, lifetime: int, operand_type: int,
                     dims: list[int], values: _Blob, blobs: list[_Blob],
                     fill: _Fill) -> DataLocation:
    """The location the decoder gives an operand without an explicit one, after placing its
    value (constants)."""
    if lifetime == _COPY:
        return _place_value(it, data, 0, values, operand_type, dims, 0, fill)
    if lifetime == _REFERENCE:
        target = _u32(it)
        if target < len(blobs):
            return _place_value(it, data, target, blobs[target], operand_type, dims, 0, fill)
        value = _read_value(it, data)
        return _location(target, 0, _value_size(operand_type, dims, value, 0))
    if lifetime == _SUBGRAPH:
        return _location(0, _u32(it), 0)
    return _location(0, 0, 0)


def _decode_operand(it: Iterator[int], data: bytes, head: int, operand_type: OperandType | int,
                    dims: list[int], values: _Blob, blobs: list[_Blob],
                    fill: _Fill) -> Operand:
    """An operand whose head byte has flags or an escaped lifetime (numberOfConsumers is the
    one read, or 0 until counted)."""
    lifetime = head & 7
    if lifetime == _LIFETIME_ESCAPE:
        lifetime = _u32(it)
    lifetime = _LIFETIMES.get(lifetime, lifetime)
    scale = 0.0
    zero_point = consumers = 0
    if head & _OP_QUANT:
        scale = _float(it, bool(next(it, 0) & 1))
        zero_point = _i32(it)
    if head & _OP_CONSUMERS:
        consumers = _u32(it)
    if head & _OP_LOCATION:
        location = _location(_u32(it), _u32(it), _u32(it))
    else:
        location = _placed_location(it, data, lifetime, operand_type, dims, values, blobs, fill)
    extra = _no_extra_params()
    _read_extra(it, data, head, extra)
    return Operand(operand_type, dims, consumers, scale, zero_point, lifetime, location, extra)


def _decode_operands(it: Iterator[int], data: bytes, count: int, values: _Blob,
                     blobs: list[_Blob], fill: _Fill) -> tuple[list[Operand], list[int]]:
    """``count`` operands, numberOfConsumers 0 until counted, and the indexes of those whose
    numberOfConsumers is in the input."""
    # Locals, not globals, in the loop: this is the hottest code of a fuzz iteration. The
    # common cases (one-byte codes, small dimensions) are read inline.
    nx, take, new, finish, place = next, islice, _new_instance, _finish_u32s, _place_value
    type_of, lifetime_of, placed = _OPERAND_TYPE_OF_BYTE, _LIFETIME_OF_CODE, _PLACED_LIFETIMES
    operand_class, location_class, extra_class = Operand, DataLocation, OperandExtraParams
    operands: list[Operand] = []
    own_consumers: list[int] = []
    append = operands.append
    ended = False
    for _ in range(count):
        head = nx(it, 0)
        operand_type = nx(it, 0)
        operand_type = (type_of[operand_type] if operand_type < 0x80
                        else _wide_operand_type(it, operand_type))
        rank = nx(it, 0)
        # Ranks 1 and 2 are most of them: their dimensions are read byte by byte (a
        # multi-byte varint, or the end of the input, reads as _u32s would read it).
        if rank == 2:
            first = nx(it, 0)
            second = nx(it, 0)
            dims = [first, second]
            if first >= 0x80 or second >= 0x80:
                dims = finish(it, dims, 2)
        elif rank == 1:
            first = nx(it, 0)
            dims = [first if first < 0x80 else min(_varint_tail(it, first), UINT32_MAX)]
        elif not rank:
            dims = []
            # Past the end of the input every operand reads as zeros: after this one, the
            # rest are made without reading (checked here, where the end shows first).
            ended = not length_hint(it)
        elif rank <= MAX_RANK:
            dims = list(take(it, rank))
            if len(dims) < rank or max(dims) >= 0x80:
                dims = finish(it, dims, rank)
        else:
            dims = _u32s(it, _capped(it, rank, MAX_RANK))
        if head < _LIFETIME_ESCAPE:
            # The common case: a lifetime in range, no quantization, counted consumers,
            # placed, no extra params.
            if head == _COPY:
                location = place(it, data, 0, values, operand_type, dims, 0, fill)
            elif head in placed:
                location = _placed_location(it, data, head, operand_type, dims, values, blobs,
                                            fill)
            else:
                location = new(location_class)
                location.poolIndex = 0
                location.offset = 0
                location.length = 0
            extra = new(extra_class)
            extra.channelQuant = None
            extra.extension = None
            operand = new(operand_class)
            operand.type = operand_type
            operand.dimensions = dims
            operand.numberOfConsumers = 0
            operand.scale = 0.0
            operand.zeroPoint = 0
            operand.lifetime = lifetime_of[head]
            operand.location = location
            operand.extraParams = extra
            append(operand)
        else:
            if head & _OP_CONSUMERS:
                own_consumers.append(len(operands))
            append(_decode_operand(it, data, head, operand_type, dims, values, blobs, fill))
        if ended:
            operands += _zero_operands(count - len(operands))
            break
    return operands, own_consumers


def _zero_operands(count: int) -> list[Operand]:
    """``count`` operands read past the end of the input, where every byte reads as zero:
    type 0, rank 0, head 0 (a TEMPORARY_VARIABLE: nothing placed, location 0, 0, 0). Fuzz
    inputs cut short in the middle of hundreds of operands are common among the slowest."""
    new, operand_class = _new_instance, Operand
    operand_type, lifetime = _OPERAND_TYPE_OF_BYTE[0], _LIFETIME_OF_CODE[0]
    operands = []
    append = operands.append
    for _ in range(count):
        operand = new(operand_class)
        operand.type = operand_type
        operand.dimensions = []
        operand.numberOfConsumers = 0
        operand.scale = 0.0
        operand.zeroPoint = 0
        operand.lifetime = lifetime
        operand.location = _location(0, 0, 0)
        operand.extraParams = _no_extra_params()
        append(operand)
    return operands


def _decode_operations(it: Iterator[int], count: int, uses: list[int]) -> list[Operation]:
    """``count`` operations; each input index that names an operand adds one to its
    ``uses``."""
    nx, new, indexes = next, _new_instance, _read_operation_indexes
    operation_class, operation_type_of = Operation, _OPERATION_TYPE_OF_BYTE
    n = len(uses)
    operations = []
    append = operations.append
    for _ in range(count):
        operation_type = nx(it, 0)
        operation_type = (operation_type_of[operation_type] if operation_type < 0x80
                          else _wide_operation_type(it, operation_type))
        inputs, outputs = indexes(it)
        for i in inputs:
            if i < n:
                uses[i] += 1
        operation = new(operation_class)
        operation.type = operation_type
        operation.inputs = inputs
        operation.outputs = outputs
        append(operation)
    return operations


def _decode_subgraph(it: Iterator[int], data: bytes, values: _Blob,
                     blobs: list[_Blob], fill: _Fill) -> Subgraph:
    count = _count(it, MAX_OPERANDS)
    if count:
        operands, own_consumers = _decode_operands(it, data, count, values, blobs, fill)
    else:
        operands, own_consumers = [], []
    count = _count(it, MAX_OPERATIONS)
    if count:
        uses = [0] * len(operands)
        operations = _decode_operations(it, count, uses)
        if own_consumers:
            for k in set(range(len(operands))).difference(own_consumers):
                operands[k].numberOfConsumers = uses[k]
        else:
            for operand, used in zip(operands, uses):
                operand.numberOfConsumers = used
    else:
        operations = []         # no uses: every count stays 0 (or the one read)
    inputs = _indexes(it, MAX_IO_INDEXES)
    return _subgraph(operands, operations, inputs, _indexes(it, MAX_IO_INDEXES))


def _decode_model(it: Iterator[int], data: bytes, fill: _Fill) -> Model:
    flags = next(it, 0)
    referenced_count = _count(it, MAX_REFERENCED)
    values = _decode_segments(it, data, fill)
    names: list[str] = []
    blobs: list[_Blob] = []
    for _ in range(_count(it, MAX_POOLS)):
        names.append(_blob_name(it, data))
        blobs.append(_decode_segments(it, data, fill))
    main = _decode_subgraph(it, data, values, blobs, fill)
    referenced = [_decode_subgraph(it, data, values, blobs, fill)
                  for _ in range(referenced_count)]
    extensions = _read_extensions(it, data) if flags & 2 else []
    pools = [blob.memory(name) for blob, name in zip(blobs, names)]
    return _model(main, referenced, values.content(), pools, bool(flags & 1), extensions)


def _decode_arguments(it: Iterator[int], data: bytes, io_operands: list[Operand | None],
                      blobs: list[_Blob | None], fill: _Fill) -> list[RequestArgument]:
    """The inputs (or outputs) of a request; ``io_operands[i]`` is the operand argument i
    stands for, None where there is no such operand."""
    arguments = []
    for i in range(_count(it, MAX_REQUEST_ARGUMENTS)):
        head = next(it, 0)
        rank = next(it, 0)
        if not rank:            # (_indexes inline: arguments rarely have dimensions)
            dims = []
        else:
            if rank >= 0x80 or rank > MAX_RANK:
                rank = _capped(it, rank, MAX_RANK)
            dims = _u32s(it, rank)
        if head == 0:
            # The common case: a value placed by the decoder, no size delta.
            delta = 0
        elif head & _ARG_DELTA:
            delta = min(max(_i32(it), -MAX_SIZE_DELTA), MAX_SIZE_DELTA)
        else:
            delta = 0
        if head & _ARG_LOCATION:
            location = _location(_u32(it), _u32(it), _u32(it))
        elif head & _ARG_NO_VALUE:
            location = _location(0, 0, 0)
        else:
            target = _u32(it)
            operand = io_operands[i] if i < len(io_operands) else None
            operand_type = _NO_TYPE if operand is None else operand.type
            shape = dims or ([] if operand is None else operand.dimensions)
            blob = blobs[target] if target < len(blobs) else None
            if blob is not None:
                location = _place_value(it, data, target, blob, operand_type, shape, delta, fill)
            else:
                size = _value_size(operand_type, shape, _read_value(it, data), delta)
                # A driver-allocated buffer (token) is used whole: offset and length 0.
                location = _location(target, 0, size if target >= len(blobs) else 0)
        arguments.append(_argument(bool(head & _ARG_NO_VALUE), location, dims))
    return arguments


def _decode_request(it: Iterator[int], data: bytes, main: Subgraph, fill: _Fill) -> Request:
    names: list[str | None] = []
    blobs: list[_Blob | None] = []
    tokens: list[int] = []
    for _ in range(_count(it, MAX_POOLS)):
        if next(it, 0) & 1:
            tokens.append(_u32(it))
            names.append(None)
            blobs.append(None)
        else:
            tokens.append(0)
            names.append(_blob_name(it, data))
            blobs.append(_decode_segments(it, data, fill))
    operands = main.operands
    n = len(operands)
    inputs = _decode_arguments(it, data, [operands[k] if k < n else None
                                          for k in main.inputIndexes], blobs, fill)
    outputs = _decode_arguments(it, data, [operands[k] if k < n else None
                                           for k in main.outputIndexes], blobs, fill)
    pools = [_memory_pool(None, token) if blob is None
             else _memory_pool(blob.memory(name), None)
             for token, name, blob in zip(tokens, names, blobs)]
    return _request(inputs, outputs, pools)


def decode(data: bytes) -> FuzzCase:
    """Any byte string -> a FuzzCase, deterministically and without raising; the same as
    ``lower(parse(data))``."""
    data = bytes(data)
    it = iter(data)
    fill = _Fill()
    choices = _read_choices(it)
    model = _decode_model(it, data, fill)
    return _case(model, _decode_request(it, data, model.main, fill), choices)


# --- lifting: HAL -> spec ------------------------------------------------------------------

def _classify(data: bytes, operand_type: int, dims: Sequence[int], allow_delta: bool,
              compact: bool) -> tuple[ValueSpec, int]:
    """A placed-value recipe (and size delta) that reproduces ``data`` exactly."""
    n = len(data)
    if compact:
        delta = n - storage_bytes(operand_type, dims)
        if delta == 0 or (allow_delta and abs(delta) <= MAX_SIZE_DELTA):
            if n <= FILL_BUDGET and data.count(0) == n:
                return ValueSpec(), delta
            if n <= MAX_GENERATED_VALUE:
                seed = find_seed(element_kind(operand_type), data)
                if seed is not None:
                    return ValueSpec(ValueKind.GENERATED, seed), delta
    return ValueSpec(ValueKind.LITERAL, data=bytes(data)), 0


@dataclass
class _Placeable:
    """One constant or request argument that lift tries to describe as placed."""
    location: DataLocation
    operand_type: int
    dims: Sequence[int]
    allow_delta: bool
    value: ValueSpec | None = None
    delta: int = 0


def _chain(blob: bytes, items: Sequence[_Placeable], pool_index: int, compact: bool) -> bool:
    """Whether the blob is exactly the items placed one after the other as the decoder
    places them; on success each item gets its value recipe."""
    offset = 0
    for item in items:
        loc = item.location
        start = _aligned(offset)
        end = start + loc.length
        if loc.poolIndex != pool_index or loc.offset != start or end > len(blob):
            return False
        if blob.count(0, offset, start) != start - offset:
            return False
        item.value, item.delta = _classify(blob[start:end], item.operand_type, item.dims,
                                           item.allow_delta, compact)
        offset = end
    return offset == len(blob)


def _explicit_segments(blob: bytes, regions: Iterable[tuple[int, int, int]],
                       compact: bool) -> list[Segment]:
    """The blob as segments cut where the (offset, length, operand type) regions start and
    end, each piece as zeros, generated values or literal bytes."""
    if not blob:
        return []
    if not compact:
        return [Segment(ValueKind.LITERAL, data=bytes(blob))]
    size = len(blob)
    cuts = {0, size}
    kinds: dict[int, ElementKind] = {}
    for offset, length, operand_type in regions:
        if offset < size:
            cuts.add(offset)
            kinds.setdefault(offset, element_kind(operand_type))
            if offset + length < size:
                cuts.add(offset + length)
    points = sorted(cuts)
    segments: list[Segment] = []
    for start, end in zip(points, points[1:]):
        piece = bytes(blob[start:end])
        seed = None
        if piece.count(0) == len(piece):
            segment = Segment(ValueKind.ZERO, len(piece))
        else:
            kind = kinds.get(start, ElementKind.BYTES)
            if 4 <= len(piece) <= MAX_GENERATED_VALUE:
                seed = find_seed(kind, piece)
            segment = (Segment(ValueKind.LITERAL, data=piece) if seed is None
                       else Segment(ValueKind.GENERATED, len(piece), kind, seed))
        last = segments[-1] if segments else None
        if last is not None and last.kind == segment.kind == ValueKind.ZERO:
            last.length += segment.length
        elif last is not None and last.kind == segment.kind == ValueKind.LITERAL:
            last.data += segment.data
        else:
            segments.append(segment)
    if len(segments) > MAX_SEGMENTS or any(s.kind == ValueKind.ZERO and s.length > FILL_BUDGET
                                           for s in segments):
        return [Segment(ValueKind.LITERAL, data=bytes(blob))]
    return segments


def _operand_base(o: Operand, counted: int) -> OperandSpec:
    return OperandSpec(
        o.type, list(o.dimensions), o.scale, o.zeroPoint, o.lifetime,
        None if o.numberOfConsumers == counted else o.numberOfConsumers,
        DataLocation(o.location.poolIndex, o.location.offset, o.location.length), 0,
        ValueSpec(), _lower_extra(o.extraParams))


def _counted_consumers(sg: Subgraph) -> list[int]:
    counts = [0] * len(sg.operands)
    for op in sg.operations:
        for i in op.inputs:
            if i < len(counts):
                counts[i] += 1
    return counts


def _lift_model(model: Model, placed: bool, compact: bool) -> ModelSpec:
    subgraphs = [model.main, *model.referenced]
    pairs: list[tuple[OperandSpec, Operand]] = []
    specs = []
    for sg in subgraphs:
        counted = _counted_consumers(sg)
        operands = [_operand_base(o, counted[i]) for i, o in enumerate(sg.operands)]
        pairs.extend(zip(operands, sg.operands))
        specs.append(SubgraphSpec(
            operands,
            [Operation(op.type, list(op.inputs), list(op.outputs)) for op in sg.operations],
            list(sg.inputIndexes), list(sg.outputIndexes)))

    def place(blob: bytes, members: list[tuple[OperandSpec, Operand]], pool_index: int,
              target: int | None) -> list[Segment]:
        items = [_Placeable(o.location, o.type, o.dimensions, False) for _, o in members]
        if placed and _chain(blob, items, pool_index, compact):
            for (spec, _), item in zip(members, items):
                spec.location, spec.value = None, item.value
                if target is not None:
                    spec.target = target
            return []
        return _explicit_segments(
            blob, [(o.location.offset, o.location.length, o.type) for _, o in members
                   if o.location.poolIndex == pool_index], compact)

    copies = [(s, o) for s, o in pairs if o.lifetime == _COPY]
    values = place(model.operandValues, copies, 0, None)
    pools = []
    for j, memory in enumerate(model.pools):
        members = [(s, o) for s, o in pairs
                   if o.lifetime == _REFERENCE and o.location.poolIndex == j]
        pools.append(BlobSpec(memory.name, place(memory.read(), members, j, j)))
    if placed:
        for spec, o in pairs:
            loc = o.location
            if o.lifetime == _SUBGRAPH:
                if loc.poolIndex == 0 and loc.length == 0:
                    spec.location, spec.target = None, loc.offset
            elif (o.lifetime not in (_COPY, _REFERENCE)
                  and loc.poolIndex == loc.offset == loc.length == 0):
                spec.location = None
    extensions = [ExtensionNameAndPrefix(e.name, e.prefix) for e in model.extensionNameToPrefix]
    return ModelSpec(specs[0], specs[1:], values, pools, model.relaxComputationFloat32toFloat16,
                     extensions)


def _argument_base(a: RequestArgument) -> ArgumentSpec:
    loc = a.location
    return ArgumentSpec(a.hasNoValue, list(a.dimensions),
                        DataLocation(loc.poolIndex, loc.offset, loc.length))


def _lift_request(request: Request, main: Subgraph, placed: bool, compact: bool) -> RequestSpec:
    inputs = [_argument_base(a) for a in request.inputs]
    outputs = [_argument_base(a) for a in request.outputs]
    args: list[tuple[ArgumentSpec, RequestArgument, Operand | None]] = []
    for specs, hal_args, indexes in ((inputs, request.inputs, main.inputIndexes),
                                     (outputs, request.outputs, main.outputIndexes)):
        args.extend((s, a, _io_operand(main, indexes, i))
                    for i, (s, a) in enumerate(zip(specs, hal_args)))
    if placed:
        for spec, a, _ in args:
            loc = a.location
            if a.hasNoValue and loc.poolIndex == loc.offset == loc.length == 0:
                spec.location = None
    pools = []
    for j, pool in enumerate(request.pools):
        members = [(s, a, o) for s, a, o in args if not a.hasNoValue and a.location.poolIndex == j]
        if pool.token is not None and pool.hidlMemory is None:
            pools.append(RequestPoolSpec(token=pool.token))
            if placed:
                for spec, a, _ in members:
                    if a.location.offset == a.location.length == 0:
                        spec.location, spec.target = None, j
            continue
        if pool.hidlMemory is None or pool.token is not None:
            raise CodecLimitError(f"request pool {j} must hold exactly one of hidlMemory, token")
        blob = pool.hidlMemory.read()
        items = [_Placeable(a.location, _NO_TYPE if o is None else o.type,
                            a.dimensions or ([] if o is None else o.dimensions), True)
                 for _, a, o in members]
        if placed and _chain(blob, items, j, compact):
            for (spec, _, _), item in zip(members, items):
                spec.location, spec.target = None, j
                spec.value, spec.size_delta = item.value, item.delta
            segments = []
        else:
            segments = _explicit_segments(
                blob, [(a.location.offset, a.location.length, _NO_TYPE if o is None else o.type)
                       for _, a, o in members], compact)
        pools.append(RequestPoolSpec(blob=BlobSpec(pool.hidlMemory.name, segments)))
    return RequestSpec(inputs, outputs, pools)


def lift(case: FuzzCase, *, placed: bool = True, compact: bool = True) -> CaseSpec:
    """A spec that lowers to ``case``, as compact as the options allow: ``placed`` lets the
    decoder place constants and arguments where their layout is the one it would choose,
    ``compact`` describes contents as zeros or generated values where they are."""
    return CaseSpec(_lift_model(case.model, placed, compact),
                    _lift_request(case.request, case.model.main, placed, compact),
                    replace(case.choices))


def encode(case: FuzzCase) -> bytes:
    """FuzzCase -> bytes with ``decode(encode(case)) == case``, for every case ``decode`` can
    produce. Tries the most compact description first and checks each by decoding it."""
    for placed, compact in ((True, True), (True, False), (False, True), (False, False)):
        data = serialize(lift(case, placed=placed, compact=compact))
        if decode(data) == case:
            return data
    raise CodecLimitError("the case holds a value the encoding cannot reproduce exactly"
                          " (a NaN scale?)")


# --- seeds from other models ---------------------------------------------------------------

def _readable(blob: bytes | None, location: DataLocation) -> bytes | None:
    if blob is None or location.offset + location.length > len(blob):
        return None
    return bytes(blob[location.offset:location.offset + location.length])


def _recipe(data: bytes, operand_type: int, dims: Sequence[int], allow_delta: bool,
            max_literal: int | None) -> tuple[ValueSpec, int]:
    value, delta = _classify(data, operand_type, dims, allow_delta, True)
    if (max_literal is not None and value.kind == ValueKind.LITERAL and len(data) > max_literal
            and len(data) == storage_bytes(operand_type, dims)):
        # Bulk data whose exact values do not matter: generated values of the same size
        # (zeros beyond what the decoder generates).
        value = (ValueSpec(ValueKind.GENERATED, sum(data[:64]) % NUM_SEEDS)
                 if len(data) <= MAX_GENERATED_VALUE else ValueSpec())
        delta = 0
    return value, delta


def relayout(case: FuzzCase, *, max_literal: int | None = None, zero_outputs: bool = True,
             one_request_pool: bool = False) -> CaseSpec:
    """A spec of the same model and request in which the decoder places every constant and
    request argument itself, which is the form structural mutations keep valid. Meant for
    valid cases (conformance models, hand-written ones); values at unreadable locations are
    left where they were. ``max_literal`` replaces literal values longer than that by
    generated values of the same size; ``zero_outputs`` starts output buffers as zeros;
    ``one_request_pool`` puts every request argument in one pool (each pool costs the
    decoder a shared-memory mapping)."""
    spec = lift(case)
    model = case.model
    pools = [memory.read() for memory in model.pools]
    for sg_spec, sg in zip(spec.model.subgraphs(), [model.main, *model.referenced]):
        for o_spec, o in zip(sg_spec.operands, sg.operands):
            loc = o.location
            if o.lifetime == _SUBGRAPH:
                o_spec.location, o_spec.target = None, loc.offset
            elif o.lifetime in (_COPY, _REFERENCE):
                blob = (model.operandValues if o.lifetime == _COPY
                        else pools[loc.poolIndex] if loc.poolIndex < len(pools) else None)
                content = _readable(blob, loc)
                if content is not None:
                    o_spec.value, _ = _recipe(content, o.type, o.dimensions, False, max_literal)
                    o_spec.location = None
                    o_spec.target = loc.poolIndex if o.lifetime == _REFERENCE else 0
            elif loc.poolIndex == loc.offset == loc.length == 0:
                o_spec.location = None
    spec.model.operandValues = []
    for pool in spec.model.pools:
        pool.segments = []
    request = case.request
    contents = [None if p.hidlMemory is None else p.hidlMemory.read() for p in request.pools]
    main = model.main
    for role, (args, specs, indexes) in enumerate(
            ((request.inputs, spec.request.inputs, main.inputIndexes),
             (request.outputs, spec.request.outputs, main.outputIndexes))):
        for i, (arg, arg_spec) in enumerate(zip(args, specs)):
            loc = arg.location
            if arg.hasNoValue:
                arg_spec.location = None
                continue
            operand = _io_operand(main, indexes, i)
            operand_type = _NO_TYPE if operand is None else operand.type
            dims = arg.dimensions or ([] if operand is None else operand.dimensions)
            if loc.poolIndex >= len(request.pools):
                continue
            if contents[loc.poolIndex] is None:      # a token: the whole buffer
                arg_spec.location, arg_spec.target = None, loc.poolIndex
                continue
            content = _readable(contents[loc.poolIndex], loc)
            if content is None:
                continue
            if role == 1 and zero_outputs:
                content = bytes(len(content))
            value, delta = _recipe(content, operand_type, dims, True, max_literal)
            arg_spec.location, arg_spec.target = None, loc.poolIndex
            arg_spec.value, arg_spec.size_delta = value, delta
    for pool in spec.request.pools:
        pool.blob.segments = []
    args = spec.request.inputs + spec.request.outputs
    if (one_request_pool and len(spec.request.pools) > 1
            and all(p.token is None for p in spec.request.pools)
            and all(a.location is None for a in args)):
        for arg in args:
            arg.target = 0
        del spec.request.pools[1:]
    return spec
