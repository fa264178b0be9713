"""RNN, UNIDIRECTIONAL_SEQUENCE_RNN and BIDIRECTIONAL_SEQUENCE_RNN: hand-computed steps,
both layouts, every linking of the auxiliary input, every output count, run-time
parameters, zero sizes, the time-step limit, one-field mutations of valid instances, and
runs on a device."""
from __future__ import annotations

import numpy as np
import pytest

from driver.errors import ResourceError, ValidationError
from driver.hal.enums import FusedActivationFunc as Act, OperandType as T, OperationType as Op
from driver.limits import MAX_TIME_STEPS
from tests.operations.helpers import (F16, F32, OMITTED, const, context, definition, infer,
                                      omitted, output, rejects, run, scalar, tensor)
from tests.operations.on_device import assert_same_everywhere, constant_input, fed_input, run_everywhere

RNN, UNI, BI = Op.RNN, Op.UNIDIRECTIONAL_SEQUENCE_RNN, Op.BIDIRECTIONAL_SEQUENCE_RNN


def cell(weights, recurrent, bias, operand_type=F32, batch=1):
    """A cell of constant weights, recurrent weights and bias; its hidden state is fed."""
    units = len(bias)
    return [const(operand_type, weights), const(operand_type, recurrent), const(operand_type, bias),
            tensor(operand_type, [batch, units])]


# --- RNN: one step ----------------------------------------------------------------------------

#: x = [1, 3], weights [[1, 0], [0, -1]], bias 0.5, hidden [2, 2] times recurrent 0.5 * I:
#: [1, -3] + [0.5, 0.5] + [1, 1] = [2.5, -1.5] before the activation.
STEP = (np.array([[1, 3]]), [[1, 0], [0, -1]], [[0.5, 0], [0, 0.5]], [0.5, 0.5], np.array([[2, 2]]))


@pytest.mark.parametrize("activation, expected", [(Act.NONE, [2.5, -1.5]), (Act.RELU, [2.5, 0]),
                                                  (Act.RELU1, [1, -1]), (Act.RELU6, [2.5, 0])])
def test_rnn_step_by_hand(activation, expected):
    x, w, r, b, h = STEP
    inputs = [tensor(F32, [1, 2]), *cell(w, r, b), const(T.INT32, int(activation))]
    hidden_out, out = run(RNN, inputs, [output(F32), output(F32)], [x, h])
    np.testing.assert_array_equal(out, [expected])
    np.testing.assert_array_equal(hidden_out, [expected])


def test_rnn_float16_is_computed_in_single_precision_and_run_time_activation():
    x, w, r, b, h = STEP
    inputs = [tensor(F16, [1, 2]), tensor(F16, [2, 2]), tensor(F16, [2, 2]), tensor(F16, [2]),
              tensor(F16, [1, 2]), scalar(T.INT32)]
    hidden_out, out = run(RNN, inputs, [output(F16), output(F16)], [x, w, r, b, h, Act.RELU1])
    assert out.dtype == np.float16 and hidden_out.tolist() == out.tolist() == [[1, -1]]
    ctx = context(RNN, inputs, [output(F16), output(F16)])
    kernel = definition(RNN).build(ctx)
    with pytest.raises(ValidationError, match="input 5 .*fused activation 9"):
        kernel(*(np.asarray(v, np.float16) for v in (x, w, r, b, h)), np.int32(9))


# --- UNIDIRECTIONAL_SEQUENCE_RNN --------------------------------------------------------------

#: One unit over x = 1, 2, 3 with weight 1, recurrent weight 0.5 and no bias, from 0:
#: 1, 2 + 0.5 = 2.5, 3 + 1.25 = 4.25; a second batch -1, 0, 1 gives -1, -0.5, 0.75.
SEQUENCE = np.array([[1, 2, 3], [-1, 0, 1]], np.float32)[..., np.newaxis]      # [batch, time, 1]
FORWARD = np.array([[1, 2.5, 4.25], [-1, -0.5, 0.75]], np.float32)[..., np.newaxis]
FW_CELL = ([[1]], [[0.5]], [0])


