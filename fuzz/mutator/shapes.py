"""Shapes: one dimension resized wherever it occurs, shapes left for the driver to infer,
dimensions spelled out (or dropped) by the request."""
from __future__ import annotations

from itertools import compress, count

from driver.hal import OperandLifeTime as L

from ..codec import CaseSpec, OperandSpec, storage_bytes, writable_argument, writable_operand
from .blocks import LITERAL, TENSOR_TYPES, Rng, main_io_operand, random_seed, subgraphs
from .registry import mutation

_TEMPORARY_OR_OUTPUT_LIFETIMES = (L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT)


def _regenerate_literals(spec: CaseSpec, changed: set[int], rng: Rng) -> None:
    """Literal values of resized operands no longer fit: give them generated values."""
    if not changed:
        return
    is_changed = changed.__contains__
    for sg in subgraphs(spec):
        operands = sg.operands
        # (The operands resized found at C speed: a case can have hundreds.)
        for i in compress(count(), map(is_changed, map(id, operands))):
            if operands[i].value.kind == LITERAL:
                writable_operand(sg, i).value = random_seed(rng)
    for i, arg in enumerate(spec.request.inputs):
        operand = main_io_operand(spec, "input", i)
        if operand is not None and id(operand) in changed and arg.value.kind == LITERAL:
            writable_argument(spec.request.inputs, i).value = random_seed(rng)


@mutation(weight=8)
def resize_dimension(spec: CaseSpec, rng: Rng) -> bool:
    """Change one dimension value consistently: every operand of the same type whose
    dimension at the same position from the end has that value gets the new one (that
    keeps element-wise and broadcasting graphs valid), request dimensions included."""
    candidates = [o for sg in subgraphs(spec) for o in sg.operands
                  if o.type in TENSOR_TYPES and any(o.dimensions)]   # (none is negative)
    if not candidates:
        return False
    picked = rng.choice(candidates)
    axis = rng.choice([i for i, d in enumerate(picked.dimensions) if d > 0])
    old = picked.dimensions[axis]
    new = rng.choice([1, 2, 3, 4, 5, 8, old + 1, max(1, old - 1), old * 2])
    resize_everywhere(spec, picked, axis, new if new != old else old + 1, rng)
    return True


def resize_everywhere(spec: CaseSpec, picked: OperandSpec, axis: int, new: int, rng: Rng) -> None:
    """``picked``'s dimension ``axis`` set to ``new``, and every operand of its type whose
    dimension at the same position from the end has the old value (request dimensions
    included); literals that no longer fit get generated values."""
    from_end = len(picked.dimensions) - 1 - axis
    old = picked.dimensions[axis]
    changed: set[int] = set()       # id() of the operands resized (or fed resized values)

    def resized(dims: list[int]) -> list[int] | None:
        k = len(dims) - 1 - from_end
        if k >= 0 and dims[k] == old:
            return [*dims[:k], new, *dims[k + 1:]]
        return None

    picked_type = picked.type
    for sg in subgraphs(spec):
        for i, o in enumerate(sg.operands):
            if o.type == picked_type:
                dims = resized(o.dimensions)
                if dims is not None:
                    o = writable_operand(sg, i)
                    o.dimensions = dims
                    changed.add(id(o))
    for role, args in (("input", spec.request.inputs), ("output", spec.request.outputs)):
        for i, arg in enumerate(args):
            operand = main_io_operand(spec, role, i)
            if operand is not None and operand.type == picked_type and arg.dimensions:
                dims = resized(arg.dimensions)
                if dims is not None:
                    writable_argument(args, i).dimensions = dims
                    changed.add(id(operand))
    _regenerate_literals(spec, changed, rng)


@mutation(weight=3)
def unknown_dimensions(spec: CaseSpec, rng: Rng) -> bool:
    """Leave a temporary's or an output's shape (partly) unknown: the driver must infer it
    (dynamic output shapes). Main outputs keep a buffer of the size they had."""
    candidates = [(sg, i, o) for sg in subgraphs(spec) for i, o in enumerate(sg.operands)
                  if o.lifetime in _TEMPORARY_OR_OUTPUT_LIFETIMES
                  and o.type in TENSOR_TYPES and any(o.dimensions)]
    if not candidates:
        return False
    sg, index, operand = rng.choice(candidates)
    operand = writable_operand(sg, index)
    old_size = storage_bytes(operand.type, operand.dimensions)
    if rng.random() < 0.2:
        operand.dimensions = []
    else:
        known = [axis for axis, d in enumerate(operand.dimensions) if d]
        operand.dimensions[rng.choice(known)] = 0
    if sg is spec.model.main and index in sg.outputIndexes:
        position = sg.outputIndexes.index(index)
        if position < len(spec.request.outputs):
            arg = spec.request.outputs[position]
            if arg.location is None and not arg.dimensions:
                writable_argument(spec.request.outputs, position).size_delta = \
                    max(arg.size_delta + old_size, 1)
    return True


@mutation(weight=2)
def request_dimensions(spec: CaseSpec, rng: Rng) -> bool:
    """Spell out (or drop) the dimensions of a request argument."""
    args = [(role, i, a) for role, args in (("input", spec.request.inputs),
                                            ("output", spec.request.outputs))
            for i, a in enumerate(args)]
    if not args:
        return False
    role, i, arg = rng.choice(args)
    operand = main_io_operand(spec, role, i)
    arguments = spec.request.inputs if role == "input" else spec.request.outputs
    if arg.dimensions:
        dims = [] if rng.random() < 0.7 else [d + 1 for d in arg.dimensions]
    elif operand is not None and operand.dimensions:
        dims = [d if d else rng.randint(1, 4) for d in operand.dimensions]
    else:
        return False
    writable_argument(arguments, i).dimensions = dims
    return True

