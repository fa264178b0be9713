"""The custom mutator: structural mutations of a decoded case, for libFuzzer through atheris.

``mutate(data, max_size, seed)`` takes the input as a :class:`fuzz.codec.CaseSpec`, applies
one to three mutations drawn by weight, and serializes the result; some of the time (and
whenever the result would not fit) it leaves the input to libFuzzer's own byte mutation
instead. ``crossover(data1, data2, max_out_size, seed)`` combines two inputs.

Inputs are parsed once: their specs are kept (with the bytes of each part, see
:class:`fuzz.codec.EncodedSpec`), and each call works on a copy that shares the operands,
operations and request arguments with the kept spec, so only what a mutation changes is
copied and serialized again. A mutation therefore never changes one of those in place: it
takes it through ``writable_operand``, ``writable_operation`` or ``writable_argument``.

Most mutations keep a valid case valid, so that the fuzzer spends its time past validation:
changing a loop bound or another constant, resizing one dimension everywhere it occurs,
converting all float32 operands to float16, appending an operation to an output, turning a
constant into a model input and back, changing execution choices. A minority breaks one
thing on purpose (a type, a lifetime, an index, a location, a buffer size), which is what
validation needs to be fuzzed with. Every mutation is a plain function of (spec, rng) that
returns whether it applied, so tests can drive each one.
"""
from __future__ import annotations

import random
import sys
from bisect import bisect
from dataclasses import dataclass
from itertools import accumulate, compress, count
from typing import Callable, Sequence

import numpy as np

from driver.hal import (DataLocation, ExecutionPreference, MeasureTiming, OperandExtraParams,
                        OperandLifeTime as L, OperandType as T, Operation,
                        OperationType as Op, Priority, SymmPerChannelQuantParams)

from ..case import ExecutionChoices, ExecutionPath
from ..codec import (MAX_IO_INDEXES, MAX_OPERANDS, MAX_OPERATIONS, MAX_POOLS, MAX_REFERENCED,
                    MAX_REQUEST_ARGUMENTS, NUM_SEEDS, ArgumentSpec, BlobSpec, CaseSpec,
                    CodecLimitError, ElementKind, EncodedSpec, OperandSpec, Origins,
                    RequestPoolSpec, RequestSpec, SubgraphSpec, ValueKind, ValueSpec,
                    element_kind, encode_parts, parse_parts, read_choices, storage_bytes,
                    value_bytes, with_choices, writable_argument, writable_operand,
                    writable_operation)

#: Share of calls left to libFuzzer's byte-level mutation (which also breaks the encoding's
#: structure in ways no structural mutation would).
BYTE_MUTATION_SHARE = 0.15
#: Output buffer for an output of unknown shape created by a mutation.
UNKNOWN_OUTPUT_BYTES = 1024

Rng = random.Random


# --- building blocks ----------------------------------------------------------------------------

_NUMPY_DTYPE = {ElementKind.BYTES: np.dtype("u1"), ElementKind.FLOAT32: np.dtype("<f4"),
                ElementKind.FLOAT16: np.dtype("<f2"), ElementKind.INT32: np.dtype("<i4"),
                ElementKind.UINT32: np.dtype("<u4"), ElementKind.BOOL: np.dtype("u1"),
                ElementKind.INT8: np.dtype("i1"), ElementKind.INT16: np.dtype("<i2"),
                ElementKind.UINT16: np.dtype("<u2")}

FLOAT_TENSORS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
QUANT8_TENSORS = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
CONSTANT_LIFETIMES = (L.CONSTANT_COPY, L.CONSTANT_REFERENCE)

# Enum members and lists of them looked up once: the mutations test every operand of a
# case, iterating an enum class costs a generator, and looking a member up on its class
# goes through EnumType.__getattr__ (ten times the cost of reading a global).
_ALL_OPERAND_TYPES = tuple(T)
_ALL_LIFETIMES_AND_INVALID = (*L, 7, 0xFFFF)
_PATH_CHOICES = tuple(ExecutionPath)
_PREFERENCE_CHOICES = tuple(ExecutionPreference)
_PRIORITY_CHOICES = tuple(Priority)
_SUBGRAPH_TYPE = T.SUBGRAPH
_REFERENCE_LIFETIME = L.CONSTANT_REFERENCE
_SUBGRAPH_LIFETIME = L.SUBGRAPH
_OUTPUT_LIFETIME = L.SUBGRAPH_OUTPUT
_TEMPORARY_OR_OUTPUT_LIFETIMES = (L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT)
_LITERAL = ValueKind.LITERAL
_ZERO = ValueKind.ZERO
_IF = Op.IF
_INT32_TYPE = T.INT32
_QUANT8_TYPE = T.TENSOR_QUANT8_ASYMM
_QUANT8_SIGNED_TYPE = T.TENSOR_QUANT8_ASYMM_SIGNED


def subgraphs(spec: CaseSpec) -> list[SubgraphSpec]:
    return spec.model.subgraphs()


def is_tensor(operand_type: int) -> bool:
    return operand_type in _TENSOR_TYPES


_TENSOR_TYPES = frozenset(t for t in T if t.name.startswith("TENSOR_"))


