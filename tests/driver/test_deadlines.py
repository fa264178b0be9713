"""Deadlines (OptionalTimePoint), executeFenced's wait fences and its timeout duration, and
IFencedExecutionCallback.getExecutionInfo."""
from __future__ import annotations

import gc
import os
import threading
import time

import numpy as np
import pytest

from driver.device import SampleDriver
from driver.hal.enums import UINT64_MAX, ErrorStatus, MeasureTiming
from driver.hal.structs import OptionalTimePoint
from driver.sync_fence import FenceState, SyncFence
from hal_client.builder import make_request, out_like
from tests.driver.execution import (ALL_PATHS, CALLBACK_TIMEOUT_S, EARLY_SLACK_S, MARGIN_S,
                                    MS, Path, deadline_in, duration, execute, passed_deadline,
                                    prepare_status)
from tests.models import finite_loop_model

MISSED_DEADLINE = (ErrorStatus.MISSED_DEADLINE_TRANSIENT, ErrorStatus.MISSED_DEADLINE_PERSISTENT)
UNLIMITED = OptionalTimePoint(nanosecondsSinceEpoch=UINT64_MAX)
FILL = 0xAB


def loop_request():
    io = make_request([np.array([0], np.float32)], [out_like(np.float32, [1])])
    io.clear_outputs(FILL)
    return io


#: A timer-signalled fence starts counting just before the call it is passed to; on a
#: loaded machine the call may begin a little later.
TIMER_SLACK_S = 0.05


def fence_signalled_after(seconds: float, state: FenceState = FenceState.SIGNALED) -> SyncFence:
    fence = SyncFence()
    timer = threading.Timer(seconds, fence.signal, args=(state,))
    timer.daemon = True
    timer.start()
    return fence


# --- preparation (past its deadline: test_hal_callbacks) ------------------------------------

def test_prepare_with_unlimited_or_future_deadline_succeeds():
    for deadline in (UNLIMITED, deadline_in(60)):
        launch, status, prepared = prepare_status(SampleDriver(), finite_loop_model(), deadline=deadline)
        assert (launch, status) == (ErrorStatus.NONE, ErrorStatus.NONE)
        assert prepared is not None


# --- executions ----------------------------------------------------------------------------

@pytest.mark.parametrize("path", ALL_PATHS, ids=[p.value for p in ALL_PATHS])
def test_execution_with_passed_deadline_fails_without_starting(finite_loop, path):
    io = loop_request()
    outcome = execute(finite_loop, io.request, path, deadline=passed_deadline(),
                      measure=MeasureTiming.YES)
    assert outcome.status == ErrorStatus.MISSED_DEADLINE_PERSISTENT, outcome
    assert io.output_pool.read() == bytes([FILL]) * io.output_pool.size, "outputs were written"


@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
def test_execution_with_unlimited_deadline_succeeds(finite_loop, path):
    io = loop_request()
    outcome = execute(finite_loop, io.request, path, deadline=UNLIMITED)
    assert outcome.status == ErrorStatus.NONE, outcome
    assert io.output(0, [1]).tolist() == [100.0]


@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
def test_deadline_passing_during_a_loop_aborts_it(infinite_loop, path):
    """The deadline (150 ms away) comes long before the loop timeout (2 s)."""
    outcome = execute(infinite_loop, loop_request().request, path, deadline=deadline_in(0.15),
                      loop_timeout=duration(2000 * MS))
    assert outcome.status == ErrorStatus.MISSED_DEADLINE_TRANSIENT, outcome
    assert 0.15 - EARLY_SLACK_S <= outcome.elapsed_s <= 0.15 + MARGIN_S, outcome.elapsed_s


# --- executeFenced: wait fences and the duration after them ----------------------------------

def test_fenced_duration_counts_from_the_fence_signal(finite_loop):
    """The fence signals after 300 ms and the duration is 150 ms: counted from the call it
    would have expired before the execution could start."""
    io = loop_request()
    outcome = execute(finite_loop, io.request, Path.FENCED, wait_for=[fence_signalled_after(0.3)],
                      fenced_duration=duration(150 * MS))
    assert outcome.status == ErrorStatus.NONE, outcome
    assert outcome.elapsed_s >= 0.3 - TIMER_SLACK_S
    assert io.output(0, [1]).tolist() == [100.0]


