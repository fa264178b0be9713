"""LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM and BIDIRECTIONAL_SEQUENCE_LSTM: one float LSTM cell.

A cell turns an input x_t, its output state h_{t-1} and its cell state C_{t-1} into

    i_t = sigmoid(W_xi x_t + W_hi h_{t-1} + W_ci . C_{t-1} + b_i)   (1 - f_t under CIFG)
    f_t = sigmoid(W_xf x_t + W_hf h_{t-1} + W_cf . C_{t-1} + b_f)
    C_t = clip(f_t . C_{t-1} + i_t . g(W_xc x_t + W_hc h_{t-1} + b_c), cell_clip)
    o_t = sigmoid(W_xo x_t + W_ho h_{t-1} + W_co . C_t + b_o)
    h_t = clip(W_proj (o_t . g(C_t)) + b_proj, proj_clip)          (o_t . g(C_t) without projection)

where ``.`` multiplies element-wise, g is the activation parameter and a clip of 0 clips
nothing. The optional parts are omitted inputs: the input gate's weights and bias (CIFG, the
input gate coupled to the forget gate), the peephole weights W_c*, the projection, and (since
HAL 1.2) the layer normalization weights, with which each gate's pre-activation sum without
its bias is normalized to mean 0 and variance 1, scaled by the weights, then biased.

LSTM is one step on a [batch, input_size] input; its first output, the scratch buffer
[batch, num_units * 4] ([batch, num_units * 3] under CIFG), holds the step's gates as the
reference leaves them, one [batch, num_units] block after another: the input gate (not under
CIFG), g(C_t), the forget gate (1 - f_t under CIFG) and o_t . g(C_t). The sequence operations
run the cell over the first axis of a time-major [max_time, batch, input_size] input or the
second of a batch-major one. BIDIRECTIONAL_SEQUENCE_LSTM runs a forward and a backward cell
(the backward one from the last step to the first); its auxiliary input, when its weights are
given, feeds both cells as a second input (cross-linking), and without them it is the
backward cell's input instead of the input (parallel linking).

Float16 is computed in single precision over the whole sequence and rounded once, as the
reference does.
"""
from __future__ import annotations

import enum
import functools
import math
from dataclasses import dataclass
from typing import Callable, Iterator, Optional, Sequence

import numpy as np

from ..errors import check, fail
from ..hal.enums import OperandType as T, OperationType
from ..limits import (MAX_RECURRENT_MULTIPLY_ADDS, SCRATCH_BYTES_PER_CHUNK, check_cost,
                      check_time_steps, checkpoint)
from .common import bind_size, declared_shape, has_value
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Example, ExampleOperand, Operand, Range, Signature, same_as, scalar, tensor

F32, F16 = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16


class Activation(enum.IntEnum):
    """The values the HAL allows for the activation parameter g."""
    NONE = 0
    RELU = 1
    RELU6 = 3
    TANH = 4
    SIGMOID = 6


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


_ACTIVATIONS: dict[int, Callable[[np.ndarray], np.ndarray]] = {
    Activation.NONE: lambda x: x, Activation.RELU: lambda x: np.maximum(x, 0),
    Activation.RELU6: lambda x: np.clip(x, 0, 6), Activation.TANH: np.tanh,
    Activation.SIGMOID: _sigmoid}

#: Gates in the HAL's order; under CIFG the input gate has no weights of its own.
INPUT_GATE, FORGET_GATE, CELL_GATE, OUTPUT_GATE = range(4)
GATES = ("input", "forget", "cell", "output")
#: Offsets of a cell's 17 weights and biases from its first (the HAL's order).
INPUT_TO, RECURRENT_TO, CELL_TO_INPUT, CELL_TO_FORGET, CELL_TO_OUTPUT = 0, 4, 8, 9, 10
BIAS, PROJECTION_WEIGHTS, PROJECTION_BIAS = 11, 15, 16
_BY_INPUT, _BY_OUTPUT, _UNITS = ("num_units", "input_size"), ("num_units", "output_size"), ("num_units",)
#: The 17: name, the sizes their dimensions have (see _sizes), whether they are optional.
_WEIGHTS = (*((f"input-to-{gate} weights", _BY_INPUT, gate == "input") for gate in GATES),
            *((f"recurrent-to-{gate} weights", _BY_OUTPUT, gate == "input") for gate in GATES),
            *((f"cell-to-{gate} weights", _UNITS, True) for gate in ("input", "forget", "output")),
            *((f"{gate} gate bias" if gate != "cell" else "cell bias", _UNITS, gate == "input")
              for gate in GATES),
            ("projection weights", ("output_size", "num_units"), True),
            ("projection bias", ("output_size",), True))


@dataclass(frozen=True)
class Cell:
    """Where one cell's operands lie among its operation's inputs: its 17 weights and biases
    from ``weights`` on, its output and cell state inputs from ``states`` on, and the first
    of its 4 layer normalization and 4 auxiliary input weights (None: the operation has none)."""
    prefix: str                     # "" or "forward " / "backward ", for sizes and names
    weights: int
    states: int
    layer_norm: Optional[int] = None
    aux_weights: Optional[int] = None

    def size(self, name: str) -> str:
        return self.prefix + name


