"""The rules a driver's answers must keep whoever calls it, each a small function raising
its own OracleViolation. The fuzz harness and the conformance runner both judge by these.

Each rule has one AssertionError subclass, so a failing call says which rule it broke by
its type alone, and triage can group failures by it. A violation also carries a ``key``: a
short, stable description of the particular way the rule broke (which call, which field),
used in signatures; the message holds the details of this call.
"""
from __future__ import annotations

import enum
import traceback
from typing import Any, Sequence

from driver.hal import (UINT64_MAX, ErrorStatus, MeasureTiming, Model, Operand, OutputShape,
                        Request, Timing)
from driver.hal.dtypes import byte_size
from driver.hal.enums import SCALAR_OPERAND_TYPES, Constant


class OracleViolation(AssertionError):
    """A broken driver contract. ``rule`` names the contract (the class), ``key`` the way it
    broke; ``frames`` is where the driver was when it happened, when that is known;
    ``bucket``, where the oracle (or a driver's own check) knows more of where the failure
    lies than the rule and key say, a short stable text that triage adds to the failure's
    bucket (fuzz/triage.py, bucket_key): findings with other buckets are other bugs;
    ``divergence``, for a wrong answer whose first diverging operation was found, that
    operation and the difference as a JSON-able dict (fuzz/divergence.py, Divergence)."""

    rule = "oracle"

    def __init__(self, message: str, *, key: str = "",
                 frames: Sequence[traceback.FrameSummary] | None = None, bucket: str = "",
                 divergence: dict | None = None) -> None:
        super().__init__(f"[{self.rule}] {message}")
        self.key = key
        self.frames = list(frames) if frames is not None else None
        self.bucket = bucket
        self.divergence = divergence


class HalExceptionViolation(OracleViolation):
    """A HAL call raised instead of returning a status (or a driver thread died raising)."""
    rule = "exception-from-hal"


class HangViolation(OracleViolation):
    """A call or execution outlived its time limit."""
    rule = "hang"


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


class EarlyDeadlineViolation(OracleViolation):
    """An execution given no deadline reported one missed before the timeout in force (its
    loops', or a fenced execution's duration) had passed."""
    rule = "deadline-missed-early"


class TimingViolation(OracleViolation):
    """Timing reported when it must not be, a device time above the driver time, or a
    duration longer than the call the client timed."""
    rule = "timing"


# --- results of the right form ------------------------------------------------------------

def enum_member(enum_type: type[enum.IntEnum], value: Any) -> enum.IntEnum | None:
    """``value`` as a member of ``enum_type``, or None (bools are not numbers here)."""
    if type(value) is enum_type:
        return value        # the usual answer, for the price of a type test
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


def check_allocation(status: ErrorStatus, buffer: Any, token: Any) -> None:
    """IDevice.allocate gives a buffer and a positive uint32 token exactly when it succeeds."""
    allocated = buffer is not None and type(token) is int and 0 < token < 2 ** 32
    if (status == ErrorStatus.NONE) != allocated:
        raise MalformedResultViolation(
            f"IDevice.allocate returned {status.name} with buffer {buffer!r} and token {token!r}",
            key=f"IDevice.allocate: {status.name}")


def check_cache_file_counts(status: ErrorStatus, model_files: Any, data_files: Any) -> None:
    """getNumberOfCacheFilesNeeded asks for at most MAX_NUMBER_OF_CACHE_FILES of each kind."""
    limit = Constant.MAX_NUMBER_OF_CACHE_FILES
    if status == ErrorStatus.NONE and not all(type(n) is int and 0 <= n <= limit
                                              for n in (model_files, data_files)):
        raise MalformedResultViolation(
            f"getNumberOfCacheFilesNeeded returned {model_files!r} model and {data_files!r} "
            f"data files, expected 0 to {limit} of each", key="getNumberOfCacheFilesNeeded: counts")


# --- callbacks and fences -----------------------------------------------------------------

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


def check_fenced_failure_bare(status: ErrorStatus, fence: Any, callback: Any) -> None:
    """executeFenced that fails returns neither a sync fence nor a callback."""
    if status != ErrorStatus.NONE and (fence is not None or callback is not None):
        raise FenceViolation(f"executeFenced failed with {status.name} but returned a fence or "
                             f"a callback", key="error with fence or callback")


