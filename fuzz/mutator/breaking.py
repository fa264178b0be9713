"""Near-misses: one field set to a value validation must reject (or at least survive)."""
from __future__ import annotations

from functools import wraps
from typing import Callable

from driver.hal import (DataLocation, OperandExtraParams, OperandLifeTime as L, Operation,
                        OperationType, SymmPerChannelQuantParams)

from ..codec import (MAX_IO_INDEXES, CaseSpec, OperandSpec, RequestPoolSpec, writable_argument,
                     writable_operand, writable_operation)
from .blocks import ALL_OPERAND_TYPES, Rng, argument_slots, subgraphs, typed_operations
from .operations import FORM_OF, FORMS, accepted_types, accepts, near_miss_value, scalar_operand
from .registry import Mutation, mutation

_ALL_LIFETIMES_AND_INVALID = (*L, 7, 0xFFFF)
#: The operation types the driver registers, and every type of the HAL (IF, WHILE, the OEM
#: operation, those the driver does not implement).
_REGISTERED_TYPES = tuple(sorted({f.type for f in FORMS}))
_HAL_TYPES = tuple(OperationType)


#: The names of the breakers: mutations that each set one field to a value validation must
#: reject (or at least survive). They share the weight of breaking a field equally.
BREAKERS: set[str] = set()
BREAKING_WEIGHT = 5
_BREAKER_COUNT = 14


def breaker(apply: Mutation) -> Mutation:
    """Register ``apply`` as one of the breakers, with its equal share of BREAKING_WEIGHT."""
    BREAKERS.add(apply.__name__)
    return mutation(weight=BREAKING_WEIGHT / _BREAKER_COUNT)(apply)


def operand_breaker(change: Callable[[OperandSpec, Rng], None]) -> Mutation:
    """A breaker that changes one field of an operand of any subgraph."""
    @wraps(change)
    def apply(spec: CaseSpec, rng: Rng) -> bool:
        pairs = [(sg, i) for sg in subgraphs(spec) for i in range(len(sg.operands))]
        if not pairs:
            return False
        change(writable_operand(*rng.choice(pairs)), rng)
        return True
    return breaker(apply)


def _writable_operation(spec: CaseSpec, rng: Rng) -> Operation | None:
    """An operation of any subgraph, copied to be changed."""
    ops = [(sg, k) for sg in subgraphs(spec) for k in range(len(sg.operations))]
    return writable_operation(*rng.choice(ops)) if ops else None


@operand_breaker
def break_operand_type(o: OperandSpec, rng: Rng) -> None:
    o.type = rng.choice([*ALL_OPERAND_TYPES, rng.randrange(16, 200), 0x10000 | rng.randrange(4)])


@operand_breaker
def break_lifetime(o: OperandSpec, rng: Rng) -> None:
    o.lifetime = rng.choice(_ALL_LIFETIMES_AND_INVALID)
    o.location = None if rng.random() < 0.5 else o.location


@operand_breaker
def break_dimension(o: OperandSpec, rng: Rng) -> None:
    if o.dimensions:
        o.dimensions[rng.randrange(len(o.dimensions))] = rng.choice(
            [0, 1 << 16, (1 << 31) - 1, (1 << 32) - 1])
    else:
        o.dimensions = [rng.randint(1, 4)]


@operand_breaker
def break_rank(o: OperandSpec, rng: Rng) -> None:
    grow = rng.random() < 0.5
    o.dimensions = o.dimensions + [rng.randint(1, 3)] if grow else o.dimensions[:-1]


@operand_breaker
def break_operand_location(o: OperandSpec, rng: Rng) -> None:
    o.location = DataLocation(rng.randrange(3), rng.choice([0, 2, 4, 1 << 20, (1 << 32) - 1]),
                              rng.choice([0, 1, 4, 16, (1 << 32) - 1]))


@operand_breaker
def break_consumers(o: OperandSpec, rng: Rng) -> None:
    o.consumers = rng.randrange(4)


@operand_breaker
def break_scale(o: OperandSpec, rng: Rng) -> None:
    o.scale = rng.choice([0.0, -1.0, float("inf"), 1e-45, 1e38])


@operand_breaker
def break_zero_point(o: OperandSpec, rng: Rng) -> None:
    o.zeroPoint = rng.choice([-129, 256, 1 << 20, -(1 << 31)])


