"""L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION, INSTANCE_NORMALIZATION, LOG_SOFTMAX and
PRELU: hand-computed cases (axes, windows, layouts, the reference's integer arithmetic),
one-field mutations of valid instances, and runs on a device on every execution path."""
from __future__ import annotations

import math

import numpy as np
import pytest

from driver.errors import ValidationError
from driver.hal.enums import OperandType as T, OperationType as Op
from tests.operations.helpers import (F16, F32, I32, Q8, QS8, const, context, definition, output,
                                      rejects, run1, scalar, tensor)
from tests.operations.on_device import assert_same_everywhere, constant_input, fed_input, run_everywhere

L2_OUT = {Q8: (1 / 128, 128), QS8: (1 / 128, 0)}


# --- L2_NORMALIZATION ----------------------------------------------------------------------------

def l2(x_info, axis=None, out_type=None, out_quant=(0.0, 0)):
    inputs = [x_info] + ([] if axis is None else [const(T.INT32, axis)])
    return inputs, [output(out_type or x_info.type, (), *out_quant)]


def test_l2_float_default_and_explicit_axes():
    x = np.array([[3, 1], [4, 1]], np.float32)
    np.testing.assert_allclose(run1(Op.L2_NORMALIZATION, *l2(tensor(F32, [2, 2])), [x]),
                               [[3 / math.sqrt(10), 1 / math.sqrt(10)], [4 / math.sqrt(17), 1 / math.sqrt(17)]], rtol=1e-6)
    for axis in (0, -2):
        np.testing.assert_allclose(run1(Op.L2_NORMALIZATION, *l2(tensor(F32, [2, 2]), axis), [x]),
                                   [[0.6, 1 / math.sqrt(2)], [0.8, 1 / math.sqrt(2)]], rtol=1e-6)


def test_l2_zero_vector_is_zero_and_float16_computes_in_single_precision():
    got = run1(Op.L2_NORMALIZATION, *l2(tensor(F16, [2, 3])), [np.array([[0, 0, 0], [1, 2, 2]], np.float16)])
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, np.array([[0, 0, 0], [1 / 3, 2 / 3, 2 / 3]], np.float32).astype(np.float16))


def test_l2_quantized_hand_computed():
    # A squared norm of 1 (the reference's special case) saturates at +-1; all zeros give 0.
    got = run1(Op.L2_NORMALIZATION, *l2(tensor(Q8, [3, 2], 0.1, 128), out_quant=L2_OUT[Q8]),
               [np.array([[129, 128], [127, 128], [128, 128]], np.uint8)])
    assert got.tolist() == [[255, 128], [0, 128], [128, 128]]


def test_l2_signed_uses_the_references_two_integer_kernels():
    x = np.array([[10, -20, 3]], np.int8)
    last = run1(Op.L2_NORMALIZATION, *l2(tensor(QS8, [1, 3], 0.5, 0), out_quant=L2_OUT[QS8]), [x])
    middle = run1(Op.L2_NORMALIZATION, *l2(tensor(QS8, [3, 1], 0.5, 0), 0, out_quant=L2_OUT[QS8]), [x.T])
    real = x / np.linalg.norm(x) * 128       # 56.7, -113.5, 17.0
    assert last.tolist() == [[57, -113, 17]]         # one rounding of x * 2**7 / norm
    assert middle.T.tolist() == [[57, -114, 17]]     # (128 x) / norm, rounded twice
    assert np.abs(last - real).max() <= 1 and np.abs(middle.T - real).max() <= 1


def test_l2_rejections():
    good_in, good_out = l2(tensor(Q8, [2, 3], 0.5, 128), -1, out_quant=L2_OUT[Q8])
    rejects(Op.L2_NORMALIZATION, [*good_in, const(T.INT32, 0)], good_out, "expected 1 or 2 inputs")
    rejects(Op.L2_NORMALIZATION, [tensor(I32, [2, 3]), good_in[1]], [output(I32)], "input 0")
    rejects(Op.L2_NORMALIZATION, [tensor(Q8, [1, 1, 1, 1, 3], 0.5, 128), good_in[1]], good_out, "rank 5 > 4")
    rejects(Op.L2_NORMALIZATION, [good_in[0], const(T.INT32, 2)], good_out, "axis 2 is out of range")
    rejects(Op.L2_NORMALIZATION, [good_in[0], const(T.FLOAT32, 0.0)], good_out, "input 1")
    rejects(Op.L2_NORMALIZATION, good_in, [output(Q8, (), 1 / 256, 128)], "must have scale")
    rejects(Op.L2_NORMALIZATION, good_in, [output(QS8, (), 1 / 128, 0)], "output 0")
    rejects(Op.L2_NORMALIZATION, [tensor(Q8, [2, 3], 0.0, 128), good_in[1]], good_out, "scale 0.0 <= 0")


