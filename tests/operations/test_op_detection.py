"""AXIS_ALIGNED_BBOX_TRANSFORM, BOX_WITH_NMS_LIMIT, GENERATE_PROPOSALS and
DETECTION_POSTPROCESSING: hand-computed cases (each kind of NMS on a few boxes, boxes
clipped to their image, empty results as zero-sized outputs), one-field mutations of valid
instances, and runs on a device on every execution path."""
from __future__ import annotations

import math

import numpy as np
import pytest

from driver.errors import ResourceError, ValidationError
from driver.hal.enums import OperandType as T, OperationType as Op
from driver.operations.detection import MAX_DETECTIONS, NmsKernel
from tests.operations.helpers import (F16, F32, I32, Q8, QS8, const, context, definition, infer,
                                      output, rejects, run, tensor)
from tests.operations.on_device import assert_same_everywhere, constant_input, fed_input, run_everywhere

Q16A, Q16S = T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT16_SYMM


# --- AXIS_ALIGNED_BBOX_TRANSFORM ------------------------------------------------------------------

def bbox(rois, deltas, batches, images, operand_type=F32):
    return ([tensor(operand_type, np.shape(rois)), tensor(operand_type, np.shape(deltas)),
             tensor(I32, np.shape(batches)), tensor(operand_type, np.shape(images))], [output(operand_type)])


def test_bbox_transform_moves_scales_and_clips_to_the_image():
    # Box [0, 0, 4, 2] (centre (2, 1)): class 1 moves the centre by a quarter width to x 3
    # and doubles the width to 8, so x spans [-1, 7], clipped to [0, 6] by image 1 (height
    # 10, width 6); class 2 halves the height about a centre moved half a height down.
    rois, deltas = [[0, 0, 4, 2]], [[0.25, 0, math.log(2), 0, 0, 0.5, 0, -math.log(2)]]
    batches, images = [1], [[1, 1], [10, 6]]
    got = run(Op.AXIS_ALIGNED_BBOX_TRANSFORM, *bbox(rois, deltas, batches, images), [rois, deltas, batches, images])[0]
    np.testing.assert_allclose(got, [[0, 0, 6, 2, 0, 1.5, 4, 2.5]], atol=1e-6)


def test_bbox_transform_quantized_and_zero_boxes():
    inputs = [tensor(Q16A, [1, 4], 0.125), tensor(QS8, [1, 4], 0.5, 0), tensor(I32, [1]), tensor(Q16A, [1, 2], 0.125)]
    # Deltas [0, 0, 0, 0] after dequantization: the box [1, 2, 3, 4] is unchanged.
    got = run(Op.AXIS_ALIGNED_BBOX_TRANSFORM, inputs, [output(Q16A, (), 0.125)],
              [[[8, 16, 24, 32]], [[0, 0, 0, 0]], [0], [[80, 80]]])[0]
    assert got.tolist() == [[8, 16, 24, 32]]
    empty = run(Op.AXIS_ALIGNED_BBOX_TRANSFORM, *bbox(np.zeros((0, 4)), np.zeros((0, 8)), np.zeros(0), [[5, 5]]),
                [np.zeros((0, 4)), np.zeros((0, 8)), np.zeros(0), [[5, 5]]])[0]
    assert empty.shape == (0, 8)


def test_bbox_transform_rejects_bad_values_at_run_time():
    kernel = definition(Op.AXIS_ALIGNED_BBOX_TRANSFORM).build(
        context(Op.AXIS_ALIGNED_BBOX_TRANSFORM, *bbox([[0, 0, 1, 1]], [[0] * 4], [0], [[5, 5]])))
    f = np.float32
    with pytest.raises(ValidationError, match=r"input 2 \(batch indexes\) has an index outside \[0, 1\)"):
        kernel(f([[0, 0, 1, 1]]), f([[0] * 4]), np.int32([1]), f([[5, 5]]))
    with pytest.raises(ValidationError, match=r"input 0 \(boxes\) has a box with x2 < x1"):
        kernel(f([[2, 0, 1, 1]]), f([[0] * 4]), np.int32([0]), f([[5, 5]]))
    with pytest.raises(ValidationError, match=r"input 0 \(boxes\) has shape \[1, 4\], expected \[2, 4\]"):
        kernel(f([[0, 0, 1, 1]]), f([[0] * 4] * 2), np.int32([0]), f([[5, 5]]))


