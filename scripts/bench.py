#!/usr/bin/env python3
"""Benchmark: the per-iteration cost of a WHILE loop through the driver.

Counts an int32 [1] counter from 0 to N (default 10,000) with the counter_loop_model
(WHILE(i < n) { i = i + 1 }) through executeSynchronously_1_3, and the same numpy
operations (np.less, np.add on int32 [1] arrays) in a plain Python loop; prints both
per-iteration costs and their ratio (target: <= 3x). Best of several repeats, since this
machine may be shared.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from driver import SampleDriver
from driver.hal import ErrorStatus, MeasureTiming, OptionalTimeoutDuration, OptionalTimePoint
from hal_client.examples import counter_loop_model, int32_request, prepared_on


def driver_loop_seconds(prepared, iterations: int) -> float:
    io = int32_request([np.array([0], np.int32), np.array([iterations], np.int32)], [[1]])
    start = time.perf_counter()
    status, shapes, _ = prepared.executeSynchronously_1_3(
        io.request, MeasureTiming.NO, OptionalTimePoint(), OptionalTimeoutDuration(15_000_000_000))
    elapsed = time.perf_counter() - start
    result = int(io.output(0, [1])[0])
    assert status == ErrorStatus.NONE and result == iterations, (status, result)
    return elapsed


def python_loop_seconds(iterations: int) -> float:
    i = np.array([0], np.int32)
    n = np.array([iterations], np.int32)
    one = np.array([1], np.int32)
    start = time.perf_counter()
    while np.less(i, n)[0]:
        i = np.add(i, one)
    elapsed = time.perf_counter() - start
    assert int(i[0]) == iterations
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--iterations", type=int, default=10_000)
    parser.add_argument("-r", "--repeats", type=int, default=7)
    args = parser.parse_args()

    prepared = prepared_on(SampleDriver(), counter_loop_model())
    driver_loop_seconds(prepared, 100)              # warm up
    python_loop_seconds(100)
    driver_runs = [driver_loop_seconds(prepared, args.iterations) for _ in range(args.repeats)]
    python_runs = [python_loop_seconds(args.iterations) for _ in range(args.repeats)]

    per_iter = lambda runs: min(runs) / args.iterations * 1e6  # noqa: E731
    driver_us, python_us = per_iter(driver_runs), per_iter(python_runs)
    print(f"WHILE loop through the driver: {driver_us:.3f} us/iteration "
          f"(best of {args.repeats}; median {statistics.median(driver_runs) / args.iterations * 1e6:.3f})")
    print(f"plain Python loop, same numpy ops: {python_us:.3f} us/iteration "
          f"(median {statistics.median(python_runs) / args.iterations * 1e6:.3f})")
    ratio = driver_us / python_us
    print(f"ratio: {ratio:.2f}x (target <= 3x): {'OK' if ratio <= 3 else 'OVER TARGET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
