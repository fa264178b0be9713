"""Reading operands of a validated model: storage sizes, constant values, and the
OperandInfo/OperationContext views that operation modules see.

These functions assume the locations they read were validated (validation/model.py checks
every constant's pool index, offset and length before anything calls them)."""
from __future__ import annotations

from typing import Optional

import numpy as np

from .hal.enums import OperandLifeTime, OperationType, SCALAR_OPERAND_TYPES
from .hal.structs import Model, Operand, Operation, Subgraph, SymmPerChannelQuantParams
from .limits import MAX_RANK
from .operations.common import STORAGE_DTYPE
from .operations.registry import OperandInfo, OperationContext

CONSTANT_LIFETIMES = frozenset({OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE})


def constant_value(model: Model, operand: Operand) -> np.ndarray | None:
    """The value of a CONSTANT_COPY / CONSTANT_REFERENCE operand as a (read-only) numpy
    array of its storage dtype and declared shape; None for any other lifetime, for
    types without a numpy storage form and for ranks over MAX_RANK (numpy may not hold
    them; the operations reading such an operand are unsupported)."""
    if operand.lifetime not in CONSTANT_LIFETIMES or len(operand.dimensions) > MAX_RANK:
        return None
    dtype = STORAGE_DTYPE.get(operand.type)
    if dtype is None:
        return None
    location = operand.location
    start, end = location.offset, location.offset + location.length
    if operand.lifetime == OperandLifeTime.CONSTANT_COPY:
        # Slicing bytes copies them; bytearray and memoryview slices are copied below.
        raw = model.operandValues[start:end]
    else:
        raw = model.pools[location.poolIndex].buffer()[start:end]
    # Copy out of the pool: a constant must not change if the client rewrites the pool
    # after preparation, and a numpy view would pin the mapping open. An array over
    # (immutable) bytes is read-only. Validation made the length exactly the shape's.
    if type(raw) is not bytes:
        raw = bytes(raw)
    shape = () if operand.type in SCALAR_OPERAND_TYPES else tuple(operand.dimensions)
    return np.ndarray(shape, dtype, raw)


#: The enums by value: a table lookup costs a fraction of the enum's constructor, and
#: these run for every operand and operation of every model compiled.
_LIFETIMES = {int(lifetime): lifetime for lifetime in OperandLifeTime}
_OPERATION_TYPES = {int(operation_type): operation_type for operation_type in OperationType}


#: OperandInfo views of a model's operands: per subgraph (main, then each referenced one),
#: by operand index, None where none was made. Validation returns them; compile_model
#: reuses them (executor/plan.py) instead of copying the constants again.
ModelInfos = tuple[tuple[Optional[OperandInfo], ...], ...]


def operand_info(model: Model, subgraph: Subgraph, index: int) -> OperandInfo:
    operand = subgraph.operands[index]
    lifetime = _LIFETIMES.get(operand.lifetime)
    if lifetime is None:
        lifetime = OperandLifeTime(operand.lifetime)    # raises ValueError
    channel_quant = operand.extraParams.channelQuant
    if channel_quant is not None:
        # The info may outlive the client's Model (a compiled plan keeps it): no
        # reference into the client's structures.
        channel_quant = SymmPerChannelQuantParams(list(channel_quant.scales),
                                                  channel_quant.channelDim)
    # Positional, in field order (index, type, dimensions, scale, zeroPoint, lifetime,
    # value, channelQuant): keywords cost a third more, for every operand.
    return OperandInfo(index, operand.type, tuple(operand.dimensions), operand.scale,
                       operand.zeroPoint, lifetime,
                       constant_value(model, operand) if lifetime in CONSTANT_LIFETIMES else None,
                       channel_quant)


def operation_context(model: Model, subgraph: Subgraph, op_index: int,
                      infos: list[OperandInfo | None] | None = None) -> OperationContext:
    """The context an operation module validates and builds against. ``infos`` caches
    OperandInfo per operand index across the operations of one subgraph (None where none
    was made yet); the infos of this operation's operands are made here if missing."""
    operation: Operation = subgraph.operations[op_index]
    if infos is None:
        infos = subgraph_infos(model, subgraph)
    for index in (*operation.inputs, *operation.outputs):
        if infos[index] is None:
            infos[index] = operand_info(model, subgraph, index)
    operation_type = _OPERATION_TYPES.get(operation.type)
    if operation_type is None:
        operation_type = OperationType(operation.type)  # raises ValueError
    # Positional, in field order (type, index, inputs, outputs, relaxed), as above.
    return OperationContext(operation_type, op_index,
                            tuple(map(infos.__getitem__, operation.inputs)),
                            tuple(map(infos.__getitem__, operation.outputs)),
                            model.relaxComputationFloat32toFloat16)


def subgraph_infos(model: Model, subgraph: Subgraph) -> list[OperandInfo]:
    return [operand_info(model, subgraph, i) for i in range(len(subgraph.operands))]
