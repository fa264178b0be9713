"""ADD, SUB, MUL and DIV: numerics against numpy, broadcasting, fused activations,
quantization, shape inference and signature validation."""
from __future__ import annotations

import numpy as np
import pytest

from driver.errors import ValidationError
from driver.hal.enums import FusedActivationFunc as Act, OperandType as T, OperationType as Op
from driver.operations.common import quantized_activation_range
from tests.operations.helpers import (F16, F32, I32, Q8, QS8, const, context, definition,
                                      dequantize, infer, output, quantize, rejects, run1, scalar,
                                      tensor)

NUMPY = {Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply, Op.DIV: np.divide}
BOUNDS = {Act.NONE: (-np.inf, np.inf), Act.RELU: (0, np.inf), Act.RELU1: (-1, 1), Act.RELU6: (0, 6)}

rng = np.random.default_rng(1234)


def binary(op, operand_type, a_dims, b_dims, out_dims=(), activation=Act.NONE, **quant):
    return ([tensor(operand_type, a_dims, *quant.get("a", ())), tensor(operand_type, b_dims, *quant.get("b", ())),
             const(T.INT32, int(activation))],
            [output(operand_type, out_dims, *quant.get("out", ()))])


@pytest.mark.parametrize("op", list(NUMPY))
@pytest.mark.parametrize("activation", list(Act))
def test_float32_broadcast_with_activation(op, activation):
    a = rng.uniform(-8, 8, (2, 1, 3)).astype(np.float32)
    b = rng.uniform(0.5, 8, (4, 1)).astype(np.float32)
    inputs, outputs = binary(op, F32, a.shape, b.shape, (2, 4, 3), activation)
    got = run1(op, inputs, outputs, [a, b])
    low, high = BOUNDS[activation]
    np.testing.assert_allclose(got, np.clip(NUMPY[op](a, b), low, high), rtol=1e-6)
    assert got.shape == (2, 4, 3) and got.dtype == np.float32


@pytest.mark.parametrize("op", list(NUMPY))
def test_float16(op):
    a = rng.uniform(-4, 4, (3, 2)).astype(np.float16)
    b = rng.uniform(0.5, 4, (2,)).astype(np.float16)
    got = run1(op, *binary(op, F16, a.shape, b.shape), [a, b])
    expected = NUMPY[op](a.astype(np.float32), b.astype(np.float32)).astype(np.float16)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, expected)


def test_float_division_by_zero_follows_ieee():
    got = run1(Op.DIV, *binary(Op.DIV, F32, [3], [3]), [[1, -1, 0], [0, 0, 0]])
    assert got[0] == np.inf and got[1] == -np.inf and np.isnan(got[2])


@pytest.mark.parametrize("op, b, expected", [
    (Op.ADD, [1, 2, -2], [-2147483648, 3, -7]),
    (Op.SUB, [-1, 2, -2], [-2147483648, -1, -3]),
    (Op.MUL, [2, 2, -2], [-2, 2, 10]),
])
def test_int32_wraps_like_c(op, b, expected):
    a = np.array([2147483647, 1, -5], np.int32)
    got = run1(op, *binary(op, I32, [3], [3]), [a, np.array(b, np.int32)])
    np.testing.assert_array_equal(got, np.array(expected, np.int32))


def test_int32_division_is_floor_division_and_zero_divisor_gives_zero():
    a = np.array([5, -5, 5, -5, 7, -2147483648], np.int32)
    b = np.array([2, 2, -2, -2, 0, -1], np.int32)
    got = run1(Op.DIV, *binary(Op.DIV, I32, [6], [6]), [a, b])
    np.testing.assert_array_equal(got, [2, -3, -3, 2, 0, -2147483648])


def test_int32_counter_step():
    """The loop-counter case: i = i + 1 on TENSOR_INT32 [1] with a constant 1."""
    got = run1(Op.ADD, [tensor(I32, [1]), const(I32, [1]), const(T.INT32, 0)], [output(I32, [1])], [[41]])
    assert got.tolist() == [42] and got.dtype == np.int32


@pytest.mark.parametrize("op", [Op.ADD, Op.SUB, Op.MUL])
@pytest.mark.parametrize("operand_type, dtype", [(Q8, np.uint8), (QS8, np.int8)])
@pytest.mark.parametrize("activation", [Act.NONE, Act.RELU, Act.RELU6])
def test_quantized_matches_real_arithmetic(op, operand_type, dtype, activation):
    info = np.iinfo(dtype)
    a_q = rng.integers(info.min, info.max + 1, (2, 3)).astype(dtype)
    b_q = rng.integers(info.min, info.max + 1, (3,)).astype(dtype)
    zero = 0 if dtype == np.int8 else 128
    a_params, b_params, out_params = (0.05, zero + 3), (0.1, zero - 5), (0.5, zero - 1)
    inputs, outputs = binary(op, operand_type, a_q.shape, b_q.shape, (), activation,
                             a=a_params, b=b_params, out=out_params)
    got = run1(op, inputs, outputs, [a_q, b_q])
    real = NUMPY[op](dequantize(a_q, *a_params), dequantize(b_q, *b_params))
    low, high = BOUNDS[activation]
    expected = quantize(np.clip(real, low, high), *out_params, dtype)
    assert got.dtype == dtype
    assert np.max(np.abs(got.astype(int) - expected.astype(int))) <= 1


