"""One fuzz input through a driver, with every oracle applied: the flow shared by libFuzzer
(fuzz/driver_fuzz.py) and pytest replay.

For each case: the reference validator judges model and request; the driver under test
answers getSupportedOperations_1_3 and prepareModel_1_3; a prepared model runs the request
on ``choices.path`` and, when that succeeded, again on ``choices.second_path`` with fresh
copies of the request's pools; the two results must agree. When the second path launches
the execution on another thread (ASYNC, FENCED), the request is changed as soon as the
launch returns (``choices.request_change``): the results must still agree. The first
execution of a case declaring large values runs under tracemalloc, and its peak must stay
within the memory budget the harness gives the driver. A broken rule raises an
OracleViolation (see oracles.py and hal_client/contract.py). The driver is reached only
through the HAL surface, by hal_client.

Two oracles know the right answer (``Oracles``). A reference driver runs each case the
driver under test ran successfully (prepared like it, on its first path, over fresh pools):
its outputs must match within the accuracy criteria, and it must not reject what the driver
accepted. It is also asked about every model and request that the reference validator or
the driver rejects: where the driver rejects with INVALID_ARGUMENT what the reference
accepts, a violation; where the reference accepts what the validator rejects, the
reference's verdict is the one the harness holds the driver to (``judged_error``). The
validator may be the driver's own: a changed bundled driver fuzzed against its pristine
copy shares it, and a stricter rule there rejects valid models on both. A metamorphic relation
(``choices.relation``, fuzz/relations.py) rewrites a case that ran successfully into one
that must give the same outputs, which runs on the same driver; a route (fuzz/routes.py)
runs it again another way through the HAL (driver-managed buffers, the compilation cache).
"""
from __future__ import annotations

import tracemalloc
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from functools import cache
from itertools import repeat
from operator import attrgetter
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from driver.errors import ValidationError
from driver.hal import (CONTROL_FLOW_OPERATION_TYPES, DataLocation, ErrorStatus,
                        ExecutionPreference, LoopTimeoutDurationNs, MemoryPool, Model,
                        OperandLifeTime, OperationType, PreparedModelCallback, Priority, Request,
                        RequestArgument, Subgraph)
from driver.executor.io import input_layouts, read_inputs, request_pool_buffers
from driver.hal.dtypes import STORAGE_DTYPE, bounded_product, byte_size
from driver.hal.enums import SCALAR_OPERAND_TYPES
from driver.limits import MAX_VALUE_BYTES
from driver.memory import Memory
from driver.validation import validate_model, validate_request
from hal_client import contract
from hal_client.builder import make_request, out_bytes, out_like
from hal_client.contract import OracleViolation
from hal_client.paths import (THREAD_FAILURES, DeadlineEdge, HalClient, deadline_point,
                              read_outputs)
from hal_client.watchdog import WATCHDOG

from . import divergence, oracles, relations, routes, spec
from .branch_counters import BranchCounters
from .case import ExecutionChoices, ExecutionPath, FuzzCase, RequestChange
from .oracles import ExecutionResult

#: How long a driver may take to answer a call that does not execute the model.
CALL_LIMIT_S = 10.0
#: How far an execution may overrun its loop timeout or deadline before it is a hang.
HANG_MARGIN_S = 1.0
#: Loops nested or in sequence each get the loop timeout; beyond this many the bound stops
#: growing (a fuzzed model could otherwise claim minutes).
MAX_LOOPS_COUNTED = 8

#: What an execution may allocate beyond its budget: the values it holds count against the
#: budget, but a kernel's scratch, a value sized only once computed and an output's copy on
#: its way to its pool do not (each at most the largest value a driver holds).
MEMORY_SLACK_BYTES = 3 * MAX_VALUE_BYTES
#: Cases whose operands declare at least this many elements have their first execution's
#: peak measured (tracemalloc slows allocation down: only where the budget may be reached).
MEASURED_CASE_ELEMENTS = 2**20

#: The paths that launch an execution on another thread: the request may change after.
LAUNCHED_PATHS = frozenset({ExecutionPath.ASYNC, ExecutionPath.FENCED})


# --- statistics -----------------------------------------------------------------------------

