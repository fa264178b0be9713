"""SQUEEZE: dimensions of size 1 removed, either those listed in an optional TENSOR_INT32
[k] (each must have size 1) or, when it is omitted, all of them. Removing every
dimension leaves the shape [1]."""
from __future__ import annotations

from typing import Sequence


from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from .common import (FLOAT_AND_QUANT8_TENSORS, check_kept_quantization, constant_vector,
                     normalize_axis)
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Signature, same_as, tensor

SIGNATURES = (Signature(inputs=(tensor(FLOAT_AND_QUANT8_TENSORS, rank=(0, 4)),
                                tensor((T.TENSOR_INT32,), rank=(1, 1), name="axes", optional=True)),
                        outputs=(same_as(0),)),)


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
    return tuple(d for axis, d in enumerate(shape) if axis not in drop) or (1,)


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    inp = shapes[0]
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


register(OperationDef(OperationType.SQUEEZE, SIGNATURES, infer_shapes, build, check_kept_quantization))
