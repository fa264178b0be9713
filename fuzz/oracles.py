"""The rules only the fuzz harness checks, each a small function raising its own
OracleViolation: the driver against the reference validator and a reference driver, two
executions of one case against each other, and a case against one rewritten to give the
same outputs (fuzz/relations.py) or run by another route through the HAL (fuzz/routes.py).
The rules any client checks on a driver's answers are in hal_client/contract.py (the
harness applies both).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from driver.hal import ErrorStatus, Model, OperandType, OperationType, OutputShape, Request
from driver.hal.dtypes import STORAGE_DTYPE
from driver.hal.enums import SCALAR_OPERAND_TYPES
from hal_client.accuracy import Mismatch, compare_values, tolerance_for
from hal_client.contract import OracleViolation, main_output_operand, output_producer
from hal_client.paths import ExecutionPath

from .case import RequestChange


class SupportedPrepareViolation(OracleViolation):
    """getSupportedOperations_1_3 and prepareModel_1_3 judge a model's validity differently."""
    rule = "supported-vs-prepare"


class InvalidModelAcceptedViolation(OracleViolation):
    """The driver accepted a model that the reference validator rejects."""
    rule = "invalid-model-accepted"


class InvalidRequestAcceptedViolation(OracleViolation):
    """The driver did not reject with INVALID_ARGUMENT a request that the reference
    validator rejects."""
    rule = "invalid-request-accepted"


class NondeterminismViolation(OracleViolation):
    """Two execution paths of one prepared model and request gave different results."""
    rule = "determinism"


class RequestChangedViolation(OracleViolation):
    """An execution launched on another thread gave other results because the caller
    changed its request after the launch: the driver read the request late, where HIDL
    hands it a copy taken at the call."""
    rule = "request-after-launch"


class ReferenceVerdictViolation(OracleViolation):
    """The driver and the reference driver disagree on a model's or request's validity: one
    rejects it with INVALID_ARGUMENT, the other accepts it."""
    rule = "reference-verdict"


class ReferenceMismatchViolation(OracleViolation):
    """The driver's outputs differ from the reference driver's beyond the accuracy criteria
    (hal_client/accuracy.py), or their shapes differ."""
    rule = "reference-mismatch"


class MetamorphicViolation(OracleViolation):
    """A model and request rewritten to give the same outputs gave others (each relation
    of fuzz/relations.py has its subclass, ruled ``metamorphic-<relation>``)."""
    rule = "metamorphic"


class MetamorphicIfThenViolation(MetamorphicViolation):
    """The main subgraph moved into the then-branch of IF(true) computed other outputs."""
    rule = "metamorphic-if-then"


class MetamorphicIfElseViolation(MetamorphicViolation):
    """The main subgraph moved into the else-branch of IF(false) computed other outputs."""
    rule = "metamorphic-if-else"


class MetamorphicConstantCopyViolation(MetamorphicViolation):
    """A main input given as a CONSTANT_COPY operand computed other outputs."""
    rule = "metamorphic-constant-copy"


class MetamorphicConstantReferenceViolation(MetamorphicViolation):
    """A main input given as a CONSTANT_REFERENCE operand computed other outputs."""
    rule = "metamorphic-constant-reference"


class MetamorphicOwnPoolsViolation(MetamorphicViolation):
    """The request's arguments each in a pool of their own computed other outputs."""
    rule = "metamorphic-own-pools"


class MetamorphicRenumberedViolation(MetamorphicViolation):
    """The operands and operations renumbered computed other outputs."""
    rule = "metamorphic-renumbered"


class MetamorphicUnknownOutputShapesViolation(MetamorphicViolation):
    """The main outputs' dimensions left to the driver computed other outputs."""
    rule = "metamorphic-unknown-output-shapes"


class BuffersDifferViolation(OracleViolation):
    """The case run with every argument in a driver-managed buffer (IDevice.allocate,
    IBuffer.copyFrom in, copyTo out) gave other outputs than with plain pools."""
    rule = "buffers-differ"