@pytest.mark.parametrize("time_major", [0, 1])
def test_unidirectional_by_hand_in_both_layouts(time_major):
    x = SEQUENCE.swapaxes(0, 1) if time_major else SEQUENCE
    inputs = [tensor(F32, x.shape), *cell(*FW_CELL, batch=2), const(T.INT32, 0), const(T.INT32, time_major)]
    out, hidden = run(UNI, inputs, [output(F32), output(F32)], [x, np.zeros((2, 1))])
    np.testing.assert_array_equal(out, FORWARD.swapaxes(0, 1) if time_major else FORWARD)
    np.testing.assert_array_equal(hidden, FORWARD[:, -1])


def test_unidirectional_run_time_time_major_is_checked():
    inputs = [tensor(F32, [2, 3, 1]), *cell(*FW_CELL, batch=2), const(T.INT32, 0), scalar(T.INT32)]
    (out,) = run(UNI, inputs, [output(F32)], [SEQUENCE, np.zeros((2, 1)), 0])
    np.testing.assert_array_equal(out, FORWARD)
    assert infer(UNI, context(UNI, inputs, [output(F32)])) == [(0, 0, 1)]
    with pytest.raises(ValidationError, match="input 6 .*time_major 2 is not one of 0, 1"):
        run(UNI, inputs, [output(F32)], [SEQUENCE, np.zeros((2, 1)), 2])


def test_unidirectional_zero_sizes_and_no_time_steps():
    inputs = [tensor(F32, [0, 3, 1]), *cell(*FW_CELL, batch=0), const(T.INT32, 0), const(T.INT32, 0)]
    out, hidden = run(UNI, inputs, [output(F32), output(F32)], [np.zeros((0, 3, 1)), np.zeros((0, 1))])
    assert out.shape == (0, 3, 1) and hidden.shape == (0, 1)
    inputs[0] = tensor(F32, [2, 0, 1])
    inputs[4] = tensor(F32, [2, 1])
    out, hidden = run(UNI, inputs, [output(F32), output(F32)], [np.zeros((2, 0, 1)), [[7], [8]]])
    assert out.shape == (2, 0, 1) and hidden.tolist() == [[7], [8]]


def test_a_zero_size_must_match_too():
    inputs = [tensor(F32, [1, 2, 1]), tensor(F32, [0, 1]), tensor(F32, [0, 0]), tensor(F32, [1]),
              tensor(F32, [1, 1]), const(T.INT32, 0), const(T.INT32, 0)]
    with pytest.raises(ValidationError, match="input 3 .*num_units 1 in dimension 0, expected 0"):
        run(UNI, inputs, [output(F32)], [np.ones((1, 2, 1)), np.ones((0, 1)), np.ones((0, 0)),
                                         np.ones(1), np.ones((1, 1))])


def test_time_steps_over_the_limit_are_refused():
    steps = MAX_TIME_STEPS + 1
    inputs = [tensor(F32, [1, steps, 1]), *cell(*FW_CELL), const(T.INT32, 0), const(T.INT32, 0)]
    with pytest.raises(ResourceError, match="time steps"):
        infer(UNI, context(UNI, inputs, [output(F32)]))
    inputs[0] = tensor(F32, [1, 0, 1])
    with pytest.raises(ResourceError, match="time steps"):
        run(UNI, inputs, [output(F32)], [np.ones((1, steps, 1)), np.zeros((1, 1))])


# --- BIDIRECTIONAL_SEQUENCE_RNN ---------------------------------------------------------------

#: The backward cell: weight 1, recurrent weight 1, over x = 1, 2, 3 from the end: 3, 5, 6.
BW_CELL = ([[1]], [[1]], [0])
X = SEQUENCE[:1]                      # [1, 3, 1], batch-major
AUX = np.array([[[1], [0], [-1]]], np.float32)


def bidirectional(outputs, aux=(omitted(F32),) * 3, time_major=False, merge=None, x_shape=(1, 3, 1)):
    merge = outputs % 2 == 1 if merge is None else merge
    return ([tensor(F32, x_shape), *cell(*FW_CELL), *cell(*BW_CELL), *aux, const(T.INT32, 0),
             const(T.BOOL, time_major), const(T.BOOL, merge)], [output(F32)] * outputs)


