"""ROI_ALIGN, ROI_POOLING and HEATMAP_MAX_KEYPOINT: hand-computed sampling points, adaptive
sampling, quantized weights and averages, empty bins, the keypoint's quadratic refinement,
layouts and zero ROIs; one-field mutations refused naming the operation and operand, values
refused at run time, and device runs on every execution path."""
from __future__ import annotations

import numpy as np
import pytest

from driver.errors import ResourceError, ValidationError
from driver.hal.enums import OperandType as T, OperationType as Op
from driver.operations.roi import quantize_f32
from tests.operations.helpers import (F16, F32, I32, Q8, QS8, const, context, definition, output,
                                      rejects, run, run1, scalar, tensor)
from tests.operations.on_device import (assert_same_everywhere, constant_input, fed_input,
                                        refused_by_the_device, run_everywhere)

Q16 = T.TENSOR_QUANT16_ASYMM
ALIGN, POOLING, HEATMAP = Op.ROI_ALIGN, Op.ROI_POOLING, Op.HEATMAP_MAX_KEYPOINT
#: A 4 x 4 NHWC map whose pixel (y, x) is 10 y + x: bilinear interpolation there is exact.
RAMP = (10 * np.arange(4)[:, None] + np.arange(4)).astype(np.float32).reshape(1, 4, 4, 1)


def roi_inputs(operation, map_operand, rois_operand, num_rois, sizes=(2, 2), ratio=1.0,
               points=(2, 2), nchw=False, ratio_type=T.FLOAT32):
    """The inputs of ROI_ALIGN (``points`` sampling points) or ROI_POOLING: a run-time map,
    ROIs and batch indexes, constant scalars."""
    return [map_operand, rois_operand, tensor(I32, [num_rois]), *(const(T.INT32, s) for s in sizes),
            const(ratio_type, ratio), const(ratio_type, ratio),
            *((const(T.INT32, p) for p in points) if operation == ALIGN else ()), const(T.BOOL, nchw)]


def roi(operation, x, rois, batches, **parameters):
    """The output of a float32 ROI_ALIGN or ROI_POOLING of NHWC ``x`` (NCHW with nchw=True)."""
    rois = np.asarray(rois, np.float32)
    inputs = roi_inputs(operation, tensor(F32, x.shape), tensor(F32, rois.shape), len(rois), **parameters)
    return run1(operation, inputs, [output(F32)], [x, rois, batches])


# --- ROI_ALIGN ----------------------------------------------------------------------------------

def test_align_ratios_map_the_roi_onto_the_feature_map():
    # Ratio 2: the ROI [0, 0, 8, 8] of the image is the whole map.
    np.testing.assert_allclose(roi(ALIGN, RAMP, [[0, 0, 8, 8]], [0], ratio=2.0),
                               roi(ALIGN, RAMP, [[0, 0, 4, 4]], [0]))


def test_align_adaptive_sampling_per_roi():
    # 0 points: ceil(bin size) per ROI, so 4 x 4 points for the whole map (rows at 0.5, 1.5,
    # 2.5, 3 and columns likewise average 1.875), a single point for a 1 x 1 ROI.
    got = roi(ALIGN, RAMP, [[0, 0, 4, 4], [1, 1, 2, 2]], [0, 0], sizes=(1, 1), points=(0, 0))
    np.testing.assert_allclose(got.reshape(-1), [18.75 + 1.875, 15 + 1.5])
    # One fixed point: the bin's centre.
    np.testing.assert_allclose(roi(ALIGN, RAMP, [[0, 0, 4, 2]], [0], sizes=(1, 1), points=(1, 1)).reshape(-1),
                               [12])
    # Mixed: adaptive rows (2), one column.
    np.testing.assert_allclose(roi(ALIGN, RAMP, [[0, 0, 4, 2]], [0], sizes=(1, 1), points=(0, 1)).reshape(-1),
                               [12])


def test_align_small_rois_are_one_pixel_and_batches_pick_the_map():
    x = np.stack([RAMP[0], 100 + RAMP[0]])              # 2 batches
    got = roi(ALIGN, x, [[2, 1, 2, 1], [2, 1, 2, 1]], [0, 1], sizes=(1, 1), points=(1, 1))
    # A 0 x 0 ROI at (2, 1) is 1 x 1: its one point is (2.5, 1.5), between four pixels.
    np.testing.assert_allclose(got.reshape(-1), [17.5, 117.5])


