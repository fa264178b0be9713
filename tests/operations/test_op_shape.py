"""Operations that move values around: RESHAPE, EXPAND_DIMS, SQUEEZE, TRANSPOSE, PAD,
GATHER, TILE, SPLIT."""
from __future__ import annotations

import resource

import numpy as np
import pytest

from driver.errors import ResourceError, ValidationError
from driver.hal.enums import OperandType as T, OperationType as Op
from driver.limits import MAX_RANK
from tests.operations.helpers import (F32, I32, OMITTED, Q8, QS8, const, context, definition,
                                      infer, omitted, output, rejects, run, run1, scalar, tensor)

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


@pytest.mark.parametrize("target, expected", [([4, 6], (4, 6)), ([-1], (24,)), ([2, -1, 3], (2, 4, 3))])
def test_reshape(target, expected):
    inputs = [tensor(F32, X.shape), const(I32, target)]
    assert infer(Op.RESHAPE, context(Op.RESHAPE, inputs, [output(F32)])) == [expected]
    got = run1(Op.RESHAPE, inputs, [output(F32)], [X])
    np.testing.assert_array_equal(got, X.reshape(expected))


def test_reshape_run_time_target_and_errors():
    inputs = [tensor(F32, X.shape), tensor(I32, [2])]
    assert infer(Op.RESHAPE, context(Op.RESHAPE, inputs, [output(F32)])) == [(0, 0)]
    assert run1(Op.RESHAPE, inputs, [output(F32)], [X, [-1, 8]]).shape == (3, 8)
    for target, message in (([5, 5], "holds 25 elements"), ([-1, -1], "more than one -1"),
                            ([-1, 0], "undefined"), ([-1, 5], "do not fill"), ([-2, -12], "negative")):
        with pytest.raises(ValidationError, match=message):
            run1(Op.RESHAPE, inputs, [output(F32)], [X, target])
    rejects(Op.RESHAPE, [tensor(F32, X.shape), const(I32, [7])], [output(F32)], "holds 7 elements")
    rejects(Op.RESHAPE, [tensor(I32, [2]), const(I32, [2])], [output(I32)], "input 0")
    rejects(Op.RESHAPE, [tensor(Q8, [2], 0.5, 1), const(I32, [2])], [output(Q8, [2], 0.5, 2)], "zero point")
    rejects(Op.RESHAPE, [tensor(F32, [1, 1, 1, 1, 2]), const(I32, [2])], [output(F32)], "rank 5 > 4")


@pytest.mark.parametrize("axis, expected", [(0, (1, 2, 3, 4)), (3, (2, 3, 4, 1)), (-1, (2, 3, 4, 1)),
                                            (-4, (1, 2, 3, 4)), (2, (2, 3, 1, 4))])
def test_expand_dims(axis, expected):
    inputs = [tensor(F32, X.shape), const(T.INT32, axis)]
    assert infer(Op.EXPAND_DIMS, context(Op.EXPAND_DIMS, inputs, [output(F32)])) == [expected]
    np.testing.assert_array_equal(run1(Op.EXPAND_DIMS, inputs, [output(F32)], [X]), X.reshape(expected))


def test_expand_dims_errors():
    rejects(Op.EXPAND_DIMS, [tensor(F32, X.shape), const(T.INT32, 4)], [output(F32)], "out of range")
    rejects(Op.EXPAND_DIMS, [tensor(F32, X.shape), const(T.INT32, -5)], [output(F32)], "out of range")
    with pytest.raises(ValidationError, match="out of range"):
        run1(Op.EXPAND_DIMS, [tensor(I32, [2]), scalar(T.INT32)], [output(I32)], [[1, 2], 2])


def test_squeeze():
    x = np.zeros((1, 3, 1, 2), np.float32)
    all_ones = [tensor(F32, x.shape), omitted(I32)]
    assert run1(Op.SQUEEZE, all_ones, [output(F32)], [x]).shape == (3, 2)
    listed = [tensor(F32, x.shape), const(I32, [-2])]
    assert infer(Op.SQUEEZE, context(Op.SQUEEZE, listed, [output(F32)])) == [(1, 3, 2)]
    assert run1(Op.SQUEEZE, listed, [output(F32)], [x]).shape == (1, 3, 2)
    request_omitted = [tensor(F32, x.shape), tensor(I32, [1])]
    assert run1(Op.SQUEEZE, request_omitted, [output(F32)], [x, OMITTED]).shape == (3, 2)
    assert run1(Op.SQUEEZE, [tensor(F32, [1, 1]), omitted(I32)], [output(F32)], [np.zeros((1, 1))]).shape == (1,)
    rejects(Op.SQUEEZE, [tensor(F32, x.shape), const(I32, [1])], [output(F32)], "cannot squeeze dimension 1")
    with pytest.raises(ValidationError, match="cannot squeeze"):
        run1(Op.SQUEEZE, request_omitted, [output(F32)], [np.zeros((2, 0)), [1]])


