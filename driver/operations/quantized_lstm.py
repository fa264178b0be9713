"""QUANTIZED_16BIT_LSTM and QUANTIZED_LSTM: one time step of an LSTM cell in integer
arithmetic, the reference's bit for bit.

Each gate of the cell (input i, forget f, cell g, output o) sums a product with the input x
and one with the previous output h_prev, then applies logistic (tanh for g):

    i = logistic(W_xi x + W_hi h_prev + b_i),  f, g, o alike
    c = f * c_prev + i * g                     h = o * tanh(c)

QUANTIZED_16BIT_LSTM (HAL 1.2) fixes its quantization: x and h in 8 bits of scale 1/128 and
zero point 128, the eight weights sharing one quantization, int32 biases of scale
weights_scale / 128, the cell state in 16 bits of scale 2**-11 (4 integer bits). Each
gate's sum is rescaled to 16-bit fixed point with 3 integer bits (scale 2**-12); the rest
runs in gemmlowp's 16-bit fixed point (_fixed_point.tanh_q16 and logistic_q16), h ending
as its top 8 bits, rounded. The reference sums one product of the concatenations
[x, h_prev] and [W_hg, W_xg] (the recurrent weights' columns first): where input_size and
output_size differ, elements of x meet columns of W_hg and elements of h_prev columns of
W_xg. Its results, which the conformance tests hold, are kept.

QUANTIZED_LSTM (HAL 1.3) is TFLite's integer LSTM, as the reference's QLSTM kernel runs
it: signed 8-bit x and h, symmetric 8-bit weights. A gate's two products are rescaled to
its intermediate scale (inputs 26-29) and each added saturating to int16; then come its
peephole term (the cell state times the cell-to-gate weights: the previous cell state for
the input and forget gates, the new one for the output gate), its layer normalization
(which adds the gate's bias), and the activation of 3 integer bits into Q0.15. The cell
state's scale is a power of two 2**s, s from -15 to -9; c is clipped by the cell clip, h
is rescaled to the hidden state's scale and zero point (inputs 30-31) and, with projection
weights, projected to output_size at the previous output's quantization and clipped by
the projection clip. Omitted input-to-input and recurrent-to-input weights select CIFG
(i = 1 - f). The reference's kernel is followed where TFLite's differs: without layer
normalization the gate biases go unused, and the hidden state's zero point is subtracted
from h (and added back in the projection). Where that kernel reads what no step has
written (the input and forget gates' peepholes read the cell state output before it is
computed) or nothing (a projection without bias), TFLite's meaning is kept: the previous
cell state, a zero bias; without projection output_size must equal num_units.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Iterator, Optional, Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from ..limits import MAX_PRODUCT_MULTIPLY_ADDS, SCRATCH_BYTES_PER_CHUNK, check_cost, checkpoint
from ._fixed_point import (INT16_MAX, inv_sqrt_quantized_multiplier, logistic_q16, mul_q16,
                           multiply_by_quantized_multiplier, quantize_multiplier,
                           rounding_divide_by_power_of_two, saturate_int16, tanh_q16, wrap_int16,
                           wrap_int32)
from .common import bind_size, check_same_quantization, declared_shape, round_half_away
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Example, ExampleOperand, Signature, scalar, tensor

Q8, S8, SYMM8, SYMM16, I32, F32 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED,
                                   T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT16_SYMM, T.TENSOR_INT32,
                                   T.FLOAT32)
GATE_NAMES = ("input", "forget", "cell", "output")
INPUT_GATE, FORGET_GATE, CELL_GATE, OUTPUT_GATE = range(4)
#: Gate pre-activations are 16-bit fixed point with 3 integer bits.
GATE_INTEGER_BITS = 3


# --- shared ------------------------------------------------------------------------------------

def checked_log2(x: float) -> Optional[int]:
    """log2(x) rounded, when x is a power of two within the reference's tolerance (its
    CheckedLog2, in single precision), else None."""
    with np.errstate(all="ignore"):
        log2 = np.log(np.float32(x)) * (np.float32(1) / np.log(np.float32(2)))
        rounded = round_half_away(log2)
    return int(rounded) if abs(log2 - rounded) < 1e-3 else None


def _sizes(ctx: OperationContext, shapes: Sequence[Shape], dims_of, names: Sequence[str]) -> dict:
    """The sizes named in ``dims_of`` ((input, names of its dimensions) pairs), each agreed
    by every known shape that has it (absent: unknown)."""
    sizes: dict[str, int] = {}
    for i, dims in dims_of:
        for axis, (name, size) in enumerate(zip(dims, shapes[i] or ())):
            bind_size(ctx, sizes, name, size, f"input {i} ({names[i]})", axis)
    return sizes


def _check_products(ctx: OperationContext, sizes: dict, batch: str,
                    weights: Sequence[tuple[str, str]]) -> None:
    """The cell's matrix products held to MAX_PRODUCT_MULTIPLY_ADDS all together: each row of
    the batch times each weights matrix, whose sizes ``weights`` names (0 while a size is
    unknown; an omitted matrix counts too, an upper bound). A resource limit, not a rule of
    validity: checked where shapes are inferred (by preparation, when they are known then,
    and at run time), never by validation."""
    per_row = sum(sizes.get(rows, 0) * sizes.get(columns, 0) for rows, columns in weights)
    check_cost(sizes.get(batch, 0) * per_row, MAX_PRODUCT_MULTIPLY_ADDS, "multiply-adds", ctx.name)


def _row_chunks(batches: int, row_elements: int) -> Iterator[slice]:
    """The rows of the batch a chunk at a time. A cell computes each row apart from the
    others, in values of 8 bytes: a chunk's rows of ``row_elements`` such values hold about
    SCRATCH_BYTES_PER_CHUNK (one row at least), whatever the batch."""
    rows = max(1, SCRATCH_BYTES_PER_CHUNK // (8 * max(1, row_elements)))
    return (slice(start, start + rows) for start in range(0, batches, rows))


def _matmul(x: np.ndarray, weights: np.ndarray, weights_zero_point: int = 0) -> np.ndarray:
    """x @ (weights - zero point)' as int32 sums wrap around: x [rows, k] (int64), weights
    [n, k] (8 bits). The products summed in double precision are exact (far below 2**53),
    and numpy multiplies doubles with BLAS, integers some hundred times slower. Both are
    widened to doubles a block of their k columns at a time, a block of either holding
    about SCRATCH_BYTES_PER_CHUNK (the weights are never widened whole), with a checkpoint
    between blocks."""
    rows, inner = x.shape
    units = len(weights)
    columns = max(1, SCRATCH_BYTES_PER_CHUNK // (8 * max(1, rows, units)))
    sums = np.zeros((rows, units))
    for start in range(0, inner, columns):
        checkpoint()
        block = slice(start, start + columns)
        shifted = weights[:, block].astype(np.float64)
        shifted -= weights_zero_point
        sums += x[:, block].astype(np.float64) @ shifted.T
    return wrap_int32(sums.astype(np.int64))


# --- QUANTIZED_16BIT_LSTM ----------------------------------------------------------------------

INPUT, PREVIOUS_CELL_STATE_16, PREVIOUS_OUTPUT_16 = 0, 13, 14
INPUT_WEIGHTS_16, RECURRENT_WEIGHTS_16, BIASES_16 = range(1, 5), range(5, 9), range(9, 13)
#: x and h: [-1, 127/128].
ACTIVATION_SCALE, ACTIVATION_ZERO_POINT = 1 / 128, 128
#: The cell state's integer bits (scale 2**-11), the only ones the reference supports.
STATE_INTEGER_BITS_16 = 4

SIGNATURES_16BIT = (Signature(
    inputs=(tensor((Q8,), (2, 2), "input"),
            *(tensor((Q8,), (2, 2), f"{source}-to-{gate} weights")
              for source in ("input", "recurrent") for gate in GATE_NAMES),
            *(tensor((I32,), (1, 1), f"{gate} gate bias") for gate in GATE_NAMES),
            tensor((SYMM16,), (2, 2), "previous cell state"),
            tensor((Q8,), (2, 2), "previous output")),
    outputs=(tensor((SYMM16,)), tensor((Q8,)))),)
NAMES_16BIT = tuple(o.name for o in SIGNATURES_16BIT[0].inputs)
DIMS_16BIT = ((INPUT, ("numBatches", "inputSize")),
              *((i, ("outputSize", "inputSize")) for i in INPUT_WEIGHTS_16),
              *((i, ("outputSize", "outputSize")) for i in RECURRENT_WEIGHTS_16),
              *((i, ("outputSize",)) for i in BIASES_16),
              (PREVIOUS_CELL_STATE_16, ("numBatches", "outputSize")),
              (PREVIOUS_OUTPUT_16, ("numBatches", "outputSize")))
WEIGHTS_16BIT = tuple(dims for i, dims in DIMS_16BIT
                      if i in (*INPUT_WEIGHTS_16, *RECURRENT_WEIGHTS_16))


def check_16bit(ctx: OperationContext) -> None:
    inputs = ctx.inputs
    for i in (INPUT, PREVIOUS_OUTPUT_16):
        check(np.float32(inputs[i].scale) == ACTIVATION_SCALE and inputs[i].zeroPoint == ACTIVATION_ZERO_POINT,
              "{}: input {} ({}, operand {}) must have scale 1/128 and zero point 128, has {} and {}",
              ctx.name, i, NAMES_16BIT[i], inputs[i].index, inputs[i].scale, inputs[i].zeroPoint)
    weights = inputs[INPUT_WEIGHTS_16[0]]
    check(weights.scale != 0, "{}: input 1 (input-to-input weights, operand {}) has scale 0",
          ctx.name, weights.index)
    for i in (*INPUT_WEIGHTS_16, *RECURRENT_WEIGHTS_16):
        check(inputs[i].scale == weights.scale and inputs[i].zeroPoint == weights.zeroPoint,
              "{}: input {} ({}, operand {}) must have the scale and zero point of input 1 ({} and {}), "
              "has {} and {}", ctx.name, i, NAMES_16BIT[i], inputs[i].index, weights.scale,
              weights.zeroPoint, inputs[i].scale, inputs[i].zeroPoint)
    bias_scale = float(np.float32(weights.scale)) / 128
    for i in BIASES_16:
        check(float(np.float32(inputs[i].scale)) == bias_scale and inputs[i].zeroPoint == 0,
              "{}: input {} ({}, operand {}) must have scale weights_scale / 128 = {} and zero point 0, "
              "has {} and {}", ctx.name, i, NAMES_16BIT[i], inputs[i].index, bias_scale,
              inputs[i].scale, inputs[i].zeroPoint)
    state = inputs[PREVIOUS_CELL_STATE_16]
    log2 = checked_log2(state.scale)
    check(log2 is not None and log2 + 15 == STATE_INTEGER_BITS_16 and state.zeroPoint == 0,
          "{}: input 13 (previous cell state, operand {}) must have scale 2**-11 and zero point 0, "
          "has {} and {}", ctx.name, state.index, state.scale, state.zeroPoint)
    check_same_quantization(ctx, ctx.outputs[0], state, "output 0 (cell state)", "input 13")
    check_same_quantization(ctx, ctx.outputs[1], inputs[PREVIOUS_OUTPUT_16], "output 1 (output)", "input 14")
    _accumulator_multiplier(ctx)
    _sizes(ctx, [declared_shape(o) for o in inputs], DIMS_16BIT, NAMES_16BIT)


def infer_16bit(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    sizes = _sizes(ctx, shapes, DIMS_16BIT, NAMES_16BIT)
    _check_products(ctx, sizes, "numBatches", WEIGHTS_16BIT)
    state = (sizes.get("numBatches", 0), sizes.get("outputSize", 0))
    return [state, state]


def _accumulator_multiplier(ctx: OperationContext) -> tuple[int, int]:
    """From a gate's sum (scale bias_scale) to 3 integer bits (scale 2**-12)."""
    return quantize_multiplier(4096 * float(np.float32(ctx.inputs[BIASES_16[0]].scale)), ctx.name)


