"""IPreparedModel of the bundled driver: every HAL 1.3 execution path over one compiled
plan. Many executions may run at once; the plan is immutable and each run has its own
slots."""
from __future__ import annotations

import threading
import time
from typing import Callable, Optional, Sequence

import numpy as np

from . import arguments
from .buffers import bind_device_memory, has_device_memory
from .burst import ExecutionBurst
from .errors import DriverError
from .executor.io import LaunchedRequest, read_inputs
from .executor.run import MainProgram, failure, run_request
from .executor.steps import ExecutionContext
from .executor.workers import Timer, WorkerPool
from .hal.enums import ErrorStatus, MeasureTiming, Priority
from .hal.structs import (NO_TIMING, OptionalTimeoutDuration, OptionalTimePoint,
                          OutputShape, Request, Timing)
from .sync_fence import FenceState, SyncFence
from .validation import validate_request

# Asynchronous executions, and fenced ones whose fences signalled after the call, run here.
# Runs are bounded by their loop timeouts and deadlines and never wait on each other, so a
# bounded shared pool cannot deadlock. It is large enough that executions launched together
# run together (eight loops each stop at their own timeout, not one after another), and
# bounded, so that no client can make the driver start threads without end.
_ASYNC_POOL = WorkerPool(max_workers=16, thread_name_prefix="nnhal-exec")
#: The deadlines of fenced executions still waiting on their fences.
_FENCE_DEADLINES = Timer(thread_name="nnhal-fence-deadlines")


class FencedExecutionCallback:
    """IFencedExecutionCallback: the status and timings of one fenced execution, complete
    once the execution's own fence (``done``) has signalled."""

    def __init__(self, done: SyncFence) -> None:
        self._done = done
        self._info: tuple[ErrorStatus, Timing, Timing] = (ErrorStatus.GENERAL_FAILURE, NO_TIMING, NO_TIMING)
        self.message = ""

    def _complete(self, status: ErrorStatus, launched: Timing, fenced: Timing, message: str = "") -> None:
        """Called before ``done`` signals."""
        self._info = (status, launched, fenced)
        self.message = message

    def getExecutionInfo(self) -> tuple[ErrorStatus, Timing, Timing]:
        """(status, timingLaunched, timingFenced); waits for the execution to finish."""
        self._done.wait()
        return self._info


class _FenceWait:
    """A fenced execution waiting on its wait fences with no thread of its own: the fence
    that signals last starts it; a fence signalling an error, or the deadline passing
    first, ends it. Only the first of those events counts. Once it is decided, neither the
    deadline timer nor a fence still to signal holds the execution (its copy of the request
    and the caller's pools): they are freed when the execution ends, not at the deadline."""

    def __init__(self, fences: Sequence[SyncFence], deadline_ns: Optional[int],
                 start: Callable[[], None], give_up: Callable[[ErrorStatus, str], None]) -> None:
        self._lock = threading.Lock()
        self._waiting_for = len(fences)
        self._start: Optional[Callable[[], None]] = start
        self._give_up: Optional[Callable[[ErrorStatus, str], None]] = give_up
        self._cancel_deadline: Optional[Callable[[], None]] = None
        if deadline_ns is not None:
            self._cancel_deadline = _FENCE_DEADLINES.call_at(deadline_ns, self._deadline_passed)
        for fence in fences:
            fence.when_signalled(self._signalled)

    def _decide(self) -> tuple[Optional[Callable[[], None]], Optional[Callable[[ErrorStatus, str], None]]]:
        """(start, give_up) to the event that decides the wait; (None, None) to any later one."""
        with self._lock:
            decided = self._start, self._give_up
            self._start = self._give_up = None
            cancel_deadline, self._cancel_deadline = self._cancel_deadline, None
        if cancel_deadline is not None:
            cancel_deadline()
        return decided

    def _signalled(self, state: FenceState) -> None:
        if state != FenceState.SIGNALED:
            _, give_up = self._decide()
            if give_up is not None:
                give_up(ErrorStatus.GENERAL_FAILURE, "a wait fence signalled an error")
            return
        with self._lock:
            self._waiting_for -= 1
            if self._waiting_for:
                return
        start, _ = self._decide()
        if start is not None:
            start()

    def _deadline_passed(self) -> None:
        _, give_up = self._decide()
        if give_up is not None:
            give_up(ErrorStatus.MISSED_DEADLINE_TRANSIENT, "the deadline passed waiting for fences")


