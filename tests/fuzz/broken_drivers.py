"""Drivers with planted bugs, to show that the fuzzer finds each kind of failure.

Each is the bundled SampleDriver behind a wrapper that misbehaves on a graph shape the
committed corpus does not contain but a mutation or two of it reaches. Use them as fuzz
targets:

    python fuzz/driver_fuzz.py --driver tests.fuzz.broken_drivers:Raising corpus/ ...

- ``Raising``: preparing a (valid) model with a WHILE whose body has exactly six operations
  raises IndexError (an off-by-one in a loop-body scheduling helper).
- ``Hanging``: a model prepared with Priority.HIGH runs its loops with the default loop
  timeout (2 s) instead of the requested one (the high-priority path does not pass it on),
  so a loop that never ends overruns the requested time.
- ``FencedBitFlip``: executeFenced of a model with a SPLIT operation flips the lowest bit
  of the first output's first byte.
- ``SupportedDisagrees``: getSupportedOperations_1_3 reports INVALID_ARGUMENT for a model
  with a SQRT in a referenced subgraph, which prepareModel_1_3 accepts.
- ``Hoarding``: preparing a model with a WHILE whose condition compares with LESS_EQUAL
  reserves an iteration history of LOOP_HISTORY_SLOTS slots (512 MiB) and fills it in. No
  oracle sees that in-process: scripts/triage.py finds it as an out-of-memory by replaying
  under a memory limit below that (libFuzzer does with -rss_limit_mb=256, say).

Drivers that compute consistent wrong outputs (on every path) in rare structures, for the
oracles that know the right answer (tests/fuzz/test_right_answers.py; MISCOMPUTING): each
prepares a rewritten model. ``LoopBodyMulAdds``: a MUL in a WHILE body adds;
``SignedAddSubtracts``: an ADD of TENSOR_QUANT8_ASYMM_SIGNED subtracts;
``NestedIfSwapsBranches``: an IF in a referenced subgraph runs the other branch;
``BroadcastSubReversed``: a broadcasting SUB subtracts the other way round. ``Faithful`` is
the bundled driver behind the same wrappers, with no bug.

Drivers missing one request check of the bundled driver's (REQUEST_CHECK_DROPPED;
tests/fuzz/test_dropped_request_checks.py): ``InputLengthUnchecked``,
``PoolBoundsUnchecked``, ``DimensionsUnchecked``, ``PoolIndexUnchecked``,
``UnspecifiedUnchecked``.

Drivers with a bug in memory domains or compilation caching, which only the routes of
fuzz/routes.py reach (DOMAIN_RULES; tests/fuzz/test_routes.py): ``CopyToZeroes``: IBuffer.copyTo
hands out zeros; ``FreedTokenKept``: a buffer stays alive, its token valid, after the client
dropped its IBuffer; ``SharedBetweenPreparations``: a buffer allocated for one preparation
of a model serves another; ``CacheUnchecked``: prepareModelFromCache_1_3 loads the cache
files without checking them; ``BufferExtentUnchecked``: a buffer's argument may have an
offset and a length; ``BufferArgumentsRefused``: every request naming a buffer is refused.
``NoDomainsNoCache`` offers neither, which is legal.

The corpus has loop bodies of at most five operations, no loop prepared with high priority,
SPLIT only in models that are not run fenced, no SQRT outside main, no LESS_EQUAL loop
condition, no rank over 32 and no request changed after launch; tests/fuzz/test_broken_drivers.py checks that it stays so (for the drivers of
EXPECTED_RULES).
"""
from __future__ import annotations

import contextlib
import os
import threading
from typing import Any, Callable, Iterator

import numpy as np

from driver import SampleDriver, cache, errors, limits, operands
from driver.errors import ValidationError
from driver.hal import (NO_TIMING, ErrorStatus, ExecutionPreference, LoopTimeoutDurationNs, Model,
                        OperandLifeTime, OperandType, Operation, OperationType,
                        OptionalTimeoutDuration, Priority, Subgraph)
from driver.sync_fence import FenceState, SyncFence
from driver.validation import memo, request as request_validation, validate_model, validate_request
from fuzz import harness, oracles
from fuzz.drivers import MEMORY_BUDGET_BYTES
from fuzz.case import ExecutionPath, RequestChange
from hal_client import contract


# --- delegation -------------------------------------------------------------------------------

class _PreparedModelCallbackProxy:
    """Hands the client a wrapped prepared model instead of the inner driver's."""

    def __init__(self, callback: Any, wrap) -> None:
        self._callback = callback
        self._wrap = wrap

    def notify_1_3(self, status: ErrorStatus, prepared: Any) -> None:
        self._callback.notify_1_3(status, self._wrap(prepared) if prepared is not None else None)


