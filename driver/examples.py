"""Small example models built with the HAL types: documentation by example, the benchmark's
workload, and seeds for the fuzz corpus.

``counter_loop_model()`` is the canonical loop-counter program::

    i = i0
    while i < n:
        i = i + 1
    return i
"""
from __future__ import annotations

import numpy as np

from .hal.enums import OperandLifeTime as L, OperandType as T, OperationType as Op
from .hal.structs import (DataLocation, MemoryPool, Model, Operand, Operation, Request,
                          RequestArgument, Subgraph)
from .memory import Memory


def _operand(operand_type: T, dims: list[int], lifetime: L, consumers: int = 0,
             location: DataLocation | None = None) -> Operand:
    return Operand(type=operand_type, dimensions=list(dims), numberOfConsumers=consumers,
                   lifetime=lifetime, location=location or DataLocation())


def counter_loop_model() -> Model:
    """main(i0: int32[1], n: int32[1]) -> i: int32[1], by WHILE(i < n) { i = i + 1 }."""
    one_and_none = np.array([1, 0], np.int32).tobytes()     # the constant 1, activation NONE
    cond = Subgraph(
        operands=[_operand(T.TENSOR_INT32, [1], L.SUBGRAPH_INPUT, 1),
                  _operand(T.TENSOR_INT32, [1], L.SUBGRAPH_INPUT, 1),
                  _operand(T.TENSOR_BOOL8, [1], L.SUBGRAPH_OUTPUT)],
        operations=[Operation(Op.LESS, [0, 1], [2])],
        inputIndexes=[0, 1], outputIndexes=[2])
    body = Subgraph(
        operands=[_operand(T.TENSOR_INT32, [1], L.SUBGRAPH_INPUT, 1),
                  _operand(T.TENSOR_INT32, [1], L.SUBGRAPH_INPUT, 0),
                  _operand(T.TENSOR_INT32, [1], L.CONSTANT_COPY, 1, DataLocation(0, 0, 4)),
                  _operand(T.INT32, [], L.CONSTANT_COPY, 1, DataLocation(0, 4, 4)),
                  _operand(T.TENSOR_INT32, [1], L.SUBGRAPH_OUTPUT)],
        operations=[Operation(Op.ADD, [0, 2, 3], [4])],
        inputIndexes=[0, 1], outputIndexes=[4])
    main = Subgraph(
        operands=[_operand(T.SUBGRAPH, [], L.SUBGRAPH, 1, DataLocation(0, 0, 0)),
                  _operand(T.SUBGRAPH, [], L.SUBGRAPH, 1, DataLocation(0, 1, 0)),
                  _operand(T.TENSOR_INT32, [1], L.SUBGRAPH_INPUT, 1),
                  _operand(T.TENSOR_INT32, [1], L.SUBGRAPH_INPUT, 1),
                  _operand(T.TENSOR_INT32, [1], L.SUBGRAPH_OUTPUT)],
        operations=[Operation(Op.WHILE, [0, 1, 2, 3], [4])],
        inputIndexes=[2, 3], outputIndexes=[4])
    return Model(main=main, referenced=[cond, body], operandValues=one_and_none)


def int32_request(inputs: list[np.ndarray], output_sizes: list[int]) -> tuple[Request, Memory]:
    """A request with every input and output in one shared-memory pool, inputs first.
    Returns the request and its pool (outputs are read back from the pool)."""
    blobs = [np.ascontiguousarray(x).tobytes() for x in inputs]
    pool = Memory.create(sum(map(len, blobs)) + sum(output_sizes))
    arguments, offset = [], 0
    for blob in blobs:
        pool.write(blob, offset)
        arguments.append(RequestArgument(location=DataLocation(0, offset, len(blob))))
        offset += len(blob)
    outputs = []
    for size in output_sizes:
        outputs.append(RequestArgument(location=DataLocation(0, offset, size)))
        offset += size
    return Request(inputs=arguments, outputs=outputs, pools=[MemoryPool(hidlMemory=pool)]), pool
