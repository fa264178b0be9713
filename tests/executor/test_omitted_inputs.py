"""A request may omit (hasNoValue) only inputs that no operation requires."""
from __future__ import annotations

from driver import SampleDriver
from driver.hal import (ErrorStatus, ExecutionPreference, MeasureTiming, OptionalTimeoutDuration,
                        OptionalTimePoint, PreparedModelCallback, Priority)
from tests.models import add_model, while_counter_model


def _prepare(model):
    callback = PreparedModelCallback()
    SampleDriver().prepareModel_1_3(model, ExecutionPreference.FAST_SINGLE_ANSWER,
                                    Priority.MEDIUM, OptionalTimePoint(), [], [], bytes(32),
                                    callback)
    status, prepared = callback.wait(5)
    assert status == ErrorStatus.NONE
    return prepared


def _omit_first_input(request):
    argument = request.inputs[0]
    argument.hasNoValue = True
    argument.location.poolIndex = argument.location.offset = argument.location.length = 0
    argument.dimensions = []
    return request


def test_omitting_an_operation_input_is_invalid():
    case = add_model()
    prepared = _prepare(case.model)
    status, shapes, _ = prepared.executeSynchronously_1_3(
        _omit_first_input(case.request()), MeasureTiming.NO, OptionalTimePoint(),
        OptionalTimeoutDuration())
    assert status == ErrorStatus.INVALID_ARGUMENT
    assert shapes == []


def test_omitting_a_loop_input_is_invalid():
    case = while_counter_model()
    prepared = _prepare(case.model)
    status, _, _ = prepared.executeSynchronously_1_3(
        _omit_first_input(case.request()), MeasureTiming.NO, OptionalTimePoint(),
        OptionalTimeoutDuration())
    assert status == ErrorStatus.INVALID_ARGUMENT


def test_inputs_given_still_run():
    case = while_counter_model()
    prepared = _prepare(case.model)
    status, _, _ = prepared.executeSynchronously_1_3(
        case.request(), MeasureTiming.NO, OptionalTimePoint(), OptionalTimeoutDuration())
    assert status == ErrorStatus.NONE
