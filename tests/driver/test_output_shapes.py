"""Output shapes: outputs of unknown dimensions or rank are resolved and reported; a buffer
too small gives OUTPUT_INSUFFICIENT_SIZE with isSufficient False and the needed dimensions;
zero-sized outputs. As in the VTS dynamic-shape tests, a fenced execution (which cannot
report shapes) refuses outputs whose shape the request leaves unknown."""
from __future__ import annotations

import numpy as np
import pytest

from driver.hal.enums import ErrorStatus, OperandType as T, OperationType as Op
from driver.hal.structs import OutputShape
from hal_client.builder import (ModelBuilder, make_request, out_bytes, out_like, out_omitted)
from tests.driver.execution import SHAPE_PATHS, Path, execute, prepare

F32 = np.float32
SHAPE_PATH_IDS = [p.value for p in SHAPE_PATHS]


def two_output_model(sum_dims, product_dims):
    """(a + b, a * b) of TENSOR_FLOAT32 [2, 3] inputs, outputs declared as given."""
    mb = ModelBuilder()
    main = mb.main
    a, b = main.input(T.TENSOR_FLOAT32, [2, 3]), main.input(T.TENSOR_FLOAT32, [2, 3])
    main.outputs(main.add(a, b, dims=sum_dims), main.mul(a, b, dims=product_dims))
    return mb.build()


A = np.arange(6, dtype=F32).reshape(2, 3) - 2.5
B = np.array([[0.5, 2, -1], [4, 0.25, 8]], F32)


@pytest.mark.parametrize("path", SHAPE_PATHS, ids=SHAPE_PATH_IDS)
@pytest.mark.parametrize("sum_dims, product_dims", [([2, 3], [2, 3]), ([0, 3], [0, 0]), ([], [2, 0]), ([], [])],
                         ids=["known", "unknown-dims", "mixed", "unknown-rank"])
def test_output_shapes_are_resolved_and_reported(path, sum_dims, product_dims):
    prepared = prepare(two_output_model(sum_dims, product_dims))
    io = make_request([A, B], [out_like(F32, [2, 3]), out_like(F32, [2, 3])])
    outcome = execute(prepared, io.request, path)
    assert outcome.status == ErrorStatus.NONE, outcome
    assert outcome.output_shapes == [OutputShape([2, 3], True), OutputShape([2, 3], True)]
    np.testing.assert_array_equal(io.output(0, [2, 3]), A + B)
    np.testing.assert_array_equal(io.output(1, [2, 3]), A * B)


@pytest.mark.parametrize("path", SHAPE_PATHS, ids=SHAPE_PATH_IDS)
@pytest.mark.parametrize("sum_dims", [[2, 3], [0, 0], []], ids=["known", "unknown-dims", "unknown-rank"])
@pytest.mark.parametrize("short", [1, 4, 24], ids=lambda n: f"short-by-{n}")
def test_insufficient_output_buffer(path, sum_dims, short):
    """Output 0 is ``short`` bytes too small (24: no buffer at all); output 1 fits."""
    prepared = prepare(two_output_model(sum_dims, [2, 3]))
    io = make_request([A, B], [out_bytes(F32, 24 - short), out_like(F32, [2, 3])])
    io.clear_outputs()
    outcome = execute(prepared, io.request, path)
    assert outcome.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, outcome
    assert outcome.output_shapes == [OutputShape([2, 3], False), OutputShape([2, 3], True)]


@pytest.mark.parametrize("path", SHAPE_PATHS, ids=SHAPE_PATH_IDS)
def test_insufficient_buffer_then_retry_with_the_reported_size(path):
    """A client learns the size from the error and succeeds with a buffer of that size."""
    prepared = prepare(two_output_model([], []))
    small = make_request([A, B], [out_bytes(F32, 4), out_bytes(F32, 4)])
    outcome = execute(prepared, small.request, path)
    assert outcome.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    assert [s.isSufficient for s in outcome.output_shapes] == [False, False]
    shapes = [s.dimensions for s in outcome.output_shapes]
    retry = make_request([A, B], [out_like(F32, shape) for shape in shapes])
    outcome = execute(prepared, retry.request, path)
    assert outcome.status == ErrorStatus.NONE
    np.testing.assert_array_equal(retry.output(1, shapes[1]), A * B)