def test_bidirectional_without_linking_and_every_output_count():
    fw, bw = [[[1], [2.5], [4.25]]], [[[6], [5], [3]]]
    values = [X, np.zeros((1, 1)), np.zeros((1, 1))]
    assert [o.tolist() for o in run(BI, *bidirectional(2), values)] == [fw, bw]
    assert [o.tolist() for o in run(BI, *bidirectional(4), values)] == [fw, bw, [[4.25]], [[6]]]
    merged = [[[1, 6], [2.5, 5], [4.25, 3]]]
    assert [o.tolist() for o in run(BI, *bidirectional(1), values)] == [merged]
    assert [o.tolist() for o in run(BI, *bidirectional(3), values)] == [merged, [[4.25]], [[6]]]


def test_bidirectional_time_major():
    inputs, outputs = bidirectional(1, time_major=True, x_shape=(3, 1, 1))
    (merged,) = run(BI, inputs, outputs, [X.swapaxes(0, 1), np.zeros((1, 1)), np.zeros((1, 1))])
    assert merged.tolist() == [[[1, 6]], [[2.5, 5]], [[4.25, 3]]]


def test_bidirectional_cross_linking_adds_the_auxiliary_products():
    # fw steps take x + aux = 2, 2, 2: 2, 3, 3.5; bw steps x - aux = 0, 2, 4 from the end: 4, 6, 6.
    aux = (tensor(F32, [1, 3, 1]), const(F32, [[1]]), const(F32, [[-1]]))
    fw, bw = run(BI, *bidirectional(2, aux=aux), [X, np.zeros((1, 1)), np.zeros((1, 1)), AUX])
    assert fw.tolist() == [[[2], [3], [3.5]]] and bw.tolist() == [[[6], [6], [4]]]


def test_bidirectional_auxiliary_operands_omitted_by_the_request():
    """Declared [0] (as the conformance models do) and omitted at run time: no linking."""
    aux = (tensor(F32, [0]), tensor(F32, [0]), tensor(F32, [0]))
    inputs, outputs = bidirectional(2, aux=aux)
    assert infer(BI, context(BI, inputs, outputs)) == [(1, 3, 1), (1, 3, 1)]
    fw, bw = run(BI, inputs, outputs, [X, np.zeros((1, 1)), np.zeros((1, 1)), OMITTED, OMITTED, OMITTED])
    assert bw.tolist() == [[[6], [5], [3]]]
    with pytest.raises(ValidationError, match="inputs 9-11"):
        run(BI, inputs, outputs, [X, np.zeros((1, 1)), np.zeros((1, 1)), OMITTED, [[1]], OMITTED])
    with pytest.raises(ValidationError, match="input 9 .*rank 2, expected 3"):
        run(BI, inputs, outputs, [X, np.zeros((1, 1)), np.zeros((1, 1)), [[1]], OMITTED, OMITTED])


def test_bidirectional_run_time_merge_outputs_must_fit_the_output_count():
    inputs, outputs = bidirectional(2)
    inputs[14] = scalar(T.BOOL)
    run(BI, inputs, outputs, [X, np.zeros((1, 1)), np.zeros((1, 1)), False])
    with pytest.raises(ValidationError, match="input 14 .*merge_outputs True is not False"):
        run(BI, inputs, outputs, [X, np.zeros((1, 1)), np.zeros((1, 1)), True])


