"""Prepared models the driver's timing tests share (one preparation per test module)."""
from __future__ import annotations

import pytest

from tests.driver.execution import prepare
from tests.models import finite_loop_model, infinite_loop_model


@pytest.fixture(scope="module")
def infinite_loop():
    """A WHILE whose condition never turns false."""
    return prepare(infinite_loop_model())


@pytest.fixture(scope="module")
def finite_loop():
    """A WHILE that counts x up to 100."""
    return prepare(finite_loop_model())
