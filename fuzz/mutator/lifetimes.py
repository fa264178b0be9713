"""Where values live: a constant of main becomes a model input fed by the request and
back, a constant moves between the model's operand values and a memory pool."""
from __future__ import annotations

from driver.hal import OperandLifeTime as L

from ..codec import (MAX_IO_INDEXES, MAX_REQUEST_ARGUMENTS, ArgumentSpec, BlobSpec, CaseSpec,
                     ValueSpec, writable_operand)
from .blocks import (CONSTANT_LIFETIMES, Rng, ensure_request_pool, input_pool, is_tensor,
                     placed_constants)
from .registry import mutation


@mutation(weight=3)
def constant_to_input(spec: CaseSpec, rng: Rng) -> bool:
    """A constant of main becomes a model input fed the same value by the request."""
    main = spec.model.main
    constants = [(i, o) for i, o in enumerate(main.operands)
                 if o.lifetime in CONSTANT_LIFETIMES and o.location is None]
    if not constants or len(main.inputIndexes) >= MAX_IO_INDEXES \
            or len(spec.request.inputs) >= MAX_REQUEST_ARGUMENTS:
        return False
    if len(spec.request.inputs) != len(main.inputIndexes):
        return False
    ensure_request_pool(spec)
    index, o = rng.choice(constants)
    o = writable_operand(main, index)
    o.lifetime = L.SUBGRAPH_INPUT
    main.inputIndexes.append(index)
    spec.request.inputs.append(ArgumentSpec(target=input_pool(spec), value=o.value))
    o.value = ValueSpec()
    return True


@mutation(weight=2)
def input_to_constant(spec: CaseSpec, rng: Rng) -> bool:
    """A model input of main becomes a constant holding the value the request fed it."""
    main = spec.model.main
    if len(spec.request.inputs) != len(main.inputIndexes):
        return False
    candidates = [(position, arg) for position, arg in enumerate(spec.request.inputs)
                  if arg.location is None and not arg.hasNoValue and not arg.dimensions
                  and not arg.size_delta and main.inputIndexes[position] < len(main.operands)
                  and main.inputIndexes.count(main.inputIndexes[position]) == 1]
    if not candidates:
        return False
    position, arg = rng.choice(candidates)
    operand = main.operands[main.inputIndexes[position]]
    if 0 in operand.dimensions or (is_tensor(operand.type) and not operand.dimensions):
        return False
    operand = writable_operand(main, main.inputIndexes[position])
    operand.lifetime = L.CONSTANT_COPY if rng.random() < 0.8 else L.CONSTANT_REFERENCE
    operand.value = arg.value
    if operand.lifetime == L.CONSTANT_REFERENCE:
        _ensure_model_pool(spec)
        operand.target = 0
    del main.inputIndexes[position]
    del spec.request.inputs[position]
    return True


def _ensure_model_pool(spec: CaseSpec) -> None:
    if not spec.model.pools:
        spec.model.pools.append(BlobSpec())


@mutation(weight=2)
def switch_constant_storage(spec: CaseSpec, rng: Rng) -> bool:
    """CONSTANT_COPY <-> CONSTANT_REFERENCE (in a model memory pool)."""
    constants = placed_constants(spec)
    if not constants:
        return False
    o = writable_operand(*rng.choice(constants)[:2])
    if o.lifetime == L.CONSTANT_COPY:
        _ensure_model_pool(spec)
        o.lifetime = L.CONSTANT_REFERENCE
        o.target = rng.randrange(len(spec.model.pools))
    else:
        o.lifetime = L.CONSTANT_COPY
        o.target = 0
    return True