class _Delegating:
    """An object of the HAL (an IDevice, IPreparedModel, IBurstContext or IBuffer)
    delegating to the inner driver's; subclasses override what they break."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class PreparedModelWrapper(_Delegating):
    """An IPreparedModel delegating to the inner one."""

    def __init__(self, inner: Any, model: Model, priority: Priority) -> None:
        super().__init__(inner)
        self.model = model
        self.priority = priority


class DeviceWrapper(_Delegating):
    """An IDevice delegating to a SampleDriver; its prepared models are wrapped in
    ``prepared_model_class``."""

    prepared_model_class: type[PreparedModelWrapper] = PreparedModelWrapper

    def __init__(self, inner: Any = None) -> None:
        super().__init__(inner if inner is not None else SampleDriver())

    @property  # the budget a client sets is the inner driver's
    def memory_budget_bytes(self) -> int:
        return self.inner.memory_budget_bytes

    @memory_budget_bytes.setter
    def memory_budget_bytes(self, budget: int) -> None:
        self.inner.memory_budget_bytes = budget

    def prepareModel_1_3(self, model, preference, priority, deadline, modelCache, dataCache,
                         token, callback) -> ErrorStatus:
        proxy = _PreparedModelCallbackProxy(
            callback, lambda prepared: self.prepared_model_class(prepared, model, priority))
        return self.inner.prepareModel_1_3(model, preference, priority, deadline, modelCache,
                                           dataCache, token, proxy)

    def allocate(self, desc, preparedModels, inputRoles, outputRoles):
        # The inner driver allocates for its own prepared models, not for their wrappers.
        inner = [p.inner if isinstance(p, PreparedModelWrapper) else p for p in preparedModels]
        return self.inner.allocate(desc, inner, inputRoles, outputRoles)


# --- graph queries ----------------------------------------------------------------------------

# These look at models before the inner driver validated them: they must not trip over a
# malformed one themselves, or the fuzzer finds these helpers instead of the planted bugs.

def _subgraph_operand(model: Model, subgraph: Subgraph, operand_index: int) -> Subgraph | None:
    operand = _operand_or_none(subgraph, operand_index)
    if (operand is None or operand.lifetime != OperandLifeTime.SUBGRAPH
            or not 0 <= operand.location.offset < len(model.referenced)):
        return None
    return model.referenced[operand.location.offset]


def _while_loops(model: Model) -> Iterator[tuple[Subgraph, Any]]:
    """(subgraph, operation) of every WHILE in the model."""
    for subgraph in (model.main, *model.referenced):
        for operation in subgraph.operations:
            if operation.type == OperationType.WHILE and len(operation.inputs) >= 2:
                yield subgraph, operation


#: The inputs of a WHILE naming its subgraphs.
CONDITION, BODY = 0, 1


def _loop_subgraphs(model: Model, role: int) -> list[Subgraph]:
    """The subgraph each WHILE of the model names as its CONDITION or BODY, where it names one."""
    named = (_subgraph_operand(model, g, op.inputs[role]) for g, op in _while_loops(model))
    return [graph for graph in named if graph is not None]


# --- 1. an exception on a rare graph shape ----------------------------------------------------

def _schedule_loop_body(body: Subgraph) -> list[tuple[int, ...]]:
    """Group a loop body's operations into dispatch batches of at most four. The bug: a
    six-operation body's tail batch is taken one position too far."""
    count = len(body.operations)
    batches = [tuple(range(i, min(i + 4, count))) for i in range(0, count, 4)]
    if count == 6:
        batches[-1] = (4, 6)                         # off by one: the tail is (4, 5)
        body.operations[batches[-1][-1]].type        # ... and is looked up
    return batches


class _LoopSchedulingModel(PreparedModelWrapper):
    """Plans its loop bodies when it is made, i.e. while the model is being prepared."""

    def __init__(self, inner: Any, model: Model, priority: Priority) -> None:
        super().__init__(inner, model, priority)
        self.loop_schedules = [_schedule_loop_body(body) for body in _loop_subgraphs(model, BODY)]


class Raising(DeviceWrapper):
    prepared_model_class = _LoopSchedulingModel


# --- 2. a hang: the loop timeout ignored ------------------------------------------------------

_DEFAULT_LOOP_LIMIT = OptionalTimeoutDuration(LoopTimeoutDurationNs.DEFAULT)


