#!/usr/bin/env python3
"""Benchmark: the memory an execution holds, and how soon a heavy loop stops.

1. Peak RSS of one execution of a chain of 200 ADDs on 32 MiB TENSOR_FLOAT32 values
   (t = x; t = t + t, 200 times), in a fresh process (target: under 200 MB; values live
   only until their last reader, so about two values at a time plus the request's pools).
2. The time a WHILE whose condition never turns false takes to stop with a 1 ms loop
   timeout, when one iteration of its body is many heavy operations (ADDs on 32 MiB
   values): the loop deadline is checked after every operation, so it should stop after
   about one operation (target: under 100 ms plus one operation's time).
Best of several repeats for the timing, since this machine may be shared.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time

import numpy as np

from driver import SampleDriver
from driver.hal import (ErrorStatus, MeasureTiming, OperandType as T, OperationType as Op,
                        OptionalTimeoutDuration, OptionalTimePoint)
from hal_client.builder import ModelBuilder, make_request, out_like
from hal_client.examples import count_condition, prepared_on

ELEMENTS = 8 * 1024 * 1024          # float32: 32 MiB per value
MIB = 1024 * 1024


def add_chain_model(length: int):
    """main(x) = x doubled ``length`` times, one ADD per doubling."""
    mb = ModelBuilder()
    main = mb.main
    t = main.input(T.TENSOR_FLOAT32, [ELEMENTS])
    for _ in range(length):
        t = main.add(t, t)
    main.outputs(t)
    return mb.build()


def heavy_loop_model(operations: int):
    """while x >= 0: x = x + 1, after computing t = x + c (c: a 32 MiB constant) and
    doubling t ``operations - 1`` times. The loop's state is small, so that an execution
    is little more than its loop."""
    mb = ModelBuilder()
    cond = count_condition(mb, T.TENSOR_FLOAT32, 0, Op.GREATER_EQUAL)
    body = mb.subgraph()
    x = body.input(T.TENSOR_FLOAT32, [1])
    t = body.add(x, body.constant(T.TENSOR_FLOAT32, np.ones(ELEMENTS, np.float32)), [ELEMENTS])
    for _ in range(operations - 1):
        t = body.add(t, t)
    body.outputs(body.add(x, body.constant(T.TENSOR_FLOAT32, [1.0])))
    main = mb.main
    main.outputs(*main.while_(cond, body, [main.input(T.TENSOR_FLOAT32, [1])]))
    return mb.build()


def execute(prepared, io, loop_timeout_ns: int | None = None) -> ErrorStatus:
    status, _, _ = prepared.executeSynchronously_1_3(
        io.request, MeasureTiming.NO, OptionalTimePoint(), OptionalTimeoutDuration(loop_timeout_ns))
    return status


def chain_peak_rss(length: int) -> None:
    """Child process: prints 'before_kib peak_kib status' for one chain execution: the RSS
    before it and the peak during it (VmHWM, reset first so that building the model and
    the request does not count)."""
    prepared = prepared_on(SampleDriver(), add_chain_model(length))
    io = make_request([np.ones(ELEMENTS, np.float32)], [out_like(np.float32, [ELEMENTS])])
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")
    before = _status_kib("VmRSS")
    status = execute(prepared, io)
    print(before, _status_kib("VmHWM"), ErrorStatus(status).name)


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise LookupError(field)


def measure_chain(length: int) -> None:
    result = subprocess.run([sys.executable, __file__, "--chain-child", str(length)],
                            capture_output=True, text=True, check=True)
    before_kib, peak_kib, status = result.stdout.split()
    peak_mib = int(peak_kib) / 1024
    print(f"chain of {length} ADDs on 32 MiB values: status {status}, peak RSS "
          f"{peak_mib:.0f} MiB ({peak_mib / 32:.1f}x one value; {int(before_kib) / 1024:.0f} "
          f"MiB before the execution, with the request's pools) (target < 200 MB): "
          f"{'OK' if int(peak_kib) * 1024 < 200e6 else 'OVER TARGET'}")


def measure_loop_stop(operations: int, repeats: int) -> None:
    prepared = prepared_on(SampleDriver(), heavy_loop_model(operations))
    io = make_request([np.zeros(1, np.float32)], [out_like(np.float32, [1])])
    stops, statuses = [], set()
    for _ in range(repeats):
        start = time.perf_counter()
        statuses.add(ErrorStatus(execute(prepared, io, 1_000_000)).name)
        stops.append(time.perf_counter() - start)
    y = np.ones(ELEMENTS, np.float32)
    one_operation = min(_timed(lambda: np.add(y, y)) for _ in range(repeats))
    stop_ms, operation_ms = min(stops) * 1e3, one_operation * 1e3
    print(f"WHILE with a 1 ms loop timeout, body of {operations} ADDs on 32 MiB values: "
          f"status {'/'.join(sorted(statuses))}, stopped after {stop_ms:.1f} ms (best of "
          f"{repeats}; one ADD {operation_ms:.1f} ms; {stop_ms / operation_ms:.1f}x one ADD) "
          f"(target < 100 ms + one ADD): "
          f"{'OK' if stop_ms < 100 + operation_ms else 'OVER TARGET'}")


def _timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chain", type=int, default=200, help="ADDs in the chain")
    parser.add_argument("--body", type=int, default=100, help="ADDs in the loop body")
    parser.add_argument("-r", "--repeats", type=int, default=5)
    parser.add_argument("--chain-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.chain_child is not None:
        chain_peak_rss(args.chain_child)
        return 0
    measure_chain(args.chain)
    measure_loop_stop(args.body, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
