"""LiteRT's wrong answers are bucketed by their first diverging operation: its engine reads
back the value of every main operand (a diagnostic run keeping every tensor), against the
bundled driver or another kernel set; two kernel sets run in one process, each with its
workers. Skipped without the ``litert`` extra."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

pytest.importorskip("ai_edge_litert")
flatbuffers = pytest.importorskip("flatbuffers")

from ai_edge_litert import schema_py_generated as S  # noqa: E402

from backends.litert import LiteRTEngine, auto, builtin_ref  # noqa: E402
from driver import SampleDriver  # noqa: E402
from driver.hal.enums import OperandType as T, OperationType as Op  # noqa: E402
from fuzz import harness  # noqa: E402
from fuzz.codec import decode  # noqa: E402
from hal_client.builder import ModelBuilder  # noqa: E402
from hal_client.contract import OracleViolation  # noqa: E402
from tests import models  # noqa: E402
from tests.fuzz.cases import make_case  # noqa: E402
from tests.fuzz.test_broken_drivers import CORPUS  # noqa: E402

#: The corpus inputs (the first, by name) run with one kernel set against another.
CORPUS_INPUTS = 30


@pytest.fixture(scope="module")
def kernel_sets():
    driver, reference = auto(), builtin_ref()
    yield driver, reference
    driver.engine.close()
    reference.engine.close()


def test_two_kernel_sets_run_the_corpus_against_each_other(kernel_sets):
    """XNNPACK against the reference kernels, each engine with its own workers: no
    violation, and where a case ran, every main operand agrees (the diagnosis finds no
    divergence where there is none)."""
    driver, reference = kernel_sets
    enabled = harness.Oracles(reference=reference, relations=True)
    compared = harness.STATS.reference_compared
    diagnosed = 0
    for path in sorted(CORPUS.iterdir())[:CORPUS_INPUTS]:
        outcome = harness.run_one(path.read_bytes(), driver, enabled)
        if outcome.first is not None and outcome.first.status == 0:
            case = decode(path.read_bytes())
            _, prepared, _ = harness.prepare(driver, case.model, case.choices)
            snapshot = harness.snapshot_pools(case.request)
            assert harness.diagnose(case, snapshot, 10.0, driver, prepared, reference) is None, path.name
            diagnosed += 1
    assert harness.STATS.reference_compared > compared and diagnosed > 0


class _MulSubtracts(LiteRTEngine):
    """The reference kernels, but MUL runs TFLite's SUB: a wrong kernel planted in LiteRT."""

    def _compile(self, model, analysis):
        compiled = super()._compile(model, analysis)
        tflite = S.ModelT.InitFromObj(S.Model.GetRootAsModel(compiled.content, 0))
        for code in tflite.operatorCodes:
            if code.builtinCode == S.BuiltinOperator.MUL:
                code.builtinCode = code.deprecatedBuiltinCode = S.BuiltinOperator.SUB
        builder = flatbuffers.Builder(1024)
        builder.Finish(tflite.Pack(builder), file_identifier=b"TFL3")
        compiled.content = bytes(builder.Output())
        compiled.digest = hashlib.sha1(compiled.content).digest()
        return compiled


@pytest.fixture(scope="module")
def planted():
    engine = _MulSubtracts("BUILTIN_REF")
    assert engine.workers.wait_ready(60)
    yield SampleDriver(name="litert-planted", engine=engine)
    engine.close()


def add_mul_relu(operand_type: int) -> models.ModelCase:
    """relu((x + y) * y): the MUL second, the output RELU's."""
    mb = ModelBuilder()
    g = mb.main
    x, y = g.input(operand_type, [2, 2]), g.input(operand_type, [2, 2])
    g.outputs(g.apply(Op.RELU, [g.mul(g.add(x, y), y)], operand_type, [2, 2]))
    dtype = np.float16 if operand_type == T.TENSOR_FLOAT16 else np.float32
    return models.ModelCase("add_mul_relu", mb.build(), [np.array([[1, 2], [3, 4]], dtype),
                                                         np.array([[5, 6], [7, 8]], dtype)])


