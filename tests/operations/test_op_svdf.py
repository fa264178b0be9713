"""SVDF: hand-computed steps of rank 1 and 2, with and without a bias, the shifted state,
float16, run-time parameters, zero sizes, one-field mutations of a valid instance, and
runs on a device."""
from __future__ import annotations

import numpy as np
import pytest

from driver.errors import ValidationError
from driver.hal.enums import FusedActivationFunc as Act, OperandType as T, OperationType as Op
from tests.operations.helpers import (F16, F32, const, context, definition, infer, omitted, output,
                                      rejects, run, scalar, tensor)
from tests.operations.on_device import assert_same_everywhere, constant_input, fed_input, run_everywhere


#: Two filters over input [1, 2]: weights_feature I gives activations 1 and 2, which go into
#: the last slot of the memories [1, 2, _] and [3, 4, _]; weights_time [1, 1, 1] and
#: [0, 0, 1] give 1 + 2 + 1 = 4 and 2. The state comes out shifted: [2, 1, 0] and [4, 2, 0].
X = np.array([[1, 2]], np.float32)
WEIGHTS_FEATURE = [[1, 0], [0, 1]]
WEIGHTS_TIME = [[1, 1, 1], [0, 0, 1]]
STATE = np.array([[1, 2, 0, 3, 4, 0]], np.float32)
STATE_OUT = [[2, 1, 0, 4, 2, 0]]


def svdf(bias, rank=1, activation=Act.NONE, operand_type=F32):
    bias_operand = omitted(operand_type) if bias is None else const(operand_type, bias)
    return ([tensor(operand_type, [1, 2]), const(operand_type, WEIGHTS_FEATURE),
             const(operand_type, WEIGHTS_TIME), bias_operand, tensor(operand_type, [1, 6]),
             const(T.INT32, rank), const(T.INT32, int(activation))],
            [output(operand_type), output(operand_type)])


@pytest.mark.parametrize("bias, rank, activation, expected", [
    ([0.5, -0.5], 1, Act.NONE, [[4.5, 1.5]]),
    (None, 1, Act.RELU1, [[1, 1]]),
    ([-7], 2, Act.RELU, [[0]]),                 # the two filters of one unit summed: 6 - 7
    (None, 2, Act.NONE, [[6]])])
def test_svdf_by_hand(bias, rank, activation, expected):
    state_out, out = run(Op.SVDF, *svdf(bias, rank, activation), [X, STATE])
    assert out.tolist() == expected
    assert state_out.tolist() == STATE_OUT


def test_svdf_float16_is_computed_in_single_precision():
    state_out, out = run(Op.SVDF, *svdf([0.5, -0.5], operand_type=F16),
                         [X.astype(np.float16), STATE.astype(np.float16)])
    assert out.dtype == state_out.dtype == np.float16
    assert out.tolist() == [[4.5, 1.5]] and state_out.tolist() == STATE_OUT


def test_svdf_run_time_rank_and_activation():
    inputs, outputs = svdf(None)
    inputs[5:] = scalar(T.INT32), scalar(T.INT32)
    assert infer(Op.SVDF, context(Op.SVDF, inputs, outputs)) == [(1, 6), (1, 0)]
    state_out, out = run(Op.SVDF, inputs, outputs, [X, STATE, 2, Act.NONE])
    assert out.tolist() == [[6]]
    with pytest.raises(ValidationError, match="input 5 .*rank 0 must be positive"):
        run(Op.SVDF, inputs, outputs, [X, STATE, 0, Act.NONE])
    with pytest.raises(ValidationError, match="num_filters 2 .*not a multiple of rank 3"):
        run(Op.SVDF, inputs, outputs, [X, STATE, 3, Act.NONE])


def test_svdf_zero_sizes():
    inputs, outputs = svdf(None)
    inputs[0], inputs[4] = tensor(F32, [0, 2]), tensor(F32, [0, 6])
    state_out, out = run(Op.SVDF, inputs, outputs, [np.zeros((0, 2)), np.zeros((0, 6))])
    assert state_out.shape == (0, 6) and out.shape == (0, 2)
    inputs = [tensor(F32, [1, 2]), tensor(F32, [2, 2]), tensor(F32, [2, 0]), omitted(F32),
              tensor(F32, [1, 0]), const(T.INT32, 1), const(T.INT32, 0)]
    with pytest.raises(ValidationError, match="input 2 .*memory_size 0"):
        run(Op.SVDF, inputs, outputs, [X, np.eye(2), np.zeros((2, 0)), np.zeros((1, 0))])


def test_svdf_mutations():
    good_in, good_out = svdf([0.5, -0.5])
    definition(Op.SVDF).validate(context(Op.SVDF, good_in, good_out))
    rejects(Op.SVDF, good_in[:6], good_out, "expected 7 inputs, got 6")
    rejects(Op.SVDF, good_in, good_out[:1], "expected 2 outputs, got 1")
    rejects(Op.SVDF, [tensor(T.TENSOR_INT32, [1, 2]), *good_in[1:]], good_out, "input 0 .*TENSOR_INT32")
    rejects(Op.SVDF, [*good_in[:3], const(F16, [0.5, -0.5]), *good_in[4:]], good_out, "input 3 .*bias")
    rejects(Op.SVDF, good_in, [output(F32), output(F16)], "output 1")
    rejects(Op.SVDF, [tensor(F32, [1, 2, 1]), *good_in[1:]], good_out, "input 0 .*rank 3 > 2")
    rejects(Op.SVDF, [*good_in[:5], const(T.INT32, 0), good_in[6]], good_out, "input 5 .*rank 0 must be")
    rejects(Op.SVDF, [*good_in[:5], const(T.INT32, 3), good_in[6]], good_out, "not a multiple of rank 3")
    rejects(Op.SVDF, [*good_in[:6], const(T.INT32, 5)], good_out, "fused activation 5")
    rejects(Op.SVDF, [*good_in[:3], const(F32, [0.5]), *good_in[4:]], good_out, "input 3 .*num_units 1")
    rejects(Op.SVDF, [*good_in[:4], tensor(F32, [1, 4]), *good_in[5:]], good_out,
            "input 4 .*memory_size \\* num_filters 4 in dimension 1, expected 6")
    rejects(Op.SVDF, [*good_in[:4], tensor(F32, [2, 6]), *good_in[5:]], good_out, "input 4 .*batch_size 2")
    rejects(Op.SVDF, [tensor(F32, [1, 3]), *good_in[1:]], good_out, "input 1 .*input_size 2 .*expected 3")
    rejects(Op.SVDF, [*good_in[:2], const(F32, [[1, 1, 1]]), *good_in[3:]], good_out, "input 2 .*filters 1")


def test_on_device_every_path():
    """The bias an input the request omits: none."""
    args = [fed_input(F32, X), constant_input(F32, WEIGHTS_FEATURE), constant_input(F32, WEIGHTS_TIME),
            fed_input(F32, None, dims=[2]), fed_input(F32, STATE), constant_input(T.INT32, 1),
            constant_input(T.INT32, 1)]
    assert_same_everywhere(run_everywhere(Op.SVDF, args, [(F32, (1, 6), 0.0, 0), (F32, (1, 2), 0.0, 0)]),
                           [np.array(STATE_OUT, np.float32), np.array([[4, 2]], np.float32)])
