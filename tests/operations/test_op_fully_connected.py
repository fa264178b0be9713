"""FULLY_CONNECTED: float and quantized numerics, input flattening, run-time weights,
shape inference and the signature (including the quantized bias rules)."""
from __future__ import annotations

import numpy as np
import pytest

from driver.errors import ValidationError
from driver.hal.enums import FusedActivationFunc as Act, OperandType as T, OperationType as Op
from tests.operations.helpers import (F16, F32, I32, Q8, QS8, const, context, definition,
                                      dequantize, infer, output, quantize, rejects, run1, scalar,
                                      tensor)


rng = np.random.default_rng(99)


def float_signature(input_dims, weights, bias, activation=Act.NONE, operand_type=F32, out_dims=()):
    return ([tensor(operand_type, input_dims), const(operand_type, weights), const(operand_type, bias),
             const(T.INT32, int(activation))], [output(operand_type, out_dims)])


@pytest.mark.parametrize("activation, low, high", [(Act.NONE, -np.inf, np.inf), (Act.RELU, 0, np.inf),
                                                   (Act.RELU1, -1, 1), (Act.RELU6, 0, 6)])
def test_float32_matches_matrix_product(activation, low, high):
    x = rng.uniform(-2, 2, (3, 5)).astype(np.float32)
    w = rng.uniform(-2, 2, (4, 5)).astype(np.float32)
    b = rng.uniform(-1, 1, (4,)).astype(np.float32)
    got = run1(Op.FULLY_CONNECTED, *float_signature(x.shape, w, b, activation), [x])
    assert got.shape == (3, 4) and got.dtype == np.float32
    np.testing.assert_allclose(got, np.clip(x @ w.T + b, low, high), rtol=1e-5, atol=1e-6)


def test_higher_rank_input_is_flattened_to_batches():
    x = rng.uniform(-1, 1, (2, 3, 1, 4)).astype(np.float32)     # 24 elements -> [4, 6]
    w = rng.uniform(-1, 1, (2, 6)).astype(np.float32)
    b = np.zeros(2, np.float32)
    got = run1(Op.FULLY_CONNECTED, *float_signature(x.shape, w, b), [x])
    np.testing.assert_allclose(got, x.reshape(4, 6) @ w.T, rtol=1e-5, atol=1e-6)


def test_float16_is_computed_in_single_precision():
    x = rng.uniform(-1, 1, (2, 3)).astype(np.float16)
    w = rng.uniform(-1, 1, (2, 3)).astype(np.float16)
    b = rng.uniform(-1, 1, (2,)).astype(np.float16)
    got = run1(Op.FULLY_CONNECTED, *float_signature(x.shape, w, b, operand_type=F16), [x])
    expected = (x.astype(np.float32) @ w.astype(np.float32).T + b.astype(np.float32)).astype(np.float16)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, expected)


def test_run_time_weights_bias_and_activation():
    x, w, b = np.ones((1, 2), np.float32), np.array([[1, 2], [-3, -4]], np.float32), np.array([1, 1], np.float32)
    inputs = [tensor(F32, [1, 2]), tensor(F32, [2, 2]), tensor(F32, [2]), scalar(T.INT32)]
    got = run1(Op.FULLY_CONNECTED, inputs, [output(F32)], [x, w, b, Act.RELU])
    np.testing.assert_array_equal(got, [[4, 0]])


@pytest.mark.parametrize("operand_type, dtype, zero", [(Q8, np.uint8, 128), (QS8, np.int8, 0)])
def test_quantized_matches_real_computation(operand_type, dtype, zero):
    info = np.iinfo(dtype)
    in_q, w_q = (0.5, zero + 2), (0.25, zero - 3)
    bias_scale = in_q[0] * w_q[0]
    out_q = (1.0, zero + 1)
    x = rng.integers(info.min, info.max + 1, (2, 3)).astype(dtype)
    w = rng.integers(info.min, info.max + 1, (4, 3)).astype(dtype)
    b = rng.integers(-100, 100, (4,)).astype(np.int32)
    inputs = [tensor(operand_type, [2, 3], *in_q), const(operand_type, w, scale=w_q[0], zero_point=w_q[1]),
              const(I32, b, scale=bias_scale), const(T.INT32, 0)]
    got = run1(Op.FULLY_CONNECTED, inputs, [output(operand_type, [], *out_q)], [x])
    real = dequantize(x, *in_q) @ dequantize(w, *w_q).T + b * bias_scale
    expected = quantize(real, *out_q, dtype)
    assert got.dtype == dtype
    assert np.max(np.abs(got.astype(int) - expected.astype(int))) <= 1


