"""AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D: a window of filter_height x filter_width
cells, moved by the strides over the height and width of a 4-D input, reduced channel by
channel to its average, its maximum or its root mean square; then a fused activation.

Inputs: the tensor [batches, height, width, channels] (NCHW when the optional trailing
layout flag is true), then either an implicit padding scheme (SAME or VALID) or the
explicit padding (left, right, top, bottom); the stride width and height, the filter width
and height, the fused activation. As in the reference, only the cells of a window that lie
inside the input count: padding is never averaged in, and every window must reach the
input (each padding is smaller than the filter). Quantized outputs have the input's scale
and zero point, so the average of the stored values is the stored average, rounded to the
nearest integer (halves away from zero) in integer arithmetic as the reference's kernels
round; the activation clamps in the quantized domain. float16 is computed in single
precision and rounded once. L2_POOL_2D takes float tensors only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from ..limits import check_shape
from ._spatial import (LAYOUT, PaddingScheme, from_nhwc, implicit_padding, layout_shape, nhwc_shape,
                       output_size, pad_spatial, to_nhwc, windows)
from .common import (ACTIVATION, QUANT8_ASYMM_TENSORS, activation_bounds, check_quant_params,
                     check_same_quantization, declared_shape, quantized_activation_range)
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Example, ExampleOperand, Operand, Range, Signature, same_as, scalar, tensor

INPUT = 0
FLOAT_TENSORS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
POSITIVE, NON_NEGATIVE = Range(low=0, low_exclusive=True), Range(low=0)

_WINDOW = (scalar(T.INT32, POSITIVE, "stride width"), scalar(T.INT32, POSITIVE, "stride height"),
           scalar(T.INT32, POSITIVE, "filter width"), scalar(T.INT32, POSITIVE, "filter height"),
           ACTIVATION)
IMPLICIT = (scalar(T.INT32, frozenset(PaddingScheme), "padding scheme"),) + _WINDOW
EXPLICIT = tuple(scalar(T.INT32, NON_NEGATIVE, f"padding {side}")
                 for side in ("left", "right", "top", "bottom")) + _WINDOW
#: The scalar inputs (1, 2, ...) of each input count: implicit or explicit padding, with or
#: without the layout flag.
SCALARS: dict[int, tuple[Operand, ...]] = {1 + len(params + layout): params + layout
                                          for params in (IMPLICIT, EXPLICIT)
                                          for layout in ((), (LAYOUT,))}


def signatures(types: Sequence[T]) -> tuple[Signature, ...]:
    return tuple(Signature(inputs=(tensor(types, rank=(4, 4)), *params), outputs=(same_as(INPUT),))
                 for params in SCALARS.values())


@dataclass(frozen=True)
class Parameters:
    """The scalar inputs of one pooling operation, (height, width) pairs."""
    stride: tuple[int, int]
    filter: tuple[int, int]
    activation: int
    nchw: bool
    scheme: Optional[int]                                 # implicit padding, or None
    padding: tuple[tuple[int, int], tuple[int, int]]      # explicit (head, tail) per dimension


def parameters(values: Sequence) -> Parameters:
    """The scalar inputs' values (inputs 1, 2, ... in HAL order) as Parameters."""
    if len(values) >= len(EXPLICIT):
        left, right, top, bottom, *rest = values
        scheme, padding = None, ((top, bottom), (left, right))
    else:
        scheme, *rest = values
        padding = ((0, 0), (0, 0))
    stride_width, stride_height, filter_width, filter_height, activation, *layout = rest
    return Parameters((stride_height, stride_width), (filter_height, filter_width), activation,
                      bool(layout and layout[0]), scheme, padding)


def constant_parameters(ctx: OperationContext) -> Optional[Parameters]:
    values = [ctx.scalar(i) for i in range(1, len(ctx.inputs))]
    return None if None in values else parameters(values)


def run_time_parameters(ctx: OperationContext, inputs: Sequence[np.ndarray]) -> Parameters:
    """The Parameters from the values of an execution; those that were not constants are
    checked against their signature here (validation checked the constants)."""
    return parameters([ctx.run_scalar(i, inputs, spec)
                       for i, spec in enumerate(SCALARS[len(ctx.inputs)], start=1)])


def _input_of(ctx: OperationContext, name: str) -> str:
    """Names a scalar input in messages: 'input 8 (filter height)'."""
    names = [spec.name for spec in SCALARS[len(ctx.inputs)]]
    return f"input {names.index(name) + 1} ({name})"


