"""The box operations of detection models: AXIS_ALIGNED_BBOX_TRANSFORM, BOX_WITH_NMS_LIMIT,
GENERATE_PROPOSALS and DETECTION_POSTPROCESSING (HAL 1.2; quant8 asymm signed since 1.3).

They share three pieces of box arithmetic, written once here: applying bounding-box deltas
to boxes, the intersection over union (IoU) of two boxes, and greedy non-maximum
suppression (NMS). Boxes are rows [x1, y1, x2, y2] (DETECTION_POSTPROCESSING's are
[y1, x1, y2, x2], the same arithmetic with the axes exchanged). As in the reference, every
type is computed in single precision: float16 and quantized values are converted to
float32 first and the results converted back. TENSOR_QUANT16_ASYMM box coordinates have
scale 0.125 and zero point 0.

Greedy NMS picks, in each group of candidate boxes (a class of an image, or an image), the
highest score, then lowers or drops the others by their IoU with the pick, and repeats.
Each pick depends on the ones before, so picks are made in rounds, one pick per group a
round, every group at once. Of equal scores the earliest candidate is picked (the
reference picks the first in an order its swaps keep changing; no test model depends on
the difference). Sorts that follow are stable.

BOX_WITH_NMS_LIMIT and GENERATE_PROPOSALS keep a number of boxes that depends on the
values: shape inference reports it as unknown (0) unless every input is a constant (the
operation is then computed to find it); the kernel's results carry the size.
"""
from __future__ import annotations

import enum
from typing import Callable, NamedTuple, Optional, Sequence

import numpy as np

from ..errors import check, fail
from ..limits import MAX_NMS_COMPARISONS, check_cost, check_shape, checkpoint, itemsize
from ..hal.enums import OperandType as T, OperationType
from ._spatial import LAYOUT, layout_shape, nhwc_shape, to_nhwc
from .common import (QUANT8_ASYMM_TENSORS, STORAGE_DTYPE, check_same_quantization, quantize_f32,
                     real_values_f32)
from .registry import Kernel, OperandInfo, OperationContext, OperationDef, Shape, lookup, register
from .signatures import (Example, ExampleOperand, Operand, Range, Signature, same_as, scalar,
                         tensor)

F32, F16, I32, Q16A = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, T.TENSOR_QUANT16_ASYMM
Q8, QS8 = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED
FLOAT_TENSORS = (F32, F16)
#: The scalar type of the float parameters of each float tensor type (quantized: FLOAT32).
FLOAT_SCALAR = {F32: T.FLOAT32, F16: T.FLOAT16}
#: The quantization of quantized box coordinates.
BOX_SCALE, BOX_ZERO_POINT = 0.125, 0
BOX_OUTPUT = {Q16A: (BOX_SCALE, BOX_ZERO_POINT)}


# --- values in and out --------------------------------------------------------------------

def real(x: np.ndarray, operand: OperandInfo) -> np.ndarray:
    """Stored values as the float32 values the reference computes with."""
    if operand.type in FLOAT_TENSORS:
        return x.astype(np.float32)
    return real_values_f32(x, operand.scale, operand.zeroPoint)


def stored(values: np.ndarray, operand: OperandInfo) -> np.ndarray:
    """float32 results in the operand's type (quantized as common.quantize_f32)."""
    if operand.type in FLOAT_TENSORS:
        return values.astype(STORAGE_DTYPE[operand.type])
    return quantize_f32(values, operand)


def check_box_quantization(ctx: OperationContext, i: int, what: str) -> None:
    """Quantized box coordinates (input ``i``: boxes, ROIs, anchors, image sizes) have
    scale 0.125 and zero point 0 (the scale compared in single precision, as HAL scales
    are). The region operations (roi.py) hold their boxes to it too."""
    operand = ctx.inputs[i]
    check(np.float32(operand.scale) == np.float32(BOX_SCALE) and operand.zeroPoint == BOX_ZERO_POINT,
          "{}: input {} ({}, operand {}) must have scale {} and zero point {}, has {} and {}",
          ctx.name, i, what, operand.index, BOX_SCALE, BOX_ZERO_POINT, operand.scale, operand.zeroPoint)


def check_scores_quantization(ctx: OperationContext) -> None:
    check_same_quantization(ctx, ctx.outputs[0], ctx.inputs[0], "output 0 (scores)", "input 0")


def scalar_values(ctx: OperationContext, operands: Sequence[Operand], first: int,
                  inputs: Optional[Sequence[np.ndarray]] = None) -> Optional[list]:
    """The scalar inputs from ``first`` on: the constants, and values only known at run
    time (taken from a kernel's ``inputs``) checked against their signature ``operands`` as
    validation checks the constants. None when some are unknown and ``inputs`` is None.
    Float parameters come as float32, as the reference computes with them."""
    values = []
    for i in range(first, len(ctx.inputs)):
        value = ctx.scalar(i) if inputs is None else ctx.run_scalar(i, inputs, operands[i])
        if value is None:
            return None
        values.append(np.float32(value) if isinstance(value, float) else value)
    return values


#: An operation's computation: (ctx, inputs, the values of its scalar inputs) -> results.
Compute = Callable[[OperationContext, Sequence[np.ndarray], list], tuple[np.ndarray, ...]]


def parameterised_kernel(ctx: OperationContext, compute: Compute, operands: Sequence[Operand],
                         first: int) -> Kernel:
    """The kernel of ``compute``, whose scalar inputs from ``first`` on are read once here
    when they are constants."""
    fixed = scalar_values(ctx, operands, first)
    if fixed is not None:
        return lambda *inputs: compute(ctx, inputs, fixed)
    return lambda *inputs: compute(ctx, inputs, scalar_values(ctx, operands, first, inputs))


