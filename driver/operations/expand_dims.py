"""EXPAND_DIMS: a dimension of size 1 inserted at an axis in [-(n + 1), n + 1)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from .common import DATA_TENSORS, check_kept_quantization, normalize_axis
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Signature, same_as, scalar, tensor

TYPES = DATA_TENSORS
SIGNATURES = (Signature(inputs=(tensor(TYPES, rank=(1, None)), scalar(T.INT32, name="axis")),
                        outputs=(same_as(0),)),)


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    inp = shapes[0]
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


register(OperationDef(OperationType.EXPAND_DIMS, SIGNATURES, infer_shapes, build, check_kept_quantization))