class _LoopTimeoutIgnoringModel(PreparedModelWrapper):
    def _timeout(self, requested: OptionalTimeoutDuration) -> OptionalTimeoutDuration:
        return _DEFAULT_LOOP_LIMIT if self.priority == Priority.HIGH else requested

    def executeSynchronously_1_3(self, request, measure, deadline, loopTimeoutDuration):
        return self.inner.executeSynchronously_1_3(request, measure, deadline,
                                                   self._timeout(loopTimeoutDuration))

    def execute_1_3(self, request, measure, deadline, loopTimeoutDuration, callback):
        return self.inner.execute_1_3(request, measure, deadline, self._timeout(loopTimeoutDuration),
                                      callback)

    def executeFenced(self, request, waitFor, measure, deadline, loopTimeoutDuration, duration):
        return self.inner.executeFenced(request, waitFor, measure, deadline,
                                        self._timeout(loopTimeoutDuration), duration)

    def configureExecutionBurst(self, callback=None):
        status, burst = self.inner.configureExecutionBurst(callback)
        return status, (_LoopTimeoutIgnoringBurst(burst, self) if burst is not None else None)


class _LoopTimeoutIgnoringBurst(_Delegating):
    def __init__(self, inner: Any, prepared: _LoopTimeoutIgnoringModel) -> None:
        super().__init__(inner)
        self.prepared = prepared

    def execute(self, request, slots, measure, deadline, loopTimeoutDuration):
        return self.inner.execute(request, slots, measure, deadline,
                                  self.prepared._timeout(loopTimeoutDuration))


class Hanging(DeviceWrapper):
    prepared_model_class = _LoopTimeoutIgnoringModel


# --- 3. a fenced path with different output bytes ---------------------------------------------

def _referenced_operation(model: Model, operation_type: OperationType) -> bool:
    return any(operation.type == operation_type
               for subgraph in model.referenced for operation in subgraph.operations)


def _has_operation(model: Model, operation_type: OperationType) -> bool:
    return (_referenced_operation(model, operation_type)
            or any(operation.type == operation_type for operation in model.main.operations))


class _BitFlippingFencedModel(PreparedModelWrapper):
    def executeFenced(self, request, waitFor, measure, deadline, loopTimeoutDuration, duration):
        status, fence, callback = self.inner.executeFenced(
            request, waitFor, measure, deadline, loopTimeoutDuration, duration)
        if status != ErrorStatus.NONE or not _has_operation(self.model, OperationType.SPLIT):
            return status, fence, callback
        state = fence.wait() if fence is not None else FenceState.SIGNALED
        first = request.outputs[0] if request.outputs else None
        if state == FenceState.SIGNALED and first is not None and first.location.length > 0:
            memory = request.pools[first.location.poolIndex].hidlMemory
            byte = memory.read(first.location.offset, 1)[0]
            memory.write(bytes([byte ^ 1]), first.location.offset)
        return status, SyncFence.signaled(state), callback


class FencedBitFlip(DeviceWrapper):
    prepared_model_class = _BitFlippingFencedModel


# --- 4. validation paths that disagree --------------------------------------------------------

class SupportedDisagrees(DeviceWrapper):
    def getSupportedOperations_1_3(self, model: Model):
        if _referenced_operation(model, OperationType.SQRT):
            return ErrorStatus.INVALID_ARGUMENT, []
        return self.inner.getSupportedOperations_1_3(model)


# --- 5. out of memory on a rare graph shape ---------------------------------------------------

#: Slots of a loop's iteration history: 512 MiB of int32, well over the memory limit the
#: triage tests give their worker, yet harmless on a machine where a run had no limit.
LOOP_HISTORY_SLOTS = 1 << 27


def _iteration_history(condition: Subgraph) -> np.ndarray | None:
    """One slot per iteration the loop may run, marked unused. The bug: a condition with an
    inclusive bound (LESS_EQUAL) is taken for an unbounded loop and gets the worst case."""
    if not any(operation.type == OperationType.LESS_EQUAL for operation in condition.operations):
        return None
    return np.full(LOOP_HISTORY_SLOTS, -1, np.int32)


class _LoopHistoryModel(PreparedModelWrapper):
    """Reserves its loops' iteration histories when it is made, i.e. while preparing."""

    def __init__(self, inner: Any, model: Model, priority: Priority) -> None:
        super().__init__(inner, model, priority)
        self.loop_histories = [_iteration_history(condition)
                               for condition in _loop_subgraphs(model, CONDITION)]


class Hoarding(DeviceWrapper):
    prepared_model_class = _LoopHistoryModel


# --- executions within a context -------------------------------------------------------------

class _PreparedModelWithin(PreparedModelWrapper):
    """A prepared model whose calls (and its bursts' executions) run within ``within()``, a
    context manager."""

    @staticmethod
    def within() -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()

    def executeSynchronously_1_3(self, *arguments):
        with self.within():
            return self.inner.executeSynchronously_1_3(*arguments)

    def execute_1_3(self, *arguments):
        with self.within():
            return self.inner.execute_1_3(*arguments)

    def executeFenced(self, *arguments):
        with self.within():
            return self.inner.executeFenced(*arguments)

    def configureExecutionBurst(self, callback=None):
        status, burst = self.inner.configureExecutionBurst(callback)
        return status, (_BurstWithin(burst, self.within) if burst is not None else None)


