"""Hang detection for driver calls, cheap enough to wrap every HAL call of every input.

One daemon thread serves the whole process. Guarding a call only records a deadline for the
calling thread (no thread is created per input); the watchdog thread polls those deadlines.
When a guarded call outlives its deadline the watchdog captures the stack of the thread
that made it (where the driver is stuck) and raises :class:`HangInterrupt` inside that
thread, asynchronously. The guard turns it into a :class:`~hal_client.contract.HangViolation`,
an ordinary exception: atheris records the input as a crash, pytest reports a failure.

A call past its limit is only taken for a hang while its thread kept a CPU busy for a fair
share of that time (a driver spinning in a loop). A thread that was merely not scheduled
(a loaded machine, a stalled container) gets STALL_ALLOWANCE_S more before it is judged:
a driver blocked for good still gets caught, a slow moment of the host does not.

An asynchronous exception is only delivered when the stuck thread runs Python bytecode. A
thread blocked inside C code (a lock without timeout, a kernel wait) never sees it; after
a grace period the watchdog prints every thread's stack and aborts the process, which
libFuzzer records as a deadly signal.
"""
from __future__ import annotations

import ctypes
import os
import sys
import sysconfig
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable, TypeVar

from .contract import HangViolation

R = TypeVar("R")
_STDLIB = sysconfig.get_paths()["stdlib"]

#: How often the watchdog looks at the armed deadlines. Hang limits are >= 1 s above the
#: driver's own timeouts, so a coarse poll costs nothing in precision that matters.
POLL_INTERVAL_S = 0.05
#: After the interrupt was sent, how long to wait for the stuck thread to take it before
#: giving up on the process.
ABORT_GRACE_S = 5.0
#: Share of the elapsed time spent on a CPU for an overrun to count as a hang at once (a
#: spinning driver uses far more, a descheduled thread far less).
BUSY_SHARE = 0.2
#: How much longer an overrun that was not busy is tolerated.
STALL_ALLOWANCE_S = 10.0


class HangInterrupt(BaseException):
    """Raised inside a thread stuck in a guarded call. A BaseException so that a driver's
    ``except Exception`` cannot swallow it."""


class Budget:
    """The time limit of one call or wait, judged as the module docstring says. The CPU time
    that counts is the calling thread's (``thread_id``) for a call the watchdog guards, the
    whole process's for a wait on work done by threads the harness does not know.

    Nothing is measured when the budget is made: ``exhausted()`` is called periodically
    (by the watchdog, or by the waiting loop), and its first call takes the CPU reading the
    later ones compare with. Calls shorter than one period cost nothing."""

    __slots__ = ("limit_s", "stall_allowance_s", "thread_id", "started", "cpu_mark")

    def __init__(self, limit_s: float, stall_allowance_s: float = STALL_ALLOWANCE_S,
                 thread_id: int | None = None) -> None:
        self.limit_s = limit_s
        self.stall_allowance_s = stall_allowance_s
        self.thread_id = thread_id
        self.started = time.monotonic()
        self.cpu_mark: tuple[float, float] | None = None    # (time.monotonic(), CPU seconds)

    def _cpu_now(self) -> float:
        clock = (time.CLOCK_PROCESS_CPUTIME_ID if self.thread_id is None
                 else time.pthread_getcpuclockid(self.thread_id))
        return time.clock_gettime(clock)

    def exhausted(self) -> bool:
        now = time.monotonic()
        if self.cpu_mark is None:
            self.cpu_mark = (now, self._cpu_now())
        elapsed = now - self.started
        if elapsed <= self.limit_s:
            return False
        marked_at, marked_cpu = self.cpu_mark
        busy = self._cpu_now() - marked_cpu >= BUSY_SHARE * (now - marked_at)
        return busy or elapsed > self.limit_s + self.stall_allowance_s

    def describe(self) -> str:
        now = time.monotonic()
        text = f"{now - self.started:.2f} s"
        if self.cpu_mark is not None and now > self.cpu_mark[0]:
            share = (self._cpu_now() - self.cpu_mark[1]) / (now - self.cpu_mark[0])
            text += f", {100 * share:.0f} % of it on a CPU"
        return text


@dataclass
class _Guard:
    thread_id: int
    budget: Budget
    what: str
    fired_at: float | None = None          # time.monotonic() of the interrupt
    report: str = ""                       # elapsed and CPU time then
    stack: list[traceback.FrameSummary] = field(default_factory=list)


def _set_async_exception(thread_id: int, exception: type[BaseException] | None) -> int:
    return ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exception) if exception else None)


