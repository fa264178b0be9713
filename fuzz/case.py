"""What one fuzz input means: a HAL Model, a Request and the execution choices.

The codec (codec.py) maps bytes to a FuzzCase and back; the harness (harness.py) runs one.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

from driver.hal import ExecutionPreference, Model, Priority, Request
from hal_client.paths import ExecutionArguments, ExecutionPath


class RequestChange(enum.IntEnum):
    """What the caller does to its Request once the second execution has been launched on
    another thread (execute_1_3, executeFenced): HIDL copies a request at the call, so the
    execution must run the request as it was then, whatever the caller does after."""
    NONE = 0
    ARGUMENTS = 1   # every argument's location and dimensions rewritten
    POOLS = 2       # every pool replaced by a new one holding other bytes
    CLOSED = 3      # the pools closed and the Request emptied


@dataclass(kw_only=True)
class ExecutionChoices(ExecutionArguments):
    """How a case is run: the execution's arguments besides the request (those of
    ExecutionArguments), the paths, and prepareModel_1_3's arguments."""
    path: ExecutionPath = ExecutionPath.SYNC
    second_path: ExecutionPath = ExecutionPath.ASYNC   # the determinism re-run
    preference: ExecutionPreference = ExecutionPreference.FAST_SINGLE_ANSWER
    priority: Priority = Priority.MEDIUM
    #: What happens to the second execution's request after an ASYNC or FENCED launch.
    request_change: RequestChange = RequestChange.NONE


@dataclass
class FuzzCase:
    model: Model = field(default_factory=Model)
    request: Request = field(default_factory=Request)
    choices: ExecutionChoices = field(default_factory=ExecutionChoices)
