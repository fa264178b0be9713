"""The rules only the fuzz harness checks, each a small function raising its own
OracleViolation: the driver against the reference validator, and two executions of one
case against each other. The rules any client checks on a driver's answers are in
hal_client/contract.py (the harness applies both).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from driver.hal import ErrorStatus, Model, OperandType, OperationType, OutputShape, Request
from hal_client.contract import OracleViolation, main_output_operand
from hal_client.paths import ExecutionPath

from .case import RequestChange


class SupportedPrepareViolation(OracleViolation):
    """getSupportedOperations_1_3 and prepareModel_1_3 judge a model's validity differently."""
    rule = "supported-vs-prepare"


class InvalidModelAcceptedViolation(OracleViolation):
    """The driver accepted a model that the reference validator rejects."""
    rule = "invalid-model-accepted"


class InvalidRequestAcceptedViolation(OracleViolation):
    """The driver executed a request that the reference validator rejects."""
    rule = "invalid-request-accepted"


class NondeterminismViolation(OracleViolation):
    """Two execution paths of one prepared model and request gave different results."""
    rule = "determinism"


class RequestChangedViolation(OracleViolation):
    """An execution launched on another thread gave other results because the caller
    changed its request after the launch: the driver read the request late, where HIDL
    hands it a copy taken at the call."""
    rule = "request-after-launch"


class MemoryBudgetViolation(OracleViolation):
    """An execution allocated more than its memory budget allows."""
    rule = "memory-budget"


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
    if request_error is not None and status == ErrorStatus.NONE:
        raise InvalidRequestAcceptedViolation(
            f"{path.name} execution returned NONE for an invalid request ({request_error})",
            key=path.name)


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


def has_random_operation(model: Model) -> bool:
    return any(op.type in RANDOM_OPERATIONS
               for subgraph in (model.main, *model.referenced) for op in subgraph.operations)


def check_same_results(first: ExecutionResult, second: ExecutionResult, model: Model,
                       request: Request, fenced_comparable: bool,
                       change: RequestChange = RequestChange.NONE) -> None:
    """Two paths, one prepared model and request: same status, shapes and output bytes.

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
                raise Violation(
                    f"{paths}: output {i} shape {a} vs {b}", key=f"{paths}: shape")
    if has_random_operation(model):
        return
    for i, (a, b) in enumerate(zip(first.outputs, second.outputs)):
        if a is None or b is None:
            continue
        operand = main_output_operand(model, i)
        float_dtype = FLOAT_TYPES.get(operand.type) if operand is not None else None
        if not _same_bytes(a, b, float_dtype):
            differ = next(j for j, (x, y) in enumerate(zip(a, b)) if x != y) if len(a) == len(b) else None
            raise Violation(
                f"{paths}: output {i} bytes differ (first difference at byte {differ}, "
                f"{len(a)} bytes)", key=f"{paths}: output bytes")


# --- memory ---------------------------------------------------------------------------------

def check_peak_memory(peak_bytes: int, budget_bytes: int, slack_bytes: int, what: str) -> None:
    """An execution's peak allocation: its budget, plus the slack of what a budget does
    not count (see harness.MEMORY_SLACK_BYTES)."""
    if peak_bytes > budget_bytes + slack_bytes:
        raise MemoryBudgetViolation(
            f"{what} execution allocated up to {peak_bytes} bytes, over its budget of "
            f"{budget_bytes} bytes plus {slack_bytes} of scratch", key=what)
