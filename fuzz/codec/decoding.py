"""``decode(data)``: ``lower(parse(data))`` in one pass, for speed. Decoding runs once per
fuzz iteration, and the common operands, the values of constants and the request arguments
are most of what it reads: they are read straight into HAL objects and placed here, without
their specs (which roughly halves the cost of decoding; going through the specs for these
made decoding ~20 % slower). Everything else (choices, pools, operations, extensions,
uncommon operands) is read by the parser's reader and lowered by lower's lowering. The
fast path is held to ``lower(parse(data))`` by the test_one_pass_decode_* tests of
tests/fuzz/test_codec.py."""
from __future__ import annotations

from itertools import islice
from operator import length_hint
from typing import Iterator

from driver.hal import (DataLocation, Operand, OperandExtraParams, Request, RequestArgument,
                        Subgraph)

from ..case import FuzzCase
from .limits import (FILL_BUDGET, MAX_GENERATED_VALUE, MAX_IO_INDEXES, MAX_OPERANDS,
                     MAX_RANK, MAX_REQUEST_ARGUMENTS, MAX_SIZE_DELTA, UINT32_MAX)
from .lowering import (NO_TYPE, _Blob, _Fill, _location, _segment_blob, _value_size, argument,
                       case, consumer_counts, lower_operand, lowered_model, lowered_pools,
                       placed_location, pool_blobs, request, storage_bytes, subgraph)
from .spec import _COPY, _REFERENCE, _SUBGRAPH, _new_instance, require_fields
from .values import (ELEMENT_KIND_OF_TYPE, ElementKind, _count, _dimensions, _finish_u32s, _i32,
                     _indexes, _long_dimensions, _take, _u32, _u32s, _varint, _varint_tail)
from .wire import (_ARG_DELTA, _ARG_LOCATION, _ARG_NO_VALUE, _LIFETIME_ESCAPE,
                   _LIFETIME_OF_CODE, _OP_CONSUMERS, _OPERAND_TYPE_OF_BYTE, _read_choices,
                   _read_extensions, _read_flagged_operand, _read_model_head,
                   _read_operations, _read_request_pools, _read_value, _wide_operand_type)

require_fields(OperandExtraParams, "channelQuant", "extension")
require_fields(Operand, "type", "dimensions", "numberOfConsumers", "scale", "zeroPoint",
               "lifetime", "location", "extraParams")


def _zero_operands(count: int) -> list[Operand]:
    """``count`` operands read past the end of the input, where every byte reads as zero:
    type 0, rank 0, head 0 (a TEMPORARY_VARIABLE: nothing placed, location 0, 0, 0). Fuzz
    inputs cut short in the middle of hundreds of operands are common among the slowest."""
    new, operand_class, extra_class = _new_instance, Operand, OperandExtraParams
    operand_type, lifetime = _OPERAND_TYPE_OF_BYTE[0], _LIFETIME_OF_CODE[0]
    operands = []
    append = operands.append
    for _ in range(count):
        extra = new(extra_class)
        extra.channelQuant = None
        extra.extension = None
        operand = new(operand_class)
        operand.type = operand_type
        operand.dimensions = []
        operand.numberOfConsumers = 0
        operand.scale = 0.0
        operand.zeroPoint = 0
        operand.lifetime = lifetime
        operand.location = _location(0, 0, 0)
        operand.extraParams = extra
        append(operand)
    return operands


def _decode_value(it: Iterator[int], data: bytes, pool_index: int, blob: _Blob,
                  operand_type: int, dims: list[int], delta: int, fill: _Fill) -> DataLocation:
    """_read_value and lowering._place_value in one, without the ValueSpec: constants are
    most of what the decoder places."""
    tag = next(it, 0)
    if tag == 1:
        raw = _take(it, data, _varint(it))
    else:
        size = storage_bytes(operand_type, dims) + delta
        if size < 0:
            size = 0
        if tag == 0:
            n = size if size <= FILL_BUDGET else FILL_BUDGET
            if n > fill.fill:
                n = fill.fill
            fill.fill -= n
            return _location(pool_index, blob.place_zeros(n), n)
        raw = fill.generate(ELEMENT_KIND_OF_TYPE.get(operand_type, ElementKind.BYTES),
                            tag - 2, size if size <= MAX_GENERATED_VALUE
                            else MAX_GENERATED_VALUE)
    return _location(pool_index, blob.place(raw), len(raw))


