"""``decode(data)``: ``lower(parse(data))``, by default in one fused pass, for speed.
Decoding runs once per fuzz iteration, and the common operands, the operations, the values
of constants and the request arguments are most of what it reads: the fused pass reads them
straight into HAL objects and places the values, without their specs (which roughly halves
the cost of decoding). Everything else (choices, pools, extensions, operands with flags) is
read by wire.py's reader and lowered by lower's lowering. The fused pass is held to
``lower(parse(data))`` by the test_one_pass_decode_* tests of tests/fuzz/test_codec.py; with
UNFUSED_DECODE_ENV set, decode is ``lower(parse(data))`` itself, so that what the fused pass
is worth can be measured."""
from __future__ import annotations

import os
from itertools import islice
from operator import length_hint
from typing import Iterator

from driver.hal import (DataLocation, Operand, OperandExtraParams, Operation, Request,
                        RequestArgument, Subgraph)

from ..case import FuzzCase
from .grammar import (ARGUMENT_DELTA, ARGUMENT_LOCATION, ARGUMENT_NO_VALUE, COPY, FILL_BUDGET,
                      LIFETIME_ESCAPE, LIFETIME_OF_CODE, MAX_GENERATED_VALUE, MAX_IO_INDEXES,
                      MAX_OPERANDS, MAX_OPERATION_INPUTS, MAX_OPERATION_OUTPUTS, MAX_OPERATIONS,
                      MAX_POOLS, MAX_RANK, MAX_REQUEST_ARGUMENTS, MAX_SIZE_DELTA,
                      OPERAND_CONSUMERS, OPERAND_TYPE_OF_BYTE, OPERAND_TYPES,
                      OPERATION_TYPE_OF_BYTE, OPERATION_TYPES, RECIPE_GENERATED, RECIPE_LITERAL,
                      RECIPE_ZERO, REFERENCE, SUBGRAPH, UINT32_MAX)
from .lowering import (NO_TYPE, Blob, Fill, argument, case, consumer_counts, data_location,
                       lower, lower_operand, lowered_model, lowered_pools, placed_location,
                       pool_blobs, request, segment_blob, storage_bytes, subgraph, value_size)
from .spec import new_instance, require_fields
from .values import (ELEMENT_KIND_OF_TYPE, ElementKind, capped, finish_u32s, long_dimensions,
                     read_count, read_dimensions, read_i32, read_indexes, read_u32, read_u32s,
                     read_varint, take, varint_tail)
from .wire import (OPERAND, REQUEST_POOL, parse, parse_choices, parse_extensions,
                   parse_model_head, read_records, read_value, wide_code)

#: Set (to anything but the empty string), decode is lower(parse()), through the field
#: tables, and not the fused pass.
UNFUSED_DECODE_ENV = "NNHAL_FUZZ_UNFUSED_DECODE"

require_fields(OperandExtraParams, "channelQuant", "extension")
require_fields(Operand, "type", "dimensions", "numberOfConsumers", "scale", "zeroPoint",
               "lifetime", "location", "extraParams")
require_fields(Operation, "type", "inputs", "outputs")


def _zero_operands(count: int) -> list[Operand]:
    """``count`` operands read past the end of the input, where every byte reads as zero:
    type 0, rank 0, head 0 (a TEMPORARY_VARIABLE: nothing placed, location 0, 0, 0). Fuzz
    inputs cut short in the middle of hundreds of operands are common among the slowest."""
    new, operand_class, extra_class = new_instance, Operand, OperandExtraParams
    operand_type, lifetime = OPERAND_TYPE_OF_BYTE[0], LIFETIME_OF_CODE[0]
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
        operand.location = data_location(0, 0, 0)
        operand.extraParams = extra
        append(operand)
    return operands


def _decode_value(it: Iterator[int], data: bytes, pool_index: int, blob: Blob,
                  operand_type: int, dims: list[int], delta: int, fill: Fill) -> DataLocation:
    """wire.read_value and lowering's placing of the value in one, without the ValueSpec:
    constants are most of what the decoder places."""
    tag = next(it, 0)
    if tag == RECIPE_LITERAL:
        raw = take(it, data, read_varint(it))
    else:
        size = storage_bytes(operand_type, dims) + delta
        if size < 0:
            size = 0
        if tag == RECIPE_ZERO:
            n = size if size <= FILL_BUDGET else FILL_BUDGET
            if n > fill.fill:
                n = fill.fill
            fill.fill -= n
            return data_location(pool_index, blob.place_zeros(n), n)
        raw = fill.generate(ELEMENT_KIND_OF_TYPE.get(operand_type, ElementKind.BYTES),
                            tag - RECIPE_GENERATED, size if size <= MAX_GENERATED_VALUE
                            else MAX_GENERATED_VALUE)
    return data_location(pool_index, blob.place(raw), len(raw))


