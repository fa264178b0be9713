"""The content memos of validation and of the device: a model of the same content as a
recent one is not validated (or compiled) again, a model that differs in any field is, and
fields of unexpected types bypass the memos altogether. Whatever the memos do, every model
gets exactly the verdict uncached validation gives it."""
from __future__ import annotations

import copy
import dataclasses
import threading
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

from driver import device as device_module
from driver import fingerprint as fingerprint_module
from driver.errors import ValidationError
from driver.fingerprint import MODEL_MEMO, VALID_PARTS, ContentMemo, MISSING, model_fingerprint
from driver.hal import (DataLocation, ErrorStatus, ExtensionNameAndPrefix, Model, Operand,
                        OperandExtraParams, OperandLifeTime as L, OperandType as T, Operation,
                        OperationType as Op, Subgraph, SymmPerChannelQuantParams)
from driver.validation import model as model_validation
from driver.validation import validate_model
from tests import models
from tests.driver.execution import Path, execute, prepare
from tests.models import ALL_MODELS
from tests.validation import mutations
from tests.validation.mutations import ModelMutation, all_model_mutations, valid_variants

MODEL_MUTATIONS = all_model_mutations()


_check_model = model_validation.check_model     # before any test counts its calls


def uncached_verdict(model: Model) -> str | None:
    """The error message of full validation, None for a valid model."""
    try:
        _check_model(model)
    except ValidationError as error:
        return str(error)
    return None


def memo_verdict(model: Model, **flags) -> str | None:
    try:
        validate_model(model, **flags)
    except ValidationError as error:
        assert error.status == ErrorStatus.INVALID_ARGUMENT
        return str(error)
    return None


@pytest.fixture
def full_validations(monkeypatch) -> list[Model]:
    """The models check_model (full validation) sees from now on; starts with empty memos."""
    MODEL_MEMO.clear()
    seen: list[Model] = []
    check_model = model_validation.check_model

    def counting(model, *args, **kwargs):
        seen.append(model)
        return check_model(model, *args, **kwargs)
    monkeypatch.setattr(model_validation, "check_model", counting)
    return seen


# --- hits ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(ALL_MODELS))
def test_a_content_equal_model_is_validated_once(name, full_validations):
    first, second = ALL_MODELS[name]().model, ALL_MODELS[name]().model
    assert first is not second
    assert model_fingerprint(first) is not None
    assert model_fingerprint(first) == model_fingerprint(second)
    validate_model(first)
    validate_model(second)
    assert full_validations == [first]


def test_a_remembered_failure_is_raised_as_a_new_error_each_time(full_validations):
    model = models.add_model().model
    model.main.operands[0].scale = 1.0
    errors = []
    for _ in range(3):
        with pytest.raises(ValidationError) as raised:
            validate_model(model)
        errors.append(raised.value)
    assert len(full_validations) == 1
    assert len({id(error) for error in errors}) == 3
    assert len({str(error) for error in errors}) == 1
    assert "non-zero scale" in str(errors[0])


def test_the_validation_flags_are_part_of_the_key(full_validations):
    unknown_size = mutations.unknown_size_while_mutations()[0]
    model = unknown_size.invalid_model()
    validate_model(model)
    with pytest.raises(ValidationError):
        validate_model(model, allow_unknown_size_while=False)
    validate_model(model)
    assert len(full_validations) == 2


def test_remembered_parts_still_get_the_checks_that_depend_on_the_rest_of_the_model():
    """An operand and a structure found valid before skip their own checks, never the
    bounds of the operand's location in this model's storage."""
    model = models.add_model().model
    assert memo_verdict(model) is None              # its operands and structure are remembered
    model.operandValues = b""                       # the constant's bytes are gone
    remembered = memo_verdict(model)
    VALID_PARTS.clear()
    MODEL_MEMO.clear()
    assert remembered == memo_verdict(model)
    assert "outside operandValues of 0 bytes" in remembered


# --- misses: every one-field change -------------------------------------------------------

