"""What the mutations know about operations, read from the driver's operation signatures
(driver/operations/signatures.py), so that an operation the driver registers is fuzzed
without a change here: which operations can follow an operand of a type and rank (their
scalar parameters drawn from the signature's allowed values, optional inputs sometimes
omitted), which take the same operand types (one can become another), and what one step
outside a signature is. Beyond them: the operand types that convert into one another, IF's
branches.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Optional

import numpy as np

from driver.errors import DriverError
from driver.hal import OperandLifeTime as L, OperandType as T, OperationType as Op
from driver.operations.registry import OperandInfo, OperationContext, definitions, lookup
from driver.operations.signatures import Operand, Range, concrete_types

from ..codec import OperandSpec, SubgraphSpec
from .blocks import TENSOR_TYPES, Rng, literal_of, new_operand

#: How often a drawn scalar parameter is one step outside its allowed values.
NEAR_MISS_SHARE = 0.03


@dataclass(frozen=True)
class Form:
    """One way to call an operation: a signature (repeated operands at their fewest) with
    a concrete type at every position."""
    type: Op
    inputs: tuple[Operand, ...]
    outputs: tuple[Operand, ...]
    input_types: tuple[int, ...]
    output_types: tuple[int, ...]


def _forms() -> tuple[Form, ...]:
    forms = []
    for definition in definitions():
        for signature in definition.signatures:
            (inputs, _), (outputs, _) = signature.counts()
            operands = signature.operands_for(inputs, outputs)
            forms += [Form(definition.type, *operands, i, o) for i, o in concrete_types(signature)]
    return tuple(forms)


FORMS = _forms()
#: (operation type, input types, output types) -> its form.
FORM_OF = {(f.type, f.input_types, f.output_types): f for f in FORMS}
#: (input types, output types) -> the operations taking exactly these: "similar" operations.
SAME_OPERANDS: dict[tuple, tuple[Op, ...]] = {}
for _form in FORMS:
    _key = (_form.input_types, _form.output_types)
    if _form.type not in SAME_OPERANDS.get(_key, ()):
        SAME_OPERANDS[_key] = SAME_OPERANDS.get(_key, ()) + (_form.type,)


def accepts(operation_type: int, input_types: tuple, output_types: tuple) -> bool:
    """Whether a signature of the operation takes these operand types (and counts)."""
    return (input_types, output_types) in accepted_types(
        operation_type, len(input_types), len(output_types))


@functools.lru_cache(maxsize=512)
def accepted_types(operation_type: int, input_count: int, output_count: int) -> frozenset:
    definition = lookup(operation_type)
    if definition is None:
        return frozenset()
    return frozenset(types for s in definition.signatures
                     for types in concrete_types(s, input_count, output_count))


def in_rank(operand: Operand, rank: int) -> bool:
    """A known rank (0: unknown, always in) inside the operand's range."""
    low, high = operand.rank or (0, None)
    return rank == 0 or (low <= rank and (high is None or rank <= high))


# --- scalar parameters -------------------------------------------------------------------

def valid_value(operand: Operand, operand_type: int, rng: Rng):
    """A value the operand allows (values unknown to the signature: a usual one)."""
    values = operand.values
    if isinstance(values, frozenset):
        return rng.choice(sorted(values))
    if isinstance(values, Range):
        if values.low is None:
            return 0 if values.high is None else values.high
        value = values.low + (1 if values.low_exclusive else 0) + rng.choice((0, 0, 1))
        return value if values.high is None else min(value, values.high)
    if operand_type == T.BOOL:
        return rng.random() < 0.5
    if operand_type in (T.FLOAT32, T.FLOAT16):
        return rng.choice((1.0, 0.5))
    return rng.choice((0, 1, -1))


def near_miss_value(operand: Operand):
    """A value just outside the operand's allowed values, or None if they are not bounded."""
    values = operand.values
    if isinstance(values, frozenset) and operand.types == (T.BOOL,):
        # A BOOL reads any nonzero byte as true: only the other truth value is outside.
        outside = {False, True} - values
        return outside.pop() if outside else None
    if isinstance(values, frozenset):
        return max(values) + 1
    if isinstance(values, Range):
        if values.low is not None:
            return values.low if values.low_exclusive else values.low - 1
        return None if values.high is None else values.high + 1
    return None


_SCALAR_DTYPE = {T.FLOAT32: "<f4", T.FLOAT16: "<f2", T.INT32: "<i4", T.UINT32: "<u4", T.BOOL: "u1"}


def scalar_operand(operand_type: int, value) -> OperandSpec:
    return OperandSpec(operand_type, [], lifetime=L.CONSTANT_COPY,
                       value=literal_of(np.array([value], _SCALAR_DTYPE[operand_type])))


# --- an operation following an operand -------------------------------------------------------

#: An operation planned on an operand: (operation type, input operand indexes, output scale,
#: output zero point); None where no operation fits the operand.
Plan = Optional[tuple[int, list[int], float, int]]