class _BurstWithin(_Delegating):
    def __init__(self, inner: Any, within: Callable[[], contextlib.AbstractContextManager]) -> None:
        super().__init__(inner)
        self.within = within

    def execute(self, *arguments):
        with self.within():
            return self.inner.execute(*arguments)


# --- 6. the rank limit past numpy's -----------------------------------------------------------

#: RankUnchecked's rank limit: past numpy's 64 dimensions, so that numpy raises; short of
#: the ranks (about 70) at which np.take crashes the process instead of raising.
LOOSE_RANK_LIMIT = 68


@contextlib.contextmanager
def _loose_rank_limit() -> Iterator[None]:
    """LOOSE_RANK_LIMIT as the bundled driver's rank limit for the block. (Its memo's keys
    hold the limits in force: nothing it remembered under one limit is used under the other.)"""
    saved = limits.MAX_RANK, operands.MAX_RANK
    limits.MAX_RANK = operands.MAX_RANK = LOOSE_RANK_LIMIT
    try:
        yield
    finally:
        limits.MAX_RANK, operands.MAX_RANK = saved


class _RankUncheckedModel(_PreparedModelWithin):
    """Runs every execution within its call, where the loose limit holds."""
    within = staticmethod(_loose_rank_limit)

    def execute_1_3(self, request, measure, deadline, loopTimeoutDuration, callback):
        status, shapes, timing = self.executeSynchronously_1_3(request, measure, deadline,
                                                               loopTimeoutDuration)
        callback.notify_1_3(status, shapes, timing)
        return status if status == ErrorStatus.INVALID_ARGUMENT else ErrorStatus.NONE

    def executeFenced(self, request, waitFor, *arguments):
        for fence in waitFor:
            fence.wait()
        with self.within():
            return self.inner.executeFenced(request, [], *arguments)


class RankUnchecked(DeviceWrapper):
    prepared_model_class = _RankUncheckedModel

    def getSupportedOperations_1_3(self, model: Model):
        with _loose_rank_limit():
            return self.inner.getSupportedOperations_1_3(model)

    def prepareModel_1_3(self, *arguments) -> ErrorStatus:
        with _loose_rank_limit():
            return super().prepareModel_1_3(*arguments)


# --- 7. no memory budget ----------------------------------------------------------------------

#: OverBudget's executions' budget: none to speak of.
IGNORED_BUDGET_BYTES = 1 << 62


class OverBudget(DeviceWrapper):
    """States the memory budget it is given, and runs every execution with none."""

    memory_budget_bytes = MEMORY_BUDGET_BYTES     # stated only; the inner driver has none

    def __init__(self, inner: Any = None) -> None:
        super().__init__(inner if inner is not None
                         else SampleDriver(memory_budget_bytes=IGNORED_BUDGET_BYTES))


# --- 8. the request read after the launch -----------------------------------------------------

#: How long after a launch LiveRequest's worker reads the request: long enough for the
#: caller to have changed it, even on a busy machine.
LATE_S = 0.01


def _launches(request, model: Model, fenced: bool) -> bool:
    """Whether the bundled driver would launch an execution of ``request`` (LiveRequest
    leaves the others to it, so that launch statuses stay right)."""
    try:
        validate_request(request, model, allow_unspecified_output=not fenced)
    except ValidationError:
        return False
    return True


class _LateFencedCallback:
    """IFencedExecutionCallback of a launch made later: answers once that one exists."""

    def __init__(self) -> None:
        self._made = threading.Event()
        self._answer: Callable[[], tuple] = lambda: (ErrorStatus.GENERAL_FAILURE, NO_TIMING, NO_TIMING)

    def made(self, answer: Callable[[], tuple]) -> None:
        self._answer = answer
        self._made.set()

    def getExecutionInfo(self):
        self._made.wait()
        return self._answer()


