"""DEPTH_TO_SPACE, SPACE_TO_DEPTH, BATCH_TO_SPACE_ND, SPACE_TO_BATCH_ND, STRIDED_SLICE, PAD_V2
and CHANNEL_SHUFFLE: hand-computed cases (block orders, layouts, masks, negative strides,
pad values), one-field mutations of valid instances refused naming the operation and
operand, and a run of each operation on the device on every execution path."""
from __future__ import annotations

import numpy as np
import pytest

from driver.errors import ValidationError
from driver.hal.enums import OperandType as T, OperationType as Op
from driver.operations.common import STORAGE_DTYPE
from driver.operations.signatures import ExampleOperand
from tests.operations.helpers import (F16, F32, I32, Q8, QS8, const, context, definition, omitted,
                                      output, rejects, run1, scalar, tensor)
from tests.operations.on_device import assert_same_everywhere, constant_input, refused_by_the_device, run_everywhere

TYPES = (F32, F16, Q8, QS8)
rng = np.random.default_rng(7)


def quant(operand_type):
    """(scale, zero point) the tests give an operand of this type."""
    return {Q8: (0.5, 128), QS8: (0.5, 0)}.get(operand_type, (0.0, 0))


def values(operand_type, shape):
    return rng.integers(-100, 100, shape).astype(STORAGE_DTYPE[operand_type]) if operand_type != Q8 \
        else rng.integers(0, 256, shape).astype(np.uint8)


def data(operand_type, dims):
    return tensor(operand_type, dims, *quant(operand_type))


def out(operand_type, dims=()):
    return output(operand_type, dims, *quant(operand_type))


def device_instance(operand_type, x_dims, parameters, out_dims=(), x=None) -> tuple[list, list]:
    """An input of the type and its quantization here, fed by the request (``x``, or
    generated values), constant ``parameters`` ((type, value) pairs), and an output like
    the input: the arguments of ``run_everywhere`` and ``refused_by_the_device``."""
    scale, zero_point = quant(operand_type)
    return ([ExampleOperand(operand_type, tuple(x_dims), value=x, scale=scale, zero_point=zero_point),
             *(constant_input(t, v) for t, v in parameters)], [(operand_type, out_dims, scale, zero_point)])


# --- DEPTH_TO_SPACE and SPACE_TO_DEPTH ------------------------------------------------------------

def test_depth_to_space_block_order_nhwc_and_nchw():
    x = np.arange(8, dtype=np.float32)
    got = run1(Op.DEPTH_TO_SPACE, [data(F32, [1, 1, 1, 8]), const(T.INT32, 2)], [out(F32)],
               [x.reshape(1, 1, 1, 8)])
    np.testing.assert_array_equal(got.reshape(2, 2, 2), [[[0, 1], [2, 3]], [[4, 5], [6, 7]]])
    got = run1(Op.DEPTH_TO_SPACE, [data(F32, [1, 8, 1, 1]), const(T.INT32, 2), const(T.BOOL, True)],
               [out(F32)], [x.reshape(1, 8, 1, 1)])
    np.testing.assert_array_equal(got.reshape(2, 2, 2), [[[0, 2], [4, 6]], [[1, 3], [5, 7]]])


@pytest.mark.parametrize("operand_type", TYPES)
@pytest.mark.parametrize("nchw", [False, True])
def test_space_to_depth_inverts_depth_to_space(operand_type, nchw):
    x = values(operand_type, (2, 3, 4, 9) if not nchw else (2, 9, 3, 4))
    layout = [const(T.BOOL, nchw)]
    deep = run1(Op.DEPTH_TO_SPACE, [data(operand_type, x.shape), const(T.INT32, 3), *layout],
                [out(operand_type)], [x])
    assert deep.shape == ((2, 9, 12, 1) if not nchw else (2, 1, 9, 12))
    back = run1(Op.SPACE_TO_DEPTH, [data(operand_type, deep.shape), const(T.INT32, 3), *layout],
                [out(operand_type)], [deep])
    np.testing.assert_array_equal(back, x)


def test_space_to_depth_with_run_time_block_size():
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    got = run1(Op.SPACE_TO_DEPTH, [data(F32, [1, 4, 4, 1]), scalar(T.INT32)], [out(F32)], [x, 2])
    np.testing.assert_array_equal(got[0, 0, 0], [0, 1, 4, 5])
    kernel = definition(Op.SPACE_TO_DEPTH).build(context(Op.SPACE_TO_DEPTH, [data(F32, [1, 4, 4, 1]),
                                                                            scalar(T.INT32)], [out(F32)]))
    with pytest.raises(ValidationError, match="SPACE_TO_DEPTH.*block_size 0"):
        kernel(x, np.int32(0))
    with pytest.raises(ValidationError, match="SPACE_TO_DEPTH.*multiples of block_size 3"):
        kernel(x, np.int32(3))


