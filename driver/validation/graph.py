"""Checks of a subgraph's structure: its input/output lists, each operation's type and
operand indexes, and the data flow (execution order, single writers, consumer counts).

These run after every operand of the model passed check_operand, so lifetimes are valid.
"""
from __future__ import annotations

from itertools import repeat
from operator import attrgetter

from ..errors import fail
from ..hal.enums import OperandLifeTime as L, OperationType
from ..hal.structs import Operation, Subgraph
from .common import (BASE_OPERATION_TYPES, VALUE_KNOWN_LIFETIMES, WRITTEN_LIFETIMES,
                     check_type_code, is_uint32_list, operation_label)


_PLAIN_OPERATION_CLASSES = frozenset({(int, list, list), (OperationType, list, list)})
_operation_fields = attrgetter("type", "inputs", "outputs")
_lifetime_of = attrgetter("lifetime")
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


def check_io_indexes(subgraph: Subgraph, label: str) -> None:
    """inputIndexes lists exactly the SUBGRAPH_INPUT operands, once each; likewise
    outputIndexes and SUBGRAPH_OUTPUT."""
    operands = subgraph.operands
    lifetimes = [operand.lifetime for operand in operands]
    for what, indexes, lifetime in (("input", subgraph.inputIndexes, _SUBGRAPH_INPUT),
                                    ("output", subgraph.outputIndexes, _SUBGRAPH_OUTPUT)):
        if not is_uint32_list(indexes):
            fail(f"{label}: {what}Indexes {indexes!r} are not uint32")
        count = len(operands)
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


def check_operations(subgraph: Subgraph, extension_prefixes: frozenset[int], label: str) -> None:
    """Types, operand index ranges and writable outputs of every operation."""
    operands = subgraph.operands
    if all(map(operation_is_plainly_valid, subgraph.operations, repeat(operands))):
        return
    for op_index, operation in enumerate(subgraph.operations):
        if not operation_is_plainly_valid(operation, operands):
            check_operation(operation, op_index, operands, extension_prefixes, label)


def operation_is_plainly_valid(operation: Operation, operands: list) -> bool:
    """True only for an operation check_operation accepts: a base type, exact int operand
    indexes in range, outputs of writable lifetimes. False for anything unusual (an
    extension type, say), which check_operation then judges. Written with few branches
    (coverage instrumentation traces each): the per-index work happens in C."""
    if type(operation) is not Operation:
        return False
    type_code, inputs, outputs = _operation_fields(operation)
    if ((type(type_code), type(inputs), type(outputs)) not in _PLAIN_OPERATION_CLASSES
            or type_code not in BASE_OPERATION_TYPES):
        return False
    indexes = inputs + outputs
    if not (_INT.issuperset(map(type, indexes)) and min(indexes, default=0) >= 0
            and max(indexes, default=0) < len(operands)):
        return False
    return WRITTEN_LIFETIMES.issuperset(map(_lifetime_of, map(operands.__getitem__, outputs)))


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
    exactly once, and numberOfConsumers counts the operation inputs reading each operand."""
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
