"""SPLIT: a tensor cut along an axis into num_splits equal parts (one output each); the
axis size must be a multiple of num_splits."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from .common import DATA_TENSORS, check_same_quantization, normalize_axis
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Signature, repeated, same_as, scalar, tensor

TYPES = DATA_TENSORS
INPUT, AXIS, NUM_SPLITS = range(3)
SIGNATURES = (Signature(inputs=(tensor(TYPES, rank=(1, None)), scalar(T.INT32, name="axis"),
                                scalar(T.INT32, name="num_splits")),
                        outputs=(repeated(same_as(INPUT), at_least=1),)),)


def check_split(ctx: OperationContext) -> None:
    for j, out in enumerate(ctx.outputs):
        check_same_quantization(ctx, out, ctx.inputs[INPUT], f"output {j}", "input 0")
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


register(OperationDef(OperationType.SPLIT, SIGNATURES, infer_shapes, build, check_split))
