"""PAD and PAD_V2: a tensor padded on each side of each dimension; paddings is a
TENSOR_INT32 [rank, 2] of non-negative (before, after) counts.

PAD fills with the logical zero (the zero point for quantized types). PAD_V2 (HAL 1.2)
fills with its input 2, a scalar of the tensor's own kind: FLOAT32 or FLOAT16 for float
tensors, and for quantized tensors an INT32 holding a stored value of the tensor's type
(its quantization is the tensor's), so it must lie in that type's range.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from ..limits import check_shape
from .common import (FLOAT_AND_QUANT8_TENSORS, QUANT8_ASYMM_TENSORS, check_kept_quantization,
                     quant_range)
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Signature, same_as, scalar, tensor

PADDINGS = tensor((T.TENSOR_INT32,), rank=(2, 2), name="paddings")
SIGNATURES = (Signature(inputs=(tensor(FLOAT_AND_QUANT8_TENSORS, rank=(1, 4)), PADDINGS),
                        outputs=(same_as(0),)),)
#: PAD_V2: the pad value's scalar type for each kind of tensor.
V2_SIGNATURES = tuple(Signature(inputs=(tensor(types, rank=(1, 4)), PADDINGS,
                                        scalar(value_type, name="pad_value")),
                                outputs=(same_as(0),))
                      for types, value_type in (((T.TENSOR_FLOAT32,), T.FLOAT32),
                                                ((T.TENSOR_FLOAT16,), T.FLOAT16),
                                                (QUANT8_ASYMM_TENSORS, T.INT32)))
PAD_VALUE = 2


def check_quantization(ctx: OperationContext) -> None:
    check_kept_quantization(ctx)
    if ctx.type == OperationType.PAD_V2 and ctx.inputs[PAD_VALUE].is_constant:
        pad_value(ctx, ctx.inputs[PAD_VALUE].value)


def pad_value(ctx: OperationContext, value: np.ndarray | None) -> int | float:
    """What the padding holds: PAD's logical zero, or PAD_V2's pad value, checked."""
    inp = ctx.inputs[0]
    if value is None:
        return inp.zeroPoint if inp.type in QUANT8_ASYMM_TENSORS else 0
    value = value.item()
    if inp.type in QUANT8_ASYMM_TENSORS:
        low, high = quant_range(inp.type)
        check(low <= value <= high, f"{ctx.name}: input 2 (pad_value, operand "
                                    f"{ctx.inputs[PAD_VALUE].index}) {value} is outside the range "
                                    f"[{low}, {high}] of input 0's type")
    return value


def check_paddings(ctx: OperationContext, paddings: np.ndarray, rank: int) -> None:
    check(paddings.shape == (rank, 2),
          f"{ctx.name}: paddings have shape {list(paddings.shape)}, expected [{rank}, 2]")
    check(bool(np.all(paddings >= 0)), f"{ctx.name}: paddings {paddings.tolist()} has a negative count")


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    inp, paddings_shape = shapes[:2]
    if paddings_shape is not None:
        check(paddings_shape[1] in (0, 2),
              f"{ctx.name}: paddings have shape {list(paddings_shape)}, expected [rank, 2]")
        if inp is not None and paddings_shape[0]:
            check(paddings_shape[0] == len(inp),
                  f"{ctx.name}: paddings have {paddings_shape[0]} rows for rank {len(inp)}")
    if inp is None:
        return [None]
    paddings = ctx.inputs[1].value
    if paddings is None:
        return [(0,) * len(inp)]
    check_paddings(ctx, paddings, len(inp))
    return [tuple(int(before) + d + int(after) if d else 0 for d, (before, after) in zip(inp, paddings))]


def build(ctx: OperationContext) -> Kernel:
    given = ctx.inputs[PAD_VALUE] if ctx.type == OperationType.PAD_V2 else None
    run_time_value = given is not None and not given.is_constant
    constant_fill = None if run_time_value else pad_value(ctx, given and given.value)

    def kernel(x, paddings, *value):
        check_paddings(ctx, paddings, x.ndim)
        fill = pad_value(ctx, value[0]) if run_time_value else constant_fill
        widths = [(int(before), int(after)) for before, after in paddings]
        check_shape([d + b + a for d, (b, a) in zip(x.shape, widths)], x.itemsize,
                    f"{ctx.name}, output 0")
        return (np.pad(x, widths, mode="constant", constant_values=fill),)
    return kernel


register(OperationDef(OperationType.PAD, SIGNATURES, infer_shapes, build, check_quantization))
register(OperationDef(OperationType.PAD_V2, V2_SIGNATURES, infer_shapes, build, check_quantization))
