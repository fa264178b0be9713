"""RNN, UNIDIRECTIONAL_SEQUENCE_RNN and BIDIRECTIONAL_SEQUENCE_RNN: one basic RNN cell,

    hidden = activation(input * weights' + aux_input * aux_weights' + hidden * recurrent_weights' + bias)

applied once (RNN: input [batch_size, input_size]), along a sequence (UNIDIRECTIONAL:
input [max_time, batch_size, input_size] when time-major, else [batch_size, max_time,
input_size]) or along it by a forward and a backward cell (BIDIRECTIONAL). A cell's
weights are [num_units, input_size], its recurrent weights [num_units, num_units], its bias
[num_units] and its hidden state [batch_size, num_units]; each output step is the new
hidden state. Float16 is computed in single precision and rounded once at the end. A
sequence may have at most MAX_TIME_STEPS steps (driver/limits.py): they run one by one.

BIDIRECTIONAL_SEQUENCE_RNN links an auxiliary input (inputs 9-11, all optional) in one of
three ways: none of them (no linking); the auxiliary input alone, which is then the
backward cell's input (parallel linking, since HAL 1.3); or all three, each cell adding
aux_input * aux_weights' (cross-linking). Its outputs are the forward and backward
sequences, or both concatenated on the last axis when merge_outputs is set, then (since
HAL 1.3) optionally the two final hidden states: 1 or 3 outputs when merged, 2 or 4 when not.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Optional, Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from ..limits import MAX_RECURRENT_MULTIPLY_ADDS, check_cost, check_time_steps, checkpoint
from .common import ACTIVATION, STORAGE_DTYPE, activation_bounds, agreed_size, has_value
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Example, ExampleOperand as Arg, Signature, same_as, scalar, tensor

FLOATS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
INPUT = 0


@dataclass(frozen=True)
class Cell:
    """Where a cell's operands are among the operation's inputs: its input (None: not known
    until the linking is) and its weights, which the recurrent weights, bias and hidden
    state follow; with cross-linking, the auxiliary input and weights."""
    input: Optional[int]
    weights: int
    aux: Optional[tuple[int, int]] = None

    @property
    def products(self) -> tuple[tuple[Optional[int], int], ...]:
        """The (input, weights) pairs whose products feed the cell."""
        return ((self.input, self.weights), *((self.aux,) if self.aux else ()))


def cell_operands(prefix: str = "") -> tuple:
    return (same_as(INPUT, (2, 2), f"{prefix}weights"), same_as(INPUT, (2, 2), f"{prefix}recurrent_weights"),
            same_as(INPUT, (1, 1), f"{prefix}bias"), same_as(INPUT, (2, 2), f"{prefix}hidden_state"))


# --- signatures -------------------------------------------------------------------------------

RNN_ACTIVATION = 5
RNN_SIGNATURES = (Signature(inputs=(tensor(FLOATS, (2, 2), "input"), *cell_operands(), ACTIVATION),
                            outputs=(same_as(INPUT), same_as(INPUT))),)

UNI_ACTIVATION, UNI_TIME_MAJOR = 5, 6
UNI_SIGNATURES = tuple(
    Signature(inputs=(tensor(FLOATS, (3, 3), "input"), *cell_operands(), ACTIVATION,
                      scalar(T.INT32, frozenset({0, 1}), "time_major")),
              outputs=(same_as(INPUT),) * outputs)
    for outputs in (1, 2))      # the final hidden state since HAL 1.3

AUX = AUX_INPUT, FW_AUX_WEIGHTS, BW_AUX_WEIGHTS = 9, 10, 11
BI_ACTIVATION, BI_TIME_MAJOR, MERGE_OUTPUTS = 12, 13, 14
# The auxiliary operands have no declared rank: a request may omit one declared [0].
BI_INPUTS = (tensor(FLOATS, (3, 3), "input"), *cell_operands("fw_"), *cell_operands("bw_"),
             *(replace(same_as(INPUT, name=name), optional=True)
               for name in ("aux_input", "fw_aux_weights", "bw_aux_weights")),
             ACTIVATION, scalar(T.BOOL, name="time_major"))
#: 1 or 3 outputs when merge_outputs is set, else 2 or 4: the output count decides it.
BI_SIGNATURES = tuple(
    Signature(inputs=(*BI_INPUTS, scalar(T.BOOL, frozenset({outputs % 2 == 1}), "merge_outputs")),
              outputs=(same_as(INPUT),) * outputs)
    for outputs in (1, 2, 3, 4))


class Linking(enum.Enum):
    """How BIDIRECTIONAL_SEQUENCE_RNN uses its auxiliary input; the value says which of
    the auxiliary input, fw_aux_weights and bw_aux_weights are present."""
    NONE = (False, False, False)
    PARALLEL = (True, False, False)
    CROSS = (True, True, True)


BI_CELLS = {Linking.NONE: (Cell(INPUT, 1), Cell(INPUT, 5)),
            Linking.PARALLEL: (Cell(INPUT, 1), Cell(AUX_INPUT, 5)),
            Linking.CROSS: (Cell(INPUT, 1, (AUX_INPUT, FW_AUX_WEIGHTS)),
                            Cell(INPUT, 5, (AUX_INPUT, BW_AUX_WEIGHTS))),
            None: (Cell(INPUT, 1), Cell(None, 5))}


def linking(ctx: OperationContext, present: Sequence[Optional[bool]]) -> Optional[Linking]:
    """The linking that the presence of the auxiliary operands makes (None in ``present``:
    known at run time only), or None while it is undecided."""
    modes = [mode for mode in Linking
             if all(p is None or p == wanted for p, wanted in zip(present, mode.value))]
    check(modes, "{}: aux_input, fw_aux_weights and bw_aux_weights (inputs 9-11) must all "
          "be present, all omitted, or only aux_input present", ctx.name)
    return modes[0] if len(modes) == 1 else None


def check_bidirectional(ctx: OperationContext) -> None:
    linking(ctx, [has_value(ctx.inputs[i]) for i in AUX])


# --- shapes -----------------------------------------------------------------------------------

#: The (batch, time, feature) axes of RNN's input, which has no time axis.
RNN_AXES = (0, None, 1)


def sequence_axes(time_major: Optional[bool]) -> tuple[Optional[int], Optional[int], int]:
    """The (batch, time, feature) axes of a sequence; None while time_major is unknown."""
    if time_major is None:
        return None, None, 2
    return (1, 0, 2) if time_major else (0, 1, 2)


def leading(time_major: Optional[bool], batch: int, time: int) -> tuple[int, int]:
    """The first two dimensions of an output sequence."""
    if time_major is None:
        return 0, 0
    return (time, batch) if time_major else (batch, time)


def check_rank(ctx: OperationContext, shapes: Sequence[Shape], i: int, rank: int) -> None:
    shape = shapes[i]
    check(shape is None or len(shape) == rank, "{}: input {} (operand {}) has rank {}, expected {}",
          ctx.name, i, ctx.inputs[i].index, None if shape is None else len(shape), rank)


def check_aux_ranks(ctx: OperationContext, shapes: Sequence[Shape], mode: Optional[Linking]) -> None:
    """The ranks of the auxiliary operands present (signatures cannot say them: a request
    may omit an operand declared [0])."""
    if mode is not None:
        for i, rank, present in zip(AUX, (3, 2, 2), mode.value):
            if present:
                check_rank(ctx, shapes, i, rank)


def cell_sizes(ctx: OperationContext, shapes: Sequence[Shape], cells: Sequence[Cell],
               axes: tuple[Optional[int], Optional[int], int], exact: bool = False
               ) -> tuple[int, int, list[int]]:
    """batch_size, max_time and each cell's num_units (0: unknown), checking that the shapes
    of the cells' operands agree. ``axes``: the batch, time and feature axes of the input
    sequences; ``exact``: the shapes are those of a run (see agreed_size)."""
    batch_axis, time_axis, feature_axis = axes
    sequences = sorted({x for c in cells for x, _ in c.products if x is not None})
    hidden_states = [(c.weights + 3, 0) for c in cells]
    batch = agreed_size(ctx, shapes, "batch_size", hidden_states if batch_axis is None else
                        [(i, batch_axis) for i in sequences] + hidden_states, exact=exact)
    time = 0 if time_axis is None else agreed_size(
        ctx, shapes, "max_time", [(i, time_axis) for i in sequences], exact=exact)
    check_time_steps(time, ctx.name)
    units, multiply_adds = [], 0
    for cell in cells:
        w = cell.weights
        units.append(agreed_size(ctx, shapes, "num_units", [
            *((weights, 0) for _, weights in cell.products), (w + 1, 0), (w + 1, 1), (w + 2, 0), (w + 3, 1)],
            exact=exact))
        # Each step, each unit reads the state and every input.
        reads = units[-1]
        for x, weights in cell.products:
            if x is not None:
                reads += agreed_size(ctx, shapes, "input_size", [(x, feature_axis), (weights, 1)], exact=exact)
        multiply_adds += max(time, 1) * batch * units[-1] * reads
    check_cost(multiply_adds, MAX_RECURRENT_MULTIPLY_ADDS, "multiply-adds", ctx.name)
    return batch, time, units


def infer_rnn(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    batch, _, (units,) = cell_sizes(ctx, shapes, (Cell(INPUT, 1),), RNN_AXES)
    return [(batch, units), (batch, units)]


def infer_unidirectional(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    time_major = ctx.scalar(UNI_TIME_MAJOR)
    batch, time, (units,) = cell_sizes(ctx, shapes, (Cell(INPUT, 1),), sequence_axes(time_major))
    return [(*leading(time_major, batch, time), units), (batch, units)][:len(ctx.outputs)]


def infer_bidirectional(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    mode = linking(ctx, [has_value(ctx.inputs[i]) for i in AUX])
    check_aux_ranks(ctx, shapes, mode)
    time_major = ctx.scalar(BI_TIME_MAJOR)
    batch, time, (fw, bw) = cell_sizes(ctx, shapes, BI_CELLS[mode], sequence_axes(time_major))
    lead = leading(time_major, batch, time)
    sequences = [(*lead, fw and bw and fw + bw)] if len(ctx.outputs) % 2 else [(*lead, fw), (*lead, bw)]
    return sequences + [(batch, fw), (batch, bw)][:len(ctx.outputs) - len(sequences)]


# --- kernels ----------------------------------------------------------------------------------

def run_cell(cell: Cell, values: Sequence[np.ndarray], bounds: tuple[float, float],
             backward: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The cell along a time-major sequence (single precision): the hidden state after
    each step [max_time, batch_size, num_units], and the last one (a copy)."""
    w = cell.weights
    # The inputs' part of every step at once: only the recurrent part waits for the step before.
    steps = values[w + 2]
    for x, weights in cell.products:
        steps = steps + values[x] @ values[weights].T
    hidden, recurrent = values[w + 3], values[w + 1].T
    if steps.size:          # else nothing to compute, however many steps
        low, high = bounds
        floor, ceiling = low != -np.inf, high != np.inf
        for step in steps[::-1] if backward else steps:
            checkpoint()
            step += hidden @ recurrent
            if floor:       # np.maximum and np.minimum cost half what np.clip does
                np.maximum(step, low, out=step)
            if ceiling:
                np.minimum(step, high, out=step)
            hidden = step
    return steps, hidden.copy()