@dataclass
class HarnessStats:
    inputs: int = 0
    decoded: int = 0
    valid: int = 0           # model and request valid per the reference validator
    prepared: int = 0        # prepareModel_1_3 gave a prepared model
    executed_ok: int = 0     # first execution returned NONE
    control_flow: int = 0    # executions of a model with IF/WHILE in its main subgraph
    reference_compared: int = 0   # outputs compared with the reference driver's
    reference_skipped: int = 0    # ran on the driver, but the reference did not run it successfully
    validator_overruled: int = 0  # the reference driver accepted a model or request the validator rejects
    related_compared: int = 0     # outputs compared with those of a metamorphic relation
    related_skipped: int = 0      # a relation that did not apply, or whose case did not run
    routed_buffers: int = 0       # ran by a route through driver-managed buffers
    routed_cache: int = 0         # ran by a route through the compilation cache (or refused it)
    routes_skipped: int = 0       # a route the driver does not offer (no buffers, no caching)
    outputs_not_compared: int = 0  # NaN or infinite in the expected outputs, or random ones
    ambiguous: int = 0       # outputs differing from the reference's as a documented ambiguity allows
    carried: int = 0         # wrong answers whose every diverging operation computes alike from the driver's inputs
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
class Oracles:
    """The oracles a run may go without: a reference driver to compare with (None: none),
    and the metamorphic relations."""
    reference: Any = None
    relations: bool = True


@dataclass(frozen=True)
class Outcome:
    """What happened to one case (for tests, triage and statistics)."""
    model_error: str | None
    request_error: str | None
    supported_status: ErrorStatus
    prepare_status: ErrorStatus
    first: ExecutionResult | None = None
    second: ExecutionResult | None = None


# --- calls across the HAL surface -------------------------------------------------------

#: The harness's HAL client: the watchdog bounds every call in the calling thread, which
#: costs next to nothing per call (see hal_client/watchdog.py).
CLIENT = HalClient(WATCHDOG.call, CALL_LIMIT_S, service_threads=(BranchCounters.THREAD_NAME,))


# --- time limits of executions ------------------------------------------------------------

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
        if operation.type not in CONTROL_FLOW_OPERATION_TYPES:
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
    if choices.deadline_ns is not None and choices.deadline_edge != DeadlineEdge.END:
        budget_s = min(budget_s, max(0, choices.deadline_ns) * 1e-9)
    return budget_s + HANG_MARGIN_S


def has_control_flow(model: Model) -> bool:
    return any(op.type in CONTROL_FLOW_OPERATION_TYPES for op in model.main.operations)


# --- request pools --------------------------------------------------------------------------

def snapshot_pools(request: Request) -> list[bytes | None]:
    return [pool.hidlMemory.read() if pool.hidlMemory is not None else None for pool in request.pools]


def with_fresh_pools(request: Request, snapshot: Sequence[bytes | None]) -> Request:
    """The same request over new shared-memory pools holding the content of ``snapshot``."""
    pools = [MemoryPool(hidlMemory=Memory.from_bytes(data, pool.hidlMemory.name))
             if data is not None else pool
             for pool, data in zip(request.pools, snapshot)]
    return Request(inputs=request.inputs, outputs=request.outputs, pools=pools)


# --- the request changed after a launch ----------------------------------------------------

def copied_request(request: Request) -> Request:
    """The request with arguments of its own (the pools shared)."""
    def copied(argument: RequestArgument) -> RequestArgument:
        location = argument.location
        return RequestArgument(argument.hasNoValue,
                               DataLocation(location.poolIndex, location.offset, location.length),
                               list(argument.dimensions))
    return Request([copied(a) for a in request.inputs], [copied(a) for a in request.outputs],
                   list(request.pools))


def change_request(request: Request, change: RequestChange) -> None:
    """What a caller may do to its request, in place, once a launch has returned."""
    if change == RequestChange.ARGUMENTS:
        for argument in (*request.inputs, *request.outputs):
            argument.location.offset += 1
            argument.location.length = max(0, argument.location.length - 1)
            argument.dimensions.append(1)
    elif change == RequestChange.POOLS:
        for j, pool in enumerate(request.pools):
            if pool.hidlMemory is not None:
                inverted = pool.hidlMemory.read().translate(_INVERTED_BYTES)
                request.pools[j] = MemoryPool(hidlMemory=Memory.from_bytes(inverted))
    elif change == RequestChange.CLOSED:
        # Output pools stay open: the harness reads the results there.
        outputs = {a.location.poolIndex for a in request.outputs}
        for j, pool in enumerate(request.pools):
            if j not in outputs and pool.hidlMemory is not None:
                pool.hidlMemory.close()
        request.inputs.clear()
        request.outputs.clear()
        request.pools.clear()


