"""Values: elements of constants and request inputs changed a little or a lot, or
generated anew."""
from __future__ import annotations

import numpy as np

from driver.hal import OperandType as T

from ..codec import (ArgumentSpec, CaseSpec, ElementKind, SubgraphSpec, ValueKind, ValueSpec,
                     element_kind, value_bytes, writable_argument, writable_operand)
from .blocks import (ALL_OPERAND_TYPES, NUMPY_DTYPE, SMALL_INT32_LITERALS, Rng, as_array,
                     effective_dims, literal_of, placed_constants, random_seed, valued_inputs)
from .registry import mutation

_ZERO = ValueKind.ZERO
_INT32_TYPE = T.INT32


def tweaked(array: np.ndarray, kind: ElementKind, rng: Rng) -> np.ndarray:
    """One element changed a little (most of the time) or a lot."""
    if array.size == 0:
        return array
    i = rng.randrange(array.size)
    v = array.item(i)
    if kind == ElementKind.BOOL:
        array[i] = 0 if v else 1
    elif kind in (ElementKind.FLOAT32, ElementKind.FLOAT16):
        value = rng.choice([v * 2, -v, v + 1, v - 1, 0.0, 1.0, rng.uniform(-4, 4),
                            rng.choice([1e4, -1e4, 1e-3])])
        if abs(value) <= _LARGEST_FLOAT[kind]:
            array[i] = value        # (np.errstate costs more than the rest of the mutation)
        else:
            with np.errstate(over="ignore"):    # too large for the type: inf, as wanted
                array[i] = value
    else:
        low, high = _INTEGER_RANGE[array.dtype]
        step = rng.choice([1, -1, 1, -1, 2, rng.randint(-8, 8), rng.randint(0, 8)])
        new = v + step if rng.random() < 0.85 else rng.choice([low, high, 0, 100])
        array[i] = min(max(new, low), high)
    return array


_INTEGER_RANGE = {dtype: (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max))
                  for dtype in NUMPY_DTYPE.values() if dtype.kind in "iu"}
#: The operand types whose element_kind is INT32 (resp. INT32 or BOOL).
_INT32_ELEMENT_TYPES = frozenset(t for t in ALL_OPERAND_TYPES
                                 if element_kind(t) == ElementKind.INT32)
_INT32_OR_BOOL_ELEMENT_TYPES = frozenset(t for t in ALL_OPERAND_TYPES
                                         if element_kind(t) in (ElementKind.INT32,
                                                                ElementKind.BOOL))
#: The largest magnitude a float element takes without overflowing to inf.
_LARGEST_FLOAT = {kind: float(np.finfo(NUMPY_DTYPE[kind]).max)
                  for kind in (ElementKind.FLOAT32, ElementKind.FLOAT16)}


@mutation(weight=12)
def tweak_constant(spec: CaseSpec, rng: Rng) -> bool:
    """Change one element of a constant; small integer constants (loop bounds, counters,
    scalar parameters) are picked more often, as their values steer control flow."""
    constants = placed_constants(spec)
    if not constants:
        return False
    small = [c for c in constants if c[2].type in _INT32_ELEMENT_TYPES
             and len(c[2].dimensions) <= 1 and (not c[2].dimensions or c[2].dimensions[0] <= 4)]
    sg, index, operand = rng.choice(small if small and rng.random() < 0.6 else constants)
    operand = writable_operand(sg, index)
    if operand.type == _INT32_TYPE and rng.random() < 0.6:
        # Scalar INT32 constants are mostly operation parameters with a few legal values
        # (fused activation 0-3, padding scheme 0-2, axis, ...): stay in that range.
        operand.value = SMALL_INT32_LITERALS[rng.randrange(4)]
        return True
    data = value_bytes(operand.type, operand.dimensions, operand.value)
    array = as_array(operand.type, data, operand.value.kind == _ZERO)
    if array is None or array.size == 0:
        operand.value = random_seed(rng)
        return True
    operand.value = literal_of(tweaked(array, element_kind(operand.type), rng))
    return True


@mutation(weight=10)
def tweak_input(spec: CaseSpec, rng: Rng) -> bool:
    """Change one element of a request input (a loop count fed by the request, an IF
    condition, ...)."""
    inputs = valued_inputs(spec)
    if not inputs:
        return False
    small = [x for x in inputs if x[2].type in _INT32_OR_BOOL_ELEMENT_TYPES]
    i, arg, operand = rng.choice(small if small and rng.random() < 0.7 else inputs)
    arg = writable_argument(spec.request.inputs, i)
    data = value_bytes(operand.type, effective_dims(arg, operand), arg.value, arg.size_delta)
    array = as_array(operand.type, data, arg.value.kind == _ZERO)
    if array is None or array.size == 0:
        arg.value = random_seed(rng)
        return True
    arg.value = literal_of(tweaked(array, element_kind(operand.type), rng))
    arg.size_delta = 0
    return True


@mutation(weight=5)
def reseed_value(spec: CaseSpec, rng: Rng) -> bool:
    """New generated contents for a constant or an input."""
    # (operands of a subgraph or the request inputs, index) of each candidate
    targets: list[tuple[SubgraphSpec | list[ArgumentSpec], int]] = [
        (sg, i) for sg, i, _ in placed_constants(spec)]
    targets += [(spec.request.inputs, i) for i, _, _ in valued_inputs(spec)]
    if not targets:
        return False
    where, i = rng.choice(targets)
    if isinstance(where, SubgraphSpec):
        writable_operand(where, i).value = random_seed(rng) if rng.random() < 0.9 else ValueSpec()
    else:
        arg = writable_argument(where, i)
        arg.value = random_seed(rng) if rng.random() < 0.9 else ValueSpec()
        arg.size_delta = 0
    return True
