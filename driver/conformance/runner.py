"""Running conformance examples against an IDevice, as the CTS and the VTS do.

For each example the runner asks which operations are supported, prepares the model, and
executes it through every path (sync, async, fenced, burst) and variant:

- ``normal``: the model as given;
- ``dynamic``: the main outputs' dimensions are unknown in the model, so the driver must
  infer them and report them in the output shapes;
- ``insufficient``: as ``dynamic``, with one output buffer a byte too small: the driver
  must answer OUTPUT_INSUFFICIENT_SIZE and report the shape it needed.

It then checks the statuses, output shapes, timings and output values. The runner is a
client of the HAL surface only (driver.hal, driver.memory, driver.sync_fence), so it drives
any object implementing driver/hal/interfaces.py's IDevice.
"""
from __future__ import annotations

import enum
import functools
import importlib
import itertools
import queue
import threading
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from ..hal import (ErrorStatus, ExecutionCallback, ExecutionPreference, MeasureTiming, Model,
                   Operand, OperationType, OptionalTimePoint, OptionalTimeoutDuration,
                   OutputShape, PreparedModelCallback, Priority, Request, Timing, UINT64_MAX)
from ..hal.enums import SCALAR_OPERAND_TYPES, Constant
from ..sync_fence import FenceState
from .compare import check_outputs
from .loader import (Example, LoadError, build_model, build_request, load_examples,
                     read_outputs, shrinkable_output)

DEFAULT_DRIVER = "driver:SampleDriver"


class ExecutionPath(enum.Enum):
    SYNC = "sync"        # IPreparedModel.executeSynchronously_1_3
    ASYNC = "async"      # IPreparedModel.execute_1_3 + IExecutionCallback
    FENCED = "fenced"    # IPreparedModel.executeFenced + sync fence + IFencedExecutionCallback
    BURST = "burst"      # IPreparedModel.configureExecutionBurst + IBurstContext.execute


class Variant(enum.Enum):
    NORMAL = "normal"
    DYNAMIC = "dynamic"
    INSUFFICIENT = "insufficient"