def as_array(operand_type: int, data: bytes, zeros: bool = False) -> np.ndarray | None:
    """``data`` as a writable array of the type's elements. ``zeros``: ``data`` is all
    zeros, and the array is made without copying it (a zero value takes up to a megabyte)."""
    dtype = _NUMPY_DTYPE[element_kind(operand_type)]
    if len(data) % dtype.itemsize:
        return None
    if zeros:
        return np.zeros(len(data) // dtype.itemsize, dtype)
    return np.frombuffer(data, dtype=dtype).copy()


def literal_of(array: np.ndarray) -> ValueSpec:
    return ValueSpec(_LITERAL, 0, array.tobytes())


# Values are immutable, so specs share them: the values mutations draw most are made once.
_GENERATED_VALUES = tuple(ValueSpec(ValueKind.GENERATED, seed) for seed in range(NUM_SEEDS))
#: INT32 scalars 0-3: the usual values of operation parameters (fused activation, padding
#: scheme, axis, ...).
_SMALL_INT32_LITERALS = tuple(literal_of(np.array([value], "<i4")) for value in range(4))


def random_seed(rng: Rng) -> ValueSpec:
    return _GENERATED_VALUES[rng.randrange(NUM_SEEDS)]


def int32_literal(value: int) -> ValueSpec:
    if 0 <= value < len(_SMALL_INT32_LITERALS):
        return _SMALL_INT32_LITERALS[value]
    return literal_of(np.array([value], "<i4"))


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
    out = []
    for i, arg in enumerate(spec.request.inputs):
        operand = main_io_operand(spec, "input", i)
        if operand is not None and arg.location is None and not arg.hasNoValue:
            out.append((i, arg, operand))
    return out


def effective_dims(arg: ArgumentSpec, operand: OperandSpec) -> list[int]:
    return arg.dimensions or operand.dimensions


def new_operand(sg: SubgraphSpec, operand: OperandSpec) -> int | None:
    if len(sg.operands) >= MAX_OPERANDS:
        return None
    sg.operands.append(operand)
    return len(sg.operands) - 1


def int32_constant(sg: SubgraphSpec, value: int) -> int | None:
    return new_operand(sg, OperandSpec(T.INT32, [], lifetime=L.CONSTANT_COPY,
                                       value=int32_literal(value)))


def scalar_constant(sg: SubgraphSpec, operand_type: int, value: float) -> int | None:
    dtype = "<f2" if operand_type == T.FLOAT16 else "<f4"
    return new_operand(sg, OperandSpec(operand_type, [], lifetime=L.CONSTANT_COPY,
                                       value=literal_of(np.array([value], dtype))))


def output_pool(spec: CaseSpec) -> int:
    """The pool the existing outputs are placed in (a new output goes there too)."""
    for arg in spec.request.outputs:
        if arg.location is None and not arg.hasNoValue:
            return arg.target
    return 0


def input_pool(spec: CaseSpec) -> int:
    for arg in spec.request.inputs:
        if arg.location is None and not arg.hasNoValue:
            return arg.target
    return 0


def output_argument(spec: CaseSpec, operand: OperandSpec) -> ArgumentSpec:
    known = storage_bytes(operand.type, operand.dimensions) > 0
    return ArgumentSpec(target=output_pool(spec),
                        size_delta=0 if known else UNKNOWN_OUTPUT_BYTES)


def _argument_slots(spec: CaseSpec) -> list[tuple[list[ArgumentSpec], int]]:
    """(request inputs or outputs, index) of every request argument, inputs first."""
    request = spec.request
    return ([(request.inputs, i) for i in range(len(request.inputs))]
            + [(request.outputs, i) for i in range(len(request.outputs))])


def ensure_request_pool(spec: CaseSpec) -> None:
    if not spec.request.pools:
        spec.request.pools.append(RequestPoolSpec())


# --- value mutations --------------------------------------------------------------------------

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
                  for dtype in _NUMPY_DTYPE.values() if dtype.kind in "iu"}
#: The operand types whose element_kind is INT32 (resp. INT32 or BOOL).
_INT32_ELEMENT_TYPES = frozenset(t for t in _ALL_OPERAND_TYPES
                                 if element_kind(t) == ElementKind.INT32)
_INT32_OR_BOOL_ELEMENT_TYPES = frozenset(t for t in _ALL_OPERAND_TYPES
                                         if element_kind(t) in (ElementKind.INT32,
                                                                ElementKind.BOOL))
#: The largest magnitude a float element takes without overflowing to inf.
_LARGEST_FLOAT = {kind: float(np.finfo(_NUMPY_DTYPE[kind]).max)
                  for kind in (ElementKind.FLOAT32, ElementKind.FLOAT16)}


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
        operand.value = _SMALL_INT32_LITERALS[rng.randrange(4)]
        return True
    data = value_bytes(operand.type, operand.dimensions, operand.value)
    array = as_array(operand.type, data, operand.value.kind == _ZERO)
    if array is None or array.size == 0:
        operand.value = random_seed(rng)
        return True
    operand.value = literal_of(tweaked(array, element_kind(operand.type), rng))
    return True


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


# --- shape mutations --------------------------------------------------------------------------

def _regenerate_literals(spec: CaseSpec, changed: set[int], rng: Rng) -> None:
    """Literal values of resized operands no longer fit: give them generated values."""
    if not changed:
        return
    is_changed = changed.__contains__
    for sg in subgraphs(spec):
        operands = sg.operands
        # (The operands resized found at C speed: a case can have hundreds.)
        for i in compress(count(), map(is_changed, map(id, operands))):
            if operands[i].value.kind == _LITERAL:
                writable_operand(sg, i).value = random_seed(rng)
    for i, arg in enumerate(spec.request.inputs):
        operand = main_io_operand(spec, "input", i)
        if operand is not None and id(operand) in changed and arg.value.kind == _LITERAL:
            writable_argument(spec.request.inputs, i).value = random_seed(rng)


def resize_dimension(spec: CaseSpec, rng: Rng) -> bool:
    """Change one dimension value consistently: every operand of the same type whose
    dimension at the same position from the end has that value gets the new one (that
    keeps element-wise and broadcasting graphs valid), request dimensions included."""
    candidates = [o for sg in subgraphs(spec) for o in sg.operands
                  if o.type in _TENSOR_TYPES and any(o.dimensions)]   # (none is negative)
    if not candidates:
        return False
    picked = rng.choice(candidates)
    axis = rng.choice([i for i, d in enumerate(picked.dimensions) if d > 0])
    from_end = len(picked.dimensions) - 1 - axis
    old = picked.dimensions[axis]
    new = rng.choice([1, 2, 3, 4, 5, 8, old + 1, max(1, old - 1), old * 2])
    if new == old:
        new = old + 1
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
    return True