def test_bbox_transform_rejections():
    good_in, good_out = bbox([[0, 0, 1, 1]], [[0] * 8], [0], [[5, 5]])
    op = Op.AXIS_ALIGNED_BBOX_TRANSFORM
    rejects(op, good_in[:3], good_out, "expected 4 inputs")
    rejects(op, [good_in[0], tensor(F16, [1, 8]), *good_in[2:]], good_out, r"input 1 \(deltas")
    rejects(op, [*good_in[:3], tensor(F32, [1, 2, 1])], good_out, r"input 3 \(image sizes, operand 3\) has rank 3")
    rejects(op, [good_in[0], tensor(F32, [1, 6]), *good_in[2:]], good_out, "6 values a box")
    rejects(op, [tensor(F32, [1, 5]), *good_in[1:]], good_out, r"input 0 \(boxes\) has shape \[1, 5\]")
    rejects(op, [*good_in[:2], tensor(I32, [2]), good_in[3]], good_out, r"input 2 \(batch indexes\)")
    quantized = [tensor(Q16A, [1, 4], 0.125), tensor(Q8, [1, 4], 0.1, 128), tensor(I32, [1]),
                 tensor(Q16A, [1, 2], 0.125)]
    definition(op).validate(context(op, quantized, [output(Q16A, (), 0.125)]))
    rejects(op, [tensor(Q16A, [1, 4], 0.25), *quantized[1:]], [output(Q16A, (), 0.125)],
            r"input 0 \(boxes.*scale 0.125")
    rejects(op, [*quantized[:3], tensor(Q16A, [1, 2], 0.125, 1)], [output(Q16A, (), 0.125)], r"input 3 \(image sizes")
    rejects(op, quantized, [output(Q16A, (), 0.5)], "output 0 .* must have scale 0.125")
    rejects(op, [quantized[0], tensor(Q16A, [1, 4], 0.125), *quantized[2:]], [output(Q16A, (), 0.125)], "input 1")


# --- BOX_WITH_NMS_LIMIT ---------------------------------------------------------------------------

#: One image, the background and one class: A, then B overlapping A by IoU 81/119, C apart,
#: D inside A (IoU 0.9 with A, 72/118 with B), in falling scores.
A, B, C, D = [0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30], [0, 0, 10, 9]
NMS_SCORES = [[0, 0.9], [0, 0.8], [0, 0.7], [0, 0.6]]
NMS_BOXES = [[0, 0, 0, 0] + box for box in (A, B, C, D)]


def nms(scores, boxes, batches, kernel=NmsKernel.HARD, iou_threshold=0.5, sigma=0.5,
        nms_score_threshold=0.1, score_threshold=0.0, max_detections=-1, score_type=F32, box_type=F32,
        scalar_type=T.FLOAT32, scale=0.0, zero_point=0):
    inputs = [tensor(score_type, np.shape(scores), scale, zero_point),
              tensor(box_type, np.shape(boxes), 0.125 if box_type == Q16A else 0.0), tensor(I32, np.shape(batches)),
              const(scalar_type, score_threshold), const(T.INT32, max_detections), const(T.INT32, int(kernel)),
              const(scalar_type, iou_threshold), const(scalar_type, sigma), const(scalar_type, nms_score_threshold)]
    outputs = [output(score_type, (), scale, zero_point), output(box_type, (), 0.125 if box_type == Q16A else 0.0),
               output(I32), output(I32)]
    return inputs, outputs


def run_nms(scores=NMS_SCORES, boxes=NMS_BOXES, batches=(0, 0, 0, 0), **parameters):
    return run(Op.BOX_WITH_NMS_LIMIT, *nms(scores, boxes, batches, **parameters), [scores, boxes, list(batches)])


def test_linear_nms_lowers_overlapping_scores_by_one_minus_iou():
    # B falls to 0.8 * (1 - 81/119) and stays above 0.2; D falls to 0.6 * 0.1 and goes.
    scores, boxes, _, _ = run_nms(kernel=NmsKernel.LINEAR, nms_score_threshold=0.2)
    np.testing.assert_allclose(scores, [0.9, 0.7, 0.8 * (1 - 81 / 119)], rtol=1e-6)
    assert boxes.tolist() == [A, C, B]