class Verdict(enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class Check:
    """The outcome of one step of an example: a query, a preparation, or one execution."""
    step: str                        # an ExecutionPath value, "supported" or "prepare"
    variant: Variant
    verdict: Verdict
    reason: str = ""
    status: ErrorStatus | None = None   # the execution's status, when it ran
    elapsed: float = 0.0                # seconds from launching the execution to its result


@dataclass(frozen=True)
class ExampleResult:
    name: str
    source: str
    verdict: Verdict
    reason: str
    checks: tuple[Check, ...]

    def failure_line(self) -> str:
        failed = [check for check in self.checks if check.verdict is Verdict.FAILED]
        first = failed[0]
        more = f" (and {len(failed) - 1} more failing steps)" if len(failed) > 1 else ""
        return f"FAIL {self.name} [{first.step}/{first.variant.value}]: {first.reason}{more}"

    def as_report(self) -> dict[str, str]:
        return {"name": self.name, "status": self.verdict.value, "reason": self.reason}


@dataclass(frozen=True)
class RunOptions:
    paths: tuple[ExecutionPath, ...] = tuple(ExecutionPath)
    variants: tuple[Variant, ...] = tuple(Variant)
    #: Seconds one HAL call (or the wait for its callback or fence) may take before the
    #: driver counts as hung. Far above any loop timeout, so it never decides a loop test.
    call_timeout: float = 60.0


@dataclass(frozen=True)
class FileResult:
    path: str
    results: tuple[ExampleResult, ...] = ()
    load_error: str | None = None


class CheckFailed(Exception):
    """One expectation of the HAL contract did not hold; the message says which."""


def expect(condition: object, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


# --- bounded HAL calls -----------------------------------------------------------------

class _CallThread:
    """A daemon thread that runs the calls handed to it, one at a time."""

    def __init__(self) -> None:
        self.calls: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="conformance-hal-call", daemon=True).start()

    def _serve(self) -> None:
        while True:
            function, args, outcome, done = self.calls.get()
            try:
                outcome.append((True, function(*args)))
            except Exception as error:  # handed to the caller, which re-raises it
                outcome.append((False, error))
            done.set()


class CallGuard:
    """Runs HAL calls with a time limit, so that a driver that hangs fails one check
    instead of stopping the run. A hung call's thread is abandoned (it is a daemon)."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._thread: _CallThread | None = None

    def call(self, what: str, function: Callable[..., Any], *args: Any) -> Any:
        if self._thread is None:
            self._thread = _CallThread()
        outcome: list[tuple[bool, Any]] = []
        done = threading.Event()
        self._thread.calls.put((function, args, outcome, done))
        if not done.wait(self.timeout):
            self._thread = None
            raise CheckFailed(f"{what} did not return within {self.timeout:g} s")
        succeeded, value = outcome[0]
        if not succeeded:
            raise value
        return value


def as_status(value: Any, what: str) -> ErrorStatus:
    try:
        return ErrorStatus(value)
    except ValueError:
        raise CheckFailed(f"{what} returned {value!r}, which is not an ErrorStatus") from None


# --- one example ------------------------------------------------------------------------

@dataclass(frozen=True)
class _Outcome:
    status: ErrorStatus
    shapes: list[OutputShape] | None     # None: the path does not report shapes (fenced)
    timings: tuple[Timing, ...]
    elapsed: float


def outputs_fully_specified(example: Example, variant: Variant) -> bool:
    """Whether the model handed to the driver declares every main output's full shape.
    Zero-sized outputs are declared with a 0 dimension, so they count as unspecified."""
    if variant is not Variant.NORMAL:
        return False
    return all(output.is_scalar or (output.dimensions and 0 not in output.dimensions)
               for output in example.main.outputs)


def unknown_size_while_operand(model: Model) -> str | None:
    """Where a WHILE of ``model`` has an operand of unknown size, if anywhere. HAL 1.3
    does not allow that (the runtime runs such loops itself): the loop's outer inputs and
    outputs, its condition's inputs, and its body's inputs and outputs must all be of
    known size."""
    subgraphs = [("main", model.main)] + [(f"referenced {i}", subgraph)
                                          for i, subgraph in enumerate(model.referenced)]
    for label, subgraph in subgraphs:
        for op_index, operation in enumerate(subgraph.operations):
            if operation.type != OperationType.WHILE or len(operation.inputs) < 3:
                continue
            cond, body = (model.referenced[subgraph.operands[i].location.offset]
                          for i in operation.inputs[:2])
            operands = ([subgraph.operands[i] for i in operation.inputs[2:] + operation.outputs]
                        + [cond.operands[i] for i in cond.inputIndexes]
                        + [body.operands[i] for i in body.inputIndexes + body.outputIndexes])
            if any(not has_known_size(operand) for operand in operands):
                return (f"{label} subgraph, operation {op_index} (WHILE) has an operand of "
                        f"unknown size")
    return None


def has_known_size(operand: Operand) -> bool:
    return operand.type in SCALAR_OPERAND_TYPES or (
        bool(operand.dimensions) and 0 not in operand.dimensions)


def applicable_variants(example: Example, options: RunOptions) -> list[Variant]:
    """The VTS runs the unknown-shape variants only on valid models without scalar
    outputs (a scalar has no dimension to leave unknown), and the insufficient one only
    when some output buffer can lose a byte."""
    variants = []
    for variant in options.variants:
        if variant is not Variant.NORMAL and (example.expectFailure or example.has_scalar_outputs):
            continue
        if variant is Variant.INSUFFICIENT and shrinkable_output(example) is None:
            continue
        variants.append(variant)
    return variants


def applicable_paths(variant: Variant, options: RunOptions) -> list[ExecutionPath]:
    # The insufficient variant checks the shape the driver says it needed, which only the
    # paths that report output shapes can tell (as in the VTS, not executeFenced).
    return [path for path in options.paths
            if not (variant is Variant.INSUFFICIENT and path is ExecutionPath.FENCED)]


class ExampleRun:
    """Everything one example does against one device."""

    def __init__(self, device: Any, example: Example, options: RunOptions,
                 guard: CallGuard) -> None:
        self.device = device
        self.example = example
        self.options = options
        self.guard = guard
        self.measures = itertools.cycle((MeasureTiming.NO, MeasureTiming.YES))
        self.slots = itertools.count()

    def run(self) -> ExampleResult:
        variants = applicable_variants(self.example, self.options)
        checks: list[Check] = []
        if Variant.NORMAL in variants:
            checks += self.run_model(zero_output_dims=False, variants=[Variant.NORMAL])
        unknown_shape_variants = [v for v in variants if v is not Variant.NORMAL]
        if unknown_shape_variants:
            checks += self.run_model(zero_output_dims=True, variants=unknown_shape_variants)
        return summarize(self.example, checks)

    def run_model(self, *, zero_output_dims: bool, variants: list[Variant]) -> list[Check]:
        model = build_model(self.example, zero_output_dims=zero_output_dims)
        first = variants[0]
        step = "supported"
        try:
            status, unsupported = self.query_support(model)
            if status != ErrorStatus.NONE:
                return [self.judge_rejected_model(model, status, first)]
            if unsupported:
                return [Check(step, first, Verdict.SKIPPED,
                              f"unsupported operations: {', '.join(unsupported)}")]
            step = "prepare"
            prepared = self.prepare(model)
        except CheckFailed as failure:
            return [Check(step, first, Verdict.FAILED, str(failure))]
        except Exception as error:  # a driver bug: report it and go on with the next example
            return [Check(step, first, Verdict.FAILED, describe_exception(error))]
        if prepared is None:
            return [Check(step, first, Verdict.PASSED, "rejected at preparation")]
        bursts: list[Any] = []
        return [self.guarded(path, variant, lambda: self.execute_and_judge(
                    prepared, bursts, path, variant))
                for variant in variants for path in applicable_paths(variant, self.options)]

    @staticmethod
    def guarded(path: ExecutionPath, variant: Variant, action: Callable[[], Check]) -> Check:
        try:
            return action()
        except CheckFailed as failure:
            return Check(path.value, variant, Verdict.FAILED, str(failure))
        except Exception as error:  # a driver bug: report it and go on with the next step
            return Check(path.value, variant, Verdict.FAILED, describe_exception(error))

    # --- device ---

    def query_support(self, model: Model) -> tuple[ErrorStatus, list[str]]:
        """getSupportedOperations_1_3's status and the main operations it does not support."""
        status, supported = self.guard.call(
            "getSupportedOperations_1_3", self.device.getSupportedOperations_1_3, model)
        status = as_status(status, "getSupportedOperations_1_3")
        if status != ErrorStatus.NONE:
            return status, []
        operations = model.main.operations
        expect(len(supported) == len(operations),
               f"getSupportedOperations_1_3 answered {len(supported)} flags for "
               f"{len(operations)} operations")
        return status, [f"{operation.type.name} (operation {i})"
                        for i, (operation, ok) in enumerate(zip(operations, supported)) if not ok]

    def judge_rejected_model(self, model: Model, status: ErrorStatus, variant: Variant) -> Check:
        """getSupportedOperations_1_3 found the model invalid. The test models are valid
        NNAPI models, but not all are valid HAL 1.3 models."""
        step = "supported"
        if self.example.expectFailure and not self.example.is_infinite_loop_test:
            # As at preparation, the CTS lets a model that must fail be refused up front.
            return Check(step, variant, Verdict.PASSED, f"rejected with {status.name}")
        if status == ErrorStatus.INVALID_ARGUMENT and (where := unknown_size_while_operand(model)):
            reason = f"not a HAL 1.3 model ({where}), and the driver rejects it"
            if variant is not Variant.NORMAL and unknown_size_while_operand(
                    build_model(self.example)) is None:
                # Only leaving the outputs' shapes unknown made the loop's size unknown:
                # the example itself runs, and refusing the altered model is right.
                return Check(step, variant, Verdict.PASSED, reason)
            return Check(step, variant, Verdict.SKIPPED, reason)
        return Check(step, variant, Verdict.FAILED,
                     f"getSupportedOperations_1_3 returned {status.name} for a valid model")

    def prepare(self, model: Model) -> Any | None:
        """The prepared model; None when a model that must fail was rejected here (the CTS
        lets such a model fail at preparation or at execution)."""
        callback = PreparedModelCallback()
        launch = as_status(self.guard.call(
            "prepareModel_1_3", self.device.prepareModel_1_3, model,
            ExecutionPreference.FAST_SINGLE_ANSWER, Priority.MEDIUM, OptionalTimePoint(), [], [],
            bytes(Constant.BYTE_SIZE_OF_CACHE_TOKEN), callback), "prepareModel_1_3")
        expect(callback.wait_for_notify(self.options.call_timeout),
               f"IPreparedModelCallback was not notified within {self.options.call_timeout:g} s "
               f"(prepareModel_1_3 returned {launch.name})")
        status, prepared = callback.calls[0]
        expect(callback.notify_count == 1, f"IPreparedModelCallback notified "
               f"{callback.notify_count} times")
        if launch == ErrorStatus.NONE and status == ErrorStatus.NONE:
            expect(prepared is not None, "prepareModel_1_3 notified NONE without a prepared model")
            return prepared
        # A loop that never ends depends on the inputs: only the execution can find it out.
        if self.example.expectFailure and not self.example.is_infinite_loop_test:
            return None
        raise CheckFailed(f"prepareModel_1_3 returned {launch.name}, notified {status.name}")

    # --- executions ---

    def execute_and_judge(self, prepared: Any, bursts: list[Any], path: ExecutionPath,
                          variant: Variant) -> Check:
        shrunk = shrinkable_output(self.example) if variant is Variant.INSUFFICIENT else None
        request = build_request(self.example, shrink_output=shrunk)
        measure = next(self.measures)
        outcome = self.execute(prepared, bursts, path, request, measure)
        problems = timing_problems(outcome, measure) + self.judge(outcome, request, path, variant,
                                                                  shrunk)
        return Check(path.value, variant, Verdict.FAILED if problems else Verdict.PASSED,
                     "; ".join(problems), outcome.status, outcome.elapsed)

    def execute(self, prepared: Any, bursts: list[Any], path: ExecutionPath, request: Request,
                measure: MeasureTiming) -> _Outcome:
        if path is ExecutionPath.SYNC:
            return self.execute_sync(prepared, request, measure)
        if path is ExecutionPath.ASYNC:
            return self.execute_async(prepared, request, measure)
        if path is ExecutionPath.FENCED:
            return self.execute_fenced(prepared, request, measure)
        if not bursts:
            bursts.append(self.configure_burst(prepared))
        return self.execute_burst(bursts[0], request, measure)

    def execute_sync(self, prepared: Any, request: Request, measure: MeasureTiming) -> _Outcome:
        start = time.monotonic()
        status, shapes, timing = self.guard.call(
            "executeSynchronously_1_3", prepared.executeSynchronously_1_3, request, measure,
            OptionalTimePoint(), OptionalTimeoutDuration())
        elapsed = time.monotonic() - start
        return _Outcome(as_status(status, "executeSynchronously_1_3"), list(shapes), (timing,),
                        elapsed)

    def execute_async(self, prepared: Any, request: Request, measure: MeasureTiming) -> _Outcome:
        callback = ExecutionCallback()
        start = time.monotonic()
        launch = as_status(self.guard.call(
            "execute_1_3", prepared.execute_1_3, request, measure, OptionalTimePoint(),
            OptionalTimeoutDuration(), callback), "execute_1_3")
        expect(callback.wait_for_notify(self.options.call_timeout),
               f"IExecutionCallback was not notified within {self.options.call_timeout:g} s "
               f"(execute_1_3 returned {launch.name})")
        elapsed = time.monotonic() - start
        status, shapes, timing = callback.calls[0]
        expect(callback.notify_count == 1, f"IExecutionCallback notified "
               f"{callback.notify_count} times")
        expect(launch in (ErrorStatus.NONE, status),
               f"execute_1_3 returned {launch.name} but notified {status.name}")
        return _Outcome(status, list(shapes), (timing,), elapsed)

    def execute_fenced(self, prepared: Any, request: Request, measure: MeasureTiming) -> _Outcome:
        start = time.monotonic()
        launch, fence, callback = self.guard.call(
            "executeFenced", prepared.executeFenced, request, [], measure, OptionalTimePoint(),
            OptionalTimeoutDuration(), OptionalTimeoutDuration())
        launch = as_status(launch, "executeFenced")
        if launch != ErrorStatus.NONE:
            expect(fence is None and callback is None,
                   f"executeFenced failed with {launch.name} but returned a fence or a callback")
            return _Outcome(launch, None, (), time.monotonic() - start)
        expect(callback is not None, "executeFenced returned NONE without an execution callback")
        # No fence means the execution had already finished when the call returned.
        state = FenceState.SIGNALED if fence is None else fence.wait(self.options.call_timeout)
        expect(state != FenceState.ACTIVE,
               f"the sync fence was not signalled within {self.options.call_timeout:g} s")
        elapsed = time.monotonic() - start
        status, launched, fenced = self.guard.call("getExecutionInfo", callback.getExecutionInfo)
        status = as_status(status, "getExecutionInfo")
        expect(not (state == FenceState.ERROR and status == ErrorStatus.NONE),
               "the sync fence signalled an error but getExecutionInfo reported NONE")
        return _Outcome(status, None, (launched, fenced), elapsed)

    def configure_burst(self, prepared: Any) -> Any:
        status, burst = self.guard.call("configureExecutionBurst",
                                        prepared.configureExecutionBurst, None)
        status = as_status(status, "configureExecutionBurst")
        expect(status == ErrorStatus.NONE and burst is not None,
               f"configureExecutionBurst returned {status.name}"
               f"{'' if burst is not None else ' and no burst'}")
        return burst

    def execute_burst(self, burst: Any, request: Request, measure: MeasureTiming) -> _Outcome:
        # Every request brings new pools, so each gets slots never used before; they are
        # freed afterwards, which exercises the burst's memory cache both ways.
        slots = [next(self.slots) for _ in request.pools]
        start = time.monotonic()
        status, shapes, timing = self.guard.call(
            "burst execute", burst.execute, request, slots, measure, OptionalTimePoint(),
            OptionalTimeoutDuration())
        elapsed = time.monotonic() - start
        for slot in slots:
            self.guard.call("burst freeMemory", burst.freeMemory, slot)
        return _Outcome(as_status(status, "burst execute"), list(shapes), (timing,), elapsed)

    # --- judging ---

    def judge(self, outcome: _Outcome, request: Request, path: ExecutionPath, variant: Variant,
              shrunk: int | None) -> list[str]:
        example = self.example
        status = outcome.status
        problems = []
        if outcome.shapes and status not in (ErrorStatus.NONE,
                                             ErrorStatus.OUTPUT_INSUFFICIENT_SIZE):
            problems.append(f"output shapes reported with status {status.name}")
        if example.expectFailure:
            if example.is_infinite_loop_test:
                if status != ErrorStatus.MISSED_DEADLINE_TRANSIENT:
                    problems.append(f"status {status.name}, expected MISSED_DEADLINE_TRANSIENT "
                                    f"(the loop never ends)")
            elif status == ErrorStatus.NONE:
                problems.append("status NONE, expected an error (the model must fail)")
            return problems
        acceptable = self.acceptable_statuses(path, variant)
        if status not in acceptable:
            return problems + [f"status {status.name}, expected "
                               f"{' or '.join(s.name for s in acceptable)}"]
        if status == ErrorStatus.INVALID_ARGUMENT:
            return problems
        if outcome.shapes is not None:
            problems += self.shape_problems(outcome.shapes, variant, shrunk)
        if variant is not Variant.INSUFFICIENT:
            problems += check_outputs(example, read_outputs(request))
        return problems

    def acceptable_statuses(self, path: ExecutionPath, variant: Variant) -> tuple[ErrorStatus, ...]:
        if variant is Variant.INSUFFICIENT:
            return (ErrorStatus.OUTPUT_INSUFFICIENT_SIZE,)
        # executeFenced cannot report output shapes. The VTS requires it to refuse a model
        # whose outputs are not fully specified; a driver that runs it anyway must still
        # write the right values.
        if path is ExecutionPath.FENCED and not outputs_fully_specified(self.example, variant):
            return (ErrorStatus.NONE, ErrorStatus.INVALID_ARGUMENT)
        return (ErrorStatus.NONE,)

    def shape_problems(self, shapes: list[OutputShape], variant: Variant,
                       shrunk: int | None) -> list[str]:
        outputs = self.example.main.outputs
        if not shapes and outputs_fully_specified(self.example, variant):
            return []   # reporting shapes is optional when the model declares them all
        if len(shapes) != len(outputs):
            return [f"{len(shapes)} output shapes reported for {len(outputs)} outputs"]
        checked = range(len(outputs)) if shrunk is None else [shrunk]
        problems = []
        for i in checked:
            expected = list(outputs[i].dimensions)
            if list(shapes[i].dimensions) != expected:
                problems.append(f"output {i}: shape {list(shapes[i].dimensions)} reported, "
                                f"expected {expected}")
            if shapes[i].isSufficient != (shrunk is None):
                problems.append(f"output {i}: isSufficient is {shapes[i].isSufficient}")
        return problems


def timing_problems(outcome: _Outcome, measure: MeasureTiming) -> list[str]:
    """Times must be UINT64_MAX unless measured and the execution succeeded; a measured
    time on the device cannot exceed the time in the driver."""
    problems = []
    measured_allowed = measure == MeasureTiming.YES and outcome.status == ErrorStatus.NONE
    for timing in outcome.timings:
        if not measured_allowed and (timing.timeOnDevice, timing.timeInDriver) != (UINT64_MAX,
                                                                                  UINT64_MAX):
            problems.append(f"timing {timing} reported with measure {measure.name} and status "
                            f"{outcome.status.name}")
        elif UINT64_MAX not in (timing.timeOnDevice, timing.timeInDriver) \
                and timing.timeOnDevice > timing.timeInDriver:
            problems.append(f"timeOnDevice {timing.timeOnDevice} > timeInDriver "
                            f"{timing.timeInDriver}")
    return problems


def describe_exception(error: BaseException) -> str:
    """An exception out of the driver, with where it was raised."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return f"raised {type(error).__name__}: {error}"
    origin = frames[-1]
    return (f"raised {type(error).__name__}: {error} "
            f"(at {origin.filename}:{origin.lineno} in {origin.name})")


def summarize(example: Example, checks: list[Check]) -> ExampleResult:
    failed = [check for check in checks if check.verdict is Verdict.FAILED]
    skipped = [check for check in checks if check.verdict is Verdict.SKIPPED]
    if failed:
        verdict, reason = Verdict.FAILED, failed[0].reason
    elif skipped:
        verdict, reason = Verdict.SKIPPED, skipped[0].reason
    elif not checks:
        verdict, reason = Verdict.SKIPPED, "nothing to run for the chosen paths and variants"
    else:
        verdict, reason = Verdict.PASSED, ""
    return ExampleResult(example.name, example.source, verdict, reason, tuple(checks))


def run_example(device: Any, example: Example, options: RunOptions = RunOptions(),
                guard: CallGuard | None = None) -> ExampleResult:
    return ExampleRun(device, example, options, guard or CallGuard(options.call_timeout)).run()


# --- files and processes ----------------------------------------------------------------

def make_device(spec: str) -> Any:
    """The device made by ``MODULE:FACTORY`` (a callable returning an IDevice)."""
    module_name, _, factory_name = spec.partition(":")
    if not module_name or not factory_name:
        raise ValueError(f"--driver {spec!r}: expected MODULE:FACTORY")
    module = importlib.import_module(module_name)
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        raise ValueError(f"--driver {spec!r}: {module_name} has no callable {factory_name!r}")
    return factory()


def select_examples(path: str | Path, name_filter: str = "") -> tuple[Example, ...]:
    """The examples of one file whose name contains ``name_filter`` (LoadError if the file
    is malformed)."""
    return tuple(example for example in load_examples(path) if name_filter in example.name)


def run_file(path: str | Path, device: Any, options: RunOptions = RunOptions(),
             name_filter: str = "", guard: CallGuard | None = None) -> FileResult:
    try:
        examples = select_examples(path, name_filter)
    except LoadError as error:
        return FileResult(str(path), load_error=str(error))
    guard = guard or CallGuard(options.call_timeout)
    return FileResult(str(path), tuple(run_example(device, example, options, guard)
                                       for example in examples))


# Each worker process has its own device and keeps the file it is working through loaded.
_worker_device: Any = None
_worker_guard: CallGuard | None = None


def _start_worker(driver_spec: str, call_timeout: float) -> None:
    global _worker_device, _worker_guard
    _worker_device = make_device(driver_spec)
    _worker_guard = CallGuard(call_timeout)


@functools.lru_cache(maxsize=2)
def _worker_examples(path: str, name_filter: str) -> tuple[Example, ...]:
    return select_examples(path, name_filter)


def _run_example_in_worker(path: str, index: int, options: RunOptions,
                           name_filter: str) -> ExampleResult:
    return run_example(_worker_device, _worker_examples(path, name_filter)[index], options,
                       _worker_guard)


def run_files(paths: Iterable[str | Path], options: RunOptions = RunOptions(), *,
              driver_spec: str = DEFAULT_DRIVER, jobs: int = 1,
              name_filter: str = "") -> Iterator[FileResult]:
    """Run every selected example of every file, in file order. With ``jobs`` > 1 the
    examples (not whole files: one file may hold all the slow ones) are spread over that
    many processes, each with its own device."""
    paths = [str(path) for path in paths]
    if jobs <= 1:
        device = make_device(driver_spec)
        guard = CallGuard(options.call_timeout)
        for path in paths:
            yield run_file(path, device, options, name_filter, guard)
        return
    selections: list[tuple[str, int | str]] = []   # (path, example count or load error)
    for path in paths:
        try:
            selections.append((path, len(select_examples(path, name_filter))))
        except LoadError as error:
            selections.append((path, str(error)))
    tasks = [(path, index) for path, selected in selections if isinstance(selected, int)
             for index in range(selected)]
    with ProcessPoolExecutor(max_workers=min(jobs, max(len(tasks), 1)), initializer=_start_worker,
                             initargs=(driver_spec, options.call_timeout)) as pool:
        results = pool.map(_run_example_in_worker, *zip(*tasks), itertools.repeat(options),
                           itertools.repeat(name_filter)) if tasks else iter(())
        for path, selected in selections:
            if isinstance(selected, str):
                yield FileResult(path, load_error=selected)
            else:
                yield FileResult(path, tuple(next(results) for _ in range(selected)))
