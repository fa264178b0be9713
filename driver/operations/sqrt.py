"""SQRT: element-wise square root (NaN for negative inputs)."""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from ._unary import same_shape, float_kernel, validate_unary
from .registry import OperationDef, register

TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32)


def validate(ctx):
    validate_unary(ctx, TYPES)


def build(ctx):
    return float_kernel(ctx, np.sqrt)


register(OperationDef(OperationType.SQRT, validate, same_shape, build))
