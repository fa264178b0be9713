"""What one operation may cost (driver/limits.py): operations whose work grows faster than
their values (NMS, depthwise filter taps, matrix products, recurrent steps, hashing) are
refused with RESOURCE_EXHAUSTED_PERSISTENT past their cost bounds, before the work starts
and whatever the deadline; within them, long kernels stop at the deadline or loop timeout
they run within rather than after the operation; and kernels that compute in chunks hold a
bounded scratch.

The refused cases took seconds on a driver without cost bounds (each then answered
MISSED_DEADLINE only once the operation had finished, or NONE without a deadline); the
time bounds asserted here are generous, for slow machines. That kernels stop at a deadline
is checked without timing: a step runs within an execution whose deadline has already
passed, and must stop inside its kernel."""
from __future__ import annotations

import time
from typing import Optional, Sequence

import numpy as np
import pytest

from driver import SampleDriver
from driver.errors import DriverError
from driver.executor.plan import compile_model
from driver.executor.steps import ExecutionContext
from driver.hal.enums import ErrorStatus, OperandType as T, OperationType as Op
from driver.hal.structs import Model
from driver.limits import PreparationDeadline, running
from driver.operations.signatures import ExampleOperand
from hal_client.builder import ModelBuilder, make_request, out_like
from hal_client.examples import count_condition
from tests.driver.execution import (ALL_PATHS, MS, Path, deadline_in, duration, execute, prepare,
                                    prepare_status)
from tests.driver.test_execution_memory import traced_peak
from tests.driver.test_limits import rank_of
from tests.operations.on_device import constant_input, fed_input

F32, I32 = T.TENSOR_FLOAT32, T.TENSOR_INT32
EXHAUSTED = ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT
MIB = 1 << 20
#: The deadline of the refused executions, and how long past it their answer may come.
DEADLINE_S = 0.1
SLACK_S = 2.0
paths = pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)


# --- models ------------------------------------------------------------------------------

def operation_model(operation: int, args: Sequence[ExampleOperand], outputs: Sequence[tuple],
                    rank_output: bool = False) -> Model:
    """The operation, its results the model's outputs; with ``rank_output``, the RANK of
    its first result instead (a scalar, so that every path runs it: the fenced one needs
    fully specified outputs), and the shapes of the inputs the request feeds left unknown
    (the request states them), so that the operation's cost is only known at run time."""
    mb = ModelBuilder()
    g = mb.main
    inputs = [g.omitted(a.type, a.dims) if a.omitted else g.constant(a.type, a.constant, a.dims)
              if a.constant is not None else g.input(a.type, [0] * len(a.dims) if rank_output else a.dims)
              for a in args]
    results = g.operation(operation, inputs, [(t, list(dims), s, z) for t, dims, s, z in outputs])
    if rank_output:
        rank_of(g, results[0])
    else:
        g.outputs(*results)
    return mb.build()


def fed_values(args: Sequence[ExampleOperand]) -> list[np.ndarray]:
    """What the request feeds."""
    return [np.asarray(a.value) for a in args if a.constant is None and not a.omitted]


def nms_args(boxes: int, constant: bool = False) -> list[ExampleOperand]:
    """BOX_WITH_NMS_LIMIT of ``boxes`` boxes of one class (and the background) that never
    overlap, in distinct scores: hard NMS picks every one, a round each."""
    scores = np.zeros((boxes, 2), np.float32)
    scores[:, 1] = np.linspace(0.9, 0.2, boxes, dtype=np.float32)
    corners = np.zeros((boxes, 8), np.float32)
    corners[:, 4] = 10 * np.arange(boxes)
    corners[:, 6:] = corners[:, 4:6] + 5
    tensors = [(F32, scores), (F32, corners), (I32, np.zeros(boxes, np.int32))]
    return [*(constant_input(t, v) if constant else fed_input(t, v) for t, v in tensors),
            constant_input(T.FLOAT32, 0.0), constant_input(T.INT32, -1), constant_input(T.INT32, 0),
            constant_input(T.FLOAT32, 0.5), constant_input(T.FLOAT32, 0.5), constant_input(T.FLOAT32, 0.1)]


NMS_OUTPUTS = [(F32, (0,), 0.0, 0), (F32, (0, 4), 0.0, 0), (I32, (0,), 0.0, 0), (I32, (0,), 0.0, 0)]


