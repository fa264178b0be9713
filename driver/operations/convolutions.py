"""CONV_2D, DEPTHWISE_CONV_2D and GROUPED_CONV_2D: 2-D convolutions, one module for all.

A grouped convolution splits the input's channels into equal groups and convolves each
with its own share of the filters (output channel g * out_per_group + o). CONV_2D is the
case of one group; DEPTHWISE_CONV_2D that of one group per input channel, each with
``depth multiplier`` filters (output channel c * multiplier + m). The kernel gathers the
windows of the padded input into a matrix (im2col, ``_spatial.windows``) and multiplies
it by every group's filters at once; DEPTHWISE_CONV_2D's, whose windows hold a single
channel each, instead adds up the input's cells under each filter tap times its weights.

Operands: input [batches, height, width, channels] (NHWC, or NCHW with the layout flag);
filter [out, filter_height, filter_width, in / groups] (DEPTHWISE: [1, filter_height,
filter_width, out]); bias [out]; then the padding - a scheme (SAME or VALID) or explicit
(left, right, top, bottom) - the strides (width, height), the depth multiplier or the
number of groups, the fused activation, and where the variant has them the layout flag
and the dilation factors (width, height). Quantized inputs take a TENSOR_INT32 bias and a
filter of the input's type (the bias's scale is input_scale * filter_scale) or a
TENSOR_QUANT8_SYMM_PER_CHANNEL filter quantized along its output channels (the bias's
scale for channel c is input_scale * filter_scale[c]). Sums of integer products are
requantized with the reference's fixed-point arithmetic (_fixed_point.py); float16 is
computed in single precision and rounded once, as the reference does.

TRANSPOSE_CONV_2D (transpose_conv.py) shares the operand forms and the kernel's parts.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from ..hal.structs import SymmPerChannelQuantParams
from ..limits import (MAX_TAP_PRODUCTS, MULTIPLY_ADDS_PER_CHUNK, check_cost, check_shape,
                      checkpoint)
from ._fixed_point import (check_bias, multiply_by_quantized_multiplier, product_scale,
                           quantize_multiplier, saturate_int32)
from ._spatial import (LAYOUT, PaddingScheme, effective_filter_size, from_nhwc, implicit_padding,
                       layout_shape, nhwc_shape, output_size, pad_spatial, to_nhwc, windows)
from .common import (ACTIVATION, QUANT8_ASYMM_TENSORS, STORAGE_DTYPE, activation_bounds,
                     check_quant_params, check_quant_scales, declared_shape, matrix_product,
                     merge_dims, quantized_activation_range)
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import (Example, ExampleOperand, Operand, Range, Signature, same_as, scalar,
                         tensor)

INPUT, FILTER, BIAS = range(3)
F32, F16, I32 = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32
Q8, QS8, PER_CHANNEL = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM_PER_CHANNEL
CONV, DEPTHWISE, GROUPED = (OperationType.CONV_2D, OperationType.DEPTHWISE_CONV_2D,
                            OperationType.GROUPED_CONV_2D)

# --- operands ---------------------------------------------------------------------------

_POSITIVE = Range(0, low_exclusive=True)
PADDING_SCHEME = scalar(T.INT32, frozenset(PaddingScheme), "padding scheme")
EXPLICIT_PADDING = tuple(scalar(T.INT32, Range(0), f"padding {side}")
                         for side in ("left", "right", "top", "bottom"))
STRIDES = tuple(scalar(T.INT32, _POSITIVE, f"stride {side}") for side in ("width", "height"))
DILATIONS = tuple(scalar(T.INT32, _POSITIVE, f"dilation {side} factor") for side in ("width", "height"))
DEPTH_MULTIPLIER = scalar(T.INT32, _POSITIVE, "depth multiplier")
GROUPS = scalar(T.INT32, _POSITIVE, "number of groups")

#: (input, filter, bias) of each type family: float; quantized with a filter of the
#: input's type; quantized with a per-channel filter.
TENSORS = tuple((tensor(types, rank=(4, 4), name="input"), filter_operand, bias)
                for types, filter_operand, bias in (
                    ((F32, F16), same_as(INPUT, rank=(4, 4), name="filter"),
                     same_as(INPUT, rank=(1, 1), name="bias")),
                    (QUANT8_ASYMM_TENSORS, same_as(INPUT, rank=(4, 4), name="filter"),
                     tensor((I32,), rank=(1, 1), name="bias")),
                    (QUANT8_ASYMM_TENSORS, tensor((PER_CHANNEL,), rank=(4, 4), name="filter"),
                     tensor((I32,), rank=(1, 1), name="bias"))))


@dataclass(frozen=True)
class Form:
    """One variant's scalar parameters: the operands following the tensors, and where each
    kind sits among the operation's inputs."""
    parameters: tuple[Operand, ...]
    first: int                              # the position of the first parameter
    padding: tuple[int, ...]                # the scheme, or left, right, top, bottom
    stride: tuple[int, int]                 # width, height
    multiplier: Optional[int]               # the depth multiplier or number of groups
    activation: int
    layout: Optional[int]
    dilation: Optional[tuple[int, int]]     # width, height

    def fits(self, types: Sequence[int]) -> bool:
        return (len(types) == self.first + len(self.parameters) and
                all(types[i] in operand.types for i, operand in enumerate(self.parameters, self.first)))