def test_run_time_activation_is_read_and_checked():
    inputs = [tensor(F32, [2]), tensor(F32, [2]), scalar(T.INT32)]
    outputs = [output(F32, [2])]
    got = run1(Op.ADD, inputs, outputs, [[-3, 3], [1, 5], Act.RELU6])
    np.testing.assert_array_equal(got, [0, 6])
    with pytest.raises(ValidationError, match="fused activation 9"):
        run1(Op.ADD, inputs, outputs, [[-3, 3], [1, 5], 9])


def test_int32_run_time_activation_must_be_none():
    inputs = [tensor(I32, [1]), tensor(I32, [1]), scalar(T.INT32)]
    assert run1(Op.SUB, inputs, [output(I32, [1])], [[5], [7], 0]).tolist() == [-2]
    with pytest.raises(ValidationError, match="not NONE"):
        run1(Op.SUB, inputs, [output(I32, [1])], [[5], [7], Act.RELU])


def test_zero_sized_broadcast_against_larger_dimension_is_refused_not_a_numpy_error():
    ctx = context(Op.ADD, *binary(Op.ADD, F32, [0], [3]))
    kernel = definition(Op.ADD).build(ctx)
    with pytest.raises(ValidationError, match="do not broadcast"):
        kernel(np.zeros((0,), np.float32), np.zeros((3,), np.float32), np.int32(0))
    got = kernel(np.zeros((0,), np.float32), np.zeros((1,), np.float32), np.int32(0))[0]
    assert got.shape == (0,)


@pytest.mark.parametrize("a, b, expected", [
    ((2, 0, 3), (4, 1), (2, 4, 3)),     # unknown against 4 becomes 4
    ((0, 1), (1, 5), (0, 5)),           # unknown against 1 stays unknown
    (None, (3,), None),                 # unknown rank
    ((1, 2), (3, 1, 1), (3, 1, 2)),
])
def test_shape_inference_with_unknowns(a, b, expected):
    ctx = context(Op.MUL, *binary(Op.MUL, F32, a or (), b or ()))
    assert infer(Op.MUL, ctx, [a, b]) == [expected]


def test_shape_inference_rejects_incompatible_and_over_rank():
    ctx = context(Op.ADD, *binary(Op.ADD, F32, [2, 3], [4]))
    with pytest.raises(ValidationError, match="do not broadcast"):
        infer(Op.ADD, ctx, [(2, 3), (4,)])
    with pytest.raises(ValidationError, match="rank 5"):
        infer(Op.ADD, ctx, [(1, 1, 1, 1, 2), (2,)])


@pytest.mark.parametrize("op", list(NUMPY))
def test_signature_rejections(op):
    good_in, good_out = binary(op, F32, [2], [2], [2])
    rejects(op, good_in[:2], good_out, "expected 3 inputs")
    rejects(op, good_in, good_out * 2, "expected 1 outputs")
    rejects(op, [good_in[0], tensor(F16, [2]), good_in[2]], good_out, "input 1")
    rejects(op, good_in, [output(F16, [2])], "output 0")
    rejects(op, [*good_in[:2], const(T.FLOAT32, 0.0)], good_out, "input 2")
    rejects(op, [*good_in[:2], const(T.INT32, 4)], good_out, "fused activation 4")
    rejects(op, [tensor(F32, [1, 1, 1, 1, 2]), *good_in[1:]], good_out, "rank 5")
    rejects(op, [tensor(T.TENSOR_BOOL8, [2]), tensor(T.TENSOR_BOOL8, [2]), good_in[2]],
            [output(T.TENSOR_BOOL8, [2])], "TENSOR_BOOL8")
    rejects(op, [tensor(I32, [2]), tensor(I32, [2]), const(T.INT32, Act.RELU)], [output(I32, [2])],
            "fused activation 1")


@pytest.mark.parametrize("op, operand_type, a, b, out, message", [
    (Op.DIV, Q8, (1.0, 0), (1.0, 0), (1.0, 0), "TENSOR_QUANT8_ASYMM"),    # no quantized DIV
    (Op.MUL, Q8, (0.5, 0), (0.5, 0), (0.25, 0), "must exceed"),   # output scale > a's * b's
    (Op.MUL, QS8, (0.5, 0), (0.5, 0), (0.25, 0), "must exceed"),
    (Op.ADD, Q8, (0.0, 0), (1.0, 0), (1.0, 0), "scale"),          # a positive scale
])
def test_quantized_signature_rules(op, operand_type, a, b, out, message):
    rejects(op, *binary(op, operand_type, [2], [2], [2], a=a, b=b, out=out), message)


def test_fused_activation_bounds_survive_a_tiny_quantization_scale():
    """A valid scale of 1e-45 puts RELU6's upper bound past float32's range: the clamp is
    then the type's own (this raised OverflowError from getSupportedOperations_1_3)."""
    assert quantized_activation_range(Act.RELU6, 1e-45, 128, Q8) == (128, 255)
    assert quantized_activation_range(Act.RELU6, 1e-45, 0, QS8) == (0, 127)
    assert quantized_activation_range(Act.RELU, 0.5, 10, Q8) == (10, 255)
    assert quantized_activation_range(Act.RELU6, 0.5, 10, Q8) == (10, 22)