def build_16bit(ctx: OperationContext) -> Kernel:
    weights_zero_point = ctx.inputs[INPUT_WEIGHTS_16[0]].zeroPoint
    multiplier = _accumulator_multiplier(ctx)

    def cell(x, previous_cell_state, previous_output, input_weights, recurrent_weights, biases):
        """The step of some rows of the batch: their cell state and output."""
        activations = np.concatenate([x, previous_output], axis=1).astype(np.int64) - ACTIVATION_ZERO_POINT
        # [x, h_prev] meets [W_hg, W_xg]: its first output_size columns meet W_hg.
        front, back = np.split(activations, [previous_output.shape[1]], axis=1)
        input_gate, forget_gate, cell_gate, output_gate = (
            saturate_int16(multiply_by_quantized_multiplier(
                wrap_int32(_matmul(front, w_h, weights_zero_point) + _matmul(back, w_x, weights_zero_point) + b),
                *multiplier))
            for w_x, w_h, b in zip(input_weights, recurrent_weights, biases))
        cell_state = previous_cell_state.astype(np.int64)
        # Q0.15 products; f * c keeps c's 4 integer bits, i * g is rescaled to them.
        cell_state = saturate_int16(
            rounding_divide_by_power_of_two(mul_q16(logistic_q16(input_gate, 3), tanh_q16(cell_gate, 3)),
                                            STATE_INTEGER_BITS_16)
            + mul_q16(logistic_q16(forget_gate, 3), cell_state))
        # tanh takes the state clamped to 3 integer bits.
        output = mul_q16(logistic_q16(output_gate, 3), tanh_q16(saturate_int16(cell_state << 1), 3))
        output = np.clip(rounding_divide_by_power_of_two(output, 8), -128, 127) + ACTIVATION_ZERO_POINT
        return cell_state.astype(np.int16), output.astype(np.uint8)

    def kernel(x, *args):
        previous_cell_state, previous_output = args[12], args[13]
        cell_state = np.empty(previous_cell_state.shape, np.int16)
        output = np.empty(previous_output.shape, np.uint8)
        # A row's activations, and its four gates.
        for rows in _row_chunks(len(x), x.shape[1] + 5 * previous_output.shape[1]):
            cell_state[rows], output[rows] = cell(x[rows], previous_cell_state[rows], previous_output[rows],
                                                  args[0:4], args[4:8], args[8:12])
        return cell_state, output
    return kernel


