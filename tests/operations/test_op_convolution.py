"""CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D and TRANSPOSE_CONV_2D: hand-computed padding,
strides, dilation, layouts, groups and transposition; requantization (per tensor and per
channel) and activation clamps; one-field mutations of valid instances; and each
operation through a device on every execution path."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from driver.errors import ValidationError
from driver.hal import SymmPerChannelQuantParams
from driver.hal.enums import FusedActivationFunc as Act, OperandType as T, OperationType as Op
from driver.operations._spatial import PaddingScheme, dilate_spatial, transpose_implicit_padding
from tests.operations.helpers import (F16, F32, I32, Q8, QS8, const, definition, output, rejects,
                                      run1, scalar, tensor, validate)
from tests.operations.on_device import (assert_same_everywhere, constant_input, fed_input, refused_by_the_device,
                                        run_everywhere)

PER_CHANNEL = T.TENSOR_QUANT8_SYMM_PER_CHANNEL
SAME, VALID = PaddingScheme.SAME, PaddingScheme.VALID

X3 = np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3, 1)     # 1..9, NHWC
ONES_2X2 = np.ones((1, 2, 2, 1), np.float32)


def ints(*values) -> list:
    return [const(T.INT32, v) for v in values]


def flag(value: bool):
    return const(T.BOOL, value)


def per_channel(value, scales, channel_dim=0):
    quant = SymmPerChannelQuantParams(scales=list(scales), channelDim=channel_dim)
    return dataclasses.replace(const(PER_CHANNEL, value), channelQuant=quant)


def conv(x, w, b, parameters, op=Op.CONV_2D, operand_type=F32) -> np.ndarray:
    """A float operation with a run-time input and constant filter and bias."""
    inputs = [tensor(operand_type, x.shape), const(operand_type, w), const(operand_type, b), *parameters]
    return run1(op, inputs, [output(operand_type)], [x])


# --- CONV_2D ----------------------------------------------------------------------------

def test_valid_padding():
    valid = conv(X3, ONES_2X2, [0.0], ints(VALID, 1, 1, 0))
    np.testing.assert_array_equal(valid[0, :, :, 0], [[12, 16], [24, 28]])


def test_explicit_padding_and_strides():
    got = conv(X3, ONES_2X2, [0.0], ints(1, 1, 1, 1, 2, 2, 0))   # left, right, top, bottom
    np.testing.assert_array_equal(got[0, :, :, 0], [[1, 5], [11, 28]])
    wide = conv(X3, ONES_2X2, [0.0], ints(0, 0, 0, 0, 1, 2, 0))   # stride width 1, height 2
    np.testing.assert_array_equal(wide[0, :, :, 0], [[12, 16]])


def test_dilation_spreads_the_filter_taps():
    got = conv(X3, ONES_2X2, [0.0], [*ints(VALID, 1, 1, 0), flag(False), *ints(2, 2)])
    np.testing.assert_array_equal(got[0, :, :, 0], [[1 + 3 + 7 + 9]])
    explicit = conv(X3, ONES_2X2, [0.0], [*ints(0, 0, 0, 0, 1, 1, 0), flag(False), *ints(1, 2)])
    np.testing.assert_array_equal(explicit[0, :, :, 0], [[1 + 2 + 7 + 8, 2 + 3 + 8 + 9]])


def test_nchw_layout_matches_nhwc():
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (2, 5, 4, 3)).astype(np.float32)
    w = rng.uniform(-1, 1, (4, 3, 2, 3)).astype(np.float32)
    b = rng.uniform(-1, 1, 4).astype(np.float32)
    nhwc = conv(x, w, b, [*ints(SAME, 2, 1, 0), flag(False)])
    nchw = conv(x.transpose(0, 3, 1, 2).copy(), w, b, [*ints(SAME, 2, 1, 0), flag(True)])
    np.testing.assert_allclose(nchw, nhwc.transpose(0, 3, 1, 2), rtol=1e-6)
    expected = np.einsum("bhwc,ohwc->bo", np.pad(x, ((0, 0), (1, 1), (0, 1), (0, 0)))[:, :3, :2], w) + b
    np.testing.assert_allclose(nhwc[:, 0, 0], expected, rtol=1e-5)


@pytest.mark.parametrize("activation, expected", [(Act.NONE, [[-8, -4], [4, 8]]), (Act.RELU, [[0, 0], [4, 8]]),
                                                  (Act.RELU1, [[-1, -1], [1, 1]]), (Act.RELU6, [[0, 0], [4, 6]])])
def test_bias_and_activation(activation, expected):
    got = conv(X3, ONES_2X2, [-20.0], ints(VALID, 1, 1, activation))
    np.testing.assert_array_equal(got[0, :, :, 0], expected)


def test_float16_is_computed_in_single_precision():
    x, w = np.full((1, 1, 1, 2), 1000.0, np.float16), np.full((1, 1, 1, 2), 40.0, np.float16)
    got = conv(x, w, np.zeros(1, np.float16), ints(VALID, 1, 1, 0), operand_type=F16)
    assert got.dtype == np.float16 and got.item() == np.inf    # 80000 overflows float16


@pytest.mark.parametrize("activation, expected", [(Act.NONE, [2, 3, -1, -2, 20]), (Act.RELU6, [2, 3, 0, 0, 6])])
@pytest.mark.parametrize("operand_type, dtype, zero", [(Q8, np.uint8, 100), (QS8, np.int8, -10)])
def test_quantized_rounds_like_the_reference(operand_type, dtype, zero, activation, expected):
    """Multiplier 0.5: sums 3, 5, -3 and -5 give 1.5, 2.5, -1.5 and -2.5, whose halves the
    reference's fixed-point product rounds towards +infinity."""
    x = np.array([3, 5, -3, -5, 40], dtype=np.int32).reshape(1, 1, 5, 1) + zero
    inputs = [tensor(operand_type, x.shape, 1.0, zero), const(operand_type, [[[[1 + zero]]]], scale=0.5, zero_point=zero),
              const(I32, [0], scale=0.5), *ints(VALID, 1, 1, activation)]
    got = run1(Op.CONV_2D, inputs, [output(operand_type, (), 1.0, zero)], [x.astype(dtype)])
    np.testing.assert_array_equal(got.reshape(-1).astype(int) - zero, expected)


