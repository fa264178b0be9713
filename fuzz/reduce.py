"""Structural minimisation of a failing FuzzCase: smaller graphs that still fail.

``minimize(case, still_fails, budget_s)`` tries one reduction at a time, biggest first, and
keeps it when ``still_fails`` says the failure is still there; it starts over after every
success, until no reduction is kept or the time budget is spent. A reduction is a plain
function editing a copy of the case; it raises ValueError (or IndexError) when it does not
apply. Reductions keep a valid model valid where they can (consumer counts, lifetimes,
byte lengths follow the change), since most failures need a model that gets past
validation; the ones that cannot are simply rejected by ``still_fails``.
"""
from __future__ import annotations

import copy
import math
import time
from typing import Callable, Iterator

from driver.hal import (ExecutionPreference, MeasureTiming, OperandLifeTime as L, Priority,
                        Subgraph)
from driver.hal.dtypes import byte_size

from .case import ExecutionPath, FuzzCase, Relation, RequestChange
from .codec import VALUE_ALIGNMENT

Reduction = Callable[[FuzzCase], None]
CONSTANT_LIFETIMES = (L.CONSTANT_COPY, L.CONSTANT_REFERENCE)


def subgraphs(case: FuzzCase) -> list[Subgraph]:
    return [case.model.main, *case.model.referenced]


def case_size(case: FuzzCase) -> tuple[int, ...]:
    """How big a case reads: operations, operands, subgraphs, then tensor elements."""
    graphs = subgraphs(case)
    return (sum(len(g.operations) for g in graphs), sum(len(g.operands) for g in graphs),
            len(graphs), sum(math.prod(o.dimensions) for g in graphs for o in g.operands))


def copy_case(case: FuzzCase) -> FuzzCase:
    """A deep copy sharing the memory pools: mappings cannot be copied, and reductions
    change where data is, never the pools' content."""
    pools = [*case.model.pools, *(pool.hidlMemory for pool in case.request.pools)]
    return copy.deepcopy(case, memo={id(pool): pool for pool in pools if pool is not None})


# --- operands -------------------------------------------------------------------------------

def _renumber(indexes: list[int], removed: int) -> list[int]:
    return [i - (i > removed) for i in indexes]


def remove_operand(subgraph: Subgraph, index: int) -> None:
    """Delete an operand that nothing refers to, renumbering the later ones."""
    del subgraph.operands[index]
    for operation in subgraph.operations:
        operation.inputs = _renumber(operation.inputs, index)
        operation.outputs = _renumber(operation.outputs, index)
    subgraph.inputIndexes = _renumber(subgraph.inputIndexes, index)
    subgraph.outputIndexes = _renumber(subgraph.outputIndexes, index)


def _unused_operands(subgraph: Subgraph) -> list[int]:
    used = {i for op in subgraph.operations for i in (*op.inputs, *op.outputs)}
    used |= set(subgraph.inputIndexes) | set(subgraph.outputIndexes)
    return sorted(set(range(len(subgraph.operands))) - used, reverse=True)


def drop_unused_operands(case: FuzzCase) -> None:
    unused = [(subgraph, index) for subgraph in subgraphs(case)
              for index in _unused_operands(subgraph)]
    if not unused:
        raise ValueError("no unused operand")
    for subgraph, index in unused:
        remove_operand(subgraph, index)


# --- subgraphs and operations -------------------------------------------------------------

def drop_referenced(case: FuzzCase, position: int) -> None:
    """Delete referenced subgraph ``position``; references to later ones are renumbered
    (a reference to the deleted one is left dangling: the model is then invalid)."""
    del case.model.referenced[position]
    for subgraph in subgraphs(case):
        for operand in subgraph.operands:
            if operand.lifetime == L.SUBGRAPH and operand.location.offset > position:
                operand.location.offset -= 1


def merge_referenced(case: FuzzCase, position: int, into: int) -> None:
    """Let every reference to referenced subgraph ``position`` name ``into`` instead (an IF
    whose branches differ gets the same branch twice), then delete ``position``."""
    for subgraph in subgraphs(case):
        for operand in subgraph.operands:
            if operand.lifetime == L.SUBGRAPH and operand.location.offset == position:
                operand.location.offset = into
    drop_referenced(case, position)


def _io_signature(subgraph: Subgraph) -> tuple:
    """The types and shapes of a subgraph's inputs and outputs."""
    def described(indexes: list[int]) -> tuple:
        return tuple((subgraph.operands[i].type, tuple(subgraph.operands[i].dimensions))
                     if 0 <= i < len(subgraph.operands) else None for i in indexes)
    return described(subgraph.inputIndexes), described(subgraph.outputIndexes)


def _consume(subgraph: Subgraph, indexes: list[int], change: int) -> None:
    for i in indexes:
        if 0 <= i < len(subgraph.operands):
            operand = subgraph.operands[i]
            operand.numberOfConsumers = max(0, operand.numberOfConsumers + change)