def test_align_nchw_and_depth():
    x = np.concatenate([RAMP, -RAMP], axis=3)                  # NHWC [1, 4, 4, 2]
    nhwc = roi(ALIGN, x, [[0, 0, 4, 4]], [0])
    nchw = roi(ALIGN, np.ascontiguousarray(x.transpose(0, 3, 1, 2)), [[0, 0, 4, 4]], [0], nchw=True)
    assert nchw.shape == (1, 2, 2, 2)
    np.testing.assert_array_equal(nchw, nhwc.transpose(0, 3, 1, 2))
    np.testing.assert_array_equal(nhwc[..., 1], -nhwc[..., 0])


@pytest.mark.parametrize("operation", [ALIGN, POOLING])
@pytest.mark.parametrize("nchw", [False, True])
def test_no_rois_give_a_zero_sized_output(operation, nchw):
    x = np.zeros((1, 3, 4, 4) if nchw else (1, 4, 4, 3), np.float32)
    got = roi(operation, x, np.zeros((0, 4)), np.zeros(0, np.int32), sizes=(2, 5), nchw=nchw)
    assert got.shape == ((0, 3, 2, 5) if nchw else (0, 2, 5, 3))


def test_align_quantized_weights_are_multiples_of_1_255():
    # Stored [[10, 20], [30, 50]], zero point 10. Points (0.5, 0.5): four weights of 0.25,
    # each round(63.75) = 64, so 64 * 70; (0.5, 1.5): 127 * (10 + 40), since 0.5 / (1/255)
    # is 127.49999 in single precision as the reference divides; (1.5, 0.5): 127 * (20 + 40);
    # (1.5, 1.5): 255 * 40. The sum 28650, times 0.5 / 255 / 0.5 / 4 points, is 28.1: 28.
    x = np.array([10, 20, 30, 50], np.uint8).reshape(1, 2, 2, 1)
    inputs = roi_inputs(ALIGN, tensor(Q8, x.shape, 0.5, 10), tensor(Q16, [1, 4], 0.125, 0), 1, sizes=(1, 1))
    got = run1(ALIGN, inputs, [output(Q8, (), 0.5, 10)], [x, [[0, 0, 16, 16]], [0]])
    assert got.reshape(-1).tolist() == [38]


def test_align_quantized_signed_with_another_output_quantization():
    x = np.array([-128, 127, -128, 127], np.int8).reshape(1, 1, 2, 2)          # NCHW
    inputs = roi_inputs(ALIGN, tensor(QS8, x.shape, 1.0, 0), tensor(Q16, [1, 4], 0.125, 0), 1,
                        sizes=(1, 2), points=(1, 1), nchw=True)
    # Points at x = 0.5 (between -128 and 127: -0.5) and 1.5 (127), output scale 2.
    got = run1(ALIGN, inputs, [output(QS8, (), 2.0, -1)], [x, [[0, 0, 16, 16]], [0]])
    assert got.reshape(-1).tolist() == [-1, 63]


# --- ROI_POOLING --------------------------------------------------------------------------------

def test_pooling_rounds_the_roi_and_the_bins_outwards():
    # Ratio 2: corners 0.5 and 2.5 round away from zero to 1 and 3, 3 pixels in 2 bins of
    # 1.5: [1, 3) and [2, 4).
    got = roi(POOLING, RAMP, [[1, 1, 5, 5]], [0], ratio=2.0)
    np.testing.assert_array_equal(got[0, ..., 0], [[22, 23], [32, 33]])


def test_pooling_empty_bins_give_zero():
    # Columns [3, 4] in 3 bins of 2/3: [3, 4), [3, 5) and [4, 5), held within the map:
    # the last is empty.
    got = roi(POOLING, RAMP, [[3, 0, 4, 3]], [0], sizes=(1, 3))
    np.testing.assert_array_equal(got.reshape(-1), [33, 33, 0])
    # The quantized empty bin is the zero point, whatever the bin values.
    x = np.full((1, 4, 4, 1), -100, np.int8)
    inputs = roi_inputs(POOLING, tensor(QS8, x.shape, 0.5, 7), tensor(Q16, [1, 4], 0.125, 0), 1, sizes=(1, 3))
    got = run1(POOLING, inputs, [output(QS8, (), 0.5, 7)], [x, [[24, 0, 32, 24]], [0]])
    assert got.reshape(-1).tolist() == [-100, -100, 7]


