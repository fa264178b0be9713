"""ROI_ALIGN, ROI_POOLING and HEATMAP_MAX_KEYPOINT: per region of interest (ROI) of a 4-D
feature map, a window of fixed size, or the maximum keypoint of a heatmap.

ROI_ALIGN and ROI_POOLING take the feature map (NHWC, or NCHW with the layout input), the
ROIs [num_rois, 4], each [x1, y1, x2, y2] in the original image (TENSOR_QUANT16_ASYMM in
eighths of a pixel, scale 0.125 and zero point 0, for a quantized map), the batch index of
each ROI (TENSOR_INT32 [num_rois]), the output height and width, and the positive ratios of
the original image's height and width to the map's (FLOAT16 for a TENSOR_FLOAT16 map, else
FLOAT32); then ROI_ALIGN's number of sampling points per bin in height and in width (0:
adaptive, the ceiling of the bin's size); last, the layout. The output is [num_rois,
out_height, out_width, depth] in the map's layout. There may be no ROIs, but every
dimension of the map must be positive. A ROI's corners, values known only when the kernel
runs, are checked there: 0 <= x1 <= x2 with x2 / width_ratio within the map's width, the
same in height, and a batch index within the map's batches.

ROI_ALIGN splits the ROI, in map coordinates and at least 1 x 1, into out_height x out_width
bins and each bin into a grid of sampling points, one at the centre of each cell; it
averages the points, each interpolated bilinearly from its four neighbouring pixels (past
the last row or column, that row or column). Positions and values are computed in single
precision in the reference's order of operations (float16 maps too, rounded once at the
end). Quantized maps use the reference's integer arithmetic: each neighbour's weight
rounded to a multiple of 1/255 (divided in single precision, so that a half is 127/255),
the sum of the weighted stored values (less the zero point) scaled by input_scale / 255 /
output_scale / points, which must be below 1; the output's quantization may differ from
the input's.

ROI_POOLING rounds the ROI's corners, in map coordinates, to whole pixels (a ROI is at
least one pixel), splits it into bins whose bounds are rounded outwards and held within
the map, and takes each bin's maximum (a NaN anywhere in a bin is its maximum, where the
reference keeps one only as the bin's first value); a bin past the map's edge is empty and
gives 0 (the zero point). Its quantized output has the input's quantization.

HEATMAP_MAX_KEYPOINT takes heatmaps [num_boxes, size, size, num_keypoints] (NHWC or NCHW,
size >= 2) and boxes [num_boxes, 4] as [x1, y1, x2, y2] with x1 <= x2 and y1 <= y2. For
each box and keypoint it finds the heatmap's maximum (its first occurrence) and refines
its position and score by the quadratic Taylor expansion of the 3 x 3 neighbourhood
(mirrored past the edges) where the Hessian is invertible, within the reference's
tolerance; a step longer than 1.5 pixels in either direction is shortened to that. The
outputs are the scores [num_boxes, num_keypoints] and the keypoints [num_boxes,
num_keypoints, 2], each (x, y) mapped from the heatmap into its box. Everything is
computed in single precision; quantized inputs are dequantized first and the results
quantized (keypoints as TENSOR_QUANT16_ASYMM in eighths, scale 0.125 and zero point 0).

Each kernel works on every ROI, bin and sampling point at once: the ROIs' grids of points
are padded to the largest and masked.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from ..errors import check, fail
from ..hal.enums import OperandType as T, OperationType
from ..limits import check_shape
from ._fixed_point import multiply_by_quantized_multiplier, quantize_multiplier, wrap_int32
from ._spatial import LAYOUT, flag, from_nhwc, layout_shape, nhwc_shape, to_nhwc
from .common import (QUANT8_ASYMM_TENSORS, check_quant_scales, check_same_quantization,
                     declared_shape, merge_dims, quant_range, quantize_f32, real_values_f32, round_half_away)
from .detection import BOX_SCALE, BOX_ZERO_POINT, check_box_quantization
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Example, ExampleOperand, Operand, Range, Signature, same_as, scalar, tensor

F32 = np.float32
INPUT, ROIS, BATCHES, OUT_HEIGHT, OUT_WIDTH, HEIGHT_RATIO, WIDTH_RATIO = range(7)
HEATMAPS, BOXES, HEATMAP_LAYOUT = range(3)
#: The quantum of ROI_ALIGN's quantized interpolation weights.
WEIGHT_SCALE = F32(1) / F32(255)
#: The smallest float32 (-FLT_MAX) starts the reference's search for a heatmap's maximum.
LOWEST_SCORE = F32(np.finfo(np.float32).min)

POSITIVE = Range(0, low_exclusive=True)


def roi_scalars(ratio_type: T, sampling: bool) -> tuple[Operand, ...]:
    """The scalar inputs from OUT_HEIGHT on; only ROI_ALIGN has sampling points."""
    points = (scalar(T.INT32, Range(0), "height sampling points"),
              scalar(T.INT32, Range(0), "width sampling points"))
    return (scalar(T.INT32, POSITIVE, "output height"), scalar(T.INT32, POSITIVE, "output width"),
            scalar(ratio_type, POSITIVE, "height ratio"), scalar(ratio_type, POSITIVE, "width ratio"),
            *(points if sampling else ()), LAYOUT)


#: The rules for the values of scalars given at run time (a FLOAT16 ratio's are a FLOAT32's).
RUN_TIME_SCALARS = {OperationType.ROI_ALIGN: roi_scalars(T.FLOAT32, True),
                    OperationType.ROI_POOLING: roi_scalars(T.FLOAT32, False)}


def boxes_operand(types, name: str) -> Operand:
    """ROIs or boxes: those of a float map have its type, a quantized map's are eighths."""
    if types == QUANT8_ASYMM_TENSORS:
        return tensor((T.TENSOR_QUANT16_ASYMM,), rank=(2, 2), name=name)
    return same_as(0, rank=(2, 2), name=name)


