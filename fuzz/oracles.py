"""The rules a driver must keep, each a small function raising its own OracleViolation.

Each rule has one AssertionError subclass, so a failing input says which rule it broke by
its type alone, and triage can group failures by it. A violation also carries a ``key``: a
short, stable description of the particular way the rule broke (which call, which field),
used in signatures; the message holds the details of this input.
"""
from __future__ import annotations

import enum
import traceback
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from driver.hal import (UINT64_MAX, ErrorStatus, MeasureTiming, Model, OperandType,
                        OperationType, OutputShape, Request, Timing)
from driver.hal.dtypes import byte_size
from driver.hal.enums import SCALAR_OPERAND_TYPES

from .case import ExecutionPath


class OracleViolation(AssertionError):
    """A broken driver contract. ``rule`` names the contract (the class), ``key`` the way it
    broke; ``frames`` is where the driver was when it happened, when that is known."""

    rule = "oracle"

    def __init__(self, message: str, *, key: str = "",
                 frames: Sequence[traceback.FrameSummary] | None = None) -> None:
        super().__init__(f"[{self.rule}] {message}")
        self.key = key
        self.frames = list(frames) if frames is not None else None


class HalExceptionViolation(OracleViolation):
    """A HAL call raised instead of returning a status (or a driver thread died raising)."""
    rule = "exception-from-hal"


class MalformedResultViolation(OracleViolation):
    """A HAL call returned something that is not what its signature promises."""
    rule = "malformed-result"


class CallbackNotifyViolation(OracleViolation):
    """A callback's notify_1_3 was not called exactly once."""
    rule = "callback-notify-count"


class CallbackResultViolation(OracleViolation):
    """A prepare callback got NONE without a prepared model, or an error with one."""
    rule = "callback-status-model"


class LaunchStatusViolation(OracleViolation):
    """A launch that failed told the callback a different status than it returned."""
    rule = "launch-status-mismatch"


class FenceViolation(OracleViolation):
    """executeFenced's fence and callback disagree, or the callback is missing."""
    rule = "fenced-contract"


class SupportedPrepareViolation(OracleViolation):
    """getSupportedOperations_1_3 and prepareModel_1_3 judge a model's validity differently."""
    rule = "supported-vs-prepare"


class InvalidModelAcceptedViolation(OracleViolation):
    """The driver accepted a model that the reference validator rejects."""
    rule = "invalid-model-accepted"


class InvalidRequestAcceptedViolation(OracleViolation):
    """The driver executed a request that the reference validator rejects."""
    rule = "invalid-request-accepted"


class OutputShapesViolation(OracleViolation):
    """Reported output shapes are missing, extra, or contradict the declared dimensions."""
    rule = "output-shapes"


class SufficiencyViolation(OracleViolation):
    """An output reported insufficient although the execution succeeded."""
    rule = "is-sufficient"


class InsufficientSizeViolation(OracleViolation):
    """OUTPUT_INSUFFICIENT_SIZE where no buffer is too short for its reported shape, or an
    output flagged insufficient whose buffer is large enough."""
    rule = "insufficient-size"


class TimingViolation(OracleViolation):
    """Timing reported when it must not be, or a device time above the driver time."""
    rule = "timing"


class NondeterminismViolation(OracleViolation):
    """Two execution paths of one prepared model and request gave different results."""
    rule = "determinism"


class HangViolation(OracleViolation):
    """A call or execution outlived its time limit."""
    rule = "hang"


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


def status_name(status: Any) -> str:
    return status.name if isinstance(status, ErrorStatus) else repr(status)


# --- results of the right form ------------------------------------------------------------