EXAMPLES_16BIT = (Example(
    inputs=(ExampleOperand(Q8, (1, 2), scale=ACTIVATION_SCALE, zero_point=ACTIVATION_ZERO_POINT),
            *(ExampleOperand(Q8, (2, 2), constant=[[100 + 9 * k, 150 - 7 * k], [90 + 5 * k, 130]],
                             scale=0.005, zero_point=120) for k in range(4)),
            *(ExampleOperand(Q8, (2, 2), scale=0.005, zero_point=120) for _ in range(4)),
            *(ExampleOperand(I32, (2,), constant=[3000 * k - 4000, 2000 - 1000 * k], scale=0.005 / 128)
              for k in range(4)),
            ExampleOperand(SYMM16, (1, 2), scale=2.0 ** -11),
            ExampleOperand(Q8, (1, 2), scale=ACTIVATION_SCALE, zero_point=ACTIVATION_ZERO_POINT)),
    outputs=((SYMM16, 2.0 ** -11, 0), (Q8, ACTIVATION_SCALE, ACTIVATION_ZERO_POINT))),)

register(OperationDef(OperationType.QUANTIZED_16BIT_LSTM, SIGNATURES_16BIT, infer_16bit, build_16bit,
                      check_16bit, EXAMPLES_16BIT))


