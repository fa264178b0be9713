"""Calls across the HAL surface, each under a time limit, and the four execution paths.

A :class:`HalClient` makes every call through a *limiter*, ``limiter(limit_s, what,
function, *args)``, which runs the call and raises HangViolation when it overruns: the
fuzz harness uses the in-thread watchdog (watchdog.py), the conformance runner a thread of
its own (conformance/runner.py). Whatever a call raises breaks the HAL contract (results
are statuses) and becomes a HalExceptionViolation; waits for callbacks and fences are
bounded too. Each path applies the contract checks of its own results (contract.py).
"""
from __future__ import annotations

import enum
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from driver.executor.workers import Timer
from driver.hal import (ErrorStatus, ExecutionCallback, ExecutionPreference, MeasureTiming, Model,
                        OptionalTimePoint, OptionalTimeoutDuration, PreparedModelCallback,
                        Priority, Request)
from driver.hal.enums import Constant, LoopTimeoutDurationNs
from driver.sync_fence import FenceState, SyncFence

from . import contract
from .contract import HalExceptionViolation, HangViolation, OracleViolation
from .watchdog import WATCHDOG, Budget, format_stacks, is_idle, thread_stacks

#: Waits for callbacks and fences wake up this often to look for dead driver threads.
WAIT_SLICE_S = 0.05
#: prepareModel_1_3's cache token when no cache files are given.
UNCACHED_TOKEN = bytes(Constant.BYTE_SIZE_OF_CACHE_TOKEN)
#: Signals executeFenced's wait fences after their delay: one thread for every input (a
#: threading.Timer each would start a thread per input).
SCHEDULER = Timer(thread_name="hal-scheduler")

Limiter = Callable[..., Any]   # (limit_s, what, function, *args) -> function(*args)


class ExecutionPath(enum.IntEnum):
    SYNC = 0      # IPreparedModel.executeSynchronously_1_3
    ASYNC = 1     # IPreparedModel.execute_1_3 + IExecutionCallback
    FENCED = 2    # IPreparedModel.executeFenced (+ wait fences) + IFencedExecutionCallback
    BURST = 3     # IPreparedModel.configureExecutionBurst + IBurstContext.execute

    @property
    def label(self) -> str:
        """The path's name on command lines and in reports: sync, async, fenced, burst."""
        return self.name.lower()


class DeadlineEdge(enum.IntEnum):
    """A deadline at an edge of the steady clock, where a driver's arithmetic on time
    points breaks first (deadline_ns then says nothing)."""
    NONE = 0
    EPOCH = 1           # the time point 0: long past
    END = 2             # the time point 2^64-1: never
    JUST_PASSED = 3     # one nanosecond before the call


#: The time point 2^64-1 (an OptionalTimePoint holds a uint64).
END_OF_TIME_NS = 2**64 - 1


@dataclass(kw_only=True)
class ExecutionArguments:
    """An execution's arguments besides the request (fuzz.case.ExecutionChoices adds how a
    fuzz case is run)."""
    measureTiming: MeasureTiming = MeasureTiming.NO
    #: Deadline relative to the moment of the call, in ns; None: no deadline.
    deadline_ns: int | None = None
    #: A deadline at an edge of the clock instead (with deadline_ns 0).
    deadline_edge: DeadlineEdge = DeadlineEdge.NONE
    #: loopTimeoutDuration in ns; None: omitted (the driver's default).
    loopTimeoutDuration_ns: int | None = None
    #: executeFenced: how many wait fences, and how long (ns) before they are signalled.
    wait_fences: int = 0
    wait_fence_delay_ns: int = 0
    #: executeFenced's `duration` (ns); None: omitted.
    fenced_duration_ns: int | None = None


def deadline_point(arguments: ExecutionArguments) -> OptionalTimePoint:
    if arguments.deadline_ns is None:
        return OptionalTimePoint()
    edge = arguments.deadline_edge
    if edge != DeadlineEdge.NONE:
        return OptionalTimePoint({DeadlineEdge.EPOCH: 0, DeadlineEdge.END: END_OF_TIME_NS,
                                  DeadlineEdge.JUST_PASSED: time.monotonic_ns() - 1}[edge])
    return OptionalTimePoint(time.monotonic_ns() + arguments.deadline_ns)


def loop_timeout(arguments: ExecutionArguments) -> OptionalTimeoutDuration:
    return OptionalTimeoutDuration(arguments.loopTimeoutDuration_ns)


