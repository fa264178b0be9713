"""REDUCE_MIN: the minimum of elements over the given axes."""
from __future__ import annotations

from ..hal.enums import OperationType
from ._reduce import build_reduce, infer_reduce, validate_reduce
from ._reduce_extreme import TYPES, reduce_extreme
from .registry import OperationDef, register


def validate(ctx):
    validate_reduce(ctx, TYPES)


def build(ctx):
    return build_reduce(ctx, reduce_extreme(ctx, use_max=False))


register(OperationDef(OperationType.REDUCE_MIN, validate, infer_reduce, build))
