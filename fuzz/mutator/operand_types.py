"""Types and quantization: every operand of one type converted to its sibling, a scale or
zero point nudged, relaxed float32 computation toggled."""
from __future__ import annotations

import numpy as np

from driver.hal import OperandType as T

from ..codec import (CaseSpec, ValueSpec, element_kind, storage_bytes, writable_argument,
                     writable_operand)
from .blocks import LITERAL, NUMPY_DTYPE, Rng, as_array, literal_of, main_io_operand, subgraphs
from .operations import RETYPE_FAMILIES
from .registry import mutation

_QUANT8_TYPE = T.TENSOR_QUANT8_ASYMM
_QUANT8_SIGNED_TYPE = T.TENSOR_QUANT8_ASYMM_SIGNED


def _converted_literal(value: ValueSpec, old: int, new: int) -> ValueSpec:
    array = as_array(old, value.data)
    if array is None:
        return value
    if new in (T.TENSOR_QUANT8_ASYMM_SIGNED,):
        return literal_of((array.astype(np.int16) - 128).astype("i1"))
    if new in (T.TENSOR_QUANT8_ASYMM,):
        return literal_of((array.astype(np.int16) + 128).astype("u1"))
    with np.errstate(over="ignore"):        # float32 beyond float16's range: inf, as wanted
        return literal_of(array.astype(NUMPY_DTYPE[element_kind(new)]))


@mutation(weight=4)
def retype_all(spec: CaseSpec, rng: Rng) -> bool:
    """Convert every operand of one type to its sibling (float32 <-> float16 with their
    scalars, quant8 asymm <-> signed with the zero point shifted), values included."""
    present = {o.type for sg in subgraphs(spec) for o in sg.operands}
    families = [f for f in RETYPE_FAMILIES if not present.isdisjoint(f)]
    if not families:
        return False
    family = rng.choice(families)
    old_types: dict[int, int] = {}     # id() of each operand converted -> its old type
    for sg in subgraphs(spec):
        for i, o in enumerate(sg.operands):
            new = family.get(o.type)
            if new is None:
                continue
            o = writable_operand(sg, i)
            if o.value.kind == LITERAL:
                o.value = _converted_literal(o.value, o.type, new)
            if new == _QUANT8_SIGNED_TYPE:
                o.zeroPoint -= 128
            elif new == _QUANT8_TYPE:
                o.zeroPoint += 128
            old_types[id(o)] = o.type
            o.type = new
    for role, args in (("input", spec.request.inputs), ("output", spec.request.outputs)):
        for i, arg in enumerate(args):
            operand = main_io_operand(spec, role, i)
            if operand is None or id(operand) not in old_types:
                continue
            old = old_types[id(operand)]
            if arg.value.kind == LITERAL or arg.size_delta:
                arg = writable_argument(args, i)
            if arg.value.kind == LITERAL:
                arg.value = _converted_literal(arg.value, old, operand.type)
            if arg.size_delta:     # a buffer for an unknown shape: scale it with the element
                arg.size_delta = (arg.size_delta * (storage_bytes(operand.type, [1]) or 1)
                                  // (storage_bytes(old, [1]) or 1))
    return True


@mutation(weight=2)
def quantization(spec: CaseSpec, rng: Rng) -> bool:
    """Nudge the scale or zero point of a quantized operand."""
    candidates = [(sg, i) for sg in subgraphs(spec) for i, o in enumerate(sg.operands)
                  if o.scale > 0]
    if not candidates:
        return False
    o = writable_operand(*rng.choice(candidates))
    if rng.random() < 0.6:
        # Doubling past float32's range gives an infinite scale: a mutant the driver must
        # reject, so the overflow is wanted, not warned about.
        with np.errstate(over="ignore"):
            o.scale = float(np.float32(o.scale * rng.choice([0.5, 2.0, 0.9, 1.1])))
    else:
        o.zeroPoint += rng.choice([-1, 1, -10, 10])
    return True


@mutation(weight=1)
def toggle_relaxed(spec: CaseSpec, rng: Rng) -> bool:
    spec.model.relaxComputationFloat32toFloat16 = not spec.model.relaxComputationFloat32toFloat16
    return True

