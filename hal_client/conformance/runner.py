"""Running conformance examples against an IDevice, as the CTS and the VTS do.

For each example the runner asks which operations are supported, prepares the model, and
executes it through every path (sync, async, fenced, burst) and variant:

- ``normal``: the model as given;
- ``dynamic``: the main outputs' dimensions are unknown in the model, so the driver must
  infer them and report them in the output shapes;
- ``insufficient``: as ``dynamic``, with one output buffer a byte too small: the driver
  must answer OUTPUT_INSUFFICIENT_SIZE and report the shape it needed;
- ``buffers``: the model as given, every input and output in a driver-managed buffer of
  its own (IDevice.allocate; inputs set by IBuffer.copyFrom, outputs read by copyTo);
- ``cache``: the model as given, prepared with cache files, then prepared again from them
  (prepareModelFromCache_1_3) and run on the first path only: what the cache adds is in
  the preparation, and the paths are the same for any prepared model.
A driver that offers no memory domains (allocate answers GENERAL_FAILURE) or caches
nothing (getNumberOfCacheFilesNeeded answers 0 and 0) passes those two variants unrun.

It then checks the statuses, output shapes, timings and output values: the rules any
client checks (hal_client.contract, applied by hal_client.paths) and the CTS's own. The
runner is a client of the HAL surface only, so it drives any object implementing
driver/hal/interfaces.py's IDevice.
"""
from __future__ import annotations

import enum
import functools
import hashlib
import itertools
import queue
import threading
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from driver.hal import (BufferRole, DataLocation, ErrorStatus, ExecutionPreference,
                        MeasureTiming, Memory, MemoryPool, Model, Operand, OperationType,
                        OptionalTimePoint, OutputShape, Priority, Request, RequestArgument)
from driver.hal.enums import SCALAR_OPERAND_TYPES

from .. import domains
from ..contract import HangViolation, OracleViolation, outputs_fully_specified
from ..device import DEFAULT_DRIVER, make_device
from ..paths import ExecutionArguments, ExecutionPath, HalClient, read_outputs
from .compare import check_outputs
from .loader import (Example, LoadError, build_model, build_request, load_examples,
                     output_buffer_size, shrinkable_output)


class Variant(enum.Enum):
    NORMAL = "normal"
    DYNAMIC = "dynamic"
    INSUFFICIENT = "insufficient"
    BUFFERS = "buffers"
    CACHE = "cache"


#: The variants that run the model with its outputs' shapes as given.
KNOWN_SHAPE_VARIANTS = (Variant.NORMAL, Variant.BUFFERS, Variant.CACHE)


