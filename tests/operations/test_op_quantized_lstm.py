"""QUANTIZED_16BIT_LSTM and QUANTIZED_LSTM: gemmlowp's 16-bit tanh and logistic at known
points, one-unit steps by hand, one-field mutations of valid instances, omitted inputs at
validation and at run time, and runs on a device on every execution path."""
from __future__ import annotations

import math

import numpy as np
import pytest

from driver import SampleDriver
from driver.errors import ValidationError
from driver.hal.enums import ErrorStatus, OperandType as T, OperationType as Op
from driver.limits import SCRATCH_BYTES_PER_CHUNK
from driver.operations import _fixed_point as fp, quantized_lstm
from driver.operations.common import STORAGE_DTYPE
from hal_client.builder import make_request, out_like
from tests.driver.execution import Path, execute, prepare
from tests.driver.test_execution_memory import traced_peak
from tests.operations.helpers import OMITTED, const, context, definition, omitted, output, rejects, run, tensor
from tests.operations.on_device import (assert_same_everywhere, constant_input, fed_input,
                                        one_operation_model, run_everywhere)

Q8, S8, SYMM8, SYMM16, I32, F32 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM,
                                   T.TENSOR_QUANT16_SYMM, T.TENSOR_INT32, T.FLOAT32)


# --- gemmlowp's 16-bit fixed point -----------------------------------------------------------------

@pytest.mark.parametrize("integer_bits", range(7))
def test_tanh_and_logistic_at_zero_and_their_symmetries(integer_bits):
    assert fp.tanh_q16(0, integer_bits) == 0
    assert fp.logistic_q16(0, integer_bits) == 1 << 14           # one half
    a = np.arange(-32767, 32768, 97)
    np.testing.assert_array_equal(fp.tanh_q16(-a, integer_bits), -fp.tanh_q16(a, integer_bits))
    np.testing.assert_array_equal(fp.logistic_q16(-a, integer_bits), 32767 - fp.logistic_q16(a, integer_bits))


@pytest.mark.parametrize("integer_bits", range(7))
def test_tanh_and_logistic_follow_the_real_functions(integer_bits):
    a = np.arange(-32768, 32768)
    real = a / 2.0 ** (15 - integer_bits)
    # Within about 16 units of 2**-15.
    assert np.max(np.abs(fp.tanh_q16(a, integer_bits) / 32768 - np.tanh(real))) < 5e-4
    assert np.max(np.abs(fp.logistic_q16(a, integer_bits) / 32768 - 1 / (1 + np.exp(-real)))) < 5e-4


@pytest.mark.parametrize("function, integer_bits, raw, expected", [
    # gemmlowp's own results (its fixedpoint.h compiled), for 3 integer bits (raw / 4096).
    (fp.tanh_q16, 3, 4096, 24964), (fp.tanh_q16, 3, -2048, -15136), (fp.tanh_q16, 3, 32767, 32767),
    (fp.tanh_q16, 3, -32768, -32767), (fp.tanh_q16, 0, 16384, 15136), (fp.tanh_q16, 6, 512, 24964),
    (fp.logistic_q16, 3, 4096, 23952), (fp.logistic_q16, 3, -4096, 8815), (fp.logistic_q16, 3, 32767, 32756),
    (fp.logistic_q16, 3, -32768, 11),
])
def test_tanh_and_logistic_at_known_points(function, integer_bits, raw, expected):
    assert function(raw, integer_bits) == expected


def test_16_bit_doubling_high_multiplication():
    high_mul = fp.saturating_rounding_doubling_high_mul
    assert high_mul(-32768, -32768, 16) == 32767          # the one product past int16 saturates
    assert high_mul(16384, 16384, 16) == 8192             # 0.5 * 0.5
    assert high_mul(np.array([3, -3]), 1 << 14, 16).tolist() == [2, -1]    # halves towards +infinity


# --- QUANTIZED_16BIT_LSTM -------------------------------------------------------------------------

#: Weights of scale 1/32 give biases of scale 2**-12: a gate's sum is its 3-integer-bit value.
W_SCALE, W_ZERO, STATE_SCALE = 1 / 32, 128, 2.0 ** -11