#: (map types, ratio type) per type family.
ROI_VARIANTS = (((T.TENSOR_FLOAT32,), T.FLOAT32), ((T.TENSOR_FLOAT16,), T.FLOAT16),
                (QUANT8_ASYMM_TENSORS, T.FLOAT32))


def roi_signatures(sampling: bool) -> tuple[Signature, ...]:
    return tuple(Signature(inputs=(tensor(types, rank=(4, 4), name="feature map"),
                                   boxes_operand(types, "rois"),
                                   tensor((T.TENSOR_INT32,), rank=(1, 1), name="batch indexes"),
                                   *roi_scalars(ratio_type, sampling)),
                           outputs=(same_as(INPUT),))
                 for types, ratio_type in ROI_VARIANTS)


HEATMAP_SIGNATURES = tuple(
    Signature(inputs=(tensor(types, rank=(4, 4), name="heatmaps"), boxes_operand(types, "boxes"),
                      LAYOUT),
              outputs=(same_as(HEATMAPS, name="scores"),
                       same_as(BOXES, name="keypoints",
                               quantization={T.TENSOR_QUANT16_ASYMM: (BOX_SCALE, BOX_ZERO_POINT)})))
    for types in ((T.TENSOR_FLOAT32, T.TENSOR_FLOAT16), QUANT8_ASYMM_TENSORS))


# --- examples ----------------------------------------------------------------------------------

def _quantization(operand_type: T) -> tuple[float, int]:
    return {T.TENSOR_QUANT8_ASYMM: (0.25, 128), T.TENSOR_QUANT8_ASYMM_SIGNED: (0.5, -10),
            T.TENSOR_QUANT16_ASYMM: (BOX_SCALE, BOX_ZERO_POINT)}.get(operand_type, (0.0, 0))


def _boxes(map_type: T, corners) -> ExampleOperand:
    """ROIs or boxes given in pixels, fed by the request."""
    if map_type in QUANT8_ASYMM_TENSORS:
        return ExampleOperand(T.TENSOR_QUANT16_ASYMM, np.shape(corners), scale=BOX_SCALE,
                              value=(np.asarray(corners) / BOX_SCALE).astype(int).tolist())
    return ExampleOperand(map_type, np.shape(corners), value=corners)