@pytest.mark.parametrize("operation", [Op.DEPTH_TO_SPACE, Op.SPACE_TO_DEPTH])
def test_space_depth_rejections(operation):
    good = [data(Q8, [1, 2, 2, 4]), const(T.INT32, 2)]
    rejects(operation, good[:1], [out(Q8)], f"{operation.name}.*expected 2 or 3 inputs")
    rejects(operation, [good[0], const(T.INT32, 0)], [out(Q8)],
            f"{operation.name}.*block_size 0 must be >= 1")
    rejects(operation, [good[0], const(T.FLOAT32, 2.0)], [out(Q8)], "input 1.*FLOAT32, expected INT32")
    rejects(operation, [*good, const(T.INT32, 1)], [out(Q8)], "input 2 \\(layout.*expected BOOL")
    rejects(operation, [data(Q8, [2, 2, 4]), good[1]], [out(Q8)], "input 0.*rank 3 < 4")
    rejects(operation, [data(I32, [1, 2, 2, 4]), good[1]], [output(I32)], "input 0.*TENSOR_INT32")
    rejects(operation, good, [output(Q8, (), 0.5, 127)], f"{operation.name}\\): output 0.*zero point 127")
    rejects(operation, [data(Q8, [1, 2, 2, 4]), const(T.INT32, 3)], [out(Q8)], "multiple")


# --- BATCH_TO_SPACE_ND and SPACE_TO_BATCH_ND ------------------------------------------------------

def test_space_to_batch_moves_blocks_to_batches():
    x = np.arange(1, 17, dtype=np.float32).reshape(1, 4, 4, 1)
    got = run1(Op.SPACE_TO_BATCH_ND, [data(F32, x.shape), const(I32, [2, 2]), const(I32, [[0, 0], [0, 0]])],
               [out(F32)], [x])
    np.testing.assert_array_equal(got[..., 0], [[[1, 3], [9, 11]], [[2, 4], [10, 12]],
                                                [[5, 7], [13, 15]], [[6, 8], [14, 16]]])
    back = run1(Op.BATCH_TO_SPACE_ND, [data(F32, got.shape), const(I32, [2, 2])], [out(F32)], [got])
    np.testing.assert_array_equal(back, x)


@pytest.mark.parametrize("operand_type, fill", [(Q8, 128), (QS8, 0), (F32, 0)])
def test_space_to_batch_pads_with_the_logical_zero(operand_type, fill):
    x = np.array([[[[5], [6]]]], STORAGE_DTYPE[operand_type])     # NHWC [1, 1, 2, 1]
    got = run1(Op.SPACE_TO_BATCH_ND, [data(operand_type, x.shape), const(I32, [2, 1]),
                                      const(I32, [[1, 0], [0, 0]])], [out(operand_type)], [x])
    np.testing.assert_array_equal(got[..., 0], [[[fill, fill]], [[5, 6]]])


@pytest.mark.parametrize("operand_type", TYPES)
def test_batch_to_space_inverts_space_to_batch_nchw(operand_type):
    x = values(operand_type, (2, 3, 4, 6))                       # NCHW
    nchw = const(T.BOOL, True)
    batched = run1(Op.SPACE_TO_BATCH_ND, [data(operand_type, x.shape), const(I32, [2, 3]),
                                          const(I32, [[0, 0], [1, 2]]), nchw], [out(operand_type)], [x])
    assert batched.shape == (12, 3, 2, 3)
    back = run1(Op.BATCH_TO_SPACE_ND, [data(operand_type, batched.shape), const(I32, [2, 3]), nchw],
                [out(operand_type)], [batched])
    np.testing.assert_array_equal(back[:, :, :, 1:7], x)


def test_signed_and_unsigned_agree_up_to_the_offset():
    x = values(Q8, (4, 2, 2, 3))
    args = lambda t: ([data(t, x.shape), const(I32, [2, 2])], [out(t)])  # noqa: E731
    unsigned = run1(Op.BATCH_TO_SPACE_ND, *args(Q8), [x])
    signed = run1(Op.BATCH_TO_SPACE_ND, *args(QS8), [(x.astype(np.int16) - 128).astype(np.int8)])
    np.testing.assert_array_equal(unsigned.astype(np.int16) - 128, signed)


