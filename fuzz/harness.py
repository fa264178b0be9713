"""One fuzz input through a driver, with every oracle applied: the flow shared by libFuzzer
(fuzz/driver_fuzz.py) and pytest replay.

For each case: the reference validator judges model and request; the driver under test
answers getSupportedOperations_1_3 and prepareModel_1_3; a prepared model runs the request
on ``choices.path`` and, when that succeeded, again on ``choices.second_path`` with fresh
copies of the request's pools; the two results must agree. A broken rule raises an
OracleViolation (see oracles.py). The driver is reached only through the HAL surface.
"""
from __future__ import annotations

import threading
import time
import traceback
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable, Sequence

from driver.errors import ValidationError
from driver.hal import (ErrorStatus, ExecutionCallback, ExecutionPreference, LoopTimeoutDurationNs,
                        MemoryPool, Model, OperandLifeTime, OperationType, OptionalTimePoint,
                        OptionalTimeoutDuration, PreparedModelCallback, Priority, Request,
                        Subgraph)
from driver.memory import Memory
from driver.hal.enums import SCALAR_OPERAND_TYPES
from driver.sync_fence import FenceState, SyncFence
from driver.validation import validate_model, validate_request

from . import oracles
from .branch_counters import BranchCounters
from .case import ExecutionChoices, ExecutionPath, FuzzCase
from .oracles import ExecutionResult, HalExceptionViolation, HangViolation, OracleViolation
from .scheduler import SCHEDULER
from .watchdog import WATCHDOG, Budget, format_stacks, is_idle, thread_stacks

#: How long a driver may take to answer a call that does not execute the model.
CALL_LIMIT_S = 10.0
#: How far an execution may overrun its loop timeout or deadline before it is a hang.
HANG_MARGIN_S = 1.0
#: Loops nested or in sequence each get the loop timeout; beyond this many the bound stops
#: growing (a fuzzed model could otherwise claim minutes).
MAX_LOOPS_COUNTED = 8
CACHE_TOKEN = bytes(32)
#: Waits for callbacks and fences wake up this often to look for dead driver threads.
WAIT_SLICE_S = 0.05


# --- statistics -----------------------------------------------------------------------------

@dataclass
class HarnessStats:
    inputs: int = 0
    decoded: int = 0
    valid: int = 0           # model and request valid per the reference validator
    prepared: int = 0        # prepareModel_1_3 gave a prepared model
    executed_ok: int = 0     # first execution returned NONE
    control_flow: int = 0    # executions of a model with IF/WHILE in its main subgraph
    violations: int = 0      # oracle failures

    def summary(self) -> str:
        base = self.inputs or 1
        parts = [f"{self.inputs} inputs"]
        for field in fields(self)[1:]:
            value = getattr(self, field.name)
            parts.append(f"{field.name} {value}" if field.name == "violations"
                         else f"{field.name} {value} ({100.0 * value / base:.1f}%)")
        return "harness: " + ", ".join(parts)


STATS = HarnessStats()


@dataclass(frozen=True)
class Outcome:
    """What happened to one case (for tests, triage and statistics)."""
    model_error: str | None
    request_error: str | None
    supported_status: ErrorStatus
    prepare_status: ErrorStatus
    first: ExecutionResult | None = None
    second: ExecutionResult | None = None


# --- exceptions from driver threads -----------------------------------------------------

class DriverThreadFailures:
    """Exceptions that ended a thread other than the harness's (e.g. an asynchronous
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


# --- calls across the HAL surface -------------------------------------------------------

def hal_call(limit_s: float, what: str, function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` under the watchdog; any exception it raises breaks the HAL
    contract (results are statuses) and becomes a HalExceptionViolation."""
    try:
        return WATCHDOG.call(limit_s, what, function, *args)
    except OracleViolation:
        raise
    except Exception as exc:   # the oracle itself: every exception is the finding
        frames = traceback.extract_tb(exc.__traceback__)
        where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno}, in {frames[-1].name})" if frames else ""
        raise HalExceptionViolation(f"{what} raised {type(exc).__name__}: {exc}{where}",
                                    key=f"{what}: {type(exc).__name__}", frames=frames) from exc


