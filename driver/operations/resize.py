"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR: the height and width of a 4-D tensor resized.

Inputs: the tensor (NHWC, or NCHW with the layout input), then the output width and height
(in that order) as INT32 sizes, or (HAL 1.2) as scale factors of the input's sizes: FLOAT16
scalars for a TENSOR_FLOAT16 tensor, FLOAT32 otherwise, the output size being
floor(input size * scale) in single precision; every output size must be positive. Then,
optionally, the layout (HAL 1.2; RESIZE_NEAREST_NEIGHBOR, added in 1.2, always has it),
align_corners and half_pixel_centers (HAL 1.3, not both true). Only the batches may be 0.

Output pixel y samples the input at y * scale, where scale is in / out, or with
align_corners (and more than one output pixel) (in - 1) / (out - 1); with
half_pixel_centers at (y + 0.5) * scale, less 0.5 for bilinear. Nearest neighbour takes
the pixel at the floor of that (rounded half away from zero with align_corners) clamped to
the input. Bilinear weighs the pixels at its floor and ceiling (clamped to the input) by
the distance, in single precision as the reference does, float16 inputs too. Quantized
results keep the input's quantization and are cast to the stored type as the reference
casts them: truncated toward zero (the floor for TENSOR_QUANT8_ASYMM's non-negative
values; negative TENSOR_QUANT8_ASYMM_SIGNED values round up, so the two types may differ
by one beyond their offset of 128). Both gather by index arrays made once per geometry.
"""
from __future__ import annotations

import functools
from typing import Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from ..limits import check_shape
from ._spatial import LAYOUT, flag, from_nhwc, layout_shape, nhwc_shape, to_nhwc
from .common import (FLOAT_AND_QUANT8_TENSORS, QUANT8_ASYMM_TENSORS, check_kept_quantization,
                     quant_range, round_half_away)
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Example, ExampleOperand, Range, Signature, same_as, scalar, tensor

INPUT, WIDTH, HEIGHT, LAYOUT_FLAG, ALIGN_CORNERS, HALF_PIXEL_CENTERS = range(6)
#: The tensor types and the scalar type of the size parameters they take.
SIZE_TYPES = ((FLOAT_AND_QUANT8_TENSORS, T.INT32),
              ((T.TENSOR_FLOAT32, *QUANT8_ASYMM_TENSORS), T.FLOAT32),
              ((T.TENSOR_FLOAT16,), T.FLOAT16))
_SIZE_VALUES = {T.INT32: Range(1), T.FLOAT32: Range(0, low_exclusive=True),
                T.FLOAT16: Range(0, low_exclusive=True)}
#: The largest output size: the reference holds it in an int32.
MAX_SIZE = 2 ** 31 - 1
OPTIONAL_FLAGS = (LAYOUT, scalar(T.BOOL, name="align_corners"), scalar(T.BOOL, name="half_pixel_centers"))


def signatures(fewest_flags: int) -> tuple[Signature, ...]:
    return tuple(Signature(inputs=(tensor(types, rank=(4, 4)),
                                   scalar(size_type, _SIZE_VALUES[size_type], "output width"),
                                   scalar(size_type, _SIZE_VALUES[size_type], "output height"),
                                   *OPTIONAL_FLAGS[:flags]),
                           outputs=(same_as(INPUT),))
                 for types, size_type in SIZE_TYPES for flags in range(fewest_flags, len(OPTIONAL_FLAGS) + 1))


def _example(operand_type: T, size_type: T, width, height, flags: Sequence[bool]) -> Example:
    scale, zero_point = (0.25, 5) if operand_type in QUANT8_ASYMM_TENSORS else (0.0, 0)
    return Example(inputs=(ExampleOperand(operand_type, (1, 2, 3, 2), scale=scale, zero_point=zero_point),
                           ExampleOperand(size_type, constant=width),
                           ExampleOperand(size_type, constant=height),
                           *(ExampleOperand(T.BOOL, constant=f) for f in flags)),
                   outputs=((operand_type, scale, zero_point),))


#: Each type, sizes and scales, both layouts, align_corners and half_pixel_centers.
EXAMPLES = (_example(T.TENSOR_FLOAT32, T.INT32, 4, 3, (False, True, False)),
            _example(T.TENSOR_QUANT8_ASYMM, T.FLOAT32, 1.5, 2.0, (True, False, True)),
            _example(T.TENSOR_QUANT8_ASYMM_SIGNED, T.INT32, 2, 5, (True,)),
            _example(T.TENSOR_FLOAT16, T.FLOAT16, 0.5, 1.0, (False, False)))


def check_resize(ctx: OperationContext) -> None:
    check_kept_quantization(ctx)
    check_flags(ctx, flag(ctx, ALIGN_CORNERS), flag(ctx, HALF_PIXEL_CENTERS))


def check_flags(ctx: OperationContext, align_corners, half_pixel_centers) -> None:
    check(not (align_corners and half_pixel_centers),
          f"{ctx.name}: input 4 (align_corners) and input 5 (half_pixel_centers) are both true")


def output_size(ctx: OperationContext, i: int, in_size: int, parameter, actual: bool) -> int:
    """The output height or width from input ``i`` (0: unknown). At run time (``actual``)
    every input size is known, and only the batches may be 0."""
    what = f"input {i} ({'output height' if i == HEIGHT else 'output width'})"
    if ctx.inputs[i].type == T.INT32:
        size = int(parameter)
    elif not in_size:        # unknown at prepare time (resized_shape refuses a 0 at run time)
        return 0
    else:
        size = float(np.floor(np.float32(in_size) * np.float32(parameter)))
    check(size > 0, f"{ctx.name}: {what} {parameter} makes an output size of {size}, not positive")
    check(size <= MAX_SIZE, f"{ctx.name}: {what} {parameter} makes an output size of {size}, over {MAX_SIZE}")
    return int(size)


def resized_shape(ctx: OperationContext, shape: Sequence[int], width, height,
                  actual: bool) -> tuple[int, ...]:
    """The NHWC output of an NHWC input."""
    batches, in_height, in_width, channels = shape
    check(not actual or (in_height and in_width and channels),
          f"{ctx.name}: input 0 has shape {list(shape)}: only its batches may be 0")
    return (batches, output_size(ctx, HEIGHT, in_height, height, actual),
            output_size(ctx, WIDTH, in_width, width, actual), channels)


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    width, height, nchw = ctx.scalar(WIDTH), ctx.scalar(HEIGHT), flag(ctx, LAYOUT_FLAG)
    if shapes[INPUT] is None or nchw is None:
        return [(0,) * 4]
    out = resized_shape(ctx, nhwc_shape(shapes[INPUT], nchw), width, height, actual=False) \
        if width is not None and height is not None else (0,) * 4
    return [layout_shape(*out, nchw)]


def _scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    if align_corners and out_size > 1:
        return np.float32(in_size - 1) / np.float32(out_size - 1)
    return np.float32(in_size) / np.float32(out_size)


@functools.lru_cache(maxsize=64)
def nearest_indexes(in_size: int, out_size: int, align_corners: bool, half_pixel_centers: bool) -> np.ndarray:
    """The input position each output position copies."""
    positions = np.arange(out_size, dtype=np.float32)
    if half_pixel_centers:
        positions += np.float32(0.5)
    scaled = positions * _scale(in_size, out_size, align_corners)
    chosen = round_half_away(scaled) if align_corners else np.floor(scaled)
    return np.clip(chosen, 0, in_size - 1).astype(np.intp)


@functools.lru_cache(maxsize=64)
def bilinear_plan(in_size: int, out_size: int, align_corners: bool, half_pixel_centers: bool
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(lower positions, upper positions, lower weights, upper weights), in single precision."""
    positions = np.arange(out_size, dtype=np.float32)
    scale = _scale(in_size, out_size, align_corners)
    if half_pixel_centers:
        sampled = (positions + np.float32(0.5)) * scale - np.float32(0.5)
    else:
        sampled = positions * scale
    lower = np.clip(np.floor(sampled), 0, in_size - 1).astype(np.intp)
    upper = np.clip(np.ceil(sampled), 0, in_size - 1).astype(np.intp)
    upper_weight = sampled - lower.astype(np.float32)
    return lower, upper, np.float32(1) - upper_weight, upper_weight