def make_form(first: int, explicit: bool, multiplier: Optional[Operand], optional: int,
              leading: tuple[Operand, ...] = ()) -> Form:
    """The form whose parameters start at input ``first`` with ``leading`` (TRANSPOSE_CONV_2D's
    output shape), then the padding, strides, ``multiplier`` if any, the activation and the
    first ``optional`` of (layout flag, dilation width, dilation height)."""
    parameters = (*leading, *(EXPLICIT_PADDING if explicit else (PADDING_SCHEME,)), *STRIDES,
                  *((multiplier,) if multiplier else ()), ACTIVATION, *(LAYOUT, *DILATIONS)[:optional])
    padding_at = first + len(leading)
    stride_at = padding_at + (4 if explicit else 1)
    activation = stride_at + 2 + (multiplier is not None)
    return Form(parameters, first, tuple(range(padding_at, stride_at)), (stride_at, stride_at + 1),
                stride_at + 2 if multiplier else None, activation,
                activation + 1 if optional else None,
                (activation + 2, activation + 3) if optional == 3 else None)


def signatures(forms: Sequence[Form]) -> tuple[Signature, ...]:
    return tuple(Signature(inputs=(*family, *form.parameters), outputs=(same_as(INPUT),))
                 for form in forms for family in TENSORS)


def form_of(ctx: OperationContext, forms: Sequence[Form]) -> Form:
    """The form of a validated operation: the one whose parameter types its inputs have."""
    types = [operand.type for operand in ctx.inputs]
    return next(form for form in forms if form.fits(types))


@dataclass(frozen=True)
class Parameters:
    """The values of a form's scalar parameters."""
    padding: tuple[int, ...]            # (scheme,) or (left, right, top, bottom)
    stride: tuple[int, int]             # width, height
    dilation: tuple[int, int]           # width, height
    multiplier: int                     # depth multiplier or groups; 1 where there is none
    activation: int
    nchw: bool


def read_parameters(ctx: OperationContext, form: Form,
                    inputs: Optional[Sequence[np.ndarray]] = None) -> Optional[Parameters]:
    """The scalar parameters: constants, and values only known at run time read from a
    kernel's ``inputs`` and checked against their signature as a constant is at validation.
    None when some are only known at run time and ``inputs`` is None."""
    values = {}
    for i, operand in enumerate(form.parameters, form.first):
        if operand.types[0] == I32:         # TRANSPOSE_CONV_2D's output shape tensor
            continue
        value = ctx.scalar(i) if inputs is None else ctx.run_scalar(i, inputs, operand)
        if value is None:
            return None
        values[i] = value
    return Parameters(padding=tuple(values[i] for i in form.padding),
                      stride=tuple(values[i] for i in form.stride),
                      dilation=(1, 1) if form.dilation is None else tuple(values[i] for i in form.dilation),
                      multiplier=1 if form.multiplier is None else values[form.multiplier],
                      activation=values[form.activation],
                      nchw=form.layout is not None and bool(values[form.layout]))


