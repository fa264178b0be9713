"""REDUCE_ALL: the logical and of elements over the given axes. An empty reduction is true."""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from ._reduce import build_reduce, infer_reduce, validate_reduce
from .registry import OperationDef, register

TYPES = (T.TENSOR_BOOL8,)


def validate(ctx):
    validate_reduce(ctx, TYPES)


def build(ctx):
    return build_reduce(ctx, lambda x, axes: np.all(x, axis=axes, keepdims=True))


register(OperationDef(OperationType.REDUCE_ALL, validate, infer_reduce, build))