def depthwise_args(size: int, taps: int) -> tuple[list[ExampleOperand], list[tuple]]:
    """DEPTHWISE_CONV_2D of a [1, size, size, 1] input with a taps x taps filter, SAME padding."""
    return ([fed_input(F32, np.ones((1, size, size, 1), np.float32)),
             constant_input(F32, np.full((1, taps, taps, 1), 0.5, np.float32)),
             constant_input(F32, np.zeros(1, np.float32)),
             *(constant_input(T.INT32, v) for v in (1, 1, 1, 1, 0))],     # SAME, strides, ×1, NONE
            [(F32, (1, size, size, 1), 0.0, 0)])


def lstm_args(steps: int, units: int, n_input: int = 1) -> tuple[list[ExampleOperand], list[tuple]]:
    """UNIDIRECTIONAL_SEQUENCE_LSTM over ``steps`` steps of a batch of 1, without projection."""
    rng = np.random.default_rng(units)
    weights = {"input": (units, n_input), "recurrent": (units, units), "bias": (units,)}
    cell = [constant_input(F32, rng.uniform(-0.5, 0.5, weights[kind]).astype(np.float32))
            for kind in ("input", "recurrent") for _ in range(4)]
    cell[8:8] = [ExampleOperand(F32, omitted=True)] * 3                 # no peephole
    cell += [constant_input(F32, np.zeros(units, np.float32)) for _ in range(4)]
    cell += [ExampleOperand(F32, omitted=True)] * 2                     # no projection
    args = [fed_input(F32, np.full((steps, 1, n_input), 0.5, np.float32)), *cell,
            fed_input(F32, np.zeros((1, units), np.float32)), fed_input(F32, np.zeros((1, units), np.float32)),
            constant_input(T.INT32, 4), constant_input(T.FLOAT32, 0.0), constant_input(T.FLOAT32, 0.0),
            constant_input(T.BOOL, True), *(ExampleOperand(F32, omitted=True),) * 4]
    return args, [(F32, (steps, 1, units), 0.0, 0)]


def lsh_operands(g, seeds: int, rows: int, row_size: int) -> int:
    """A dense LSH_PROJECTION of ``seeds`` seeds over constant int32 rows, in ``g``."""
    hash_ = g.constant(F32, np.linspace(-1, 1, seeds, dtype=np.float32).reshape(seeds, 1))
    x = g.constant(I32, np.arange(rows * row_size, dtype=np.int32).reshape(rows, row_size))
    return g.apply(Op.LSH_PROJECTION, [hash_, x, g.omitted(F32, [rows]), g.constant(T.INT32, 2)],
                   I32, [seeds])


def endless_loop_of_lsh(seeds: int, rows: int, row_size: int) -> Model:
    """WHILE (x >= 0) { x = x + 1; bits = LSH_PROJECTION(...) }: ended by its loop timeout."""
    mb = ModelBuilder()
    cond = count_condition(mb, F32, 0, Op.GREATER_EQUAL, others=[(I32, [seeds])])
    body = mb.subgraph()
    x = body.input(F32, [1])
    body.input(I32, [seeds])
    body.outputs(body.add(x, body.constant(F32, [1.0])), lsh_operands(body, seeds, rows, row_size))
    main = mb.main
    main.outputs(*main.while_(cond, body, [main.input(F32, [1]), main.input(I32, [seeds])], count=1))
    return mb.build()


def run_with_deadline(prepared, inputs: Sequence[np.ndarray], path: Path,
                      deadline_s: Optional[float] = DEADLINE_S, **execution):
    io = make_request(list(inputs), [out_like(np.int32, [])])
    started = time.monotonic()
    outcome = execute(prepared, io.request, path, deadline=deadline_in(deadline_s), **execution)
    return outcome, time.monotonic() - started


# --- over a cost bound: refused before the work ---------------------------------------------

COSTLY = {
    # 4,000 candidates, 4,000 rounds: 2.2 s without a bound.
    "nms": (Op.BOX_WITH_NMS_LIMIT, nms_args(4000), NMS_OUTPUTS),
    # 160,000 taps over 16,384 outputs: some seconds.
    "depthwise": (Op.DEPTHWISE_CONV_2D, *depthwise_args(128, 400)),
    # 1,024 steps of 1,024 units reading 1,025 values each: some seconds.
    "lstm": (Op.UNIDIRECTIONAL_SEQUENCE_LSTM, *lstm_args(1024, 1024)),
}


@pytest.fixture(scope="module")
def costly():
    return {name: (prepare(operation_model(*case, rank_output=True)), fed_values(case[1]))
            for name, case in COSTLY.items()}