@pytest.mark.parametrize("operand_type", [T.TENSOR_FLOAT32, T.TENSOR_FLOAT16], ids=lambda t: T(t).name)
@pytest.mark.parametrize("reference", ["builtin_ref", "bundled"])
def test_a_planted_kernel_is_bucketed_at_its_operation(planted, kernel_sets, operand_type, reference):
    other = kernel_sets[1] if reference == "builtin_ref" else SampleDriver()
    with pytest.raises(OracleViolation) as raised:
        harness.run_case(make_case(add_mul_relu(operand_type)), planted,
                         harness.Oracles(reference=other, relations=False))
    name = T(operand_type).name
    assert raised.value.bucket == (f"first diverging: MUL({name}, {name} -> {name}; activation NONE; "
                                   f"float) on litert-planted")
    found = raised.value.divergence
    # (1 + 5) * 5 = 30 computed as (1 + 5) - 5 = 1.
    assert (found["operation"], found["index"], found["expected"], found["actual"]) == (1, 0, 30, 1)
    assert found["reference"] == ("litert-builtin-ref" if reference == "builtin_ref" else "sample-python")


def test_a_planted_kernel_in_an_if_branch_is_bucketed_at_its_operation(planted, kernel_sets):
    mb = ModelBuilder()
    then, otherwise = mb.subgraph(), mb.subgraph()
    for branch, operation in ((then, Op.MUL), (otherwise, Op.ADD)):
        a, b = branch.input(T.TENSOR_FLOAT32, [2]), branch.input(T.TENSOR_FLOAT32, [2])
        branch.outputs(branch.arithmetic(operation, a, b))
    g = mb.main
    cond, x, y = g.input(T.TENSOR_BOOL8, [1]), g.input(T.TENSOR_FLOAT32, [2]), g.input(T.TENSOR_FLOAT32, [2])
    [chosen] = g.if_(cond, then, otherwise, [x, y])
    g.outputs(g.apply(Op.RELU, [chosen], T.TENSOR_FLOAT32, [2]))
    case = models.ModelCase("if_mul", mb.build(), [np.array([True]), np.array([1, 2], np.float32),
                                                   np.array([5, 6], np.float32)])
    with pytest.raises(OracleViolation) as raised:
        harness.run_case(make_case(case), planted, harness.Oracles(reference=kernel_sets[1], relations=False))
    assert raised.value.bucket == ("first diverging: MUL(TENSOR_FLOAT32, TENSOR_FLOAT32 -> TENSOR_FLOAT32; "
                                   "activation NONE; float) in IF on litert-planted")


def test_a_model_specialised_to_its_runtime_scalars_is_diagnosed(kernel_sets):
    """SOFTMAX's beta given by the request: LiteRT runs the model specialised to its value,
    and reads the operand values back from that specialisation."""
    from tests.backends.planted_litert import add_as_sub, running
    mb = ModelBuilder()
    g = mb.main
    x, y, beta = g.input(T.TENSOR_FLOAT32, [2, 2]), g.input(T.TENSOR_FLOAT32, [2, 2]), g.input(T.FLOAT32)
    g.outputs(g.apply(Op.SOFTMAX, [g.add(g.mul(x, y), y), beta], T.TENSOR_FLOAT32, [2, 2]))
    case = models.ModelCase("softmax_beta", mb.build(), [np.array([[1, 2], [3, 4]], np.float32),
                                                         np.array([[5, 6], [7, 8]], np.float32),
                                                         np.array(0.5, np.float32)])
    with running(add_as_sub) as planted_add, pytest.raises(OracleViolation) as raised:
        harness.run_case(make_case(case), planted_add, harness.Oracles(reference=kernel_sets[1], relations=False))
    assert raised.value.bucket == ("first diverging: ADD(TENSOR_FLOAT32, TENSOR_FLOAT32 -> TENSOR_FLOAT32; "
                                   "activation NONE; float) on litert-builtin-ref")
