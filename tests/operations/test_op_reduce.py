"""Reductions: REDUCE_ALL/ANY/MAX/MIN/PROD/SUM, MEAN, ARGMAX, ARGMIN, and SOFTMAX."""
from __future__ import annotations

import numpy as np
import pytest

from driver.errors import ValidationError
from driver.hal.enums import OperandType as T, OperationType as Op
from tests.operations.helpers import (B8, F16, F32, I32, Q8, QS8, const, context, dequantize,
                                      infer, output, quantize, rejects, run1, scalar, tensor)

X = np.arange(-12, 12, dtype=np.float32).reshape(2, 3, 4) / 4

REDUCTIONS = {Op.REDUCE_MAX: np.max, Op.REDUCE_MIN: np.min, Op.REDUCE_PROD: np.prod, Op.REDUCE_SUM: np.sum}


def reduce_inputs(op, x_dims, axes, keep, operand_type=F32, quant=()):
    keep_operand = const(T.INT32, int(keep)) if op == Op.MEAN else const(T.BOOL, keep)
    return [tensor(operand_type, x_dims, *quant), const(I32, axes), keep_operand]


@pytest.mark.parametrize("op", list(REDUCTIONS))
@pytest.mark.parametrize("axes, keep", [([1], False), ([0, -1], True), ([2, 2, -1], False), ([0, 1, 2], False)])
def test_float_reductions(op, axes, keep):
    normalized = tuple(sorted({a % 3 for a in axes}))
    expected = REDUCTIONS[op](X, axis=normalized, keepdims=keep)
    if expected.ndim == 0:
        expected = expected.reshape(1)
    inputs = reduce_inputs(op, X.shape, axes, keep)
    assert infer(op, context(op, inputs, [output(F32)])) == [expected.shape]
    got = run1(op, inputs, [output(F32)], [X])
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_reduce_prod_zero_wins_over_infinity():
    x = np.array([[0.0, np.inf], [2.0, 3.0]], np.float32)
    got = run1(Op.REDUCE_PROD, reduce_inputs(Op.REDUCE_PROD, [2, 2], [1], False), [output(F32)], [x])
    np.testing.assert_array_equal(got, [0.0, 6.0])


def test_reduce_max_ignores_nan_and_empty_gives_lowest():
    x = np.array([[np.nan, 1.0], [-2.0, np.nan]], np.float32)
    got = run1(Op.REDUCE_MAX, reduce_inputs(Op.REDUCE_MAX, [2, 2], [1], False), [output(F32)], [x])
    np.testing.assert_array_equal(got, [1.0, -2.0])
    empty = run1(Op.REDUCE_MAX, reduce_inputs(Op.REDUCE_MAX, [2, 0], [1], False), [output(F32)], [np.zeros((2, 0))])
    np.testing.assert_array_equal(empty, [np.finfo(np.float32).min] * 2)


@pytest.mark.parametrize("op, fn", [(Op.REDUCE_ALL, np.all), (Op.REDUCE_ANY, np.any)])
def test_logical_reductions(op, fn):
    x = np.array([[True, False, True], [True, True, True]])
    got = run1(op, reduce_inputs(op, x.shape, [1], True, B8), [output(B8)], [x])
    np.testing.assert_array_equal(got, fn(x, axis=1, keepdims=True))


@pytest.mark.parametrize("op", [Op.REDUCE_MAX, Op.REDUCE_MIN])
def test_quantized_extremes_compare_stored_values(op):
    x = np.array([[3, 200, 17]], np.uint8)
    got = run1(op, reduce_inputs(op, [1, 3], [1], False, Q8, (0.5, 10)), [output(Q8, (), 0.5, 10)], [x])
    assert got.tolist() == [200 if op == Op.REDUCE_MAX else 3]


def test_reduce_signatures():
    rejects(Op.REDUCE_SUM, reduce_inputs(Op.REDUCE_SUM, [2], [0], False, I32), [output(I32)], "input 0")
    rejects(Op.REDUCE_ALL, reduce_inputs(Op.REDUCE_ALL, [2], [0], False, F32), [output(F32)], "input 0")
    rejects(Op.REDUCE_SUM, [tensor(F32, [2]), const(I32, [0]), const(T.INT32, 0)], [output(F32)], "input 2")
    rejects(Op.REDUCE_SUM, reduce_inputs(Op.REDUCE_SUM, [2], [1], False), [output(F32)], "out of range")
    rejects(Op.REDUCE_SUM, reduce_inputs(Op.REDUCE_SUM, [1, 1, 1, 1, 2], [0], False), [output(F32)], "rank 5")
    rejects(Op.REDUCE_MAX, reduce_inputs(Op.REDUCE_MAX, [2], [0], False, Q8, (0.5, 1)),
            [output(Q8, (), 0.5, 2)], "zero point")