def enum_member(enum_type: type[enum.IntEnum], value: Any) -> enum.IntEnum | None:
    """``value`` as a member of ``enum_type``, or None (bools are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    try:
        return enum_type(value)
    except ValueError:
        return None


def as_status(value: Any, what: str) -> ErrorStatus:
    """The ErrorStatus a call returned; anything else breaks the HAL signature."""
    status = enum_member(ErrorStatus, value)
    if status is not None:
        return status
    raise MalformedResultViolation(f"{what} returned status {value!r}, not an ErrorStatus",
                                   key=f"{what}: status")


def unpack(result: Any, count: int, what: str) -> tuple:
    """The tuple a call returned, checked to have ``count`` members."""
    if not isinstance(result, tuple) or len(result) != count:
        raise MalformedResultViolation(
            f"{what} returned {result!r}, expected a tuple of {count}", key=f"{what}: arity")
    return result


def check_supported_list(status: ErrorStatus, supported: Any, model: Model) -> None:
    if status != ErrorStatus.NONE:
        return
    expected = len(model.main.operations)
    if not isinstance(supported, (list, tuple)) or len(supported) != expected:
        raise MalformedResultViolation(
            f"getSupportedOperations_1_3 returned NONE with {supported!r}, expected one bool per "
            f"operation of the main subgraph ({expected})", key="supported list length")


def check_present(status: ErrorStatus, obj: Any, what: str, name: str) -> None:
    if status == ErrorStatus.NONE and obj is None:
        raise MalformedResultViolation(f"{what} returned NONE without {name}", key=f"{what}: {name}")


# --- callbacks ----------------------------------------------------------------------------

def check_notified_once(callback: Any, what: str) -> None:
    """notify_1_3 must be called exactly once (checked after a bounded wait)."""
    count = callback.notify_count
    if count != 1:
        raise CallbackNotifyViolation(f"{what}: the callback was notified {count} times, expected once",
                                      key=f"{what}: notified {min(count, 2)}")


def check_launch_matches_callback(launch: ErrorStatus, notified: ErrorStatus, what: str) -> None:
    """A launch that fails must give the callback the status it returns."""
    if launch != ErrorStatus.NONE and notified != launch:
        raise LaunchStatusViolation(
            f"{what} returned {launch.name} but notified the callback with {notified.name}",
            key=what)


def check_prepared_model_presence(status: ErrorStatus, prepared: Any) -> None:
    if status == ErrorStatus.NONE and prepared is None:
        raise CallbackResultViolation("prepare callback notified NONE without a prepared model",
                                      key="NONE without model")
    if status != ErrorStatus.NONE and prepared is not None:
        raise CallbackResultViolation(
            f"prepare callback notified {status.name} with a prepared model", key="error with model")


def check_fence_consistent(fence_failed: bool, status: ErrorStatus) -> None:
    if fence_failed and status == ErrorStatus.NONE:
        raise FenceViolation("executeFenced: the sync fence signalled an error but "
                             "getExecutionInfo reports NONE", key="fence error, status NONE")


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


# --- execution results --------------------------------------------------------------------

def main_output_operand(model: Model, index: int):
    """The main subgraph's operand behind request output ``index`` (None if there is none)."""
    main = model.main
    if index < len(main.outputIndexes) and 0 <= main.outputIndexes[index] < len(main.operands):
        return main.operands[main.outputIndexes[index]]
    return None


def _dims_compatible(declared: Sequence[int], reported: Sequence[int]) -> bool:
    """Reported dimensions agree with declared ones: unknown rank ([]) or unknown
    dimensions (0) accept anything."""
    if not declared:
        return True
    return len(declared) == len(reported) and all(d == 0 or d == r for d, r in zip(declared, reported))


def check_output_shapes(status: ErrorStatus, shapes: Any, request: Request, model: Model,
                        what: str) -> None:
    """One shape per request output, agreeing with the declared and requested dims."""
    if shapes is None or status not in (ErrorStatus.NONE, ErrorStatus.OUTPUT_INSUFFICIENT_SIZE):
        return
    if not isinstance(shapes, (list, tuple)) or len(shapes) != len(request.outputs):
        count = len(shapes) if isinstance(shapes, (list, tuple)) else shapes
        raise OutputShapesViolation(
            f"{what} returned {status.name} with {count} output shapes for "
            f"{len(request.outputs)} request outputs", key=f"{what}: count")
    for i, (shape, argument) in enumerate(zip(shapes, request.outputs)):
        if not isinstance(shape, OutputShape):
            raise MalformedResultViolation(f"{what}: output shape {i} is {shape!r}, not an OutputShape",
                                           key=f"{what}: shape type")
        operand = main_output_operand(model, i)
        if operand is None or operand.type in SCALAR_OPERAND_TYPES or argument.hasNoValue:
            continue
        for source, declared in (("model", operand.dimensions), ("request", argument.dimensions)):
            if not _dims_compatible(declared, shape.dimensions):
                raise OutputShapesViolation(
                    f"{what}: output {i} reported dimensions {list(shape.dimensions)}, "
                    f"incompatible with the {source}'s {list(declared)}", key=f"{what}: vs {source}")