def test_per_channel_filter_scales_each_output_channel():
    # input real [1, -1]; filter real [[1, 2], [1, -1]] (scales 0.5, 0.25); bias real [1, 1]
    inputs = [tensor(Q8, [1, 1, 1, 2], 0.5, 128), per_channel(np.array([[2, 4], [4, -4]]).reshape(2, 1, 1, 2), [0.5, 0.25]),
              const(I32, [4, 8]), *ints(VALID, 1, 1, 0)]
    got = run1(Op.CONV_2D, inputs, [output(Q8, (), 0.25, 100)], [np.array([130, 126], np.uint8).reshape(1, 1, 1, 2)])
    np.testing.assert_array_equal(got.reshape(-1), [100 + 0, 100 + 12])     # real 0 and 3


def test_zero_batches_give_an_empty_output():
    got = conv(np.zeros((0, 3, 3, 1), np.float32), ONES_2X2, [0.0], ints(VALID, 1, 1, 0))
    assert got.shape == (0, 2, 2, 1)


def test_run_time_parameters_are_checked_by_the_kernel():
    inputs = [tensor(F32, [1, 3, 3, 1]), const(F32, ONES_2X2), const(F32, [0.0]), *ints(VALID),
              scalar(T.INT32), *ints(1, 0)]
    np.testing.assert_array_equal(run1(Op.CONV_2D, inputs, [output(F32)], [X3, 2])[0, :, :, 0], [[12], [24]])
    with pytest.raises(ValidationError, match="CONV_2D.*input 4.*stride width 0 must be positive"):
        run1(Op.CONV_2D, inputs, [output(F32)], [X3, 0])


