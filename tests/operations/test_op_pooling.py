"""AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D: hand-computed windows (in-bounds counts
under padding, NCHW, quantized rounding, activation clamps), run-time parameters, shape
inference, one-field mutations of valid signatures, and runs through a device."""
from __future__ import annotations

import numpy as np
import pytest

from driver import SampleDriver
from driver.errors import ResourceError, ValidationError
from driver.hal.enums import ErrorStatus, FusedActivationFunc as Act, OperandType as T, OperationType as Op
from hal_client.builder import ModelBuilder, make_request, out_like
from tests.driver.execution import ALL_PATHS, execute, prepare, prepare_status
from tests.operations.helpers import (F16, F32, Q8, QS8, const, context, definition, infer, output,
                                      rejects, run1, scalar, tensor)

I32 = T.INT32
SAME, VALID = 1, 2
POOLS = (Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D, Op.L2_POOL_2D)

#: 1..9 as a [1, 3, 3, 1] image.
NINE = np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3, 1)


def implicit(x_info, scheme, stride, filter_size, activation=Act.NONE, nchw=None):
    """Inputs of the implicit-padding signature; (height, width) pairs."""
    layout = [] if nchw is None else [const(T.BOOL, nchw)]
    return [x_info, const(I32, scheme), const(I32, stride[1]), const(I32, stride[0]),
            const(I32, filter_size[1]), const(I32, filter_size[0]), const(I32, int(activation)), *layout]


def explicit(x_info, padding, stride, filter_size, activation=Act.NONE, nchw=None):
    """Inputs of the explicit-padding signature; padding is (left, right, top, bottom)."""
    layout = [] if nchw is None else [const(T.BOOL, nchw)]
    return [x_info, *(const(I32, p) for p in padding), const(I32, stride[1]), const(I32, stride[0]),
            const(I32, filter_size[1]), const(I32, filter_size[0]), const(I32, int(activation)), *layout]


def pool(op, inputs, x, out_type=F32, scale=0.0, zero_point=0):
    return run1(op, inputs, [output(out_type, [], scale, zero_point)], [x])


# --- arithmetic ------------------------------------------------------------------------------

def test_same_padding_averages_only_the_cells_inside_the_input():
    got = pool(Op.AVERAGE_POOL_2D, implicit(tensor(F32, NINE.shape), SAME, (1, 1), (3, 3)), NINE)
    # Corners average 4 cells, edges 6, the centre 9.
    expected = [[(1 + 2 + 4 + 5) / 4, (1 + 2 + 3 + 4 + 5 + 6) / 6, (2 + 3 + 5 + 6) / 4],
                [(1 + 2 + 4 + 5 + 7 + 8) / 6, 45 / 9, (2 + 3 + 5 + 6 + 8 + 9) / 6],
                [(4 + 5 + 7 + 8) / 4, (4 + 5 + 6 + 7 + 8 + 9) / 6, (5 + 6 + 8 + 9) / 4]]
    np.testing.assert_allclose(got[0, :, :, 0], expected, rtol=1e-6)


def test_explicit_padding_and_strides():
    # Padding left 1, top 1, bottom 1; 2x2 windows every 2 cells: rows -1..0, 1..2, 3(pad)..
    inputs = explicit(tensor(F32, NINE.shape), (1, 0, 1, 1), (2, 2), (2, 2))
    got = pool(Op.AVERAGE_POOL_2D, inputs, NINE)
    np.testing.assert_allclose(got[0, :, :, 0], [[1, (2 + 3) / 2], [(4 + 7) / 2, (5 + 6 + 8 + 9) / 4]])
    got = pool(Op.MAX_POOL_2D, inputs, -NINE)      # padding is never a maximum
    np.testing.assert_array_equal(got[0, :, :, 0], [[-1, -2], [-4, -5]])


