"""IF and WHILE executed end to end through the HAL, in the spirit of the CTS control-flow
specs: every result is compared exactly with a numpy computation done the same way (same
dtype, same order of operations)."""
from __future__ import annotations

import operator

import numpy as np
import pytest

from driver.device import SampleDriver
from driver.errors import ValidationError
from driver.executor import ExecutionContext, compile_model
from driver.hal.enums import ErrorStatus, OperandType as T, OperationType as Op
from driver.hal.structs import OutputShape
from driver.validation import validate_model
from hal_client.builder import ModelBuilder, make_request, out_like
from tests.driver.execution import (ALL_PATHS, SHAPE_PATHS, Path, execute, prepare,
                                    prepare_status)
from tests.models import (F32, I32, fibonacci_fc_model, fibonacci_fc_reference, if_add_sub_model,
                          mkn_model, mkn_reference)


def run(prepared, inputs, expected_outputs, path=Path.SYNC):
    """Execute, expecting success; ``expected_outputs`` lists (shape, dtype) per output. The
    paths that report shapes must report these. Returns the outputs as written."""
    io = make_request(inputs, [out_like(dtype, shape) for shape, dtype in expected_outputs])
    outcome = execute(prepared, io.request, path)
    assert outcome.status == ErrorStatus.NONE, outcome
    shapes = [list(shape) for shape, _ in expected_outputs]
    if path in SHAPE_PATHS:
        assert outcome.output_shapes == [OutputShape(shape, True) for shape in shapes]
    return [io.output(k, shape) for k, shape in enumerate(shapes)]


