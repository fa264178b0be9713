"""One-tensor element-wise operations: RELU, RELU1, RELU6, LOGISTIC, TANH, HARD_SWISH,
ELU, ABS, NEG, EXP, LOG, SQRT, RSQRT, SIN, FLOOR."""
from __future__ import annotations

import numpy as np
import pytest

from driver.errors import ValidationError
from driver.hal.enums import OperandType as T, OperationType as Op
from tests.operations.helpers import (F16, F32, I32, Q8, QS8, const, context, definition,
                                      dequantize, infer, output, quantize, rejects, run1, tensor)

X = np.array([-7.5, -1.5, -0.25, 0.0, 0.5, 1.5, 5.0, 8.0], np.float32)
CLAMPS = {Op.RELU: (0, np.inf), Op.RELU1: (-1, 1), Op.RELU6: (0, 6)}


def unary(op, operand_type, x, in_quant=(), out_quant=()):
    return run1(op, [tensor(operand_type, np.shape(x), *in_quant)], [output(operand_type, (), *out_quant)], [x])


@pytest.mark.parametrize("op", list(CLAMPS))
@pytest.mark.parametrize("operand_type, dtype", [(F32, np.float32), (F16, np.float16)])
def test_clamps_float(op, operand_type, dtype):
    low, high = CLAMPS[op]
    got = unary(op, operand_type, X.astype(dtype))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, np.clip(X, low, high).astype(dtype))


@pytest.mark.parametrize("op", list(CLAMPS))
def test_clamps_turn_nan_into_the_lower_bound(op):
    got = unary(op, F32, np.array([np.nan], np.float32))
    assert got[0] == CLAMPS[op][0]


@pytest.mark.parametrize("op", list(CLAMPS))
@pytest.mark.parametrize("operand_type, dtype, zero", [(Q8, np.uint8, 100), (QS8, np.int8, -10)])
def test_clamps_quantized(op, operand_type, dtype, zero):
    quant = (0.1, zero)
    q = quantize(X, *quant, dtype)
    got = unary(op, operand_type, q, quant, quant)
    expected = quantize(np.clip(dequantize(q, *quant), *CLAMPS[op]), *quant, dtype)
    np.testing.assert_array_equal(got, expected)


def test_clamp_output_quantization_must_match_input():
    rejects(Op.RELU, [tensor(Q8, [2], 0.5, 0)], [output(Q8, [2], 0.25, 0)], "scale")


