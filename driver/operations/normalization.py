"""Normalizations: L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION, INSTANCE_NORMALIZATION.

L2_NORMALIZATION divides each vector along an axis (optional INT32 input, default -1) by
its L2 norm, at least 1e-6. Float tensors compute in single precision. Quantized tensors
use the reference's integer arithmetic: the sum of squared differences from the zero point
gives a fixed-point inverse square root per vector (_fixed_point.py), by which each
difference times 128 is scaled into the output's fixed quantization (scale 1/128, zero
point 128, or 0 when signed). A signed tensor normalized along its last axis scales the
difference by the inverse square root times 2**7 instead, rounding once, as the
reference's integer kernel for that case does. All-zero vectors give zeros.

LOCAL_RESPONSE_NORMALIZATION: ``x / (bias + alpha * sqr_sum) ** beta``, where sqr_sum sums
the squares within ``radius`` positions along the axis (optional input, default -1),
clipped at its ends. The radius must be non-negative (a negative window is empty in one
of the reference's kernels and malformed in the other). Float16 computes in single
precision, its parameters converted, as the reference does.

INSTANCE_NORMALIZATION: ``(x - mean) * gamma / sqrt(var + epsilon) + beta``, with the
mean and (biased) variance of each batch and channel over the spatial dimensions of a 4-D
NHWC or NCHW tensor; computed in single precision, float16 too (the reference computes
float16 in half precision throughout).
"""
from __future__ import annotations

from functools import partial

import numpy as np

from ..hal.enums import OperandType as T, OperationType as Op
from ._fixed_point import inv_sqrt_quantized_multiplier, multiply_by_quantized_multiplier, wrap_int32
from .activations import TANH_QUANTIZATION
from .common import QUANT8_ASYMM_TENSORS, normalize_axis, quant_range, same_shape
from .registry import Kernel, OperationContext, OperationDef, register
from .signatures import Example, ExampleOperand, Range, Signature, same_as, scalar, tensor
from .softmax import AXIS_OPERAND, axis_of, check_quantization, infer_shapes

INPUT = 0
#: The floor of an L2 norm (the reference's epsilon).
L2_NORM_FLOOR = np.float32(1e-6)
#: The HAL fixes L2_NORMALIZATION's quantized output as it fixes TANH's: values in
#: [-1, 127/128] at scale 1/128.
L2_QUANTIZATION = TANH_QUANTIZATION


def with_optional_axis(inputs: tuple, outputs: tuple) -> tuple[Signature, Signature]:
    return (Signature(inputs=inputs, outputs=outputs),
            Signature(inputs=inputs + (AXIS_OPERAND,), outputs=outputs))


def float_scalar(tensor_type: int, name: str):
    return scalar(T.FLOAT16 if tensor_type == T.TENSOR_FLOAT16 else T.FLOAT32, name=name)


# --- L2_NORMALIZATION --------------------------------------------------------------------------

L2_AXIS = 1
L2_SIGNATURES = with_optional_axis(
    (tensor((T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, *QUANT8_ASYMM_TENSORS), rank=(1, 4)),),
    (same_as(INPUT, quantization=L2_QUANTIZATION),))


def l2_normalize_float(x: np.ndarray, axis: int) -> np.ndarray:
    x32 = x.astype(np.float32, copy=False)
    norm = np.sqrt(np.sum(x32 * x32, axis=axis, keepdims=True, dtype=np.float32))
    return (x32 / np.maximum(norm, L2_NORM_FLOOR)).astype(x.dtype, copy=False)


def l2_normalize_quantized(x: np.ndarray, axis: int, zero_point: int, operand_type: int) -> np.ndarray:
    difference = x.astype(np.int64) - zero_point
    squares = wrap_int32(np.sum(difference * difference, axis=axis, keepdims=True))
    significand, shift = inv_sqrt_quantized_multiplier(squares)
    if operand_type == T.TENSOR_QUANT8_ASYMM_SIGNED and axis == x.ndim - 1:
        scaled = multiply_by_quantized_multiplier(difference, significand, shift + 7)
    else:
        scaled = multiply_by_quantized_multiplier(difference * 128, significand, shift)
    out_zero_point = L2_QUANTIZATION[operand_type][1]
    return np.clip(scaled + out_zero_point, *quant_range(operand_type)).astype(x.dtype)


def build_l2(ctx: OperationContext) -> Kernel:
    inp = ctx.inputs[INPUT]

    def kernel(*inputs):
        x = inputs[INPUT]
        axis = normalize_axis(ctx, axis_of(ctx, inputs, L2_AXIS), x.ndim)
        if inp.type in QUANT8_ASYMM_TENSORS:
            return (l2_normalize_quantized(x, axis, inp.zeroPoint, inp.type),)
        return (l2_normalize_float(x, axis),)
    return kernel


#: A signed tensor along a middle axis (the other integer kernel), and float16 along axis 1
#: (the channels of an NCHW tensor).
L2_EXAMPLES = (Example(inputs=(ExampleOperand(T.TENSOR_QUANT8_ASYMM_SIGNED, (2, 3, 2), scale=0.5, zero_point=-2),
                               ExampleOperand(T.INT32, constant=1)),
                       outputs=((T.TENSOR_QUANT8_ASYMM_SIGNED, 1.0 / 128, 0),)),
               Example(inputs=(ExampleOperand(T.TENSOR_FLOAT16, (1, 3, 2, 2)), ExampleOperand(T.INT32, constant=-3)),
                       outputs=((T.TENSOR_FLOAT16, 0.0, 0),)))

