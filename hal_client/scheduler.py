"""Run short actions after a delay on one shared background thread.

The fenced path signals its wait fences a few milliseconds after the call; a threading.Timer
per execution would cost a thread start each time, far too slow at thousands of inputs a second.
"""
from __future__ import annotations

import heapq
import itertools
import threading
import time
from typing import Callable


class Scheduler:
    THREAD_NAME = "hal-scheduler"

    def __init__(self) -> None:
        self._queue: list[tuple[float, int, Callable[[], object]]] = []
        self._order = itertools.count()   # ties keep submission order; actions never compare
        self._wakeup = threading.Condition()
        self._thread: threading.Thread | None = None

    def call_later(self, delay_s: float, action: Callable[[], object]) -> None:
        with self._wakeup:
            heapq.heappush(self._queue, (time.monotonic() + delay_s, next(self._order), action))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.THREAD_NAME, daemon=True)
                self._thread.start()
            self._wakeup.notify()

    def _run(self) -> None:
        while True:
            with self._wakeup:
                while not self._queue:
                    self._wakeup.wait()
                due, _, action = self._queue[0]
                delay = due - time.monotonic()
                if delay > 0:
                    self._wakeup.wait(delay)
                    continue
                heapq.heappop(self._queue)
            action()


SCHEDULER = Scheduler()
