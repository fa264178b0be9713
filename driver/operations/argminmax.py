"""ARGMAX and ARGMIN: the index (TENSOR_INT32) of the extreme value along an axis, which is
removed from the shape (a 1-D input gives [1]). Ties pick the first index; NaN never
replaces the running extreme, as in the reference's sequential scan (a NaN at index 0
therefore wins)."""
from __future__ import annotations

from functools import partial
from typing import Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType as Op
from .common import DATA_TENSORS, normalize_axis
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Signature, scalar, tensor

TYPES = DATA_TENSORS
SIGNATURES = (Signature(inputs=(tensor(TYPES, rank=(1, None)), scalar(T.INT32, name="axis")),
                        outputs=(tensor((T.TENSOR_INT32,)),)),)


def infer_arg(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    inp = shapes[0]
    if inp is None:
        return [None]
    axis = ctx.scalar(1)
    if axis is None:
        return [(1,) if len(inp) == 1 else (0,) * (len(inp) - 1)]
    axis = normalize_axis(ctx, axis, len(inp))
    return [tuple(inp[:axis]) + tuple(inp[axis + 1:]) or (1,)]     # a 1-D input gives [1]


def build_arg(ctx: OperationContext, use_max: bool) -> Kernel:
    floating = ctx.inputs[0].type in (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32)
    pick = np.argmax if use_max else np.argmin

    def kernel(x, axis):
        position = normalize_axis(ctx, int(axis), x.ndim)
        check(x.shape[position] > 0, f"{ctx.name}: axis {position} of shape {list(x.shape)} is empty")
        values = x
        if floating:
            nan = np.isnan(x)
            values = np.where(nan, -np.inf if use_max else np.inf, x)
        index = pick(values, axis=position).astype(np.int32)
        if floating:
            index = np.where(np.take(nan, 0, axis=position), np.int32(0), index)
        return (index.reshape(index.shape if x.ndim > 1 else (1,)),)
    return kernel


for operation, use_max in ((Op.ARGMAX, True), (Op.ARGMIN, False)):
    register(OperationDef(operation, SIGNATURES, infer_arg,
                          partial(build_arg, use_max=use_max)))