def lstm16(x=((128,),), h=((128,),), c=((0,),), biases=(0, 0, 0, 0), weights=None, input_size=1,
           output_size=1, change=None):
    """A valid instance (1 batch, input_size and output_size 1 unless given): inputs,
    outputs; ``change`` replaces operands by name (x, w0-w7, b0-b3, c, h, c_out, h_out)."""
    weights = weights or [np.full((output_size, input_size if k < 4 else output_size), W_ZERO) for k in range(8)]
    inputs = {"x": const(Q8, x, scale=1 / 128, zero_point=128),
              **{f"w{k}": const(Q8, w, scale=W_SCALE, zero_point=W_ZERO) for k, w in enumerate(weights)},
              **{f"b{k}": const(I32, [b] * output_size, scale=W_SCALE / 128) for k, b in enumerate(biases)},
              "c": const(SYMM16, c, scale=STATE_SCALE), "h": const(Q8, h, scale=1 / 128, zero_point=128)}
    outputs = {"c_out": output(SYMM16, (), STATE_SCALE), "h_out": output(Q8, (), 1 / 128, 128)}
    for name, value in (change or {}).items():
        (inputs if name in inputs else outputs)[name] = value
    return list(inputs.values()), list(outputs.values())


def test_16bit_one_unit_step_by_hand():
    # Zero activations: each gate's value is its bias, in Q3.12.
    cell_state, out = run(Op.QUANTIZED_16BIT_LSTM, *lstm16(c=((2048,),), biases=(0, 0, 4096, 0)), [])
    # i = f = o = logistic(0) = 1/2, g = tanh(1); c = f * 1.0 + i * g, in Q4.11.
    g = fp.tanh_q16(4096, 3)
    c = fp.rounding_divide_by_power_of_two((16384 * int(g) + (1 << 14)) >> 15, 4) + 1024
    assert cell_state.tolist() == [[c]] and c == 1024 + 780               # 0.5 + tanh(1) / 2
    h = (16384 * int(fp.tanh_q16(2 * c, 3)) + (1 << 14)) >> 15             # o * tanh(c), c in Q3.12
    assert out.tolist() == [[128 + fp.rounding_divide_by_power_of_two(h, 8)]]
    assert out.tolist() == [[128 + round(128 * 0.5 * math.tanh(0.5 + math.tanh(1) / 2))]]


def test_16bit_sums_the_concatenations_as_the_reference_lays_them():
    # x (2 values) and h_prev (1) meet the columns of [W_h, W_x]: x[0] the recurrent weight.
    weights = [np.array([[W_ZERO, W_ZERO]])] * 4 + [np.array([[W_ZERO]])] * 4
    weights[2] = np.array([[W_ZERO, W_ZERO + 32]])       # input-to-cell: [0, 1]
    weights[6] = np.array([[W_ZERO + 32]])               # recurrent-to-cell: [1]
    x = ((128 + 64, 128),)                               # [0.5, 0]
    cell_state, _ = run(Op.QUANTIZED_16BIT_LSTM, *lstm16(x=x, weights=weights, input_size=2), [])
    # g = tanh(x[0] * W_h[0] + x[1] * W_x[0] + h[0] * W_x[1]) = tanh(0.5); c = i * g.
    g = fp.tanh_q16(2048, 3)
    assert cell_state.tolist() == [[fp.rounding_divide_by_power_of_two((16384 * int(g) + (1 << 14)) >> 15, 4)]]


def test_16bit_shapes():
    inputs, outputs = lstm16(x=np.full((3, 2), 128), h=np.full((3, 4), 128), c=np.zeros((3, 4)), input_size=2,
                             output_size=4)
    ctx = context(Op.QUANTIZED_16BIT_LSTM, inputs, outputs)
    assert definition(Op.QUANTIZED_16BIT_LSTM).infer_shapes(ctx, [o.value.shape for o in inputs]) == [(3, 4), (3, 4)]