class InvalidTokenAcceptedViolation(OracleViolation):
    """An execution succeeded with a request naming a buffer by a token that names no
    buffer it may use: one whose IBuffer the client dropped, or one allocated for another
    prepared model (the HAL: INVALID_ARGUMENT)."""
    rule = "invalid-token-accepted"


class CacheDiffersViolation(OracleViolation):
    """A model prepared from the cache files its own preparation wrote computed other
    outputs than the model prepared afresh."""
    rule = "cache-differs"


class CorruptedCacheAcceptedViolation(OracleViolation):
    """A model prepared (NONE) from corrupted cache files computed other outputs than the
    model the files were written for: the driver loaded a corrupted cache as a model."""
    rule = "corrupted-cache-accepted"


class MemoryBudgetViolation(OracleViolation):
    """An execution allocated more than its memory budget allows."""
    rule = "memory-budget"


class RuntimeCrashViolation(OracleViolation):
    """The runtime behind the driver died (a native crash in its worker process), whatever
    status the driver then gave."""
    rule = "runtime-crash"


# --- what the oracles judge ---------------------------------------------------------------

@dataclass(frozen=True)
class ExecutionResult:
    """One execution as the harness saw it. ``shapes`` is None for the fenced path, which
    reports none; ``outputs`` holds each output's buffer content afterwards (None where the
    output has no readable buffer)."""
    path: ExecutionPath
    status: ErrorStatus
    shapes: list[OutputShape] | None
    outputs: list[bytes | None]


#: Statuses that depend on timing, not on the model and request: two runs may differ.
TIME_DEPENDENT_STATUSES = frozenset({
    ErrorStatus.MISSED_DEADLINE_TRANSIENT, ErrorStatus.MISSED_DEADLINE_PERSISTENT,
    ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT,
})

#: Operations whose outputs are random by definition.
RANDOM_OPERATIONS = frozenset({OperationType.RANDOM_MULTINOMIAL})

FLOAT_TYPES = {
    OperandType.TENSOR_FLOAT32: np.float32, OperandType.FLOAT32: np.float32,
    OperandType.TENSOR_FLOAT16: np.float16, OperandType.FLOAT16: np.float16,
}


# --- validity -----------------------------------------------------------------------------

def check_supported_vs_prepare(supported_status: ErrorStatus, supported: Sequence[bool],
                               prepare_status: ErrorStatus, arguments_valid: bool) -> None:
    """Both calls validate the model: they must agree on INVALID_ARGUMENT.

    ``arguments_valid``: prepare's own arguments (preference, priority, no deadline) are
    beyond reproach, so an INVALID_ARGUMENT from it can only be about the model."""
    if supported_status == ErrorStatus.INVALID_ARGUMENT and prepare_status == ErrorStatus.NONE:
        raise SupportedPrepareViolation(
            "getSupportedOperations_1_3 returned INVALID_ARGUMENT but prepareModel_1_3 succeeded",
            key="supported INVALID_ARGUMENT, prepare NONE")
    if (arguments_valid and supported_status == ErrorStatus.NONE and all(supported)
            and prepare_status == ErrorStatus.INVALID_ARGUMENT):
        raise SupportedPrepareViolation(
            "getSupportedOperations_1_3 supports every operation but prepareModel_1_3 returned "
            "INVALID_ARGUMENT", key="supported all, prepare INVALID_ARGUMENT")


def check_invalid_model_rejected(model_error: str | None, supported_status: ErrorStatus,
                                 supported: Sequence[bool], prepare_status: ErrorStatus) -> None:
    """A model the reference validator rejects must not be supported nor prepared."""
    if model_error is None:
        return
    if prepare_status == ErrorStatus.NONE:
        raise InvalidModelAcceptedViolation(
            f"prepareModel_1_3 accepted an invalid model ({model_error})", key="prepareModel_1_3")
    if supported_status == ErrorStatus.NONE and all(supported):
        raise InvalidModelAcceptedViolation(
            f"getSupportedOperations_1_3 supports every operation of an invalid model ({model_error})",
            key="getSupportedOperations_1_3")


