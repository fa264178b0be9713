"""Shape bookkeeping shared by planning and running: declared shapes, merging what the
model declares with what inference found, and the memory bound on any one value."""
from __future__ import annotations

import math

from ..errors import ResourceError, check
from ..hal.enums import ErrorStatus, OperandType
from ..hal.structs import Operand
from ..operands import is_scalar_type
from ..operations.common import STORAGE_DTYPE
from ..operations.registry import Shape

#: No single operand value may be larger than this: a model whose shapes ask for more is
#: refused (RESOURCE_EXHAUSTED) instead of exhausting the host.
MAX_VALUE_BYTES = 256 * 1024 * 1024


def declared_shape(operand: Operand) -> Shape:
    """The shape the model declares: () for scalars, None for a tensor of unknown rank."""
    if is_scalar_type(operand.type):
        return ()
    return tuple(operand.dimensions) if operand.dimensions else None


def is_fully_known(shape: Shape) -> bool:
    return shape is not None and all(d > 0 for d in shape)


def merge_shapes(declared: Shape, inferred: Shape, what: str) -> Shape:
    """Combine a declared and an inferred shape; ValidationError where they disagree."""
    if declared is None:
        return inferred
    if inferred is None:
        return declared
    check(len(declared) == len(inferred),
          f"{what}: inferred rank {len(inferred)} differs from declared dimensions {list(declared)}")
    merged = []
    for d, i in zip(declared, inferred):
        check(d == 0 or i == 0 or d == i,
              f"{what}: inferred dimensions {list(inferred)} differ from declared {list(declared)}")
        merged.append(d or i)
    return tuple(merged)


def matches_declared(actual: tuple[int, ...], declared: Shape) -> bool:
    """Does an actual (run-time) shape satisfy a declared one (0 and None are wildcards)?"""
    if declared is None:
        return True
    if len(actual) != len(declared):
        return False
    for a, d in zip(actual, declared):
        if d and a != d:
            return False
    return True


def check_value_size(operand_type: int, shape: Shape, what: str) -> None:
    """Refuse values whose byte size exceeds MAX_VALUE_BYTES (unknown dims count as 1)."""
    if shape is None:
        return
    dtype = STORAGE_DTYPE.get(operand_type)
    itemsize = dtype.itemsize if dtype is not None else 1
    nbytes = itemsize * math.prod(max(d, 1) for d in shape)
    if nbytes > MAX_VALUE_BYTES:
        raise ResourceError(f"{what}: shape {list(shape)} needs {nbytes} bytes, over the "
                            f"{MAX_VALUE_BYTES}-byte limit per value",
                            ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT)


def storage_nbytes(operand_type: int, shape: tuple[int, ...]) -> int:
    dtype = STORAGE_DTYPE[operand_type]
    return dtype.itemsize * math.prod(shape)