_INVERTED_BYTES = bytes(range(255, -1, -1))


class ChangingAfterLaunch:
    """A prepared model whose launches on another thread are followed at once by the
    caller changing its request."""

    def __init__(self, prepared: Any, change: RequestChange) -> None:
        self.prepared = prepared
        self.change = change

    def execute_1_3(self, request: Request, *arguments: Any) -> Any:
        launch = self.prepared.execute_1_3(request, *arguments)
        change_request(request, self.change)
        return launch

    def executeFenced(self, request: Request, *arguments: Any) -> Any:
        launch = self.prepared.executeFenced(request, *arguments)
        change_request(request, self.change)
        return launch


# --- memory -----------------------------------------------------------------------------------

def memory_budget(device: Any) -> int | None:
    """The memory budget ``device`` states for one execution (``memory_budget_bytes``), or
    None when it states none."""
    budget = getattr(device, "memory_budget_bytes", None)
    return budget if type(budget) is int else None


def declared_elements(model: Model) -> int:
    """The elements the model's operands declare (an unknown dimension counts as none; map
    and sum run in C: this is on every case's path), each operand's counted up to just
    past MEASURED_CASE_ELEMENTS (bounded_product: a hundred thousand dimensions of 2^32-1
    are not multiplied out, which would take minutes)."""
    return sum(sum(map(bounded_product, map(_DIMENSIONS, subgraph.operands), _COUNTED_UP_TO))
               for subgraph in (model.main, *model.referenced))


_DIMENSIONS = attrgetter("dimensions")
_COUNTED_UP_TO = repeat(MEASURED_CASE_ELEMENTS)


# --- one execution --------------------------------------------------------------------------

def execute(prepared: Any, case: FuzzCase, request: Request, path: ExecutionPath,
            limit_s: float, change: RequestChange = RequestChange.NONE) -> ExecutionResult:
    """One execution; with a ``change`` the request is changed after the launch, and the
    results are read through a copy of it as it was launched."""
    launched = request
    if change != RequestChange.NONE:
        request, launched = copied_request(request), copied_request(request)
        prepared = ChangingAfterLaunch(prepared, change)
    status, shapes = CLIENT.execute(prepared, request, path, case.choices, limit_s)
    what = path.name
    contract.check_output_shapes(status, shapes, launched, case.model, what)
    contract.check_sufficiency(status, shapes, launched, case.model, what)
    return ExecutionResult(ExecutionPath(path), status, shapes, read_outputs(launched))


def measured_execute(prepared: Any, case: FuzzCase, request: Request, path: ExecutionPath,
                     limit_s: float, budget_bytes: int) -> ExecutionResult:
    """``execute``, with the peak of memory it allocates held to ``budget_bytes``."""
    tracemalloc.start()
    try:
        result = execute(prepared, case, request, path, limit_s)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    oracles.check_peak_memory(peak, budget_bytes, MEMORY_SLACK_BYTES, path.name)
    return result


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


def fenced_request_error(model: Model, request: Request, path: ExecutionPath) -> str | None:
    """On the fenced path, what the reference validator says against a request that
    reference_errors found valid: executeFenced takes only outputs of known shape (None:
    valid, or another path)."""
    if path != ExecutionPath.FENCED:
        return None
    try:
        validate_request(request, model, allow_unspecified_output=False)
    except ValidationError as error:
        return str(error)
    return None


def judged_error(validator_error: str | None, reference_status: ErrorStatus | None) -> str | None:
    """The verdict on a model or request that the harness holds the driver to: the
    reference validator's (``validator_error``; None: valid), unless the reference driver,
    asked the same call, accepted it (``reference_status`` NONE; None: not asked). The
    reference knows the right answer, and the validator may be the code under test (a
    changed bundled driver shares it). A rejection by the reference overrules nothing: its
    INVALID_ARGUMENT may be about the call's other arguments (preference, priority, timing),
    which the validator does not judge, and any other status says nothing of validity."""
    if validator_error is None or reference_status != ErrorStatus.NONE:
        return validator_error
    STATS.validator_overruled += 1
    return None