def results_shapes(ctx: OperationContext, compute: Compute, operands: Sequence[Operand], first: int,
                   unknown: list[Shape]) -> list[Shape]:
    """The shapes of results whose sizes depend on input values: computed when every input
    is a constant (with floating-point errors ignored, as during an execution), else
    ``unknown``."""
    values = [operand.value for operand in ctx.inputs]
    if any(value is None for value in values):
        return unknown
    with np.errstate(all="ignore"):
        return [result.shape for result in compute(ctx, values, scalar_values(ctx, operands, first))]


# --- shapes -------------------------------------------------------------------------------

def known(shape: Shape, rank: int) -> tuple[int, ...]:
    """A shape of a known rank: an unknown rank as unknown dimensions (0)."""
    return (0,) * rank if shape is None else tuple(shape)


def check_shapes(ctx: OperationContext, shapes: Sequence[Shape], expected: dict[int, tuple],
                 exact: bool) -> None:
    """Input i has the shape ``expected[i]``. At prepare time (``exact`` false) a 0 on
    either side is unknown and matches; at run time sizes are sizes."""
    for i, want in expected.items():
        got = known(shapes[i], len(want))
        if not all(g == w or (not exact and (g == 0 or w == 0)) for g, w in zip(got, want)):
            name = lookup(ctx.type).signatures[0].inputs[i].name
            fail(f"{ctx.name}: input {i} ({name}) has shape {list(got)}, expected {list(want)}")


# --- box arithmetic -----------------------------------------------------------------------

def check_boxes(ctx: OperationContext, boxes: np.ndarray, what: str) -> None:
    """Every box [x1, y1, x2, y2] has x1 <= x2 and y1 <= y2 (NaN coordinates do not), as
    types.hal defines a valid box (the reference's BOX_WITH_NMS_LIMIT checks only some)."""
    check(np.all(boxes[..., 0] <= boxes[..., 2]) and np.all(boxes[..., 1] <= boxes[..., 3]),
          "{}: {} has a box with x2 < x1 or y2 < y1", ctx.name, what)


def apply_deltas(boxes: np.ndarray, deltas: np.ndarray, image_size: np.ndarray) -> np.ndarray:
    """Boxes [..., 4] moved and scaled by deltas [..., 4] ([dx, dy, dw, dh]: the centre
    moves by dx widths and dy heights, the width and height are multiplied by exp(dw) and
    exp(dh)), then clipped to their image (image_size [..., 2]: height, width)."""
    width, height = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
    half = np.float32(2)
    centre_x = (boxes[..., 0] + boxes[..., 2]) / half + deltas[..., 0] * width
    centre_y = (boxes[..., 1] + boxes[..., 3]) / half + deltas[..., 1] * height
    half_width = np.exp(deltas[..., 2]) * width / half
    half_height = np.exp(deltas[..., 3]) * height / half
    moved = np.stack([centre_x - half_width, centre_y - half_height,
                      centre_x + half_width, centre_y + half_height], axis=-1)
    return np.minimum(np.maximum(moved, np.float32(0)), image_size[..., [1, 0, 1, 0]])


def iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Intersection over union of boxes ``a`` (the candidates) and ``b`` (the picks) [..., 4],
    in the reference's order of operations."""
    area_a = (a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1])
    area_b = (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1])
    zero = np.float32(0)
    width = np.maximum(np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]), zero)
    height = np.maximum(np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]), zero)
    intersection = width * height
    return intersection / (area_a + area_b - intersection)


#: (scores, IoU with the pick) of the candidates left in a pick's group -> (their new
#: scores, which of them stay candidates).
Suppression = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def hard_suppression(iou_threshold: np.float32) -> Suppression:
    """Drops the candidates overlapping the pick by ``iou_threshold`` or more."""
    return lambda scores, overlap: (scores, ~(overlap >= iou_threshold))


