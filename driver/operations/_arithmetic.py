"""The shared shape of ADD, SUB, MUL and DIV: two broadcast tensors of one type and a
fused activation. Each of those modules supplies its float and integer functions.

Kernels are specialised at build time: with a constant activation (the usual case) the
float and int32 kernels are one numpy call, because they run in the hot path of WHILE
loops (``i = i + 1`` on TENSOR_INT32 [1]).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..errors import check
from ..hal.enums import FusedActivationFunc, OperandType as T
from .common import (activation_bounds, activation_value, broadcast_shapes, check_activation,
                     check_counts, check_input_type, check_not_omitted, check_quant_params,
                     check_rank_at_most, check_same_type, check_shape_rank, dequantize,
                     quantized_activation_range, requantize)
from .registry import Kernel, OperationContext, Shape, with_binary_ufunc

BinaryFn = Callable[[np.ndarray, np.ndarray], np.ndarray]

MAX_RANK = 4


def validate_arithmetic(ctx: OperationContext, allowed_types: Sequence[int]) -> None:
    check_counts(ctx, 3, 1)
    check_not_omitted(ctx)
    check_input_type(ctx, 0, allowed_types)
    tensor_type = ctx.inputs[0].type
    check_same_type(ctx, "input 1", ctx.inputs[1], tensor_type)
    check_same_type(ctx, "output 0", ctx.outputs[0], tensor_type)
    if tensor_type == T.TENSOR_INT32:
        check_activation(ctx, 2, allow=(FusedActivationFunc.NONE,))
    else:
        check_activation(ctx, 2)
    for i in (0, 1):
        check_rank_at_most(ctx, i, MAX_RANK)
        check_quant_params(ctx, ctx.inputs[i], f"input {i}")
    check_quant_params(ctx, ctx.outputs[0], "output 0")


def infer_broadcast(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    check_shape_rank(ctx, shapes[0], "input 0", high=MAX_RANK)
    check_shape_rank(ctx, shapes[1], "input 1", high=MAX_RANK)
    return [broadcast_shapes(ctx, shapes[0], shapes[1])]


def broadcast_failure(ctx: OperationContext, a: np.ndarray, b: np.ndarray) -> None:
    """Report inputs numpy could not broadcast. Shape inference treats a 0 dimension as
    unknown, so a zero-sized dimension against n > 1 is only caught when the kernel runs."""
    check(False, f"{ctx.name}: input shapes {list(np.shape(a))} and {list(np.shape(b))} "
                 f"do not broadcast")


def build_arithmetic(ctx: OperationContext, float_fn: BinaryFn, int_fn: BinaryFn) -> Kernel:
    """The kernel of an arithmetic operation. ``int_fn`` computes TENSOR_INT32 results
    (wrapping like C int32) and may raise through check(); ``float_fn`` computes float
    results and the real-valued results of quantized operands."""
    tensor_type = ctx.inputs[0].type
    if tensor_type == T.TENSOR_INT32:
        return _int_kernel(ctx, int_fn)
    if tensor_type in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16):
        return _float_kernel(ctx, float_fn)
    return _quant_kernel(ctx, float_fn)


def _int_kernel(ctx: OperationContext, int_fn: BinaryFn) -> Kernel:
    # int32 arrays wrap silently in numpy (no warning), as int32 arithmetic does in C.
    if ctx.scalar(2) is not None:      # validation accepted it, so it is NONE
        def int_kernel(a, b, _activation):
            try:
                return (int_fn(a, b),)
            except ValueError:
                broadcast_failure(ctx, a, b)
        return with_binary_ufunc(int_kernel, int_fn)

    def int_kernel_checked(a, b, activation):
        check(int(activation) == FusedActivationFunc.NONE,
              f"{ctx.name}: fused activation {int(activation)} is not NONE for TENSOR_INT32")
        try:
            return (int_fn(a, b),)
        except ValueError:
            broadcast_failure(ctx, a, b)
    return int_kernel_checked


def _float_kernel(ctx: OperationContext, float_fn: BinaryFn) -> Kernel:
    static_activation = ctx.scalar(2)

    # inf/nan follow IEEE, as on a device: kernels run with floating-point errors ignored
    # (registry.py, "Floating-point errors").
    if static_activation == FusedActivationFunc.NONE:
        def float_kernel(a, b, _activation):
            try:
                return (float_fn(a, b),)
            except ValueError:
                broadcast_failure(ctx, a, b)
        return with_binary_ufunc(float_kernel, float_fn)

    if static_activation is not None:
        low, high = activation_bounds(static_activation)

        def float_clamped_kernel(a, b, _activation):
            try:
                result = float_fn(a, b)
            except ValueError:
                broadcast_failure(ctx, a, b)
            return (np.clip(result, low, high).astype(result.dtype, copy=False),)
        return float_clamped_kernel

    def float_dynamic_kernel(a, b, activation):
        low, high = activation_bounds(activation_value(ctx, 2, (a, b, activation)))
        try:
            result = float_fn(a, b)
        except ValueError:
            broadcast_failure(ctx, a, b)
        return (np.clip(result, low, high).astype(result.dtype, copy=False),)
    return float_dynamic_kernel


def _quant_kernel(ctx: OperationContext, float_fn: BinaryFn) -> Kernel:
    in0, in1, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    check(out.scale > 0, f"{ctx.name}: output 0 (operand {out.index}) scale must be > 0")
    static_activation = ctx.scalar(2)
    static_range = (None if static_activation is None else
                    quantized_activation_range(static_activation, out.scale, out.zeroPoint, out.type))

    def quant_kernel(a, b, activation):
        if static_range is None:
            qmin, qmax = quantized_activation_range(activation_value(ctx, 2, (a, b, activation)),
                                                    out.scale, out.zeroPoint, out.type)
        else:
            qmin, qmax = static_range
        try:
            real = float_fn(dequantize(a, in0.scale, in0.zeroPoint),
                            dequantize(b, in1.scale, in1.zeroPoint))
        except ValueError:
            broadcast_failure(ctx, a, b)
        return (requantize(real, out.scale, out.zeroPoint, qmin, qmax, a.dtype),)
    return quant_kernel
