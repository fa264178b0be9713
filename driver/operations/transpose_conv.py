"""TRANSPOSE_CONV_2D: the transpose of a 2-D convolution (its gradient with respect to its
input), computed as a convolution.

Each input cell, times the filter, is added into the output at ``stride`` steps, less the
padding: output size = (in - 1) * stride + filter - head - tail. That equals convolving the
input spread out by the strides (``stride - 1`` zeros between cells), padded by
``filter - 1 - padding``, with the filter turned half a turn; so the kernel is that of
CONV_2D (convolutions.py), which also gives the operands' forms and quantization.

Operands: input [batches, height, width, in] (or NCHW), filter [out, filter_height,
filter_width, in], bias [out], then either an output shape (a TENSOR_INT32 of 4 values,
in the operation's layout) and a padding scheme, or explicit padding (left, right, top,
bottom); then the strides (width, height), the fused activation and the layout flag. The
output shape only decides the implicit padding, as in the reference: SAME pads as a
convolution of that output would, its tail fitting the last stride (even negatively).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from ..limits import check_shape
from ._spatial import (dilate_spatial, from_nhwc, layout_shape, nhwc_shape, pad_spatial, to_nhwc,
                       transpose_implicit_padding, transpose_output_size)
from .common import merge_dims
from .convolutions import (FILTER, Geometry, Parameters, check_channel_scales, check_quantization,
                           check_sizes, declared_shapes, examples, filter_matrix, form_of,
                           known_shapes, make_form, multiply_windows, offsets, output_stage,
                           read_parameters, shifted_input, signatures)
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import ExampleOperand, tensor

OUTPUT_SHAPE = 3
#: The implicit form (an output shape and a padding scheme) and the explicit; both end in
#: the layout flag.
FORMS = (make_form(OUTPUT_SHAPE, False, None, 1,
                   leading=(tensor((T.TENSOR_INT32,), rank=(1, 1), name="output shape"),)),
         make_form(3, True, None, 1))


def requested_size(ctx: OperationContext, shape: Optional[np.ndarray],
                   nchw: bool) -> Optional[tuple[int, int]]:
    """(height, width) of the output shape input, None when unknown; checked as the reference
    reads it (4 values), and positive, which SAME padding needs."""
    if shape is None:
        return None
    check(shape.shape == (4,), "{}: input 3 (output shape) has shape {}, expected [4]",
          ctx.name, list(shape.shape))
    _, height, width, _ = nhwc_shape(tuple(int(d) for d in shape), nchw)
    check(height > 0 and width > 0,
          "{}: input 3 (output shape) {} has a non-positive height or width", ctx.name, shape.tolist())
    return height, width


def transpose_geometry(ctx: OperationContext, params: Parameters, height: int, width: int,
                       filter_height: int, filter_width: int,
                       requested: Optional[tuple[int, int]]) -> Geometry:
    """The padding and output size (0: unknown), checking that the output is not empty."""
    stride_width, stride_height = params.stride
    if len(params.padding) == 4:
        left, right, top, bottom = params.padding
    elif requested is None:
        return Geometry(0, 0, 0, 0, 0, 0)
    else:
        (scheme,) = params.padding
        top, bottom = transpose_implicit_padding(requested[0], stride_height, filter_height, scheme)
        left, right = transpose_implicit_padding(requested[1], stride_width, filter_width, scheme)
    sizes = []
    for side, in_size, filter_size, stride, head, tail in (
            ("height", height, filter_height, stride_height, top, bottom),
            ("width", width, filter_width, stride_width, left, right)):
        size = transpose_output_size(in_size, filter_size, stride, head, tail) if filter_size else 0
        check(size > 0 or not (in_size and filter_size),
              "{}: the output {} would be {} (padding {})", ctx.name, side, size, (head, tail))
        sizes.append(size)
    return Geometry(top, bottom, left, right, *sizes)


def output_channels(ctx: OperationContext, channels: int, filter_shape: Sequence[int],
                    bias_shape: Sequence[int]) -> int:
    """The output's channels (0: unknown), checking that the filter and bias fit the input."""
    merge_dims(ctx, channels, filter_shape[3], "input channels and filter depth")
    out = merge_dims(ctx, filter_shape[0], bias_shape[0], "output channels of filter and bias")
    check_channel_scales(ctx, out)
    return out


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    params = read_parameters(ctx, form_of(ctx, FORMS))
    if params is None:
        return [(0, 0, 0, 0)]
    input_shape, filter_shape, bias_shape = known_shapes(shapes)
    batches, height, width, channels = nhwc_shape(input_shape, params.nchw)
    out_channels = output_channels(ctx, channels, filter_shape, bias_shape)
    requested = (None if len(params.padding) == 4 else
                 requested_size(ctx, ctx.inputs[OUTPUT_SHAPE].value, params.nchw))
    geometry = transpose_geometry(ctx, params, height, width, filter_shape[1], filter_shape[2],
                                  requested)
    return [layout_shape(batches, geometry.out_height, geometry.out_width, out_channels, params.nchw)]


