"""The oracles that know the right answer: a reference driver (fuzz/harness.py) and the
metamorphic relations (fuzz/relations.py). Drivers that compute wrong outputs in rare
structures (tests/fuzz/broken_drivers.py) are found by short fuzz runs from the corpus; the
bundled driver behind a faithful proxy gives nothing."""
from __future__ import annotations

import numpy as np
import pytest

from driver import SampleDriver
from driver.hal import ErrorStatus, OperandType as T, OutputShape
from fuzz import harness, oracles, relations
from fuzz.case import ExecutionPath, FuzzCase
from fuzz.codec import decode
from fuzz.drivers import make_device
from fuzz.oracles import ExecutionResult
from hal_client.builder import ModelBuilder, make_request, out_like
from tests.fuzz import broken_drivers
from tests.fuzz.test_broken_drivers import CORPUS, MODULE, fuzz_from_corpus

#: (mutation seeds, most inputs per seed) of a fuzz run from the corpus that finds each
#: miscomputing driver's bug with the reference alone; with the relations alone for those
#: they can find. Each seed finds it (the first within 1,000 inputs); the walks depend on
#: the corpus: a corpus change may need other seeds (scripts/bench_fuzz.py and libFuzzer
#: runs measure the oracles themselves).
BY_REFERENCE = {"LoopBodyMulAdds": ((5, 4, 6), 6000), "SignedAddSubtracts": ((2, 6, 5), 6000),
                "NestedIfSwapsBranches": ((1, 5, 6), 20000), "BroadcastSubReversed": ((5, 2, 6), 6000)}
BY_RELATIONS = {"NestedIfSwapsBranches": ((1, 4), 6000)}


@pytest.mark.parametrize("name", sorted(BY_REFERENCE))
@pytest.mark.usefixtures("generous_hang_margin")
def test_the_reference_finds_a_wrong_output(name):
    device = make_device(f"{MODULE}:{name}")
    data, violation = fuzz_from_corpus(device, *BY_REFERENCE[name], harness.Oracles(SampleDriver(), False))
    assert type(violation) is oracles.ReferenceMismatchViolation, violation
    harness.run_one(data, SampleDriver(), harness.Oracles(SampleDriver(), False))


@pytest.mark.usefixtures("generous_hang_margin")
def test_relations_alone_find_what_depends_on_where_an_operation_sits():
    assert set(BY_RELATIONS) == {n for n, found in broken_drivers.MISCOMPUTING.items() if found}
    for name, run in BY_RELATIONS.items():
        device = make_device(f"{MODULE}:{name}")
        data, violation = fuzz_from_corpus(device, *run, harness.Oracles(None, True))
        assert isinstance(violation, oracles.MetamorphicViolation), violation
        relation = decode(data).choices.relation
        assert violation.rule == relations.RULES[relation].Violation.rule
        harness.run_one(data, SampleDriver(), harness.Oracles(None, True))


@pytest.mark.usefixtures("generous_hang_margin")
def test_a_faithful_proxy_of_the_bundled_driver_gives_nothing():
    """Against the bundled driver as reference, with every relation, over the corpus and
    mutations of it."""
    device = make_device(f"{MODULE}:Faithful")
    with pytest.raises(pytest.fail.Exception, match="no violation in 800 inputs"):
        fuzz_from_corpus(device, (7,), 800, harness.Oracles(SampleDriver(), True))


@pytest.mark.parametrize("relation", list(relations.RULES), ids=lambda r: r.name)
def test_every_relation_holds_on_the_corpus(relation):
    """Each relation applied to every corpus input the bundled driver runs: no violation,
    and most rewritten cases run (a relation that never applies checks nothing)."""
    device = SampleDriver()
    before = harness.STATS.related_compared
    inputs = sorted(CORPUS.iterdir())[::5]
    for path in inputs:
        case = decode(path.read_bytes())
        case.choices.relation = relation
        harness.run_case(case, device, harness.Oracles(None, True))
    assert harness.STATS.related_compared - before > len(inputs) // 5


# --- the comparison ------------------------------------------------------------------------

def one_output_case(values, operand_type=T.TENSOR_FLOAT32):
    b = ModelBuilder()
    x = b.main.input(operand_type, [len(values)])
    b.main.outputs(b.main.add(x, x))
    model = b.build()
    return model, make_request([np.asarray(values, np.float32)], [out_like(np.float32, [len(values)])]).request


def result(values, dtype=np.float32, dims=None) -> ExecutionResult:
    values = np.asarray(values, dtype)
    shapes = [OutputShape(list(dims or values.shape), True)]
    return ExecutionResult(ExecutionPath.SYNC, ErrorStatus.NONE, shapes, [values.tobytes()])