# --- QUANTIZED_LSTM ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Gate:
    """The inputs of one gate of QUANTIZED_LSTM."""
    input_weights: int
    recurrent_weights: int
    peephole: Optional[int]         # the cell-to-gate weights (the cell gate has none)
    bias: int
    layer_norm: int
    intermediate_scale: int


GATES = (Gate(1, 5, 9, 12, 20, 26), Gate(2, 6, 10, 13, 21, 27), Gate(3, 7, None, 14, 22, 28),
         Gate(4, 8, 11, 15, 23, 29))
PROJECTION_WEIGHTS, PROJECTION_BIAS, PREVIOUS_OUTPUT, PREVIOUS_CELL_STATE = 16, 17, 18, 19
CELL_CLIP, PROJECTION_CLIP, HIDDEN_ZERO_POINT, HIDDEN_SCALE = 24, 25, 30, 31
#: The scalar inputs, which a model may feed at run time.
SCALARS = (CELL_CLIP, PROJECTION_CLIP, *(g.intermediate_scale for g in GATES), HIDDEN_ZERO_POINT,
           HIDDEN_SCALE)
#: The cell state's scale is 2**s for s in this range: the reference requires s <= -9,
#: and its tanh of the cell state takes s + 15 integer bits, from 0 to 6.
CELL_SHIFTS = range(-15, -8)


SIGNATURES = (Signature(
    inputs=(tensor((S8,), (2, 2), "input"),
            # The input gate's inputs are omitted with CIFG.
            *(tensor((SYMM8,), (2, 2), f"input-to-{name} weights", optional=name == "input")
              for name in GATE_NAMES),
            *(tensor((SYMM8,), (2, 2), f"recurrent-to-{name} weights", optional=name == "input")
              for name in GATE_NAMES),
            *(tensor((SYMM16,), (1, 1), f"cell-to-{name} weights", optional=True)
              for name in ("input", "forget", "output")),
            *(tensor((I32,), (1, 1), f"{name} gate bias", optional=name == "input") for name in GATE_NAMES),
            tensor((SYMM8,), (2, 2), "projection weights", optional=True),
            tensor((I32,), (1, 1), "projection bias", optional=True),
            tensor((S8,), (2, 2), "previous output"),
            tensor((SYMM16,), (2, 2), "previous cell state"),
            *(tensor((SYMM16,), (1, 1), f"{name} layer normalization weights", optional=True)
              for name in GATE_NAMES),
            scalar(F32, name="cell clip"), scalar(F32, name="projection clip"),
            *(scalar(F32, name=f"{name} intermediate scale") for name in GATE_NAMES),
            scalar(T.INT32, name="hidden state zero point"), scalar(F32, name="hidden state scale")),
    outputs=(tensor((S8,)), tensor((SYMM16,)), tensor((S8,)))),)
