"""FILL: a tensor of the shape given by a TENSOR_INT32 [n], every element one scalar value.

When the shape is not a constant, the output size is only known at run time: the kernel
checks the sizes and refuses results over the driver's limits (RESOURCE_EXHAUSTED).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from ..limits import check_rank, check_shape
from .common import STORAGE_DTYPE, constant_vector
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Signature, scalar, tensor

SIGNATURES = tuple(Signature(inputs=(tensor((T.TENSOR_INT32,), rank=(1, 1), name="shape"),
                                     scalar(value_type, name="value")),
                             outputs=(tensor((output_type,)),), selected_by_output=True)
                   for output_type, value_type in ((T.TENSOR_FLOAT16, T.FLOAT16),
                                                   (T.TENSOR_FLOAT32, T.FLOAT32),
                                                   (T.TENSOR_INT32, T.INT32)))


def check_constant_dims(ctx: OperationContext) -> None:
    dims = constant_vector(ctx, 0)
    if dims is not None:
        check_dims(ctx, dims)


def check_dims(ctx: OperationContext, dims: np.ndarray) -> None:
    check(dims.size >= 1, f"{ctx.name}: the output shape must have at least one dimension")
    check(bool(np.all(dims >= 0)), f"{ctx.name}: output shape {dims.tolist()} has a negative size")


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    dims = constant_vector(ctx, 0)
    if dims is not None:
        check_rank(dims.size, f"{ctx.name}, input 0 (shape)")
        return [tuple(dims.tolist())]
    if shapes[0] is None or not shapes[0][0]:
        return [None]
    check_rank(shapes[0][0], f"{ctx.name}, input 0 (shape)")
    return [(0,) * shapes[0][0]]


def build(ctx: OperationContext) -> Kernel:
    dtype = STORAGE_DTYPE[ctx.outputs[0].type]

    def kernel(dims, value):
        check(dims.ndim == 1, f"{ctx.name}: the output shape must be 1-D, has shape {list(dims.shape)}")
        check_dims(ctx, dims)
        check_rank(dims.size, f"{ctx.name}, input 0 (shape)")
        shape = tuple(dims.tolist())
        check_shape(shape, dtype.itemsize, f"{ctx.name}, output 0")
        return (np.full(shape, value, dtype=dtype),)
    return kernel


register(OperationDef(OperationType.FILL, SIGNATURES, infer_shapes, build, check_constant_dims))
