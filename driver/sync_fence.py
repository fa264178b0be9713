"""Sync fences: waitable, thread-safe objects that signal once (the HAL's sync_fence handle)."""
from __future__ import annotations

import enum
import threading
from typing import Callable


class FenceState(enum.IntEnum):
    ACTIVE = 0      # not signalled yet
    SIGNALED = 1    # signalled after success
    ERROR = 2       # signalled after a failure


class Latch:
    """Closed until ``open()`` (called once); ``wait(timeout)`` blocks until then and says
    whether it opened. A lock held until it opens: waiting is acquiring it and releasing
    it at once for the next waiter. A threading.Event costs six times as much to make, and
    a wait on it a lock of its own and a second wake-up of the waiting thread."""

    __slots__ = ("_closed",)

    def __init__(self) -> None:
        self._closed = threading.Lock()
        self._closed.acquire()

    def open(self) -> None:
        self._closed.release()

    def wait(self, timeout: float | None = None) -> bool:
        # A lock refuses a timeout past threading.TIMEOUT_MAX (about 292 years) with an
        # OverflowError; a longer one waits as long as that.
        if not self._closed.acquire(
                timeout=-1 if timeout is None else min(max(timeout, 0), threading.TIMEOUT_MAX)):
            return False
        self._closed.release()
        return True


class SyncFence:
    """A one-shot fence. ``wait(timeout)`` blocks until it is signalled or the timeout (in
    seconds) passes and returns the state then; ``when_signalled(callback)`` has the
    signalling thread call back instead, so that nothing waits."""

    __slots__ = ("_state", "_lock", "_signalled", "_callbacks")

    def __init__(self) -> None:
        self._state = FenceState.ACTIVE
        self._lock = threading.Lock()
        self._signalled = Latch()
        self._callbacks: list[Callable[[FenceState], None]] = []

    @classmethod
    def signaled(cls, state: FenceState = FenceState.SIGNALED) -> "SyncFence":
        fence = cls()
        fence.signal(state)
        return fence

    def signal(self, state: FenceState = FenceState.SIGNALED) -> bool:
        """Signal the fence; returns False if it was already signalled (the first wins)."""
        if state == FenceState.ACTIVE:
            raise ValueError("a fence is signalled with SIGNALED or ERROR")
        with self._lock:
            if self._state != FenceState.ACTIVE:
                return False
            self._state = state
            callbacks, self._callbacks = self._callbacks, []
        self._signalled.open()
        for callback in callbacks:
            callback(state)
        return True

    def when_signalled(self, callback: Callable[[FenceState], None]) -> None:
        """Call ``callback(state)`` once the fence has signalled: now if it has, else on
        the thread that signals it. Callbacks must be short and must not raise."""
        with self._lock:
            if self._state == FenceState.ACTIVE:
                self._callbacks.append(callback)
                return
        callback(self._state)

    def wait(self, timeout: float | None = None) -> FenceState:
        if self._state == FenceState.ACTIVE:
            self._signalled.wait(timeout)
        return self._state

    @property
    def state(self) -> FenceState:
        return self._state

    def __repr__(self) -> str:
        return f"SyncFence({self._state.name})"
