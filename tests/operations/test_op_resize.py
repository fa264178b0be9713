"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR: hand-computed sampling (legacy,
align_corners, half_pixel_centers), sizes and scale factors, NCHW, quantized rounding,
one-field mutations refused naming the operation and operand, and device runs."""
from __future__ import annotations

import numpy as np
import pytest

from driver.errors import ValidationError
from driver.hal.enums import OperandType as T, OperationType as Op
from tests.operations.helpers import (F16, F32, Q8, QS8, const, context, definition, output,
                                      rejects, run1, scalar, tensor)
from tests.operations.on_device import assert_same_everywhere, refused_by_the_device, run_everywhere
from tests.operations.test_op_space import data, device_instance, out

BILINEAR, NEAREST = Op.RESIZE_BILINEAR, Op.RESIZE_NEAREST_NEIGHBOR
ROW = np.array([0, 4], np.float32).reshape(1, 1, 2, 1)          # NHWC, one row of two pixels


def resize(operation, x, width, height, flags=(), operand_type=F32, size_type=T.INT32):
    inputs = [data(operand_type, x.shape), const(size_type, width), const(size_type, height),
              *(const(T.BOOL, f) for f in flags)]
    return run1(operation, inputs, [out(operand_type)], [x])


@pytest.mark.parametrize("flags, width, expected", [
    ((False,), 4, [0, 2, 4, 4]),                       # x * in/out: 0, 0.5, 1, 1.5 (clamped)
    ((False, True, False), 3, [0, 2, 4]),              # align_corners: x * (in-1)/(out-1)
    ((False, False, True), 4, [0, 1, 3, 4]),           # half_pixel: (x + 0.5) * 0.5 - 0.5
    ((), 1, [0]),
])
def test_bilinear_sampling(flags, width, expected):
    got = resize(BILINEAR, ROW, width, 1, flags)
    np.testing.assert_array_equal(got.reshape(-1), expected)


@pytest.mark.parametrize("flags, expected", [
    ((False,), [0, 0, 1]),                   # floor(y * 2/3)
    ((False, True, False), [0, 1, 1]),       # round(y * 1/2): 0.5 rounds up
    ((False, False, True), [0, 1, 1]),       # floor((y + 0.5) * 2/3)
])
def test_nearest_sampling(flags, expected):
    x = np.array([[1, 2], [3, 4]], np.float32).reshape(1, 2, 2, 1)
    got = resize(NEAREST, x, 3, 3, flags)[0, ..., 0]
    np.testing.assert_array_equal(got, x[0, ..., 0][np.ix_(expected, expected)])


def test_bilinear_two_dimensions_nchw_and_scales():
    x = np.array([[1, 2], [3, 4]], np.float32).reshape(1, 1, 2, 2)        # NCHW
    got = resize(BILINEAR, x, 2.0, 1.5, (True,), size_type=T.FLOAT32)
    assert got.shape == (1, 1, 3, 4)                      # floor(2 * 1.5) by floor(2 * 2.0)
    np.testing.assert_allclose(got[0, 0, 0], [1, 1.5, 2, 2])
    np.testing.assert_allclose(got[0, 0, :, 0], [1, 1 + 2 * (2 / 3), 3], rtol=1e-6)
    np.testing.assert_allclose(got[0, 0, 2], [3, 3.5, 4, 4])


def test_float16_scales_and_computation():
    x = np.array([1, 2, 3, 4], np.float16).reshape(1, 2, 2, 1)
    got = resize(BILINEAR, x, 1.5, 1.5, (), F16, T.FLOAT16)          # floor(2 * 1.5) = 3
    assert got.dtype == np.float16 and got.shape == (1, 3, 3, 1)
    np.testing.assert_allclose(got[0, 0, :, 0], [1, np.float16(1 + 2 / 3), 2], rtol=1e-3)


@pytest.mark.parametrize("operand_type, pixels, expected", [
    (Q8, [125, 128], [125, 126, 128, 128]),      # 126.5 is cast down
    (QS8, [-3, 0], [-3, -1, 0, 0]),              # -1.5 is cast toward zero, as the reference casts
])
def test_quantized_bilinear_casts_toward_zero_as_the_reference(operand_type, pixels, expected):
    x = np.array(pixels, np.uint8 if operand_type == Q8 else np.int8).reshape(1, 1, 2, 1)
    np.testing.assert_array_equal(resize(BILINEAR, x, 4, 1, (), operand_type).reshape(-1), expected)


@pytest.mark.parametrize("operation", [BILINEAR, NEAREST])
def test_run_time_sizes_and_flags(operation):
    inputs = [data(F32, [1, 1, 2, 1]), scalar(T.INT32), scalar(T.INT32), *[scalar(T.BOOL)] * 3]
    got = run1(operation, inputs, [out(F32)], [ROW, 3, 1, False, True, False])
    np.testing.assert_array_equal(got.reshape(-1), [0, 2, 4] if operation == BILINEAR else [0, 4, 4])
    kernel = definition(operation).build(context(operation, inputs, [out(F32)]))
    flags = [np.bool_(False)] * 3
    with pytest.raises(ValidationError,
                       match=f"{operation.name}\\): input 1 \\(output width\\) 0 .*not positive"):
        kernel(ROW, np.int32(0), np.int32(1), *flags)
    with pytest.raises(ValidationError, match="align_corners.*half_pixel_centers.*both true"):
        kernel(ROW, np.int32(2), np.int32(1), np.bool_(False), np.bool_(True), np.bool_(True))
    with pytest.raises(ValidationError, match="only its batches may be 0"):
        kernel(np.zeros((1, 0, 2, 1), np.float32), np.int32(2), np.int32(1), *flags)


def test_zero_batches():
    got = resize(NEAREST, np.zeros((0, 2, 2, 3), np.float32), 4, 4, (False,))
    assert got.shape == (0, 4, 4, 3)


def test_resize_rejections():
    x = data(F32, [1, 2, 2, 1])
    size = const(T.INT32, 2)
    rejects(BILINEAR, [x, const(T.INT32, 0), size], [out(F32)], "RESIZE_BILINEAR\\): input 1.*output width 0")
    rejects(BILINEAR, [x, size, const(T.FLOAT32, 0.0)], [out(F32)], "input 2.*FLOAT32, expected INT32")
    rejects(BILINEAR, [x, const(T.FLOAT32, 0.25), const(T.FLOAT32, 1.0)], [out(F32)],
            "input 1 \\(output width\\) 0.25 makes an output size of 0.0")
    rejects(BILINEAR, [x, const(T.FLOAT32, -1.0), const(T.FLOAT32, 1.0)], [out(F32)],
            "output width -1.0 must be positive")
    rejects(BILINEAR, [data(F16, [1, 2, 2, 1]), const(T.FLOAT32, 1.0), const(T.FLOAT32, 1.0)], [out(F16)],
            "input 1.*FLOAT32, expected INT32 or FLOAT16")
    rejects(BILINEAR, [x, size, size, const(T.BOOL, False), const(T.BOOL, True), const(T.BOOL, True)],
            [out(F32)], "RESIZE_BILINEAR\\): input 4 \\(align_corners\\) and input 5.*both true")
    rejects(BILINEAR, [x, size], [out(F32)], "expected 3 or 4 or 5 or 6 inputs")
    rejects(NEAREST, [x, size, size], [out(F32)], "RESIZE_NEAREST_NEIGHBOR\\): expected 4 or 5 or 6 inputs")
    rejects(NEAREST, [tensor(F32, [2, 2, 1]), size, size, const(T.BOOL, False)], [out(F32)], "rank 3 < 4")
    rejects(NEAREST, [x, size, size, const(T.INT32, 0)], [out(F32)], "input 3 \\(layout.*expected BOOL")
    rejects(NEAREST, [data(Q8, [1, 2, 2, 1]), size, size, const(T.BOOL, False)], [output(Q8, (), 0.5, 0)],
            "output 0.*zero point 0, expected those of input 0")
    rejects(NEAREST, [data(T.TENSOR_INT32, [1, 2, 2, 1]), size, size, const(T.BOOL, False)],
            [output(T.TENSOR_INT32)], "input 0.*TENSOR_INT32")


@pytest.mark.parametrize("operation, operand_type", [(BILINEAR, Q8), (NEAREST, QS8), (BILINEAR, F32)])
def test_on_the_device(operation, operand_type):
    x = np.array([10, 20, 30, 40], np.uint8 if operand_type == Q8 else np.int8 if operand_type == QS8
                 else np.float32).reshape(1, 1, 2, 2)                       # NCHW
    parameters = [(T.FLOAT32, 2.0), (T.FLOAT32, 1.0), (T.BOOL, True), (T.BOOL, True), (T.BOOL, False)]
    if operand_type == F32:
        parameters[:2] = [(T.INT32, 4), (T.INT32, 2)]
    rows = ([[10, 13, 16, 20], [30, 33, 36, 40]] if operation == BILINEAR
            else [[10, 10, 20, 20], [30, 30, 40, 40]])
    if operand_type == F32:
        rows = [[10, 10 + 10 / 3, 10 + 20 / 3, 20], [30, 30 + 10 / 3, 30 + 20 / 3, 40]]
    results = run_everywhere(operation, *device_instance(operand_type, x.shape, parameters, [1, 1, 2, 4], x))
    assert_same_everywhere(results, [np.reshape(rows, (1, 1, 2, 4))], rtol=1e-6)


@pytest.mark.parametrize("operation, parameters", [
    (BILINEAR, [(T.INT32, 2), (T.INT32, 2), (T.BOOL, False), (T.BOOL, True), (T.BOOL, True)]),
    (NEAREST, [(T.FLOAT32, 0.1), (T.FLOAT32, 1.0), (T.BOOL, False)]),
    (BILINEAR, [(T.INT32, 2), (T.INT32, -2)]),
])
def test_invalid_instances_are_refused_by_the_device(operation, parameters):
    refused_by_the_device(operation, *device_instance(F32, [1, 2, 2, 1], parameters))
