"""The wire grammar (see the package docstring): ``parse`` reads any byte string as a
CaseSpec, ``serialize`` writes a CaseSpec back, raising CodecLimitError for what the
encoding cannot express."""
from __future__ import annotations

from itertools import islice
from operator import length_hint
from typing import Callable, Iterator, Sequence, TypeVar

from driver.hal import (DataLocation, ExecutionPreference, ExtensionNameAndPrefix,
                        MeasureTiming, OperandExtraParams, OperandLifeTime, OperandType,
                        Operation, OperationType, Priority, SymmPerChannelQuantParams)

from hal_client.paths import DeadlineEdge

from ..case import PLACED_RELATIONS, ExecutionChoices, ExecutionPath, Relation, RequestChange
from .limits import (CodecLimitError, DEADLINE_CAP_US, FENCED_DURATION_CAP_US, FILL_BUDGET,
                     LOOP_TIMEOUT_CAP_US, MAX_CHANNEL_SCALES, MAX_EXTENSIONS,
                     MAX_EXTENSION_BYTES, MAX_GENERATED_VALUE, MAX_IO_INDEXES, MAX_OPERANDS,
                     MAX_OPERATIONS, MAX_OPERATION_INPUTS, MAX_OPERATION_OUTPUTS, MAX_POOLS,
                     MAX_RANK, MAX_REFERENCED, MAX_REQUEST_ARGUMENTS, MAX_SEGMENTS,
                     MAX_SIZE_DELTA, MAX_WAIT_FENCES, NUM_SEEDS, UINT16_MAX, UINT32_MAX,
                     WAIT_FENCE_DELAY_CAP_US)
from .spec import (_COPY, _REFERENCE, _SUBGRAPH, _ZERO_VALUE, ArgumentSpec, BlobSpec,
                   CaseSpec, ModelSpec, OperandSpec, RequestPoolSpec, RequestSpec, Segment,
                   SubgraphSpec, ValueKind, ValueSpec, _new_instance, require_fields)
from .values import (ElementKind, _all_one_byte, _capped, _count, _dimensions, _dimensions_out,
                     _finish_u32s, _float, _floats_out, _i32, _i32_out, _indexes, _indexes_out,
                     _limit, _long_dimensions, _memory_name, _take, _text, _text_out, _u32, _u32_out,
                     _u32s, _varint, _varint_out, _varint_tail)

_P = TypeVar("_P")

MEMORY_NAMES = ("ashmem", "mmap_fd", "hardware_buffer_blob")

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
_REQUEST_CHANGES = tuple(RequestChange)
#: The relations a set relation bit can name (a varint past the last reads as the last, which
#: takes no corruption varint: a varint out of range never makes the choices longer).
_RELATIONS = tuple(Relation)[1:]
#: A deadline varint DEADLINE_EDGE_BASE + k (k from 1) is the k-th edge of the clock (such
#: varints read as the cap before: no input of corpus/ or crashes/ holds one).
DEADLINE_EDGE_BASE = DEADLINE_CAP_US
_DEADLINE_EDGES = tuple(DeadlineEdge)[1:]
#: A cache corruption's place is below this.
CORRUPTION_CAP = UINT32_MAX

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
#: The second byte's bits 5-6: the request change (every input written before the field
#: existed has both bits clear, so it decodes as it did: no change).
_CH_REQUEST_CHANGE_SHIFT = 5
#: The second byte's bit 7: a metamorphic relation follows, as the last varint of the
#: choices (clear in every input written before the field existed: no relation).
_CH_RELATION = 0x80

_GENERATED = ValueKind.GENERATED
_LITERAL = ValueKind.LITERAL

require_fields(Operation, "type", "inputs", "outputs")


# --- reading (see values.py: past the end of the input every field reads as zero) -----------

def _wide_operand_type(it: Iterator[int], first: int) -> OperandType | int:
    value = min(_varint_tail(it, first), UINT32_MAX)
    return _OPERAND_TYPES.get(value, value)


def _wide_operation_type(it: Iterator[int], first: int) -> OperationType | int:
    value = min(_varint_tail(it, first), UINT32_MAX)
    return _OPERATION_TYPES.get(value, value)


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
            dims = _long_dimensions(it, rank)
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
    if head & _OP_CHANNEL_QUANT:
        wide = bool(next(it, 0) & 1)
        scales = [_float(it, wide) for _ in range(_count(it, MAX_CHANNEL_SCALES))]
        spec.extraParams.channelQuant = SymmPerChannelQuantParams(scales, _u32(it))
    if head & _OP_EXTENSION:
        spec.extraParams.extension = _take(it, data, _count(it, MAX_EXTENSION_BYTES))
    return spec


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
    """A subgraph's operations, one-byte codes read inline (see _read_operands), each built
    field by field (see spec.require_fields): parse and decode read them."""
    nx, indexes, new = next, _read_operation_indexes, _new_instance
    type_of, operation_class = _OPERATION_TYPE_OF_BYTE, Operation
    operations: list[Operation] = []
    append = operations.append
    for _ in range(_count(it, MAX_OPERATIONS)):
        operation_type = nx(it, 0)
        operation = new(operation_class)
        operation.type = (type_of[operation_type] if operation_type < 0x80
                          else _wide_operation_type(it, operation_type))
        operation.inputs, operation.outputs = indexes(it)
        append(operation)
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