# --- DEPTHWISE_CONV_2D and GROUPED_CONV_2D ------------------------------------------------

def test_depthwise_multiplier_orders_channels_by_input_channel():
    x = np.array([[[[1, 10], [2, 20]]]], np.float32)                 # [1, 1, 2, 2]
    w = np.array([1, 2, 3, 4], np.float32).reshape(1, 1, 1, 4)      # channel c * 2 + m
    got = conv(x, w, [0, 0, 0, 0.5], ints(VALID, 1, 1, 2, 0), op=Op.DEPTHWISE_CONV_2D)
    np.testing.assert_array_equal(got[0, 0], [[1, 2, 30, 40.5], [2, 4, 60, 80.5]])


def test_depthwise_per_channel_along_dimension_3():
    inputs = [tensor(QS8, [1, 1, 1, 2], 1.0, 0), per_channel(np.array([4, 4]).reshape(1, 1, 1, 2), [0.5, 0.25], 3),
              const(I32, [0, 0]), *ints(VALID, 1, 1, 1, 0)]
    got = run1(Op.DEPTHWISE_CONV_2D, inputs, [output(QS8, (), 1.0, 0)], [np.array([3, 3], np.int8).reshape(1, 1, 1, 2)])
    np.testing.assert_array_equal(got.reshape(-1), [6, 3])


def test_grouped_convolution_splits_channels():
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 1, 1, 4)
    w = np.array([[1, 0], [0, 1], [1, 1], [1, -1]], np.float32).reshape(4, 1, 1, 2)
    got = conv(x, w, [0, 0, 0, 0], [*ints(VALID, 1, 1, 2, 0), flag(False)], op=Op.GROUPED_CONV_2D)
    np.testing.assert_array_equal(got.reshape(-1), [1, 2, 7, -1])
    nchw = conv(x.reshape(1, 4, 1, 1), w, [0, 0, 0, 0], [*ints(0, 0, 0, 0, 1, 1, 2, 0), flag(True)],
                op=Op.GROUPED_CONV_2D)
    np.testing.assert_array_equal(nchw.reshape(-1), [1, 2, 7, -1])


def test_run_time_filter_bias_and_groups():
    x = np.array([1, 2, 3, 4], np.float32).reshape(1, 1, 1, 4)
    w = np.array([[1, 0], [0, 1], [1, 1], [1, -1]], np.float32).reshape(4, 1, 1, 2)
    inputs = [tensor(F32, x.shape), tensor(F32, [4, 1, 1, 2]), tensor(F32, [4]), *ints(VALID, 1, 1),
              scalar(T.INT32), *ints(0), flag(False)]
    got = run1(Op.GROUPED_CONV_2D, inputs, [output(F32)], [x, w, np.ones(4), 2])
    np.testing.assert_array_equal(got.reshape(-1), [2, 3, 8, 0])
    with pytest.raises(ValidationError, match="GROUPED_CONV_2D.*depth 2, expected 4 input channels / 4 groups"):
        run1(Op.GROUPED_CONV_2D, inputs, [output(F32)], [x, w, np.ones(4), 4])


def test_per_channel_filter_of_unknown_shape_is_held_to_its_scales():
    quant = SymmPerChannelQuantParams(scales=[0.5], channelDim=0)
    inputs = [tensor(Q8, [1, 1, 1, 2], 0.5, 128), dataclasses.replace(tensor(PER_CHANNEL, [0, 1, 1, 2]), channelQuant=quant),
              tensor(I32, [0]), *ints(VALID, 1, 1, 0)]
    with pytest.raises(ValidationError, match="CONV_2D.*filter.*has 1 scales for 2 output channels"):
        run1(Op.CONV_2D, inputs, [output(Q8, (), 1.0, 0)],
             [np.full((1, 1, 1, 2), 130, np.uint8), np.ones((2, 1, 1, 2), np.int8), np.zeros(2, np.int32)])


