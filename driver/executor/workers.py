"""A small pool of daemon threads for asynchronous executions, and a timer that runs short
actions on one thread (the deadlines of fenced executions still waiting on their fences;
a client's delayed fence signals).

concurrent.futures.ThreadPoolExecutor costs about three times as much per job (a Future,
a work item and a semaphore per submit) for what an execution needs: run a callable on
another thread, soon. Here a job is a plain callable put on a SimpleQueue; threads start
on demand, up to a bound, and then live for the whole process.

A job's or an action's exception does not end its thread: it goes to threading.excepthook
(as it would for a thread of its own), so bugs stay visible, and the thread takes the next
one.
"""
from __future__ import annotations

import heapq
import itertools
import os
import queue
import threading
import time
from typing import Callable

Job = Callable[[], None]


class WorkerPool:
    """Runs submitted jobs on at most ``max_workers`` daemon threads, in submission order
    as threads become free."""

    def __init__(self, max_workers: int, thread_name_prefix: str) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}")
        self._max_workers = max_workers
        self._name_prefix = thread_name_prefix
        self._reset()
        # A forked child has none of the parent's threads: it starts its own on demand.
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._jobs: queue.SimpleQueue[Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0          # threads waiting for a job
        self._queued = 0        # jobs submitted and not yet taken

    def submit(self, job: Job) -> None:
        with self._lock:
            self._queued += 1
            start = self._queued > self._idle and self._threads < self._max_workers
            if start:
                self._threads += 1
                number = self._threads
        self._jobs.put(job)
        if start:
            threading.Thread(target=self._work, name=f"{self._name_prefix}-{number}",
                             daemon=True).start()

    def _work(self) -> None:
        jobs, lock = self._jobs, self._lock
        while True:
            with lock:
                self._idle += 1
            job = jobs.get()
            with lock:
                self._idle -= 1
                self._queued -= 1
            run_reported(job)
            del job             # nothing of it stays alive while the thread waits


#: The longest the timer sleeps at once. A lock or condition refuses a timeout past
#: threading.TIMEOUT_MAX (OverflowError), and a deadline may lie any distance ahead: the
#: thread wakes this often, sees nothing due, and sleeps again.
TIMER_MAX_SLEEP_NS = 3600 * 1_000_000_000


class Timer:
    """Runs short actions at given times (``time.monotonic_ns``, any integer: past, now or
    however far ahead) on one daemon thread, started on first use: the deadlines of any
    number of pending executions cost one thread in all. An action that raises goes to
    threading.excepthook and the thread goes on. ``call_at`` returns a function that
    cancels its action: the timer then holds no reference to it, so whatever the action
    would have used is freed as soon as its owner lets it go."""

    def __init__(self, thread_name: str) -> None:
        self.thread_name = thread_name
        self._reset()
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        # Entries are [when_ns, order, action]; a cancelled one has action None. Ties keep
        # their order, and actions are never compared.
        self._due: list[list] = []
        self._order = itertools.count()
        self._cancelled = 0
        self._wakeup = threading.Condition()
        self._started = False

    def call_at(self, when_ns: int, action: Job) -> Callable[[], None]:
        entry = [when_ns, next(self._order), action]
        with self._wakeup:
            heapq.heappush(self._due, entry)
            if not self._started:
                self._started = True
                threading.Thread(target=self._run, name=self.thread_name, daemon=True).start()
            self._wakeup.notify()
        return lambda: self._cancel(entry)

    def call_later(self, delay_s: float, action: Job) -> Callable[[], None]:
        return self.call_at(time.monotonic_ns() + int(delay_s * 1e9), action)

    def _cancel(self, entry: list) -> None:
        with self._wakeup:
            if entry[2] is None:
                return
            entry[2] = None
            self._cancelled += 1
            # Cancelled entries are dropped in bulk once they are the majority, so that
            # the heap stays as large as the pending actions, however far their times.
            if 2 * self._cancelled > len(self._due):
                self._due = [due for due in self._due if due[2] is not None]
                heapq.heapify(self._due)
                self._cancelled = 0

    def _run(self) -> None:
        while True:
            with self._wakeup:
                while not self._due:
                    self._wakeup.wait()
                wait_ns = self._due[0][0] - time.monotonic_ns()
                if wait_ns > 0:
                    self._wakeup.wait(min(wait_ns, TIMER_MAX_SLEEP_NS) / 1e9)
                    continue
                entry = heapq.heappop(self._due)
                action, entry[2] = entry[2], None
                if action is None:
                    self._cancelled -= 1
                    continue
            run_reported(action)
            del action


def run_reported(job: Job) -> None:
    """Run ``job``; an exception it raises goes to threading.excepthook (as it would for a
    thread of its own), and the caller goes on."""
    try:
        job()
    except BaseException as error:    # noqa: B036 - reported, then the next one
        threading.excepthook(threading.ExceptHookArgs(
            (type(error), error, error.__traceback__, threading.current_thread())))
