"""validate_model accepts the valid models, and WHILE operands of unknown size but under
the strict HAL 1.3 rule, with the driver's memo off and on. (Each one-field mutation of the
valid models is rejected by the rule it breaks in every setting of the memo:
test_fingerprint_memo.)"""
from __future__ import annotations

import pytest

from driver.errors import ValidationError
from driver.hal import ErrorStatus
from driver.validation import validate_model
from tests.models import ALL_MODELS
from tests.validation.mutations import all_model_mutations, by_model
from tests.validation import mutations

pytestmark = pytest.mark.usefixtures("memo_setting")

MODEL_MUTATIONS = all_model_mutations()
#: One case per model: its mutations repeat the same rules over its operands and operations.
MODEL_GROUPS = by_model(MODEL_MUTATIONS)


@pytest.mark.parametrize("name", sorted(ALL_MODELS))
def test_valid_model_passes(name):
    validate_model(ALL_MODELS[name]().model)


def rejection(model, **flags) -> str:
    """What validate_model says of ``model``: the message of its ValidationError (with
    INVALID_ARGUMENT), or why there is none."""
    try:
        validate_model(model, **flags)
    except ValidationError as error:
        return str(error) if error.status == ErrorStatus.INVALID_ARGUMENT else repr(error)
    return "accepted"


def test_mutation_ids_are_unique():
    ids = [m.id for m in MODEL_MUTATIONS]
    assert len(ids) == len(set(ids))


def test_every_model_is_mutated():
    assert set(mutations.MODEL_BUILDERS) <= set(MODEL_GROUPS)


# --- WHILE operands of unknown size: invalid for the strict HAL 1.3 rule only ----------

UNKNOWN_SIZE_WHILE = mutations.unknown_size_while_mutations()


@pytest.mark.parametrize("mutation", UNKNOWN_SIZE_WHILE, ids=[m.id for m in UNKNOWN_SIZE_WHILE])
def test_unknown_size_while_allowed_by_default_and_rejected_by_strict_rule(mutation):
    validate_model(mutation.invalid_model())
    assert mutation.rejects(rejection(mutation.invalid_model(), allow_unknown_size_while=False))


def test_unknown_size_while_cases_exist():
    assert len(UNKNOWN_SIZE_WHILE) == 2


def test_validation_does_not_modify_the_model():
    case = ALL_MODELS["nested"]()
    before = repr(case.model)
    validate_model(case.model)
    assert repr(case.model) == before