@dataclass(frozen=True)
class Validity:
    """What the harness holds the driver to about a case's model and request (None: valid).
    ``request_by_validator``: whether the reference validator judged the request; not where
    the reference driver accepted a model the validator rejects, since the validator judges
    no request past an invalid model: the reference driver alone judges it then."""
    model_error: str | None
    request_error: str | None
    request_by_validator: bool = True

    def request_error_on(self, model: Model, request: Request, path: ExecutionPath) -> str | None:
        """The request's error as ``path`` takes it (fenced_request_error)."""
        if self.request_error is not None or not self.request_by_validator:
            return self.request_error
        return fenced_request_error(model, request, path)


def judged_validity(validator_errors: tuple[str | None, str | None],
                    reference_status: ErrorStatus | None) -> Validity:
    """The validity of model and request (reference_errors' ``validator_errors``) as
    judged_error holds it, with the reference driver's prepareModel_1_3 status."""
    model_error, request_error = validator_errors
    if model_error is not None and judged_error(model_error, reference_status) is None:
        return Validity(None, None, request_by_validator=False)
    return Validity(model_error, request_error)


def prepare(device: Any, model: Model, choices: ExecutionChoices) -> tuple[ErrorStatus, Any, PreparedModelCallback]:
    return CLIENT.prepare(device, model, choices.preference, choices.priority, deadline_point(choices))


def prepare_arguments_valid(choices: ExecutionChoices) -> bool:
    return (contract.enum_member(ExecutionPreference, choices.preference) is not None
            and contract.enum_member(Priority, choices.priority) is not None
            and choices.deadline_ns is None)


def run_case(case: FuzzCase, device: Any, enabled: Oracles = Oracles()) -> Outcome:
    """Run one case through ``device`` and apply every oracle (of the optional ones, those
    ``enabled``); raises OracleViolation."""
    try:
        try:
            return _run_case(case, device, enabled)
        finally:
            # A crash of the runtime behind the driver is the finding, whatever followed it.
            oracles.check_runtime_alive(device, case.model)
    except OracleViolation:
        STATS.violations += 1
        raise


def _run_case(case: FuzzCase, device: Any, enabled: Oracles) -> Outcome:
    THREAD_FAILURES.install()
    model, request, choices = case.model, case.request, case.choices
    # (Under the watchdog: the validator is code too, and a case may take it minutes.)
    validator_errors = WATCHDOG.call(CALL_LIMIT_S, "the reference validator",
                                     reference_errors, model, request)
    if validator_errors == (None, None):
        STATS.valid += 1
    reference = enabled.reference

    supported_status, supported = CLIENT.get_supported_operations(device, model)

    prepare_status, prepared, prepare_callback = prepare(device, model, choices)
    validity = check_model_verdicts(reference, case, validator_errors, supported_status, supported,
                                    prepare_status)
    outcome = Outcome(validity.model_error, validity.request_error, supported_status, prepare_status)
    if prepare_status != ErrorStatus.NONE:
        return _finish(outcome, prepare_callback)
    STATS.prepared += 1

    limit_s = execution_limit_s(case)
    snapshot = snapshot_pools(request)
    budget = memory_budget(device)
    if budget is not None and declared_elements(model) >= MEASURED_CASE_ELEMENTS:
        first = measured_execute(prepared, case, request, choices.path, limit_s, budget)
    else:
        first = execute(prepared, case, request, choices.path, limit_s)
    if has_control_flow(model):
        STATS.control_flow += 1
    validity = check_request_verdicts(reference, case, validity, first, snapshot, limit_s)
    outcome = replace(outcome, request_error=validity.request_error, first=first)
    if first.status != ErrorStatus.NONE:
        return _finish(outcome, prepare_callback)
    STATS.executed_ok += 1

    fresh = with_fresh_pools(request, snapshot)
    change = choices.request_change if choices.second_path in LAUNCHED_PATHS else RequestChange.NONE
    second = execute(prepared, case, fresh, choices.second_path, limit_s, change)
    oracles.check_invalid_request_rejected(validity.request_error_on(model, request, second.path),
                                           second.status, second.path)
    oracles.check_same_results(first, second, model, request,
                               contract.outputs_fully_specified(model, request), change)
    # What later runs must give: the first results, with shapes from the second where the
    # first path (fenced) reports none.
    expected = first if first.shapes is not None else replace(first, shapes=second.shapes)
    if reference is not None:
        compare_with_reference(reference, case, expected, snapshot, limit_s, device, prepared)
    if enabled.relations and choices.relation in routes.ROUTES:
        judge_route(device, case, prepared, expected, snapshot, limit_s)
    elif enabled.relations and choices.relation in relations.RULES:
        compare_with_relation(device, case, expected, snapshot, limit_s, reference)
    return _finish(replace(outcome, second=second), prepare_callback)


