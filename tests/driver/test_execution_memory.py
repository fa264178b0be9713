"""The memory an execution holds: each value is freed after its last use (in the main
subgraph, IF branches and WHILE bodies alike), an execution whose values would exceed its
budget fails with RESOURCE_EXHAUSTED_PERSISTENT before allocating, and the host running out
of memory anywhere in an execution becomes RESOURCE_EXHAUSTED_TRANSIENT, on every path.

Peak memory is measured with tracemalloc (numpy reports its allocations to it), not RSS,
so that these tests do not depend on what else the machine runs."""
from __future__ import annotations

import dataclasses
import tracemalloc

import numpy as np
import pytest

from driver import SampleDriver
from driver.errors import ResourceError
from driver.executor import ExecutionContext, plan as plan_module, run as run_module
from driver.hal.enums import ErrorStatus, OperandType as T, OperationType as Op
from driver.validation import validate_model
from hal_client.builder import ModelBuilder, make_request, out_like
from hal_client.examples import count_condition
from tests.driver.execution import ALL_PATHS, MS, Path, duration, execute, prepare

F32 = np.float32
MIB = 1024 * 1024
ELEMENTS = MIB // 4           # a 1 MiB TENSOR_FLOAT32 value
paths = pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
#: The device of this module's prepared models; tests lower its budget.
DEVICE = SampleDriver()


def chain_model(length: int, dims=(ELEMENTS,)):
    """main(x) = x doubled ``length`` times, one ADD each."""
    mb = ModelBuilder()
    main = mb.main
    t = main.input(T.TENSOR_FLOAT32, list(dims))
    for _ in range(length):
        t = main.add(t, t)
    main.outputs(t)
    return mb.build()


def wide_model(width: int):
    """main(x) = (x + x, x + 2x, ...): ``width`` outputs alive together."""
    mb = ModelBuilder()
    main = mb.main
    x = main.input(T.TENSOR_FLOAT32, [ELEMENTS])
    outputs, t = [], x
    for _ in range(width):
        t = main.add(t, x)
        outputs.append(t)
    main.outputs(*outputs)
    return mb.build()


def run_chain(prepared, path: Path, x: np.ndarray):
    io = make_request([x], [out_like(F32, x.shape)])
    return execute(prepared, io.request, path), io


@pytest.fixture(scope="module")
def chain_40():
    return prepare(chain_model(40), DEVICE)


