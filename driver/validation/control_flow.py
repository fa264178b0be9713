"""Signature checks of IF and WHILE against the subgraphs they reference.

Both run after the generic checks of every subgraph, so a SUBGRAPH operand names an
existing referenced subgraph whose input/output indexes are valid.

The WHILE rule that its operands have a known size follows the HAL 1.3 reference driver
(1.3 does not support control flow over operands of unknown size); validate_model can lift
it for callers that handle dynamic shapes through loops. IF is not subject to it, as in
the reference.
"""
from __future__ import annotations

from ..errors import check
from ..hal.enums import OperandType as T
from ..hal.structs import Model, Operand, Operation, Subgraph
from .common import byte_size, is_extension_type, operand_type_name
from .compat import check_compatible

IF_CONDITION, IF_THEN, IF_ELSE, IF_FIRST_INPUT = 0, 1, 2, 3
WHILE_CONDITION, WHILE_BODY, WHILE_FIRST_INPUT = 0, 1, 2


def check_condition_operand(operand: Operand, what: str) -> None:
    """A condition is a TENSOR_BOOL8 of shape exactly [1] (no unknown dimension)."""
    check(operand.type == T.TENSOR_BOOL8,
          "{} has type {}, expected TENSOR_BOOL8", what, operand_type_name(operand.type))
    check(list(operand.dimensions) == [1],
          "{} has dimensions {}, expected [1]", what, list(operand.dimensions))


def _referenced(model: Model, subgraph: Subgraph, operand_index: int,
                what: str) -> tuple[int, Subgraph]:
    operand = subgraph.operands[operand_index]
    check(operand.type == T.SUBGRAPH, "{} (operand {}) has type "
          "{}, expected SUBGRAPH", what, operand_index, operand_type_name(operand.type))
    index = operand.location.offset
    return index, model.referenced[index]


def check_known_size(operand: Operand, what: str) -> None:
    check(is_extension_type(operand.type) or byte_size(operand.type, operand.dimensions) is not None,
          "{}: {} of dimensions {} has no known size, which WHILE requires",
          what, operand_type_name(operand.type), list(operand.dimensions))


def check_if(model: Model, subgraph: Subgraph, operation: Operation, where: str) -> None:
    """IF(condition, then, else, inputs...) -> outputs; each branch takes the inputs and
    produces the outputs, compatibly."""
    check(len(operation.inputs) >= 3, "{}: needs at least 3 inputs, has {}",
          where, len(operation.inputs))
    check(len(operation.outputs) >= 1, "{}: needs at least 1 output", where)
    condition = operation.inputs[IF_CONDITION]
    check_condition_operand(subgraph.operands[condition],
                            f"{where}: condition (operand {condition})")
    data_inputs = operation.inputs[IF_FIRST_INPUT:]
    for branch_name, position in (("then", IF_THEN), ("else", IF_ELSE)):
        branch_index, branch = _referenced(model, subgraph, operation.inputs[position],
                                           f"{where}: {branch_name} branch")
        branch_where = f"{where}: {branch_name} branch (referenced subgraph {branch_index})"
        check(len(branch.inputIndexes) == len(data_inputs), "{} has {} inputs, the IF passes {}",
              branch_where, len(branch.inputIndexes), len(data_inputs))
        check(len(branch.outputIndexes) == len(operation.outputs), "{} has "
              "{} outputs, the IF has {}",
              branch_where, len(branch.outputIndexes), len(operation.outputs))
        for i, (outer, inner) in enumerate(zip(data_inputs, branch.inputIndexes)):
            check_compatible(subgraph.operands[outer], branch.operands[inner],
                             f"{branch_where} input {i} (operand {inner}, IF operand {outer})")
        for i, (outer, inner) in enumerate(zip(operation.outputs, branch.outputIndexes)):
            check_compatible(subgraph.operands[outer], branch.operands[inner],
                             f"{branch_where} output {i} (operand {inner}, IF operand {outer})")


def check_while(model: Model, subgraph: Subgraph, operation: Operation, where: str,
                require_known_sizes: bool = True) -> None:
    """WHILE(cond, body, m input-output, k state-only, n input-only) -> m outputs.

    The condition takes m+k+n inputs and yields one TENSOR_BOOL8 [1]; the body takes
    m+k+n inputs and yields m+k outputs, its first m+k outputs feeding its first m+k
    inputs on the next iteration."""
    inputs, outputs, operands = operation.inputs, operation.outputs, subgraph.operands
    check(len(inputs) >= 3, "{}: needs at least 3 inputs, has {}", where, len(inputs))
    check(len(outputs) >= 1, "{}: needs at least 1 output", where)
    loop_inputs = inputs[WHILE_FIRST_INPUT:]

    def check_pair(outer: Operand, inner: Operand, sized: tuple[Operand, ...], what: str) -> None:
        check_compatible(outer, inner, what)
        if require_known_sizes:
            for operand in sized:
                check_known_size(operand, what)

    cond_index, cond = _referenced(model, subgraph, inputs[WHILE_CONDITION], f"{where}: condition")
    cond_where = f"{where}: condition (referenced subgraph {cond_index})"
    check(len(cond.inputIndexes) == len(loop_inputs), "{} has "
          "{} inputs, the WHILE passes {}", cond_where, len(cond.inputIndexes), len(loop_inputs))
    check(len(cond.outputIndexes) == 1,
          "{} has {} outputs, expected 1", cond_where, len(cond.outputIndexes))
    for i, (outer, inner) in enumerate(zip(loop_inputs, cond.inputIndexes)):
        outer_operand, inner_operand = operands[outer], cond.operands[inner]
        check_pair(outer_operand, inner_operand, (inner_operand, outer_operand),
                   f"{cond_where} input {i} (operand {inner}, WHILE operand {outer})")
    cond_output = cond.outputIndexes[0]
    check_condition_operand(cond.operands[cond_output],
                            f"{cond_where} output (operand {cond_output})")

    body_index, body = _referenced(model, subgraph, inputs[WHILE_BODY], f"{where}: body")
    body_where = f"{where}: body (referenced subgraph {body_index})"
    body_inputs, body_outputs = body.inputIndexes, body.outputIndexes
    check(len(body_inputs) == len(loop_inputs), "{} has {} inputs, "
          "the WHILE passes {}", body_where, len(body_inputs), len(loop_inputs))
    check(len(body_outputs) >= len(outputs), "{} has {} outputs, "
          "fewer than the WHILE's {}", body_where, len(body_outputs), len(outputs))
    check(len(body_inputs) >= len(body_outputs), "{} has more outputs "
          "({}) than inputs ({})", body_where, len(body_outputs), len(body_inputs))
    for i, (outer, inner) in enumerate(zip(loop_inputs, body_inputs)):
        outer_operand, inner_operand = operands[outer], body.operands[inner]
        check_pair(outer_operand, inner_operand, (inner_operand, outer_operand),
                   f"{body_where} input {i} (operand {inner}, WHILE operand {outer})")
    for i, (outer, inner) in enumerate(zip(outputs, body_outputs)):
        outer_operand = operands[outer]
        check_pair(outer_operand, body.operands[inner], (outer_operand,),
                   f"{body_where} output {i} (operand {inner}, WHILE output operand {outer})")
    for i, (inner_in, inner_out) in enumerate(zip(body_inputs, body_outputs)):
        # An output becomes the same-position input of the next iteration.
        out_operand = body.operands[inner_out]
        check_pair(body.operands[inner_in], out_operand, (out_operand,),
                   f"{body_where} output {i} (operand {inner_out}) fed back to input {i} "
                   f"(operand {inner_in})")
