"""validate_request accepts the sample requests, with the driver's memo off and on, and
rejects outputs of unspecified shape where they cannot be reported (its mutations and valid
edits are judged in every setting of the memo: test_fingerprint_memo)."""
from __future__ import annotations

import pytest

from driver.errors import ValidationError
from driver.validation import validate_request
from tests.models import ALL_MODELS
from tests.validation.mutations import invalid_fenced_requests, request_mutations

pytestmark = pytest.mark.usefixtures("memo_setting")

REQUEST_MUTATIONS = request_mutations()
RUNNABLE = sorted(name for name in ALL_MODELS if name != "extension")


@pytest.mark.parametrize("name", RUNNABLE)
@pytest.mark.parametrize("fenced", [False, True], ids=["outputs may be unspecified", "fenced"])
def test_sample_request_passes(name, fenced):
    case = ALL_MODELS[name]()
    validate_request(case.request(), case.model, allow_unspecified_output=not fenced)


def test_mutation_ids_are_unique():
    ids = [m.id for m in REQUEST_MUTATIONS]
    assert len(ids) == len(set(ids))


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
