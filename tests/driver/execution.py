"""Preparing models and running one request through any HAL 1.3 execution path, with the
results in one shape, so that tests can be parametrised over the paths."""
from __future__ import annotations

import enum
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Sequence

from driver.device import SampleDriver
from driver.hal.callbacks import ExecutionCallback, PreparedModelCallback
from driver.hal.enums import (ErrorStatus, ExecutionPreference, MeasureTiming, Priority,
                              UINT64_MAX)
from driver.hal.structs import (NO_TIMING, Model, OptionalTimeoutDuration, OptionalTimePoint,
                                OutputShape, Request, Timing)
from driver.sync_fence import FenceState, SyncFence

TOKEN = bytes(32)
#: Upper bound on any wait for a callback in these tests: far above any expected duration,
#: so a driver that never answers fails the test instead of hanging the suite.
CALLBACK_TIMEOUT_S = 30.0
MS = 1_000_000   # nanoseconds
#: How late an abort (loop timeout, deadline) may come after its time. Generous for a loaded
#: 2-core machine; what matters is that it ends near its time, not at some later check.
MARGIN_S = 0.5
#: Clocks and rounding: an abort may be reported a hair before its nominal time.
EARLY_SLACK_S = 0.01


class Path(enum.Enum):
    SYNC = "sync"
    ASYNC = "async"
    FENCED = "fenced"
    BURST = "burst"


ALL_PATHS = tuple(Path)
#: The paths that report output shapes (a fenced execution reports only a status).
SHAPE_PATHS = (Path.SYNC, Path.ASYNC, Path.BURST)


@dataclass
class Outcome:
    """What one execution reported. For FENCED, ``status`` is the launch status if that
    was an error, else getExecutionInfo's; ``timing`` is timingLaunched."""
    status: ErrorStatus
    output_shapes: list[OutputShape] = field(default_factory=list)
    timing: Timing = field(default_factory=Timing)
    fenced_timing: Optional[Timing] = None
    elapsed_s: float = 0.0


def deadline_in(seconds: Optional[float]) -> OptionalTimePoint:
    """An absolute deadline ``seconds`` from now on the driver's clock (None: no deadline)."""
    if seconds is None:
        return OptionalTimePoint()
    return OptionalTimePoint(nanosecondsSinceEpoch=time.monotonic_ns() + int(seconds * 1e9))


def passed_deadline() -> OptionalTimePoint:
    return OptionalTimePoint(nanosecondsSinceEpoch=max(time.monotonic_ns() - 1_000_000, 0))


def duration(nanoseconds: Optional[int]) -> OptionalTimeoutDuration:
    return OptionalTimeoutDuration(nanoseconds=nanoseconds)


def prepare_status(device, model: Model, *, deadline: OptionalTimePoint = OptionalTimePoint(),
                   preference=ExecutionPreference.FAST_SINGLE_ANSWER, priority=Priority.MEDIUM,
                   ) -> tuple[ErrorStatus, ErrorStatus, object]:
    """(launch status, callback status, prepared model or None)."""
    callback = PreparedModelCallback()
    launch = device.prepareModel_1_3(model, preference, priority, deadline, [], [], TOKEN, callback)
    status, prepared = callback.wait(CALLBACK_TIMEOUT_S)
    return launch, status, prepared


def prepare(model: Model, device=None):
    """A prepared model; fails the test unless preparation succeeds."""
    device = device or SampleDriver()
    launch, status, prepared = prepare_status(device, model)
    assert (launch, status) == (ErrorStatus.NONE, ErrorStatus.NONE), \
        f"preparation failed: launch {launch.name}, callback {status.name}"
    assert prepared is not None
    return prepared


