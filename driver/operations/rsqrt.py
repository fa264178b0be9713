"""RSQRT: element-wise ``1 / sqrt(x)`` (inf at 0, NaN for negative inputs)."""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from ._unary import float_kernel, same_shape, validate_unary
from .registry import OperationDef, register

TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32)


def validate(ctx):
    validate_unary(ctx, TYPES)


def reciprocal_sqrt(x: np.ndarray) -> np.ndarray:
    return np.reciprocal(np.sqrt(x))


def build(ctx):
    return float_kernel(ctx, reciprocal_sqrt)


register(OperationDef(OperationType.RSQRT, validate, same_shape, build))
