"""Near-misses: one field set to a value validation must reject (or at least survive)."""
from __future__ import annotations

from driver.hal import (DataLocation, OperandExtraParams, OperandLifeTime as L,
                        SymmPerChannelQuantParams)

from ..codec import (MAX_IO_INDEXES, CaseSpec, RequestPoolSpec, SubgraphSpec, writable_argument,
                     writable_operand, writable_operation)
from .blocks import ALL_OPERAND_TYPES, Rng, argument_slots, subgraphs
from .registry import mutation

_ALL_LIFETIMES_AND_INVALID = (*L, 7, 0xFFFF)


def _any_operand(spec: CaseSpec, rng: Rng) -> tuple[SubgraphSpec, int] | None:
    """(subgraph, operand index) of an operand of any subgraph."""
    pairs = [(sg, i) for sg in subgraphs(spec) for i in range(len(sg.operands))]
    return rng.choice(pairs) if pairs else None


@mutation(weight=5)
def break_something(spec: CaseSpec, rng: Rng) -> bool:
    """One field set to a value validation must reject (or at least survive)."""
    picked = _any_operand(spec, rng)
    kind = rng.randrange(14)
    if kind < 9:                # kinds 0-8 change that operand
        if picked is None:
            return False
        o = writable_operand(*picked)
    if kind == 0:
        o.type = rng.choice([*ALL_OPERAND_TYPES, rng.randrange(16, 200),
                             0x10000 | rng.randrange(4)])
    elif kind == 1:
        o.lifetime = rng.choice(_ALL_LIFETIMES_AND_INVALID)
        o.location = None if rng.random() < 0.5 else o.location
    elif kind == 2:
        if o.dimensions:
            o.dimensions[rng.randrange(len(o.dimensions))] = rng.choice(
                [0, 1 << 16, (1 << 31) - 1, (1 << 32) - 1])
        else:
            o.dimensions = [rng.randint(1, 4)]
    elif kind == 3:
        grow = rng.random() < 0.5
        o.dimensions = o.dimensions + [rng.randint(1, 3)] if grow else o.dimensions[:-1]
    elif kind == 4:
        o.location = DataLocation(rng.randrange(3), rng.choice([0, 2, 4, 1 << 20, (1 << 32) - 1]),
                                  rng.choice([0, 1, 4, 16, (1 << 32) - 1]))
    elif kind == 5:
        o.consumers = rng.randrange(4)
    elif kind == 6:
        o.scale = rng.choice([0.0, -1.0, float("inf"), 1e-45, 1e38])
    elif kind == 7:
        o.zeroPoint = rng.choice([-129, 256, 1 << 20, -(1 << 31)])
    elif kind == 8:
        # A new OperandExtraParams, not a change to the old one: copies share those.
        extra = o.extraParams
        if rng.random() < 0.5:
            o.extraParams = OperandExtraParams(SymmPerChannelQuantParams(
                [rng.choice([0.5, 0.0, -1.0]) for _ in range(rng.randint(0, 4))], rng.randrange(5)),
                extra.extension)
        else:
            o.extraParams = OperandExtraParams(
                extra.channelQuant, bytes(rng.randrange(256) for _ in range(rng.randrange(5))))
    elif kind == 9:
        ops = [(sg, k) for sg in subgraphs(spec) for k in range(len(sg.operations))]
        if not ops:
            return False
        op = writable_operation(*rng.choice(ops))
        lst = op.inputs if (rng.random() < 0.7 or not op.outputs) and op.inputs else op.outputs
        if not lst:
            return False
        lst[rng.randrange(len(lst))] = rng.choice([rng.randrange(8), 1 << 20, (1 << 32) - 1])
    elif kind == 10:
        ops = [(sg, k) for sg in subgraphs(spec) for k in range(len(sg.operations))]
        if not ops:
            return False
        new_type = rng.choice([rng.randrange(102), 10000, rng.randrange(1 << 20)])
        writable_operation(*rng.choice(ops)).type = new_type
    elif kind == 11:
        sg = rng.choice(subgraphs(spec))
        lst = sg.inputIndexes if rng.random() < 0.5 else sg.outputIndexes
        if lst and rng.random() < 0.5:
            del lst[rng.randrange(len(lst))]
        elif len(lst) < MAX_IO_INDEXES:
            lst.append(rng.randrange(max(1, len(sg.operands) + 1)))
    elif kind == 12:
        args = argument_slots(spec)
        if not args:
            return False
        location = DataLocation(rng.randrange(3), rng.choice([0, 3, 1 << 20]),
                                rng.choice([0, 1, 7, 1 << 20]))
        writable_argument(*rng.choice(args)).location = location
    else:
        pools = spec.request.pools
        if pools:
            pools[rng.randrange(len(pools))] = RequestPoolSpec(token=rng.randrange(4))
        else:
            return False
    return True