def unknown_dimensions(spec: CaseSpec, rng: Rng) -> bool:
    """Leave a temporary's or an output's shape (partly) unknown: the driver must infer it
    (dynamic output shapes). Main outputs keep a buffer of the size they had."""
    candidates = [(sg, i, o) for sg in subgraphs(spec) for i, o in enumerate(sg.operands)
                  if o.lifetime in _TEMPORARY_OR_OUTPUT_LIFETIMES
                  and o.type in _TENSOR_TYPES and any(o.dimensions)]
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


# --- type mutations ---------------------------------------------------------------------------

_RETYPE_FAMILIES = [
    {T.TENSOR_FLOAT32: T.TENSOR_FLOAT16, T.FLOAT32: T.FLOAT16},
    {T.TENSOR_FLOAT16: T.TENSOR_FLOAT32, T.FLOAT16: T.FLOAT32},
    {T.TENSOR_QUANT8_ASYMM: T.TENSOR_QUANT8_ASYMM_SIGNED},
    {T.TENSOR_QUANT8_ASYMM_SIGNED: T.TENSOR_QUANT8_ASYMM},
]


def _converted_literal(value: ValueSpec, old: int, new: int) -> ValueSpec:
    array = as_array(old, value.data)
    if array is None:
        return value
    if new in (T.TENSOR_QUANT8_ASYMM_SIGNED,):
        return literal_of((array.astype(np.int16) - 128).astype("i1"))
    if new in (T.TENSOR_QUANT8_ASYMM,):
        return literal_of((array.astype(np.int16) + 128).astype("u1"))
    with np.errstate(over="ignore"):        # float32 beyond float16's range: inf, as wanted
        return literal_of(array.astype(_NUMPY_DTYPE[element_kind(new)]))