@pytest.mark.parametrize("mutation", MODEL_MUTATIONS, ids=[m.id for m in MODEL_MUTATIONS])
def test_a_mutated_model_misses_and_gets_the_uncached_verdict(mutation: ModelMutation):
    original = mutation.build().model
    validate_model(original)                        # the valid original is remembered
    mutated = mutation.invalid_model()
    fingerprint = model_fingerprint(mutated)
    assert fingerprint is None or fingerprint != model_fingerprint(original)
    expected = uncached_verdict(mutated)
    assert expected is not None
    assert memo_verdict(mutated) == expected
    assert memo_verdict(mutated) == expected        # and again, from the memo


@pytest.mark.parametrize("mutation", MODEL_MUTATIONS, ids=[m.id for m in MODEL_MUTATIONS])
def test_a_model_mutated_in_place_after_validation_is_validated_again(mutation: ModelMutation):
    model = mutation.build().model
    assert memo_verdict(model) is None
    mutation.mutate(model)                          # the client edits its Model between calls
    assert memo_verdict(model) == uncached_verdict(model)


@pytest.mark.parametrize("name", sorted(valid_variants()))
def test_valid_variants_stay_valid_through_the_memo(name):
    variant = valid_variants()[name]()
    assert memo_verdict(variant) is None
    assert memo_verdict(valid_variants()[name]()) is None


def test_rewriting_a_pool_changes_the_fingerprint():
    model = models.constant_reference_model().model
    before = model_fingerprint(model)
    pool = model.pools[0]
    pool.write(bytes(pool.size))
    assert model_fingerprint(model) != before


def _swapped_enum_classes() -> tuple[Model, Model]:
    """Two models whose operand types are equal in value, but an enum in one where the
    other has a plain int."""
    first, second = models.add_model().model, models.add_model().model
    first.main.operands[0].type = int(T.TENSOR_FLOAT32)
    second.main.operands[1].type = int(T.TENSOR_FLOAT32)
    return first, second


def test_equal_values_of_different_classes_do_not_share_a_fingerprint():
    first, second = _swapped_enum_classes()
    assert model_fingerprint(first) != model_fingerprint(second)
    positive, negative = models.add_model().model, models.add_model().model
    negative.main.operands[0].scale = -0.0      # equal to 0.0, printed differently
    assert model_fingerprint(positive) != model_fingerprint(negative)


def _add_model_with(edit: Callable[[Model], object]) -> Model:
    model = models.add_model().model
    edit(model)
    return model


def _two_add_models(first_edit: Callable[[Model], object],
                    second_edit: Callable[[Model], object]) -> tuple[Model, Model]:
    return _add_model_with(first_edit), _add_model_with(second_edit)


def _per_channel_scales(scales: list) -> Model:
    model = models.per_channel_model().model
    model.main.operands[0].extraParams.channelQuant.scales = scales
    return model


def _with_spare_operand(in_main: bool) -> Model:
    """add_model and a copy of its output operand, in main or in a referenced subgraph."""
    model = models.add_model().model
    spare = copy.deepcopy(model.main.operands[3])
    model.referenced = [Subgraph(operands=[] if in_main else [spare])]
    if in_main:
        model.main.operands.append(spare)
    return model


def _set_lifetime(index: int) -> Callable[[Model], None]:
    def edit(model: Model) -> None:
        model.main.operands[index].lifetime = int(model.main.operands[index].lifetime)
    return edit