NAMES = tuple(o.name for o in SIGNATURES[0].inputs)
DIMS = ((0, ("batchSize", "inputSize")),
        *((g.input_weights, ("numUnits", "inputSize")) for g in GATES),
        *((g.recurrent_weights, ("numUnits", "outputSize")) for g in GATES),
        *((g.peephole, ("numUnits",)) for g in GATES if g.peephole is not None),
        *((g.bias, ("numUnits",)) for g in GATES),
        (PROJECTION_WEIGHTS, ("outputSize", "numUnits")), (PROJECTION_BIAS, ("outputSize",)),
        (PREVIOUS_OUTPUT, ("batchSize", "outputSize")), (PREVIOUS_CELL_STATE, ("batchSize", "numUnits")),
        *((g.layer_norm, ("numUnits",)) for g in GATES))
WEIGHTS = tuple(dims for i, dims in DIMS
                if i in (*(g.input_weights for g in GATES), *(g.recurrent_weights for g in GATES),
                         PROJECTION_WEIGHTS))


def check_presence(ctx: OperationContext, present: Sequence[bool]) -> None:
    """The optional inputs the reference allows together (``present``: per input)."""
    def all_or_none(indexes) -> bool:
        return len({present[i] for i in indexes}) == 1

    cifg = not present[GATES[INPUT_GATE].input_weights]
    check(all_or_none((1, 5)), "{}: inputs 1 and 5 (input-to-input and recurrent-to-input weights) "
          "must be both given or both omitted", ctx.name)
    check(all_or_none((10, 11)) and (present[9] <= present[10] if cifg else all_or_none((9, 10))),
          "{}: inputs 9 to 11 (peephole weights) must be all given or all omitted (input 9 may be "
          "omitted with CIFG)", ctx.name)
    check(present[12] != cifg, "{}: input 12 (input gate bias) must be given exactly when inputs 1 "
          "and 5 are", ctx.name)
    check(all_or_none((21, 22, 23)) and present[20] == (present[21] and not cifg),
          "{}: inputs 20 to 23 (layer normalization weights) must be all given or all omitted "
          "(input 20 is omitted with CIFG)", ctx.name)


def check_output_size(ctx: OperationContext, num_units: int, output_size: int) -> None:
    check(num_units == output_size, "{}: without projection weights, outputSize {} must equal "
          "numUnits {}", ctx.name, output_size, num_units)


def check_qlstm(ctx: OperationContext) -> None:
    inputs = ctx.inputs
    present = tuple(not o.is_omitted for o in inputs)
    check_same_quantization(ctx, ctx.outputs[0], inputs[PREVIOUS_OUTPUT], "output 0 (output state)", "input 18")
    check_same_quantization(ctx, ctx.outputs[1], inputs[PREVIOUS_CELL_STATE], "output 1 (cell state)", "input 19")
    check_same_quantization(ctx, ctx.outputs[2], inputs[PREVIOUS_OUTPUT], "output 2 (output)", "input 18")
    scalars = tuple(ctx.scalar(i) for i in SCALARS)
    plan(ctx, present, scalars if None not in scalars else None)
    sizes = _sizes(ctx, [declared_shape(o) for o in inputs], DIMS, NAMES)
    if not present[PROJECTION_WEIGHTS] and sizes.get("numUnits") and sizes.get("outputSize"):
        check_output_size(ctx, sizes["numUnits"], sizes["outputSize"])