def _below_guard(stack: list[traceback.FrameSummary]) -> list[traceback.FrameSummary]:
    """The part of a stack inside the guarded call (what the caller did to get there is
    known and only hides where the callee is stuck)."""
    for depth in range(len(stack) - 1, -1, -1):
        if stack[depth].filename == __file__ and stack[depth].name == "call":
            return stack[depth + 1:]
    return stack


def is_idle(stack: list[traceback.FrameSummary]) -> bool:
    """A thread parked in the standard library (a pool worker waiting for work)."""
    return not stack or stack[-1].filename.startswith(_STDLIB)


def thread_stacks(exclude: tuple[int, ...] = ()) -> dict[int, list[traceback.FrameSummary]]:
    """The current stack of every thread but the excluded ones, innermost frame last."""
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    return {tid: traceback.extract_stack(frame)
            for tid, frame in sys._current_frames().items()
            if tid not in exclude and names.get(tid) != Watchdog.THREAD_NAME}


def format_stacks(stacks: dict[int, list[traceback.FrameSummary]]) -> str:
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    return "\n".join(f"thread {names.get(tid, tid)}:\n" + "".join(traceback.format_list(stack))
                     for tid, stack in stacks.items())


class Watchdog:
    """Bounds the duration of calls made by any thread; see the module docstring."""

    THREAD_NAME = "hang-watchdog"

    def __init__(self, poll_interval_s: float = POLL_INTERVAL_S, abort_grace_s: float = ABORT_GRACE_S,
                 stall_allowance_s: float = STALL_ALLOWANCE_S) -> None:
        self._poll_interval_s = poll_interval_s
        self._abort_grace_s = abort_grace_s
        self._stall_allowance_s = stall_allowance_s
        self._guards: dict[int, _Guard] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        #: Called (with the report) just before the watchdog aborts the process.
        self.before_abort: Callable[[str], None] | None = None

    def call(self, limit_s: float, what: str, function: Callable[..., R], *args) -> R:
        """``function(*args)``, raising HangViolation if it runs longer than ``limit_s``."""
        thread_id = threading.get_ident()
        guard = _Guard(thread_id, Budget(limit_s, self._stall_allowance_s, thread_id), what)
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self.THREAD_NAME, daemon=True)
            self._thread.start()
        try:
            with self._lock:
                self._guards[thread_id] = guard
            try:
                return function(*args)
            finally:
                self._disarm(guard)
        except HangInterrupt:
            self._forget(guard)
            if guard.fired_at is None:   # not ours: someone else's interrupt, pass it on
                raise
            raise HangViolation(
                f"{what} overran its {limit_s:.2f} s limit (interrupted after {guard.report}); "
                f"stuck at:\n{''.join(traceback.format_list(guard.stack))}",
                key=what, frames=guard.stack) from None

    def _disarm(self, guard: _Guard) -> None:
        with self._lock:
            self._forget_locked(guard)
            if guard.fired_at is not None:
                # Withdraw an interrupt that was not delivered yet, so that it cannot hit
                # the harness after the call returned; the call did overrun, so report it.
                _set_async_exception(guard.thread_id, None)
                raise HangInterrupt

    def _forget(self, guard: _Guard) -> None:
        # The interrupt can land anywhere in _disarm, even before it took the lock.
        with self._lock:
            self._forget_locked(guard)

    def _forget_locked(self, guard: _Guard) -> None:
        if self._guards.get(guard.thread_id) is guard:
            del self._guards[guard.thread_id]

    def _run(self) -> None:
        while True:
            time.sleep(self._poll_interval_s)
            now = time.monotonic()
            with self._lock:
                for guard in self._guards.values():
                    if guard.fired_at is None and guard.budget.exhausted():
                        self._interrupt(guard, now)
                stuck = [g for g in self._guards.values()
                         if g.fired_at is not None and now > g.fired_at + self._abort_grace_s]
            if stuck:
                self._abort(stuck[0])

    @staticmethod
    def _interrupt(guard: _Guard, now: float) -> None:
        frame = sys._current_frames().get(guard.thread_id)
        guard.stack = _below_guard(traceback.extract_stack(frame)) if frame is not None else []
        guard.fired_at = now
        guard.report = guard.budget.describe()
        _set_async_exception(guard.thread_id, HangInterrupt)

    def _abort(self, guard: _Guard) -> None:
        report = (f"hang: {guard.what} exceeded its limit of {guard.budget.limit_s:.1f} s and does not "
                  f"respond to interruption (blocked outside Python); stacks:\n"
                  + format_stacks(thread_stacks()))
        print(report, file=sys.stderr, flush=True)
        if self.before_abort is not None:
            self.before_abort(report)
        os.abort()


#: The process-wide watchdog used by the harness.
WATCHDOG = Watchdog()