def check_fence_consistent(fence_failed: bool, status: ErrorStatus) -> None:
    if fence_failed and status == ErrorStatus.NONE:
        raise FenceViolation("executeFenced: the sync fence signalled an error but "
                             "getExecutionInfo reports NONE", key="fence error, status NONE")


# --- execution results --------------------------------------------------------------------

def main_output_operand(model: Model, index: int) -> Operand | None:
    """The main subgraph's operand behind request output ``index`` (None if there is none)."""
    main = model.main
    if index < len(main.outputIndexes) and 0 <= main.outputIndexes[index] < len(main.operands):
        return main.operands[main.outputIndexes[index]]
    return None


def output_producer(model: Model, index: int) -> str:
    """The type of the main subgraph's operation that writes request output ``index`` ("" if
    none does: a model input or constant passed through, or no such output)."""
    main = model.main
    if index >= len(main.outputIndexes):
        return ""
    operand = main.outputIndexes[index]
    writer = next((op for op in main.operations if operand in op.outputs), None)
    return getattr(writer.type, "name", str(writer.type)) if writer is not None else ""


def outputs_fully_specified(model: Model, request: Request) -> bool:
    """Every output's shape known before execution (from the model or the request), as
    executeFenced requires. A zero-sized output is declared with a 0 dimension, so it
    counts as unspecified."""
    for i, argument in enumerate(request.outputs):
        operand = main_output_operand(model, i)
        if operand is None:
            return False
        dims = argument.dimensions or operand.dimensions
        if operand.type not in SCALAR_OPERAND_TYPES and (not dims or 0 in dims):
            return False
    return True


def check_shapes_only_on_success(status: ErrorStatus, shapes: Any, what: str) -> None:
    """Output shapes are reported only with NONE or OUTPUT_INSUFFICIENT_SIZE."""
    if shapes and status not in (ErrorStatus.NONE, ErrorStatus.OUTPUT_INSUFFICIENT_SIZE):
        raise OutputShapesViolation(f"{what} returned output shapes with status {status.name}",
                                    key=f"{what}: on error")


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


#: How much longer than the client timed a call a reported duration may be: the two
#: clocks' reading granularity. A driver reporting nanoseconds where the HAL says
#: microseconds is off by a thousandfold.
TIMING_SLACK_US = 1000


MISSED_DEADLINE = frozenset({ErrorStatus.MISSED_DEADLINE_TRANSIENT, ErrorStatus.MISSED_DEADLINE_PERSISTENT})


def check_missed_deadline(status: ErrorStatus, timeout_ns: int | None, elapsed_ns: int, what: str) -> None:
    """A missed deadline without a deadline (``timeout_ns`` None when the execution had
    one: a driver may give up early on a deadline it cannot meet) only once ``timeout_ns``,
    the shortest timeout in force, has passed since the call."""
    if status in MISSED_DEADLINE and timeout_ns is not None and elapsed_ns // 1000 + TIMING_SLACK_US < timeout_ns // 1000:
        raise EarlyDeadlineViolation(
            f"{what} returned {status.name} after {elapsed_ns // 1000} us, with no deadline and a "
            f"timeout of {timeout_ns // 1000} us", key=f"{what}: {status.name} early")


def check_timing(status: ErrorStatus, timing: Any, measure: MeasureTiming, what: str,
                 elapsed_ns: int | None = None) -> None:
    """UINT64_MAX unless measured and NONE; the device time is part of the driver time;
    each duration (microseconds) within ``elapsed_ns``, the client's time from the call to
    its result, when given."""
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
    longest = max((t for t in (timing.timeOnDevice, timing.timeInDriver) if t != UINT64_MAX), default=None)
    if elapsed_ns is not None and longest is not None and longest > elapsed_ns // 1000 + TIMING_SLACK_US:
        raise TimingViolation(f"{what} reported {timing}: {longest} us, longer than the "
                              f"{elapsed_ns // 1000} us the call took", key=f"{what}: longer than the call")
