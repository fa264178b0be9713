"""Control flow: the subgraph an IF/WHILE operand refers to changed (to one of the same
signature, without making the graph recursive), IF's branches exchanged."""
from __future__ import annotations

from ..codec import CaseSpec, SubgraphSpec, writable_operand, writable_operation
from .blocks import SUBGRAPH_LIFETIME, Rng, subgraphs
from .operations import IF, IF_BRANCH_INPUTS
from .registry import mutation


def _signature(sg: SubgraphSpec) -> tuple:
    def types(indexes):
        return tuple((sg.operands[i].type, tuple(sg.operands[i].dimensions))
                     if i < len(sg.operands) else None for i in indexes)
    return types(sg.inputIndexes), types(sg.outputIndexes)


def _callees(spec: CaseSpec, number: int) -> set[int]:
    """Subgraph numbers (main 0, referenced[k] k + 1) that subgraph ``number`` refers to."""
    all_subgraphs = subgraphs(spec)
    if number >= len(all_subgraphs):
        return set()
    return {o.target + 1 for o in all_subgraphs[number].operands
            if o.lifetime == SUBGRAPH_LIFETIME and o.location is None}


def _reaches(spec: CaseSpec, start: int, goal: int) -> bool:
    seen, stack = set(), [start]
    while stack:
        number = stack.pop()
        if number == goal:
            return True
        if number not in seen:
            seen.add(number)
            stack.extend(_callees(spec, number))
    return False


@mutation(weight=3)
def retarget_subgraph(spec: CaseSpec, rng: Rng) -> bool:
    """Point an IF/WHILE subgraph operand at another referenced subgraph (one with the same
    signature, and not one that would make the graph recursive, when there is one)."""
    referenced = spec.model.referenced
    refs = [(number, sg, i) for number, sg in enumerate(subgraphs(spec))
            for i, o in enumerate(sg.operands)
            if o.lifetime == SUBGRAPH_LIFETIME and o.location is None]
    if not refs or len(referenced) < 2:
        return False
    number, sg, i = rng.choice(refs)
    o = sg.operands[i]
    current = (_signature(referenced[o.target]) if o.target < len(referenced) else None)
    same = [k for k, sg in enumerate(referenced)
            if k != o.target and _signature(sg) == current
            and not _reaches(spec, k + 1, number)]
    if same and rng.random() < 0.9:
        writable_operand(sg, i).target = rng.choice(same)
        return True
    ifs = [(sg, k) for sg in subgraphs(spec) for k, op in enumerate(sg.operations)
           if op.type == IF and len(op.inputs) > max(IF_BRANCH_INPUTS)]
    if ifs:
        op = writable_operation(*rng.choice(ifs))   # exchanging the branches always fits
        a, b = IF_BRANCH_INPUTS
        op.inputs[a], op.inputs[b] = op.inputs[b], op.inputs[a]
        return True
    if rng.random() < 0.3:            # a mismatching subgraph, for validation's sake
        writable_operand(sg, i).target = rng.choice(
            [k for k in range(len(referenced)) if k != o.target])
        return True
    return False