def assert_exact(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, (actual, expected)
    np.testing.assert_array_equal(actual, expected)


# --- Fibonacci: FULLY_CONNECTED in a WHILE body ---------------------------------------------

@pytest.fixture(scope="module")
def fibonacci():
    return prepare(fibonacci_fc_model())


@pytest.mark.parametrize("n", [0, 1, 2, 3, 10, 30])
def test_fibonacci_while(fibonacci, n):
    (fib,) = run(fibonacci, [np.array([n], I32)], [([1, 2], F32)])
    assert_exact(fib, fibonacci_fc_reference(n))


@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
def test_fibonacci_while_on_every_path(fibonacci, path):
    (fib,) = run(fibonacci, [np.array([12], I32)], [([1, 2], F32)], path)
    assert_exact(fib, fibonacci_fc_reference(12))
    assert fib.tolist() == [[144.0, 233.0]]


# --- sum of powers: a WHILE inside a WHILE body ----------------------------------------------

def sum_of_powers_model():
    """sum = 0; i = 0; while i <= n: { xi = 1; j = 0; while j < i: { xi *= x; j += 1 };
    sum += xi; i += 1 } -> sum = x^0 + ... + x^n."""
    mb = ModelBuilder()
    inner_cond = mb.subgraph()
    _xi, j, _x, i = (inner_cond.input(T.TENSOR_FLOAT32, [2]), inner_cond.input(T.TENSOR_INT32, [1]),
                     inner_cond.input(T.TENSOR_FLOAT32, [2]), inner_cond.input(T.TENSOR_INT32, [1]))
    inner_cond.outputs(inner_cond.compare(Op.LESS, j, i))

    inner_body = mb.subgraph()
    xi, j, x, _i = (inner_body.input(T.TENSOR_FLOAT32, [2]), inner_body.input(T.TENSOR_INT32, [1]),
                    inner_body.input(T.TENSOR_FLOAT32, [2]), inner_body.input(T.TENSOR_INT32, [1]))
    inner_body.outputs(inner_body.mul(xi, x), inner_body.add(j, inner_body.constant(T.TENSOR_INT32, [1])))

    outer_cond = mb.subgraph()
    _sum, i, _x, n = (outer_cond.input(T.TENSOR_FLOAT32, [2]), outer_cond.input(T.TENSOR_INT32, [1]),
                      outer_cond.input(T.TENSOR_FLOAT32, [2]), outer_cond.input(T.TENSOR_INT32, [1]))
    outer_cond.outputs(outer_cond.compare(Op.LESS_EQUAL, i, n))

    outer_body = mb.subgraph()
    total, i, x, _n = (outer_body.input(T.TENSOR_FLOAT32, [2]), outer_body.input(T.TENSOR_INT32, [1]),
                       outer_body.input(T.TENSOR_FLOAT32, [2]), outer_body.input(T.TENSOR_INT32, [1]))
    ones = outer_body.constant(T.TENSOR_FLOAT32, [1, 1])
    j0 = outer_body.constant(T.TENSOR_INT32, [0])
    (xi,) = outer_body.while_(inner_cond, inner_body, [ones, j0, x, i], count=1)
    outer_body.outputs(outer_body.add(total, xi),
                       outer_body.add(i, outer_body.constant(T.TENSOR_INT32, [1])))

    main = mb.main
    x, n = main.input(T.TENSOR_FLOAT32, [2]), main.input(T.TENSOR_INT32, [1])
    sum0, i0 = main.constant(T.TENSOR_FLOAT32, [0, 0]), main.constant(T.TENSOR_INT32, [0])
    main.outputs(*main.while_(outer_cond, outer_body, [sum0, i0, x, n], count=1))
    return mb.build()


def sum_of_powers_reference(x: np.ndarray, n: int) -> np.ndarray:
    total = np.zeros(2, F32)
    for i in range(n + 1):
        xi = np.ones(2, F32)
        for _ in range(i):
            xi = xi * x
        total = total + xi
    return total


@pytest.mark.parametrize("x, n", [([2.0, -0.5], 0), ([2.0, -0.5], 5), ([1.1, 0.3], 7), ([3.0, -1.0], 1)])
def test_sum_of_powers_nested_while(x, n):
    prepared = prepare(sum_of_powers_model())
    x = np.array(x, F32)
    (total,) = run(prepared, [x, np.array([n], I32)], [([2], F32)])
    assert_exact(total, sum_of_powers_reference(x, n))


# --- IF -----------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
@pytest.mark.parametrize("condition", [True, False])
def test_if_takes_the_right_branch(condition, path):
    prepared = prepare(if_add_sub_model())
    a, b = np.array([1.5, -2.0, 100.0], F32), np.array([0.25, 8.0, -3.0], F32)
    (result,) = run(prepared, [np.array([condition]), a, b], [([3], F32)], path)
    assert_exact(result, a + b if condition else a - b)


def if_in_while_model():
    """while i < n: { x = IF(x > 10, then: x - 7, else: x * 2)(x); i += 1 } -> x."""
    mb = ModelBuilder()
    then, otherwise = mb.subgraph(), mb.subgraph()
    x = then.input(T.TENSOR_FLOAT32, [1])
    then.outputs(then.sub(x, then.constant(T.TENSOR_FLOAT32, [7])))
    x = otherwise.input(T.TENSOR_FLOAT32, [1])
    otherwise.outputs(otherwise.mul(x, otherwise.constant(T.TENSOR_FLOAT32, [2])))

    cond = mb.subgraph()
    _x, i, n = cond.input(T.TENSOR_FLOAT32, [1]), cond.input(T.TENSOR_INT32, [1]), cond.input(T.TENSOR_INT32, [1])
    cond.outputs(cond.compare(Op.LESS, i, n))

    body = mb.subgraph()
    x, i, _n = body.input(T.TENSOR_FLOAT32, [1]), body.input(T.TENSOR_INT32, [1]), body.input(T.TENSOR_INT32, [1])
    big = body.compare(Op.GREATER, x, body.constant(T.TENSOR_FLOAT32, [10]))
    (next_x,) = body.if_(big, then, otherwise, [x])
    body.outputs(next_x, body.add(i, body.constant(T.TENSOR_INT32, [1])))

    main = mb.main
    x, n = main.input(T.TENSOR_FLOAT32, [1]), main.input(T.TENSOR_INT32, [1])
    main.outputs(*main.while_(cond, body, [x, main.constant(T.TENSOR_INT32, [0]), n], count=1))
    return mb.build()


def if_in_while_reference(x: float, n: int) -> np.ndarray:
    value = np.array([x], F32)
    for _ in range(n):
        value = value - F32(7) if value[0] > 10 else value * F32(2)
    return value


@pytest.mark.parametrize("x, n", [(1.0, 0), (1.0, 9), (3.25, 20), (50.0, 4)])
def test_if_nested_in_while_body(x, n):
    prepared = prepare(if_in_while_model())
    (result,) = run(prepared, [np.array([x], F32), np.array([n], I32)], [([1], F32)])
    assert_exact(result, if_in_while_reference(x, n))


# --- WHILE with m input-output, k state-only and n input-only operands -----------------------

@pytest.mark.parametrize("limit", [0, 1, 6])
def test_while_with_state_only_and_input_only_operands(limit):
    prepared = prepare(mkn_model())
    a0, b0, step = np.array([1, -2], F32), np.array([0.5, 4], F32), np.array([0.25, 3], F32)
    a, b = run(prepared, [a0, b0, np.array([limit], I32), step], [([2], F32), ([2], F32)])
    expected_a, expected_b = mkn_reference(a0, b0, limit, step)
    assert_exact(a, expected_a)
    assert_exact(b, expected_b)
    if limit == 0:      # zero iterations: the outputs are the inputs
        assert_exact(a, a0)
        assert_exact(b, b0)


# --- loop conditions on int32 [1] counters ---------------------------------------------------

COMPARISONS = {Op.LESS: operator.lt, Op.LESS_EQUAL: operator.le, Op.GREATER: operator.gt,
               Op.GREATER_EQUAL: operator.ge, Op.EQUAL: operator.eq, Op.NOT_EQUAL: operator.ne}


def counter_model(comparison: Op, step: int):
    """(i, count) = (start, 0); while comparison(i, limit): (i, count) = (i + step, count + 1)."""
    mb = ModelBuilder()
    cond = mb.subgraph()
    i, _count, limit = [cond.input(T.TENSOR_INT32, [1]) for _ in range(3)]
    cond.outputs(cond.compare(comparison, i, limit))
    body = mb.subgraph()
    i, count, _limit = [body.input(T.TENSOR_INT32, [1]) for _ in range(3)]
    body.outputs(body.add(i, body.constant(T.TENSOR_INT32, [step])),
                 body.add(count, body.constant(T.TENSOR_INT32, [1])))
    main = mb.main
    start, limit = main.input(T.TENSOR_INT32, [1]), main.input(T.TENSOR_INT32, [1])
    main.outputs(*main.while_(cond, body, [start, main.constant(T.TENSOR_INT32, [0]), limit]))
    return mb.build()


def counter_reference(comparison: Op, start: int, limit: int, step: int) -> tuple[int, int]:
    i, count = start, 0
    while COMPARISONS[comparison](i, limit):
        i, count = i + step, count + 1
    return i, count


@pytest.mark.parametrize("comparison, start, limit, step", [
    (Op.LESS, 0, 5, 1), (Op.LESS, 5, 3, 1), (Op.LESS_EQUAL, 0, 5, 1), (Op.LESS_EQUAL, -4, -4, 2),
    (Op.GREATER, 10, 3, -2), (Op.GREATER, 3, 3, -1), (Op.GREATER_EQUAL, 9, 3, -3),
    (Op.EQUAL, 7, 7, 1), (Op.EQUAL, 6, 7, 1), (Op.NOT_EQUAL, 0, 12, 3),
], ids=lambda v: v.name if isinstance(v, Op) else str(v))
def test_loop_condition_comparisons(comparison, start, limit, step):
    prepared = prepare(counter_model(comparison, step))
    i, count = run(prepared, [np.array([start], I32), np.array([limit], I32)], [([1], I32), ([1], I32)])
    expected_i, expected_count = counter_reference(comparison, start, limit, step)
    assert (int(i[0]), int(count[0])) == (expected_i, expected_count)


# --- operands of unknown dimensions / rank ---------------------------------------------------

def unknown_shape_if_model():
    """IF(c, then: a + b, else: a * b)(a, b) with a of dimensions [0, 3], b of unknown rank,
    branch outputs and the model's output of unknown rank: every shape comes from the
    request."""
    mb = ModelBuilder()
    then, otherwise = mb.subgraph(), mb.subgraph()
    for branch, operation in ((then, Op.ADD), (otherwise, Op.MUL)):
        a, b = branch.input(T.TENSOR_FLOAT32, [0, 3]), branch.input(T.TENSOR_FLOAT32, [])
        branch.outputs(branch.arithmetic(operation, a, b, dims=[]))
    main = mb.main
    c = main.input(T.TENSOR_BOOL8, [1])
    a, b = main.input(T.TENSOR_FLOAT32, [0, 3]), main.input(T.TENSOR_FLOAT32, [])
    main.outputs(*main.if_(c, then, otherwise, [a, b], outputs=[(T.TENSOR_FLOAT32, [])]))
    return mb.build()


@pytest.mark.parametrize("path", [Path.SYNC, Path.ASYNC, Path.BURST], ids=lambda p: p.value)
@pytest.mark.parametrize("condition", [True, False])
@pytest.mark.parametrize("a_shape, b_shape", [([2, 3], [3]), ([4, 3], [4, 3]), ([1, 3], [2, 1, 1])])
def test_if_with_outputs_of_unknown_shape(condition, a_shape, b_shape, path):
    prepared = prepare(unknown_shape_if_model())
    rng = np.random.default_rng(7)
    a = rng.standard_normal(a_shape).astype(F32)
    b = rng.standard_normal(b_shape).astype(F32)
    expected = a + b if condition else a * b
    (result,) = run(prepared, [np.array([condition]), a, b], [(list(expected.shape), F32)], path)
    assert_exact(result, expected)


# --- a WHILE whose state grows -----------------------------------------------------------------

def growing_while_model():
    """x = input; while i < n: (x, i) = (CONCATENATION(x, [7]), i + 1) -> x, with x of
    unknown dimensions everywhere: each iteration makes the state one element longer."""
    mb = ModelBuilder()
    cond = mb.subgraph()
    _x, i, n = cond.input(T.TENSOR_FLOAT32, [0]), cond.input(T.TENSOR_INT32, [1]), cond.input(T.TENSOR_INT32, [1])
    cond.outputs(cond.compare(Op.LESS, i, n))
    body = mb.subgraph()
    x, i, _n = body.input(T.TENSOR_FLOAT32, [0]), body.input(T.TENSOR_INT32, [1]), body.input(T.TENSOR_INT32, [1])
    seven = body.constant(T.TENSOR_FLOAT32, [7])
    grown = body.apply(Op.CONCATENATION, [x, seven, body.int32(0)], T.TENSOR_FLOAT32, [0])
    body.outputs(grown, body.add(i, body.constant(T.TENSOR_INT32, [1])))
    main = mb.main
    x, n = main.input(T.TENSOR_FLOAT32, [0]), main.input(T.TENSOR_INT32, [1])
    main.outputs(*main.while_(cond, body, [x, main.constant(T.TENSOR_INT32, [0]), n], count=1))
    return mb.build()


@pytest.mark.parametrize("path", SHAPE_PATHS, ids=lambda p: p.value)
@pytest.mark.parametrize("n", [0, 1, 5])
def test_while_state_growing_each_iteration(n, path):
    x = np.array([1.5, 2.5], F32)
    (result,) = run(prepare(growing_while_model()), [x, np.array([n], I32)], [([2 + n], F32)], path)
    assert_exact(result, np.concatenate([x, np.full(n, 7, F32)]))


def test_while_state_growing_each_iteration_fenced():
    """A fenced execution needs every output shape known: the request states it."""
    prepared = prepare(growing_while_model())
    x = np.array([1.5, 2.5], F32)
    io = make_request([x, np.array([3], I32)], [out_like(F32, [5], state_dims=True)])
    assert execute(prepared, io.request, Path.FENCED).status == ErrorStatus.NONE
    assert_exact(io.output(0, [5]), np.array([1.5, 2.5, 7, 7, 7], F32))


def test_growing_state_in_the_executor():
    """The executor alone (compile_model + a plan run), as the paths above use it."""
    model = growing_while_model()
    validate_model(model)
    plan = compile_model(model).plans[0]
    x = np.array([1.5, 2.5], F32)
    (result,) = plan.run_outputs([x, np.array([2], I32)], ExecutionContext())
    assert_exact(result, np.array([1.5, 2.5, 7, 7], F32))


def test_strict_hal_1_3_rule_refuses_while_operands_of_unknown_size():
    """The HAL 1.3 reference rule, still available to callers who ask for it."""
    with pytest.raises(ValidationError, match="WHILE requires"):
        validate_model(growing_while_model(), allow_unknown_size_while=False)


# --- a prepared model is independent of the client's Model --------------------------------

def test_prepared_model_is_unaffected_by_later_changes_to_the_model():
    """Preparation copies what it needs: the client may rewrite or close its pools and
    change its Model afterwards."""
    model = fibonacci_fc_model()
    prepared = prepare(model)
    for pool in model.pools:
        pool.write(bytes(pool.size))
        pool.close()
    model.operandValues = bytes(len(model.operandValues))
    model.referenced[1].operations.clear()
    model.main.operands[0].dimensions = [7]
    (fib,) = run(prepared, [np.array([9], I32)], [([1, 2], F32)])
    assert_exact(fib, fibonacci_fc_reference(9))


# --- deep nesting ------------------------------------------------------------------------

def nested_if_model(depth: int):
    """main -> IF -> subgraph 0 -> IF -> ... -> subgraph depth-1: x + 1. Both branches of
    every IF name the next subgraph, so the result is x + 1 either way."""
    mb = ModelBuilder()
    levels = [mb.subgraph() for _ in range(depth)]
    innermost = levels[-1]
    _c, x = innermost.input(T.TENSOR_BOOL8, [1]), innermost.input(T.TENSOR_FLOAT32, [1])
    innermost.outputs(innermost.add(x, innermost.constant(T.TENSOR_FLOAT32, [1])))
    for level, inner in zip(reversed(levels[:-1]), reversed(levels[1:])):
        c, x = level.input(T.TENSOR_BOOL8, [1]), level.input(T.TENSOR_FLOAT32, [1])
        level.outputs(*level.if_(c, inner, inner, [c, x]))
    c, x = mb.main.input(T.TENSOR_BOOL8, [1]), mb.main.input(T.TENSOR_FLOAT32, [1])
    mb.main.outputs(*mb.main.if_(c, levels[0], levels[0], [c, x]))
    return mb.build()


def run_nested(depth: int):
    """(preparation status, execution status or None, result or None)."""
    _launch, status, prepared = prepare_status(SampleDriver(), nested_if_model(depth))
    if prepared is None:
        return status, None, None
    io = make_request([np.array([True]), np.array([2.5], F32)], [out_like(F32, [1])])
    outcome = execute(prepared, io.request, Path.SYNC)
    return status, outcome.status, io.output(0, [1])


def test_nested_control_flow_runs():
    assert run_nested(60) == (ErrorStatus.NONE, ErrorStatus.NONE, np.array([3.5], F32))


def test_very_deep_control_flow_answers_with_a_status():
    preparation, execution, _result = run_nested(500)
    assert preparation != ErrorStatus.NONE or execution is not None
