"""RESHAPE: the same values under a new shape, given as a TENSOR_INT32 [n] in which at most
one component may be -1 (that size is computed to keep the element count).

The target shape is usually constant; when it is only known at run time the output shape
is inferred with unknown dimensions and the kernel checks the values.
"""
from __future__ import annotations

import math
from typing import Sequence


from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from ..limits import check_rank
from .common import FLOAT_AND_QUANT8_TENSORS, check_kept_quantization, constant_vector
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Signature, same_as, tensor

SIGNATURES = (Signature(inputs=(tensor(FLOAT_AND_QUANT8_TENSORS, rank=(0, 4)),
                                tensor((T.TENSOR_INT32,), rank=(1, 1), name="shape")),
                        outputs=(same_as(0),)),)


def target_shape(ctx: OperationContext, target: Sequence[int], elements: int | None) -> tuple[int, ...]:
    """The output shape for a target with at most one -1. ``elements`` is the input's
    element count, or None when unknown (the -1 dimension is then unknown, 0)."""
    check_rank(len(target), f"{ctx.name}, input 1 (shape)")
    stretch = [axis for axis, size in enumerate(target) if size == -1]
    check(len(stretch) <= 1, f"{ctx.name}: target shape {list(target)} has more than one -1")
    check(all(size >= 0 for size in target if size != -1),
          f"{ctx.name}: target shape {list(target)} has a negative size")
    fixed = math.prod(size for size in target if size != -1)
    if not stretch:
        check(elements is None or fixed == elements,
              f"{ctx.name}: target shape {list(target)} holds {fixed} elements, input has {elements}")
        return tuple(target)
    check(fixed > 0, f"{ctx.name}: target shape {list(target)} leaves the -1 size undefined")
    if elements is None:
        return tuple(0 if size == -1 else size for size in target)
    check(elements % fixed == 0,
          f"{ctx.name}: {elements} input elements do not fill target shape {list(target)}")
    return tuple(elements // fixed if size == -1 else size for size in target)


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    inp, target_dims = shapes
    target = constant_vector(ctx, 1)
    if target is None:
        if target_dims is None or not target_dims[0]:
            return [None]
        check_rank(target_dims[0], f"{ctx.name}, input 1 (shape)")
        return [(0,) * target_dims[0]]
    elements = math.prod(inp) if inp is not None and all(inp) else None
    return [target_shape(ctx, target.tolist(), elements)]


def build(ctx: OperationContext) -> Kernel:
    def kernel(x, target):
        check(target.ndim == 1, f"{ctx.name}: the target shape must be 1-D, has shape {list(target.shape)}")
        shape = target_shape(ctx, target.tolist(), x.size)
        return (x.reshape(shape).copy(),)
    return kernel


register(OperationDef(OperationType.RESHAPE, SIGNATURES, infer_shapes, build, check_kept_quantization))