def drop_operation(case: FuzzCase, subgraph_index: int, op_index: int) -> None:
    """Delete an operation; outputs of main it produced go too (with their request outputs),
    and so do the operands it produced that nothing reads: left behind, they would be
    temporaries no operation writes, which makes the model invalid."""
    subgraph = subgraphs(case)[subgraph_index]
    operation = subgraph.operations.pop(op_index)
    _consume(subgraph, operation.inputs, -1)
    for i in operation.outputs:
        if subgraph_index == 0 and i in subgraph.outputIndexes:
            drop_main_output(case, subgraph.outputIndexes.index(i))
        elif 0 <= i < len(subgraph.operands) and i not in subgraph.outputIndexes:
            subgraph.operands[i].lifetime = L.TEMPORARY_VARIABLE
    for i in sorted(set(operation.outputs) & set(_unused_operands(subgraph)), reverse=True):
        remove_operand(subgraph, i)


def _may_stand_for(dimensions: list[int], produced: list[int]) -> bool:
    """Whether an operand of ``dimensions`` fits where one of ``produced`` was read: the same
    shape where ``produced`` specifies it (0: a dimension left to be inferred)."""
    return len(dimensions) == len(produced) and all(p in (0, d) for d, p in zip(dimensions, produced))


def bypass_operation(case: FuzzCase, subgraph_index: int, op_index: int) -> None:
    """Delete a one-output operation and let its readers read one of its inputs of the
    same type and shape instead (x -> RELU -> y becomes x)."""
    subgraph = subgraphs(case)[subgraph_index]
    operation = subgraph.operations[op_index]
    if len(operation.outputs) != 1:
        raise ValueError("not a one-output operation")
    result = operation.outputs[0]
    produced = subgraph.operands[result]
    is_output = result in subgraph.outputIndexes

    def fits(i: int) -> bool:
        operand = subgraph.operands[i]
        return (i != result and (operand.type, operand.scale, operand.zeroPoint)
                == (produced.type, produced.scale, produced.zeroPoint)
                and _may_stand_for(operand.dimensions, produced.dimensions)
                # a subgraph output must be computed by the subgraph itself
                and (not is_output or operand.lifetime == L.TEMPORARY_VARIABLE))
    source = next((i for i in operation.inputs if 0 <= i < len(subgraph.operands) and fits(i)), None)
    if source is None:
        raise ValueError("no input can stand for the output")
    del subgraph.operations[op_index]
    _consume(subgraph, operation.inputs, -1)
    for other in subgraph.operations:
        other.inputs = [source if i == result else i for i in other.inputs]
    subgraph.operands[source].numberOfConsumers += produced.numberOfConsumers
    if is_output:
        subgraph.outputIndexes = [source if i == result else i for i in subgraph.outputIndexes]
        subgraph.operands[source].lifetime = L.SUBGRAPH_OUTPUT
    remove_operand(subgraph, result)


def drop_main_output(case: FuzzCase, position: int) -> None:
    main = case.model.main
    index = main.outputIndexes.pop(position)
    main.operands[index].lifetime = L.TEMPORARY_VARIABLE
    if position < len(case.request.outputs):
        del case.request.outputs[position]


def drop_main_input(case: FuzzCase, position: int) -> None:
    """Delete an input nothing reads (and its request argument)."""
    main = case.model.main
    index = main.inputIndexes[position]
    if main.operands[index].numberOfConsumers:
        raise ValueError("input still read")
    del main.inputIndexes[position]
    remove_operand(main, index)
    if position < len(case.request.inputs):
        del case.request.inputs[position]


# --- shapes and choices ---------------------------------------------------------------------

def shrink_dimension(case: FuzzCase, value: int) -> None:
    """Every dimension equal to ``value`` becomes 1, and byte lengths that were exactly the
    size of the old shape (constants, request arguments) become the size of the new one."""
    def shrunk(dims: list[int]) -> list[int]:
        return [1 if d == value else d for d in dims]

    main = case.model.main
    arguments = [(argument, main.operands[index])
                 for args, indexes in ((case.request.inputs, main.inputIndexes),
                                       (case.request.outputs, main.outputIndexes))
                 for argument, index in zip(args, indexes)
                 if not argument.hasNoValue and 0 <= index < len(main.operands)]
    old_sizes = [byte_size(operand.type, argument.dimensions or operand.dimensions)
                 for argument, operand in arguments]
    for subgraph in subgraphs(case):
        for operand in subgraph.operands:
            old = byte_size(operand.type, operand.dimensions)
            operand.dimensions = shrunk(operand.dimensions)
            if operand.lifetime in CONSTANT_LIFETIMES and operand.location.length == old:
                operand.location.length = byte_size(operand.type, operand.dimensions)
    for (argument, operand), old in zip(arguments, old_sizes):
        argument.dimensions = shrunk(argument.dimensions)
        if old is not None and argument.location.length == old:
            argument.location.length = byte_size(operand.type, argument.dimensions or operand.dimensions)