def wait_for_notify(callback: Any, limit_s: float, what: str, launch: ErrorStatus) -> None:
    """Wait for a callback with a bound; a driver thread dying meanwhile is reported as such."""
    budget = Budget(limit_s)
    while not callback.wait_for_notify(WAIT_SLICE_S):
        THREAD_FAILURES.raise_first()
        if budget.exhausted():
            if launch != ErrorStatus.NONE:
                raise oracles.CallbackNotifyViolation(
                    f"{what} returned {launch.name} without notifying the callback",
                    key=f"{what}: failed launch, no notify")
            raise hang_in_driver_thread(what, budget)


def hang_in_driver_thread(what: str, budget: Budget) -> HangViolation:
    """A hang of work the driver runs on its own threads: report every thread's stack,
    and sign it with the deepest one (the busiest worker)."""
    stacks = {tid: stack for tid, stack in thread_stacks(exclude=(threading.get_ident(),)).items()
              if not is_idle(stack) and not _is_service_thread(tid)}
    deepest = max(stacks.values(), key=len, default=[])
    return HangViolation(f"{what}: no completion within its {budget.limit_s:.2f} s limit "
                         f"(gave up after {budget.describe()}); threads:\n"
                         f"{format_stacks(stacks)}", key=f"{what}: completion", frames=deepest)


#: The harness's own threads: never where a driver is stuck.
SERVICE_THREAD_NAMES = (SCHEDULER.THREAD_NAME, WATCHDOG.THREAD_NAME, BranchCounters.THREAD_NAME)


def _is_service_thread(thread_id: int) -> bool:
    thread = next((t for t in threading.enumerate() if t.ident == thread_id), None)
    return thread is not None and thread.name in SERVICE_THREAD_NAMES


# --- execution arguments ----------------------------------------------------------------

def deadline_point(choices: ExecutionChoices) -> OptionalTimePoint:
    if choices.deadline_ns is None:
        return OptionalTimePoint()
    return OptionalTimePoint(time.monotonic_ns() + choices.deadline_ns)


def loop_timeout(choices: ExecutionChoices) -> OptionalTimeoutDuration:
    return OptionalTimeoutDuration(choices.loopTimeoutDuration_ns)


def _referenced(model: Model, subgraph: Subgraph, operand_index: int) -> Subgraph | None:
    if not 0 <= operand_index < len(subgraph.operands):
        return None
    operand = subgraph.operands[operand_index]
    if operand.lifetime != OperandLifeTime.SUBGRAPH:
        return None
    index = operand.location.offset
    return model.referenced[index] if 0 <= index < len(model.referenced) else None


def loops_to_wait_for(model: Model, subgraph: Subgraph, visiting: frozenset[int] = frozenset()) -> int:
    """How many loop timeouts an execution of ``subgraph`` may legitimately take: a WHILE
    checks its timeout between iterations, so its last iteration may add the time of the
    loops nested in it; loops in sequence add up; an IF runs one branch."""
    if id(subgraph) in visiting:
        return 0
    visiting = visiting | {id(subgraph)}
    total = 0
    for operation in subgraph.operations:
        if operation.type not in (OperationType.WHILE, OperationType.IF):
            continue
        inner = [_referenced(model, subgraph, i) for i in operation.inputs[:3]]
        nested = [loops_to_wait_for(model, s, visiting) for s in inner if s is not None]
        if operation.type == OperationType.WHILE:
            total += 1 + sum(nested[:2])
        else:
            total += max(nested[:2], default=0)
        if total >= MAX_LOOPS_COUNTED:
            return MAX_LOOPS_COUNTED
    return total