def test_bidirectional_float16():
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (2, 3, 2)).astype(np.float16)
    fw_w, bw_w = (rng.uniform(-1, 1, (units, 2)).astype(np.float16) for units in (2, 3))
    fw_r, bw_r = (rng.uniform(-1, 1, (units, units)).astype(np.float16) for units in (2, 3))
    inputs = [tensor(F16, [2, 3, 2]), *cell(fw_w, fw_r, [0, 0], F16, 2), *cell(bw_w, bw_r, [0, 0, 0], F16, 2),
              *(omitted(F16),) * 3, const(T.INT32, 0), const(T.BOOL, False), const(T.BOOL, True)]
    (merged,) = run(BI, inputs, [output(F16)], [x, np.zeros((2, 2)), np.zeros((2, 3))])
    fw, bw = np.zeros((2, 3, 2), np.float32), np.zeros((2, 3, 3), np.float32)
    h = np.zeros((2, 2), np.float32)
    for t in range(3):
        h = fw[:, t] = x[:, t].astype(np.float32) @ fw_w.T.astype(np.float32) + h @ fw_r.T.astype(np.float32)
    h = np.zeros((2, 3), np.float32)
    for t in (2, 1, 0):
        h = bw[:, t] = x[:, t].astype(np.float32) @ bw_w.T.astype(np.float32) + h @ bw_r.T.astype(np.float32)
    assert merged.dtype == np.float16
    expected = np.concatenate([fw, bw], axis=2).astype(np.float16)
    np.testing.assert_allclose(merged, expected, rtol=1e-3, atol=1e-3)


def test_bidirectional_shape_inference():
    inputs, outputs = bidirectional(3)
    inputs[13] = scalar(T.BOOL)                  # time_major only known at run time
    assert infer(BI, context(BI, inputs, outputs)) == [(0, 0, 2), (1, 1), (1, 1)]
    inputs, outputs = bidirectional(1)
    inputs[5:9] = tensor(F32, [0, 1]), tensor(F32, [0, 0]), tensor(F32, [0]), tensor(F32, [1, 0])
    assert infer(BI, context(BI, inputs, outputs)) == [(1, 3, 0)]


# --- one-field mutations ----------------------------------------------------------------------

def rnn_instance():
    return [tensor(F32, [1, 2]), *cell(*STEP[1:4]), const(T.INT32, 1)], [output(F32), output(F32)]


def test_rnn_mutations():
    good_in, good_out = rnn_instance()
    rejects(RNN, good_in[:5], good_out, "expected 6 inputs, got 5")
    rejects(RNN, good_in, good_out[:1], "expected 2 outputs, got 1")
    rejects(RNN, [tensor(T.TENSOR_INT32, [1, 2]), *good_in[1:]], good_out, "input 0 .*TENSOR_INT32")
    rejects(RNN, [good_in[0], const(F16, STEP[1]), *good_in[2:]], good_out, "input 1 .*weights.*FLOAT16")
    rejects(RNN, good_in, [output(F32), output(F16)], "output 1")
    rejects(RNN, [tensor(F32, [1, 2, 1]), *good_in[1:]], good_out, "input 0 .*rank 3 > 2")
    rejects(RNN, [*good_in[:3], const(F32, [[0.5, 0.5]]), *good_in[4:]], good_out, "input 3 .*bias.*rank 2")
    rejects(RNN, [*good_in[:5], const(T.INT32, 4)], good_out, "fused activation 4")
    rejects(RNN, [tensor(F32, [1, 3]), *good_in[1:]], good_out,
            "input 1 .*input_size 2 in dimension 1, expected 3")
    rejects(RNN, [*good_in[:3], const(F32, [0, 0, 0]), *good_in[4:]], good_out, "input 3 .*num_units 3")
    rejects(RNN, [*good_in[:4], tensor(F32, [2, 2]), good_in[5]], good_out, "input 4 .*batch_size 2")
    rejects(RNN, [*good_in[:2], const(F32, [[1, 0, 0]] * 2), *good_in[3:]], good_out, "input 2 .*num_units 3")


def test_unidirectional_mutations():
    good_in = [tensor(F32, [1, 3, 1]), *cell(*FW_CELL), const(T.INT32, 0), const(T.INT32, 0)]
    good_out = [output(F32)]
    rejects(UNI, good_in[:6], good_out, "expected 7 inputs, got 6")
    rejects(UNI, good_in, good_out * 3, "expected 1 or 2 outputs, got 3")
    rejects(UNI, [*good_in[:6], const(T.INT32, 2)], good_out, "time_major 2 is not one of 0, 1")
    rejects(UNI, [*good_in[:6], const(T.BOOL, True)], good_out, "input 6 .*BOOL, expected INT32")
    rejects(UNI, [tensor(F32, [3, 1]), *good_in[1:]], good_out, "input 0 .*rank 2 < 3")
    rejects(UNI, [*good_in[:4], tensor(F32, [2, 1]), *good_in[5:]], good_out, "input 4 .*batch_size 2")


