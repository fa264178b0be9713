"""SLICE: the block of an n-D tensor starting at ``begin`` with extent ``size`` per dimension.

``size[i] == -1`` takes everything from begin[i] to the end of dimension i. begin and size
are TENSOR_INT32 [n]; usually constants, in which case the output shape is known at
prepare time. Otherwise it depends on their run-time values: inference returns unknown
dimensions and the kernel checks the values.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from .common import DATA_TENSORS, check_kept_quantization, constant_vector
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Signature, same_as, tensor

TYPES = DATA_TENSORS
INPUT, BEGIN, SIZE = range(3)
SIGNATURES = (Signature(inputs=(tensor(TYPES, rank=(1, None)),
                                tensor((T.TENSOR_INT32,), rank=(1, 1), name="begin"),
                                tensor((T.TENSOR_INT32,), rank=(1, 1), name="size")),
                        outputs=(same_as(INPUT),)),)


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    inp, begin_shape, size_shape = shapes
    rank = len(inp) if inp is not None else 0
    for what, shape in (("input 1 (begin)", begin_shape), ("input 2 (size)", size_shape)):
        if shape is not None and shape[0]:
            check(rank in (0, shape[0]),
                  f"{ctx.name}: {what} has {shape[0]} elements for an input of rank {rank}")
            rank = shape[0]
    if not rank:
        return [None]
    begin, size = constant_vector(ctx, BEGIN), constant_vector(ctx, SIZE)
    # A known vector's length counts, 0 included (its shape's 0 reads as unknown above).
    for what, vector in (("input 1 (begin)", begin), ("input 2 (size)", size)):
        if vector is not None:
            check(len(vector) == rank, f"{ctx.name}: {what} has {len(vector)} elements for an "
                                       f"input of rank {rank}")
    dims = inp if inp is not None else (0,) * rank
    out = []
    for axis, dim in enumerate(dims):
        b = None if begin is None else int(begin[axis])
        s = None if size is None else int(size[axis])
        if b is not None:
            check(b >= 0, f"{ctx.name}: begin[{axis}] = {b} is negative")
            check(not dim or b <= dim, f"{ctx.name}: begin[{axis}] = {b} exceeds dimension {dim}")
        if s is not None:
            check(s >= -1, f"{ctx.name}: size[{axis}] = {s} is negative (only -1 means 'to the end')")
        if s is not None and s != -1:
            check(not dim or b is None or b + s <= dim,
                  f"{ctx.name}: begin[{axis}] + size[{axis}] = {b} + {s} exceeds dimension {dim}")
            out.append(s)
        elif s == -1 and dim and b is not None:
            out.append(dim - b)
        else:
            out.append(0)
    return [tuple(out)]


def slices_for(ctx: OperationContext, shape: tuple[int, ...], begin: np.ndarray,
               size: np.ndarray) -> tuple[slice, ...]:
    """The index expression of a slice, with every value checked against actual sizes."""
    check(begin.shape == (len(shape),) and size.shape == (len(shape),),
          f"{ctx.name}: begin {list(begin.shape)} and size {list(size.shape)} must both have "
          f"shape [{len(shape)}] for an input of shape {list(shape)}")
    index = []
    for axis, (dim, b, s) in enumerate(zip(shape, begin.tolist(), size.tolist())):
        if s == -1:
            s = dim - b
        check(0 <= b <= dim and s >= 0 and b + s <= dim,
              f"{ctx.name}: slice begin {b} size {s} does not fit dimension {axis} of size {dim}")
        index.append(slice(b, b + s))
    return tuple(index)


def build(ctx: OperationContext) -> Kernel:
    declared = ctx.inputs[INPUT].dimensions
    begin, size = ctx.inputs[BEGIN].value, ctx.inputs[SIZE].value
    if begin is not None and size is not None and declared and all(declared):
        # Everything is known ahead: the index expression is fixed.
        index = slices_for(ctx, tuple(declared), begin, size)
        return lambda x, _begin, _size: (x[index].copy(),)

    def kernel(x, b, s):
        return (x[slices_for(ctx, x.shape, b, s)].copy(),)
    return kernel


register(OperationDef(OperationType.SLICE, SIGNATURES, infer_shapes, build, check_kept_quantization,
                      zero_sized_inputs=True))
