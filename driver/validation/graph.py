"""Checks of a subgraph's structure: its input/output lists, each operation's type and
operand indexes, and the data flow (execution order, single writers, consumer counts).

These run after every operand of the model passed check_operand, so lifetimes are valid.
"""
from __future__ import annotations

from ..errors import check
from ..hal.enums import OperandLifeTime as L
from ..hal.structs import Operation, Subgraph
from .common import (BASE_OPERATION_TYPES, LIFETIME_NAMES, VALUE_KNOWN_LIFETIMES,
                     WRITTEN_LIFETIMES, check_type_code, is_uint32_list, operation_label)


def check_not_empty(subgraph: Subgraph, label: str) -> None:
    check(isinstance(subgraph, Subgraph), "{}: {} is not a Subgraph",
          label, type(subgraph).__name__)
    for name in ("operands", "operations", "inputIndexes", "outputIndexes"):
        check(isinstance(getattr(subgraph, name), list), "{}: {} is not a list", label, name)
    check(len(subgraph.operands) > 0, "{}: has no operands", label)
    check(len(subgraph.operations) > 0, "{}: has no operations", label)


def check_io_indexes(subgraph: Subgraph, label: str) -> None:
    """inputIndexes lists exactly the SUBGRAPH_INPUT operands, once each; likewise
    outputIndexes and SUBGRAPH_OUTPUT."""
    lifetimes = [operand.lifetime for operand in subgraph.operands]
    for what, indexes, lifetime in (("input", subgraph.inputIndexes, L.SUBGRAPH_INPUT),
                                    ("output", subgraph.outputIndexes, L.SUBGRAPH_OUTPUT)):
        check(is_uint32_list(indexes), "{}: {}Indexes {!r} are not uint32", label, what, indexes)
        seen: set[int] = set()
        for position, index in enumerate(indexes):
            check(index < len(lifetimes), "{}: {} {} names operand {}, "
                  "out of range ({} operands)", label, what, position, index, len(lifetimes))
            check(lifetimes[index] == lifetime, "{}: {} {} (operand {}) "
                  "has lifetime {}, expected {}",
                  label, what, position, index, LIFETIME_NAMES[lifetimes[index]], lifetime.name)
            check(index not in seen, "{}: operand {} is listed as {} twice", label, index, what)
            seen.add(index)
        missing = {index for index, other in enumerate(lifetimes) if other == lifetime} - seen
        check(not missing, "{}, operand {}: {} operand missing from {}Indexes",
              label, min(missing, default=None), lifetime.name, what)


def check_operations(subgraph: Subgraph, extension_prefixes: tuple[int, ...], label: str) -> None:
    for op_index, operation in enumerate(subgraph.operations):
        check_operation(operation, op_index, subgraph.operands, extension_prefixes, label)


def check_operation(operation: Operation, op_index: int, operands: list,
                    extension_prefixes: tuple[int, ...], label: str) -> None:
    """A base type of the HAL (OEM_OPERATION included) or an extension type whose prefix
    the model declares, operand indexes in range, outputs of writable lifetimes. A valid
    type the driver does not implement is not an error."""
    check(isinstance(operation, Operation),
          "{}, operation {}: {} is not an Operation", label, op_index, type(operation).__name__)
    where = f"{label}, {operation_label(op_index, operation.type)}"
    check_type_code(operation.type, BASE_OPERATION_TYPES, extension_prefixes, "operation", where)
    for what, indexes in (("input", operation.inputs), ("output", operation.outputs)):
        check(is_uint32_list(indexes), "{}: {}s {!r} are not uint32", where, what, indexes)
        for position, index in enumerate(indexes):
            check(index < len(operands), "{}: {} {} names operand {}, "
                  "out of range ({} operands)", where, what, position, index, len(operands))
    for position, index in enumerate(operation.outputs):
        lifetime = operands[index].lifetime
        check(lifetime in WRITTEN_LIFETIMES, "{}: output {} (operand {}) "
              "has lifetime {} and cannot be written",
              where, position, index, LIFETIME_NAMES[lifetime])


def check_data_flow(subgraph: Subgraph, label: str) -> None:
    """Operations are in execution order (each reads only operands already known, which
    also excludes cycles), every TEMPORARY_VARIABLE and SUBGRAPH_OUTPUT operand is written
    exactly once, and numberOfConsumers counts the operation inputs reading each operand."""
    operands = subgraph.operands
    known = [operand.lifetime in VALUE_KNOWN_LIFETIMES for operand in operands]
    consumers = [0] * len(operands)
    for op_index, operation in enumerate(subgraph.operations):
        where = f"{label}, {operation_label(op_index, operation.type)}"
        for position, index in enumerate(operation.inputs):
            check(known[index], "{}: input {} (operand {}) is read before "
                  "it is written", where, position, index)
            consumers[index] += 1
        for position, index in enumerate(operation.outputs):
            check(not known[index], "{}: output {} (operand {}) was "
                  "already written", where, position, index)
            known[index] = True
    for index, operand in enumerate(operands):
        check(operand.numberOfConsumers == consumers[index], "{}, operand {}: "
              "numberOfConsumers is {}, but {} "
              "operation inputs read it", label, index, operand.numberOfConsumers, consumers[index])
    unwritten = known.index(False) if False in known else None
    check(unwritten is None, "{}, operand {}: no operation writes it", label, unwritten)
