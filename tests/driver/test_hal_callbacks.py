"""The callback contracts of prepareModel_1_3 and execute_1_3: notify_1_3 is called exactly
once, and an error returned at launch is the status the callback hears (the launch without a
usable callback: test_garbage_arguments)."""
from __future__ import annotations

import time

import numpy as np
import pytest

from driver.device import SampleDriver
from driver.hal.callbacks import ExecutionCallback, PreparedModelCallback
from driver.hal.enums import (ErrorStatus, ExecutionPreference, LoopTimeoutDurationNs,
                              MeasureTiming, Priority)
from driver.hal.structs import NO_TIMING, Model, OptionalTimePoint, OptionalTimeoutDuration
from hal_client.builder import make_request, out_like
from tests.driver.execution import (CALLBACK_TIMEOUT_S, MS, TOKEN, duration, passed_deadline,
                                    prepare)
from tests.models import finite_loop_model, infinite_loop_model

#: How long to keep listening for a second, unwanted notification.
LISTEN_S = 0.1


def settle(callback) -> None:
    callback.wait_for_notify(CALLBACK_TIMEOUT_S)
    time.sleep(LISTEN_S)


def prepare_with(*, model=None, preference=ExecutionPreference.FAST_SINGLE_ANSWER,
                 priority=Priority.MEDIUM, deadline=OptionalTimePoint(), model_cache=(),
                 data_cache=(), token=TOKEN):
    callback = PreparedModelCallback()
    launch = SampleDriver().prepareModel_1_3(
        finite_loop_model() if model is None else model, preference, priority, deadline,
        list(model_cache), list(data_cache), token, callback)
    settle(callback)
    return launch, callback


@pytest.mark.parametrize("argument, value", [
    ("preference", 3), ("preference", -1), ("priority", 3), ("priority", -1),
    ("token", bytes(31)), ("token", bytes(33)), ("token", None),
    ("model_cache", [None] * 33), ("model", Model()),
])
def test_prepare_with_invalid_argument(argument, value):
    launch, callback = prepare_with(**{argument: value})
    assert launch == ErrorStatus.INVALID_ARGUMENT
    assert callback.calls == [(ErrorStatus.INVALID_ARGUMENT, None)]


@pytest.mark.parametrize("priority", list(Priority))
@pytest.mark.parametrize("preference", list(ExecutionPreference))
def test_prepare_accepts_every_preference_and_priority(preference, priority):
    """Notified once, with a prepared model (which runs: test_deadlines' executions)."""
    launch, callback = prepare_with(preference=preference, priority=priority)
    assert launch == ErrorStatus.NONE
    assert callback.notify_count == 1 and callback.calls[0][0] == ErrorStatus.NONE


def test_prepare_with_passed_deadline_notifies_once():
    """Through the callback alone: the launch itself succeeds."""
    launch, callback = prepare_with(deadline=passed_deadline())
    assert callback.calls == [(ErrorStatus.MISSED_DEADLINE_PERSISTENT, None)]
    assert launch == ErrorStatus.NONE


# --- execute_1_3 --------------------------------------------------------------------------

def execute_async(prepared, request, *, measure=MeasureTiming.NO, deadline=OptionalTimePoint(),
                  loop_timeout=OptionalTimeoutDuration()):
    callback = ExecutionCallback()
    launch = prepared.execute_1_3(request, measure, deadline, loop_timeout, callback)
    settle(callback)
    return launch, callback


def valid_request():
    return make_request([np.array([0], np.float32)], [out_like(np.float32, [1])]).request


def test_execute_notifies_once_on_success(finite_loop):
    launch, callback = execute_async(finite_loop, valid_request())
    assert launch == ErrorStatus.NONE
    assert callback.notify_count == 1
    assert callback.calls[0][0] == ErrorStatus.NONE


@pytest.mark.parametrize("case", ["measure", "deadline type", "loop timeout", "loop timeout type",
                                  "request type", "input count", "pool index", "input length"])
def test_execute_with_invalid_argument_returns_and_notifies_the_error(finite_loop, case):
    request, kwargs = valid_request(), {}
    if case == "measure":
        kwargs["measure"] = 2
    elif case == "deadline type":
        kwargs["deadline"] = 5
    elif case == "loop timeout":
        kwargs["loop_timeout"] = duration(LoopTimeoutDurationNs.MAXIMUM + 1)
    elif case == "loop timeout type":
        kwargs["loop_timeout"] = 100
    elif case == "request type":
        request = "not a request"
    elif case == "input count":
        request.inputs.append(request.inputs[0])
    elif case == "pool index":
        request.inputs[0].location.poolIndex = 7
    else:
        request.inputs[0].location.length = 3
    launch, callback = execute_async(finite_loop, request, **kwargs)
    assert launch == ErrorStatus.INVALID_ARGUMENT
    assert callback.calls == [(ErrorStatus.INVALID_ARGUMENT, [], NO_TIMING)]


@pytest.mark.parametrize("case", ["loop timeout", "passed deadline", "insufficient output"])
def test_execution_failure_notifies_once(finite_loop, case):
    prepared, request, kwargs = finite_loop, valid_request(), {}
    if case == "loop timeout":
        prepared, kwargs["loop_timeout"] = prepare(infinite_loop_model()), duration(10 * MS)
    elif case == "passed deadline":
        kwargs["deadline"] = passed_deadline()
    else:
        request.outputs[0].location.length = 2
    launch, callback = execute_async(prepared, request, **kwargs)
    assert callback.notify_count == 1
    status = callback.calls[0][0]
    assert status != ErrorStatus.NONE
    assert launch in (ErrorStatus.NONE, status)
