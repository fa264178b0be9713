"""EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL and LOGICAL_AND, LOGICAL_OR,
LOGICAL_NOT."""
from __future__ import annotations

import numpy as np
import pytest

from driver.errors import ValidationError
from driver.hal.enums import OperandType as T, OperationType as Op
from tests.operations.helpers import B8, context, definition, infer, output, rejects, run1, tensor

COMPARISONS = {Op.EQUAL: np.equal, Op.NOT_EQUAL: np.not_equal, Op.LESS: np.less,
               Op.LESS_EQUAL: np.less_equal, Op.GREATER: np.greater, Op.GREATER_EQUAL: np.greater_equal}
PLAIN_TYPES = {T.TENSOR_FLOAT32: np.float32, T.TENSOR_FLOAT16: np.float16, T.TENSOR_INT32: np.int32,
               T.TENSOR_BOOL8: np.bool_}

rng = np.random.default_rng(7)


def compare(op, operand_type, a_dims, b_dims, a_quant=(), b_quant=()):
    return [tensor(operand_type, a_dims, *a_quant), tensor(operand_type, b_dims, *b_quant)], [output(B8)]


@pytest.mark.parametrize("op", list(COMPARISONS))
@pytest.mark.parametrize("operand_type", list(PLAIN_TYPES))
def test_plain_types_with_broadcasting(op, operand_type):
    dtype = PLAIN_TYPES[operand_type]
    a = rng.integers(0, 3, (2, 1, 4)).astype(dtype)
    b = rng.integers(0, 3, (3, 1)).astype(dtype)
    got = run1(op, *compare(op, operand_type, a.shape, b.shape), [a, b])
    assert got.dtype == np.bool_ and got.shape == (2, 3, 4)
    np.testing.assert_array_equal(got, COMPARISONS[op](a, b))


@pytest.mark.parametrize("op", list(COMPARISONS))
def test_int32_loop_condition(op):
    """The WHILE condition case: TENSOR_INT32 [1] against TENSOR_INT32 [1]."""
    for i, n in ((3, 10), (10, 10), (11, 10)):
        got = run1(op, *compare(op, T.TENSOR_INT32, [1], [1]), [[i], [n]])
        assert got.tolist() == [bool(COMPARISONS[op](i, n))]


@pytest.mark.parametrize("op", list(COMPARISONS))
@pytest.mark.parametrize("operand_type, dtype", [(T.TENSOR_QUANT8_ASYMM, np.uint8),
                                                 (T.TENSOR_QUANT8_ASYMM_SIGNED, np.int8)])
def test_quantized_compare_real_values_across_scales(op, operand_type, dtype):
    # a: scale 0.5, zero point 10; b: scale 1.0, zero point 12 (signed: zero points -10, -8)
    shift = 0 if dtype == np.uint8 else -20
    a_quant, b_quant = (0.5, 10 + shift), (1.0, 12 + shift)
    a = np.array([10, 12, 14, 16, 30], np.int64) + shift     # reals 0, 1, 2, 3, 10
    b = np.array([12, 12, 14, 15, 17], np.int64) + shift     # reals 0, 0, 2, 3, 5
    got = run1(op, *compare(op, operand_type, [5], [5], a_quant, b_quant), [a.astype(dtype), b.astype(dtype)])
    real_a, real_b = np.array([0, 1, 2, 3, 10.0]), np.array([0, 0, 2, 3, 5.0])
    np.testing.assert_array_equal(got, COMPARISONS[op](real_a, real_b))


def test_nan_compares_false_and_unequal():
    nan = np.float32("nan")
    for op, fn in COMPARISONS.items():
        got = run1(op, *compare(op, T.TENSOR_FLOAT32, [2], [2]), [[nan, 1], [nan, nan]])
        np.testing.assert_array_equal(got, fn(np.array([nan, 1]), np.array([nan, nan])))


def test_comparison_infers_broadcast_shape_and_unknowns():
    ctx = context(Op.LESS, *compare(Op.LESS, T.TENSOR_INT32, [0, 3], [2, 1]))
    assert infer(Op.LESS, ctx) == [(2, 3)]
    assert infer(Op.LESS, ctx, [None, (2, 1)]) == [None]
    with pytest.raises(ValidationError, match="do not broadcast"):
        infer(Op.LESS, ctx, [(2, 3), (4,)])