# --- TRANSPOSE_CONV_2D --------------------------------------------------------------------

X2 = np.array([1, 2, 3, 4], np.float32).reshape(1, 2, 2, 1)


def transpose(x, w, b, parameters, operand_type=F32):
    return conv(x, w, b, parameters, Op.TRANSPOSE_CONV_2D, operand_type)


def test_transpose_spreads_each_cell_by_the_strides():
    got = transpose(X2, ONES_2X2, [0.0], [*ints(0, 0, 0, 0, 2, 2, 0), flag(False)])
    np.testing.assert_array_equal(got[0, :, :, 0], [[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]])
    overlapping = transpose(X2, ONES_2X2, [0.0], [*ints(0, 0, 0, 0, 1, 1, 0), flag(False)])
    np.testing.assert_array_equal(overlapping[0, :, :, 0], [[1, 3, 2], [4, 10, 6], [3, 7, 4]])
    cropped = transpose(X2, ONES_2X2, [0.0], [*ints(1, 0, 1, 0, 1, 1, 0), flag(False)])   # left, top cut
    np.testing.assert_array_equal(cropped[0, :, :, 0], [[10, 6], [7, 4]])


def test_transpose_output_shape_decides_implicit_padding():
    same = transpose(X2, ONES_2X2, [0.0], [const(I32, [1, 4, 4, 1]), *ints(SAME, 2, 2, 0), flag(False)])
    assert same.shape == (1, 4, 4, 1)
    # Stride 4 reaches 5 of 6 requested rows: the tail padding is -1, a row of bias alone.
    tall = transpose(np.array([1, 2], np.float32).reshape(1, 2, 1, 1), np.ones((1, 1, 1, 1), np.float32), [0.5],
                     [const(I32, [1, 6, 1, 1]), *ints(SAME, 1, 4, 0), flag(False)])
    np.testing.assert_array_equal(tall.reshape(-1), [1.5, 0.5, 0.5, 0.5, 2.5, 0.5])
    nchw = transpose(X2.reshape(1, 1, 2, 2), ONES_2X2, [0.0], [const(I32, [1, 1, 3, 3]), *ints(VALID, 1, 1, 0), flag(True)])
    np.testing.assert_array_equal(nchw[0, 0], [[1, 3, 2], [4, 10, 6], [3, 7, 4]])


@pytest.mark.parametrize("out_size, stride, filter_size, scheme, expected", [
    (4, 2, 2, SAME, (0, 0)), (5, 2, 3, SAME, (1, 1)), (4, 1, 2, SAME, (0, 1)),
    (6, 4, 1, SAME, (0, -1)),          # the strides reach short of the output
    (6, 4, 3, VALID, (0, 0)),
])
def test_transpose_implicit_padding(out_size, stride, filter_size, scheme, expected):
    assert transpose_implicit_padding(out_size, stride, filter_size, scheme) == expected


def test_dilate_spatial_puts_stride_minus_one_zeros_between_cells():
    got = dilate_spatial(X2, 2, 3)
    assert got.shape == (1, 3, 4, 1)
    np.testing.assert_array_equal(got[0, :, :, 0], [[1, 0, 0, 2], [0, 0, 0, 0], [3, 0, 0, 4]])
    assert dilate_spatial(X2, 1, 1) is X2


def test_transpose_output_shape_known_only_at_run_time():
    inputs = [tensor(F32, X2.shape), const(F32, ONES_2X2), const(F32, [0.0]), tensor(I32, [4]),
              *ints(SAME, 2, 2, 0), flag(False)]
    got = run1(Op.TRANSPOSE_CONV_2D, inputs, [output(F32)], [X2, [1, 4, 4, 1]])
    assert got.shape == (1, 4, 4, 1)
    with pytest.raises(ValidationError, match="output shape.*non-positive height"):
        run1(Op.TRANSPOSE_CONV_2D, inputs, [output(F32)], [X2, [1, 0, 4, 1]])