@dataclass(frozen=True)
class Layout:
    """An operation's cells and scalar parameters, by input position."""
    cells: tuple[Cell, ...]
    activation: int
    time_major: Optional[int] = None      # None: one step on a [batch, input_size] input
    merge_outputs: Optional[int] = None
    aux_input: Optional[int] = None

    @property
    def cell_clip(self) -> int:
        return self.activation + 1

    @property
    def projection_clip(self) -> int:
        return self.activation + 2


# --- signatures -----------------------------------------------------------------------------

ACTIVATION = scalar(T.INT32, frozenset(Activation), "activation")
TIME_MAJOR = scalar(T.BOOL, name="time_major")


#: Per scalar type of the clipping thresholds (that of the tensors' elements): cell_clip
#: and proj_clip, where 0 clips nothing.
_CLIPS = {clip_type: (scalar(clip_type, Range(0), "cell_clip"), scalar(clip_type, Range(0), "proj_clip"))
          for clip_type in (T.FLOAT32, T.FLOAT16)}


def _input(name: str, rank: int, optional: bool = False) -> Operand:
    """An input of the input's type. The rank of an optional one is checked with its sizes
    (see _fit), once it is known to be present."""
    return Operand(same_as=0, rank=None if optional else (rank, rank), name=name, optional=optional)


def _cell_operands(prefix: str = "") -> list[Operand]:
    return [_input(prefix + name, len(dims), optional) for name, dims, optional in _WEIGHTS]


def _layer_norm(prefix: str = "") -> list[Operand]:
    return [_input(f"{prefix}{gate} layer norm weights", 1, True) for gate in GATES]


def _aux_weights(prefix: str) -> list[Operand]:
    return [_input(f"{prefix}aux input-to-{gate} weights", 2, True) for gate in GATES]


def _states(prefix: str = "") -> list[Operand]:
    return [_input(prefix + "output state in", 2), _input(prefix + "cell state in", 2)]


def _one_cell_inputs(tensor_type: T, clip_type: T, rank: int) -> tuple[Operand, ...]:
    """The first 23 inputs of LSTM and UNIDIRECTIONAL_SEQUENCE_LSTM."""
    return (tensor((tensor_type,), (rank, rank), "input"), *_cell_operands(), *_states(), ACTIVATION,
            *_CLIPS[clip_type])


def _bidirectional_inputs(tensor_type: T, clip_type: T) -> tuple[Operand, ...]:
    return (tensor((tensor_type,), (3, 3), "input"), *_cell_operands("forward "),
            *_cell_operands("backward "), *_states("forward "), *_states("backward "),
            _input("aux input", 3, True), *_aux_weights("forward "), *_aux_weights("backward "),
            ACTIVATION, *_CLIPS[clip_type], scalar(T.BOOL, name="merge_outputs"), TIME_MAJOR,
            *_layer_norm("forward "), *_layer_norm("backward "))


def _outputs(*names: str) -> tuple[Operand, ...]:
    return tuple(same_as(0, name=name) for name in names)


_FAMILIES = ((F32, T.FLOAT32), (F16, T.FLOAT16))
_STATES_OUT = ("output state out", "cell state out")
LSTM_SIGNATURES = tuple(
    Signature((*_one_cell_inputs(t, clip, 2), *(_layer_norm() if layer_norm else ())),
              _outputs("scratch buffer", "output state out", "cell state out", "output"))
    for layer_norm in (False, True) for t, clip in _FAMILIES)
UNIDIRECTIONAL_SIGNATURES = tuple(
    Signature((*_one_cell_inputs(t, clip, 3), TIME_MAJOR, *_layer_norm()), _outputs("output", *states))
    for states in ((), _STATES_OUT) for t, clip in _FAMILIES)
#: Outputs: the forward and backward outputs, or the two merged; then, optionally (HAL 1.3),
#: the final states of the forward and backward cells.
BIDIRECTIONAL_SIGNATURES = tuple(
    Signature(_bidirectional_inputs(t, clip), _outputs(*outputs, *states))
    for outputs in (("forward output", "backward output"), ("merged output",))
    for states in ((), tuple(f"{d} {s}" for d in ("forward", "backward") for s in _STATES_OUT))
    for t, clip in _FAMILIES)

_LAYOUTS = {
    (OperationType.LSTM, 23): Layout((Cell("", 1, 18),), activation=20),
    (OperationType.LSTM, 27): Layout((Cell("", 1, 18, layer_norm=23),), activation=20),
    (OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM, 28):
        Layout((Cell("", 1, 18, layer_norm=24),), activation=20, time_major=23),
    (OperationType.BIDIRECTIONAL_SEQUENCE_LSTM, 61):
        Layout((Cell("forward ", 1, 35, layer_norm=53, aux_weights=40),
                Cell("backward ", 18, 37, layer_norm=57, aux_weights=44)),
               activation=48, merge_outputs=51, time_major=52, aux_input=39),
}
_SIGNATURES = {(op, len(signature.inputs)): signature
               for op, signatures in ((OperationType.LSTM, LSTM_SIGNATURES),
                                      (OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM, UNIDIRECTIONAL_SIGNATURES),
                                      (OperationType.BIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SIGNATURES))
               for signature in signatures}
