"""REDUCE_PROD: the product of elements over the given axes. A zero factor makes the
product 0 even against inf or NaN, as the reference special-cases it; an empty reduction
is 1."""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from ._reduce import build_reduce, infer_reduce, validate_reduce
from .registry import OperationDef, register

TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32)


def validate(ctx):
    validate_reduce(ctx, TYPES)


def product(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    with np.errstate(all="ignore"):
        result = np.prod(x, axis=axes, keepdims=True, dtype=x.dtype)
    has_zero = np.any(x == 0, axis=axes, keepdims=True)
    return np.where(has_zero, np.zeros((), x.dtype), result)


def build(ctx):
    return build_reduce(ctx, product)


register(OperationDef(OperationType.REDUCE_PROD, validate, infer_reduce, build))