class _LateReadingModel(PreparedModelWrapper):
    def execute_1_3(self, request, measure, deadline, loopTimeoutDuration, callback):
        if not _launches(request, self.model, fenced=False):
            return self.inner.execute_1_3(request, measure, deadline, loopTimeoutDuration, callback)

        def run() -> None:
            callback.notify_1_3(*self.inner.executeSynchronously_1_3(
                request, measure, deadline, loopTimeoutDuration))
        threading.Timer(LATE_S, run).start()
        return ErrorStatus.NONE

    def executeFenced(self, request, waitFor, measure, deadline, loopTimeoutDuration, duration):
        if not _launches(request, self.model, fenced=True):
            return self.inner.executeFenced(request, waitFor, measure, deadline,
                                            loopTimeoutDuration, duration)
        done, info = SyncFence(), _LateFencedCallback()

        def run() -> None:
            status, fence, callback = self.inner.executeFenced(
                request, waitFor, measure, deadline, loopTimeoutDuration, duration)
            if status != ErrorStatus.NONE:
                info.made(lambda: (status, NO_TIMING, NO_TIMING))
                done.signal(FenceState.ERROR)
                return
            info.made(callback.getExecutionInfo)
            fence.when_signalled(done.signal)
        threading.Timer(LATE_S, run).start()
        return ErrorStatus.NONE, done, info


class LiveRequest(DeviceWrapper):
    prepared_model_class = _LateReadingModel


# --- 9-12. consistent wrong outputs in rare structures -----------------------------------------

def _rewritten_operations(model: Model, rewrite: Callable[[Model, int, Any], Any]) -> Model:
    """The model with each operation of referenced subgraph ``k`` (-1: main) replaced by
    ``rewrite(model, k, operation)`` (the operation itself: unchanged); the model given
    is left as it is."""
    def subgraph(k: int, graph: Subgraph) -> Subgraph:
        operations = [rewrite(model, k, operation) for operation in graph.operations]
        if all(new is old for new, old in zip(operations, graph.operations)):
            return graph
        return Subgraph(graph.operands, operations, graph.inputIndexes, graph.outputIndexes)
    return Model(subgraph(-1, model.main), [subgraph(k, g) for k, g in enumerate(model.referenced)],
                 model.operandValues, model.pools, model.relaxComputationFloat32toFloat16,
                 model.extensionNameToPrefix)


class _Miscomputing(DeviceWrapper):
    """Prepares a rewritten model instead of the one given (``rewrite`` as in
    _rewritten_operations): the same wrong outputs on every path. Validity is untouched:
    each rewrite keeps the operation's signature."""

    @staticmethod
    def rewrite(model: Model, subgraph: int, operation: Operation) -> Operation:
        return operation

    def prepareModel_1_3(self, model, *arguments) -> ErrorStatus:
        try:
            model = _rewritten_operations(model, self.rewrite)
        except (AttributeError, IndexError, TypeError):
            pass         # a malformed model: the inner driver rejects it as it is
        return super().prepareModel_1_3(model, *arguments)


def _loop_bodies(model: Model) -> set[int]:
    """The referenced subgraphs some WHILE runs as its body."""
    return {operand.location.offset for g, op in _while_loops(model)
            if (operand := _operand_or_none(g, op.inputs[1])) is not None
            and operand.lifetime == OperandLifeTime.SUBGRAPH}


def _operand_or_none(subgraph: Subgraph, index: int):
    return subgraph.operands[index] if 0 <= index < len(subgraph.operands) else None


class LoopBodyMulAdds(_Miscomputing):
    """A MUL in a WHILE body adds instead."""

    @staticmethod
    def rewrite(model, subgraph, operation):
        if operation.type == OperationType.MUL and subgraph in _loop_bodies(model):
            return Operation(OperationType.ADD, operation.inputs, operation.outputs)
        return operation


class SignedAddSubtracts(_Miscomputing):
    """An ADD of TENSOR_QUANT8_ASYMM_SIGNED values subtracts instead."""

    @staticmethod
    def rewrite(model, subgraph, operation):
        graph = model.main if subgraph < 0 else model.referenced[subgraph]
        first = _operand_or_none(graph, operation.inputs[0]) if operation.inputs else None
        if (operation.type == OperationType.ADD and first is not None
                and first.type == OperandType.TENSOR_QUANT8_ASYMM_SIGNED):
            return Operation(OperationType.SUB, operation.inputs, operation.outputs)
        return operation


class NestedIfSwapsBranches(_Miscomputing):
    """An IF in a referenced subgraph runs the branch its condition does not choose."""

    @staticmethod
    def rewrite(model, subgraph, operation):
        if operation.type == OperationType.IF and subgraph >= 0 and len(operation.inputs) >= 3:
            condition, then, otherwise, *inputs = operation.inputs
            return Operation(OperationType.IF, [condition, otherwise, then, *inputs], operation.outputs)
        return operation


class BroadcastSubReversed(_Miscomputing):
    """A SUB whose inputs' shapes differ (one is broadcast) subtracts the other way round."""

    @staticmethod
    def rewrite(model, subgraph, operation):
        graph = model.main if subgraph < 0 else model.referenced[subgraph]
        if operation.type != OperationType.SUB or len(operation.inputs) < 2:
            return operation
        a, b = (_operand_or_none(graph, i) for i in operation.inputs[:2])
        if a is None or b is None or list(a.dimensions) == list(b.dimensions):
            return operation
        return Operation(OperationType.SUB, [operation.inputs[1], operation.inputs[0], *operation.inputs[2:]],
                         operation.outputs)