# --- the oracles that know the right answer ---------------------------------------------------

def check_model_verdicts(reference: Any, case: FuzzCase, validator_errors: tuple[str | None, str | None],
                         supported_status: ErrorStatus, supported: Sequence[bool],
                         prepare_status: ErrorStatus) -> Validity:
    """The driver's answers on the model against the reference validator
    (``validator_errors``, from reference_errors) and the reference driver; returns the
    validity the rest of the case is held to. The reference prepares the model where the
    validator or the driver rejects it (one the validator rejects costs it little: it
    rejects it as it validates), and answers getSupportedOperations_1_3 where the driver's
    rejects a model held valid: a rejection with INVALID_ARGUMENT the two drivers do not
    share is a violation, and its acceptance overrules the validator (judged_error)."""
    validator_error = validator_errors[0]
    reference_status = None
    if reference is not None and (validator_error is not None or prepare_status == ErrorStatus.INVALID_ARGUMENT):
        reference_status, _, _ = prepare(reference, case.model, case.choices)
    validity = judged_validity(validator_errors, reference_status)
    oracles.check_invalid_model_rejected(validity.model_error, supported_status, supported, prepare_status)
    oracles.check_supported_vs_prepare(supported_status, supported, prepare_status,
                                       prepare_arguments_valid(case.choices))
    if reference is not None and validity.model_error is None and supported_status == ErrorStatus.INVALID_ARGUMENT:
        status, _ = CLIENT.get_supported_operations(reference, case.model)
        oracles.check_reference_verdict(status, supported_status, "getSupportedOperations_1_3",
                                        validator_error)
    if reference_status is not None:
        oracles.check_reference_verdict(reference_status, prepare_status, "prepareModel_1_3",
                                        validator_error)
    return validity


def check_request_verdicts(reference: Any, case: FuzzCase, validity: Validity,
                           first: ExecutionResult, snapshot: Sequence[bytes | None],
                           limit_s: float) -> Validity:
    """The driver's first execution against the reference validator and the reference
    driver, on a model both hold valid; returns the validity the rest of the case is held
    to. The reference runs the case where the validator or the driver rejects the request:
    a rejection with INVALID_ARGUMENT the two drivers do not share is a violation, and its
    acceptance overrules the validator (judged_error)."""
    request_error = validity.request_error_on(case.model, case.request, first.path)
    asked = None
    if reference is not None and (request_error is not None or first.status == ErrorStatus.INVALID_ARGUMENT):
        asked = run_on_reference(reference, case, snapshot, limit_s)
    judged = judged_error(request_error, asked.status if asked is not None else None)
    oracles.check_invalid_request_rejected(judged, first.status, first.path)
    if asked is not None:
        check_reference_run(asked, first.status, request_error)
    if request_error is not None and judged is None:
        return replace(validity, request_error=None, request_by_validator=False)
    return validity


@dataclass(frozen=True)
class ReferenceRun:
    """A case on the reference driver: its preparation's status, and its execution (None
    where it did not prepare the model)."""
    prepare_status: ErrorStatus
    result: ExecutionResult | None

    @property
    def status(self) -> ErrorStatus | None:
        """The execution's status (None: the reference did not run the request)."""
        return self.result.status if self.result is not None else None


