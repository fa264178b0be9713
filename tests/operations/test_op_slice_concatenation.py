"""SLICE and CONCATENATION: values, constant and run-time parameters, zero sizes,
quantization, shape inference and signature validation."""
from __future__ import annotations

import numpy as np
import pytest

from driver.errors import ValidationError
from driver.hal.enums import OperandType as T, OperationType as Op
from tests.operations.helpers import (F32, I32, Q8, QS8, const, context, definition, dequantize,
                                      infer, output, quantize, rejects, run1, scalar, tensor)

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


@pytest.mark.parametrize("begin, size, expected", [
    ([0, 0, 0], [2, 3, 4], X),
    ([1, 1, 2], [1, 2, 2], X[1:2, 1:3, 2:4]),
    ([0, 2, 1], [-1, -1, 2], X[:, 2:, 1:3]),
    ([1, 0, 4], [1, 3, 0], X[1:2, :, 4:4]),
])
def test_slice_with_constant_parameters(begin, size, expected):
    inputs = [tensor(F32, X.shape), const(I32, begin), const(I32, size)]
    ctx = context(Op.SLICE, inputs, [output(F32)])
    assert infer(Op.SLICE, ctx) == [expected.shape]
    np.testing.assert_array_equal(run1(Op.SLICE, inputs, [output(F32)], [X]), expected)


@pytest.mark.parametrize("operand_type, dtype", [(I32, np.int32), (Q8, np.uint8), (QS8, np.int8),
                                                 (T.TENSOR_FLOAT16, np.float16)])
def test_slice_types(operand_type, dtype):
    x = np.arange(6).reshape(2, 3).astype(dtype)
    inputs = [tensor(operand_type, [2, 3], 0.5, 1), const(I32, [1, 1]), const(I32, [1, -1])]
    got = run1(Op.SLICE, inputs, [output(operand_type, [], 0.5, 1)], [x])
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, x[1:, 1:])


def test_slice_with_run_time_parameters():
    inputs = [tensor(F32, [2, 3, 4]), tensor(I32, [3]), tensor(I32, [3])]
    ctx = context(Op.SLICE, inputs, [output(F32)])
    assert infer(Op.SLICE, ctx) == [(0, 0, 0)]
    got = run1(Op.SLICE, inputs, [output(F32)], [X, [1, 0, 1], [1, -1, 3]])
    np.testing.assert_array_equal(got, X[1:2, :, 1:4])
    for begin, size in (([0, 0, 3], [1, 1, 2]), ([-1, 0, 0], [1, 1, 1]), ([0, 0, 0], [1, 1, -2]),
                        ([0, 0, 5], [1, 1, -1])):
        with pytest.raises(ValidationError, match="does not fit"):
            run1(Op.SLICE, inputs, [output(F32)], [X, begin, size])
    with pytest.raises(ValidationError, match="2 elements for an input of rank 3"):
        run1(Op.SLICE, inputs, [output(F32)], [X, [0, 0], [1, 1]])
    kernel = definition(Op.SLICE).build(ctx)     # the kernel checks on its own too
    with pytest.raises(ValidationError, match="must both have shape"):
        kernel(X, np.zeros(2, np.int32), np.ones(2, np.int32))


def test_slice_rejects_out_of_range_constants_at_prepare():
    for begin, size, message in (([0, 0, 3], [1, 1, 2], "exceeds dimension 4"),
                                 ([-1, 0, 0], [1, 1, 1], "negative"),
                                 ([0, 0, 0], [1, 1, -3], "negative"),
                                 ([0, 0, 5], [1, 1, -1], "exceeds dimension 4"),
                                 ([0, 0], [1, 1], "2 elements for an input of rank 3")):
        rejects(Op.SLICE, [tensor(F32, [2, 3, 4]), const(I32, begin), const(I32, size)], [output(F32)], message)


def test_slice_inference_with_unknown_input():
    inputs = [tensor(F32), const(I32, [0, 1]), const(I32, [2, -1])]
    ctx = context(Op.SLICE, inputs, [output(F32)])
    assert infer(Op.SLICE, ctx, [None, (2,), (2,)]) == [(2, 0)]
    assert infer(Op.SLICE, ctx, [(5, 0), (2,), (2,)]) == [(2, 0)]
    assert infer(Op.SLICE, ctx, [(5, 4), (2,), (2,)]) == [(2, 3)]