def test_gaussian_nms_lowers_every_score_by_the_overlap():
    # After A: B is 0.8 exp(-(81/119)^2 / sigma), D 0.6 exp(-0.81 / sigma); after B, D is
    # lowered again by exp(-(72/118)^2 / sigma) and falls under 0.1.
    sigma = 0.5
    scores, boxes, _, _ = run_nms(kernel=NmsKernel.GAUSSIAN, sigma=sigma)
    np.testing.assert_allclose(scores, [0.9, 0.7, 0.8 * math.exp(-(81 / 119) ** 2 / sigma)], rtol=1e-6)
    assert boxes.tolist() == [A, C, B]
    assert 0.6 * math.exp(-0.81 / sigma) * math.exp(-(72 / 118) ** 2 / sigma) < 0.1


def test_nms_limits_each_image_and_orders_by_class_then_score():
    # Two images (batch indexes 3 and 5), two classes besides the background.
    scores = [[0.5, 0.2, 0.9], [0.5, 0.8, 0.1], [0, 0.7, 0.6], [0, 0.3, 0.4]]
    boxes = [[0, 0, 0, 0] + A + A, [0, 0, 0, 0] + C + C, [0, 0, 0, 0] + A + A, [0, 0, 0, 0] + C + C]
    scores_out, boxes_out, classes, batches = run_nms(scores, boxes, (3, 3, 5, 5), max_detections=2)
    # Image 3: 0.9 (class 2, A) and 0.8 (class 1, C) beat 0.2 and 0.1; image 5: 0.7 and 0.6
    # on A (each class has its own NMS), then class order.
    np.testing.assert_allclose(scores_out, [0.8, 0.9, 0.7, 0.6])
    assert classes.tolist() == [1, 2, 1, 2] and batches.tolist() == [3, 3, 5, 5]
    assert boxes_out.tolist() == [C, A, A, A]


def test_nms_keeping_nothing_gives_zero_sized_outputs():
    for results in (run_nms(score_threshold=0.95),
                    run_nms(np.zeros((0, 2)), np.zeros((0, 8)), ())):
        assert [r.shape for r in results] == [(0,), (0, 4), (0,), (0,)]


def test_nms_quantized_scores_and_boxes():
    scores = np.round(np.array(NMS_SCORES) / 0.01).astype(np.int32) - 128
    boxes = (np.array(NMS_BOXES) * 8).astype(np.int32)
    got = run_nms(scores, boxes, score_type=QS8, box_type=Q16A, scale=0.01, zero_point=-128)
    assert got[0].tolist() == [-38, -58] and got[1].tolist() == [[0, 0, 80, 80], [160, 160, 240, 240]]


def test_nms_output_shapes_are_known_only_from_constants():
    inputs, outputs = nms(NMS_SCORES, NMS_BOXES, [0] * 4)
    assert infer(Op.BOX_WITH_NMS_LIMIT, context(Op.BOX_WITH_NMS_LIMIT, inputs, outputs)) == [(0,), (0, 4), (0,), (0,)]
    constants = [const(F32, NMS_SCORES), const(F32, NMS_BOXES), const(I32, [0] * 4), *inputs[3:]]
    assert infer(Op.BOX_WITH_NMS_LIMIT, context(Op.BOX_WITH_NMS_LIMIT, constants, outputs)) == [
        (2,), (2, 4), (2,), (2,)]


