"""DEPTH_TO_SPACE and SPACE_TO_DEPTH: blocks of block_size x block_size pixels moved between
the spatial dimensions and the channels of a 4-D tensor (NHWC, or NCHW with the optional
layout input, HAL 1.2 on).

DEPTH_TO_SPACE takes [batches, height, width, channels] to [batches, height * block_size,
width * block_size, channels / block_size**2]: output pixel (y * block_size + dy, x *
block_size + dx) channel c is input pixel (y, x) channel (dy * block_size + dx) * depth + c.
SPACE_TO_DEPTH is its inverse; height and width must be multiples of block_size. Both
are a reshape and a transpose; quantized outputs keep the input's quantization.
"""
from __future__ import annotations

from typing import Sequence

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from ..limits import check_shape
from ._spatial import LAYOUT, flag, from_nhwc, layout_shape, nhwc_shape, to_nhwc
from .common import FLOAT_AND_QUANT8_TENSORS, QUANT8_ASYMM_TENSORS, check_kept_quantization
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Example, ExampleOperand, Range, Signature, same_as, scalar, tensor

INPUT, BLOCK_SIZE, LAYOUT_FLAG = range(3)
BLOCK = scalar(T.INT32, Range(1), "block_size")
SIGNATURES = tuple(Signature(inputs=(tensor(FLOAT_AND_QUANT8_TENSORS, rank=(4, 4)), BLOCK, *layout),
                             outputs=(same_as(INPUT),))
                   for layout in ((), (LAYOUT,)))


def _example(operand_type: T, dims, nchw: bool) -> Example:
    """Block size 2 (the generic seeds take the least allowed, 1, which moves nothing)."""
    scale, zero_point = (0.5, 1) if operand_type in QUANT8_ASYMM_TENSORS else (0.0, 0)
    return Example(inputs=(ExampleOperand(operand_type, dims, scale=scale, zero_point=zero_point),
                           ExampleOperand(T.INT32, constant=2), ExampleOperand(T.BOOL, constant=nchw)),
                   outputs=((operand_type, scale, zero_point),))


DEPTH_TO_SPACE_EXAMPLES = (_example(T.TENSOR_QUANT8_ASYMM, (1, 8, 1, 2), True),
                           _example(T.TENSOR_FLOAT32, (1, 1, 2, 4), False))
SPACE_TO_DEPTH_EXAMPLES = (_example(T.TENSOR_QUANT8_ASYMM_SIGNED, (1, 2, 4, 1), False),
                           _example(T.TENSOR_FLOAT16, (2, 1, 2, 2), True))


def depth_to_space_shape(ctx: OperationContext, shape: tuple[int, ...], block: int) -> tuple[int, ...]:
    """The NHWC output of an NHWC input (0: unknown)."""
    batches, height, width, channels = shape
    check(channels % (block * block) == 0,
          f"{ctx.name}: input 0 has {channels} channels, not a multiple of block_size**2 = {block * block}")
    return batches, height * block, width * block, channels // (block * block)


def space_to_depth_shape(ctx: OperationContext, shape: tuple[int, ...], block: int) -> tuple[int, ...]:
    batches, height, width, channels = shape
    check(height % block == 0 and width % block == 0,
          f"{ctx.name}: input 0 height {height} and width {width} must be multiples of block_size {block}")
    return batches, height // block, width // block, channels * block * block


def inferrer(output_shape):
    def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
        block, nchw = ctx.scalar(BLOCK_SIZE), flag(ctx, LAYOUT_FLAG)
        if shapes[INPUT] is None or block is None or nchw is None:
            return [(0,) * 4]
        return [layout_shape(*output_shape(ctx, nhwc_shape(shapes[INPUT], nchw), block), nchw)]
    return infer_shapes


def builder(output_shape, block_axes):
    """``block_axes(x, block)``: the NHWC input as [batches, out_height, block, out_width,
    block, depth] (space side) or [batches, height, width, block, block, depth] (depth side),
    and the transpose to the other."""
    def build(ctx: OperationContext) -> Kernel:
        def kernel(x, block, *layout):
            block = int(block)
            BLOCK.check_value(ctx, BLOCK_SIZE, block)
            nchw = flag(ctx, LAYOUT_FLAG, (x, block, *layout))
            nhwc = to_nhwc(x, nchw)
            out = output_shape(ctx, nhwc.shape, block)
            check_shape(out, x.itemsize, f"{ctx.name}, output 0")
            return (from_nhwc(block_axes(nhwc, block).reshape(out), nchw),)
        return kernel
    return build


def depth_to_space_blocks(x, block):
    batches, height, width, channels = x.shape
    split = x.reshape(batches, height, width, block, block, channels // (block * block))
    return split.transpose(0, 1, 3, 2, 4, 5)


def space_to_depth_blocks(x, block):
    batches, height, width, channels = x.shape
    split = x.reshape(batches, height // block, block, width // block, block, channels)
    return split.transpose(0, 1, 3, 2, 4, 5)


register(OperationDef(OperationType.DEPTH_TO_SPACE, SIGNATURES, inferrer(depth_to_space_shape),
                      builder(depth_to_space_shape, depth_to_space_blocks), check_kept_quantization,
                      DEPTH_TO_SPACE_EXAMPLES))
register(OperationDef(OperationType.SPACE_TO_DEPTH, SIGNATURES, inferrer(space_to_depth_shape),
                      builder(space_to_depth_shape, space_to_depth_blocks), check_kept_quantization,
                      SPACE_TO_DEPTH_EXAMPLES))