_NAMES = {key: tuple(o.name for o in signature.inputs) for key, signature in _SIGNATURES.items()}
_OPTIONAL = {key: frozenset(i for i, o in enumerate(signature.inputs) if o.optional)
             for key, signature in _SIGNATURES.items()}


# --- which optional inputs go together ------------------------------------------------------

#: Whether an input has a value: True, False, or None when only the request will tell.
Presence = Callable[[int], Optional[bool]]


def _declared_presence(ctx: OperationContext) -> Presence:
    return lambda i: has_value(ctx.inputs[i])


def _both(a: Optional[bool], b: Optional[bool]) -> Optional[bool]:
    return False if a is False or b is False else None if a is None or b is None else True


def _name(ctx: OperationContext, i: int) -> str:
    return f"input {i} ({_NAMES[ctx.type, len(ctx.inputs)][i]})"


def _together(ctx: OperationContext, has: Presence, positions: Sequence[int]) -> None:
    """The inputs at ``positions`` are all present or all omitted."""
    states = [has(i) for i in positions]
    if True in states and False in states:
        fail(f"{ctx.name}: {', '.join(_name(ctx, i) for i in positions)} must be all present "
             f"or all omitted")


def _present_when(ctx: OperationContext, has: Presence, i: int, condition: Optional[bool],
                  why: str) -> None:
    """Input ``i`` is present exactly when ``condition`` holds (None: not known yet)."""
    present = has(i)
    if condition is not None and present is not None and present != condition:
        fail(f"{ctx.name}: {_name(ctx, i)} must be {'present' if condition else 'omitted'} ({why})")


def _check_presence(ctx: OperationContext, layout: Layout, has: Presence) -> None:
    """The HAL's rules on the optional inputs of each cell (CIFG: no input gate weights nor
    bias; peephole, layer normalization and auxiliary weights all or none)."""
    for cell in layout.cells:
        w = cell.weights
        gated = has(w + INPUT_TO + INPUT_GATE)             # False under CIFG
        _together(ctx, has, (w + INPUT_TO + INPUT_GATE, w + RECURRENT_TO + INPUT_GATE))
        _present_when(ctx, has, w + BIAS + INPUT_GATE, gated,
                      "it is present exactly when the input-to-input weights are")
        _together(ctx, has, (w + CELL_TO_FORGET, w + CELL_TO_OUTPUT))
        _present_when(ctx, has, w + CELL_TO_INPUT, _both(has(w + CELL_TO_OUTPUT), gated),
                      "it is present exactly when the other peephole weights and the "
                      "input-to-input weights are")
        if has(w + PROJECTION_WEIGHTS) is False:
            _present_when(ctx, has, w + PROJECTION_BIAS, False, "without projection weights")
        for first in (cell.layer_norm, cell.aux_weights):
            if first is not None:
                _together(ctx, has, range(first + FORGET_GATE, first + 4))
                _present_when(ctx, has, first + INPUT_GATE, _both(has(first + OUTPUT_GATE), gated),
                              f"it is present exactly when {_name(ctx, first + OUTPUT_GATE)} "
                              f"and the input-to-input weights are")
    if layout.aux_input is not None:
        forward, backward = (cell.aux_weights + FORGET_GATE for cell in layout.cells)
        _together(ctx, has, (forward, backward))
        if has(forward):
            _present_when(ctx, has, layout.aux_input, True, "with auxiliary weights")


# --- shapes ---------------------------------------------------------------------------------

def _fit(ctx: OperationContext, sizes: dict, i: int, shape: Shape, dims: Sequence[Optional[str]],
         exact: bool, has: Presence) -> None:
    """Bind the named sizes of input ``i``'s dimensions, or check them against those bound
    before. Unless ``exact`` (at run time, in the kernel), a 0 is an unknown size. The shape
    of an optional input counts only once it is known to be present (the CTS declares
    weights that its requests omit as [0])."""
    if shape is None or has(i) is None and i in _OPTIONAL[ctx.type, len(ctx.inputs)]:
        return
    if len(shape) != len(dims):
        fail(f"{ctx.name}: {_name(ctx, i)} has rank {len(shape)}, expected {len(dims)}")
    for axis, (size, name) in enumerate(zip(shape, dims)):
        if name is not None:
            bind_size(ctx, sizes, name, size, _name(ctx, i), axis, exact)


