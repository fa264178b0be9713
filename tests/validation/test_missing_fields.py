"""A HAL structure with a field deleted is an invalid argument (a clear status naming the
field), never an AttributeError leaving the driver; an AttributeError of the driver's own
is still a bug and still propagates."""
from __future__ import annotations

import dataclasses

import pytest

from driver import SampleDriver
from driver.errors import ValidationError
from driver.hal import ErrorStatus
from driver.validation import model as model_validation
from driver.validation import validate_model
from driver.validation.structure import first_missing_field
from tests import models
from tests.driver.execution import Path, execute, prepare

pytestmark = pytest.mark.usefixtures("memo_setting")


def field_paths(value, where: str):
    """(object, field name, where) of every dataclass field inside ``value``."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            yield from field_paths(item, f"{where}[{i}]")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield value, field.name, f"{where}.{field.name}"
            yield from field_paths(getattr(value, field.name), f"{where}.{field.name}")


def deletable(root, where: str) -> list[int]:
    """Positions in field_paths(root) whose field has no class default (deleting one with a
    default just reads the default)."""
    return [k for k, (obj, name, _) in enumerate(field_paths(root, where))
            if not hasattr(type(obj), name)]


MODEL_FACTORIES = {"add": models.add_model, "nested": models.nested_model}


@pytest.mark.parametrize("factory", sorted(MODEL_FACTORIES))
def test_a_model_missing_a_field_is_invalid_argument(factory):
    make = MODEL_FACTORIES[factory]
    positions = deletable(make().model, "model")
    assert len(positions) > 10
    device = SampleDriver()
    for k in positions:
        model = make().model
        obj, name, where = list(field_paths(model, "model"))[k]
        delattr(obj, name)
        status, supported = device.getSupportedOperations_1_3(model)
        assert status == ErrorStatus.INVALID_ARGUMENT and supported == [], where
        with pytest.raises(ValidationError, match=f"has no field {name}"):
            validate_model(model)


def test_a_request_missing_a_field_is_invalid_argument():
    case = models.add_model()
    device = SampleDriver()
    prepared = prepare(case.model, device)
    positions = deletable(case.request(), "request")
    assert len(positions) > 5
    for k in positions:
        for path in (Path.SYNC, Path.ASYNC, Path.FENCED, Path.BURST):
            request = case.request()
            obj, name, where = list(field_paths(request, "request"))[k]
            delattr(obj, name)
            assert execute(prepared, request, path).status == ErrorStatus.INVALID_ARGUMENT, (where, path)


def test_the_message_names_where_the_field_is_missing():
    model = models.add_model().model
    del model.main.operations[0].inputs
    assert first_missing_field(model, "model") == "model.main.operations[0]: Operation has no field inputs"
    assert first_missing_field(models.add_model().model, "model") is None


def test_an_attribute_error_of_the_driver_itself_still_propagates(monkeypatch):
    def buggy(subgraph, *args):
        return subgraph.no_such_field
    monkeypatch.setattr(model_validation, "check_not_empty", buggy)
    with pytest.raises(AttributeError, match="no_such_field"):
        model_validation.check_model(models.add_model().model)