def _roi_example(map_type: T, dims, corners, batches, sizes, ratio, points, nchw) -> Example:
    ratio_type = T.FLOAT16 if map_type == T.TENSOR_FLOAT16 else T.FLOAT32
    return Example(inputs=(ExampleOperand(map_type, dims, scale=_quantization(map_type)[0],
                                          zero_point=_quantization(map_type)[1]),
                           _boxes(map_type, corners),
                           ExampleOperand(T.TENSOR_INT32, (len(batches),), constant=batches),
                           *(ExampleOperand(T.INT32, constant=s) for s in sizes),
                           *(ExampleOperand(ratio_type, constant=ratio) for _ in range(2)),
                           *(ExampleOperand(T.INT32, constant=p) for p in points),
                           ExampleOperand(T.BOOL, constant=nchw)),
                   outputs=((map_type, *_quantization(map_type)),))


#: Every type, both layouts, several ROIs and batches, fixed and adaptive sampling: (map
#: type, map shape, ROIs in pixels, batch indexes, output size, ratio, points, NCHW).
_ROI_CASES = (
    (T.TENSOR_FLOAT32, (1, 4, 4, 1), [[0, 0, 2, 2], [1, 1, 4, 3]], [0, 0], (2, 2), 1.0, (2, 2), False),
    (T.TENSOR_QUANT8_ASYMM, (1, 1, 4, 4), [[0, 0, 3, 4]], [0], (2, 2), 1.0, (0, 0), True),
    (T.TENSOR_QUANT8_ASYMM_SIGNED, (2, 3, 3, 2), [[1, 0, 6, 4]], [1], (1, 2), 2.0, (1, 0), False),
    (T.TENSOR_FLOAT16, (1, 2, 3, 3), [[0.5, 0.5, 2.5, 2]], [0], (2, 1), 1.0, (0, 2), True))
ALIGN_EXAMPLES = tuple(_roi_example(*case) for case in _ROI_CASES)
POOLING_EXAMPLES = tuple(_roi_example(*case[:6], (), case[7]) for case in _ROI_CASES)


def _heatmap_example(map_type: T, dims, corners, nchw) -> Example:
    scale, zero_point = _quantization(map_type)
    boxes = _boxes(map_type, corners)
    return Example(inputs=(ExampleOperand(map_type, dims, scale=scale, zero_point=zero_point), boxes,
                           ExampleOperand(T.BOOL, constant=nchw)),
                   outputs=((map_type, scale, zero_point), (boxes.type, *_quantization(boxes.type))))


HEATMAP_EXAMPLES = (
    _heatmap_example(T.TENSOR_FLOAT32, (2, 3, 3, 2), [[0, 0, 4, 4], [1, 2, 5, 8]], False),
    _heatmap_example(T.TENSOR_QUANT8_ASYMM, (1, 2, 3, 3), [[1, 1, 5, 5]], True),
    _heatmap_example(T.TENSOR_QUANT8_ASYMM_SIGNED, (1, 2, 2, 1), [[0, 0, 2, 3]], False),
    _heatmap_example(T.TENSOR_FLOAT16, (2, 1, 3, 3), [[0, 0, 1, 1], [2, 2, 3, 6]], True))


# --- validation and shapes ---------------------------------------------------------------------

def check_roi_operation(ctx: OperationContext) -> None:
    inp, out = ctx.inputs[INPUT], ctx.outputs[0]
    if inp.type in QUANT8_ASYMM_TENSORS:
        check_quant_scales(ctx, (INPUT,))
        check_box_quantization(ctx, ROIS, "rois")
        if ctx.type == OperationType.ROI_POOLING:
            check_same_quantization(ctx, out, inp, "output 0", "input 0")
    infer_roi_shapes(ctx, [declared_shape(o) for o in ctx.inputs[:BATCHES + 1]])