def run_on_reference(reference: Any, case: FuzzCase, snapshot: Sequence[bytes | None],
                     limit_s: float) -> ReferenceRun:
    """The case on the reference driver, prepared like it was for the driver and executed
    on its first path over fresh pools."""
    status, prepared, _ = prepare(reference, case.model, case.choices)
    if status != ErrorStatus.NONE:
        return ReferenceRun(status, None)
    path = case.choices.path
    return ReferenceRun(status, execute(prepared, case, with_fresh_pools(case.request, snapshot),
                                        path, limit_s))


def check_reference_run(run: ReferenceRun, driver_status: ErrorStatus,
                        validator_error: str | None = None) -> None:
    """The reference driver's verdicts against the driver's, which prepared the model and
    whose execution gave ``driver_status``: where they differ on model or request, a
    violation. ``validator_error``: the reference validator's, for the message."""
    oracles.check_reference_verdict(run.prepare_status, ErrorStatus.NONE, "prepareModel_1_3")
    if run.result is not None:
        oracles.check_reference_verdict(run.result.status, driver_status,
                                        f"{run.result.path.name} execution", validator_error)


def compare_with_reference(reference: Any, case: FuzzCase, expected: ExecutionResult,
                           snapshot: Sequence[bytes | None], limit_s: float, device: Any,
                           prepared: Any) -> None:
    """The driver's successful execution (``prepared``, of ``device``) against the
    reference driver's; a wrong answer is bucketed by its first diverging operation."""
    if any(pool.hidlMemory is None for pool in case.request.pools):
        STATS.reference_skipped += 1    # the driver's own buffers: the reference has none
        return
    reference_run = run_on_reference(reference, case, snapshot, limit_s)
    check_reference_run(reference_run, ErrorStatus.NONE)
    result = reference_run.result
    run = runner(reference, case)

    def excused(output: int) -> bool:
        """A difference NNAPI leaves open (fuzz/spec.py, AMBIGUITIES) is no finding."""
        if spec.documented_ambiguity(case, output, expected.outputs, lambda: request_values(case), run) is None:
            return False
        STATS.ambiguous += 1
        return True
    with diverging(case, snapshot, limit_s, device, prepared, reference):
        if compared(result, expected, case, oracles.ReferenceMismatchViolation,
                    f"{expected.path.name} execution vs the reference's", excused):
            STATS.reference_compared += 1
        else:
            STATS.reference_skipped += 1


def compare_with_relation(device: Any, case: FuzzCase, expected: ExecutionResult,
                          snapshot: Sequence[bytes | None], limit_s: float,
                          reference: Any = None) -> None:
    """The case rewritten by its metamorphic relation, on the same driver (synchronously),
    against its successful execution. With a reference, a wrong answer is bucketed by the
    first operation of the rewritten case where the driver and the reference diverge."""
    rule = relations.RULES[case.choices.relation]
    derived = rule.derive(case.model, with_fresh_pools(case.request, snapshot))
    result = related = prepared = None
    if derived is not None and reference_errors(*derived) == (None, None):
        related = FuzzCase(*derived, case.choices)
        status, prepared, _ = prepare(device, related.model, case.choices)
        if status == ErrorStatus.NONE:
            result = execute(prepared, related, related.request, ExecutionPath.SYNC, limit_s)
    with diverging(related, None, limit_s, device, prepared, reference if result is not None else None):
        if compared(expected, result, case, rule.Violation,
                    f"relation {case.choices.relation.name} ({expected.path.name} vs SYNC)"):
            STATS.related_compared += 1
        else:
            STATS.related_skipped += 1


@contextmanager
def diverging(case: FuzzCase | None, snapshot: Sequence[bytes | None] | None, limit_s: float,
              device: Any, prepared: Any, reference: Any) -> Iterator[None]:
    """A wrong answer raised within, of ``case`` run on ``prepared`` (of ``device``), gets
    as its bucket the first operation where the driver's values of the case's main
    operands and the reference's diverge (fuzz/divergence.py), and that divergence as its
    ``divergence``; it is no finding where every diverging operation computes alike from
    the driver's own inputs (divergence.carried_on: differences within the criteria added
    up). Where either driver keeps no values (or their run fails), or none diverges, its
    bucket stays the output's producer. ``snapshot``: the request's pools before it ran
    (None: they still hold its inputs)."""
    try:
        yield
    except OracleViolation as violation:
        if reference is not None:
            found = diagnose(case, snapshot, limit_s, device, prepared, reference)
            if found is not None and found.carried:
                STATS.carried += 1
                return
            if found is not None:
                violation.bucket, violation.divergence = found.bucket(), found.as_dict()
        raise


