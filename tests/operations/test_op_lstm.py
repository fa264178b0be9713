"""LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM and BIDIRECTIONAL_SEQUENCE_LSTM: one step computed by
hand (CIFG, peephole, clipping, projection, layer normalization, activations), the sequence
operations against steps of LSTM, one-field mutations refused by name, run-time omissions and
zero sizes, and runs on a device."""
from __future__ import annotations

import math

import numpy as np
import pytest

from driver.errors import ResourceError, ValidationError
from driver.hal.enums import ErrorStatus, OperandType as T, OperationType as Op
from driver.limits import MAX_TIME_STEPS
from tests.operations.helpers import (F16, F32, OMITTED, const, context, definition, infer,
                                      omitted, output, rejects, run, scalar, tensor, validate)
from tests.operations.on_device import assert_same_everywhere, constant_input, fed_input, run_everywhere

TANH, RELU, RELU6, SIGMOID, NONE = 4, 1, 3, 6, 0
rng = np.random.default_rng(7)


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


# --- building operations ----------------------------------------------------------------------

#: The 17 weights of a cell, by name, in the HAL's order (offsets from the cell's first).
WEIGHTS = ("ii", "if", "ic", "io", "ri", "rf", "rc", "ro", "ci", "cf", "co",
           "bi", "bf", "bc", "bo", "pw", "pb")


def random_cell(n_input: int, units: int, n_output: int, cifg=False, peephole=False,
                projection=False) -> dict:
    """Random weights; the omitted ones are None."""
    shapes = {**dict.fromkeys(("ii", "if", "ic", "io"), (units, n_input)),
              **dict.fromkeys(("ri", "rf", "rc", "ro"), (units, n_output)),
              **dict.fromkeys(("ci", "cf", "co", "bi", "bf", "bc", "bo"), (units,)),
              "pw": (n_output, units), "pb": (n_output,)}
    absent = ({"ii", "ri", "bi", "ci"} if cifg else set()) | (set() if peephole else {"ci", "cf", "co"}) \
        | (set() if projection else {"pw", "pb"})
    return {k: None if k in absent else rng.uniform(-0.6, 0.6, shapes[k]).astype(np.float32) for k in WEIGHTS}


def weight_operands(cell: dict, t=F32) -> list:
    return [omitted(t) if cell[k] is None else const(t, cell[k].astype(np.float16 if t == F16 else np.float32))
            for k in WEIGHTS]


def clip_type(t):
    return T.FLOAT32 if t == F32 else T.FLOAT16


def lstm_operation(x, cell, h0, c0, activation=TANH, clips=(0.0, 0.0), layer_norm=None, t=F32):
    """LSTM's inputs and outputs with x, h0 and c0 fed at run time; ``layer_norm``: None for
    the 23-input form, else the 4 weights (None for an omitted one)."""
    inputs = [tensor(t, x.shape), *weight_operands(cell, t), tensor(t, h0.shape), tensor(t, c0.shape),
              const(T.INT32, activation), *(const(clip_type(t), v) for v in clips)]
    if layer_norm is not None:
        inputs += [omitted(t) if w is None else const(t, w) for w in layer_norm]
    return inputs, [output(t) for _ in range(4)]


def lstm(x, cell, h0, c0, **kwargs):
    inputs, outputs = lstm_operation(x, cell, h0, c0, **kwargs)
    return run(Op.LSTM, inputs, outputs, [x, h0, c0])


def unidirectional_operation(x, cell, h0, c0, time_major=True, states=False, activation=TANH,
                             clips=(0.0, 0.0), layer_norm=(None,) * 4, t=F32):
    inputs = [tensor(t, x.shape), *weight_operands(cell, t), tensor(t, h0.shape), tensor(t, c0.shape),
              const(T.INT32, activation), *(const(clip_type(t), v) for v in clips),
              const(T.BOOL, time_major), *(omitted(t) if w is None else const(t, w) for w in layer_norm)]
    return inputs, [output(t) for _ in range(3 if states else 1)]


def unidirectional(x, cell, h0, c0, **kwargs):
    inputs, outputs = unidirectional_operation(x, cell, h0, c0, **kwargs)
    return run(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, inputs, outputs, [x, h0, c0])


