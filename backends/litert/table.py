"""The mapping of HAL operations to LiteRT builtins: one table, one entry per operation.

An entry names the TFLite builtin, the types of input 0 it expresses, which HAL inputs
become the operator's input tensors (in TFLite's order) and which are parameters read as
constants into its options (these, and every scalar input), what else of the parameters it
can express (``accepts``), and which parameters it expresses whatever value validation
lets them take (``any_value``). An operation whose entry does not fit lowers as a custom
``lower`` says (several operators: NCHW layouts through transposes, explicit padding
through PAD).

A parameter must be a constant, or else a *runtime scalar*: an input of the main subgraph
at a position the entry's ``any_value`` names. The engine then specialises the model to
each request's values (the inputs made constants, engine.py), so that the converter only
ever reads constants; ``accepts`` reads None at such a position and must hold for any
value there. A parameter computed by an operation, or an input of a referenced subgraph
(an IF branch or WHILE body reading a value its caller passes), is never specialised.

``supports`` answers getSupportedOperations_1_3 from the table alone: an operation is
supported exactly when its entry accepts its operand types and parameters, so the
converter never meets one it cannot express. IF and WHILE lower to LiteRT's own IF and
WHILE builtins over subgraphs (never unrolled), and are supported when every operation
of the subgraphs they run is.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Collection, Optional, Sequence

import numpy as np
from ai_edge_litert import schema_py_generated as S

from driver.executor.plan import ModelAnalysis
from driver.hal.enums import CONTROL_FLOW_OPERATION_TYPES, SCALAR_OPERAND_TYPES, OperandLifeTime, \
    OperandType as T, OperationType as OP
from driver.hal.structs import Model, SymmPerChannelQuantParams
from driver.operands import operation_context, subgraph_infos
from driver.operations import convolutions, pooling, transpose_conv
from driver.operations._spatial import PaddingScheme, implicit_padding
from driver.operations.registry import OperationContext, lookup

from .convert import TENSOR_TYPE, OpLowering, Unsupported, options
from .worker import KERNEL_SETS

B, O = S.BuiltinOperator, S

F = frozenset({T.TENSOR_FLOAT32, T.TENSOR_FLOAT16})
Q = frozenset({T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED})
I = frozenset({T.TENSOR_INT32})
BOOL = frozenset({T.TENSOR_BOOL8})
ANY = F | Q | I | BOOL

Shapes = Sequence[Optional[tuple[int, ...]]]


def always(ctx: OperationContext, shapes: Shapes) -> bool:
    return True


Positions = Callable[[OperationContext], Collection[int]]


def at(*positions: int) -> Positions:
    """The inputs at ``positions`` (a negative one counts from the end)."""
    return lambda ctx: frozenset(p if p >= 0 else len(ctx.inputs) + p for p in positions)


def every_input(ctx: OperationContext) -> Collection[int]:
    """Every input (of those, the parameters: an entry expressing any value of each)."""
    return range(len(ctx.inputs))


@dataclass(frozen=True)
class Entry:
    builtin: int
    types: frozenset                                 # the types of input 0 it expresses
    tensors: tuple[int, ...] = (0,)                  # HAL inputs passed as tensors, in order
    params: tuple[int, ...] = ()                     # HAL inputs read as constants
    options: Optional[Callable[[OpLowering], tuple]] = None
    accepts: Callable[[OperationContext, Shapes], bool] = always
    lower: Optional[Callable[[OpLowering, "Entry"], None]] = None
    #: a one-element result is [1] in the HAL and a scalar in LiteRT
    rank_one: bool = False
    #: the kernel sets (OpResolverType names) that have the builtin
    kernel_sets: frozenset = frozenset(KERNEL_SETS.values())
    #: the parameters it expresses whatever value validation lets them take: these may be
    #: runtime scalars (see the module docstring)
    any_value: Positions = at()


# --- parameters the converter can express ------------------------------------------------

def same_quantization(ctx: OperationContext, shapes: Shapes) -> bool:
    """LiteRT's kernel reads stored values as they are: every operand quantized alike."""
    return len({(info.scale, info.zeroPoint) for info in (*ctx.inputs, *ctx.outputs)
                if info.type in Q}) <= 1


def same_input_quantization(ctx: OperationContext, shapes: Shapes) -> bool:
    """LiteRT's quantized comparisons rescale inputs of different quantizations with less
    precision than the HAL's exact comparison of real values: only alike inputs."""
    first, second = ctx.inputs[0], ctx.inputs[1]
    return first.type not in Q or (first.scale, first.zeroPoint) == (second.scale, second.zeroPoint)


def no_activation_for_int(ctx: OperationContext, shapes: Shapes) -> bool:
    """TENSOR_INT32 without activation (a runtime value, None, can only be NONE there:
    validation refuses any other)."""
    return ctx.inputs[0].type != T.TENSOR_INT32 or ctx.scalar(2) in (0, None)


def symmetric_filter(ctx: OperationContext, shapes: Shapes) -> bool:
    """LiteRT's int8 kernels take filters with zero point 0 only."""
    data, weights = ctx.inputs[0], ctx.inputs[1]
    return (weights.channelQuant is not None or data.type != T.TENSOR_QUANT8_ASYMM_SIGNED
            or weights.zeroPoint == 0)


# --- options --------------------------------------------------------------------------------