def check_invalid_request_rejected(request_error: str | None, status: ErrorStatus,
                                   path: ExecutionPath) -> None:
    """An invalid request gets INVALID_ARGUMENT: another failure says the driver ran it,
    taking it for valid (a status that depends on timing may come first)."""
    if request_error is not None and status != ErrorStatus.INVALID_ARGUMENT \
            and status not in TIME_DEPENDENT_STATUSES:
        raise InvalidRequestAcceptedViolation(
            f"{path.name} execution returned {status.name} for an invalid request ({request_error})",
            key=f"{path.name}: {status.name}")


def check_reference_verdict(reference: ErrorStatus, driver: ErrorStatus, call: str,
                            validator_error: str | None = None) -> None:
    """The reference driver and the driver under test, given the same ``call``, agree on
    whether its model or request is valid: INVALID_ARGUMENT from one, NONE from the other
    is a disagreement (any other status says nothing about validity). ``validator_error``:
    why the reference validator rejects it too, if it does (a driver built on the bundled
    validator rejects it for that reason)."""
    if {reference, driver} != {ErrorStatus.INVALID_ARGUMENT, ErrorStatus.NONE}:
        return
    verdicts = ("the reference rejects it with INVALID_ARGUMENT, the driver accepts it"
                if reference == ErrorStatus.INVALID_ARGUMENT
                else "the driver rejects it with INVALID_ARGUMENT, the reference accepts it")
    if validator_error is not None:
        verdicts += f"; the reference validator rejects it too: {validator_error}"
    raise ReferenceVerdictViolation(f"{call}: {verdicts}", key=f"{call}: driver {driver.name}")


def check_expected_status(status: ErrorStatus, expected: ErrorStatus,
                          Violation: type[OracleViolation], what: str) -> None:
    """An execution whose status the case decides (a time-dependent one aside)."""
    if status != expected and status not in TIME_DEPENDENT_STATUSES:
        raise Violation(f"{what}: status {status.name}, expected {expected.name}",
                        key=f"{what}: {status.name}")


def wrong_output_bucket(model: Model, index: int) -> str:
    """What a wrong output adds to its finding's bucket (fuzz/triage.py, bucket_key):
    the type of the operation that produced it, read off the case at no cost. Two wrong
    outputs of one rule but of other operations are taken for two bugs."""
    producer = output_producer(model, index)
    return f"output of {producer}" if producer else ""


# --- determinism --------------------------------------------------------------------------

def _same_bytes(a: bytes, b: bytes, float_dtype: type | None) -> bool:
    """Bytewise equality, except that any two NaNs are equal (payloads may differ)."""
    if a == b:
        return True
    if float_dtype is None or len(a) != len(b) or len(a) % np.dtype(float_dtype).itemsize:
        return False
    x = np.frombuffer(a, dtype=float_dtype)
    y = np.frombuffer(b, dtype=float_dtype)
    unsigned = np.dtype(f"u{x.itemsize}")
    same = (x.view(unsigned) == y.view(unsigned)) | (np.isnan(x) & np.isnan(y))
    return bool(same.all())


def outputs_sharing_bytes(request: Request) -> frozenset[int]:
    """Positions of the outputs whose location shares bytes with another output's (same
    pool, intersecting ranges). Nothing in the HAL forbids it, and nothing says in which
    order a driver writes its outputs: the content of those bytes is the driver's choice,
    so no comparison of output bytes holds there."""
    located = [(i, argument.location) for i, argument in enumerate(request.outputs)
               if not argument.hasNoValue and argument.location.length > 0]
    return frozenset(i for i, a in located for j, b in located
                     if i != j and a.poolIndex == b.poolIndex
                     and a.offset < b.offset + b.length and b.offset < a.offset + a.length)


def has_random_operation(model: Model) -> bool:
    return any(op.type in RANDOM_OPERATIONS
               for subgraph in (model.main, *model.referenced) for op in subgraph.operations)


