"""Cases at the extremes of what a driver must take: a deadline at an edge of the clock, a
value of no element fed to an operation, a shape of a hundred thousand dimensions, one
operation made thousands of times heavier under a short deadline, a client misusing its
request pools or forging the driver's cache files. Drawn rarely: such cases are refused early or run slowly."""
from __future__ import annotations

import functools

import numpy as np

from driver.hal import OperandLifeTime as L, OperandType as T, Operation, OperationType as Op
from hal_client.builder import ModelBuilder
from hal_client.paths import DeadlineEdge, ExecutionPath

from ..case import PLACED_RELATIONS, Relation

from ..codec import (FILL_BUDGET, MAX_GENERATED_VALUE, MAX_OPERATIONS, UINT32_MAX,
                     CaseSpec, OperandSpec, ValueKind, ValueSpec,
                     storage_bytes, writable_argument, writable_operand, writable_operation)
from .blocks import (TENSOR_TYPES, Rng, argument_slots, literal_of, main_io_operand, new_operand,
                     subgraphs)
from .choices import set_deadline
from .limits import graft, piece
from .registry import mutation
from .shapes import resize_everywhere

GENERATED, ZERO_VALUE = ValueKind.GENERATED, ValueSpec()
_INFERRED_LIFETIMES = (L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT)
_Q8 = T.TENSOR_QUANT8_ASYMM
#: DEPTHWISE_CONV_2D's implicit padding scheme VALID.
VALID = 2
#: The deadline a heavy case runs under (ns): far shorter than its operation takes.
SHORT_DEADLINE_NS = 100_000_000

# --- deadlines at the edges of the clock ----------------------------------------------------------

_DEADLINE_EDGES = tuple(DeadlineEdge)[1:]


@mutation(weight=1)
def deadline_at_edge(spec: CaseSpec, rng: Rng) -> bool:
    """A deadline at an edge of the steady clock (the time point 0, 2^64-1, or one just
    passed), mostly on the fenced path with wait fences: where a driver's arithmetic on time
    points overflows or goes negative."""
    choices = spec.choices
    choices.deadline_ns, choices.deadline_edge = 0, rng.choice(_DEADLINE_EDGES)
    if rng.random() < 0.7:
        choices.path = ExecutionPath.FENCED
        if not choices.wait_fences:       # (a deadline is waited for with the fences)
            choices.wait_fences, choices.wait_fence_delay_ns = 1, 0
    return True


# --- zero-sized values ---------------------------------------------------------------------------

INT32_MAX = (1 << 31) - 1
#: The operand types SLICE takes.
SLICEABLE_TYPES = frozenset({T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32,
                             T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED})


def _sliceable_inputs(spec: CaseSpec) -> list[tuple[int, int]]:
    """(operation, input position) of main's operation inputs SLICE can cut: a tensor of
    a type it takes, every dimension known (and an int32, as SLICE's size is)."""
    main = spec.model.main
    operands = main.operands
    return [(k, j) for k, op in enumerate(main.operations) if op.type != Op.SLICE
            for j, i in enumerate(op.inputs)
            if i < len(operands) and operands[i].type in SLICEABLE_TYPES
            and operands[i].dimensions and 0 < min(operands[i].dimensions)
            and max(operands[i].dimensions) <= INT32_MAX]


@mutation(weight=3)
def zero_sized_input(spec: CaseSpec, rng: Rng) -> bool:
    """An operation fed a value of no element: SLICE(x, 0, size) with one axis of ``size``
    0 (mostly the first, the batch) in front of one of its tensor inputs (mostly its first).
    The slice's output and the operation's outputs of the same rank leave that axis for
    the driver to infer; a main output's buffer keeps its size."""
    main = spec.model.main
    candidates = _sliceable_inputs(spec)
    if not candidates or len(main.operations) >= MAX_OPERATIONS:
        return False
    firsts = [c for c in candidates if c[1] == 0]
    k, j = rng.choice(firsts if firsts and rng.random() < 0.8 else candidates)
    x = main.operands[main.operations[k].inputs[j]]
    rank = len(x.dimensions)
    axis = 0 if rng.random() < 0.7 else rng.randrange(rank)
    size = list(x.dimensions)
    size[axis] = 0
    begin_index = new_operand(main, OperandSpec(T.TENSOR_INT32, [rank], lifetime=L.CONSTANT_COPY,
                                                value=literal_of(np.zeros(rank, "<i4"))))
    size_index = new_operand(main, OperandSpec(T.TENSOR_INT32, [rank], lifetime=L.CONSTANT_COPY,
                                               value=literal_of(np.array(size, "<i4"))))
    sliced = new_operand(main, OperandSpec(x.type, size, x.scale, x.zeroPoint))
    if sliced is None:
        return False
    main.operations.insert(k, Operation(Op.SLICE, [main.operations[k].inputs[j], begin_index,
                                                   size_index], [sliced]))
    operation = writable_operation(main, k + 1)
    operation.inputs[j] = sliced
    for output in operation.outputs:
        _leave_axis_unknown(spec, output, rank, axis)
    return True