def test_shape_inference():
    ctx = context(Op.FULLY_CONNECTED, *float_signature([0, 6], np.zeros((3, 6)), np.zeros(3)))
    assert infer(Op.FULLY_CONNECTED, ctx, [(0, 6), (3, 6), (3,)]) == [(0, 3)]
    assert infer(Op.FULLY_CONNECTED, ctx, [(4, 3, 2), (3, 6), (3,)]) == [(4, 3)]
    assert infer(Op.FULLY_CONNECTED, ctx, [None, (3, 6), None]) == [(0, 3)]
    with pytest.raises(ValidationError, match="not a multiple of input_size"):
        infer(Op.FULLY_CONNECTED, ctx, [(5, 5), (3, 6), (3,)])
    with pytest.raises(ValidationError, match="num_units"):
        infer(Op.FULLY_CONNECTED, ctx, [(2, 6), (3, 6), (4,)])


def test_kernel_checks_zero_sized_weights():
    inputs = [tensor(F32, [1, 2]), tensor(F32, [0, 2]), tensor(F32, [0]), const(T.INT32, 0)]
    kernel = definition(Op.FULLY_CONNECTED).build(context(Op.FULLY_CONNECTED, inputs, [output(F32)]))
    with pytest.raises(ValidationError, match="zero dimension"):
        kernel(np.ones((1, 2), np.float32), np.ones((0, 2), np.float32), np.ones(0, np.float32), np.int32(0))


def test_signature_rejections():
    w, b = np.zeros((2, 3), np.float32), np.zeros(2, np.float32)
    good_in, good_out = float_signature([1, 3], w, b)
    rejects(Op.FULLY_CONNECTED, good_in[:3], good_out, "expected 4 inputs")
    rejects(Op.FULLY_CONNECTED, [good_in[0], const(F16, w), *good_in[2:]], good_out, "weights")
    rejects(Op.FULLY_CONNECTED, [*good_in[:2], const(I32, [0, 0]), good_in[3]], good_out, "bias")
    rejects(Op.FULLY_CONNECTED, [*good_in[:3], const(T.INT32, 7)], good_out, "fused activation 7")
    rejects(Op.FULLY_CONNECTED, good_in, [output(F16)], "output 0")
    rejects(Op.FULLY_CONNECTED, [tensor(F32, [3]), *good_in[1:]], good_out, "rank 1 < 2")
    rejects(Op.FULLY_CONNECTED, [tensor(F32, [1, 1, 1, 1, 3]), *good_in[1:]], good_out, "rank 5 > 4")
    rejects(Op.FULLY_CONNECTED, [good_in[0], const(F32, np.zeros((2, 3, 1))), *good_in[2:]], good_out, "rank 3 > 2")
    rejects(Op.FULLY_CONNECTED, [*good_in[:2], const(F32, np.zeros(3)), good_in[3]], good_out, "num_units")
    rejects(Op.FULLY_CONNECTED, [tensor(F32, [2, 5]), *good_in[1:]], good_out, "input_size")
    rejects(Op.FULLY_CONNECTED, [tensor(I32, [1, 3]), const(I32, [[0] * 3] * 2), const(I32, [0, 0]),
                                 good_in[3]], [output(I32)], "input 0")


@pytest.mark.parametrize("operand_type", [Q8, QS8])
def test_quantized_bias_rules(operand_type):
    def signature(bias_scale, bias_zero_point=0, out_scale=1.0):
        return ([tensor(operand_type, [1, 2], 0.5, 0), const(operand_type, [[1, 2]], scale=0.25),
                 const(I32, [3], scale=bias_scale, zero_point=bias_zero_point), const(T.INT32, 0)],
                [output(operand_type, [1, 1], out_scale, 0)])
    definition(Op.FULLY_CONNECTED).validate(context(Op.FULLY_CONNECTED, *signature(0.125)))
    rejects(Op.FULLY_CONNECTED, *signature(0.13), "input_scale \\* weights_scale")
    rejects(Op.FULLY_CONNECTED, *signature(0.125, bias_zero_point=1), "zero point 1 must be 0")
    rejects(Op.FULLY_CONNECTED, *signature(0.125, out_scale=0.0), "scale 0.0 <= 0")