def check_same_results(first: ExecutionResult, second: ExecutionResult, model: Model,
                       request: Request, fenced_comparable: bool,
                       change: RequestChange = RequestChange.NONE) -> None:
    """Two paths, one prepared model and request: same status, shapes and output bytes
    (but for outputs sharing bytes with another, outputs_sharing_bytes).

    ``fenced_comparable``: the request's outputs are fully specified, which executeFenced
    requires; otherwise a fenced path may rightly fail where the others succeed.
    ``change``: what the caller did to the second execution's request after launching it
    (a difference is then a RequestChangedViolation)."""
    paths = f"{first.path.name} vs {second.path.name}"
    if change != RequestChange.NONE:
        paths += f" (request {change.name} after launch)"
    Violation = NondeterminismViolation if change == RequestChange.NONE else RequestChangedViolation
    if first.status in TIME_DEPENDENT_STATUSES or second.status in TIME_DEPENDENT_STATUSES:
        return
    fenced = ExecutionPath.FENCED in (first.path, second.path)
    if first.status != second.status:
        if fenced and not fenced_comparable:
            return
        raise Violation(
            f"{paths}: status {first.status.name} vs {second.status.name}", key=f"{paths}: status")
    if first.status != ErrorStatus.NONE:
        return
    if first.shapes is not None and second.shapes is not None:
        for i, (a, b) in enumerate(zip(first.shapes, second.shapes)):
            if list(a.dimensions) != list(b.dimensions) or a.isSufficient != b.isSufficient:
                raise Violation(f"{paths}: output {i} shape {a} vs {b}", key=f"{paths}: shape",
                                bucket=wrong_output_bucket(model, i))
    if has_random_operation(model):
        return
    shared = outputs_sharing_bytes(request)
    for i, (a, b) in enumerate(zip(first.outputs, second.outputs)):
        if a is None or b is None or i in shared:
            continue
        operand = main_output_operand(model, i)
        float_dtype = FLOAT_TYPES.get(operand.type) if operand is not None else None
        if not _same_bytes(a, b, float_dtype):
            differ = next(j for j, (x, y) in enumerate(zip(a, b)) if x != y) if len(a) == len(b) else None
            raise Violation(
                f"{paths}: output {i} bytes differ (first difference at byte {differ}, "
                f"{len(a)} bytes)", key=f"{paths}: output bytes", bucket=wrong_output_bucket(model, i))


# --- the same outputs, within the accuracy criteria ------------------------------------------

def computes_in_float16(model: Model) -> bool:
    """float32 outputs are then held to float16 accuracy (the CTS's criterion)."""
    return model.relaxComputationFloat32toFloat16 or any(
        operand.type in (OperandType.TENSOR_FLOAT16, OperandType.FLOAT16)
        for subgraph in (model.main, *model.referenced) for operand in subgraph.operands)


def specified_dimensions(model: Model, request: Request, index: int) -> list[int] | None:
    """Output ``index``'s dimensions when the model and request fix them before execution
    ([] for a scalar), else None."""
    operand = main_output_operand(model, index)
    if operand is None or index >= len(request.outputs) or request.outputs[index].hasNoValue:
        return None
    if operand.type in SCALAR_OPERAND_TYPES:
        return []
    dims = list(request.outputs[index].dimensions or operand.dimensions)
    return dims if dims and 0 not in dims else None


