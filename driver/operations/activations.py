"""Activation functions of one tensor: RELU, RELU1, RELU6, LOGISTIC, TANH and HARD_SWISH.

RELU, RELU1 and RELU6 clamp; quantized tensors clamp their stored values to the bounds in
the input's quantization, which the output shares. LOGISTIC, TANH and HARD_SWISH compute
in single precision; quantized tensors apply the function to their real values and
requantize to the output, whose quantization LOGISTIC and TANH fix.
"""
from __future__ import annotations

from functools import partial
from typing import Callable

import numpy as np

from ..hal.enums import FusedActivationFunc as Act, OperandType as T, OperationType as Op
from .common import (FLOAT_AND_QUANT8_TENSORS, QUANT8_ASYMM_TENSORS, activation_bounds,
                     check_kept_quantization, check_quant_scales, quantize_to,
                     quantized_activation_range, real_values_f32, same_shape)
from .elementwise import float_kernel, unary
from .registry import Kernel, OperationContext, OperationDef, register

UnaryFn = Callable[[np.ndarray], np.ndarray]

TYPES = FLOAT_AND_QUANT8_TENSORS

#: The fixed (scale, zero point) of quantized outputs (the signatures carry them).
LOGISTIC_QUANTIZATION = {T.TENSOR_QUANT8_ASYMM: (1.0 / 256, 0),
                         T.TENSOR_QUANT8_ASYMM_SIGNED: (1.0 / 256, -128)}
TANH_QUANTIZATION = {T.TENSOR_QUANT8_ASYMM: (1.0 / 128, 128),
                     T.TENSOR_QUANT8_ASYMM_SIGNED: (1.0 / 128, 0)}


def check_quantization(ctx: OperationContext) -> None:
    check_quant_scales(ctx, (0,))


# --- RELU, RELU1, RELU6 ------------------------------------------------------------------------

def check_clamp(ctx: OperationContext) -> None:
    check_quantization(ctx)
    check_kept_quantization(ctx)


def build_clamp(ctx: OperationContext, activation: Act) -> Kernel:
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


for operation, activation in ((Op.RELU, Act.RELU), (Op.RELU1, Act.RELU1), (Op.RELU6, Act.RELU6)):
    register(OperationDef(operation, unary(TYPES, 4), same_shape,
                          partial(build_clamp, activation=activation),
                          check_clamp, zero_sized_inputs=True))


# --- LOGISTIC, TANH, HARD_SWISH ----------------------------------------------------------------

def build_float_or_quant(ctx: OperationContext, fn: UnaryFn) -> Kernel:
    if ctx.inputs[0].type not in QUANT8_ASYMM_TENSORS:
        return float_kernel(ctx, fn)
    inp, out = ctx.inputs[0], ctx.outputs[0]

    def quant_kernel(x):
        real = fn(real_values_f32(x, inp.scale, inp.zeroPoint))
        return (quantize_to(real, out.scale, out.zeroPoint, out.type, x.dtype),)
    return quant_kernel


def sigmoid(x: np.ndarray) -> np.ndarray:
    one = np.ones((), dtype=x.dtype)
    return one / (one + np.exp(-x))


def hard_swish(x: np.ndarray) -> np.ndarray:
    three, six = np.asarray(3, x.dtype), np.asarray(6, x.dtype)
    return x * np.clip(x + three, 0, six) / six


for operation, max_rank, fn, quantization in ((Op.LOGISTIC, 4, sigmoid, LOGISTIC_QUANTIZATION),
                                              (Op.TANH, 4, np.tanh, TANH_QUANTIZATION),
                                              (Op.HARD_SWISH, None, hard_swish, None)):
    register(OperationDef(operation, unary(TYPES, max_rank, quantization), same_shape,
                          partial(build_float_or_quant, fn=fn), check_quantization,
                          zero_sized_inputs=True))