def test_space_batch_rejections():
    x = data(F32, [4, 2, 2, 1])
    rejects(Op.BATCH_TO_SPACE_ND, [x, const(I32, [0, 2])], [out(F32)], "BATCH_TO_SPACE_ND.*block_shape.*>= 1")
    rejects(Op.BATCH_TO_SPACE_ND, [x, const(I32, [2, 2, 1])], [out(F32)], "block_shape.*expected \\[2\\]")
    rejects(Op.BATCH_TO_SPACE_ND, [x, const(I32, [3, 1])], [out(F32)], "4 batches, not a multiple")
    rejects(Op.BATCH_TO_SPACE_ND, [x, const(F32, [2.0, 2.0])], [out(F32)], "input 1 \\(block_shape.*FLOAT32")
    rejects(Op.BATCH_TO_SPACE_ND, [x, const(I32, [2, 2]), const(T.BOOL, False), const(T.BOOL, False)],
            [out(F32)], "expected 2 or 3 inputs")
    pads = const(I32, [[0, 0], [0, 0]])
    rejects(Op.SPACE_TO_BATCH_ND, [x, const(I32, [1, 1]), const(I32, [[0, -1], [0, 0]])], [out(F32)],
            "SPACE_TO_BATCH_ND\\): input 2 \\(paddings\\).*negative")
    rejects(Op.SPACE_TO_BATCH_ND, [x, const(I32, [1, 1]), const(I32, [[0, 0, 0]])], [out(F32)],
            "paddings.*expected \\[2, 2\\]")
    rejects(Op.SPACE_TO_BATCH_ND, [x, const(I32, [3, 1]), pads], [out(F32)], "padded height 2")
    rejects(Op.SPACE_TO_BATCH_ND, [data(Q8, [1, 2, 2, 1]), const(I32, [2, 2]), pads],
            [output(Q8, (), 0.25, 128)], "output 0.*scale 0.25")
    inputs = [x, tensor(I32, [2]), tensor(I32, [2, 2])]
    kernel = definition(Op.SPACE_TO_BATCH_ND).build(context(Op.SPACE_TO_BATCH_ND, inputs, [out(F32)]))
    with pytest.raises(ValidationError, match="block_shape\\) \\[-1, 1\\] must be >= 1"):
        kernel(np.zeros((4, 2, 2, 1), np.float32), np.array([-1, 1], np.int32), np.zeros((2, 2), np.int32))


# --- STRIDED_SLICE --------------------------------------------------------------------------------

MATRIX = np.arange(6, dtype=np.float32).reshape(2, 3)


def strided_slice(x, begin, end, strides, begin_mask=0, end_mask=0, shrink=0, operand_type=F32):
    inputs = [data(operand_type, x.shape), *(const(I32, v, [len(v)]) for v in (begin, end, strides)),
              *(const(T.INT32, m) for m in (begin_mask, end_mask, shrink))]
    return run1(Op.STRIDED_SLICE, inputs, [out(operand_type)], [x])


@pytest.mark.parametrize("begin, end, strides, masks, expected", [
    ([0, 0], [2, 3], [1, 1], (0, 0, 0), MATRIX),
    ([1, 1], [2, 3], [1, 1], (1, 0, 0), [[1, 2], [4, 5]]),                 # begin_mask: from the start
    ([0, 1], [1, 2], [1, 1], (0, 3, 0), [[1, 2], [4, 5]]),                 # end_mask: to the end
    ([0, 2], [2, 0], [1, -1], (0, 2, 0), [[2, 1, 0], [5, 4, 3]]),          # end_mask, negative stride
    ([0, -1], [2, -4], [1, -2], (0, 0, 0), [[2, 0], [5, 3]]),              # negative indexes
    ([1, -1], [2, 0], [1, -1], (0, 2, 1), [5, 4, 3]),                      # shrink axis 0
    ([-9, 9], [9, -9], [1, -1], (0, 0, 0), [[2, 1, 0], [5, 4, 3]]),        # clamped
    ([0, 3], [2, 3], [1, 1], (0, 0, 0), np.zeros((2, 0))),                 # empty
    ([0, 0], [1, 3], [1, 1], (0, 0, 0x7FFFFFF0), [[0, 1, 2]]),             # bits past the rank ignored
])
def test_strided_slice_masks_and_strides(begin, end, strides, masks, expected):
    got = strided_slice(MATRIX, begin, end, strides, *masks)
    assert got.shape == np.shape(expected)
    np.testing.assert_array_equal(got, expected)