def check_transpose_conv(ctx: OperationContext) -> None:
    check_quantization(ctx)
    infer_shapes(ctx, declared_shapes(ctx))


def spread(ctx: OperationContext, x: np.ndarray, geometry: Geometry, stride: tuple[int, int],
           filter_height: int, filter_width: int) -> np.ndarray:
    """The NHWC input spread out by the strides and padded (or cropped, where the padding
    exceeds the filter) so that a convolution with the turned filter gives the output."""
    stride_width, stride_height = stride
    batches, height, width, channels = x.shape
    check_shape((batches, (height - 1) * stride_height + 1, (width - 1) * stride_width + 1, channels),
                x.itemsize, f"{ctx.name}, its input spread by the strides")
    spread_out = dilate_spatial(x, stride_height, stride_width)
    top, bottom = filter_height - 1 - geometry.top, filter_height - 1 - geometry.bottom
    left, right = filter_width - 1 - geometry.left, filter_width - 1 - geometry.right
    padded = pad_spatial(spread_out, max(top, 0), max(bottom, 0), max(left, 0), max(right, 0))
    return padded[:, max(-top, 0):padded.shape[1] - max(-bottom, 0),
                  max(-left, 0):padded.shape[2] - max(-right, 0)]


def build(ctx: OperationContext) -> Kernel:
    form = form_of(ctx, FORMS)
    static = read_parameters(ctx, form)
    dtype, input_offset, filter_offset = offsets(ctx)
    finish = output_stage(ctx)
    w_info = ctx.inputs[FILTER]

    def turned_matrix(w: np.ndarray) -> np.ndarray:
        return filter_matrix(w[:, ::-1, ::-1, :], 1, dtype, filter_offset)
    const_matrix = None if w_info.value is None else turned_matrix(w_info.value)

    def kernel(*inputs):
        x, w, b = inputs[:3]
        params = static or read_parameters(ctx, form, inputs)
        nhwc = to_nhwc(x, params.nchw)
        check_sizes(ctx, nhwc, w, b)
        output_channels(ctx, nhwc.shape[3], w.shape, b.shape)
        requested = (None if len(params.padding) == 4 else
                     requested_size(ctx, inputs[OUTPUT_SHAPE], params.nchw))
        geometry = transpose_geometry(ctx, params, nhwc.shape[1], nhwc.shape[2], w.shape[1],
                                      w.shape[2], requested)
        matrix = const_matrix if const_matrix is not None else turned_matrix(w)
        prepared = spread(ctx, shifted_input(nhwc, dtype, input_offset), geometry, params.stride,
                          w.shape[1], w.shape[2])
        unpadded = Geometry(0, 0, 0, 0, geometry.out_height, geometry.out_width)
        sums = multiply_windows(ctx, prepared, matrix, unpadded, w.shape[1], w.shape[2])
        return (from_nhwc(finish(sums, b, params.activation), params.nchw),)
    return kernel


#: The implicit form's example (NHWC) asks for a 4x4 output: SAME then pads it by 0 at the
#: head and 1 at the tail, which a stride of 1 over the 3x3 input with the 2x2 filter fills.
EXAMPLES = examples(OperationType.TRANSPOSE_CONV_2D, FORMS, (2, 2, 2, 2),
                    leading=(ExampleOperand(T.TENSOR_INT32, (4,), constant=[1, 4, 4, 2]),))

register(OperationDef(OperationType.TRANSPOSE_CONV_2D, signatures(FORMS), infer_shapes, build,
                      check_transpose_conv, EXAMPLES, zero_sized_inputs=True))
