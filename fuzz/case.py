"""What one fuzz input means: a HAL Model, a Request and the execution choices.

The codec (codec.py) maps bytes to a FuzzCase and back; the harness (harness.py) runs one.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

from driver.hal import ExecutionPreference, MeasureTiming, Model, Priority, Request


class ExecutionPath(enum.IntEnum):
    SYNC = 0      # IPreparedModel.executeSynchronously_1_3
    ASYNC = 1     # IPreparedModel.execute_1_3 + IExecutionCallback
    FENCED = 2    # IPreparedModel.executeFenced (+ wait fences)
    BURST = 3     # IPreparedModel.configureExecutionBurst + burst execute


@dataclass
class ExecutionChoices:
    path: ExecutionPath = ExecutionPath.SYNC
    second_path: ExecutionPath = ExecutionPath.ASYNC   # the determinism re-run
    measureTiming: MeasureTiming = MeasureTiming.NO
    preference: ExecutionPreference = ExecutionPreference.FAST_SINGLE_ANSWER
    priority: Priority = Priority.MEDIUM
    #: Deadline relative to the moment of the call, in ns; None: no deadline.
    deadline_ns: int | None = None
    #: loopTimeoutDuration in ns; None: omitted (the driver's default, 2 s).
    loopTimeoutDuration_ns: int | None = None
    #: executeFenced: how many wait fences, and how long (ns) before they are signalled.
    wait_fences: int = 0
    wait_fence_delay_ns: int = 0
    #: executeFenced's `duration` (ns); None: omitted.
    fenced_duration_ns: int | None = None


@dataclass
class FuzzCase:
    model: Model = field(default_factory=Model)
    request: Request = field(default_factory=Request)
    choices: ExecutionChoices = field(default_factory=ExecutionChoices)
