"""Execution bursts: memory pools cached by slot, reuse through an empty MemoryPool(),
freeMemory, the burst callback's getMemories, and slot-count errors."""
from __future__ import annotations

import numpy as np
import pytest

from driver.hal.enums import ErrorStatus, MeasureTiming, OperandType as T
from driver.hal.structs import MemoryPool, OptionalTimePoint, OptionalTimeoutDuration, Request
from driver.memory import Memory
from hal_client.builder import ModelBuilder, make_request, out_like
from tests.driver.execution import prepare

F32 = np.float32


@pytest.fixture(scope="module")
def adder():
    mb = ModelBuilder()
    a, b = mb.main.input(T.TENSOR_FLOAT32, [2]), mb.main.input(T.TENSOR_FLOAT32, [2])
    mb.main.outputs(mb.main.add(a, b))
    return prepare(mb.build())


def new_burst(prepared, callback=None):
    status, burst = prepared.configureExecutionBurst(callback)
    assert status == ErrorStatus.NONE and burst is not None
    return burst


def run(burst, request: Request, slots):
    status, _shapes, _timing = burst.execute(request, slots, MeasureTiming.NO, OptionalTimePoint(),
                                             OptionalTimeoutDuration())
    return status


def io_for(a, b):
    return make_request([np.array(a, F32), np.array(b, F32)], [out_like(F32, [2])])


def with_empty_pools(request: Request, keep: frozenset[int] = frozenset()) -> Request:
    """The same request with every pool (except those in ``keep``) sent as MemoryPool()."""
    pools = [pool if i in keep else MemoryPool() for i, pool in enumerate(request.pools)]
    return Request(inputs=request.inputs, outputs=request.outputs, pools=pools)


def test_cached_pools_are_reused_by_slot(adder):
    burst = new_burst(adder)
    io = io_for([1, 2], [10, 20])
    assert run(burst, io.request, [5, 9]) == ErrorStatus.NONE
    assert io.output(0, [2]).tolist() == [11, 22]
    # New input values in the cached pool, outputs cleared: the empty pools must resolve
    # to the very memories cached under slots 5 and 9.
    io.input_pool.write(np.array([3, 4, 30, 40], F32).tobytes())
    io.clear_outputs()
    assert run(burst, with_empty_pools(io.request), [5, 9]) == ErrorStatus.NONE
    assert io.output(0, [2]).tolist() == [33, 44]


def test_a_new_memory_replaces_the_cached_one(adder):
    burst = new_burst(adder)
    first, second = io_for([1, 1], [1, 1]), io_for([2, 2], [5, 5])
    assert run(burst, first.request, [0, 1]) == ErrorStatus.NONE
    assert run(burst, second.request, [0, 1]) == ErrorStatus.NONE
    second.clear_outputs()
    first.clear_outputs()
    assert run(burst, with_empty_pools(second.request), [0, 1]) == ErrorStatus.NONE
    assert second.output(0, [2]).tolist() == [7, 7]
    assert first.output_pool.read(0, 4) == bytes([0xAB]) * 4


def test_freed_slot_must_be_sent_again(adder):
    burst = new_burst(adder)
    io = io_for([1, 2], [3, 4])
    assert run(burst, io.request, [0, 1]) == ErrorStatus.NONE
    burst.freeMemory(0)
    assert run(burst, with_empty_pools(io.request), [0, 1]) == ErrorStatus.INVALID_ARGUMENT
    # Slot 1 is still cached: only the input pool needs sending again.
    assert run(burst, with_empty_pools(io.request, keep=frozenset({0})), [0, 1]) == ErrorStatus.NONE
    burst.freeMemory(12345)     # an unknown slot is not an error


def test_uncached_slot_is_fetched_from_the_burst_callback(adder):
    io = io_for([1, 2], [3, 4])

    class Callback:
        def __init__(self):
            self.asked: list[list[int]] = []

        def getMemories(self, slots):
            self.asked.append(list(slots))
            memories = {3: io.input_pool, 4: io.output_pool}
            return ErrorStatus.NONE, [memories[s] for s in slots]

    callback = Callback()
    burst = new_burst(adder, callback)
    assert run(burst, with_empty_pools(io.request), [3, 4]) == ErrorStatus.NONE
    assert io.output(0, [2]).tolist() == [4, 6]
    assert sorted(sum(callback.asked, [])) == [3, 4]
    # Once fetched, the memories are cached.
    assert run(burst, with_empty_pools(io.request), [3, 4]) == ErrorStatus.NONE
    assert sorted(sum(callback.asked, [])) == [3, 4]


@pytest.mark.parametrize("answer", [
    pytest.param((ErrorStatus.GENERAL_FAILURE, []), id="error"),
    pytest.param((ErrorStatus.NONE, []), id="no-memory"),
    pytest.param((ErrorStatus.NONE, ["not a memory"]), id="wrong-type"),
    pytest.param(None, id="none"),
    pytest.param((ErrorStatus.NONE,), id="short-tuple"),
])
def test_burst_callback_without_memory_fails_the_execution(adder, answer):
    class Callback:
        def getMemories(self, slots):
            return answer

    burst = new_burst(adder, Callback())
    assert run(burst, with_empty_pools(io_for([1, 2], [3, 4]).request), [0, 1]) != ErrorStatus.NONE


@pytest.mark.parametrize("slots", [[0], [0, 1, 2], []], ids=["fewer", "more", "none"])
def test_wrong_slot_count_is_invalid(adder, slots):
    burst = new_burst(adder)
    assert run(burst, io_for([1, 2], [3, 4]).request, slots) == ErrorStatus.INVALID_ARGUMENT


def test_bursts_have_separate_caches(adder):
    first, second = new_burst(adder), new_burst(adder)
    io = io_for([1, 2], [3, 4])
    assert run(first, io.request, [0, 1]) == ErrorStatus.NONE
    assert run(second, with_empty_pools(io.request), [0, 1]) == ErrorStatus.INVALID_ARGUMENT


def test_cached_memory_outlives_the_request(adder):
    """The burst keeps the memory it cached even when the client drops its references."""
    burst = new_burst(adder)
    io = io_for([1, 2], [3, 4])
    assert run(burst, io.request, [0, 1]) == ErrorStatus.NONE
    output_pool = io.output_pool
    request = with_empty_pools(io.request)
    del io
    output_pool.write(bytes(output_pool.size))
    assert run(burst, request, [0, 1]) == ErrorStatus.NONE
    assert np.frombuffer(output_pool.read(0, 8), F32).tolist() == [4, 6]
    assert isinstance(output_pool, Memory) and not output_pool.closed