def test_transpose_quantized_per_channel():
    inputs = [tensor(Q8, [1, 1, 1, 1], 0.5, 10), per_channel(np.array([2, -2]).reshape(2, 1, 1, 1), [0.5, 1.0]),
              const(I32, [1, 0]), *ints(0, 0, 0, 0, 1, 1, 0), flag(False)]
    got = run1(Op.TRANSPOSE_CONV_2D, inputs, [output(Q8, (), 0.5, 50)], [np.array([16], np.uint8).reshape(1, 1, 1, 1)])
    # Input real 3 (6 steps); sums 6 * 2 + bias 1 = 13 and 6 * -2 = -12, times 0.25 / 0.5 and
    # 0.5 / 0.5: 6.5 rounds away from zero.
    np.testing.assert_array_equal(got.reshape(-1), [50 + 7, 50 - 12])


# --- validation: one-field mutations ----------------------------------------------------

def valid_conv(**changes):
    fields = dict(x=tensor(F32, [1, 3, 3, 1]), w=const(F32, ONES_2X2), b=const(F32, [0.0]),
                  params=ints(0, 0, 0, 0, 1, 1, 0) + [flag(False)] + ints(1, 1), out=output(F32))
    fields.update(changes)
    return [fields["x"], fields["w"], fields["b"], *fields["params"]], [fields["out"]]


def test_valid_conv_validates():
    validate(Op.CONV_2D, *valid_conv())


@pytest.mark.parametrize("changes, message", [
    (dict(params=ints(0, 0, 0, 0, 1, 1, 0) + [flag(False)] + ints(1)), "expected 7 or 8 or 10 or 11 or 13 inputs"),
    (dict(w=const(F16, ONES_2X2)), "input 1 \\(filter"),
    (dict(b=const(F32, [[0.0]])), "bias.*rank 2 > 1"),
    (dict(x=tensor(F32, [3, 3, 1])), "input 0 \\(input.*rank 3 < 4"),
    (dict(out=output(F16)), "output 0"),
    (dict(params=ints(0, 0, 0, 0, 0, 1, 0) + [flag(False)] + ints(1, 1)), "input 7 .*stride width 0 must be positive"),
    (dict(params=ints(0, -1, 0, 0, 1, 1, 0) + [flag(False)] + ints(1, 1)), "input 4 .*padding right -1 must be non-negative"),
    (dict(params=ints(0, 0, 0, 0, 1, 1, 0) + [flag(False)] + ints(1, 0)), "input 12 .*dilation height factor 0"),
    (dict(params=ints(0, 0, 0, 0, 1, 1, 9) + [flag(False)] + ints(1, 1)), "fused activation 9"),
    (dict(params=ints(0, 0, 2, 0, 1, 1, 0) + [flag(False)] + ints(1, 1)), "padding \\(2, 0\\) of the height is not less"),
    (dict(params=ints(0, 0, 0, 0, 1, 1, 0) + [flag(False)] + ints(3, 1)), "extent 4 is larger than the padded input width 3"),
    (dict(x=tensor(F32, [1, 3, 3, 2])), "filter\\) has depth 1, expected 2 input channels"),
    (dict(b=const(F32, [0.0, 0.0])), "output channels of filter and bias: sizes 1 and 2 differ"),
])
def test_conv_mutations_are_rejected(changes, message):
    rejects(Op.CONV_2D, *valid_conv(**changes), "CONV_2D.*" + message)


