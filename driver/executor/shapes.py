"""Shape bookkeeping shared by planning and running: merging what the model declares
with what inference found, and matching run-time shapes (driver/limits.py bounds any one
value)."""
from __future__ import annotations

from ..errors import ValidationError
from ..operations.registry import Shape


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
    if any(d and i and d != i for d, i in zip(declared, inferred)):
        raise ValidationError(f"{what}: inferred dimensions {list(inferred)} differ from "
                              f"declared {list(declared)}")
    return tuple(d or i for d, i in zip(declared, inferred))


def matches_declared(actual: tuple[int, ...], declared: Shape) -> bool:
    """Does an actual (run-time) shape satisfy a declared one (0 and None are wildcards)?"""
    if declared is None or actual == declared:
        return True
    return len(actual) == len(declared) and all(not d or a == d for a, d in zip(actual, declared))
