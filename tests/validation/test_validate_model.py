"""validate_model accepts the valid models and rejects each one-field mutation of them."""
from __future__ import annotations

import pytest

from driver.errors import ValidationError
from driver.hal import ErrorStatus
from driver.validation import validate_model
from tests.models import ALL_MODELS
from tests.validation.mutations import all_model_mutations, valid_variants, ModelMutation
from tests.validation import mutations

MODEL_MUTATIONS = all_model_mutations()


@pytest.mark.parametrize("name", sorted(ALL_MODELS))
def test_valid_model_passes(name):
    validate_model(ALL_MODELS[name]().model)


@pytest.mark.parametrize("name", sorted(valid_variants()))
def test_valid_variant_passes(name):
    validate_model(valid_variants()[name]())


@pytest.mark.parametrize("mutation", MODEL_MUTATIONS, ids=[m.id for m in MODEL_MUTATIONS])
def test_mutation_is_rejected(mutation: ModelMutation):
    model = mutation.invalid_model()
    with pytest.raises(ValidationError) as raised:
        validate_model(model)
    assert raised.value.status == ErrorStatus.INVALID_ARGUMENT


def test_mutation_ids_are_unique():
    ids = [m.id for m in MODEL_MUTATIONS]
    assert len(ids) == len(set(ids))


def test_every_model_is_mutated():
    mutated = {m.id.split("/")[0] for m in MODEL_MUTATIONS}
    assert set(mutations.MODEL_BUILDERS) <= mutated


# --- WHILE operands of unknown size: invalid for the strict HAL 1.3 rule only ----------

UNKNOWN_SIZE_WHILE = mutations.unknown_size_while_mutations()


@pytest.mark.parametrize("mutation", UNKNOWN_SIZE_WHILE, ids=[m.id for m in UNKNOWN_SIZE_WHILE])
def test_unknown_size_while_allowed_by_default(mutation):
    validate_model(mutation.invalid_model())


@pytest.mark.parametrize("mutation", UNKNOWN_SIZE_WHILE, ids=[m.id for m in UNKNOWN_SIZE_WHILE])
def test_unknown_size_while_rejected_by_strict_rule(mutation):
    with pytest.raises(ValidationError):
        validate_model(mutation.invalid_model(), allow_unknown_size_while=False)


def test_unknown_size_while_cases_exist():
    assert len(UNKNOWN_SIZE_WHILE) == 2


def test_allowing_unknown_sizes_keeps_other_while_checks():
    incompatible = next(m for m in MODEL_MUTATIONS if m.id == "while_counter/body output dims [2]")
    with pytest.raises(ValidationError):
        validate_model(incompatible.invalid_model(), allow_unknown_size_while=True)


def test_validation_does_not_modify_the_model():
    case = ALL_MODELS["nested"]()
    before = repr(case.model)
    validate_model(case.model)
    assert repr(case.model) == before