def test_16bit_rejections():
    op = Op.QUANTIZED_16BIT_LSTM
    good_in, good_out = lstm16()
    definition(op).validate(context(op, good_in, good_out))
    rejects(op, good_in[:14], good_out, "expected 15 inputs, got 14")
    rejects(op, *lstm16(change=dict(x=const(S8, [[0]], scale=1 / 128))), r"input 0 \(input, operand 0\) has type")
    rejects(op, *lstm16(change=dict(x=const(Q8, [[[128]]], scale=1 / 128, zero_point=128))), "input 0 .* rank 3 > 2")
    rejects(op, *lstm16(change=dict(x=const(Q8, [[128]], scale=1 / 64, zero_point=128))), "input 0 .* scale 1/128")
    rejects(op, *lstm16(change=dict(h=const(Q8, [[128]], scale=1 / 128, zero_point=127))),
            r"input 14 \(previous output")
    rejects(op, *lstm16(change=dict(w4=const(Q8, [[128]], scale=W_SCALE, zero_point=127))),
            r"input 5 \(recurrent-to-input weights.*zero point of input 1")
    rejects(op, *lstm16(change=dict(b2=const(I32, [0], scale=W_SCALE / 100))),
            r"input 11 \(cell gate bias.* weights_scale / 128")
    rejects(op, *lstm16(change=dict(c=const(SYMM16, [[0]], scale=2.0 ** -12))), "input 13 .* scale 2\\*\\*-11")
    rejects(op, *lstm16(change=dict(c_out=output(SYMM16, (), 2.0 ** -12))), "output 0 .* expected those of input 13")
    rejects(op, *lstm16(change=dict(w2=const(Q8, [[128, 128]], scale=W_SCALE, zero_point=W_ZERO))),
            r"input 3 \(input-to-cell weights\) has inputSize 2 in dimension 1, expected 1")
    rejects(op, *lstm16(change=dict(h=const(Q8, [[128], [128]], scale=1 / 128, zero_point=128))),
            r"input 14 \(previous output\) has numBatches 2 in dimension 0, expected 1")


# --- QUANTIZED_LSTM -------------------------------------------------------------------------------

#: Scalars: cell clip, projection clip, 4 intermediate scales, hidden zero point and scale.
SCALARS = dict(cell_clip=0.0, projection_clip=0.0, intermediate=(2.0 ** -12,) * 4, hidden_zero_point=0,
               hidden_scale=2.0 ** -7)


def qlstm(units=1, input_size=1, output_size=1, batch=1, cifg=False, peephole=False, projection=False,
          layer_norm=False, cell_scale=2.0 ** -11, x=None, c=None, scalars=None, **change):
    """A valid instance: 32 inputs and 3 outputs; ``change`` replaces inputs by position
    (``i<k>``) or outputs (``o<k>``). Weights 0 of scale 1/128 (projection weights 1);
    x and h_prev of scale 1/128, zero unless given."""
    s = dict(SCALARS, **(scalars or {}))

    def zeros(*dims):
        return const(SYMM8, np.zeros(dims), scale=1 / 128)

    def maybe(present, operand_type):
        return (lambda info: info) if present else (lambda info: omitted(operand_type))
    inputs = [const(S8, np.zeros((batch, input_size)) if x is None else x, scale=1 / 128),
              *(maybe(k or not cifg, SYMM8)(zeros(units, input_size)) for k in range(4)),
              *(maybe(k or not cifg, SYMM8)(zeros(units, output_size)) for k in range(4)),
              *(maybe(peephole and (k or not cifg), SYMM16)(const(SYMM16, [4096] * units, scale=1.0))
                for k in range(3)),
              *(maybe(k or not cifg, I32)(const(I32, [0] * units)) for k in range(4)),
              maybe(projection, SYMM8)(const(SYMM8, np.full((output_size, units), 64), scale=1 / 64)),
              maybe(projection, I32)(const(I32, [0] * output_size)),
              const(S8, np.zeros((batch, output_size)), scale=1 / 128),
              const(SYMM16, np.zeros((batch, units)) if c is None else c, scale=cell_scale),
              *(maybe(layer_norm and (k or not cifg), SYMM16)(const(SYMM16, [16384] * units, scale=2.0 ** -14))
                for k in range(4)),
              const(F32, s["cell_clip"]), const(F32, s["projection_clip"]),
              *(const(F32, v) for v in s["intermediate"]),
              const(T.INT32, s["hidden_zero_point"]), const(F32, s["hidden_scale"])]
    outputs = [output(S8, (), 1 / 128), output(SYMM16, (), cell_scale), output(S8, (), 1 / 128)]
    for name, value in change.items():
        (inputs if name[0] == "i" else outputs)[int(name[1:])] = value
    return inputs, outputs