def _decode_operands(it: Iterator[int], data: bytes, count: int, values: Blob,
                     blobs: list[Blob], fill: Fill) -> tuple[list[Operand], list[int]]:
    """``count`` operands, numberOfConsumers 0 until counted, and the indexes of those whose
    numberOfConsumers is in the input. The common operand (a lifetime in range, no
    quantization, counted consumers, placed, no extra params: its head byte below
    LIFETIME_ESCAPE) is read inline; the others are read by wire.OPERAND and lowered."""
    # Locals, not globals, in the loop: this is the hottest code of a fuzz iteration. The
    # common cases (one-byte codes, small dimensions) are read inline.
    nx, sliced, finish, place, recipe = next, islice, finish_u32s, _decode_value, read_value
    type_of, lifetime_of, new = OPERAND_TYPE_OF_BYTE, LIFETIME_OF_CODE, new_instance
    operand_class, location_class, extra_class = Operand, DataLocation, OperandExtraParams
    read_operand = OPERAND.read
    operands: list[Operand] = []
    own_consumers: list[int] = []
    append = operands.append
    ended = False
    for _ in range(count):
        head = nx(it, 0)
        if head >= LIFETIME_ESCAPE:
            if head & OPERAND_CONSUMERS:
                own_consumers.append(len(operands))
            append(lower_operand(read_operand(it, data, head), 0, values, blobs, fill))
            continue
        operand_type = nx(it, 0)
        operand_type = (type_of[operand_type] if operand_type < 0x80
                        else wide_code(it, operand_type, OPERAND_TYPES))
        rank = nx(it, 0)
        # Ranks 1 and 2 are most of them: their dimensions are read byte by byte (a
        # multi-byte varint, or the end of the input, reads as read_u32s would read it).
        if rank == 2:
            first = nx(it, 0)
            second = nx(it, 0)
            dims = [first, second]
            if first >= 0x80 or second >= 0x80:
                dims = finish(it, dims, 2)
        elif rank == 1:
            first = nx(it, 0)
            dims = [first if first < 0x80 else min(varint_tail(it, first), UINT32_MAX)]
        elif not rank:
            dims = []
            # Past the end of the input every operand reads as zeros: after this one, the
            # rest are made without reading (checked here, where the end shows first).
            ended = not length_hint(it)
        elif rank <= MAX_RANK:
            dims = list(sliced(it, rank))
            if len(dims) < rank or max(dims) >= 0x80:
                dims = finish(it, dims, rank)
        else:
            dims = long_dimensions(it, rank)
        if head == COPY:
            location = place(it, data, 0, values, operand_type, dims, 0, fill)
        elif head == REFERENCE:
            target = read_u32(it)
            location = placed_location(head, operand_type, dims, target, recipe(it, data),
                                       values, blobs, fill)
        else:
            location = new(location_class)
            location.poolIndex = 0
            location.offset = read_u32(it) if head == SUBGRAPH else 0
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


def _decode_operations(it: Iterator[int]) -> list[Operation]:
    """A subgraph's operations (wire.OPERATION's fields; one-byte codes, counts and
    indexes read inline), each built field by field (see spec.require_fields)."""
    nx, new, operation_class, type_of = next, new_instance, Operation, OPERATION_TYPE_OF_BYTE
    operations: list[Operation] = []
    append = operations.append
    for _ in range(read_count(it, MAX_OPERATIONS)):
        operation_type = nx(it, 0)
        operation = new(operation_class)
        operation.type = (type_of[operation_type] if operation_type < 0x80
                          else wide_code(it, operation_type, OPERATION_TYPES))
        n = nx(it, 0)       # (every one-byte count is within MAX_OPERATION_INPUTS)
        if not n:
            inputs = []
        elif n < 0x80:
            inputs = list(islice(it, n))
            if len(inputs) < n or max(inputs) >= 0x80:
                inputs = finish_u32s(it, inputs, n)
        else:
            inputs = read_u32s(it, capped(it, n, MAX_OPERATION_INPUTS))
        n = nx(it, 0)
        if n == 1:          # one output: the usual case
            b = nx(it, 0)
            outputs = [b if b < 0x80 else min(varint_tail(it, b), UINT32_MAX)]
        elif not n:
            outputs = []
        else:
            outputs = read_u32s(it, n if n <= MAX_OPERATION_OUTPUTS
                                else capped(it, n, MAX_OPERATION_OUTPUTS))
        operation.inputs = inputs
        operation.outputs = outputs
        append(operation)
    return operations