def retype_all(spec: CaseSpec, rng: Rng) -> bool:
    """Convert every operand of one type to its sibling (float32 <-> float16 with their
    scalars, quant8 asymm <-> signed with the zero point shifted), values included."""
    present = {o.type for sg in subgraphs(spec) for o in sg.operands}
    families = [f for f in _RETYPE_FAMILIES if not present.isdisjoint(f)]
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
            if o.value.kind == _LITERAL:
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
            if arg.value.kind == ValueKind.LITERAL or arg.size_delta:
                arg = writable_argument(args, i)
            if arg.value.kind == ValueKind.LITERAL:
                arg.value = _converted_literal(arg.value, old, operand.type)
            if arg.size_delta:     # a buffer for an unknown shape: scale it with the element
                arg.size_delta = (arg.size_delta * (storage_bytes(operand.type, [1]) or 1)
                                  // (storage_bytes(old, [1]) or 1))
    return True


def quantization(spec: CaseSpec, rng: Rng) -> bool:
    """Nudge the scale or zero point of a quantized operand."""
    candidates = [(sg, i) for sg in subgraphs(spec) for i, o in enumerate(sg.operands)
                  if o.scale > 0]
    if not candidates:
        return False
    o = writable_operand(*rng.choice(candidates))
    if rng.random() < 0.6:
        o.scale = float(np.float32(o.scale * rng.choice([0.5, 2.0, 0.9, 1.1])))
    else:
        o.zeroPoint += rng.choice([-1, 1, -10, 10])
    return True


def toggle_relaxed(spec: CaseSpec, rng: Rng) -> bool:
    spec.model.relaxComputationFloat32toFloat16 = not spec.model.relaxComputationFloat32toFloat16
    return True


# --- graph mutations --------------------------------------------------------------------------

_UNARY_FLOAT = (Op.RELU, Op.RELU1, Op.RELU6, Op.LOGISTIC, Op.TANH, Op.ABS, Op.FLOOR, Op.NEG,
                Op.EXP, Op.SQRT, Op.RSQRT, Op.SIN, Op.LOG, Op.HARD_SWISH)
_UNARY_QUANT = (Op.RELU, Op.RELU1, Op.RELU6, Op.HARD_SWISH, Op.LOGISTIC, Op.TANH)
#: Output quantization LOGISTIC and TANH require: (scale, zero point) per type.
_FIXED_OUTPUT_QUANT = {
    (Op.LOGISTIC, T.TENSOR_QUANT8_ASYMM): (1 / 256, 0),
    (Op.LOGISTIC, T.TENSOR_QUANT8_ASYMM_SIGNED): (1 / 256, -128),
    (Op.TANH, T.TENSOR_QUANT8_ASYMM): (1 / 128, 128),
    (Op.TANH, T.TENSOR_QUANT8_ASYMM_SIGNED): (1 / 128, 0),
}
_BINARY_WITH_ACTIVATION = (Op.ADD, Op.SUB, Op.MUL)
_BINARY_PLAIN = (Op.MAXIMUM, Op.MINIMUM)


def _output_candidates(spec: CaseSpec) -> list[tuple[SubgraphSpec, int, int]]:
    """(subgraph, position in outputIndexes, operand index) of tensor outputs."""
    out = []
    for sg in subgraphs(spec):
        for position, index in enumerate(sg.outputIndexes):
            if index < len(sg.operands) and sg.operands[index].type in _TENSOR_TYPES \
                    and sg.operands[index].lifetime == _OUTPUT_LIFETIME:
                out.append((sg, position, index))
    return out


def _extend_output(spec: CaseSpec, rng: Rng, build: Callable) -> bool:
    """Replace an output o by op(o, ...): o becomes a temporary, the new operand the output."""
    candidates = _output_candidates(spec)
    rng.shuffle(candidates)
    for sg, position, index in candidates:
        if len(sg.operations) >= MAX_OPERATIONS or len(sg.operands) + 3 > MAX_OPERANDS:
            continue
        old = sg.operands[index]
        planned = build(sg, index, old, rng)
        if planned is None:
            continue
        operation_type, inputs, out_scale, out_zero_point = planned
        result = new_operand(sg, OperandSpec(old.type, list(old.dimensions), out_scale,
                                             out_zero_point, L.SUBGRAPH_OUTPUT))
        writable_operand(sg, index).lifetime = L.TEMPORARY_VARIABLE
        sg.outputIndexes[position] = result
        sg.operations.append(Operation(operation_type, inputs, [result]))
        return True
    return False


def append_unary(spec: CaseSpec, rng: Rng) -> bool:
    """o -> UNARY(o) on an output (any subgraph: shapes and types are kept, so IF/WHILE
    signatures still match)."""
    def build(sg, index, o, rng):
        if o.type in FLOAT_TENSORS:
            choice = rng.choice(_UNARY_FLOAT + (Op.ELU, Op.SOFTMAX))
            if choice == Op.ELU:
                alpha = scalar_constant(sg, T.FLOAT16 if o.type == T.TENSOR_FLOAT16 else T.FLOAT32,
                                        rng.choice([1.0, 0.5]))
                return choice, [index, alpha], o.scale, o.zeroPoint
            if choice == Op.SOFTMAX:
                if not o.dimensions:
                    return None
                beta = scalar_constant(sg, T.FLOAT16 if o.type == T.TENSOR_FLOAT16 else T.FLOAT32,
                                       1.0)
                return choice, [index, beta], o.scale, o.zeroPoint
            return choice, [index], o.scale, o.zeroPoint
        if o.type in QUANT8_TENSORS:
            choice = rng.choice(_UNARY_QUANT)
            scale, zero_point = _FIXED_OUTPUT_QUANT.get((choice, o.type), (o.scale, o.zeroPoint))
            return choice, [index], scale, zero_point
        if o.type == T.TENSOR_INT32:
            return rng.choice((Op.ABS, Op.NEG)), [index], o.scale, o.zeroPoint
        if o.type == T.TENSOR_BOOL8:
            return Op.LOGICAL_NOT, [index], o.scale, o.zeroPoint
        return None
    return _extend_output(spec, rng, build)


def append_binary(spec: CaseSpec, rng: Rng) -> bool:
    """o -> BINARY(o, o) on an output."""
    def build(sg, index, o, rng):
        if o.type == T.TENSOR_BOOL8:
            return rng.choice((Op.LOGICAL_AND, Op.LOGICAL_OR)), [index, index], 0.0, 0
        if o.type not in FLOAT_TENSORS + QUANT8_TENSORS + (T.TENSOR_INT32,):
            return None
        if rng.random() < 0.3:
            return rng.choice(_BINARY_PLAIN), [index, index], o.scale, o.zeroPoint
        division = (Op.DIV,) if o.type in FLOAT_TENSORS else ()
        choice = rng.choice(_BINARY_WITH_ACTIVATION + division)
        activation = 0 if o.type == T.TENSOR_INT32 else rng.randrange(4)
        act = int32_constant(sg, activation)
        return choice, [index, index, act], o.scale, o.zeroPoint
    return _extend_output(spec, rng, build)


def duplicate_operation(spec: CaseSpec, rng: Rng) -> bool:
    """Run an operation of main twice: the copy's results become new model outputs, so they
    are computed and compared too."""
    main = spec.model.main
    ops = [op for op in main.operations
           if all(i < len(main.operands) for i in op.inputs + op.outputs)]
    if not ops or len(main.operations) >= MAX_OPERATIONS:
        return False
    op = rng.choice(ops)
    if (len(main.operands) + len(op.outputs) > MAX_OPERANDS
            or len(main.outputIndexes) + len(op.outputs) > MAX_IO_INDEXES
            or len(spec.request.outputs) + len(op.outputs) > MAX_REQUEST_ARGUMENTS):
        return False
    ensure_request_pool(spec)
    outputs = []
    for index in op.outputs:
        old = main.operands[index]
        copy = OperandSpec(old.type, list(old.dimensions), old.scale, old.zeroPoint,
                           L.SUBGRAPH_OUTPUT, extraParams=_copy_extra(old.extraParams))
        new_index = new_operand(main, copy)
        main.outputIndexes.append(new_index)
        spec.request.outputs.append(output_argument(spec, copy))
        outputs.append(new_index)
    main.operations.append(Operation(op.type, list(op.inputs), outputs))
    return True


def cut_operation(spec: CaseSpec, rng: Rng) -> bool:
    """Remove an operation of main; its results become model inputs fed by the request."""
    main = spec.model.main
    # Main must keep an output: only operations that do not produce all of them.
    candidates = [k for k, op in enumerate(main.operations)
                  if any(i not in op.outputs for i in main.outputIndexes)]
    if not candidates:
        return False
    k = rng.choice(candidates)
    op = main.operations[k]
    outputs = [i for i in op.outputs if i < len(main.operands)]
    if len(main.inputIndexes) + len(outputs) > MAX_IO_INDEXES:
        return False
    ensure_request_pool(spec)
    del main.operations[k]
    for index in outputs:
        operand = writable_operand(main, index)
        if index in main.outputIndexes:
            position = main.outputIndexes.index(index)
            del main.outputIndexes[position]
            if position < len(spec.request.outputs):
                del spec.request.outputs[position]
        if operand.lifetime in (L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT):
            operand.lifetime = L.SUBGRAPH_INPUT
            main.inputIndexes.append(index)
            dims = [d if d else rng.randint(1, 3) for d in operand.dimensions]
            spec.request.inputs.append(ArgumentSpec(
                dimensions=dims if 0 in operand.dimensions else [], target=input_pool(spec),
                value=random_seed(rng)))
    return True


_SIMILAR_OPERATIONS = [
    (Op.ADD, Op.SUB, Op.MUL, Op.DIV),
    (Op.MAXIMUM, Op.MINIMUM, Op.POW),
    (Op.EQUAL, Op.NOT_EQUAL, Op.LESS, Op.LESS_EQUAL, Op.GREATER, Op.GREATER_EQUAL),
    (Op.LOGICAL_AND, Op.LOGICAL_OR),
    (Op.RELU, Op.RELU1, Op.RELU6, Op.LOGISTIC, Op.TANH, Op.ABS, Op.FLOOR, Op.NEG, Op.EXP,
     Op.SQRT, Op.RSQRT, Op.SIN, Op.LOG, Op.HARD_SWISH, Op.DEQUANTIZE, Op.QUANTIZE, Op.CAST),
    (Op.REDUCE_MAX, Op.REDUCE_MIN, Op.REDUCE_PROD, Op.REDUCE_SUM, Op.MEAN),
    (Op.REDUCE_ALL, Op.REDUCE_ANY),
    (Op.ARGMAX, Op.ARGMIN),
    (Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D, Op.L2_POOL_2D),
    (Op.RESIZE_BILINEAR, Op.RESIZE_NEAREST_NEIGHBOR),
    (Op.SPACE_TO_DEPTH, Op.DEPTH_TO_SPACE),
    (Op.SPACE_TO_BATCH_ND, Op.BATCH_TO_SPACE_ND),
    (Op.PAD, Op.PAD_V2),
    (Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.GROUPED_CONV_2D, Op.TRANSPOSE_CONV_2D),
    (Op.SQUEEZE, Op.EXPAND_DIMS, Op.RESHAPE),
    (Op.SLICE, Op.STRIDED_SLICE),
    (Op.GATHER, Op.TILE),
    (Op.SOFTMAX, Op.LOG_SOFTMAX, Op.L2_NORMALIZATION),
    (Op.IF, Op.WHILE),
]
_SIMILAR = {t: group for group in _SIMILAR_OPERATIONS for t in group}


def change_operation_type(spec: CaseSpec, rng: Rng) -> bool:
    """An operation becomes another of its family (mostly one taking the same operands)."""
    ops = [(sg, k) for sg in subgraphs(spec) for k, op in enumerate(sg.operations)
           if op.type in _SIMILAR]
    if not ops:
        return False
    sg, k = rng.choice(ops)
    operation_type = sg.operations[k].type
    others = [t for t in _SIMILAR[operation_type] if t != operation_type]
    if not others:
        return False
    writable_operation(sg, k).type = rng.choice(others)
    return True


def swap_operation_inputs(spec: CaseSpec, rng: Rng) -> bool:
    """Swap two inputs of an operation, preferring two of the same type (ADD's operands,
    IF's branches, WHILE's state)."""
    ops = [(sg, k) for sg in subgraphs(spec) for k, op in enumerate(sg.operations)
           if len(op.inputs) >= 2]
    if not ops:
        return False
    sg, k = rng.choice(ops)
    op = writable_operation(sg, k)
    inputs = op.inputs
    types = [sg.operands[i].type if i < len(sg.operands) else -1 for i in inputs]
    pairs = [(a, b) for a in range(len(inputs)) for b in range(a + 1, len(inputs))
             if types[a] == types[b] and inputs[a] != inputs[b]]
    if pairs and rng.random() < 0.9:
        a, b = rng.choice(pairs)
    else:
        a, b = rng.sample(range(len(op.inputs)), 2)
    op.inputs[a], op.inputs[b] = op.inputs[b], op.inputs[a]
    return True


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
            if o.lifetime == _SUBGRAPH_LIFETIME and o.location is None}


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


