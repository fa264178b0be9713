"""Sync fences: waitable, thread-safe objects that signal once (the HAL's sync_fence handle)."""
from __future__ import annotations

import enum
import threading


class FenceState(enum.IntEnum):
    ACTIVE = 0      # not signalled yet
    SIGNALED = 1    # signalled after success
    ERROR = 2       # signalled after a failure


class SyncFence:
    """A one-shot fence. ``wait(timeout)`` blocks until it is signalled or the timeout (in
    seconds) passes and returns the state then."""

    __slots__ = ("_event", "_state", "_lock")

    def __init__(self) -> None:
        self._event = threading.Event()
        self._state = FenceState.ACTIVE
        self._lock = threading.Lock()

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
        self._event.set()
        return True

    def wait(self, timeout: float | None = None) -> FenceState:
        self._event.wait(timeout)
        return self._state

    @property
    def state(self) -> FenceState:
        return self._state

    def __repr__(self) -> str:
        return f"SyncFence({self._state.name})"
