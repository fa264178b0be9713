"""Signature checks of IF and WHILE against the subgraphs they reference.

Both run after the generic checks of every subgraph, so a SUBGRAPH operand names an
existing referenced subgraph whose input/output indexes are valid.

The WHILE rule that its operands have a known size follows the HAL 1.3 reference driver
(1.3 does not support control flow over operands of unknown size); validate_model can lift
it for callers that handle dynamic shapes through loops. IF is not subject to it, as in
the reference.
"""
from __future__ import annotations

from ..errors import fail
from ..hal.enums import OperandType as T
from ..hal.structs import Model, Operand, Operation, Subgraph
from .common import byte_size, is_extension_type, operand_type_name
from .compat import check_compatible, compatible

IF_CONDITION, IF_THEN, IF_ELSE, IF_FIRST_INPUT = 0, 1, 2, 3
WHILE_CONDITION, WHILE_BODY, WHILE_FIRST_INPUT = 0, 1, 2


def check_condition_operand(operand: Operand, what: str) -> None:
    """A condition is a TENSOR_BOOL8 of shape exactly [1] (no unknown dimension)."""
    if operand.type != T.TENSOR_BOOL8:
        fail(f"{what} has type {operand_type_name(operand.type)}, expected TENSOR_BOOL8")
    if list(operand.dimensions) != [1]:
        fail(f"{what} has dimensions {list(operand.dimensions)}, expected [1]")


def _referenced(model: Model, subgraph: Subgraph, operand_index: int,
                what: str) -> tuple[int, Subgraph]:
    operand = subgraph.operands[operand_index]
    if operand.type != T.SUBGRAPH:
        fail(f"{what} (operand {operand_index}) has type {operand_type_name(operand.type)}, "
             f"expected SUBGRAPH")
    index = operand.location.offset
    return index, model.referenced[index]


def _has_known_size(operand: Operand) -> bool:
    return is_extension_type(operand.type) or byte_size(operand.type, operand.dimensions) is not None


def _any_size(operand: Operand) -> bool:
    return True


def _check_known_size(operand: Operand, what: str) -> None:
    if not _has_known_size(operand):
        fail(f"{what}: {operand_type_name(operand.type)} of dimensions "
             f"{list(operand.dimensions)} has no known size, which WHILE requires")


# The loops below name an operand pair in a message only when a check fails: they run for
# every IF and WHILE validated, and building each message costs more than its checks.


def check_if(model: Model, subgraph: Subgraph, operation: Operation, where: str) -> None:
    """IF(condition, then, else, inputs...) -> outputs; each branch takes the inputs and
    produces the outputs, compatibly."""
    if len(operation.inputs) < 3:
        fail(f"{where}: needs at least 3 inputs, has {len(operation.inputs)}")
    if len(operation.outputs) < 1:
        fail(f"{where}: needs at least 1 output")
    condition = operation.inputs[IF_CONDITION]
    check_condition_operand(subgraph.operands[condition],
                            f"{where}: condition (operand {condition})")
    data_inputs = operation.inputs[IF_FIRST_INPUT:]
    for branch_name, position in (("then", IF_THEN), ("else", IF_ELSE)):
        branch_index, branch = _referenced(model, subgraph, operation.inputs[position],
                                           f"{where}: {branch_name} branch")
        branch_where = f"{where}: {branch_name} branch (referenced subgraph {branch_index})"
        if len(branch.inputIndexes) != len(data_inputs):
            fail(f"{branch_where} has {len(branch.inputIndexes)} inputs, the IF passes "
                 f"{len(data_inputs)}")
        if len(branch.outputIndexes) != len(operation.outputs):
            fail(f"{branch_where} has {len(branch.outputIndexes)} outputs, the IF has "
                 f"{len(operation.outputs)}")
        for i, (outer, inner) in enumerate(zip(data_inputs, branch.inputIndexes)):
            if not compatible(subgraph.operands[outer], branch.operands[inner]):
                check_compatible(subgraph.operands[outer], branch.operands[inner],
                                 f"{branch_where} input {i} (operand {inner}, IF operand {outer})")
        for i, (outer, inner) in enumerate(zip(operation.outputs, branch.outputIndexes)):
            if not compatible(subgraph.operands[outer], branch.operands[inner]):
                check_compatible(subgraph.operands[outer], branch.operands[inner],
                                 f"{branch_where} output {i} (operand {inner}, IF operand {outer})")


