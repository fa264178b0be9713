"""SOFTMAX: ``exp((x - max(x)) * beta) / sum(exp((x - max(x)) * beta))`` along an axis
(optional INT32 input, default -1). beta must be positive. Quantized outputs have the
fixed quantization scale 1/256 with zero point 0 (unsigned) or -128 (signed)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from .common import (QUANT8_ASYMM_TENSORS, check_counts, check_input_type, check_not_omitted,
                     check_quant_params, check_rank_in, check_same_type, check_shape_rank,
                     normalize_axis, quantize_to, real_values_f32)
from .logistic import check_fixed_output_quantization
from .registry import Kernel, OperationContext, OperationDef, Shape, register

TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
OUTPUT_QUANTIZATION = {T.TENSOR_QUANT8_ASYMM: (1.0 / 256, 0),
                       T.TENSOR_QUANT8_ASYMM_SIGNED: (1.0 / 256, -128)}
MAX_RANK = 4
INPUT, BETA, AXIS = range(3)


def validate(ctx: OperationContext) -> None:
    check_counts(ctx, (2, 3), 1)
    check_not_omitted(ctx)
    check_input_type(ctx, INPUT, TYPES)
    tensor_type = ctx.inputs[INPUT].type
    check_input_type(ctx, BETA, (T.FLOAT16 if tensor_type == T.TENSOR_FLOAT16 else T.FLOAT32,))
    if len(ctx.inputs) == 3:
        check_input_type(ctx, AXIS, (T.INT32,))
    check_same_type(ctx, "output 0", ctx.outputs[0], tensor_type)
    check_rank_in(ctx, INPUT, 1, MAX_RANK)
    check_quant_params(ctx, ctx.inputs[INPUT], "input 0")
    check_fixed_output_quantization(ctx, OUTPUT_QUANTIZATION)
    beta = ctx.scalar(BETA)
    if beta is not None:
        check_beta(ctx, beta)


def check_beta(ctx: OperationContext, beta: float) -> None:
    check(beta > 0, f"{ctx.name}: beta {beta} must be positive")


def axis_of(ctx: OperationContext, inputs) -> int | None:
    return -1 if len(ctx.inputs) == 2 else (ctx.scalar(AXIS) if inputs is None else int(inputs[AXIS]))


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    inp = shapes[INPUT]
    check_shape_rank(ctx, inp, "input 0", 1, MAX_RANK)
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
        check_beta(ctx, beta)
        axis = normalize_axis(ctx, axis_of(ctx, inputs), x.ndim)
        if x.size == 0:
            return (x.copy(),)
        if quantized:
            probabilities = softmax(real_values_f32(x, inp.scale, inp.zeroPoint), beta, axis)
            return (quantize_to(probabilities, out.scale, out.zeroPoint, out.type, x.dtype),)
        return (softmax(x.astype(np.float32, copy=False), beta, axis).astype(x.dtype, copy=False),)
    return kernel


register(OperationDef(OperationType.SOFTMAX, validate, infer_shapes, build))