def expected_hidden(output_gate: int, cell_state: int, integer_bits: int, hidden_scale=2.0 ** -7) -> int:
    """o * tanh(c) (Q0.30) at the hidden scale, rounded as the reference's multiplier does."""
    significand, exponent = fp.quantize_multiplier(2.0 ** -30 / hidden_scale)
    return int(fp.multiply_by_quantized_multiplier(output_gate * int(fp.tanh_q16(cell_state, integer_bits)),
                                                   significand, exponent))


@pytest.mark.parametrize("cifg", [False, True])
def test_qlstm_one_unit_step_by_hand(cifg):
    # Zero input and output: every gate's sum is 0, so i = f = o = 1/2 (with CIFG i = 1 - f)
    # and g = 0; c = f * c_prev, c_prev = 1.0 of 4 integer bits; h = o * tanh(c) at 2**-7.
    out_state, cell_state, out = run(Op.QUANTIZED_LSTM, *qlstm(cifg=cifg, c=[[2048]]), [])
    assert cell_state.tolist() == [[1024]]                                # 0.5
    assert out_state.tolist() == out.tolist() == [[expected_hidden(16384, 1024, 4)]]
    assert out.tolist() == [[round(128 * 0.5 * math.tanh(0.5))]]


def test_qlstm_input_products_reach_the_gates():
    # x = 1/2 with input-to-cell weight 1/2: the cell gate's sum is 1/4 at its intermediate
    # scale 2**-12 (raw 1024), g = tanh(1/4); c = i * g = g / 2 (cell scale 2**-15).
    inputs, outputs = qlstm(x=[[64]], cell_scale=2.0 ** -15)
    inputs[3] = const(SYMM8, [[64]], scale=1 / 128)
    _, cell_state, _ = run(Op.QUANTIZED_LSTM, inputs, outputs, [])
    g = int(fp.tanh_q16(1024, 3))
    assert cell_state.tolist() == [[fp.rounding_divide_by_power_of_two(16384 * g, 15)]]


def test_qlstm_clips_and_projection():
    # c = f * c_prev = 0.5 * 1.0 is clipped to 0.25 (512 at 2**-11).
    _, cell_state, _ = run(Op.QUANTIZED_LSTM, *qlstm(c=[[2048]], scalars=dict(cell_clip=0.25)), [])
    assert cell_state.tolist() == [[512]]
    # A projection of two units onto one, each weight 1: out = 2 h at the previous output's
    # scale (1/128, as h's), clipped to 40 / 128 by the projection clip (scale 1/64: 20).
    h = expected_hidden(16384, 1024, 4)
    out_state, _, out = run(Op.QUANTIZED_LSTM, *qlstm(units=2, projection=True, c=[[2048, 2048]]), [])
    assert out.tolist() == [[2 * h]]
    clipped = run(Op.QUANTIZED_LSTM, *qlstm(units=2, projection=True, c=[[2048, 2048]],
                                            scalars=dict(projection_clip=20 / 64)), [])
    assert clipped[0].tolist() == clipped[2].tolist() == [[20]]


def test_qlstm_hidden_zero_point_is_read_as_an_int8():
    # 300 is 44 in its lowest byte: h = o * tanh(c) - 44, as the reference subtracts it.
    out_state, _, _ = run(Op.QUANTIZED_LSTM, *qlstm(c=[[2048]], scalars=dict(hidden_zero_point=300)), [])
    assert out_state.tolist() == [[expected_hidden(16384, 1024, 4) - 44]]


def test_qlstm_layer_normalization_of_equal_sums():
    # Two units with equal sums: variance 0, taken as the limit (1), so each normalized
    # value is 0 and a gate's value is its bias (here 0): the step of zero inputs again.
    _, cell_state, out = run(Op.QUANTIZED_LSTM, *qlstm(units=2, output_size=2, layer_norm=True,
                                                        c=[[2048, 2048]]), [])
    assert cell_state.tolist() == [[1024, 1024]]
    assert out.tolist() == [[expected_hidden(16384, 1024, 4)] * 2]


