"""EXPAND_DIMS: a dimension of size 1 inserted at an axis in [-(n + 1), n + 1)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from .common import (check_counts, check_input_type, check_not_omitted, check_rank_in,
                     check_same_quantization, check_same_type, check_shape_rank, normalize_axis)
from .registry import Kernel, OperationContext, OperationDef, Shape, register

TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM,
         T.TENSOR_QUANT8_ASYMM_SIGNED)


def validate(ctx: OperationContext) -> None:
    check_counts(ctx, 2, 1)
    check_not_omitted(ctx)
    check_input_type(ctx, 0, TYPES)
    check_input_type(ctx, 1, (T.INT32,))
    check_same_type(ctx, "output 0", ctx.outputs[0], ctx.inputs[0].type)
    check_same_quantization(ctx, ctx.outputs[0], ctx.inputs[0], "output 0", "input 0")
    check_rank_in(ctx, 0, 1)


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    inp = shapes[0]
    check_shape_rank(ctx, inp, "input 0", 1)
    if inp is None:
        return [None]
    axis = ctx.scalar(1)
    if axis is None:
        return [(0,) * (len(inp) + 1)]
    axis = normalize_axis(ctx, axis, len(inp) + 1)
    return [tuple(inp[:axis]) + (1,) + tuple(inp[axis:])]


def build(ctx: OperationContext) -> Kernel:
    def kernel(x, axis):
        position = normalize_axis(ctx, int(axis), x.ndim + 1)
        return (np.expand_dims(x, position).copy(),)
    return kernel


register(OperationDef(OperationType.EXPAND_DIMS, validate, infer_shapes, build))
