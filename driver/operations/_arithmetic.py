"""The shared shape of ADD, SUB, MUL and DIV: two broadcast tensors of one type and a
fused activation. Each of those modules supplies its float and integer functions."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..errors import check
from ..hal.enums import FusedActivationFunc, OperandType as T
from .common import (apply_float_activation, activation_value, broadcast_shapes,
                     check_activation, check_counts, check_input_type, check_not_omitted,
                     check_quant_params, check_rank_at_most, check_same_type, dequantize,
                     quantized_activation_range, requantize)
from .registry import Kernel, OperationContext, Shape

BinaryFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


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
        check_rank_at_most(ctx, i, 4)
        check_quant_params(ctx, ctx.inputs[i], f"input {i}")
    check_quant_params(ctx, ctx.outputs[0], "output 0")


def infer_broadcast(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    return [broadcast_shapes(ctx, shapes[0], shapes[1])]


def build_arithmetic(ctx: OperationContext, float_fn: BinaryFn, int_fn: BinaryFn) -> Kernel:
    tensor_type = ctx.inputs[0].type
    out = ctx.outputs[0]
    static_activation = ctx.scalar(2)

    if tensor_type == T.TENSOR_INT32:
        def int_kernel(a, b, _activation):
            with np.errstate(all="ignore"):   # int32 arithmetic wraps, as in C
                return (int_fn(a, b).astype(np.int32, copy=False),)
        return int_kernel

    if tensor_type in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16):
        dtype = np.float32 if tensor_type == T.TENSOR_FLOAT32 else np.float16

        if static_activation == FusedActivationFunc.NONE:
            def float_kernel(a, b, _activation):
                with np.errstate(all="ignore"):   # inf/nan follow IEEE, as on a device
                    return (float_fn(a, b).astype(dtype, copy=False),)
            return float_kernel

        def float_activation_kernel(*inputs):
            activation = activation_value(ctx, 2, inputs)
            with np.errstate(all="ignore"):
                result = float_fn(inputs[0], inputs[1]).astype(dtype, copy=False)
            return (apply_float_activation(result, activation),)
        return float_activation_kernel

    in0, in1 = ctx.inputs[0], ctx.inputs[1]
    check(out.scale > 0, f"{ctx.name}: output scale must be > 0")

    def quant_kernel(*inputs):
        activation = activation_value(ctx, 2, inputs)
        real = float_fn(dequantize(inputs[0], in0.scale, in0.zeroPoint),
                        dequantize(inputs[1], in1.scale, in1.zeroPoint))
        qmin, qmax = quantized_activation_range(activation, out.scale, out.zeroPoint, out.type)
        return (requantize(real, out.scale, out.zeroPoint, qmin, qmax, inputs[0].dtype),)
    return quant_kernel