def check_same_outputs(expected: ExecutionResult, actual: ExecutionResult, model: Model,
                       request: Request, Violation: type[OracleViolation], what: str,
                       excused: Callable[[int], bool] | None = None) -> int:
    """Two successful executions meant to compute the same: the same output shapes (where
    both report them), and every output the request fully specifies within the accuracy
    criteria of its type. Returns how many outputs were left out: outputs the expected
    execution computed as NaN or infinite anywhere (a driver may rightly overflow or not
    in other places), outputs sharing bytes with another (outputs_sharing_bytes), and all
    of a model with a random operation. An output that differs is a violation unless
    ``excused(position)`` (a documented ambiguity of the specification, fuzz/spec.py)."""
    if expected.shapes is not None and actual.shapes is not None:
        for i, (a, b) in enumerate(zip(expected.shapes, actual.shapes)):
            if list(a.dimensions) != list(b.dimensions):
                raise Violation(f"{what}: output {i} has dimensions {list(b.dimensions)}, expected "
                                f"{list(a.dimensions)}", key=f"{what}: output shape",
                                bucket=wrong_output_bucket(model, i))
    if has_random_operation(model):
        return len(expected.outputs)
    left_out = 0
    float16 = computes_in_float16(model)
    shared = outputs_sharing_bytes(request)
    for i, (a, b) in enumerate(zip(expected.outputs, actual.outputs)):
        if i in shared:
            left_out += 1
            continue
        dims = specified_dimensions(model, request, i)
        operand = main_output_operand(model, i)
        dtype = STORAGE_DTYPE.get(operand.type) if operand is not None else None
        if a is None or b is None or dims is None or dtype is None:
            continue
        count = int(np.prod(dims))
        dtype = np.dtype(np.uint8) if dtype.kind == "b" else dtype   # a byte other than 0/1 is no True
        if min(len(a), len(b)) < count * dtype.itemsize:
            continue
        want, got = np.frombuffer(a, dtype, count), np.frombuffer(b, dtype, count)
        if not judged(want):
            left_out += 1
            continue
        mismatch = values_mismatch(operand.type, want, got, float16)
        if mismatch is not None and not (excused is not None and excused(i)):
            raise Violation(
                f"{what}: output {i} ({operand.type.name}{dims}) differs at index {mismatch.index}: "
                f"{mismatch.actual:.9g}, expected {mismatch.expected:.9g}, beyond {mismatch.tolerance} "
                f"({mismatch.count} of {mismatch.size} values)", key=f"{what}: output values",
                bucket=wrong_output_bucket(model, i))
    return left_out


def judged(expected: np.ndarray) -> bool:
    """Whether values computed as ``expected`` are judged: not where the expected run
    computed NaN or infinite anywhere (a driver may rightly overflow or not in other
    places)."""
    return expected.dtype.kind != "f" or bool(np.isfinite(expected).all())


def values_mismatch(operand_type: OperandType, expected: np.ndarray, actual: np.ndarray,
                    float16: bool) -> Mismatch | None:
    """``actual`` against ``expected`` (values of one operand, in its storage dtype) by the
    accuracy criteria of its type; ``float16``: the model computes in float16
    (computes_in_float16)."""
    return compare_values(expected, actual, tolerance_for(operand_type, float16_criterion=float16))


# --- memory ---------------------------------------------------------------------------------

def check_peak_memory(peak_bytes: int, budget_bytes: int, slack_bytes: int, what: str) -> None:
    """An execution's peak allocation: its budget, plus the slack of what a budget does
    not count (see harness.MEMORY_SLACK_BYTES)."""
    if peak_bytes > budget_bytes + slack_bytes:
        raise MemoryBudgetViolation(
            f"{what} execution allocated up to {peak_bytes} bytes, over its budget of "
            f"{budget_bytes} bytes plus {slack_bytes} of scratch", key=what)


# --- the runtime behind a driver ---------------------------------------------------------------

def operation_types(model: Model) -> tuple[str, ...]:
    """The operation types of a model, every subgraph's, sorted."""
    return tuple(sorted({getattr(op.type, "name", str(op.type))
                         for subgraph in (model.main, *model.referenced) for op in subgraph.operations}))


def check_runtime_alive(device, model: Model | None = None) -> None:
    """A driver over a real runtime (``device.engine``, driver/engine.py) that hands out the
    crashes of its runtime (``take_crashes()``) had none during the case. A crash's bucket
    is the model's operation types: a native crash has no frames of ours to tell two apart."""
    take_crashes = getattr(getattr(device, "engine", None), "take_crashes", None)
    if take_crashes is None:
        return
    crashes = take_crashes()
    if crashes:
        bucket = "operations: " + ", ".join(operation_types(model)) if model is not None else ""
        raise RuntimeCrashViolation("; ".join(crashes), bucket=bucket)


def engine_statistics(device) -> dict[str, int]:
    """The counts a driver's engine keeps of its outcomes (``device.engine.statistics``;
    empty for a driver without them)."""
    return dict(getattr(getattr(device, "engine", None), "statistics", None) or {})


def engine_summary(statistics: dict[str, int]) -> str | None:
    """Engine counts as one line, or None when there are none."""
    if not statistics:
        return None
    return "engine: " + ", ".join(f"{what} {count}" for what, count in sorted(statistics.items()))
