"""SOFTMAX: ``exp((x - max(x)) * beta) / sum(exp((x - max(x)) * beta))`` along an axis
(optional INT32 input, default -1). beta must be positive. Quantized outputs have the
fixed quantization scale 1/256 with zero point 0 (unsigned) or -128 (signed)."""
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
#: float16 tensors take a FLOAT16 beta, the others a FLOAT32 one; the axis may be left out.
SIGNATURES = tuple(Signature(inputs=(tensor(types, rank=(1, 4)), beta) + axis, outputs=(same_as(INPUT, quantization=LOGISTIC_QUANTIZATION),))
                   for types, beta in (((T.TENSOR_FLOAT16,), replace(BETA_FLOAT32, types=(T.FLOAT16,))),
                                       ((T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM,
                                         T.TENSOR_QUANT8_ASYMM_SIGNED), BETA_FLOAT32))
                   for axis in ((), (scalar(T.INT32, name="axis"),)))


def check_quantization(ctx: OperationContext) -> None:
    check_quant_params(ctx, ctx.inputs[INPUT], "input 0")


def axis_of(ctx: OperationContext, inputs) -> int | None:
    return -1 if len(ctx.inputs) == 2 else (ctx.scalar(AXIS) if inputs is None else int(inputs[AXIS]))


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    inp = shapes[INPUT]
    axis = axis_of(ctx, None)
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


register(OperationDef(OperationType.SOFTMAX, SIGNATURES, infer_shapes, build, check_quantization))