def bidirectional_operation(x, fw, bw, states, aux=None, fw_aux=(None,) * 4, bw_aux=(None,) * 4,
                            merge=False, time_major=True, outputs_with_states=False):
    """``states``: (fw h0, fw c0, bw h0, bw c0), fed at run time like x and aux."""
    inputs = [tensor(F32, x.shape), *weight_operands(fw), *weight_operands(bw),
              *(tensor(F32, s.shape) for s in states),
              omitted(F32) if aux is None else tensor(F32, aux.shape),
              *(omitted(F32) if w is None else const(F32, w) for w in (*fw_aux, *bw_aux)),
              const(T.INT32, TANH), const(T.FLOAT32, 0.0), const(T.FLOAT32, 0.0), const(T.BOOL, merge),
              const(T.BOOL, time_major), *(omitted(F32) for _ in range(8))]
    count = (1 if merge else 2) + (4 if outputs_with_states else 0)
    return inputs, [output(F32) for _ in range(count)]


def bidirectional(x, fw, bw, states, aux=None, **kwargs):
    inputs, outputs = bidirectional_operation(x, fw, bw, states, aux, **kwargs)
    return run(Op.BIDIRECTIONAL_SEQUENCE_LSTM, inputs, outputs,
               [x, *states] + ([] if aux is None else [aux]))


def one_unit(**values) -> dict:
    """A cell of one unit over one input feature, its weights given as scalars."""
    matrices = {"ii", "if", "ic", "io", "ri", "rf", "rc", "ro", "pw"}
    return {k: None if values.get(k) is None else
            np.array(values[k], np.float32).reshape((1, 1) if k in matrices else (1,)) for k in WEIGHTS}


ONE = np.ones((1, 1), np.float32)


# --- one step by hand -----------------------------------------------------------------------

def test_one_unit_step_by_hand():
    cell = one_unit(ii=0.5, **{"if": -0.5}, ic=1.0, io=0.25, ri=0.1, rf=0.1, rc=0.1, ro=0.1,
                    bi=0.0, bf=0.2, bc=-0.1, bo=0.0)
    h0, c0 = np.full((1, 1), 0.5, np.float32), np.full((1, 1), 0.2, np.float32)
    scratch, h, c, out = lstm(ONE, cell, h0, c0)
    i, f = sigmoid(0.5 + 0.05), sigmoid(-0.5 + 0.05 + 0.2)
    g, o = math.tanh(1.0 + 0.05 - 0.1), sigmoid(0.25 + 0.05)
    c_expected = f * 0.2 + i * g
    h_expected = o * math.tanh(c_expected)
    np.testing.assert_allclose(c, [[c_expected]], rtol=1e-6)
    np.testing.assert_allclose(h, [[h_expected]], rtol=1e-6)
    np.testing.assert_array_equal(out, h)
    # The scratch buffer: input gate, g(C_t), forget gate, o_t . g(C_t).
    assert scratch.shape == (1, 4)
    np.testing.assert_allclose(scratch, [[i, math.tanh(c_expected), f, h_expected]], rtol=1e-6)


def test_cifg_peephole_and_clipping_by_hand():
    """CIFG (i = 1 - f), peepholes on the forget and output gates, the cell state clipped to
    0.5, then a projection with a bias clipped to 0.8."""
    cell = one_unit(**{"if": 0.0}, ic=3.0, io=0.5, rf=0.0, rc=0.0, ro=0.0, cf=0.5, co=-1.0,
                    bf=0.0, bc=0.0, bo=0.0, pw=2.0, pb=0.5)
    h0, c0 = np.zeros((1, 1), np.float32), np.full((1, 1), 2.0, np.float32)
    scratch, h, c, _ = lstm(ONE, cell, h0, c0, clips=(0.5, 0.8))
    f = sigmoid(0.5 * 2.0)
    c_unclipped = f * 2.0 + (1 - f) * math.tanh(3.0)
    assert c_unclipped > 0.5
    o = sigmoid(0.5 - 1.0 * 0.5)
    np.testing.assert_allclose(c, [[0.5]])
    projected = 2.0 * o * math.tanh(0.5) + 0.5
    assert projected > 0.8
    np.testing.assert_allclose(h, [[0.8]])
    assert scratch.shape == (1, 3)                # CIFG: no input gate
    np.testing.assert_allclose(scratch, [[math.tanh(0.5), 1 - f, o * math.tanh(0.5)]], rtol=1e-6)


def test_projection_without_clipping_and_with_two_outputs():
    cell = one_unit(**{"if": 0.0}, ic=1.0, io=0.0, bf=0.0, bc=0.0, bo=0.0)
    cell.update(rf=np.zeros((1, 2), np.float32), rc=np.zeros((1, 2), np.float32),
                ro=np.zeros((1, 2), np.float32), pw=np.array([[1.0], [-3.0]], np.float32))
    h0, c0 = np.zeros((1, 2), np.float32), np.zeros((1, 1), np.float32)
    _, h, c, _ = lstm(ONE, cell, h0, c0)
    hidden = 0.5 * math.tanh(0.5 * math.tanh(1.0))
    np.testing.assert_allclose(h, [[hidden, -3 * hidden]], rtol=1e-6)


