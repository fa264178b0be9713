"""The limits of a driver: ranks at and past its rank limit and numpy's (stated by a
request, declared by the model, grown by EXPAND_DIMS, by GATHER with indices of high rank or
by a WHILE body adding a dimension each iteration), and values large together under an
execution's memory budget. Each grafts a small model, built with hal_client.builder, onto
main; they are drawn rarely, as such cases are refused early or run slowly."""
from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np

from driver.hal import OperandType as T, Operation, OperationType as Op
from driver.limits import MAX_RANK, MAX_VALUE_BYTES
from hal_client.builder import ModelBuilder, make_request, out_bytes
from hal_client.examples import count_condition

from ..case import FuzzCase
from ..codec import (MAX_IO_INDEXES, MAX_LONG_RANK, MAX_OPERANDS, MAX_OPERATIONS,
                     MAX_REFERENCED, MAX_REQUEST_ARGUMENTS, CaseSpec, OperandSpec, SubgraphSpec,
                     relayout)
from .blocks import SUBGRAPH_LIFETIME, Rng, ensure_request_pool, input_pool, output_pool
from .registry import mutation

#: numpy holds at most this many dimensions (since numpy 2; 32 before).
NUMPY_MAX_DIMS = 64
#: The ranks drawn: around the bundled driver's limit and numpy's.
RANKS = (MAX_RANK - 1, MAX_RANK, MAX_RANK + 1, NUMPY_MAX_DIMS, NUMPY_MAX_DIMS + 1)
#: The sizes of the large values: the largest value a driver holds (driver.limits), and
#: fractions of it.
LARGE_VALUE_BYTES = (MAX_VALUE_BYTES, MAX_VALUE_BYTES // 2, MAX_VALUE_BYTES // 8)
#: Output buffer of a grafted output: a value of rank past the limits holds one element; a
#: large value does not fit (the execution computes it all the same, then says so).
OUTPUT_BYTES = 4

_F32, _I32 = T.TENSOR_FLOAT32, T.TENSOR_INT32

# Each piece is built once (functools.cache): the draws name a few hundred at most, and
# building one (model, request, relayout) takes about a millisecond, as long as a dozen
# custom mutations.


# --- grafting ---------------------------------------------------------------------------------

def piece(mb: ModelBuilder, inputs: list[np.ndarray], stated: list[list[int] | None]) -> CaseSpec:
    """The spec of the model built in ``mb``, fed ``inputs``; ``stated`` replaces the
    dimensions an input's request argument states (None: its array's shape; []: none)."""
    model = mb.build()
    io = make_request(inputs, [out_bytes(np.float32, OUTPUT_BYTES)] * len(model.main.outputIndexes),
                      one_pool=True)
    for argument, dims in zip(io.request.inputs, stated):
        if dims is not None:
            argument.dimensions = dims
    return relayout(FuzzCase(model, io.request))


def graft(spec: CaseSpec, piece: CaseSpec) -> bool:
    """Add ``piece`` to ``spec``: its referenced subgraphs after spec's, its main's operands,
    operations, inputs and outputs to spec's main, its request arguments to spec's request
    (in spec's pools). False if the spec has no room for it."""
    model, main, extra = spec.model, spec.model.main, piece.model.main
    request, arguments = spec.request, piece.request
    if (len(model.referenced) + len(piece.model.referenced) > MAX_REFERENCED
            or len(main.operands) + len(extra.operands) > MAX_OPERANDS
            or len(main.operations) + len(extra.operations) > MAX_OPERATIONS
            or len(main.inputIndexes) + len(extra.inputIndexes) > MAX_IO_INDEXES
            or len(main.outputIndexes) + len(extra.outputIndexes) > MAX_IO_INDEXES
            or len(request.inputs) + len(arguments.inputs) > MAX_REQUEST_ARGUMENTS
            or len(request.outputs) + len(arguments.outputs) > MAX_REQUEST_ARGUMENTS):
        return False
    shift = len(model.referenced)

    def moved(o: OperandSpec) -> OperandSpec:
        # A new operand where it names a subgraph: specs share their operands.
        return replace(o, target=o.target + shift) if o.lifetime == SUBGRAPH_LIFETIME else o
    for sg in piece.model.referenced:
        model.referenced.append(SubgraphSpec([moved(o) for o in sg.operands], list(sg.operations),
                                             list(sg.inputIndexes), list(sg.outputIndexes)))
    base = len(main.operands)
    main.operands += [moved(o) for o in extra.operands]
    main.operations += [Operation(op.type, [i + base for i in op.inputs], [i + base for i in op.outputs])
                        for op in extra.operations]
    main.inputIndexes += [i + base for i in extra.inputIndexes]
    main.outputIndexes += [i + base for i in extra.outputIndexes]
    ensure_request_pool(spec)
    request.inputs += [replace(a, target=input_pool(spec)) for a in arguments.inputs]
    request.outputs += [replace(a, target=output_pool(spec)) for a in arguments.outputs]
    return True


# --- ranks ------------------------------------------------------------------------------------

@functools.cache
def expanded(rank: int, declared: bool) -> CaseSpec:
    """EXPAND_DIMS(x, 0) of an input x of ``rank``, which the model declares or the request
    states (the model leaving it unknown)."""
    mb = ModelBuilder()
    g = mb.main
    x = g.input(_F32, [1] * rank if declared else [])
    g.outputs(g.apply(Op.EXPAND_DIMS, [x, g.int32(0)], _F32, [1] * (rank + 1) if declared else []))
    return piece(mb, [np.zeros(1, np.float32)], [[] if declared else [1] * rank])


@functools.cache
def gathered(rank: int, x_rank: int) -> CaseSpec:
    """GATHER(x, 0, indices) of an input x of ``x_rank`` with indices taking the output to
    ``rank`` (both ranks stated by the request)."""
    mb = ModelBuilder()
    g = mb.main
    x, indices = g.input(_F32, []), g.input(_I32, [])
    g.outputs(g.apply(Op.GATHER, [x, g.int32(0), indices], _F32, []))
    return piece(mb, [np.zeros(1, np.float32), np.zeros(1, np.int32)],
                  [[1] * x_rank, [1] * (rank + 1 - x_rank)])


@functools.cache
def grown_by_loop(iterations: int) -> CaseSpec:
    """i = 0; while i < iterations: (i, x) = (i + 1, EXPAND_DIMS(x, 0)), from x of rank 1:
    the loop's state gains a dimension each iteration."""
    mb = ModelBuilder()
    grows = (_F32, [], 0.0, 0)
    cond = count_condition(mb, limit=iterations, others=[grows])
    body = mb.subgraph()
    i, x = body.input(_I32, [1]), body.input(_F32, [])
    body.outputs(body.add(i, body.constant(_I32, [1])),
                 body.apply(Op.EXPAND_DIMS, [x, body.int32(0)], _F32, []))
    g = mb.main
    _, grown = g.while_(cond, body, [g.constant(_I32, [0]), g.input(_F32, [1])])
    g.outputs(grown)
    return piece(mb, [np.zeros(1, np.float32)], [None])


@mutation(weight=1)
def high_rank(spec: CaseSpec, rng: Rng) -> bool:
    """A value of one of RANKS: EXPAND_DIMS of an input of that rank less one (declared or
    stated), GATHER reaching it with indices of high rank, or a WHILE loop growing a rank-1
    value to it."""
    rank = rng.choice(RANKS)
    kind = rng.randrange(4)
    if kind < 2:
        piece = expanded(rank - 1, declared=kind == 1)
    elif kind == 2:
        piece = gathered(rank, rng.randint(1, min(rank, MAX_LONG_RANK)))
    else:
        piece = grown_by_loop(rank - 1)
    return graft(spec, piece)


# --- memory -----------------------------------------------------------------------------------

@functools.cache
def tiled_chain(value_bytes: int, width: int, alive: tuple[bool, ...]) -> CaseSpec:
    """A float32 input of ``width`` elements tiled into a value t of ``value_bytes``, then a
    chain of ADDs of t, one per ``alive`` flag; each result is read by the next, and also a
    main output where its flag is set (alive to the end)."""
    elements = value_bytes // 4
    mb = ModelBuilder()
    g = mb.main
    x = g.input(_F32, [width])
    tiled = g.apply(Op.TILE, [x, g.constant(_I32, [elements // width])], _F32, [elements])
    previous, outputs = tiled, []
    for kept in alive:
        previous = g.add(previous, tiled)
        if kept:
            outputs.append(previous)
    g.outputs(*outputs)
    return piece(mb, [np.ones(width, np.float32)], [None])


@mutation(weight=1)
def large_values(spec: CaseSpec, rng: Rng) -> bool:
    """Two to five large values computed from one (LARGE_VALUE_BYTES), some of them alive
    together: what an execution's memory budget bounds."""
    count = rng.randint(2, 5)
    alive = tuple(k == count - 1 or rng.random() < 0.5 for k in range(count))
    return graft(spec, tiled_chain(rng.choice(LARGE_VALUE_BYTES), rng.choice((4, 8, 16)), alive))
