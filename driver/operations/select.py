"""SELECT: ``output[i] = condition[i] ? input1[i] : input2[i]`` over tensors of one shape
(no broadcasting). Quantized inputs are requantized to the output's quantization."""
from __future__ import annotations

from functools import partial
from typing import Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from .common import (DATA_TENSORS, QUANT8_ASYMM_TENSORS, check_quant_scales, merge_dims,
                     requantize_values)
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Signature, same_as, tensor

TYPES = DATA_TENSORS


SIGNATURES = (Signature(inputs=(tensor((T.TENSOR_BOOL8,), rank=(1, None), name="condition"),
                                tensor(TYPES, rank=(1, None)), same_as(1, rank=(1, None))),
                        outputs=(same_as(1),)),)


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    known = [s for s in shapes if s is not None]
    if not known:
        return [None]
    rank = len(known[0])
    check(all(len(s) == rank for s in known),
          f"{ctx.name}: condition and inputs must have the same shape, got ranks "
          f"{[len(s) for s in known]}")
    dims = []
    for axis in range(rank):
        size = 0
        for shape in known:
            size = merge_dims(ctx, size, shape[axis], f"dimension {axis} of condition and inputs")
        dims.append(size)
    return [tuple(dims)]


def build(ctx: OperationContext) -> Kernel:
    in1, in2, out = ctx.inputs[1], ctx.inputs[2], ctx.outputs[0]
    quantized = in1.type in QUANT8_ASYMM_TENSORS

    def kernel(condition, a, b):
        check(condition.shape == a.shape == b.shape,
              f"{ctx.name}: condition {list(condition.shape)}, input 1 {list(a.shape)} and "
              f"input 2 {list(b.shape)} must have the same shape")
        if quantized:
            a = requantize_values(a, in1.scale, in1.zeroPoint, out.scale, out.zeroPoint, out.type)
            b = requantize_values(b, in2.scale, in2.zeroPoint, out.scale, out.zeroPoint, out.type)
        return (np.where(condition, a, b),)
    return kernel


register(OperationDef(OperationType.SELECT, SIGNATURES, infer_shapes, build,
                      partial(check_quant_scales, inputs=(1, 2))))
