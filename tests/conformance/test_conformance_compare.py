"""Accuracy criteria of the conformance runner (the CTS's, conformance/FORMAT.md)."""
from __future__ import annotations

import numpy as np
import pytest

from driver.hal import OperandType as T
from hal_client.accuracy import (EXACT, FLOAT16_TOLERANCE, FLOAT32_TOLERANCE, INTEGER_TOLERANCE,
                                 MOBILENET_QUANT8_TOLERANCE, compare_values)
from hal_client.conformance.compare import check_outputs, tolerance_for
from hal_client.conformance.loader import load_examples

from tests.conformance.helpers import add_model, model_entry, operand, write_models


def load(tmp_path, entry):
    return next(load_examples(write_models(tmp_path / "m.json", [entry])))


def single_output_model(name: str, type_: str, expected, **fields):
    main = {"operands": [operand(type_, [len(expected)], "SUBGRAPH_INPUT", expected),
                         operand(type_, [len(expected)], "SUBGRAPH_OUTPUT", expected, consumers=0)],
            "operations": [{"type": "ABS", "inputs": [0], "outputs": [1]}],
            "inputIndexes": [0], "outputIndexes": [1]}
    return model_entry(name, main, **fields)


def raw(values, dtype) -> bytes:
    return np.asarray(values, dtype=dtype).tobytes()


def test_float32_boundary():
    expected = np.array([0.0, 100.0])
    limit = FLOAT32_TOLERANCE.atol + FLOAT32_TOLERANCE.rtol * 100.0
    within = np.array([0.9e-5, 100.0 + 0.9 * limit])
    assert compare_values(expected, within, FLOAT32_TOLERANCE) is None
    message = str(compare_values(expected, np.array([0.0, 100.0 + 1.1 * limit]), FLOAT32_TOLERANCE))
    assert message.startswith("1 of 2 values outside atol=1e-05")
    assert "index 1: expected 100" in message


def test_nan_never_matches():
    assert compare_values(np.array([1.0]), np.array([np.nan]), FLOAT16_TOLERANCE) is not None


@pytest.mark.parametrize("type_, fields, name, expected", [
    (T.TENSOR_FLOAT32, {}, "plain", FLOAT32_TOLERANCE),
    (T.TENSOR_FLOAT32, {"isRelaxed": True}, "relaxed", FLOAT16_TOLERANCE),
    (T.TENSOR_FLOAT16, {}, "half", FLOAT16_TOLERANCE),
    (T.TENSOR_INT32, {}, "int", INTEGER_TOLERANCE),
    (T.TENSOR_QUANT8_ASYMM, {}, "quant", INTEGER_TOLERANCE),
    (T.TENSOR_QUANT8_ASYMM_SIGNED, {}, "mobilenet_quant8", MOBILENET_QUANT8_TOLERANCE),
    (T.TENSOR_INT32, {}, "mobilenet_int", INTEGER_TOLERANCE),
    (T.TENSOR_QUANT16_SYMM, {}, "quant16", INTEGER_TOLERANCE),
    (T.TENSOR_BOOL8, {}, "bool", EXACT),
])
def test_tolerance_choice(tmp_path, type_, fields, name, expected):
    example = load(tmp_path, add_model(name, **fields))
    assert tolerance_for(example, type_) == expected


def test_a_float16_operand_anywhere_loosens_float32_outputs(tmp_path):
    entry = add_model()
    entry["main"]["operands"].append(operand("TENSOR_FLOAT16", [1], "CONSTANT_COPY", [1.0]))
    assert tolerance_for(load(tmp_path, entry), T.TENSOR_FLOAT32) == FLOAT16_TOLERANCE