def _decode_subgraph(it: Iterator[int], data: bytes, values: Blob,
                     blobs: list[Blob], fill: Fill) -> Subgraph:
    operands, own_consumers = _decode_operands(it, data, read_count(it, MAX_OPERANDS), values,
                                               blobs, fill)
    operations = _decode_operations(it)
    if operations:
        uses = consumer_counts(len(operands), operations)
        if own_consumers:
            for k in set(range(len(operands))).difference(own_consumers):
                operands[k].numberOfConsumers = uses[k]
        else:
            for operand, used in zip(operands, uses):
                operand.numberOfConsumers = used
    inputs = read_indexes(it, MAX_IO_INDEXES)
    return subgraph(operands, operations, inputs, read_indexes(it, MAX_IO_INDEXES))


def _decode_arguments(it: Iterator[int], data: bytes, io_operands: list[Operand | None],
                      blobs: list[Blob | None], fill: Fill) -> list[RequestArgument]:
    """The inputs (or outputs) of a request (wire.ARGUMENT's fields and lower_request in
    one pass); ``io_operands[i]`` is the operand argument i stands for, None where there is no
    such operand."""
    arguments = []
    for i in range(read_count(it, MAX_REQUEST_ARGUMENTS)):
        head = next(it, 0)
        dims = read_dimensions(it)
        delta = (min(max(read_i32(it), -MAX_SIZE_DELTA), MAX_SIZE_DELTA)
                 if head & ARGUMENT_DELTA else 0)
        if head & ARGUMENT_LOCATION:
            location = data_location(read_u32(it), read_u32(it), read_u32(it))
        elif head & ARGUMENT_NO_VALUE:
            location = data_location(0, 0, 0)
        else:
            target = read_u32(it)
            operand = io_operands[i] if i < len(io_operands) else None
            operand_type = NO_TYPE if operand is None else operand.type
            shape = dims or ([] if operand is None else operand.dimensions)
            blob = blobs[target] if target < len(blobs) else None
            if blob is not None:
                location = _decode_value(it, data, target, blob, operand_type, shape, delta,
                                         fill)
            else:
                # A driver-allocated buffer (token) is used whole: offset and length 0.
                size = value_size(operand_type, shape, read_value(it, data), delta)
                location = data_location(target, 0, size if target >= len(blobs) else 0)
        arguments.append(argument(bool(head & ARGUMENT_NO_VALUE), location, dims))
    return arguments


def _decode_request(it: Iterator[int], data: bytes, main: Subgraph, fill: Fill) -> Request:
    pools = read_records(REQUEST_POOL, MAX_POOLS, it, data)
    blobs = [None if pool.token is not None else segment_blob(pool.blob.segments, fill)
             for pool in pools]
    operands = main.operands
    n = len(operands)
    inputs = _decode_arguments(it, data, [operands[k] if k < n else None
                                          for k in main.inputIndexes], blobs, fill)
    outputs = _decode_arguments(it, data, [operands[k] if k < n else None
                                           for k in main.outputIndexes], blobs, fill)
    return request(inputs, outputs, lowered_pools(pools, blobs))


def fused_decode(data: bytes) -> FuzzCase:
    """Any byte string -> a FuzzCase, deterministically and without raising; the same as
    ``lower(parse(data))``."""
    data = bytes(data)
    it = iter(data)
    fill = Fill()
    choices = parse_choices(it)
    flags, referenced_count, segments, pools = parse_model_head(it, data)
    values, blobs = pool_blobs(segments, pools, fill)
    subgraphs = [_decode_subgraph(it, data, values, blobs, fill)
                 for _ in range(referenced_count + 1)]
    extensions = parse_extensions(it, data) if flags & 2 else []
    model = lowered_model(subgraphs, values, blobs, pools, bool(flags & 1), extensions)
    return case(model, _decode_request(it, data, model.main, fill), choices)


def unfused_decode(data: bytes) -> FuzzCase:
    """The definition of decode, through the field tables."""
    return lower(parse(data))


decode = unfused_decode if os.environ.get(UNFUSED_DECODE_ENV) else fused_decode