def test_fenced_duration_aborts_a_long_execution(infinite_loop):
    outcome = execute(infinite_loop, loop_request().request, Path.FENCED,
                      wait_for=[fence_signalled_after(0.2)], fenced_duration=duration(100 * MS),
                      loop_timeout=duration(2000 * MS))
    assert outcome.status in MISSED_DEADLINE, outcome
    assert 0.3 - TIMER_SLACK_S <= outcome.elapsed_s <= 0.3 + MARGIN_S, outcome.elapsed_s


def test_fenced_execution_waits_for_every_fence(finite_loop):
    # Timed from the fences' start, not the call's: on a busy machine the request may take
    # a while to build.
    fences_started = time.monotonic()
    fences = [SyncFence.signaled(), fence_signalled_after(0.2), fence_signalled_after(0.05)]
    outcome = execute(finite_loop, loop_request().request, Path.FENCED, wait_for=fences)
    assert outcome.status == ErrorStatus.NONE, outcome
    assert time.monotonic() - fences_started >= 0.2 - TIMER_SLACK_S


def test_deadline_passing_while_waiting_for_fences(finite_loop):
    never = SyncFence()
    outcome = execute(finite_loop, loop_request().request, Path.FENCED, wait_for=[never],
                      deadline=deadline_in(0.1))
    never.signal()
    assert outcome.status in MISSED_DEADLINE, outcome
    assert outcome.elapsed_s <= 0.1 + MARGIN_S


@pytest.mark.parametrize("delay", [None, 0.1], ids=["already", "later"])
def test_wait_fence_signalled_with_error_fails_the_execution(finite_loop, delay):
    fence = (SyncFence.signaled(FenceState.ERROR) if delay is None
             else fence_signalled_after(delay, FenceState.ERROR))
    io = loop_request()
    outcome = execute(finite_loop, io.request, Path.FENCED, wait_for=[SyncFence.signaled(), fence])
    assert outcome.status != ErrorStatus.NONE, outcome
    assert io.output_pool.read() == bytes([FILL]) * io.output_pool.size, "outputs were written"


def test_fenced_executions_chain_through_their_sync_fences(finite_loop, infinite_loop):
    """As the VTS does: a second execution waits for the fence the first returned; a first
    execution that fails makes the second fail."""
    first = loop_request()
    status, done, _info = finite_loop.executeFenced(first.request, [], MeasureTiming.NO,
                                                    OptionalTimePoint(), duration(None), duration(None))
    assert status == ErrorStatus.NONE
    second = loop_request()
    outcome = execute(finite_loop, second.request, Path.FENCED, wait_for=[done])
    assert outcome.status == ErrorStatus.NONE
    assert done.state == FenceState.SIGNALED
    assert second.output(0, [1]).tolist() == [100.0]

    status, failed, _info = infinite_loop.executeFenced(loop_request().request, [], MeasureTiming.NO,
                                                        OptionalTimePoint(), duration(50 * MS),
                                                        duration(None))
    assert status == ErrorStatus.NONE
    outcome = execute(finite_loop, loop_request().request, Path.FENCED, wait_for=[failed])
    assert failed.state == FenceState.ERROR
    assert outcome.status != ErrorStatus.NONE


# --- getExecutionInfo ------------------------------------------------------------------------

