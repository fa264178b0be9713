"""A small pool of daemon threads for asynchronous executions, and a timer that runs short
actions on one thread (the deadlines of fenced executions still waiting on their fences;
a client's delayed fence signals).

concurrent.futures.ThreadPoolExecutor costs about three times as much per job (a Future,
a work item and a semaphore per submit) for what an execution needs: run a callable on
another thread, soon. Here a job is a plain callable put on a SimpleQueue; threads start
on demand, up to a bound, and then live for the whole process.

A job's exception does not end its thread: it goes to threading.excepthook (as it would
for a thread of its own), so bugs stay visible, and the thread takes the next job.
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
            try:
                job()
            except BaseException as error:    # noqa: B036 - reported, then the next job
                threading.excepthook(threading.ExceptHookArgs(
                    (type(error), error, error.__traceback__, threading.current_thread())))
            finally:
                del job


class Timer:
    """Runs short actions at given times (``time.monotonic_ns``) on one daemon thread,
    started on first use: the deadlines of any number of pending executions cost one
    thread in all. Actions must be short and must not raise."""

    def __init__(self, thread_name: str) -> None:
        self.thread_name = thread_name
        self._reset()
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._due: list[tuple[int, int, Job]] = []
        self._order = itertools.count()     # ties keep their order; actions never compare
        self._wakeup = threading.Condition()
        self._started = False

    def call_at(self, when_ns: int, action: Job) -> None:
        with self._wakeup:
            heapq.heappush(self._due, (when_ns, next(self._order), action))
            if not self._started:
                self._started = True
                threading.Thread(target=self._run, name=self.thread_name, daemon=True).start()
            self._wakeup.notify()

    def call_later(self, delay_s: float, action: Job) -> None:
        self.call_at(time.monotonic_ns() + int(delay_s * 1e9), action)

    def _run(self) -> None:
        while True:
            with self._wakeup:
                while not self._due:
                    self._wakeup.wait()
                wait_ns = self._due[0][0] - time.monotonic_ns()
                if wait_ns > 0:
                    self._wakeup.wait(wait_ns / 1e9)
                    continue
                _, _, action = heapq.heappop(self._due)
            action()
