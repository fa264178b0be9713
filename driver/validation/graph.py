"""Checks of a subgraph's structure: its input/output lists, each operation's type and
operand indexes, and the data flow (execution order, single writers, consumer counts).

These run after every operand of the model passed check_operand, so lifetimes are valid.
"""
from __future__ import annotations

from ..errors import check, fail
from ..hal.enums import OperandLifeTime as L
from ..hal.structs import Operation, Subgraph
from .common import (BASE_OPERATION_TYPES, VALUE_KNOWN_LIFETIMES, WRITTEN_LIFETIMES,
                     check_type_code, is_uint32_list, operation_label)


def check_not_empty(subgraph: Subgraph, label: str) -> None:
    if not isinstance(subgraph, Subgraph):
        fail(f"{label}: {type(subgraph).__name__} is not a Subgraph")
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
    for what, indexes, lifetime in (("input", subgraph.inputIndexes, L.SUBGRAPH_INPUT),
                                    ("output", subgraph.outputIndexes, L.SUBGRAPH_OUTPUT)):
        if not is_uint32_list(indexes):
            fail(f"{label}: {what}Indexes {indexes!r} are not uint32")
        count = len(subgraph.operands)
        seen: set[int] = set()
        for position, index in enumerate(indexes):
            if index >= count:
                fail(f"{label}: {what} {position} names operand {index}, "
                     f"out of range ({count} operands)")
            actual = subgraph.operands[index].lifetime
            if actual != lifetime:
                fail(f"{label}: {what} {position} (operand {index}) has "
                     f"lifetime {L(actual).name}, expected {lifetime.name}")
            if index in seen:
                fail(f"{label}: operand {index} is listed as {what} twice")
            seen.add(index)
        for index, operand in enumerate(subgraph.operands):
            if operand.lifetime == lifetime:
                if index not in seen:
                    fail(f"{label}, operand {index}: {lifetime.name} operand "
                         f"missing from {what}Indexes")


def check_operation_type(operation: Operation, extension_prefixes: frozenset[int],
                         where: str) -> None:
    """A base type of the HAL (OEM_OPERATION included), or an extension type whose prefix
    the model declares. A valid type the driver does not implement is not an error."""
    check_type_code(operation.type, BASE_OPERATION_TYPES, extension_prefixes, "operation", where)


def check_operations(subgraph: Subgraph, extension_prefixes: frozenset[int], label: str) -> None:
    """Types, operand index ranges and writable outputs of every operation."""
    count = len(subgraph.operands)
    for op_index, operation in enumerate(subgraph.operations):
        if not isinstance(operation, Operation):
            fail(f"{label}, operation {op_index}: {type(operation).__name__} is not an Operation")
        where = f"{label}, {operation_label(op_index, operation.type)}"
        check_operation_type(operation, extension_prefixes, where)
        for what, indexes in (("input", operation.inputs), ("output", operation.outputs)):
            if not is_uint32_list(indexes):
                fail(f"{where}: {what}s {indexes!r} are not uint32")
            for position, index in enumerate(indexes):
                if index >= count:
                    fail(f"{where}: {what} {position} names operand {index}, "
                         f"out of range ({count} operands)")
        for position, index in enumerate(operation.outputs):
            lifetime = subgraph.operands[index].lifetime
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
        where = f"{label}, {operation_label(op_index, operation.type)}"
        for position, index in enumerate(operation.inputs):
            if not known[index]:
                fail(f"{where}: input {position} (operand {index}) is read before "
                     f"it is written")
            consumers[index] += 1
        for position, index in enumerate(operation.outputs):
            if not not known[index]:
                fail(f"{where}: output {position} (operand {index}) was "
                     f"already written")
            known[index] = True
    for index, operand in enumerate(subgraph.operands):
        if operand.numberOfConsumers != consumers[index]:
            fail(f"{label}, operand {index}: numberOfConsumers is {operand.numberOfConsumers}, "
                 f"but {consumers[index]} operation inputs read it")
    for index, is_known in enumerate(known):
        if not is_known:
            fail(f"{label}, operand {index}: no operation writes it")