def test_pooling_float16_nchw():
    x = np.ascontiguousarray(RAMP.astype(np.float16).transpose(0, 3, 1, 2))
    rois = np.array([[0, 0, 3, 3]], np.float16)
    inputs = roi_inputs(POOLING, tensor(F16, x.shape), tensor(F16, rois.shape), 1, nchw=True,
                        ratio_type=T.FLOAT16)
    got = run1(POOLING, inputs, [output(F16)], [x, rois, [0]])
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got[0, 0], [[11, 13], [31, 33]])


# --- HEATMAP_MAX_KEYPOINT -----------------------------------------------------------------------

def keypoints(heatmaps, boxes, nchw=False, operand_type=F32):
    """Scores and keypoints of float heatmaps, NHWC unless ``nchw``."""
    heatmaps = np.asarray(heatmaps, np.float32)
    boxes = np.asarray(boxes, np.float32)
    inputs = [tensor(operand_type, heatmaps.shape), tensor(operand_type, boxes.shape), const(T.BOOL, nchw)]
    return run(HEATMAP, inputs, [output(operand_type), output(operand_type)], [heatmaps, boxes])


def one_map(grid):
    """A single 3 x 3 heatmap of one keypoint, NHWC."""
    return np.asarray(grid, np.float32).reshape(1, 3, 3, 1)


def test_keypoint_refined_to_the_vertex_of_a_quadratic():
    # -(x - 0.25)^2 - y^2 about the centre: the maximum 0 lies 0.25 pixels to the right.
    offsets = np.arange(-1, 2)
    grid = -(offsets[None, :] - 0.25) ** 2 - offsets[:, None] ** 2
    scores, points = keypoints(one_map(grid), [[10, 20, 16, 23]])
    np.testing.assert_allclose(scores, [[0]], atol=1e-6)
    np.testing.assert_allclose(points, [[[10 + (1.75 / 3) * 6, 20 + 1.5]]], rtol=1e-6)


def test_keypoint_step_is_held_within_one_and_a_half_pixels():
    # A Hessian [[-1, 0.95], [0.95, -1]] and gradient (0.1, 0.1) ask for a step (2, 2):
    # shortened to (1.5, 1.5), which reaches the box's far corner, with the score there.
    grid = [[0.95, 0.4, -0.95], [0.4, 1, 0.6], [-0.95, 0.6, 0.95]]
    scores, points = keypoints(one_map(grid), [[0, 0, 3, 3]])
    np.testing.assert_allclose(scores, [[1.1875]], rtol=1e-5)
    np.testing.assert_allclose(points, [[[3, 3]]], rtol=1e-5)


def test_keypoint_of_a_flat_heatmap_is_its_first_pixel_unrefined():
    # All equal: the first maximum, a singular Hessian, so no step.
    scores, points = keypoints(np.full((1, 2, 2, 1), 5, np.float32), [[0, 0, 4, 4]])
    np.testing.assert_allclose(scores, [[5]])
    np.testing.assert_allclose(points, [[[1, 1]]])


def test_keypoint_at_the_edge_mirrors_the_neighbourhood_nchw_keypoints():
    # Keypoint 0's maximum at (0, 0): the missing row and column -1 read row and column 1,
    # so the expansion is symmetric and makes no step. Keypoint 1 peaks at (1, 1).
    heatmaps = np.array([[[4, 1], [1, 0]], [[0, 1], [1, 4]]], np.float32).reshape(1, 2, 2, 2)   # NCHW
    scores, points = keypoints(heatmaps, [[0, 0, 2, 2]], nchw=True)
    np.testing.assert_allclose(scores, [[4, 4]])
    np.testing.assert_allclose(points, [[[0.5, 0.5], [1.5, 1.5]]])