def execution_limit_s(case: FuzzCase) -> float:
    """How long an execution of this case may take before it is a hang."""
    choices = case.choices
    loop_ns = choices.loopTimeoutDuration_ns
    loop_ns = LoopTimeoutDurationNs.DEFAULT if loop_ns is None else min(loop_ns, LoopTimeoutDurationNs.MAXIMUM)
    budget_s = loop_ns * 1e-9 * max(1, loops_to_wait_for(case.model, case.model.main))
    if choices.deadline_ns is not None:
        budget_s = min(budget_s, max(0, choices.deadline_ns) * 1e-9)
    return budget_s + HANG_MARGIN_S


def has_control_flow(model: Model) -> bool:
    return any(op.type in (OperationType.IF, OperationType.WHILE) for op in model.main.operations)


# --- request pools --------------------------------------------------------------------------

def snapshot_pools(request: Request) -> list[bytes | None]:
    return [pool.hidlMemory.read() if pool.hidlMemory is not None else None for pool in request.pools]


def with_fresh_pools(request: Request, snapshot: Sequence[bytes | None]) -> Request:
    """The same request over new shared-memory pools holding the content of ``snapshot``."""
    pools = [MemoryPool(hidlMemory=Memory.from_bytes(data, pool.hidlMemory.name))
             if data is not None else pool
             for pool, data in zip(request.pools, snapshot)]
    return Request(inputs=request.inputs, outputs=request.outputs, pools=pools)


def read_outputs(request: Request) -> list[bytes | None]:
    contents: list[bytes | None] = []
    for argument in request.outputs:
        location = argument.location
        memory = (request.pools[location.poolIndex].hidlMemory
                  if 0 <= location.poolIndex < len(request.pools) else None)
        readable = (not argument.hasNoValue and memory is not None and not memory.closed
                    and location.offset + location.length <= memory.size)
        contents.append(memory.read(location.offset, location.length) if readable else None)
    return contents


def outputs_fully_specified(model: Model, request: Request) -> bool:
    """Every output's shape known before execution (from the model or the request)."""
    for i, argument in enumerate(request.outputs):
        operand = oracles.main_output_operand(model, i)
        if operand is None:
            return False
        dims = argument.dimensions or operand.dimensions
        if operand.type in SCALAR_OPERAND_TYPES:
            continue
        if not dims or 0 in dims:
            return False
    return True


# --- the execution paths ------------------------------------------------------------------

def run_sync(prepared: Any, request: Request, choices: ExecutionChoices, limit_s: float):
    what = "executeSynchronously_1_3"
    result = hal_call(limit_s, what, prepared.executeSynchronously_1_3, request,
                      choices.measureTiming, deadline_point(choices), loop_timeout(choices))
    status, shapes, timing = oracles.unpack(result, 3, what)
    status = oracles.as_status(status, what)
    oracles.check_timing(status, timing, choices.measureTiming, what)
    return status, shapes


def run_async(prepared: Any, request: Request, choices: ExecutionChoices, limit_s: float):
    what = "execute_1_3"
    callback = ExecutionCallback()
    launch = oracles.as_status(hal_call(
        limit_s, what, prepared.execute_1_3, request, choices.measureTiming,
        deadline_point(choices), loop_timeout(choices), callback), what)
    wait_for_notify(callback, limit_s, what, launch)
    oracles.check_notified_once(callback, what)
    status, shapes, timing = callback.calls[0]
    oracles.check_launch_matches_callback(launch, status, what)
    oracles.check_timing(status, timing, choices.measureTiming, f"{what} callback")
    return status, shapes


def _signal_all(fences: Sequence[SyncFence]) -> None:
    for fence in fences:
        fence.signal()