#: Pairs of models whose fields hold the same values in the same order, with different
#: boundaries or classes: the flat encoding must still tell them apart.
SAME_VALUES_ELSEWHERE: dict[str, Callable[[], tuple[Model, Model]]] = {
    "a dimension moved to the previous operand": lambda: _two_add_models(
        lambda m: (_set_operand(0, dimensions=[2, 2, 2])(m), _set_operand(1, dimensions=[2])(m)),
        lambda m: None),
    "an index moved from an operation's inputs to its outputs": lambda: _two_add_models(
        lambda m: None,
        lambda m: setattr(m.main, "operations", [Operation(Op.ADD, [0, 1], [2, 3])])),
    "an index moved from the inputs to the outputs": lambda: _two_add_models(
        lambda m: None, lambda m: (setattr(m.main, "inputIndexes", [0]),
                                   setattr(m.main, "outputIndexes", [1, 3]))),
    "an operand moved to a referenced subgraph": lambda: (_with_spare_operand(True),
                                                         _with_spare_operand(False)),
    "a plain int lifetime on another operand": lambda: _two_add_models(_set_lifetime(0),
                                                                       _set_lifetime(1)),
    "a plain int operation type": lambda: _two_add_models(
        lambda m: None, lambda m: setattr(m.main.operations[0], "type", int(Op.ADD))),
    "-0.0 for 0.0 in per-channel scales": lambda: (_per_channel_scales([0.5, 0.0, 2.0]),
                                                   _per_channel_scales([0.5, -0.0, 2.0])),
    "ints beyond 32 bits": lambda: _two_add_models(_set_operand(0, dimensions=[2, 1 << 40]),
                                                   _set_operand(0, dimensions=[2, 1 << 41])),
    "another extension prefix": lambda: _two_add_models(
        lambda m: setattr(m, "extensionNameToPrefix", [ExtensionNameAndPrefix("com.a", 1)]),
        lambda m: setattr(m, "extensionNameToPrefix", [ExtensionNameAndPrefix("com.a", 2)])),
}


@pytest.mark.parametrize("name", sorted(SAME_VALUES_ELSEWHERE))
def test_the_same_values_elsewhere_do_not_share_a_fingerprint(name):
    first, second = SAME_VALUES_ELSEWHERE[name]()
    assert model_fingerprint(first) is not None and model_fingerprint(second) is not None
    assert model_fingerprint(first) != model_fingerprint(second)
    assert memo_verdict(first) == uncached_verdict(first)
    assert memo_verdict(second) == uncached_verdict(second)


def test_a_nan_scale_does_not_defeat_the_memo(full_validations):
    """Scales are compared by their bits: two NaNs of equal bits are equal content, though
    a NaN compares equal to nothing."""
    first, second = models.add_model().model, models.add_model().model
    first.main.operands[0].scale = float("nan")
    second.main.operands[0].scale = float("nan")
    assert model_fingerprint(first) == model_fingerprint(second)
    assert memo_verdict(first) == memo_verdict(second) == uncached_verdict(first)
    assert full_validations == [first]


# --- garbage bypasses ---------------------------------------------------------------------

def _set_operand(index: int, **fields) -> Callable[[Model], None]:
    def edit(model: Model) -> None:
        for name, value in fields.items():
            setattr(model.main.operands[index], name, value)
    return edit


class _OperandSubclass(Operand):
    pass