def _decode_operands(it: Iterator[int], data: bytes, count: int, values: _Blob,
                     blobs: list[_Blob], fill: _Fill) -> tuple[list[Operand], list[int]]:
    """``count`` operands, numberOfConsumers 0 until counted, and the indexes of those whose
    numberOfConsumers is in the input. The common operand (a lifetime in range, no
    quantization, counted consumers, placed, no extra params) is read inline as
    wire._read_operands reads it; the others are parsed and lowered."""
    # Locals, not globals, in the loop: this is the hottest code of a fuzz iteration. The
    # common cases (one-byte codes, small dimensions) are read inline.
    nx, take, finish, place, read_value = next, islice, _finish_u32s, _decode_value, _read_value
    type_of, lifetime_of, new = _OPERAND_TYPE_OF_BYTE, _LIFETIME_OF_CODE, _new_instance
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
            dims = _long_dimensions(it, rank)
        if head >= _LIFETIME_ESCAPE:
            if head & _OP_CONSUMERS:
                own_consumers.append(len(operands))
            append(lower_operand(_read_flagged_operand(it, data, head, operand_type, dims), 0,
                                 values, blobs, fill))
        else:
            if head == _COPY:
                location = place(it, data, 0, values, operand_type, dims, 0, fill)
            elif head == _REFERENCE:
                target = _u32(it)
                location = placed_location(head, operand_type, dims, target,
                                           read_value(it, data), values, blobs, fill)
            else:
                location = new(location_class)
                location.poolIndex = 0
                location.offset = _u32(it) if head == _SUBGRAPH else 0
                location.length = 0
            # Built as dataclass __init__ would build it (see spec.require_fields).
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
        if ended:
            operands += _zero_operands(count - len(operands))
            break
    return operands, own_consumers


def _decode_subgraph(it: Iterator[int], data: bytes, values: _Blob,
                     blobs: list[_Blob], fill: _Fill) -> Subgraph:
    count = _count(it, MAX_OPERANDS)
    if count:
        operands, own_consumers = _decode_operands(it, data, count, values, blobs, fill)
    else:
        operands, own_consumers = [], []
    operations = _read_operations(it)
    if operations:
        uses = consumer_counts(len(operands), operations)
        if own_consumers:
            for k in set(range(len(operands))).difference(own_consumers):
                operands[k].numberOfConsumers = uses[k]
        else:
            for operand, used in zip(operands, uses):
                operand.numberOfConsumers = used
    inputs = _indexes(it, MAX_IO_INDEXES)
    return subgraph(operands, operations, inputs, _indexes(it, MAX_IO_INDEXES))


def _decode_arguments(it: Iterator[int], data: bytes, io_operands: list[Operand | None],
                      blobs: list[_Blob | None], fill: _Fill) -> list[RequestArgument]:
    """The inputs (or outputs) of a request (wire._read_argument and lower_request in one
    pass); ``io_operands[i]`` is the operand argument i stands for, None where there is no
    such operand."""
    arguments = []
    for i in range(_count(it, MAX_REQUEST_ARGUMENTS)):
        head = next(it, 0)
        dims = _dimensions(it)
        delta = (min(max(_i32(it), -MAX_SIZE_DELTA), MAX_SIZE_DELTA) if head & _ARG_DELTA
                 else 0)
        if head & _ARG_LOCATION:
            location = _location(_u32(it), _u32(it), _u32(it))
        elif head & _ARG_NO_VALUE:
            location = _location(0, 0, 0)
        else:
            target = _u32(it)
            operand = io_operands[i] if i < len(io_operands) else None
            operand_type = NO_TYPE if operand is None else operand.type
            shape = dims or ([] if operand is None else operand.dimensions)
            blob = blobs[target] if target < len(blobs) else None
            if blob is not None:
                location = _decode_value(it, data, target, blob, operand_type, shape, delta,
                                         fill)
            else:
                # A driver-allocated buffer (token) is used whole: offset and length 0.
                size = _value_size(operand_type, shape, _read_value(it, data), delta)
                location = _location(target, 0, size if target >= len(blobs) else 0)
        arguments.append(argument(bool(head & _ARG_NO_VALUE), location, dims))
    return arguments


def _decode_request(it: Iterator[int], data: bytes, main: Subgraph, fill: _Fill) -> Request:
    pools = _read_request_pools(it, data)
    blobs = [None if pool.token is not None else _segment_blob(pool.blob.segments, fill)
             for pool in pools]
    operands = main.operands
    n = len(operands)
    inputs = _decode_arguments(it, data, [operands[k] if k < n else None
                                          for k in main.inputIndexes], blobs, fill)
    outputs = _decode_arguments(it, data, [operands[k] if k < n else None
                                           for k in main.outputIndexes], blobs, fill)
    return request(inputs, outputs, lowered_pools(pools, blobs))


def decode(data: bytes) -> FuzzCase:
    """Any byte string -> a FuzzCase, deterministically and without raising; the same as
    ``lower(parse(data))``."""
    data = bytes(data)
    it = iter(data)
    fill = _Fill()
    choices = _read_choices(it)
    flags, referenced_count, segments, pools = _read_model_head(it, data)
    values, blobs = pool_blobs(segments, pools, fill)
    subgraphs = [_decode_subgraph(it, data, values, blobs, fill)
                 for _ in range(referenced_count + 1)]
    extensions = _read_extensions(it, data) if flags & 2 else []
    model = lowered_model(subgraphs, values, blobs, pools, bool(flags & 1), extensions)
    return case(model, _decode_request(it, data, model.main, fill), choices)