def test_nms_rejections():
    op = Op.BOX_WITH_NMS_LIMIT
    good_in, good_out = nms(NMS_SCORES, NMS_BOXES, [0] * 4)
    rejects(op, good_in[:8], good_out, "expected 9 inputs")
    rejects(op, good_in, good_out[:3], "expected 4 outputs")
    rejects(op, [*good_in[:5], const(T.INT32, 3), *good_in[6:]], good_out, r"NMS kernel 3 is not one of HARD")
    rejects(op, [*good_in[:3], const(T.FLOAT16, 0.0), *good_in[4:]], good_out, r"input 3 \(score threshold")
    rejects(op, [tensor(F32, [4, 1]), tensor(F32, [4, 4]), *good_in[2:]], good_out, "1 classes, fewer than 2")
    rejects(op, [good_in[0], tensor(F32, [4, 4]), *good_in[2:]], good_out, r"input 1 \(boxes\) has shape \[4, 4\]")
    rejects(op, [*good_in[:2], tensor(I32, [3]), *good_in[3:]], good_out, r"input 2 \(batch indexes\)")
    rejects(op, good_in, [output(F16), *good_out[1:]], "output 0")
    quantized_in, quantized_out = nms(NMS_SCORES, NMS_BOXES, [0] * 4, score_type=Q8, box_type=Q16A,
                                      scale=0.01, zero_point=0)
    definition(op).validate(context(op, quantized_in, quantized_out))
    rejects(op, [quantized_in[0], tensor(Q16A, [4, 8], 0.25), *quantized_in[2:]], quantized_out,
            r"input 1 \(boxes.*scale 0.125")
    rejects(op, quantized_in, [output(Q8, (), 0.02, 0), *quantized_out[1:]], r"output 0 \(scores.*expected those")
    rejects(op, quantized_in, [quantized_out[0], output(Q16A, (), 0.5), *quantized_out[2:]], "output 1")


def test_nms_run_time_kernel_and_boxes_are_checked():
    inputs, outputs = nms(NMS_SCORES, NMS_BOXES, [0] * 4)
    inputs[5] = tensor(T.INT32)
    kernel = definition(Op.BOX_WITH_NMS_LIMIT).build(context(Op.BOX_WITH_NMS_LIMIT, inputs, outputs))
    args = [np.float32(NMS_SCORES), np.float32(NMS_BOXES), np.int32([0] * 4), *(i.value for i in inputs[3:5]),
            np.int32(7), *(i.value for i in inputs[6:])]
    with pytest.raises(ValidationError, match=r"input 5 \(operand 5\): NMS kernel 7 is not one of"):
        kernel(*args)
    args[5], args[1] = np.int32(0), np.float32([[0, 0, 1, 1, 5, 0, 1, 1]] * 4)
    with pytest.raises(ValidationError, match=r"input 1 \(boxes\) has a box with x2 < x1"):
        kernel(*args)


# --- GENERATE_PROPOSALS ---------------------------------------------------------------------------

def proposals(scores, deltas, anchors, images, stride=4.0, pre_nms=-1, post_nms=-1, iou_threshold=0.5,
              min_size=0.0, nchw=False):
    inputs = [tensor(F32, np.shape(scores)), tensor(F32, np.shape(deltas)), tensor(F32, np.shape(anchors)),
              tensor(F32, np.shape(images)), const(T.FLOAT32, stride), const(T.FLOAT32, stride),
              const(T.INT32, pre_nms), const(T.INT32, post_nms), const(T.FLOAT32, iou_threshold),
              const(T.FLOAT32, min_size), const(T.BOOL, nchw)]
    return inputs, [output(F32), output(F32), output(I32)]


def run_proposals(scores, stride=4.0, nchw=False, **parameters):
    """Images 8 high and 8 wide, one anchor [0, 0, 4, 4] at each cell, no deltas."""
    scores = np.array(scores, np.float32)
    deltas = np.zeros(scores.shape[:3] + (4,), np.float32)
    if nchw:
        scores, deltas = scores.transpose(0, 3, 1, 2), deltas.transpose(0, 3, 1, 2)
    args = [scores, deltas, [[0, 0, 4, 4]], np.full((len(scores), 2), 8.0)]
    return run(Op.GENERATE_PROPOSALS, *proposals(*args, stride=stride, nchw=nchw, **parameters), args)


def test_proposals_shift_anchors_by_the_cell_and_suppress_overlaps():
    # With stride 2 the anchors [0, 0, 4, 4] and [2, 0, 6, 4] overlap by IoU 8/24: kept under
    # threshold 0.5, not under 0.3.
    assert len(run_proposals([[[[0.8], [0.9]]]], stride=2.0)[0]) == 2
    scores, boxes, _ = run_proposals([[[[0.8], [0.9]]]], stride=2.0, iou_threshold=0.3)
    assert scores.tolist() == pytest.approx([0.9]) and boxes.tolist() == [[2, 0, 6, 4]]