class Faithful(DeviceWrapper):
    """The bundled driver behind the wrappers, with no bug: a reference compared with it,
    and the relations, must find nothing."""


#: Each broken driver and the oracle rule that must catch it (Hoarding is caught by a
#: memory limit around the harness, not by an oracle).
EXPECTED_RULES = {
    "Raising": contract.HalExceptionViolation,
    "Hanging": contract.HangViolation,
    "FencedBitFlip": oracles.NondeterminismViolation,
    "SupportedDisagrees": oracles.SupportedPrepareViolation,
    "RankUnchecked": contract.HalExceptionViolation,
    "OverBudget": oracles.MemoryBudgetViolation,
    "LiveRequest": oracles.RequestChangedViolation,
}

#: The drivers that compute wrong outputs, and whether the metamorphic relations alone
#: (no reference) can catch them: only where the wrong answer depends on where the
#: operation sits.
MISCOMPUTING = {"LoopBodyMulAdds": False, "SignedAddSubtracts": False,
                "NestedIfSwapsBranches": True, "BroadcastSubReversed": False}

#: The drivers whose bug the shape of a case alone does not decide: corpus inputs of that
#: shape must run clean on them (an endless loop is only known by running it; most cases
#: declaring large values are refused).
SHAPE_NOT_ENOUGH = frozenset({"Hanging", "OverBudget"})


def planted_bug_reached(name: str, case) -> bool:
    """Whether ``case`` (a FuzzCase) has the shape that sets off the named driver's bug;
    for Hanging, whether it could (an endless loop is only known by running it)."""
    model = case.model
    if name == "Raising":
        return any(len(body.operations) == 6 for body in _loop_subgraphs(model, BODY))
    if name == "Hanging":
        return case.choices.priority == Priority.HIGH and any(_while_loops(model))
    if name == "FencedBitFlip":
        fenced = ExecutionPath.FENCED in (case.choices.path, case.choices.second_path)
        return fenced and _has_operation(model, OperationType.SPLIT)
    if name == "SupportedDisagrees":
        return _referenced_operation(model, OperationType.SQRT)
    if name == "RankUnchecked":
        # A rank past the limit, declared, requested, or grown by a WHILE body adding a
        # dimension each iteration.
        return any(len(o.dimensions) > limits.MAX_RANK
                   for subgraph in (model.main, *model.referenced) for o in subgraph.operands) \
            or any(len(a.dimensions) > limits.MAX_RANK for a in (*case.request.inputs, *case.request.outputs)) \
            or any(o.type == OperationType.EXPAND_DIMS for body in _loop_subgraphs(model, BODY)
                   for o in body.operations)
    if name == "OverBudget":
        return harness.declared_elements(model) >= harness.MEASURED_CASE_ELEMENTS
    if name == "LiveRequest":
        return (case.choices.second_path in harness.LAUNCHED_PATHS
                and case.choices.request_change != RequestChange.NONE)
    if name == "Hoarding":
        return any(operation.type == OperationType.LESS_EQUAL
                   for condition in _loop_subgraphs(model, CONDITION)
                   for operation in condition.operations)
    if name in REQUEST_CHECK_DROPPED:
        return dropped_check_reached(name, case)
    raise ValueError(f"no broken driver {name}")


# --- 13-17. one request check dropped ----------------------------------------------------------

# Each is the bundled driver with one check of driver/validation/request.py missing from its
# executions, as a driver whose own request validation forgot it. What it then does with a
# request failing that check decides what catches it: the harness's own validator
# (invalid-request-accepted) when it reports anything but INVALID_ARGUMENT, a HAL exception
# when the request takes it past a buffer or list. The reference driver adds nothing there:
# it rejects such a request as the validator does, and the validator's rule comes first.

@contextlib.contextmanager
def _request_checks(check: Callable[..., None]) -> Iterator[None]:
    """The bundled driver's request validation with ``check`` in place of errors.check for
    the block, with the driver's memo off: its verdicts are those of the unchanged check,
    and a verdict of the block's would be taken for one of them."""
    saved = memo.ENABLED
    request_validation.check, memo.ENABLED = check, False
    try:
        yield
    finally:
        request_validation.check, memo.ENABLED = errors.check, saved