def _leave_axis_unknown(spec: CaseSpec, index: int, rank: int, axis: int) -> None:
    """Main operand ``index``'s ``axis`` left unknown when it has ``rank``; a main output
    keeps a buffer of the size it had, and states no dimensions."""
    main = spec.model.main
    if index >= len(main.operands) or len(main.operands[index].dimensions) != rank:
        return
    old_size = storage_bytes(main.operands[index].type, main.operands[index].dimensions)
    writable_operand(main, index).dimensions[axis] = 0
    if index not in main.outputIndexes:
        return
    position = main.outputIndexes.index(index)
    if position < len(spec.request.outputs) and spec.request.outputs[position].location is None:
        argument = writable_argument(spec.request.outputs, position)
        if not argument.dimensions:
            argument.size_delta = max(argument.size_delta + old_size, 1)
        argument.dimensions = []


# --- ranks far past any limit ----------------------------------------------------------------------

#: The ranks drawn: past every driver's limit, within the codec's repeated rank (MAX_REPEATED_RANK).
HUGE_RANKS = (1_000, 10_000, 100_000)
#: The dimension repeated: the product is 1, astronomically large, or unknown.
HUGE_RANK_DIMENSIONS = (1, 2, UINT32_MAX, UINT32_MAX, 0)


@mutation(weight=0.25)
def huge_rank(spec: CaseSpec, rng: Rng) -> bool:
    """A shape of one dimension repeated HUGE_RANKS times, stated by a request argument or
    declared by a main operand, mostly under a short deadline: a driver must refuse it in
    time, whatever work its rank would take."""
    dims = [rng.choice(HUGE_RANK_DIMENSIONS)] * rng.choice(HUGE_RANKS)
    main = spec.model.main
    tensors = [i for i, o in enumerate(main.operands) if o.type in TENSOR_TYPES]
    slots = argument_slots(spec)
    if slots and (not tensors or rng.random() < 0.5):
        arguments, i = rng.choice(slots)
        writable_argument(arguments, i).dimensions = dims
    elif tensors:
        writable_operand(main, rng.choice(tensors)).dimensions = dims
    else:
        return False
    if rng.random() < 0.7:
        set_deadline(spec.choices, SHORT_DEADLINE_NS)
    return True


# --- heavy operations ------------------------------------------------------------------------------

#: What dimensions are multiplied by, and the most bytes the operand resized may hold (two
#: such values take half of the decoder's budget, FILL_BUDGET).
HEAVY_FACTORS = (16, 64, 256, 1024)
HEAVY_BYTES = FILL_BUDGET // 4
#: The buffer of each main output, whose shape is left for the driver to infer.
HEAVY_OUTPUT_BYTES = FILL_BUDGET // 16


@mutation(weight=0.25)
def heavy_dimension(spec: CaseSpec, rng: Rng) -> bool:
    """One dimension, or every dimension but the first (the batch), multiplied by a
    HEAVY_FACTORS factor wherever it occurs (as resize_dimension does), the operand picked
    holding at most HEAVY_BYTES, and the case run under a short deadline: a single operation
    made thousands of times heavier (a filter of 100,000 taps, thousands of boxes, a long
    sequence) must still end near its deadline."""
    candidates = [(sg, i) for sg in subgraphs(spec) for i, o in enumerate(sg.operands)
                  if o.type in TENSOR_TYPES and o.dimensions and min(o.dimensions) > 0]
    if not candidates:
        return False
    sg, index = rng.choice(candidates)
    picked = sg.operands[index]
    rank = len(picked.dimensions)
    axes = ([rng.randrange(rank)] if rank == 1 or rng.random() < 0.5
            else list(range(1, rank)))
    size = storage_bytes(picked.type, picked.dimensions)
    factor = rng.choice(HEAVY_FACTORS)
    while factor > 1 and size * factor ** len(axes) > HEAVY_BYTES:
        factor //= 2
    if factor <= 1:
        return False
    for axis in axes:
        resize_everywhere(spec, picked, axis, picked.dimensions[axis] * factor, rng)
        picked = sg.operands[index]     # (resized, it is a copy)
    _zero_where_too_large(spec)
    _main_shapes_inferred(spec)
    set_deadline(spec.choices, SHORT_DEADLINE_NS)
    return True