@pytest.mark.parametrize("type_, dtype, expected, actual, ok", [
    ("TENSOR_FLOAT32", np.float32, [1.0, -2.0], [1.0000005, -2.000001], True),
    ("TENSOR_FLOAT32", np.float32, [1.0, -2.0], [1.001, -2.0], False),
    ("TENSOR_FLOAT16", np.float16, [1.0, 100.0], [1.004, 100.4], True),
    ("TENSOR_FLOAT16", np.float16, [1.0, 100.0], [1.0, 101.0], False),
    ("TENSOR_INT32", np.int32, [5, -7], [6, -8], True),
    ("TENSOR_INT32", np.int32, [5, -7], [7, -7], False),
    ("TENSOR_QUANT8_ASYMM", np.uint8, [0, 255], [1, 254], True),
    ("TENSOR_QUANT8_ASYMM", np.uint8, [0, 255], [2, 255], False),
    ("TENSOR_QUANT8_ASYMM_SIGNED", np.int8, [-128, 127], [-127, 126], True),
    ("TENSOR_BOOL8", np.uint8, [True, False], [1, 0], True),
    ("TENSOR_BOOL8", np.uint8, [True, False], [0, 0], False),
    ("TENSOR_BOOL8", np.uint8, [True, False], [2, 0], False),   # not a valid bool8 byte
])
def test_check_outputs(tmp_path, type_, dtype, expected, actual, ok):
    example = load(tmp_path, single_output_model("m", type_, expected))
    messages = check_outputs(example, [raw(actual, dtype)])
    assert (messages == []) == ok, messages
    if not ok:
        assert messages[0].startswith("output 0")


def test_mobilenet_quant8_allows_three(tmp_path):
    example = load(tmp_path, single_output_model("mobilenet_q", "TENSOR_QUANT8_ASYMM", [10]))
    assert check_outputs(example, [raw([13], np.uint8)]) == []
    assert check_outputs(example, [raw([14], np.uint8)]) != []


def test_ignored_and_zero_sized_outputs_are_not_compared(tmp_path):
    entry = add_model()
    entry["main"]["operands"][3]["isIgnored"] = True
    example = load(tmp_path, entry)
    assert check_outputs(example, [raw([np.nan] * 4, np.float32)]) == []
    entry = add_model()
    entry["main"]["operands"][3].update(dimensions=[0, 2], data=[])
    assert check_outputs(load(tmp_path, entry), [b"\xff"]) == []


def test_short_output_buffer_is_reported(tmp_path):
    example = load(tmp_path, add_model())
    assert "buffer of 4 bytes, expected 16" in check_outputs(example, [b"\0" * 4])[0]


def multinomial_model(logits, samples: int, tolerance: float):
    main = {"operands": [
        operand("TENSOR_FLOAT32", [1, len(logits)], "SUBGRAPH_INPUT", list(logits)),
        operand("INT32", [], "CONSTANT_COPY", [samples]),
        operand("TENSOR_INT32", [2], "CONSTANT_COPY", [37, 42]),
        operand("TENSOR_INT32", [1, samples], "SUBGRAPH_OUTPUT", [0] * samples, consumers=0)],
        "operations": [{"type": "RANDOM_MULTINOMIAL", "inputs": [0, 1, 2], "outputs": [3]}],
        "inputIndexes": [0], "outputIndexes": [3]}
    return model_entry("multinomial", main, expectedMultinomialDistributionTolerance=tolerance)


def test_multinomial_compares_distributions(tmp_path):
    # Probabilities 0.25 / 0.75: the reference's literal samples are irrelevant.
    example = load(tmp_path, multinomial_model([0.0, np.log(3.0)], 100, 0.05))
    good = [0] * 27 + [1] * 73
    assert check_outputs(example, [raw(good, np.int32)]) == []
    skewed = [0] * 50 + [1] * 50
    assert "class 0 of batch 0 drawn with frequency 0.5000" in check_outputs(
        example, [raw(skewed, np.int32)])[0]
    out_of_range = [0] * 99 + [2]
    assert "outside [0, 2)" in check_outputs(example, [raw(out_of_range, np.int32)])[0]
