"""A wrong answer is bucketed by its first diverging operation (fuzz/divergence.py): the
first operation of the main subgraph whose values differ from the reference driver's, not
the operation producing the output; findings of one wrong kernel share a bucket, another
kernel (or another parameter of it) gets another; a driver that keeps no operand values is
bucketed by the output's producer, as before; the divergence reaches triage's sidecar."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from driver import SampleDriver
from driver.hal import FusedActivationFunc, OperandType as T, OperationType as Op
from fuzz import divergence, harness, triage
from fuzz.case import Relation
from fuzz.codec import encode
from hal_client.builder import ModelBuilder
from hal_client.contract import OracleViolation
from tests import models
from tests.fuzz import broken_drivers
from tests.fuzz.cases import make_case

SIGNED = T.TENSOR_QUANT8_ASYMM_SIGNED
#: Where SignedAddSubtracts computes wrong: an ADD of signed values, no fused activation.
SIGNED_ADD = ("first diverging: ADD(TENSOR_QUANT8_ASYMM_SIGNED, TENSOR_QUANT8_ASYMM_SIGNED -> "
              "TENSOR_QUANT8_ASYMM_SIGNED; activation NONE; signed) on sample-python")


def _signed(g, dims):
    return g.input(SIGNED, dims, scale=0.5, zero_point=0)


def add_mul_relu(activation: int = FusedActivationFunc.NONE) -> models.ModelCase:
    """relu((x + y) * y), of signed values: three operations, the ADD first."""
    mb = ModelBuilder()
    g = mb.main
    x, y = _signed(g, [4]), _signed(g, [4])
    total = g.arithmetic(Op.ADD, x, y, activation=activation)
    product = g.mul(total, y)
    g.outputs(g.apply(Op.RELU, [product], SIGNED, [4], 0.5, 0))
    return models.ModelCase("add_mul_relu", mb.build(),
                            [np.array([1, 2, 3, 4], np.int8), np.array([5, 6, 7, 8], np.int8)])


def add_sub(dims=(2, 3)) -> models.ModelCase:
    """(x + y) - x, of signed values: another model, of other shapes, with an ADD."""
    mb = ModelBuilder()
    g = mb.main
    x, y = _signed(g, list(dims)), _signed(g, list(dims))
    g.outputs(g.sub(g.add(x, y), x))
    size = int(np.prod(dims))
    return models.ModelCase("add_sub", mb.build(), [np.arange(size, dtype=np.int8).reshape(dims),
                                                    np.full(dims, 9, np.int8)])


def broadcast_sub_mul_relu() -> models.ModelCase:
    """relu((x - b) * x) with b broadcast: a wrong SUB (BroadcastSubReversed) first."""
    mb = ModelBuilder()
    g = mb.main
    x, b = g.input(T.TENSOR_FLOAT32, [2, 2]), g.input(T.TENSOR_FLOAT32, [2])
    g.outputs(g.apply(Op.RELU, [g.mul(g.sub(x, b), x)], T.TENSOR_FLOAT32, [2, 2]))
    return models.ModelCase("sub_mul_relu", mb.build(), [np.array([[1, 2], [3, 4]], np.float32),
                                                         np.array([10, 20], np.float32)])


def violation(driver, model_case: models.ModelCase, relation: Relation = Relation.NONE) -> OracleViolation:
    with pytest.raises(OracleViolation) as raised:
        harness.run_case(make_case(model_case, relation=relation), driver,
                         harness.Oracles(reference=SampleDriver(), relations=True))
    return raised.value


def signature(error: OracleViolation) -> str:
    return triage.describe(error).signature


def test_a_wrong_kernel_is_bucketed_at_its_operation_not_at_the_output():
    found = violation(broken_drivers.SignedAddSubtracts(), add_mul_relu())
    assert found.rule == "reference-mismatch"
    assert found.bucket == SIGNED_ADD            # not "output of RELU"
    assert signature(found).endswith(" | " + SIGNED_ADD)
    assert found.divergence["operation"] == 0 and found.divergence["type"] == "ADD"
    # x + y against x - y: (1+5) - (1-5) = 8 at index 0, in steps of the quantized type.
    assert found.divergence["index"] == 0 and found.divergence["expected"] == 6
    assert found.divergence["actual"] == -4 and found.divergence["max_ulp"] == 16
    assert found.divergence["reference"] == "sample-python"


def test_two_models_with_the_same_wrong_operation_share_a_bucket():
    driver = broken_drivers.SignedAddSubtracts()
    first, second = violation(driver, add_mul_relu()), violation(driver, add_sub())
    assert signature(first) == signature(second)
    assert triage.describe(first).digest == triage.describe(second).digest


def test_another_operation_or_parameter_is_another_bucket():
    signed_add = signature(violation(broken_drivers.SignedAddSubtracts(), add_mul_relu()))
    relu_fused = violation(broken_drivers.SignedAddSubtracts(), add_mul_relu(FusedActivationFunc.RELU))
    assert relu_fused.bucket == SIGNED_ADD.replace("activation NONE", "activation RELU")
    sub = violation(broken_drivers.BroadcastSubReversed(), broadcast_sub_mul_relu())
    assert sub.bucket == ("first diverging: SUB(TENSOR_FLOAT32, TENSOR_FLOAT32 -> TENSOR_FLOAT32; "
                          "activation NONE; float) on sample-python")
    assert len({signed_add, signature(relu_fused), signature(sub)}) == 3


def test_a_divergence_inside_an_if_is_bucketed_at_the_operation_of_its_branch():
    mb = ModelBuilder()

    def branch():
        body = mb.subgraph()
        a, b = _signed(body, [4]), _signed(body, [4])
        return body.outputs(body.add(a, b))
    then, otherwise = branch(), branch()
    g = mb.main
    cond, x, y = g.input(T.TENSOR_BOOL8, [1]), _signed(g, [4]), _signed(g, [4])
    [chosen] = g.if_(cond, then, otherwise, [x, y])
    g.outputs(g.mul(chosen, y))
    case = models.ModelCase("if_add", mb.build(), [np.array([True]), np.array([1, 2, 3, 4], np.int8),
                                                   np.array([5, 6, 7, 8], np.int8)])
    found = violation(broken_drivers.SignedAddSubtracts(), case)
    # The IF diverges; its branch, run alone on the IF's inputs, diverges at its ADD.
    assert found.bucket == SIGNED_ADD.replace(") on", ") in IF on")
    assert found.divergence["type"] == "IF" and found.divergence["operation"] == 0
    assert found.divergence["inner"]["type"] == "ADD" and found.divergence["inner"]["subgraph"] == 0


def test_a_relations_wrong_answer_is_bucketed_where_the_driver_and_the_reference_diverge():
    """NestedIfSwapsBranches computes the case right, but not once the relation moved the
    main subgraph, IF and all, into a branch: the outer IF is where it diverges from the
    reference on the rewritten case (its branch alone, the inner IF back in a main
    subgraph, computes right)."""
    found = violation(broken_drivers.NestedIfSwapsBranches(), models.if_model(), relation=Relation.IF_THEN)
    assert found.rule.startswith("metamorphic-")
    assert found.bucket.startswith("first diverging: IF(") and found.divergence["inner"] is None


class _Unobservable(broken_drivers.PreparedModelWrapper):
    operand_values = None       # a driver without the capability


class _SignedAddSubtractsUnobservable(broken_drivers.SignedAddSubtracts):
    prepared_model_class = _Unobservable


def test_a_driver_without_operand_values_is_bucketed_by_the_outputs_producer():
    found = violation(_SignedAddSubtractsUnobservable(), add_mul_relu())
    assert found.bucket == "output of RELU" and found.divergence is None


def test_the_divergence_reaches_the_sidecar_and_holds_the_minimiser(tmp_path):
    found = triage.describe(violation(broken_drivers.SignedAddSubtracts(), add_mul_relu()))
    path, _ = triage.store(encode(make_case(add_mul_relu())), found, tmp_path, "tests.fuzz.broken_drivers:SignedAddSubtracts", "crash-1")
    sidecar = json.loads(Path(path).with_suffix(".json").read_text())
    assert sidecar["divergence"]["type"] == "ADD" and sidecar["divergence"]["bucket"] == SIGNED_ADD
    # A candidate diverging first elsewhere is another bug, even of the same rule and key.
    elsewhere = replace(found, bucket="output of RELU", divergence=None)
    assert not found.same_bug(elsewhere) and found.same_bug(found)


def test_ulps_of_float_values():
    ones = np.ones(3, np.float32)
    assert divergence._max_ulp(ones, np.nextafter(ones, np.float32(2))) == 1
    assert divergence._max_ulp(np.float32([-0.0]), np.float32([0.0])) == 0
    assert divergence._max_ulp(np.float32([-1e-45]), np.float32([1e-45])) == 2
    assert divergence._max_ulp(np.float16([1, 2]), np.float16([1, 2.001953125])) == 1


X, Y, C = [1000, 3000], [3000, 1000], 3e6


def mul_sub() -> models.ModelCase:
    """x * y - c: the SUB of nearly equal values magnifies a difference of the product."""
    mb = ModelBuilder()
    g = mb.main
    x, y = g.input(T.TENSOR_FLOAT32, [2]), g.input(T.TENSOR_FLOAT32, [2])
    g.outputs(g.sub(g.mul(x, y), g.constant(T.TENSOR_FLOAT32, [C, C], [2])))
    return models.ModelCase("mul_sub", mb.build(), [np.array(X, np.float32), np.array(Y, np.float32)])


def carried(actual_product: list[float], actual_difference: list[float]) -> bool:
    """Whether a driver giving these values of the MUL and the SUB of mul_sub carries a
    difference on (its first divergence found against the reference's values)."""
    case = make_case(mul_sub())
    model = case.model
    product, difference = model.main.operations[0].outputs[0], model.main.outputIndexes[0]
    x, y = model.main.inputIndexes
    inputs = {x: np.float32(X), y: np.float32(Y)}
    expected = {**inputs, product: np.float32([C, C]), difference: np.float32([0, 0])}
    actual = {**inputs, product: np.float32(actual_product), difference: np.float32(actual_difference)}
    found = divergence.first_divergence(model, expected, actual, "driver", "reference")
    assert found is not None
    return divergence.carried_on(model, found, expected, actual, harness.runner(SampleDriver(), case))


def test_a_difference_within_the_criteria_magnified_later_is_carried_on():
    """The product 1 ulp high is within float32's criteria; C + 1 ulp - C is not 0 by
    them, but it is what the SUB gives for the product it was fed."""
    ulp = float(np.spacing(np.float32(C)))
    assert carried([C + ulp, C], [ulp, 0])


@pytest.mark.parametrize("product, difference", [
    ([C, C], [1e-3, 0]),                     # a SUB wrong on equal inputs
    ([C + 0.25, C], [1, 0]),                 # a SUB wrong on what it was fed
    ([C + 100, C], [100, 0]),                # a MUL beyond the criteria, carried on rightly
], ids=["wrong-sub", "wrong-sub-after-a-small-difference", "wrong-mul"])
def test_an_operation_wrong_on_its_own_inputs_is_not_carried_on(product, difference):
    assert not carried(product, difference)