def _read_argument(it: Iterator[int], data: bytes) -> ArgumentSpec:
    head = next(it, 0)
    dims = _dimensions(it)
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


def _read_request_pools(it: Iterator[int], data: bytes) -> list[RequestPoolSpec]:
    pools = []
    for _ in range(_count(it, MAX_POOLS)):
        if next(it, 0) & 1:
            pools.append(RequestPoolSpec(token=_u32(it)))
        else:
            pools.append(RequestPoolSpec(blob=_read_blob(it, data)))
    return pools


def _read_request(it: Iterator[int], data: bytes) -> RequestSpec:
    pools = _read_request_pools(it, data)
    inputs = [_read_argument(it, data) for _ in range(_count(it, MAX_REQUEST_ARGUMENTS))]
    outputs = [_read_argument(it, data) for _ in range(_count(it, MAX_REQUEST_ARGUMENTS))]
    return RequestSpec(inputs, outputs, pools)


def _deadline(us: int) -> tuple[int, DeadlineEdge]:
    """A deadline varint: µs from the call (capped), or just past the cap, an edge of the
    clock (see DEADLINE_EDGE_BASE)."""
    if DEADLINE_EDGE_BASE < us <= DEADLINE_EDGE_BASE + len(_DEADLINE_EDGES):
        return 0, _DEADLINE_EDGES[us - DEADLINE_EDGE_BASE - 1]
    return min(us, DEADLINE_CAP_US) * 1000, DeadlineEdge.NONE


def _read_choices(it: Iterator[int]) -> ExecutionChoices:
    a, b = next(it, 0), next(it, 0)
    wait_fences = (b >> 2) & 3
    loop = _varint(it)
    deadline, edge = _deadline(_varint(it)) if a & _CH_DEADLINE else (None, DeadlineEdge.NONE)
    delay = min(_varint(it), WAIT_FENCE_DELAY_CAP_US) * 1000 if wait_fences else 0
    duration = (min(_varint(it), FENCED_DURATION_CAP_US) * 1000
                if b & _CH_FENCED_DURATION else None)
    relation = _RELATIONS[min(_varint(it), len(_RELATIONS) - 1)] if b & _CH_RELATION else Relation.NONE
    corruption = min(_varint(it), CORRUPTION_CAP) if relation in PLACED_RELATIONS else 0
    return ExecutionChoices(
        path=_PATHS[a & 3], second_path=_PATHS[(a >> 2) & 3], measureTiming=_MEASURE[(a >> 4) & 1],
        preference=_PREFERENCES[b & 3], priority=_PRIORITIES[(a >> 5) & 3], deadline_ns=deadline,
        deadline_edge=edge,
        loopTimeoutDuration_ns=min(loop - 1, LOOP_TIMEOUT_CAP_US) * 1000 if loop else None,
        wait_fences=wait_fences, wait_fence_delay_ns=delay, fenced_duration_ns=duration,
        request_change=_REQUEST_CHANGES[(b >> _CH_REQUEST_CHANGE_SHIFT) & 3], relation=relation,
        corruption=corruption)


#: The most bytes the execution choices at the head of an input take: two bytes and at most
#: six varints of at most 10 bytes.
CHOICES_MAX_BYTES = 2 + 6 * 10


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


# --- writing (see values.py: ``where`` names the field at fault) ------------------------------

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
    _dimensions_out(out, o.dimensions, where)
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
    _dimensions_out(out, a.dimensions, where)
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
               | (_CH_FENCED_DURATION if c.fenced_duration_ns is not None else 0)
               | int(c.request_change) << _CH_REQUEST_CHANGE_SHIFT
               | (_CH_RELATION if c.relation != Relation.NONE else 0))
    if c.loopTimeoutDuration_ns is None:
        out.append(0)
    else:
        us = _microseconds(c.loopTimeoutDuration_ns, LOOP_TIMEOUT_CAP_US, "loopTimeoutDuration")
        _varint_out(out, us + 1, LOOP_TIMEOUT_CAP_US + 1, where, "loopTimeoutDuration")
    if c.deadline_ns is not None and c.deadline_edge != DeadlineEdge.NONE:
        if c.deadline_ns != 0:
            raise CodecLimitError(f"choices: deadline_edge {c.deadline_edge.name} with "
                                  f"deadline_ns {c.deadline_ns}, not 0")
        edge = DEADLINE_EDGE_BASE + _DEADLINE_EDGES.index(c.deadline_edge) + 1
        _varint_out(out, edge, edge, where, "deadline edge")
    elif c.deadline_ns is not None:
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
    if c.relation != Relation.NONE:
        _varint_out(out, _RELATIONS.index(c.relation), len(_RELATIONS) - 1, where, "relation")
    if c.relation in PLACED_RELATIONS:
        _varint_out(out, c.corruption, CORRUPTION_CAP, where, "corruption")


def serialize(spec: CaseSpec) -> bytes:
    """CaseSpec -> bytes; raises CodecLimitError for what the encoding cannot express."""
    out = bytearray()
    _choices_out(out, spec.choices)
    _model_out(out, spec.model)
    _request_out(out, spec.request)
    return bytes(out)


