"""The shared shape of EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER and GREATER_EQUAL: two
broadcast tensors of one type compared element-wise into a TENSOR_BOOL8.

Quantized operands compare their real values, (q - zeroPoint) * scale in single precision
as the reference computes them; the two inputs may have different scales and zero points.
TENSOR_BOOL8 compares stored bytes. Every other type compares stored values directly: one
numpy call per run, since loop conditions (``i < n`` on TENSOR_INT32 [1]) run once per
WHILE iteration.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..hal.enums import OperandType as T
from ._arithmetic import broadcast_failure
from .common import (QUANT8_ASYMM_TENSORS, broadcast_shapes, check_counts, check_input_type,
                     check_not_omitted, check_output_type, check_quant_params, check_same_type,
                     real_values_f32)
from .registry import Kernel, OperationContext, Shape, with_binary_ufunc

Comparison = Callable[[np.ndarray, np.ndarray], np.ndarray]

TYPES = (T.TENSOR_BOOL8, T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32,
         T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)


def validate_comparison(ctx: OperationContext) -> None:
    check_counts(ctx, 2, 1)
    check_not_omitted(ctx)
    check_input_type(ctx, 0, TYPES)
    check_same_type(ctx, "input 1", ctx.inputs[1], ctx.inputs[0].type)
    check_output_type(ctx, 0, (T.TENSOR_BOOL8,))
    for i in (0, 1):
        check_quant_params(ctx, ctx.inputs[i], f"input {i}")


def infer_comparison(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    return [broadcast_shapes(ctx, shapes[0], shapes[1])]


def build_comparison(ctx: OperationContext, compare: Comparison) -> Kernel:
    in0, in1 = ctx.inputs[0], ctx.inputs[1]
    if in0.type in QUANT8_ASYMM_TENSORS:
        def quant_kernel(a, b):
            try:
                return (compare(real_values_f32(a, in0.scale, in0.zeroPoint),
                                real_values_f32(b, in1.scale, in1.zeroPoint)),)
            except ValueError:
                broadcast_failure(ctx, a, b)
        return quant_kernel

    if in0.type == T.TENSOR_BOOL8:
        # The reference compares the stored bytes, and a client may store any nonzero
        # byte as true: compare bytes too (numpy would treat 2 and 1 as equal booleans).
        def bool_kernel(a, b):
            try:
                return (compare(a.view(np.uint8), b.view(np.uint8)),)
            except ValueError:
                broadcast_failure(ctx, a, b)
        return bool_kernel

    # NaN compares false (and unequal), as in C; numpy emits no warning for it.
    def kernel(a, b):
        try:
            return (compare(a, b),)
        except ValueError:
            broadcast_failure(ctx, a, b)
    return with_binary_ufunc(kernel, compare)