@contextlib.contextmanager
def _request_check_dropped(message: str) -> Iterator[list[str]]:
    """Request validation without its check of ``message`` (the check's format string)
    for the block; yields the list of messages the dropped check would have raised."""
    missed: list[str] = []

    def check(condition: object, form: str, *args: object) -> None:
        if form != message:
            errors.check(condition, form, *args)
        elif not condition:
            missed.append(form.format(*args))
    with _request_checks(check):
        yield missed


class _RequestCheckDroppedModel(_PreparedModelWithin):
    """Runs every execution without the request check of ``dropped``."""
    dropped = ""

    def within(self) -> contextlib.AbstractContextManager:
        return _request_check_dropped(self.dropped)


class _RequestCheckDropped(DeviceWrapper):
    """The bundled driver with one check of driver/validation/request.py (``dropped``, its
    format string) missing from its executions."""
    dropped = ""

    def __init_subclass__(cls) -> None:
        # Each driver's prepared models drop its check.
        cls.prepared_model_class = type(f"_{cls.__name__}Model", (_RequestCheckDroppedModel,),
                                        {"dropped": cls.dropped})


class InputLengthUnchecked(_RequestCheckDropped):
    """An input's location.length may exceed its data: the driver reads the first bytes."""
    dropped = "{}: length {} differs from the {} bytes of its data"


class PoolBoundsUnchecked(_RequestCheckDropped):
    """An argument's bytes may lie past the end of its pool."""
    dropped = "{}: bytes [{}, {}) outside pool {} of {} bytes"


class DimensionsUnchecked(_RequestCheckDropped):
    """An argument's dimensions may differ from the model's known ones."""
    dropped = "{}: dimension {} is {}, the model's is {}"


class PoolIndexUnchecked(_RequestCheckDropped):
    """An argument's poolIndex may name no pool."""
    dropped = "{}: poolIndex {} out of range ({} pools)"


class UnspecifiedUnchecked(_RequestCheckDropped):
    """Dimensions may stay unknown where they must be known: an input's, and a fenced
    execution's outputs'."""
    dropped = "{}: dimensions {} are not fully specified"


#: The drivers missing one request check.
REQUEST_CHECK_DROPPED = ("InputLengthUnchecked", "PoolBoundsUnchecked", "DimensionsUnchecked",
                         "PoolIndexUnchecked", "UnspecifiedUnchecked")

#: Those the corpus alone catches, as each run replays it first, and the rule that does
#: (tests/fuzz/test_dropped_request_checks.py): it holds requests naming a pool past the
#: last, output dimensions other than the model's (a driver running them fails to write
#: the output: GENERAL_FAILURE), and outputs of unknown shape run fenced.
FOUND_BY_THE_CORPUS = {"PoolIndexUnchecked": contract.HalExceptionViolation,
                       "DimensionsUnchecked": oracles.InvalidRequestAcceptedViolation,
                       "UnspecifiedUnchecked": oracles.InvalidRequestAcceptedViolation}

# The others need a mutation: the corpus's requests failing their check are refused all
# the same (an input shorter than its data, or a model the driver does not prepare), so
# they run clean. Their reproducers are in tests/fuzz/data/.
EXPECTED_RULES.update(InputLengthUnchecked=oracles.InvalidRequestAcceptedViolation,
                      PoolBoundsUnchecked=contract.HalExceptionViolation)
SHAPE_NOT_ENOUGH |= {"InputLengthUnchecked", "PoolBoundsUnchecked"}


def dropped_check_reached(name: str, case) -> bool:
    """Whether ``case``'s request fails the check the named driver dropped (on the case's
    first path), its model being valid."""
    try:
        validate_model(case.model)
    except ValidationError:
        return False
    fenced = case.choices.path == ExecutionPath.FENCED
    with _request_check_dropped(globals()[name].dropped) as missed:
        try:
            validate_request(case.request, case.model, allow_unspecified_output=not fenced)
        except (ValidationError, IndexError):   # IndexError: a pool past the dropped poolIndex check
            pass
    return bool(missed)


# --- 18-21. memory domains and compilation caching ---------------------------------------------

class _ZeroingBuffer(_Delegating):
    def copyTo(self, dst) -> ErrorStatus:
        status = self.inner.copyTo(dst)
        if status == ErrorStatus.NONE:
            dst.write(bytes(dst.size))
        return status


class CopyToZeroes(DeviceWrapper):
    """IBuffer.copyTo succeeds but hands the client zeros, not the buffer's content."""

    def allocate(self, *arguments) -> tuple[ErrorStatus, Any, int]:
        status, buffer, token = super().allocate(*arguments)
        return status, None if buffer is None else _ZeroingBuffer(buffer), token


