"""No exception ever leaves the HAL surface: every IDevice, IPreparedModel, burst and fenced
callback method answers garbage arguments (None, wrong types, negative or huge numbers,
malformed structures) with an error status, and callbacks hear that status exactly once."""
from __future__ import annotations

import copy
import math
from typing import Callable

import numpy as np
import pytest

from driver.device import SampleDriver
from driver.hal.callbacks import ExecutionCallback, PreparedModelCallback
from driver.hal.enums import (DeviceStatus, ErrorStatus, ExecutionPreference, MeasureTiming,
                              OperandType as T, Priority)
from driver.hal.structs import (BufferDesc, BufferRole, DataLocation, MemoryPool, Model, Operand,
                                OptionalTimePoint, OptionalTimeoutDuration, Request,
                                RequestArgument)
from hal_client.builder import ModelBuilder, make_request, out_like
from tests.driver.execution import ALL_PATHS, CALLBACK_TIMEOUT_S, TOKEN, Path, execute, prepare
from tests.models import fibonacci_fc_model, if_add_sub_model, mkn_model
from tests.validation.mutations import closed_memory

GARBAGE = [None, "x", -1, 2 ** 64, 1.5, math.nan, True, object(), [], {}, b"", [None], (-1,)]
GARBAGE_IDS = ["None", "str", "-1", "2^64", "float", "nan", "True", "object", "list", "dict",
               "bytes", "[None]", "(-1,)"]


def is_status(value) -> bool:
    return isinstance(value, ErrorStatus)


@pytest.fixture(scope="module")
def device():
    return SampleDriver()


@pytest.fixture(scope="module")
def prepared(device):
    return prepare(fibonacci_fc_model(), device)


def valid_request() -> Request:
    return make_request([np.array([5], np.int32)], [out_like(np.float32, [1, 2])]).request


# --- IDevice -----------------------------------------------------------------------------

PREPARE_ARGUMENTS = ["model", "preference", "priority", "deadline", "modelCache", "dataCache", "token"]


@pytest.mark.parametrize("garbage", GARBAGE, ids=GARBAGE_IDS)
@pytest.mark.parametrize("position", range(len(PREPARE_ARGUMENTS)), ids=PREPARE_ARGUMENTS)
def test_prepare_model(device, position, garbage):
    arguments = [fibonacci_fc_model(), ExecutionPreference.FAST_SINGLE_ANSWER, Priority.MEDIUM,
                 OptionalTimePoint(), [], [], TOKEN]
    arguments[position] = garbage
    callback = PreparedModelCallback()
    launch = device.prepareModel_1_3(*arguments, callback)
    assert callback.wait_for_notify(CALLBACK_TIMEOUT_S)
    assert is_status(launch) and callback.notify_count == 1
    status, prepared_model = callback.calls[0]
    assert (status == ErrorStatus.NONE) == (prepared_model is not None)
    if launch != ErrorStatus.NONE:
        assert status == launch
    # A driver that caches nothing may ignore the contents of cache lists (as the VTS
    # expects for a mismatched number of cache files); anything else here is invalid.
    if not (PREPARE_ARGUMENTS[position] in ("modelCache", "dataCache") and isinstance(garbage, (list, tuple))):
        assert status != ErrorStatus.NONE, (PREPARE_ARGUMENTS[position], garbage)


@pytest.mark.parametrize("garbage", GARBAGE, ids=GARBAGE_IDS)
def test_prepare_model_with_garbage_callback(device, garbage):
    launch = device.prepareModel_1_3(fibonacci_fc_model(), ExecutionPreference.FAST_SINGLE_ANSWER,
                                     Priority.MEDIUM, OptionalTimePoint(), [], [], TOKEN, garbage)
    assert launch == ErrorStatus.INVALID_ARGUMENT


