"""check_model: everything a HAL 1.3 Model must satisfy before a driver may read it.

The checks run in stages so that each stage may rely on the previous ones:
1. model-level fields: relaxComputationFloat32toFloat16, extensionNameToPrefix,
   operandValues, pools;
2. per subgraph (main, then each referenced one): non-empty, every operand on its own,
   input/output index lists;
3. subgraph references form no cycle;
4. per subgraph: operation types and operand indexes, then the data flow;
5. per operation: IF/WHILE signatures against the subgraphs they call, then the
   OperationDef.validate of every registered operation (it reads constants, which
   stage 2 made safe to read).

Referenced subgraphs that nothing references are validated like the others and accepted,
as the reference validators do; reference cycles are rejected wherever they occur.

Each stage is a pure function of the model and of the limits in force (driver/limits.py,
which operations read): the verdicts the driver remembers, and the parts it knows valid,
are driver/validation/memo.py's.
"""
from __future__ import annotations

import re

from ..errors import ValidationError, check
from ..hal.enums import CONTROL_FLOW_OPERATION_TYPES, OperationType
from ..hal.structs import ExtensionNameAndPrefix, Model, Subgraph
from ..memory import Memory
from ..operands import ModelInfos, operation_context
from ..operations.registry import OperandInfo, lookup
from .common import (POOL_NAMES, UINT16_MAX, callee_nodes, is_int, node_label, operation_label,
                     subgraph_label)
from .control_flow import check_if, check_while
from .graph import check_data_flow, check_io_indexes, check_not_empty, check_operations
from .operand import ModelStorage, check_operand, storage_of
from .structure import naming_missing_fields

#: Extension names: lower-case letters, digits, '.' and '_', with at least one '.'
#: (a reverse domain name such as "com.example.my_extension").
_EXTENSION_NAME = re.compile(r"^(?=.*\.)[a-z0-9._]+$")


@naming_missing_fields("model")
def check_model(model: Model, allow_unknown_size_while: bool = True) -> ModelInfos:
    """Raise ValidationError, naming the subgraph / operand / operation at fault, unless
    ``model`` is a valid HAL 1.3 model. Returns the OperandInfo views made for the
    operations' signature checks (compile_model reuses them).

    ``allow_unknown_size_while`` (the default) lifts the HAL 1.3 reference rule that every
    operand of a WHILE (and of the subgraphs it calls) has a known size: this driver runs
    loops whose state changes shape between iterations. Pass False for the strict rule."""
    storage = check_model_fields(model)
    subgraphs = labelled_subgraphs(model)
    for label, subgraph in subgraphs:
        check_not_empty(subgraph, label)
        check_operands(subgraph, storage, label)
        check_io_indexes(subgraph, label)
    check_no_reference_cycles(model)
    for label, subgraph in subgraphs:
        check_structure(subgraph, storage, label)
    return check_signatures(model, subgraphs, allow_unknown_size_while)


def check_model_fields(model: Model) -> ModelStorage:
    """Stage 1, the model-level fields; returns what operand locations may point into."""
    check(isinstance(model, Model), "model: {} is not a Model", type(model).__name__)
    check(isinstance(model.relaxComputationFloat32toFloat16, bool), "model: "
          "relaxComputationFloat32toFloat16 {!r} is not a bool",
          model.relaxComputationFloat32toFloat16)
    prefixes = check_extension_table(model.extensionNameToPrefix)
    check(isinstance(model.operandValues, (bytes, bytearray, memoryview)),
          "model: operandValues is a {}, not bytes", type(model.operandValues).__name__)
    check_pools(model.pools)
    check(isinstance(model.referenced, list), "model: referenced is not a list")
    return storage_of(model, prefixes)


def check_operands(subgraph: Subgraph, storage: ModelStorage, label: str) -> None:
    for index, operand in enumerate(subgraph.operands):
        check_operand(operand, storage, f"{label}, operand {index}")


def check_structure(subgraph: Subgraph, storage: ModelStorage, label: str) -> None:
    """Stage 4 (every operand checked, no reference cycle): operations and data flow."""
    check_operations(subgraph, storage.extension_prefixes, label)
    check_data_flow(subgraph, label)


def check_signatures(model: Model, subgraphs: list[tuple[str, Subgraph]],
                     allow_unknown_size_while: bool) -> ModelInfos:
    """Stage 5, every subgraph's operations against their signatures."""
    return tuple(check_operation_signatures(model, subgraph, label, allow_unknown_size_while)
                 for label, subgraph in subgraphs)