def retarget_subgraph(spec: CaseSpec, rng: Rng) -> bool:
    """Point an IF/WHILE subgraph operand at another referenced subgraph (one with the same
    signature, and not one that would make the graph recursive, when there is one)."""
    referenced = spec.model.referenced
    refs = [(number, sg, i) for number, sg in enumerate(subgraphs(spec))
            for i, o in enumerate(sg.operands)
            if o.lifetime == _SUBGRAPH_LIFETIME and o.location is None]
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
           if op.type == _IF and len(op.inputs) >= 3]
    if ifs:
        op = writable_operation(*rng.choice(ifs))   # exchanging the branches always fits
        op.inputs[1], op.inputs[2] = op.inputs[2], op.inputs[1]
        return True
    if rng.random() < 0.3:            # a mismatching subgraph, for validation's sake
        writable_operand(sg, i).target = rng.choice(
            [k for k in range(len(referenced)) if k != o.target])
        return True
    return False


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


def _copy_extra(extra: OperandExtraParams) -> OperandExtraParams:
    quant = extra.channelQuant
    return OperandExtraParams(
        None if quant is None else SymmPerChannelQuantParams(list(quant.scales), quant.channelDim),
        extra.extension)


# --- request mutations ------------------------------------------------------------------------

def output_buffer_size(spec: CaseSpec, rng: Rng) -> bool:
    """Make an output buffer too small (OUTPUT_INSUFFICIENT_SIZE) or larger than needed."""
    outputs = [i for i, a in enumerate(spec.request.outputs)
               if a.location is None and not a.hasNoValue]
    if not outputs:
        return False
    arg = writable_argument(spec.request.outputs, rng.choice(outputs))
    arg.size_delta += rng.choice([-1, -1, -4, 1, 4, 64])
    return True


def toggle_no_value(spec: CaseSpec, rng: Rng) -> bool:
    args = _argument_slots(spec)
    if not args:
        return False
    arg = writable_argument(*rng.choice(args))
    arg.hasNoValue = not arg.hasNoValue
    if not arg.hasNoValue and arg.location is None:
        arg.value = random_seed(rng)
    return True


def split_pools(spec: CaseSpec, rng: Rng) -> bool:
    """Move a request argument to another (possibly new) pool."""
    args = [(arguments, i) for arguments, i in _argument_slots(spec)
            if arguments[i].location is None]
    if not args:
        return False
    arg = writable_argument(*rng.choice(args))
    pools = spec.request.pools
    others = [j for j in range(len(pools)) if j != arg.target]
    if len(pools) < MAX_POOLS and (not others or rng.random() < 0.5):
        pools.append(RequestPoolSpec(blob=BlobSpec(rng.choice(["ashmem", "mmap_fd"]))))
        arg.target = len(pools) - 1
    elif others:
        arg.target = rng.choice(others)
    else:
        return False
    return True


# --- execution choices ------------------------------------------------------------------------

