"""Metamorphic relations: ways to rewrite a model and request that must not change the
outputs, for any driver. Each is a small function ``(model, request) -> (model, request)``
registered with ``@relation(Relation.X, Violation)``, Violation being its subclass of
MetamorphicViolation (fuzz/oracles.py, rule ``metamorphic-<name>``); it returns None where
it does not apply, and builds new structures, sharing the unchanged parts of the originals
(never changing them).

The harness applies the relation a case's choices name (``choices.relation``) once the case
ran successfully, runs the rewritten case on the same driver and compares the outputs
(fuzz/oracles.py, check_same_outputs). A rewritten case the reference validator rejects, or
the driver does not prepare or run successfully, is skipped, never judged: a relation may
need what a driver does not support (control flow, unknown shapes). A relation rewrites
the case; a route (fuzz/routes.py, registered apart) runs it again another way through the HAL.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, replace
from typing import Callable

from driver.hal import (DataLocation, MemoryPool, Model, Operand, OperandLifeTime, OperandType,
                        Operation, OperationType, Request, RequestArgument, Subgraph)
from driver.hal.dtypes import byte_size
from driver.hal.enums import SCALAR_OPERAND_TYPES
from driver.memory import Memory

from . import oracles
from .case import Relation

L = OperandLifeTime
Derive = Callable[[Model, Request], "tuple[Model, Request] | None"]

#: Constants and request arguments placed by a relation start at multiples of this (the
#: alignment the HAL's clients give values).
ALIGNMENT = 4
#: OWN_POOLS puts argument k at offset (k + 1) * this in its pool.
POOL_OFFSET_STEP = 16


@dataclass(frozen=True)
class RelationRule:
    relation: Relation
    derive: Derive
    Violation: type[oracles.MetamorphicViolation]


RULES: dict[Relation, RelationRule] = {}


def relation(which: Relation, Violation: type[oracles.MetamorphicViolation]) -> Callable[[Derive], Derive]:
    """Register ``derive`` as the relation ``which``, judged by ``Violation``."""
    def register(derive: Derive) -> Derive:
        RULES[which] = RelationRule(which, derive, Violation)
        return derive
    return register


# --- building blocks --------------------------------------------------------------------------

def _appended_value(model: Model, data: bytes) -> tuple[bytes, DataLocation]:
    """operandValues with ``data`` appended at an aligned offset, and its location."""
    values = bytes(model.operandValues)
    offset = -len(values) % ALIGNMENT + len(values)
    return values.ljust(offset, b"\0") + data, DataLocation(0, offset, len(data))


def _operand_as(operand: Operand, lifetime: L, consumers: int, location: DataLocation | None = None,
                dimensions: list[int] | None = None) -> Operand:
    return Operand(operand.type, list(operand.dimensions if dimensions is None else dimensions),
                   consumers, operand.scale, operand.zeroPoint, lifetime,
                   location or DataLocation(), operand.extraParams)


def argument_bytes(request: Request, argument: RequestArgument) -> bytes | None:
    """The bytes of ``argument``'s value in its pool (None: it has no value, or no pool the
    client can read: a driver-managed buffer's)."""
    location = argument.location
    if argument.hasNoValue or not 0 <= location.poolIndex < len(request.pools):
        return None
    memory = request.pools[location.poolIndex].hidlMemory
    return None if memory is None else memory.read(location.offset, location.length)


# --- (a) the main subgraph as a branch of IF ----------------------------------------------------

