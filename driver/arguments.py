"""Validation of the scalar arguments of HAL calls: enums, deadlines, durations, tokens.
Each returns the checked value or raises ValidationError naming the argument. These run on
every call, so messages are formatted only when a check fails."""
from __future__ import annotations

import time
from typing import Optional

from .errors import fail
from .hal.enums import (Constant, ExecutionPreference, LoopTimeoutDurationNs, MeasureTiming,
                        Priority, UINT64_MAX)
from .hal.structs import OptionalTimeoutDuration, OptionalTimePoint


def _enum_value(enum_type, value, name: str):
    # Callers mostly pass the enum member itself: accept it without a lookup.
    if type(value) is enum_type:
        return value
    if not (isinstance(value, int) and not isinstance(value, bool) and value in enum_type._value2member_map_):
        fail(f"{name} {value!r} is not a valid {enum_type.__name__}")
    return enum_type(value)


def measure_timing(value) -> MeasureTiming:
    return _enum_value(MeasureTiming, value, "measure")


def execution_preference(value) -> ExecutionPreference:
    return _enum_value(ExecutionPreference, value, "preference")


def priority(value) -> Priority:
    return _enum_value(Priority, value, "priority")


def _uint64(value, name: str) -> int:
    if not (isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= UINT64_MAX):
        fail(f"{name} {value!r} is not a uint64")
    return value


def deadline(value) -> Optional[int]:
    """An OptionalTimePoint as an absolute time.monotonic_ns(), or None."""
    if not isinstance(value, OptionalTimePoint):
        fail(f"deadline must be an OptionalTimePoint, got {type(value).__name__}")
    if value.nanosecondsSinceEpoch is None:
        return None
    return _uint64(value.nanosecondsSinceEpoch, "deadline")


def deadline_passed(deadline_ns: Optional[int]) -> bool:
    return deadline_ns is not None and time.monotonic_ns() > deadline_ns


def duration(value, name: str) -> Optional[int]:
    if not isinstance(value, OptionalTimeoutDuration):
        fail(f"{name} must be an OptionalTimeoutDuration, got {type(value).__name__}")
    if value.nanoseconds is None:
        return None
    return _uint64(value.nanoseconds, name)


def loop_timeout(value) -> int:
    """loopTimeoutDuration in ns: omitted means the default (2 s); it may not exceed 15 s."""
    nanoseconds = duration(value, "loopTimeoutDuration")
    if nanoseconds is None:
        return LoopTimeoutDurationNs.DEFAULT
    if nanoseconds > LoopTimeoutDurationNs.MAXIMUM:
        fail(f"loopTimeoutDuration {nanoseconds} ns exceeds the maximum of "
             f"{int(LoopTimeoutDurationNs.MAXIMUM)} ns")
    return nanoseconds


def cache_token(token) -> bytes:
    if not (isinstance(token, (bytes, bytearray)) and len(token) == Constant.BYTE_SIZE_OF_CACHE_TOKEN):
        fail(f"token must be {int(Constant.BYTE_SIZE_OF_CACHE_TOKEN)} bytes")
    return bytes(token)


def cache_handles(handles, name: str) -> list:
    if not isinstance(handles, (list, tuple)):
        fail(f"{name} must be a list of handles")
    if len(handles) > Constant.MAX_NUMBER_OF_CACHE_FILES:
        fail(f"{name} has {len(handles)} handles, more than {int(Constant.MAX_NUMBER_OF_CACHE_FILES)}")
    return list(handles)


def callback(value, method: str, name: str = "callback"):
    if value is None or not callable(getattr(value, method, None)):
        fail(f"{name} must implement {method}")
    return value


def check_type(value, expected: type, name: str):
    if not isinstance(value, expected):
        fail(f"{name} must be a {expected.__name__}, got {type(value).__name__}")
    return value


def sync_fences(fences) -> list:
    from .sync_fence import SyncFence
    if not isinstance(fences, (list, tuple)):
        fail("waitFor must be a list of sync fences")
    for i, fence in enumerate(fences):
        if not isinstance(fence, SyncFence):
            fail(f"waitFor[{i}] is not a sync fence")
    return list(fences)
