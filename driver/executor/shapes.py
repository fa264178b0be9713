"""Shape bookkeeping shared by planning and running: merging what the model declares
with what inference found, matching run-time shapes, and the memory bound on any one
value."""
from __future__ import annotations

from ..errors import ResourceError, ValidationError
from ..hal.enums import ErrorStatus
from ..operations.common import MAX_RESULT_BYTES, STORAGE_DTYPE
from ..operations.registry import Shape

#: No single operand value may be larger than this: a model whose shapes ask for more is
#: refused (RESOURCE_EXHAUSTED) instead of exhausting the host (or taking seconds per
#: operation: see MAX_RESULT_BYTES, the same bound on results sized at run time).
MAX_VALUE_BYTES = MAX_RESULT_BYTES


def is_fully_known(shape: Shape) -> bool:
    """A shape of known rank whose dimensions are all > 0."""
    return shape is not None and (not shape or min(shape) > 0)


def merge_shapes(declared: Shape, inferred: Shape, what: str) -> Shape:
    """Combine a declared and an inferred shape; ValidationError where they disagree."""
    if declared is None:
        return inferred
    if inferred is None or declared == inferred:
        return declared
    if len(declared) != len(inferred):
        raise ValidationError(f"{what}: inferred rank {len(inferred)} differs from declared "
                              f"dimensions {list(declared)}")
    merged = []
    for d, i in zip(declared, inferred):
        if d and i and d != i:
            raise ValidationError(f"{what}: inferred dimensions {list(inferred)} differ from "
                                  f"declared {list(declared)}")
        merged.append(d or i)
    return tuple(merged)


def matches_declared(actual: tuple[int, ...], declared: Shape) -> bool:
    """Does an actual (run-time) shape satisfy a declared one (0 and None are wildcards)?"""
    if declared is None or actual == declared:
        return True
    if len(actual) != len(declared):
        return False
    for a, d in zip(actual, declared):
        if d and a != d:
            return False
    return True


def value_nbytes(operand_type: int, shape: tuple[int, ...]) -> int:
    """Bytes of a value of this shape, unknown (0) dimensions counted as 1."""
    nbytes = _ITEMSIZE.get(operand_type, 1)
    for d in shape:
        if d > 1:
            nbytes *= d
    return nbytes


#: Bytes per element by operand type (1 for types without a storage dtype).
_ITEMSIZE = {operand_type: dtype.itemsize for operand_type, dtype in STORAGE_DTYPE.items()}


def check_value_size(operand_type: int, shape: Shape, what: str) -> None:
    """Refuse values whose byte size exceeds MAX_VALUE_BYTES (unknown dims count as 1)."""
    if shape is None:
        return
    nbytes = value_nbytes(operand_type, shape)
    if nbytes > MAX_VALUE_BYTES:
        raise value_too_large(what, shape, nbytes)


def value_too_large(what: str, shape: tuple[int, ...], nbytes: int) -> ResourceError:
    return ResourceError(f"{what}: shape {list(shape)} needs {nbytes} bytes, over the "
                         f"{MAX_VALUE_BYTES}-byte limit per value",
                         ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT)
