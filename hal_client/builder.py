"""The one builder of HAL models and requests: for the examples, the tests and the fuzz seeds.

    mb = ModelBuilder()
    cond = mb.subgraph()
    i, n = cond.input(T.TENSOR_INT32, [1]), cond.input(T.TENSOR_INT32, [1])
    cond.outputs(cond.compare(Op.LESS, i, n))

    body = mb.subgraph()
    i, n = body.input(T.TENSOR_INT32, [1]), body.input(T.TENSOR_INT32, [1])
    body.outputs(body.add(i, body.constant(T.TENSOR_INT32, [1])))

    main = mb.main
    i0, n = main.input(T.TENSOR_INT32, [1]), main.input(T.TENSOR_INT32, [1])
    main.outputs(*main.while_(cond, body, [i0, n], count=1))
    model = mb.build()

    io = make_request([np.array([0], np.int32), np.array([5], np.int32)],
                      [out_like(np.int32, [1])])
    ... execute io.request ...
    io.output(0, [1])            # -> array([5], dtype=int32)

Operands are created with the lifetime their role implies, in the order the calls make
them (an operation's outputs after its inputs); ``outputs()`` turns the given operation
results into SUBGRAPH_OUTPUT operands. ``build()`` fills in numberOfConsumers, so the
models are valid as built; a test that wants an invalid one edits the built Model.
Referenced subgraphs are numbered in the order ``subgraph()`` creates them.
"""
from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from driver.hal.dtypes import byte_size
from driver.hal.enums import (SCALAR_OPERAND_TYPES, OperandLifeTime as L, OperandType as T,
                              OperationType as Op)
from driver.hal.structs import (DataLocation, ExtensionNameAndPrefix, MemoryPool, Model, Operand,
                                OperandExtraParams, Operation, Request, RequestArgument, Subgraph)
from driver.memory import Memory
from driver.operations.common import STORAGE_DTYPE

from . import VALUE_ALIGNMENT

#: Zero bytes before each value in the model's pool: a reader that ignores offsets fails.
POOL_GAP = 16

NO_ACTIVATION = 0

Dims = Sequence[int]
#: What an operand is declared with, as NNAPI's ANeuralNetworksOperandType: (operand type,
#: dimensions[, scale, zero point]); an operation's output is given as one.
OperandDeclaration = tuple