def test_l2_pool_is_the_root_mean_square_of_the_cells_inside():
    got = pool(Op.L2_POOL_2D, implicit(tensor(F32, NINE.shape), SAME, (2, 2), (2, 2)), NINE)
    expected = np.sqrt([[(1 + 4 + 16 + 25) / 4, (9 + 36) / 2], [(49 + 64) / 2, 81]])
    np.testing.assert_allclose(got[0, :, :, 0], expected, rtol=1e-6)


@pytest.mark.parametrize("op", POOLS)
def test_nchw_is_nhwc_transposed(op):
    x = np.random.default_rng(1).uniform(0, 4, (2, 5, 4, 3)).astype(np.float32)
    nhwc = pool(op, explicit(tensor(F32, x.shape), (1, 0, 0, 1), (2, 1), (2, 3), nchw=False), x)
    nchw_x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    nchw = pool(op, explicit(tensor(F32, nchw_x.shape), (1, 0, 0, 1), (2, 1), (2, 3), nchw=True), nchw_x)
    np.testing.assert_array_equal(nchw, nhwc.transpose(0, 3, 1, 2))


def test_filter_much_larger_than_the_input_averages_all_of_it():
    """The conformance suite pads a [52, 60] image by 50 for 100x100 windows."""
    x = np.random.default_rng(2).uniform(-1, 1, (2, 52, 60, 3)).astype(np.float32)
    got = pool(Op.AVERAGE_POOL_2D, explicit(tensor(F32, x.shape), (50, 50, 50, 50), (5, 5), (100, 100)), x)
    assert got.shape == (2, 11, 13, 3)
    np.testing.assert_allclose(got[:, 5, 6], x.mean(axis=(1, 2)), rtol=1e-5)   # rows -25..74, columns -20..79


@pytest.mark.parametrize("operand_type, values, expected", [
    (Q8, [[1, 2], [2, 2]], [[2, 2], [2, 2]]),          # 7/4 and 3/2: halves go up
    (QS8, [[-1, -2], [-2, -2]], [[-2, -2], [-2, -2]]),  # -7/4 and -3/2: halves away from zero
    (QS8, [[-5, 0], [0, 0]], [[-1, 0], [0, 0]]),       # -5/4 = -1.25 -> -1
])
def test_quantized_average_rounds_as_the_integer_kernel(operand_type, values, expected):
    dtype = np.uint8 if operand_type == Q8 else np.int8
    x = np.array(values, dtype).reshape(1, 2, 2, 1)
    got = pool(Op.AVERAGE_POOL_2D, implicit(tensor(operand_type, x.shape, 0.5, 3), SAME, (1, 1), (2, 2)),
               x, operand_type, 0.5, 3)
    np.testing.assert_array_equal(got[0, :, :, 0], expected)


@pytest.mark.parametrize("op", [Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D])
@pytest.mark.parametrize("activation, low, high", [(Act.RELU, 128, 255), (Act.RELU1, 126, 130),
                                                   (Act.RELU6, 128, 140)])
def test_quantized_activation_clamps_in_the_quantized_domain(op, activation, low, high):
    x = np.array([0, 100, 127, 129, 135, 200, 255, 131], np.uint8).reshape(1, 1, 8, 1)
    got = pool(op, implicit(tensor(Q8, x.shape, 0.5, 128), VALID, (1, 1), (1, 1), activation),
               x, Q8, 0.5, 128)
    np.testing.assert_array_equal(got.ravel(), np.clip(x.ravel(), low, high))


@pytest.mark.parametrize("activation, low, high", [(Act.RELU, 0, np.inf), (Act.RELU1, -1, 1),
                                                   (Act.RELU6, 0, 6)])
def test_float_activation(activation, low, high):
    x = np.array([-3, -0.5, 0.5, 3, 9], np.float32).reshape(1, 1, 5, 1)
    for op in POOLS[:2]:
        got = pool(op, implicit(tensor(F32, x.shape), VALID, (1, 1), (1, 1), activation), x)
        np.testing.assert_array_equal(got.ravel(), np.clip(x.ravel(), low, high))


