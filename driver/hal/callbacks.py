"""Callback objects of the HAL's asynchronous calls, ready to use by clients and tests.

IPreparedModelCallback.notify_1_3(status, preparedModel) and
IExecutionCallback.notify_1_3(status, outputShapes, timing): a driver calls notify_1_3
exactly once. These implementations record every call (so harnesses can check that
contract) and let the caller ``wait()`` for the first one.
"""
from __future__ import annotations

import threading
from typing import Any

from .enums import ErrorStatus
from .structs import NO_TIMING, OutputShape, Timing


class _Callback:
    def __init__(self) -> None:
        self._done = threading.Event()
        self._lock = threading.Lock()
        self.calls: list[tuple] = []

    def _record(self, *args: Any) -> None:
        with self._lock:
            self.calls.append(args)
        self._done.set()

    @property
    def notify_count(self) -> int:
        return len(self.calls)

    def wait_for_notify(self, timeout: float | None = None) -> bool:
        """Block until notify_1_3 was called (True) or the timeout passed (False)."""
        return self._done.wait(timeout)


class PreparedModelCallback(_Callback):
    """IPreparedModelCallback."""

    def notify(self, status: ErrorStatus, preparedModel: Any) -> None:  # 1.0 form
        self._record(ErrorStatus(status), preparedModel)

    def notify_1_2(self, status: ErrorStatus, preparedModel: Any) -> None:
        self._record(ErrorStatus(status), preparedModel)

    def notify_1_3(self, status: ErrorStatus, preparedModel: Any) -> None:
        self._record(ErrorStatus(status), preparedModel)

    def wait(self, timeout: float | None = None) -> tuple[ErrorStatus, Any]:
        """(status, preparedModel) of the first notification."""
        if not self.wait_for_notify(timeout):
            raise TimeoutError("IPreparedModelCallback.notify_1_3 was not called in time")
        return self.calls[0]


class ExecutionCallback(_Callback):
    """IExecutionCallback."""

    def notify(self, status: ErrorStatus) -> None:  # 1.0 form
        self._record(ErrorStatus(status), [], NO_TIMING)

    def notify_1_2(self, status: ErrorStatus, outputShapes: list[OutputShape], timing: Timing) -> None:
        self._record(ErrorStatus(status), outputShapes, timing)

    def notify_1_3(self, status: ErrorStatus, outputShapes: list[OutputShape], timing: Timing) -> None:
        self._record(ErrorStatus(status), outputShapes, timing)

    def wait(self, timeout: float | None = None) -> tuple[ErrorStatus, list[OutputShape], Timing]:
        """(status, outputShapes, timing) of the first notification."""
        if not self.wait_for_notify(timeout):
            raise TimeoutError("IExecutionCallback.notify_1_3 was not called in time")
        return self.calls[0]
