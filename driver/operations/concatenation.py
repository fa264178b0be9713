"""CONCATENATION: n tensors of one type joined along an axis (the last input, INT32).

Quantized inputs may have their own scales and zero points: an input whose quantization
differs from the output's is requantized (in single precision, halves away from zero, as
the reference does); the others are copied.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from .common import (FLOAT_AND_QUANT8_TENSORS, QUANT8_ASYMM_TENSORS, check_quant_scales, merge_dims,
                     quant_range, round_half_away)
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Range, Signature, repeated, same_as, scalar, tensor

RANK = (1, 4)
SIGNATURES = (Signature(inputs=(tensor(FLOAT_AND_QUANT8_TENSORS, rank=RANK),
                                repeated(same_as(0, rank=RANK), at_least=0),
                                scalar(T.INT32, Range(low=0), name="axis")),
                        outputs=(same_as(0),)),)


def check_quantization(ctx: OperationContext) -> None:
    check_quant_scales(ctx, range(len(ctx.inputs) - 1))


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    tensors = shapes[:-1]
    known = [s for s in tensors if s is not None]
    if not known:
        return [None]
    rank = len(known[0])
    check(all(len(s) == rank for s in known),
          f"{ctx.name}: inputs have different ranks {[len(s) for s in known]}")
    axis = ctx.scalar(len(shapes) - 1)
    if axis is None:
        return [(0,) * rank]
    check(0 <= axis < rank, f"{ctx.name}: axis {axis} is out of range for rank {rank}")
    out = []
    for d in range(rank):
        if d == axis:
            sizes = [s[d] for s in tensors if s is not None]
            complete = len(sizes) == len(tensors) and all(sizes)
            out.append(sum(sizes) if complete else 0)
        else:
            size = 0
            for i, shape in enumerate(known):
                size = merge_dims(ctx, size, shape[d], f"dimension {d} of the inputs")
            out.append(size)
    return [tuple(out)]


def _check_run_shapes(ctx: OperationContext, tensors: Sequence[np.ndarray], axis: int) -> None:
    rank = tensors[0].ndim
    check(0 <= axis < rank, f"{ctx.name}: axis {axis} is out of range for rank {rank}")
    first = tensors[0].shape
    for i, array in enumerate(tensors[1:], start=1):
        shape = array.shape
        check(len(shape) == rank and all(a == b for d, (a, b) in enumerate(zip(shape, first))
                                         if d != axis),
              f"{ctx.name}: input {i} shape {list(shape)} does not match input 0 shape "
              f"{list(first)} outside axis {axis}")


def build(ctx: OperationContext) -> Kernel:
    count = len(ctx.inputs) - 1
    static_axis = ctx.scalar(count)
    out = ctx.outputs[0]
    rescales = []
    if out.type in QUANT8_ASYMM_TENSORS:
        qmin, qmax = quant_range(out.type)
        for operand in ctx.inputs[:count]:
            same = operand.scale == out.scale and operand.zeroPoint == out.zeroPoint
            rescales.append(None if same else _requantizer(operand, out, qmin, qmax))

    def kernel(*inputs):
        tensors = inputs[:count]
        axis = static_axis if static_axis is not None else int(inputs[count])
        _check_run_shapes(ctx, tensors, axis)
        if rescales:
            tensors = [t if r is None else r(t) for t, r in zip(tensors, rescales)]
        return (np.concatenate(tensors, axis=axis),)
    return kernel


def _requantizer(operand, out, qmin: int, qmax: int):
    scale = np.float32(operand.scale) * (np.float32(1.0) / np.float32(out.scale))
    bias = np.float32(-operand.zeroPoint) * scale

    def requantize(x: np.ndarray) -> np.ndarray:
        q = round_half_away(x.astype(np.float32) * scale + bias) + out.zeroPoint
        return np.clip(q, qmin, qmax).astype(x.dtype)
    return requantize


register(OperationDef(OperationType.CONCATENATION, SIGNATURES, infer_shapes, build, check_quantization,
                      zero_sized_inputs=True))