def test_qlstm_shapes():
    inputs, outputs = qlstm(units=3, input_size=2, output_size=5, batch=4, projection=True)
    ctx = context(Op.QUANTIZED_LSTM, inputs, outputs)
    shapes = [None if o.value is None else o.value.shape for o in inputs]
    assert definition(Op.QUANTIZED_LSTM).infer_shapes(ctx, shapes) == [(4, 5), (4, 3), (4, 5)]


def test_qlstm_rejections():
    op = Op.QUANTIZED_LSTM
    good_in, good_out = qlstm(peephole=True, projection=True, layer_norm=True)
    definition(op).validate(context(op, good_in, good_out))
    rejects(op, good_in[:31], good_out, "expected 32 inputs, got 31")
    rejects(op, good_in, good_out[:2], "expected 3 outputs, got 2")
    rejects(op, *qlstm(i2=const(Q8, [[0]], scale=1 / 128)), r"input 2 \(input-to-forget weights, operand 2\) has type")
    rejects(op, *qlstm(i0=const(S8, [0], scale=1 / 128)), r"input 0 \(input, operand 0\) has rank 1 < 2")
    rejects(op, *qlstm(i2=omitted(SYMM8)), "input 2 .* has no value")
    rejects(op, *qlstm(i5=omitted(SYMM8)), "inputs 1 and 5")
    rejects(op, *qlstm(peephole=True, i10=omitted(SYMM16)), "inputs 9 to 11")
    rejects(op, *qlstm(cifg=True, i12=const(I32, [0])), "input 12")
    rejects(op, *qlstm(layer_norm=True, i22=omitted(SYMM16)), "inputs 20 to 23")
    rejects(op, *qlstm(layer_norm=True, i20=omitted(SYMM16)), "inputs 20 to 23")
    rejects(op, *qlstm(cifg=True, layer_norm=True, i20=const(SYMM16, [1], scale=1.0)), "inputs 20 to 23")
    rejects(op, *qlstm(cell_scale=2.0 ** -8), "input 19 .* 2\\*\\*-15 to 2\\*\\*-9")
    rejects(op, *qlstm(cell_scale=0.0003), "input 19 .* 2\\*\\*-15 to 2\\*\\*-9")
    rejects(op, *qlstm(scalars=dict(intermediate=(2.0 ** -12, 0.0, 2.0 ** -12, 2.0 ** -12))), "not finite")
    for hidden_scale in (0.0, -1.0, float("nan")):
        rejects(op, *qlstm(scalars=dict(hidden_scale=hidden_scale)), "input 31 .* must be positive")
    rejects(op, *qlstm(o1=output(SYMM16, (), 2.0 ** -12)), "output 1 .* expected those of input 19")
    rejects(op, *qlstm(o2=output(S8, (), 1 / 128, 3)), "output 2 .* expected those of input 18")
    rejects(op, *qlstm(units=2, output_size=3), "without projection weights, outputSize 3 must equal numUnits 2")
    rejects(op, *qlstm(i7=const(SYMM8, [[0, 0]], scale=1 / 128)),
            r"input 7 \(recurrent-to-cell weights\) has outputSize 2 in dimension 1, expected 1")


def test_qlstm_checks_run_time_scalars_and_omissions():
    op = Op.QUANTIZED_LSTM
    inputs, outputs = qlstm()
    inputs[27] = tensor(F32)                    # the forget gate's intermediate scale, fed
    assert run(op, inputs, outputs, [2.0 ** -12])[1].tolist() == [[0]]
    with pytest.raises(ValidationError, match="not finite"):
        run(op, inputs, outputs, [0.0])
    # Input-to-input weights the request omits while the recurrent-to-input ones are given.
    inputs, outputs = qlstm()
    inputs[1] = tensor(SYMM8, [1, 1], scale=1 / 128)
    with pytest.raises(ValidationError, match="inputs 1 and 5"):
        run(op, inputs, outputs, [OMITTED])


