"""The shared shape of one-tensor, same-shape operations (RELU, TANH, ABS, EXP, ...):
signature checks, identity shape inference and kernels built from a numpy function."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..hal.enums import OperandType as T
from .common import (QUANT8_ASYMM_TENSORS, check_counts, check_input_type, check_not_omitted,
                     check_quant_params, check_rank_in, check_same_type, check_shape_rank,
                     quantize_to, real_values_f32)
from .registry import Kernel, OperationContext, Shape

UnaryFn = Callable[[np.ndarray], np.ndarray]


def validate_unary(ctx: OperationContext, allowed_types: Sequence[int],
                   max_rank: int | None = None) -> None:
    check_counts(ctx, 1, 1)
    check_not_omitted(ctx)
    check_input_type(ctx, 0, allowed_types)
    check_same_type(ctx, "output 0", ctx.outputs[0], ctx.inputs[0].type)
    check_rank_in(ctx, 0, 1, max_rank)
    check_quant_params(ctx, ctx.inputs[0], "input 0")
    check_quant_params(ctx, ctx.outputs[0], "output 0")


def same_shape(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    check_shape_rank(ctx, shapes[0], "input 0", 1)
    return [shapes[0]]


def same_shape_up_to_4(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    check_shape_rank(ctx, shapes[0], "input 0", 1, 4)
    return [shapes[0]]


def float_kernel(ctx: OperationContext, fn: UnaryFn) -> Kernel:
    """fn computed in single precision; float16 results are rounded once at the end, as
    the reference computes float16 through float."""
    # inf/nan follow IEEE: kernels run with floating-point errors ignored (registry.py).
    if ctx.inputs[0].type == T.TENSOR_FLOAT16:
        def half_kernel(x):
            return (fn(x.astype(np.float32)).astype(np.float16),)
        return half_kernel

    def kernel(x):
        return (fn(x),)
    return kernel


def quant_kernel_via_real(ctx: OperationContext, fn: UnaryFn) -> Kernel:
    """A quantized kernel that applies fn to real values and requantizes to the output."""
    inp, out = ctx.inputs[0], ctx.outputs[0]

    def kernel(x):
        real = fn(real_values_f32(x, inp.scale, inp.zeroPoint))
        return (quantize_to(real, out.scale, out.zeroPoint, out.type, x.dtype),)
    return kernel


def build_float_or_quant(ctx: OperationContext, fn: UnaryFn) -> Kernel:
    if ctx.inputs[0].type in QUANT8_ASYMM_TENSORS:
        return quant_kernel_via_real(ctx, fn)
    return float_kernel(ctx, fn)