class FreedTokenKept(DeviceWrapper):
    """Keeps every buffer it allocated alive: the token of a buffer whose IBuffer the
    client dropped still names it."""

    def __init__(self, inner: Any = None) -> None:
        super().__init__(inner)
        self.kept: list[Any] = []

    def allocate(self, *arguments) -> tuple[ErrorStatus, Any, int]:
        status, buffer, token = super().allocate(*arguments)
        self.kept.append(buffer)
        return status, buffer, token


class _FirstPreparation(PreparedModelWrapper):
    """Remembers the first preparation of the latest Model prepared (a driver sharing one
    compiled model between its preparations)."""
    first: "_FirstPreparation | None" = None

    def __init__(self, inner: Any, model: Model, priority: Priority) -> None:
        super().__init__(inner, model, priority)
        if _FirstPreparation.first is None or _FirstPreparation.first.model is not model:
            _FirstPreparation.first = self


class SharedBetweenPreparations(DeviceWrapper):
    """Allocates a buffer for a preparation of a model as for its first preparation: the
    token of a buffer allocated for another preparation of the model is taken."""

    prepared_model_class = _FirstPreparation

    def allocate(self, desc, preparedModels, inputRoles, outputRoles) -> tuple[ErrorStatus, Any, int]:
        first = _FirstPreparation.first
        shared = [first if first is not None and getattr(p, "model", None) is first.model else p
                  for p in preparedModels]
        return super().allocate(desc, shared, inputRoles, outputRoles)


def _payload_on_trust(fd: int) -> bytes:
    """A cache file's payload, its header and MAC cut off unchecked."""
    _, payload, _ = cache.file_parts(os.pread(fd, os.fstat(fd).st_size, 0))
    return payload


class CacheUnchecked(DeviceWrapper):
    """prepareModelFromCache_1_3 takes the cache files on trust: neither their MAC, nor
    their header, nor the data cache's digest is checked, so a corrupted file loads as a
    model if it parses."""

    def prepareModelFromCache_1_3(self, deadline, modelCache, dataCache, token, callback) -> ErrorStatus:
        try:
            structure, _ = cache.model_payload_parts(_payload_on_trust(modelCache[0]))
            model = cache.deserialize_model(structure, _payload_on_trust(dataCache[0]))
        except Exception:   # what does not parse is refused, as a cache error
            callback.notify_1_3(ErrorStatus.GENERAL_FAILURE, None)
            return ErrorStatus.GENERAL_FAILURE
        return self.prepareModel_1_3(model, ExecutionPreference.FAST_SINGLE_ANSWER, Priority.MEDIUM,
                                     deadline, [], [], token, callback)


#: The format string of driver/validation/request.py's check of a driver-managed buffer's
#: argument.
BUFFER_EXTENT_CHECK = "{}: offset {} and length {} in a driver-managed buffer, where both must be 0"


class BufferExtentUnchecked(_RequestCheckDropped):
    """A driver-managed buffer's argument may have an offset and a length (the HAL wants
    both 0): the driver runs from the whole buffer."""
    dropped = BUFFER_EXTENT_CHECK


def _request_check_failing(message: str) -> contextlib.AbstractContextManager:
    """Request validation with its check of ``message`` failing wherever it runs, for the
    block."""
    def check(condition: object, form: str, *args: object) -> None:
        errors.check(condition and form != message, form, *args)
    return _request_checks(check)


class _BufferArgumentsRefusedModel(_PreparedModelWithin):
    @staticmethod
    def within() -> contextlib.AbstractContextManager:
        return _request_check_failing(BUFFER_EXTENT_CHECK)


class BufferArgumentsRefused(DeviceWrapper):
    """Allocates buffers, then refuses every request naming one with INVALID_ARGUMENT, as
    a driver whose check of a buffer's argument is the wrong way round."""
    prepared_model_class = _BufferArgumentsRefusedModel


class NoDomainsNoCache(DeviceWrapper):
    """A legal driver offering neither memory domains nor compilation caching."""

    def allocate(self, *arguments) -> tuple[ErrorStatus, Any, int]:
        return ErrorStatus.GENERAL_FAILURE, None, 0

    def getNumberOfCacheFilesNeeded(self) -> tuple[ErrorStatus, int, int]:
        return ErrorStatus.NONE, 0, 0


#: The drivers whose bug a route of fuzz/routes.py catches, and the rule that does.
DOMAIN_RULES = {
    "CopyToZeroes": oracles.BuffersDifferViolation,
    "FreedTokenKept": oracles.InvalidTokenAcceptedViolation,
    "CacheUnchecked": oracles.CorruptedCacheAcceptedViolation,
    "SharedBetweenPreparations": oracles.InvalidTokenAcceptedViolation,
    "BufferExtentUnchecked": oracles.InvalidRequestAcceptedViolation,
    "BufferArgumentsRefused": oracles.BuffersDifferViolation,
}