def test_l2_axis_known_at_run_time_is_checked_by_the_kernel():
    ctx = context(Op.L2_NORMALIZATION, [tensor(F32, [2, 3]), scalar(T.INT32)], [output(F32)])
    definition(Op.L2_NORMALIZATION).validate(ctx)
    kernel = definition(Op.L2_NORMALIZATION).build(ctx)
    with pytest.raises(ValidationError, match="axis -3 is out of range for rank 2"):
        kernel(np.ones((2, 3), np.float32), np.int32(-3))


# --- LOCAL_RESPONSE_NORMALIZATION ------------------------------------------------------------------

def lrn(x_info, radius=1, bias=1.0, alpha=1.0, beta=1.0, axis=None, scalar_type=T.FLOAT32):
    inputs = [x_info, const(T.INT32, radius), const(scalar_type, bias), const(scalar_type, alpha),
              const(scalar_type, beta)] + ([] if axis is None else [const(T.INT32, axis)])
    return inputs, [output(x_info.type)]


def test_lrn_window_is_clipped_at_the_ends():
    x = np.array([1, 2, 3], np.float32)
    # Sums of squares within 1: 1+4, 1+4+9, 4+9; output x / (1 + sum).
    np.testing.assert_allclose(run1(Op.LOCAL_RESPONSE_NORMALIZATION, *lrn(tensor(F32, [3])), [x]),
                               [1 / 6, 2 / 15, 3 / 14], rtol=1e-6)
    # A window wider than the axis covers it all.
    np.testing.assert_allclose(run1(Op.LOCAL_RESPONSE_NORMALIZATION, *lrn(tensor(F32, [3]), radius=5), [x]),
                               x / 15, rtol=1e-6)
    # Radius 0: each element alone; beta 0.5 divides by a square root.
    np.testing.assert_allclose(run1(Op.LOCAL_RESPONSE_NORMALIZATION,
                                    *lrn(tensor(F32, [3]), radius=0, bias=2.0, alpha=0.5, beta=0.5), [x]),
                               x / np.sqrt(2 + 0.5 * x * x), rtol=1e-6)


def test_lrn_axis_and_float16():
    x = np.arange(1, 7, dtype=np.float32).reshape(1, 3, 2)
    # Along axis 1 the vectors are [1, 3, 5] and [2, 4, 6].
    expected = np.array([[1 / 11, 2 / 21], [3 / 36, 4 / 57], [5 / 35, 6 / 53]]).reshape(1, 3, 2)
    got = run1(Op.LOCAL_RESPONSE_NORMALIZATION, *lrn(tensor(F32, [1, 3, 2]), axis=-2), [x])
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    half = run1(Op.LOCAL_RESPONSE_NORMALIZATION, *lrn(tensor(F16, [1, 3, 2]), axis=1, scalar_type=T.FLOAT16),
                [x.astype(np.float16)])
    assert half.dtype == np.float16
    np.testing.assert_allclose(half, expected, rtol=1e-3)


def test_lrn_rejections():
    good_in, good_out = lrn(tensor(F32, [2, 3]), axis=-1)
    rejects(Op.LOCAL_RESPONSE_NORMALIZATION, good_in[:4], good_out, "expected 5 or 6 inputs")
    rejects(Op.LOCAL_RESPONSE_NORMALIZATION, [good_in[0], const(T.INT32, -1), *good_in[2:]], good_out,
            "radius -1 must be non-negative")
    rejects(Op.LOCAL_RESPONSE_NORMALIZATION, [*good_in[:2], const(T.FLOAT16, 1.0), *good_in[3:]], good_out, "input 2")
    rejects(Op.LOCAL_RESPONSE_NORMALIZATION, [tensor(F32, [1, 1, 1, 1, 3]), *good_in[1:]], good_out, "rank 5 > 4")
    rejects(Op.LOCAL_RESPONSE_NORMALIZATION, [*good_in[:5], const(T.INT32, 2)], good_out, "axis 2 is out of range")
    rejects(Op.LOCAL_RESPONSE_NORMALIZATION, [tensor(Q8, [2, 3], 0.5, 0), *good_in[1:]], [output(Q8, (), 0.5, 0)],
            "input 0")
    ctx = context(Op.LOCAL_RESPONSE_NORMALIZATION, [good_in[0], scalar(T.INT32), *good_in[2:5]], good_out)
    kernel = definition(Op.LOCAL_RESPONSE_NORMALIZATION).build(ctx)
    with pytest.raises(ValidationError, match="radius -2 must be non-negative"):
        kernel(np.ones((2, 3), np.float32), np.int32(-2), *(o.value for o in good_in[2:5]))