@pytest.mark.parametrize("garbage", GARBAGE, ids=GARBAGE_IDS)
def test_queries_and_cache(device, garbage):
    status, supported = device.getSupportedOperations_1_3(garbage)
    assert status == ErrorStatus.INVALID_ARGUMENT and supported == []
    callback = PreparedModelCallback()
    for position in range(4):
        arguments = [OptionalTimePoint(), [], [], TOKEN]
        arguments[position] = garbage
        launch = device.prepareModelFromCache_1_3(*arguments, callback)
        assert is_status(launch) and launch != ErrorStatus.NONE
    assert is_status(device.prepareModelFromCache_1_3(OptionalTimePoint(), [], [], TOKEN, garbage))
    assert device.getStatus() in set(DeviceStatus)


@pytest.mark.parametrize("garbage", GARBAGE, ids=GARBAGE_IDS)
@pytest.mark.parametrize("position", range(4), ids=["desc", "preparedModels", "inputRoles", "outputRoles"])
def test_allocate(device, prepared, position, garbage):
    arguments = [BufferDesc([1, 2]), [prepared], [], [BufferRole(0, 0, 1.0)]]
    valid = arguments[position] == garbage and type(arguments[position]) is type(garbage)
    arguments[position] = garbage
    status, buffer, token = device.allocate(*arguments)
    assert is_status(status)
    if valid:   # garbage that happens to be the valid argument
        assert status == ErrorStatus.NONE and buffer is not None and token > 0
    else:
        assert status != ErrorStatus.NONE and (buffer, token) == (None, 0)


# --- malformed models ------------------------------------------------------------------------

def set_attribute(path: str, value) -> Callable[[Model], None]:
    """A mutation setting ``path`` (dotted, with [i] indexes) of a model to ``value``."""
    def mutate(model: Model) -> None:
        target = model
        parts = path.replace("]", "").replace("[", ".").split(".")
        for part in parts[:-1]:
            target = target[int(part)] if part.isdigit() else getattr(target, part)
        last = parts[-1]
        if last.isdigit():
            target[int(last)] = value
        else:
            setattr(target, last, value)
    return mutate


# Main None, operations None, operand 0's location, extraParams (None or of an extension)
# or numberOfConsumers -1, an operation's inputs None and an empty referenced subgraph are
# mutations of tests/validation/mutations.py: test_device_rejects_invalid.
MODEL_MUTATIONS = {
    "referenced None": set_attribute("referenced", None),
    "referenced [None]": set_attribute("referenced[0]", None),
    "operandValues None": set_attribute("operandValues", None),
    "pools None": set_attribute("pools", None),
    "pool None": set_attribute("pools[0]", None),
    "relaxed str": set_attribute("relaxComputationFloat32toFloat16", "yes"),
    "extensions None": set_attribute("extensionNameToPrefix", None),
    "operands None": set_attribute("main.operands", None),
    "operand None": set_attribute("main.operands[0]", None),
    "operand type None": set_attribute("main.operands[0].type", None),
    "operand type huge": set_attribute("main.operands[0].type", 2 ** 40),
    "dimensions None": set_attribute("main.operands[0].dimensions", None),
    "dimension negative": set_attribute("main.operands[0].dimensions", [-1]),
    "dimension float": set_attribute("main.operands[0].dimensions", [1.0]),
    "lifetime 99": set_attribute("main.operands[0].lifetime", 99),
    "scale nan": set_attribute("main.operands[0].scale", math.nan),
    "zeroPoint str": set_attribute("main.operands[0].zeroPoint", "0"),
    "operation None": set_attribute("main.operations[0]", None),
    "operation type None": set_attribute("main.operations[0].type", None),
    "operation input out of range": set_attribute("main.operations[0].inputs", [0, 1, 99]),
    "operation outputs negative": set_attribute("main.operations[0].outputs", [-1]),
    "inputIndexes None": set_attribute("main.inputIndexes", None),
    "outputIndexes str": set_attribute("main.outputIndexes", "0"),
    "subgraph reference out of range": set_attribute("main.operands[1].location",
                                                     DataLocation(0, 99, 0)),
    "referenced operand wrong": set_attribute("referenced[1].operands[0]", Operand(type=-5)),
}