def test_qlstm_zero_sizes():
    assert [r.shape for r in run(Op.QUANTIZED_LSTM, *qlstm(units=2, output_size=2, batch=0, layer_norm=True,
                                                           peephole=True), [])] == [(0, 2)] * 3
    assert [r.shape for r in run(Op.QUANTIZED_LSTM, *qlstm(units=0, output_size=0), [])] == [(1, 0)] * 3
    with pytest.raises(ValidationError, match="no layer normalization over 0 units"):
        run(Op.QUANTIZED_LSTM, *qlstm(units=0, output_size=0, layer_norm=True), [])


# --- on a device ----------------------------------------------------------------------------------

def test_on_device_every_path():
    args, outputs = lstm16_on_device(2, 2, 3, seed=5)
    direct = run(Op.QUANTIZED_16BIT_LSTM, [const(a.type, a.constant if a.constant is not None else a.value,
                                                 scale=a.scale, zero_point=a.zero_point) for a in args],
                 lstm16()[1], [])
    assert_same_everywhere(run_everywhere(Op.QUANTIZED_16BIT_LSTM, args, outputs), direct)


def test_qlstm_on_device_every_path_with_omitted_inputs():
    # CIFG, no peephole, projection or layer normalization: the optional inputs are
    # operands the request gives no value (as the conformance tests do).
    inputs, outputs = qlstm(cifg=True, c=[[2048]])
    scales = {SYMM8: 1 / 128, SYMM16: 1.0}
    args = [fed_input(o.type, None, scales.get(o.type, 0.0), dims=(1, 1) if o.type == SYMM8 else (1,))
            if o.is_omitted else constant_input(o.type, o.value, o.scale, o.zeroPoint) for o in inputs]
    args[0] = fed_input(S8, np.zeros((1, 1), np.int8), 1 / 128)
    h = expected_hidden(16384, 1024, 4)
    results = run_everywhere(Op.QUANTIZED_LSTM, args, [(S8, (1, 1), 1 / 128, 0), (SYMM16, (1, 1), 2.0 ** -11, 0),
                                                       (S8, (1, 1), 1 / 128, 0)])
    assert_same_everywhere(results, [np.array([[h]], np.int8), np.array([[1024]], np.int16),
                                     np.array([[h]], np.int8)])


# --- cost ---------------------------------------------------------------------------------------

def lstm16_on_device(batches: int, input_size: int, output_size: int, seed: int = 0):
    """QUANTIZED_16BIT_LSTM of these sizes, random constant weights and biases, the input and
    the states fed: (args, outputs) for one_operation_model."""
    rng = np.random.default_rng(seed)

    def values(dtype, shape, low, high):
        return rng.integers(low, high, shape, endpoint=True).astype(dtype)

    args = [fed_input(Q8, values(np.uint8, (batches, input_size), 0, 255), 1 / 128, 128),
            *(constant_input(Q8, values(np.uint8, (output_size, input_size if k < 4 else output_size), 0, 255),
                             W_SCALE, W_ZERO) for k in range(8)),
            *(constant_input(I32, values(np.int32, output_size, -5000, 5000), W_SCALE / 128) for _ in range(4)),
            fed_input(SYMM16, values(np.int16, (batches, output_size), -4096, 4096), STATE_SCALE),
            fed_input(Q8, values(np.uint8, (batches, output_size), 0, 255), 1 / 128, 128)]
    return args, [(SYMM16, (batches, output_size), STATE_SCALE, 0), (Q8, (batches, output_size), 1 / 128, 128)]


def test_16bit_gates_are_held_to_the_cost_bound_together():
    """2,048 rows by 1,024 units over 1,024 inputs: each gate's product (2**32 multiply-adds)
    is within MAX_PRODUCT_MULTIPLY_ADDS, the four gates' (2**34) are not. Refused ahead, as
    the shapes are known (the execution took seconds)."""
    model, _ = one_operation_model(Op.QUANTIZED_16BIT_LSTM, *lstm16_on_device(2048, 1024, 1024))
    assert SampleDriver().getSupportedOperations_1_3(model) == (ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT, [])


# --- scratch --------------------------------------------------------------------------------------

