"""Checks of a subgraph's structure: its input/output lists, each operation's type and
operand indexes, and the data flow (execution order, single writers, consumer counts).

These run after every operand of the model passed check_operand, so lifetimes are valid.
"""
from __future__ import annotations

from itertools import repeat

from ..errors import fail
from ..hal.enums import OperandLifeTime as L, OperationType
from ..hal.structs import Operation, Subgraph
from .common import (BASE_OPERATION_TYPES, VALUE_KNOWN_LIFETIMES, WRITTEN_LIFETIMES,
                     check_type_code, is_uint32_list, operation_label)


_PLAIN_OPERATION_CLASSES = frozenset({(int, list, list), (OperationType, list, list)})
_INT = frozenset({int})
_SUBGRAPH_INPUT, _SUBGRAPH_OUTPUT = L.SUBGRAPH_INPUT, L.SUBGRAPH_OUTPUT


def check_not_empty(subgraph: Subgraph, label: str) -> None:
    if not isinstance(subgraph, Subgraph):
        fail(f"{label}: {type(subgraph).__name__} is not a Subgraph")
    if not (type(subgraph.operands) is list and type(subgraph.operations) is list
            and type(subgraph.inputIndexes) is list and type(subgraph.outputIndexes) is list):
        for name in ("operands", "operations", "inputIndexes", "outputIndexes"):
            if not isinstance(getattr(subgraph, name), list):
                fail(f"{label}: {name} is not a list")
    if len(subgraph.operands) <= 0:
        fail(f"{label}: has no operands")
    if len(subgraph.operations) <= 0:
        fail(f"{label}: has no operations")


def check_io_indexes(subgraph: Subgraph, label: str, plain_fields: bool = False) -> None:
    """inputIndexes lists exactly the SUBGRAPH_INPUT operands, once each; likewise
    outputIndexes and SUBGRAPH_OUTPUT. ``plain_fields``: the lists are known to hold exact
    ints (see check_model)."""
    inputs, outputs = subgraph.inputIndexes, subgraph.outputIndexes
    # The usual case in one comparison per list: sorted, the indexes are the positions of
    # the operands of the lifetime, so each is in range, of that lifetime and listed once,
    # and none is missing. Only for ints: True and 1.0 equal 1.
    input_positions, output_positions = [], []
    for position, operand in enumerate(subgraph.operands):
        lifetime = operand.lifetime
        if lifetime == _SUBGRAPH_INPUT:
            input_positions.append(position)
        elif lifetime == _SUBGRAPH_OUTPUT:
            output_positions.append(position)
    if ((plain_fields or (is_uint32_list(inputs) and is_uint32_list(outputs)))
            and sorted(inputs) == input_positions and sorted(outputs) == output_positions):
        return
    _check_io_indexes_in_detail(inputs, outputs,
                                [operand.lifetime for operand in subgraph.operands], label)


def _check_io_indexes_in_detail(inputs: object, outputs: object, lifetimes: list,
                                label: str) -> None:
    """check_io_indexes one index at a time, naming the first fault."""
    count = len(lifetimes)
    for what, indexes, lifetime in (("input", inputs, _SUBGRAPH_INPUT),
                                    ("output", outputs, _SUBGRAPH_OUTPUT)):
        if not is_uint32_list(indexes):
            fail(f"{label}: {what}Indexes {indexes!r} are not uint32")
        seen: set[int] = set()
        for position, index in enumerate(indexes):
            if index >= count:
                fail(f"{label}: {what} {position} names operand {index}, "
                     f"out of range ({count} operands)")
            actual = lifetimes[index]
            if actual != lifetime:
                fail(f"{label}: {what} {position} (operand {index}) has "
                     f"lifetime {L(actual).name}, expected {lifetime.name}")
            if index in seen:
                fail(f"{label}: operand {index} is listed as {what} twice")
            seen.add(index)
        # Every index listed is a distinct operand of this lifetime: one is missing exactly
        # when there are more operands of the lifetime than indexes.
        if lifetimes.count(lifetime) != len(seen):
            for index, operand_lifetime in enumerate(lifetimes):
                if operand_lifetime == lifetime and index not in seen:
                    fail(f"{label}, operand {index}: {lifetime.name} operand "
                         f"missing from {what}Indexes")


def check_operation_type(operation: Operation, extension_prefixes: frozenset[int],
                         where: str) -> None:
    """A base type of the HAL (OEM_OPERATION included), or an extension type whose prefix
    the model declares. A valid type the driver does not implement is not an error."""
    check_type_code(operation.type, BASE_OPERATION_TYPES, extension_prefixes, "operation", where)


def check_operations(subgraph: Subgraph, extension_prefixes: frozenset[int], label: str,
                     plain_fields: bool = False) -> None:
    """Types, operand index ranges and writable outputs of every operation.
    ``plain_fields``: every operation is known to have plain classes (see check_model)."""
    operands = subgraph.operands
    plainly_valid = (operation_values_are_plainly_valid if plain_fields
                     else operation_is_plainly_valid)
    if all(map(plainly_valid, subgraph.operations, repeat(operands))):
        return
    for op_index, operation in enumerate(subgraph.operations):
        if not plainly_valid(operation, operands):
            check_operation(operation, op_index, operands, extension_prefixes, label)