def test_insufficient_output_buffer_fails_a_fenced_execution():
    prepared = prepare(two_output_model([2, 3], [2, 3]))
    io = make_request([A, B], [out_like(F32, [2, 3], spare=-1), out_like(F32, [2, 3])])
    outcome = execute(prepared, io.request, Path.FENCED)
    assert outcome.status != ErrorStatus.NONE, outcome


@pytest.mark.parametrize("sum_dims", [[0, 3], []], ids=["unknown-dims", "unknown-rank"])
def test_fenced_execution_refuses_outputs_of_unknown_shape(sum_dims):
    prepared = prepare(two_output_model(sum_dims, [2, 3]))
    io = make_request([A, B], [out_like(F32, [2, 3]), out_like(F32, [2, 3])])
    outcome = execute(prepared, io.request, Path.FENCED)
    assert outcome.status == ErrorStatus.INVALID_ARGUMENT, outcome


@pytest.mark.parametrize("sum_dims", [[0, 3], []], ids=["unknown-dims", "unknown-rank"])
def test_fenced_execution_with_shapes_stated_by_the_request(sum_dims):
    """The request may complete what the model leaves unknown; then fenced runs."""
    prepared = prepare(two_output_model(sum_dims, [2, 3]))
    io = make_request([A, B], [out_like(F32, [2, 3], state_dims=True), out_like(F32, [2, 3])])
    outcome = execute(prepared, io.request, Path.FENCED)
    assert outcome.status == ErrorStatus.NONE, outcome
    np.testing.assert_array_equal(io.output(0, [2, 3]), A + B)


@pytest.mark.parametrize("path", SHAPE_PATHS, ids=SHAPE_PATH_IDS)
def test_omitted_output(path):
    prepared = prepare(two_output_model([2, 3], [2, 3]))
    io = make_request([A, B], [out_omitted(F32), out_like(F32, [2, 3])])
    outcome = execute(prepared, io.request, path)
    assert outcome.status == ErrorStatus.NONE, outcome
    np.testing.assert_array_equal(io.output(1, [2, 3]), A * B)


# --- zero-sized outputs -----------------------------------------------------------------------

def slice_model():
    """(SLICE(x, begin, size), x + x) with begin and size given at run time."""
    mb = ModelBuilder()
    main = mb.main
    x = main.input(T.TENSOR_FLOAT32, [4])
    begin, size = main.input(T.TENSOR_INT32, [1]), main.input(T.TENSOR_INT32, [1])
    main.outputs(main.apply(Op.SLICE, [x, begin, size], T.TENSOR_FLOAT32, [0]), main.add(x, x))
    return mb.build()


X = np.array([1, 2, 3, 4], F32)


@pytest.mark.parametrize("path", SHAPE_PATHS, ids=SHAPE_PATH_IDS)
@pytest.mark.parametrize("buffer_length", [0, 1], ids=["empty-buffer", "one-byte"])
def test_zero_sized_output(path, buffer_length):
    prepared = prepare(slice_model())
    io = make_request([X, np.array([1], np.int32), np.array([0], np.int32)],
                      [out_bytes(F32, buffer_length), out_like(F32, [4])])
    outcome = execute(prepared, io.request, path)
    assert outcome.status == ErrorStatus.NONE, outcome
    assert outcome.output_shapes == [OutputShape([0], True), OutputShape([4], True)]
    np.testing.assert_array_equal(io.output(1, [4]), X + X)


@pytest.mark.parametrize("path", SHAPE_PATHS, ids=SHAPE_PATH_IDS)
def test_run_time_sized_output(path):
    """The same model with a non-empty slice: the size comes from an input value."""
    prepared = prepare(slice_model())
    io = make_request([X, np.array([1], np.int32), np.array([2], np.int32)],
                      [out_like(F32, [4]), out_like(F32, [4])])
    outcome = execute(prepared, io.request, path)
    assert outcome.status == ErrorStatus.NONE, outcome
    assert outcome.output_shapes == [OutputShape([2], True), OutputShape([4], True)]
    np.testing.assert_array_equal(io.output(0, [2]), X[1:3])


def test_zero_sized_output_is_refused_by_a_fenced_execution():
    """VTS: Executor::FENCED does not support zero-sized outputs (INVALID_ARGUMENT)."""
    prepared = prepare(slice_model())
    io = make_request([X, np.array([1], np.int32), np.array([0], np.int32)],
                      [out_bytes(F32, 1), out_like(F32, [4])])
    outcome = execute(prepared, io.request, Path.FENCED)
    assert outcome.status == ErrorStatus.INVALID_ARGUMENT, outcome