def diagnose(case: FuzzCase, snapshot: Sequence[bytes | None] | None, limit_s: float,
             device: Any, prepared: Any, reference: Any, depth: int = 0) -> divergence.Divergence | None:
    """The case run once more on both drivers, keeping their operand values, and the first
    operation where they diverge (None: see ``diverging``). Only after a wrong answer. At
    an IF, the branch it took is diagnosed the same way, on the IF's inputs (IFs nested
    up to divergence.MAX_BRANCHES deep)."""
    try:
        if snapshot is None:
            snapshot = snapshot_pools(case.request)
        status, reference_prepared, _ = prepare(reference, case.model, case.choices)
        if status != ErrorStatus.NONE:
            return None
        # A diagnostic run may load the model afresh (LiteRT's does): that is no hang.
        run_limit_s = limit_s + CALL_LIMIT_S
        expected = WATCHDOG.call(run_limit_s, "operand_values", divergence.operand_values,
                                 reference_prepared, with_fresh_pools(case.request, snapshot))
        actual = WATCHDOG.call(run_limit_s, "operand_values", divergence.operand_values,
                               prepared, with_fresh_pools(case.request, snapshot))
        if expected is None or actual is None:
            return None
        found = divergence.first_divergence(case.model, expected, actual, divergence.device_name(device),
                                            divergence.device_name(reference))
    except Exception:   # a diagnosis that fails (a hang included) leaves the finding as it is
        return None
    if found is None:
        return None
    branch = divergence.taken_branch(case.model, found, expected) if depth < divergence.MAX_BRANCHES else None
    inner = diagnose_branch(branch, case.choices, limit_s, device, reference, depth) if branch else None
    if inner is not None:
        found = replace(found, inner=replace(inner, subgraph=branch.subgraph))
    try:
        return replace(found, carried=divergence.carried_on(case.model, found, expected, actual,
                                                            runner(reference, case)))
    except Exception:   # as above
        return found


def diagnose_branch(branch: divergence.Branch, choices: ExecutionChoices, limit_s: float,
                    device: Any, reference: Any, depth: int) -> divergence.Divergence | None:
    """The first diverging operation of an IF's branch run alone, on the IF's inputs
    (None: none, or it cannot run)."""
    try:
        outputs = [out_like(value.dtype, value.shape, state_dims=True) for value in branch.outputs]
        case = FuzzCase(branch.model, make_request(branch.inputs, outputs).request, choices)
        status, prepared, _ = prepare(device, case.model, choices)
    except Exception:   # as in diagnose
        return None
    if status != ErrorStatus.NONE:
        return None
    return diagnose(case, None, limit_s, device, prepared, reference, depth + 1)


def compared(expected: ExecutionResult | None, actual: ExecutionResult | None, case: FuzzCase,
             Violation: type[OracleViolation], what: str,
             excused: Callable[[int], bool] | None = None) -> bool:
    """``actual``'s outputs against ``expected``'s (check_same_outputs), where both
    executions ran successfully (else False: nothing was compared)."""
    if any(result is None or result.status != ErrorStatus.NONE for result in (expected, actual)):
        return False
    STATS.outputs_not_compared += oracles.check_same_outputs(expected, actual, case.model,
                                                             case.request, Violation, what, excused)
    return True


def judge_route(device: Any, case: FuzzCase, prepared: Any, expected: ExecutionResult,
                snapshot: Sequence[bytes | None], limit_s: float) -> None:
    """The case run by its route (fuzz/routes.py), synchronously, judged against its
    successful execution."""
    route = routes.ROUTES[case.choices.relation]
    def run_sync(prepared: Any, request: Request) -> ExecutionResult:
        return execute(prepared, case, request, ExecutionPath.SYNC, limit_s)
    run = routes.RouteRun(CLIENT, device, case, prepared, with_fresh_pools(case.request, snapshot),
                          run_sync)
    left_out = routes.judge(route, run, expected)
    if left_out is None:
        STATS.routes_skipped += 1
        return
    if route.uses_cache:
        STATS.routed_cache += 1
    else:
        STATS.routed_buffers += 1
    STATS.outputs_not_compared += left_out