def float_inputs(ctx: OperationContext, count: int):
    """The first ``count`` inputs in single precision (None where omitted): constants
    converted once, here."""
    constants = [None if o.value is None else o.value.astype(np.float32) for o in ctx.inputs[:count]]

    def convert(inputs: Sequence[Optional[np.ndarray]]) -> list[Optional[np.ndarray]]:
        return [c if c is not None else None if a is None else a.astype(np.float32, copy=False)
                for a, c in zip(inputs, constants)]
    return convert


def shapes_of(inputs: Sequence[Optional[np.ndarray]]) -> list[Shape]:
    return [None if a is None else a.shape for a in inputs]


def time_major_view(x: np.ndarray, time_major: bool) -> np.ndarray:
    """A sequence as time-major, from either layout; also the way back (a swap undoes itself)."""
    return x if time_major else x.swapaxes(0, 1)


def results(dtype: np.dtype, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    return tuple(a.astype(dtype, copy=False) for a in arrays)


def build_rnn(ctx: OperationContext) -> Kernel:
    specs, floats, dtype = RNN_SIGNATURES[0].inputs, float_inputs(ctx, 5), STORAGE_DTYPE[ctx.inputs[0].type]
    cell = Cell(INPUT, 1)

    def kernel(*inputs):
        cell_sizes(ctx, shapes_of(inputs), (cell,), RNN_AXES, exact=True)
        bounds = activation_bounds(ctx.run_scalar(RNN_ACTIVATION, inputs, specs[RNN_ACTIVATION]))
        values = floats(inputs)
        values[INPUT] = values[INPUT][np.newaxis]       # a sequence of one step
        steps, hidden = run_cell(cell, values, bounds)
        return results(dtype, hidden, steps[0])
    return kernel


def build_unidirectional(ctx: OperationContext) -> Kernel:
    specs, floats, dtype = UNI_SIGNATURES[0].inputs, float_inputs(ctx, 5), STORAGE_DTYPE[ctx.inputs[0].type]
    cell = Cell(INPUT, 1)

    def kernel(*inputs):
        time_major = ctx.run_scalar(UNI_TIME_MAJOR, inputs, specs[UNI_TIME_MAJOR])
        cell_sizes(ctx, shapes_of(inputs), (cell,), sequence_axes(time_major), exact=True)
        bounds = activation_bounds(ctx.run_scalar(UNI_ACTIVATION, inputs, specs[UNI_ACTIVATION]))
        values = floats(inputs)
        values[INPUT] = time_major_view(values[INPUT], time_major)
        steps, hidden = run_cell(cell, values, bounds)
        return results(dtype, time_major_view(steps, time_major), hidden)[:len(ctx.outputs)]
    return kernel


def build_bidirectional(ctx: OperationContext) -> Kernel:
    specs = BI_SIGNATURES[len(ctx.outputs) - 1].inputs
    floats, dtype = float_inputs(ctx, BW_AUX_WEIGHTS + 1), STORAGE_DTYPE[ctx.inputs[INPUT].type]
    merged, with_states = len(ctx.outputs) % 2 == 1, len(ctx.outputs) > 2

    def kernel(*inputs):
        mode = linking(ctx, [inputs[i] is not None for i in AUX])
        time_major = ctx.run_scalar(BI_TIME_MAJOR, inputs, specs[BI_TIME_MAJOR])
        # Checked against the output count.
        ctx.run_scalar(MERGE_OUTPUTS, inputs, specs[MERGE_OUTPUTS])
        shapes = shapes_of(inputs)
        check_aux_ranks(ctx, shapes, mode)
        fw_cell, bw_cell = BI_CELLS[mode]
        cell_sizes(ctx, shapes, (fw_cell, bw_cell), sequence_axes(time_major), exact=True)
        bounds = activation_bounds(ctx.run_scalar(BI_ACTIVATION, inputs, specs[BI_ACTIVATION]))
        values = floats(inputs)
        for i in (INPUT, AUX_INPUT):
            if values[i] is not None:
                values[i] = time_major_view(values[i], time_major)
        fw, fw_hidden = run_cell(fw_cell, values, bounds)
        bw, bw_hidden = run_cell(bw_cell, values, bounds, backward=True)
        sequences = [np.concatenate((fw, bw), axis=2)] if merged else [fw, bw]
        return results(dtype, *(time_major_view(s, time_major) for s in sequences),
                       *((fw_hidden, bw_hidden) if with_states else ()))
    return kernel


# --- examples and registration ----------------------------------------------------------------

def weights(operand_type: int, rows: int, columns: int) -> Arg:
    """Small constant weights (multiples of a quarter in [-0.5, 0.5])."""
    return Arg(operand_type, (rows, columns),
               constant=((np.arange(rows * columns) % 5 - 2) * 0.25).reshape(rows, columns))


def cell_args(operand_type: int, units: int, input_size: int, batch: int) -> tuple[Arg, ...]:
    """A cell of constant weights and bias, its hidden state fed by the request."""
    return (weights(operand_type, units, input_size), weights(operand_type, units, units),
            Arg(operand_type, (units,), constant=[0.25] * units), Arg(operand_type, (batch, units)))


def flag(operand_type: int, value) -> Arg:
    return Arg(operand_type, constant=value)


F32, F16 = FLOATS
OMITTED = (Arg(F32, omitted=True),) * 3
RNN_EXAMPLES = (
    Example(inputs=(Arg(F32, (2, 3)), *cell_args(F32, 2, 3, 2), flag(T.INT32, 1)),
            outputs=((F32, 0.0, 0),) * 2),
    # Run-time weights and activation.
    Example(inputs=(Arg(F16, (1, 2)), Arg(F16, (3, 2)), Arg(F16, (3, 3)), Arg(F16, (3,)), Arg(F16, (1, 3)),
                    Arg(T.INT32, value=3)), outputs=((F16, 0.0, 0),) * 2))
UNI_EXAMPLES = (
    Example(inputs=(Arg(F32, (2, 3, 2)), *cell_args(F32, 2, 2, 2), flag(T.INT32, 1), flag(T.INT32, 0)),
            outputs=((F32, 0.0, 0),)),
    Example(inputs=(Arg(F16, (3, 1, 2)), *cell_args(F16, 3, 2, 1), flag(T.INT32, 0), flag(T.INT32, 1)),
            outputs=((F16, 0.0, 0),) * 2))
BI_EXAMPLES = (
    # No linking, batch-major, separate outputs.
    Example(inputs=(Arg(F32, (1, 2, 2)), *cell_args(F32, 2, 2, 1), *cell_args(F32, 3, 2, 1), *OMITTED,
                    flag(T.INT32, 1), flag(T.BOOL, False), flag(T.BOOL, False)),
            outputs=((F32, 0.0, 0),) * 2),
    # Cross-linking, time-major, merged outputs and the final hidden states.
    Example(inputs=(Arg(F16, (2, 1, 2)), *cell_args(F16, 2, 2, 1), *cell_args(F16, 3, 2, 1),
                    Arg(F16, (2, 1, 3)), weights(F16, 2, 3), weights(F16, 3, 3),
                    flag(T.INT32, 3), flag(T.BOOL, True), flag(T.BOOL, True)),
            outputs=((F16, 0.0, 0),) * 3),
    # Parallel linking: the auxiliary input feeds the backward cell; all four outputs.
    Example(inputs=(Arg(F32, (1, 2, 2)), *cell_args(F32, 2, 2, 1), *cell_args(F32, 2, 3, 1),
                    Arg(F32, (1, 2, 3)), *OMITTED[:2], flag(T.INT32, 0), flag(T.BOOL, False),
                    flag(T.BOOL, False)),
            outputs=((F32, 0.0, 0),) * 4),
    # No linking, time-major, merged.
    Example(inputs=(Arg(F32, (3, 2, 1)), *cell_args(F32, 1, 1, 2), *cell_args(F32, 2, 1, 2), *OMITTED,
                    flag(T.INT32, 2), flag(T.BOOL, True), flag(T.BOOL, True)),
            outputs=((F32, 0.0, 0),)))

register(OperationDef(OperationType.RNN, RNN_SIGNATURES, infer_rnn, build_rnn, None, RNN_EXAMPLES))
register(OperationDef(OperationType.UNIDIRECTIONAL_SEQUENCE_RNN, UNI_SIGNATURES, infer_unidirectional,
                      build_unidirectional, None, UNI_EXAMPLES))
register(OperationDef(OperationType.BIDIRECTIONAL_SEQUENCE_RNN, BI_SIGNATURES, infer_bidirectional,
                      build_bidirectional, check_bidirectional, BI_EXAMPLES))
