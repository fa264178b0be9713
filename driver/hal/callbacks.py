"""Callback objects of the HAL's asynchronous calls, ready to use by clients and tests.

IPreparedModelCallback.notify_1_3(status, preparedModel) and
IExecutionCallback.notify_1_3(status, outputShapes, timing): a driver calls notify_1_3
exactly once. These implementations record every call (so harnesses can check that
contract) and let the caller ``wait()`` for the first one.
"""
from __future__ import annotations

import threading
from typing import Any

from ..sync_fence import Latch
from .enums import ErrorStatus
from .structs import NO_TIMING, OutputShape, Timing


class _Callback:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._notified = Latch()        # opened by the first notification
        self.calls: list[tuple] = []

    def _record(self, status: Any, *results: Any) -> None:
        # A member is recorded as it is: ErrorStatus(member) costs an enum lookup.
        call = (status if type(status) is ErrorStatus else ErrorStatus(status), *results)
        with self._lock:
            self.calls.append(call)
            first = len(self.calls) == 1
        if first:
            self._notified.open()

    @property
    def notify_count(self) -> int:
        return len(self.calls)

    def wait_for_notify(self, timeout: float | None = None) -> bool:
        """Block until notify_1_3 was called (True) or the timeout passed (False)."""
        return bool(self.calls) or self._notified.wait(timeout)   # (appended before it opens)


class PreparedModelCallback(_Callback):
    """IPreparedModelCallback."""

    def notify(self, status: ErrorStatus, preparedModel: Any) -> None:  # 1.0 form
        self._record(status, preparedModel)

    def notify_1_2(self, status: ErrorStatus, preparedModel: Any) -> None:
        self._record(status, preparedModel)

    def notify_1_3(self, status: ErrorStatus, preparedModel: Any) -> None:
        self._record(status, preparedModel)

    def wait(self, timeout: float | None = None) -> tuple[ErrorStatus, Any]:
        """(status, preparedModel) of the first notification."""
        if not self.wait_for_notify(timeout):
            raise TimeoutError("IPreparedModelCallback.notify_1_3 was not called in time")
        return self.calls[0]


class ExecutionCallback(_Callback):
    """IExecutionCallback."""

    def notify(self, status: ErrorStatus) -> None:  # 1.0 form
        self._record(status, [], NO_TIMING)

    def notify_1_2(self, status: ErrorStatus, outputShapes: list[OutputShape], timing: Timing) -> None:
        self._record(status, outputShapes, timing)

    def notify_1_3(self, status: ErrorStatus, outputShapes: list[OutputShape], timing: Timing) -> None:
        self._record(status, outputShapes, timing)

    def wait(self, timeout: float | None = None) -> tuple[ErrorStatus, list[OutputShape], Timing]:
        """(status, outputShapes, timing) of the first notification."""
        if not self.wait_for_notify(timeout):
            raise TimeoutError("IExecutionCallback.notify_1_3 was not called in time")
        return self.calls[0]