def test_transpose():
    perm = [tensor(F32, X.shape), const(I32, [2, 0, 1])]
    assert infer(Op.TRANSPOSE, context(Op.TRANSPOSE, perm, [output(F32)])) == [(4, 2, 3)]
    np.testing.assert_array_equal(run1(Op.TRANSPOSE, perm, [output(F32)], [X]), X.transpose(2, 0, 1))
    matrix = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = run1(Op.TRANSPOSE, [tensor(F32, [2, 3]), omitted(I32)], [output(F32)], [matrix])
    np.testing.assert_array_equal(got, matrix.T)
    got = run1(Op.TRANSPOSE, [tensor(F32, [2, 3]), tensor(I32, [2])], [output(F32)], [matrix, OMITTED])
    np.testing.assert_array_equal(got, matrix.T)
    rejects(Op.TRANSPOSE, [tensor(F32, X.shape), const(I32, [0, 0, 1])], [output(F32)], "not a permutation")
    rejects(Op.TRANSPOSE, [tensor(F32, X.shape), omitted(I32)], [output(F32)], "must be 2-D")
    rejects(Op.TRANSPOSE, [tensor(F32, X.shape), const(I32, [1, 0])], [output(F32)], "entries for rank 3")


@pytest.mark.parametrize("operand_type, dtype, zero", [(F32, np.float32, 0), (Q8, np.uint8, 9), (QS8, np.int8, -9)])
def test_pad_with_logical_zero(operand_type, dtype, zero):
    x = np.arange(1, 7).reshape(2, 3).astype(dtype)
    quant = (0.5, zero) if operand_type != F32 else ()
    inputs = [tensor(operand_type, [2, 3], *quant), const(I32, [[1, 0], [2, 1]])]
    got = run1(Op.PAD, inputs, [output(operand_type, (), *quant)], [x])
    np.testing.assert_array_equal(got, np.pad(x, [(1, 0), (2, 1)], constant_values=zero))


def test_pad_errors():
    rejects(Op.PAD, [tensor(F32, [2, 3]), const(I32, [[1, -1], [0, 0]])], [output(F32)], "negative")
    rejects(Op.PAD, [tensor(F32, [2, 3]), const(I32, [[1, 1]])], [output(F32)], "rows for rank 2")
    inputs = [tensor(F32, [2]), tensor(I32, [1, 2])]
    with pytest.raises(ResourceError):
        run1(Op.PAD, inputs, [output(F32)], [[1, 2], [[0, 2_000_000_000]]])


@pytest.mark.parametrize("axis, indices", [(0, [1, 0, 1]), (1, [[2, 0], [1, 1]]), (-1, [3])])
def test_gather(axis, indices):
    inputs = [tensor(F32, X.shape), const(T.INT32, axis), const(I32, indices)]
    expected = np.take(X, np.array(indices), axis=axis)
    assert infer(Op.GATHER, context(Op.GATHER, inputs, [output(F32)])) == [expected.shape]
    np.testing.assert_array_equal(run1(Op.GATHER, inputs, [output(F32)], [X]), expected)


def test_gather_index_bounds():
    rejects(Op.GATHER, [tensor(F32, X.shape), const(T.INT32, 1), const(I32, [3])], [output(F32)], r"\[0, 3\)")
    inputs = [tensor(F32, X.shape), const(T.INT32, 0), tensor(I32, [2])]
    with pytest.raises(ValidationError, match=r"\[0, 2\)"):
        run1(Op.GATHER, inputs, [output(F32)], [X, [0, -1]])