@pytest.mark.parametrize("op", list(COMPARISONS))
def test_comparison_signature_rejections(op):
    rejects(op, [tensor(T.TENSOR_INT32, [1])], [output(B8)], "expected 2 inputs")
    rejects(op, [tensor(T.TENSOR_INT32, [1]), tensor(T.TENSOR_FLOAT32, [1])], [output(B8)], "input 1")
    rejects(op, *compare(op, T.TENSOR_INT32, [1], [1])[:1], [output(T.TENSOR_INT32)], "output 0")
    rejects(op, [tensor(T.TENSOR_QUANT16_SYMM, [1], 1.0)] * 2, [output(B8)], "input 0")
    rejects(op, [tensor(T.TENSOR_INT32, [1])] * 2, [output(B8), output(B8)], "outputs")


def test_comparison_kernel_refuses_zero_size_against_larger_dimension():
    ctx = context(Op.GREATER, *compare(Op.GREATER, T.TENSOR_FLOAT32, [0], [2]))
    kernel = definition(Op.GREATER).build(ctx)
    with pytest.raises(ValidationError, match="do not broadcast"):
        kernel(np.zeros(0, np.float32), np.zeros(2, np.float32))


@pytest.mark.parametrize("op, fn", [(Op.LOGICAL_AND, np.logical_and), (Op.LOGICAL_OR, np.logical_or)])
def test_logical_binary_with_broadcasting(op, fn):
    a = np.array([[True], [False]])
    b = np.array([True, False, True])
    got = run1(op, [tensor(B8, [2, 1]), tensor(B8, [3])], [output(B8)], [a, b])
    np.testing.assert_array_equal(got, fn(a, b))
    assert got.dtype == np.bool_


def test_logical_not():
    got = run1(Op.LOGICAL_NOT, [tensor(B8, [3])], [output(B8, [3])], [[True, False, True]])
    assert got.tolist() == [False, True, False]


@pytest.mark.parametrize("op", [Op.LOGICAL_AND, Op.LOGICAL_OR])
def test_logical_signature_rejections(op):
    rejects(op, [tensor(B8, [1]), tensor(T.TENSOR_INT32, [1])], [output(B8)], "input 1")
    rejects(op, [tensor(T.TENSOR_INT32, [1])] * 2, [output(B8)], "input 0")
    rejects(op, [tensor(B8, [1])] * 2, [output(T.TENSOR_INT32)], "output 0")
    rejects(op, [tensor(B8, [1])] * 3, [output(B8)], "expected 2 inputs")


def test_logical_not_signature_rejections():
    rejects(Op.LOGICAL_NOT, [tensor(T.TENSOR_FLOAT32, [1])], [output(T.TENSOR_FLOAT32)], "input 0")
    rejects(Op.LOGICAL_NOT, [tensor(B8, [1])] * 2, [output(B8)], "expected 1 inputs")
    rejects(Op.LOGICAL_NOT, [tensor(B8, [1])], [output(T.TENSOR_INT32)], "output 0")


def test_bool8_compares_stored_bytes_and_logic_treats_nonzero_as_true():
    """A client may store any nonzero byte as true; the reference compares the bytes but
    applies logic to their truth."""
    raw_two = np.frombuffer(bytes([2, 0]), dtype=np.bool_)
    one = np.array([True, False])
    ctx = context(Op.EQUAL, *compare(Op.EQUAL, B8, [2], [2]))
    equal = definition(Op.EQUAL).build(ctx)(raw_two, one)[0]
    assert equal.tolist() == [False, True]
    logical_ctx = context(Op.LOGICAL_AND, [tensor(B8, [2]), tensor(B8, [2])], [output(B8)])
    conjunction = definition(Op.LOGICAL_AND).build(logical_ctx)(raw_two, one)[0]
    assert conjunction.view(np.uint8).tolist() == [1, 0]
    negation = definition(Op.LOGICAL_NOT).build(context(Op.LOGICAL_NOT, [tensor(B8, [2])], [output(B8)]))
    assert negation(raw_two)[0].view(np.uint8).tolist() == [0, 1]
