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
below, 32-bit fields at 2^32-1; every byte string is some case; the operand, operation,
argument and request pool are the records of grammar.py's field tables)::

    case      = choices model request
    choices   = b(path:2 second_path:2 measure:1 priority:2 has_deadline:1)
                b(preference:2 wait_fences:2 has_fenced_duration:1 request_change:2 has_relation:1)
                v(loop timeout µs + 1, 0 = omitted) [v deadline µs] [v fence delay µs]
                [v fenced duration µs] [v relation - 1 [v corruption, for CACHE_BYTE_FLIPPED
                and CACHE_TRUNCATED]]
    model     = b(relaxed:1 has_extensions:1) v(#referenced) segments(operandValues)
                v(#pools) blob* subgraph(main) subgraph(referenced)* [v(#) (text v)*]
    blob      = b(name: 0-2 known, else text) segments
    segments  = v(#) (b0 v(zero length) | b1 v(n) n*b | b(2+element kind) b(seed) v(length))*
    subgraph  = v(#operands) operand* v(#operations) (v type  v(#) v*  v(#) v*)*
                v(#) v*(inputIndexes) v(#) v*(outputIndexes)
    operand   = b(lifetime:3 quant:1 consumers:1 location:1 channelQuant:1 extension:1)
                v(type) rank v*(dims) [v raw lifetime when the 3 bits are 7]
                [b(wide) f32|f64 scale, zigzag-v zeroPoint] [v numberOfConsumers]
                (v v v location | placed: [v target (REFERENCE, SUBGRAPH)] [value (constants)])
                [b(wide) v(#) scales channelDim] [v(n) n*b extension]
    value     = b0 zeros | b1 v(n) n*b literal | b(2 + seed) generated
    request   = v(#pools) (b1 v token | b0 blob)* v(#inputs) argument* v(#outputs) argument*
    argument  = b(hasNoValue:1 location:1 size_delta:1) rank v*(dims) [zigzag-v size_delta]
                (v v v location | placed unless hasNoValue: v pool, value)

A ``rank`` is a varint up to MAX_RANK, or a longer varint (two bytes, as the encoder
writes them) up to MAX_LONG_RANK, or a repeated rank (REPEATED_RANK_BASE + n, then one
dimension: n of it, up to MAX_REPEATED_RANK); any other reads as MAX_RANK (as every rank
over MAX_RANK did before long ranks were added: older inputs keep their meaning).

Placed values are appended, 4-aligned, after their pool's explicit segments: constants in
operand order (main, then referenced), arguments inputs first. A placed value is as long as
its operand's storage (the argument's dimensions when given, plus size_delta) except a
literal, which is its bytes.

Modules: ``grammar`` (the caps, the codes and the field tables of the records), ``values``
(varints, floats, texts; generated values), ``spec`` (the CaseSpec dataclasses), ``wire``
(parse, serialize: the one reader and writer of the records, walking their field tables),
``parts`` (encode_parts, parse_parts), ``lowering`` (lower), ``decoding`` (decode:
lower(parse()) in one fused pass, or through the field tables), ``lifting`` (lift, encode,
relayout).
"""
# The package's names (imported from here by the mutator, the seeds, the scripts, the tests).
from .grammar import (  # noqa: F401
    CHOICES_MAX_BYTES, DEADLINE_CAP_US, FENCED_DURATION_CAP_US, FILL_BUDGET, GENERATED_BUDGET,
    LOOP_TIMEOUT_CAP_US, MAX_CHANNEL_SCALES, MAX_LONG_RANK, MAX_EXTENSION_BYTES, MAX_EXTENSIONS,
    MAX_GENERATED_VALUE, MAX_IO_INDEXES, MAX_NAME_BYTES, MAX_OPERANDS, MAX_REPEATED_RANK,
    REPEATED_RANK_BASE, MAX_OPERATION_INPUTS, MAX_OPERATION_OUTPUTS, MAX_OPERATIONS, MAX_POOLS,
    MAX_RANK, MAX_REFERENCED, MAX_REQUEST_ARGUMENTS, MAX_SEGMENTS, MAX_SIZE_DELTA,
    MAX_WAIT_FENCES, MEMORY_NAMES, NUM_SEEDS, UINT16_MAX, UINT32_MAX, WAIT_FENCE_DELAY_CAP_US,
    CodecLimitError)
from .values import (  # noqa: F401
    ELEMENT_KIND_OF_TYPE, ElementKind, element_kind, find_seed, generated_bytes)
from .spec import (  # noqa: F401
    ArgumentSpec, BlobSpec, CaseSpec, ModelSpec, OperandSpec, RequestPoolSpec, RequestSpec,
    Segment, SubgraphSpec, ValueKind, ValueSpec, writable_argument, writable_operand,
    writable_operation)
from .wire import parse, read_choices, serialize, with_choices  # noqa: F401
from .parts import Elements, EncodedSpec, Origin, Origins, encode_parts, parse_parts  # noqa: F401
from .lowering import VALUE_ALIGNMENT, lower, storage_bytes, value_bytes  # noqa: F401
from .decoding import decode  # noqa: F401
from .lifting import encode, lift, relayout  # noqa: F401