def test_layer_normalization_by_hand():
    """Two units: each gate's normalized sum is +1 and -1 (the first unit's is larger), then
    scaled by the layer norm weights and biased."""
    cell = {k: None for k in WEIGHTS}
    cell.update({k: np.array([[1.0], [-1.0]], np.float32) for k in ("ii", "if", "ic", "io")})
    cell.update({k: np.zeros((2, 2), np.float32) for k in ("ri", "rf", "rc", "ro")})
    cell.update(bi=np.array([0.1, 0.2], np.float32), bf=np.array([0.3, 0.4], np.float32),
                bc=np.array([-0.1, 0.0], np.float32), bo=np.array([0.5, -0.5], np.float32))
    ln = [np.array([w, 2 * w], np.float32) for w in (0.5, 1.0, 1.5, 2.0)]
    h0, c0 = np.zeros((1, 2), np.float32), np.zeros((1, 2), np.float32)
    _, h, c, _ = lstm(ONE * 3, cell, h0, c0, layer_norm=ln)

    def gate(k, unit):
        return [1, -1][unit] * ln[k][unit] + [cell["bi"], cell["bf"], cell["bc"], cell["bo"]][k][unit]
    for unit in (0, 1):
        i, g, o = sigmoid(gate(0, unit)), math.tanh(gate(2, unit)), sigmoid(gate(3, unit))
        np.testing.assert_allclose(c[0, unit], i * g, rtol=1e-5)
        np.testing.assert_allclose(h[0, unit], o * math.tanh(i * g), rtol=1e-5)


@pytest.mark.parametrize("activation, g", [(NONE, lambda v: v), (RELU, lambda v: max(v, 0.0)),
                                           (RELU6, lambda v: min(max(v, 0.0), 6.0)),
                                           (TANH, math.tanh), (SIGMOID, sigmoid)])
def test_activations(activation, g):
    cell = one_unit(ii=0.0, **{"if": 0.0}, ic=-2.0, io=0.0, ri=0.0, rf=0.0, rc=0.0, ro=0.0,
                    bi=0.0, bf=0.0, bc=0.0, bo=0.0)
    c0 = np.full((1, 1), 8.0, np.float32)
    for x in (1.0, -5.0):
        _, h, c, _ = lstm(ONE * x, cell, np.zeros((1, 1), np.float32), c0, activation=activation)
        c_expected = 0.5 * 8.0 + 0.5 * g(-2.0 * x)
        np.testing.assert_allclose(c, [[c_expected]], rtol=1e-6)
        np.testing.assert_allclose(h, [[0.5 * g(c_expected)]], rtol=1e-6)


def test_float16_is_computed_in_single_precision():
    cell = random_cell(2, 3, 3, peephole=True)
    x, h0, c0 = (rng.uniform(-1, 1, s).astype(np.float16) for s in ((2, 2), (2, 3), (2, 3)))
    cell16 = {k: None if v is None else v.astype(np.float16) for k, v in cell.items()}
    got = lstm(x, cell16, h0, c0, t=F16)
    want = lstm(x.astype(np.float32), {k: None if v is None else v.astype(np.float32) for k, v in cell16.items()},
                h0.astype(np.float32), c0.astype(np.float32))
    for g, w in zip(got, want):
        assert g.dtype == np.float16
        np.testing.assert_array_equal(g, w.astype(np.float16))


# --- sequences ------------------------------------------------------------------------------

def steps_of_lstm(x, cell, h, c, layer_norm=None):
    """A time-major sequence run as LSTM steps."""
    outputs = []
    for x_t in x:
        _, h, c, out = lstm(x_t, cell, h, c, layer_norm=layer_norm)
        outputs.append(out)
    return np.stack(outputs), h, c


@pytest.mark.parametrize("cifg, peephole, projection", [(False, False, False), (True, True, False),
                                                         (False, True, True)])