@pytest.mark.parametrize("op, fn", [
    (Op.LOGISTIC, lambda x: 1 / (1 + np.exp(-x))), (Op.TANH, np.tanh),
    (Op.HARD_SWISH, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    (Op.EXP, np.exp), (Op.SIN, np.sin), (Op.ABS, np.abs), (Op.NEG, np.negative), (Op.FLOOR, np.floor),
])
@pytest.mark.parametrize("operand_type, dtype, rtol", [(F32, np.float32, 1e-6), (F16, np.float16, 1e-3)])
def test_float_functions(op, fn, operand_type, dtype, rtol):
    got = unary(op, operand_type, X.astype(dtype))
    assert got.dtype == dtype
    np.testing.assert_allclose(got.astype(np.float64), fn(X.astype(dtype).astype(np.float64)), rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("op, fn", [(Op.LOG, np.log), (Op.SQRT, np.sqrt), (Op.RSQRT, lambda x: 1 / np.sqrt(x))])
def test_float_functions_follow_ieee_outside_their_domain(op, fn):
    x = np.array([-1.0, 0.0, 0.25, 4.0], np.float32)
    got = unary(op, F32, x)
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(got, fn(x.astype(np.float64)), rtol=1e-6)


@pytest.mark.parametrize("op, expected", [(Op.ABS, [5, 0, 7, -2147483648]), (Op.NEG, [5, 0, -7, -2147483648])])
def test_int32_abs_and_neg_wrap(op, expected):
    got = unary(op, I32, np.array([-5, 0, 7, -2147483648], np.int32))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("op, fn, out_quant", [
    (Op.LOGISTIC, lambda x: 1 / (1 + np.exp(-x)), {Q8: (1 / 256, 0), QS8: (1 / 256, -128)}),
    (Op.TANH, np.tanh, {Q8: (1 / 128, 128), QS8: (1 / 128, 0)}),
    (Op.HARD_SWISH, lambda x: x * np.clip(x + 3, 0, 6) / 6, {Q8: (0.05, 90), QS8: (0.05, -40)}),
])
@pytest.mark.parametrize("operand_type, dtype", [(Q8, np.uint8), (QS8, np.int8)])
def test_quantized_functions_within_one_step(op, fn, out_quant, operand_type, dtype):
    in_quant = (0.05, 128 if dtype == np.uint8 else 0)
    q = np.arange(np.iinfo(dtype).min, np.iinfo(dtype).max + 1).astype(dtype)
    got = unary(op, operand_type, q, in_quant, out_quant[operand_type])
    expected = quantize(fn(dequantize(q, *in_quant)), *out_quant[operand_type], dtype)
    assert got.dtype == dtype
    assert np.max(np.abs(got.astype(int) - expected.astype(int))) <= 1


@pytest.mark.parametrize("op", [Op.LOGISTIC, Op.TANH])
def test_fixed_output_quantization_is_enforced(op):
    rejects(op, [tensor(Q8, [2], 0.1, 0)], [output(Q8, [2], 0.1, 0)], "must have scale")
    rejects(op, [tensor(QS8, [2], 0.1, 0)], [output(QS8, [2], 0.1, 5)], "must have scale")


def test_elu():
    alpha = 0.5
    inputs = [tensor(F32, [8]), const(T.FLOAT32, alpha)]
    got = run1(Op.ELU, inputs, [output(F32)], [X])
    np.testing.assert_allclose(got, np.where(X > 0, X, alpha * (np.exp(X.astype(np.float64)) - 1)), rtol=1e-6)
    half = run1(Op.ELU, [tensor(F16, [8]), const(T.FLOAT16, alpha)], [output(F16)], [X.astype(np.float16)])
    assert half.dtype == np.float16
    rejects(Op.ELU, [tensor(F16, [8]), const(T.FLOAT32, alpha)], [output(F16)], "input 1")
    rejects(Op.ELU, [tensor(Q8, [8], 0.1, 0), const(T.FLOAT32, alpha)], [output(Q8, [8], 0.1, 0)], "input 0")


@pytest.mark.parametrize("op, allowed", [
    (Op.EXP, (F32, F16)), (Op.LOG, (F32, F16)), (Op.SQRT, (F32, F16)), (Op.RSQRT, (F32, F16)),
    (Op.SIN, (F32, F16)), (Op.FLOOR, (F32, F16)), (Op.ABS, (F32, F16, I32)), (Op.NEG, (F32, F16, I32)),
    (Op.RELU, (F32, F16, Q8, QS8)), (Op.LOGISTIC, (F32, F16, Q8, QS8)), (Op.HARD_SWISH, (F32, F16, Q8, QS8)),
])
def test_unary_signatures(op, allowed):
    for operand_type in (F32, F16, I32, Q8, T.TENSOR_BOOL8):
        quant = (1 / 256, 0) if operand_type == Q8 else ()
        inputs, outputs = [tensor(operand_type, [2], *quant)], [output(operand_type, [2], *quant)]
        if operand_type in allowed:
            definition(op).validate(context(op, inputs, outputs))
        else:
            rejects(op, inputs, outputs, "input 0")
    rejects(op, [tensor(F32, [2])] * 2, [output(F32, [2])], "expected 1 inputs")
    rejects(op, [tensor(F32, [2])], [output(F16, [2])], "output 0")


@pytest.mark.parametrize("op", [Op.RELU, Op.LOGISTIC, Op.TANH, Op.FLOOR])
def test_rank_limit_of_four(op):
    rejects(op, [tensor(F32, [1, 1, 1, 1, 2])], [output(F32)], "rank 5 > 4")
    ctx = context(op, [tensor(F32)], [output(F32)])
    with pytest.raises(ValidationError, match="rank 5"):
        infer(op, ctx, [(1, 1, 1, 1, 2)])


@pytest.mark.parametrize("op", [Op.EXP, Op.ABS, Op.SIN])
def test_rank_five_is_allowed_where_the_spec_has_no_limit(op):
    x = np.ones((1, 1, 1, 1, 2), np.float32)
    assert unary(op, F32, x).shape == x.shape
