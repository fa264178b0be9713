"""The shared shape of MAXIMUM and MINIMUM: two broadcast tensors of one type. Quantized
inputs are first requantized to the output's scale and zero point, then compared."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..hal.enums import OperandType as T
from ._arithmetic import broadcast_failure
from .common import (QUANT8_ASYMM_TENSORS, broadcast_shapes, check_counts, check_input_type,
                     check_not_omitted, check_quant_params, check_same_type, requantize_values)
from .registry import Kernel, OperationContext, Shape

TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM,
         T.TENSOR_QUANT8_ASYMM_SIGNED)

Pick = Callable[[np.ndarray, np.ndarray], np.ndarray]


def validate_minmax(ctx: OperationContext) -> None:
    check_counts(ctx, 2, 1)
    check_not_omitted(ctx)
    check_input_type(ctx, 0, TYPES)
    check_same_type(ctx, "input 1", ctx.inputs[1], ctx.inputs[0].type)
    check_same_type(ctx, "output 0", ctx.outputs[0], ctx.inputs[0].type)
    for i in (0, 1):
        check_quant_params(ctx, ctx.inputs[i], f"input {i}")
    check_quant_params(ctx, ctx.outputs[0], "output 0")


def infer_minmax(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    return [broadcast_shapes(ctx, shapes[0], shapes[1])]


def maximum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """std::max(a, b) = (a < b) ? b : a: a NaN in b gives a, a NaN in a gives NaN."""
    return np.where(a < b, b, a)


def minimum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """std::min(a, b) = (b < a) ? b : a."""
    return np.where(b < a, b, a)


def build_minmax(ctx: OperationContext, pick: Pick) -> Kernel:
    in0, in1, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    if in0.type in QUANT8_ASYMM_TENSORS:
        def quant_kernel(a, b):
            a_out = requantize_values(a, in0.scale, in0.zeroPoint, out.scale, out.zeroPoint, out.type)
            b_out = requantize_values(b, in1.scale, in1.zeroPoint, out.scale, out.zeroPoint, out.type)
            try:
                return (pick(a_out, b_out),)
            except ValueError:
                broadcast_failure(ctx, a, b)
        return quant_kernel

    def kernel(a, b):
        try:
            return (pick(a, b),)
        except ValueError:
            broadcast_failure(ctx, a, b)
    return kernel