GARBAGE: dict[str, Callable[[Model], None]] = {
    "str in dimensions": _set_operand(0, dimensions=["2", 2]),
    "bool in dimensions": _set_operand(0, dimensions=[True, 2]),
    "float in dimensions": _set_operand(0, dimensions=[2.0, 2]),
    "numpy int in dimensions": _set_operand(0, dimensions=[np.int64(2), 2]),
    "dimensions a tuple": _set_operand(0, dimensions=(2, 2)),
    "unhashable type": _set_operand(0, type=[3]),
    "float type": _set_operand(0, type=3.0),
    "lifetime of another enum": _set_operand(0, lifetime=T.TENSOR_QUANT8_SYMM),
    "bool numberOfConsumers": _set_operand(0, numberOfConsumers=True),
    "int scale": _set_operand(0, scale=0),
    "None location": _set_operand(0, location=None),
    "None extraParams": _set_operand(0, extraParams=None),
    "operand subclass": lambda m: m.main.operands.__setitem__(
        0, _OperandSubclass(T.TENSOR_FLOAT32, [2, 2], 1, lifetime=L.SUBGRAPH_INPUT)),
    "None operand": lambda m: m.main.operands.__setitem__(0, None),
    "float operation input": lambda m: setattr(m.main.operations[0], "inputs", [0.0, 1, 2]),
    "operation a tuple": lambda m: m.main.operations.__setitem__(0, (Op.ADD, [0, 1, 2], [3])),
    "None pool": lambda m: setattr(m, "pools", [None]),
    "pools None": lambda m: setattr(m, "pools", None),
    "closed pool": lambda m: (m.pools.append(models.constant_reference_model().model.pools[0]),
                              m.pools[-1].close()),
    "bytearray operandValues": lambda m: setattr(m, "operandValues", bytearray(m.operandValues)),
    "str operandValues": lambda m: setattr(m, "operandValues", "abc"),
    "int relaxation flag": lambda m: setattr(m, "relaxComputationFloat32toFloat16", 0),
    "referenced a tuple": lambda m: setattr(m, "referenced", ()),
    "main None": lambda m: setattr(m, "main", None),
    "inputIndexes with a bool": lambda m: setattr(m.main, "inputIndexes", [0, True]),
    "outputIndexes a tuple": lambda m: setattr(m.main, "outputIndexes", (3,)),
    "operations None": lambda m: setattr(m.main, "operations", None),
    "bool poolIndex": lambda m: setattr(m.main.operands[0].location, "poolIndex", True),
    "float location length": lambda m: setattr(m.main.operands[0].location, "length", 0.0),
    "location a tuple": _set_operand(0, location=(0, 0, 0)),
    "numpy float scale": _set_operand(0, scale=np.float64(0.0)),
    "unhashable lifetime": _set_operand(0, lifetime=[1]),
    "extraParams of another class": _set_operand(0, extraParams=SymmPerChannelQuantParams([1.0])),
    "channelQuant of another class": _set_operand(
        0, extraParams=OperandExtraParams(channelQuant=DataLocation())),
    "int in per-channel scales": _set_operand(
        0, extraParams=OperandExtraParams(channelQuant=SymmPerChannelQuantParams([1]))),
    "bytearray extension": _set_operand(
        0, extraParams=OperandExtraParams(extension=bytearray(b"x"))),
    "operand an int": lambda m: m.main.operands.__setitem__(0, 3),
    "operation type of another enum": lambda m: setattr(m.main.operations[0], "type",
                                                        T.TENSOR_FLOAT32),
    "extension entry a tuple": lambda m: setattr(m, "extensionNameToPrefix", [("com.a", 1)]),
    "None referenced subgraph": lambda m: setattr(m, "referenced", [None]),
}


@pytest.mark.parametrize("name", sorted(GARBAGE))
def test_fields_of_unexpected_types_bypass_the_memo(name, full_validations):
    model = models.add_model().model
    GARBAGE[name](model)
    assert model_fingerprint(model) is None
    expected = uncached_verdict(model)
    assert memo_verdict(model) == expected
    assert memo_verdict(model) == expected
    assert len(full_validations) == 2               # nothing remembered


_HOLDERS: dict[str, Callable[[Model], object]] = {
    "model": lambda m: m,
    "subgraph": lambda m: m.main,
    "operand": lambda m: m.main.operands[0],
    "location": lambda m: m.main.operands[0].location,
    "extraParams": lambda m: m.main.operands[0].extraParams,
    "operation": lambda m: m.main.operations[0],
}
_DELETIONS = [(holder, f.name) for holder, get in _HOLDERS.items()
              for f in dataclasses.fields(get(models.add_model().model))]


@pytest.mark.parametrize("holder,name", _DELETIONS, ids=[f"{h}.{n}" for h, n in _DELETIONS])
def test_a_deleted_field_bypasses_the_memo_or_reads_as_its_default(holder, name):
    """A field deleted from an instance reads as the class's default when it has one
    (validation reads the same), and otherwise raises AttributeError: no fingerprint."""
    model = models.add_model().model
    delattr(_HOLDERS[holder](model), name)
    fingerprint = model_fingerprint(model)
    if not hasattr(_HOLDERS[holder](model), name):
        assert fingerprint is None
    else:
        assert fingerprint is not None
        assert memo_verdict(model) == uncached_verdict(model)