# --- shapes -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Geometry:
    """A convolution's windows over its NHWC input: the padding and the output's size."""
    top: int
    bottom: int
    left: int
    right: int
    out_height: int
    out_width: int


def window_geometry(ctx: OperationContext, params: Parameters, height: int, width: int,
                    filter_height: int, filter_width: int) -> Geometry:
    """The padding and output size of windows over a [height, width] input (0: unknown),
    checking what the reference checks: each padding narrower than the filter's extent,
    and at least one window."""
    (stride_width, stride_height), (dilation_width, dilation_height) = params.stride, params.dilation
    if len(params.padding) == 4:
        left, right, top, bottom = params.padding
    else:
        (scheme,) = params.padding
        top, bottom = implicit_padding(height, stride_height, filter_height, dilation_height, scheme)
        left, right = implicit_padding(width, stride_width, filter_width, dilation_width, scheme)
    sizes = []
    for side, in_size, filter_size, stride, dilation, head, tail in (
            ("height", height, filter_height, stride_height, dilation_height, top, bottom),
            ("width", width, filter_width, stride_width, dilation_width, left, right)):
        extent = effective_filter_size(filter_size, dilation)
        check(not filter_size or max(head, tail) < extent,
              "{}: padding {} of the {} is not less than the filter's extent {}",
              ctx.name, (head, tail), side, extent)
        size = output_size(in_size, filter_size, stride, dilation, head, tail) if filter_size else 0
        check(size > 0 or not in_size or not filter_size,
              "{}: the filter's extent {} is larger than the padded input {} {}",
              ctx.name, extent, side, in_size + head + tail)
        sizes.append(size)
    return Geometry(top, bottom, left, right, *sizes)


def output_channels(ctx: OperationContext, params: Parameters, channels: int,
                    filter_shape: Sequence[int], bias_shape: Sequence[int]) -> int:
    """The output's channels (0: unknown), checking that the filter and bias fit an input
    of ``channels`` (0: unknown)."""
    if ctx.type == DEPTHWISE:
        check(filter_shape[0] in (0, 1), "{}: input 1 (filter) has {} in its first dimension, "
              "expected 1", ctx.name, filter_shape[0])
        out = merge_dims(ctx, filter_shape[3], bias_shape[0], "output channels of filter and bias")
        check(out % params.multiplier == 0, "{}: {} output channels are not a multiple of the "
              "depth multiplier {}", ctx.name, out, params.multiplier)
        check(not (channels and out) or channels * params.multiplier == out,
              "{}: depth multiplier {} times {} input channels is not the filter's {} output channels",
              ctx.name, params.multiplier, channels, out)
        check_channel_scales(ctx, out)
        return out
    groups = params.multiplier
    out = merge_dims(ctx, filter_shape[0], bias_shape[0], "output channels of filter and bias")
    check(not (channels and filter_shape[3]) or filter_shape[3] * groups == channels,
          "{}: input 1 (filter) has depth {}, expected {} input channels / {} groups",
          ctx.name, filter_shape[3], channels, groups)
    check(out % groups == 0, "{}: {} output channels do not divide into {} groups",
          ctx.name, out, groups)
    check_channel_scales(ctx, out)
    return out


def check_channel_scales(ctx: OperationContext, out_channels: int) -> None:
    """A per-channel filter has a scale for each output channel (0: unknown). Validation
    holds a filter of known shape to it; this catches one of unknown shape."""
    filt = ctx.inputs[FILTER]
    check(filt.type != PER_CHANNEL or not out_channels or len(filt.channelQuant.scales) == out_channels,
          "{}: input 1 (filter, operand {}) has {} scales for {} output channels",
          ctx.name, filt.index, len(filt.channelQuant.scales) if filt.channelQuant else 0, out_channels)


