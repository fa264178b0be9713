"""Validation messages name the subgraph, operand, operation or request argument at fault."""
from __future__ import annotations

import re

import pytest

from driver.errors import ValidationError
from driver.hal import Operand, OperandLifeTime as L, OperandType as T
from driver.validation import validate_model, validate_request
from tests import models
from tests.validation.mutations import _replace_input

pytestmark = pytest.mark.usefixtures("memo_setting")


def rejection(model) -> str:
    with pytest.raises(ValidationError) as raised:
        validate_model(model)
    return str(raised.value)


def test_operand_of_main_subgraph():
    case = models.add_model()
    case.model.main.operands[1].scale = 1.0
    assert rejection(case.model).startswith("main subgraph, operand 1: ")


def test_operand_of_referenced_subgraph():
    case = models.nested_model()
    case.model.referenced[2].operands[1].zeroPoint = 3
    message = rejection(case.model)
    assert message.startswith("referenced subgraph 2, operand 1: ")
    assert "zeroPoint 3" in message


def test_registered_operation_in_referenced_subgraph():
    """The operation module's own message, prefixed with the subgraph."""
    case = models.if_model()
    else_branch = case.model.referenced[1]
    else_branch.operands[1].type = T.TENSOR_INT32      # ADD(float, int32)
    assert rejection(case.model).startswith("referenced subgraph 1, operation 0 (ADD): ")


def test_operation_type():
    case = models.constant_reference_model()
    case.model.main.operations[1].type = 102
    assert rejection(case.model).startswith("main subgraph, operation 1 (type 102): ")


def test_execution_order_names_operation_input_and_operand():
    case = models.constant_reference_model()
    operations = case.model.main.operations
    operations.reverse()
    assert rejection(case.model) == ("main subgraph, operation 0 (ADD): input 0 (operand 3) "
                                     "is read before it is written")


def test_if_branch_incompatibility_names_both_sides():
    case = models.if_model()
    then_branch = case.model.referenced[0]
    then_branch.operands[then_branch.inputIndexes[0]].dimensions = [5]
    message = rejection(case.model)
    assert message.startswith("main subgraph, operation 0 (IF): then branch (referenced subgraph 0)"
                              " input 0 (operand 0, IF operand 1): ")
    assert "[5]" in message and "[2]" in message


def test_if_branch_that_is_not_a_subgraph():
    case = models.if_model()
    _replace_input(case.model.main, 0, 2, 1)
    assert rejection(case.model) == ("main subgraph, operation 0 (IF): else branch (operand 1) has"
                                     " type TENSOR_FLOAT32, expected SUBGRAPH")


def test_while_in_referenced_subgraph():
    case = models.nested_model()
    loop_condition = case.model.referenced[2]
    loop_condition.operands[loop_condition.outputIndexes[0]].dimensions = [3]
    assert rejection(case.model).startswith(
        "referenced subgraph 0, operation 0 (WHILE): condition (referenced subgraph 2) output")


def test_unwritten_operand():
    case = models.add_model()
    main = case.model.main
    main.operands.append(Operand(T.TENSOR_FLOAT32, [1], lifetime=L.TEMPORARY_VARIABLE))
    assert rejection(case.model) == "main subgraph, operand 4: no operation writes it"


@pytest.mark.parametrize("edit,pattern", [
    pytest.param(lambda r: setattr(r.inputs[1].location, "length", 3),
                 r"^request input 1 \(operand 1\): length 3 ", id="input"),
    pytest.param(lambda r: setattr(r.outputs[0], "dimensions", [9, 9]),
                 r"^request output 0 \(operand 3\): dimension 0 is 9", id="output"),
    pytest.param(lambda r: r.pools[1].hidlMemory.close(),
                 r"^request pool 1: memory is closed", id="pool"),
])
def test_request_messages(edit, pattern):
    case = models.add_model()
    request = case.request()
    edit(request)
    with pytest.raises(ValidationError) as raised:
        validate_request(request, case.model)
    assert re.match(pattern, str(raised.value)), str(raised.value)