def labelled_subgraphs(model: Model) -> list[tuple[str, Subgraph]]:
    return [(subgraph_label(None), model.main)] + [
        (subgraph_label(i), subgraph) for i, subgraph in enumerate(model.referenced)]


def check_extension_table(table: list[ExtensionNameAndPrefix]) -> tuple[int, ...]:
    """Names well formed and unique, prefixes uint16 and unique; returns the prefixes,
    sorted (a tuple of ints: memo keys holding it are left alone by the garbage
    collector, which tracks every frozenset)."""
    check(isinstance(table, list), "model: extensionNameToPrefix is not a list")
    names: set[str] = set()
    prefixes: set[int] = set()
    for i, entry in enumerate(table):
        where = f"model: extensionNameToPrefix[{i}]"
        check(isinstance(entry, ExtensionNameAndPrefix),
              "{}: {} is not an ExtensionNameAndPrefix", where, type(entry).__name__)
        check(isinstance(entry.name, str) and _EXTENSION_NAME.match(entry.name) is not None,
              "{}: invalid extension name {!r}", where, entry.name)
        check(is_int(entry.prefix) and 0 <= entry.prefix <= UINT16_MAX,
              "{}: prefix {!r} is not a uint16", where, entry.prefix)
        check(entry.name not in names, "{}: extension name {!r} listed twice", where, entry.name)
        check(entry.prefix not in prefixes, "{}: prefix {} listed twice", where, entry.prefix)
        names.add(entry.name)
        prefixes.add(entry.prefix)
    return tuple(sorted(prefixes))


def check_memory(memory: object, where: str) -> None:
    """An open, non-empty shared-memory pool of a known kind."""
    check(isinstance(memory, Memory), "{}: {} is not a Memory", where, type(memory).__name__)
    check(not memory.closed, "{}: memory is closed", where)
    check(memory.name in POOL_NAMES, "{}: unsupported memory type {!r}", where, memory.name)
    check(memory.size > 0, "{}: memory has size 0", where)


def check_pools(pools: list) -> None:
    check(isinstance(pools, list), "model: pools is not a list")
    for i, pool in enumerate(pools):
        check_memory(pool, f"model: pool {i}")


def check_no_reference_cycles(model: Model) -> None:
    """No subgraph reaches itself through SUBGRAPH operands (a cycle would recurse
    forever). Every subgraph is a root, so cycles among unreferenced subgraphs count too.
    Iterative depth-first search: nesting depth is the client's to choose."""
    subgraphs = [model.main] + list(model.referenced)   # node 0 is main, node i+1 referenced[i]
    callees = [callee_nodes(subgraph) for subgraph in subgraphs]
    done = [False] * len(subgraphs)
    for root in range(len(subgraphs)):
        if done[root]:
            continue
        path = [root]
        on_path = {root}
        stack = [iter(callees[root])]
        while stack:
            callee = next(stack[-1], None)
            if callee is None:
                stack.pop()
                done[path[-1]] = True
                on_path.discard(path.pop())
                continue
            if callee in on_path:
                cycle = path[path.index(callee):] + [callee]
                names = " -> ".join(node_label(node) for node in cycle)
                raise ValidationError(f"{node_label(callee)} references itself: {names}")
            if not done[callee]:
                path.append(callee)
                on_path.add(callee)
                stack.append(iter(callees[callee]))


def check_operation_signatures(model: Model, subgraph: Subgraph, label: str,
                               allow_unknown_size_while: bool) -> tuple[OperandInfo | None, ...]:
    """IF/WHILE against the subgraphs they call, and every registered operation's own
    validate. Returns the OperandInfo views made, by operand index."""
    # OperandInfo views (constants copied) are made once per operand, and only for the
    # operands of operations this driver implements.
    infos: list[OperandInfo | None] = [None] * len(subgraph.operands)
    for op_index, operation in enumerate(subgraph.operations):
        if operation.type in CONTROL_FLOW_OPERATION_TYPES:
            where = f"{label}, {operation_label(op_index, operation.type)}"
            if operation.type == OperationType.IF:
                check_if(model, subgraph, operation, where)
            else:
                check_while(model, subgraph, operation, where,
                            require_known_sizes=not allow_unknown_size_while)
        # Extension types, above the base range, are never registered.
        definition = lookup(operation.type)
        if definition is None:
            continue   # a valid type this driver does not implement: unsupported, not invalid
        context = operation_context(model, subgraph, op_index, infos)
        try:
            definition.validate(context)
        except ValidationError as error:
            message = str(error)
            if not message.startswith(context.name):
                message = f"{context.name}: {message}"
            raise ValidationError(f"{label}, {message}") from error
    return tuple(infos)