def _in_if(model: Model, request: Request, condition: bool) -> tuple[Model, Request]:
    """A main subgraph of one IF(condition) whose branches are both the old main subgraph,
    now referenced (last, so that the indexes of the others stay)."""
    main = model.main
    operands = ([_operand_as(main.operands[i], L.SUBGRAPH_INPUT, 1) for i in main.inputIndexes]
                + [_operand_as(main.operands[i], L.SUBGRAPH_OUTPUT, 0) for i in main.outputIndexes])
    values, location = _appended_value(model, bytes([condition]))
    inputs = list(range(len(main.inputIndexes)))
    outputs = list(range(len(inputs), len(operands)))
    operands.append(Operand(OperandType.TENSOR_BOOL8, [1], 1, lifetime=L.CONSTANT_COPY, location=location))
    for _branch in ("then", "else"):
        operands.append(Operand(OperandType.SUBGRAPH, [], 1, lifetime=L.SUBGRAPH,
                                location=DataLocation(0, len(model.referenced), 0)))
    condition_then_else = list(range(len(operands) - 3, len(operands)))
    outer = Subgraph(operands, [Operation(OperationType.IF, condition_then_else + inputs, outputs)],
                     inputs, outputs)
    return replace(model, main=outer, referenced=[*model.referenced, main], operandValues=values), request


@relation(Relation.IF_THEN, oracles.MetamorphicIfThenViolation)
def if_then(model: Model, request: Request) -> tuple[Model, Request]:
    """The main subgraph moved into the then-branch of an IF with a constant true condition."""
    return _in_if(model, request, True)


@relation(Relation.IF_ELSE, oracles.MetamorphicIfElseViolation)
def if_else(model: Model, request: Request) -> tuple[Model, Request]:
    """The main subgraph moved into the else-branch of an IF with a constant false condition."""
    return _in_if(model, request, False)


# --- (b) a main input given as a constant -------------------------------------------------------

def _as_constant(model: Model, request: Request, place) -> tuple[Model, Request] | None:
    """The first main input with a value of known size given as a constant instead,
    placed by ``place(model, data) -> (model, lifetime, location)``."""
    main = model.main
    for k, (index, argument) in enumerate(zip(main.inputIndexes, request.inputs)):
        operand = main.operands[index]
        dims = list(argument.dimensions or operand.dimensions)
        size = byte_size(operand.type, dims)
        data = argument_bytes(request, argument)
        if size is None or data is None or len(data) < size:
            continue
        model, lifetime, location = place(model, data[:size])
        operands = list(main.operands)
        operands[index] = _operand_as(operand, lifetime, operand.numberOfConsumers, location, dims)
        inputs = main.inputIndexes[:k] + main.inputIndexes[k + 1:]
        sub = Subgraph(operands, main.operations, inputs, main.outputIndexes)
        return (replace(model, main=sub),
                Request(request.inputs[:k] + request.inputs[k + 1:], request.outputs, request.pools))
    return None


@relation(Relation.CONSTANT_COPY, oracles.MetamorphicConstantCopyViolation)
def constant_copy(model: Model, request: Request) -> tuple[Model, Request] | None:
    """A main input supplied as a CONSTANT_COPY operand instead of through the request."""
    def place(model: Model, data: bytes):
        values, location = _appended_value(model, data)
        return replace(model, operandValues=values), L.CONSTANT_COPY, location
    return _as_constant(model, request, place)


@relation(Relation.CONSTANT_REFERENCE, oracles.MetamorphicConstantReferenceViolation)
def constant_reference(model: Model, request: Request) -> tuple[Model, Request] | None:
    """A main input supplied as a CONSTANT_REFERENCE operand in a model pool of its own."""
    def place(model: Model, data: bytes):
        location = DataLocation(len(model.pools), 0, len(data))
        return replace(model, pools=[*model.pools, Memory.from_bytes(data)]), L.CONSTANT_REFERENCE, location
    return _as_constant(model, request, place)


# --- (c) the request's arguments in pools of their own ---------------------------------------

@relation(Relation.OWN_POOLS, oracles.MetamorphicOwnPoolsViolation)
def own_pools(model: Model, request: Request) -> tuple[Model, Request] | None:
    """Each request argument moved to a pool of its own, at another offset."""
    moved = arguments_apart(request, lambda k: (k + 1) * POOL_OFFSET_STEP)
    return None if moved is None else (model, moved)


