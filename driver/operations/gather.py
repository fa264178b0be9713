"""GATHER: values along an axis picked by a TENSOR_INT32 of indices; the output shape is
input.shape[:axis] + indices.shape + input.shape[axis + 1:]. Every index must be within
the axis."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from .common import (check_counts, check_input_type, check_not_omitted, check_rank_in,
                     check_same_quantization, check_same_type, check_shape_rank, normalize_axis)
from .registry import Kernel, OperationContext, OperationDef, Shape, register

TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM,
         T.TENSOR_QUANT8_ASYMM_SIGNED)
INPUT, AXIS, INDICES = range(3)


def validate(ctx: OperationContext) -> None:
    check_counts(ctx, 3, 1)
    check_not_omitted(ctx)
    check_input_type(ctx, INPUT, TYPES)
    check_input_type(ctx, AXIS, (T.INT32,))
    check_input_type(ctx, INDICES, (T.TENSOR_INT32,))
    check_same_type(ctx, "output 0", ctx.outputs[0], ctx.inputs[INPUT].type)
    check_same_quantization(ctx, ctx.outputs[0], ctx.inputs[INPUT], "output 0", "input 0")
    check_rank_in(ctx, INPUT, 1)
    indices = ctx.inputs[INDICES].value
    dims = ctx.inputs[INPUT].dimensions
    axis = ctx.scalar(AXIS)
    if dims and axis is not None:
        axis = normalize_axis(ctx, axis, len(dims))
        if indices is not None and dims[axis]:
            check_indices(ctx, indices, dims[axis])


def check_indices(ctx: OperationContext, indices: np.ndarray, size: int) -> None:
    check(indices.size == 0 or (int(indices.min()) >= 0 and int(indices.max()) < size),
          f"{ctx.name}: indices must lie in [0, {size})")


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    inp, _axis, indices = shapes
    check_shape_rank(ctx, inp, "input 0", 1)
    axis = ctx.scalar(AXIS)
    if inp is None or indices is None:
        return [None]
    if axis is None:
        return [(0,) * (len(inp) + len(indices) - 1)]
    axis = normalize_axis(ctx, axis, len(inp))
    return [tuple(inp[:axis]) + tuple(indices) + tuple(inp[axis + 1:])]


def build(ctx: OperationContext) -> Kernel:
    def kernel(x, axis, indices):
        position = normalize_axis(ctx, int(axis), x.ndim)
        check_indices(ctx, indices, x.shape[position])
        return (np.take(x, indices, axis=position),)
    return kernel


register(OperationDef(OperationType.GATHER, validate, infer_shapes, build))