def dimension(ctx: OperationContext, p: Parameters, axis: int, size: int) -> tuple[int, int, int]:
    """(head padding, tail padding, output size) of spatial axis 0 (height) or 1 (width) of
    an input ``size`` long (0: unknown, giving an unknown output size)."""
    what = ("height", "width")[axis]
    stride, filter_size = p.stride[axis], p.filter[axis]
    head, tail = (p.padding[axis] if p.scheme is None else
                  implicit_padding(size, stride, filter_size, 1, p.scheme))
    # A window wholly in the padding would average no cell at all.
    check(head < filter_size and tail < filter_size,
          f"{ctx.name}: {what} padding ({head}, {tail}) must be smaller than the "
          f"{_input_of(ctx, f'filter {what}')} {filter_size}")
    out = output_size(size, filter_size, stride, 1, head, tail)
    check(size == 0 or out > 0,
          f"{ctx.name}: {_input_of(ctx, f'filter {what}')} {filter_size} is larger than the "
          f"padded {what} {size + head + tail} of input 0")
    return head, tail, out


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    p, shape = constant_parameters(ctx), shapes[INPUT]
    if p is None or shape is None:
        return [(0, 0, 0, 0) if shape is None else (shape[0], 0, 0, 0)]
    batches, height, width, channels = nhwc_shape(shape, p.nchw)
    out_height, out_width = dimension(ctx, p, 0, height)[2], dimension(ctx, p, 1, width)[2]
    return [layout_shape(batches, out_height, out_width, channels, p.nchw)]


def check_pooling(ctx: OperationContext) -> None:
    inp, out = ctx.inputs[INPUT], ctx.outputs[0]
    if inp.type in QUANT8_ASYMM_TENSORS:
        check_quant_params(ctx, inp, "input 0")
        check_same_quantization(ctx, out, inp, "output 0", "input 0")
    infer_shapes(ctx, [declared_shape(inp)])


# --- kernels -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Plan:
    """What a kernel needs for one input shape: made in build when the shape and the
    parameters are constants, else for each execution."""
    shape: tuple[int, ...]                  # the input's NHWC shape
    padding: tuple[int, int, int, int]      # top, bottom, left, right
    stride: tuple[int, int]
    filter: tuple[int, int]
    counts: np.ndarray                      # [out_height, out_width, 1]: in-bounds cells
    clamp: tuple                            # the activation's (low, high), in the output's domain


def make_plan(ctx: OperationContext, p: Parameters, shape: tuple[int, ...]) -> Plan:
    batches, height, width, channels = shape
    check(height > 0 and width > 0 and channels > 0,
          f"{ctx.name}: input 0 has shape {list(shape)} (NHWC): only its batches may be 0")
    top, bottom, out_height = dimension(ctx, p, 0, height)
    left, right, out_width = dimension(ctx, p, 1, width)
    # The windows the kernels reduce (row windows, then column windows of the row results)
    # are strided views, bounded as values of 4-byte cells would be: it bounds their time.
    check_shape((batches, height, out_width, channels, p.filter[1]), 4,
                f"{ctx.name}, the row windows of input 0")
    check_shape((batches, out_height, out_width, channels, p.filter[0]), 4,
                f"{ctx.name}, the column windows of input 0")
    out = ctx.outputs[0]
    clamp = (quantized_activation_range(p.activation, out.scale, out.zeroPoint, out.type)
             if out.type in QUANT8_ASYMM_TENSORS else activation_bounds(p.activation))
    return Plan(shape, (top, bottom, left, right), p.stride, p.filter,
                np.multiply.outer(_in_bounds(out_height, p.stride[0], p.filter[0], top, height),
                                  _in_bounds(out_width, p.stride[1], p.filter[1], left, width))[..., None],
                clamp)


def _in_bounds(out_size: int, stride: int, filter_size: int, head: int, size: int) -> np.ndarray:
    """The cells inside the input of each window along one axis."""
    starts = np.arange(out_size, dtype=np.int64) * stride - head
    return np.minimum(starts + filter_size, size) - np.maximum(starts, 0)


Reduce = Callable[[np.ndarray, Plan], np.ndarray]     # NHWC input -> NHWC result


def _pool(x: np.ndarray, plan: Plan, reduce: Callable, fill) -> np.ndarray:
    """``reduce`` (np.sum, np.max) over every window of ``x`` padded with ``fill``. Both
    are separable: each row of a window is reduced, then the rows, so that the work grows
    with the filter's height plus its width rather than their product (filters may be
    far larger than their input, most of each window padding)."""
    top, bottom, left, right = plan.padding
    (filter_height, filter_width), (stride_height, stride_width) = plan.filter, plan.stride
    rows = reduce(windows(pad_spatial(x, 0, 0, left, right, fill), 1, filter_width, 1, stride_width),
                  axis=(4, 5))
    return reduce(windows(pad_spatial(rows, top, bottom, 0, 0, fill), filter_height, 1, stride_height, 1),
                  axis=(4, 5))