def infer_roi_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    feature_map, rois, batches = shapes[:BATCHES + 1]
    num_rois = 0
    if rois is not None:
        check(rois[1] in (0, 4), "{}: input 1 (rois) has shape {}: a ROI has 4 coordinates",
              ctx.name, list(rois))
        num_rois = rois[0]
    if batches is not None:
        num_rois = merge_dims(ctx, num_rois, batches[0],
                              "num_rois of input 1 (rois) and input 2 (batch indexes)")
    nchw = flag(ctx, len(ctx.inputs) - 1)
    if feature_map is None or nchw is None:
        return [(num_rois, 0, 0, 0)]
    depth = nhwc_shape(feature_map, nchw)[3]
    height, width = ctx.scalar(OUT_HEIGHT) or 0, ctx.scalar(OUT_WIDTH) or 0
    return [layout_shape(num_rois, height, width, depth, nchw)]


def check_heatmap_operation(ctx: OperationContext) -> None:
    heatmaps = ctx.inputs[HEATMAPS]
    if heatmaps.type in QUANT8_ASYMM_TENSORS:
        check_quant_scales(ctx, (HEATMAPS,))
        check_box_quantization(ctx, BOXES, "boxes")
    infer_heatmap_shapes(ctx, [declared_shape(o) for o in ctx.inputs[:BOXES + 1]])


def infer_heatmap_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    heatmaps, boxes = shapes[:BOXES + 1]
    num_boxes = num_keypoints = 0
    if boxes is not None:
        check(boxes[1] in (0, 4), "{}: input 1 (boxes) has shape {}: a box has 4 coordinates",
              ctx.name, list(boxes))
        num_boxes = boxes[0]
    nchw = flag(ctx, HEATMAP_LAYOUT)
    if heatmaps is not None and nchw is not None:
        batches, height, width, num_keypoints = nhwc_shape(heatmaps, nchw)
        num_boxes = merge_dims(ctx, batches, num_boxes,
                               "num_boxes of input 0 (heatmaps) and input 1 (boxes)")
        size = merge_dims(ctx, height, width, "height and width of input 0 (heatmaps)")
        check(size == 0 or size >= 2, "{}: input 0 (heatmaps) has size {}, under 2", ctx.name, size)
    return [(num_boxes, num_keypoints), (num_boxes, num_keypoints, 2)]


# --- ROI_ALIGN and ROI_POOLING -----------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Parameters:
    """The scalar inputs of ROI_ALIGN or ROI_POOLING, (height, width) pairs."""
    out_size: tuple[int, int]
    ratio: tuple[float, float]
    points: tuple[int, int]         # ROI_ALIGN's sampling points per bin (0: adaptive)
    nchw: bool


def parameters(ctx: OperationContext, inputs: Sequence[np.ndarray]) -> Parameters:
    """The scalar inputs' values; those that are not constants are checked here against
    their signature (validation checked the constants)."""
    values = [ctx.run_scalar(i, inputs, spec)
              for i, spec in enumerate(RUN_TIME_SCALARS[ctx.type], start=OUT_HEIGHT)]
    height, width, height_ratio, width_ratio, *points, nchw = values
    return Parameters((height, width), (height_ratio, width_ratio), tuple(points) or (0, 0), bool(nchw))


def _check_run_shapes(ctx: OperationContext, x: np.ndarray, rois: np.ndarray,
                      batches: np.ndarray) -> None:
    """What inference takes a 0 for unknown in, and the reference refuses as zero-sized."""
    check(all(x.shape), "{}: input 0 (feature map) has shape {}: only num_rois may be 0",
          ctx.name, list(x.shape))
    check(rois.shape[1] == 4 and batches.shape == rois.shape[:1],
          "{}: input 1 (rois) has shape {} and input 2 (batch indexes) {}: expected [num_rois, 4] "
          "and [num_rois]", ctx.name, list(rois.shape), list(batches.shape))