def test_keypoint_quantized():
    # Stored 128 + 2 * [[0, 1, 0], [1, 2, 1], [0, 1, 0]] at scale 0.5: the peak 2, stored
    # 108 at scale 0.25 and zero point 100; keypoint (1.5, 3) is 12 and 24 eighths.
    heatmaps = (128 + 2 * np.array([[0, 1, 0], [1, 2, 1], [0, 1, 0]])).astype(np.uint8).reshape(1, 3, 3, 1)
    inputs = [tensor(Q8, heatmaps.shape, 0.5, 128), tensor(Q16, [1, 4], 0.125, 0), const(T.BOOL, False)]
    scores, points = run(HEATMAP, inputs, [output(Q8, (), 0.25, 100), output(Q16, (), 0.125, 0)],
                         [heatmaps, [[0, 0, 24, 48]]])
    assert scores.tolist() == [[108]] and points.tolist() == [[[12, 24]]]


def test_quantization_rounds_after_adding_the_zero_point():
    # round(-0.5 / 1 + 10) = round(9.5) = 10, halves away from zero; NaN is the zero point.
    got = quantize_f32(np.array([-0.5, -1e9, np.nan], np.float32), output(Q8, (), 1.0, 10))
    assert got.tolist() == [10, 0, 10]


def test_keypoints_of_no_boxes():
    scores, points = keypoints(np.zeros((0, 3, 3, 2)), np.zeros((0, 4)))
    assert scores.shape == (0, 2) and points.shape == (0, 2, 2)


# --- validation ---------------------------------------------------------------------------------

def align_instance(**changes):
    """A valid float32 ROI_ALIGN's inputs, with inputs replaced by position."""
    inputs = roi_inputs(ALIGN, tensor(F32, [1, 4, 4, 1]), tensor(F32, [2, 4]), 2)
    for i, operand in changes.items():
        inputs[int(i[1:])] = operand
    return inputs


def test_roi_align_rejections():
    out = [output(F32)]
    rejects(ALIGN, align_instance()[:9], out, "ROI_ALIGN\\): expected 10 inputs, got 9")
    rejects(ALIGN, align_instance(i1=tensor(I32, [2, 4])), out,
            "ROI_ALIGN\\): input 1 \\(rois, operand 1\\) has type TENSOR_INT32, expected TENSOR_FLOAT32")
    rejects(ALIGN, align_instance(i1=tensor(F32, [2, 4, 1])), out, "input 1 \\(rois, operand 1\\) has rank 3 > 2")
    rejects(ALIGN, align_instance(i0=tensor(F32, [4, 4, 1])), out, "input 0 \\(feature map.*rank 3 < 4")
    rejects(ALIGN, align_instance(i3=const(T.INT32, 0)), out,
            "ROI_ALIGN\\): input 3.*output height 0 must be positive")
    rejects(ALIGN, align_instance(i6=const(T.FLOAT32, 0.0)), out, "input 6.*width ratio 0.0 must be positive")
    rejects(ALIGN, align_instance(i7=const(T.INT32, -1)), out,
            "input 7.*height sampling points -1 must be non-negative")
    rejects(ALIGN, align_instance(i5=const(T.FLOAT16, 1.0)), out, "input 5.*FLOAT16, expected FLOAT32")
    rejects(ALIGN, align_instance(i9=const(T.INT32, 0)), out, "input 9 \\(layout.*expected BOOL")
    rejects(ALIGN, align_instance(i1=tensor(F32, [2, 5])), out, "input 1 \\(rois\\) has shape \\[2, 5\\]")
    rejects(ALIGN, align_instance(i2=tensor(I32, [3])), out, "num_rois of input 1 .*sizes 2 and 3 differ")
    rejects(ALIGN, align_instance(), [output(F16)], "output 0.*TENSOR_FLOAT16, expected TENSOR_FLOAT32")