def arguments_apart(request: Request, offset_of: Callable[[int], int]) -> Request | None:
    """``request`` with each argument that has a value in a pool of its own, the k-th such
    at ``offset_of(k)``, zeros before it (None: a pool the driver allocated, whose buffers
    cannot be moved)."""
    pools: list[MemoryPool] = []

    def moved(argument: RequestArgument) -> RequestArgument | None:
        if argument.hasNoValue:
            return argument
        data = argument_bytes(request, argument)
        if data is None:
            return None
        offset = offset_of(len(pools))
        pools.append(MemoryPool(hidlMemory=Memory.from_bytes(bytes(offset) + data)))
        return RequestArgument(False, DataLocation(len(pools) - 1, offset, len(data)),
                               list(argument.dimensions))
    inputs = [moved(argument) for argument in request.inputs]
    outputs = [moved(argument) for argument in request.outputs]
    if None in inputs or None in outputs:
        return None
    return Request(inputs, outputs, pools)


# --- (d) operands and operations renumbered ---------------------------------------------------

def _renumbered(subgraph: Subgraph) -> Subgraph:
    """Operands in reverse order; operations in another topological order (the
    latest-numbered one first among those whose inputs are ready)."""
    count = len(subgraph.operands)
    new = [count - 1 - i for i in range(count)]
    producer = {o: k for k, operation in enumerate(subgraph.operations) for o in operation.outputs}
    waiting = [{producer[i] for i in operation.inputs if i in producer} for operation in subgraph.operations]
    users: dict[int, list[int]] = {}
    for k, needs in enumerate(waiting):
        for before in needs:
            users.setdefault(before, []).append(k)
    ready = [-k for k, needs in enumerate(waiting) if not needs]
    heapq.heapify(ready)
    order = []
    while ready:
        k = -heapq.heappop(ready)
        order.append(k)
        for user in users.get(k, ()):
            waiting[user].discard(k)
            if not waiting[user]:
                heapq.heappush(ready, -user)
    operations = [Operation(op.type, [new[i] for i in op.inputs], [new[i] for i in op.outputs])
                  for op in (subgraph.operations[k] for k in order)]
    return Subgraph(subgraph.operands[::-1], operations, [new[i] for i in subgraph.inputIndexes],
                    [new[i] for i in subgraph.outputIndexes])


@relation(Relation.RENUMBERED, oracles.MetamorphicRenumberedViolation)
def renumbered(model: Model, request: Request) -> tuple[Model, Request]:
    """Every subgraph's operands and operations renumbered (another valid topological
    order of its operations); the inputs and outputs keep their order."""
    return replace(model, main=_renumbered(model.main),
                     referenced=[_renumbered(subgraph) for subgraph in model.referenced]), request


# --- (e) output shapes left to the driver ----------------------------------------------------

@relation(Relation.UNKNOWN_OUTPUT_SHAPES, oracles.MetamorphicUnknownOutputShapesViolation)
def unknown_output_shapes(model: Model, request: Request) -> tuple[Model, Request] | None:
    """The main outputs' dimensions left unknown (their rank kept) in the model and the
    request: the driver works them out."""
    main = model.main
    operands = list(main.operands)
    outputs = list(request.outputs)
    for k, index in enumerate(main.outputIndexes):
        operand = operands[index]
        if operand.type in SCALAR_OPERAND_TYPES or k >= len(outputs):
            continue
        rank = len(outputs[k].dimensions or operand.dimensions)
        operands[index] = _operand_as(operand, operand.lifetime, operand.numberOfConsumers,
                                      operand.location, [0] * rank)
        argument = outputs[k]
        outputs[k] = RequestArgument(argument.hasNoValue, argument.location, [])
    if operands == main.operands:
        return None
    sub = Subgraph(operands, main.operations, main.inputIndexes, main.outputIndexes)
    return replace(model, main=sub), Request(request.inputs, outputs, request.pools)