def operation_is_plainly_valid(operation: Operation, operands: list) -> bool:
    """True only for an operation check_operation accepts: a base type, exact int operand
    indexes in range, outputs of writable lifetimes. False for anything unusual (an
    extension type, say), which check_operation then judges."""
    return (operation_has_plain_classes(operation)
            and operation_values_are_plainly_valid(operation, operands))


def operation_has_plain_classes(operation: object) -> bool:
    """An Operation whose type is an int (or the enum) and whose inputs and outputs are
    lists of exact ints."""
    return (type(operation) is Operation
            and (type(operation.type), type(operation.inputs),
                 type(operation.outputs)) in _PLAIN_OPERATION_CLASSES
            and _INT.issuperset(map(type, operation.inputs))
            and _INT.issuperset(map(type, operation.outputs)))


def operation_values_are_plainly_valid(operation: Operation, operands: list) -> bool:
    """operation_is_plainly_valid for an operation of plain classes
    (operation_has_plain_classes, or any operation of a model that model_fingerprint
    fingerprints): the value checks alone."""
    outputs = operation.outputs
    indexes = operation.inputs + outputs
    # (min and max without default=, which costs more than the rest of the check.)
    if not (operation.type in BASE_OPERATION_TYPES
            and (not indexes or (min(indexes) >= 0 and max(indexes) < len(operands)))):
        return False
    for index in outputs:
        if operands[index].lifetime not in WRITTEN_LIFETIMES:
            return False
    return True


def check_operation(operation: Operation, op_index: int, operands: list,
                    extension_prefixes: frozenset[int], label: str) -> None:
    if not isinstance(operation, Operation):
        fail(f"{label}, operation {op_index}: {type(operation).__name__} is not an Operation")
    where = f"{label}, {operation_label(op_index, operation.type)}"
    check_operation_type(operation, extension_prefixes, where)
    count = len(operands)
    for what, indexes in (("input", operation.inputs), ("output", operation.outputs)):
        if not is_uint32_list(indexes):
            fail(f"{where}: {what}s {indexes!r} are not uint32")
        for position, index in enumerate(indexes):
            if index >= count:
                fail(f"{where}: {what} {position} names operand {index}, "
                     f"out of range ({count} operands)")
    for position, index in enumerate(operation.outputs):
        lifetime = operands[index].lifetime
        if lifetime not in WRITTEN_LIFETIMES:
            fail(f"{where}: output {position} (operand {index}) has lifetime "
                 f"{L(lifetime).name} and cannot be written")


def check_data_flow(subgraph: Subgraph, label: str) -> None:
    """Operations are in execution order (each reads only operands already known, which
    also excludes cycles), every TEMPORARY_VARIABLE and SUBGRAPH_OUTPUT operand is written
    exactly once, and numberOfConsumers counts the operation inputs reading each operand.

    The loop below only decides; at the first fault it hands over to the detailed checks,
    which name it (positions and labels cost more than the checks)."""
    operands = subgraph.operands
    known = [operand.lifetime in VALUE_KNOWN_LIFETIMES for operand in operands]
    consumers = [0] * len(operands)
    for operation in subgraph.operations:
        for index in operation.inputs:
            if not known[index]:
                return _check_data_flow_in_detail(subgraph, label)
            consumers[index] += 1
        for index in operation.outputs:
            if known[index]:
                return _check_data_flow_in_detail(subgraph, label)
            known[index] = True
    if not (all(known) and consumers == [operand.numberOfConsumers for operand in operands]):
        _check_data_flow_in_detail(subgraph, label)


def _check_data_flow_in_detail(subgraph: Subgraph, label: str) -> None:
    """check_data_flow, naming the operation or operand at fault."""
    known = [operand.lifetime in VALUE_KNOWN_LIFETIMES for operand in subgraph.operands]
    consumers = [0] * len(subgraph.operands)
    for op_index, operation in enumerate(subgraph.operations):
        for position, index in enumerate(operation.inputs):
            if not known[index]:
                fail(f"{label}, {operation_label(op_index, operation.type)}: input "
                     f"{position} (operand {index}) is read before it is written")
            consumers[index] += 1
        for position, index in enumerate(operation.outputs):
            if not not known[index]:
                fail(f"{label}, {operation_label(op_index, operation.type)}: output "
                     f"{position} (operand {index}) was already written")
            known[index] = True
    if [operand.numberOfConsumers for operand in subgraph.operands] != consumers:
        for index, operand in enumerate(subgraph.operands):
            if operand.numberOfConsumers != consumers[index]:
                fail(f"{label}, operand {index}: numberOfConsumers is "
                     f"{operand.numberOfConsumers}, but {consumers[index]} operation inputs "
                     f"read it")
    if not all(known):
        fail(f"{label}, operand {known.index(False)}: no operation writes it")