def test_proposals_limits_and_layouts():
    scores = [[[[0.8], [0.9]], [[0.3], [0.7]]]]     # a 2x2 map: four boxes apart
    assert run_proposals(scores, pre_nms=1)[0].tolist() == pytest.approx([0.9])
    assert run_proposals(scores, post_nms=3)[0].tolist() == pytest.approx([0.9, 0.8, 0.7])
    nhwc, nchw = run_proposals(scores), run_proposals(scores, nchw=True)
    for a, b in zip(nhwc, nchw):
        assert a.tolist() == b.tolist()
    assert nhwc[1].tolist() == [[4, 0, 8, 4], [0, 0, 4, 4], [4, 4, 8, 8], [0, 4, 4, 8]]


def test_proposals_too_small_give_zero_sized_outputs():
    # Boxes 4 wide are not wider than a min size of 4.
    assert [r.shape for r in run_proposals([[[[0.8], [0.9]]]], min_size=4.0)] == [(0,), (0, 4), (0,)]
    assert [r.shape for r in run_proposals(np.zeros((0, 1, 2, 1)))] == [(0,), (0, 4), (0,)]


def test_proposals_rejections():
    op = Op.GENERATE_PROPOSALS
    good_in, good_out = proposals(np.zeros((1, 2, 2, 3)), np.zeros((1, 2, 2, 12)), np.zeros((3, 4)), [[8, 8]])
    rejects(op, good_in[:10], good_out, "expected 11 inputs")
    rejects(op, [good_in[0], tensor(F32, [1, 2, 2, 8]), *good_in[2:]], good_out,
            r"input 1 \(deltas\) has shape \[1, 2, 2, 8\], expected \[1, 2, 2, 12\]")
    rejects(op, [*good_in[:2], tensor(F32, [2, 4]), *good_in[3:]], good_out, r"input 2 \(anchors\)")
    rejects(op, [*good_in[:3], tensor(F32, [2, 2]), *good_in[4:]], good_out, r"input 3 \(image sizes\)")
    rejects(op, [*good_in[:10], const(T.BOOL, True)], good_out, r"input 1 \(deltas\)")   # NCHW
    rejects(op, [*good_in[:10], const(T.INT32, 0)], good_out, r"input 10 \(layout")
    rejects(op, [*good_in[:4], const(T.FLOAT16, 4.0), *good_in[5:]], good_out, r"input 4 \(height stride")
    quantized = [tensor(Q8, [1, 2, 2, 3], 0.01, 0), tensor(Q8, [1, 2, 2, 12], 0.05, 128),
                 tensor(Q16S, [3, 4], 0.125), tensor(Q16A, [1, 2], 0.125), *good_in[4:]]
    quantized_out = [output(Q8, (), 0.01, 0), output(Q16A, (), 0.125), output(I32)]
    definition(op).validate(context(op, quantized, quantized_out))
    rejects(op, [*quantized[:2], tensor(Q16S, [3, 4], 0.5), *quantized[3:]], quantized_out, r"input 2 \(anchors")
    rejects(op, [*quantized[:3], tensor(Q16A, [1, 2], 0.125, 3), *quantized[4:]], quantized_out, "input 3")
    rejects(op, [*quantized[:2], tensor(Q16A, [3, 4], 0.125), *quantized[3:]], quantized_out, "input 2")
    rejects(op, quantized, [output(Q8, (), 0.01, 1), *quantized_out[1:]], r"output 0 \(scores")
    rejects(op, quantized, [quantized_out[0], output(Q16A, (), 0.25), quantized_out[2]], "output 1")


# --- DETECTION_POSTPROCESSING ---------------------------------------------------------------------

#: Three anchors (centre y, centre x, height, width): 0 and 2 at one place (anchor 2 moved
#: a tenth of its height down by its delta, to IoU 0.9 / 1.1 with anchor 0), 1 apart.
DETECTION_SCORES = [[[0, 0.9, 0.2], [0, 0.3, 0.8], [0, 0.85, 0.1]]]
DETECTION_DELTAS = [[[0, 0, 0, 0], [0, 0, 0, 0], [1, 0, 0, 0]]]
DETECTION_ANCHORS = [[0.5, 0.5, 1, 1], [0.5, 10.5, 1, 1], [0.5, 0.5, 1, 1]]
BOX_0, BOX_1 = [0, 0, 1, 1], [0, 10, 1, 11]


