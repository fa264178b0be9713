"""IPreparedModel of the bundled driver: every HAL 1.3 execution path over one compiled
plan. Many executions may run at once; the plan is immutable and each run has its own
slots."""
from __future__ import annotations

import threading
import time
from typing import Optional, Sequence

from . import arguments
from .burst import ExecutionBurst
from .errors import ValidationError
from .executor.run import ExecutionResult, MainProgram, failure, run_request
from .executor.steps import ExecutionContext
from .executor.workers import WorkerPool
from .hal.enums import ErrorStatus, MeasureTiming, Priority
from .hal.structs import (NO_TIMING, OptionalTimeoutDuration, OptionalTimePoint,
                          OutputShape, Request, Timing)
from .sync_fence import FenceState, SyncFence
from .validation import validate_request

# Asynchronous executions run here. Runs are bounded by their loop timeouts and deadlines
# and never wait on each other, so a small shared pool cannot deadlock.
_ASYNC_POOL = WorkerPool(max_workers=4, thread_name_prefix="nnhal-exec")


class FencedExecutionCallback:
    """IFencedExecutionCallback: the status and timings of one fenced execution."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._info: tuple[ErrorStatus, Timing, Timing] = (ErrorStatus.GENERAL_FAILURE, NO_TIMING, NO_TIMING)
        self.message = ""

    def _complete(self, status: ErrorStatus, launched: Timing, fenced: Timing, message: str = "") -> None:
        self._info = (status, launched, fenced)
        self.message = message
        self._done.set()

    def getExecutionInfo(self) -> tuple[ErrorStatus, Timing, Timing]:
        """(status, timingLaunched, timingFenced); waits for the execution to finish."""
        self._done.wait()
        return self._info


class SamplePreparedModel:
    """IPreparedModel."""

    def __init__(self, program: MainProgram, priority: Priority) -> None:
        self._model = program.model
        self._program = program
        self.priority = priority

    # --- shared ----------------------------------------------------------------------

    def _context(self, deadline: OptionalTimePoint, loopTimeoutDuration: OptionalTimeoutDuration,
                 ) -> ExecutionContext:
        return ExecutionContext(arguments.deadline(deadline), arguments.loop_timeout(loopTimeoutDuration))

    def _execute(self, request: Request, measure, ctx: ExecutionContext,
                 started_ns: Optional[int] = None, validated: bool = False) -> ExecutionResult:
        return run_request(self._program, request, measure, ctx, started_ns, validated=validated)

    def _checked(self, request, measure, deadline, loopTimeoutDuration):
        """Arguments validated before anything runs: (measure, context)."""
        arguments.check_type(request, Request, "request")
        # A MeasureTiming member is valid as it is (the usual case, checked for the price
        # of a type test); anything else gets the full check.
        if type(measure) is not MeasureTiming:
            measure = arguments.measure_timing(measure)
        return measure, self._context(deadline, loopTimeoutDuration)

    # --- executeSynchronously_1_3 --------------------------------------------------------

    def executeSynchronously_1_3(self, request: Request, measure: MeasureTiming,
                                 deadline: OptionalTimePoint,
                                 loopTimeoutDuration: OptionalTimeoutDuration,
                                 ) -> tuple[ErrorStatus, list[OutputShape], Timing]:
        started = time.perf_counter_ns()
        try:
            measure, ctx = self._checked(request, measure, deadline, loopTimeoutDuration)
        except ValidationError as error:
            return failure(error).as_tuple()
        return self._execute(request, measure, ctx, started).as_tuple()

    # --- execute_1_3 ---------------------------------------------------------------------

    def execute_1_3(self, request: Request, measure: MeasureTiming, deadline: OptionalTimePoint,
                    loopTimeoutDuration: OptionalTimeoutDuration, callback) -> ErrorStatus:
        started = time.perf_counter_ns()
        try:
            arguments.callback(callback, "notify_1_3")
        except ValidationError:
            return ErrorStatus.INVALID_ARGUMENT     # nobody to notify
        try:
            measure, ctx = self._checked(request, measure, deadline, loopTimeoutDuration)
            # Request errors are reported at launch, as the reference driver does.
            validate_request(request, self._model)
        except ValidationError as error:
            callback.notify_1_3(error.status, [], NO_TIMING)
            return error.status

        def run() -> None:
            try:
                result = self._execute(request, measure, ctx, started, validated=True)
            except BaseException:
                # A bug: the client still hears of the failure, and the exception goes on
                # to the thread's exception hook so that it stays visible.
                callback.notify_1_3(ErrorStatus.GENERAL_FAILURE, [], NO_TIMING)
                raise
            callback.notify_1_3(*result.as_tuple())
        _ASYNC_POOL.submit(run)
        return ErrorStatus.NONE

    # --- executeFenced -------------------------------------------------------------------

    def executeFenced(self, request: Request, waitFor: Sequence[SyncFence], measure: MeasureTiming,
                      deadline: OptionalTimePoint, loopTimeoutDuration: OptionalTimeoutDuration,
                      duration: OptionalTimeoutDuration,
                      ) -> tuple[ErrorStatus, Optional[SyncFence], Optional[FencedExecutionCallback]]:
        launched = time.perf_counter_ns()
        try:
            measure, ctx = self._checked(request, measure, deadline, loopTimeoutDuration)
            duration_ns = arguments.duration(duration, "duration")
            fences = arguments.sync_fences(waitFor)
            # A fenced execution cannot report output shapes: every output must be known.
            validate_request(request, self._model, allow_unspecified_output=False)
        except ValidationError:
            return ErrorStatus.INVALID_ARGUMENT, None, None
        if arguments.deadline_passed(ctx.deadline_ns):
            return ErrorStatus.MISSED_DEADLINE_PERSISTENT, None, None
        done = SyncFence()
        info = FencedExecutionCallback()

        def run() -> None:
            try:
                status, message, timing_launched, timing_fenced = self._run_fenced(
                    request, fences, measure, ctx, duration_ns, launched)
            except BaseException:
                # A bug: signal the failure so nobody waits forever, and re-raise so it
                # stays visible (to the thread's exception hook, or to the caller when the
                # execution ran in the call).
                info._complete(ErrorStatus.GENERAL_FAILURE, NO_TIMING, NO_TIMING, "internal error")
                done.signal(FenceState.ERROR)
                raise
            info._complete(status, timing_launched, timing_fenced, message)
            done.signal(FenceState.SIGNALED if status == ErrorStatus.NONE else FenceState.ERROR)
        if all(fence.state != FenceState.ACTIVE for fence in fences):
            # Nothing left to wait for: run here, as the reference driver does, and return
            # a fence that has already signalled; a thread would only add its start-up.
            run()
        else:
            # A thread of its own: it may wait on fences that other executions will signal.
            threading.Thread(target=run, name="nnhal-fenced", daemon=True).start()
        return ErrorStatus.NONE, done, info

    def _run_fenced(self, request, fences, measure, ctx: ExecutionContext, duration_ns, launched):
        for fence in fences:
            remaining = None
            if ctx.deadline_ns is not None:
                remaining = max(0.0, (ctx.deadline_ns - time.monotonic_ns()) / 1e9)
            state = fence.wait(remaining)
            if state == FenceState.ACTIVE:
                return ErrorStatus.MISSED_DEADLINE_TRANSIENT, "deadline passed waiting for fences", NO_TIMING, NO_TIMING
            if state == FenceState.ERROR:
                return ErrorStatus.GENERAL_FAILURE, "a wait fence signalled an error", NO_TIMING, NO_TIMING
        fenced = time.perf_counter_ns()
        if duration_ns is not None:
            # The timeout duration runs from the moment the wait fences have signalled.
            limit = time.monotonic_ns() + duration_ns
            if ctx.deadline_ns is None or limit < ctx.deadline_ns:
                ctx.deadline_ns = limit
        result = self._execute(request, measure, ctx, validated=True)
        if result.status == ErrorStatus.MISSED_DEADLINE_PERSISTENT:
            # Started after its deadline: for a fenced execution the duration is transient.
            result.status = ErrorStatus.MISSED_DEADLINE_TRANSIENT
        if result.status != ErrorStatus.NONE or measure != MeasureTiming.YES:
            return result.status, result.message, NO_TIMING, NO_TIMING
        end = time.perf_counter_ns()
        timing_launched = Timing(timeOnDevice=result.timing.timeOnDevice,
                                 timeInDriver=(end - launched) // 1000)
        timing_fenced = Timing(timeOnDevice=result.timing.timeOnDevice,
                               timeInDriver=(end - fenced) // 1000)
        return result.status, result.message, timing_launched, timing_fenced

    # --- configureExecutionBurst ---------------------------------------------------------

    def configureExecutionBurst(self, callback=None) -> tuple[ErrorStatus, Optional[ExecutionBurst]]:
        if callback is not None:
            try:
                arguments.callback(callback, "getMemories")
            except ValidationError:
                return ErrorStatus.INVALID_ARGUMENT, None
        return ErrorStatus.NONE, ExecutionBurst(self, callback)
