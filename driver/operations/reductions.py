"""REDUCE_ALL, REDUCE_ANY, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD, REDUCE_SUM and MEAN: a
tensor (rank up to 4) reduced over a TENSOR_INT32 list of axes in [-rank, rank) (repeats
allowed), keeping reduced dimensions as 1 when keep_dims is set (a BOOL; for MEAN an INT32,
set when positive). Reducing every dimension without keep_dims gives the shape [1].

Empty reductions give the reference's initial values: true for ALL, false for ANY, the
type's lowest (MAX) or highest (MIN) value, 1 for PROD, 0 for SUM; MEAN refuses them.
REDUCE_MAX and REDUCE_MIN ignore NaN, as the reference's std::max/min fold does. A zero
factor makes REDUCE_PROD 0 even against inf or NaN, as the reference special-cases it.
Quantized MEAN averages stored values, the output in the input's quantization, truncating
the integer quotient toward zero as the reference does.
"""
from __future__ import annotations

from functools import partial
from typing import Callable, Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType as Op
from .common import (QUANT8_ASYMM_TENSORS, check_quant_params, check_kept_quantization,
                     constant_vector, normalize_axis)
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Signature, same_as, scalar, tensor

MAX_RANK = 4
INPUT, AXES, KEEP_DIMS = range(3)

Reducer = Callable[[np.ndarray, tuple[int, ...]], np.ndarray]

BOOL = (T.TENSOR_BOOL8,)
FLOAT = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32)
FLOAT_AND_QUANT = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM,
                   T.TENSOR_QUANT8_ASYMM_SIGNED)


def signatures(types, keep_dims_type: T = T.BOOL) -> tuple[Signature, ...]:
    return (Signature(inputs=(tensor(types, rank=(1, MAX_RANK)),
                              tensor((T.TENSOR_INT32,), rank=(1, 1), name="axes"),
                              scalar(keep_dims_type, name="keep_dims")),
                      outputs=(same_as(0),)),)


def check_mean(ctx: OperationContext) -> None:
    check_kept_quantization(ctx)
    check_quant_params(ctx, ctx.inputs[INPUT], "input 0")


def reduced_axes(ctx: OperationContext, axes: Sequence[int], rank: int) -> tuple[int, ...]:
    """The distinct axes, normalized; an axis may be listed more than once (each distinct
    value is checked once, in order of first appearance)."""
    return tuple(sorted({normalize_axis(ctx, int(a), rank) for a in dict.fromkeys(axes)}))


def reduced_shape(shape: Sequence[int], axes: tuple[int, ...], keep_dims: bool) -> tuple[int, ...]:
    if keep_dims:
        return tuple(1 if axis in axes else d for axis, d in enumerate(shape))
    return tuple(d for axis, d in enumerate(shape) if axis not in axes) or (1,)


def infer_reduce(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    inp = shapes[INPUT]
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


# --- the reducers --------------------------------------------------------------------------

def _limits(dtype: np.dtype) -> tuple:
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    return info.min, info.max


def reduce_max(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    # The reference folds with std::max(acc, x), which keeps acc when x is NaN: fmax
    # ignores NaN the same way.
    return np.fmax.reduce(x, axis=axes, keepdims=True, initial=_limits(x.dtype)[0])


def reduce_min(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    return np.fmin.reduce(x, axis=axes, keepdims=True, initial=_limits(x.dtype)[1])


def product(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    with np.errstate(all="ignore"):
        result = np.prod(x, axis=axes, keepdims=True, dtype=x.dtype)
    has_zero = np.any(x == 0, axis=axes, keepdims=True)
    return np.where(has_zero, np.zeros((), x.dtype), result)


def total(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.sum(x, axis=axes, keepdims=True, dtype=x.dtype)


def float_mean(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    count = np.prod([x.shape[a] for a in axes], dtype=np.int64)
    with np.errstate(all="ignore"):
        summed = np.sum(x.astype(np.float32, copy=False), axis=axes, keepdims=True)
        return (summed / np.float32(count)).astype(x.dtype, copy=False)


def quant_mean(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    summed = np.sum(x, axis=axes, keepdims=True, dtype=np.int64)
    quotient = np.abs(summed) // count * np.sign(summed)      # C integer division
    return quotient.astype(x.dtype)


def build_mean(ctx: OperationContext) -> Kernel:
    quantized = ctx.inputs[INPUT].type in QUANT8_ASYMM_TENSORS
    return build_reduce(ctx, quant_mean if quantized else float_mean, empty_allowed=False)


for operation, types, reducer in (
        (Op.REDUCE_ALL, BOOL, lambda x, axes: np.all(x, axis=axes, keepdims=True)),
        (Op.REDUCE_ANY, BOOL, lambda x, axes: np.any(x, axis=axes, keepdims=True)),
        (Op.REDUCE_MAX, FLOAT_AND_QUANT, reduce_max),
        (Op.REDUCE_MIN, FLOAT_AND_QUANT, reduce_min),
        (Op.REDUCE_PROD, FLOAT, product),
        (Op.REDUCE_SUM, FLOAT, total)):
    register(OperationDef(operation, signatures(types), infer_reduce,
                          partial(build_reduce, reduce=reducer), check_kept_quantization))

register(OperationDef(Op.MEAN, signatures(FLOAT_AND_QUANT, keep_dims_type=T.INT32), infer_reduce,
                      build_mean, check_mean))