def test_strided_slice_shrinking_every_axis_leaves_shape_one():
    got = strided_slice(np.arange(4, dtype=np.float32), [2], [3], [1], shrink=1)
    assert got.shape == (1,) and got[0] == 2


@pytest.mark.parametrize("operand_type", TYPES)
def test_strided_slice_types(operand_type):
    x = values(operand_type, (2, 3, 4, 5))
    got = strided_slice(x, [1, 0, -1, 0], [2, 3, 0, 5], [1, 2, -1, 3], 0, 0, 1, operand_type)
    np.testing.assert_array_equal(got, x[1, 0:3:2, -1:0:-1, 0:5:3])


def test_strided_slice_run_time_values():
    inputs = [data(F32, [2, 3]), tensor(I32, [2]), tensor(I32, [2]), tensor(I32, [2]),
              scalar(T.INT32), scalar(T.INT32), scalar(T.INT32)]
    got = run1(Op.STRIDED_SLICE, inputs, [out(F32)], [MATRIX, [0, 2], [2, 0], [1, -1], 0, 2, 0])
    np.testing.assert_array_equal(got, [[2, 1, 0], [5, 4, 3]])
    kernel = definition(Op.STRIDED_SLICE).build(context(Op.STRIDED_SLICE, inputs, [out(F32)]))
    vectors = [np.array(v, np.int32) for v in ([0, 0], [2, 3], [1, 0])]
    with pytest.raises(ValidationError, match="STRIDED_SLICE\\): input 3 \\(strides\\) has a 0 stride"):
        kernel(MATRIX, *vectors, np.int32(0), np.int32(0), np.int32(0))
    with pytest.raises(ValidationError, match="input 1 \\(begin\\) has 3 elements"):
        kernel(MATRIX, np.zeros(3, np.int32), *vectors[1:], np.int32(0), np.int32(0), np.int32(0))


def test_strided_slice_rejections():
    def instance(begin=(0, 0), end=(2, 3), strides=(1, 1), shrink=0, x=data(F32, [2, 3]),
                 output_operand=out(F32)):
        return ([x, *(const(I32, v, [len(v)]) for v in (begin, end, strides)), const(T.INT32, 0),
                 const(T.INT32, 0), const(T.INT32, shrink)], [output_operand])
    rejects(Op.STRIDED_SLICE, *instance(strides=(1, 0)),
            "STRIDED_SLICE\\): input 3 \\(strides\\) has a 0 stride")
    rejects(Op.STRIDED_SLICE, *instance(shrink=1), "shrink_axis_mask.*dimension 0.*2 elements, not 1")
    rejects(Op.STRIDED_SLICE, *instance(begin=(1, 0), end=(0, 3), strides=(-1, 1), shrink=1),
            "stride -1 is not positive")
    rejects(Op.STRIDED_SLICE, *instance(begin=(0, 0, 0)),
            "input 1 \\(begin\\) has 3 elements for an input of rank 2")
    rejects(Op.STRIDED_SLICE, *instance(x=data(F32, [1, 1, 1, 1, 2])), "rank 5 > 4")
    rejects(Op.STRIDED_SLICE, *instance(x=data(I32, [2, 3]), output_operand=output(I32)),
            "input 0.*TENSOR_INT32")
    rejects(Op.STRIDED_SLICE, *instance(x=data(QS8, [2, 3]), output_operand=output(QS8, (), 0.5, 1)),
            "output 0.*zero point 1")
    good_inputs, good_outputs = instance()
    rejects(Op.STRIDED_SLICE, good_inputs[:6], good_outputs, "expected 7 inputs")
    rejects(Op.STRIDED_SLICE, [*good_inputs[:4], const(T.FLOAT32, 0.0), *good_inputs[5:]], good_outputs,
            "input 4 \\(begin_mask")


# --- PAD_V2 ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("operand_type, value_type, value", [
    (F32, T.FLOAT32, 9.5), (F16, T.FLOAT16, -2.25), (Q8, T.INT32, 200), (QS8, T.INT32, -100)])
