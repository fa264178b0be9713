"""The worker pool of asynchronous executions: every job runs, on a bounded number of
threads, and a job's exception reaches threading.excepthook without ending its thread."""
from __future__ import annotations

import threading
import time
import weakref

import pytest

from driver.executor.workers import Timer, WorkerPool

WAIT_S = 10.0


def test_every_job_runs_on_at_most_max_workers_threads():
    pool = WorkerPool(max_workers=3, thread_name_prefix="test-pool")
    release = threading.Event()
    finished = threading.Semaphore(0)
    done, names = [], set()
    lock = threading.Lock()

    def job(n: int) -> None:
        release.wait(WAIT_S)        # every thread busy: later jobs queue up
        with lock:
            done.append(n)
            names.add(threading.current_thread().name)
        finished.release()

    for n in range(20):
        pool.submit(lambda n=n: job(n))
    release.set()
    assert all(finished.acquire(timeout=WAIT_S) for _ in range(20))
    assert sorted(done) == list(range(20))
    assert 1 <= len(names) <= 3 and all(name.startswith("test-pool-") for name in names)


@pytest.mark.parametrize("runner", ["worker pool", "timer"])
def test_a_failing_job_reaches_the_excepthook_and_the_thread_goes_on(monkeypatch, runner):
    """The worker pool's jobs and the timer's actions alike."""
    reported = []
    monkeypatch.setattr(threading, "excepthook", lambda args: reported.append(args))
    after = threading.Event()

    def failing() -> None:
        raise KeyError("bug")

    if runner == "worker pool":
        pool, thread_name = WorkerPool(max_workers=1, thread_name_prefix="test-failing"), "test-failing-1"
        pool.submit(failing)
        pool.submit(after.set)
    else:
        timer, thread_name = Timer(thread_name="test-timer-failing"), "test-timer-failing"
        now = time.monotonic_ns()
        timer.call_at(now, failing)
        timer.call_at(now + 1, after.set)
    assert after.wait(WAIT_S), "the job after a failing one did not run"
    assert len(reported) == 1
    assert reported[0].exc_type is KeyError
    assert reported[0].thread.name == thread_name


def test_sequential_jobs_reuse_one_thread():
    pool = WorkerPool(max_workers=4, thread_name_prefix="test-reuse")
    names = []
    for _ in range(10):
        done = threading.Event()
        pool.submit(lambda: (names.append(threading.current_thread().name), done.set()))
        assert done.wait(WAIT_S)
    # A job submitted while the previous one's thread is still on its way back to the
    # queue may start a second thread; never one per job.
    assert len(set(names)) <= 2


def test_max_workers_must_be_positive():
    with pytest.raises(ValueError, match="max_workers"):
        WorkerPool(max_workers=0, thread_name_prefix="test-none")


def test_timer_runs_actions_in_time_order_on_one_thread():
    timer = Timer(thread_name="test-timer")
    done, names = [], set()
    finished = threading.Event()

    def action(label: str, last: bool = False):
        def run():
            done.append(label)
            names.add(threading.current_thread().name)
            if last:
                finished.set()
        return run

    # "soon" is due 100 ms after "now" if it is queued at once, and before "late" unless
    # queueing it takes 400 ms.
    start = time.monotonic_ns() + 200_000_000
    timer.call_at(start + 500_000_000, action("late", last=True))
    timer.call_at(start, action("now"))
    timer.call_later(0.3, action("soon"))
    assert finished.wait(WAIT_S)
    assert done == ["now", "soon", "late"]
    assert names == {"test-timer"}


@pytest.mark.parametrize("far_ns", [2**62, 2**63, 2**64 - 1, 10**30], ids=lambda n: f"{n:.3g}")
def test_timer_outlives_an_action_due_any_distance_ahead(far_ns):
    """A lock refuses a timeout past threading.TIMEOUT_MAX: a far action may not cost the
    timer its thread, and actions due sooner still run."""
    timer = Timer(thread_name="test-timer-far")
    far_ran, soon = threading.Event(), threading.Event()
    timer.call_at(far_ns, far_ran.set)
    time.sleep(0.05)        # the thread takes the far action as the next one due
    timer.call_later(0.01, soon.set)
    assert soon.wait(WAIT_S), "an action due soon did not run after one due far ahead"
    assert not far_ran.is_set()


def test_a_cancelled_action_is_neither_run_nor_held():
    timer = Timer(thread_name="test-timer-cancel")
    ran, later = [], threading.Event()

    class Action:
        def __call__(self) -> None:
            ran.append(self)

    cancels = []
    for _ in range(100):
        action = Action()
        kept = weakref.ref(action)
        cancels.append(timer.call_at(time.monotonic_ns() + 3600 * 10**9, action))
        del action
    due_now = Action()
    cancel_due_now = timer.call_at(time.monotonic_ns(), due_now)
    for cancel in cancels:
        cancel()
    cancel_due_now()            # it may have run already; cancelling it then does nothing
    assert kept() is None, "the timer still holds a cancelled action"
    timer.call_later(0.01, later.set)
    assert later.wait(WAIT_S)
    assert all(action is due_now for action in ran)