@operand_breaker
def break_extra_params(o: OperandSpec, rng: Rng) -> None:
    # A new OperandExtraParams, not a change to the old one: copies share those.
    extra = o.extraParams
    if rng.random() < 0.5:
        o.extraParams = OperandExtraParams(SymmPerChannelQuantParams(
            [rng.choice([0.5, 0.0, -1.0]) for _ in range(rng.randint(0, 4))], rng.randrange(5)),
            extra.extension)
    else:
        o.extraParams = OperandExtraParams(
            extra.channelQuant, bytes(rng.randrange(256) for _ in range(rng.randrange(5))))


@breaker
def break_operation_index(spec: CaseSpec, rng: Rng) -> bool:
    op = _writable_operation(spec, rng)
    if op is None:
        return False
    lst = op.inputs if (rng.random() < 0.7 or not op.outputs) and op.inputs else op.outputs
    if not lst:
        return False
    lst[rng.randrange(len(lst))] = rng.choice([rng.randrange(8), 1 << 20, (1 << 32) - 1])
    return True


@breaker
def break_operation_type(spec: CaseSpec, rng: Rng) -> bool:
    op = _writable_operation(spec, rng)
    if op is None:
        return False
    op.type = rng.choice([rng.choice(_REGISTERED_TYPES), rng.choice(_HAL_TYPES),
                          rng.randrange(1 << 20)])
    return True


@breaker
def break_io_indexes(spec: CaseSpec, rng: Rng) -> bool:
    sg = rng.choice(subgraphs(spec))
    lst = sg.inputIndexes if rng.random() < 0.5 else sg.outputIndexes
    if lst and rng.random() < 0.5:
        del lst[rng.randrange(len(lst))]
    elif len(lst) < MAX_IO_INDEXES:
        lst.append(rng.randrange(max(1, len(sg.operands) + 1)))
    return True


@breaker
def break_argument_location(spec: CaseSpec, rng: Rng) -> bool:
    args = argument_slots(spec)
    if not args:
        return False
    location = DataLocation(rng.randrange(3), rng.choice([0, 3, 1 << 20]),
                            rng.choice([0, 1, 7, 1 << 20]))
    writable_argument(*rng.choice(args)).location = location
    return True


@breaker
def break_request_pool(spec: CaseSpec, rng: Rng) -> bool:
    pools = spec.request.pools
    if not pools:
        return False
    pools[rng.randrange(len(pools))] = RequestPoolSpec(token=rng.randrange(4))
    return True


@mutation(weight=3)
def break_signature(spec: CaseSpec, rng: Rng) -> bool:
    """One step outside the signatures of an operation they accept: an input of a type no
    signature takes there, a rank beyond its range, a constant scalar outside its allowed
    values, or an input count no signature has. Validation must reject it."""
    ops = [(sg, k, form) for sg, k, op, inputs, outputs in typed_operations(spec)
           if (form := FORM_OF.get((op.type, inputs, outputs))) is not None]
    if not ops:
        return False
    sg, k, form = rng.choice(ops)
    op = sg.operations[k]
    kind = rng.randrange(4)
    if kind == 0:               # an input type no signature takes with the others
        index = rng.choice(op.inputs)      # at every position it is an input of op

        def retyped(new):
            return tuple(new if i == index else t for i, t in zip(op.inputs, form.input_types))
        others = [t for t in ALL_OPERAND_TYPES
                  if not accepts(op.type, retyped(t), form.output_types)]
        writable_operand(sg, index).type = rng.choice(others)
    elif kind == 1:             # a rank beyond the range
        ranked = [p for p, o in enumerate(form.inputs) if o.rank and o.rank[1] is not None
                  and sg.operands[op.inputs[p]].lifetime != L.NO_VALUE]
        if not ranked:
            return False
        p = rng.choice(ranked)
        writable_operand(sg, op.inputs[p]).dimensions = [1] * (form.inputs[p].rank[1] + 1)
    elif kind == 2:             # a constant scalar just outside its values
        bounded = [(p, value) for p, o in enumerate(form.inputs)
                   if (value := near_miss_value(o)) is not None
                   and sg.operands[op.inputs[p]].lifetime == L.CONSTANT_COPY]
        if not bounded:
            return False
        p, value = rng.choice(bounded)
        operand = writable_operand(sg, op.inputs[p])
        operand.value, operand.location = scalar_operand(operand.type, value).value, None
    else:                       # an input count no signature has
        counts = [c for c in (len(op.inputs) - 1, len(op.inputs) + 1, len(op.inputs) + 2)
                  if c > 0 and not accepted_types(op.type, c, len(op.outputs))]
        if not counts:
            return False
        op = writable_operation(sg, k)
        count = rng.choice(counts)
        op.inputs = (op.inputs + [op.inputs[-1]] * count)[:count]
    return True