def test_quantized_roi_rejections():
    quantized = roi_inputs(ALIGN, tensor(Q8, [1, 4, 4, 1], 0.5, 0), tensor(Q16, [1, 4], 0.25, 0), 1)
    rejects(ALIGN, quantized, [output(Q8, (), 0.5, 0)],
            "ROI_ALIGN\\): input 1 \\(rois, operand 1\\) must have scale 0.125")
    quantized[1] = tensor(Q16, [1, 4], 0.125, 0)
    rejects(ALIGN, quantized, [output(Q8, (), 0.0, 0)], "output 0 .*scale 0.0 <= 0")
    rejects(ALIGN, quantized[:1] + [tensor(F32, [1, 4])] + quantized[2:], [output(Q8, (), 0.5, 0)],
            "input 1 \\(rois, operand 1\\) has type TENSOR_FLOAT32, expected TENSOR_QUANT16_ASYMM")
    pooled = roi_inputs(POOLING, tensor(QS8, [1, 4, 4, 1], 0.5, 0), tensor(Q16, [1, 4], 0.125, 0), 1)
    rejects(POOLING, pooled, [output(QS8, (), 0.25, 0)], "ROI_POOLING\\): output 0.*expected those of input 0")
    rejects(POOLING, pooled + [const(T.BOOL, False)], [output(QS8, (), 0.5, 0)], "expected 8 inputs, got 9")


def test_heatmap_rejections():
    def instance(heatmaps=(2, 3, 3, 4), boxes=(2, 4), operand_type=F32, nchw=False):
        if operand_type == Q8:
            return [tensor(Q8, heatmaps, 0.5, 0), tensor(Q16, boxes, 0.125, 0), const(T.BOOL, nchw)]
        return [tensor(operand_type, heatmaps), tensor(operand_type, boxes), const(T.BOOL, nchw)]
    floats = [output(F32), output(F32)]
    rejects(HEATMAP, instance(heatmaps=(2, 3, 4, 4)), floats,
            "HEATMAP_MAX_KEYPOINT\\): height and width .*3 and 4 differ")
    rejects(HEATMAP, instance(heatmaps=(2, 4, 1, 1), nchw=True), floats,
            "input 0 \\(heatmaps\\) has size 1, under 2")
    rejects(HEATMAP, instance(boxes=(3, 4)), floats, "num_boxes of input 0 .*2 and 3 differ")
    rejects(HEATMAP, instance(boxes=(2, 4, 1)), floats, "input 1 \\(boxes, operand 1\\) has rank 3 > 2")
    rejects(HEATMAP, instance(boxes=(2, 2)), floats, "input 1 \\(boxes\\) has shape \\[2, 2\\]")
    rejects(HEATMAP, instance(), [output(F32)], "expected 2 outputs, got 1")
    rejects(HEATMAP, instance(operand_type=Q8), [output(Q8, (), 0.5, 0), output(Q16, (), 0.25, 0)],
            "output 1 \\(operand 4\\) must have scale 0.125 and zero point 0, has 0.25")
    rejects(HEATMAP, instance(operand_type=Q8), [output(Q8, (), 0.5, 0), output(Q8, (), 0.5, 0)],
            "output 1 \\(keypoints, operand 4\\) has type TENSOR_QUANT8_ASYMM, "
            "expected TENSOR_QUANT16_ASYMM")


# --- values refused at run time -----------------------------------------------------------------

def roi_kernel(operation, inputs, out):
    return definition(operation).build(context(operation, inputs, [out]))


@pytest.mark.parametrize("operation", [ALIGN, POOLING])
@pytest.mark.parametrize("rois, batches, match", [
    ([[0, 0, 4, 5]], [0], "input 1 \\(rois\\): ROI 0 \\[0.0, 0.0, 4.0, 5.0\\] is not a region of the 4 x 4"),
    ([[0, 0, 1, 1], [2, 0, 1, 1]], [0, 0], "input 1 \\(rois\\): ROI 1 .* 0 <= x1 <= x2"),
    ([[-1, 0, 1, 1]], [0], "input 1 \\(rois\\): ROI 0 \\[-1.0"),
    ([[np.nan, 0, 1, 1]], [0], "input 1 \\(rois\\): ROI 0 \\[nan"),
    ([[0, 0, 1, 1]], [1], "input 2 \\(batch indexes\\): ROI 0.s batch 1 is not in \\[0, 1\\)"),
    ([[0, 0, 1, 1]], [-1], "input 2 \\(batch indexes\\)"),
])
def test_rois_outside_the_map_are_refused(operation, rois, batches, match):
    rois = np.asarray(rois, np.float32)
    inputs = roi_inputs(operation, tensor(F32, RAMP.shape), tensor(F32, rois.shape), len(rois))
    kernel = roi_kernel(operation, inputs, output(F32))
    scalars = [np.int32(2), np.int32(2), np.float32(1), np.float32(1)] + [np.int32(2)] * 2 * (operation == ALIGN)
    with pytest.raises(ValidationError, match=f"{operation.name}\\): {match}"):
        kernel(RAMP, rois, np.array(batches, np.int32), *scalars, np.bool_(False))


