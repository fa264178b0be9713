"""STRIDED_SLICE: every stride-th element of each dimension from begin to end (exclusive).

begin, end and strides are TENSOR_INT32 [rank] (rank 1 to 4); a stride is never 0. An index
counts from the end when negative and is then clamped to the dimension, exactly as a Python
slice ``x[begin:end:stride]`` does; that is the reference's clamping, for positive and
negative strides alike. Bit i of begin_mask (end_mask) ignores begin[i] (end[i]) and takes
the fullest range: the slice's open start (end). Bit i of shrink_axis_mask removes dimension
i, whose slice must then have exactly one element and a positive stride; removing every
dimension leaves the shape [1]. Mask bits past the rank are ignored.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from .common import FLOAT_AND_QUANT8_TENSORS, check_kept_quantization, constant_vector
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Example, ExampleOperand, Signature, same_as, scalar, tensor

INPUT, BEGIN, END, STRIDES, BEGIN_MASK, END_MASK, SHRINK_AXIS_MASK = range(7)
VECTORS = (BEGIN, END, STRIDES)
SIGNATURES = (Signature(inputs=(tensor(FLOAT_AND_QUANT8_TENSORS, rank=(1, 4)),
                                tensor((T.TENSOR_INT32,), rank=(1, 1), name="begin"),
                                tensor((T.TENSOR_INT32,), rank=(1, 1), name="end"),
                                tensor((T.TENSOR_INT32,), rank=(1, 1), name="strides"),
                                scalar(T.INT32, name="begin_mask"),
                                scalar(T.INT32, name="end_mask"),
                                scalar(T.INT32, name="shrink_axis_mask")),
                        outputs=(same_as(INPUT),)),)



def _example(operand_type: T, dims, begin, end, strides, masks, quantization=(0.0, 0)) -> Example:
    scale, zero_point = quantization
    vectors = (ExampleOperand(T.TENSOR_INT32, (len(dims),), constant=v) for v in (begin, end, strides))
    return Example(inputs=(ExampleOperand(operand_type, dims, scale=scale, zero_point=zero_point), *vectors,
                           *(ExampleOperand(T.INT32, constant=m) for m in masks)),
                   outputs=((operand_type, scale, zero_point),))


#: Each type; masks, negative indexes and strides, a shrunk axis.
EXAMPLES = (_example(T.TENSOR_FLOAT32, (2, 3), [1, -1], [2, 0], [1, -1], (0, 2, 1)),
            _example(T.TENSOR_FLOAT16, (3, 2, 2), [0, 0, 1], [3, 2, 2], [2, 1, 1], (0, 0, 0)),
            _example(T.TENSOR_QUANT8_ASYMM, (4,), [1], [-1], [2], (1, 0, 0), (0.5, 128)),
            _example(T.TENSOR_QUANT8_ASYMM_SIGNED, (1, 2, 2, 3), [0, 1, 0, 2], [1, 2, 2, 0], [1, 1, 1, -2],
                     (0, 4, 0), (0.25, -3)))


def check_length(ctx: OperationContext, i: int, length: int, rank: int) -> None:
    check(length == rank, f"{ctx.name}: input {i} ({SIGNATURES[0].inputs[i].name}) has {length} "
                          f"elements for an input of rank {rank}")


def plan(ctx: OperationContext, shape: Sequence[int], vectors: Sequence[np.ndarray], masks: Sequence[int],
         actual: bool) -> tuple[tuple[slice, ...], tuple[int, ...]]:
    """The index expression of the slice and the output shape, every value checked. At
    prepare time (``actual`` false) a 0 in ``shape`` is unknown and stays so."""
    for i, vector in zip(VECTORS, vectors):
        check_length(ctx, i, len(vector), len(shape))
    begin_mask, end_mask, shrink_axis_mask = masks
    index, out = [], []
    for axis, (dim, begin, end, stride) in enumerate(zip(shape, *(v.tolist() for v in vectors))):
        check(stride != 0, f"{ctx.name}: input 3 (strides) has a 0 stride for dimension {axis}")
        axis_slice = slice(None if begin_mask >> axis & 1 else begin,
                           None if end_mask >> axis & 1 else end, stride)
        size = len(range(*axis_slice.indices(dim)))
        if shrink_axis_mask >> axis & 1:
            check(stride > 0, f"{ctx.name}: shrink_axis_mask removes dimension {axis}, whose stride "
                              f"{stride} is not positive")
            check(size == 1 or not (dim or actual), f"{ctx.name}: shrink_axis_mask removes dimension "
                                                    f"{axis}, whose slice has {size} elements, not 1")
        else:
            out.append(size if dim or actual else 0)
        index.append(axis_slice)
    return tuple(index), tuple(out) or (1,)


def _masks(ctx: OperationContext, inputs=None) -> list:
    """The three masks, from constants or (``inputs`` given) the run-time values."""
    return [ctx.scalar(i) if inputs is None or ctx.inputs[i].is_constant else int(inputs[i])
            for i in (BEGIN_MASK, END_MASK, SHRINK_AXIS_MASK)]


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    inp = shapes[INPUT]
    if inp is None:
        return [None]
    for i in VECTORS:
        if shapes[i] is not None and shapes[i][0]:
            check_length(ctx, i, shapes[i][0], len(inp))
    vectors, masks = [constant_vector(ctx, i) for i in VECTORS], _masks(ctx)
    if any(v is None for v in vectors) or None in masks:
        return [None]
    return [plan(ctx, inp, vectors, masks, actual=False)[1]]


def build(ctx: OperationContext) -> Kernel:
    def kernel(x, begin, end, strides, *masks):
        index, out = plan(ctx, x.shape, (begin, end, strides),
                          _masks(ctx, (x, begin, end, strides, *masks)), actual=True)
        return (np.ascontiguousarray(x[index]).reshape(out),)
    return kernel


register(OperationDef(OperationType.STRIDED_SLICE, SIGNATURES, infer_shapes, build, check_kept_quantization,
                      EXAMPLES))
