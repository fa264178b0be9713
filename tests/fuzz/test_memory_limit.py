"""memory_budget: an allocation past the budget fails at once, and the limit is restored."""
from __future__ import annotations

import resource

import numpy as np
import pytest

from fuzz.memory_limit import address_space_bytes, limit_memory, memory_budget


def test_an_allocation_past_the_budget_raises_memory_error():
    before = resource.getrlimit(resource.RLIMIT_AS)
    with memory_budget(64) as cap:
        assert cap <= address_space_bytes() + 64 * 2**20
        with pytest.raises(MemoryError):
            np.ones(512 * 2**20, np.uint8)
        small = np.ones(1 << 20, np.uint8)      # within the budget: fine
        assert small.sum() == 1 << 20
    assert resource.getrlimit(resource.RLIMIT_AS) == before


def test_a_stricter_limit_already_in_place_stays():
    before = resource.getrlimit(resource.RLIMIT_AS)
    try:
        strict = limit_memory(256)
        with memory_budget(1024) as cap:
            assert cap == strict
    finally:
        resource.setrlimit(resource.RLIMIT_AS, before)