@pytest.mark.parametrize("mutation", list(MODEL_MUTATIONS), ids=list(MODEL_MUTATIONS))
def test_malformed_model(device, mutation):
    model = fibonacci_fc_model()
    MODEL_MUTATIONS[mutation](model)
    status, supported = device.getSupportedOperations_1_3(model)
    assert status == ErrorStatus.INVALID_ARGUMENT and supported == []
    callback = PreparedModelCallback()
    launch = device.prepareModel_1_3(model, ExecutionPreference.FAST_SINGLE_ANSWER, Priority.MEDIUM,
                                     OptionalTimePoint(), [], [], TOKEN, callback)
    assert launch == ErrorStatus.INVALID_ARGUMENT
    assert callback.calls == [(ErrorStatus.INVALID_ARGUMENT, None)]


# --- IPreparedModel ----------------------------------------------------------------------

EXECUTE_ARGUMENTS = ["request", "measure", "deadline", "loopTimeoutDuration"]


def valid_execute_arguments() -> list:
    return [valid_request(), MeasureTiming.NO, OptionalTimePoint(), OptionalTimeoutDuration()]


@pytest.mark.parametrize("garbage", GARBAGE, ids=GARBAGE_IDS)
@pytest.mark.parametrize("position", range(4), ids=EXECUTE_ARGUMENTS)
def test_execute_synchronously(prepared, position, garbage):
    arguments = valid_execute_arguments()
    arguments[position] = garbage
    status, shapes, _timing = prepared.executeSynchronously_1_3(*arguments)
    assert status == ErrorStatus.INVALID_ARGUMENT and shapes == []


@pytest.mark.parametrize("garbage", GARBAGE, ids=GARBAGE_IDS)
@pytest.mark.parametrize("position", range(5), ids=EXECUTE_ARGUMENTS + ["callback"])
def test_execute_asynchronously(prepared, position, garbage):
    arguments = valid_execute_arguments() + [ExecutionCallback()]
    arguments[position] = garbage
    launch = prepared.execute_1_3(*arguments)
    assert launch == ErrorStatus.INVALID_ARGUMENT
    if position < 4:
        assert arguments[4].calls == [(ErrorStatus.INVALID_ARGUMENT, [], arguments[4].calls[0][2])]


FENCED_ARGUMENTS = ["request", "waitFor", "measure", "deadline", "loopTimeoutDuration", "duration"]


@pytest.mark.parametrize("garbage", GARBAGE, ids=GARBAGE_IDS)
@pytest.mark.parametrize("position", range(6), ids=FENCED_ARGUMENTS)
def test_execute_fenced(prepared, position, garbage):
    arguments = [valid_request(), [], MeasureTiming.NO, OptionalTimePoint(),
                 OptionalTimeoutDuration(), OptionalTimeoutDuration()]
    arguments[position] = garbage
    launch, fence, callback = prepared.executeFenced(*arguments)
    if FENCED_ARGUMENTS[position] == "waitFor" and garbage in ([], ()):
        assert launch == ErrorStatus.NONE    # an empty list of fences is valid
        return
    assert launch == ErrorStatus.INVALID_ARGUMENT and fence is None and callback is None


def test_configure_burst_with_garbage_callback(prepared):
    """A burst callback that is not one may be refused at once, or when it is needed; it
    may not raise."""
    for garbage in GARBAGE:
        status, burst = prepared.configureExecutionBurst(garbage)
        assert is_status(status)
        if status != ErrorStatus.NONE:
            continue
        request = valid_request()
        request.pools = [MemoryPool(), MemoryPool()]      # slots not cached: ask the callback
        result = burst.execute(request, [0, 1], MeasureTiming.NO, OptionalTimePoint(),
                               OptionalTimeoutDuration())
        assert is_status(result[0]) and result[0] != ErrorStatus.NONE, garbage


BURST_ARGUMENTS = ["request", "slots", "measure", "deadline", "loopTimeoutDuration"]