def test_an_attribute_error_from_a_garbage_operand_bypasses_the_memo():
    class Garbage:
        @property
        def dimensions(self):
            raise AttributeError("no dimensions")
    model = models.add_model().model
    model.main.operands[0] = Garbage()
    assert model_fingerprint(model) is None


def test_a_model_that_is_not_a_model_bypasses_the_memo():
    assert model_fingerprint("model") is None
    assert memo_verdict("model") == "model: str is not a Model"


def test_large_models_are_not_fingerprinted():
    model = models.constant_reference_model().model
    from driver.memory import Memory
    model.pools.append(Memory.create(1 << 20))
    assert model_fingerprint(model) is None
    assert memo_verdict(model) is None


def _with_extension_bytes(size: int) -> Model:
    model = models.add_model().model
    model.main.operands[0].extraParams = OperandExtraParams(extension=bytes(size))
    return model


#: Models over a limit, by way of each kind of field that counts towards it.
OVER_THE_LIMITS: dict[str, Callable[[], Model]] = {
    "many operands": lambda: _add_model_with(lambda m: m.main.operands.extend(
        copy.deepcopy(m.main.operands[3]) for _ in range(40))),
    "long dimensions": lambda: _add_model_with(_set_operand(0, dimensions=[1] * 200)),
    "many operation inputs": lambda: _add_model_with(
        lambda m: setattr(m.main.operations[0], "inputs", [0] * 200)),
    "many referenced subgraphs": lambda: _add_model_with(
        lambda m: setattr(m, "referenced", [Subgraph() for _ in range(60)])),
    "long per-channel scales": lambda: _per_channel_scales([0.5] * 200),
    "long extension": lambda: _with_extension_bytes(2000),
    "long operandValues": lambda: _add_model_with(
        lambda m: setattr(m, "operandValues", m.operandValues + bytes(2000))),
}


@pytest.mark.parametrize("name", sorted(OVER_THE_LIMITS))
def test_models_over_the_limits_are_not_fingerprinted(name, monkeypatch):
    """With limits lowered to 200 integer fields and 1000 bytes (which every model of the
    suite's own stays under), each of these models is over one of them."""
    monkeypatch.setattr(fingerprint_module, "MAX_FINGERPRINTED_INTS", 200)
    monkeypatch.setattr(fingerprint_module, "MAX_FINGERPRINTED_BYTES", 1000)
    assert model_fingerprint(models.add_model().model) is not None
    assert model_fingerprint(models.per_channel_model().model) is not None
    assert model_fingerprint(_with_extension_bytes(10)) is not None
    model = OVER_THE_LIMITS[name]()
    assert model_fingerprint(model) is None
    assert memo_verdict(model) == uncached_verdict(model)


# --- the memo itself ----------------------------------------------------------------------

def test_the_memo_is_bounded_and_least_recently_used_goes_first():
    memo: ContentMemo[int] = ContentMemo(3)
    for key in range(5):
        memo.put(key, key)
    assert len(memo) == 3
    assert memo.get(0) is MISSING and memo.get(1) is MISSING
    assert memo.get(2) == 2                          # now the most recently used
    memo.put(5, 5)
    assert memo.get(3) is MISSING and memo.get(2) == 2


def test_the_model_memo_is_bounded():
    for i in range(MODEL_MEMO.capacity + 10):
        model = models.add_model().model
        model.main.operands[0].dimensions = [2, 2 + i]  # invalid: a different message each
        memo_verdict(model)
    assert len(MODEL_MEMO) == MODEL_MEMO.capacity