class SamplePreparedModel:
    """IPreparedModel."""

    def __init__(self, program: MainProgram, priority: Priority, device) -> None:
        self._model = program.model
        self._program = program
        self.priority = priority
        # Whose memory budget each execution gets, and whose buffers requests may name.
        self._device = device

    # --- shared ----------------------------------------------------------------------

    def _checked(self, request, measure, deadline, loopTimeoutDuration):
        """Arguments validated before anything runs: (measure, context)."""
        arguments.check_type(request, Request, "request")
        # A MeasureTiming member is valid as it is (the usual case, checked for the price
        # of a type test); anything else gets the full check.
        if type(measure) is not MeasureTiming:
            measure = arguments.measure_timing(measure)
        return measure, ExecutionContext(arguments.deadline(deadline),
                                         arguments.loop_timeout(loopTimeoutDuration),
                                         self._device.memory_budget_bytes)

    def _launched(self, request: Request, allow_unspecified_output: bool = True) -> LaunchedRequest:
        """``request`` validated for an execution of this model, with the driver-managed
        buffers it names bound (driver/buffers.py)."""
        validate_request(request, self._model, allow_unspecified_output=allow_unspecified_output)
        if has_device_memory(request):
            return bind_device_memory(request, self, self._device.buffers, allow_unspecified_output)
        return LaunchedRequest.of(request)

    def executeSynchronously_1_3(self, request: Request, measure: MeasureTiming,
                                 deadline: OptionalTimePoint,
                                 loopTimeoutDuration: OptionalTimeoutDuration,
                                 ) -> tuple[ErrorStatus, list[OutputShape], Timing]:
        started = time.perf_counter_ns()
        try:
            measure, ctx = self._checked(request, measure, deadline, loopTimeoutDuration)
            if has_device_memory(request):
                # Buffers are resolved here; a plain request is validated as it runs.
                request = self._launched(request)
        except DriverError as error:
            return failure(error).as_tuple()
        return run_request(self._program, request, measure, ctx, started).as_tuple()

    def execute_1_3(self, request: Request, measure: MeasureTiming, deadline: OptionalTimePoint,
                    loopTimeoutDuration: OptionalTimeoutDuration, callback) -> ErrorStatus:
        started = time.perf_counter_ns()
        if not arguments.implements(callback, "notify_1_3"):
            return ErrorStatus.INVALID_ARGUMENT     # nobody to notify
        try:
            measure, ctx = self._checked(request, measure, deadline, loopTimeoutDuration)
            # Request errors are reported at launch, as the reference driver does.
            launched = self._launched(request)
        except DriverError as error:
            callback.notify_1_3(error.status, [], NO_TIMING)
            return error.status

        def run() -> None:
            try:
                result = run_request(self._program, launched, measure, ctx, started)
            except BaseException:
                # A bug: the client still hears of the failure, and the exception goes on
                # to the thread's exception hook so that it stays visible.
                callback.notify_1_3(ErrorStatus.GENERAL_FAILURE, [], NO_TIMING)
                raise
            callback.notify_1_3(*result.as_tuple())
        _ASYNC_POOL.submit(run)
        return ErrorStatus.NONE

    def executeFenced(self, request: Request, waitFor: Sequence[SyncFence], measure: MeasureTiming,
                      deadline: OptionalTimePoint, loopTimeoutDuration: OptionalTimeoutDuration,
                      duration: OptionalTimeoutDuration,
                      ) -> tuple[ErrorStatus, Optional[SyncFence], Optional[FencedExecutionCallback]]:
        launched_ns = time.perf_counter_ns()
        try:
            measure, ctx = self._checked(request, measure, deadline, loopTimeoutDuration)
            duration_ns = arguments.duration(duration, "duration")
            fences = arguments.sync_fences(waitFor)
            # A fenced execution cannot report output shapes: every output must be known.
            launched = self._launched(request, allow_unspecified_output=False)
        except DriverError as error:
            return error.status, None, None
        if arguments.deadline_passed(ctx.deadline_ns):
            launched.forget_outputs()
            return ErrorStatus.MISSED_DEADLINE_PERSISTENT, None, None
        done = SyncFence()
        info = FencedExecutionCallback(done)

        def finish(status: ErrorStatus, message: str = "", timing_launched: Timing = NO_TIMING,
                   timing_fenced: Timing = NO_TIMING) -> None:
            if status != ErrorStatus.NONE:
                launched.forget_outputs()
            info._complete(status, timing_launched, timing_fenced, message)
            done.signal(FenceState.SIGNALED if status == ErrorStatus.NONE else FenceState.ERROR)

        def run() -> None:
            try:
                finish(*self._run_fenced(launched, measure, ctx, duration_ns, launched_ns))
            except BaseException:
                # A bug: signal the failure so nobody waits forever, and re-raise so it
                # stays visible (to the thread's exception hook, or to the caller when the
                # execution ran in the call).
                finish(ErrorStatus.GENERAL_FAILURE, "internal error")
                raise
        if any(fence.state == FenceState.ERROR for fence in fences):
            finish(ErrorStatus.GENERAL_FAILURE, "a wait fence signalled an error")
        elif all(fence.state == FenceState.SIGNALED for fence in fences):
            # Nothing to wait for: run here, as the reference driver does, and return a
            # fence that has already signalled.
            run()
        else:
            _FenceWait(fences, ctx.deadline_ns, start=lambda: _ASYNC_POOL.submit(run),
                       give_up=finish)
        return ErrorStatus.NONE, done, info

    def _run_fenced(self, launched: LaunchedRequest, measure, ctx: ExecutionContext,
                    duration_ns: Optional[int], launched_ns: int):
        """The execution once its fences have signalled: (status, message, timingLaunched,
        timingFenced)."""
        fenced = time.perf_counter_ns()
        if duration_ns is not None:
            # The timeout duration runs from the moment the wait fences have signalled.
            limit = time.monotonic_ns() + duration_ns
            if ctx.deadline_ns is None or limit < ctx.deadline_ns:
                ctx.deadline_ns = limit
        result = run_request(self._program, launched, measure, ctx)
        if result.status == ErrorStatus.MISSED_DEADLINE_PERSISTENT:
            # Started after its deadline: for a fenced execution the duration is transient.
            result.status = ErrorStatus.MISSED_DEADLINE_TRANSIENT
        if result.status != ErrorStatus.NONE or measure != MeasureTiming.YES:
            return result.status, result.message, NO_TIMING, NO_TIMING
        on_device, end = result.timing.timeOnDevice, time.perf_counter_ns()
        return (result.status, result.message, Timing(on_device, (end - launched_ns) // 1000),
                Timing(on_device, (end - fenced) // 1000))

    # --- diagnosis (not HAL) ---------------------------------------------------------------

    def operand_values(self, request: Request) -> Optional[dict[int, np.ndarray]]:
        """The value of each main-subgraph operand an execution of ``request`` computes, by
        operand index (driver/engine.py, OperandValues), or None: the engine keeps none, or
        the execution fails. Not a HAL method: the fuzz harness calls it after a wrong
        answer, to find the first operation that computed differently from a reference
        (fuzz/divergence.py). It keeps every value to the end, so it runs under the
        driver's own budget, not the one a client set."""
        values_of = getattr(self._program.plan, "operand_values", None)
        if values_of is None:
            return None
        try:
            launched = self._launched(request)
            inputs = read_inputs(self._program.inputs, launched.request, launched.buffers)
            return values_of(inputs, ExecutionContext())
        except DriverError:
            return None

    def configureExecutionBurst(self, callback=None) -> tuple[ErrorStatus, Optional[ExecutionBurst]]:
        if callback is not None and not arguments.implements(callback, "getMemories"):
            return ErrorStatus.INVALID_ARGUMENT, None
        return ErrorStatus.NONE, ExecutionBurst(self, callback)