def greedy_nms(scores: np.ndarray, boxes: np.ndarray, groups: np.ndarray, limit: Optional[int],
               suppress: Suppression, what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Greedy NMS in every group of candidates at once. ``scores`` [n] float32, ``boxes``
    [n, 4], ``groups`` [n]: a key per candidate, a group's candidates consecutive and in
    the order that decides ties; ``limit``: the most picks per group (None: no limit).
    Returns the candidates picked, their scores when picked, and the round of each pick.
    ``what`` names the operation whose cost bound a large NMS exceeds."""
    n = len(scores)
    if n == 0 or limit == 0:
        return np.zeros(0, np.intp), np.zeros(0, np.float32), np.zeros(0, np.intp)
    scores = scores.copy()
    starts, segment = runs(groups)
    # Every round looks at every candidate; a group runs out of candidates after as many
    # rounds as it has.
    rounds = int(np.diff(starts, append=n).max())
    rounds = rounds if limit is None else min(limit, rounds)
    check_cost(rounds * n, MAX_NMS_COMPARISONS, f"comparisons of {n} candidates in {rounds} rounds",
               f"{what}, its non-maximum suppression")
    positions = np.arange(n)
    pick_of_segment = np.empty(len(starts), np.intp)
    alive = np.ones(n, bool)
    picks, picked_scores = [], []
    for _ in range(rounds):
        checkpoint()
        # NaN scores are picked last.
        key = np.where(alive & (scores == scores), scores, np.float32(-np.inf))
        best = np.maximum.reduceat(key, starts)[segment]
        first = np.minimum.reduceat(np.where(alive & (key == best), positions, n), starts)
        picked = first[first < n]
        if len(picked) == 0:
            break
        alive[picked] = False
        picks.append(picked)
        picked_scores.append(scores[picked])
        pick_of_segment.fill(-1)
        pick_of_segment[segment[picked]] = picked
        rest = np.flatnonzero(alive & (pick_of_segment[segment] >= 0))
        scores[rest], alive[rest] = suppress(scores[rest],
                                             iou(boxes[rest], boxes[pick_of_segment[segment[rest]]]))
    rounds = np.repeat(np.arange(len(picks)), [len(p) for p in picks])
    return np.concatenate(picks), np.concatenate(picked_scores), rounds


def runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each run of equal consecutive ``keys`` starts, and the run of each key."""
    change = keys[1:] != keys[:-1]
    return np.concatenate(([0], np.flatnonzero(change) + 1)), np.concatenate(([0], np.cumsum(change)))


def best_of_each(groups: np.ndarray, scores: np.ndarray, ties: tuple[np.ndarray, ...],
                 limit: Optional[int]) -> tuple[np.ndarray, np.ndarray]:
    """The ``limit`` highest scores of each group (all with None), by group then score
    descending, equal scores in the order of the keys ``ties`` (the last key first):
    their indexes, and their ranks in their group."""
    order = np.lexsort((*ties, -scores, groups))
    starts, run = runs(groups[order])
    rank = np.arange(len(order)) - starts[run[:len(order)]]
    kept = rank < (len(order) if limit is None else limit)
    return order[kept], rank[kept]


# --- AXIS_ALIGNED_BBOX_TRANSFORM ------------------------------------------------------------

ROIS, DELTAS, BATCHES, IMAGE_SIZE = range(4)
BBOX_SIGNATURES = (
    Signature(inputs=(tensor(FLOAT_TENSORS, rank=(2, 2), name="boxes"),
                      same_as(ROIS, rank=(2, 2), name="deltas"),
                      tensor((I32,), rank=(1, 1), name="batch indexes"),
                      same_as(ROIS, rank=(2, 2), name="image sizes")),
              outputs=(same_as(ROIS),)),
    Signature(inputs=(tensor((Q16A,), rank=(2, 2), name="boxes"),
                      tensor(QUANT8_ASYMM_TENSORS, rank=(2, 2), name="deltas"),
                      tensor((I32,), rank=(1, 1), name="batch indexes"),
                      same_as(ROIS, rank=(2, 2), name="image sizes")),
              outputs=(same_as(ROIS, quantization=BOX_OUTPUT),)))


def check_bbox_transform(ctx: OperationContext) -> None:
    if ctx.inputs[ROIS].type == Q16A:
        check_box_quantization(ctx, ROIS, "boxes")
        check_box_quantization(ctx, IMAGE_SIZE, "image sizes")


def bbox_transform_shape(ctx: OperationContext, shapes: Sequence[Shape], exact: bool) -> tuple[int, int]:
    """The output shape [boxes, 4 * classes], after checking the inputs fit together."""
    num_rois, deltas = known(shapes[DELTAS], 2)
    check(deltas % 4 == 0 and (deltas or not exact),
          "{}: input 1 (deltas) has {} values a box, not 4 for each of one or more classes",
          ctx.name, deltas)
    images = known(shapes[IMAGE_SIZE], 2)[0]
    check(images or not exact, "{}: input 3 (image sizes) has no image", ctx.name)
    check_shapes(ctx, shapes, {ROIS: (num_rois, 4), BATCHES: (num_rois,), IMAGE_SIZE: (images, 2)}, exact)
    return num_rois, deltas


def infer_bbox_transform(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    return [bbox_transform_shape(ctx, shapes, exact=False)]


def build_bbox_transform(ctx: OperationContext) -> Kernel:
    rois_in, deltas_in, images_in, out = (ctx.inputs[ROIS], ctx.inputs[DELTAS],
                                          ctx.inputs[IMAGE_SIZE], ctx.outputs[0])

    def kernel(rois, deltas, batches, image_sizes):
        num_rois, values = bbox_transform_shape(ctx, [rois.shape, deltas.shape, batches.shape,
                                                      image_sizes.shape], exact=True)
        check(np.all((batches >= 0) & (batches < len(image_sizes))),
              "{}: input 2 (batch indexes) has an index outside [0, {})", ctx.name, len(image_sizes))
        boxes = real(rois, rois_in)
        check_boxes(ctx, boxes, "input 0 (boxes)")
        moved = apply_deltas(boxes[:, None, :], real(deltas, deltas_in).reshape(num_rois, values // 4, 4),
                             real(image_sizes, images_in)[batches][:, None, :])
        return (stored(moved.reshape(num_rois, values), out),)
    return kernel


BBOX_EXAMPLES = (
    # Two images, two classes; the second class's deltas move boxes out of the images.
    Example(inputs=(ExampleOperand(F32, (2, 4), value=[[1, 1, 5, 4], [0, 2, 6, 8]]),
                    ExampleOperand(F32, (2, 8), value=[[0, 0, 0, 0, 0.5, -0.2, 1, 0.3],
                                                       [0.1, 0.1, -0.5, 0.2, -2, 0, 0, 0]]),
                    ExampleOperand(I32, (2,), value=[0, 1]),
                    ExampleOperand(F32, (2, 2), value=[[8, 8], [10, 9]])),
            outputs=((F32, 0.0, 0),)),
    Example(inputs=(ExampleOperand(F16, (1, 4), value=[[1, 1, 5, 4]]),
                    ExampleOperand(F16, (1, 4), value=[[0.5, -0.2, 1, 0.3]]),
                    ExampleOperand(I32, (1,), value=[0]),
                    ExampleOperand(F16, (1, 2), value=[[8, 8]])),
            outputs=((F16, 0.0, 0),)),
    *(Example(inputs=(ExampleOperand(Q16A, (2, 4), value=[[8, 8, 40, 32], [0, 16, 48, 64]], scale=BOX_SCALE),
                      ExampleOperand(q8, (2, 4), value=[[zero + 10, zero - 4, zero + 20, zero + 6]] * 2,
                                     scale=0.05, zero_point=zero),
                      ExampleOperand(I32, (2,), value=[0, 0]),
                      ExampleOperand(Q16A, (1, 2), value=[[64, 64]], scale=BOX_SCALE)),
              outputs=((Q16A, BOX_SCALE, BOX_ZERO_POINT),))
      for q8, zero in ((Q8, 128), (QS8, 0))))

register(OperationDef(OperationType.AXIS_ALIGNED_BBOX_TRANSFORM, BBOX_SIGNATURES,
                      infer_bbox_transform, build_bbox_transform, check_bbox_transform, BBOX_EXAMPLES,
                      zero_sized_inputs=True))


# --- BOX_WITH_NMS_LIMIT ---------------------------------------------------------------------

class NmsKernel(enum.IntEnum):
    """How BOX_WITH_NMS_LIMIT lowers the scores of the boxes overlapping a pick."""
    HARD = 0        # to 0 when IoU >= the IoU threshold
    LINEAR = 1      # by the factor 1 - IoU when IoU >= the IoU threshold
    GAUSSIAN = 2    # by the factor exp(-IoU² / sigma)


SCORES, NMS_ROIS, NMS_BATCHES, SCORE_THRESHOLD = range(4)


def nms_signature(scores: Sequence[int], rois: Operand, float_scalar: int) -> Signature:
    return Signature(
        inputs=(tensor(scores, rank=(2, 2), name="scores"), rois,
                tensor((I32,), rank=(1, 1), name="batch indexes"),
                scalar(float_scalar, name="score threshold"),
                scalar(T.INT32, name="max detections per image"),
                scalar(T.INT32, frozenset(NmsKernel), "NMS kernel"),
                scalar(float_scalar, name="IoU threshold"), scalar(float_scalar, name="sigma"),
                scalar(float_scalar, name="NMS score threshold")),
        outputs=(same_as(SCORES), same_as(NMS_ROIS, quantization=BOX_OUTPUT),
                 tensor((I32,)), tensor((I32,))))


NMS_SIGNATURES = (
    *(nms_signature((t,), same_as(SCORES, rank=(2, 2), name="boxes"), FLOAT_SCALAR[t])
      for t in FLOAT_TENSORS),
    nms_signature(QUANT8_ASYMM_TENSORS, tensor((Q16A,), rank=(2, 2), name="boxes"), T.FLOAT32))
NMS_OPERANDS = {t: s.inputs for s in NMS_SIGNATURES for t in s.inputs[SCORES].types}


def check_box_with_nms(ctx: OperationContext) -> None:
    if ctx.inputs[SCORES].type in QUANT8_ASYMM_TENSORS:
        check_box_quantization(ctx, NMS_ROIS, "boxes")
        check_scores_quantization(ctx)


def nms_sizes(ctx: OperationContext, shapes: Sequence[Shape], exact: bool) -> tuple[int, int]:
    """(boxes, classes), after checking the inputs fit together."""
    num_rois, classes = known(shapes[SCORES], 2)
    check(classes > 1 or not (exact or classes), "{}: input 0 (scores) has {} classes, fewer than 2",
          ctx.name, classes)
    check_shapes(ctx, shapes, {NMS_ROIS: (num_rois, 4 * classes), NMS_BATCHES: (num_rois,)}, exact)
    return num_rois, classes


def infer_box_with_nms(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    nms_sizes(ctx, shapes, exact=False)
    return results_shapes(ctx, box_with_nms, NMS_OPERANDS[ctx.inputs[SCORES].type], SCORE_THRESHOLD,
                          [(0,), (0, 4), (0,), (0,)])


def box_with_nms(ctx: OperationContext, inputs: Sequence[np.ndarray],
                 parameters: list) -> tuple[np.ndarray, ...]:
    scores_in, rois, batches = inputs[:3]
    num_rois, classes = nms_sizes(ctx, [x.shape for x in inputs[:3]], exact=True)
    score_threshold, max_detections, nms_kernel, iou_threshold, sigma, nms_score_threshold = parameters
    scores = real(scores_in, ctx.inputs[SCORES])
    boxes = real(rois, ctx.inputs[NMS_ROIS]).reshape(num_rois, classes, 4)
    check_boxes(ctx, boxes, "input 1 (boxes)")
    # Boxes of one image are consecutive: each run of equal batch indexes is an image.
    image = runs(batches)[1]
    # The candidates: the boxes of each class but 0 (the background) scoring above the
    # threshold, grouped by image and class, in box order.
    box, cls = np.nonzero((scores > score_threshold) & (np.arange(classes) > 0))
    order = np.lexsort((box, cls, image[box]))
    box, cls = box[order], cls[order]
    limit = None if max_detections < 0 else max_detections
    picked, picked_scores, rounds = greedy_nms(
        scores[box, cls], boxes[box, cls], image[box] * classes + cls, limit,
        soft_suppression(nms_kernel, iou_threshold, sigma, nms_score_threshold), ctx.name)
    box, cls = box[picked], cls[picked]
    # The best max_detections of each image (of equal scores, by class then as picked),
    # then by class and score.
    kept, rank = best_of_each(image[box], picked_scores, (rounds, cls), limit)
    kept = kept[np.lexsort((rank, -picked_scores[kept], cls[kept], image[box[kept]]))]
    box, cls = box[kept], cls[kept]
    return (stored(picked_scores[kept], ctx.outputs[0]), rois.reshape(num_rois, classes, 4)[box, cls],
            cls.astype(np.int32), batches[box])


def soft_suppression(nms_kernel: int, iou_threshold: np.float32, sigma: np.float32,
                     score_threshold: np.float32) -> Suppression:
    """BOX_WITH_NMS_LIMIT's: scores lowered by the kernel's factor, then dropped below
    ``score_threshold``."""
    one, zero = np.float32(1), np.float32(0)
    if nms_kernel == NmsKernel.HARD:
        def factor(overlap):
            return np.where(overlap < iou_threshold, one, zero)
    elif nms_kernel == NmsKernel.LINEAR:
        def factor(overlap):
            return np.where(overlap < iou_threshold, one, one - overlap)
    else:
        def factor(overlap):
            return np.exp(-overlap * overlap / sigma)

    def suppress(scores, overlap):
        lowered = scores * factor(overlap)
        return lowered, ~(lowered < score_threshold)
    return suppress


def build_box_with_nms(ctx: OperationContext) -> Kernel:
    return parameterised_kernel(ctx, box_with_nms, NMS_OPERANDS[ctx.inputs[SCORES].type], SCORE_THRESHOLD)


def nms_example(score_type: int, roi_type: int, scalar_type: int, scale: float = 0.0,
                zero_point: int = 0) -> Example:
    """Three boxes of one image, two classes besides the background, as constants (so the
    number of boxes kept is known when the model is prepared)."""
    scores = np.array([[0.1, 0.9, 0.3], [0.2, 0.8, 0.7], [0.3, 0.4, 0.6]])
    boxes = np.array([[0, 0, 4, 4] * 3, [1, 1, 5, 5] * 3, [6, 6, 8, 8] * 3], float)
    if scale:
        scores, boxes = np.round(scores / scale) + zero_point, boxes / BOX_SCALE
    return Example(
        inputs=(ExampleOperand(score_type, (3, 3), constant=scores, scale=scale, zero_point=zero_point),
                ExampleOperand(roi_type, (3, 12), constant=boxes, scale=BOX_SCALE if scale else 0.0),
                ExampleOperand(I32, (3,), constant=[0, 0, 0]),
                ExampleOperand(scalar_type, constant=0.25), ExampleOperand(T.INT32, constant=-1),
                ExampleOperand(T.INT32, constant=NmsKernel.HARD), ExampleOperand(scalar_type, constant=0.3),
                ExampleOperand(scalar_type, constant=0.5), ExampleOperand(scalar_type, constant=0.1)),
        outputs=((score_type, scale, zero_point), (roi_type, BOX_SCALE if scale else 0.0, 0),
                 (I32, 0.0, 0), (I32, 0.0, 0)))


NMS_EXAMPLES = (nms_example(F32, F32, T.FLOAT32), nms_example(F16, F16, T.FLOAT16),
                nms_example(Q8, Q16A, T.FLOAT32, 0.01, 0), nms_example(QS8, Q16A, T.FLOAT32, 0.01, -128))

register(OperationDef(OperationType.BOX_WITH_NMS_LIMIT, NMS_SIGNATURES, infer_box_with_nms,
                      build_box_with_nms, check_box_with_nms, NMS_EXAMPLES, zero_sized_inputs=True))


# --- GENERATE_PROPOSALS ---------------------------------------------------------------------

(PROPOSAL_SCORES, PROPOSAL_DELTAS, ANCHORS, PROPOSAL_IMAGE_SIZE, HEIGHT_STRIDE, WIDTH_STRIDE,
 PRE_NMS_MAX, POST_NMS_MAX, PROPOSAL_IOU, MIN_SIZE, PROPOSAL_LAYOUT) = range(11)


def proposals_signature(scores: Sequence[int], anchors: Operand, image_size: Operand,
                        float_scalar: int, boxes_out: Operand) -> Signature:
    return Signature(
        inputs=(tensor(scores, rank=(4, 4), name="scores"),
                same_as(PROPOSAL_SCORES, rank=(4, 4), name="deltas"), anchors, image_size,
                scalar(float_scalar, name="height stride"), scalar(float_scalar, name="width stride"),
                scalar(T.INT32, name="boxes before NMS"), scalar(T.INT32, name="boxes after NMS"),
                scalar(float_scalar, name="IoU threshold"), scalar(float_scalar, name="min size"),
                LAYOUT),
        outputs=(same_as(PROPOSAL_SCORES), boxes_out, tensor((I32,))))


PROPOSALS_SIGNATURES = (
    *(proposals_signature((t,), same_as(PROPOSAL_SCORES, rank=(2, 2), name="anchors"),
                          same_as(PROPOSAL_SCORES, rank=(2, 2), name="image sizes"),
                          FLOAT_SCALAR[t], same_as(PROPOSAL_SCORES)) for t in FLOAT_TENSORS),
    proposals_signature(QUANT8_ASYMM_TENSORS,
                        tensor((T.TENSOR_QUANT16_SYMM,), rank=(2, 2), name="anchors"),
                        tensor((Q16A,), rank=(2, 2), name="image sizes"), T.FLOAT32,
                        Operand(types=(Q16A,), quantization=((Q16A, BOX_SCALE, BOX_ZERO_POINT),))))
PROPOSALS_OPERANDS = {t: s.inputs for s in PROPOSALS_SIGNATURES for t in s.inputs[PROPOSAL_SCORES].types}


def check_proposals(ctx: OperationContext) -> None:
    if ctx.inputs[PROPOSAL_SCORES].type in QUANT8_ASYMM_TENSORS:
        check_box_quantization(ctx, ANCHORS, "anchors")
        check_box_quantization(ctx, PROPOSAL_IMAGE_SIZE, "image sizes")
        check_scores_quantization(ctx)


def check_proposal_shapes(ctx: OperationContext, shapes: Sequence[Shape], nchw: bool, exact: bool) -> None:
    batches, height, width, anchors = nhwc_shape(known(shapes[PROPOSAL_SCORES], 4), nchw)
    check_shapes(ctx, shapes, {PROPOSAL_DELTAS: layout_shape(batches, height, width, 4 * anchors, nchw),
                               ANCHORS: (anchors, 4), PROPOSAL_IMAGE_SIZE: (batches, 2)}, exact)


def infer_proposals(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    nchw = ctx.scalar(PROPOSAL_LAYOUT)
    if nchw is not None:
        check_proposal_shapes(ctx, shapes, nchw, exact=False)
    return results_shapes(ctx, proposals, PROPOSALS_OPERANDS[ctx.inputs[PROPOSAL_SCORES].type],
                          HEIGHT_STRIDE, [(0,), (0, 4), (0,)])


def proposals(ctx: OperationContext, inputs: Sequence[np.ndarray],
              parameters: list) -> tuple[np.ndarray, ...]:
    height_stride, width_stride, pre_nms, post_nms, iou_threshold, min_size, nchw = parameters
    check_proposal_shapes(ctx, [x.shape for x in inputs], nchw, exact=True)
    scores_in, deltas_in, anchors_in, image_in = (ctx.inputs[i] for i in range(4))
    scores = to_nhwc(real(inputs[PROPOSAL_SCORES], scores_in), nchw)
    batches, height, width, num_anchors = scores.shape
    # Each anchor at each cell of the feature map, shifted by the cell's place in the image.
    shifts = np.empty((height, width, 1, 4), np.float32)
    shifts[..., 0::2] = (np.arange(width, dtype=np.float32) * width_stride)[:, None, None]
    shifts[..., 1::2] = (np.arange(height, dtype=np.float32) * height_stride)[:, None, None, None]
    anchors = real(inputs[ANCHORS], anchors_in) + shifts
    check_boxes(ctx, anchors, "input 2 (anchors)")
    deltas = to_nhwc(real(inputs[PROPOSAL_DELTAS], deltas_in), nchw)
    image_size = real(inputs[PROPOSAL_IMAGE_SIZE], image_in)
    count = height * width * num_anchors
    boxes = apply_deltas(anchors[None], deltas.reshape(batches, height, width, num_anchors, 4),
                         image_size[:, None, None, None, :]).reshape(batches, count, 4)
    scores = scores.reshape(batches, count)
    # The candidates of each image: its pre_nms best boxes (all when pre_nms <= 0 or more
    # than there are, in their order), then those large enough with their centre inside.
    if 0 < pre_nms < count:
        index = np.argsort(-scores, axis=1, kind="stable")[:, :pre_nms]
    else:
        index = np.broadcast_to(np.arange(count), scores.shape)
    image = np.repeat(np.arange(batches), index.shape[1])
    index = index.reshape(-1)
    candidates = boxes[image, index]
    width_, height_ = candidates[:, 2] - candidates[:, 0], candidates[:, 3] - candidates[:, 1]
    inside = ((width_ > min_size) & (height_ > min_size)
              & (candidates[:, 0] + width_ / np.float32(2) < image_size[image, 1])
              & (candidates[:, 1] + height_ / np.float32(2) < image_size[image, 0]))
    image, index = image[inside], index[inside]
    # As in the reference, a negative post_nms keeps every box and 0 none (types.hal calls
    # every non-positive value unlimited).
    picked, picked_scores, rounds = greedy_nms(scores[image, index], boxes[image, index], image,
                                               None if post_nms < 0 else post_nms,
                                               hard_suppression(iou_threshold), ctx.name)
    picked = picked[np.lexsort((rounds, image[picked]))]
    image, index = image[picked], index[picked]
    return (stored(scores[image, index], ctx.outputs[0]), stored(boxes[image, index], ctx.outputs[1]),
            image.astype(np.int32))


def build_proposals(ctx: OperationContext) -> Kernel:
    return parameterised_kernel(ctx, proposals, PROPOSALS_OPERANDS[ctx.inputs[PROPOSAL_SCORES].type],
                                HEIGHT_STRIDE)


def proposals_example(score_type: int, nchw: bool, scale: float = 0.0, zero_point: int = 0) -> Example:
    """One image of a 2x2 feature map with two anchors, as constants (the number of
    proposals kept is then known when the model is prepared)."""
    scores = np.array([[[0.9, 0.2], [0.5, 0.7]], [[0.4, 0.8], [0.6, 0.3]]]).reshape(1, 2, 2, 2)
    deltas = np.tile(np.array([0.1, -0.2, 0.2, 0.0]), (1, 2, 2, 2))
    anchors, image_size = np.array([[0, 0, 4, 4], [1, 0, 3, 6]], float), np.array([[8, 8]], float)
    if nchw:
        scores, deltas = scores.transpose(0, 3, 1, 2), deltas.transpose(0, 3, 1, 2)
    delta_zero = 128 if score_type == Q8 else 0
    if scale:
        scores = np.round(scores / scale) + zero_point
        deltas, anchors, image_size = np.round(deltas / 0.05) + delta_zero, anchors / BOX_SCALE, image_size / BOX_SCALE
    quantized = dict(scale=BOX_SCALE) if scale else {}
    float_scalar = FLOAT_SCALAR.get(score_type, T.FLOAT32)
    box_type = Q16A if scale else score_type
    return Example(
        inputs=(ExampleOperand(score_type, scores.shape, constant=scores, scale=scale, zero_point=zero_point),
                ExampleOperand(score_type, deltas.shape, constant=deltas, scale=0.05 if scale else 0.0,
                               zero_point=delta_zero if scale else 0),
                ExampleOperand(T.TENSOR_QUANT16_SYMM if scale else score_type, (2, 4), constant=anchors,
                               **quantized),
                ExampleOperand(box_type, (1, 2), constant=image_size, **quantized),
                ExampleOperand(float_scalar, constant=4.0), ExampleOperand(float_scalar, constant=4.0),
                ExampleOperand(T.INT32, constant=6), ExampleOperand(T.INT32, constant=-1),
                ExampleOperand(float_scalar, constant=0.3), ExampleOperand(float_scalar, constant=1.0),
                ExampleOperand(T.BOOL, constant=nchw)),
        outputs=((score_type, scale, zero_point), (box_type, BOX_SCALE if scale else 0.0, 0), (I32, 0.0, 0)))


PROPOSALS_EXAMPLES = (proposals_example(F32, False), proposals_example(F16, True),
                      proposals_example(Q8, True, 0.01, 0), proposals_example(QS8, False, 0.01, -128))

register(OperationDef(OperationType.GENERATE_PROPOSALS, PROPOSALS_SIGNATURES, infer_proposals,
                      build_proposals, check_proposals, PROPOSALS_EXAMPLES))


# --- DETECTION_POSTPROCESSING ---------------------------------------------------------------

(DETECTION_SCORES, DETECTION_DELTAS, DETECTION_ANCHORS, SCALE_Y, SCALE_X, SCALE_H, SCALE_W,
 REGULAR_NMS, MAX_DETECTIONS, MAX_CLASSES_PER_DETECTION, MAX_DETECTIONS_PER_CLASS,
 DETECTION_SCORE_THRESHOLD, DETECTION_IOU, BACKGROUND_IN_LABELS) = range(14)

POSITIVE, NON_NEGATIVE = Range(0, low_exclusive=True), Range(0)
DETECTION_LIMIT = scalar(T.INT32, Range(1), "max detections")
#: The limit of the kind of NMS chosen must be positive; the other is not used.
PER_DETECTION = scalar(T.INT32, name="max classes per detection")
PER_CLASS = scalar(T.INT32, name="max detections per class")


def detection_signature(t: int) -> Signature:
    float_scalar = FLOAT_SCALAR[t]
    return Signature(
        inputs=(tensor((t,), rank=(3, 3), name="scores"),
                same_as(DETECTION_SCORES, rank=(3, 3), name="deltas"),
                same_as(DETECTION_SCORES, rank=(2, 2), name="anchors"),
                *(scalar(float_scalar, POSITIVE, f"{axis} scale") for axis in ("y", "x", "height", "width")),
                scalar(T.BOOL, name="regular NMS"), DETECTION_LIMIT, PER_DETECTION, PER_CLASS,
                scalar(float_scalar, NON_NEGATIVE, "score threshold"),
                scalar(float_scalar, NON_NEGATIVE, "IoU threshold"),
                scalar(T.BOOL, name="background in labels")),
        outputs=(same_as(DETECTION_SCORES), same_as(DETECTION_SCORES), tensor((I32,)), tensor((I32,))))


DETECTION_SIGNATURES = tuple(detection_signature(t) for t in FLOAT_TENSORS)
DETECTION_OPERANDS = {s.inputs[0].types[0]: s.inputs for s in DETECTION_SIGNATURES}


class DetectionParameters(NamedTuple):
    """DETECTION_POSTPROCESSING's scalar inputs (3 to 13), floats as float32."""
    scale_y: np.float32
    scale_x: np.float32
    scale_h: np.float32
    scale_w: np.float32
    regular: bool
    max_detections: int
    per_detection: int
    per_class: int
    score_threshold: np.float32
    iou_threshold: np.float32
    background_in_labels: bool

    @property
    def rows(self) -> int:
        """Output rows an image: max detections, times the classes a detection for fast NMS."""
        return self.max_detections * (1 if self.regular else self.per_detection)


def detection_parameters(ctx: OperationContext, inputs=None) -> Optional[DetectionParameters]:
    """The parameters (None at prepare time when some are not constants); the limit of the
    NMS chosen (per class for the regular one, per detection for the fast one) must be
    positive."""
    values = scalar_values(ctx, DETECTION_OPERANDS[ctx.inputs[0].type], SCALE_Y, inputs)
    if values is None:
        return None
    p = DetectionParameters(*values)
    i, spec, limit = ((MAX_DETECTIONS_PER_CLASS, PER_CLASS, p.per_class) if p.regular
                      else (MAX_CLASSES_PER_DETECTION, PER_DETECTION, p.per_detection))
    check(limit > 0, "{}: input {} ({}) {} must be positive", ctx.name, i, spec.name, limit)
    return p


def check_detection(ctx: OperationContext) -> None:
    detection_parameters(ctx)


def detection_sizes(ctx: OperationContext, shapes: Sequence[Shape], exact: bool) -> tuple[int, int, int]:
    """(batches, anchors, classes), after checking the inputs fit together."""
    batches, anchors, classes = known(shapes[DETECTION_SCORES], 3)
    encoding = known(shapes[DETECTION_DELTAS], 3)[2]
    check(classes > 1 or not (exact or classes), "{}: input 0 (scores) has {} classes, fewer than 2",
          ctx.name, classes)
    check(encoding >= 4 or not (exact or encoding), "{}: input 1 (deltas) has {} values a box, fewer than 4",
          ctx.name, encoding)
    check_shapes(ctx, shapes, {DETECTION_DELTAS: (batches, anchors, encoding),
                               DETECTION_ANCHORS: (anchors, 4)}, exact)
    return batches, anchors, classes


def infer_detection(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    batches = detection_sizes(ctx, shapes, exact=False)[0]
    p = detection_parameters(ctx)
    rows = 0 if p is None else p.rows
    return [(batches, rows), (batches, rows, 4), (batches, rows), (batches,)]


def decode_centred(anchors: np.ndarray, deltas: np.ndarray, p: DetectionParameters) -> np.ndarray:
    """Boxes [y1, x1, y2, x2] from anchors [centre y, centre x, height, width] and deltas
    [dy, dx, dh, dw] (divided by their scales: the centre moves by dy heights and dx
    widths, the height and width are multiplied by exp(dh) and exp(dw))."""
    centre_y = anchors[:, 0] + anchors[:, 2] * deltas[..., 0] / p.scale_y
    centre_x = anchors[:, 1] + anchors[:, 3] * deltas[..., 1] / p.scale_x
    half_height = anchors[:, 2] * np.exp(deltas[..., 2] / p.scale_h) * np.float32(0.5)
    half_width = anchors[:, 3] * np.exp(deltas[..., 3] / p.scale_w) * np.float32(0.5)
    return np.stack([centre_y - half_height, centre_x - half_width,
                     centre_y + half_height, centre_x + half_width], axis=-1)


def regular_nms(scores: np.ndarray, boxes: np.ndarray, p: DetectionParameters, what: str):
    """NMS of each class but the background, then the best max_detections of each image:
    (image, anchor, class, score, output row) of each detection."""
    image, anchor, cls = np.nonzero((scores > p.score_threshold) & (np.arange(scores.shape[2]) > 0))
    order = np.lexsort((anchor, cls, image))
    image, anchor, cls = image[order], anchor[order], cls[order]
    picked, picked_scores, rounds = greedy_nms(scores[image, anchor, cls], boxes[image, anchor],
                                               image * scores.shape[2] + cls, p.per_class,
                                               hard_suppression(p.iou_threshold), what)
    image, anchor, cls = image[picked], anchor[picked], cls[picked]
    kept, rank = best_of_each(image, picked_scores, (rounds, cls), p.max_detections)
    return image[kept], anchor[kept], cls[kept], picked_scores[kept], rank


def fast_nms(scores: np.ndarray, boxes: np.ndarray, p: DetectionParameters, what: str):
    """One NMS of the anchors by their best class score (the background aside); each
    detection then gives its per_detection best classes: (image, anchor, class, score,
    output row) of each."""
    best = scores[:, :, 1:].max(axis=2)
    image, anchor = np.nonzero(best > p.score_threshold)
    picked, _, rounds = greedy_nms(best[image, anchor], boxes[image, anchor], image,
                                   p.max_detections, hard_suppression(p.iou_threshold), what)
    image, anchor = image[picked], anchor[picked]
    per_detection = min(scores.shape[2] - 1, p.per_detection)
    cls = 1 + np.argsort(-scores[image, anchor, 1:], axis=1, kind="stable")[:, :per_detection]
    rows = rounds[:, None] * per_detection + np.arange(per_detection)
    image, anchor = (np.repeat(x, per_detection) for x in (image, anchor))
    cls = cls.reshape(-1)
    return image, anchor, cls, scores[image, anchor, cls], rows.reshape(-1)


def build_detection(ctx: OperationContext) -> Kernel:
    scores_in, deltas_in, anchors_in = ctx.inputs[:3]
    dtype = STORAGE_DTYPE[scores_in.type]
    boxes_out = f"{ctx.name}: output 1 (boxes)"
    fixed = detection_parameters(ctx)

    def kernel(*inputs):
        batches = detection_sizes(ctx, [x.shape for x in inputs[:3]], exact=True)[0]
        p = fixed or detection_parameters(ctx, inputs)
        check_shape((batches, p.rows, 4), itemsize(scores_in.type), boxes_out)
        scores = real(inputs[DETECTION_SCORES], scores_in)
        boxes = decode_centred(real(inputs[DETECTION_ANCHORS], anchors_in),
                               real(inputs[DETECTION_DELTAS], deltas_in)[..., :4], p)
        nms = regular_nms if p.regular else fast_nms
        image, anchor, cls, detected, row = nms(scores, boxes, p, ctx.name)
        # Rows past an image's detections are zeros.
        out_scores, out_boxes = np.zeros((batches, p.rows), dtype), np.zeros((batches, p.rows, 4), dtype)
        out_classes = np.zeros((batches, p.rows), np.int32)
        out_scores[image, row] = detected
        out_boxes[image, row] = boxes[image, anchor]
        out_classes[image, row] = cls - (0 if p.background_in_labels else 1)
        return out_scores, out_boxes, out_classes, np.bincount(image, minlength=batches).astype(np.int32)
    return kernel


def detection_example(t: int, regular: bool) -> Example:
    """Two images of three anchors and three classes (the first the background)."""
    float_scalar = FLOAT_SCALAR[t]
    return Example(
        inputs=(ExampleOperand(t, (2, 3, 3), value=[[[0, 0.9, 0.8], [0, 0.7, 0.75], [0, 0.3, 0.2]],
                                                    [[0, 0.1, 0.95], [0, 0.6, 0.5], [0, 0.2, 0.3]]]),
                ExampleOperand(t, (2, 3, 4), value=[[[0, 0, 0, 0], [0, 1, 0, 0], [0, -1, 0, 0]]] * 2),
                ExampleOperand(t, (3, 4), value=[[0.5, 0.5, 1, 1], [0.5, 0.5, 1, 1], [0.5, 10.5, 1, 1]]),
                *(ExampleOperand(float_scalar, constant=v) for v in (10.0, 10.0, 5.0, 5.0)),
                ExampleOperand(T.BOOL, constant=regular), ExampleOperand(T.INT32, constant=3),
                ExampleOperand(T.INT32, constant=2), ExampleOperand(T.INT32, constant=1),
                ExampleOperand(float_scalar, constant=0.0), ExampleOperand(float_scalar, constant=0.5),
                ExampleOperand(T.BOOL, constant=False)),
        outputs=((t, 0.0, 0), (t, 0.0, 0), (I32, 0.0, 0), (I32, 0.0, 0)))


DETECTION_EXAMPLES = (detection_example(F32, True), detection_example(F16, False))

register(OperationDef(OperationType.DETECTION_POSTPROCESSING, DETECTION_SIGNATURES, infer_detection,
                      build_detection, check_detection, DETECTION_EXAMPLES))
