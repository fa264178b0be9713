"""TANH: element-wise hyperbolic tangent. Quantized outputs have the fixed quantization
scale 1/128 with zero point 128 (unsigned) or 0 (signed)."""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from ._unary import build_float_or_quant, same_shape_up_to_4, validate_unary
from .logistic import check_fixed_output_quantization
from .registry import OperationDef, register

TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
OUTPUT_QUANTIZATION = {T.TENSOR_QUANT8_ASYMM: (1.0 / 128, 128),
                       T.TENSOR_QUANT8_ASYMM_SIGNED: (1.0 / 128, 0)}


def validate(ctx):
    validate_unary(ctx, TYPES, 4)
    check_fixed_output_quantization(ctx, OUTPUT_QUANTIZATION)


def build(ctx):
    return build_float_or_quant(ctx, np.tanh)


register(OperationDef(OperationType.TANH, validate, same_shape_up_to_4, build))