def known_shapes(shapes: Sequence[Shape]) -> tuple[tuple[int, ...], ...]:
    """The input, filter and bias shapes with an unknown rank as unknown dimensions."""
    return tuple(shape if shape is not None else (0,) * rank
                 for shape, rank in zip(shapes[:3], (4, 4, 1)))


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    params = read_parameters(ctx, form_of(ctx, FORMS[ctx.type]))
    if params is None:
        return [(0, 0, 0, 0)]
    input_shape, filter_shape, bias_shape = known_shapes(shapes)
    batches, height, width, channels = nhwc_shape(input_shape, params.nchw)
    out_channels = output_channels(ctx, params, channels, filter_shape, bias_shape)
    geometry = window_geometry(ctx, params, height, width, filter_shape[1], filter_shape[2])
    return [layout_shape(batches, geometry.out_height, geometry.out_width, out_channels, params.nchw)]


def check_sizes(ctx: OperationContext, nhwc: np.ndarray, w: np.ndarray, b: np.ndarray) -> None:
    """Sizes inference took for unknown: only the batch may be zero (as in the reference)."""
    check(all(nhwc.shape[1:]) and all(w.shape) and b.size,
          "{}: input 0 (NHWC shape {}), the filter (shape {}) or the bias has a zero dimension",
          ctx.name, list(nhwc.shape), list(w.shape))


# --- quantization -----------------------------------------------------------------------

#: The filter dimension a per-channel filter is quantized along: its output channels.
CHANNEL_DIM = {DEPTHWISE: 3}


def check_quantization(ctx: OperationContext) -> None:
    inp, filt = ctx.inputs[INPUT], ctx.inputs[FILTER]
    if inp.type not in QUANT8_ASYMM_TENSORS:
        return
    check_quant_scales(ctx, (INPUT,))
    if filt.type == PER_CHANNEL:
        check_bias(ctx, BIAS)
        channel_dim = CHANNEL_DIM.get(ctx.type, 0)
        check(filt.channelQuant.channelDim == channel_dim,
              "{}: input 1 (filter, operand {}) is quantized along dimension {}, expected {}",
              ctx.name, filt.index, filt.channelQuant.channelDim, channel_dim)
    else:
        check_quant_params(ctx, filt, "input 1 (filter)")
        check_bias(ctx, BIAS, inp.scale, filt.scale)


def declared_shapes(ctx: OperationContext) -> list[Shape]:
    """The declared shapes of the input, filter and bias, for shape checks at validation."""
    return [declared_shape(o) for o in ctx.inputs[:3]]


def check_convolution(ctx: OperationContext) -> None:
    check_quantization(ctx)
    infer_shapes(ctx, declared_shapes(ctx))


# --- the kernel -------------------------------------------------------------------------

def filter_matrix(w: np.ndarray, groups: int, dtype: type, offset: int) -> np.ndarray:
    """The filter [out, filter_height, filter_width, in_per_group] as [groups,
    in_per_group * filter_height * filter_width, out_per_group] in ``dtype`` less the
    filter's zero point: each group's columns, in the order ``multiply_windows`` gathers
    the rows of its windows."""
    w = w.astype(dtype) - offset if offset else w.astype(dtype, copy=False)
    _, filter_height, filter_width, depth = w.shape
    grouped = w.reshape(groups, -1, filter_height, filter_width, depth).transpose(0, 4, 2, 3, 1)
    return np.ascontiguousarray(grouped.reshape(groups, -1, grouped.shape[-1]))