def activation_at(position: int, cls) -> Callable[[OpLowering], tuple]:
    return lambda op: options(cls, fusedActivationFunction=op.scalar(position))


# --- lowering other than one operator ---------------------------------------------------------

def concatenation(op: OpLowering, entry: Entry) -> None:
    count = len(op.ctx.inputs) - 1
    op.emit(B.CONCATENATION, [op.input(i) for i in range(count)], [op.output()],
            options(O.ConcatenationOptionsT, axis=op.scalar(count)))


def concatenation_accepts(ctx: OperationContext, shapes: Shapes) -> bool:
    """LiteRT requantizes the inputs of a uint8 concatenation, not those of an int8 one."""
    return ctx.inputs[0].type != T.TENSOR_QUANT8_ASYMM_SIGNED or same_quantization(ctx, shapes)


def channel_shuffle(op: OpLowering, entry: Entry) -> None:
    """[..., groups * k, ...] -> [..., groups, k, ...], the two swapped, and back."""
    shape, groups = op.shape(0), op.scalar(1)
    axis = op.scalar(2) % len(shape)
    split = [*shape[:axis], groups, shape[axis] // groups, *shape[axis + 1:]]
    perm = list(range(len(split)))
    perm[axis], perm[axis + 1] = axis + 1, axis
    grouped, swapped = op.temporary(op.ctx.inputs[0], split), op.temporary(op.ctx.inputs[0])
    op.emit(B.RESHAPE, [op.input(0), op.constant(np.array(split, np.int32))], [grouped])
    op.emit(B.TRANSPOSE, [grouped, op.constant(np.array(perm, np.int32))], [swapped])
    op.emit(B.RESHAPE, [swapped, op.constant(np.array(shape, np.int32))], [op.output()])


def known_shape(ctx: OperationContext, shapes: Shapes) -> bool:
    return shapes[0] is not None and 0 not in shapes[0]


def on_last_axis(builtin: int, axis_at: int, build_options=None) -> Callable[[OpLowering, Entry], None]:
    """An operation LiteRT computes along the last axis only, along the HAL's ``axis``
    (input ``axis_at``, optional: the last by default): the axis swapped with the last
    before and after."""
    def lower(op: OpLowering, entry: Entry) -> None:
        built = build_options(op) if build_options is not None else None
        rank = len(op.shape(0)) if op.shape(0) is not None else None
        axis = op.scalar(axis_at) if op.has(axis_at) else -1
        if axis == -1 or axis == (rank or 0) - 1:
            op.emit(builtin, [op.input(0)], [op.output()], built)
            return
        perm = list(range(rank))
        perm[axis % rank], perm[-1] = rank - 1, axis % rank
        perm_tensor = op.constant(np.array(perm, np.int32))
        moved, computed = op.temporary(op.ctx.inputs[0]), op.temporary(op.ctx.outputs[0])
        op.emit(B.TRANSPOSE, [op.input(0), perm_tensor], [moved])
        op.emit(builtin, [moved], [computed], built)
        op.emit(B.TRANSPOSE, [computed, perm_tensor], [op.output()])
    return lower


def axis_known(position: int) -> Callable[[OperationContext, Shapes], bool]:
    """The axis at ``position`` can be moved last: it is the last, or the rank is known."""
    def accepts(ctx: OperationContext, shapes: Shapes) -> bool:
        return position >= len(ctx.inputs) or ctx.scalar(position) == -1 or shapes[0] is not None
    return accepts


def _axis_tensor(op: OpLowering, position: int, shape: Sequence[int] = (1,)) -> int:
    return op.constant(np.full(shape, op.scalar(position), np.int32))


def split(op: OpLowering, entry: Entry) -> None:
    op.emit(B.SPLIT, [_axis_tensor(op, 1, ()), op.input(0)],
            [op.output(k) for k in range(len(op.ctx.outputs))],
            options(O.SplitOptionsT, numSplits=op.scalar(2)))


def gather(op: OpLowering, entry: Entry) -> None:
    op.emit(B.GATHER, [op.input(0), op.input(2)], [op.output()],
            options(O.GatherOptionsT, axis=op.scalar(1), batchDims=0))


def expand_dims(op: OpLowering, entry: Entry) -> None:
    op.emit(B.EXPAND_DIMS, [op.input(0), _axis_tensor(op, 1, ())], [op.output()])


def arg_reduce(op: OpLowering, entry: Entry) -> None:
    cls = O.ArgMaxOptionsT if entry.builtin == B.ARG_MAX else O.ArgMinOptionsT
    op.emit(entry.builtin, [op.input(0), _axis_tensor(op, 1)], [op.output()],
            options(cls, outputType=S.TensorType.INT32))


def transpose(op: OpLowering, entry: Entry) -> None:
    perm = (op.input(1) if op.has(1)
            else op.constant(np.arange(len(op.shape(0)))[::-1].astype(np.int32)))
    op.emit(B.TRANSPOSE, [op.input(0), perm], [op.output()])


def transpose_accepts(ctx: OperationContext, shapes: Shapes) -> bool:
    return len(ctx.inputs) > 1 and not ctx.inputs[1].is_omitted or shapes[0] is not None


def squeeze(op: OpLowering, entry: Entry) -> None:
    dims = [int(d) for d in op.value(1).reshape(-1)] if op.has(1) else []
    op.emit(B.SQUEEZE, [op.input(0)], [op.output()], options(O.SqueezeOptionsT, squeezeDims=dims))


def pad_v2(op: OpLowering, entry: Entry) -> None:
    value = op.constant(np.array(op.scalar(2)), like=op.ctx.inputs[0])
    op.emit(B.PADV2, [op.input(0), op.input(1), value], [op.output()])


def reducer(op: OpLowering, entry: Entry) -> None:
    op.emit(entry.builtin, [op.input(0), op.input(1)], [op.output()],
            options(O.ReducerOptionsT, keepDims=op.scalar(2) > 0))    # MEAN's INT32: when positive


def space_depth(op: OpLowering, entry: Entry) -> None:
    nchw = op.flag(2)
    out, after = op.nhwc_output(0, nchw)
    cls = O.SpaceToDepthOptionsT if entry.builtin == B.SPACE_TO_DEPTH else O.DepthToSpaceOptionsT
    op.emit(entry.builtin, [op.nhwc_input(0, nchw)], [out], options(cls, blockSize=op.scalar(1)))
    after()


def batch_to_space(op: OpLowering, entry: Entry) -> None:
    nchw = op.flag(2)
    out, after = op.nhwc_output(0, nchw)
    crops = op.constant(np.zeros((2, 2), np.int32))
    op.emit(B.BATCH_TO_SPACE_ND, [op.nhwc_input(0, nchw), op.input(1), crops], [out])
    after()


def space_to_batch(op: OpLowering, entry: Entry) -> None:
    nchw = op.flag(3)
    out, after = op.nhwc_output(0, nchw)
    op.emit(B.SPACE_TO_BATCH_ND, [op.nhwc_input(0, nchw), op.input(1), op.input(2)], [out])
    after()


# 2-D windows ----------------------------------------------------------------------------------

_TFLITE_PADDING = {PaddingScheme.SAME: S.Padding.SAME, PaddingScheme.VALID: S.Padding.VALID}


def _padded(op: OpLowering, tensor: int, padding, like) -> tuple[int, int]:
    """The NHWC input a convolution reads and LiteRT's padding code: an implicit scheme is
    LiteRT's own; explicit padding is a PAD ahead of a VALID window (the pad holds the zero
    point of a quantized input, as the HAL pads)."""
    if len(padding) == 1:
        return tensor, _TFLITE_PADDING[padding[0]]
    left, right, top, bottom = padding
    if not any(padding):
        return tensor, S.Padding.VALID
    pads = op.constant(np.array([[0, 0], [top, bottom], [left, right], [0, 0]], np.int32))
    padded = op.temporary(like)
    op.emit(B.PAD, [tensor, pads], [padded])
    return padded, S.Padding.VALID


def _signed(info):
    """The int8 form of a uint8 operand (the same real values, zero point shifted)."""
    return replace(info, type=T.TENSOR_QUANT8_ASYMM_SIGNED, zeroPoint=info.zeroPoint - 128)


@dataclass
class _Windowed:
    """The NHWC tensors a convolution operator reads and writes, and what to emit after it.
    A uint8 input with a per-channel filter, which LiteRT only takes with int8 inputs, is
    requantized to int8 (exactly: the zero point moves by 128), and its output back."""
    source: int
    out: int
    after: Callable[[], None]
    data: object                # the info of what ``source`` holds
    result: object              # the info of what ``out`` holds


def _windowed(op: OpLowering, nchw: bool) -> _Windowed:
    data, result = op.ctx.inputs[0], op.ctx.outputs[0]
    source = op.nhwc_input(0, nchw)
    out, after = op.nhwc_output(0, nchw)
    if data.type != T.TENSOR_QUANT8_ASYMM or op.ctx.inputs[1].channelQuant is None:
        return _Windowed(source, out, after, data, result)
    signed = op.temporary(_signed(data))
    op.emit(B.QUANTIZE, [source], [signed])
    unsigned, signed_out = out, op.temporary(_signed(result))

    def requantized_after() -> None:
        op.emit(B.QUANTIZE, [signed_out], [unsigned])
        after()
    return _Windowed(signed, signed_out, requantized_after, _signed(data), _signed(result))


def convolution(op: OpLowering, entry: Entry) -> None:
    params = convolutions.read_parameters(op.ctx, convolutions.form_of(op.ctx, convolutions.FORMS[op.ctx.type]))
    io = _windowed(op, params.nchw)
    source, padding = _padded(op, io.source, params.padding, io.data)
    fields = dict(padding=padding, strideW=params.stride[0], strideH=params.stride[1],
                  dilationWFactor=params.dilation[0], dilationHFactor=params.dilation[1],
                  fusedActivationFunction=params.activation)
    if op.ctx.type == OP.DEPTHWISE_CONV_2D:
        built = options(O.DepthwiseConv2DOptionsT, depthMultiplier=params.multiplier, **fields)
    else:
        built = options(O.Conv2DOptionsT, **fields)
    op.emit(entry.builtin, [source, op.input(1), op.input(2)], [io.out], built)
    io.after()


def transpose_convolution(op: OpLowering, entry: Entry) -> None:
    """LiteRT's TRANSPOSE_CONV takes SAME or VALID padding and the output's shape: explicit
    padding is the VALID (uncropped) output with the padding cropped by a SLICE."""
    params = convolutions.read_parameters(op.ctx, convolutions.form_of(op.ctx, transpose_conv.FORMS))
    io = _windowed(op, params.nchw)
    fields = dict(strideW=params.stride[0], strideH=params.stride[1],
                  fusedActivationFunction=params.activation)
    weights, bias = op.input(1), op.input(2)
    if len(params.padding) == 1:
        shape = _nhwc(tuple(int(d) for d in op.value(transpose_conv.OUTPUT_SHAPE).reshape(-1)), params.nchw)
        op.emit(B.TRANSPOSE_CONV, [op.constant(np.array(shape, np.int32)), weights, io.source, bias],
                [io.out], options(O.TransposeConvOptionsT, padding=_TFLITE_PADDING[params.padding[0]], **fields))
    else:
        left, right, top, bottom = params.padding
        full = _uncropped_shape(op.shape(0), op.shape(1), params)
        uncropped = op.temporary(io.result, full)
        op.emit(B.TRANSPOSE_CONV, [op.constant(np.array(full, np.int32)), weights, io.source, bias],
                [uncropped], options(O.TransposeConvOptionsT, padding=S.Padding.VALID, **fields))
        begin = np.array([0, top, left, 0], np.int32)
        size = np.array([full[0], full[1] - top - bottom, full[2] - left - right, full[3]], np.int32)
        op.emit(B.SLICE, [uncropped, op.constant(begin), op.constant(size)], [io.out])
    io.after()


def _uncropped_shape(data_shape, filter_shape, params) -> tuple[int, ...]:
    """The NHWC output of a transposed convolution before its explicit padding is cropped
    (of an input and a filter whose shapes transpose_convolution_accepts found known)."""
    data = _nhwc(data_shape, params.nchw)
    (stride_width, stride_height), (_, filter_height, filter_width, _) = params.stride, filter_shape
    return (data[0], (data[1] - 1) * stride_height + filter_height,
            (data[2] - 1) * stride_width + filter_width, filter_shape[0])


def explicit_transpose_padding(ctx: OperationContext) -> bool:
    return len(convolutions.form_of(ctx, transpose_conv.FORMS).padding) == 4


def transpose_convolution_accepts(ctx: OperationContext, shapes: Shapes) -> bool:
    """Explicit padding: any parameters, the uncropped output sized from the input's and the
    filter's shapes known ahead; implicit padding: an output shape that fits the input by
    the scheme and strides, so known only from constant parameters."""
    if not symmetric_filter(ctx, shapes):
        return False
    if explicit_transpose_padding(ctx):
        return all(shape is not None and 0 not in shape for shape in shapes[:2])
    params = convolutions.read_parameters(ctx, convolutions.form_of(ctx, transpose_conv.FORMS))
    return params is not None and _output_fits_input(ctx, shapes, params)


def transpose_convolution_any_value(ctx: OperationContext) -> Collection[int]:
    return every_input(ctx) if explicit_transpose_padding(ctx) else ()


def _output_fits_input(ctx: OperationContext, shapes: Shapes, params) -> bool:
    """LiteRT refuses an output shape from which its padding scheme would not give back
    the input's height and width (the HAL takes any): the shapes must be known and fit."""
    output = ctx.inputs[transpose_conv.OUTPUT_SHAPE].value
    data, weights = _nhwc(shapes[0], params.nchw), shapes[1]
    if output is None or data is None or weights is None or 0 in data or 0 in weights:
        return False
    out = _nhwc(tuple(int(d) for d in output.reshape(-1)), params.nchw)
    (scheme,), strides = params.padding, (params.stride[1], params.stride[0])
    for axis, (stride, size) in enumerate(zip(strides, weights[1:3])):
        fitted = (-(-out[1 + axis] // stride) if scheme == PaddingScheme.SAME
                  else (out[1 + axis] - size + stride) // stride)
        if fitted != data[1 + axis]:
            return False
    return True


def grouped_convolution(op: OpLowering, entry: Entry) -> None:
    """One CONV_2D per group, over the input's channels split by SPLIT and the (constant)
    filter and bias split here, their results concatenated along the channels."""
    params = convolutions.read_parameters(op.ctx, convolutions.form_of(op.ctx, convolutions.FORMS[OP.GROUPED_CONV_2D]))
    data, weights, bias, result = op.ctx.inputs[0], op.ctx.inputs[1], op.ctx.inputs[2], op.ctx.outputs[0]
    groups = params.multiplier
    source, padding = _padded(op, op.nhwc_input(0, params.nchw), params.padding, data)
    parts = [op.temporary(data) for _ in range(groups)]
    op.emit(B.SPLIT, [op.constant(np.array(3, np.int32)), source], parts,
            options(O.SplitOptionsT, numSplits=groups))
    out, after = op.nhwc_output(0, params.nchw)
    per_group = weights.value.shape[0] // groups
    results = []
    for g, part in enumerate(parts):
        rows = slice(g * per_group, (g + 1) * per_group)
        results.append(op.temporary(result))
        op.emit(B.CONV_2D, [part, op.constant(weights.value[rows], _rows_of(weights, rows)),
                            op.constant(bias.value[rows], _rows_of(bias, rows))], [results[-1]],
                options(O.Conv2DOptionsT, padding=padding, strideW=params.stride[0],
                        strideH=params.stride[1], dilationWFactor=params.dilation[0],
                        dilationHFactor=params.dilation[1], fusedActivationFunction=params.activation))
    op.emit(B.CONCATENATION, results, [out], options(O.ConcatenationOptionsT, axis=3))
    after()


def _rows_of(info, rows: slice):
    """A constant's info for its rows ``rows`` (a per-channel quantization sliced too)."""
    quant = info.channelQuant
    return info if quant is None else replace(
        info, channelQuant=SymmPerChannelQuantParams(list(quant.scales[rows]), quant.channelDim))


def grouped_convolution_accepts(ctx: OperationContext, shapes: Shapes) -> bool:
    data, weights = ctx.inputs[0], ctx.inputs[1]
    return (symmetric_filter(ctx, shapes) and weights.is_constant and ctx.inputs[2].is_constant
            and not (data.type == T.TENSOR_QUANT8_ASYMM and weights.channelQuant is not None))


def pool(op: OpLowering, entry: Entry) -> None:
    params = pooling.constant_parameters(op.ctx)
    out, after = op.nhwc_output(0, params.nchw)
    padding = _pool_padding(params, _nhwc(op.shape(0), params.nchw))
    op.emit(entry.builtin, [op.nhwc_input(0, params.nchw)], [out], options(
        O.Pool2DOptionsT, padding=padding, strideW=params.stride[1], strideH=params.stride[0],
        filterWidth=params.filter[1], filterHeight=params.filter[0],
        fusedActivationFunction=params.activation))
    after()


def _nhwc(shape, nchw: bool):
    if shape is None or not nchw:
        return shape
    return (shape[0], shape[2], shape[3], shape[1])


def _pool_padding(params: pooling.Parameters, shape) -> Optional[int]:
    """LiteRT's padding for the pool's, when it has one: explicit padding only as VALID's
    (none) or SAME's for the input's known size (a PAD would enter the averages)."""
    if params.scheme is not None:
        return _TFLITE_PADDING[params.scheme]
    if params.padding == ((0, 0), (0, 0)):
        return S.Padding.VALID
    if shape is None or 0 in shape[1:3]:
        return None
    same = tuple(implicit_padding(shape[1 + axis], params.stride[axis], params.filter[axis], 1,
                                  PaddingScheme.SAME) for axis in range(2))
    return S.Padding.SAME if same == params.padding else None


def implicit_pool_padding(ctx: OperationContext) -> bool:
    return len(pooling.SCALARS[len(ctx.inputs)]) < len(pooling.EXPLICIT)


def pool_accepts(ctx: OperationContext, shapes: Shapes) -> bool:
    """An implicit padding scheme is LiteRT's own, whatever the window; an explicit padding
    only where it is VALID's or SAME's (so known only from constant parameters)."""
    if implicit_pool_padding(ctx):
        return True
    params = pooling.constant_parameters(ctx)
    return params is not None and _pool_padding(params, _nhwc(shapes[0], params.nchw)) is not None


def pool_any_value(ctx: OperationContext) -> Collection[int]:
    return every_input(ctx) if implicit_pool_padding(ctx) else ()


def resize(op: OpLowering, entry: Entry) -> None:
    nchw = op.flag(3)
    size = _resize_size(op.ctx, op.shape(0), nchw)
    out, after = op.nhwc_output(0, nchw)
    cls = O.ResizeBilinearOptionsT if entry.builtin == B.RESIZE_BILINEAR else O.ResizeNearestNeighborOptionsT
    op.emit(entry.builtin, [op.nhwc_input(0, nchw), op.constant(np.array(size, np.int32))], [out],
            options(cls, alignCorners=op.flag(4), halfPixelCenters=op.flag(5)))
    after()


def _resize_size(ctx: OperationContext, shape, nchw: bool) -> tuple[int, int]:
    """(height, width) of the output: TFLite's order, where the HAL gives width first (a
    scale, of an input whose size resize_accepts found known ahead)."""
    width, height = ctx.scalar(1), ctx.scalar(2)
    if ctx.inputs[1].type == T.INT32:
        return height, width
    shape = _nhwc(shape, nchw)
    return int(np.floor(shape[1] * np.float32(height))), int(np.floor(shape[2] * np.float32(width)))


def resize_accepts(ctx: OperationContext, shapes: Shapes) -> bool:
    """Any size; a scale needs the input's height and width known ahead (its every
    dimension but the batch, when the layout is a runtime value)."""
    if ctx.inputs[1].type == T.INT32:
        return True
    nchw = ctx.scalar(3) if len(ctx.inputs) > 3 else False
    spatial = (1, 2, 3) if nchw is None else (2, 3) if nchw else (1, 2)
    return shapes[0] is not None and all(shapes[0][axis] for axis in spatial)


# control flow -----------------------------------------------------------------------------

def if_(op: OpLowering, entry: Entry) -> None:
    then_index, else_index = op.subgraph(1), op.subgraph(2)
    op.emit(B.IF, [op.input(0), *(op.input(i) for i in range(3, len(op.ctx.inputs)))],
            [op.output(k) for k in range(len(op.ctx.outputs))],
            options(O.IfOptionsT, thenSubgraphIndex=then_index, elseSubgraphIndex=else_index))


def while_(op: OpLowering, entry: Entry) -> None:
    """The HAL's WHILE takes m outputs + k state-only + n invariant values and its body
    returns the first m + k; LiteRT's body returns every loop variable, so it runs a variant
    of the body that also returns its n invariant inputs unchanged."""
    data = range(2, len(op.ctx.inputs))
    carried = len(op.referenced(1).outputIndexes)
    invariant = len(data) - carried
    cond_index, body_index = op.subgraph(0), op.subgraph(1, passes_through=invariant)
    outputs = [op.output(k) for k in range(len(op.ctx.outputs))]
    outputs += [op.temporary(op.ctx.inputs[i]) for i in list(data)[len(outputs):]]
    op.emit(B.WHILE, [op.input(i) for i in data], outputs,
            options(O.WhileOptionsT, condSubgraphIndex=cond_index, bodySubgraphIndex=body_index))


# --- the table --------------------------------------------------------------------------------

def _binary(builtin, cls, types):
    return Entry(builtin, types, (0, 1), (2,), activation_at(2, cls), no_activation_for_int,
                 any_value=at(2))


def _reducer(builtin, types):
    return Entry(builtin, types, (0, 1), (2,), lower=reducer, rank_one=True, any_value=at(2))


TABLE: dict[OP, Entry] = {
    OP.ADD: _binary(B.ADD, O.AddOptionsT, F | Q | I),
    OP.SUB: _binary(B.SUB, O.SubOptionsT, F | Q | I),
    OP.MUL: _binary(B.MUL, O.MulOptionsT, F | Q | I),
    OP.DIV: _binary(B.DIV, O.DivOptionsT, F),
    OP.MAXIMUM: Entry(B.MAXIMUM, F | Q | I, (0, 1), accepts=same_quantization),
    OP.MINIMUM: Entry(B.MINIMUM, F | Q | I, (0, 1), accepts=same_quantization),
    OP.POW: Entry(B.POW, F, (0, 1)),
    OP.PRELU: Entry(B.PRELU, F, (0, 1)),
    OP.EQUAL: Entry(B.EQUAL, ANY, (0, 1), accepts=same_input_quantization),
    OP.NOT_EQUAL: Entry(B.NOT_EQUAL, ANY, (0, 1), accepts=same_input_quantization),
    OP.GREATER: Entry(B.GREATER, F | Q | I, (0, 1), accepts=same_input_quantization),
    OP.GREATER_EQUAL: Entry(B.GREATER_EQUAL, F | Q | I, (0, 1), accepts=same_input_quantization),
    OP.LESS: Entry(B.LESS, F | Q | I, (0, 1), accepts=same_input_quantization),
    OP.LESS_EQUAL: Entry(B.LESS_EQUAL, F | Q | I, (0, 1), accepts=same_input_quantization),
    OP.LOGICAL_AND: Entry(B.LOGICAL_AND, BOOL, (0, 1)),
    OP.LOGICAL_OR: Entry(B.LOGICAL_OR, BOOL, (0, 1)),
    OP.LOGICAL_NOT: Entry(B.LOGICAL_NOT, BOOL),
    OP.ABS: Entry(B.ABS, F),
    OP.EXP: Entry(B.EXP, F),
    OP.LOG: Entry(B.LOG, F),
    OP.SQRT: Entry(B.SQRT, F),
    OP.RSQRT: Entry(B.RSQRT, F),
    OP.NEG: Entry(B.NEG, F | I),
    OP.SIN: Entry(B.SIN, F),
    OP.FLOOR: Entry(B.FLOOR, F),
    OP.RELU: Entry(B.RELU, F | Q),
    OP.RELU1: Entry(B.RELU_N1_TO_1, F | Q),
    OP.RELU6: Entry(B.RELU6, F | Q),
    OP.LOGISTIC: Entry(B.LOGISTIC, F | Q),
    OP.TANH: Entry(B.TANH, F | Q),
    # BUILTIN_REF registers no ELU kernel
    OP.ELU: Entry(B.ELU, F, (0,), (1,), accepts=lambda ctx, shapes: ctx.scalar(1) == 1.0,
                  kernel_sets=frozenset(KERNEL_SETS.values()) - {"BUILTIN_REF"}),
    OP.HARD_SWISH: Entry(B.HARD_SWISH, F | Q),
    OP.SOFTMAX: Entry(B.SOFTMAX, F | Q, (0,), (1, 2), accepts=axis_known(2), lower=on_last_axis(
        B.SOFTMAX, 2, lambda op: options(O.SoftmaxOptionsT, beta=op.scalar(1))), any_value=at(1, 2)),
    OP.LOG_SOFTMAX: Entry(B.LOG_SOFTMAX, F, (0,), (1, 2), lower=on_last_axis(B.LOG_SOFTMAX, 2),
                          accepts=lambda ctx, shapes: ctx.scalar(1) == 1.0 and axis_known(2)(ctx, shapes),
                          any_value=at(2)),
    OP.L2_NORMALIZATION: Entry(B.L2_NORMALIZATION, F | Q, (0,), (1,), accepts=axis_known(1),
                               lower=on_last_axis(B.L2_NORMALIZATION, 1), any_value=at(1)),
    OP.CHANNEL_SHUFFLE: Entry(B.TRANSPOSE, F | Q, params=(1, 2), accepts=known_shape, lower=channel_shuffle,
                              any_value=at(1, 2)),
    OP.QUANTIZE: Entry(B.QUANTIZE, F),
    OP.DEQUANTIZE: Entry(B.DEQUANTIZE, Q | frozenset({T.TENSOR_QUANT8_SYMM})),
    OP.RESHAPE: Entry(B.RESHAPE, ANY, (0, 1)),
    OP.CONCATENATION: Entry(B.CONCATENATION, F | Q | I, lower=concatenation, accepts=concatenation_accepts,
                            any_value=at(-1)),
    OP.SQUEEZE: Entry(B.SQUEEZE, F | Q | I, params=(1,), lower=squeeze, rank_one=True),
    OP.EXPAND_DIMS: Entry(B.EXPAND_DIMS, ANY, params=(1,), lower=expand_dims, any_value=at(1)),
    OP.TRANSPOSE: Entry(B.TRANSPOSE, F | Q | I, (0, 1), accepts=transpose_accepts, lower=transpose),
    OP.GATHER: Entry(B.GATHER, F | Q | I, params=(1,), lower=gather, any_value=at(1)),
    OP.PAD: Entry(B.PAD, F | Q, (0, 1)),
    OP.PAD_V2: Entry(B.PADV2, F | Q, params=(2,), lower=pad_v2, any_value=at(2)),
    OP.SLICE: Entry(B.SLICE, F | Q | I, (0, 1, 2)),
    OP.STRIDED_SLICE: Entry(B.STRIDED_SLICE, F | Q, (0, 1, 2, 3), (4, 5, 6), lambda op: options(
        O.StridedSliceOptionsT, beginMask=op.scalar(4), endMask=op.scalar(5),
        shrinkAxisMask=op.scalar(6)), rank_one=True, any_value=at(4, 5, 6)),
    OP.SPLIT: Entry(B.SPLIT, F | Q | I, params=(1, 2), lower=split, any_value=at(1, 2)),
    OP.TILE: Entry(B.TILE, F | Q | I, (0, 1)),
    OP.SELECT: Entry(B.SELECT, BOOL, (0, 1, 2), accepts=same_quantization),
    OP.ARGMAX: Entry(B.ARG_MAX, F | Q | I, params=(1,), lower=arg_reduce, rank_one=True, any_value=at(1)),
    OP.ARGMIN: Entry(B.ARG_MIN, F | Q | I, params=(1,), lower=arg_reduce, rank_one=True, any_value=at(1)),
    OP.MEAN: _reducer(B.MEAN, F | Q),
    OP.REDUCE_SUM: _reducer(B.SUM, F),
    OP.REDUCE_MAX: _reducer(B.REDUCE_MAX, F | Q),
    OP.REDUCE_MIN: _reducer(B.REDUCE_MIN, F | Q),
    OP.REDUCE_PROD: _reducer(B.REDUCE_PROD, F),
    OP.REDUCE_ANY: _reducer(B.REDUCE_ANY, BOOL),
    OP.REDUCE_ALL: _reducer(B.REDUCE_ALL, BOOL),
    OP.SPACE_TO_DEPTH: Entry(B.SPACE_TO_DEPTH, F | Q, params=(1, 2), lower=space_depth, any_value=at(1, 2)),
    OP.DEPTH_TO_SPACE: Entry(B.DEPTH_TO_SPACE, F | Q, params=(1, 2), lower=space_depth, any_value=at(1, 2)),
    OP.BATCH_TO_SPACE_ND: Entry(B.BATCH_TO_SPACE_ND, F | Q, params=(2,), lower=batch_to_space,
                                any_value=at(2)),
    OP.SPACE_TO_BATCH_ND: Entry(B.SPACE_TO_BATCH_ND, F | Q, params=(3,), lower=space_to_batch,
                                any_value=at(3)),
    OP.FULLY_CONNECTED: Entry(B.FULLY_CONNECTED, F | Q, (0, 1, 2), (3,),
                              activation_at(3, O.FullyConnectedOptionsT), symmetric_filter, any_value=at(3)),
    OP.CONV_2D: Entry(B.CONV_2D, F | Q, accepts=symmetric_filter, lower=convolution, any_value=every_input),
    OP.DEPTHWISE_CONV_2D: Entry(B.DEPTHWISE_CONV_2D, F | Q, accepts=symmetric_filter,
                                lower=convolution, any_value=every_input),
    OP.GROUPED_CONV_2D: Entry(B.CONV_2D, F | Q, accepts=grouped_convolution_accepts,
                              lower=grouped_convolution, any_value=every_input),
    OP.TRANSPOSE_CONV_2D: Entry(B.TRANSPOSE_CONV, F | Q, accepts=transpose_convolution_accepts,
                                lower=transpose_convolution, any_value=transpose_convolution_any_value),
    OP.AVERAGE_POOL_2D: Entry(B.AVERAGE_POOL_2D, F | Q, accepts=pool_accepts, lower=pool,
                              any_value=pool_any_value),
    OP.MAX_POOL_2D: Entry(B.MAX_POOL_2D, F | Q, accepts=pool_accepts, lower=pool, any_value=pool_any_value),
    OP.L2_POOL_2D: Entry(B.L2_POOL_2D, F, accepts=pool_accepts, lower=pool, any_value=pool_any_value),
    OP.RESIZE_BILINEAR: Entry(B.RESIZE_BILINEAR, F | Q, params=(1, 2, 3, 4, 5),
                              accepts=resize_accepts, lower=resize, any_value=at(1, 2, 3, 4, 5)),
    OP.RESIZE_NEAREST_NEIGHBOR: Entry(B.RESIZE_NEAREST_NEIGHBOR, F | Q, params=(1, 2, 3, 4, 5),
                                      accepts=resize_accepts, lower=resize, any_value=at(1, 2, 3, 4, 5)),
    OP.IF: Entry(B.IF, BOOL, lower=if_),
    OP.WHILE: Entry(B.WHILE, frozenset({T.SUBGRAPH}), lower=while_),
}


# --- supported operations ---------------------------------------------------------------------

def lower(op: OpLowering) -> None:
    """Emit the operators of one supported operation."""
    entry = TABLE[op.ctx.type]
    op.rank_one_outputs = entry.rank_one
    if entry.lower is not None:
        entry.lower(op, entry)
    else:
        _one_operator(op, entry)
    op.finish()


def _one_operator(op: OpLowering, entry: Entry) -> None:
    op.emit(entry.builtin, [op.input(i) if op.has(i) else -1 for i in entry.tensors if i < len(op.ctx.inputs)],
            [op.output(k) for k in range(len(op.ctx.outputs))],
            entry.options(op) if entry.options is not None else None)


def parameters(ctx: OperationContext, entry: Entry) -> set[int]:
    """The inputs the lowering reads as constants: the entry's parameters and every scalar
    input, omitted ones aside."""
    return {i for i, info in enumerate(ctx.inputs)
            if (i in entry.params or info.type in SCALAR_OPERAND_TYPES) and not info.is_omitted}


def expresses(ctx: OperationContext, shapes: Shapes, output_shapes: Shapes, kernel_set: str,
              in_main: bool = False) -> bool:
    """Whether the table expresses this (non control-flow) operation with LiteRT's
    ``kernel_set``; ``shapes`` and ``output_shapes`` are what is known of its operands'
    shapes ahead; ``in_main``: the operation is one of the main subgraph's, whose inputs
    may be runtime scalars."""
    entry = TABLE.get(ctx.type)
    if entry is None or kernel_set not in entry.kernel_sets or ctx.inputs[0].type not in entry.types:
        return False
    if entry.rank_one and None in output_shapes:
        return False        # a one-element result could not be told [1] from a scalar
    if any(i < len(ctx.inputs) and ctx.inputs[i].lifetime == OperandLifeTime.SUBGRAPH_INPUT
           for i in lookup(ctx.type).optional_inputs):
        return False        # a request may omit it, and the lowered model takes a value
    params = parameters(ctx, entry)
    variable = {i for i in params if not ctx.inputs[i].is_constant}
    if variable and not (in_main and variable <= set(entry.any_value(ctx)) and all(
            ctx.inputs[i].lifetime == OperandLifeTime.SUBGRAPH_INPUT for i in variable)):
        return False        # computed, or a value the entry could not express at that position
    tensors = [info for i, info in enumerate(ctx.inputs) if i not in params] + list(ctx.outputs)
    if any(info.type not in TENSOR_TYPE for info in tensors):
        return False
    return bool(entry.accepts(ctx, shapes))


def supported_operations(model: Model, analysis: ModelAnalysis, kernel_set: str) -> list[bool]:
    """Per main operation, whether the converter expresses it for ``kernel_set`` (never
    raises: an operation the table's checks cannot judge is unsupported)."""
    subgraphs = [model.main, *model.referenced]
    verdicts: dict[int, list[bool]] = {}

    def of(index: int, visiting: frozenset[int]) -> list[bool]:
        if index in verdicts:
            return verdicts[index]
        subgraph = subgraphs[index]
        infos = subgraph_infos(model, subgraph)
        static = analysis.plans[index].static
        result = []
        for op_index, operation in enumerate(subgraph.operations):
            try:
                ctx = operation_context(model, subgraph, op_index, infos)
                if ctx.type in CONTROL_FLOW_OPERATION_TYPES:
                    callees = [subgraph.operands[i].location.offset + 1 for i in operation.inputs
                               if subgraph.operands[i].lifetime == OperandLifeTime.SUBGRAPH]
                    ok = (all(info.type in TENSOR_TYPE for info in (*ctx.inputs, *ctx.outputs)
                              if info.type != T.SUBGRAPH)
                          and not any(c in visiting for c in callees)
                          and all(all(of(c, visiting | {index})) for c in callees))
                else:
                    ok = expresses(ctx, [static[i] for i in operation.inputs],
                                   [static[o] for o in operation.outputs], kernel_set, index == 0)
            except (Unsupported, ArithmeticError, LookupError, TypeError, ValueError):
                ok = False
            result.append(ok)
        verdicts[index] = result
        return result
    return of(0, frozenset())


def runtime_scalars(model: Model) -> tuple[int, ...]:
    """The positions of the main inputs that main operations read as parameters: in a
    supported model, the runtime scalars each request's specialisation makes constants."""
    main = model.main
    infos = subgraph_infos(model, main)
    read = set()
    for op_index, operation in enumerate(main.operations):
        if operation.type not in CONTROL_FLOW_OPERATION_TYPES:
            ctx = operation_context(model, main, op_index, infos)
            read.update(ctx.inputs[i].index for i in parameters(ctx, TABLE[ctx.type])
                        if not ctx.inputs[i].is_constant)
    return tuple(k for k, operand in enumerate(main.inputIndexes) if operand in read)