def test_bidirectional_mutations():
    good_in, good_out = bidirectional(2)
    rejects(BI, good_in[:14], good_out, "expected 15 inputs, got 14")
    rejects(BI, good_in, good_out * 3, "expected 1 or 2 or 3 or 4 outputs, got 6")
    rejects(BI, [*good_in[:14], const(T.BOOL, True)], good_out, "input 14 .*merge_outputs True is not False")
    rejects(BI, [*good_in[:13], const(T.INT32, 1), good_in[14]], good_out, "input 13 .*INT32, expected BOOL")
    rejects(BI, [*good_in[:9], omitted(F32), const(F32, [[1]]), const(F32, [[1]]), *good_in[12:]], good_out,
            "inputs 9-11")
    rejects(BI, [*good_in[:9], tensor(F32, [1, 3, 1]), const(F32, [[1]]), *good_in[11:]], good_out,
            "inputs 9-11")
    rejects(BI, [*good_in[:9], tensor(F32, [1, 3, 1]), const(F32, [[1]]), const(F32, [1]), *good_in[12:]],
            good_out, "input 11 .*rank 1, expected 2")
    # A constant auxiliary input decides the linking (parallel) at validation.
    rejects(BI, [*good_in[:9], const(F32, np.zeros((1, 4, 1))), *good_in[10:]], good_out,
            "input 9 .*max_time 4")
    rejects(BI, [*good_in[:9], tensor(F16, [1, 3, 1]), *good_in[10:]], good_out, "input 9 .*TENSOR_FLOAT16")
    rejects(BI, [*good_in[:5], const(F32, [[1, 1]]), *good_in[6:]], good_out,
            "input 5 .*input_size 2 in dimension 1, expected 1")
    rejects(BI, [*good_in[:8], tensor(F32, [1, 2]), *good_in[9:]], good_out, "input 8 .*num_units 2")
    rejects(BI, [*good_in[:12], const(T.INT32, -1), *good_in[13:]], good_out, "fused activation -1")


# --- on a device ------------------------------------------------------------------------------

def test_on_device_every_path():
    x, w, r, b, h = STEP
    rnn_args = [fed_input(F32, x.astype(np.float32)), constant_input(F32, w), constant_input(F32, r),
                constant_input(F32, b), fed_input(F32, h.astype(np.float32)), constant_input(T.INT32, 1)]
    assert_same_everywhere(run_everywhere(RNN, rnn_args, [(F32, (1, 2), 0.0, 0)] * 2), [[[2.5, 0]]] * 2)

    uni_args = [fed_input(F16, SEQUENCE.astype(np.float16)), *(constant_input(F16, v) for v in FW_CELL),
                fed_input(F16, np.zeros((2, 1), np.float16)), constant_input(T.INT32, 0),
                constant_input(T.INT32, 0)]
    assert_same_everywhere(run_everywhere(UNI, uni_args, [(F16, (2, 3, 1), 0.0, 0), (F16, (2, 1), 0.0, 0)]),
                           [FORWARD.astype(np.float16), FORWARD[:, -1].astype(np.float16)])

    # Parallel linking: the backward cell reads the auxiliary input (10, 0, -10) alone.
    zeros = np.zeros((1, 1), np.float32)
    bi_args = [fed_input(F32, X), *(constant_input(F32, v) for v in FW_CELL), fed_input(F32, zeros),
               *(constant_input(F32, v) for v in BW_CELL), fed_input(F32, zeros),
               fed_input(F32, AUX * 10), fed_input(F32, None, dims=[1, 1]), fed_input(F32, None, dims=[1, 1]),
               constant_input(T.INT32, 0), constant_input(T.BOOL, False), constant_input(T.BOOL, True)]
    assert_same_everywhere(run_everywhere(BI, bi_args, [(F32, (1, 3, 2), 0.0, 0), (F32, (1, 1), 0.0, 0),
                                                        (F32, (1, 1), 0.0, 0)]),
                           [[[[1, 0], [2.5, -10], [4.25, -10]]], [[4.25]], [[0]]])
