"""GATHER: values along an axis picked by a TENSOR_INT32 of indices; the output shape is
input.shape[:axis] + indices.shape + input.shape[axis + 1:]. Every index must be within
the axis."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from .common import DATA_TENSORS, check_kept_quantization, normalize_axis
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Signature, same_as, scalar, tensor

TYPES = DATA_TENSORS
INPUT, AXIS, INDICES = range(3)
SIGNATURES = (Signature(inputs=(tensor(TYPES, rank=(1, None)), scalar(T.INT32, name="axis"),
                                tensor((T.TENSOR_INT32,), name="indices")),
                        outputs=(same_as(INPUT),)),)


def check_gather(ctx: OperationContext) -> None:
    check_kept_quantization(ctx)
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


register(OperationDef(OperationType.GATHER, SIGNATURES, infer_shapes, build, check_gather))
