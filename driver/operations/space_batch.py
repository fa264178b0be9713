"""BATCH_TO_SPACE_ND and SPACE_TO_BATCH_ND: blocks of the spatial dimensions of a 4-D tensor
moved to and from its batch dimension (NHWC, or NCHW with the optional layout input, HAL
1.2 on).

block_shape is a TENSOR_INT32 [2] of (block_height, block_width), each at least 1.
SPACE_TO_BATCH_ND first pads height and width by ``paddings``, a TENSOR_INT32 [2, 2] of
non-negative (before, after) counts, with the input's logical zero (the zero point for
quantized types); the padded sizes must be multiples of the block. Output batch
(dy * block_width + dx) * batches + b then holds the padded pixels (y * block_height + dy,
x * block_width + dx) of batch b. BATCH_TO_SPACE_ND is the inverse without padding; the
batches must be a multiple of block_height * block_width. Both are a reshape and a
transpose; quantized outputs keep the input's quantization.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from ..limits import check_shape
from ._spatial import LAYOUT, flag, from_nhwc, layout_shape, nhwc_shape, pad_spatial, to_nhwc
from .common import FLOAT_AND_QUANT8_TENSORS, QUANT8_ASYMM_TENSORS, check_kept_quantization
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Example, ExampleOperand, Signature, same_as, tensor

INPUT, BLOCK_SHAPE, PADDINGS_INPUT = range(3)   # then the layout, when present
TYPES = FLOAT_AND_QUANT8_TENSORS
DATA = tensor(TYPES, rank=(4, 4))
BLOCK = tensor((T.TENSOR_INT32,), rank=(1, 1), name="block_shape")
PADDINGS = tensor((T.TENSOR_INT32,), rank=(2, 2), name="paddings")
BATCH_TO_SPACE_SIGNATURES = tuple(Signature(inputs=(DATA, BLOCK, *layout), outputs=(same_as(INPUT),))
                                  for layout in ((), (LAYOUT,)))
SPACE_TO_BATCH_SIGNATURES = tuple(Signature(inputs=(DATA, BLOCK, PADDINGS, *layout),
                                            outputs=(same_as(INPUT),))
                                  for layout in ((), (LAYOUT,)))


#: Quantization of the examples' quantized inputs and outputs.
_EXAMPLE_QUANTIZATION = {T.TENSOR_QUANT8_ASYMM: (0.5, 3), T.TENSOR_QUANT8_ASYMM_SIGNED: (0.5, -2)}


def _example(operand_type: T, dims, parameters, nchw: Optional[bool]) -> Example:
    scale, zero_point = _EXAMPLE_QUANTIZATION.get(operand_type, (0.0, 0))
    layout = () if nchw is None else (ExampleOperand(T.BOOL, constant=nchw),)
    return Example(inputs=(ExampleOperand(operand_type, dims, scale=scale, zero_point=zero_point),
                           *(ExampleOperand(T.TENSOR_INT32, np.shape(p), constant=p) for p in parameters),
                           *layout),
                   outputs=((operand_type, scale, zero_point),))


#: Every type, with and without the layout input: the generic seeds make no [2] block_shape.
BATCH_TO_SPACE_EXAMPLES = tuple(_example(t, (4, 1, 2, 3), ([2, 2],), nchw)
                                for t, nchw in zip(TYPES, (None, True, False, None)))
SPACE_TO_BATCH_EXAMPLES = tuple(_example(t, (1, 3, 3, 3), ([2, 2], [[1, 0], [0, 1]]), nchw)
                                for t, nchw in zip(TYPES, (True, None, None, False)))


def block_of(ctx: OperationContext, block: np.ndarray) -> tuple[int, int]:
    check(block.shape == (2,),
          f"{ctx.name}: input 1 (block_shape) has shape {list(block.shape)}, expected [2]")
    height, width = (int(b) for b in block)
    check(height >= 1 and width >= 1, f"{ctx.name}: input 1 (block_shape) {[height, width]} must be >= 1")
    return height, width


def paddings_of(ctx: OperationContext, paddings: np.ndarray) -> tuple[int, int, int, int]:
    check(paddings.shape == (2, 2),
          f"{ctx.name}: input 2 (paddings) has shape {list(paddings.shape)}, expected [2, 2]")
    check(bool(np.all(paddings >= 0)),
          f"{ctx.name}: input 2 (paddings) {paddings.tolist()} has a negative count")
    return tuple(int(p) for p in paddings.reshape(-1))


def batch_to_space_shape(ctx, shape, block, _paddings=None) -> tuple[int, ...]:
    """The NHWC output of an NHWC input (0: unknown)."""
    batches, height, width, channels = shape
    block_height, block_width = block
    check(batches % (block_height * block_width) == 0,
          f"{ctx.name}: input 0 has {batches} batches, not a multiple of the block's "
          f"{block_height} * {block_width}")
    return batches // (block_height * block_width), height * block_height, width * block_width, channels


def space_to_batch_shape(ctx, shape, block, paddings) -> tuple[int, ...]:
    batches, height, width, channels = shape
    (block_height, block_width), (top, bottom, left, right) = block, paddings
    padded = [size and size + head + tail for size, head, tail in     # 0 stays unknown
              ((height, top, bottom), (width, left, right))]
    check(padded[0] % block_height == 0 and padded[1] % block_width == 0,
          f"{ctx.name}: padded height {padded[0]} and width {padded[1]} must be multiples of "
          f"block_shape {[block_height, block_width]}")
    return batches * block_height * block_width, padded[0] // block_height, padded[1] // block_width, channels


def _parameters(ctx: OperationContext, inputs: Optional[Sequence] = None):
    """(block, paddings (None for BATCH_TO_SPACE_ND), nchw), checked: from constants, or
    from ``inputs`` at run time; None when one is only known at run time."""
    pads = ctx.type == OperationType.SPACE_TO_BATCH_ND
    positions = (BLOCK_SHAPE, PADDINGS_INPUT) if pads else (BLOCK_SHAPE,)
    values = [ctx.inputs[i].value if inputs is None else inputs[i] for i in positions]
    nchw = flag(ctx, len(positions) + 1, inputs)
    if any(v is None for v in values) or nchw is None:
        return None
    return block_of(ctx, values[0]), paddings_of(ctx, values[1]) if pads else None, nchw


def inferrer(output_shape):
    def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
        parameters = _parameters(ctx)
        if shapes[INPUT] is None or parameters is None:
            return [(0,) * 4]
        block, paddings, nchw = parameters
        return [layout_shape(*output_shape(ctx, nhwc_shape(shapes[INPUT], nchw), block, paddings), nchw)]
    return infer_shapes


def build_batch_to_space(ctx: OperationContext) -> Kernel:
    def kernel(x, *inputs):
        block, _, nchw = _parameters(ctx, (x, *inputs))
        nhwc = to_nhwc(x, nchw)
        out = batch_to_space_shape(ctx, nhwc.shape, block)
        check_shape(out, x.itemsize, f"{ctx.name}, output 0")
        _, height, width, channels = nhwc.shape
        blocks = nhwc.reshape(*block, out[0], height, width, channels)
        return (from_nhwc(blocks.transpose(2, 3, 0, 4, 1, 5).reshape(out), nchw),)
    return kernel


def build_space_to_batch(ctx: OperationContext) -> Kernel:
    inp = ctx.inputs[INPUT]
    fill = inp.zeroPoint if inp.type in QUANT8_ASYMM_TENSORS else 0

    def kernel(x, *inputs):
        block, paddings, nchw = _parameters(ctx, (x, *inputs))
        nhwc = to_nhwc(x, nchw)
        batches, height, width, channels = nhwc.shape
        top, bottom, left, right = paddings
        check_shape((batches, height + top + bottom, width + left + right, channels), x.itemsize,
                    f"{ctx.name}, padded input 0")
        padded = pad_spatial(nhwc, top, bottom, left, right, fill)
        # The padded sizes are actual here: a zero size is empty, not unknown.
        out = space_to_batch_shape(ctx, padded.shape, block, (0, 0, 0, 0))
        block_height, block_width = block
        blocks = padded.reshape(batches, out[1], block_height, out[2], block_width, channels)
        return (from_nhwc(blocks.transpose(2, 4, 0, 1, 3, 5).reshape(out), nchw),)
    return kernel


register(OperationDef(OperationType.BATCH_TO_SPACE_ND, BATCH_TO_SPACE_SIGNATURES,
                      inferrer(batch_to_space_shape), build_batch_to_space, check_kept_quantization,
                      BATCH_TO_SPACE_EXAMPLES))
register(OperationDef(OperationType.SPACE_TO_BATCH_ND, SPACE_TO_BATCH_SIGNATURES,
                      inferrer(space_to_batch_shape), build_space_to_batch, check_kept_quantization,
                      SPACE_TO_BATCH_EXAMPLES))
