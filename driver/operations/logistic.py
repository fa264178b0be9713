"""LOGISTIC: element-wise ``1 / (1 + exp(-x))``. Quantized outputs have the fixed
quantization scale 1/256 with zero point 0 (unsigned) or -128 (signed)."""
from __future__ import annotations

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from ._unary import build_float_or_quant, same_shape_up_to_4, validate_unary
from .registry import OperationDef, register

TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
OUTPUT_QUANTIZATION = {T.TENSOR_QUANT8_ASYMM: (1.0 / 256, 0),
                       T.TENSOR_QUANT8_ASYMM_SIGNED: (1.0 / 256, -128)}


def validate(ctx):
    validate_unary(ctx, TYPES, 4)
    check_fixed_output_quantization(ctx, OUTPUT_QUANTIZATION)


def check_fixed_output_quantization(ctx, table) -> None:
    out = ctx.outputs[0]
    if out.type in table:
        scale, zero_point = table[out.type]
        check(np.float32(out.scale) == np.float32(scale) and out.zeroPoint == zero_point,
              f"{ctx.name}: output 0 (operand {out.index}) must have scale {scale} and zero "
              f"point {zero_point}, has {out.scale} and {out.zeroPoint}")


def sigmoid(x: np.ndarray) -> np.ndarray:
    one = np.ones((), dtype=x.dtype)
    return one / (one + np.exp(-x))


def build(ctx):
    return build_float_or_quant(ctx, sigmoid)


register(OperationDef(OperationType.LOGISTIC, validate, same_shape_up_to_4, build))