def detection(regular, max_detections, per_detection=1, per_class=2, background_in_labels=False,
              operand_type=F32, scalar_type=T.FLOAT32, scale_y=10.0):
    inputs = [tensor(operand_type, [1, 3, 3]), tensor(operand_type, [1, 3, 4]), tensor(operand_type, [3, 4]),
              const(scalar_type, scale_y), *(const(scalar_type, 10.0) for _ in range(3)),
              const(T.BOOL, regular), const(T.INT32, max_detections), const(T.INT32, per_detection),
              const(T.INT32, per_class), const(scalar_type, 0.0), const(scalar_type, 0.5),
              const(T.BOOL, background_in_labels)]
    return inputs, [output(operand_type), output(operand_type), output(I32), output(I32)]


def run_detection(*args, **kwargs):
    return run(Op.DETECTION_POSTPROCESSING, *detection(*args, **kwargs),
               [DETECTION_SCORES, DETECTION_DELTAS, DETECTION_ANCHORS])


def test_regular_nms_per_class_then_the_best_of_the_image():
    # Class 1: anchor 0 (0.9) suppresses anchor 2, then anchor 1 (0.3); class 2: anchor 1
    # (0.8), then anchor 0 (0.2), the per-class limit. By score; row 4 stays empty.
    scores, boxes, classes, count = run_detection(True, 5)
    np.testing.assert_allclose(scores, [[0.9, 0.8, 0.3, 0.2, 0]])
    np.testing.assert_allclose(boxes, [[BOX_0, BOX_1, BOX_1, BOX_0, [0] * 4]])
    assert classes.tolist() == [[0, 1, 0, 1, 0]] and count.tolist() == [4]
    # The best three of them.
    scores, _, _, count = run_detection(True, 3)
    np.testing.assert_allclose(scores, [[0.9, 0.8, 0.3]])
    assert count.tolist() == [3]


def test_fast_nms_two_classes_a_detection_with_the_background_in_the_labels():
    scores, _, classes, count = run_detection(False, 2, per_detection=2, background_in_labels=True)
    np.testing.assert_allclose(scores, [[0.9, 0.2, 0.8, 0.3]])
    assert classes.tolist() == [[1, 2, 2, 1]] and count.tolist() == [4]


def test_detection_float16_and_shapes_from_parameters():
    scores, boxes, _, count = run(Op.DETECTION_POSTPROCESSING, *detection(
        True, 1, operand_type=F16, scalar_type=T.FLOAT16), [DETECTION_SCORES, DETECTION_DELTAS, DETECTION_ANCHORS])
    assert scores.dtype == np.float16 and scores.tolist() == [[np.float16(0.9)]] and count.tolist() == [1]
    ctx = context(Op.DETECTION_POSTPROCESSING, *detection(False, 3, per_detection=2))
    assert infer(Op.DETECTION_POSTPROCESSING, ctx) == [(1, 6), (1, 6, 4), (1, 6), (1,)]


def test_detection_output_size_from_run_time_parameters_is_limited():
    inputs, outputs = detection(False, 3)
    inputs[MAX_DETECTIONS] = tensor(T.INT32)
    kernel = definition(Op.DETECTION_POSTPROCESSING).build(context(Op.DETECTION_POSTPROCESSING, inputs, outputs))
    args = [np.float32(DETECTION_SCORES), np.float32(DETECTION_DELTAS), np.float32(DETECTION_ANCHORS),
            *(i.value for i in inputs[3:])]
    args[MAX_DETECTIONS] = np.int32(2**30)
    with pytest.raises(ResourceError, match="output 1"):
        kernel(*args)
    args[MAX_DETECTIONS] = np.int32(0)
    with pytest.raises(ValidationError, match="max detections 0 must be >= 1"):
        kernel(*args)


