"""The documented ambiguities of fuzz/spec.py filter what they explain from the reference
oracle's findings, and nothing else: a case matching one is filtered, near misses are not
(another value, one operation alone, float32). And every operation has its citations."""
from __future__ import annotations

import numpy as np
import pytest

from driver import SampleDriver
from driver.hal import ErrorStatus
from driver.hal.enums import OperandType as T
from fuzz import harness, spec
from fuzz.case import FuzzCase
from hal_client.builder import ModelBuilder, make_request, out_like

LARGE, SMALL = [10000, 2000], [3, 0.25]


def chain(operand_type=T.TENSOR_FLOAT16, operations: int = 2) -> FuzzCase:
    """(x + c) - x: float16 rounds x + c to x's precision (0 for LARGE + SMALL), float32 keeps c."""
    dtype = np.float16 if operand_type == T.TENSOR_FLOAT16 else np.float32
    mb = ModelBuilder()
    g = mb.main
    x, c = g.input(operand_type, [2]), g.input(operand_type, [2])
    total = g.add(x, c)
    g.outputs(g.sub(total, x) if operations == 2 else total)
    io = make_request([np.array(LARGE, dtype), np.array(SMALL, dtype)], [out_like(dtype, [2])])
    return FuzzCase(mb.build(), io.request)


@pytest.fixture(scope="module")
def reference():
    return SampleDriver()


def ambiguity(case: FuzzCase, got: list[float], reference):
    run = harness.runner(reference, case)
    dtype = case.model.main.operands[case.model.main.outputIndexes[0]].type
    raw = np.array(got, np.float16 if dtype == T.TENSOR_FLOAT16 else np.float32).tobytes()
    return spec.documented_ambiguity(case, 0, [raw], lambda: harness.request_values(case), run)


def test_a_float16_chain_computed_in_float32_is_the_documented_ambiguity(reference):
    """The reference gives [0, 0] (each sum rounded to float16); [3, 0.25] is the chain in
    float32 rounded once: filtered."""
    found = ambiguity(chain(), SMALL, reference)
    assert found is spec.AMBIGUITIES[0]


@pytest.mark.parametrize("case, got", [
    (chain(), [4, 0.25]),                               # not what float32 computes
    (chain(operations=1), [10003, 2000.25]),            # one operation: one rounding either way
    (chain(T.TENSOR_FLOAT32), [0, 0]),                  # float32: no float16 anywhere
], ids=["another-value", "one-operation", "float32"])
def test_near_misses_are_not_filtered(case, got, reference):
    assert ambiguity(case, got, reference) is None


def test_the_tables_say_what_and_where():
    for ambiguity in spec.AMBIGUITIES:
        assert ambiguity.operation and ambiguity.condition and ambiguity.reason
        assert ambiguity.citations and all(c.url.startswith("https://") for c in ambiguity.citations)
    for name in [*spec.CITATIONS, "CONV_2D"]:
        semantics = spec.semantics_of(name)
        assert name in semantics.nnapi.where and semantics.nnapi.url.startswith("https://")
        assert semantics.tflite is not None


def test_widening_keeps_the_computation(reference):
    """The widened model (float32 everywhere, constants converted) computes the float16
    model's result without the roundings in between."""
    case = chain()
    mb = ModelBuilder()
    g = mb.main
    x = g.input(T.TENSOR_FLOAT16, [2])
    g.outputs(g.add(x, g.constant(T.TENSOR_FLOAT16, [0.5, 0.25], [2], in_pool=True)))
    wide = spec.widened(mb.build())
    assert {o.type for o in wide.main.operands} == {T.TENSOR_FLOAT32, T.INT32}
    ran = harness.run_on_values(reference, wide, [np.array([1, 2], np.float32)], harness.plain_choices(case))
    assert ran.status == ErrorStatus.NONE and ran.outputs[0].tolist() == [1.5, 2.25]


def clamp(operation=None, operand_type=T.TENSOR_FLOAT32, behind_an_add=False) -> FuzzCase:
    """RELU6 of x (or of x + 0) for x = [NaN, -1, 7, 2]: the reference gives [0, 0, 6, 2]."""
    from driver.hal.enums import OperationType as Op
    dtype = np.float16 if operand_type == T.TENSOR_FLOAT16 else np.float32
    mb = ModelBuilder()
    g = mb.main
    x = g.input(operand_type, [4])
    source = g.add(x, g.constant(operand_type, [0, 0, 0, 0], [4])) if behind_an_add else x
    g.outputs(g.apply(operation or Op.RELU6, [source], operand_type, [4]))
    io = make_request([np.array([np.nan, -1, 7, 2], dtype)], [out_like(dtype, [4])])
    return FuzzCase(mb.build(), io.request)


@pytest.mark.parametrize("case", [clamp(), clamp(operand_type=T.TENSOR_FLOAT16), clamp(behind_an_add=True)],
                         ids=["input", "float16", "temporary"])
def test_nan_left_unclamped_is_the_documented_ambiguity(case, reference):
    """RELU6(NaN) = NaN (TFLite's reading) where the reference gives 0: filtered, whether
    the NaN is a model input or an operation's result."""
    assert ambiguity(case, [np.nan, 0, 6, 2], reference) is spec.AMBIGUITIES[1]


@pytest.mark.parametrize("got", [[np.nan, np.nan, 6, 2], [np.nan, 0, 7, 2], [0, 0, 6, np.nan]],
                         ids=["nan-from-a-number", "unclamped-number", "nan-elsewhere"])
def test_a_nan_the_input_does_not_explain_is_not_filtered(got, reference):
    """A NaN where the clamp's input was a number, or a number past the bound, is a finding."""
    assert ambiguity(clamp(), got, reference) is None


def test_other_operations_are_not_clamps(reference):
    """A NaN out of another operation (here an ADD of NaN) is not this ambiguity."""
    mb = ModelBuilder()
    g = mb.main
    x = g.input(T.TENSOR_FLOAT32, [2])
    g.outputs(g.add(x, x))
    io = make_request([np.array([np.nan, 1], np.float32)], [out_like(np.float32, [2])])
    assert ambiguity(FuzzCase(mb.build(), io.request), [0, 2], reference) is None