def timeout_in_force_ns(arguments: ExecutionArguments, fenced: bool = False) -> int | None:
    """The shortest time after which an execution without a deadline may report one missed:
    its loops' timeout (the default where omitted, at most the maximum), or a fenced
    execution's duration; None where the execution has a deadline (a deadline at the end
    of time is none)."""
    if arguments.deadline_ns is not None and arguments.deadline_edge != DeadlineEdge.END:
        return None
    loops = LoopTimeoutDurationNs.DEFAULT if arguments.loopTimeoutDuration_ns is None else arguments.loopTimeoutDuration_ns
    timeouts = [min(loops, LoopTimeoutDurationNs.MAXIMUM)]
    if fenced and arguments.fenced_duration_ns is not None:
        timeouts.append(arguments.fenced_duration_ns)
    return min(timeouts)


def check_timed_result(status: ErrorStatus, arguments: ExecutionArguments, elapsed_ns: int, what: str,
                       timings: dict[str, Any], shapes: Any = None, fenced: bool = False) -> None:
    """An execution's timings (by the names they came under), missed deadline and shapes."""
    for name, timing in timings.items():
        contract.check_timing(status, timing, arguments.measureTiming, name, elapsed_ns)
    contract.check_missed_deadline(status, timeout_in_force_ns(arguments, fenced), elapsed_ns, what)
    contract.check_shapes_only_on_success(status, shapes, what)


def read_outputs(request: Request) -> list[bytes | None]:
    """Each output buffer's content (None where the output has no readable buffer)."""
    contents: list[bytes | None] = []
    for argument in request.outputs:
        location = argument.location
        memory = (request.pools[location.poolIndex].hidlMemory
                  if 0 <= location.poolIndex < len(request.pools) else None)
        readable = (not argument.hasNoValue and memory is not None and not memory.closed
                    and location.offset + location.length <= memory.size)
        contents.append(memory.read(location.offset, location.length) if readable else None)
    return contents


# --- exceptions from driver threads -----------------------------------------------------

class DriverThreadFailures:
    """Exceptions that ended a thread other than the caller's (e.g. an asynchronous
    execution): they left the HAL surface just as much as one raised by a call."""

    def __init__(self) -> None:
        self._failures: list[HalExceptionViolation] = []

    def install(self) -> None:
        """Take over threading.excepthook (again: pytest swaps in its own for each test)."""
        if threading.excepthook != self._record:
            threading.excepthook = self._record

    def _record(self, args: threading.ExceptHookArgs) -> None:
        if isinstance(args.exc_value, (SystemExit, type(None))):
            return
        name = args.thread.name if args.thread is not None else "?"
        frames = traceback.extract_tb(args.exc_traceback)
        self._failures.append(HalExceptionViolation(
            f"driver thread {name} raised {args.exc_type.__name__}: {args.exc_value}\n"
            + "".join(traceback.format_list(frames)),
            key=f"thread: {args.exc_type.__name__}", frames=frames))

    def raise_first(self) -> None:
        if self._failures:
            first = self._failures[0]
            self._failures.clear()
            raise first


THREAD_FAILURES = DriverThreadFailures()


def _signal_all(fences: Sequence[SyncFence]) -> None:
    for fence in fences:
        fence.signal()


# --- the client -----------------------------------------------------------------------------

