"""The limits of a driver: ranks at and past its rank limit and numpy's (stated by a
request, declared by the model, grown by EXPAND_DIMS or by GATHER with indices of high
rank), and values large together under an execution's memory budget. Each adds a small
graph to main; they are drawn rarely, as such cases are refused early or run slowly."""
from __future__ import annotations

import numpy as np

from driver.hal import OperandLifeTime as L, OperandType as T, Operation, OperationType as Op
from driver.limits import MAX_RANK, MAX_VALUE_BYTES

from ..codec import (MAX_IO_INDEXES, MAX_LONG_RANK, MAX_OPERANDS, MAX_OPERATIONS,
                     MAX_REQUEST_ARGUMENTS, ArgumentSpec, CaseSpec, OperandSpec)
from .blocks import (Rng, ensure_request_pool, input_pool, int32_constant, literal_of,
                     new_operand, output_argument, random_seed)
from .registry import mutation

#: numpy holds at most this many dimensions (since numpy 2; 32 before).
NUMPY_MAX_DIMS = 64
#: The ranks drawn: around the bundled driver's limit and numpy's.
RANKS = (MAX_RANK - 1, MAX_RANK, MAX_RANK + 1, NUMPY_MAX_DIMS, NUMPY_MAX_DIMS + 1)
#: The sizes of the large values: the largest value a driver holds (driver.limits), and
#: fractions of it.
LARGE_VALUE_BYTES = (MAX_VALUE_BYTES, MAX_VALUE_BYTES // 2, MAX_VALUE_BYTES // 8)

_F32, _I32 = T.TENSOR_FLOAT32, T.TENSOR_INT32


def _has_room(spec: CaseSpec, operands: int, operations: int, outputs: int) -> bool:
    main, request = spec.model.main, spec.request
    return (len(main.operands) + operands <= MAX_OPERANDS
            and len(main.operations) + operations <= MAX_OPERATIONS
            and len(main.inputIndexes) + 1 <= MAX_IO_INDEXES
            and len(main.outputIndexes) + outputs <= MAX_IO_INDEXES
            and len(request.inputs) + 1 <= MAX_REQUEST_ARGUMENTS
            and len(request.outputs) + outputs <= MAX_REQUEST_ARGUMENTS)


def _main_input(spec: CaseSpec, dims: list[int], request_dims: list[int], rng: Rng) -> int:
    """A new float32 input of main, with its request argument (a generated value)."""
    ensure_request_pool(spec)
    main = spec.model.main
    index = new_operand(main, OperandSpec(_F32, dims, lifetime=L.SUBGRAPH_INPUT))
    main.inputIndexes.append(index)
    spec.request.inputs.append(ArgumentSpec(dimensions=request_dims, target=input_pool(spec),
                                            value=random_seed(rng)))
    return index


def _result(spec: CaseSpec, dims: list[int], output: bool) -> int:
    """A new float32 operand of main computed by an operation: a main output (with its
    request argument) or a temporary."""
    main = spec.model.main
    operand = OperandSpec(_F32, dims, lifetime=L.SUBGRAPH_OUTPUT if output else L.TEMPORARY_VARIABLE)
    index = new_operand(main, operand)
    if output:
        main.outputIndexes.append(index)
        spec.request.outputs.append(output_argument(spec, operand))
    return index


@mutation(weight=1)
def high_rank(spec: CaseSpec, rng: Rng) -> bool:
    """EXPAND_DIMS(x, 0) of a new input x whose rank (one of RANKS) the request states or
    the model declares, or GATHER(x, 0, indices) whose output reaches such a rank with
    indices of high rank."""
    if not _has_room(spec, operands=4, operations=1, outputs=1):
        return False
    rank = rng.choice(RANKS)
    main = spec.model.main
    kind = rng.randrange(3)
    if kind == 0:               # stated by the request
        x = _main_input(spec, [], [1] * rank, rng)
        operation, inputs, dims = Op.EXPAND_DIMS, [x], []
    elif kind == 1:             # declared by the model
        x = _main_input(spec, [1] * rank, [], rng)
        operation, inputs, dims = Op.EXPAND_DIMS, [x], [1] * (rank + 1)
    else:                       # GATHER: the output's rank is x's plus the indices' less one
        x_rank = rng.randint(1, min(rank, MAX_LONG_RANK))
        x = _main_input(spec, [], [1] * x_rank, rng)
        indices = new_operand(main, OperandSpec(_I32, [1] * (rank + 1 - x_rank),
                                                lifetime=L.CONSTANT_COPY))
        operation, inputs, dims = Op.GATHER, [x, indices], []
    axis = int32_constant(main, 0)
    inputs.insert(1, axis)
    main.operations.append(Operation(operation, inputs, [_result(spec, dims, output=True)]))
    return True


@mutation(weight=1)
def large_values(spec: CaseSpec, rng: Rng) -> bool:
    """A small new input tiled into a large value t (one of LARGE_VALUE_BYTES), then a
    chain of two to five ADDs of t, each result read by the next and sometimes a main
    output too: several large values alive together, as a memory budget bounds them."""
    count = rng.randint(2, 5)
    if not _has_room(spec, operands=count + 4, operations=count + 1, outputs=count):
        return False
    main = spec.model.main
    width = rng.choice((4, 8, 16))
    elements = rng.choice(LARGE_VALUE_BYTES) // 4
    x = _main_input(spec, [width], [], rng)
    multiples = new_operand(main, OperandSpec(_I32, [1], lifetime=L.CONSTANT_COPY,
                                              value=literal_of(np.array([elements // width], "<i4"))))
    tiled = _result(spec, [elements], output=False)
    main.operations.append(Operation(Op.TILE, [x, multiples], [tiled]))
    activation = int32_constant(main, 0)
    previous = tiled
    for k in range(count):
        alive = k == count - 1 or rng.random() < 0.5
        result = _result(spec, [elements], output=alive)
        main.operations.append(Operation(Op.ADD, [previous, tiled, activation], [result]))
        previous = result
    return True
