"""MAXIMUM, MINIMUM, SELECT, POW, CAST, QUANTIZE, DEQUANTIZE, RANK and FILL."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from driver.errors import ResourceError, ValidationError
from driver.hal.enums import OperandType as T, OperationType as Op
from driver.hal.structs import SymmPerChannelQuantParams
from tests.operations.helpers import (B8, F16, F32, I32, Q8, QS8, const, context, dequantize,
                                      infer, output, quantize, rejects, run1, tensor)


@pytest.mark.parametrize("op, fn", [(Op.MAXIMUM, np.maximum), (Op.MINIMUM, np.minimum)])
@pytest.mark.parametrize("operand_type, dtype", [(F32, np.float32), (F16, np.float16), (I32, np.int32)])
def test_minmax_plain(op, fn, operand_type, dtype):
    a = np.array([[1, -5, 3]], dtype)
    b = np.array([[2], [-7]], dtype)
    got = run1(op, [tensor(operand_type, a.shape), tensor(operand_type, b.shape)], [output(operand_type)], [a, b])
    np.testing.assert_array_equal(got, fn(a, b))
    assert got.dtype == dtype


@pytest.mark.parametrize("op, fn", [(Op.MAXIMUM, np.maximum), (Op.MINIMUM, np.minimum)])
@pytest.mark.parametrize("operand_type, dtype", [(Q8, np.uint8), (QS8, np.int8)])
def test_minmax_quantized_requantizes_to_the_output(op, fn, operand_type, dtype):
    zero = 0 if dtype == np.int8 else 128
    a_quant, b_quant, out_quant = (0.5, zero), (0.25, zero + 4), (1.0, zero - 2)
    info = np.iinfo(dtype)
    a = np.arange(info.min, info.max + 1, 7).astype(dtype)
    b = a[::-1].copy()
    got = run1(op, [tensor(operand_type, a.shape, *a_quant), tensor(operand_type, b.shape, *b_quant)],
               [output(operand_type, (), *out_quant)], [a, b])
    expected = fn(quantize(dequantize(a, *a_quant), *out_quant, dtype),
                  quantize(dequantize(b, *b_quant), *out_quant, dtype))
    assert np.max(np.abs(got.astype(int) - expected.astype(int))) <= 1


def test_minmax_signature():
    rejects(Op.MAXIMUM, [tensor(F32, [1]), tensor(I32, [1])], [output(F32)], "input 1")
    rejects(Op.MINIMUM, [tensor(B8, [1]), tensor(B8, [1])], [output(B8)], "input 0")
    rejects(Op.MINIMUM, [tensor(F32, [1])], [output(F32)], "expected 2 inputs")


@pytest.mark.parametrize("operand_type, dtype", [(F32, np.float32), (I32, np.int32), (F16, np.float16)])
def test_select(operand_type, dtype):
    condition = np.array([True, False, True])
    a, b = np.array([1, 2, 3], dtype), np.array([4, 5, 6], dtype)
    inputs = [tensor(B8, [3]), tensor(operand_type, [3]), tensor(operand_type, [3])]
    np.testing.assert_array_equal(run1(Op.SELECT, inputs, [output(operand_type)], [condition, a, b]), [1, 5, 3])


def test_select_quantized_and_shapes():
    inputs = [tensor(B8, [2]), tensor(Q8, [2], 0.5, 0), tensor(Q8, [2], 1.0, 10)]
    got = run1(Op.SELECT, inputs, [output(Q8, [2], 0.25, 0)], [[True, False], [4, 14], [20, 30]])
    np.testing.assert_array_equal(got, [8, 80])      # reals 2 (from input 1) and 20 (from input 2)
    ctx = context(Op.SELECT, [tensor(B8, [0, 3]), tensor(F32, [2, 0]), tensor(F32)], [output(F32)])
    assert infer(Op.SELECT, ctx) == [(2, 3)]
    with pytest.raises(ValidationError, match="differ"):
        infer(Op.SELECT, ctx, [(2, 3), (2, 3), (3, 3)])
    rejects(Op.SELECT, [tensor(I32, [2]), tensor(F32, [2]), tensor(F32, [2])], [output(F32)], "input 0")
    rejects(Op.SELECT, [tensor(B8, [2]), tensor(F32, [2]), tensor(F16, [2])], [output(F32)], "input 2")


def test_pow():
    base = np.array([[2.0, -8.0, 4.0]], np.float32)
    exponent = np.array([[3.0], [0.5]], np.float32)
    got = run1(Op.POW, [tensor(F32, base.shape), tensor(F32, exponent.shape)], [output(F32)], [base, exponent])
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(got, np.power(base, exponent), rtol=1e-6)
    rejects(Op.POW, [tensor(I32, [1]), tensor(I32, [1])], [output(I32)], "input 0")


@pytest.mark.parametrize("in_type, out_type, values, expected", [
    (F32, I32, [-2.7, 2.7, np.nan, 1e10], [-2, 2, 0, 2147483647]),
    (F32, Q8, [-3.0, 2.7, 300.0, 255.9], [0, 2, 255, 255]),
    (I32, F16, [1, -70000, 3], [1.0, -np.inf, 3.0]),
    (Q8, I32, [0, 255, 7], [0, 255, 7]),
    (I32, Q8, [-1, 256, 77], [0, 255, 77]),
    (F16, F32, [0.5, -1.25, 2.0], [0.5, -1.25, 2.0]),
    (B8, B8, [True, False, True], [True, False, True]),
    (QS8, QS8, [-128, 0, 127], [-128, 0, 127]),
])
def test_cast(in_type, out_type, values, expected):
    quant_in = (1.0, 0) if in_type in (Q8, QS8) else ()
    quant_out = (1.0, 0) if out_type in (Q8, QS8) else ()
    got = run1(Op.CAST, [tensor(in_type, [len(values)], *quant_in)], [output(out_type, (), *quant_out)], [values])
    np.testing.assert_array_equal(got, np.array(expected).astype(got.dtype))


def test_cast_signature():
    rejects(Op.CAST, [tensor(QS8, [2], 1.0, 0)], [output(Q8, [2], 1.0, 0)], "output 0")
    rejects(Op.CAST, [tensor(B8, [2])], [output(I32, [2])], "output 0")
    rejects(Op.CAST, [tensor(F32, [2])], [output(I32, [3])], "dimensions")
    rejects(Op.CAST, [tensor(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, [2])], [output(F32)], "input 0")


@pytest.mark.parametrize("operand_type, dtype, zero", [(Q8, np.uint8, 128), (QS8, np.int8, 0)])
def test_quantize_rounds_half_away_from_zero_and_saturates(operand_type, dtype, zero):
    x = np.array([-1.25, -0.75, -0.25, 0.25, 0.75, 1000.0, -1000.0, np.nan], np.float32)
    got = run1(Op.QUANTIZE, [tensor(F32, [8])], [output(operand_type, [8], 0.5, zero)], [x])
    info = np.iinfo(dtype)
    expected = [zero - 3, zero - 2, zero - 1, zero + 1, zero + 2, info.max, info.min, info.max]
    np.testing.assert_array_equal(got, np.array(expected, dtype))


def test_quantize_signature():
    rejects(Op.QUANTIZE, [tensor(I32, [2])], [output(Q8, [2], 1.0, 0)], "input 0")
    rejects(Op.QUANTIZE, [tensor(F32, [2])], [output(F32, [2])], "output 0")


@pytest.mark.parametrize("in_type, out_type", [(Q8, F32), (QS8, F16), (T.TENSOR_QUANT8_SYMM, F32)])
def test_dequantize(in_type, out_type):
    zero = 3 if in_type == Q8 else (-3 if in_type == QS8 else 0)
    q = np.array([0, 5, 100], np.int64)
    got = run1(Op.DEQUANTIZE, [tensor(in_type, [3], 0.5, zero)], [output(out_type, [3])], [q])
    np.testing.assert_allclose(got.astype(np.float64), (q - zero) * 0.5)


def test_dequantize_per_channel():
    per_channel = dataclasses.replace(
        tensor(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, [2, 3]),
        channelQuant=SymmPerChannelQuantParams(scales=[0.5, 2.0, 1.0], channelDim=1))
    q = np.array([[2, 2, 2], [-4, 1, 0]], np.int8)
    got = run1(Op.DEQUANTIZE, [per_channel], [output(F32, [2, 3])], [q])
    np.testing.assert_array_equal(got, [[1, 4, 2], [-2, 2, 0]])


def test_rank():
    for values in (np.zeros(3, np.float32), np.zeros((1, 2, 3, 4, 5), np.float32)):
        got = run1(Op.RANK, [tensor(F32, values.shape)], [output(T.INT32)], [values])
        assert got.shape == () and got.dtype == np.int32 and int(got) == values.ndim
    rejects(Op.RANK, [tensor(F32, [2])], [output(I32, [1])], "output 0")


@pytest.mark.parametrize("out_type, value_type, value", [(F32, T.FLOAT32, 1.5), (I32, T.INT32, -3),
                                                         (F16, T.FLOAT16, 0.25)])
def test_fill(out_type, value_type, value):
    got = run1(Op.FILL, [const(I32, [2, 3]), const(value_type, value)], [output(out_type)], [])
    assert got.shape == (2, 3)
    np.testing.assert_array_equal(got, np.full((2, 3), value))


def test_fill_with_run_time_shape():
    inputs = [tensor(I32, [3]), const(T.FLOAT32, 2.0)]
    assert infer(Op.FILL, context(Op.FILL, inputs, [output(F32)])) == [(0, 0, 0)]
    assert run1(Op.FILL, inputs, [output(F32)], [[1, 0, 2]]).shape == (1, 0, 2)
    with pytest.raises(ValidationError, match="negative"):
        run1(Op.FILL, inputs, [output(F32)], [[1, -1, 2]])
    with pytest.raises(ResourceError):
        run1(Op.FILL, inputs, [output(F32)], [[100000, 100000, 100000]])


def test_fill_signature():
    rejects(Op.FILL, [const(I32, [2]), const(T.INT32, 1)], [output(F32)], "input 1")
    rejects(Op.FILL, [const(I32, [2]), const(T.INT32, 1)], [output(Q8, [2], 1.0, 0)], "output 0")
    rejects(Op.FILL, [const(I32, [-2]), const(T.FLOAT32, 1.0)], [output(F32)], "negative")