def test_concurrent_validations_agree_with_uncached_ones():
    cases = [m for m in MODEL_MUTATIONS if m.id.startswith(("add/", "if/", "nested/"))][:120]
    expected = [uncached_verdict(m.invalid_model()) for m in cases]
    failures: list[str] = []

    def worker(offset: int) -> None:
        for k in range(len(cases)):
            i = (k + offset) % len(cases)
            got = memo_verdict(cases[i].invalid_model())
            if got != expected[i]:
                failures.append(f"{cases[i].id}: {got!r} != {expected[i]!r}")
    threads = [threading.Thread(target=worker, args=(n * 17,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


# --- the device ---------------------------------------------------------------------------

@dataclass
class Compilations:
    models: list


@pytest.fixture
def compilations(monkeypatch, full_validations) -> Compilations:
    seen = Compilations([])
    compile_model = device_module.compile_model

    def counting(model, **kwargs):
        seen.models.append(model)
        return compile_model(model, **kwargs)
    monkeypatch.setattr(device_module, "compile_model", counting)
    return seen


def test_get_supported_then_prepare_validates_and_compiles_once(compilations, full_validations):
    device = device_module.SampleDriver()
    case = models.nested_model()
    status, supported = device.getSupportedOperations_1_3(case.model)
    assert status == ErrorStatus.NONE and all(supported)
    prepared = prepare(models.nested_model().model, device)    # same content, new objects
    assert len(compilations.models) == 1 and len(full_validations) == 1
    outcome = execute(prepared, case.request(), Path.SYNC)
    assert outcome.status == ErrorStatus.NONE


def test_an_invalid_model_is_judged_once_by_the_device(compilations, full_validations):
    device = device_module.SampleDriver()
    model = models.add_model().model
    model.main.operands[3].dimensions = [3, 3]      # shapes that do not match: compile fails
    status, _ = device.getSupportedOperations_1_3(model)
    assert status == ErrorStatus.INVALID_ARGUMENT
    status, _ = device.getSupportedOperations_1_3(model)
    assert status == ErrorStatus.INVALID_ARGUMENT
    assert len(compilations.models) == 1


def test_a_rewritten_pool_is_compiled_again_with_the_new_constant(compilations):
    device = device_module.SampleDriver()
    case = models.constant_reference_model()
    model = case.model
    first = prepare(model, device)
    constant = model.main.operands[1]
    assert constant.lifetime == L.CONSTANT_REFERENCE
    location = constant.location
    model.pools[location.poolIndex].write(np.array([1.0, 1.0, 1.0], np.float32).tobytes(),
                                          location.offset)
    second = prepare(model, device)
    assert len(compilations.models) == 2
    a = case.inputs[0]
    for prepared, b in ((first, np.array([100.0, 200.0, 300.0], np.float32)),
                        (second, np.array([1.0, 1.0, 1.0], np.float32))):
        request = case.request()
        assert execute(prepared, request, Path.SYNC).status == ErrorStatus.NONE
        np.testing.assert_array_equal(models.read_outputs(model, request)[0], a + b + a)


def test_prepared_models_of_equal_content_run_independently(compilations):
    device = device_module.SampleDriver()
    cases = [models.fibonacci_while_model(6), models.fibonacci_while_model(6)]
    prepared = [prepare(case.model, device) for case in cases]
    assert len(compilations.models) == 1            # one plan, shared
    cases[0].model.main.operands.clear()            # the client reuses its Model: no effect
    results: list = []

    def run(k: int) -> None:
        for _ in range(20):
            request = models.model_request(cases[1].model, cases[k].inputs)
            outcome = execute(prepared[k], request, Path.SYNC)
            results.append((outcome.status, [o.tolist() for o in
                                             models.read_outputs(cases[1].model, request)]))
    threads = [threading.Thread(target=run, args=(k,)) for k in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    expected = [o.tolist() for o in cases[1].expected]
    assert results and all(result == (ErrorStatus.NONE, expected) for result in results)


def test_garbage_through_the_device_is_still_invalid_argument(compilations):
    device = device_module.SampleDriver()
    for name in sorted(GARBAGE):
        model = models.add_model().model
        GARBAGE[name](model)
        status, _ = device.getSupportedOperations_1_3(model)
        expected = ErrorStatus.NONE if uncached_verdict(model) is None else ErrorStatus.INVALID_ARGUMENT
        assert status == expected, name