@pytest.mark.parametrize("garbage", GARBAGE, ids=GARBAGE_IDS)
@pytest.mark.parametrize("position", range(5), ids=BURST_ARGUMENTS)
def test_burst_execute(prepared, position, garbage):
    _, burst = prepared.configureExecutionBurst(None)
    arguments = [valid_request(), [0, 1], MeasureTiming.NO, OptionalTimePoint(),
                 OptionalTimeoutDuration()]
    arguments[position] = garbage
    status, shapes, _timing = burst.execute(*arguments)
    assert status == ErrorStatus.INVALID_ARGUMENT and shapes == []


@pytest.mark.parametrize("garbage", GARBAGE, ids=GARBAGE_IDS)
def test_burst_free_memory(prepared, garbage):
    _, burst = prepared.configureExecutionBurst(None)
    arguments = (MeasureTiming.NO, OptionalTimePoint(), OptionalTimeoutDuration())
    assert burst.execute(valid_request(), [0, 1], *arguments)[0] == ErrorStatus.NONE
    burst.freeMemory(garbage)
    # The burst still works afterwards.
    assert burst.execute(valid_request(), [0, 1], *arguments)[0] == ErrorStatus.NONE


# --- malformed requests ------------------------------------------------------------------------

REQUEST_MUTATIONS: dict[str, Callable[[Request], None]] = {
    "inputs None": lambda r: setattr(r, "inputs", None),
    "outputs None": lambda r: setattr(r, "outputs", None),
    "pools None": lambda r: setattr(r, "pools", None),
    "pools str": lambda r: setattr(r, "pools", "ab"),
    "pool None": lambda r: r.pools.__setitem__(0, None),
    "pool empty": lambda r: r.pools.__setitem__(0, MemoryPool()),
    "pool both": lambda r: setattr(r.pools[0], "token", 1),
    "pool token": lambda r: r.pools.__setitem__(1, MemoryPool(token=1)),
    "pool str memory": lambda r: r.pools.__setitem__(0, MemoryPool(hidlMemory="x")),
    "pool closed memory": lambda r: r.pools.__setitem__(0, MemoryPool(hidlMemory=closed_memory())),
    "input None": lambda r: r.inputs.__setitem__(0, None),
    "input missing": lambda r: r.inputs.clear(),
    "output extra": lambda r: r.outputs.append(copy.deepcopy(r.outputs[0])),
    "location None": lambda r: setattr(r.inputs[0], "location", None),
    "poolIndex None": lambda r: setattr(r.inputs[0].location, "poolIndex", None),
    "poolIndex out of range": lambda r: setattr(r.inputs[0].location, "poolIndex", 9),
    "offset negative": lambda r: setattr(r.outputs[0].location, "offset", -4),
    "length huge": lambda r: setattr(r.outputs[0].location, "length", 2 ** 40),
    "offset past pool": lambda r: setattr(r.outputs[0].location, "offset", 2 ** 31),
    "input too short": lambda r: setattr(r.inputs[0].location, "length", 3),
    "dimensions None": lambda r: setattr(r.inputs[0], "dimensions", None),
    "dimension negative": lambda r: setattr(r.inputs[0], "dimensions", [-1]),
    "dimension str": lambda r: setattr(r.inputs[0], "dimensions", ["1"]),
    "dimension wrong": lambda r: setattr(r.inputs[0], "dimensions", [2]),
    "rank wrong": lambda r: setattr(r.outputs[0], "dimensions", [1, 2, 1]),
    "hasNoValue str": lambda r: setattr(r.inputs[0], "hasNoValue", "no"),
    "hasNoValue with location": lambda r: setattr(r.inputs[0], "hasNoValue", True),
    "argument wrong type": lambda r: r.outputs.__setitem__(0, DataLocation()),
}


def _malformed_request_cases():
    for mutation in REQUEST_MUTATIONS:
        for path in ALL_PATHS:
            yield pytest.param(mutation, path, id=f"{mutation}-{path.value}")


@pytest.mark.parametrize("mutation, path", list(_malformed_request_cases()))
def test_malformed_request(prepared, mutation, path):
    request = valid_request()
    REQUEST_MUTATIONS[mutation](request)
    outcome = execute(prepared, request, path)
    assert outcome.status == ErrorStatus.INVALID_ARGUMENT, outcome