class HalClient:
    """Time-limited HAL calls and the execution paths. ``call_limit_s`` bounds the calls
    that do not execute the model; ``service_threads`` names the caller's own threads,
    never where a driver is stuck."""

    def __init__(self, limiter: Limiter, call_limit_s: float,
                 service_threads: Sequence[str] = ()) -> None:
        self.limiter = limiter
        self.call_limit_s = call_limit_s
        self.service_threads = frozenset((SCHEDULER.thread_name, WATCHDOG.THREAD_NAME,
                                          *service_threads))
        self._runners = {ExecutionPath.SYNC: self.run_sync, ExecutionPath.ASYNC: self.run_async,
                         ExecutionPath.FENCED: self.run_fenced, ExecutionPath.BURST: self.run_burst}

    def call(self, limit_s: float, what: str, function: Callable[..., Any], *args: Any) -> Any:
        """``function(*args)`` under the limiter; any exception it raises becomes a
        HalExceptionViolation."""
        try:
            return self.limiter(limit_s, what, function, *args)
        except OracleViolation:
            raise
        except Exception as exc:   # the oracle itself: every exception is the finding
            frames = traceback.extract_tb(exc.__traceback__)
            where = (f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno}, in "
                     f"{frames[-1].name})" if frames else "")
            raise HalExceptionViolation(f"{what} raised {type(exc).__name__}: {exc}{where}",
                                        key=f"{what}: {type(exc).__name__}", frames=frames) from exc

    def wait_for_notify(self, callback: Any, limit_s: float, what: str, launch: ErrorStatus) -> None:
        """Wait for a callback with a bound; a driver thread dying meanwhile is reported as such."""
        budget = Budget(limit_s)
        while not callback.wait_for_notify(WAIT_SLICE_S):
            THREAD_FAILURES.raise_first()
            if budget.exhausted():
                if launch != ErrorStatus.NONE:
                    raise contract.CallbackNotifyViolation(
                        f"{what} returned {launch.name} without notifying the callback",
                        key=f"{what}: failed launch, no notify")
                raise self.hang_in_driver_thread(what, budget)

    def hang_in_driver_thread(self, what: str, budget: Budget) -> HangViolation:
        """A hang of work the driver runs on its own threads: report every thread's stack,
        and sign it with the deepest one (the busiest worker)."""
        names = {thread.ident: thread.name for thread in threading.enumerate()}
        stacks = {tid: stack for tid, stack in thread_stacks(exclude=(threading.get_ident(),)).items()
                  if not is_idle(stack) and names.get(tid) not in self.service_threads}
        deepest = max(stacks.values(), key=len, default=[])
        return HangViolation(f"{what}: no completion within its {budget.limit_s:.2f} s limit "
                             f"(gave up after {budget.describe()}); threads:\n"
                             f"{format_stacks(stacks)}", key=f"{what}: completion", frames=deepest)

    # --- the device ---

    def get_supported_operations(self, device: Any, model: Model) -> tuple[ErrorStatus, Any]:
        what = "getSupportedOperations_1_3"
        status, supported = contract.unpack(
            self.call(self.call_limit_s, what, device.getSupportedOperations_1_3, model), 2, what)
        status = contract.as_status(status, what)
        contract.check_supported_list(status, supported, model)
        return status, supported

    def prepare(self, device: Any, model: Model, preference: ExecutionPreference,
                priority: Priority, deadline: OptionalTimePoint,
                modelCache: Sequence[int] = (), dataCache: Sequence[int] = (),
                token: bytes = UNCACHED_TOKEN) -> tuple[ErrorStatus, Any, PreparedModelCallback]:
        """prepareModel_1_3's notified status and prepared model, and the callback (to
        check later that it was not notified again). Cache handles are file descriptors."""
        return self._prepared("prepareModel_1_3", device.prepareModel_1_3, model, preference,
                              priority, deadline, list(modelCache), list(dataCache), token)

    def prepare_from_cache(self, device: Any, deadline: OptionalTimePoint,
                           modelCache: Sequence[int], dataCache: Sequence[int], token: bytes,
                           ) -> tuple[ErrorStatus, Any, PreparedModelCallback]:
        """prepareModelFromCache_1_3, as ``prepare``."""
        return self._prepared("prepareModelFromCache_1_3", device.prepareModelFromCache_1_3,
                              deadline, list(modelCache), list(dataCache), token)

    def _prepared(self, what: str, method: Callable[..., Any], *args: Any,
                  ) -> tuple[ErrorStatus, Any, PreparedModelCallback]:
        callback = PreparedModelCallback()
        launch = contract.as_status(self.call(self.call_limit_s, what, method, *args, callback), what)
        self.wait_for_notify(callback, self.call_limit_s, what, launch)
        contract.check_notified_once(callback, what)
        status, prepared = callback.calls[0]
        contract.check_launch_matches_callback(launch, status, what)
        contract.check_prepared_model_presence(status, prepared)
        return status, prepared, callback

    # --- the execution paths: each returns (status, output shapes or None) ---

    def execute(self, prepared: Any, request: Request, path: ExecutionPath,
                arguments: ExecutionArguments, limit_s: float) -> tuple[ErrorStatus, Any]:
        return self._runners[path](prepared, request, arguments, limit_s)

    def run_sync(self, prepared: Any, request: Request, arguments: ExecutionArguments,
                 limit_s: float) -> tuple[ErrorStatus, Any]:
        what = "executeSynchronously_1_3"
        started = time.monotonic_ns()
        result = self.call(limit_s, what, prepared.executeSynchronously_1_3, request,
                           arguments.measureTiming, deadline_point(arguments), loop_timeout(arguments))
        elapsed_ns = time.monotonic_ns() - started
        status, shapes, timing = contract.unpack(result, 3, what)
        status = contract.as_status(status, what)
        check_timed_result(status, arguments, elapsed_ns, what, {what: timing}, shapes)
        return status, shapes

    def run_async(self, prepared: Any, request: Request, arguments: ExecutionArguments,
                  limit_s: float) -> tuple[ErrorStatus, Any]:
        what = "execute_1_3"
        callback = ExecutionCallback()
        started = time.monotonic_ns()
        launch = contract.as_status(self.call(
            limit_s, what, prepared.execute_1_3, request, arguments.measureTiming,
            deadline_point(arguments), loop_timeout(arguments), callback), what)
        self.wait_for_notify(callback, limit_s, what, launch)
        elapsed_ns = time.monotonic_ns() - started
        contract.check_notified_once(callback, what)
        status, shapes, timing = callback.calls[0]
        contract.check_launch_matches_callback(launch, status, what)
        what = f"{what} callback"
        check_timed_result(status, arguments, elapsed_ns, what, {what: timing}, shapes)
        return status, shapes

    def run_fenced(self, prepared: Any, request: Request, arguments: ExecutionArguments,
                   limit_s: float) -> tuple[ErrorStatus, None]:
        what = "executeFenced"
        wait_for = [SyncFence() for _ in range(arguments.wait_fences)]
        delay_s = max(0, arguments.wait_fence_delay_ns) * 1e-9
        if wait_for:
            SCHEDULER.call_later(delay_s, lambda: _signal_all(wait_for))
        budget = Budget(limit_s + delay_s)
        duration = OptionalTimeoutDuration(arguments.fenced_duration_ns)
        started = time.monotonic_ns()
        result = self.call(budget.limit_s, what, prepared.executeFenced, request, wait_for,
                           arguments.measureTiming, deadline_point(arguments),
                           loop_timeout(arguments), duration)
        status, fence, callback = contract.unpack(result, 3, what)
        status = contract.as_status(status, what)
        contract.check_fenced_failure_bare(status, fence, callback)
        if status != ErrorStatus.NONE:
            check_timed_result(status, arguments, time.monotonic_ns() - started, what, {}, fenced=True)
            return status, None
        contract.check_present(status, callback, what, "an IFencedExecutionCallback")
        fence_failed = False
        if fence is not None:   # no fence: the execution had finished when the call returned
            while (state := fence.wait(WAIT_SLICE_S)) == FenceState.ACTIVE:
                THREAD_FAILURES.raise_first()
                if budget.exhausted():
                    raise self.hang_in_driver_thread(f"{what} sync fence", budget)
            fence_failed = state == FenceState.ERROR
        what = "IFencedExecutionCallback.getExecutionInfo"
        info = contract.unpack(self.call(self.call_limit_s, what, callback.getExecutionInfo), 3, what)
        elapsed_ns = time.monotonic_ns() - started
        status = contract.as_status(info[0], what)
        timings = {f"{what} timingLaunched": info[1], f"{what} timingFenced": info[2]}
        check_timed_result(status, arguments, elapsed_ns, what, timings, fenced=True)
        contract.check_fence_consistent(fence_failed, status)
        return status, None

    def configure_burst(self, prepared: Any) -> tuple[ErrorStatus, Any]:
        what = "configureExecutionBurst"
        status, burst = contract.unpack(
            self.call(self.call_limit_s, what, prepared.configureExecutionBurst, None), 2, what)
        status = contract.as_status(status, what)
        contract.check_present(status, burst, what, "a burst context")
        return status, burst

    def run_burst(self, prepared: Any, request: Request, arguments: ExecutionArguments,
                  limit_s: float) -> tuple[ErrorStatus, Any]:
        """One execution on a new burst, with slots 0, 1, ... for the request's pools."""
        status, burst = self.configure_burst(prepared)
        if status != ErrorStatus.NONE:
            return status, None
        return self.execute_burst(burst, request, list(range(len(request.pools))), arguments,
                                  limit_s)

    def execute_burst(self, burst: Any, request: Request, slots: list[int],
                      arguments: ExecutionArguments, limit_s: float) -> tuple[ErrorStatus, Any]:
        """One execution on ``burst``; the slots are freed afterwards."""
        what = "IBurstContext.execute"
        started = time.monotonic_ns()
        result = self.call(limit_s, what, burst.execute, request, slots, arguments.measureTiming,
                           deadline_point(arguments), loop_timeout(arguments))
        elapsed_ns = time.monotonic_ns() - started
        status, shapes, timing = contract.unpack(result, 3, what)
        status = contract.as_status(status, what)
        check_timed_result(status, arguments, elapsed_ns, what, {what: timing}, shapes)
        for slot in slots:
            self.call(self.call_limit_s, "IBurstContext.freeMemory", burst.freeMemory, slot)
        return status, shapes

