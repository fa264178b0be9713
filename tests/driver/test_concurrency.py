"""Many executions at once on one prepared model, on every path, and several prepared models
alive together: each execution sees only its own request."""
from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from driver.device import SampleDriver
from driver.hal.callbacks import ExecutionCallback
from driver.hal.enums import ErrorStatus, MeasureTiming
from driver.hal.structs import OptionalTimePoint, OptionalTimeoutDuration
from hal_client.builder import make_request, out_like
from tests.driver.execution import ALL_PATHS, Path, execute, prepare
from tests.models import (fibonacci_fc_model, fibonacci_fc_reference, if_add_sub_model, mkn_model,
                          mkn_reference)

F32, I32 = np.float32, np.int32
THREADS = 8
RUNS_PER_THREAD = 6


def test_concurrent_executions_on_one_prepared_model():
    prepared = prepare(mkn_model())

    def worker(seed: int) -> list[str]:
        rng = random.Random(seed)
        burst = None
        problems = []
        for run in range(RUNS_PER_THREAD):
            path = rng.choice(ALL_PATHS)
            limit = rng.randrange(0, 25)
            a0 = np.array([seed, -run], F32)
            b0 = np.array([run * 0.5, seed * 2], F32)
            step = np.array([0.25, seed + 1], F32)
            io = make_request([a0, b0, np.array([limit], I32), step],
                              [out_like(F32, [2]), out_like(F32, [2])])
            if path is Path.BURST and burst is None:
                burst = prepared.configureExecutionBurst(None)[1]
            outcome = execute(prepared, io.request, path, burst=burst)
            expected_a, expected_b = mkn_reference(a0, b0, limit, step)
            if outcome.status != ErrorStatus.NONE:
                problems.append(f"seed {seed} run {run} {path.value}: {outcome.status.name}")
            elif not (np.array_equal(io.output(0, [2]), expected_a)
                      and np.array_equal(io.output(1, [2]), expected_b)):
                problems.append(f"seed {seed} run {run} {path.value}: wrong result")
        return problems

    with ThreadPoolExecutor(THREADS) as pool:
        problems = sum(pool.map(worker, range(THREADS)), [])
    assert problems == []


def test_many_async_executions_in_flight():
    """More asynchronous executions than any worker pool: all complete, each correctly."""
    prepared = prepare(fibonacci_fc_model())
    launched = []
    for n in range(24):
        io = make_request([np.array([n], I32)], [out_like(F32, [1, 2])])
        callback = ExecutionCallback()
        status = prepared.execute_1_3(io.request, MeasureTiming.NO, OptionalTimePoint(),
                                      OptionalTimeoutDuration(), callback)
        assert status == ErrorStatus.NONE
        launched.append((n, io, callback))
    for n, io, callback in launched:
        status, _shapes, _timing = callback.wait(30)
        assert status == ErrorStatus.NONE
        np.testing.assert_array_equal(io.output(0, [1, 2]), fibonacci_fc_reference(n))
        assert callback.notify_count == 1


def test_several_prepared_models_alive_at_once():
    device = SampleDriver()
    fib = prepare(fibonacci_fc_model(), device)
    fib_again = prepare(fibonacci_fc_model(), device)
    choose = prepare(if_add_sub_model(), device)
    mkn = prepare(mkn_model(), device)
    a, b = np.array([1, 2, 3], F32), np.array([10, 20, 30], F32)

    def check_fib(prepared, n, path):
        io = make_request([np.array([n], I32)], [out_like(F32, [1, 2])])
        assert execute(prepared, io.request, path).status == ErrorStatus.NONE
        np.testing.assert_array_equal(io.output(0, [1, 2]), fibonacci_fc_reference(n))

    def check_if(condition, path):
        io = make_request([np.array([condition]), a, b], [out_like(F32, [3])])
        assert execute(choose, io.request, path).status == ErrorStatus.NONE
        np.testing.assert_array_equal(io.output(0, [3]), a + b if condition else a - b)

    def check_mkn(limit, path):
        a0, b0, step = np.array([1, 1], F32), np.array([0, 0], F32), np.array([1, 2], F32)
        io = make_request([a0, b0, np.array([limit], I32), step], [out_like(F32, [2]), out_like(F32, [2])])
        assert execute(mkn, io.request, path).status == ErrorStatus.NONE
        np.testing.assert_array_equal(io.output(1, [2]), mkn_reference(a0, b0, limit, step)[1])

    jobs = []
    for k, path in enumerate(ALL_PATHS * 3):
        jobs += [(check_fib, fib, k + 3, path), (check_fib, fib_again, k + 5, path),
                 (check_if, k % 2 == 0, path), (check_mkn, k, path)]
    random.Random(1).shuffle(jobs)
    with ThreadPoolExecutor(6) as pool:
        for future in [pool.submit(job, *args) for job, *args in jobs]:
            future.result()
    # Dropping one prepared model leaves the others working.
    del fib
    check_fib(fib_again, 7, Path.SYNC)
