"""SOFTMAX and LOG_SOFTMAX along an axis; beta must be positive.

SOFTMAX: ``exp((x - max(x)) * beta) / sum(exp((x - max(x)) * beta))`` (axis: optional
INT32 input, default -1). Quantized outputs have the fixed quantization scale 1/256 with
zero point 0 (unsigned) or -128 (signed).

LOG_SOFTMAX: ``(x - max(x)) * beta - log(sum(exp((x - max(x)) * beta)))`` on float tensors
of any rank (axis: a required INT32 input). As in the reference, the shifted logits and
the result are computed in the tensor's own type and the exponentials in double precision;
their sum is kept in double precision too (the reference rounds it to the tensor's type
after each addition).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from .activations import LOGISTIC_QUANTIZATION
from .common import QUANT8_ASYMM_TENSORS, check_quant_params, normalize_axis, quantize_to, real_values_f32
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Range, Signature, same_as, scalar, tensor

INPUT, BETA, AXIS = range(3)
BETA_FLOAT32 = scalar(T.FLOAT32, Range(low=0, low_exclusive=True), name="beta")
BETA_FLOAT16 = replace(BETA_FLOAT32, types=(T.FLOAT16,))
AXIS_OPERAND = scalar(T.INT32, name="axis")
#: float16 tensors take a FLOAT16 beta, the others a FLOAT32 one; the axis may be left out.
SIGNATURES = tuple(Signature(inputs=(tensor(types, rank=(1, 4)), beta) + axis, outputs=(same_as(INPUT, quantization=LOGISTIC_QUANTIZATION),))
                   for types, beta in (((T.TENSOR_FLOAT16,), BETA_FLOAT16),
                                       ((T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM,
                                         T.TENSOR_QUANT8_ASYMM_SIGNED), BETA_FLOAT32))
                   for axis in ((), (AXIS_OPERAND,)))
LOG_SOFTMAX_SIGNATURES = tuple(Signature(inputs=(tensor((tensor_type,), rank=(1, None)), beta, AXIS_OPERAND),
                                         outputs=(same_as(INPUT),))
                               for tensor_type, beta in ((T.TENSOR_FLOAT16, BETA_FLOAT16),
                                                         (T.TENSOR_FLOAT32, BETA_FLOAT32)))


def check_quantization(ctx: OperationContext) -> None:
    check_quant_params(ctx, ctx.inputs[INPUT], "input 0")


def axis_of(ctx: OperationContext, inputs, position: int = AXIS) -> int | None:
    """The axis input at ``position``: -1 when the operation leaves it out, else its value
    (with ``inputs`` None, the constant's, or None when only known at run time). The
    normalizations share this rule."""
    if len(ctx.inputs) <= position:
        return -1
    return ctx.scalar(position) if inputs is None else int(inputs[position])


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape], position: int = AXIS) -> list[Shape]:
    """The input's shape; an axis known now must lie within its rank."""
    inp = shapes[INPUT]
    axis = axis_of(ctx, None, position)
    if inp is not None and axis is not None:
        normalize_axis(ctx, axis, len(inp))
    return [inp]


def softmax(x32: np.ndarray, beta: float, axis: int) -> np.ndarray:
    with np.errstate(all="ignore"):
        shifted = (x32 - np.max(x32, axis=axis, keepdims=True)) * np.float32(beta)
        exps = np.exp(shifted)
        return exps / np.sum(exps, axis=axis, keepdims=True)


def build(ctx: OperationContext) -> Kernel:
    inp, out = ctx.inputs[INPUT], ctx.outputs[0]
    quantized = inp.type in QUANT8_ASYMM_TENSORS

    def kernel(*inputs):
        x, beta = inputs[INPUT], float(inputs[BETA])
        BETA_FLOAT32.check_value(ctx, BETA, beta)
        axis = normalize_axis(ctx, axis_of(ctx, inputs), x.ndim)
        if x.size == 0:
            return (x.copy(),)
        if quantized:
            probabilities = softmax(real_values_f32(x, inp.scale, inp.zeroPoint), beta, axis)
            return (quantize_to(probabilities, out.scale, out.zeroPoint, out.type, x.dtype),)
        return (softmax(x.astype(np.float32, copy=False), beta, axis).astype(x.dtype, copy=False),)
    return kernel


def log_softmax(x: np.ndarray, beta: float, axis: int) -> np.ndarray:
    shifted = (x - np.max(x, axis=axis, keepdims=True)) * x.dtype.type(beta)
    log_sum = np.log(np.sum(np.exp(shifted.astype(np.float64)), axis=axis, keepdims=True))
    return shifted - log_sum.astype(x.dtype)


def build_log_softmax(ctx: OperationContext) -> Kernel:
    def kernel(x, beta, axis):
        BETA_FLOAT32.check_value(ctx, BETA, float(beta))
        axis = normalize_axis(ctx, int(axis), x.ndim)
        return (x.copy() if x.size == 0 else log_softmax(x, float(beta), axis),)
    return kernel


register(OperationDef(OperationType.SOFTMAX, SIGNATURES, infer_shapes, build, check_quantization,
                      zero_sized_inputs=True))
register(OperationDef(OperationType.LOG_SOFTMAX, LOG_SOFTMAX_SIGNATURES, infer_shapes, build_log_softmax))