def _check_loop_inputs(operands: list, loop_inputs: list[int], callee: Subgraph, callee_where: str,
                       sized, known_size) -> None:
    """Each operand a WHILE passes matches the input of ``callee`` (its condition or body)
    it lands in, and both have a known size where that is required."""
    for i, (outer, inner) in enumerate(zip(loop_inputs, callee.inputIndexes)):
        outer_operand, inner_operand = operands[outer], callee.operands[inner]
        if not (compatible(outer_operand, inner_operand) and sized(inner_operand)
                and sized(outer_operand)):
            what = f"{callee_where} input {i} (operand {inner}, WHILE operand {outer})"
            check_compatible(outer_operand, inner_operand, what)
            known_size(inner_operand, what)
            known_size(outer_operand, what)


def check_while(model: Model, subgraph: Subgraph, operation: Operation, where: str,
                require_known_sizes: bool = True) -> None:
    """WHILE(cond, body, m input-output, k state-only, n input-only) -> m outputs.

    The condition takes m+k+n inputs and yields one TENSOR_BOOL8 [1]; the body takes
    m+k+n inputs and yields m+k outputs, its first m+k outputs feeding its first m+k
    inputs on the next iteration."""
    inputs, outputs = operation.inputs, operation.outputs
    if len(inputs) < 3:
        fail(f"{where}: needs at least 3 inputs, has {len(inputs)}")
    if len(outputs) < 1:
        fail(f"{where}: needs at least 1 output")
    loop_inputs = inputs[WHILE_FIRST_INPUT:]
    known_size = _check_known_size if require_known_sizes else (lambda operand, what: None)
    sized = _has_known_size if require_known_sizes else _any_size
    operands = subgraph.operands

    cond_index, cond = _referenced(model, subgraph, inputs[WHILE_CONDITION], f"{where}: condition")
    cond_where = f"{where}: condition (referenced subgraph {cond_index})"
    if len(cond.inputIndexes) != len(loop_inputs):
        fail(f"{cond_where} has {len(cond.inputIndexes)} inputs, the WHILE passes {len(loop_inputs)}")
    if len(cond.outputIndexes) != 1:
        fail(f"{cond_where} has {len(cond.outputIndexes)} outputs, expected 1")
    _check_loop_inputs(operands, loop_inputs, cond, cond_where, sized, known_size)
    cond_output = cond.outputIndexes[0]
    check_condition_operand(cond.operands[cond_output],
                            f"{cond_where} output (operand {cond_output})")

    body_index, body = _referenced(model, subgraph, inputs[WHILE_BODY], f"{where}: body")
    body_where = f"{where}: body (referenced subgraph {body_index})"
    body_inputs, body_outputs = body.inputIndexes, body.outputIndexes
    if len(body_inputs) != len(loop_inputs):
        fail(f"{body_where} has {len(body_inputs)} inputs, the WHILE passes {len(loop_inputs)}")
    if len(body_outputs) < len(outputs):
        fail(f"{body_where} has {len(body_outputs)} outputs, fewer than the WHILE's {len(outputs)}")
    if len(body_inputs) < len(body_outputs):
        fail(f"{body_where} has more outputs ({len(body_outputs)}) than inputs ({len(body_inputs)})")
    _check_loop_inputs(operands, loop_inputs, body, body_where, sized, known_size)
    for i, (outer, inner) in enumerate(zip(outputs, body_outputs)):
        outer_operand, inner_operand = operands[outer], body.operands[inner]
        if not (compatible(outer_operand, inner_operand) and sized(outer_operand)):
            what = f"{body_where} output {i} (operand {inner}, WHILE output operand {outer})"
            check_compatible(outer_operand, inner_operand, what)
            known_size(outer_operand, what)
    for i, (inner_in, inner_out) in enumerate(zip(body_inputs, body_outputs)):
        # An output becomes the same-position input of the next iteration.
        in_operand, out_operand = body.operands[inner_in], body.operands[inner_out]
        if not (compatible(in_operand, out_operand) and sized(out_operand)):
            what = (f"{body_where} output {i} (operand {inner_out}) fed back to input {i} "
                    f"(operand {inner_in})")
            check_compatible(in_operand, out_operand, what)
            known_size(out_operand, what)