def multiply_windows(ctx: OperationContext, x: np.ndarray, matrix: np.ndarray, geometry: Geometry,
                     filter_height: int, filter_width: int, stride: tuple[int, int] = (1, 1),
                     dilation: tuple[int, int] = (1, 1)) -> np.ndarray:
    """The sums of products of every window of the NHWC ``x`` (padded with zeros, which
    callers make the zero point) with each group's filters (``filter_matrix``): [batches,
    out_height, out_width, out_channels] in x's dtype. The windows are gathered into a
    matrix (im2col) multiplied by every group's filters at once."""
    groups, rows, out_per_group = matrix.shape
    batches = x.shape[0]
    positions = batches * geometry.out_height * geometry.out_width
    padded = pad_input(ctx, x, geometry)
    check_shape((positions, groups, rows), x.itemsize, f"{ctx.name}, its windows")
    (stride_width, stride_height), (dilation_width, dilation_height) = stride, dilation
    gathered = windows(padded, filter_height, filter_width, stride_height, stride_width,
                       dilation_height, dilation_width).reshape(positions, groups, rows)
    sums = matrix_product(gathered.transpose(1, 0, 2), matrix, ctx.name)   # [groups, positions, out]
    return sums.transpose(1, 0, 2).reshape(batches, geometry.out_height, geometry.out_width,
                                           groups * out_per_group)


def depthwise_filter(w: np.ndarray, multiplier: int, dtype: type, offset: int) -> np.ndarray:
    """The depthwise filter [1, filter_height, filter_width, channels * multiplier] as
    [filter_height, filter_width, channels, multiplier] in ``dtype`` less its zero point."""
    w = w.astype(dtype) - offset if offset else w.astype(dtype, copy=False)
    return w.reshape(*w.shape[1:3], -1, multiplier)


