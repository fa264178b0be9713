"""FLOOR: element-wise floor."""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from ._unary import same_shape_up_to_4, float_kernel, validate_unary
from .registry import OperationDef, register

TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32)


def validate(ctx):
    validate_unary(ctx, TYPES, 4)


def build(ctx):
    return float_kernel(ctx, np.floor)


register(OperationDef(OperationType.FLOOR, validate, same_shape_up_to_4, build))