def test_reduce_with_run_time_axes():
    inputs = [tensor(F32, X.shape), tensor(I32, [1]), const(T.BOOL, True)]
    assert infer(Op.REDUCE_SUM, context(Op.REDUCE_SUM, inputs, [output(F32)])) == [(0, 0, 0)]
    got = run1(Op.REDUCE_SUM, inputs, [output(F32)], [X, [1]])
    np.testing.assert_allclose(got, X.sum(axis=1, keepdims=True))
    with pytest.raises(ValidationError, match="out of range"):
        run1(Op.REDUCE_SUM, inputs, [output(F32)], [X, [3]])


def test_mean_float_and_quantized():
    got = run1(Op.MEAN, reduce_inputs(Op.MEAN, X.shape, [0, 2], True), [output(F32)], [X])
    np.testing.assert_allclose(got, X.mean(axis=(0, 2), keepdims=True), rtol=1e-6)
    q = np.array([[1, 2, 4], [-7, -2, 0]], np.int8)
    got = run1(Op.MEAN, reduce_inputs(Op.MEAN, q.shape, [1], False, QS8, (0.5, 0)), [output(QS8, (), 0.5, 0)], [q])
    assert got.tolist() == [2, -3]          # 7 / 3 and -9 / 3, truncated toward zero
    with pytest.raises(ValidationError, match="empty dimension"):
        run1(Op.MEAN, reduce_inputs(Op.MEAN, [2, 0], [1], False), [output(F32)], [np.zeros((2, 0))])


@pytest.mark.parametrize("op, fn", [(Op.ARGMAX, np.argmax), (Op.ARGMIN, np.argmin)])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_arg_extremes(op, fn, axis):
    x = np.array([[3, 7, 7], [9, 1, 1]], np.int32)       # ties pick the first index
    got = run1(op, [tensor(I32, x.shape), const(T.INT32, axis)], [output(I32)], [x])
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, fn(x, axis=axis))


def test_argmax_of_vector_and_nan_scan():
    got = run1(Op.ARGMAX, [tensor(F32, [4]), const(T.INT32, 0)], [output(I32)], [[1, np.nan, 5, 2]])
    assert got.tolist() == [2]
    got = run1(Op.ARGMAX, [tensor(F32, [3]), const(T.INT32, 0)], [output(I32)], [[np.nan, 1, 5]])
    assert got.tolist() == [0]
    rejects(Op.ARGMAX, [tensor(F32, [3]), const(T.INT32, 1)], [output(I32)], "out of range")
    rejects(Op.ARGMIN, [tensor(F32, [3]), const(T.INT32, 0)], [output(F32)], "output 0")


@pytest.mark.parametrize("axis", [None, 0, -1])
@pytest.mark.parametrize("beta", [1.0, 0.5])
def test_softmax_float(axis, beta):
    x = np.array([[1.0, 2.0, 3.0], [-1.0, 0.0, 10.0]], np.float32)
    inputs = [tensor(F32, x.shape), const(T.FLOAT32, beta)] + ([] if axis is None else [const(T.INT32, axis)])
    got = run1(Op.SOFTMAX, inputs, [output(F32)], [x])
    along = -1 if axis is None else axis
    e = np.exp((x - x.max(axis=along, keepdims=True)) * beta)
    np.testing.assert_allclose(got, e / e.sum(axis=along, keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("operand_type, dtype, out_zero", [(Q8, np.uint8, 0), (QS8, np.int8, -128)])
def test_softmax_quantized(operand_type, dtype, out_zero):
    q = np.array([[10, 20, 30, 40]], dtype)
    inputs = [tensor(operand_type, q.shape, 0.1, 5), const(T.FLOAT32, 1.0)]
    got = run1(Op.SOFTMAX, inputs, [output(operand_type, (), 1 / 256, out_zero)], [q])
    real = dequantize(q, 0.1, 5)
    e = np.exp(real - real.max())
    expected = quantize(e / e.sum(), 1 / 256, out_zero, dtype)
    assert np.max(np.abs(got.astype(int) - expected.astype(int))) <= 1


def test_softmax_signature_and_beta():
    rejects(Op.SOFTMAX, [tensor(F32, [2]), const(T.FLOAT32, 0.0)], [output(F32)], "beta 0.0 must be positive")
    rejects(Op.SOFTMAX, [tensor(F16, [2]), const(T.FLOAT32, 1.0)], [output(F16)], "input 1")
    rejects(Op.SOFTMAX, [tensor(F32, [2]), const(T.FLOAT32, 1.0), const(T.INT32, 1)], [output(F32)], "out of range")
    rejects(Op.SOFTMAX, [tensor(Q8, [2], 0.1, 0), const(T.FLOAT32, 1.0)], [output(Q8, [2], 0.1, 0)],
            "must have scale")
    with pytest.raises(ValidationError, match="must be positive"):
        run1(Op.SOFTMAX, [tensor(F32, [2]), scalar(T.FLOAT32)], [output(F32)], [[1, 2], -1.0])