@functools.cache
def _cell_dims(cell: Cell) -> tuple[tuple[int, tuple[str, ...]], ...]:
    """The sizes the dimensions of a cell's inputs have (but its input's), by position."""
    w = cell.weights
    # num_units and output_size from the output gate's weights first, as the reference.
    dims = [(w + INPUT_TO + OUTPUT_GATE, _BY_INPUT), (w + RECURRENT_TO + OUTPUT_GATE, _BY_OUTPUT),
            *((w + j, dims) for j, (_, dims, _) in enumerate(_WEIGHTS)),
            (cell.states, ("batch", "output_size")), (cell.states + 1, ("batch", "num_units"))]
    if cell.layer_norm is not None:
        dims += [(cell.layer_norm + g, ("num_units",)) for g in range(4)]
    if cell.aux_weights is not None:
        dims += [(cell.aux_weights + g, ("num_units", "aux_input_size")) for g in range(4)]
    return tuple((i, tuple(d if d in ("batch", "aux_input_size") else cell.size(d) for d in names))
                 for i, names in dims)


def _leading_dims(layout: Layout, time_major: Optional[bool]) -> tuple[Optional[str], ...]:
    """The sizes of an input's dimensions before input_size: [batch] for one step, else
    [max_time, batch] time-major or [batch, max_time] batch-major (None: not known)."""
    if layout.time_major is None:
        return ("batch",)
    if time_major is None:
        return (None, None)
    return ("max_time", "batch") if time_major else ("batch", "max_time")


def _sizes(ctx: OperationContext, layout: Layout, shapes: Sequence[Shape], has: Presence,
           exact: bool, time_major: Optional[bool]) -> dict[str, int]:
    """The sizes the inputs' shapes agree on: batch, max_time, and each cell's input_size,
    num_units and output_size (prefixed by its direction), aux_input_size."""
    sizes: dict[str, int] = {}
    sequence = _leading_dims(layout, time_major)
    aux_weights = None
    if layout.aux_input is not None:
        aux_weights = has(layout.cells[0].aux_weights + FORGET_GATE)
        aux_size = ("aux_input_size" if aux_weights else layout.cells[1].size("input_size")
                    if aux_weights is False else None)
        _fit(ctx, sizes, layout.aux_input, shapes[layout.aux_input], (*sequence, aux_size), exact, has)
    for k, cell in enumerate(layout.cells):
        w = cell.weights
        # Parallel linking: the auxiliary input is the backward cell's input.
        if k == 0 or aux_weights is not None and (aux_weights or has(layout.aux_input) is False):
            _fit(ctx, sizes, 0, shapes[0], (*sequence, cell.size("input_size")), exact, has)
        for i, dims in _cell_dims(cell):
            _fit(ctx, sizes, i, shapes[i], dims, exact, has)
        if has(w + PROJECTION_WEIGHTS) is False:     # the output is o_t . g(C_t) itself
            units, output_size = (sizes.get(cell.size(name)) for name in ("num_units", "output_size"))
            check(units is None or output_size is None or units == output_size,
                  "{}: {} has output_size {}, not num_units {}, without projection weights",
                  ctx.name, _name(ctx, w + RECURRENT_TO + OUTPUT_GATE), output_size, units)
    return sizes


def _sizes_within_limits(ctx: OperationContext, layout: Layout, shapes: Sequence[Shape],
                         has: Presence, exact: bool, time_major: Optional[bool]) -> dict[str, int]:
    """_sizes, with the sequence held to this driver's limit on time steps. The limit is a
    resource limit, not a rule of validity: it is checked where shapes are inferred and at
    run time, never by validation (a model over it is valid, and refused by preparation)."""
    sizes = _sizes(ctx, layout, shapes, has, exact, time_major)
    check_time_steps(sizes.get("max_time", 0), ctx.name)
    check_cost(_multiply_adds(layout, sizes), MAX_RECURRENT_MULTIPLY_ADDS, "multiply-adds", ctx.name)
    return sizes


def _multiply_adds(layout: Layout, sizes: dict[str, int]) -> int:
    """What the cells compute: at each step, each of the 4 gates' units reads the input, the
    auxiliary input and the output state, and the projection reads the units (an
    upper bound: CIFG has 3 gates, not every cell a projection). 0 while a size is unknown."""
    steps, batch = sizes.get("max_time", 1), sizes.get("batch", 0)
    total = 0
    for cell in layout.cells:
        units, output_size = sizes.get(cell.size("num_units"), 0), sizes.get(cell.size("output_size"), 0)
        reads = sizes.get(cell.size("input_size"), 0) + sizes.get("aux_input_size", 0) + output_size
        total += steps * batch * units * (4 * reads + output_size)
    return total


def _shape(sizes: dict, *names: Optional[str]) -> tuple[int, ...]:
    return tuple(sizes.get(name, 0) for name in names)