def _needed_bytes(model: Model, index: int, dimensions: Sequence[int]) -> int | None:
    operand = main_output_operand(model, index)
    # Reported dimensions are actual ones: a 0 there is a zero-sized dimension.
    return None if operand is None else byte_size(operand.type, dimensions, unknown_dimension=0)


def check_sufficiency(status: ErrorStatus, shapes: Any, request: Request, model: Model,
                      what: str) -> None:
    """isSufficient must agree with the status and with the actual buffer sizes."""
    if shapes is None or status not in (ErrorStatus.NONE, ErrorStatus.OUTPUT_INSUFFICIENT_SIZE):
        return
    if status == ErrorStatus.NONE:
        for i, shape in enumerate(shapes):
            if not shape.isSufficient:
                raise SufficiencyViolation(
                    f"{what} returned NONE with output {i} marked insufficient", key=what)
        return
    too_short = []
    for i, (shape, argument) in enumerate(zip(shapes, request.outputs)):
        if argument.hasNoValue:
            continue
        needed = _needed_bytes(model, i, shape.dimensions)
        if needed is None:
            return   # an output of unknown element size: sizes cannot be judged
        is_short = needed > argument.location.length
        if not shape.isSufficient and not is_short:
            raise InsufficientSizeViolation(
                f"{what}: output {i} flagged insufficient, but its {argument.location.length}-byte "
                f"buffer holds the {needed} bytes of shape {list(shape.dimensions)}",
                key=f"{what}: flagged output fits")
        too_short.append(is_short)
    if not any(too_short):
        raise InsufficientSizeViolation(
            f"{what} returned OUTPUT_INSUFFICIENT_SIZE but every output buffer holds its "
            f"reported shape", key=f"{what}: nothing short")


def check_timing(status: ErrorStatus, timing: Any, measure: MeasureTiming, what: str) -> None:
    """UINT64_MAX unless measured and NONE; the device time is part of the driver time."""
    if not isinstance(timing, Timing):
        raise MalformedResultViolation(f"{what} returned timing {timing!r}, not a Timing",
                                       key=f"{what}: timing type")
    unmeasured = (timing.timeOnDevice == UINT64_MAX and timing.timeInDriver == UINT64_MAX)
    if measure != MeasureTiming.YES and not unmeasured:
        raise TimingViolation(f"{what} reported {timing} although timing was not requested",
                              key=f"{what}: not requested")
    if status != ErrorStatus.NONE and not unmeasured:
        raise TimingViolation(f"{what} reported {timing} with status {status.name}",
                              key=f"{what}: on error")
    if (timing.timeOnDevice != UINT64_MAX and timing.timeInDriver != UINT64_MAX
            and timing.timeInDriver < timing.timeOnDevice):
        raise TimingViolation(f"{what} reported timeInDriver {timing.timeInDriver} < "
                              f"timeOnDevice {timing.timeOnDevice}", key=f"{what}: driver < device")


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
                       request: Request, fenced_comparable: bool) -> None:
    """Two paths, one prepared model and request: same status, shapes and output bytes.

    ``fenced_comparable``: the request's outputs are fully specified, which executeFenced
    requires; otherwise a fenced path may rightly fail where the others succeed."""
    paths = f"{first.path.name} vs {second.path.name}"
    if first.status in TIME_DEPENDENT_STATUSES or second.status in TIME_DEPENDENT_STATUSES:
        return
    fenced = ExecutionPath.FENCED in (first.path, second.path)
    if first.status != second.status:
        if fenced and not fenced_comparable:
            return
        raise NondeterminismViolation(
            f"{paths}: status {first.status.name} vs {second.status.name}", key=f"{paths}: status")
    if first.status != ErrorStatus.NONE:
        return
    if first.shapes is not None and second.shapes is not None:
        for i, (a, b) in enumerate(zip(first.shapes, second.shapes)):
            if list(a.dimensions) != list(b.dimensions) or a.isSufficient != b.isSufficient:
                raise NondeterminismViolation(
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
            raise NondeterminismViolation(
                f"{paths}: output {i} bytes differ (first difference at byte {differ}, "
                f"{len(a)} bytes)", key=f"{paths}: output bytes")
