"""What the memo of analyses (driver/validation/memo.py, which SampleDriver uses) may keep:
failures that follow from the model's content and the limits in force, and plans that hold
no state of any one execution (prepared models of equal content share one plan, and many
executions run it)."""
from __future__ import annotations

import functools
import pickle
import types

import numpy as np
import pytest

from driver import device as device_module, limits, operands
from driver.errors import DriverError, ResourceError
from driver.hal import ErrorStatus, OperandType as T, OperationType as Op
from driver.validation import memo
from hal_client.builder import ModelBuilder
from tests import models
from tests.driver.execution import Path, execute, prepare


@pytest.fixture(autouse=True)
def memo_on(monkeypatch) -> None:
    """The memo on, whatever the environment says."""
    monkeypatch.setattr(memo, "ENABLED", True)


def compile_failing_once(monkeypatch, error: DriverError) -> list:
    """compile_model raises ``error`` on its first call only; the calls are counted. The
    memo starts empty."""
    memo.MEMO.clear()
    calls: list = []
    compile_model = device_module.compile_model

    def flaky(model, **kwargs):
        calls.append(model)
        if len(calls) == 1:
            raise error
        return compile_model(model, **kwargs)
    monkeypatch.setattr(device_module, "compile_model", flaky)
    return calls


def test_a_content_determined_failure_is_remembered(monkeypatch):
    calls = compile_failing_once(monkeypatch, ResourceError("a result of 2**40 bytes"))
    device = device_module.SampleDriver()
    model = models.add_model().model
    for _ in range(2):
        assert device.getSupportedOperations_1_3(model)[0] == ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT
    assert len(calls) == 1


def test_a_transient_failure_is_not_remembered_and_a_hit_gives_the_status_of_the_miss(
        monkeypatch):
    """Each call from a new device: they share the memo."""
    calls = compile_failing_once(monkeypatch, DriverError(
        "scratch memory temporarily short", ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT))
    model = models.add_model().model
    model.main.operands[3].dimensions = [3, 3]      # shapes that do not match: compile fails
    statuses = [device_module.SampleDriver().getSupportedOperations_1_3(model)[0]
                for _ in range(3)]
    assert statuses == [ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT] + 2 * [ErrorStatus.INVALID_ARGUMENT]
    assert len(calls) == 2                          # the third call is a hit


#: One over the rank limit.
OVER_RANK = limits.MAX_RANK + 1


def over_rank_model():
    """ABS of a value of rank OVER_RANK."""
    builder = ModelBuilder()
    main = builder.main
    dims = [1] * OVER_RANK
    main.outputs(main.apply(Op.ABS, [main.input(T.TENSOR_FLOAT32, dims)], T.TENSOR_FLOAT32, dims))
    return builder.build()


def test_a_changed_limit_is_never_answered_from_the_memo(monkeypatch):
    """The memo's keys hold the limits in force: what was derived under one limit is not
    reused under another, with nothing emptied by hand (a model of a rank over the limit has
    its operations unsupported)."""
    device = device_module.SampleDriver()

    def supported() -> list[bool]:
        status, flags = device.getSupportedOperations_1_3(over_rank_model())
        assert status == ErrorStatus.NONE
        return flags
    assert supported() == [False]
    with monkeypatch.context() as patched:
        patched.setattr(limits, "MAX_RANK", OVER_RANK)
        patched.setattr(operands, "MAX_RANK", OVER_RANK)
        assert supported() == [True]
    assert supported() == [False]


def state_of(root: object) -> bytes:
    """Everything reachable from ``root`` that could hold data: fields, containers, array
    contents, and the cells and defaults of closures (steps are closures over kernels and
    their constants). Code, classes and modules are named, not entered."""
    on_path: set[int] = set()

    def visible(value):
        if isinstance(value, (int, float, str, bytes, bool, type(None))):
            return value
        if isinstance(value, np.ndarray):
            return ("ndarray", value.dtype.str, value.shape, value.tobytes())
        if isinstance(value, (type, types.ModuleType, types.CodeType)) or callable(value) and \
                not isinstance(value, (types.FunctionType, types.MethodType, functools.partial)) \
                and not hasattr(value, "__dict__"):
            return repr(value)
        if id(value) in on_path:
            return "<cycle>"
        on_path.add(id(value))
        try:
            return type(value).__name__, parts(value)
        finally:
            on_path.discard(id(value))

    def parts(value):
        if isinstance(value, types.FunctionType):
            cells = [cell.cell_contents for cell in value.__closure__ or ()
                     if cell.cell_contents is not value]
            return [value.__qualname__, visible(cells), visible(value.__defaults__),
                    visible(value.__kwdefaults__)]
        if isinstance(value, types.MethodType):
            return [value.__func__.__qualname__, visible(value.__self__)]
        if isinstance(value, functools.partial):
            return [visible(value.func), visible(value.args), visible(value.keywords)]
        if isinstance(value, (list, tuple)):
            return [visible(v) for v in value]
        if isinstance(value, dict):
            return sorted((repr(k), visible(v)) for k, v in value.items())
        if isinstance(value, (set, frozenset)):
            return sorted(map(repr, value))
        fields = dict(getattr(value, "__dict__", {}))
        for klass in type(value).__mro__:
            for slot in getattr(klass, "__slots__", ()):
                if hasattr(value, slot):
                    fields[slot] = getattr(value, slot)
        return visible(fields)
    return pickle.dumps(visible(root))


@pytest.mark.parametrize("name", ["fibonacci_while_model", "nested_model", "add_model"])
def test_executions_leave_the_shared_plan_as_they_found_it(name):
    """A plan is shared by prepared models of equal content and run by concurrent
    executions: no execution may leave anything in it."""
    factory = getattr(models, name)
    case = factory(6) if name == "fibonacci_while_model" else factory()
    device = device_module.SampleDriver()
    prepared = prepare(case.model, device)
    program = prepared._program
    before = state_of(program)
    assert len(before) > 1000       # the walk reaches the steps' constants, not just names
    for path in (Path.SYNC, Path.ASYNC, Path.FENCED, Path.BURST):
        request = models.model_request(case.model, case.inputs)
        assert execute(prepared, request, path).status == ErrorStatus.NONE
    assert prepared._program is program
    assert state_of(program) == before