def regions(ctx: OperationContext, x: np.ndarray, rois: np.ndarray, batches: np.ndarray,
            ratio: tuple[float, float]) -> np.ndarray:
    """The ROIs' corners [x1, y1, x2, y2] in map coordinates (float32), once they are found
    to be regions of the NHWC map ``x``."""
    boxes = (real_values_f32(rois, BOX_SCALE, BOX_ZERO_POINT) if rois.dtype == np.uint16
             else rois.astype(F32))
    height_scale, width_scale = F32(1) / F32(ratio[0]), F32(1) / F32(ratio[1])
    corners = boxes * np.array([width_scale, height_scale] * 2, F32)
    batch_count, height, width, _ = x.shape
    within = ((boxes >= 0).all(axis=1) & (boxes[:, 0] <= boxes[:, 2]) & (boxes[:, 1] <= boxes[:, 3])
              & (corners[:, [0, 2]] <= width).all(axis=1) & (corners[:, [1, 3]] <= height).all(axis=1))
    if not within.all():
        k = int(np.argmin(within))
        fail(f"{ctx.name}: input 1 (rois): ROI {k} {boxes[k].tolist()} is not a region of the "
             f"{height} x {width} feature map at ratios {list(ratio)}: 0 <= x1 <= x2 and 0 <= y1 <= y2 "
             f"must hold, and x2 and y2 divided by their ratio be within it")
    known = (batches >= 0) & (batches < batch_count)
    if not known.all():
        k = int(np.argmin(known))
        fail(f"{ctx.name}: input 2 (batch indexes): ROI {k}'s batch {batches[k]} is not in "
             f"[0, {batch_count})")
    return corners


def build_roi_operation(ctx: OperationContext) -> Kernel:
    pool = _align if ctx.type == OperationType.ROI_ALIGN else _max_pool

    def kernel(x, rois, batches, *scalars):
        p = parameters(ctx, (x, rois, batches, *scalars))
        nhwc = to_nhwc(x, p.nchw)
        _check_run_shapes(ctx, nhwc, rois, batches)
        out_shape = (len(rois), *p.out_size, nhwc.shape[3])
        check_shape(out_shape, x.itemsize, f"{ctx.name}, output 0")
        corners = regions(ctx, nhwc, rois, batches, p.ratio)
        if not len(rois):
            return (from_nhwc(np.zeros(out_shape, x.dtype), p.nchw),)
        return (from_nhwc(pool(ctx, nhwc, batches, corners, p), p.nchw),)
    return kernel


def _bins(start: np.ndarray, end: np.ndarray, bins: int, points: int) -> tuple[np.ndarray, ...]:
    """ROI_ALIGN along one axis: each ROI's bin size and sampling points per bin."""
    step = np.maximum(end - start, F32(1)) / F32(bins)
    count = np.ceil(step).astype(np.int64) if points == 0 else np.full(len(step), points, np.int64)
    return step, count


def _sampling_points(start: np.ndarray, step: np.ndarray, count: np.ndarray, bins: int,
                     in_size: int) -> tuple[np.ndarray, ...]:
    """ROI_ALIGN along one axis, [num_rois, bins, most points] each: the lower and upper
    neighbouring pixels of each sampling point, the upper one's weight, and whether the
    point is one of its ROI's (ROIs with fewer points are padded)."""
    cell = step / count.astype(F32)
    origin = step[:, None] * np.arange(bins, dtype=F32) + start[:, None]
    position = ((origin[:, :, None] + (cell / F32(2))[:, None, None])
                + cell[:, None, None] * np.arange(count.max(), dtype=F32))
    lower = np.floor(position)
    past = lower >= in_size - 1         # at or past the last pixel: that pixel alone
    weight = np.where(past, F32(0), position - lower)
    lower = np.where(past, in_size - 1, lower).astype(np.intp)
    upper = np.where(past, lower, lower + 1)
    return lower, upper, weight, np.arange(count.max()) < count[:, None, None]