# --- INSTANCE_NORMALIZATION ------------------------------------------------------------------------

def instance(x_info, nchw=False, gamma=2.0, beta=0.5, epsilon=1e-3, scalar_type=T.FLOAT32):
    return ([x_info, const(scalar_type, gamma), const(scalar_type, beta), const(scalar_type, epsilon),
             const(T.BOOL, nchw)], [output(x_info.type)])


def test_instance_normalization_nhwc_and_nchw():
    # Channel 0 holds 1 and 3 (mean 2, variance 1), channel 1 holds 2 and 2 (variance 0).
    x = np.array([1, 2, 3, 2], np.float32).reshape(1, 2, 1, 2)
    got = run1(Op.INSTANCE_NORMALIZATION, *instance(tensor(F32, [1, 2, 1, 2])), [x])
    d = 2 / math.sqrt(1.001)
    np.testing.assert_allclose(got.reshape(2, 2), [[0.5 - d, 0.5], [0.5 + d, 0.5]], rtol=1e-6)
    nchw = run1(Op.INSTANCE_NORMALIZATION, *instance(tensor(F32, [1, 2, 2, 1]), nchw=True), [x.transpose(0, 3, 1, 2)])
    np.testing.assert_allclose(nchw, got.transpose(0, 3, 1, 2), rtol=1e-6)
    half = run1(Op.INSTANCE_NORMALIZATION, *instance(tensor(F16, [1, 2, 1, 2]), scalar_type=T.FLOAT16),
                [x.astype(np.float16)])
    np.testing.assert_allclose(half, got, rtol=2e-3)


def test_instance_normalization_rejections():
    good_in, good_out = instance(tensor(F32, [1, 2, 2, 1]))
    rejects(Op.INSTANCE_NORMALIZATION, good_in[:4], good_out, "expected 5 inputs")
    rejects(Op.INSTANCE_NORMALIZATION, [tensor(F32, [2, 2, 1]), *good_in[1:]], good_out, "rank 3 < 4")
    rejects(Op.INSTANCE_NORMALIZATION, [*good_in[:4], const(T.INT32, 0)], good_out, "input 4")
    rejects(Op.INSTANCE_NORMALIZATION, [good_in[0], const(T.FLOAT16, 1.0), *good_in[2:]], good_out, "input 1")
    rejects(Op.INSTANCE_NORMALIZATION, good_in, [output(F16)], "output 0")


# --- LOG_SOFTMAX -------------------------------------------------------------------------------------

def log_softmax(x_info, beta=1.0, axis=-1, beta_type=T.FLOAT32):
    return [x_info, const(beta_type, beta), const(T.INT32, axis)], [output(x_info.type)]


def test_log_softmax_hand_computed_and_axes():
    # beta 2 scales [0, ln(3) / 2] to [0, ln 3]: log of [1, 3] / 4.
    x = np.array([0, math.log(3) / 2], np.float32)
    np.testing.assert_allclose(run1(Op.LOG_SOFTMAX, *log_softmax(tensor(F32, [2]), beta=2.0), [x]),
                               [-math.log(4), math.log(3 / 4)], rtol=1e-6)
    y = np.array([[1, 5], [3, 5], [2, 5]], np.float32)       # rank 5 is allowed too
    for axis in (0, -2):
        got = run1(Op.LOG_SOFTMAX, *log_softmax(tensor(F32, [3, 2]), axis=axis), [y])
        np.testing.assert_allclose(got[:, 1], [math.log(1 / 3)] * 3, rtol=1e-6)
        np.testing.assert_allclose(np.exp(got[:, 0]).sum(), 1, rtol=1e-6)
    z = np.arange(32, dtype=np.float16).reshape(1, 2, 2, 2, 4)
    got = run1(Op.LOG_SOFTMAX, *log_softmax(tensor(F16, z.shape), beta_type=T.FLOAT16), [z])
    assert got.dtype == np.float16
    np.testing.assert_allclose(got[0, 0, 0, 0], np.log(np.exp(np.arange(4.0)) / np.exp(np.arange(4.0)).sum()),
                               rtol=2e-3)


