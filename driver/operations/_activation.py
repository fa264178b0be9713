"""RELU, RELU1 and RELU6: clamping activations. Quantized tensors clamp their stored values
to the activation's bounds in the input's quantization (the output's is the same)."""
from __future__ import annotations

import numpy as np

from ..hal.enums import FusedActivationFunc, OperandType as T
from ._unary import validate_unary
from .common import (QUANT8_ASYMM_TENSORS, activation_bounds, check_same_quantization,
                     quantized_activation_range)
from .registry import Kernel, OperationContext

TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
MAX_RANK = 4


def validate_clamp(ctx: OperationContext) -> None:
    validate_unary(ctx, TYPES, MAX_RANK)
    check_same_quantization(ctx, ctx.outputs[0], ctx.inputs[0], "output 0", "input 0")


def build_clamp(ctx: OperationContext, activation: FusedActivationFunc) -> Kernel:
    inp = ctx.inputs[0]
    if inp.type in QUANT8_ASYMM_TENSORS:
        qlow, qhigh = quantized_activation_range(activation, inp.scale, inp.zeroPoint, inp.type)
        return lambda x: (np.clip(x, qlow, qhigh),)
    low, high = activation_bounds(activation)
    # The reference computes min(max(low, x), high), which turns NaN into low: fmax and
    # fmin ignore a NaN operand the same way. Python-number bounds keep the dtype.
    if high == np.inf:
        return lambda x: (np.fmax(x, low),)
    return lambda x: (np.fmin(np.fmax(x, low), high),)