def loop_timeout_ns(rng: Rng) -> int | None:
    """Mostly under a millisecond (65 %), else 1-2 ms (30 %), rarely 3-20 ms (4.5 %) or
    omitted (0.5 %: the 2 s default). An endless loop costs its whole timeout, twice per
    input (both executions), so short timeouts keep the fuzzer fast while still exercising
    the timeout path."""
    r = rng.random()
    if r < 0.005:
        return None
    if r < 0.655:
        return rng.randrange(0, 1000) * 1000
    if r < 0.955:
        return rng.randrange(1000, 2001) * 1000
    return rng.randint(3, 20) * 1_000_000


def fence_delay_ns(rng: Rng) -> int:
    """How long after executeFenced its wait fences signal: mostly within 0.2 ms, sometimes
    up to 1 ms, rarely up to 5 ms (the harness waits that long, so it is time spent idle)."""
    r = rng.random()
    if r < 0.7:
        return rng.randrange(0, 201) * 1000
    if r < 0.95:
        return rng.randrange(200, 1001) * 1000
    return rng.randrange(1000, 5001) * 1000


#: Above these, a choice makes an input slow: an endless loop costs its whole timeout twice
#: per input, a fence delay is waited out. Every mutation redraws such a choice with
#: COSTLY_CHOICE_REDRAW probability, so that a slow input kept in the corpus (coverage
#: guidance favours loops that run longer) does not breed a line of slow children.
COSTLY_LOOP_TIMEOUT_NS = 2_000_000
COSTLY_FENCE_DELAY_NS = 1_000_000
COSTLY_CHOICE_REDRAW = 0.9


def shorten_costly_waits(choices: ExecutionChoices, rng: Rng) -> None:
    loop = choices.loopTimeoutDuration_ns
    if (loop is None or loop > COSTLY_LOOP_TIMEOUT_NS) and rng.random() < COSTLY_CHOICE_REDRAW:
        choices.loopTimeoutDuration_ns = loop_timeout_ns(rng)
    if choices.wait_fence_delay_ns > COSTLY_FENCE_DELAY_NS and rng.random() < COSTLY_CHOICE_REDRAW:
        choices.wait_fence_delay_ns = fence_delay_ns(rng)


def with_short_waits(data: bytes, max_size: int, rng: Rng) -> bytes:
    """``data`` (a byte-level mutant) with its costly waits mostly redrawn, as a structural
    mutation would: flipping the loop timeout's byte to 0 omits it (the 2 s default)."""
    choices, _ = read_choices(data)
    before = (choices.loopTimeoutDuration_ns, choices.wait_fence_delay_ns)
    shorten_costly_waits(choices, rng)
    if (choices.loopTimeoutDuration_ns, choices.wait_fence_delay_ns) == before:
        return data
    shortened = with_choices(data, choices)
    return shortened if len(shortened) <= max_size else data


def deadline_ns(rng: Rng) -> int | None:
    """Mostly none; sometimes generous; rarely so short it must be missed."""
    r = rng.random()
    if r < 0.9:
        return None
    if r < 0.97:
        return 1_000_000_000
    return rng.randrange(0, 2000) * 1000


def random_choices(rng: Rng) -> ExecutionChoices:
    wait = rng.choice([0, 0, 0, 1, 2, 3])
    return ExecutionChoices(
        path=rng.choice(_PATH_CHOICES), second_path=rng.choice(_PATH_CHOICES),
        measureTiming=MeasureTiming.YES if rng.random() < 0.3 else MeasureTiming.NO,
        preference=rng.choice(_PREFERENCE_CHOICES), priority=rng.choice(_PRIORITY_CHOICES),
        deadline_ns=deadline_ns(rng), loopTimeoutDuration_ns=loop_timeout_ns(rng),
        wait_fences=wait, wait_fence_delay_ns=fence_delay_ns(rng) if wait else 0,
        fenced_duration_ns=None if rng.random() < 0.85 else rng.choice(
            [1_000_000_000, rng.randrange(0, 2000) * 1000]))


def change_choice(spec: CaseSpec, rng: Rng) -> bool:
    """Redraw one execution choice."""
    fresh = random_choices(rng)
    name = rng.choice(["path", "path", "second_path", "measureTiming", "preference", "priority",
                       "deadline_ns", "loopTimeoutDuration_ns", "loopTimeoutDuration_ns",
                       "wait_fences", "fenced_duration_ns"])
    choices = spec.choices
    setattr(choices, name, getattr(fresh, name))
    if name == "wait_fences":
        choices.wait_fence_delay_ns = fresh.wait_fence_delay_ns
    if choices.wait_fences == 0:
        choices.wait_fence_delay_ns = 0
    return True


# --- breaking one thing -----------------------------------------------------------------------

def _any_operand(spec: CaseSpec, rng: Rng) -> tuple[SubgraphSpec, int] | None:
    """(subgraph, operand index) of an operand of any subgraph."""
    pairs = [(sg, i) for sg in subgraphs(spec) for i in range(len(sg.operands))]
    return rng.choice(pairs) if pairs else None