def test_get_execution_info_timings(finite_loop):
    """(status, timingLaunched, timingFenced): launched counts from the call, fenced from the
    moment the wait fences signalled (here 200 ms later); both in microseconds."""
    io = loop_request()
    fence = SyncFence()
    started = time.monotonic()
    status, done, info = finite_loop.executeFenced(io.request, [fence], MeasureTiming.YES,
                                                   OptionalTimePoint(), duration(None), duration(None))
    time.sleep(0.2)
    fence.signal()
    assert status == ErrorStatus.NONE and done is not None and info is not None
    info_status, launched, fenced = info.getExecutionInfo()
    waited_us = (time.monotonic() - started) * 1e6
    assert info_status == ErrorStatus.NONE
    assert done.state == FenceState.SIGNALED
    for timing in (launched, fenced):
        assert timing.timeOnDevice != UINT64_MAX and timing.timeInDriver != UINT64_MAX
        assert 0 <= timing.timeOnDevice <= timing.timeInDriver
    assert launched.timeInDriver >= 200_000
    assert fenced.timeInDriver <= launched.timeInDriver - 200_000
    assert launched.timeInDriver <= waited_us
    # The same answer on every call.
    assert info.getExecutionInfo() == (info_status, launched, fenced)


# --- deadlines of any value ------------------------------------------------------------------

#: Deadlines the driver's clock will only reach in centuries (past what a lock's timeout
#: holds: threading.TIMEOUT_MAX), or has passed. The farthest first: an earlier deadline
#: still pending would be the one the deadline timer waits for.
ANY_DEADLINES = {"UINT64_MAX": lambda: UINT64_MAX, "2^63": lambda: 2**63, "2^62": lambda: 2**62,
                 "now+1": lambda: time.monotonic_ns() + 1, "now": time.monotonic_ns,
                 "1": lambda: 1, "0": lambda: 0}


@pytest.mark.parametrize("deadline_ns", ANY_DEADLINES.values(), ids=ANY_DEADLINES.keys())
def test_a_fenced_deadline_of_any_value_leaves_later_deadlines_kept(finite_loop, deadline_ns):
    """A fenced execution waiting on its fences with any deadline; then one with a deadline
    100 ms away, whose fence never signals, still ends missing it."""
    never = SyncFence()
    status, done, info = finite_loop.executeFenced(
        loop_request().request, [never], MeasureTiming.NO,
        OptionalTimePoint(nanosecondsSinceEpoch=deadline_ns()), duration(None), duration(None))
    assert status in (ErrorStatus.NONE, ErrorStatus.MISSED_DEADLINE_PERSISTENT)
    time.sleep(0.05)     # the deadline timer takes the first deadline
    outcome = execute(finite_loop, loop_request().request, Path.FENCED, wait_for=[SyncFence()],
                      deadline=deadline_in(0.1))
    assert outcome.status in MISSED_DEADLINE, outcome
    never.signal()
    if status == ErrorStatus.NONE:
        assert done.wait(CALLBACK_TIMEOUT_S) != FenceState.ACTIVE
        assert info.getExecutionInfo()[0] in (ErrorStatus.NONE, *MISSED_DEADLINE)


def open_file_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_a_finished_fenced_execution_frees_the_request_before_its_deadline(finite_loop):
    """An execution holds its copy of the request (and so the caller's pools) until it ends,
    not until its deadline: after many executions with a deadline an hour away have
    finished and the caller dropped its pools, their memory is freed."""
    gc.collect()
    before = open_file_descriptors()
    for _ in range(50):
        io, fence = loop_request(), SyncFence()
        status, done, _info = finite_loop.executeFenced(
            io.request, [fence], MeasureTiming.NO, deadline_in(3600), duration(None), duration(None))
        assert status == ErrorStatus.NONE
        fence.signal()
        assert done.wait(CALLBACK_TIMEOUT_S) == FenceState.SIGNALED
        assert io.output(0, [1]).tolist() == [100.0]
        del io, fence, done, _info
    gc.collect()
    # Each request has two pools, each its own file descriptor.
    assert open_file_descriptors() - before < 10


@pytest.mark.parametrize("timeout_s", [1e10, 1e300, float("inf")])
def test_a_wait_of_any_length_ends_when_the_fence_signals(timeout_s):
    """A lock refuses a timeout past threading.TIMEOUT_MAX: a longer wait is as long as that."""
    fence = fence_signalled_after(0.05)
    assert fence.wait(timeout_s) == FenceState.SIGNALED
