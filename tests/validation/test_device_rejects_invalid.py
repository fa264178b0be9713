"""Through the HAL surface: every invalid model mutation makes getSupportedOperations_1_3
(and an empty list) and prepareModel_1_3 answer INVALID_ARGUMENT (and notify it), and every
invalid request mutation makes each execution path answer INVALID_ARGUMENT, without
raising; with the driver's memo off and on."""
from __future__ import annotations

import numpy as np
import pytest

from driver.hal import (ErrorStatus, ExecutionCallback, ExecutionPreference, MeasureTiming,
                        NO_TIMING, OptionalTimePoint, OptionalTimeoutDuration,
                        PreparedModelCallback, Priority)
from tests import models
from tests.validation.mutations import (REQUEST_BUILDERS, RequestMutation, all_model_mutations,
                                        by_model, request_mutations)

device_module = pytest.importorskip("driver.device")

pytestmark = pytest.mark.usefixtures("memo_setting")

# The validator tests run each model's mutations as one case, and so do these: a failure
# lists every mutation at fault.
MODEL_GROUPS = by_model(all_model_mutations())
REQUEST_GROUPS = by_model(m for m in request_mutations() if m.build in REQUEST_BUILDERS.values())
CALLBACK_TIMEOUT_S = 10


@pytest.fixture(scope="module")
def device():
    return device_module.SampleDriver()


def prepare(device, model):
    callback = PreparedModelCallback()
    status = device.prepareModel_1_3(model, ExecutionPreference.FAST_SINGLE_ANSWER,
                                     Priority.MEDIUM, OptionalTimePoint(), [], [], bytes(32),
                                     callback)
    return status, callback


def model_answers(device, mutation) -> list:
    """What the device said about the mutated model, where that was not INVALID_ARGUMENT."""
    wrong = []
    answer = device.getSupportedOperations_1_3(mutation.invalid_model())
    if answer != (ErrorStatus.INVALID_ARGUMENT, []):
        wrong.append(("getSupportedOperations_1_3", answer))
    status, callback = prepare(device, mutation.invalid_model())
    notified = callback.wait(CALLBACK_TIMEOUT_S)
    if status != ErrorStatus.INVALID_ARGUMENT or notified != (ErrorStatus.INVALID_ARGUMENT, None):
        wrong.append(("prepareModel_1_3", status, notified))
    if callback.notify_count != 1:
        wrong.append(("notify_1_3 calls", callback.notify_count))
    return wrong


def assert_no_failures(mutations, wrong_answers) -> None:
    failures = {m.id: wrong for m in mutations for wrong in [wrong_answers(m)] if wrong}
    assert not failures, "\n".join(f"{id}: {wrong}" for id, wrong in failures.items())


@pytest.mark.parametrize("group", sorted(MODEL_GROUPS))
def test_invalid_models(device, group):
    assert_no_failures(MODEL_GROUPS[group], lambda m: model_answers(device, m))


_prepared: dict[str, object] = {}


def prepared_model(device, name: str):
    """The prepared valid model, or a skip when the driver cannot run it (yet)."""
    if name not in _prepared:
        status, callback = prepare(device, REQUEST_BUILDERS[name]().model)
        ok = status == ErrorStatus.NONE
        _prepared[name] = callback.wait(CALLBACK_TIMEOUT_S)[1] if ok else status
    prepared = _prepared[name]
    if isinstance(prepared, ErrorStatus):
        pytest.skip(f"the driver does not prepare the {name} model: {prepared.name}")
    return prepared


def builder_name(mutation: RequestMutation) -> str:
    return next(name for name, build in REQUEST_BUILDERS.items() if build is mutation.build)


RUNNABLE_CASES = {
    "add": models.add_model, "quant8_add": models.quant8_add_model,
    "constant_reference": models.constant_reference_model,
    "per_channel": models.per_channel_model, "if true": models.if_model,
    "if false": lambda: models.if_model(False), "while_counter": models.while_counter_model,
    "while_counter 3 to 10 by 4": lambda: models.while_counter_model(10, 3, 4),
    "fibonacci_while": models.fibonacci_while_model,
    "fibonacci_while 0": lambda: models.fibonacci_while_model(0),
    "nested true": models.nested_model, "nested false": lambda: models.nested_model(False, 7),
}


@pytest.mark.parametrize("name", sorted(RUNNABLE_CASES))
def test_model_builders_compute_expected(device, name):
    """The sample models run and give their documented results (which also makes them
    the precondition of the request cases: the unmutated requests run)."""
    case = RUNNABLE_CASES[name]()
    status, callback = prepare(device, case.model)
    if status != ErrorStatus.NONE:
        pytest.skip(f"the driver does not prepare the {case.name} model: {status.name}")
    request = case.request()
    status, shapes, _ = callback.wait(CALLBACK_TIMEOUT_S)[1].executeSynchronously_1_3(
        request, MeasureTiming.NO, OptionalTimePoint(), OptionalTimeoutDuration())
    assert status == ErrorStatus.NONE
    for actual, expected in zip(models.read_outputs(case.model, request), case.expected):
        np.testing.assert_array_equal(actual, expected)


#: What an execution path answers an invalid request.
REJECTED = (ErrorStatus.INVALID_ARGUMENT, [], NO_TIMING)


def request_answers(device, mutation: RequestMutation) -> list:
    """What each execution path said about the mutated request, where that was not
    INVALID_ARGUMENT."""
    prepared = prepared_model(device, builder_name(mutation))
    no_time, no_timeout = OptionalTimePoint(), OptionalTimeoutDuration()
    wrong = []
    request, _ = mutation.invalid_request()
    answer = prepared.executeSynchronously_1_3(request, MeasureTiming.NO, no_time, no_timeout)
    if answer != REJECTED:
        wrong.append(("executeSynchronously_1_3", answer))
    request, _ = mutation.invalid_request()
    callback = ExecutionCallback()
    status = prepared.execute_1_3(request, MeasureTiming.YES, no_time, no_timeout, callback)
    notified = callback.wait(CALLBACK_TIMEOUT_S)
    if (status, notified) != (ErrorStatus.INVALID_ARGUMENT, REJECTED):
        wrong.append(("execute_1_3", status, notified))
    request, _ = mutation.invalid_request()
    answer = prepared.executeFenced(request, [], MeasureTiming.NO, no_time, no_timeout, no_timeout)
    if answer != (ErrorStatus.INVALID_ARGUMENT, None, None):
        wrong.append(("executeFenced", answer))
    return wrong


@pytest.mark.parametrize("group", sorted(REQUEST_GROUPS))
def test_invalid_requests(device, group):
    assert_no_failures(REQUEST_GROUPS[group], lambda m: request_answers(device, m))