def test_padding_scheme_must_be_same_or_valid():
    rejects(Op.CONV_2D, [tensor(F32, [1, 3, 3, 1]), const(F32, ONES_2X2), const(F32, [0.0]), *ints(3, 1, 1, 0)],
            [output(F32)], "padding scheme 3 is not one of SAME, VALID")


def quantized_conv(filter_operand, bias_scale=0.125, bias_zero_point=0, out_scale=1.0, op=Op.CONV_2D, multiplier=()):
    return ([tensor(Q8, [1, 2, 2, 2], 0.5, 128), filter_operand,
             const(I32, [0, 0], scale=bias_scale, zero_point=bias_zero_point), *ints(VALID, 1, 1, *multiplier, 0)],
            [output(Q8, (), out_scale, 0)])


def test_quantization_rules():
    q_filter = const(Q8, np.full((2, 1, 1, 2), 130), scale=0.25, zero_point=128)
    validate(Op.CONV_2D, *quantized_conv(q_filter))
    rejects(Op.CONV_2D, *quantized_conv(q_filter, bias_scale=0.13), "bias.*must equal input_scale \\* filter_scale")
    rejects(Op.CONV_2D, *quantized_conv(q_filter, bias_zero_point=3), "zero point 3 must be 0")
    rejects(Op.CONV_2D, *quantized_conv(q_filter, out_scale=0.0), "output 0.*scale 0.0 <= 0")
    validate(Op.CONV_2D, *quantized_conv(per_channel(np.ones((2, 1, 1, 2)), [0.5, 0.25]), bias_scale=0.0))
    rejects(Op.CONV_2D, *quantized_conv(per_channel(np.ones((2, 1, 1, 2)), [0.5, 0.25], 3)),
            "filter.*quantized along dimension 3, expected 0")
    rejects(Op.DEPTHWISE_CONV_2D, *quantized_conv(per_channel(np.ones((1, 1, 1, 2)), [0.5, 0.25]), multiplier=(1,),
                                                  op=Op.DEPTHWISE_CONV_2D), "quantized along dimension 0, expected 3")


DW, GROUPED, TRANSPOSE = Op.DEPTHWISE_CONV_2D, Op.GROUPED_CONV_2D, Op.TRANSPOSE_CONV_2D
EXPLICIT = ints(0, 0, 0, 0, 1, 1, 0)


@pytest.mark.parametrize("op, x_dims, w_dims, parameters, message", [
    (DW, [1, 3, 3, 2], [1, 2, 2, 2], ints(VALID, 1, 1, 2, 0), "depth multiplier 2 times 2 input channels"),
    (DW, [1, 3, 3, 2], [2, 2, 2, 2], ints(VALID, 1, 1, 1, 0), "first dimension, expected 1"),
    (DW, [1, 3, 3, 0], [1, 2, 2, 3], ints(VALID, 1, 1, 2, 0), "3 output channels are not a multiple"),
    (DW, [1, 3, 3, 2], [1, 2, 2, 2], ints(VALID, 1, 1, 0, 0), "depth multiplier 0 must be positive"),
    (GROUPED, [1, 3, 3, 4], [2, 2, 2, 2], [*ints(VALID, 1, 1, 3, 0), flag(False)], "depth 2, expected 4 input"),
    (GROUPED, [1, 3, 3, 4], [3, 2, 2, 1], [*ints(VALID, 1, 1, 4, 0), flag(False)], "3 output channels do not divide"),
    (TRANSPOSE, [1, 3, 3, 2], [2, 2, 2, 1], [*EXPLICIT, flag(False)], "input channels and filter depth"),
    (TRANSPOSE, [1, 1, 1, 2], [2, 2, 2, 2], [*ints(1, 1, 1, 1, 1, 1, 0), flag(False)], "output height would be 0"),
    (TRANSPOSE, [1, 3, 3, 2], [2, 2, 2, 2], [const(I32, [1, 3, 3]), *ints(SAME, 1, 1, 0), flag(False)],
     "output shape.*expected \\[4\\]"),
    (TRANSPOSE, [1, 3, 3, 2], [2, 2, 2, 2], EXPLICIT, "expected 9 or 11 inputs"),
])
def test_operation_specific_mutations(op, x_dims, w_dims, parameters, message):
    out_channels = w_dims[3] if op == Op.DEPTHWISE_CONV_2D else w_dims[0]
    inputs = [tensor(F32, x_dims), const(F32, np.ones(w_dims)), const(F32, np.zeros(out_channels)), *parameters]
    rejects(op, inputs, [output(F32)], op.name + ".*" + message)


