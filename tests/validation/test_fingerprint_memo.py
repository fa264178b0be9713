"""The driver's memo (driver/validation/memo.py): a model of the same content as a recent
one is not validated (or compiled) again, a model that differs in any field is, and fields
of unexpected types bypass the memo altogether. Whatever the memo does, with its parts or
without, every model and request gets exactly the verdict validation gives it, message for
message; and with it off, it remembers nothing."""
from __future__ import annotations

import copy
import dataclasses
import os
import subprocess
import sys
from typing import Callable

import numpy as np
import pytest

from driver import device as device_module
from driver import fingerprint as fingerprint_module
from driver.errors import ValidationError
from driver.fingerprint import ContentMemo, MISSING, model_fingerprint
from driver.hal import (DataLocation, ErrorStatus, ExtensionNameAndPrefix, Model, Operand,
                        OperandExtraParams, OperandLifeTime as L, OperandType as T, Operation,
                        OperationType as Op, Subgraph, SymmPerChannelQuantParams)
from driver.validation import memo, validate_model, validate_request
from driver.validation.model import check_model
from driver.validation.request import check_request
from tests import models
from tests.driver.execution import Path, execute, prepare, run_concurrently
from tests.models import ALL_MODELS
from tests.validation import mutations
from tests.validation.mutations import (all_model_mutations, by_model, request_mutations,
                                        set_operand, valid_request, valid_requests,
                                        valid_variants)

MODEL_MUTATIONS = all_model_mutations()
MODEL_GROUPS = by_model(MODEL_MUTATIONS)
REQUEST_GROUPS = by_model(request_mutations())
MEMO, VALID_PARTS = memo.MEMO, memo.VALID_PARTS


def verdict(validate: Callable[[], object]) -> str | None:
    """The message of the ValidationError ``validate()`` raises, None when it returns."""
    try:
        validate()
    except ValidationError as error:
        assert error.status == ErrorStatus.INVALID_ARGUMENT
        return str(error)
    return None


def uncached_verdict(model: Model) -> str | None:
    return verdict(lambda: check_model(model))


def memo_verdict(model: Model, **flags) -> str | None:
    return verdict(lambda: validate_model(model, **flags))


#: The memo's settings (ENABLED, PARTS_ENABLED).
SETTINGS = {"on": (True, True), "parts off": (True, False), "off": (False, False)}


@pytest.fixture(autouse=True)
def memo_on(monkeypatch) -> None:
    """The memo on, parts included, whatever the environment says."""
    monkeypatch.setattr(memo, "ENABLED", True)
    monkeypatch.setattr(memo, "PARTS_ENABLED", True)


def verdicts_in_every_setting(validate: Callable[[], object]) -> dict[str, str | None]:
    """``validate()``'s verdict in each setting of the memo, whose verdicts are forgotten
    first (the parts found valid are kept): a miss, and with the memo on a hit too."""
    said = {}
    for name, (enabled, parts) in SETTINGS.items():
        with pytest.MonkeyPatch.context() as patched:
            patched.setattr(memo, "ENABLED", enabled)
            patched.setattr(memo, "PARTS_ENABLED", parts)
            MEMO.clear()
            said[name] = verdict(validate)
            if name == "on":
                said["on, again"] = verdict(validate)
    return said


@pytest.fixture
def full_validations(monkeypatch) -> list[Model]:
    """The models validated anew (not found in the memo) from now on; starts with an empty
    memo."""
    MEMO.clear()
    seen: list[Model] = []
    validate_anew = memo.validate_anew

    def counting(model, *args):
        seen.append(model)
        return validate_anew(model, *args)
    monkeypatch.setattr(memo, "validate_anew", counting)
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
    MEMO.clear()
    assert remembered == memo_verdict(model)
    assert "outside operandValues of 0 bytes" in remembered


# --- misses: every one-field change -------------------------------------------------------

@pytest.mark.parametrize("group", sorted(MODEL_GROUPS))
def test_every_setting_gives_mutated_models_the_verdicts_of_validation(group):
    """Each mutation of the model, after its valid original (so the parts they share are
    known valid): check_model's verdict, the rule the mutation breaks (not an earlier,
    unrelated check that stops it), message for message, whether the memo is on (a miss,
    then a hit), on without parts, or off."""
    failures = {}
    for mutation in MODEL_GROUPS[group]:
        validate_model(mutation.build().model)
        mutated = mutation.invalid_model()
        expected = uncached_verdict(mutated)
        said = verdicts_in_every_setting(lambda: validate_model(mutated))
        if not (expected and mutation.rejects(expected)) or set(said.values()) != {expected}:
            failures[mutation.id] = (expected, said)
    assert not failures, "\n".join(f"{id}: {said}" for id, said in failures.items())


