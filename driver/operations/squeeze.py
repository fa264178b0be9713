"""SQUEEZE: dimensions of size 1 removed, either those listed in an optional TENSOR_INT32
[k] (each must have size 1) or, when it is omitted, all of them. Removing every
dimension leaves the shape [1]."""
from __future__ import annotations

from typing import Sequence


from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from .common import (check_counts, check_input_type, check_rank_in, check_same_quantization,
                     check_same_type, check_shape_rank, constant_vector, normalize_axis)
from .registry import Kernel, OperationContext, OperationDef, Shape, register

TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
MAX_RANK = 4


def validate(ctx: OperationContext) -> None:
    check_counts(ctx, 2, 1)
    check(not ctx.inputs[0].is_omitted, f"{ctx.name}: input 0 has no value")
    check_input_type(ctx, 0, TYPES)
    check_input_type(ctx, 1, (T.TENSOR_INT32,))
    check_same_type(ctx, "output 0", ctx.outputs[0], ctx.inputs[0].type)
    check_same_quantization(ctx, ctx.outputs[0], ctx.inputs[0], "output 0", "input 0")
    check_rank_in(ctx, 0, 0, MAX_RANK)
    if not ctx.inputs[1].is_omitted:
        check_rank_in(ctx, 1, 1, 1)


def squeezed_shape(ctx: OperationContext, shape: Sequence[int], axes,
                   sizes_known: bool = False) -> tuple[int, ...] | None:
    """The output shape, or None when unknown sizes leave it undecided. ``axes`` None means
    every dimension of size 1. With ``sizes_known`` (run time) a 0 is a zero size."""
    rank = len(shape)
    allowed = (1,) if sizes_known else (0, 1)
    if axes is None:
        if not sizes_known and any(d == 0 for d in shape):
            return None            # an unknown size may or may not be 1
        drop = {axis for axis, d in enumerate(shape) if d == 1}
    else:
        drop = set()
        for axis in axes:
            axis = normalize_axis(ctx, int(axis), rank, "squeezed axis")
            check(shape[axis] in allowed,
                  f"{ctx.name}: cannot squeeze dimension {axis} of size {shape[axis]}")
            drop.add(axis)
    kept = tuple(d for axis, d in enumerate(shape) if axis not in drop)
    return kept if kept else (1,)


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    inp = shapes[0]
    check_shape_rank(ctx, inp, "input 0", 0, MAX_RANK)
    if not ctx.inputs[1].is_omitted:
        check_shape_rank(ctx, shapes[1], "input 1 (axes)", 1, 1)
    if inp is None:
        return [None]
    if ctx.inputs[1].is_omitted:
        return [squeezed_shape(ctx, inp, None)]
    axes = constant_vector(ctx, 1)
    if axes is None:
        return [None]
    return [squeezed_shape(ctx, inp, axes.tolist())]


def build(ctx: OperationContext) -> Kernel:
    def kernel(x, axes):
        if axes is not None:     # else omitted, in the model or by the request
            check(axes.ndim == 1, f"{ctx.name}: axes must be 1-D, have shape {list(axes.shape)}")
        shape = squeezed_shape(ctx, x.shape, None if axes is None else axes.tolist(), sizes_known=True)
        return (x.reshape(shape).copy(),)
    return kernel


register(OperationDef(OperationType.SQUEEZE, validate, infer_shapes, build,
                      optional_inputs=frozenset({1})))
