"""PAD: a tensor padded with its logical zero (the zero point for quantized types);
paddings is a TENSOR_INT32 [rank, 2] of non-negative (before, after) counts."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from ..limits import check_shape
from .common import QUANT8_ASYMM_TENSORS, check_same_quantization
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Signature, same_as, tensor

TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
SIGNATURES = (Signature(inputs=(tensor(TYPES, rank=(1, 4)),
                                tensor((T.TENSOR_INT32,), rank=(2, 2), name="paddings")),
                        outputs=(same_as(0),)),)


def check_quantization(ctx: OperationContext) -> None:
    check_same_quantization(ctx, ctx.outputs[0], ctx.inputs[0], "output 0", "input 0")


def check_paddings(ctx: OperationContext, paddings: np.ndarray, rank: int) -> None:
    check(paddings.shape == (rank, 2),
          f"{ctx.name}: paddings have shape {list(paddings.shape)}, expected [{rank}, 2]")
    check(bool(np.all(paddings >= 0)), f"{ctx.name}: paddings {paddings.tolist()} has a negative count")


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    inp, paddings_shape = shapes
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
    inp = ctx.inputs[0]
    fill = inp.zeroPoint if inp.type in QUANT8_ASYMM_TENSORS else 0

    def kernel(x, paddings):
        check_paddings(ctx, paddings, x.ndim)
        widths = [(int(before), int(after)) for before, after in paddings]
        check_shape([d + b + a for d, (b, a) in zip(x.shape, widths)], x.itemsize,
                    f"{ctx.name}, output 0")
        return (np.pad(x, widths, mode="constant", constant_values=fill),)
    return kernel


register(OperationDef(OperationType.PAD, SIGNATURES, infer_shapes, build, check_quantization))
