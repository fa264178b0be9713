"""SPLIT: a tensor cut along an axis into num_splits equal parts (one output each); the
axis size must be a multiple of num_splits."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from .common import (check_input_type, check_not_omitted, check_rank_in,
                     check_same_quantization, check_same_type, check_shape_rank, normalize_axis)
from .registry import Kernel, OperationContext, OperationDef, Shape, register

TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM,
         T.TENSOR_QUANT8_ASYMM_SIGNED)
INPUT, AXIS, NUM_SPLITS = range(3)


def validate(ctx: OperationContext) -> None:
    check(len(ctx.inputs) == 3, f"{ctx.name}: expected 3 inputs, got {len(ctx.inputs)}")
    check(len(ctx.outputs) >= 1, f"{ctx.name}: expected at least 1 output, got {len(ctx.outputs)}")
    check_not_omitted(ctx)
    check_input_type(ctx, INPUT, TYPES)
    check_input_type(ctx, AXIS, (T.INT32,))
    check_input_type(ctx, NUM_SPLITS, (T.INT32,))
    for j, out in enumerate(ctx.outputs):
        check_same_type(ctx, f"output {j}", out, ctx.inputs[INPUT].type)
        check_same_quantization(ctx, out, ctx.inputs[INPUT], f"output {j}", "input 0")
    check_rank_in(ctx, INPUT, 1)
    splits = ctx.scalar(NUM_SPLITS)
    if splits is not None:
        check(splits == len(ctx.outputs),
              f"{ctx.name}: num_splits {splits} differs from the {len(ctx.outputs)} outputs")


def part_size(ctx: OperationContext, size: int, splits: int) -> int:
    check(splits == len(ctx.outputs),
          f"{ctx.name}: num_splits {splits} differs from the {len(ctx.outputs)} outputs")
    check(size % splits == 0, f"{ctx.name}: axis size {size} is not a multiple of num_splits {splits}")
    return size // splits


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    inp = shapes[INPUT]
    check_shape_rank(ctx, inp, "input 0", 1)
    count = len(ctx.outputs)
    axis = ctx.scalar(AXIS)
    if inp is None:
        return [None] * count
    if axis is None:
        return [(0,) * len(inp)] * count
    axis = normalize_axis(ctx, axis, len(inp))
    size = part_size(ctx, inp[axis], count) if inp[axis] else 0
    return [tuple(inp[:axis]) + (size,) + tuple(inp[axis + 1:])] * count


def build(ctx: OperationContext) -> Kernel:
    def kernel(x, axis, splits):
        position = normalize_axis(ctx, int(axis), x.ndim)
        part_size(ctx, x.shape[position], int(splits))
        return tuple(part.copy() for part in np.split(x, int(splits), axis=position))
    return kernel


register(OperationDef(OperationType.SPLIT, validate, infer_shapes, build))