def test_detection_rejections():
    op = Op.DETECTION_POSTPROCESSING
    good_in, good_out = detection(True, 3)
    rejects(op, good_in[:13], good_out, "expected 14 inputs")
    rejects(op, *detection(True, 3, scale_y=0.0), r"input 3 \(operand 3\): y scale 0.0 must be positive")
    rejects(op, *detection(True, 0), "max detections 0 must be >= 1")
    rejects(op, *detection(True, 3, per_class=0), r"input 10 \(max detections per class\) 0 must be positive")
    rejects(op, *detection(False, 3, per_detection=0), r"input 9 \(max classes per detection\) 0")
    rejects(op, [*good_in[:11], const(T.FLOAT32, -1.0), *good_in[12:]], good_out, "score threshold -1.0")
    rejects(op, [tensor(F32, [1, 3, 1]), *good_in[1:]], good_out, "1 classes, fewer than 2")
    rejects(op, [good_in[0], tensor(F32, [1, 3, 3]), *good_in[2:]], good_out, "3 values a box, fewer than 4")
    rejects(op, [*good_in[:2], tensor(F32, [2, 4]), *good_in[3:]], good_out, r"input 2 \(anchors\)")
    rejects(op, [tensor(Q8, [1, 3, 3], 0.1, 0), *good_in[1:]], good_out, "input 0")
    rejects(op, [*good_in[:3], const(T.FLOAT16, 10.0), *good_in[4:]], good_out, "input 3")


# --- on a device, every execution path --------------------------------------------------------------

def test_box_operations_on_every_path():
    """Hard NMS drops the boxes overlapping a pick (B and D, under A); GENERATE_PROPOSALS of a
    1x2 map with stride 4 gives the anchors [0, 0, 4, 4] and [4, 0, 8, 4], apart; fast NMS
    takes the best class of each anchor."""
    f = np.float32
    results = run_everywhere(Op.AXIS_ALIGNED_BBOX_TRANSFORM, [
        fed_input(F32, f([[0, 0, 4, 2]])), fed_input(F32, f([[0.25, 0, math.log(2), 0]])),
        fed_input(I32, np.int32([0])), constant_input(F32, f([[10, 6]]))], [(F32, [1, 4], 0.0, 0)])
    assert_same_everywhere(results, [f([[0, 0, 6, 2]])], rtol=1e-6)

    scalars = nms(NMS_SCORES, NMS_BOXES, [0] * 4)[0][3:]
    results = run_everywhere(Op.BOX_WITH_NMS_LIMIT, [
        fed_input(F32, f(NMS_SCORES)), fed_input(F32, f(NMS_BOXES)), fed_input(I32, np.int32([0] * 4)),
        *(constant_input(s.type, s.value) for s in scalars)],
        [(F32, [2], 0.0, 0), (F32, [2, 4], 0.0, 0), (I32, [2], 0.0, 0), (I32, [2], 0.0, 0)])
    assert_same_everywhere(results, [f([0.9, 0.7]), f([A, C]), np.int32([1, 1]), np.int32([0, 0])])

    inputs = proposals(np.zeros((1, 1, 2, 1)), np.zeros((1, 1, 2, 4)), [[0, 0, 4, 4]], [[8, 8]])[0]
    results = run_everywhere(Op.GENERATE_PROPOSALS, [
        fed_input(F32, f([[[[0.8], [0.9]]]])), fed_input(F32, np.zeros((1, 1, 2, 4), f)),
        constant_input(F32, f([[0, 0, 4, 4]])), constant_input(F32, f([[8, 8]])),
        *(constant_input(s.type, s.value) for s in inputs[4:])],
        [(F32, [2], 0.0, 0), (F32, [2, 4], 0.0, 0), (I32, [2], 0.0, 0)])
    assert_same_everywhere(results, [f([0.9, 0.8]), f([[4, 0, 8, 4], [0, 0, 4, 4]]), np.int32([0, 0])])

    inputs = detection(False, 2)[0]
    results = run_everywhere(Op.DETECTION_POSTPROCESSING, [
        fed_input(F32, f(DETECTION_SCORES)), fed_input(F32, f(DETECTION_DELTAS)),
        constant_input(F32, f(DETECTION_ANCHORS)), *(constant_input(s.type, s.value) for s in inputs[3:])],
        [(F32, [1, 2], 0.0, 0), (F32, [1, 2, 4], 0.0, 0), (I32, [1, 2], 0.0, 0), (I32, [1], 0.0, 0)])
    assert_same_everywhere(results, [f([[0.9, 0.8]]), f([[BOX_0, BOX_1]]), np.int32([[0, 1]]), np.int32([2])],
                           rtol=1e-6)