@paths
def test_a_chain_holds_a_few_values_at_a_time(chain_40, path):
    """Forty 1 MiB values computed one from the other: the execution never holds more
    than a handful of them (holding all of them took 40 MiB)."""
    x = np.ones(ELEMENTS, F32)
    io = make_request([x], [out_like(F32, x.shape)])
    tracemalloc.start()
    try:
        outcome = execute(chain_40, io.request, path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert outcome.status == ErrorStatus.NONE, outcome
    assert peak < 8 * MIB, peak
    np.testing.assert_array_equal(io.output(0, x.shape), np.full(ELEMENTS, 2.0 ** 40, F32))


def looped_y(y: np.ndarray, iterations: int) -> np.ndarray:
    for _ in range(iterations):
        y = (y + y) * (y + 1) - y
    return y


@pytest.fixture(scope="module")
def if_in_loop():
    """while i < n: (i, y) = (i + 1, y'), then IF(y[0] > 0) y + y else y - 1 on the
    loop's result, with y read again after the IF."""
    mb = ModelBuilder()
    cond = mb.subgraph()
    i, n, _ = (cond.input(T.TENSOR_FLOAT32, [1]), cond.input(T.TENSOR_FLOAT32, [1]),
               cond.input(T.TENSOR_FLOAT32, [3]))
    cond.outputs(cond.compare(Op.LESS, i, n))
    body = mb.subgraph()
    i, n, y = (body.input(T.TENSOR_FLOAT32, [1]), body.input(T.TENSOR_FLOAT32, [1]),
               body.input(T.TENSOR_FLOAT32, [3]))
    doubled = body.add(y, y)
    y_plus_1 = body.add(y, body.constant(T.TENSOR_FLOAT32, [1.0]))
    body.outputs(body.add(i, body.constant(T.TENSOR_FLOAT32, [1.0])), body.copy(n),
                 body.sub(body.mul(doubled, y_plus_1), y))
    then, otherwise = mb.subgraph(), mb.subgraph()
    a = then.input(T.TENSOR_FLOAT32, [3])
    then.outputs(then.add(then.add(a, a), a))
    b = otherwise.input(T.TENSOR_FLOAT32, [3])
    otherwise.outputs(otherwise.sub(b, otherwise.constant(T.TENSOR_FLOAT32, [1.0])))
    main = mb.main
    state = [main.input(T.TENSOR_FLOAT32, [1]), main.input(T.TENSOR_FLOAT32, [1]),
             main.input(T.TENSOR_FLOAT32, [3])]
    _, _, looped = main.while_(cond, body, state)
    flag = main.input(T.TENSOR_BOOL8, [1])
    (branch,) = main.if_(flag, then, otherwise, [looped])
    main.outputs(main.add(branch, looped))
    return prepare(mb.build(), DEVICE)


@paths
@pytest.mark.parametrize("condition", [True, False])
def test_values_reused_across_loop_iterations_and_branches_keep_their_results(
        if_in_loop, path, condition):
    y0 = np.array([0.5, -1.0, 2.0], F32)
    io = make_request([np.array([0], F32), np.array([3], F32), y0, np.array([condition])],
                      [out_like(F32, [3])])
    outcome = execute(if_in_loop, io.request, path)
    assert outcome.status == ErrorStatus.NONE, outcome
    y = looped_y(y0, 3)
    expected = (3 * y if condition else y - 1) + y
    np.testing.assert_allclose(io.output(0, [3]), expected, rtol=1e-6)


def test_a_plan_drops_each_value_after_its_last_use_and_never_an_output():
    model = chain_model(3)
    main = plan_module.compile_model(model).plans[0]
    slot_of = main.slot_of
    x, t1, t2, t3 = (slot_of[i] for i in (0, 2, 4, 6))     # ADDs' activation at 1, 3, 5
    assert main.dead_after == [(x,), (t1,), (t2,)]
    assert t3 in main.output_slots


# --- the budget --------------------------------------------------------------------------


@pytest.fixture
def budget_of_3_mib(monkeypatch):
    monkeypatch.setattr(DEVICE, "memory_budget_bytes", 3 * MIB)


@paths
def test_a_long_chain_fits_a_budget_of_a_few_values(chain_40, budget_of_3_mib, path):
    outcome, _ = run_chain(chain_40, path, np.ones(ELEMENTS, F32))
    assert outcome.status == ErrorStatus.NONE, outcome


@pytest.fixture(scope="module")
def wide_4():
    return prepare(wide_model(4), DEVICE)


@paths
def test_values_alive_together_over_the_budget_fail_persistently(wide_4, budget_of_3_mib, path):
    io = make_request([np.ones(ELEMENTS, F32)], [out_like(F32, [ELEMENTS])] * 4)
    outcome = execute(wide_4, io.request, path)
    assert outcome.status == ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT, outcome


@paths
def test_dynamic_shapes_count_against_the_budget_once_inferred(budget_of_3_mib, path):
    """Dimensions left unknown: the steps size their results at run time."""
    prepared = prepare(chain_model(2, dims=(0,)), DEVICE)
    small = make_request([np.ones(ELEMENTS // 2, F32)],
                         [out_like(F32, [ELEMENTS // 2], state_dims=True)])
    assert execute(prepared, small.request, path).status == ErrorStatus.NONE
    big = make_request([np.ones(2 * ELEMENTS, F32)],
                       [out_like(F32, [2 * ELEMENTS], state_dims=True)])
    assert execute(prepared, big.request, path).status == ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT


@pytest.fixture(scope="module")
def tile_by_request():
    """TILE of x [1] by multiples the request gives; the model declares the output [2]."""
    mb = ModelBuilder()
    main = mb.main
    x, multiples = main.input(T.TENSOR_FLOAT32, [1]), main.input(T.TENSOR_INT32, [1])
    main.outputs(main.apply(Op.TILE, [x, multiples], T.TENSOR_FLOAT32, [2]))
    return prepare(mb.build(), DEVICE)


def traced_peak(run):
    """What ``run()`` returned and the most memory numpy and Python held meanwhile."""
    tracemalloc.start()
    try:
        return run(), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@paths
def test_a_shape_known_only_at_run_time_is_checked_before_the_kernel_runs(
        tile_by_request, budget_of_3_mib, path):
    """The declared [2] holds for multiples [2]. Multiples making 16 MiB fail the
    execution before the kernel allocates them, over the budget as they are: the shape
    follows from a value of the request, so the step infers it with that value first."""
    fits = make_request([np.ones(1, F32), np.array([2], np.int32)], [out_like(F32, [2])])
    assert execute(tile_by_request, fits.request, path).status == ErrorStatus.NONE
    huge = make_request([np.ones(1, F32), np.array([4 * MIB], np.int32)], [out_like(F32, [2])])
    outcome, peak = traced_peak(lambda: execute(tile_by_request, huge.request, path))
    assert outcome.status == ErrorStatus.GENERAL_FAILURE, outcome
    assert peak < MIB


def doubling_loop_model(iterations: int):
    """while i < iterations: (i, y) = (i + 1, y + y), for a 1 MiB y."""
    mb = ModelBuilder()
    cond = count_condition(mb, T.TENSOR_FLOAT32, iterations,
                           others=[(T.TENSOR_FLOAT32, [ELEMENTS])])
    body = mb.subgraph()
    i, y = body.input(T.TENSOR_FLOAT32, [1]), body.input(T.TENSOR_FLOAT32, [ELEMENTS])
    body.outputs(body.add(i, body.constant(T.TENSOR_FLOAT32, [1.0])), body.add(y, y))
    main = mb.main
    state = [main.input(T.TENSOR_FLOAT32, [1]), main.input(T.TENSOR_FLOAT32, [ELEMENTS])]
    main.outputs(*main.while_(cond, body, state))
    return mb.build()


@pytest.mark.parametrize("spare_bytes", [0, -1])
def test_every_iteration_of_a_loop_keeps_to_the_budget(spare_bytes):
    """Each iteration computes y + y while y is held, and y0 stays held by the main
    subgraph: the first iteration holds two 1 MiB values at most, the second and every
    later one three (and the 4 bytes of i, twice). A budget one byte short of that fails
    the second iteration; one that fits it runs the loop to its end, which then holds its
    outputs alone."""
    model = doubling_loop_model(5)
    validate_model(model)
    main = plan_module.compile_model(model).plans[0]
    ctx = ExecutionContext(budget_bytes=3 * MIB + 12 + spare_bytes)
    inputs = [np.zeros(1, F32), np.ones(ELEMENTS, F32)]
    if spare_bytes < 0:
        with pytest.raises(ResourceError, match=r"referenced subgraph 1, operation 1 \(ADD\): "
                           rf"its {MIB} bytes of results would take the execution's values to "
                           rf"{3 * MIB + 12} bytes, over its budget of {3 * MIB + 11} bytes"):
            main.run_outputs(inputs, ctx)
        return
    i, y = main.run_outputs(inputs, ctx)
    assert i[0] == 5 and y[0] == 32
    assert ctx.budget.held_bytes == i.nbytes + y.nbytes


@paths
def test_inputs_over_the_budget_fail_persistently(chain_40, monkeypatch, path):
    monkeypatch.setattr(DEVICE, "memory_budget_bytes", MIB // 2)
    outcome, _ = run_chain(chain_40, path, np.ones(ELEMENTS, F32))
    assert outcome.status == ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT, outcome


# --- the host out of memory ----------------------------------------------------------------


def out_of_memory(*_args):
    raise MemoryError


@paths
def test_out_of_memory_in_a_kernel_is_transient(monkeypatch, path):
    """ADD's kernel raises MemoryError (the model's shape is used by no other test, so
    that it is compiled afresh with the failing kernel)."""
    lookup = plan_module.lookup
    failing = dataclasses.replace(lookup(Op.ADD), build=lambda ctx: out_of_memory)
    monkeypatch.setattr(plan_module, "lookup", lambda operation_type:
                        failing if operation_type == Op.ADD else lookup(operation_type))
    prepared = prepare(chain_model(1, dims=(7, 13, 3)), DEVICE)
    io = make_request([np.ones((7, 13, 3), F32)], [out_like(F32, [7, 13, 3])])
    outcome = execute(prepared, io.request, path)
    assert outcome.status == ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT, outcome


@paths
@pytest.mark.parametrize("stage", ["read_inputs", "write_outputs"])
def test_out_of_memory_reading_inputs_or_writing_outputs_is_transient(
        chain_40, monkeypatch, path, stage):
    monkeypatch.setattr(run_module, stage, out_of_memory)
    outcome, _ = run_chain(chain_40, path, np.ones(ELEMENTS, F32))
    assert outcome.status == ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT, outcome


# --- a heavy loop body and a short loop timeout ----------------------------------------------


@paths
def test_a_heavy_loop_body_stops_at_a_1_ms_loop_timeout(path):
    """An endless WHILE whose one iteration is 200 ADDs on 1 MiB values: the loop timeout
    is checked after every operation, and each value is freed after its use, so the loop
    stops with MISSED_DEADLINE_TRANSIENT however long the body (whose values would take
    200 MiB if all were held)."""
    mb = ModelBuilder()
    cond = count_condition(mb, T.TENSOR_FLOAT32, 0, Op.GREATER_EQUAL)
    body = mb.subgraph()
    x = body.input(T.TENSOR_FLOAT32, [1])
    t = body.add(x, body.constant(T.TENSOR_FLOAT32, np.ones(ELEMENTS, F32)), [ELEMENTS])
    for _ in range(199):
        t = body.add(t, t)
    body.outputs(body.add(x, body.constant(T.TENSOR_FLOAT32, [1.0])))
    main = mb.main
    main.outputs(*main.while_(cond, body, [main.input(T.TENSOR_FLOAT32, [1])]))
    prepared = prepare(mb.build(), DEVICE)
    io = make_request([np.zeros(1, F32)], [out_like(F32, [1])])
    outcome = execute(prepared, io.request, path, loop_timeout=duration(1 * MS))
    assert outcome.status == ErrorStatus.MISSED_DEADLINE_TRANSIENT, outcome