def test_float16_is_computed_in_single_precision():
    x = np.random.default_rng(3).uniform(0, 100, (1, 4, 4, 2)).astype(np.float16)
    got = pool(Op.AVERAGE_POOL_2D, implicit(tensor(F16, x.shape), VALID, (2, 2), (2, 2)), x, F16)
    expected = x.astype(np.float64).reshape(1, 2, 2, 2, 2, 2).mean(axis=(2, 4)).astype(np.float32)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, expected.astype(np.float16))


def test_zero_batches():
    x = np.zeros((0, 3, 3, 2), np.float32)
    assert pool(Op.MAX_POOL_2D, implicit(tensor(F32, [0, 3, 3, 2]), SAME, (2, 2), (2, 2)), x).shape == (0, 2, 2, 2)


# --- run-time parameters, shapes --------------------------------------------------------------

def test_run_time_parameters_are_read_and_checked():
    inputs = [tensor(F32, [0, 0, 0, 0]), *(scalar(I32) for _ in range(9)), scalar(T.BOOL)]
    ctx = context(Op.AVERAGE_POOL_2D, inputs, [output(F32)])
    assert infer(Op.AVERAGE_POOL_2D, ctx, [(1, 1, 3, 3), *[()] * 10]) == [(1, 0, 0, 0)]
    kernel = definition(Op.AVERAGE_POOL_2D).build(ctx)
    nchw = NINE.reshape(1, 1, 3, 3)
    params = [np.int32(v) for v in (0, 1, 0, 0, 1, 1, 2, 1, 0)]
    (got,) = kernel(nchw, *params, np.bool_(True))
    np.testing.assert_array_equal(got, [[[[1.5, 2.5, 3], [4.5, 5.5, 6], [7.5, 8.5, 9]]]])
    params[4] = np.int32(0)
    with pytest.raises(ValidationError, match=r"input 5 .*stride width 0 must be positive"):
        kernel(nchw, *params, np.bool_(True))
    params[4], params[6] = np.int32(1), np.int32(5)
    with pytest.raises(ValidationError, match="filter width.* 5 is larger than the padded width 4"):
        kernel(nchw, *params, np.bool_(True))
    with pytest.raises(ValidationError, match="only its batches may be 0"):
        kernel(np.zeros((1, 1, 0, 3), np.float32), *params, np.bool_(True))


def test_shape_inference():
    ctx = context(Op.MAX_POOL_2D, implicit(tensor(F32, [0, 0, 7, 3]), SAME, (2, 3), (3, 3)), [output(F32)])
    assert infer(Op.MAX_POOL_2D, ctx, [(0, 0, 7, 3), *[()] * 6]) == [(0, 0, 3, 3)]
    assert infer(Op.MAX_POOL_2D, ctx, [(2, 5, 7, 3), *[()] * 6]) == [(2, 3, 3, 3)]
    ctx = context(Op.MAX_POOL_2D, implicit(tensor(F32, [1, 3, 5, 7]), VALID, (1, 2), (2, 2), nchw=True),
                  [output(F32)])
    assert infer(Op.MAX_POOL_2D, ctx, [(1, 3, 5, 7), *[()] * 7]) == [(1, 3, 4, 3)]


def test_windows_over_the_limit_are_refused():
    inputs = explicit(tensor(F32, [1, 1, 1, 64]), (4095, 4095, 4095, 4095), (1, 1), (4096, 4096))
    with pytest.raises(ResourceError, match="windows of input 0"):
        definition(Op.MAX_POOL_2D).build(context(Op.MAX_POOL_2D, inputs, [output(F32)]))


# --- one-field mutations ----------------------------------------------------------------------

def valid(op, operand_type=F32):
    quant = (0.5, 3) if operand_type in (Q8, QS8) else (0.0, 0)
    return (explicit(tensor(operand_type, [1, 4, 4, 2], *quant), (1, 1, 1, 1), (2, 2), (3, 3), nchw=False),
            [output(operand_type, [1, 2, 2, 2], *quant)])