def run_fenced(prepared: Any, request: Request, choices: ExecutionChoices, limit_s: float):
    what = "executeFenced"
    wait_for = [SyncFence() for _ in range(choices.wait_fences)]
    delay_s = max(0, choices.wait_fence_delay_ns) * 1e-9
    if wait_for:
        SCHEDULER.call_later(delay_s, lambda: _signal_all(wait_for))
    budget = Budget(limit_s + delay_s)
    duration = OptionalTimeoutDuration(choices.fenced_duration_ns)
    result = hal_call(budget.limit_s, what, prepared.executeFenced, request, wait_for,
                      choices.measureTiming, deadline_point(choices), loop_timeout(choices), duration)
    status, fence, callback = oracles.unpack(result, 3, what)
    status = oracles.as_status(status, what)
    if status != ErrorStatus.NONE:
        return status, None
    oracles.check_present(status, callback, what, "an IFencedExecutionCallback")
    fence_failed = False
    if fence is not None:
        while (state := fence.wait(WAIT_SLICE_S)) == FenceState.ACTIVE:
            THREAD_FAILURES.raise_first()
            if budget.exhausted():
                raise hang_in_driver_thread(f"{what} sync fence", budget)
        fence_failed = state == FenceState.ERROR
    info_what = "IFencedExecutionCallback.getExecutionInfo"
    info = oracles.unpack(hal_call(CALL_LIMIT_S, info_what, callback.getExecutionInfo), 3, info_what)
    status = oracles.as_status(info[0], info_what)
    oracles.check_timing(status, info[1], choices.measureTiming, f"{info_what} timingLaunched")
    oracles.check_timing(status, info[2], choices.measureTiming, f"{info_what} timingFenced")
    oracles.check_fence_consistent(fence_failed, status)
    return status, None


def run_burst(prepared: Any, request: Request, choices: ExecutionChoices, limit_s: float):
    what = "configureExecutionBurst"
    status, burst = oracles.unpack(
        hal_call(CALL_LIMIT_S, what, prepared.configureExecutionBurst, None), 2, what)
    status = oracles.as_status(status, what)
    if status != ErrorStatus.NONE:
        return status, None
    oracles.check_present(status, burst, what, "a burst context")
    what = "IBurstContext.execute"
    slots = list(range(len(request.pools)))
    result = hal_call(limit_s, what, burst.execute, request, slots, choices.measureTiming,
                      deadline_point(choices), loop_timeout(choices))
    status, shapes, timing = oracles.unpack(result, 3, what)
    status = oracles.as_status(status, what)
    oracles.check_timing(status, timing, choices.measureTiming, what)
    for slot in slots:
        hal_call(CALL_LIMIT_S, "IBurstContext.freeMemory", burst.freeMemory, slot)
    return status, shapes


PATH_RUNNERS = {
    ExecutionPath.SYNC: run_sync,
    ExecutionPath.ASYNC: run_async,
    ExecutionPath.FENCED: run_fenced,
    ExecutionPath.BURST: run_burst,
}


def execute(prepared: Any, case: FuzzCase, request: Request, path: ExecutionPath,
            limit_s: float) -> ExecutionResult:
    status, shapes = PATH_RUNNERS[ExecutionPath(path)](prepared, request, case.choices, limit_s)
    what = path.name
    oracles.check_output_shapes(status, shapes, request, case.model, what)
    oracles.check_sufficiency(status, shapes, request, case.model, what)
    return ExecutionResult(ExecutionPath(path), status, shapes, read_outputs(request))


# --- the flow -------------------------------------------------------------------------------

def reference_errors(model: Model, request: Request) -> tuple[str | None, str | None]:
    """What the reference validator says against model and request (None: valid)."""
    try:
        validate_model(model)
    except ValidationError as error:
        return str(error), "the model is invalid"
    try:
        validate_request(request, model)
    except ValidationError as error:
        return None, str(error)
    return None, None


