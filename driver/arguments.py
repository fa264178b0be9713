"""Validation of the scalar arguments of HAL calls: enums, deadlines, durations, tokens.
Each returns the checked value or raises ValidationError naming the argument."""
from __future__ import annotations

import time
from typing import Optional

from .errors import check
from .hal.enums import (Constant, ExecutionPreference, LoopTimeoutDurationNs, MeasureTiming,
                        Priority, UINT64_MAX)
from .hal.structs import OptionalTimeoutDuration, OptionalTimePoint
from .validation.common import INT32_MAX


def _enum_value(enum_type, value, name: str):
    check(isinstance(value, int) and not isinstance(value, bool)
          and value in enum_type._value2member_map_,
          "{} {!r} is not a valid {}", name, value, enum_type.__name__)
    return enum_type(value)


def measure_timing(value) -> MeasureTiming:
    return _enum_value(MeasureTiming, value, "measure")


def execution_preference(value) -> ExecutionPreference:
    return _enum_value(ExecutionPreference, value, "preference")


def priority(value) -> Priority:
    return _enum_value(Priority, value, "priority")


def _uint64(value, name: str) -> int:
    check(isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= UINT64_MAX,
          "{} {!r} is not a uint64", name, value)
    return value


def deadline(value) -> Optional[int]:
    """An OptionalTimePoint as an absolute time.monotonic_ns(), or None."""
    check(isinstance(value, OptionalTimePoint),
          "deadline must be an OptionalTimePoint, got {}", type(value).__name__)
    nanoseconds = value.nanosecondsSinceEpoch
    return None if nanoseconds is None else _uint64(nanoseconds, "deadline")


def deadline_passed(deadline_ns: Optional[int]) -> bool:
    return deadline_ns is not None and time.monotonic_ns() > deadline_ns


def duration(value, name: str) -> Optional[int]:
    check(isinstance(value, OptionalTimeoutDuration),
          "{} must be an OptionalTimeoutDuration, got {}", name, type(value).__name__)
    return None if value.nanoseconds is None else _uint64(value.nanoseconds, name)


def loop_timeout(value) -> int:
    """loopTimeoutDuration in ns: omitted means the default (2 s); it may not exceed 15 s."""
    nanoseconds = duration(value, "loopTimeoutDuration")
    if nanoseconds is None:
        return LoopTimeoutDurationNs.DEFAULT
    check(nanoseconds <= LoopTimeoutDurationNs.MAXIMUM, "loopTimeoutDuration {} "
          "ns exceeds the maximum of {} ns", nanoseconds, int(LoopTimeoutDurationNs.MAXIMUM))
    return nanoseconds


def cache_token(token) -> bytes:
    check(isinstance(token, (bytes, bytearray)) and len(token) == Constant.BYTE_SIZE_OF_CACHE_TOKEN,
          "token must be {} bytes", int(Constant.BYTE_SIZE_OF_CACHE_TOKEN))
    return bytes(token)


def cache_handles(handles, name: str) -> list[int]:
    """A list of cache handles: each what a hidl_handle of a cache file carries here, one
    file descriptor (a non-negative C int)."""
    check(isinstance(handles, (list, tuple)), "{} must be a list of handles", name)
    check(len(handles) <= Constant.MAX_NUMBER_OF_CACHE_FILES, "{} has {} "
          "handles, more than {}", name, len(handles), int(Constant.MAX_NUMBER_OF_CACHE_FILES))
    for i, handle in enumerate(handles):
        check(type(handle) is int and 0 <= handle <= INT32_MAX,
              "{}[{}]: {!r} is not a file descriptor", name, i, handle)
    return list(handles)


def implements(callback, method: str) -> bool:
    """Whether ``callback`` can be called back: a call without one has nobody to notify."""
    return callback is not None and callable(getattr(callback, method, None))


def check_type(value, expected: type, name: str):
    check(isinstance(value, expected),
          "{} must be a {}, got {}", name, expected.__name__, type(value).__name__)
    return value


def sync_fences(fences) -> list:
    from .sync_fence import SyncFence
    check(isinstance(fences, (list, tuple)), "waitFor must be a list of sync fences")
    for i, fence in enumerate(fences):
        check(isinstance(fence, SyncFence), "waitFor[{}] is not a sync fence", i)
    return list(fences)