def infer_lstm(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    layout, has = _LAYOUTS[ctx.type, len(ctx.inputs)], _declared_presence(ctx)
    sizes = _sizes_within_limits(ctx, layout, shapes, has, False, None)
    gates = {True: 4, False: 3, None: 0}[has(layout.cells[0].weights)]
    state = _shape(sizes, "batch", "output_size")
    return [(sizes.get("batch", 0), sizes.get("num_units", 0) * gates), state,
            _shape(sizes, "batch", "num_units"), state]


def infer_unidirectional(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    layout = _LAYOUTS[ctx.type, len(ctx.inputs)]
    time_major = ctx.scalar(layout.time_major)
    sizes = _sizes_within_limits(ctx, layout, shapes, _declared_presence(ctx), False, time_major)
    states = [_shape(sizes, "batch", "output_size"), _shape(sizes, "batch", "num_units")]
    return [_shape(sizes, *_leading_dims(layout, time_major), "output_size"), *states][:len(ctx.outputs)]


def _merged(ctx: OperationContext) -> bool:
    """BIDIRECTIONAL_SEQUENCE_LSTM merges its outputs when it has one output, or five with
    the states."""
    return len(ctx.outputs) in (1, 5)


def infer_bidirectional(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    layout = _LAYOUTS[ctx.type, len(ctx.inputs)]
    time_major = ctx.scalar(layout.time_major)
    sizes = _sizes_within_limits(ctx, layout, shapes, _declared_presence(ctx), False, time_major)
    sequence = _shape(sizes, *_leading_dims(layout, time_major))
    forward, backward = (sizes.get(f"{d} output_size", 0) for d in ("forward", "backward"))
    outputs = ([(*sequence, forward + backward if forward and backward else 0)] if _merged(ctx)
               else [(*sequence, forward), (*sequence, backward)])
    if len(ctx.outputs) > 2:
        outputs += [_shape(sizes, "batch", f"{d} {size}") for d in ("forward", "backward")
                    for size in ("output_size", "num_units")]
    return outputs


# --- validation -----------------------------------------------------------------------------

def _check_merge_outputs(ctx: OperationContext, layout: Layout, value: bool) -> None:
    check(value == _merged(ctx), "{}: input {} (merge_outputs) is {} with {} outputs",
          ctx.name, layout.merge_outputs, value, len(ctx.outputs))


def check_lstm(ctx: OperationContext) -> None:
    layout, has = _LAYOUTS[ctx.type, len(ctx.inputs)], _declared_presence(ctx)
    _check_presence(ctx, layout, has)
    if layout.merge_outputs is not None and ctx.scalar(layout.merge_outputs) is not None:
        _check_merge_outputs(ctx, layout, ctx.scalar(layout.merge_outputs))
    time_major = None if layout.time_major is None else ctx.scalar(layout.time_major)
    _sizes(ctx, layout, [declared_shape(o) for o in ctx.inputs], has, False, time_major)


# --- the cell -------------------------------------------------------------------------------

@dataclass(frozen=True)
class CellWeights:
    """A cell's weights in single precision, laid out for the step: the gates' weights side
    by side (gate k in columns k*num_units onwards; no input gate under CIFG)."""
    input_weights: np.ndarray                  # [input_size, gates * num_units]
    recurrent_weights: np.ndarray              # [output_size, gates * num_units]
    bias: np.ndarray                           # [gates, num_units]
    aux_weights: Optional[np.ndarray]          # [aux_input_size, gates * num_units]
    peephole: Optional[np.ndarray]             # [gates - 2, num_units]: input (not CIFG), forget
    output_peephole: Optional[np.ndarray]      # [num_units]
    layer_norm: Optional[np.ndarray]           # [gates, num_units]
    projection: Optional[np.ndarray]           # [num_units, output_size]
    projection_bias: Optional[np.ndarray]      # [output_size]
    cifg: bool


def _f32(a: Optional[np.ndarray]) -> Optional[np.ndarray]:
    return None if a is None else a.astype(np.float32)


def _side_by_side(args: Sequence, first: int, gates: range) -> np.ndarray:
    return np.ascontiguousarray(np.concatenate([args[first + g] for g in gates]).astype(np.float32).T)


def cell_weights(cell: Cell, args: Sequence) -> CellWeights:
    w = cell.weights
    cifg = args[w + INPUT_TO + INPUT_GATE] is None
    gates = range(FORGET_GATE if cifg else INPUT_GATE, 4)
    peephole = args[w + CELL_TO_OUTPUT] is not None
    layer_norm = cell.layer_norm is not None and args[cell.layer_norm + OUTPUT_GATE] is not None
    aux = cell.aux_weights is not None and args[cell.aux_weights + OUTPUT_GATE] is not None
    projection = args[w + PROJECTION_WEIGHTS]
    return CellWeights(
        _side_by_side(args, w + INPUT_TO, gates), _side_by_side(args, w + RECURRENT_TO, gates),
        np.stack([args[w + BIAS + g] for g in gates]).astype(np.float32),
        _side_by_side(args, cell.aux_weights, gates) if aux else None,
        np.stack([args[w + CELL_TO_INPUT + g] for g in gates[:-2]]).astype(np.float32) if peephole else None,
        _f32(args[w + CELL_TO_OUTPUT]),
        np.stack([args[cell.layer_norm + g] for g in gates]).astype(np.float32) if layer_norm else None,
        None if projection is None else np.ascontiguousarray(projection.astype(np.float32).T),
        _f32(args[w + PROJECTION_BIAS]), cifg)


def _normalize(x: np.ndarray) -> np.ndarray:
    """Mean 0 and variance 1 along the last axis (the units of a gate)."""
    n = x.shape[-1]
    centered = x - x.sum(-1, keepdims=True) / n
    return centered / np.sqrt(np.square(centered).sum(-1, keepdims=True) / n + np.float32(1e-8))


@dataclass(frozen=True)
class CellParameters:
    activation: Callable[[np.ndarray], np.ndarray]
    cell_clip: float
    projection_clip: float


def _input_parts(w: CellWeights, x: np.ndarray, aux: Optional[np.ndarray], backward: bool
                 ) -> Iterator[tuple[int, np.ndarray]]:
    """(t, what step t's input adds to the gates), for each step in the order the cell runs
    them. That part does not depend on the states: it is computed for a chunk of steps at
    once, the chunk's scratch held to SCRATCH_BYTES_PER_CHUNK whatever the sequence's length."""
    steps, batch = x.shape[:2]
    chunk = max(1, SCRATCH_BYTES_PER_CHUNK // max(1, 4 * batch * w.input_weights.shape[1]))
    starts = range(0, steps, chunk)
    for start in reversed(starts) if backward else starts:
        stop = min(start + chunk, steps)
        from_input = x[start:stop] @ w.input_weights
        if aux is not None:
            from_input += aux[start:stop] @ w.aux_weights
        if w.layer_norm is None:
            from_input += w.bias.reshape(-1)
        for t in range(stop - 1, start - 1, -1) if backward else range(start, stop):
            yield t, from_input[t - start]


def run_cell(w: CellWeights, p: CellParameters, x: np.ndarray, aux: Optional[np.ndarray],
             h: np.ndarray, c: np.ndarray, backward: bool = False
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
    """The cell over a time-major sequence x [max_time, batch, input_size] (and aux, with the
    auxiliary weights) from states h and c: its outputs [max_time, batch, output_size], its
    final states, and the last step's gates in the scratch buffer's order."""
    steps, batch = x.shape[:2]
    gates, units = w.bias.shape
    outputs = np.empty((steps, batch, w.recurrent_weights.shape[0]), np.float32)
    scratch: list[np.ndarray] = []
    for t, from_input in _input_parts(w, x, aux, backward):
        checkpoint()
        z = (from_input + h @ w.recurrent_weights).reshape(batch, gates, units)
        if w.peephole is not None:
            z[:, :-2] += w.peephole * c[:, None]
        if w.layer_norm is not None:
            z[:, :-1] = _normalize(z[:, :-1]) * w.layer_norm[:-1] + w.bias[:-1]
        input_forget = _sigmoid(z[:, :-2])
        forget = input_forget[:, -1]
        input_gate = 1 - forget if w.cifg else input_forget[:, 0]
        c = forget * c + input_gate * p.activation(z[:, -2])
        if p.cell_clip > 0:
            c = np.clip(c, -p.cell_clip, p.cell_clip)
        o = z[:, -1] if w.output_peephole is None else z[:, -1] + w.output_peephole * c
        if w.layer_norm is not None:
            o = _normalize(o) * w.layer_norm[-1] + w.bias[-1]
        cell_output = p.activation(c)
        h = _sigmoid(o) * cell_output
        scratch = [cell_output, input_gate, h] if w.cifg else [input_gate, cell_output, forget, h]
        if w.projection is not None:
            h = h @ w.projection
            if w.projection_bias is not None:
                h += w.projection_bias
            if p.projection_clip > 0:
                h = np.clip(h, -p.projection_clip, p.projection_clip)
        outputs[t] = h
    return outputs, h, c, scratch


# --- kernels --------------------------------------------------------------------------------

def _weight_positions(cell: Cell) -> list[int]:
    return [*range(cell.weights, cell.weights + len(_WEIGHTS)),
            *(first + g for first in (cell.layer_norm, cell.aux_weights) if first is not None
              for g in range(4))]


@dataclass(frozen=True)
class Run:
    """What a kernel needs of one run, once its inputs are checked."""
    weights: list[CellWeights]
    parameters: CellParameters
    time_major: bool


#: Shapes of a run's inputs remembered as valid per operation.
_MAX_CHECKED = 16


def _preparer(ctx: OperationContext, layout: Layout) -> Callable[[Sequence], Run]:
    """Checks a run's inputs (the rules validation could not apply to values and omissions
    known only now, zero sizes) and gives each cell's weights, laid out once if constant."""
    cell_clip, projection_clip = _CLIPS[ctx.inputs[layout.cell_clip].type]
    constant = [all(ctx.inputs[i].is_constant or ctx.inputs[i].is_omitted for i in _weight_positions(cell))
                for cell in layout.cells]
    laid_out: dict[int, CellWeights] = {}
    checked: set[tuple] = set()           # the shapes (None: omitted) found valid, and time_major

    def prepare(args: Sequence) -> Run:
        activation = ctx.run_scalar(layout.activation, args, ACTIVATION)
        parameters = CellParameters(_ACTIVATIONS[activation],
                                    ctx.run_scalar(layout.cell_clip, args, cell_clip),
                                    ctx.run_scalar(layout.projection_clip, args, projection_clip))
        time_major = layout.time_major is None or bool(args[layout.time_major])
        if layout.merge_outputs is not None:
            _check_merge_outputs(ctx, layout, bool(args[layout.merge_outputs]))
        shapes = tuple(None if a is None else a.shape for a in args)
        if (shapes, time_major) not in checked:
            has = lambda i: args[i] is not None  # noqa: E731
            _check_presence(ctx, layout, has)
            _sizes_within_limits(ctx, layout, shapes, has, True,
                                 None if layout.time_major is None else time_major)
            if len(checked) >= _MAX_CHECKED:
                checked.clear()
            checked.add((shapes, time_major))
        weights = []
        for k, cell in enumerate(layout.cells):
            laid = laid_out.get(k) or cell_weights(cell, args)
            if constant[k]:
                laid_out[k] = laid
            weights.append(laid)
        return Run(weights, parameters, time_major)
    return prepare


def _states_of(cell: Cell, args: Sequence) -> tuple[np.ndarray, np.ndarray]:
    return args[cell.states].astype(np.float32), args[cell.states + 1].astype(np.float32)


def _time_major(x: Optional[np.ndarray], time_major: bool) -> Optional[np.ndarray]:
    """A [max_time, batch, ...] view of a sequence in single precision (the transposition
    swaps batch-major to time-major and back)."""
    if x is None:
        return None
    x = x.astype(np.float32, copy=False)
    return x if time_major else x.transpose(1, 0, 2)


def _results(dtype: np.dtype, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    return tuple(np.ascontiguousarray(a, dtype=dtype) for a in arrays)


def build_lstm(ctx: OperationContext) -> Kernel:
    layout = _LAYOUTS[ctx.type, len(ctx.inputs)]
    prepare, (cell,) = _preparer(ctx, layout), layout.cells

    def kernel(*args):
        run = prepare(args)
        x = args[0].astype(np.float32)[None]
        _, h, c, gates = run_cell(run.weights[0], run.parameters, x, None, *_states_of(cell, args))
        scratch = np.stack(gates).reshape(x.shape[1], len(gates) * c.shape[1])
        return _results(args[0].dtype, scratch, h, c, h.copy())
    return kernel


def build_unidirectional(ctx: OperationContext) -> Kernel:
    layout = _LAYOUTS[ctx.type, len(ctx.inputs)]
    prepare, (cell,) = _preparer(ctx, layout), layout.cells

    def kernel(*args):
        run = prepare(args)
        outputs, h, c, _ = run_cell(run.weights[0], run.parameters, _time_major(args[0], run.time_major),
                                    None, *_states_of(cell, args))
        return _results(args[0].dtype, _time_major(outputs, run.time_major), h, c)[:len(ctx.outputs)]
    return kernel


def build_bidirectional(ctx: OperationContext) -> Kernel:
    layout = _LAYOUTS[ctx.type, len(ctx.inputs)]
    prepare, (forward, backward) = _preparer(ctx, layout), layout.cells
    merged = _merged(ctx)

    def kernel(*args):
        run = prepare(args)
        fw_weights, bw_weights = run.weights
        x, aux = (_time_major(args[i], run.time_major) for i in (0, layout.aux_input))
        # Cross-linking: the auxiliary input feeds both cells through their auxiliary
        # weights; parallel linking (no such weights): it is the backward cell's input.
        cross = fw_weights.aux_weights is not None
        fw_out, fw_h, fw_c, _ = run_cell(fw_weights, run.parameters, x, aux if cross else None,
                                         *_states_of(forward, args))
        bw_out, bw_h, bw_c, _ = run_cell(bw_weights, run.parameters, x if cross or aux is None else aux,
                                         aux if cross else None, *_states_of(backward, args),
                                         backward=True)
        outputs = [np.concatenate([fw_out, bw_out], axis=2)] if merged else [fw_out, bw_out]
        states = [fw_h, fw_c, bw_h, bw_c] if len(ctx.outputs) > 2 else []
        return _results(args[0].dtype, *(_time_major(o, run.time_major) for o in outputs), *states)
    return kernel


# --- examples -------------------------------------------------------------------------------

_EXAMPLE_VALUES = np.array([0.3, -0.2, 0.1, 0.4, -0.5, 0.25, -0.15])


def _weights_example(operand_type: T, dims: Sequence[int], seed: int) -> ExampleOperand:
    """A constant of small values, different per ``seed``."""
    positions = (np.arange(math.prod(dims)) + seed) % len(_EXAMPLE_VALUES)
    return ExampleOperand(operand_type, tuple(dims),
                          constant=(_EXAMPLE_VALUES[positions] * (1 + seed % 3 / 4)).reshape(dims))


def _cell_example(t: T, input_size: int, units: int, output_size: int, batch: int,
                  cifg: bool = False, peephole: bool = False, projection: bool = False,
                  seed: int = 0) -> list[ExampleOperand]:
    """A cell's 17 weights and its 2 states (fed by the request)."""
    present = (not cifg, True, True, True, not cifg, True, True, True,
               peephole and not cifg, peephole, peephole, not cifg, True, True, True,
               projection, projection)
    dims = {"num_units": units, "input_size": input_size, "output_size": output_size}
    weights = [_weights_example(t, [dims[d] for d in shape], seed + j) if here
               else ExampleOperand(t, omitted=True)
               for j, (here, (_, shape, _)) in enumerate(zip(present, _WEIGHTS))]
    return weights + [ExampleOperand(t, (batch, output_size)), ExampleOperand(t, (batch, units))]


def _gates_example(t: T, columns: Optional[int], units: int, present: Sequence[bool], seed: int
                   ) -> list[ExampleOperand]:
    """4 layer normalization weights (``columns`` None) or auxiliary input weights."""
    shape = [units] if columns is None else [units, columns]
    return [_weights_example(t, shape, seed + g) if here else ExampleOperand(t, omitted=True)
            for g, here in enumerate(present)]


def _scalars(t: T, activation: int, clips: tuple[float, float]) -> list[ExampleOperand]:
    clip_type = T.FLOAT32 if t == F32 else T.FLOAT16
    return [ExampleOperand(T.INT32, constant=activation),
            *(ExampleOperand(clip_type, constant=clip) for clip in clips)]


_NO_GATES = (False,) * 4
_ALL_GATES = (True,) * 4
_CIFG_GATES = (False, True, True, True)


def _lstm_example(t: T, cifg=False, peephole=False, projection=False, layer_norm=None,
                  activation=Activation.TANH, clips=(0.0, 0.0)) -> Example:
    output_size = 3 if projection else 2
    return Example(
        (ExampleOperand(t, (2, 3)), *_cell_example(t, 3, 2, output_size, 2, cifg, peephole, projection),
         *_scalars(t, activation, clips),
         *(() if layer_norm is None else _gates_example(t, None, 2, layer_norm, 5))),
        ((t, 0.0, 0),) * 4)


def _unidirectional_example(t: T, time_major: bool, states: bool, cifg=False, peephole=False,
                            layer_norm=_NO_GATES) -> Example:
    return Example(
        (ExampleOperand(t, (2, 1, 3) if time_major else (1, 2, 3)),
         *_cell_example(t, 3, 2, 2, 1, cifg, peephole), *_scalars(t, Activation.TANH, (0.0, 0.0)),
         ExampleOperand(T.BOOL, constant=time_major), *_gates_example(t, None, 2, layer_norm, 3)),
        ((t, 0.0, 0),) * (3 if states else 1))


def _bidirectional_example(t: T, merge: bool, states: bool, aux: Optional[str] = None,
                           cifg=False) -> Example:
    """``aux``: None, "cross" or "parallel" linking."""
    time_major = not merge
    aux_weights = (_CIFG_GATES if cifg else _ALL_GATES) if aux == "cross" else _NO_GATES
    fw, bw = (_cell_example(t, 2, 2, 2, 1, cifg, seed=s) for s in (0, 3))
    return Example(
        (ExampleOperand(t, (2, 1, 2) if time_major else (1, 2, 2)), *fw[:17], *bw[:17], *fw[17:],
         *bw[17:], ExampleOperand(t, (2, 1, 2) if time_major else (1, 2, 2)) if aux
         else ExampleOperand(t, omitted=True),
         *_gates_example(t, 2, 2, aux_weights, 1), *_gates_example(t, 2, 2, aux_weights, 2),
         *_scalars(t, Activation.TANH, (0.0, 0.0)), ExampleOperand(T.BOOL, constant=merge),
         ExampleOperand(T.BOOL, constant=time_major),
         *_gates_example(t, None, 2, _NO_GATES, 0), *_gates_example(t, None, 2, _NO_GATES, 0)),
        ((t, 0.0, 0),) * ((1 if merge else 2) + (4 if states else 0)))


LSTM_EXAMPLES = (
    _lstm_example(F32),
    _lstm_example(F16, cifg=True, peephole=True, projection=True, clips=(0.5, 0.3)),
    _lstm_example(F32, peephole=True, layer_norm=_ALL_GATES, activation=Activation.RELU6),
    _lstm_example(F16, cifg=True, layer_norm=_CIFG_GATES, activation=Activation.SIGMOID))
UNIDIRECTIONAL_EXAMPLES = (
    _unidirectional_example(F32, time_major=True, states=False),
    _unidirectional_example(F16, time_major=False, states=True, cifg=True, peephole=True,
                            layer_norm=_CIFG_GATES))
BIDIRECTIONAL_EXAMPLES = (
    _bidirectional_example(F32, merge=False, states=False),
    _bidirectional_example(F32, merge=True, states=False, aux="cross"),
    _bidirectional_example(F16, merge=False, states=True, aux="parallel"),
    _bidirectional_example(F16, merge=True, states=True, cifg=True))

register(OperationDef(OperationType.LSTM, LSTM_SIGNATURES, infer_lstm, build_lstm, check_lstm,
                      LSTM_EXAMPLES))
register(OperationDef(OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM, UNIDIRECTIONAL_SIGNATURES,
                      infer_unidirectional, build_unidirectional, check_lstm, UNIDIRECTIONAL_EXAMPLES))
register(OperationDef(OperationType.BIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SIGNATURES,
                      infer_bidirectional, build_bidirectional, check_lstm, BIDIRECTIONAL_EXAMPLES))
