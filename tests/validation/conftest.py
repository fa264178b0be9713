"""Fixtures shared by the validation tests."""
from __future__ import annotations

import pytest

from driver.validation import memo

#: The settings of the driver's memo (ENABLED, PARTS_ENABLED) the validation tests run
#: under: whatever the memo remembers, every verdict and message must be validation's own.
MEMO_SETTINGS = {"memo off": (False, False), "memo on": (True, True)}


@pytest.fixture(params=sorted(MEMO_SETTINGS))
def memo_setting(request, monkeypatch) -> str:
    """The test runs with the memo off, and again with it on (parts included)."""
    enabled, parts = MEMO_SETTINGS[request.param]
    monkeypatch.setattr(memo, "ENABLED", enabled)
    monkeypatch.setattr(memo, "PARTS_ENABLED", parts)
    return request.param
