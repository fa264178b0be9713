"""Execution bursts (IBurstContext): requests run one after another on one prepared model,
with their memory pools cached by slot so a client need not send them again."""
from __future__ import annotations

import threading
from typing import Sequence

from .errors import ValidationError, check, fail
from .hal.enums import ErrorStatus, MeasureTiming
from .hal.structs import (MemoryPool, OptionalTimeoutDuration, OptionalTimePoint, OutputShape,
                          Request, Timing)
from .executor.run import failure
from .memory import Memory
from .validation.structure import raise_for_missing_field


class ExecutionBurst:
    """A burst context. ``execute`` runs one request: pool i of the request is cached under
    ``slots[i]``. A pool given as MemoryPool() (neither memory nor token) for a slot that is
    cached reuses the cached memory; a slot not cached and with no memory is asked from the
    burst callback's getMemories, if there is one."""

    def __init__(self, prepared_model, callback=None) -> None:
        self._prepared_model = prepared_model
        self._callback = callback
        self._cache: dict[int, Memory] = {}
        # A burst serialises its executions, as the FMQ channel of the HAL does.
        self._lock = threading.Lock()

    def _resolve_pools(self, request: Request, slots: Sequence[int]) -> Request:
        try:
            return self._resolve_named_pools(request, slots)
        except AttributeError:
            raise_for_missing_field(request, "request")
            raise

    def _resolve_named_pools(self, request: Request, slots: Sequence[int]) -> Request:
        # Messages are formatted only on failure (``if not ...: fail``): these checks run
        # for every pool of every burst execution.
        pools_in = request.pools
        if not isinstance(pools_in, list):
            fail("burst: request.pools must be a list")
        if not (isinstance(slots, (list, tuple)) and len(slots) == len(pools_in)):
            fail(f"burst: {len(pools_in)} pools need as many slots, got {slots!r}")
        cache = self._cache
        pools = []
        for i, (slot, pool) in enumerate(zip(slots, pools_in)):
            if not (isinstance(slot, int) and not isinstance(slot, bool) and 0 <= slot < 2 ** 31):
                fail(f"burst: slot {slot!r} of pool {i} is not a valid slot")
            if not isinstance(pool, MemoryPool):
                fail(f"burst: pool {i} is not a MemoryPool")
            memory = pool.hidlMemory
            if memory is not None:
                if not isinstance(memory, Memory):
                    fail(f"burst: pool {i} is not a memory")
                cache[slot] = memory
                pools.append(pool)
            elif pool.token is not None:
                pools.append(pool)      # a token is passed on as it is
            else:
                if slot not in cache:
                    cache[slot] = self._fetch(slot, i)
                pools.append(MemoryPool(hidlMemory=cache[slot]))
        return Request(inputs=request.inputs, outputs=request.outputs, pools=pools)

    def _fetch(self, slot: int, position: int) -> Memory:
        check(self._callback is not None,
              f"burst: pool {position} has no memory and slot {slot} is not cached")
        answer = self._callback.getMemories([slot])
        check(isinstance(answer, tuple) and len(answer) == 2,
              f"burst: getMemories must return (status, memories), got {answer!r}")
        status, memories = answer
        check(status == ErrorStatus.NONE and isinstance(memories, (list, tuple))
              and len(memories) == 1 and isinstance(memories[0], Memory),
              f"burst: the callback gave no memory for slot {slot}")
        return memories[0]

    def execute(self, request: Request, slots: Sequence[int], measure: MeasureTiming,
                deadline: OptionalTimePoint, loopTimeoutDuration: OptionalTimeoutDuration,
                ) -> tuple[ErrorStatus, list[OutputShape], Timing]:
        with self._lock:
            try:
                check(isinstance(request, Request), "burst: request must be a Request")
                resolved = self._resolve_pools(request, slots)
            except ValidationError as error:
                return failure(error).as_tuple()
            return self._prepared_model.executeSynchronously_1_3(
                resolved, measure, deadline, loopTimeoutDuration)

    def freeMemory(self, slot: int) -> None:
        if not isinstance(slot, int):
            return      # no such slot was ever cached
        with self._lock:
            self._cache.pop(slot, None)
