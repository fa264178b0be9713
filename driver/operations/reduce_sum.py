"""REDUCE_SUM: the sum of elements over the given axes. An empty reduction is 0."""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from ._reduce import build_reduce, infer_reduce, validate_reduce
from .registry import OperationDef, register

TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32)


def validate(ctx):
    validate_reduce(ctx, TYPES)


def _sum(x, axes):
    with np.errstate(all="ignore"):
        return np.sum(x, axis=axes, keepdims=True, dtype=x.dtype)


def build(ctx):
    return build_reduce(ctx, _sum)


register(OperationDef(OperationType.REDUCE_SUM, validate, infer_reduce, build))
