"""Timing (MeasureTiming): UINT64_MAX in both fields unless measured on a successful
execution; measured values are microseconds with timeOnDevice <= timeInDriver, within the
wall-clock time the call took."""
from __future__ import annotations

import numpy as np
import pytest

from driver.hal.enums import UINT64_MAX, ErrorStatus, MeasureTiming, OperandType as T
from hal_client.builder import ModelBuilder, make_request, out_like
from hal_client.examples import count_condition
from tests.driver.execution import ALL_PATHS, MS, Path, assert_no_timing, duration, execute, prepare
from tests.models import infinite_loop_model

#: Clock granularity and rounding to whole microseconds.
SLACK_US = 1_000


def busy_loop_model():
    """while i < n: i = i + 1, on TENSOR_INT32 [1]: enough iterations to take measurable time."""
    mb = ModelBuilder()
    cond = count_condition(mb)
    body = mb.subgraph()
    i, n = body.input(T.TENSOR_INT32, [1]), body.input(T.TENSOR_INT32, [1])
    # The bound is carried as state (k = 1) rather than passed as input-only (n = 1).
    body.outputs(body.add(i, body.constant(T.TENSOR_INT32, [1])), body.copy(n))
    main = mb.main
    i0, n = main.input(T.TENSOR_INT32, [1]), main.input(T.TENSOR_INT32, [1])
    main.outputs(*main.while_(cond, body, [i0, n], count=1))
    return mb.build()


@pytest.fixture(scope="module")
def busy_loop():
    return prepare(busy_loop_model())


def busy_request(n: int = 2000, spare: int = 0):
    return make_request([np.array([0], np.int32), np.array([n], np.int32)],
                        [out_like(np.int32, [1], spare=spare)])


@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
def test_measured_timing_is_plausible(busy_loop, path):
    io = busy_request()
    outcome = execute(busy_loop, io.request, path, measure=MeasureTiming.YES)
    assert outcome.status == ErrorStatus.NONE, outcome
    assert io.output(0, [1]).tolist() == [2000]
    timing = outcome.timing
    assert UINT64_MAX not in (timing.timeOnDevice, timing.timeInDriver), timing
    assert 0 < timing.timeOnDevice <= timing.timeInDriver, timing
    assert timing.timeInDriver <= outcome.elapsed_s * 1e6 + SLACK_US, (timing, outcome.elapsed_s)
    if outcome.fenced_timing is not None:
        fenced = outcome.fenced_timing
        assert 0 < fenced.timeOnDevice <= fenced.timeInDriver <= timing.timeInDriver, (fenced, timing)


@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
def test_no_timing_unless_measured(busy_loop, path):
    outcome = execute(busy_loop, busy_request().request, path, measure=MeasureTiming.NO)
    assert outcome.status == ErrorStatus.NONE
    assert_no_timing(outcome.timing)
    if outcome.fenced_timing is not None:
        assert_no_timing(outcome.fenced_timing)


@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
@pytest.mark.parametrize("failure", ["invalid request", "insufficient output", "loop timeout"])
def test_no_timing_on_error(busy_loop, path, failure):
    prepared, io, loop_timeout = busy_loop, busy_request(), duration(None)
    if failure == "invalid request":
        io.request.inputs.pop()
    elif failure == "insufficient output":
        io = busy_request(spare=-1)
    else:
        prepared, io = prepare(infinite_loop_model()), make_request(
            [np.array([0], np.float32)], [out_like(np.float32, [1])])
        loop_timeout = duration(10 * MS)
    outcome = execute(prepared, io.request, path, measure=MeasureTiming.YES, loop_timeout=loop_timeout)
    assert outcome.status != ErrorStatus.NONE
    assert_no_timing(outcome.timing)
    if outcome.fenced_timing is not None:
        assert_no_timing(outcome.fenced_timing)


def test_time_on_device_grows_with_the_work(busy_loop):
    """More iterations, more device time: the measurement measures the execution."""
    # The quickest of a few short runs: one preempted run must not decide the test.
    short = min((execute(busy_loop, busy_request(10).request, Path.SYNC, measure=MeasureTiming.YES)
                 for _ in range(5)), key=lambda outcome: outcome.timing.timeOnDevice)
    long = execute(busy_loop, busy_request(20_000).request, Path.SYNC, measure=MeasureTiming.YES)
    assert short.status == long.status == ErrorStatus.NONE
    assert long.timing.timeOnDevice > 10 * short.timing.timeOnDevice, (short.timing, long.timing)