def _align(ctx: OperationContext, x: np.ndarray, batches: np.ndarray, corners: np.ndarray,
           p: Parameters) -> np.ndarray:
    (out_height, out_width), (height_points, width_points) = p.out_size, p.points
    height_step, height_count = _bins(corners[:, 1], corners[:, 3], out_height, height_points)
    width_step, width_count = _bins(corners[:, 0], corners[:, 2], out_width, width_points)
    # The values of every sampling point are held at once, 8 bytes each (int64 sums).
    check_shape((len(corners), out_height * int(height_count.max()), out_width * int(width_count.max()),
                 x.shape[3]), 8, f"{ctx.name}, its sampling points")
    top, bottom, dy, rows = _sampling_points(corners[:, 1], height_step, height_count, out_height,
                                             x.shape[1])
    left, right, dx, columns = _sampling_points(corners[:, 0], width_step, width_count, out_width,
                                                x.shape[2])
    # Axes [roi, out row, row point, out column, column point]: the rows' arrays get two
    # trailing axes, the columns' two after the ROI.
    batch = batches[:, None, None, None, None]
    top, bottom, dy, rows = (a[..., None, None] for a in (top, bottom, dy, rows))
    left, right, dx, columns = (a[:, None, None] for a in (left, right, dx, columns))
    # The reference's order: neighbours (top left, top right, bottom left, bottom right).
    neighbours = ((top, left), (top, right), (bottom, left), (bottom, right))
    weights = ((1 - dx) * (1 - dy), dx * (1 - dy), (1 - dx) * dy, dx * dy)
    points = (rows & columns)[..., None]
    counts = (height_count * width_count)[:, None, None, None]
    if x.dtype.kind == "f":
        real = x.astype(F32, copy=False)
        interpolated = sum(w[..., None] * real[batch, r, c] for w, (r, c) in zip(weights, neighbours))
        return (interpolated.sum(axis=(2, 4), where=points) / counts.astype(F32)).astype(x.dtype)
    inp, out = ctx.inputs[INPUT], ctx.outputs[0]
    shifted = x.astype(np.int32) - np.int32(inp.zeroPoint)
    # Each weight in 1/255, divided in single precision as the reference divides: a half
    # is 127/255, 0.5 / (1/255) being just under 127.5.
    interpolated = sum(round_half_away(w / WEIGHT_SCALE).astype(np.int32)[..., None]
                       * shifted[batch, r, c] for w, (r, c) in zip(weights, neighbours))
    # The reference sums in int32.
    total = wrap_int32(interpolated.sum(axis=(2, 4), where=points, dtype=np.int64))
    significand, exponent = _average_multipliers(ctx, inp.scale, out.scale, counts)
    q = multiply_by_quantized_multiplier(total, significand, exponent) + out.zeroPoint
    return np.clip(q, *quant_range(out.type)).astype(x.dtype)