def test_slice_signature_rejections():
    good = [tensor(F32, [2]), const(I32, [0]), const(I32, [1])]
    rejects(Op.SLICE, good[:2], [output(F32)], "expected 3 inputs")
    rejects(Op.SLICE, [good[0], const(F32, [0.0]), good[2]], [output(F32)], "input 1")
    rejects(Op.SLICE, good, [output(I32)], "output 0")
    rejects(Op.SLICE, [tensor(T.TENSOR_BOOL8, [2]), *good[1:]], [output(T.TENSOR_BOOL8)], "input 0")
    rejects(Op.SLICE, [tensor(Q8, [2], 0.5, 3), *good[1:]], [output(Q8, [], 0.5, 4)], "zero point")
    rejects(Op.SLICE, [good[0], const(I32, [[0]]), good[2]], [output(F32)], "rank 2 > 1")


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_concatenation_float(axis):
    parts = []
    for k in range(3):
        shape = [2, 3, 2]
        shape[axis] = k + 1     # each input its own size along the axis
        parts.append(np.arange(np.prod(shape), dtype=np.float32).reshape(shape) + 100 * k)
    inputs = [tensor(F32, p.shape) for p in parts] + [const(T.INT32, axis)]
    ctx = context(Op.CONCATENATION, inputs, [output(F32)])
    expected = np.concatenate(parts, axis=axis)
    assert infer(Op.CONCATENATION, ctx) == [expected.shape]
    np.testing.assert_array_equal(run1(Op.CONCATENATION, inputs, [output(F32)], parts), expected)


def test_concatenation_with_a_zero_sized_input_and_run_time_axis():
    inputs = [tensor(F32, [2, 0]), tensor(F32, [2, 3]), scalar(T.INT32)]
    got = run1(Op.CONCATENATION, inputs, [output(F32)], [np.zeros((2, 0)), np.ones((2, 3)), 1])
    assert got.shape == (2, 3)
    with pytest.raises(ValidationError, match="out of range"):
        run1(Op.CONCATENATION, inputs, [output(F32)], [np.zeros((2, 0)), np.ones((2, 3)), 2])
    with pytest.raises(ValidationError, match="does not match"):
        run1(Op.CONCATENATION, inputs, [output(F32)], [np.zeros((2, 0)), np.ones((2, 3)), 0])


@pytest.mark.parametrize("operand_type, dtype", [(Q8, np.uint8), (QS8, np.int8)])
def test_concatenation_requantizes_inputs_with_other_quantization(operand_type, dtype):
    zero = 0 if dtype == np.int8 else 128
    quant = [(0.5, zero), (0.25, zero + 7), (1.0, zero - 3)]
    out_quant = (0.5, zero)
    info = np.iinfo(dtype)
    rng = np.random.default_rng(5)
    parts = [rng.integers(info.min, info.max + 1, (2, k + 1)).astype(dtype) for k in range(3)]
    inputs = [tensor(operand_type, p.shape, *q) for p, q in zip(parts, quant)] + [const(T.INT32, 1)]
    got = run1(Op.CONCATENATION, inputs, [output(operand_type, [2, 6], *out_quant)], parts)
    expected = np.concatenate([quantize(dequantize(p, *q), *out_quant, dtype) for p, q in zip(parts, quant)], axis=1)
    np.testing.assert_array_equal(got[:, :1], parts[0])        # same quantization: copied
    assert np.max(np.abs(got.astype(int) - expected.astype(int))) <= 1


def test_concatenation_inference():
    inputs = [tensor(F32, [2, 0]), tensor(F32, [0, 3]), const(T.INT32, 1)]
    ctx = context(Op.CONCATENATION, inputs, [output(F32)])
    assert infer(Op.CONCATENATION, ctx) == [(2, 0)]
    assert infer(Op.CONCATENATION, ctx, [(2, 1), (2, 3), ()]) == [(2, 4)]
    assert infer(Op.CONCATENATION, ctx, [None, None, ()]) == [None]
    with pytest.raises(ValidationError, match="differ"):
        infer(Op.CONCATENATION, ctx, [(2, 1), (3, 3), ()])
    with pytest.raises(ValidationError, match="different ranks"):
        infer(Op.CONCATENATION, ctx, [(2, 1), (2, 3, 1), ()])
    dynamic = context(Op.CONCATENATION, [tensor(F32, [2, 1]), tensor(F32, [2, 3]), scalar(T.INT32)], [output(F32)])
    assert infer(Op.CONCATENATION, dynamic) == [(0, 0)]


def test_concatenation_signature_rejections():
    rejects(Op.CONCATENATION, [const(T.INT32, 0)], [output(F32)], "at least 2 inputs")
    rejects(Op.CONCATENATION, [tensor(F32, [2]), tensor(T.TENSOR_FLOAT16, [2]), const(T.INT32, 0)],
            [output(F32)], "input 1")
    rejects(Op.CONCATENATION, [tensor(F32, [2]), tensor(F32, [2]), const(T.FLOAT32, 0.0)],
            [output(F32)], "input 2")
    rejects(Op.CONCATENATION, [tensor(I32, [2]), const(T.INT32, 0)], [output(I32)], "input 0")
    rejects(Op.CONCATENATION, [tensor(F32, [2]), const(T.INT32, -1)], [output(F32)], "negative")
    rejects(Op.CONCATENATION, [tensor(F32, [2]), const(T.INT32, 1)], [output(F32)], "out of range")
    rejects(Op.CONCATENATION, [tensor(F32, [1, 1, 1, 1, 1]), const(T.INT32, 0)], [output(F32)], "rank 5")
    rejects(Op.CONCATENATION, [tensor(F32, [2]), const(T.INT32, 0)], [output(T.TENSOR_FLOAT16)], "output 0")