@functools.lru_cache(maxsize=256)
def following(operand_type: int, rank: int, tensor_inputs: int) -> tuple[Form, ...]:
    """Forms with one output of the operand's type whose first input takes the operand, as
    do their other ``tensor_inputs - 1`` tensor inputs (the rest being scalars)."""
    return tuple(f for f in FORMS if f.input_types[0] == operand_type
                 and f.output_types == (operand_type,) and in_rank(f.inputs[0], rank)
                 and sum(t in TENSOR_TYPES for t in f.input_types) == tensor_inputs
                 and all(t == operand_type or t not in TENSOR_TYPES for t in f.input_types))


def plan_following(sg: SubgraphSpec, index: int, o: OperandSpec, rng: Rng,
                   tensor_inputs: int) -> Plan:
    """op(o, ...) with o's type and shape (its scalar parameters added to ``sg``): one of
    the forms above that the driver's validation and shape inference accept, or rarely,
    with a scalar just outside its allowed values, one it must reject."""
    forms = following(o.type, len(o.dimensions), tensor_inputs)
    for form in rng.sample(forms, min(3, len(forms))):
        scale, zero_point = form.outputs[0].fixed_quantization(o.type) or (o.scale, o.zeroPoint)
        params: list = []       # per input after the first: an OperandSpec, or None for o
        near_miss = False
        for operand, operand_type in zip(form.inputs[1:], form.input_types[1:]):
            if operand.optional and rng.random() < 0.3:
                params.append(OperandSpec(operand_type, [], lifetime=L.NO_VALUE))
            elif operand_type in TENSOR_TYPES:
                params.append(None)
            else:
                value = near_miss_value(operand) if rng.random() < NEAR_MISS_SHARE else None
                near_miss |= value is not None
                params.append(scalar_operand(operand_type, valid_value(operand, operand_type, rng)
                                             if value is None else value))
        if near_miss or _keeps_shape(form, o, scale, zero_point, params):
            inputs = [index] + [index if p is None else new_operand(sg, p) for p in params]
            return form.type, inputs, scale, zero_point
    return None


_KEEPS_SHAPE: dict = {}


def _keeps_shape(form: Form, o: OperandSpec, scale: float, zero_point: int, params) -> bool:
    """Whether the driver validates the planned operation and infers o's shape for it
    (remembered by content)."""
    key = (form, tuple(o.dimensions), o.scale, o.zeroPoint, scale, zero_point,
           tuple(None if p is None else (p.lifetime, p.value.data) for p in params))
    known = _KEEPS_SHAPE.get(key)
    if known is None:
        if len(_KEEPS_SHAPE) > 4096:
            _KEEPS_SHAPE.clear()
        known = _KEEPS_SHAPE[key] = _driver_keeps_shape(form, o, scale, zero_point, params)
    return known


def _driver_keeps_shape(form: Form, o: OperandSpec, scale: float, zero_point: int,
                        params) -> bool:
    dims = tuple(o.dimensions)

    def info(k: int, p: Optional[OperandSpec]) -> OperandInfo:
        if p is None:
            return OperandInfo(k, o.type, dims, o.scale, o.zeroPoint, L.TEMPORARY_VARIABLE, None)
        value = (None if p.lifetime == L.NO_VALUE
                 else np.frombuffer(p.value.data, _SCALAR_DTYPE[p.type]))
        return OperandInfo(k, p.type, (), 0.0, 0, p.lifetime, value)

    inputs = [info(0, None)] + [info(k + 1, p) for k, p in enumerate(params)]
    output = OperandInfo(len(inputs), o.type, dims, scale, zero_point, L.SUBGRAPH_OUTPUT, None)
    return output_shapes(form.type, inputs, [output]) == [dims or None]


def output_shapes(operation_type: int, inputs: list[OperandInfo],
                  outputs: list[OperandInfo]) -> Optional[list]:
    """The output shapes the driver infers for an operation it validates, else None (also
    for shapes past the driver's limits)."""
    definition = lookup(operation_type)
    ctx = OperationContext(Op(operation_type), 0, inputs, outputs)
    shapes = [None if i.is_omitted else (i.dimensions or None) if i.type in TENSOR_TYPES
              else () for i in inputs]
    try:
        definition.validate(ctx)
        return definition.infer_shapes(ctx, shapes)
    except DriverError:
        return None


#: Operand type conversions applied to a whole case, one family at a time: float32 <->
#: float16 with their scalars, quant8 asymm <-> signed.
RETYPE_FAMILIES = [
    {T.TENSOR_FLOAT32: T.TENSOR_FLOAT16, T.FLOAT32: T.FLOAT16},
    {T.TENSOR_FLOAT16: T.TENSOR_FLOAT32, T.FLOAT16: T.FLOAT32},
    {T.TENSOR_QUANT8_ASYMM: T.TENSOR_QUANT8_ASYMM_SIGNED},
    {T.TENSOR_QUANT8_ASYMM_SIGNED: T.TENSOR_QUANT8_ASYMM},
]

IF = Op.IF
#: IF's inputs after its condition: the two branch subgraphs (exchanging them keeps it valid).
IF_BRANCH_INPUTS = (1, 2)