def test_request_arguments_of_the_wrong_structure(prepared):
    """RequestArgument-like objects that are not RequestArguments are refused."""
    request = valid_request()
    request.inputs[0] = RequestArgument(location=DataLocation(0, 0, 4), dimensions=(1,))
    outcome = execute(prepared, request, Path.SYNC)
    assert outcome.status in (ErrorStatus.NONE, ErrorStatus.INVALID_ARGUMENT)


#: Values an OptionalTimePoint / OptionalTimeoutDuration may not hold (None means "none").
INNER_TIME_GARBAGE = [-1, 2 ** 64, 1.5, "1", True]
TIME_ARGUMENTS = {
    "deadline": lambda g: {"deadline": OptionalTimePoint(g)},
    "loopTimeoutDuration": lambda g: {"loop_timeout": OptionalTimeoutDuration(g)},
    "duration": lambda g: {"fenced_duration": OptionalTimeoutDuration(g)},
}


def _time_argument_cases():
    for argument in TIME_ARGUMENTS:
        paths = [Path.FENCED] if argument == "duration" else ALL_PATHS   # executeFenced's own
        for path in paths:
            for garbage in INNER_TIME_GARBAGE:
                yield pytest.param(argument, garbage, path, id=f"{argument}-{garbage!r}-{path.value}")


@pytest.mark.parametrize("argument, garbage, path", list(_time_argument_cases()))
def test_garbage_inside_time_arguments(prepared, argument, garbage, path):
    """The union types themselves, holding a value that is not a uint64."""
    outcome = execute(prepared, valid_request(), path, **TIME_ARGUMENTS[argument](garbage))
    assert outcome.status == ErrorStatus.INVALID_ARGUMENT, outcome


@pytest.mark.parametrize("slots", [[0, -1], [0, None], [0, 2 ** 40], [0, 1.0], [0, True], "01"],
                         ids=repr)
def test_burst_slot_values(prepared, slots):
    _, burst = prepared.configureExecutionBurst(None)
    status, _shapes, _timing = burst.execute(valid_request(), slots, MeasureTiming.NO,
                                             OptionalTimePoint(), OptionalTimeoutDuration())
    assert status == ErrorStatus.INVALID_ARGUMENT


# --- omitted inputs --------------------------------------------------------------------------

def omitted_input_cases():
    """(name, model, inputs with one omitted, output buffers): each omitted value is needed
    by an operation that has no optional input."""
    a = np.ones(3, np.float32)
    return {
        "ADD operand": (plain_add_model(), [a, None], [out_like(np.float32, [3])]),
        "IF condition": (if_add_sub_model(), [None, a, a], [out_like(np.float32, [3])]),
        "IF branch input": (if_add_sub_model(), [np.array([True]), None, a], [out_like(np.float32, [3])]),
        "WHILE bound": (fibonacci_fc_model(), [None], [out_like(np.float32, [1, 2])]),
        "WHILE state": (mkn_model(), [None, np.ones(2, np.float32), np.array([3], np.int32),
                                      np.ones(2, np.float32)], [out_like(np.float32, [2])] * 2),
    }


def plain_add_model():
    mb = ModelBuilder()
    a, b = mb.main.input(T.TENSOR_FLOAT32, [3]), mb.main.input(T.TENSOR_FLOAT32, [3])
    mb.main.outputs(mb.main.add(a, b))
    return mb.build()


def _omitted_input_params():
    for name in omitted_input_cases():
        for path in ALL_PATHS:
            yield pytest.param(name, path, id=f"{name}-{path.value}")


@pytest.mark.parametrize("name, path", list(_omitted_input_params()))
def test_omitted_input_needed_by_an_operation_fails_the_execution(name, path):
    model, inputs, outputs = omitted_input_cases()[name]
    prepared = prepare(model)
    # A short wait: an execution that dies without answering fails quickly.
    outcome = execute(prepared, make_request(inputs, outputs).request, path, timeout_s=2.0)
    assert outcome.status in (ErrorStatus.INVALID_ARGUMENT, ErrorStatus.GENERAL_FAILURE), outcome