# --- a model run on values ---------------------------------------------------------------------

def request_values(case: FuzzCase) -> list[np.ndarray | None]:
    """The values of the case's request inputs (None: omitted), read as a driver reads them
    (ValidationError for a request that does not give them)."""
    request = case.request
    return read_inputs(input_layouts(case.model, frozenset()), request, request_pool_buffers(request))


def runner(driver: Any, case: FuzzCase) -> spec.Run:
    """``run(model, inputs)``: the driver's outputs of another model for input values, run
    as ``case`` is (plain_choices); None when it does not run it successfully."""
    def run(model: Model, inputs: Sequence[np.ndarray | None]) -> Sequence[np.ndarray] | None:
        ran = run_on_values(driver, model, inputs, plain_choices(case))
        return ran.outputs if ran.status == ErrorStatus.NONE else None
    return run


def plain_choices(case: FuzzCase) -> ExecutionChoices:
    """The case's loop timeout, nothing else: how a model is run for its values alone."""
    return ExecutionChoices(loopTimeoutDuration_ns=case.choices.loopTimeoutDuration_ns)


@dataclass(frozen=True)
class ValuesRun:
    """A model run on values: the status and, on success, every output's value."""
    status: ErrorStatus
    outputs: tuple[np.ndarray, ...] = ()


def run_on_values(device: Any, model: Model, inputs: Sequence[np.ndarray | None],
                  choices: ExecutionChoices) -> ValuesRun:
    """Prepare ``model`` on ``device`` and run it once (SYNC) on the input values, every
    output requested; an output of a shape not known ahead is asked again with the shape
    the first run reported."""
    status, prepared, _ = prepare(device, model, choices)
    if status != ErrorStatus.NONE:
        return ValuesRun(status)
    main = model.main
    operands = [main.operands[i] for i in main.outputIndexes]
    buffers = [out_bytes(STORAGE_DTYPE[o.type], byte_size(o.type, o.dimensions, unknown_dimension=1))
               for o in operands]
    limit_s = execution_limit_s(FuzzCase(model, choices=choices))
    for attempt in range(2):
        io = make_request(list(inputs), buffers)
        status, shapes = CLIENT.execute(prepared, io.request, ExecutionPath.SYNC, choices, limit_s)
        if status != ErrorStatus.OUTPUT_INSUFFICIENT_SIZE or attempt or not shapes:
            break
        buffers = [out_like(b.dtype, s.dimensions) for b, s in zip(buffers, shapes)]
    if status != ErrorStatus.NONE:
        return ValuesRun(status)
    return ValuesRun(status, tuple(io.output(k, [] if o.type in SCALAR_OPERAND_TYPES else s.dimensions)
                                   for k, (o, s) in enumerate(zip(operands, shapes))))


def _finish(outcome: Outcome, prepare_callback: PreparedModelCallback) -> Outcome:
    # Late contract breaches: a second notification, a driver thread that died meanwhile.
    contract.check_notified_once(prepare_callback, "prepareModel_1_3")
    THREAD_FAILURES.raise_first()
    return outcome


# --- bytes in ---------------------------------------------------------------------------------

@cache
def default_device() -> Any:
    """The configured driver's device (see fuzz/drivers.py), created once per process."""
    from .drivers import make_device
    return make_device()


@cache
def configured_oracles() -> Oracles:
    """The reference driver and relations configured (see fuzz/drivers.py), made once per
    process."""
    from .drivers import configured_reference, make_device, relations_on
    spec = configured_reference()
    return Oracles(make_device(spec) if spec else None, relations_on())


def run_one(data: bytes, device: Any = None, enabled: Oracles | None = None) -> Outcome:
    """Decode one fuzz input and run it (the libFuzzer entry and pytest replay); the
    optional oracles are the configured ones unless ``enabled`` says."""
    from .codec import decode
    STATS.inputs += 1
    case = decode(data)
    STATS.decoded += 1
    return run_case(case, device if device is not None else default_device(),
                    enabled if enabled is not None else configured_oracles())
