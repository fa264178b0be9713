"""Running compiled plans: static elementwise steps call their ufunc directly and still
report what the kernel reports; floating-point errors are ignored once per execution
(IEEE results, no warnings, the caller's numpy state untouched); the execution paths'
shortcuts (fenced executions with nothing to wait for, the asynchronous worker pool)."""
from __future__ import annotations

import dataclasses
import threading
import time
import warnings

import numpy as np
import pytest

from driver.errors import ValidationError
from driver.executor import ExecutionContext, compile_model, plan as plan_module
from driver.hal.enums import ErrorStatus, MeasureTiming, OperandType as T, OperationType as Op
from driver.hal.structs import OptionalTimeoutDuration, OptionalTimePoint
from driver.hal.callbacks import ExecutionCallback
from driver.sync_fence import FenceState, SyncFence
from driver.validation import validate_model
from hal_client.builder import ModelBuilder, make_request, out_like
from tests.driver.execution import ALL_PATHS, Path, execute, prepare

F32, I32 = np.float32, np.int32


def binary_model(operation: int, operand_type: int, dims: list[int]):
    mb = ModelBuilder()
    main = mb.main
    a, b = main.input(operand_type, dims), main.input(operand_type, dims)
    if operation in (Op.LESS, Op.GREATER):
        main.outputs(main.compare(operation, a, b))
    else:
        main.outputs(main.arithmetic(operation, a, b))
    return mb.build()


def compiled_main(model):
    validate_model(model)
    return compile_model(model).plans[0]


@pytest.mark.parametrize("operation, operand_type", [
    (Op.ADD, T.TENSOR_INT32), (Op.SUB, T.TENSOR_FLOAT32), (Op.MUL, T.TENSOR_FLOAT16),
    (Op.DIV, T.TENSOR_INT32), (Op.LESS, T.TENSOR_FLOAT32), (Op.GREATER, T.TENSOR_INT32),
])
def test_static_elementwise_steps_call_the_ufunc_with_the_kernels_result(
        monkeypatch, operation, operand_type):
    lookup, calls = plan_module.lookup, []

    def build_counted(ctx):
        kernel = lookup(operation).build(ctx)

        def counted(*args):
            calls.append(args)
            return kernel(*args)
        counted.binary_ufunc = kernel.binary_ufunc
        return counted
    counted_definition = dataclasses.replace(lookup(operation), build=build_counted)
    monkeypatch.setattr(plan_module, "lookup", lambda operation_type: (
        counted_definition if operation_type == operation else lookup(operation_type)))
    plan = compiled_main(binary_model(operation, operand_type, [2, 3]))
    dtype = {T.TENSOR_INT32: I32, T.TENSOR_FLOAT32: F32, T.TENSOR_FLOAT16: np.float16}[operand_type]
    rng = np.random.default_rng(7)
    a = rng.integers(-50, 50, (2, 3)).astype(dtype)
    b = rng.integers(1, 9, (2, 3)).astype(dtype)
    (result,) = plan.run_outputs([a, b], ExecutionContext())
    expected = {Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply, Op.DIV: np.floor_divide,
                Op.LESS: np.less, Op.GREATER: np.greater}[operation](a, b)
    assert result.dtype == expected.dtype and np.array_equal(result, expected)
    assert calls == []


def test_a_ufunc_step_given_unplanned_shapes_reports_what_the_kernel_reports():
    """Planned shapes are guaranteed by the checks upstream; should a value arrive with
    another shape anyway, the kernel's own broadcast message comes out, not a numpy error."""
    plan = compiled_main(binary_model(Op.ADD, T.TENSOR_INT32, [3]))
    with pytest.raises(ValidationError, match=r"input shapes \[2\] and \[3\] do not broadcast"):
        plan.run_outputs([np.zeros(2, I32), np.zeros(3, I32)], ExecutionContext())


@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
def test_float_errors_give_ieee_results_without_warnings(path):
    prepared = prepare(binary_model(Op.DIV, T.TENSOR_FLOAT32, [4]))
    io = make_request([np.array([1, -1, 0, 3e38], F32), np.array([0, 0, 0, 1e-38], F32)],
                      [out_like(F32, [4])])
    before = np.geterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        outcome = execute(prepared, io.request, path)
    assert outcome.status == ErrorStatus.NONE, outcome
    result = io.output(0, [4])
    assert result[0] == np.inf and result[1] == -np.inf and np.isnan(result[2])
    assert result[3] == np.inf
    assert np.geterr() == before, "the caller's floating-point error state changed"


def test_int32_division_by_zero_gives_zero_without_warnings():
    prepared = prepare(binary_model(Op.DIV, T.TENSOR_INT32, [3]))
    io = make_request([np.array([7, -7, np.iinfo(I32).min], I32), np.array([0, 2, -1], I32)],
                      [out_like(I32, [3])])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert execute(prepared, io.request, Path.SYNC).status == ErrorStatus.NONE
    assert io.output(0, [3]).tolist() == [0, -4, np.iinfo(I32).min]


# --- fenced executions ------------------------------------------------------------------------

def add_request():
    return make_request([np.array([2], I32), np.array([3], I32)], [out_like(I32, [1])])


@pytest.mark.parametrize("wait_for", [[], [SyncFence.signaled()]], ids=["no fences", "signalled"])
def test_fenced_execution_with_nothing_to_wait_for_is_done_on_return(wait_for):
    prepared = prepare(binary_model(Op.ADD, T.TENSOR_INT32, [1]))
    io = add_request()
    status, done, info = prepared.executeFenced(io.request, wait_for, MeasureTiming.NO,
                                                OptionalTimePoint(), OptionalTimeoutDuration(),
                                                OptionalTimeoutDuration())
    assert status == ErrorStatus.NONE
    assert done.state == FenceState.SIGNALED
    assert info.getExecutionInfo()[0] == ErrorStatus.NONE
    assert io.output(0, [1]).tolist() == [5]


# --- asynchronous executions ------------------------------------------------------------------

def test_a_bug_in_an_asynchronous_execution_notifies_and_reaches_the_excepthook(monkeypatch):
    import driver.prepared_model as prepared_model_module

    prepared = prepare(binary_model(Op.ADD, T.TENSOR_INT32, [1]))
    reported = []
    monkeypatch.setattr(threading, "excepthook", lambda args: reported.append(args.exc_type))

    def broken_run(*_args, **_kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(prepared_model_module, "run_request", broken_run)
    callback = ExecutionCallback()
    launch = prepared.execute_1_3(add_request().request, MeasureTiming.NO, OptionalTimePoint(),
                                  OptionalTimeoutDuration(), callback)
    assert launch == ErrorStatus.NONE
    assert callback.wait(10)[0] == ErrorStatus.GENERAL_FAILURE
    for _ in range(1000):       # the hook runs just after the notification
        if reported:
            break
        time.sleep(0.01)
    assert reported == [ZeroDivisionError]