@pytest.mark.parametrize("group", sorted(REQUEST_GROUPS))
def test_every_setting_gives_requests_the_verdicts_of_validation(group):
    """Likewise for each mutation of the model's request, after the request it mutates, its
    model validated first: the model stays valid, only the request is at fault."""
    failures = {}
    for mutation in REQUEST_GROUPS[group]:
        case = mutation.build()
        verdict(lambda: validate_request(case.request(), case.model))
        request, model = mutation.invalid_request()
        expected = verdict(lambda: check_request(request, model))
        said = verdicts_in_every_setting(
            lambda: (validate_model(model), validate_request(request, model)))
        if expected is None or set(said.values()) != {expected}:
            failures[mutation.id] = (expected, said)
    assert not failures, "\n".join(f"{id}: {said}" for id, said in failures.items())


@pytest.mark.parametrize("name", sorted(valid_requests()))
def test_every_setting_accepts_the_valid_requests(name):
    request, model, options = valid_request(name)
    said = verdicts_in_every_setting(lambda: validate_request(request, model, **options))
    assert set(said.values()) == {None}


def test_a_request_changed_after_validation_is_validated_again():
    case = models.add_model()
    request = case.request()
    validate_request(request, case.model)
    request.pools[0].hidlMemory.close()             # the client closes a pool between calls
    said = verdict(lambda: validate_request(request, case.model))
    assert said == "request pool 0: memory is closed"


@pytest.mark.parametrize("group", sorted(MODEL_GROUPS))
def test_models_mutated_in_place_after_validation_are_validated_again(group):
    """A mutated model sharing its original's fingerprint would be a hit, taken for valid."""
    failures = {}
    for mutation in MODEL_GROUPS[group]:
        model = mutation.build().model
        assert memo_verdict(model) is None
        mutation.mutate(model)                      # the client edits its Model between calls
        if memo_verdict(model) != uncached_verdict(model):
            failures[mutation.id] = (memo_verdict(model), uncached_verdict(model))
    assert not failures, "\n".join(f"{id}: {said}" for id, said in failures.items())


@pytest.mark.parametrize("name", sorted(valid_variants()))
def test_every_setting_accepts_the_valid_variants(name):
    """A new model of the same content each call: with the memo on, the second is a hit."""
    said = verdicts_in_every_setting(lambda: validate_model(valid_variants()[name]()))
    assert set(said.values()) == {None}


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
        lambda m: (set_operand(0, dimensions=[2, 2, 2])(m), set_operand(1, dimensions=[2])(m)),
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
    "a plain int operand type on another operand": lambda: _two_add_models(
        set_operand(0, type=int(T.TENSOR_FLOAT32)), set_operand(1, type=int(T.TENSOR_FLOAT32))),
    "-0.0 for a scale of 0.0": lambda: _two_add_models(lambda m: None, set_operand(0, scale=-0.0)),
    "a plain int operation type": lambda: _two_add_models(
        lambda m: None, lambda m: setattr(m.main.operations[0], "type", int(Op.ADD))),
    "-0.0 for 0.0 in per-channel scales": lambda: (_per_channel_scales([0.5, 0.0, 2.0]),
                                                   _per_channel_scales([0.5, -0.0, 2.0])),
    "ints beyond 32 bits": lambda: _two_add_models(set_operand(0, dimensions=[2, 1 << 40]),
                                                   set_operand(0, dimensions=[2, 1 << 41])),
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

class _OperandSubclass(Operand):
    pass