def test_pad_v2_fills_with_its_value(operand_type, value_type, value):
    x = np.array([[1, 2]], STORAGE_DTYPE[operand_type])
    inputs = [data(operand_type, [1, 2]), const(I32, [[1, 0], [0, 1]]), const(value_type, value)]
    got = run1(Op.PAD_V2, inputs, [out(operand_type)], [x])
    np.testing.assert_array_equal(got, np.array([[value] * 3, [1, 2, value]], got.dtype))


def test_pad_v2_run_time_value_is_checked():
    inputs = [data(Q8, [2]), const(I32, [[1, 1]]), scalar(T.INT32)]
    np.testing.assert_array_equal(run1(Op.PAD_V2, inputs, [out(Q8)], [[3, 4], 255]), [255, 3, 4, 255])
    kernel = definition(Op.PAD_V2).build(context(Op.PAD_V2, inputs, [out(Q8)]))
    with pytest.raises(ValidationError, match="PAD_V2\\): input 2 \\(pad_value.*256 is outside"):
        kernel(np.zeros(2, np.uint8), inputs[1].value, np.int32(256))


def test_pad_v2_rejections():
    x, paddings = data(QS8, [2, 2]), const(I32, [[0, 1], [1, 0]])
    rejects(Op.PAD_V2, [x, paddings, const(T.INT32, 128)], [out(QS8)], "PAD_V2\\): input 2 \\(pad_value.*128")
    rejects(Op.PAD_V2, [data(Q8, [2]), const(I32, [[0, 1]]), const(T.INT32, -1)], [out(Q8)], "-1 is outside")
    rejects(Op.PAD_V2, [data(F32, [2]), const(I32, [[0, 1]]), const(T.INT32, 0)], [out(F32)],
            "input 2 \\(pad_value.*INT32, expected FLOAT32")
    rejects(Op.PAD_V2, [data(F16, [2]), const(I32, [[0, 1]]), const(T.FLOAT32, 0.0)], [out(F16)],
            "expected FLOAT16")
    rejects(Op.PAD_V2, [x, const(I32, [[0, -1], [1, 0]]), const(T.INT32, 0)], [out(QS8)], "negative count")
    rejects(Op.PAD_V2, [x, paddings], [out(QS8)], "PAD_V2.*expected 3 inputs")
    rejects(Op.PAD_V2, [x, paddings, const(T.INT32, 0)], [output(QS8, (), 1.0, 0)], "output 0.*scale 1.0")


# --- CHANNEL_SHUFFLE ------------------------------------------------------------------------------

@pytest.mark.parametrize("groups, axis, expected", [
    (2, 1, [0, 3, 1, 4, 2, 5]), (3, -1, [0, 2, 4, 1, 3, 5]), (1, 1, [0, 1, 2, 3, 4, 5]),
    (6, 1, [0, 1, 2, 3, 4, 5])])
def test_channel_shuffle_interleaves_groups(groups, axis, expected):
    x = np.stack([np.arange(6), np.arange(6) + 10]).astype(np.float32)
    got = run1(Op.CHANNEL_SHUFFLE, [data(F32, [2, 6]), const(T.INT32, groups), const(T.INT32, axis)],
               [out(F32)], [x])
    np.testing.assert_array_equal(got, x[:, expected])


@pytest.mark.parametrize("operand_type", TYPES)
def test_channel_shuffle_inner_axis(operand_type):
    x = values(operand_type, (2, 6, 3))
    got = run1(Op.CHANNEL_SHUFFLE, [data(operand_type, x.shape), const(T.INT32, 2), const(T.INT32, -2)],
               [out(operand_type)], [x])
    np.testing.assert_array_equal(got, x[:, [0, 3, 1, 4, 2, 5], :])


def test_channel_shuffle_rejections():
    x = data(F32, [2, 6])
    rejects(Op.CHANNEL_SHUFFLE, [x, const(T.INT32, 0), const(T.INT32, 1)], [out(F32)],
            "CHANNEL_SHUFFLE\\): input 1.*num_groups 0 must be >= 1")
    for groups, axis, message in ((4, 1, "num_groups\\) 4 does not divide"), (2, 2, "axis 2 is out of range"),
                                  (2, -3, "axis -3 is out of range")):
        rejects(Op.CHANNEL_SHUFFLE, [x, const(T.INT32, groups), const(T.INT32, axis)], [out(F32)], message)
    rejects(Op.CHANNEL_SHUFFLE, [x, const(T.INT32, 2)], [out(F32)], "expected 3 inputs")
    rejects(Op.CHANNEL_SHUFFLE, [data(Q8, [2, 6]), const(T.INT32, 2), const(T.INT32, 1)],
            [output(Q8, (), 0.5, 0)], "output 0.*zero point 0")
    inputs = [x, scalar(T.INT32), scalar(T.INT32)]
    kernel = definition(Op.CHANNEL_SHUFFLE).build(context(Op.CHANNEL_SHUFFLE, inputs, [out(F32)]))
    with pytest.raises(ValidationError, match="num_groups 0 must be >= 1"):
        kernel(np.zeros((2, 6), np.float32), np.int32(0), np.int32(1))