def _average_multipliers(ctx: OperationContext, in_scale: float, out_scale: float,
                         counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The quantized multipliers (significands, exponents) taking each ROI's sums of
    weighted values to its outputs' average: input_scale / 255 / output_scale / points,
    in single precision, below 1. ROIs share the few distinct point counts, each
    quantized once."""
    real = F32(in_scale) * WEIGHT_SCALE / F32(out_scale) / counts.astype(F32)
    check((real < 1).all(), "{}: input 0 scale {} / 255 / output 0 scale {} / sampling points {} "
          "must be below 1", ctx.name, in_scale, out_scale, counts.max())
    distinct, which = np.unique(real, return_inverse=True)
    multipliers = np.array([quantize_multiplier(float(m), ctx.name) for m in distinct], np.int64)
    return multipliers[which, 0].reshape(real.shape), multipliers[which, 1].reshape(real.shape)


def _pooling_bins(start: np.ndarray, end: np.ndarray, bins: int,
                  in_size: int) -> tuple[np.ndarray, ...]:
    """ROI_POOLING along one axis, [num_rois, bins, most pixels] each: the pixels of each
    bin (padded to the widest, clamped to the map), and which of them are in the bin."""
    first = round_half_away(start)
    step = np.maximum(round_half_away(end) - first + 1, 1) / F32(bins)
    edges = step[:, None] * np.arange(bins + 1, dtype=F32) + first[:, None]
    low = np.minimum(np.floor(edges[:, :-1]), in_size).astype(np.intp)
    high = np.minimum(np.ceil(edges[:, 1:]), in_size).astype(np.intp)
    pixels = low[..., None] + np.arange(max(int((high - low).max()), 0))
    return np.minimum(pixels, in_size - 1), pixels < high[..., None]


def _max_pool(ctx: OperationContext, x: np.ndarray, batches: np.ndarray, corners: np.ndarray,
              p: Parameters) -> np.ndarray:
    (out_height, out_width), (_, height, width, depth) = p.out_size, x.shape
    rows, in_rows = _pooling_bins(corners[:, 1], corners[:, 3], out_height, height)
    columns, in_columns = _pooling_bins(corners[:, 0], corners[:, 2], out_width, width)
    check_shape((len(corners), out_height * rows.shape[2], out_width * columns.shape[2], depth),
                x.itemsize, f"{ctx.name}, its bins")
    # Axes [roi, out row, bin row, out column, bin column, channel].
    window = x[batches[:, None, None, None, None], rows[..., None, None], columns[:, None, None]]
    inside = (in_rows[..., None, None] & in_columns[:, None, None])[..., None]
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    largest = window.max(axis=(2, 4), where=inside, initial=lowest)
    empty = ~in_rows.any(axis=2)[:, :, None] | ~in_columns.any(axis=2)[:, None, :]
    zero = ctx.inputs[INPUT].zeroPoint if x.dtype.kind != "f" else 0
    return np.where(empty[..., None], x.dtype.type(zero), largest)


# --- HEATMAP_MAX_KEYPOINT ----------------------------------------------------------------------

def build_heatmap(ctx: OperationContext) -> Kernel:
    heatmaps_info, boxes_info = ctx.inputs[HEATMAPS], ctx.inputs[BOXES]
    scores_info, keypoints_info = ctx.outputs
    quantized = heatmaps_info.type in QUANT8_ASYMM_TENSORS
    # The reference's tolerance for a singular Hessian, absolute and relative.
    tolerance = F32(1e-3) if heatmaps_info.type == T.TENSOR_FLOAT16 else F32(1e-5)

    def kernel(heatmaps, boxes, layout):
        nchw = flag(ctx, HEATMAP_LAYOUT, (heatmaps, boxes, layout))
        maps = to_nhwc(heatmaps, nchw)
        num_boxes, size, width, _ = maps.shape
        check(size == width and size >= 2, "{}: input 0 (heatmaps) has shape {}: its heatmaps must "
              "be square, at least 2 x 2", ctx.name, list(heatmaps.shape))
        check(boxes.shape == (num_boxes, 4), "{}: input 1 (boxes) has shape {}, expected [{}, 4]",
              ctx.name, list(boxes.shape), num_boxes)
        if quantized:
            maps = real_values_f32(maps, heatmaps_info.scale, heatmaps_info.zeroPoint)
            boxes = real_values_f32(boxes, boxes_info.scale, boxes_info.zeroPoint)
        scores, keypoints = max_keypoints(ctx, maps.astype(F32, copy=False),
                                          boxes.astype(F32, copy=False), tolerance)
        if quantized:
            return (quantize_f32(scores, scores_info), quantize_f32(keypoints, keypoints_info))
        return scores.astype(heatmaps.dtype), keypoints.astype(heatmaps.dtype)
    return kernel


def max_keypoints(ctx: OperationContext, maps: np.ndarray, boxes: np.ndarray,
                  tolerance: F32) -> tuple[np.ndarray, np.ndarray]:
    """Scores [boxes, keypoints] and keypoints [boxes, keypoints, 2] of float32 NHWC heatmaps."""
    x1, y1, x2, y2 = boxes.T
    ordered = (x1 <= x2) & (y1 <= y2)
    if not ordered.all():
        k = int(np.argmin(ordered))
        fail(f"{ctx.name}: input 1 (boxes): box {k} {boxes[k].tolist()} must have x1 <= x2 "
             f"and y1 <= y2")
    num_boxes, size, _, num_keypoints = maps.shape
    flat = maps.reshape(num_boxes, size * size, num_keypoints)
    # As the reference searches: from -FLT_MAX up, NaN never taken, the first maximum kept.
    candidates = np.where(flat > LOWEST_SCORE, flat, -np.inf)
    best = candidates.argmax(axis=1)
    score = np.maximum(np.take_along_axis(candidates, best[:, None], axis=1)[:, 0], LOWEST_SCORE)
    row, column = np.divmod(best, size)
    # The 3 x 3 neighbourhood, mirrored at the edges: -1 reads 1, size reads size - 2.
    around = np.arange(-1, 2)
    rows, columns = row[..., None] + around, column[..., None] + around
    rows, columns = (np.where(a < 0, 1, np.where(a >= size, size - 2, a)) for a in (rows, columns))
    grid = maps[np.arange(num_boxes)[:, None, None, None], rows[..., None], columns[:, :, None, :],
                np.arange(num_keypoints)[:, None, None]]
    dx, dy, score = refine(grid, score, tolerance)
    keypoint_x = (column.astype(F32) + dx + F32(0.5)) / F32(size) * (x2 - x1)[:, None] + x1[:, None]
    keypoint_y = (row.astype(F32) + dy + F32(0.5)) / F32(size) * (y2 - y1)[:, None] + y1[:, None]
    return score, np.stack([keypoint_x, keypoint_y], axis=-1)


def refine(grid: np.ndarray, score: np.ndarray, tolerance: F32) -> tuple[np.ndarray, ...]:
    """The step (dx, dy) to the maximum of the quadratic Taylor expansion of each 3 x 3
    ``grid`` [..., row, column] about its centre, and the score there: where the Hessian
    is singular (within ``tolerance``), no step and ``score`` unchanged."""
    g = {(r, c): grid[..., r, c] for r in range(3) for c in range(3)}
    # b: minus the gradient at the centre; a: the Hessian there.
    b0, b1 = -(g[1, 2] - g[1, 0]) / F32(2), -(g[2, 1] - g[0, 1]) / F32(2)
    a00 = g[1, 0] - F32(2) * g[1, 1] + g[1, 2]
    a01 = (g[2, 2] - g[2, 0] - g[0, 2] + g[0, 0]) / F32(4)
    a11 = g[0, 1] - F32(2) * g[1, 1] + g[2, 1]
    diagonal = a00 * a11
    determinant = diagonal - a01 * a01
    solvable = ~(np.abs(determinant) < tolerance + tolerance * diagonal)
    dx, dy = (a11 * b0 - a01 * b1) / determinant, (a00 * b1 - a01 * b0) / determinant
    longest = np.maximum(np.abs(dx), np.abs(dy))
    shorten = np.where((np.abs(dx) > 1.5) | (np.abs(dy) > 1.5), F32(1.5) / longest, F32(1))
    dx, dy = dx * shorten, dy * shorten
    refined = (g[1, 1] - b0 * dx - b1 * dy
               + ((a00 * dx + a01 * dy) * dx + (a01 * dx + a11 * dy) * dy) / F32(2))
    return (np.where(solvable, dx, F32(0)), np.where(solvable, dy, F32(0)),
            np.where(solvable, refined, score))


register(OperationDef(OperationType.ROI_ALIGN, roi_signatures(True), infer_roi_shapes,
                      build_roi_operation, check_roi_operation, ALIGN_EXAMPLES,
                      zero_sized_inputs=True))
register(OperationDef(OperationType.ROI_POOLING, roi_signatures(False), infer_roi_shapes,
                      build_roi_operation, check_roi_operation, POOLING_EXAMPLES))
register(OperationDef(OperationType.HEATMAP_MAX_KEYPOINT, HEATMAP_SIGNATURES, infer_heatmap_shapes,
                      build_heatmap, check_heatmap_operation, HEATMAP_EXAMPLES))
