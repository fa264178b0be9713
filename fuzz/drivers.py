"""Which driver the harness fuzzes: ``MODULE:FACTORY`` (see hal_client.device).

The choice travels in an environment variable as well as on the command line, because
libFuzzer's -fork, -jobs and -minimize_crash modes re-execute the entry script with only
the flags libFuzzer knows about.
"""
from __future__ import annotations

import os
from typing import Any

from hal_client import device

DRIVER_ENV = "NNHAL_FUZZ_DRIVER"

#: The memory budget the harness gives a driver that has a settable ``memory_budget_bytes``
#: (the bundled driver's own, 1 GiB, is out of a fuzz input's reach; this one is a few of
#: the large values the mutator makes), and then holds it to. A driver without one is not
#: measured: its budget, if any, is unknown.
MEMORY_BUDGET_BYTES = 16 * 2**20


def configured_spec() -> str:
    return os.environ.get(DRIVER_ENV) or device.DEFAULT_DRIVER


def top_package(spec: str) -> str:
    """The package a spec's module belongs to (what coverage instrumentation must include)."""
    return spec.partition(":")[0].split(".")[0]


def make_device(spec: str | None = None) -> Any:
    """A device from ``spec`` (default: the configured one), under the harness's memory
    budget if it has a settable one."""
    made = device.make_device(spec or configured_spec())
    if hasattr(made, "memory_budget_bytes"):
        try:
            made.memory_budget_bytes = MEMORY_BUDGET_BYTES
        except AttributeError:
            pass        # a budget it states but lets no client set: it is held to its own
    return made