def _aligned(size: int) -> int:
    return -(-size // VALUE_ALIGNMENT) * VALUE_ALIGNMENT


class SubgraphBuilder:
    """One subgraph: main (``index`` None) or referenced subgraph ``index``."""

    def __init__(self, model: "ModelBuilder", index: Optional[int]) -> None:
        self._model = model
        self.index = index
        self.operands: list[Operand] = []
        self.operations: list[Operation] = []
        self.input_indexes: list[int] = []
        self.output_indexes: list[int] = []

    # --- operands ------------------------------------------------------------------------

    def _operand(self, operand_type: int, dims: Dims, lifetime: L, scale: float = 0.0,
                 zero_point: int = 0, location: Optional[DataLocation] = None,
                 extra: Optional[OperandExtraParams] = None) -> int:
        self.operands.append(Operand(type=operand_type, dimensions=list(dims), scale=scale,
                                     zeroPoint=zero_point, lifetime=lifetime,
                                     location=location or DataLocation(),
                                     extraParams=extra or OperandExtraParams()))
        return len(self.operands) - 1

    def input(self, operand_type: int, dims: Dims = (), scale: float = 0.0,
              zero_point: int = 0, extra: Optional[OperandExtraParams] = None) -> int:
        index = self._operand(operand_type, dims, L.SUBGRAPH_INPUT, scale, zero_point,
                              extra=extra)
        self.input_indexes.append(index)
        return index

    def temporary(self, operand_type: int, dims: Dims = (), scale: float = 0.0,
                  zero_point: int = 0) -> int:
        return self._operand(operand_type, dims, L.TEMPORARY_VARIABLE, scale, zero_point)

    def constant(self, operand_type: int, value, dims: Optional[Dims] = None, *,
                 in_pool: bool = False, scale: float = 0.0, zero_point: int = 0,
                 extra: Optional[OperandExtraParams] = None) -> int:
        """A CONSTANT_COPY in operandValues, or with ``in_pool`` a CONSTANT_REFERENCE in
        the model's memory pool. ``dims`` (default: the value's shape) may leave some
        dimensions unknown (0); the value is stored as given."""
        array = np.asarray(value, dtype=STORAGE_DTYPE[operand_type])
        if operand_type in SCALAR_OPERAND_TYPES:
            array, shape = array.reshape(()), []
        else:
            shape = list(array.shape) if dims is None else list(dims)
        data = array.tobytes()
        if in_pool:
            location, lifetime = self._model.place_in_pool(data), L.CONSTANT_REFERENCE
        else:
            location, lifetime = self._model.place_value(data), L.CONSTANT_COPY
        return self._operand(operand_type, shape, lifetime, scale, zero_point, location, extra)

    def int32(self, value: int) -> int:
        """An INT32 scalar constant (activations, axes)."""
        return self.constant(T.INT32, value)

    def omitted(self, operand_type: int, dims: Dims = ()) -> int:
        return self._operand(operand_type, dims, L.NO_VALUE)

    def ref(self, subgraph: "SubgraphBuilder") -> int:
        """A SUBGRAPH operand naming a referenced subgraph."""
        if subgraph.index is None:
            raise ValueError("the main subgraph cannot be referenced")
        return self._operand(T.SUBGRAPH, [], L.SUBGRAPH, location=DataLocation(offset=subgraph.index))

    def spec(self, index: int) -> OperandDeclaration:
        operand = self.operands[index]
        return operand.type, list(operand.dimensions), operand.scale, operand.zeroPoint

    # --- operations ----------------------------------------------------------------------

    def operation(self, operation_type: int, inputs: Sequence[int],
                  outputs: Sequence[OperandDeclaration]) -> list[int]:
        """Append an operation writing new temporaries of the given specs."""
        out = [self.temporary(*spec) for spec in outputs]
        self.operations.append(Operation(type=operation_type, inputs=list(inputs), outputs=out))
        return out

    def apply(self, operation_type: int, inputs: Sequence[int], operand_type: int,
              dims: Dims, scale: float = 0.0, zero_point: int = 0) -> int:
        """An operation with a single output."""
        return self.operation(operation_type, inputs,
                              [(operand_type, dims, scale, zero_point)])[0]

    def arithmetic(self, operation_type: int, a: int, b: int, dims: Optional[Dims] = None,
                   activation: int = NO_ACTIVATION) -> int:
        """ADD / SUB / MUL / DIV: the output has a's type, quantization and (by default)
        dimensions."""
        operand_type, a_dims, scale, zero_point = self.spec(a)
        return self.apply(operation_type, [a, b, self.int32(activation)], operand_type,
                          a_dims if dims is None else dims, scale, zero_point)

    def add(self, a: int, b: int, dims: Optional[Dims] = None) -> int:
        return self.arithmetic(Op.ADD, a, b, dims)

    def sub(self, a: int, b: int, dims: Optional[Dims] = None) -> int:
        return self.arithmetic(Op.SUB, a, b, dims)

    def mul(self, a: int, b: int, dims: Optional[Dims] = None) -> int:
        return self.arithmetic(Op.MUL, a, b, dims)

    def copy(self, a: int, dims: Optional[Dims] = None) -> int:
        """a + 0: a subgraph output must be written by an operation, even when it only
        passes a value through."""
        operand_type = self.spec(a)[0]
        zero = self.constant(operand_type, np.zeros([1], STORAGE_DTYPE[operand_type]))
        return self.arithmetic(Op.ADD, a, zero, dims)

    def compare(self, operation_type: int, a: int, b: int, dims: Optional[Dims] = None) -> int:
        """LESS, GREATER, EQUAL, ...: a TENSOR_BOOL8 with (by default) a's dimensions."""
        return self.apply(operation_type, [a, b], T.TENSOR_BOOL8,
                          self.spec(a)[1] if dims is None else dims)

    def if_(self, condition: int, then: "SubgraphBuilder", otherwise: "SubgraphBuilder",
            inputs: Sequence[int], outputs: Optional[Sequence[OperandDeclaration]] = None) -> list[int]:
        """IF; outputs default to the specs of the then branch's outputs."""
        if outputs is None:
            outputs = [then.spec(i) for i in then.output_indexes]
        return self.operation(Op.IF, [condition, self.ref(then), self.ref(otherwise), *inputs],
                              outputs)

    def while_(self, condition: "SubgraphBuilder", body: "SubgraphBuilder", inputs: Sequence[int],
               outputs: Optional[Sequence[OperandDeclaration]] = None, count: Optional[int] = None,
               ) -> list[int]:
        """WHILE; by default it outputs every value the body outputs (no state-only values),
        with the body's specs; ``count`` keeps only the first ``count`` of them."""
        if outputs is None:
            outputs = [body.spec(i) for i in body.output_indexes][:count]
        return self.operation(Op.WHILE, [self.ref(condition), self.ref(body), *inputs], outputs)

    def outputs(self, *indexes: int) -> "SubgraphBuilder":
        """Make these temporaries the subgraph's outputs, in this order."""
        for index in indexes:
            operand = self.operands[index]
            if operand.lifetime != L.TEMPORARY_VARIABLE:
                raise ValueError(f"operand {index} has lifetime {L(operand.lifetime).name}; "
                                 f"only an operation's output can be a subgraph output")
            operand.lifetime = L.SUBGRAPH_OUTPUT
            self.output_indexes.append(index)
        return self

    def build(self) -> Subgraph:
        """A new Subgraph (each call), with numberOfConsumers counted from the operations."""
        consumers = [0] * len(self.operands)
        for operation in self.operations:
            for index in operation.inputs:
                consumers[index] += 1
        operands = [dataclasses.replace(operand, numberOfConsumers=count)
                    for operand, count in zip(copy.deepcopy(self.operands), consumers)]
        return Subgraph(operands=operands, operations=copy.deepcopy(self.operations),
                        inputIndexes=list(self.input_indexes),
                        outputIndexes=list(self.output_indexes))


class ModelBuilder:
    """The model: a main subgraph, referenced subgraphs (numbered in creation order), the
    constants' bytes, at most one memory pool for CONSTANT_REFERENCE values, and the
    extensions the model declares."""

    def __init__(self) -> None:
        self._values = bytearray()
        self._pool = bytearray()
        self.referenced: list[SubgraphBuilder] = []
        self.extensions: list[ExtensionNameAndPrefix] = []
        self.main = SubgraphBuilder(self, None)

    def subgraph(self) -> SubgraphBuilder:
        builder = SubgraphBuilder(self, len(self.referenced))
        self.referenced.append(builder)
        return builder

    def place_value(self, data: bytes) -> DataLocation:
        offset = len(self._values)
        self._values += data + bytes(_aligned(len(data)) - len(data))
        return DataLocation(poolIndex=0, offset=offset, length=len(data))

    def place_in_pool(self, data: bytes) -> DataLocation:
        self._pool += bytes(POOL_GAP)
        offset = len(self._pool)
        self._pool += data + bytes(_aligned(len(data)) - len(data))
        return DataLocation(poolIndex=0, offset=offset, length=len(data))

    def build(self, relaxed: bool = False) -> Model:
        return Model(main=self.main.build(),
                     referenced=[subgraph.build() for subgraph in self.referenced],
                     operandValues=bytes(self._values),
                     pools=[Memory.from_bytes(bytes(self._pool))] if self._pool else [],
                     relaxComputationFloat32toFloat16=relaxed,
                     extensionNameToPrefix=list(self.extensions))


# --- requests ---------------------------------------------------------------------------

@dataclass(frozen=True)
class OutputBuffer:
    """An output argument: a buffer of ``length`` bytes holding ``dtype`` elements, and
    the dimensions the request states (empty: as the model says)."""
    dtype: np.dtype
    length: int
    dims: tuple[int, ...] = ()
    omitted: bool = False


def out_like(dtype, shape: Dims, *, spare: int = 0, state_dims: bool = False) -> OutputBuffer:
    """A buffer exactly large enough for ``shape`` (plus ``spare`` elements; negative
    makes it too small). ``state_dims`` puts the shape in the request argument."""
    dtype = np.dtype(dtype)
    length = dtype.itemsize * (math.prod(shape) + spare)
    return OutputBuffer(dtype, max(length, 0), tuple(shape) if state_dims else ())


def out_bytes(dtype, length: int, dims: Dims = ()) -> OutputBuffer:
    return OutputBuffer(np.dtype(dtype), length, tuple(dims))


def out_omitted(dtype) -> OutputBuffer:
    return OutputBuffer(np.dtype(dtype), 0, (), omitted=True)


def out_for(operand: Operand) -> OutputBuffer:
    """A buffer for what ``operand`` declares, an unknown dimension counted as 1."""
    return OutputBuffer(STORAGE_DTYPE[operand.type],
                        byte_size(operand.type, operand.dimensions, unknown_dimension=1))


@dataclass
class RequestIO:
    """A Request with its input pool (0) and output pool (1, or 0 for a one-pool request),
    and how to read outputs."""
    request: Request
    input_pool: Memory
    output_pool: Memory
    buffers: list[OutputBuffer] = field(default_factory=list)

    def output(self, position: int, shape: Dims) -> np.ndarray:
        """Output ``position`` as written by an execution, read with the given shape."""
        buffer = self.buffers[position]
        location = self.request.outputs[position].location
        count = math.prod(shape)
        raw = self.output_pool.read(location.offset, count * buffer.dtype.itemsize)
        return np.frombuffer(raw, dtype=buffer.dtype).reshape(tuple(shape)).copy()

    def clear_outputs(self, fill: int = 0xAB) -> None:
        """Overwrite every output byte, so a later read proves what an execution wrote."""
        self.output_pool.write(bytes([fill]) * self.output_pool.size)


def make_request(inputs: Sequence[Optional[np.ndarray]], outputs: Sequence[OutputBuffer], *,
                 state_input_dims: bool = True, one_pool: bool = False) -> RequestIO:
    """Inputs (None: omitted) packed into pool 0, output buffers in pool 1 (or after the
    inputs in pool 0 with ``one_pool``).

    With ``state_input_dims`` every tensor input states its shape (needed when the model
    leaves dimensions unknown; harmless otherwise); 0-d arrays are scalars and state none."""
    input_args, data = [], bytearray()
    for value in inputs:
        if value is None:
            input_args.append(RequestArgument(hasNoValue=True))
            continue
        array = np.asarray(value)      # not ascontiguousarray: it makes a 0-d array 1-d
        blob = array.tobytes()          # C order, whatever the array's layout
        dims = list(array.shape) if state_input_dims else []
        input_args.append(RequestArgument(
            location=DataLocation(poolIndex=0, offset=len(data), length=len(blob)), dimensions=dims))
        data += blob + bytes(_aligned(len(blob)) - len(blob))
    output_pool_index, offset = (0, len(data)) if one_pool else (1, 0)
    output_args = []
    for buffer in outputs:
        if buffer.omitted:
            output_args.append(RequestArgument(hasNoValue=True))
            continue
        output_args.append(RequestArgument(
            location=DataLocation(poolIndex=output_pool_index, offset=offset, length=buffer.length),
            dimensions=list(buffer.dims)))
        offset += max(_aligned(buffer.length), VALUE_ALIGNMENT)
    # A pool may not be empty, even when every argument is.
    if one_pool:
        input_pool = output_pool = Memory.from_bytes(bytes(data.ljust(max(offset, VALUE_ALIGNMENT), b"\0")))
        pools = [input_pool]
    else:
        input_pool = Memory.from_bytes(bytes(data) or bytes(VALUE_ALIGNMENT))
        output_pool = Memory.create(max(offset, VALUE_ALIGNMENT))
        pools = [input_pool, output_pool]
    request = Request(inputs=input_args, outputs=output_args,
                      pools=[MemoryPool(hidlMemory=pool) for pool in pools])
    return RequestIO(request, input_pool, output_pool, list(outputs))
