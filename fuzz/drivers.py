"""Which driver the harness fuzzes, ``MODULE:FACTORY`` (see hal_client.device), and which
reference driver it compares that one with, and whether the metamorphic relations run.

The choices travel in environment variables as well as on the command line, because
libFuzzer's -fork, -jobs and -minimize_crash modes re-execute the entry script with only
the flags libFuzzer knows about.
"""
from __future__ import annotations

import os
from typing import Any

from hal_client import device

DRIVER_ENV = "NNHAL_FUZZ_DRIVER"
REFERENCE_ENV = "NNHAL_FUZZ_REFERENCE"
#: The reference spec that means: compare with no reference driver.
NO_REFERENCE = "none"
#: Set (to anything): the metamorphic relations of fuzz/relations.py do not run.
NO_RELATIONS_ENV = "NNHAL_FUZZ_NO_RELATIONS"

#: The memory budget the harness gives a driver that has a settable ``memory_budget_bytes``
#: (the bundled driver's own, 1 GiB, is out of a fuzz input's reach; this one is a few of
#: the large values the mutator makes), and then holds it to. A driver without one is not
#: measured: its budget, if any, is unknown.
MEMORY_BUDGET_BYTES = 16 * 2**20


def configured_spec() -> str:
    return os.environ.get(DRIVER_ENV) or device.DEFAULT_DRIVER


def configured_reference(driver_spec: str | None = None) -> str | None:
    """The reference driver's spec, None for none: $NNHAL_FUZZ_REFERENCE, else the bundled
    driver, unless the driver under test is the bundled one (it would be compared with
    itself)."""
    spec = os.environ.get(REFERENCE_ENV) or (
        NO_REFERENCE if (driver_spec or configured_spec()) == device.DEFAULT_DRIVER else device.DEFAULT_DRIVER)
    return None if spec == NO_REFERENCE else spec


def relations_on() -> bool:
    return not os.environ.get(NO_RELATIONS_ENV)


def environment(driver_spec: str, reference_spec: str | None) -> dict[str, str]:
    """The environment variables that carry the driver and reference to another process."""
    return {DRIVER_ENV: driver_spec, REFERENCE_ENV: reference_spec or NO_REFERENCE}


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
