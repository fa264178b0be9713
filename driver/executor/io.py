"""Moving data between a Request's memory pools and a plan: reading main inputs, writing
main outputs and reporting their shapes."""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError, check
from ..hal.enums import ErrorStatus
from ..hal.structs import Model, OutputShape, Request
from ..operands import is_scalar_type
from ..operations.common import STORAGE_DTYPE
from .shapes import check_value_size, matches_declared, storage_nbytes


def request_pool_buffers(request: Request) -> list[memoryview]:
    """The request's pools as byte views (validate_request checked each is a Memory)."""
    return [pool.hidlMemory.buffer() for pool in request.pools]


def read_inputs(model: Model, request: Request, buffers: list[memoryview],
                required: frozenset[int] = frozenset()) -> list:
    """Main-subgraph input values as fresh numpy arrays (None for omitted inputs, which
    are refused at the ``required`` positions).

    Copies, so that a client writing to its pool while an execution runs cannot change
    what the execution sees."""
    values = []
    for position, (argument, index) in enumerate(zip(request.inputs, model.main.inputIndexes)):
        if argument.hasNoValue:
            check(position not in required, f"request input {position} (operand {index}) "
                  f"has no value, but an operation requires it")
            values.append(None)
            continue
        operand = model.main.operands[index]
        if is_scalar_type(operand.type):
            shape: tuple[int, ...] = ()
        else:
            shape = tuple(argument.dimensions) if argument.dimensions else tuple(operand.dimensions)
        what = f"request input {position} (operand {index})"
        check(all(d > 0 for d in shape) or not shape and is_scalar_type(operand.type),
              f"{what}: dimensions {list(shape)} are not fully specified")
        check_value_size(operand.type, shape, what)
        nbytes = storage_nbytes(operand.type, shape)
        location = argument.location
        check(location.length >= nbytes,
              f"{what}: {location.length} bytes given, {nbytes} needed for shape {list(shape)}")
        raw = buffers[location.poolIndex][location.offset:location.offset + nbytes]
        values.append(np.frombuffer(raw, dtype=STORAGE_DTYPE[operand.type]).reshape(shape).copy())
    return values


def write_outputs(request: Request, values: list, buffers: list[memoryview],
                  ) -> tuple[ErrorStatus, list[OutputShape]]:
    """Copy output values into their buffers, or report OUTPUT_INSUFFICIENT_SIZE (writing
    nothing) when any buffer is too small for its value."""
    shapes = []
    sufficient = True
    for position, (argument, value) in enumerate(zip(request.outputs, values)):
        if argument.dimensions and not matches_declared(value.shape, tuple(argument.dimensions)):
            # The request fixed the output's shape; the computation disagrees with it.
            raise ExecutionError(f"request output {position}: computed shape {list(value.shape)} "
                                 f"is incompatible with the request's {list(argument.dimensions)}")
        fits = argument.hasNoValue or value.nbytes <= argument.location.length
        sufficient = sufficient and fits
        shapes.append(OutputShape(dimensions=list(value.shape), isSufficient=fits))
    if not sufficient:
        return ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, shapes
    for argument, value in zip(request.outputs, values):
        if argument.hasNoValue or value.nbytes == 0:
            continue
        location = argument.location
        buffers[location.poolIndex][location.offset:location.offset + value.nbytes] = \
            np.ascontiguousarray(value).tobytes()
    return ErrorStatus.NONE, shapes