class Verdict(enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class Check:
    """The outcome of one step of an example: a query, a preparation, or one execution."""
    step: str                        # an ExecutionPath label, "supported" or "prepare"
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
    #: At most MAX_CALL_TIMEOUT_S.
    call_timeout: float = 60.0


#: The longest call_timeout. A call is waited for with a lock, which refuses a timeout past
#: threading.TIMEOUT_MAX (about 292 years) with OverflowError; no call needs more than a day.
MAX_CALL_TIMEOUT_S = 86_400.0


@dataclass(frozen=True)
class FileResult:
    path: str
    results: tuple[ExampleResult, ...] = ()
    load_error: str | None = None


class CheckFailed(Exception):
    """One expectation of the HAL contract did not hold; the message says which."""


# --- bounded HAL calls -----------------------------------------------------------------
# Not the fuzz harness's watchdog: it interrupts a hung call in the caller's thread, which
# fails for a driver blocked outside Python (a lock without timeout, a kernel wait), and
# then it aborts the process. The runner must go on with the next example instead, so it
# hands each call to a thread of its own and abandons that thread if the call hangs. The
# hand-over costs a thread switch per call, too much for the harness's every input.

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
    """Runs HAL calls with a time limit (a hal_client.paths limiter), so that a driver that
    hangs fails one check instead of stopping the run. A hung call's thread is abandoned
    (it is a daemon)."""

    def __init__(self) -> None:
        self._thread: _CallThread | None = None

    def call(self, limit_s: float, what: str, function: Callable[..., Any], *args: Any) -> Any:
        if self._thread is None:
            self._thread = _CallThread()
        outcome: list[tuple[bool, Any]] = []
        done = threading.Event()
        self._thread.calls.put((function, args, outcome, done))
        if not done.wait(limit_s):
            self._thread = None
            raise HangViolation(f"{what} did not return within {limit_s:g} s", key=what)
        succeeded, value = outcome[0]
        if not succeeded:
            raise value
        return value


# --- one example ------------------------------------------------------------------------

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
    """Every variant runs valid models only. The VTS runs the unknown-shape variants only
    on models without scalar outputs (a scalar has no dimension to leave unknown), and
    the insufficient one only when some output buffer can lose a byte."""
    return [variant for variant in options.variants
            if (variant is Variant.NORMAL or not example.expectFailure)
            and (variant in KNOWN_SHAPE_VARIANTS or not example.has_scalar_outputs)
            and (variant is not Variant.INSUFFICIENT or shrinkable_output(example) is not None)]


def applicable_paths(variant: Variant, options: RunOptions) -> list[ExecutionPath]:
    if variant is Variant.CACHE:
        return list(options.paths[:1])
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
        self.client = HalClient(guard.call, options.call_timeout)
        self.measures = itertools.cycle((MeasureTiming.NO, MeasureTiming.YES))
        self.slots = itertools.count()
        #: The buffers variant's inputs: (token, IBuffer), None for an input without a value.
        self.input_buffers: list[tuple[int, Any] | None] = []

    def run(self) -> ExampleResult:
        variants = applicable_variants(self.example, self.options)
        checks: list[Check] = []
        for zero_output_dims in (False, True):
            chosen = [v for v in variants if (v not in KNOWN_SHAPE_VARIANTS) == zero_output_dims]
            if chosen:
                checks += self.run_model(zero_output_dims=zero_output_dims, variants=chosen)
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
        except (CheckFailed, OracleViolation) as failure:
            return [Check(step, first, Verdict.FAILED, str(failure))]
        except Exception as error:  # a bug of the runner: report it and go on
            return [Check(step, first, Verdict.FAILED, describe_exception(error))]
        if prepared is None:
            return [Check(step, first, Verdict.PASSED, "rejected at preparation")]
        checks: list[Check] = []
        for variant in variants:
            target = self.guarded("allocate" if variant is Variant.BUFFERS else "prepare",
                                       variant, lambda: self.prepared_for(variant, model, prepared))
            checks += [target] if isinstance(target, Check) else self.run_variant(model, target, variant)
        return checks

    def prepared_for(self, variant: Variant, model: Model, prepared: Any) -> Any:
        """The prepared model ``variant`` executes, or the Check that ends the variant
        before any execution."""
        if variant is Variant.CACHE:
            return self.prepare_from_cache(model)
        if variant is Variant.BUFFERS:
            return self.buffer_inputs(prepared) or prepared
        return prepared

    def run_variant(self, model: Model, prepared: Any, variant: Variant) -> list[Check]:
        bursts: list[Any] = []
        return [self.guarded(path.label, variant, lambda: self.execute_and_judge(
                    model, prepared, bursts, path, variant))
                for path in applicable_paths(variant, self.options)]

    @staticmethod
    def guarded(step: str, variant: Variant, action: Callable[[], Any]) -> Any:
        """What ``action`` returns, or the Check of its failure."""
        try:
            return action()
        except (CheckFailed, OracleViolation) as failure:
            return Check(step, variant, Verdict.FAILED, str(failure))
        except Exception as error:  # a bug of the runner: report it and go on
            return Check(step, variant, Verdict.FAILED, describe_exception(error))

    # --- device ---

    def query_support(self, model: Model) -> tuple[ErrorStatus, list[str]]:
        """getSupportedOperations_1_3's status and the main operations it does not support."""
        status, supported = self.client.get_supported_operations(self.device, model)
        if status != ErrorStatus.NONE:
            return status, []
        return status, [f"{operation.type.name} (operation {i})"
                        for i, (operation, ok) in enumerate(zip(model.main.operations, supported))
                        if not ok]

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
        status, prepared, _ = self.client.prepare(self.device, model,
                                                  ExecutionPreference.FAST_SINGLE_ANSWER,
                                                  Priority.MEDIUM, OptionalTimePoint())
        if status == ErrorStatus.NONE:
            return prepared
        # A loop that never ends depends on the inputs: only the execution can find it out.
        if self.example.expectFailure and not self.example.is_infinite_loop_test:
            return None
        raise CheckFailed(f"prepareModel_1_3 notified {status.name}")

    def prepare_from_cache(self, model: Model) -> Any:
        """The model prepared with cache files, then prepared from them; a passing Check
        when the driver caches nothing."""
        status, model_files, data_files = domains.cache_files_needed(self.client, self.device)
        if (status, model_files, data_files) == (ErrorStatus.NONE, 0, 0):
            return Check("prepare", Variant.CACHE, Verdict.PASSED, "the driver caches nothing")
        if status != ErrorStatus.NONE:
            raise CheckFailed(f"getNumberOfCacheFilesNeeded returned {status}")
        token = hashlib.sha256(self.example.name.encode()).digest()
        with domains.CacheFiles(model_files, data_files) as files:
            status, _, _ = self.client.prepare(self.device, model, ExecutionPreference.FAST_SINGLE_ANSWER,
                                               Priority.MEDIUM, OptionalTimePoint(), files.model,
                                               files.data, token)
            if status != ErrorStatus.NONE:
                raise CheckFailed(f"prepareModel_1_3 with cache files notified {status.name}")
            status, prepared, _ = self.client.prepare_from_cache(
                self.device, OptionalTimePoint(), files.model, files.data, token)
        if status != ErrorStatus.NONE:
            raise CheckFailed(f"prepareModelFromCache_1_3 notified {status.name} for the files "
                              f"prepareModel_1_3 had just written")
        return prepared

    def buffer_inputs(self, prepared: Any) -> Check | None:
        """Copy each input with data into a buffer of its own (IBuffer.copyFrom), once for
        every path. A passing Check when the driver offers no memory domains (allocate
        answers GENERAL_FAILURE for the first role asked)."""
        self.input_buffers = []
        base = build_request(self.example)
        for position, (argument, spec) in enumerate(zip(base.inputs, self.example.main.inputs)):
            if argument.hasNoValue:
                self.input_buffers.append(None)
                continue
            status, buffer, token = self.allocate(prepared, [BufferRole(0, position, 1.0)], [])
            if status == ErrorStatus.GENERAL_FAILURE and not any(self.input_buffers):
                return Check("allocate", Variant.BUFFERS, Verdict.PASSED, "the driver offers no memory domains")
            self.expect_allocated(status)
            dimensions = [] if spec.is_scalar else list(spec.dimensions)
            status = domains.copy_from(self.client, buffer, Memory.from_bytes(spec.values.tobytes()),
                                       dimensions)
            if status != ErrorStatus.NONE:
                raise CheckFailed(f"IBuffer.copyFrom of input {position} returned {status!r}")
            self.input_buffers.append((token, buffer))
        return None

    def allocate(self, prepared: Any, inputRoles: list[BufferRole], outputRoles: list[BufferRole],
                 ) -> tuple[ErrorStatus, Any, int]:
        status, buffer, token = domains.allocate(self.client, self.device, [prepared], inputRoles,
                                                 outputRoles)
        if status not in (ErrorStatus.NONE, ErrorStatus.GENERAL_FAILURE):
            raise CheckFailed(f"IDevice.allocate returned {status.name} for a role of the model")
        return status, buffer, token

    def buffer_request(self, prepared: Any) -> tuple[Request, list[Any]]:
        """A request reading the input buffers and writing each output to a new buffer of
        its own (so that no path can pass on what another wrote), and those buffers.
        A driver may forget a buffer's token as soon as the client drops its IBuffer:
        the caller holds them until the execution ends."""
        pools, inputs = [], []
        for entry in self.input_buffers:
            if entry is None:
                inputs.append(RequestArgument(hasNoValue=True))
                continue
            pools.append(MemoryPool(token=entry[0]))
            inputs.append(RequestArgument(location=DataLocation(len(pools) - 1)))
        outputs, buffers = [], []
        for position in range(len(self.example.main.outputs)):
            status, buffer, token = self.allocate(prepared, [], [BufferRole(0, position, 1.0)])
            self.expect_allocated(status)
            pools.append(MemoryPool(token=token))
            outputs.append(RequestArgument(location=DataLocation(len(pools) - 1)))
            buffers.append(buffer)
        return Request(inputs=inputs, outputs=outputs, pools=pools), buffers

    @staticmethod
    def expect_allocated(status: ErrorStatus) -> None:
        if status != ErrorStatus.NONE:
            raise CheckFailed(f"IDevice.allocate returned {status.name} for one role, "
                              f"having allocated a buffer for another")

    def read_buffers(self, buffers: list[Any]) -> list[bytes | None]:
        """Each output buffer's content (IBuffer.copyTo); None where it cannot be read."""
        return [domains.copy_to(self.client, buffer, output_buffer_size(spec))
                if spec.byte_size else b""      # a zero-sized output has nothing to compare
                for spec, buffer in zip(self.example.main.outputs, buffers)]

    # --- executions ---

    def execute_and_judge(self, model: Model, prepared: Any, bursts: list[Any],
                          path: ExecutionPath, variant: Variant) -> Check:
        shrunk = shrinkable_output(self.example) if variant is Variant.INSUFFICIENT else None
        if variant is Variant.BUFFERS:
            request, output_buffers = self.buffer_request(prepared)
            read = lambda: self.read_buffers(output_buffers)  # noqa: E731
        else:
            request = build_request(self.example, shrink_output=shrunk)
            read = lambda: read_outputs(request)  # noqa: E731
        arguments = ExecutionArguments(measureTiming=next(self.measures))
        limit_s = self.options.call_timeout
        if path is ExecutionPath.BURST and not bursts:
            bursts.append(self.configure_burst(prepared))
        start = time.monotonic()
        if path is ExecutionPath.BURST:
            # Every request brings new pools, so each gets slots never used before; they
            # are freed afterwards, which exercises the burst's memory cache both ways.
            slots = [next(self.slots) for _ in request.pools]
            status, shapes = self.client.execute_burst(bursts[0], request, slots, arguments, limit_s)
        else:
            status, shapes = self.client.execute(prepared, request, path, arguments, limit_s)
        elapsed = time.monotonic() - start
        problems = self.judge(model, status, shapes, request, path, variant, shrunk, read)
        return Check(path.label, variant, Verdict.FAILED if problems else Verdict.PASSED,
                     "; ".join(problems), status, elapsed)

    def configure_burst(self, prepared: Any) -> Any:
        status, burst = self.client.configure_burst(prepared)
        if status != ErrorStatus.NONE:
            raise CheckFailed(f"configureExecutionBurst returned {status.name}")
        return burst

    # --- judging ---

    def judge(self, model: Model, status: ErrorStatus, shapes: list[OutputShape] | None,
              request: Request, path: ExecutionPath, variant: Variant,
              shrunk: int | None, read: Callable[[], list[bytes | None]]) -> list[str]:
        """``shapes`` is None for the fenced path, which reports none; ``read`` gives the
        outputs the execution wrote."""
        example = self.example
        if example.expectFailure:
            if example.is_infinite_loop_test:
                if status != ErrorStatus.MISSED_DEADLINE_TRANSIENT:
                    return [f"status {status.name}, expected MISSED_DEADLINE_TRANSIENT "
                            f"(the loop never ends)"]
            elif status == ErrorStatus.NONE:
                return ["status NONE, expected an error (the model must fail)"]
            return []
        fully_specified = outputs_fully_specified(model, request)
        acceptable = self.acceptable_statuses(path, variant, fully_specified)
        if status not in acceptable:
            return [f"status {status.name}, expected {' or '.join(s.name for s in acceptable)}"]
        if status == ErrorStatus.INVALID_ARGUMENT:
            return []
        problems = [] if shapes is None else self.shape_problems(shapes, fully_specified, shrunk)
        if variant is not Variant.INSUFFICIENT:
            contents = read()
            unread = [i for i, content in enumerate(contents) if content is None]
            if unread:
                return problems + [f"output {i}: IBuffer.copyTo failed" for i in unread]
            problems += check_outputs(example, contents)
        return problems

    @staticmethod
    def acceptable_statuses(path: ExecutionPath, variant: Variant,
                            fully_specified: bool) -> tuple[ErrorStatus, ...]:
        if variant is Variant.INSUFFICIENT:
            return (ErrorStatus.OUTPUT_INSUFFICIENT_SIZE,)
        # executeFenced cannot report output shapes. The VTS requires it to refuse a model
        # whose outputs are not fully specified; a driver that runs it anyway must still
        # write the right values.
        if path is ExecutionPath.FENCED and not fully_specified:
            return (ErrorStatus.NONE, ErrorStatus.INVALID_ARGUMENT)
        return (ErrorStatus.NONE,)

    def shape_problems(self, shapes: list[OutputShape], fully_specified: bool,
                       shrunk: int | None) -> list[str]:
        outputs = self.example.main.outputs
        if not shapes and fully_specified:
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
    return ExampleRun(device, example, options, guard or CallGuard()).run()


# --- files and processes ----------------------------------------------------------------

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
    guard = guard or CallGuard()
    return FileResult(str(path), tuple(run_example(device, example, options, guard)
                                       for example in examples))


# Each worker process has its own device and keeps the file it is working through loaded.
_worker_device: Any = None
_worker_guard: CallGuard | None = None


def _start_worker(driver_spec: str) -> None:
    global _worker_device, _worker_guard
    _worker_device = make_device(driver_spec)
    _worker_guard = CallGuard()


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
        guard = CallGuard()
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
                             initargs=(driver_spec,)) as pool:
        results = pool.map(_run_example_in_worker, *zip(*tasks), itertools.repeat(options),
                           itertools.repeat(name_filter)) if tasks else iter(())
        for path, selected in selections:
            if isinstance(selected, str):
                yield FileResult(path, load_error=selected)
            else:
                yield FileResult(path, tuple(next(results) for _ in range(selected)))
