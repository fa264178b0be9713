"""validate_request accepts the sample requests and rejects each one-field mutation, with
the driver's memo off and on."""
from __future__ import annotations

import pytest

from driver.errors import ValidationError
from driver.hal import ErrorStatus
from driver.validation import validate_model, validate_request
from tests.models import ALL_MODELS
from tests.validation.mutations import (by_model, invalid_fenced_requests, request_mutations,
                                        valid_request, valid_requests)

pytestmark = pytest.mark.usefixtures("memo_setting")

REQUEST_MUTATIONS = request_mutations()
#: One case per model: its mutations repeat the same rules over its inputs and outputs.
REQUEST_GROUPS = by_model(REQUEST_MUTATIONS)
RUNNABLE = sorted(name for name in ALL_MODELS if name != "extension")


@pytest.mark.parametrize("name", RUNNABLE)
@pytest.mark.parametrize("fenced", [False, True], ids=["outputs may be unspecified", "fenced"])
def test_sample_request_passes(name, fenced):
    case = ALL_MODELS[name]()
    validate_request(case.request(), case.model, allow_unspecified_output=not fenced)


def wrong_answer(mutation) -> str | None:
    """What validate_request did with the mutated request, None when it rejected it."""
    request, model = mutation.invalid_request()
    validate_model(model)    # the model stays valid: only the request is at fault
    try:
        validate_request(request, model)
    except ValidationError as error:
        return None if error.status == ErrorStatus.INVALID_ARGUMENT else repr(error)
    return "accepted"


@pytest.mark.parametrize("group", sorted(REQUEST_GROUPS))
def test_each_mutation_is_rejected(group):
    failures = {m.id: said for m in REQUEST_GROUPS[group] for said in [wrong_answer(m)] if said}
    assert not failures, "\n".join(f"{id}: {said}" for id, said in failures.items())


def test_mutation_ids_are_unique():
    ids = [m.id for m in REQUEST_MUTATIONS]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("name", sorted(valid_requests()))
def test_valid_edit_passes(name):
    request, model, options = valid_request(name)
    validate_request(request, model, **options)


@pytest.mark.parametrize("name", sorted(invalid_fenced_requests()))
def test_unspecified_output_rejected_only_when_forbidden(name):
    build, edit = invalid_fenced_requests()[name]
    case = build()
    request = case.request()
    edit(request, case.model)
    validate_request(request, case.model, allow_unspecified_output=True)
    with pytest.raises(ValidationError):
        validate_request(request, case.model, allow_unspecified_output=False)


def test_validation_does_not_modify_the_request():
    case = ALL_MODELS["if"]()
    request = case.request()
    before = repr(request)
    validate_request(request, case.model)
    assert repr(request) == before