@pytest.mark.parametrize("op", POOLS)
def test_valid_signatures_pass(op):
    for operand_type in (F32, F16) + ((Q8, QS8) if op != Op.L2_POOL_2D else ()):
        definition(op).validate(context(op, *valid(op, operand_type)))
    inputs, outputs = valid(op)
    for variant in (inputs[:10], implicit(inputs[0], SAME, (2, 2), (3, 3)),
                    implicit(inputs[0], SAME, (2, 2), (3, 3), nchw=True)):
        definition(op).validate(context(op, variant, outputs))


@pytest.mark.parametrize("op", POOLS)
@pytest.mark.parametrize("position, replacement, message", [
    (0, tensor(T.TENSOR_INT32, [1, 4, 4, 2]), "input 0 .*TENSOR_INT32"),
    (0, tensor(F32, [4, 4, 2]), "rank 3 < 4"),
    (0, tensor(F32, [1, 1, 4, 4, 2]), "rank 5 > 4"),
    (1, const(I32, -1), "padding left -1 must be non-negative"),
    (4, const(I32, -1), "padding bottom -1 must be non-negative"),
    (4, const(I32, 3), r"height padding \(1, 3\) must be smaller than the input 8 \(filter height\) 3"),
    (5, const(I32, 0), "stride width 0 must be positive"),
    (6, const(T.FLOAT32, 2.0), "input 6 .*FLOAT32"),
    (7, const(I32, 0), "filter width 0 must be positive"),
    (8, const(I32, 7), r"input 8 \(filter height\) 7 is larger than the padded height 6"),
    (9, const(I32, 4), "fused activation 4"),
    (10, const(I32, 1), "input 10 .*INT32, expected BOOL"),
])
def test_one_field_mutations_are_invalid(op, position, replacement, message):
    inputs, outputs = valid(op)
    inputs[position] = replacement
    rejects(op, inputs, outputs, message)


@pytest.mark.parametrize("op", POOLS)
def test_count_and_output_mutations_are_invalid(op):
    inputs, outputs = valid(op)
    for count in (6, 9, 12):
        rejects(op, (inputs * 2)[:count], outputs, "expected .*inputs")
    rejects(op, inputs, outputs * 2, "expected 1 outputs")
    rejects(op, inputs, [output(F16, [1, 2, 2, 2])], "output 0 .*TENSOR_FLOAT16")
    rejects(op, implicit(inputs[0], 3, (2, 2), (3, 3)), outputs, "padding scheme 3 is not one of SAME, VALID")


def test_l2_pool_takes_no_quantized_tensors():
    rejects(Op.L2_POOL_2D, *valid(Op.L2_POOL_2D, Q8), "TENSOR_QUANT8_ASYMM, expected")


@pytest.mark.parametrize("op", [Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D])
@pytest.mark.parametrize("operand_type", [Q8, QS8])
def test_quantization_mutations_are_invalid(op, operand_type):
    inputs, _ = valid(op, operand_type)
    rejects(op, inputs, [output(operand_type, [1, 2, 2, 2], 0.25, 3)], "expected those of input 0")
    rejects(op, inputs, [output(operand_type, [1, 2, 2, 2], 0.5, 4)], "expected those of input 0")
    inputs[0] = tensor(operand_type, [1, 4, 4, 2], 0.0, 3)
    rejects(op, inputs, [output(operand_type, [1, 2, 2, 2], 0.0, 3)], "scale 0.0 <= 0")


# --- through a device ---------------------------------------------------------------------------

def _model(op, operand_type, x_shape, params, out_shape, quant=(0.0, 0), run_time_scalars=False):
    mb = ModelBuilder()
    g = mb.main
    x = g.input(operand_type, x_shape, *quant)
    scalars = [g.input(T.BOOL if isinstance(v, bool) else I32) if run_time_scalars
               else g.constant(T.BOOL if isinstance(v, bool) else I32, v) for v in params]
    g.outputs(g.apply(op, [x, *scalars], operand_type, out_shape, *quant))
    return mb.build()