register(OperationDef(Op.L2_NORMALIZATION, L2_SIGNATURES, partial(infer_shapes, position=L2_AXIS),
                      build_l2, check_quantization, L2_EXAMPLES))


# --- LOCAL_RESPONSE_NORMALIZATION ---------------------------------------------------------------

RADIUS, BIAS, ALPHA, BETA, LRN_AXIS = range(1, 6)
RADIUS_OPERAND = scalar(T.INT32, Range(low=0), "radius")
LRN_SIGNATURES = tuple(
    signature
    for tensor_type in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
    for signature in with_optional_axis(
        (tensor((tensor_type,), rank=(1, 4)), RADIUS_OPERAND, float_scalar(tensor_type, "bias"),
         float_scalar(tensor_type, "alpha"), float_scalar(tensor_type, "beta")),
        (same_as(INPUT),)))


def window_square_sums(x32: np.ndarray, radius: int, axis: int) -> np.ndarray:
    """For each position along ``axis``, the sum of squares within ``radius`` of it, from
    a running sum in double precision (the window may be wider than the axis)."""
    size = x32.shape[axis]
    running = np.cumsum(np.square(x32, dtype=np.float64), axis=axis)
    running = np.concatenate([np.zeros_like(np.take(running, [0], axis=axis)), running], axis=axis)
    positions = np.arange(size, dtype=np.int64)
    ends = np.take(running, np.minimum(positions + radius + 1, size), axis=axis)
    starts = np.take(running, np.maximum(positions - radius, 0), axis=axis)
    return (ends - starts).astype(np.float32)


def build_lrn(ctx: OperationContext) -> Kernel:
    def kernel(*inputs):
        x = inputs[INPUT]
        radius = int(inputs[RADIUS])
        RADIUS_OPERAND.check_value(ctx, RADIUS, radius)
        axis = normalize_axis(ctx, axis_of(ctx, inputs, LRN_AXIS), x.ndim)
        if x.size == 0:
            return (x.copy(),)
        bias, alpha, beta = (np.float32(inputs[i]) for i in (BIAS, ALPHA, BETA))
        x32 = x.astype(np.float32, copy=False)
        scale = np.power(bias + alpha * window_square_sums(x32, radius, axis), -beta)
        return ((x32 * scale).astype(x.dtype, copy=False),)
    return kernel


#: Float16 along a middle axis with a window wider than the axis.
LRN_EXAMPLES = (Example(inputs=(ExampleOperand(T.TENSOR_FLOAT16, (2, 3, 4)), ExampleOperand(T.INT32, constant=5),
                                ExampleOperand(T.FLOAT16, constant=1.0), ExampleOperand(T.FLOAT16, constant=0.5),
                                ExampleOperand(T.FLOAT16, constant=0.75), ExampleOperand(T.INT32, constant=1)),
                        outputs=((T.TENSOR_FLOAT16, 0.0, 0),)),)

register(OperationDef(Op.LOCAL_RESPONSE_NORMALIZATION, LRN_SIGNATURES,
                      partial(infer_shapes, position=LRN_AXIS), build_lrn, None, LRN_EXAMPLES))


# --- INSTANCE_NORMALIZATION ----------------------------------------------------------------------

INSTANCE_SIGNATURES = tuple(
    Signature(inputs=(tensor((tensor_type,), rank=(4, 4)), float_scalar(tensor_type, "gamma"),
                      float_scalar(tensor_type, "beta"), float_scalar(tensor_type, "epsilon"),
                      scalar(T.BOOL, name="NCHW layout")),
              outputs=(same_as(INPUT),))
    for tensor_type in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16))


def build_instance(ctx: OperationContext) -> Kernel:
    def kernel(x, gamma, beta, epsilon, nchw):
        if x.size == 0:
            return (x.copy(),)
        spatial = (2, 3) if bool(nchw) else (1, 2)
        x32 = x.astype(np.float32, copy=False)
        mean = np.mean(x32, axis=spatial, keepdims=True, dtype=np.float32)
        centred = x32 - mean
        variance = np.mean(centred * centred, axis=spatial, keepdims=True, dtype=np.float32)
        sigma = np.sqrt(variance + np.float32(epsilon))
        return ((centred * np.float32(gamma) / sigma + np.float32(beta)).astype(x.dtype, copy=False),)
    return kernel


#: NCHW float16 (the generated seeds cover NHWC float32).
INSTANCE_EXAMPLES = (Example(inputs=(ExampleOperand(T.TENSOR_FLOAT16, (1, 2, 3, 3)),
                                     ExampleOperand(T.FLOAT16, constant=1.5), ExampleOperand(T.FLOAT16, constant=0.25),
                                     ExampleOperand(T.FLOAT16, constant=1e-3), ExampleOperand(T.BOOL, constant=True)),
                             outputs=((T.TENSOR_FLOAT16, 0.0, 0),)),)

register(OperationDef(Op.INSTANCE_NORMALIZATION, INSTANCE_SIGNATURES,
                      same_shape, build_instance, None, INSTANCE_EXAMPLES))
