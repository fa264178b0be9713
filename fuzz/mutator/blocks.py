"""Building blocks shared by the mutations: element arrays and literal values, the operands
and request arguments worth mutating, new operands, the pools new arguments go to."""
from __future__ import annotations

import random

import numpy as np

from driver.hal import OperandLifeTime as L, OperandType as T, Operation

from ..codec import (MAX_OPERANDS, NUM_SEEDS, ArgumentSpec, CaseSpec, ElementKind, OperandSpec,
                     RequestPoolSpec, SubgraphSpec, ValueKind, ValueSpec, element_kind,
                     storage_bytes)

#: Output buffer for an output of unknown shape created by a mutation.
UNKNOWN_OUTPUT_BYTES = 1024

Rng = random.Random

NUMPY_DTYPE = {ElementKind.BYTES: np.dtype("u1"), ElementKind.FLOAT32: np.dtype("<f4"),
               ElementKind.FLOAT16: np.dtype("<f2"), ElementKind.INT32: np.dtype("<i4"),
               ElementKind.UINT32: np.dtype("<u4"), ElementKind.BOOL: np.dtype("u1"),
               ElementKind.INT8: np.dtype("i1"), ElementKind.INT16: np.dtype("<i2"),
               ElementKind.UINT16: np.dtype("<u2")}

# Enum members and lists of them looked up once (here and in the mutation modules): the
# mutations test every operand of a case, iterating an enum class costs a generator, and
# looking a member up on its class goes through EnumType.__getattr__ (ten times the cost of
# reading a global).
ALL_OPERAND_TYPES = tuple(T)
TENSOR_TYPES = frozenset(t for t in T if t.name.startswith("TENSOR_"))
CONSTANT_LIFETIMES = (L.CONSTANT_COPY, L.CONSTANT_REFERENCE)
SUBGRAPH_LIFETIME = L.SUBGRAPH
LITERAL = ValueKind.LITERAL
_SUBGRAPH_TYPE = T.SUBGRAPH


def subgraphs(spec: CaseSpec) -> list[SubgraphSpec]:
    return spec.model.subgraphs()


def is_tensor(operand_type: int) -> bool:
    return operand_type in TENSOR_TYPES


def as_array(operand_type: int, data: bytes, zeros: bool = False) -> np.ndarray | None:
    """``data`` as a writable array of the type's elements. ``zeros``: ``data`` is all
    zeros, and the array is made without copying it (a zero value takes up to a megabyte)."""
    dtype = NUMPY_DTYPE[element_kind(operand_type)]
    if len(data) % dtype.itemsize:
        return None
    if zeros:
        return np.zeros(len(data) // dtype.itemsize, dtype)
    return np.frombuffer(data, dtype=dtype).copy()


def literal_of(array: np.ndarray) -> ValueSpec:
    return ValueSpec(LITERAL, 0, array.tobytes())


# Values are immutable, so specs share them: the values mutations draw most are made once.
_GENERATED_VALUES = tuple(ValueSpec(ValueKind.GENERATED, seed) for seed in range(NUM_SEEDS))
#: INT32 scalars 0-3: the usual values of operation parameters (fused activation, padding
#: scheme, axis, ...).
SMALL_INT32_LITERALS = tuple(literal_of(np.array([value], "<i4")) for value in range(4))


def random_seed(rng: Rng) -> ValueSpec:
    return _GENERATED_VALUES[rng.randrange(NUM_SEEDS)]


def main_io_operand(spec: CaseSpec, role: str, i: int) -> OperandSpec | None:
    main = spec.model.main
    indexes = main.inputIndexes if role == "input" else main.outputIndexes
    if i < len(indexes) and indexes[i] < len(main.operands):
        return main.operands[indexes[i]]
    return None


def placed_constants(spec: CaseSpec) -> list[tuple[SubgraphSpec, int, OperandSpec]]:
    return [(sg, i, o) for sg in subgraphs(spec) for i, o in enumerate(sg.operands)
            if o.lifetime in CONSTANT_LIFETIMES and o.location is None
            and o.type != _SUBGRAPH_TYPE]


def valued_inputs(spec: CaseSpec) -> list[tuple[int, ArgumentSpec, OperandSpec]]:
    return [(i, arg, operand) for i, arg in enumerate(spec.request.inputs)
            if (operand := main_io_operand(spec, "input", i)) is not None
            and arg.location is None and not arg.hasNoValue]


def typed_operations(spec: CaseSpec) -> list[tuple[SubgraphSpec, int, Operation, tuple, tuple]]:
    """(subgraph, position, operation, its input types, its output types) of every operation
    whose operands all exist."""
    return [(sg, k, op, tuple(sg.operands[i].type for i in op.inputs),
             tuple(sg.operands[i].type for i in op.outputs))
            for sg in subgraphs(spec) for k, op in enumerate(sg.operations)
            if all(i < len(sg.operands) for i in op.inputs + op.outputs)]


def effective_dims(arg: ArgumentSpec, operand: OperandSpec) -> list[int]:
    return arg.dimensions or operand.dimensions


def new_operand(sg: SubgraphSpec, operand: OperandSpec) -> int | None:
    if len(sg.operands) >= MAX_OPERANDS:
        return None
    sg.operands.append(operand)
    return len(sg.operands) - 1


def _placed_pool(arguments: list[ArgumentSpec]) -> int:
    """The pool the first of ``arguments`` the decoder places is in (0: none is)."""
    return next((arg.target for arg in arguments if arg.location is None and not arg.hasNoValue),
                0)


def output_pool(spec: CaseSpec) -> int:
    """The pool the existing outputs are placed in (a new output goes there too)."""
    return _placed_pool(spec.request.outputs)


def input_pool(spec: CaseSpec) -> int:
    return _placed_pool(spec.request.inputs)


def output_argument(spec: CaseSpec, operand: OperandSpec) -> ArgumentSpec:
    known = storage_bytes(operand.type, operand.dimensions) > 0
    return ArgumentSpec(target=output_pool(spec),
                        size_delta=0 if known else UNKNOWN_OUTPUT_BYTES)


def argument_slots(spec: CaseSpec) -> list[tuple[list[ArgumentSpec], int]]:
    """(request inputs or outputs, index) of every request argument, inputs first."""
    request = spec.request
    return ([(request.inputs, i) for i in range(len(request.inputs))]
            + [(request.outputs, i) for i in range(len(request.outputs))])


def ensure_request_pool(spec: CaseSpec) -> None:
    if not spec.request.pools:
        spec.request.pools.append(RequestPoolSpec())
