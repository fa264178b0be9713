"""Fixtures shared by the fuzz tests."""
from __future__ import annotations

import pytest

from driver import SampleDriver
from fuzz import harness

#: The hang margin of the seeded fuzz runs from the corpus. None of their planted bugs is a
#: hang, and on a busy machine the harness's own margin (a second) can run out first:
#: OverBudget's large executions, slowed further by tracemalloc, then look like hangs.
SLOW_MACHINE_HANG_MARGIN_S = 30.0


@pytest.fixture(scope="module")
def device():
    """The bundled driver, one per module."""
    return SampleDriver()


@pytest.fixture
def generous_hang_margin(monkeypatch):
    monkeypatch.setattr(harness, "HANG_MARGIN_S", SLOW_MACHINE_HANG_MARGIN_S)