def _main_shapes_inferred(spec: CaseSpec) -> None:
    """Every dimension of main's temporaries and outputs left for the driver to infer (the
    resized values change them), each output given a buffer of HEAVY_OUTPUT_BYTES."""
    main = spec.model.main
    for i, o in enumerate(main.operands):
        if o.lifetime in _INFERRED_LIFETIMES and o.type in TENSOR_TYPES and any(o.dimensions):
            writable_operand(main, i).dimensions = [0] * len(o.dimensions)
    for i, argument in enumerate(spec.request.outputs):
        if argument.location is None and not argument.hasNoValue:
            argument = writable_argument(spec.request.outputs, i)
            argument.dimensions, argument.size_delta = [], HEAVY_OUTPUT_BYTES


def _zero_where_too_large(spec: CaseSpec) -> None:
    """Generated values past MAX_GENERATED_VALUE (which the decoder would cut short) made
    zeros, which it fills up to FILL_BUDGET."""
    for sg in subgraphs(spec):
        for i, o in enumerate(sg.operands):
            if o.value.kind == GENERATED and storage_bytes(o.type, o.dimensions) > MAX_GENERATED_VALUE:
                writable_operand(sg, i).value = ZERO_VALUE
    for i, argument in enumerate(spec.request.inputs):
        operand = main_io_operand(spec, "input", i)
        if (operand is not None and argument.value.kind == GENERATED
                and storage_bytes(operand.type, argument.dimensions or operand.dimensions)
                > MAX_GENERATED_VALUE):
            writable_argument(spec.request.inputs, i).value = ZERO_VALUE


@functools.cache
def wide_depthwise(side: int) -> CaseSpec:
    """DEPTHWISE_CONV_2D of a ``side`` x ``side`` quant8 input by a filter as large (VALID
    padding: one output element of side² taps), both given by the request as zeros."""
    mb = ModelBuilder()
    g = mb.main
    shape = [1, side, side, 1]
    x, f = g.input(_Q8, shape, 1.0, 0), g.input(_Q8, shape, 1.0, 0)
    bias = g.input(T.TENSOR_INT32, [1], 1.0, 0)
    g.outputs(g.apply(Op.DEPTHWISE_CONV_2D, [x, f, bias, *map(g.int32, (VALID, 1, 1, 1, 0))],
                      _Q8, [1, 1, 1, 1], 1.0, 0))
    zeros = np.zeros(shape, np.uint8)
    return piece(mb, [zeros, zeros, np.zeros(1, np.int32)], [None] * 3)


#: The filter sides of wide_depthwise: 160,000 and 250,000 taps (seconds of work: a
#: 100 ms deadline is overrun past any hang margin, even on a loaded machine).
WIDE_FILTER_SIDES = (400, 500)


@mutation(weight=0.25)
def heavy_operation(spec: CaseSpec, rng: Rng) -> bool:
    """One operation of a hundred thousand taps (wide_depthwise) grafted onto main, under a
    short deadline."""
    if not graft(spec, wide_depthwise(rng.choice(WIDE_FILTER_SIDES))):
        return False
    set_deadline(spec.choices, SHORT_DEADLINE_NS)
    return True


#: The routes where the client misuses its pools or forges the cache (fuzz/routes.py).
MISUSE_ROUTES = (Relation.CACHE_FORGED, Relation.POOL_SHRUNK, Relation.POOL_AS_CACHE)


@mutation(weight=1.5)
def misuse_route(spec: CaseSpec, rng: Rng) -> bool:
    """Check the case by one of MISUSE_ROUTES, at a new place: drawn more often than
    ``relate`` would draw them (a route among many), as they cost little where they do not
    apply."""
    choices = spec.choices
    choices.relation = rng.choice(MISUSE_ROUTES)
    choices.corruption = rng.randrange(1 << 16) if choices.relation in PLACED_RELATIONS else 0
    return True