def test_unidirectional_is_lstm_steps_time_and_batch_major(cifg, peephole, projection):
    cell = random_cell(3, 4, 2 if projection else 4, cifg, peephole, projection)
    n_output = 2 if projection else 4
    x = rng.uniform(-1, 1, (3, 2, 3)).astype(np.float32)
    h0, c0 = rng.uniform(-1, 1, (2, n_output)).astype(np.float32), rng.uniform(-1, 1, (2, 4)).astype(np.float32)
    ln = [None if cifg else rng.uniform(0.5, 1.5, 4).astype(np.float32),
          *(rng.uniform(0.5, 1.5, 4).astype(np.float32) for _ in range(3))]
    want_out, want_h, want_c = steps_of_lstm(x, cell, h0, c0, ln)
    out, h, c = unidirectional(x, cell, h0, c0, states=True, layer_norm=ln)
    np.testing.assert_allclose(out, want_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c, want_c, rtol=1e-5, atol=1e-6)
    assert np.isfinite(h).all()     # assert_allclose takes NaN for NaN
    (batch_major,) = unidirectional(x.transpose(1, 0, 2).copy(), cell, h0, c0, time_major=False,
                                    layer_norm=ln)
    np.testing.assert_allclose(batch_major, want_out.transpose(1, 0, 2), rtol=1e-5, atol=1e-6)


def bidirectional_case(n_input=2):
    x = rng.uniform(-1, 1, (3, 2, n_input)).astype(np.float32)
    fw, bw = random_cell(n_input, 3, 3, peephole=True), random_cell(n_input, 2, 2, cifg=True)
    states = [rng.uniform(-1, 1, s).astype(np.float32) for s in ((2, 3), (2, 3), (2, 2), (2, 2))]
    return x, fw, bw, states