def test_log_softmax_rejections():
    good_in, good_out = log_softmax(tensor(F32, [2, 3]))
    rejects(Op.LOG_SOFTMAX, good_in[:2], good_out, "expected 3 inputs")
    rejects(Op.LOG_SOFTMAX, [good_in[0], const(T.FLOAT32, 0.0), good_in[2]], good_out, "beta 0.0 must be positive")
    rejects(Op.LOG_SOFTMAX, [good_in[0], const(T.FLOAT16, 1.0), good_in[2]], good_out, "input 1")
    rejects(Op.LOG_SOFTMAX, [*good_in[:2], const(T.INT32, 2)], good_out, "axis 2 is out of range")
    rejects(Op.LOG_SOFTMAX, [tensor(Q8, [2, 3], 0.5, 0), *good_in[1:]], [output(Q8, (), 0.5, 0)], "input 0")


# --- PRELU -------------------------------------------------------------------------------------------

def test_prelu_float_broadcasts_alpha():
    got = run1(Op.PRELU, [tensor(F32, [4]), const(F32, [0.5])], [output(F32)],
               [np.array([-2, -1, 0, 3], np.float32)])
    assert got.tolist() == [-1, -0.5, 0, 3]
    x = np.array([-1, 2, -3, 4], np.float16).reshape(2, 1, 2)
    alpha = np.array([[0.5], [1], [2]], np.float16)
    got = run1(Op.PRELU, [tensor(F16, [2, 1, 2]), tensor(F16, [3, 1])], [output(F16)], [x, alpha])
    assert got.shape == (2, 3, 2) and got.dtype == np.float16
    np.testing.assert_array_equal(got, np.where(x >= 0, x, x * alpha))


@pytest.mark.parametrize("operand_type, dtype, shift", [(Q8, np.uint8, 0), (QS8, np.int8, -128)])
def test_prelu_quantized_hand_computed(operand_type, dtype, shift):
    # Input scale 0.5 (zero point 128), alpha 0.25 (50), output 0.5 (100): x = 1.0 stays,
    # x = -2.0 with alpha = 1.0 gives -2.0, x = -1.5 with alpha = 0.25 gives -0.375.
    inputs = [tensor(operand_type, [3], 0.5, 128 + shift),
              const(operand_type, np.array([50, 54, 51]) + shift, scale=0.25, zero_point=50 + shift)]
    got = run1(Op.PRELU, inputs, [output(operand_type, (), 0.5, 100 + shift)],
               [np.array([130, 124, 125], np.int64).astype(np.int64) + shift])
    # -0.375 / 0.5 = -0.75 rounds to -1 (away from zero).
    assert (got.astype(int) - shift).tolist() == [102, 96, 99]


def test_prelu_quantized_matches_real_values_within_one():
    rng = np.random.default_rng(5)
    x = rng.integers(0, 256, (4, 5)).astype(np.uint8)
    alpha = rng.integers(0, 256, (5,)).astype(np.uint8)
    got = run1(Op.PRELU, [tensor(Q8, [4, 5], 0.07, 131), tensor(Q8, [5], 0.013, 77)], [output(Q8, (), 0.11, 120)],
               [x, alpha])
    real_x, real_alpha = (x.astype(float) - 131) * 0.07, (alpha.astype(float) - 77) * 0.013
    expected = np.clip(np.round(np.where(real_x >= 0, real_x, real_x * real_alpha) / 0.11) + 120, 0, 255)
    assert np.abs(got.astype(int) - expected).max() <= 1


def test_prelu_quantized_product_past_int32_saturates():
    # M_neg = 1 * 1 / 2**-16 = 2**16: x * alpha = -100 * -200 times 2**17 is past int32 before
    # the high multiplication. It saturates (the reference's int32 product overflows, which
    # C++ leaves undefined), so the output is the type's largest value, as the real one is.
    got = run1(Op.PRELU, [tensor(Q8, [2], 1.0, 128), const(Q8, [55], scale=1.0, zero_point=255)],
               [output(Q8, (), 2.0 ** -16, 0)], [np.array([28, 128], np.uint8)])
    assert got.tolist() == [255, 0]