def test_omitted_layout_is_refused():
    rejects(Op.DEPTH_TO_SPACE, [data(F32, [1, 1, 1, 4]), const(T.INT32, 2), omitted(T.BOOL)], [out(F32)],
            "input 2.*has no value")


# --- on the device --------------------------------------------------------------------------------

SQUARE = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
DEVICE_CASES = {
    "depth_to_space": (Op.DEPTH_TO_SPACE, SQUARE.reshape(1, 1, 1, 16), [(T.INT32, 4)], [1, 4, 4, 1], SQUARE),
    "space_to_depth": (Op.SPACE_TO_DEPTH, SQUARE, [(T.INT32, 4)], [1, 1, 1, 16], SQUARE.reshape(1, 1, 1, 16)),
    "batch_to_space_nchw": (Op.BATCH_TO_SPACE_ND, SQUARE.reshape(4, 1, 2, 2), [(I32, [2, 2]), (T.BOOL, True)],
                            [1, 1, 4, 4],
                            SQUARE.reshape(2, 2, 2, 2).transpose(2, 0, 3, 1).reshape(1, 1, 4, 4)),
    "space_to_batch": (Op.SPACE_TO_BATCH_ND, SQUARE, [(I32, [1, 4]), (I32, [[0, 0], [0, 0]])], [4, 4, 1, 1],
                       SQUARE.transpose(2, 1, 0, 3).reshape(4, 4, 1, 1)),
    "strided_slice": (Op.STRIDED_SLICE, SQUARE, [(I32, [0, 3, 0, 0]), (I32, [1, 0, 4, 1]),
                                                 (I32, [1, -2, 3, 1]), (T.INT32, 0), (T.INT32, 0),
                                                 (T.INT32, 9)], [2, 2],
                      SQUARE[0, 3:0:-2, 0:4:3, 0]),
    "pad_v2": (Op.PAD_V2, SQUARE, [(I32, [[0, 0], [1, 0], [0, 0], [0, 0]]), (T.FLOAT32, 7.0)], [1, 5, 4, 1],
               np.pad(SQUARE, [(0, 0), (1, 0), (0, 0), (0, 0)], constant_values=7.0)),
    "channel_shuffle": (Op.CHANNEL_SHUFFLE, SQUARE.reshape(1, 16), [(T.INT32, 4), (T.INT32, 1)], [1, 16],
                        SQUARE.reshape(4, 4).T.reshape(1, 16)),
}


@pytest.mark.parametrize("case", DEVICE_CASES)
def test_on_the_device(case):
    operation, x, parameters, out_dims, expected = DEVICE_CASES[case]
    assert_same_everywhere(run_everywhere(operation, *device_instance(F32, x.shape, parameters, out_dims, x)),
                           [expected])


@pytest.mark.parametrize("operation, x_dims, operand_type, parameters", [
    (Op.DEPTH_TO_SPACE, [1, 1, 1, 4], F32, [(T.INT32, 0)]),
    (Op.SPACE_TO_DEPTH, [1, 3, 3, 1], Q8, [(T.INT32, 2), (T.BOOL, False)]),
    (Op.BATCH_TO_SPACE_ND, [3, 1, 1, 1], QS8, [(I32, [2, 1])]),
    (Op.SPACE_TO_BATCH_ND, [1, 2, 2, 1], F16, [(I32, [1, 1]), (I32, [[0, 0], [-1, 0]])]),
    (Op.STRIDED_SLICE, [2], F32, [(I32, [0]), (I32, [2]), (I32, [0]), *[(T.INT32, 0)] * 3]),
    (Op.PAD_V2, [2], Q8, [(I32, [[0, 1]]), (T.INT32, 300)]),
    (Op.CHANNEL_SHUFFLE, [2, 6], F32, [(T.INT32, 4), (T.INT32, -1)]),
])
def test_invalid_instances_are_refused_by_the_device(operation, x_dims, operand_type, parameters):
    refused_by_the_device(operation, *device_instance(operand_type, x_dims, parameters))