def accumulate_taps(ctx: OperationContext, x: np.ndarray, taps: np.ndarray, geometry: Geometry,
                    filter_height: int, filter_width: int, stride: tuple[int, int] = (1, 1),
                    dilation: tuple[int, int] = (1, 1)) -> np.ndarray:
    """The depthwise sums of products of every window of the NHWC ``x`` (padded with zeros)
    with its channel's filters (``depthwise_filter``): [batches, out_height, out_width,
    channels * multiplier] in x's dtype. Each window holds a single channel, so an im2col
    matrix would feed a matmul of tiny matrices; instead each chunk of filter rows adds
    its cells of every window times their weights (an einsum over the strided windows,
    which copies nothing), with as many rows in a chunk as keep it to about
    MULTIPLY_ADDS_PER_CHUNK products: a few chunks for a small filter, and a filter of many
    taps over few outputs is not a Python loop over its taps."""
    padded = pad_input(ctx, x, geometry)
    (stride_width, stride_height), (dilation_width, dilation_height) = stride, dilation
    cells = windows(padded, filter_height, filter_width, stride_height, stride_width,
                    dilation_height, dilation_width)               # [b, oh, ow, c, fh, fw]
    sums = np.zeros((*cells.shape[:4], taps.shape[-1]), x.dtype)
    check_cost(filter_height * filter_width * sums.size, MAX_TAP_PRODUCTS,
               f"products of {filter_height * filter_width} filter taps", ctx.name)
    rows_per_chunk = max(1, MULTIPLY_ADDS_PER_CHUNK // max(1, filter_width * sums.size))
    for top in range(0, filter_height, rows_per_chunk):
        checkpoint()
        rows = slice(top, top + rows_per_chunk)
        sums += np.einsum("bhwcrf,rfcm->bhwcm", cells[..., rows, :], taps[rows], dtype=x.dtype)
    # The channels counted, not -1: an empty sums has no size to divide.
    return sums.reshape(*sums.shape[:3], sums.shape[3] * sums.shape[4])


def pad_input(ctx: OperationContext, x: np.ndarray, geometry: Geometry) -> np.ndarray:
    """The NHWC ``x`` padded with zeros as ``geometry`` says."""
    check_shape((x.shape[0], x.shape[1] + geometry.top + geometry.bottom,
                 x.shape[2] + geometry.left + geometry.right, x.shape[3]), x.itemsize,
                f"{ctx.name}, its padded input")
    return pad_spatial(x, geometry.top, geometry.bottom, geometry.left, geometry.right)


def output_stage(ctx: OperationContext):
    """``finish(sums, bias, activation)``: the output from the sums of products, the bias
    and the fused activation, in the output's type."""
    inp, filt, out = ctx.inputs[INPUT], ctx.inputs[FILTER], ctx.outputs[0]
    if inp.type not in QUANT8_ASYMM_TENSORS:
        dtype = np.float16 if inp.type == F16 else np.float32

        def finish_float(sums, bias, activation):     # sums: a fresh float32 array
            sums += bias.astype(np.float32)
            low, high = activation_bounds(activation)
            if low != -np.inf or high != np.inf:
                np.clip(sums, low, high, out=sums)
            return sums.astype(dtype, copy=False)
        return finish_float
    filter_scales = (filt.channelQuant.scales if filt.type == PER_CHANNEL else (filt.scale,))
    significands, exponents = (np.array(column, np.int64) for column in zip(*(
        quantize_multiplier(product_scale(inp.scale, scale) / out.scale, ctx.name)
        for scale in filter_scales)))

    def finish_quantized(sums, bias, activation):
        accumulator = saturate_int32(sums.astype(np.int64) + bias)
        scaled = multiply_by_quantized_multiplier(accumulator, significands, exponents)
        low, high = quantized_activation_range(activation, out.scale, out.zeroPoint, out.type)
        return np.clip(scaled + out.zeroPoint, low, high).astype(STORAGE_DTYPE[out.type])
    return finish_quantized


def offsets(ctx: OperationContext) -> tuple[type, int, int]:
    """The dtype sums are computed in, and the zero points of the input and filter. Sums
    of integer products in double precision are exact (far below 2**53) and use BLAS."""
    inp, filt = ctx.inputs[INPUT], ctx.inputs[FILTER]
    if inp.type not in QUANT8_ASYMM_TENSORS:
        return np.float32, 0, 0
    return np.float64, inp.zeroPoint, 0 if filt.type == PER_CHANNEL else filt.zeroPoint


def shifted_input(x: np.ndarray, dtype: type, offset: int) -> np.ndarray:
    """The input in the dtype of the sums, less its zero point: padding it with zeros then
    pads with the zero point, as the reference's sums skip the padding."""
    return x.astype(dtype) - offset if offset else x.astype(dtype, copy=False)


def build(ctx: OperationContext) -> Kernel:
    form = form_of(ctx, FORMS[ctx.type])
    static = read_parameters(ctx, form)
    dtype, input_offset, filter_offset = offsets(ctx)
    finish = output_stage(ctx)
    w_info = ctx.inputs[FILTER]
    # One kernel structure per operation: a depthwise window holds a single channel.
    prepare, convolve = ((depthwise_filter, accumulate_taps) if ctx.type == DEPTHWISE else
                         (filter_matrix, multiply_windows))
    const_filters = (None if static is None or w_info.value is None else
                     prepare(w_info.value, static.multiplier, dtype, filter_offset))

    def kernel(*inputs):
        x, w, b = inputs[:3]
        params = static or read_parameters(ctx, form, inputs)
        nhwc = to_nhwc(x, params.nchw)
        check_sizes(ctx, nhwc, w, b)
        output_channels(ctx, params, nhwc.shape[3], w.shape, b.shape)
        geometry = window_geometry(ctx, params, nhwc.shape[1], nhwc.shape[2], w.shape[1], w.shape[2])
        filters = (const_filters if const_filters is not None else
                   prepare(w, params.multiplier, dtype, filter_offset))
        sums = convolve(ctx, shifted_input(nhwc, dtype, input_offset), filters, geometry,
                        w.shape[1], w.shape[2], params.stride, params.dilation)
        return (from_nhwc(finish(sums, b, params.activation), params.nchw),)
    return kernel


#: Each operation's forms: implicit and explicit padding, each without and with the layout
#: flag and (CONV_2D, DEPTHWISE_CONV_2D) the dilation factors; GROUPED_CONV_2D always has
#: the flag.
FORMS = {
    CONV: tuple(make_form(3, explicit, None, optional)
                for explicit in (False, True) for optional in (0, 1, 3)),
    DEPTHWISE: tuple(make_form(3, explicit, DEPTH_MULTIPLIER, optional)
                     for explicit in (False, True) for optional in (0, 1, 3)),
    GROUPED: tuple(make_form(3, explicit, GROUPS, 1) for explicit in (False, True)),
}


# --- examples ---------------------------------------------------------------------------

#: The type families the examples cycle through: (input type, filter type, input zero
#: point, filter zero point); float32, float16, and both quant8 types with a filter of
#: their own type and with a per-channel filter.
EXAMPLE_TYPES = ((F32, F32, 0, 0), (Q8, Q8, 128, 120), (F16, F16, 0, 0), (QS8, PER_CHANNEL, 1, 0),
                 (Q8, PER_CHANNEL, 100, 0), (QS8, QS8, -3, 2))


def examples(operation: int, forms: Sequence[Form], filter_dims: tuple[int, ...],
             multiplier: int = 1, leading: Sequence[ExampleOperand] = ()) -> tuple[Example, ...]:
    """Examples of every form and type family, cycling through both, over a 3x3 input of 2
    channels and a 2x2 filter of 2 output channels: NCHW in every other example whose form
    has the flag, the padding SAME or 1 all round, strides and dilation factors 1, ReLU.
    ``leading``: the operands before the padding of a form that has some (the output shape
    of TRANSPOSE_CONV_2D)."""
    examples = []
    for k in range(max(len(forms), len(EXAMPLE_TYPES))):
        form = forms[k % len(forms)]
        in_type, filter_type, in_zero, filter_zero = EXAMPLE_TYPES[k % len(EXAMPLE_TYPES)]
        quantized, nchw = in_type not in (F32, F16), form.layout is not None and k % 2 == 1
        channel_quant = (SymmPerChannelQuantParams([0.25, 0.5], CHANNEL_DIM.get(operation, 0))
                         if filter_type == PER_CHANNEL else None)
        filter_values = np.arange(np.prod(filter_dims)).reshape(filter_dims) % 7 - 3 + filter_zero
        tensors = (ExampleOperand(in_type, (1, 2, 3, 3) if nchw else (1, 3, 3, 2),
                                  scale=0.5 * quantized, zero_point=in_zero),
                   ExampleOperand(filter_type, filter_dims, constant=filter_values.tolist(),
                                  scale=0.25 * (quantized and channel_quant is None),
                                  zero_point=filter_zero, channel_quant=channel_quant),
                   ExampleOperand(I32 if quantized else in_type, (2,), constant=[4, -4],
                                  scale=0.125 * (quantized and channel_quant is None)))
        values = {**{i: 1 for i in form.padding}, **{i: 1 for i in form.stride},
                  **{i: 1 for i in form.dilation or ()}, form.activation: 1}
        if form.multiplier is not None:
            values[form.multiplier] = multiplier
        if form.layout is not None:
            values[form.layout] = nchw
        form_leading = tuple(leading) if form.padding[0] > form.first else ()
        parameters = tuple(ExampleOperand(T.BOOL if i == form.layout else T.INT32, constant=values[i])
                           for i in range(form.padding[0], form.first + len(form.parameters)))
        examples.append(Example(inputs=(*tensors, *form_leading, *parameters),
                                outputs=((in_type, 1.0 * quantized, in_zero),)))
    return tuple(examples)


EXAMPLES = {CONV: examples(CONV, FORMS[CONV], (2, 2, 2, 2)),
            DEPTHWISE: examples(DEPTHWISE, FORMS[DEPTHWISE], (1, 2, 2, 2)),
            GROUPED: examples(GROUPED, FORMS[GROUPED], (2, 2, 2, 1), multiplier=2)}

# --- registration -----------------------------------------------------------------------

for _operation in (CONV, DEPTHWISE, GROUPED):
    register(OperationDef(_operation, signatures(FORMS[_operation]), infer_shapes, build,
                          check_convolution, EXAMPLES[_operation],
                          zero_sized_inputs=_operation != GROUPED))
