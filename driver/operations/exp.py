"""EXP: element-wise natural exponential."""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from ._unary import same_shape, float_kernel, validate_unary
from .registry import OperationDef, register

TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32)


def validate(ctx):
    validate_unary(ctx, TYPES)


def build(ctx):
    return float_kernel(ctx, np.exp)


register(OperationDef(OperationType.EXP, validate, same_shape, build))