def test_prelu_rejections():
    good_in, good_out = [tensor(Q8, [2, 3], 0.5, 128), tensor(Q8, [3], 0.25, 128)], [output(Q8, (), 0.5, 100)]
    rejects(Op.PRELU, good_in[:1], good_out, "expected 2 inputs")
    rejects(Op.PRELU, [good_in[0], tensor(QS8, [3], 0.25, 0)], good_out, "alpha")
    rejects(Op.PRELU, [good_in[0], tensor(Q8, [4], 0.25, 128)], good_out, "do not broadcast")
    rejects(Op.PRELU, good_in, [output(Q8, (), 0.0, 100)], "scale 0.0 <= 0")
    rejects(Op.PRELU, [good_in[0], tensor(Q8, [3], 0.0, 128)], good_out, "scale 0.0 <= 0")
    rejects(Op.PRELU, [tensor(I32, [2, 3]), tensor(I32, [3])], [output(I32)], "input 0")


# --- on a device -------------------------------------------------------------------------------------

def test_on_device_every_path():
    x = np.array([[3, 4], [0, 0]], np.float32)
    assert_same_everywhere(run_everywhere(Op.L2_NORMALIZATION, [fed_input(F32, x)], [(F32, (2, 2), 0.0, 0)]),
                           [np.array([[0.6, 0.8], [0, 0]], np.float32)])
    q = np.array([[131, 132]], np.uint8)         # 128 + 128 * (0.6, 0.8) = 204.8, 230.4
    assert_same_everywhere(run_everywhere(Op.L2_NORMALIZATION, [fed_input(Q8, q, scale=0.1, zero_point=128),
                                                                constant_input(T.INT32, -1)],
                                          [(Q8, (1, 2), 1 / 128, 128)]), [np.array([[205, 230]], np.uint8)])
    y = np.array([1, 2, 3], np.float32)
    lrn_args = [fed_input(F32, y), constant_input(T.INT32, 1), fed_input(T.FLOAT32, 1.0),
                constant_input(T.FLOAT32, 1.0), constant_input(T.FLOAT32, 1.0)]
    results = run_everywhere(Op.LOCAL_RESPONSE_NORMALIZATION, lrn_args, [(F32, (3,), 0.0, 0)])
    assert_same_everywhere(results, [[1 / 6, 2 / 15, 3 / 14]], rtol=1e-6)
    z = np.array([1, 2, 3, 2], np.float32).reshape(1, 2, 1, 2)
    results = run_everywhere(Op.INSTANCE_NORMALIZATION, [fed_input(F32, z), *(constant_input(T.FLOAT32, v)
                                                                             for v in (1.0, 0.0, 1e-3)),
                                                         fed_input(T.BOOL, False)],
                             [(F32, (1, 2, 1, 2), 0.0, 0)])
    d = 1 / math.sqrt(1.001)
    assert_same_everywhere(results, [np.reshape([-d, 0, d, 0], (1, 2, 1, 2))], rtol=1e-6)
    results = run_everywhere(Op.LOG_SOFTMAX, [fed_input(F32, [1.0, 1.0]), constant_input(T.FLOAT32, 1.0),
                                              constant_input(T.INT32, 0)], [(F32, (2,), 0.0, 0)])
    assert_same_everywhere(results, [[-math.log(2)] * 2], rtol=1e-6)
    assert_same_everywhere(run_everywhere(Op.PRELU, [fed_input(Q8, [130, 124], scale=0.5, zero_point=128),
                                                     constant_input(Q8, [54], scale=0.25, zero_point=50)],
                                          [(Q8, (2,), 0.5, 100)]), [np.array([102, 96], np.uint8)])


def test_on_device_run_time_axis_out_of_range_is_a_status():
    results = run_everywhere(Op.L2_NORMALIZATION, [fed_input(F32, np.ones((2, 2), np.float32)),
                                                   fed_input(T.INT32, 2)],
                             [(F32, (2, 2), 0.0, 0)])
    assert {status.name for status, _ in results.values()} == {"GENERAL_FAILURE"}
