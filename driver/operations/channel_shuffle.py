"""CHANNEL_SHUFFLE (HAL 1.2): the channels along ``axis`` (in [-rank, rank)), split into
num_groups groups of equal size, interleaved: output channel j * num_groups + g is input
channel g * (channels / num_groups) + j. A reshape to [num_groups, group size], a transpose
and a reshape back; quantized outputs keep the input's quantization.
"""
from __future__ import annotations

from typing import Sequence

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from .common import FLOAT_AND_QUANT8_TENSORS, check_kept_quantization, normalize_axis
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Example, ExampleOperand, Range, Signature, same_as, scalar, tensor

INPUT, NUM_GROUPS, AXIS = range(3)
GROUPS = scalar(T.INT32, Range(1), "num_groups")
SIGNATURES = (Signature(inputs=(tensor(FLOAT_AND_QUANT8_TENSORS, rank=(1, 4)), GROUPS,
                                scalar(T.INT32, name="axis")),
                        outputs=(same_as(INPUT),)),)
#: Two groups along the last axis (the generic seeds take one group, which moves nothing).
EXAMPLES = (Example(inputs=(ExampleOperand(T.TENSOR_FLOAT16, (2, 4)), ExampleOperand(T.INT32, constant=2),
                            ExampleOperand(T.INT32, constant=-1)),
                    outputs=((T.TENSOR_FLOAT16, 0.0, 0),)),
            Example(inputs=(ExampleOperand(T.TENSOR_QUANT8_ASYMM, (1, 6, 2), scale=0.5, zero_point=128),
                            ExampleOperand(T.INT32, constant=3), ExampleOperand(T.INT32, constant=1)),
                    outputs=((T.TENSOR_QUANT8_ASYMM, 0.5, 128),)))


def check_groups(ctx: OperationContext, shape: Sequence[int], groups: int, axis: int) -> int:
    """The axis as an index, once groups divide its channels (a size of 0 at prepare time is
    unknown, and at run time empty: both divide)."""
    axis = normalize_axis(ctx, axis, len(shape))
    check(shape[axis] % groups == 0,
          f"{ctx.name}: input 1 (num_groups) {groups} does not divide the {shape[axis]} channels "
          f"of axis {axis}")
    return axis


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    inp, groups, axis = shapes[INPUT], ctx.scalar(NUM_GROUPS), ctx.scalar(AXIS)
    if inp is not None and groups is not None and axis is not None:
        check_groups(ctx, inp, groups, axis)
    return [inp]


def build(ctx: OperationContext) -> Kernel:
    def kernel(x, groups, axis):
        groups = int(groups)
        GROUPS.check_value(ctx, NUM_GROUPS, groups)
        axis = check_groups(ctx, x.shape, groups, int(axis))
        split = x.reshape(*x.shape[:axis], groups, x.shape[axis] // groups, *x.shape[axis + 1:])
        return (split.swapaxes(axis, axis + 1).reshape(x.shape),)
    return kernel


register(OperationDef(OperationType.CHANNEL_SHUFFLE, SIGNATURES, infer_shapes, build,
                      check_kept_quantization, EXAMPLES))
