"""Execution bursts (IBurstContext): requests run one after another on one prepared model,
with their memory pools cached by slot so a client need not send them again."""
from __future__ import annotations

import threading
from typing import Sequence

from .errors import ValidationError, check
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
        check(isinstance(request.pools, list), "burst: request.pools must be a list")
        check(isinstance(slots, (list, tuple)) and len(slots) == len(request.pools),
              f"burst: {len(request.pools)} pools need as many slots, got {slots!r}")
        pools = []
        for i, (slot, pool) in enumerate(zip(slots, request.pools)):
            check(isinstance(slot, int) and not isinstance(slot, bool) and 0 <= slot < 2 ** 31,
                  f"burst: slot {slot!r} of pool {i} is not a valid slot")
            check(isinstance(pool, MemoryPool), f"burst: pool {i} is not a MemoryPool")
            if pool.hidlMemory is not None:
                check(isinstance(pool.hidlMemory, Memory), f"burst: pool {i} is not a memory")
                self._cache[slot] = pool.hidlMemory
            elif pool.token is None and slot not in self._cache:
                self._cache[slot] = self._fetch(slot, i)
            # A pool that names its memory (or a token) is passed on as it is.
            unnamed = pool.hidlMemory is None and pool.token is None
            pools.append(MemoryPool(hidlMemory=self._cache[slot]) if unnamed else pool)
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
