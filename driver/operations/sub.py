"""SUB: element-wise difference of two broadcast tensors with a fused activation."""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from ._arithmetic import build_arithmetic, infer_broadcast, validate_arithmetic
from .registry import OperationDef, register

TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM,
         T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_INT32)


def validate(ctx):
    validate_arithmetic(ctx, TYPES)


def build(ctx):
    return build_arithmetic(ctx, np.subtract, np.subtract)


register(OperationDef(OperationType.SUB, validate, infer_broadcast, build))