@paths
@pytest.mark.parametrize("name", sorted(COSTLY))
@pytest.mark.parametrize("deadline_s", [DEADLINE_S, None], ids=["deadline", "no-deadline"])
def test_an_operation_over_its_cost_bound_is_refused_before_it_runs(costly, name, deadline_s, path):
    prepared, inputs = costly[name]
    outcome, elapsed = run_with_deadline(prepared, inputs, path, deadline_s)
    assert outcome.status == EXHAUSTED, outcome
    assert elapsed < DEADLINE_S + SLACK_S


@paths
def test_a_loop_body_over_its_cost_bound_is_refused_within_the_loop_timeout(path):
    """One LSH_PROJECTION hashing 16 seeds before each of 8,192 rows of 256 bytes a
    round: seconds a round without a bound, where the loop timeout was 100 ms."""
    prepared = prepare(endless_loop_of_lsh(16, 8192, 64))
    io = make_request([np.zeros(1, np.float32), np.zeros(16, np.int32)], [out_like(np.float32, [1])])
    started = time.monotonic()
    outcome = execute(prepared, io.request, path, loop_timeout=duration(100 * MS))
    assert outcome.status == EXHAUSTED, outcome
    assert time.monotonic() - started < DEADLINE_S + SLACK_S


def test_an_operation_whose_cost_is_known_ahead_is_refused_by_preparation():
    model = operation_model(*COSTLY["lstm"])
    assert SampleDriver().getSupportedOperations_1_3(model) == (EXHAUSTED, [])
    assert prepare_status(SampleDriver(), model)[:2] == (EXHAUSTED, EXHAUSTED)


def test_preparation_does_not_fold_an_operation_over_its_cost_bound():
    """With constant inputs, BOX_WITH_NMS_LIMIT's output sizes are computed at preparation:
    4,000 boxes took 3.7 s in getSupportedOperations_1_3, and prepareModel_1_3 with a
    100 ms deadline answered after 3.4 s."""
    model = operation_model(Op.BOX_WITH_NMS_LIMIT, nms_args(4000, constant=True), NMS_OUTPUTS)
    started = time.monotonic()
    assert SampleDriver().getSupportedOperations_1_3(model) == (EXHAUSTED, [])
    launch, status, prepared = prepare_status(SampleDriver(), model, deadline=deadline_in(DEADLINE_S))
    assert (launch, status, prepared) == (EXHAUSTED, EXHAUSTED, None)
    assert time.monotonic() - started < 2 * (DEADLINE_S + SLACK_S)


# --- within the bounds: a passed deadline stops the kernel ----------------------------------

def conv_args() -> tuple[list[ExampleOperand], list[tuple]]:
    """CONV_2D of 64 windows of 1,024 channels by 1,024 filters: four chunks of windows."""
    return ([fed_input(F32, np.ones((1, 8, 8, 1024), np.float32)),
             constant_input(F32, np.full((1024, 1, 1, 1024), 0.01, np.float32)),
             constant_input(F32, np.zeros(1024, np.float32)), *(constant_input(T.INT32, v) for v in (1, 1, 1, 0))],
            [(F32, (1, 8, 8, 1024), 0.0, 0)])


def rnn_args() -> tuple[list[ExampleOperand], list[tuple]]:
    """UNIDIRECTIONAL_SEQUENCE_RNN of 3 steps, one unit."""
    one = np.ones((1, 1), np.float32)
    return ([fed_input(F32, np.ones((3, 1, 1), np.float32)), constant_input(F32, one),
             constant_input(F32, one), constant_input(F32, np.zeros(1, np.float32)),
             fed_input(F32, np.zeros((1, 1), np.float32)), constant_input(T.INT32, 1),
             constant_input(T.INT32, 1)],
            [(F32, (3, 1, 1), 0.0, 0)])


def lsh_args() -> tuple[list[ExampleOperand], list[tuple]]:
    """LSH_PROJECTION of one seed over a row of 4 KiB: rounds over its 64-byte blocks."""
    return ([constant_input(F32, np.ones((1, 1), np.float32)), fed_input(I32, np.ones((1, 1024), np.int32)),
             ExampleOperand(F32, omitted=True), constant_input(T.INT32, 2)],
            [(I32, (1,), 0.0, 0)])


def multinomial_args() -> tuple[list[ExampleOperand], list[tuple]]:
    return ([fed_input(F32, np.zeros((1, 4), np.float32)), constant_input(T.INT32, 10),
             constant_input(I32, np.array([1, 2], np.int32))],
            [(I32, (1, 10), 0.0, 0)])


