"""Reading operands of a validated model: storage sizes, constant values, and the
OperandInfo/OperationContext views that operation modules see.

These functions assume the locations they read were validated (validation/model.py checks
every constant's pool index, offset and length before anything calls them)."""
from __future__ import annotations

import math

import numpy as np

from .hal.enums import OperandLifeTime, OperandType, SCALAR_OPERAND_TYPES
from .hal.structs import Model, Operand, Operation, Subgraph
from .operations.common import STORAGE_DTYPE
from .operations.registry import OperandInfo, OperationContext

CONSTANT_LIFETIMES = (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)


def is_scalar_type(operand_type: int) -> bool:
    return operand_type in SCALAR_OPERAND_TYPES


def element_size(operand_type: int) -> int | None:
    """Bytes per element of a base operand type; None for SUBGRAPH and extension types."""
    dtype = STORAGE_DTYPE.get(operand_type)
    return None if dtype is None else dtype.itemsize


def storage_size(operand_type: int, dimensions) -> int | None:
    """Bytes needed to store an operand; None when its size is not known (unknown dims)."""
    size = element_size(operand_type)
    if size is None:
        return None
    if is_scalar_type(operand_type):
        return size
    if not dimensions or any(d == 0 for d in dimensions):
        return None
    return size * math.prod(dimensions)


def constant_bytes(model: Model, operand: Operand) -> memoryview:
    location = operand.location
    if operand.lifetime == OperandLifeTime.CONSTANT_COPY:
        return memoryview(model.operandValues)[location.offset:location.offset + location.length]
    pool = model.pools[location.poolIndex]
    return pool.buffer()[location.offset:location.offset + location.length]


def constant_value(model: Model, operand: Operand) -> np.ndarray | None:
    """The value of a CONSTANT_COPY / CONSTANT_REFERENCE operand as a (read-only) numpy
    array of its storage dtype and declared shape; None for any other lifetime or for
    types without a numpy storage form."""
    if operand.lifetime not in CONSTANT_LIFETIMES:
        return None
    dtype = STORAGE_DTYPE.get(operand.type)
    if dtype is None:
        return None
    raw = constant_bytes(model, operand)
    shape = () if is_scalar_type(operand.type) else tuple(operand.dimensions)
    # Copy out of the pool: a constant must not change if the client rewrites the pool
    # after preparation, and a numpy view would pin the mapping open.
    value = np.frombuffer(bytes(raw), dtype=dtype).reshape(shape)
    value.flags.writeable = False
    return value


def operand_info(model: Model, subgraph: Subgraph, index: int) -> OperandInfo:
    operand = subgraph.operands[index]
    return OperandInfo(
        index=index, type=operand.type, dimensions=tuple(operand.dimensions),
        scale=operand.scale, zeroPoint=operand.zeroPoint,
        lifetime=OperandLifeTime(operand.lifetime), value=constant_value(model, operand),
        channelQuant=operand.extraParams.channelQuant)


def operation_context(model: Model, subgraph: Subgraph, op_index: int,
                      infos: list[OperandInfo] | None = None) -> OperationContext:
    """The context an operation module validates and builds against. ``infos`` caches
    OperandInfo per operand index across the operations of one subgraph."""
    operation: Operation = subgraph.operations[op_index]
    if infos is None:
        infos = [operand_info(model, subgraph, i) for i in range(len(subgraph.operands))]
    from .hal.enums import OperationType
    return OperationContext(
        type=OperationType(operation.type), index=op_index,
        inputs=tuple(infos[i] for i in operation.inputs),
        outputs=tuple(infos[i] for i in operation.outputs),
        relaxed=model.relaxComputationFloat32toFloat16)


def subgraph_infos(model: Model, subgraph: Subgraph) -> list[OperandInfo]:
    return [operand_info(model, subgraph, i) for i in range(len(subgraph.operands))]
