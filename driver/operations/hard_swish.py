"""HARD_SWISH: element-wise ``x * max(0, min(6, x + 3)) / 6``. Quantized outputs may use
their own scale and zero point."""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from ._unary import build_float_or_quant, same_shape, validate_unary
from .registry import OperationDef, register

TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)


def validate(ctx):
    validate_unary(ctx, TYPES)


def hard_swish(x: np.ndarray) -> np.ndarray:
    three, six = np.asarray(3, x.dtype), np.asarray(6, x.dtype)
    return x * np.clip(x + three, 0, six) / six


def build(ctx):
    return build_float_or_quant(ctx, hard_swish)


register(OperationDef(OperationType.HARD_SWISH, validate, same_shape, build))