def test_run_time_parameters_and_shapes_are_checked():
    inputs = [tensor(F32, [1, 4, 4, 1]), tensor(F32, [1, 4]), tensor(I32, [1]), *(scalar(t) for t in
              (T.INT32, T.INT32, T.FLOAT32, T.FLOAT32, T.INT32, T.INT32, T.BOOL))]
    kernel = roi_kernel(ALIGN, inputs, output(F32))
    rois, batches = np.array([[0, 0, 4, 4]], np.float32), np.zeros(1, np.int32)

    def call(x=RAMP, rois=rois, batches=batches, sizes=(2, 2), ratios=(1.0, 1.0), points=(2, 2)):
        return kernel(x, rois, batches, *map(np.int32, sizes), *map(np.float32, ratios),
                      *map(np.int32, points), np.bool_(False))[0]
    np.testing.assert_allclose(call()[0, ..., 0], [[11, 12.75], [28.5, 30.25]])
    with pytest.raises(ValidationError, match="input 4 \\(operand 4\\): output width 0 must be positive"):
        call(sizes=(2, 0))
    with pytest.raises(ValidationError, match="input 5 .*height ratio nan must be positive"):
        call(ratios=(np.nan, 1.0))
    with pytest.raises(ValidationError, match="input 8 .*width sampling points -2 must be non-negative"):
        call(points=(1, -2))
    with pytest.raises(ValidationError, match="input 0 \\(feature map\\) has shape \\[1, 0, 4, 1\\]"):
        call(x=np.zeros((1, 0, 4, 1), np.float32))
    with pytest.raises(ValidationError, match="input 1 \\(rois\\) has shape \\[1, 4\\] and input 2 .* \\[0\\]"):
        call(batches=np.zeros(0, np.int32))
    with pytest.raises(ResourceError, match="ROI_ALIGN\\), its sampling points"):
        call(points=(1 << 30, 1 << 30))
    with pytest.raises(ResourceError, match="ROI_ALIGN\\), output 0"):
        call(sizes=(1 << 20, 1 << 20))


def test_quantized_average_multiplier_must_be_below_one():
    # 10 / 255 / 0.001 / 1 point is far over 1.
    inputs = roi_inputs(ALIGN, tensor(Q8, [1, 2, 2, 1], 10.0, 0), tensor(Q16, [1, 4], 0.125, 0), 1,
                        sizes=(1, 1), points=(1, 1))
    kernel = roi_kernel(ALIGN, inputs, output(Q8, (), 0.001, 0))
    with pytest.raises(ValidationError, match="ROI_ALIGN\\): input 0 scale 10.0 / 255 / output 0 scale 0.001"):
        kernel(np.zeros((1, 2, 2, 1), np.uint8), np.array([[0, 0, 8, 8]], np.uint16), np.zeros(1, np.int32),
               *(input_.value for input_ in inputs[3:]))


def test_heatmap_boxes_and_shapes_at_run_time():
    inputs = [tensor(F32, [0, 0, 0, 0]), tensor(F32, [0, 4]), scalar(T.BOOL)]
    kernel = definition(HEATMAP).build(context(HEATMAP, inputs, [output(F32), output(F32)]))
    with pytest.raises(ValidationError, match="HEATMAP_MAX_KEYPOINT\\): input 1 \\(boxes\\): box 0 .*x1 <= x2"):
        kernel(np.zeros((1, 2, 2, 1), np.float32), np.array([[2, 0, 1, 1]], np.float32), np.bool_(False))
    with pytest.raises(ValidationError, match="input 0 \\(heatmaps\\) has shape \\[1, 1, 1, 1\\]"):
        kernel(np.zeros((1, 1, 1, 1), np.float32), np.zeros((1, 4), np.float32), np.bool_(False))
    with pytest.raises(ValidationError, match="input 1 \\(boxes\\) has shape \\[2, 4\\], expected \\[1, 4\\]"):
        kernel(np.zeros((1, 2, 2, 1), np.float32), np.zeros((2, 4), np.float32), np.bool_(False))