def nearest(x: np.ndarray, out_height: int, out_width: int, align_corners: bool, half_pixel_centers: bool):
    rows = nearest_indexes(x.shape[1], out_height, align_corners, half_pixel_centers)
    columns = nearest_indexes(x.shape[2], out_width, align_corners, half_pixel_centers)
    return x[:, rows][:, :, columns]


def bilinear(x: np.ndarray, out_height: int, out_width: int, align_corners: bool, half_pixel_centers: bool):
    flags = (align_corners, half_pixel_centers)
    top, bottom, top_weight, bottom_weight = bilinear_plan(x.shape[1], out_height, *flags)
    left, right, left_weight, right_weight = bilinear_plan(x.shape[2], out_width, *flags)
    top_weight, bottom_weight = top_weight[:, None, None], bottom_weight[:, None, None]
    left_weight, right_weight = left_weight[:, None], right_weight[:, None]
    real = x.astype(np.float32)
    # The reference's order of operations: each term (pixel * y weight) * x weight, summed
    # in turn. The y weights are applied before the columns are picked, to the rows at the
    # input's width: the same products, made once per input column rather than per output one.
    upper, lower = real[:, top] * top_weight, real[:, bottom] * bottom_weight
    return (upper[:, :, left] * left_weight + lower[:, :, left] * left_weight
            + upper[:, :, right] * right_weight + lower[:, :, right] * right_weight)


def build_nearest(ctx: OperationContext) -> Kernel:
    return _kernel(ctx, nearest)


def build_bilinear(ctx: OperationContext) -> Kernel:
    operand_type = ctx.inputs[INPUT].type
    if operand_type in QUANT8_ASYMM_TENSORS:
        low, high = quant_range(operand_type)
        return _kernel(ctx, lambda x, *geometry: np.clip(
            np.trunc(bilinear(x, *geometry)), low, high).astype(x.dtype))
    return _kernel(ctx, lambda x, *geometry: bilinear(x, *geometry).astype(x.dtype, copy=False))


def _kernel(ctx: OperationContext, interpolate) -> Kernel:
    def kernel(x, width, height, *flags):
        inputs = (x, width, height, *flags)
        nchw, align_corners, half_pixel_centers = (
            flag(ctx, i, inputs) for i in (LAYOUT_FLAG, ALIGN_CORNERS, HALF_PIXEL_CENTERS))
        check_flags(ctx, align_corners, half_pixel_centers)
        nhwc = to_nhwc(x, nchw)
        out = resized_shape(ctx, nhwc.shape, width, height, actual=True)
        check_shape(out, x.itemsize, f"{ctx.name}, output 0")
        _, out_height, out_width, _ = out
        return (from_nhwc(interpolate(nhwc, out_height, out_width, align_corners, half_pixel_centers), nchw),)
    return kernel


register(OperationDef(OperationType.RESIZE_BILINEAR, signatures(0), infer_shapes, build_bilinear,
                      check_resize, EXAMPLES, zero_sized_inputs=True))
register(OperationDef(OperationType.RESIZE_NEAREST_NEIGHBOR, signatures(1), infer_shapes, build_nearest,
                      check_resize, EXAMPLES, zero_sized_inputs=True))