def test_bidirectional_is_a_forward_and_a_backward_sequence():
    x, fw, bw, states = bidirectional_case()
    fw_out, bw_out, fw_h, fw_c, bw_h, bw_c = bidirectional(x, fw, bw, states, outputs_with_states=True)
    want_fw, want_fw_h, want_fw_c = unidirectional(x, fw, *states[:2], states=True)
    want_bw, want_bw_h, want_bw_c = unidirectional(x[::-1].copy(), bw, *states[2:], states=True)
    for got, want in ((fw_out, want_fw), (bw_out, want_bw[::-1]), (fw_h, want_fw_h), (fw_c, want_fw_c),
                      (bw_h, want_bw_h), (bw_c, want_bw_c)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    (merged,) = bidirectional(x, fw, bw, states, merge=True)
    np.testing.assert_allclose(merged, np.concatenate([fw_out, bw_out], axis=2), rtol=1e-6)
    merged_batch_major, *final = bidirectional(x.transpose(1, 0, 2).copy(), fw, bw, states, merge=True,
                                               time_major=False, outputs_with_states=True)
    np.testing.assert_allclose(merged_batch_major, merged.transpose(1, 0, 2), rtol=1e-6)
    for got, want in zip(final, (fw_h, fw_c, bw_h, bw_c)):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_bidirectional_cross_linking_adds_the_auxiliary_input():
    """With auxiliary weights, the auxiliary input is a second input of both cells: the same
    as one input [x, aux] with the weights side by side."""
    x, fw, bw, states = bidirectional_case()
    aux = rng.uniform(-1, 1, (3, 2, 3)).astype(np.float32)
    fw_aux = [rng.uniform(-0.5, 0.5, (3, 3)).astype(np.float32) for _ in range(4)]
    bw_aux = [None, *(rng.uniform(-0.5, 0.5, (2, 3)).astype(np.float32) for _ in range(3))]  # CIFG
    fw_out, bw_out = bidirectional(x, fw, bw, states, aux, fw_aux=fw_aux, bw_aux=bw_aux)

    def joined(cell, aux_weights):
        return {**cell, **{k: None if cell[k] is None else np.concatenate([cell[k], w], axis=1)
                           for k, w in zip(("ii", "if", "ic", "io"), aux_weights)}}
    both = np.concatenate([x, aux], axis=2)
    want_fw = unidirectional(both, joined(fw, fw_aux), *states[:2])[0]
    want_bw = unidirectional(both[::-1].copy(), joined(bw, bw_aux), *states[2:])[0]
    np.testing.assert_allclose(fw_out, want_fw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bw_out, want_bw[::-1], rtol=1e-5, atol=1e-6)


def test_bidirectional_parallel_linking_feeds_the_backward_cell_the_auxiliary_input():
    x, fw, _, states = bidirectional_case()
    aux = rng.uniform(-1, 1, (3, 2, 4)).astype(np.float32)      # its own size
    bw = random_cell(4, 2, 2)
    fw_out, bw_out = bidirectional(x, fw, bw, states, aux)
    np.testing.assert_allclose(fw_out, unidirectional(x, fw, *states[:2])[0], rtol=1e-6)
    np.testing.assert_allclose(bw_out, unidirectional(aux[::-1].copy(), bw, *states[2:])[0][::-1], rtol=1e-6)


# --- shapes ---------------------------------------------------------------------------------

def test_shape_inference():
    cell = random_cell(3, 4, 2, projection=True)
    inputs, outputs = lstm_operation(np.zeros((5, 3), np.float32), cell, np.zeros((5, 2)), np.zeros((5, 4)))
    ctx = context(Op.LSTM, inputs, outputs)
    assert infer(Op.LSTM, ctx) == [(5, 16), (5, 2), (5, 4), (5, 2)]
    shapes = [None if o.is_omitted else tuple(o.dimensions) or () for o in inputs]
    shapes[0], shapes[18], shapes[19] = (0, 3), (0, 2), None
    assert infer(Op.LSTM, ctx, shapes) == [(0, 16), (0, 2), (0, 4), (0, 2)]
    cifg = random_cell(3, 4, 4, cifg=True)
    ctx = context(Op.LSTM, *lstm_operation(np.zeros((1, 3), np.float32), cifg, np.zeros((1, 4)), np.zeros((1, 4))))
    assert infer(Op.LSTM, ctx)[0] == (1, 12)
    # Input-to-input weights the request may omit: the scratch buffer's width is unknown.
    inputs[1] = tensor(F32, (4, 3))
    assert infer(Op.LSTM, context(Op.LSTM, inputs, outputs))[0] == (5, 0)


def test_sequence_shape_inference_time_and_batch_major():
    cell = random_cell(3, 4, 4)
    for time_major, dims in ((True, (6, 2, 3)), (False, (2, 6, 3))):
        ctx = context(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, *unidirectional_operation(
            np.zeros(dims, np.float32), cell, np.zeros((2, 4)), np.zeros((2, 4)), time_major, states=True))
        assert infer(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, ctx) == [(*dims[:2], 4), (2, 4), (2, 4)]
    x, fw, bw, states = bidirectional_case()
    ctx = context(Op.BIDIRECTIONAL_SEQUENCE_LSTM, *bidirectional_operation(x, fw, bw, states, merge=True,
                                                                           outputs_with_states=True))
    assert infer(Op.BIDIRECTIONAL_SEQUENCE_LSTM, ctx) == [(3, 2, 5), (2, 3), (2, 3), (2, 2), (2, 2)]


def test_time_steps_over_the_limit_are_refused():
    # A resource limit, not a rule of validity: validation accepts the sequence, and shape
    # inference (at prepare time, and again at run time) refuses it.
    cell, state = random_cell(1, 1, 1), np.zeros((1, 1))
    x = np.zeros((MAX_TIME_STEPS + 1, 1, 1), np.float32)
    ctx = validate(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, *unidirectional_operation(x, cell, state, state))
    with pytest.raises(ResourceError, match="time steps"):
        infer(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, ctx)
    x, fw, bw, states = bidirectional_case()
    inputs, outputs = bidirectional_operation(x, fw, bw, states)
    inputs[0] = tensor(F32, (2**31 - 1, *x.shape[1:]))
    ctx = validate(Op.BIDIRECTIONAL_SEQUENCE_LSTM, inputs, outputs)
    with pytest.raises(ResourceError, match="time steps"):
        infer(Op.BIDIRECTIONAL_SEQUENCE_LSTM, ctx)


def test_zero_sizes_give_empty_outputs():
    cell = random_cell(3, 4, 4)
    scratch, h, c, out = lstm(np.zeros((0, 3), np.float32), cell, np.zeros((0, 4), np.float32),
                              np.zeros((0, 4), np.float32))
    assert scratch.shape == (0, 16) and h.shape == c.shape == out.shape == (0, 4)
    h0, c0 = rng.uniform(-1, 1, (2, 4)).astype(np.float32), rng.uniform(-1, 1, (2, 4)).astype(np.float32)
    out, h, c = unidirectional(np.zeros((0, 2, 3), np.float32), cell, h0, c0, states=True)
    assert out.shape == (0, 2, 4)
    np.testing.assert_array_equal(h, h0)
    np.testing.assert_array_equal(c, c0)
    empty_units = random_cell(3, 0, 0)
    scratch, *_ = lstm(np.ones((2, 3), np.float32), empty_units, np.zeros((2, 0), np.float32),
                       np.zeros((2, 0), np.float32))
    assert scratch.shape == (2, 0)


# --- validation -----------------------------------------------------------------------------

def valid_lstm(**kwargs):
    cell = random_cell(3, 4, 4, **kwargs)
    return lstm_operation(np.zeros((2, 3), np.float32), cell, np.zeros((2, 4)), np.zeros((2, 4)))


def replaced(inputs, **by_position):
    return [by_position.get(f"i{k}", operand) for k, operand in enumerate(inputs)]


def test_valid_forms_validate():
    for kwargs in ({}, {"cifg": True}, {"peephole": True}, {"cifg": True, "peephole": True},
                   {"projection": True}):
        validate(Op.LSTM, *valid_lstm(**kwargs))


def test_one_field_mutations_name_the_operand():
    inputs, outputs = valid_lstm()
    name = r"operation 0 \(LSTM\): "
    rejects(Op.LSTM, inputs[:22], outputs, name + "expected 23 or 27 inputs, got 22")
    rejects(Op.LSTM, inputs, outputs[:3], name + "expected 4 outputs, got 3")
    rejects(Op.LSTM, replaced(inputs, i2=const(F16, np.zeros((4, 3)))), outputs,
            name + "input 2 \\(input-to-forget weights, operand 2\\) has type TENSOR_FLOAT16")
    rejects(Op.LSTM, replaced(inputs, i21=const(T.FLOAT16, 0.0)), outputs, name + "input 21 \\(cell_clip")
    rejects(Op.LSTM, replaced(inputs, i20=const(T.INT32, 2)), outputs, name + "input 20.*activation 2 is not one of")
    rejects(Op.LSTM, replaced(inputs, i22=const(T.FLOAT32, -1.0)), outputs,
            name + "input 22.*proj_clip -1.0 must be non-negative")
    rejects(Op.LSTM, replaced(inputs, i0=tensor(F32, (1, 2, 3))), outputs, name + "input 0.*rank 3 > 2")
    rejects(Op.LSTM, replaced(inputs, i3=const(F32, np.zeros((5, 3)))), outputs,
            name + "input 3 \\(input-to-cell weights\\) has num_units 5 in dimension 0, expected 4")
    rejects(Op.LSTM, replaced(inputs, i6=const(F32, np.zeros((4, 3)))), outputs,
            name + "input 6 \\(recurrent-to-forget weights\\) has output_size 3 in dimension 1, expected 4")
    rejects(Op.LSTM, replaced(inputs, i19=tensor(F32, (3, 4))), outputs,
            name + "input 19 \\(cell state in\\).*batch \\d+ in dimension 0, expected 2")
    narrow = {f"i{k}": const(F32, np.zeros((4, 3))) for k in (5, 6, 7, 8)}
    rejects(Op.LSTM, replaced(inputs, **narrow, i18=tensor(F32, (2, 3))), outputs,
            name + "input 8 \\(recurrent-to-output weights\\) has output_size 3, not num_units 4, "
                   "without projection weights")
    rejects(Op.LSTM, inputs, [output(F16), *outputs[1:]], name + "output 0 \\(scratch buffer")


def test_optional_inputs_that_must_go_together():
    inputs, outputs = valid_lstm(peephole=True, projection=True)
    name = r"operation 0 \(LSTM\): "
    rejects(Op.LSTM, replaced(inputs, i1=omitted(F32)), outputs,
            name + "input 1 \\(input-to-input weights\\), input 5 \\(recurrent-to-input weights\\) "
                   "must be all present")
    rejects(Op.LSTM, replaced(inputs, i1=omitted(F32), i5=omitted(F32), i9=omitted(F32)), outputs,
            name + "input 12 \\(input gate bias\\) must be omitted \\(it is present exactly when")
    rejects(Op.LSTM, replaced(inputs, i10=omitted(F32)), outputs, name + "input 10 .*input 11 .*all present")
    rejects(Op.LSTM, replaced(inputs, i9=omitted(F32)), outputs,
            name + "input 9 \\(cell-to-input weights\\) must be present")
    rejects(Op.LSTM, replaced(inputs, i16=omitted(F32)), outputs,
            name + "input 17 \\(projection bias\\) must be omitted \\(without projection weights\\)")
    ln = [const(F32, np.ones(4)) for _ in range(4)]
    validate(Op.LSTM, inputs + ln, outputs)
    rejects(Op.LSTM, inputs + [omitted(F32), *ln[1:]], outputs,
            name + "input 23 \\(input layer norm weights\\) must be present")
    rejects(Op.LSTM, inputs + [*ln[:2], omitted(F32), ln[3]], outputs,
            name + "input 24 .*input 25 .*input 26 .*all present")


def test_presence_is_checked_again_when_the_request_omits_inputs():
    """Weights fed by the request may be omitted: validation cannot tell, the kernel can."""
    cell = random_cell(2, 2, 2)
    x, h0, c0 = np.ones((1, 2), np.float32), np.zeros((1, 2), np.float32), np.zeros((1, 2), np.float32)
    inputs, outputs = lstm_operation(x, cell, h0, c0)
    inputs = replaced(inputs, i1=tensor(F32, (2, 2)), i5=tensor(F32, (2, 2)))
    validate(Op.LSTM, inputs, outputs)
    with pytest.raises(ValidationError, match=r"input 12 \(input gate bias\) must be omitted"):
        run(Op.LSTM, inputs, outputs, [x, OMITTED, OMITTED, h0, c0])
    with pytest.raises(ValidationError, match=r"input 1 .*input 5 .*all present"):
        run(Op.LSTM, inputs, outputs, [x, cell["ii"], OMITTED, h0, c0])
    got = run(Op.LSTM, inputs, outputs, [x, cell["ii"], cell["ri"], h0, c0])
    np.testing.assert_array_equal(got[1], lstm(x, cell, h0, c0)[1])


def test_run_time_parameters_are_checked():
    cell = random_cell(2, 2, 2)
    x, h0, c0 = np.ones((1, 2), np.float32), np.zeros((1, 2), np.float32), np.zeros((1, 2), np.float32)
    inputs, outputs = lstm_operation(x, cell, h0, c0)
    inputs = replaced(inputs, i20=scalar(T.INT32), i21=scalar(T.FLOAT32))
    with pytest.raises(ValidationError, match="activation 5 is not one of"):
        run(Op.LSTM, inputs, outputs, [x, h0, c0, 5, 0.0])
    with pytest.raises(ValidationError, match="cell_clip -0.5 must be non-negative"):
        run(Op.LSTM, inputs, outputs, [x, h0, c0, TANH, -0.5])
    np.testing.assert_array_equal(run(Op.LSTM, inputs, outputs, [x, h0, c0, TANH, 0.0])[1],
                                  lstm(x, cell, h0, c0)[1])


def test_kernel_checks_zero_sized_mismatches():
    """Shape inference takes a 0 for an unknown size; the kernel, for a zero size."""
    cell = random_cell(2, 2, 2)
    inputs, outputs = lstm_operation(np.ones((1, 2), np.float32), cell, np.zeros((1, 2)), np.zeros((1, 2)))
    inputs = replaced(inputs, i13=tensor(F32, (0,)))
    with pytest.raises(ValidationError, match=r"input 13 \(forget gate bias\) has num_units 0 in dimension 0"):
        run(Op.LSTM, inputs, outputs, [np.ones((1, 2), np.float32), np.zeros(0, np.float32),
                                       np.zeros((1, 2), np.float32), np.zeros((1, 2), np.float32)])


def test_sequence_mutations_name_the_operand():
    cell = random_cell(3, 4, 4)
    inputs, outputs = unidirectional_operation(np.zeros((2, 1, 3), np.float32), cell, np.zeros((1, 4)),
                                               np.zeros((1, 4)), states=True)
    validate(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, inputs, outputs)
    name = r"operation 0 \(UNIDIRECTIONAL_SEQUENCE_LSTM\): "
    rejects(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, inputs, outputs[:2], name + "expected 1 or 3 outputs, got 2")
    rejects(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, inputs[:27], outputs, name + "expected 28 inputs")
    rejects(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, replaced(inputs, i23=const(T.INT32, 1)), outputs,
            name + "input 23 \\(time_major.*has type INT32")
    rejects(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, replaced(inputs, i0=tensor(F32, (2, 3))), outputs,
            name + "input 0 \\(input, operand 0\\) has rank 2 < 3")
    rejects(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, replaced(inputs, i18=tensor(F32, (2, 4))), outputs,
            name + "input 18 \\(output state in\\) has batch 2 in dimension 0, expected 1")
    x, fw, bw, states = bidirectional_case()
    inputs, outputs = bidirectional_operation(x, fw, bw, states)
    validate(Op.BIDIRECTIONAL_SEQUENCE_LSTM, inputs, outputs)
    name = r"operation 0 \(BIDIRECTIONAL_SEQUENCE_LSTM\): "
    rejects(Op.BIDIRECTIONAL_SEQUENCE_LSTM, inputs, outputs[:1],
            name + "input 51 \\(merge_outputs\\) is False with 1 outputs")
    rejects(Op.BIDIRECTIONAL_SEQUENCE_LSTM, inputs, outputs * 2, name + "expected 1 or 2 or 5 or 6 outputs, got 4")
    rejects(Op.BIDIRECTIONAL_SEQUENCE_LSTM, replaced(inputs, i51=const(T.BOOL, True)), outputs * 3,
            name + "input 51 \\(merge_outputs\\) is True with 6 outputs")
    aux_weights = [const(F32, np.zeros((3, 2)))] * 4
    fw_aux = {f"i{40 + g}": w for g, w in enumerate(aux_weights)}
    rejects(Op.BIDIRECTIONAL_SEQUENCE_LSTM, replaced(inputs, **fw_aux), outputs,
            name + "input 41 \\(forward aux input-to-forget weights\\), input 45 .*all present")
    bw_aux = {f"i{45 + g}": const(F32, np.zeros((2, 2))) for g in range(3)}
    rejects(Op.BIDIRECTIONAL_SEQUENCE_LSTM, replaced(inputs, **fw_aux, **bw_aux), outputs,
            name + "input 39 \\(aux input\\) must be present \\(with auxiliary weights\\)")
    rejects(Op.BIDIRECTIONAL_SEQUENCE_LSTM, replaced(inputs, i37=tensor(F32, (2, 3))), outputs,
            name + "input 37 \\(backward output state in\\).*backward output_size \\d+ in dimension \\d+, expected 2")


# --- on a device ----------------------------------------------------------------------------

def cell_args(cell: dict, omit_by_request=()) -> list:
    return [fed_input(F32, None, dims=(4, 3)) if k in omit_by_request else
            constant_input(F32, cell[k]) if cell[k] is not None else fed_input(F32, None, dims=(1,))
            for k in WEIGHTS]


def test_on_device_every_path():
    cell = random_cell(3, 4, 4, cifg=True, peephole=True)
    x, h0, c0 = (rng.uniform(-1, 1, s).astype(np.float32) for s in ((2, 3), (2, 4), (2, 4)))
    scalars = [constant_input(T.INT32, TANH), constant_input(T.FLOAT32, 0.0), constant_input(T.FLOAT32, 0.0)]
    # CIFG by weights the request omits (the declared shapes do not count then).
    args = [fed_input(F32, x), *cell_args(cell), fed_input(F32, h0), fed_input(F32, c0), *scalars]
    expected = lstm(x, cell, h0, c0)
    results = run_everywhere(Op.LSTM, args, [(F32, e.shape, 0.0, 0) for e in expected])
    assert_same_everywhere(results, expected)
    xs = rng.uniform(-1, 1, (3, 2, 3)).astype(np.float32)
    expected = unidirectional(xs, cell, h0, c0, states=True)
    results = run_everywhere(Op.UNIDIRECTIONAL_SEQUENCE_LSTM,
                             [fed_input(F32, xs), *cell_args(cell), fed_input(F32, h0), fed_input(F32, c0),
                              *scalars, constant_input(T.BOOL, True), *(fed_input(F32, None, dims=(4,)),) * 4],
                             [(F32, e.shape, 0.0, 0) for e in expected])
    assert_same_everywhere(results, expected)


def test_on_device_bidirectional_every_path():
    x, fw, bw, states = bidirectional_case()
    expected = bidirectional(x, fw, bw, states, merge=True, outputs_with_states=True)
    args = [fed_input(F32, x), *cell_args(fw), *cell_args(bw), *(fed_input(F32, s) for s in states),
            *(fed_input(F32, None, dims=(1,)),) * 9, constant_input(T.INT32, TANH),
            constant_input(T.FLOAT32, 0.0), constant_input(T.FLOAT32, 0.0), constant_input(T.BOOL, True),
            constant_input(T.BOOL, True), *(fed_input(F32, None, dims=(1,)),) * 8]
    results = run_everywhere(Op.BIDIRECTIONAL_SEQUENCE_LSTM, args, [(F32, e.shape, 0.0, 0) for e in expected])
    assert_same_everywhere(results, expected)


def test_on_device_a_request_breaking_the_cifg_rule_fails():
    cell = random_cell(3, 4, 4)
    x, h0, c0 = (rng.uniform(-1, 1, s).astype(np.float32) for s in ((2, 3), (2, 4), (2, 4)))
    args = [fed_input(F32, x), *cell_args(cell, omit_by_request=("ii",)), fed_input(F32, h0),
            fed_input(F32, c0), constant_input(T.INT32, TANH), constant_input(T.FLOAT32, 0.0),
            constant_input(T.FLOAT32, 0.0)]
    results = run_everywhere(Op.LSTM, args, [(F32, s, 0.0, 0) for s in ((2, 16), (2, 4), (2, 4), (2, 4))])
    statuses = {status for status, _ in results.values()}
    assert statuses and statuses <= {ErrorStatus.INVALID_ARGUMENT, ErrorStatus.GENERAL_FAILURE}


def test_examples_are_valid():
    for op in (Op.LSTM, Op.UNIDIRECTIONAL_SEQUENCE_LSTM, Op.BIDIRECTIONAL_SEQUENCE_LSTM):
        counts = {len(example.inputs) for example in definition(op).examples}
        assert counts == {len(s.inputs) for s in definition(op).signatures}