def test_tile():
    inputs = [tensor(I32, [2, 1]), const(I32, [2, 3])]
    x = np.array([[1], [2]], np.int32)
    assert infer(Op.TILE, context(Op.TILE, inputs, [output(I32)])) == [(4, 3)]
    np.testing.assert_array_equal(run1(Op.TILE, inputs, [output(I32)], [x]), np.tile(x, (2, 3)))
    rejects(Op.TILE, [tensor(I32, [2, 1]), const(I32, [2])], [output(I32)], "expected \\[2\\]")
    with pytest.raises(ResourceError):
        run1(Op.TILE, [tensor(I32, [2, 1]), tensor(I32, [2])], [output(I32)], [x, [100000, 100000]])


@pytest.mark.parametrize("axis", [0, 2, -1])
def test_split(axis):
    inputs = [tensor(F32, X.shape), const(T.INT32, axis), const(T.INT32, 2)]
    outputs = [output(F32), output(F32)]
    parts = run(Op.SPLIT, inputs, outputs, [X])
    for got, expected in zip(parts, np.split(X, 2, axis=axis)):
        np.testing.assert_array_equal(got, expected)


def test_split_errors():
    rejects(Op.SPLIT, [tensor(F32, X.shape), const(T.INT32, 1), const(T.INT32, 2)], [output(F32)] * 2,
            "not a multiple")
    rejects(Op.SPLIT, [tensor(F32, X.shape), const(T.INT32, 0), const(T.INT32, 2)], [output(F32)] * 3,
            "differs from the 3 outputs")
    rejects(Op.SPLIT, [tensor(Q8, [2], 0.5, 0), const(T.INT32, 0), const(T.INT32, 1)],
            [output(Q8, [2], 0.25, 0)], "scale")


def test_tile_to_an_empty_result_allocates_nothing_large():
    """Multiples [2**23 - 1, 0]: the result is empty, and np.tile would first repeat the
    leading axis 2**23 - 1 times, a gigabyte here (an out-of-memory found by fuzzing). With
    [2**31 - 1, 0] the result is past the size limit (a zero size counts as one)."""
    ctx = context(Op.TILE, [tensor(T.TENSOR_FLOAT32, [1, 30]), tensor(T.TENSOR_INT32, [2])],
                  [output(T.TENSOR_FLOAT32, [0, 0])])
    kernel = definition(Op.TILE).build(ctx)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    (result,) = kernel(np.ones((1, 30), np.float32), np.array([2**23 - 1, 0], np.int32))
    assert result.shape == (2**23 - 1, 0) and result.dtype == np.float32
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000   # KiB
    with pytest.raises(ResourceError, match=r"shape \[2147483647, 0\] needs"):
        kernel(np.ones((1, 30), np.float32), np.array([2**31 - 1, 0], np.int32))


def test_ranks_from_a_vector_length_are_bounded():
    """FILL's shape, RESHAPE's target and TILE's multiples set the output rank by their
    length: a length of 2**29 must be refused, not turned into a 2**29-tuple (fuzzing
    found FILL doing so: out of memory)."""
    too_long = MAX_RANK + 1
    for op, inputs, out_type in (
            (Op.FILL, [tensor(I32, [536870911]), tensor(T.FLOAT32)], F32),
            (Op.RESHAPE, [tensor(F32, [0]), tensor(I32, [536870911])], F32),
            (Op.TILE, [tensor(F32, []), tensor(I32, [536870911])], F32)):
        ctx = context(op, inputs, [output(out_type)])
        shapes = [None if op == Op.TILE and k == 0 else tuple(o.dimensions) for k, o in enumerate(inputs)]
        with pytest.raises(ResourceError, match=f"rank 536870911 is over this driver's limit of {MAX_RANK}"):
            infer(op, ctx, shapes)
    # Known only at run time: refused by the kernels.
    with pytest.raises(ResourceError, match="rank"):
        run1(Op.FILL, [tensor(I32, [too_long]), tensor(T.FLOAT32)], [output(F32)],
             [np.ones(too_long, np.int32), np.float32(1)])
    with pytest.raises(ResourceError, match="rank"):
        run1(Op.RESHAPE, [tensor(F32, [1]), tensor(I32, [too_long])], [output(F32)],
             [np.ones(1, np.float32), np.ones(too_long, np.int32)])
    assert run1(Op.FILL, [tensor(I32, [MAX_RANK]), tensor(T.FLOAT32)], [output(F32)],
                [np.ones(MAX_RANK, np.int32), np.float32(2)]).ndim == MAX_RANK
