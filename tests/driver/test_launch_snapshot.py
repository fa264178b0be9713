"""What an execution launched on another thread holds: its own copy of the request, taken
at the call (HIDL copies it), and no thread of its own while it waits on fences."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from hal_client.examples import counter_loop_model
from driver.hal import (DataLocation, ErrorStatus, ExecutionCallback, MeasureTiming, MemoryPool,
                        OptionalTimeoutDuration, OptionalTimePoint, Request, RequestArgument)
from driver.hal.enums import LoopTimeoutDurationNs
from driver.memory import Memory
from driver.sync_fence import FenceState, SyncFence
from tests.driver.execution import prepare

#: Iterations of the counter loop: long enough that the caller's changes land while the
#: execution still runs.
LOOP_COUNT = 3000
#: Iterations of the counter loop where nothing happens meanwhile.
SHORT_LOOP_COUNT = 10


@pytest.fixture(scope="module")
def prepared():
    return prepare(counter_loop_model())


def counter_request(limit: int = LOOP_COUNT) -> tuple[Request, Memory, Memory]:
    """start 0 and ``limit`` in an input pool; the result in an output pool."""
    inputs = Memory.from_bytes(np.array([0, limit], np.int32).tobytes())
    outputs = Memory.create(4)
    request = Request(inputs=[RequestArgument(location=DataLocation(0, 0, 4)),
                              RequestArgument(location=DataLocation(0, 4, 4))],
                      outputs=[RequestArgument(location=DataLocation(1, 0, 4))],
                      pools=[MemoryPool(hidlMemory=inputs), MemoryPool(hidlMemory=outputs)])
    return request, inputs, outputs


def spoil(request: Request, inputs: Memory) -> None:
    """What a caller may do to its request once the call has returned."""
    request.inputs[1].location.offset = 0           # the limit now reads as 0
    request.inputs[0].dimensions = [7]
    request.outputs[0].location.length = 1
    request.pools[0] = MemoryPool(hidlMemory=Memory.create(8))
    request.inputs.append(RequestArgument(hasNoValue=True))
    inputs.close()


def result_of(outputs: Memory) -> int:
    return int(np.frombuffer(outputs.read(0, 4), np.int32)[0])


def test_async_execution_runs_the_request_as_it_was_at_the_call(prepared):
    for _ in range(20):
        request, inputs, outputs = counter_request()
        callback = ExecutionCallback()
        assert prepared.execute_1_3(request, MeasureTiming.NO, OptionalTimePoint(),
                                    OptionalTimeoutDuration(), callback) == ErrorStatus.NONE
        spoil(request, inputs)
        status, shapes, _ = callback.wait()
        assert status == ErrorStatus.NONE
        assert [shape.dimensions for shape in shapes] == [[1]]
        assert result_of(outputs) == LOOP_COUNT


def test_fenced_execution_runs_the_request_as_it_was_at_the_call(prepared):
    request, inputs, outputs = counter_request()
    fence = SyncFence()
    status, done, info = prepared.executeFenced(request, [fence], MeasureTiming.NO,
                                                OptionalTimePoint(), OptionalTimeoutDuration(),
                                                OptionalTimeoutDuration())
    assert status == ErrorStatus.NONE
    spoil(request, inputs)
    fence.signal()
    assert done.wait(10) == FenceState.SIGNALED
    assert info.getExecutionInfo()[0] == ErrorStatus.NONE
    assert result_of(outputs) == LOOP_COUNT


def test_pending_fenced_executions_hold_no_thread(prepared):
    """Short loops with the longest loop timeout: the 500 executions then share the worker
    pool's threads, and each of them must finish however slow or loaded the machine."""
    threads_before = threading.active_count()
    fences, launches = [], []
    for _ in range(500):
        request, _inputs, outputs = counter_request(SHORT_LOOP_COUNT)
        fence = SyncFence()
        status, done, info = prepared.executeFenced(
            request, [fence], MeasureTiming.NO, OptionalTimePoint(),
            OptionalTimeoutDuration(LoopTimeoutDurationNs.MAXIMUM), OptionalTimeoutDuration())
        assert status == ErrorStatus.NONE
        fences.append(fence)
        launches.append((done, info, outputs))
    # At most the worker pool's threads may have started since (none are needed yet).
    assert threading.active_count() - threads_before <= 1
    assert all(done.state == FenceState.ACTIVE for done, _, _ in launches)
    for fence in fences:
        fence.signal()
    for done, info, outputs in launches:
        assert done.wait(60) == FenceState.SIGNALED
        assert info.getExecutionInfo()[0] == ErrorStatus.NONE
        assert result_of(outputs) == SHORT_LOOP_COUNT


def test_a_fence_signalled_with_an_error_ends_the_wait_whatever_the_other_fences(prepared):
    request, _inputs, _outputs = counter_request()
    never, failed = SyncFence(), SyncFence()
    status, done, info = prepared.executeFenced(request, [never, failed], MeasureTiming.NO,
                                                OptionalTimePoint(), OptionalTimeoutDuration(),
                                                OptionalTimeoutDuration())
    assert status == ErrorStatus.NONE
    failed.signal(FenceState.ERROR)
    assert done.wait(10) == FenceState.ERROR
    assert info.getExecutionInfo()[0] == ErrorStatus.GENERAL_FAILURE


def test_when_signalled_calls_back_once_now_or_on_signal():
    calls = []
    fence = SyncFence()
    fence.when_signalled(calls.append)
    assert calls == []
    assert fence.signal(FenceState.ERROR)
    assert not fence.signal()
    fence.when_signalled(calls.append)
    assert calls == [FenceState.ERROR, FenceState.ERROR]