GARBAGE: dict[str, Callable[[Model], None]] = {
    "str in dimensions": set_operand(0, dimensions=["2", 2]),
    "bool in dimensions": set_operand(0, dimensions=[True, 2]),
    "float in dimensions": set_operand(0, dimensions=[2.0, 2]),
    "numpy int in dimensions": set_operand(0, dimensions=[np.int64(2), 2]),
    "dimensions a tuple": set_operand(0, dimensions=(2, 2)),
    "unhashable type": set_operand(0, type=[3]),
    "float type": set_operand(0, type=3.0),
    "lifetime of another enum": set_operand(0, lifetime=T.TENSOR_QUANT8_SYMM),
    "bool numberOfConsumers": set_operand(0, numberOfConsumers=True),
    "int scale": set_operand(0, scale=0),
    "None location": set_operand(0, location=None),
    "None extraParams": set_operand(0, extraParams=None),
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
    "location a tuple": set_operand(0, location=(0, 0, 0)),
    "numpy float scale": set_operand(0, scale=np.float64(0.0)),
    "unhashable lifetime": set_operand(0, lifetime=[1]),
    "extraParams of another class": set_operand(0, extraParams=SymmPerChannelQuantParams([1.0])),
    "channelQuant of another class": set_operand(
        0, extraParams=OperandExtraParams(channelQuant=DataLocation())),
    "int in per-channel scales": set_operand(
        0, extraParams=OperandExtraParams(channelQuant=SymmPerChannelQuantParams([1]))),
    "bytearray extension": set_operand(
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
    "long dimensions": lambda: _add_model_with(set_operand(0, dimensions=[1] * 200)),
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

@pytest.mark.parametrize("setting", ["off", "parts off"])
def test_what_is_turned_off_is_not_remembered(setting, monkeypatch, full_validations):
    """Off, every call validates (and compiles) anew; with the parts off, whole contents
    alone are remembered."""
    enabled, parts = SETTINGS[setting]
    monkeypatch.setattr(memo, "ENABLED", enabled)
    monkeypatch.setattr(memo, "PARTS_ENABLED", parts)
    VALID_PARTS.clear()
    model = models.nested_model().model
    for _ in range(2):
        validate_model(model)
        assert device_module.SampleDriver().getSupportedOperations_1_3(model)[0] == ErrorStatus.NONE
    assert full_validations == [model] * (1 if enabled else 4)
    assert (len(MEMO), len(VALID_PARTS)) == ((2, 0) if enabled else (0, 0))


def test_the_memo_switches_start_from_the_environment():
    code = "from driver.validation import memo; print(memo.ENABLED, memo.PARTS_ENABLED)"
    said = {}
    for variable in (None, memo.NO_MEMO_ENV, memo.NO_PART_MEMO_ENV):
        env = {name: value for name, value in os.environ.items()
               if name not in (memo.NO_MEMO_ENV, memo.NO_PART_MEMO_ENV)}
        if variable is not None:
            env[variable] = "1"
        said[variable] = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                        capture_output=True, text=True).stdout.split()
    assert said == {None: ["True", "True"], memo.NO_MEMO_ENV: ["False", "True"],
                    memo.NO_PART_MEMO_ENV: ["True", "False"]}


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
    for i in range(MEMO.capacity + 10):
        model = models.add_model().model
        model.main.operands[0].dimensions = [2, 2 + i]  # invalid: a different message each
        memo_verdict(model)
    assert len(MEMO) == MEMO.capacity


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
    run_concurrently(worker, [(n * 17,) for n in range(4)])
    assert failures == []


# --- the device ---------------------------------------------------------------------------

@pytest.fixture
def compilations(monkeypatch, full_validations) -> list[Model]:
    """The models compiled from now on; starts with an empty memo."""
    seen: list[Model] = []
    compile_model = device_module.compile_model

    def counting(model, **kwargs):
        seen.append(model)
        return compile_model(model, **kwargs)
    monkeypatch.setattr(device_module, "compile_model", counting)
    return seen


def test_get_supported_then_prepare_validates_and_compiles_once(compilations, full_validations):
    device = device_module.SampleDriver()
    case = models.nested_model()
    status, supported = device.getSupportedOperations_1_3(case.model)
    assert status == ErrorStatus.NONE and all(supported)
    prepared = prepare(models.nested_model().model, device)    # same content, new objects
    assert len(compilations) == 1 and len(full_validations) == 1
    outcome = execute(prepared, case.request(), Path.SYNC)
    assert outcome.status == ErrorStatus.NONE


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
    assert len(compilations) == 2
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
    assert len(compilations) == 1            # one plan, shared
    cases[0].model.main.operands.clear()            # the client reuses its Model: no effect
    results: list = []

    def run(k: int) -> None:
        for _ in range(20):
            request = models.model_request(cases[1].model, cases[k].inputs)
            outcome = execute(prepared[k], request, Path.SYNC)
            results.append((outcome.status, [o.tolist() for o in
                                             models.read_outputs(cases[1].model, request)]))
    run_concurrently(run, [(0,), (1,)])
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
