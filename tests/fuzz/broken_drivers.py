"""Drivers with planted bugs, to show that the fuzzer finds each kind of failure.

Each is the bundled SampleDriver behind a wrapper that misbehaves on a graph shape the seed
corpus does not contain but a few mutations reach. Use them as fuzz targets:

    python fuzz/driver_fuzz.py --driver tests.fuzz.broken_drivers:Raising corpus/ ...

- ``Raising``: preparing a WHILE whose body has exactly five operations raises IndexError
  (an off-by-one in a loop-body scheduling helper).
- ``Hanging``: a WHILE with a state-only operand runs without the requested loop timeout,
  so a loop that never ends runs for the 15 s maximum instead of the requested time.
- ``FencedBitFlip``: executeFenced of a model with a LESS_EQUAL operation flips the lowest
  bit of the first output's first byte.
- ``SupportedDisagrees``: getSupportedOperations_1_3 reports INVALID_ARGUMENT for a model
  with a GREATER in a referenced subgraph, which prepareModel_1_3 accepts.

The seed corpus holds none of these shapes (loop bodies of two to four operations, LESS_EQUAL
only in models not run fenced, GREATER only in main, state-only operands only in a loop
that ends).
"""
from __future__ import annotations

from typing import Any, Iterator

from driver import SampleDriver
from driver.hal import (ErrorStatus, LoopTimeoutDurationNs, Model, OperandLifeTime, OperationType,
                        OptionalTimeoutDuration, Subgraph)
from driver.sync_fence import FenceState, SyncFence


# --- delegation -------------------------------------------------------------------------------

class _PreparedModelCallbackProxy:
    """Hands the client a wrapped prepared model instead of the inner driver's."""

    def __init__(self, callback: Any, wrap) -> None:
        self._callback = callback
        self._wrap = wrap

    def notify_1_3(self, status: ErrorStatus, prepared: Any) -> None:
        self._callback.notify_1_3(status, self._wrap(prepared) if prepared is not None else None)


class PreparedModelWrapper:
    """An IPreparedModel delegating to the inner one; subclasses override what they break."""

    def __init__(self, inner: Any, model: Model) -> None:
        self.inner = inner
        self.model = model

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class DeviceWrapper:
    """An IDevice delegating to a SampleDriver; its prepared models are wrapped in
    ``prepared_model_class``."""

    prepared_model_class: type[PreparedModelWrapper] = PreparedModelWrapper

    def __init__(self, inner: Any = None) -> None:
        self.inner = inner if inner is not None else SampleDriver()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def prepareModel_1_3(self, model, preference, priority, deadline, modelCache, dataCache,
                         token, callback) -> ErrorStatus:
        proxy = _PreparedModelCallbackProxy(
            callback, lambda prepared: self.prepared_model_class(prepared, model))
        return self.inner.prepareModel_1_3(model, preference, priority, deadline, modelCache,
                                           dataCache, token, proxy)


# --- graph queries ----------------------------------------------------------------------------

def _subgraph_operand(model: Model, subgraph: Subgraph, operand_index: int) -> Subgraph | None:
    operand = subgraph.operands[operand_index]
    if operand.lifetime != OperandLifeTime.SUBGRAPH or not 0 <= operand.location.offset < len(model.referenced):
        return None
    return model.referenced[operand.location.offset]


def _while_loops(model: Model) -> Iterator[tuple[Subgraph, Any]]:
    """(subgraph, operation) of every WHILE in the model."""
    for subgraph in (model.main, *model.referenced):
        for operation in subgraph.operations:
            if operation.type == OperationType.WHILE and len(operation.inputs) >= 2:
                yield subgraph, operation


def _loop_body(model: Model, subgraph: Subgraph, operation) -> Subgraph | None:
    return _subgraph_operand(model, subgraph, operation.inputs[1])


# --- 1. an exception on a rare graph shape ----------------------------------------------------

def _schedule_loop_body(body: Subgraph) -> list[tuple[int, ...]]:
    """Group a loop body's operations into dispatch batches of at most two. The bug: the
    odd tail of a five-operation body is taken one position too far."""
    count = len(body.operations)
    batches = [(i, i + 1) for i in range(0, count - 1, 2)]
    if count == 5:
        batches.append((count,))                     # off by one: the tail is count - 1
        body.operations[batches[-1][0]].type         # ... and is looked up
    elif count % 2:
        batches.append((count - 1,))
    return batches


class Raising(DeviceWrapper):
    def prepareModel_1_3(self, model, *args) -> ErrorStatus:
        for subgraph, operation in _while_loops(model):
            body = _loop_body(model, subgraph, operation)
            if body is not None:
                _schedule_loop_body(body)
        return super().prepareModel_1_3(model, *args)


# --- 2. a hang: the loop timeout ignored ------------------------------------------------------

def _has_state_only_operand(model: Model) -> bool:
    """A WHILE whose body returns more values than the loop outputs: the extra ones are
    state-only operands."""
    for subgraph, operation in _while_loops(model):
        body = _loop_body(model, subgraph, operation)
        if body is not None and len(body.outputIndexes) > len(operation.outputs):
            return True
    return False


_NO_LOOP_LIMIT = OptionalTimeoutDuration(LoopTimeoutDurationNs.MAXIMUM)


class _LoopTimeoutIgnoringModel(PreparedModelWrapper):
    def _timeout(self, requested: OptionalTimeoutDuration) -> OptionalTimeoutDuration:
        return _NO_LOOP_LIMIT if _has_state_only_operand(self.model) else requested

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


class _LoopTimeoutIgnoringBurst:
    def __init__(self, inner: Any, prepared: _LoopTimeoutIgnoringModel) -> None:
        self.inner = inner
        self.prepared = prepared

    def execute(self, request, slots, measure, deadline, loopTimeoutDuration):
        return self.inner.execute(request, slots, measure, deadline,
                                  self.prepared._timeout(loopTimeoutDuration))

    def freeMemory(self, slot: int) -> None:
        self.inner.freeMemory(slot)


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
        if status != ErrorStatus.NONE or not _has_operation(self.model, OperationType.LESS_EQUAL):
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
        if _referenced_operation(model, OperationType.GREATER):
            return ErrorStatus.INVALID_ARGUMENT, []
        return self.inner.getSupportedOperations_1_3(model)


#: Each broken driver and the oracle rule that must catch it.
EXPECTED_RULES = {
    "Raising": "HalExceptionViolation",
    "Hanging": "HangViolation",
    "FencedBitFlip": "NondeterminismViolation",
    "SupportedDisagrees": "SupportedPrepareViolation",
}