def qlstm_on_device(batch: int, input_size: int, units: int, seed: int = 0):
    """QUANTIZED_LSTM of these sizes (output_size = units), every optional input given and
    random (as quantized_lstm's examples), the input and the states fed: (args, outputs)."""
    rng = np.random.default_rng(seed)

    def values(operand_type, shape):
        high = {S8: 127, SYMM8: 127, SYMM16: 32767, I32: 400}[operand_type]
        return rng.integers(-high, high, shape, endpoint=True).astype(STORAGE_DTYPE[operand_type])

    def weights(operand_type, shape, scale):
        return constant_input(operand_type, values(operand_type, shape), scale)

    state_scale, output = 2.0 ** -11, (S8, (batch, units), 1 / 128, -2)
    args = [fed_input(S8, values(S8, (batch, input_size)), 1 / 128, 5),
            *(weights(SYMM8, (units, input_size), 0.0078) for _ in range(4)),
            *(weights(SYMM8, (units, units), 0.0078) for _ in range(4)),
            *(weights(SYMM16, units, 2.0 ** -12) for _ in range(3)),
            *(weights(I32, units, 0.0) for _ in range(4)),
            weights(SYMM8, (units, units), 0.004), weights(I32, units, 0.0),
            fed_input(S8, values(S8, (batch, units)), 1 / 128, -2),
            fed_input(SYMM16, values(SYMM16, (batch, units)), state_scale),
            *(weights(SYMM16, units, 2.0 ** -15) for _ in range(4)),
            *(constant_input(F32, v) for v in (0.5, 0.3, 0.007, 0.007, 0.007, 0.007)),
            constant_input(T.INT32, 3), constant_input(F32, 0.007)]
    return args, [output, (SYMM16, (batch, units), state_scale, 0), output]


ON_DEVICE = {Op.QUANTIZED_16BIT_LSTM: lstm16_on_device, Op.QUANTIZED_LSTM: qlstm_on_device}


def executed_with_peak(operation: int, batch: int, input_size: int, units: int) -> int:
    """The most memory an execution of the operation of these sizes held (on the sync path)."""
    args, outputs = ON_DEVICE[operation](batch, input_size, units)
    model, fed = one_operation_model(operation, args, outputs)
    prepared = prepare(model)
    io = make_request(fed, [out_like(STORAGE_DTYPE[t], shape) for t, shape, *_ in outputs], state_input_dims=False)
    outcome, peak = traced_peak(lambda: execute(prepared, io.request, Path.SYNC))
    assert outcome.status == ErrorStatus.NONE, outcome
    return peak


@pytest.mark.parametrize("operation", sorted(ON_DEVICE), ids=lambda op: op.name)
def test_the_weights_are_widened_a_block_at_a_time(operation):
    """64 rows by 1,024 units over 4,096 inputs: 20 MiB of 8-bit weights, each matrix widened
    to 8 bytes whole (the 16-bit LSTM held 53 MiB at once; QUANTIZED_LSTM, which kept its
    weights widened, 295 MiB). Now a few chunks' worth (13 and 15 MiB): a block of the
    weights, a chunk of rows and the temporaries of its fixed-point arithmetic. (A small
    execution first, for what a first execution allocates whatever its operation.)"""
    executed_with_peak(operation, 1, 1, 1)
    assert executed_with_peak(operation, 64, 4096, 1024) < 6 * SCRATCH_BYTES_PER_CHUNK


def test_chunks_of_rows_and_blocks_of_columns_compute_what_the_whole_does(monkeypatch):
    """The same results one row and one column at a time as all at once."""
    cases = {Op.QUANTIZED_16BIT_LSTM: lstm16_on_device(5, 3, 4, seed=1), Op.QUANTIZED_LSTM: qlstm_on_device(5, 3, 4)}
    whole = {operation: run_everywhere(operation, *case) for operation, case in cases.items()}
    monkeypatch.setattr(quantized_lstm, "SCRATCH_BYTES_PER_CHUNK", 8)
    for operation, case in cases.items():
        expected = whole[operation]["sync"][1]
        assert_same_everywhere(run_everywhere(operation, *case), expected)