def test_outputs_within_tolerance_agree_and_beyond_it_name_the_element():
    model, request = one_output_case([1.0, 2.0])
    Violation = oracles.ReferenceMismatchViolation
    assert oracles.check_same_outputs(result([1.0, 100.0]), result([1.0, 100.00004]),
                                      model, request, Violation, "x") == 0
    with pytest.raises(Violation, match=r"output 0 .* at index 1: 101, expected 100, beyond atol=1e-05"):
        oracles.check_same_outputs(result([1.0, 100.0]), result([1.0, 101.0]), model, request, Violation, "x")
    with pytest.raises(Violation, match=r"output 0 has dimensions \[3\], expected \[2\]"):
        oracles.check_same_outputs(result([1.0, 2.0]), result([1.0, 2.0], dims=[3]), model, request,
                                   Violation, "x")


def test_outputs_the_expected_run_computed_as_nan_or_infinite_are_left_out():
    model, request = one_output_case([1.0, 2.0])
    assert oracles.check_same_outputs(result([np.inf, 1.0]), result([0.0, 5.0]), model, request,
                                      oracles.ReferenceMismatchViolation, "x") == 1


def test_reference_verdicts_disagree_only_between_invalid_argument_and_none():
    oracles.check_reference_verdict(ErrorStatus.GENERAL_FAILURE, ErrorStatus.NONE, "x")
    oracles.check_reference_verdict(ErrorStatus.INVALID_ARGUMENT, ErrorStatus.INVALID_ARGUMENT, "x")
    for reference, driver in ((ErrorStatus.INVALID_ARGUMENT, ErrorStatus.NONE),
                              (ErrorStatus.NONE, ErrorStatus.INVALID_ARGUMENT)):
        with pytest.raises(oracles.ReferenceVerdictViolation, match="prepareModel_1_3"):
            oracles.check_reference_verdict(reference, driver, "prepareModel_1_3")


def has_sub(model) -> bool:
    return any(op.type.name == "SUB" for op in model.main.operations)


class RejectsEverySub(broken_drivers.DeviceWrapper):
    """Rejects a valid model (with a SUB) as invalid."""

    def getSupportedOperations_1_3(self, model):
        return (ErrorStatus.INVALID_ARGUMENT, []) if has_sub(model) else self.inner.getSupportedOperations_1_3(model)

    def prepareModel_1_3(self, model, preference, priority, deadline, modelCache, dataCache,
                         token, callback):
        if has_sub(model):
            callback.notify_1_3(ErrorStatus.INVALID_ARGUMENT, None)
            return ErrorStatus.INVALID_ARGUMENT
        return super().prepareModel_1_3(model, preference, priority, deadline, modelCache,
                                        dataCache, token, callback)


def test_a_valid_model_the_driver_rejects_is_a_reference_verdict():
    b = ModelBuilder()
    x = b.main.input(T.TENSOR_FLOAT32, [2])
    b.main.outputs(b.main.sub(x, x))
    model = b.build()
    case = FuzzCase(model, make_request([np.ones(2, np.float32)], [out_like(np.float32, [2])]).request)
    with pytest.raises(oracles.ReferenceVerdictViolation, match="the driver rejects it"):
        harness.run_case(case, RejectsEverySub(), harness.Oracles(SampleDriver(), False))
    harness.run_case(case, RejectsEverySub(), harness.Oracles(None, False))


class CountingPreparations(broken_drivers.DeviceWrapper):
    """The bundled driver, counting the models it is asked to prepare."""

    def __init__(self) -> None:
        super().__init__()
        self.preparations = 0

    def prepareModel_1_3(self, *arguments) -> ErrorStatus:
        self.preparations += 1
        return super().prepareModel_1_3(*arguments)


def test_the_reference_judges_the_corpus_s_invalid_cases_as_the_validator_does():
    """The reference is asked about every model the validator rejects (and request, where
    the driver prepared its model): the bundled driver as reference agrees with the
    validator on each, and nothing is overruled."""
    reference = CountingPreparations()
    invalid_models = 0
    for path in sorted(CORPUS.iterdir()):
        case = decode(path.read_bytes())
        model_error, request_error = harness.reference_errors(case.model, case.request)
        if model_error is None and request_error is None:
            continue
        invalid_models += model_error is not None
        outcome = harness.run_case(case, SampleDriver(), harness.Oracles(reference, False))
        assert (outcome.model_error, outcome.request_error) == (model_error, request_error)
    assert invalid_models > 100 and reference.preparations >= invalid_models