# --- on the device ------------------------------------------------------------------------------

def roi_device_args(operation, map_type, x, rois, scale=0.0, zero_point=0, nchw=False, ratio_type=T.FLOAT32):
    box_type, box_scale = (Q16, 0.125) if map_type in (Q8, QS8) else (map_type, 0.0)
    return [fed_input(map_type, x, scale, zero_point), fed_input(box_type, rois, box_scale),
            constant_input(I32, np.zeros(len(rois), np.int32)),
            *(constant_input(T.INT32, s) for s in (2, 2)), *(constant_input(ratio_type, 1.0) for _ in range(2)),
            *((constant_input(T.INT32, 2) for _ in range(2)) if operation == ALIGN else ()),
            constant_input(T.BOOL, nchw)]


@pytest.mark.parametrize("operation, expected", [(ALIGN, [[11, 12.75], [28.5, 30.25]]),
                                                 (POOLING, [[11, 13], [31, 33]])])
def test_roi_operations_on_the_device(operation, expected):
    # ROI_ALIGN: bins of 2 pixels, points at 0.5 and 1.5, then 2.5 and 3.5: the last past the
    # last pixel, so it takes that pixel's value (3, not 3.5). Columns average to 1 and 2.75.
    # ROI_POOLING: the ROI [0, 3] is 4 pixels, bins [0, 2) and [2, 4) in each dimension.
    rois = [[0, 0, 4, 4]] if operation == ALIGN else [[0, 0, 3, 3]]
    results = run_everywhere(operation, roi_device_args(operation, F32, RAMP, rois), [(F32, (1, 2, 2, 1), 0.0, 0)])
    assert_same_everywhere(results, [np.reshape(expected, (1, 2, 2, 1))], rtol=1e-6)
    # NCHW, quantized: the same ramp stored as is at scale 1, ROIs in eighths. ROI_ALIGN's
    # weights of 1/4 and 1/2 are 64/255 and 127/255: its 28.5 is 29060 / 1020, so 28.
    x = np.ascontiguousarray(RAMP.transpose(0, 3, 1, 2)).astype(np.uint8)
    quantized = run_everywhere(operation, roi_device_args(operation, Q8, x, np.multiply(rois, 8), 1.0, 0, True),
                               [(Q8, (1, 1, 2, 2), 1.0, 0)])
    rounded = [[11, 13], [28, 30]] if operation == ALIGN else expected
    assert_same_everywhere(quantized, [np.reshape(rounded, (1, 1, 2, 2)).astype(np.uint8)])


def test_heatmap_on_the_device():
    # A symmetric peak: the keypoint is the pixel's centre, (1 + 0.5) / 3 of the box.
    heatmaps = np.array([[0, 1, 0], [1, 2, 1], [0, 1, 0]], np.float32).reshape(1, 1, 3, 3)    # NCHW
    args = [fed_input(F32, heatmaps), fed_input(F32, [[0, 0, 3, 6]]), constant_input(T.BOOL, True)]
    results = run_everywhere(HEATMAP, args, [(F32, (1, 1), 0.0, 0), (F32, (1, 1, 2), 0.0, 0)])
    assert_same_everywhere(results, [np.array([[2]], np.float32), np.array([[[1.5, 3]]], np.float32)])


@pytest.mark.parametrize("operation", [ALIGN, POOLING])
def test_invalid_roi_instances_are_refused_by_the_device(operation):
    args = roi_device_args(operation, F32, RAMP, [[0, 0, 4, 4]])
    args[3] = constant_input(T.INT32, -2)                                   # output height
    refused_by_the_device(operation, args, [(F32, (1, 2, 2, 1), 0.0, 0)])


def test_invalid_heatmap_instance_is_refused_by_the_device():
    args = [fed_input(F32, np.zeros((1, 3, 4, 1), np.float32)), fed_input(F32, [[0, 0, 3, 6]]),
            constant_input(T.BOOL, False)]
    refused_by_the_device(HEATMAP, args, [(F32, (1, 1), 0.0, 0), (F32, (1, 1, 2), 0.0, 0)])