def execute(prepared, request: Request, path: Path, *, measure=MeasureTiming.NO,
            deadline: OptionalTimePoint = OptionalTimePoint(),
            loop_timeout: OptionalTimeoutDuration = OptionalTimeoutDuration(),
            wait_for: Sequence[SyncFence] = (),
            fenced_duration: OptionalTimeoutDuration = OptionalTimeoutDuration(),
            burst=None, timeout_s: float = CALLBACK_TIMEOUT_S) -> Outcome:
    """Run ``request`` on ``path`` and wait (at most ``timeout_s``) for its result. A fenced
    execution's sync fence must be signalled exactly when the execution ends, SIGNALED for
    success and ERROR otherwise; ``burst`` reuses a burst context instead of configuring a
    new one. Every result is checked against check_result_contract (no output shapes and
    no timing where the HAL allows none)."""
    started = time.monotonic()
    if path is Path.SYNC:
        status, shapes, timing = prepared.executeSynchronously_1_3(request, measure, deadline,
                                                                   loop_timeout)
        outcome = Outcome(status, shapes, timing)
    elif path is Path.ASYNC:
        callback = ExecutionCallback()
        launch = prepared.execute_1_3(request, measure, deadline, loop_timeout, callback)
        status, shapes, timing = callback.wait(timeout_s)
        if launch != ErrorStatus.NONE:
            assert status == launch, f"launch status {launch.name} but callback {status.name}"
        outcome = Outcome(status, shapes, timing)
    elif path is Path.BURST:
        if burst is None:
            configured, burst = prepared.configureExecutionBurst(None)
            assert configured == ErrorStatus.NONE
        # One slot per pool; a malformed request still gets slots, so the burst sees it.
        pools = getattr(request, "pools", None)
        slots = list(range(len(pools))) if isinstance(pools, list) else [0, 1]
        status, shapes, timing = burst.execute(request, slots, measure, deadline, loop_timeout)
        outcome = Outcome(status, shapes, timing)
    else:
        outcome = _execute_fenced(prepared, request, measure, deadline, loop_timeout,
                                  list(wait_for), fenced_duration, timeout_s)
    outcome.elapsed_s = time.monotonic() - started
    check_result_contract(outcome, measure)
    return outcome


def check_result_contract(outcome: Outcome, measure) -> None:
    """What every execution result must satisfy (IPreparedModel.hal): output shapes only
    with NONE or OUTPUT_INSUFFICIENT_SIZE, timings only when measured and successful."""
    assert isinstance(outcome.status, ErrorStatus), outcome
    if outcome.status not in (ErrorStatus.NONE, ErrorStatus.OUTPUT_INSUFFICIENT_SIZE):
        assert outcome.output_shapes == [], outcome
    if measure != MeasureTiming.YES or outcome.status != ErrorStatus.NONE:
        assert_no_timing(outcome.timing)
        if outcome.fenced_timing is not None:
            assert_no_timing(outcome.fenced_timing)


def _execute_fenced(prepared, request, measure, deadline, loop_timeout, wait_for,
                    fenced_duration, timeout_s) -> Outcome:
    launch, done, info = prepared.executeFenced(request, wait_for, measure, deadline,
                                                loop_timeout, fenced_duration)
    if launch != ErrorStatus.NONE:
        assert done is None and info is None, "a failed launch returns no fence and no callback"
        return Outcome(launch, [], NO_TIMING)
    assert info is not None
    # Wait on the fence first: getExecutionInfo has no timeout, and an execution that never
    # ends must fail the test rather than hang it.
    state = done.wait(timeout_s) if done is not None else None
    assert state != FenceState.ACTIVE, f"the sync fence was not signalled within {timeout_s} s"
    status, launched, fenced = info.getExecutionInfo()
    if state is not None:
        expected = FenceState.SIGNALED if status == ErrorStatus.NONE else FenceState.ERROR
        assert state == expected, f"sync fence {state.name} for status {status.name}"
    return Outcome(status, [], launched, fenced)


def run_concurrently(target: Callable, arguments: Iterable[tuple],
                     timeout_s: Optional[float] = None) -> None:
    """``target(*args)`` for each ``args`` of ``arguments``, each on a thread of its own,
    all started before any is waited for (at most ``timeout_s`` each)."""
    threads = [threading.Thread(target=target, args=args) for args in arguments]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout_s)


def assert_no_timing(timing: Timing) -> None:
    assert (timing.timeOnDevice, timing.timeInDriver) == (UINT64_MAX, UINT64_MAX), timing
