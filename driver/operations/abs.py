"""ABS: element-wise absolute value. TENSOR_INT32 wraps at INT32_MIN, as two's complement does."""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from ._unary import float_kernel, same_shape, validate_unary
from .registry import OperationDef, register

TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32)


def validate(ctx):
    validate_unary(ctx, TYPES)


def build(ctx):
    if ctx.inputs[0].type == T.TENSOR_INT32:
        return lambda x: (np.abs(x),)
    return float_kernel(ctx, np.abs)


register(OperationDef(OperationType.ABS, validate, same_shape, build))