@pytest.mark.parametrize("op", [Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.GROUPED_CONV_2D, Op.TRANSPOSE_CONV_2D])
def test_examples_cover_every_form_type_and_layout(op):
    examples = definition(op).examples
    assert {len(e.inputs) for e in examples} == {s.counts()[0][0] for s in definition(op).signatures}
    assert {(e.inputs[0].type, e.inputs[1].type) for e in examples} == {
        (F32, F32), (F16, F16), (Q8, Q8), (QS8, QS8), (Q8, PER_CHANNEL), (QS8, PER_CHANNEL)}
    assert {len(e.inputs[0].dims) and e.inputs[0].dims[1] for e in examples} == {2, 3}    # NCHW and NHWC


# --- through a device -------------------------------------------------------------------

def device_args(parameters) -> list:
    """A float32 input X3 fed by the request, a constant 2x2 filter of ones and zero bias,
    and constant parameters: INT32 scalars, INT32 tensors (lists) and BOOL scalars."""
    return [fed_input(F32, X3), constant_input(F32, ONES_2X2), constant_input(F32, [0.0]),
            *(constant_input(T.BOOL if isinstance(v, bool) else I32 if isinstance(v, list) else T.INT32, v)
              for v in parameters)]


@pytest.mark.parametrize("op, parameters, expected", [
    (Op.CONV_2D, [SAME, 1, 1, 0], [[12, 16, 9], [24, 28, 15], [15, 17, 9]]),  # extra at the tail
    (Op.DEPTHWISE_CONV_2D, [0, 0, 0, 0, 1, 1, 1, 0, False, 2, 2], [[20]]),
    (Op.GROUPED_CONV_2D, [VALID, 2, 2, 1, 0, False], [[12]]),
    (Op.TRANSPOSE_CONV_2D, [[1, 4, 4, 1], VALID, 1, 1, 0, False],
     [[1, 3, 5, 3], [5, 12, 16, 9], [11, 24, 28, 15], [7, 15, 17, 9]]),
])
def test_through_a_device(op, parameters, expected):
    out_dims = [1, *np.shape(expected), 1]
    results = run_everywhere(op, device_args(parameters), [(F32, out_dims, 0.0, 0)])
    assert_same_everywhere(results, [np.reshape(expected, out_dims)])


@pytest.mark.parametrize("op, parameters", [
    (Op.CONV_2D, [SAME, 0, 1, 0]),                                  # stride 0
    (Op.CONV_2D, [0, -1, 0, 0, 1, 1, 0]),                           # negative padding
    (Op.DEPTHWISE_CONV_2D, [VALID, 1, 1, 2, 0]),                     # multiplier 2 for 1 -> 1 channel
    (Op.GROUPED_CONV_2D, [VALID, 1, 1, 2, 0, False]),               # 2 groups of 1 channel
    (Op.TRANSPOSE_CONV_2D, [[1, 4, 4], VALID, 1, 1, 0, False]),     # an output shape of 3 values
    (Op.CONV_2D, [0, 0, 0, 0, 1, 1, 0, False, 3, 1]),               # dilated filter wider than the input
])
def test_device_answers_invalid_argument(op, parameters):
    refused_by_the_device(op, device_args(parameters), [(F32, [0, 0, 0, 0], 0.0, 0)])