def prepare(device: Any, model: Model, choices: ExecutionChoices) -> tuple[ErrorStatus, Any, PreparedModelCallback]:
    what = "prepareModel_1_3"
    callback = PreparedModelCallback()
    launch = oracles.as_status(hal_call(
        CALL_LIMIT_S, what, device.prepareModel_1_3, model, choices.preference, choices.priority,
        deadline_point(choices), [], [], CACHE_TOKEN, callback), what)
    wait_for_notify(callback, CALL_LIMIT_S, what, launch)
    oracles.check_notified_once(callback, what)
    status, prepared = callback.calls[0]
    oracles.check_launch_matches_callback(launch, status, what)
    oracles.check_prepared_model_presence(status, prepared)
    return status, prepared, callback


def prepare_arguments_valid(choices: ExecutionChoices) -> bool:
    return (oracles.enum_member(ExecutionPreference, choices.preference) is not None
            and oracles.enum_member(Priority, choices.priority) is not None
            and choices.deadline_ns is None)


def run_case(case: FuzzCase, device: Any) -> Outcome:
    """Run one case through ``device`` and apply every oracle; raises OracleViolation."""
    try:
        return _run_case(case, device)
    except OracleViolation:
        STATS.violations += 1
        raise


def _run_case(case: FuzzCase, device: Any) -> Outcome:
    THREAD_FAILURES.install()
    model, request, choices = case.model, case.request, case.choices
    model_error, request_error = reference_errors(model, request)
    if model_error is None and request_error is None:
        STATS.valid += 1

    what = "getSupportedOperations_1_3"
    supported_status, supported = oracles.unpack(
        hal_call(CALL_LIMIT_S, what, device.getSupportedOperations_1_3, model), 2, what)
    supported_status = oracles.as_status(supported_status, what)
    oracles.check_supported_list(supported_status, supported, model)

    prepare_status, prepared, prepare_callback = prepare(device, model, choices)
    oracles.check_invalid_model_rejected(model_error, supported_status, supported, prepare_status)
    oracles.check_supported_vs_prepare(supported_status, supported, prepare_status,
                                       prepare_arguments_valid(choices))
    outcome = Outcome(model_error, request_error, supported_status, prepare_status)
    if prepare_status != ErrorStatus.NONE:
        return _finish(outcome, prepare_callback)
    STATS.prepared += 1

    limit_s = execution_limit_s(case)
    snapshot = snapshot_pools(request)
    first = execute(prepared, case, request, choices.path, limit_s)
    if has_control_flow(model):
        STATS.control_flow += 1
    oracles.check_invalid_request_rejected(request_error, first.status, first.path)
    outcome = Outcome(model_error, request_error, supported_status, prepare_status, first)
    if first.status != ErrorStatus.NONE:
        return _finish(outcome, prepare_callback)
    STATS.executed_ok += 1

    fresh = with_fresh_pools(request, snapshot)
    second = execute(prepared, case, fresh, choices.second_path, limit_s)
    oracles.check_same_results(first, second, model, request, outputs_fully_specified(model, request))
    return _finish(Outcome(model_error, request_error, supported_status, prepare_status, first, second),
                   prepare_callback)


def _finish(outcome: Outcome, prepare_callback: PreparedModelCallback) -> Outcome:
    # Late contract breaches: a second notification, a driver thread that died meanwhile.
    oracles.check_notified_once(prepare_callback, "prepareModel_1_3")
    THREAD_FAILURES.raise_first()
    return outcome


# --- bytes in ---------------------------------------------------------------------------------

_default_device: Any = None


def default_device() -> Any:
    """The configured driver's device (see fuzz/drivers.py), created once per process."""
    global _default_device
    if _default_device is None:
        from .drivers import make_device
        _default_device = make_device()
    return _default_device


def run_one(data: bytes, device: Any = None) -> Outcome:
    """Decode one fuzz input and run it (the libFuzzer entry and pytest replay)."""
    from .codec import decode
    STATS.inputs += 1
    case = decode(data)
    STATS.decoded += 1
    return run_case(case, device if device is not None else default_device())
