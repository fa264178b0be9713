"""A cap on this process's memory, so that an input allocating without bound fails at once
with MemoryError instead of growing until the machine swaps.

The cap is on the address space (RLIMIT_AS, Linux): what the process maps now plus a
budget. libFuzzer's -rss_limit_mb (2048 by default) is the budget's counterpart while
fuzzing; triage and replay, which run inputs outside libFuzzer, use this instead.
"""
from __future__ import annotations

import contextlib
import os
import resource
from typing import Iterator

#: libFuzzer's default -rss_limit_mb: an input that set it off reproduces under this budget.
DEFAULT_BUDGET_MB = 2048


def address_space_bytes() -> int:
    """What this process maps now (the first field of /proc/self/statm, in pages)."""
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[0])
    return pages * os.sysconf("SC_PAGE_SIZE")


def limit_memory(budget_mb: int) -> int:
    """Cap the address space at what is mapped now plus ``budget_mb``; a stricter limit
    already in place stays. Returns the cap in bytes."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = min([address_space_bytes() + budget_mb * 2**20,
               *(existing for existing in (soft, hard) if existing != resource.RLIM_INFINITY)])
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    return cap


@contextlib.contextmanager
def memory_budget(budget_mb: int = DEFAULT_BUDGET_MB) -> Iterator[int]:
    """``limit_memory`` for the duration of a block, the previous limit restored after."""
    previous = resource.getrlimit(resource.RLIMIT_AS)
    cap = limit_memory(budget_mb)
    try:
        yield cap
    finally:
        resource.setrlimit(resource.RLIMIT_AS, previous)