def _mean(cells: np.ndarray, plan: Plan) -> np.ndarray:
    """The mean of the in-bounds cells of each window, summed in double precision (the
    reference's single-precision running sum depends on its order; this is the mean
    rounded once) and rounded to single precision."""
    return (_pool(cells.astype(np.float64), plan, np.sum, 0) / plan.counts).astype(np.float32)


def _average_float(x: np.ndarray, plan: Plan) -> np.ndarray:
    return np.clip(_mean(x, plan), *plan.clamp).astype(x.dtype, copy=False)


def _average_quantized(x: np.ndarray, plan: Plan) -> np.ndarray:
    sums = _pool(x.astype(np.int64), plan, np.sum, 0)
    # Integer division rounding the magnitude to nearest, halves up: halves away from zero.
    averages = np.sign(sums) * ((np.abs(sums) + plan.counts // 2) // plan.counts)
    return np.clip(averages, *plan.clamp).astype(x.dtype)


def _l2(x: np.ndarray, plan: Plan) -> np.ndarray:
    x32 = x.astype(np.float32)
    return np.clip(np.sqrt(_mean(x32 * x32, plan)), *plan.clamp).astype(x.dtype, copy=False)


def _max(x: np.ndarray, plan: Plan) -> np.ndarray:
    # The padding is the lowest value, so that only in-bounds cells can be a window's maximum.
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    return np.clip(_pool(x, plan, np.max, lowest), *plan.clamp).astype(x.dtype, copy=False)


def _builder(float_reduce: Reduce, quantized_reduce: Reduce) -> Callable[[OperationContext], Kernel]:
    def build(ctx: OperationContext) -> Kernel:
        reduce = quantized_reduce if ctx.inputs[INPUT].type in QUANT8_ASYMM_TENSORS else float_reduce
        known = constant_parameters(ctx)
        declared = tuple(ctx.inputs[INPUT].dimensions)
        fixed = (make_plan(ctx, known, nhwc_shape(declared, known.nchw))
                 if known is not None and len(declared) == 4 and all(declared) else None)

        def kernel(x, *scalars):
            p = known if known is not None else run_time_parameters(ctx, (x, *scalars))
            shape = nhwc_shape(x.shape, p.nchw)
            plan = fixed if fixed is not None and fixed.shape == shape else make_plan(ctx, p, shape)
            return (from_nhwc(reduce(to_nhwc(x, p.nchw), plan), p.nchw),)
        return kernel
    return build


# --- examples: every input count, every type, both layouts --------------------------------

def _example(operand_type: T, explicit: bool, nchw: Optional[bool]) -> Example:
    """A 2x2 filter with stride 2 over a [1, 3, 4, 2] input (NCHW: [1, 2, 3, 4]), padded
    to cover it: SAME, or one cell at the bottom."""
    quant = {T.TENSOR_QUANT8_ASYMM: (0.5, 128), T.TENSOR_QUANT8_ASYMM_SIGNED: (0.25, -3)}
    scale, zero_point = quant.get(operand_type, (0.0, 0))
    padding = (0, 0, 0, 1) if explicit else (PaddingScheme.SAME,)
    scalars = (*padding, 2, 2, 2, 2, 1) + (() if nchw is None else (nchw,))
    return Example(inputs=(ExampleOperand(operand_type, (1, 2, 3, 4) if nchw else (1, 3, 4, 2),
                                          scale=scale, zero_point=zero_point),
                           *(ExampleOperand(T.BOOL if isinstance(v, bool) else T.INT32, constant=v)
                             for v in scalars)),
                   outputs=((operand_type, scale, zero_point),))


def _examples(types: Sequence[T]) -> tuple[Example, ...]:
    """The four input counts, each type in turn, NHWC and NCHW."""
    variants = ((False, None), (False, True), (True, False), (True, True))
    return tuple(_example(types[k % len(types)], explicit, nchw)
                 for k, (explicit, nchw) in enumerate(variants))


ALL_TYPES = FLOAT_TENSORS + QUANT8_ASYMM_TENSORS
register(OperationDef(OperationType.AVERAGE_POOL_2D, signatures(ALL_TYPES), infer_shapes,
                      _builder(_average_float, _average_quantized), check_pooling,
                      _examples(ALL_TYPES), zero_sized_inputs=True))
register(OperationDef(OperationType.MAX_POOL_2D, signatures(ALL_TYPES), infer_shapes,
                      _builder(_max, _max), check_pooling, _examples(ALL_TYPES[::-1]),
                      zero_sized_inputs=True))
register(OperationDef(OperationType.L2_POOL_2D, signatures(FLOAT_TENSORS), infer_shapes,
                      _builder(_l2, _l2), check_pooling, _examples(FLOAT_TENSORS),
                      zero_sized_inputs=True))