@pytest.mark.parametrize("path", ALL_PATHS)
@pytest.mark.parametrize("op, operand_type, quant", [
    (Op.AVERAGE_POOL_2D, Q8, (0.5, 128)), (Op.MAX_POOL_2D, QS8, (0.25, -3)), (Op.L2_POOL_2D, F16, (0.0, 0)),
    (Op.AVERAGE_POOL_2D, F32, (0.0, 0))])
def test_runs_on_every_execution_path(path, op, operand_type, quant):
    """NCHW, explicit padding, RELU6, through a prepared model."""
    dtype = {Q8: np.uint8, QS8: np.int8, F16: np.float16, F32: np.float32}[operand_type]
    rng = np.random.default_rng(4)
    x = (rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max + 1, (1, 2, 5, 5)) if dtype().dtype.kind in "ui"
         else rng.uniform(-2, 8, (1, 2, 5, 5))).astype(dtype)
    params = (1, 1, 1, 1, 2, 2, 3, 3, int(Act.RELU6), True)
    expected = run1(op, explicit(tensor(operand_type, x.shape, *quant), params[:4], (2, 2), (3, 3),
                                 Act.RELU6, nchw=True), [output(operand_type, [], *quant)], [x])
    prepared = prepare(_model(op, operand_type, x.shape, params, [1, 2, 3, 3], quant))
    io = make_request([x], [out_like(dtype, [1, 2, 3, 3])])
    outcome = execute(prepared, io.request, path)
    assert outcome.status == ErrorStatus.NONE
    np.testing.assert_array_equal(io.output(0, [1, 2, 3, 3]), expected)


def test_run_time_parameters_and_unknown_output_shape_on_a_device():
    x = NINE.reshape(1, 1, 3, 3)
    model = _model(Op.MAX_POOL_2D, F32, x.shape, (SAME, 2, 2, 2, 2, 0, True), [0, 0, 0, 0],
                   run_time_scalars=True)
    prepared = prepare(model)
    scalars = [np.array(v, np.int32) for v in (SAME, 2, 2, 2, 2, 0)] + [np.array(True)]
    io = make_request([x, *scalars], [out_like(np.float32, [1, 1, 2, 2])], state_input_dims=False)
    outcome = execute(prepared, io.request, ALL_PATHS[0])
    assert outcome.status == ErrorStatus.NONE
    assert list(outcome.output_shapes[0].dimensions) == [1, 1, 2, 2]
    np.testing.assert_array_equal(io.output(0, [1, 1, 2, 2]), [[[[5, 6], [8, 9]]]])
    # Stride width 0, known only at run time: the request was valid, the execution fails.
    scalars[1] = np.array(0, np.int32)
    io = make_request([x, *scalars], [out_like(np.float32, [1, 1, 2, 2])], state_input_dims=False)
    assert execute(prepared, io.request, ALL_PATHS[0]).status == ErrorStatus.GENERAL_FAILURE


@pytest.mark.parametrize("params, message", [((1, 1, 1, 1, 0, 2, 3, 3, 0, True), "stride"),
                                             ((1, 1, 1, 3, 2, 2, 3, 3, 0, True), "padding"),
                                             ((1, 1, 1, 1, 2, 2, 3, 9, 0, True), "filter")])
def test_a_device_refuses_invalid_models(params, message):
    model = _model(Op.AVERAGE_POOL_2D, F32, [1, 2, 5, 5], params, [1, 2, 3, 3])
    launch, status, prepared = prepare_status(SampleDriver(), model)
    assert (launch, status, prepared) == (ErrorStatus.INVALID_ARGUMENT, ErrorStatus.INVALID_ARGUMENT, None), message