def pack_constants(case: FuzzCase) -> None:
    """Lay the CONSTANT_COPY values out one after another, each aligned as the decoder
    places values, in an operandValues that holds nothing else: the bytes of operands
    reductions dropped go."""
    values = case.model.operandValues
    packed = bytearray()
    for subgraph in subgraphs(case):
        for operand in subgraph.operands:
            if operand.lifetime != L.CONSTANT_COPY:
                continue
            location = operand.location
            data = values[location.offset:location.offset + location.length]
            packed += bytes(-len(packed) % VALUE_ALIGNMENT)
            location.offset = len(packed)
            packed += data
    if len(packed) >= len(values):
        raise ValueError("the constants are packed already")
    case.model.operandValues = bytes(packed)


#: The choices that make a run depend on the clock. Their plain values are tried before any
#: other reduction: a case kept with a short loop timeout or deadline may fail on one run
#: and pass on the next, and every reduction after it would inherit that.
TIMING_CHOICES = (("deadline_ns", None), ("loopTimeoutDuration_ns", None),
                  ("fenced_duration_ns", None))
PLAIN_CHOICES = (("measureTiming", MeasureTiming.NO),
                 ("preference", ExecutionPreference.FAST_SINGLE_ANSWER), ("priority", Priority.MEDIUM), ("path", ExecutionPath.SYNC),
                 ("second_path", ExecutionPath.SYNC), ("request_change", RequestChange.NONE),
                 ("relation", Relation.NONE), ("corruption", 0))


def _no_wait_fences(case: FuzzCase) -> None:
    case.choices.wait_fences = 0
    case.choices.wait_fence_delay_ns = 0


# --- the search -------------------------------------------------------------------------------

def _choice_reductions(case: FuzzCase, plain: tuple) -> Iterator[tuple[str, Reduction]]:
    for name, value in plain:
        if getattr(case.choices, name) != value:
            yield (f"choices.{name} = {getattr(value, 'name', value)}",
                   lambda c, name=name, value=value: setattr(c.choices, name, value))


def reductions(case: FuzzCase) -> Iterator[tuple[str, Reduction]]:
    """Every reduction that may apply to ``case``: the clock's part first, then the biggest
    first."""
    yield from _choice_reductions(case, TIMING_CHOICES)
    if case.choices.wait_fences:
        yield "no wait fences", _no_wait_fences
    graphs = subgraphs(case)
    for j in range(len(case.model.referenced) - 1, -1, -1):
        yield f"drop referenced subgraph {j}", lambda c, j=j: drop_referenced(c, j)
    signatures = [_io_signature(subgraph) for subgraph in case.model.referenced]
    for j in range(len(signatures) - 1, 0, -1):
        for k in range(j):
            if signatures[k] == signatures[j]:      # else no reference could take either
                yield f"merge referenced subgraph {j} into {k}", lambda c, j=j, k=k: merge_referenced(c, j, k)
    for s in range(len(graphs) - 1, -1, -1):
        for i in range(len(graphs[s].operations) - 1, -1, -1):
            yield f"bypass operation {i} of subgraph {s}", lambda c, s=s, i=i: bypass_operation(c, s, i)
            yield f"drop operation {i} of subgraph {s}", lambda c, s=s, i=i: drop_operation(c, s, i)
    for k in range(len(case.model.main.outputIndexes) - 1, -1, -1):
        yield f"drop main output {k}", lambda c, k=k: drop_main_output(c, k)
    for k in range(len(case.model.main.inputIndexes) - 1, -1, -1):
        yield f"drop main input {k}", lambda c, k=k: drop_main_input(c, k)
    if any(_unused_operands(g) for g in graphs):
        yield "drop unused operands", drop_unused_operands
    for value in sorted({d for g in graphs for o in g.operands for d in o.dimensions if d > 1}, reverse=True):
        yield f"dimension {value} -> 1", lambda c, v=value: shrink_dimension(c, v)
    yield "pack the constants", pack_constants
    yield from _choice_reductions(case, PLAIN_CHOICES)


def minimize(case: FuzzCase, still_fails: Callable[[FuzzCase], bool], budget_s: float,
             log: Callable[[str], None] = lambda _line: None) -> FuzzCase:
    """The smallest case found within ``budget_s`` for which ``still_fails`` holds."""
    deadline = time.monotonic() + budget_s
    improved = True
    while improved and time.monotonic() < deadline:
        improved = False
        for description, reduce in reductions(case):
            if time.monotonic() > deadline:
                break
            candidate = copy_case(case)
            try:
                reduce(candidate)
            except (ValueError, IndexError):
                continue
            if still_fails(candidate):
                log(f"  kept: {description}")
                case = candidate
                improved = True
                break          # the reductions of the old case are stale now
    return case
