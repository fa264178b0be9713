"""The shared shape of REDUCE_ALL, REDUCE_ANY, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD,
REDUCE_SUM and MEAN: a tensor (rank up to 4) reduced over a TENSOR_INT32 list of axes in
[-rank, rank) (repeats allowed), keeping reduced dimensions as 1 when keep_dims is set.
Reducing every dimension without keep_dims gives the shape [1]."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T
from .common import (check_counts, check_input_type, check_not_omitted, check_rank_in,
                     check_same_quantization, check_same_type, check_shape_rank,
                     constant_vector, normalize_axis)
from .registry import Kernel, OperationContext, Shape

MAX_RANK = 4
INPUT, AXES, KEEP_DIMS = range(3)

Reducer = Callable[[np.ndarray, tuple[int, ...]], np.ndarray]


def validate_reduce(ctx: OperationContext, allowed_types: Sequence[int],
                    keep_dims_type: int = T.BOOL) -> None:
    check_counts(ctx, 3, 1)
    check_not_omitted(ctx)
    check_input_type(ctx, INPUT, allowed_types)
    check_input_type(ctx, AXES, (T.TENSOR_INT32,))
    check_input_type(ctx, KEEP_DIMS, (keep_dims_type,))
    check_same_type(ctx, "output 0", ctx.outputs[0], ctx.inputs[INPUT].type)
    check_same_quantization(ctx, ctx.outputs[0], ctx.inputs[INPUT], "output 0", "input 0")
    check_rank_in(ctx, INPUT, 1, MAX_RANK)
    check_rank_in(ctx, AXES, 1, 1)


def reduced_axes(ctx: OperationContext, axes: Sequence[int], rank: int) -> tuple[int, ...]:
    return tuple(sorted({normalize_axis(ctx, int(a), rank) for a in axes}))


def reduced_shape(shape: Sequence[int], axes: tuple[int, ...], keep_dims: bool) -> tuple[int, ...]:
    if keep_dims:
        return tuple(1 if axis in axes else d for axis, d in enumerate(shape))
    kept = tuple(d for axis, d in enumerate(shape) if axis not in axes)
    return kept if kept else (1,)


def infer_reduce(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    inp, axes_shape = shapes[INPUT], shapes[AXES]
    check_shape_rank(ctx, inp, "input 0", 1, MAX_RANK)
    check_shape_rank(ctx, axes_shape, "input 1 (axes)", 1, 1)
    axes, keep = constant_vector(ctx, AXES), ctx.scalar(KEEP_DIMS)
    if inp is None or axes is None or keep is None:
        if inp is not None and keep is not None and keep > 0:
            return [(0,) * len(inp)]
        return [None]
    return [reduced_shape(inp, reduced_axes(ctx, axes.tolist(), len(inp)), keep > 0)]


def build_reduce(ctx: OperationContext, reduce: Reducer, *, empty_allowed: bool = True) -> Kernel:
    """``reduce(x, axes)`` with keepdims semantics; the kernel reshapes to the output.
    Without ``empty_allowed``, reducing over a zero-sized dimension is refused."""
    def kernel(x, axes, keep_dims):
        check(axes.ndim == 1, f"{ctx.name}: axes must be 1-D, have shape {list(axes.shape)}")
        check(x.ndim <= MAX_RANK, f"{ctx.name}: input rank {x.ndim} > {MAX_RANK}")
        normalized = reduced_axes(ctx, axes.tolist(), x.ndim)
        if not empty_allowed:
            check(all(x.shape[a] > 0 for a in normalized),
                  f"{ctx.name}: cannot reduce over an empty dimension of shape {list(x.shape)}")
        result = reduce(x, normalized)
        return (result.reshape(reduced_shape(x.shape, normalized, bool(keep_dims > 0))),)
    return kernel