def break_something(spec: CaseSpec, rng: Rng) -> bool:
    """One field set to a value validation must reject (or at least survive)."""
    picked = _any_operand(spec, rng)
    kind = rng.randrange(14)
    if kind < 9:                # kinds 0-8 change that operand
        if picked is None:
            return False
        o = writable_operand(*picked)
    if kind == 0:
        o.type = rng.choice([*_ALL_OPERAND_TYPES, rng.randrange(16, 200),
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
        args = _argument_slots(spec)
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


# --- the table --------------------------------------------------------------------------------

Mutation = Callable[[CaseSpec, Rng], bool]


@dataclass(frozen=True)
class WeightedMutation:
    name: str
    weight: float
    apply: Mutation


MUTATIONS: tuple[WeightedMutation, ...] = tuple(WeightedMutation(f.__name__, w, f) for f, w in (
    (tweak_constant, 12), (tweak_input, 10), (reseed_value, 5),
    (resize_dimension, 8), (unknown_dimensions, 3), (request_dimensions, 2),
    (retype_all, 4), (quantization, 2), (toggle_relaxed, 1),
    (append_unary, 6), (append_binary, 4), (duplicate_operation, 3), (cut_operation, 2),
    (change_operation_type, 5), (swap_operation_inputs, 2), (retarget_subgraph, 3),
    (constant_to_input, 3), (input_to_constant, 2), (switch_constant_storage, 2),
    (output_buffer_size, 2), (toggle_no_value, 1), (split_pools, 1),
    (change_choice, 8),
    (break_something, 5),
))
_CUMULATIVE_WEIGHTS = list(accumulate(m.weight for m in MUTATIONS))
_TOTAL_WEIGHT = _CUMULATIVE_WEIGHTS[-1]


def pick_mutation(rng: Rng) -> WeightedMutation:
    """A mutation drawn by weight: rng.choices(MUTATIONS, weights) without its overhead (the
    same draw from the same random number)."""
    return MUTATIONS[bisect(_CUMULATIVE_WEIGHTS, rng.random() * _TOTAL_WEIGHT, 0,
                            len(MUTATIONS) - 1)]


def _unused_pools(count: int, placed: Sequence[int], explicit: Sequence[int],
                  empty: Callable[[int], bool]) -> list[int]:
    used = set(placed) | set(explicit)
    return [j for j in range(count) if j not in used and empty(j)]


def _renumbered(index: int, removed: Sequence[int]) -> int:
    return index - sum(1 for j in removed if j < index)


def _renumbered_location(location: DataLocation, removed: Sequence[int]) -> DataLocation:
    # A new DataLocation, not a change to the old one: specs share those.
    return DataLocation(_renumbered(location.poolIndex, removed), location.offset,
                        location.length)


def tidy_pools(spec: CaseSpec) -> None:
    """Drop pools that a mutation left empty (nothing placed there, no explicit segment or
    location): a zero-sized pool is invalid, and that is not what the mutation was about."""
    request = spec.request
    args = request.inputs + request.outputs
    # At least one pool stays, and a model needs none: most specs have nothing to check.
    removed = [] if len(request.pools) < 2 else _unused_pools(
        len(request.pools),
        [a.target for a in args if a.location is None and not a.hasNoValue],
        [a.location.poolIndex for a in args if a.location is not None],
        lambda j: request.pools[j].token is None and not request.pools[j].blob.segments)
    if removed and len(removed) < len(request.pools):
        request.pools = [p for j, p in enumerate(request.pools) if j not in removed]
        for arguments, i in _argument_slots(spec):
            a = writable_argument(arguments, i)
            if a.location is not None:
                a.location = _renumbered_location(a.location, removed)
            else:
                a.target = _renumbered(a.target, removed)
    model = spec.model
    if not model.pools:
        return
    references = [(sg, i) for sg in subgraphs(spec) for i, o in enumerate(sg.operands)
                  if o.lifetime == _REFERENCE_LIFETIME]
    located = [sg.operands[i].location for sg, i in references]
    removed = _unused_pools(
        len(model.pools),
        [sg.operands[i].target for (sg, i), loc in zip(references, located) if loc is None],
        [loc.poolIndex for loc in located if loc is not None],
        lambda j: not model.pools[j].segments)
    if removed:
        model.pools = [p for j, p in enumerate(model.pools) if j not in removed]
        for sg, i in references:
            o = writable_operand(sg, i)
            if o.location is not None:
                o.location = _renumbered_location(o.location, removed)
            else:
                o.target = _renumbered(o.target, removed)


def mutate_spec(spec: CaseSpec, rng: Rng, count: int | None = None) -> list[str]:
    """Apply ``count`` (default: 1-3) mutations in place; the names of those that applied."""
    if count is None:
        count = rng.choice((1, 1, 1, 2, 2, 3))
    applied = []
    for _ in range(count * 4):          # some mutations do not apply to every case
        mutation = pick_mutation(rng)
        if mutation.apply(spec, rng):
            applied.append(mutation.name)
            if len(applied) == count:
                break
    if "break_something" not in applied:
        tidy_pools(spec)
    shorten_costly_waits(spec.choices, rng)
    return applied


# --- byte mutation ----------------------------------------------------------------------------

def builtin_byte_mutate(data: bytes, max_size: int, rng: Rng) -> bytes:
    """A small stand-in for libFuzzer's mutation outside a fuzzing run (tests, tools):
    flip, set, insert or erase a few bytes."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        action = rng.randrange(4)
        if action == 0 and out:
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
        elif action == 1 and out:
            out[rng.randrange(len(out))] = rng.choice([0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)])
        elif action == 2:
            out.insert(rng.randrange(len(out) + 1), rng.randrange(256))
        elif out:
            del out[rng.randrange(len(out))]
    return bytes(out[:max_size])


def libfuzzer_byte_mutate(data: bytes, max_size: int, rng: Rng) -> bytes:
    import atheris
    return atheris.Mutate(data, max_size)


def _under_libfuzzer() -> bool:
    """atheris.Mutate only works inside atheris.Fuzz() (it ends the process otherwise);
    the fuzz entry point is the script that runs it."""
    main = sys.modules.get("__main__")
    return "atheris" in sys.modules and getattr(main, "__file__", "").endswith("driver_fuzz.py")


#: The byte-level mutation used; None: libFuzzer's inside a fuzzing run, else builtin.
BYTE_MUTATE: Callable[[bytes, int, Rng], bytes] | None = None


def byte_mutate(data: bytes, max_size: int, rng: Rng) -> bytes:
    global BYTE_MUTATE
    if BYTE_MUTATE is None:
        BYTE_MUTATE = libfuzzer_byte_mutate if _under_libfuzzer() else builtin_byte_mutate
    return BYTE_MUTATE(data, max_size, rng)


# --- inputs already parsed ---------------------------------------------------------------------
# libFuzzer mutates the same inputs over and over: each corpus input many times, and within an
# iteration the output of the previous mutation (up to -mutate_depth times in a row). Their
# specs are kept, with the bytes of each part (EncodedSpec), so that an input is parsed once,
# and encode_parts serializes only what a mutation changed.

class SpecCache:
    """Encoded specs by the input bytes they came from, the least recently used dropped
    first. The specs are never changed: mutations work on copies."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._entries: dict[bytes, EncodedSpec] = {}

    def get(self, data: bytes) -> EncodedSpec | None:
        entry = self._entries.pop(data, None)
        if entry is not None:
            self._entries[data] = entry         # now the most recently used
        return entry

    def peek(self, data: bytes) -> EncodedSpec | None:
        """get() without making the entry the most recently used."""
        return self._entries.get(data)

    def put(self, data: bytes, entry: EncodedSpec) -> None:
        self._entries[data] = entry
        if len(self._entries) > self.capacity:
            del self._entries[next(iter(self._entries))]

    def clear(self) -> None:
        self._entries.clear()


#: Inputs given to mutate and crossover (some 15 KiB each for corpus inputs: 30 MiB full).
PARSED_INPUTS = SpecCache(2048)
#: The latest outputs, which libFuzzer mostly mutates next.
RECENT_OUTPUTS = SpecCache(8)
#: The latest byte-level mutants, by the parsed input each was made from: libFuzzer mostly
#: mutates one next, and parsing it takes the parts it shares with that input from there.
MUTANT_SOURCES = SpecCache(8)


def encoded_input(data: bytes) -> EncodedSpec:
    """The input's spec and part bytes, parsed once; raises CodecLimitError where the
    input's spec cannot be serialized."""
    data = bytes(data)
    entry = RECENT_OUTPUTS.get(data) or PARSED_INPUTS.get(data)
    if entry is None:
        entry = parse_parts(data, MUTANT_SOURCES.peek(data))
        PARSED_INPUTS.put(data, entry)
    return entry


def _byte_mutant(source: bytes, mutant: bytes) -> bytes:
    """``mutant``, a byte-level mutant of ``source``, noted with the parsed ``source`` (when
    it was parsed)."""
    entry = RECENT_OUTPUTS.peek(source) or PARSED_INPUTS.peek(source)
    if entry is not None:
        MUTANT_SOURCES.put(mutant, entry)
    return mutant


def _output(result: EncodedSpec) -> bytes:
    out = result.data
    RECENT_OUTPUTS.put(out, result)
    return out


# --- the libFuzzer entry points ---------------------------------------------------------------

#: The random numbers of a call, seeded by it: one generator reseeded rather than a new one
#: per call (the draws are the same; its 2.5 KiB of state need not be allocated each time).
_RNG = random.Random()


def _seeded(seed: int) -> Rng:
    _RNG.seed(seed)
    return _RNG


def mutate(data: bytes, max_size: int, seed: int) -> bytes:
    """libFuzzer's custom mutator (atheris ``custom_mutator``)."""
    rng = _seeded(seed)
    if rng.random() < BYTE_MUTATION_SHARE:
        return _byte_mutant(data, with_short_waits(byte_mutate(data, max_size, rng), max_size,
                                                   rng))
    try:
        source = encoded_input(data)
        origins: Origins = {}
        spec = source.copy(origins)
        mutate_spec(spec, rng)
        result = encode_parts(spec, origins, max_size)
    except CodecLimitError:         # (a result longer than max_size too)
        return _byte_mutant(data, byte_mutate(data, max_size, rng))
    return _output(result)


def default_request(spec: CaseSpec, rng: Rng) -> None:
    """A request matching main's inputs and outputs: generated inputs, outputs sized by
    their operands, all in one pool."""
    main = spec.model.main
    spec.request = RequestSpec(pools=[RequestPoolSpec()])
    for index in main.inputIndexes:
        operand = main.operands[index] if index < len(main.operands) else None
        unknown = operand is not None and 0 in operand.dimensions
        dims = [d if d else rng.randint(1, 3) for d in operand.dimensions] if unknown else []
        spec.request.inputs.append(ArgumentSpec(dimensions=dims, value=random_seed(rng)))
    for index in main.outputIndexes:
        operand = main.operands[index] if index < len(main.operands) else None
        spec.request.outputs.append(ArgumentSpec() if operand is None
                                    else output_argument(spec, operand))


def crossover(data1: bytes, data2: bytes, max_out_size: int, seed: int) -> bytes:
    """libFuzzer's custom crossover: the first case with the second's referenced subgraphs
    grafted in (and an IF/WHILE operand pointed at one of a matching signature), or with
    the second's execution choices, or the second's model with a request rebuilt for it."""
    rng = _seeded(seed)
    try:
        source, other = encoded_input(data1), encoded_input(data2)
    except CodecLimitError:
        return data1[:max_out_size]
    origins: Origins = {}
    r = rng.random()
    referenced = len(other.spec.model.referenced)
    try:
        if r < 0.5 and referenced:
            first = source.copy(origins)
            base = len(first.model.referenced)
            room = max(0, MAX_REFERENCED - base)
            for k in range(min(room, referenced)):
                sg = other.copy_subgraph(k + 1, origins)
                for i, o in enumerate(sg.operands):
                    if o.lifetime == _SUBGRAPH_LIFETIME and o.location is None:
                        writable_operand(sg, i).target += base
                first.model.referenced.append(sg)
            retarget_subgraph(first, rng)
            result = encode_parts(first, origins, max_out_size)
        elif r < 0.75:
            # The first input's model and request as they are (not copied: nothing changes
            # them, and their bytes are the first's), with the second's choices.
            choices = other.copy_choices(origins)
            shorten_costly_waits(choices, rng)
            result = source.with_choices(choices, origins)
        else:
            # The second input's model as it is, with a new request and the first's choices.
            first = CaseSpec(other.spec.model, RequestSpec(), source.spec.choices)
            default_request(first, rng)
            result = other.with_request(first.request, source)
    except CodecLimitError:
        return data1[:max_out_size]
    if sum(map(len, result.parts)) > max_out_size:
        return data1[:max_out_size]
    return _output(result)