def topk_args() -> tuple[list[ExampleOperand], list[tuple]]:
    """TOPK_V2 of a row long enough to be selected rather than sorted."""
    return ([fed_input(F32, np.linspace(0, 1, 4096, dtype=np.float32).reshape(1, 4096)),
             constant_input(T.INT32, 3)],
            [(F32, (1, 3), 0.0, 0), (I32, (1, 3), 0.0, 0)])


WITHIN_BOUNDS = {
    "nms": (Op.BOX_WITH_NMS_LIMIT, nms_args(8), NMS_OUTPUTS),
    "depthwise": (Op.DEPTHWISE_CONV_2D, *depthwise_args(4, 3)),
    "conv": (Op.CONV_2D, *conv_args()),
    "lstm": (Op.UNIDIRECTIONAL_SEQUENCE_LSTM, *lstm_args(3, 2)),
    "rnn": (Op.UNIDIRECTIONAL_SEQUENCE_RNN, *rnn_args()),
    "lsh": (Op.LSH_PROJECTION, *lsh_args()),
    "multinomial": (Op.RANDOM_MULTINOMIAL, *multinomial_args()),
    "topk": (Op.TOPK_V2, *topk_args()),
}


@pytest.mark.parametrize("name", sorted(WITHIN_BOUNDS))
def test_a_long_kernel_stops_at_the_deadline_it_runs_within(name):
    """The operation's step run alone (the plan's runner, which checks the deadline
    between steps, is not involved), within an execution whose deadline has passed."""
    operation, args, outputs = WITHIN_BOUNDS[name]
    model, fed = operation_model(operation, args, outputs), fed_values(args)
    plan = compile_model(model).plans[0]
    (step,) = plan.steps
    ctx = ExecutionContext(deadline_ns=time.monotonic_ns() - 1)
    with running(ctx), pytest.raises(DriverError) as raised:
        step([*fed, *plan.tail], ctx)
    assert raised.value.status == ErrorStatus.MISSED_DEADLINE_TRANSIENT, raised.value
    # Without a deadline, the same step runs.
    step([*fed, *plan.tail], ExecutionContext())


def test_an_operation_folded_at_preparation_stops_at_its_deadline():
    model = operation_model(Op.BOX_WITH_NMS_LIMIT, nms_args(8, constant=True), NMS_OUTPUTS)
    with running(PreparationDeadline(time.monotonic_ns() - 1)), pytest.raises(DriverError) as raised:
        compile_model(model)
    assert raised.value.status == ErrorStatus.MISSED_DEADLINE_PERSISTENT, raised.value


# --- scratch of kernels computing in chunks ------------------------------------------------

def test_an_lstm_holds_the_input_part_of_a_chunk_of_steps_not_of_all():
    """4,096 steps of 256 units: what the input adds to the gates of every step took
    16 MiB at once (32,768 steps of 16,384 units held 6.2 GB); the output takes 4 MiB."""
    args, outputs = lstm_args(4096, 256)
    prepared = prepare(operation_model(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, args, outputs, rank_output=True))
    (outcome, _), peak = traced_peak(lambda: run_with_deadline(prepared, fed_values(args), Path.SYNC, None))
    assert outcome.status == ErrorStatus.NONE, outcome
    output_bytes = 4096 * 256 * 4
    assert peak < 4 * output_bytes, peak


def test_random_multinomial_scratch_is_proportional_to_its_output():
    """4,193,280 samples (16 MiB) with a 16 MiB budget: the draws took 13 times their
    output in scratch (208 MiB)."""
    samples = 4_193_280
    args = [fed_input(F32, np.zeros((1, 8), np.float32)), constant_input(T.INT32, samples),
            constant_input(I32, np.array([7, 9], np.int32))]
    device = SampleDriver()
    device.memory_budget_bytes = 16 * MIB
    model = operation_model(Op.RANDOM_MULTINOMIAL, args, [(I32, (1, samples), 0.0, 0)])
    prepared = prepare(model, device)
    io = make_request(fed_values(args), [out_like(np.int32, [1, samples])])
    outcome, peak = traced_peak(lambda: execute(prepared, io.request, Path.SYNC))
    assert outcome.status == ErrorStatus.NONE, outcome
    assert peak < 16 * MIB + 3 * samples * 4, peak
    drawn = io.output(0, [1, samples])
    assert drawn.min() >= 0 and drawn.max() < 8