def infer_qlstm(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    sizes = _sizes(ctx, shapes, DIMS, NAMES)
    _check_products(ctx, sizes, "batchSize", WEIGHTS)
    batch, units, output_size = (sizes.get(name, 0) for name in ("batchSize", "numUnits", "outputSize"))
    return [(batch, output_size), (batch, units), (batch, output_size)]


Multiplier = tuple[int, int]
#: Significands and exponents, one per gate of a group (arrays of shape [gates, 1]).
Multipliers = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class GateGroup:
    """Gates computed together, as one array [batch, gate, unit]: the gates read the same
    cell state (the input, forget and cell gates the previous one, the output gate the
    new one). Their parameters are stacked per gate."""
    gates: tuple[int, ...]
    input_multipliers: Multipliers
    recurrent_multipliers: Multipliers
    peephole_multipliers: Optional[Multipliers]     # 0 for the cell gate, which has none
    #: significands, exponents and the variances used below 1 (None: no layer normalization)
    layer_norm: Optional[tuple[np.ndarray, np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Plan:
    """What QUANTIZED_LSTM computes from its quantization, scalars and omitted inputs."""
    before_cell: GateGroup          # the input gate (unless CIFG), the forget and cell gates
    output: GateGroup
    cell_shift: int
    cell_clip: int                  # 0: none
    hidden_multiplier: Multiplier
    hidden_zero_point: int
    projection_multiplier: Optional[Multiplier]
    projection_clip: int            # 0: none

    @property
    def cifg(self) -> bool:
        return INPUT_GATE not in self.before_cell.gates


def plan(ctx: OperationContext, present: Sequence[bool], scalars: Optional[Sequence]) -> Optional[Plan]:
    """The plan for the inputs ``present`` and the scalar inputs' values (None: only the
    checks that need no scalar). Scales are combined in single precision, as the reference
    does, except where it takes a power of two in double precision."""
    check_presence(ctx, present)
    inputs = ctx.inputs
    cell_state = inputs[PREVIOUS_CELL_STATE]
    cell_shift = checked_log2(cell_state.scale)
    check(cell_shift in CELL_SHIFTS, "{}: input 19 (previous cell state, operand {}) scale {} must be "
          "2**-15 to 2**-9", ctx.name, cell_state.index, cell_state.scale)
    if scalars is None:
        return None
    cell_clip, projection_clip, *intermediate_scales, hidden_zero_point, hidden_scale = scalars
    check(np.float32(hidden_scale) > 0, "{}: input {} (hidden state scale) {} must be positive",
          ctx.name, HIDDEN_SCALE, hidden_scale)
    x_scale, h_scale = np.float32(inputs[0].scale), np.float32(inputs[PREVIOUS_OUTPUT].scale)

    def multiplier(real) -> Multiplier:
        return quantize_multiplier(float(np.float32(real)), ctx.name)

    def stacked(pairs) -> Multipliers:
        significands, exponents = zip(*pairs)
        return np.array(significands, np.int64)[:, None], np.array(exponents, np.int64)[:, None]

    def group(gates: tuple[int, ...]) -> GateGroup:
        intermediate = [np.float32(intermediate_scales[k]) for k in gates]
        peepholes = [GATES[k].peephole for k in gates]
        layer_norms = [inputs[GATES[k].layer_norm].scale for k in gates]
        return GateGroup(
            gates,
            stacked(multiplier(np.float32(inputs[GATES[k].input_weights].scale) * x_scale / s)
                    for k, s in zip(gates, intermediate)),
            stacked(multiplier(np.float32(inputs[GATES[k].recurrent_weights].scale) * h_scale / s)
                    for k, s in zip(gates, intermediate)),
            stacked((0, 0) if i is None else
                    multiplier(2.0 ** cell_shift * float(np.float32(inputs[i].scale)) / float(s))
                    for i, s in zip(peepholes, intermediate)) if present[GATES[FORGET_GATE].peephole] else None,
            (*stacked(map(multiplier, layer_norms)), np.array([[_variance_limit(s)] for s in layer_norms]))
            if present[GATES[FORGET_GATE].layer_norm] else None)

    cifg = not present[GATES[INPUT_GATE].input_weights]
    with np.errstate(all="ignore"):
        before_cell = group((FORGET_GATE, CELL_GATE) if cifg else (INPUT_GATE, FORGET_GATE, CELL_GATE))
        output = group((OUTPUT_GATE,))
        hidden = multiplier(2.0 ** -15 / float(np.float32(hidden_scale)) * 2.0 ** -15)
        projection = (multiplier(np.float32(inputs[PROJECTION_WEIGHTS].scale) * np.float32(hidden_scale)
                                 / h_scale) if present[PROJECTION_WEIGHTS] else None)
        quantized_cell_clip = _quantized_clip(cell_clip, cell_state.scale, 32767)
        quantized_projection_clip = (_quantized_clip(projection_clip, inputs[PROJECTION_WEIGHTS].scale, 127)
                                     if present[PROJECTION_WEIGHTS] else 0)
    # The reference reads the int32 zero point as an int8: its lowest byte.
    return Plan(before_cell, output, cell_shift, quantized_cell_clip, hidden,
                (hidden_zero_point + 128) % 256 - 128, projection, quantized_projection_clip)


def _quantized_clip(clip: float, scale: float, limit: int) -> int:
    """A positive clip in a quantized domain, truncated (0: no clipping)."""
    if not clip > 0:
        return 0
    quotient = float(np.float32(clip) / np.float32(scale))
    return int(min(max(quotient, -limit - 1), limit))


def _variance_limit(scale: float) -> int:
    """The variance layer normalization takes for one below 1: 10000 * scale truncated,
    at most 1."""
    product = float(np.float32(10000) * np.float32(scale))
    return 1 if not product < 1 else int(max(product, -2.0 ** 31))


def _accumulate(value, product: np.ndarray, multipliers: Multipliers) -> np.ndarray:
    """value + the product rescaled, saturated to int16 (int32 sums wrap around)."""
    return saturate_int16(wrap_int32(multiply_by_quantized_multiplier(product, *multipliers) + value))


#: Layer normalization's sums take 2**20 / n of each square (exact for n a power of two).
VARIANCE_GUARD = 1 << 20


def _divide_truncating(x: np.ndarray, n: int) -> np.ndarray:
    """x / n as C divides integers: the quotient truncated towards zero."""
    return np.where(x < 0, -((-x) // n), x // n)


def layer_normalization(gates: np.ndarray, weights: np.ndarray, bias: np.ndarray, significand,
                        exponent, variance_limit) -> np.ndarray:
    """Each row of ``gates`` (int16 values along the last axis) normalized to mean 0 and
    variance 1 (times 2**10), times the weights, plus the bias, rescaled by the weights'
    scale to 3 integer bits."""
    n = gates.shape[-1]
    mean = _divide_truncating(gates.sum(axis=-1, keepdims=True) * 1024, n)
    variance = _divide_truncating((gates * gates).sum(axis=-1, keepdims=True) * (VARIANCE_GUARD // n)
                                  - mean * mean, VARIANCE_GUARD)
    variance = wrap_int32(np.where(variance < 1, variance_limit, variance))
    normalized = multiply_by_quantized_multiplier(1024 * gates - mean, *inv_sqrt_quantized_multiplier(variance))
    scaled = normalized * weights + bias
    rounded = wrap_int32(_divide_truncating(scaled + np.where(scaled > 0, 512, -512), 1024))
    return saturate_int16(multiply_by_quantized_multiplier(rounded, significand, exponent + 12))


def build_qlstm(ctx: OperationContext) -> Kernel:
    inputs = ctx.inputs
    x_zero_point, h_zero_point = inputs[0].zeroPoint, inputs[PREVIOUS_OUTPUT].zeroPoint
    static_scalars = tuple(ctx.scalar(i) for i in SCALARS)
    # Keyed by what may change between runs: omitted inputs and run-time scalars.
    plan_for = functools.lru_cache(maxsize=16)(functools.partial(plan, ctx))
    #: The stacks of constant inputs, made once.
    constant_stacks: dict[tuple[str, tuple[int, ...]], np.ndarray] = {}

    def kernel(*args):
        scalars = (static_scalars if None not in static_scalars else
                   tuple(args[i].item() if s is None else s for i, s in zip(SCALARS, static_scalars)))
        p = plan_for(tuple(a is not None for a in args), scalars)
        num_units, output_size = args[GATES[OUTPUT_GATE].recurrent_weights].shape
        projection_weights = args[PROJECTION_WEIGHTS]
        if projection_weights is None:
            check_output_size(ctx, num_units, output_size)
        check(num_units or p.output.layer_norm is None, "{}: no layer normalization over 0 units", ctx.name)
        zeros = np.zeros(num_units, np.int16)

        def stacked(position: str, gates: tuple[int, ...]) -> np.ndarray:
            """The vectors at ``position`` of the gates, stacked [gate, unit] (zeros for none)."""
            key = (position, gates)
            if key in constant_stacks:
                return constant_stacks[key]
            indexes = [getattr(GATES[k], position) for k in gates]
            stack = np.stack([zeros if i is None else args[i] for i in indexes]).astype(np.int64)
            if all(i is None or inputs[i].is_constant for i in indexes):
                constant_stacks[key] = stack
            return stack

        def products(x: np.ndarray, position: str, gates: tuple[int, ...]) -> np.ndarray:
            """x times the weights at ``position`` of each of the gates: [row, gate, unit]."""
            return np.stack([_matmul(x, args[getattr(GATES[k], position)]) for k in gates], axis=1)

        def pre_activations(group: GateGroup, x: np.ndarray, h: np.ndarray, cell_state: np.ndarray) -> np.ndarray:
            """The gates' int16 sums of their rescaled products, normalized: [row, gate, unit]."""
            value = _accumulate(0, products(x, "input_weights", group.gates), group.input_multipliers)
            value = _accumulate(value, products(h, "recurrent_weights", group.gates), group.recurrent_multipliers)
            if group.peephole_multipliers is not None:
                value = _accumulate(value, stacked("peephole", group.gates) * cell_state[:, None],
                                    group.peephole_multipliers)
            if group.layer_norm is not None:
                value = layer_normalization(value, stacked("layer_norm", group.gates),
                                            stacked("bias", group.gates), *group.layer_norm)
            return value

        def cell(x: np.ndarray, previous_output: np.ndarray, previous_cell_state: np.ndarray):
            """The step of some rows of the batch: their output and cell state."""
            x = x.astype(np.int64) - x_zero_point
            h = previous_output.astype(np.int64) - h_zero_point
            previous_cell_state = previous_cell_state.astype(np.int64)
            gates = dict(zip(p.before_cell.gates,
                             np.moveaxis(pre_activations(p.before_cell, x, h, previous_cell_state), 1, 0)))
            forget = logistic_q16(gates[FORGET_GATE], GATE_INTEGER_BITS)
            input_gate = INT16_MAX - forget if p.cifg else logistic_q16(gates[INPUT_GATE], GATE_INTEGER_BITS)
            # Q0.15 gates: f * c_prev keeps c's scale, i * g (Q0.30) is rescaled to it.
            cell_state = saturate_int16(
                wrap_int16(rounding_divide_by_power_of_two(forget * previous_cell_state, 15))
                + wrap_int16(rounding_divide_by_power_of_two(
                    input_gate * tanh_q16(gates[CELL_GATE], GATE_INTEGER_BITS), 30 + p.cell_shift)))
            if p.cell_clip > 0:
                cell_state = np.clip(cell_state, -p.cell_clip, p.cell_clip)
            output_gate = logistic_q16(pre_activations(p.output, x, h, cell_state)[:, 0], GATE_INTEGER_BITS)
            hidden = np.clip(wrap_int32(multiply_by_quantized_multiplier(
                output_gate * tanh_q16(cell_state, p.cell_shift + 15), *p.hidden_multiplier)
                - p.hidden_zero_point), -128, 127)
            if projection_weights is None:
                output = hidden
            else:
                bias = args[PROJECTION_BIAS]
                projected = wrap_int32(_matmul(hidden + p.hidden_zero_point, projection_weights)
                                       + (0 if bias is None else bias))
                output = np.clip(wrap_int32(multiply_by_quantized_multiplier(projected, *p.projection_multiplier)
                                            + h_zero_point), -128, 127)
                if p.projection_clip > 0:
                    output = np.clip(output, -p.projection_clip, p.projection_clip)
            return output.astype(np.int8), cell_state.astype(np.int16)

        x, previous_output, previous_cell_state = args[0], args[PREVIOUS_OUTPUT], args[PREVIOUS_CELL_STATE]
        batches = len(x)
        output = np.empty((batches, output_size), np.int8)
        cell_state = np.empty((batches, num_units), np.int16)
        # A row's input, previous output and cell state, and its four gates.
        for rows in _row_chunks(batches, x.shape[1] + output_size + 5 * num_units):
            output[rows], cell_state[rows] = cell(x[rows], previous_output[rows], previous_cell_state[rows])
        return output, cell_state, output.copy()
    return kernel


def _qlstm_example(batch: int, input_size: int, units: int, output_size: int, cell_scale: float,
                   scalars: Sequence) -> Example:
    """Every optional input given (the seeds' omitted operands have no scale, which the
    symmetric quantized types need); constant weights, states fed by the request."""
    rng = np.random.default_rng(units)

    def fed(operand_type, dims, scale=0.0, zero_point=0) -> ExampleOperand:
        return ExampleOperand(operand_type, dims, scale=scale, zero_point=zero_point)

    def weights(operand_type, dims, scale) -> ExampleOperand:
        high = 127 if operand_type == SYMM8 else 32767
        return ExampleOperand(operand_type, dims, scale=scale, constant=rng.integers(-high, high + 1, dims).tolist())

    output = (S8, 1 / 128, -2)
    return Example(
        inputs=(fed(S8, (batch, input_size), 1 / 128, 5),
                *(weights(SYMM8, (units, input_size), 0.0078) for _ in range(4)),
                *(weights(SYMM8, (units, output_size), 0.0078) for _ in range(4)),
                *(weights(SYMM16, (units,), 2.0 ** -12) for _ in range(3)),
                *(ExampleOperand(I32, (units,), constant=[300 - 100 * k, -200, 100 * k, 400][:units])
                  for k in range(4)),
                weights(SYMM8, (output_size, units), 0.004),
                ExampleOperand(I32, (output_size,), constant=[10, -20, 30, 40][:output_size]),
                fed(S8, (batch, output_size), *output[1:]),
                fed(SYMM16, (batch, units), cell_scale),
                *(weights(SYMM16, (units,), 2.0 ** -15) for _ in range(4)),
                *(ExampleOperand(t, constant=v) for t, v in zip((F32,) * 6 + (T.INT32, F32), scalars))),
        outputs=(output, (SYMM16, cell_scale, 0), output))


#: Clipped, with a cell state of 4 integer bits; unclipped, with one of none.
EXAMPLES = (_qlstm_example(2, 3, 4, 2, 2.0 ** -11, (0.5, 0.3, 0.007, 0.007, 0.007, 0.007, 3, 0.007)),
            _qlstm_example(1, 2, 3, 3, 2.0 ** -15, (0.0, 0.0, 0.02, 0.02, 0.02, 0.02, 0, 1 / 128)))

register(OperationDef(OperationType.QUANTIZED_LSTM, SIGNATURES, infer_qlstm, build_qlstm, check_qlstm, EXAMPLES))
