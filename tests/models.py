"""Small valid HAL models for tests, with sample inputs and expected outputs.

Each builder returns a fresh :class:`ModelCase` (new memory pools every call, so a test
may mutate what it gets):

    case = add_model()
    case.model            # the HAL Model
    case.request()        # a Request: inputs in pool 0, output buffers in pool 1
    case.expected         # expected outputs (numpy arrays), None when undefined
    read_outputs(case.model, request)   # the outputs an execution wrote

Builders:
- ``add_model()``: ADD of two TENSOR_FLOAT32 [2, 2] inputs.
- ``quant8_add_model()``: ADD of a TENSOR_QUANT8_ASYMM input and a constant, three scales.
- ``constant_reference_model()``: two chained ADDs, one constant in a shared-memory pool
  (CONSTANT_REFERENCE at a non-zero offset), one temporary.
- ``per_channel_model()``: DEQUANTIZE of a TENSOR_QUANT8_SYMM_PER_CHANNEL input.
- ``if_model(condition)``: IF choosing x + 10 or x - 10 (TENSOR_FLOAT32 [2]).
- ``while_counter_model(limit, start=0, step=1)``: i = start; while i < limit: i += step
  (TENSOR_INT32 [1]); step 0 with start < limit never ends.
- ``fibonacci_while_model(n)``: WHILE with two loop-carried values (a, b), one state-only
  counter and one input-only bound: returns (F(n), F(n+1)).
- ``nested_model(condition, x)``: IF whose then branch runs a WHILE (count up to 5) and
  whose else branch adds 1.
- ``extension_model()``: an extension operation on an extension operand type.

Operations used: ADD, DEQUANTIZE, LESS, IF, WHILE (and one extension operation).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from driver.hal import (DataLocation, ExtensionNameAndPrefix, MemoryPool, Model, Operand,
                        OperandExtraParams, OperandLifeTime as L, OperandType as T, Operation,
                        OperationType as Op, Request, RequestArgument, Subgraph,
                        SymmPerChannelQuantParams)
from driver.hal.dtypes import byte_size
from driver.memory import Memory
from driver.operations.common import STORAGE_DTYPE

_ALIGNMENT = 8   # byte alignment of values placed in operandValues and pools


def _padded(size: int) -> int:
    return -(-size // _ALIGNMENT) * _ALIGNMENT


class ModelBuilder:
    """Accumulates the model-wide parts: operandValues, pools and referenced subgraphs."""

    def __init__(self) -> None:
        self.values = bytearray()
        self.pool_data: list[bytearray] = []
        self.referenced: list[Subgraph] = []
        self.extensions: list[ExtensionNameAndPrefix] = []

    def add_constant_bytes(self, data: bytes) -> DataLocation:
        offset = len(self.values)
        self.values += data + bytes(_padded(len(data)) - len(data))
        return DataLocation(poolIndex=0, offset=offset, length=len(data))

    def add_pool_bytes(self, data: bytes, pool: int = 0, leading_gap: int = 16) -> DataLocation:
        """Place data in a pool after a gap, so offsets other than 0 get exercised."""
        while len(self.pool_data) <= pool:
            self.pool_data.append(bytearray())
        buffer = self.pool_data[pool]
        buffer += bytes(leading_gap)
        offset = len(buffer)
        buffer += data + bytes(_padded(len(data)) - len(data))
        return DataLocation(poolIndex=pool, offset=offset, length=len(data))

    def add_referenced(self, subgraph: Subgraph) -> int:
        self.referenced.append(subgraph)
        return len(self.referenced) - 1

    def build(self, main: Subgraph, relaxed: bool = False) -> Model:
        return Model(main=main, referenced=self.referenced, operandValues=bytes(self.values),
                     pools=[Memory.from_bytes(bytes(data)) for data in self.pool_data],
                     relaxComputationFloat32toFloat16=relaxed,
                     extensionNameToPrefix=self.extensions)


class GraphBuilder:
    """Builds one subgraph; numberOfConsumers is computed from the operations."""

    def __init__(self, model: ModelBuilder) -> None:
        self.model = model
        self.operands: list[Operand] = []
        self.operations: list[Operation] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []

    def _add(self, operand: Operand) -> int:
        self.operands.append(operand)
        return len(self.operands) - 1

    def input(self, type_code: int, dims: Sequence[int], scale: float = 0.0, zero_point: int = 0,
              extra: Optional[OperandExtraParams] = None) -> int:
        index = self._add(Operand(type_code, list(dims), scale=scale, zeroPoint=zero_point,
                                  lifetime=L.SUBGRAPH_INPUT,
                                  extraParams=extra or OperandExtraParams()))
        self.inputs.append(index)
        return index

    def output(self, type_code: int, dims: Sequence[int], scale: float = 0.0,
               zero_point: int = 0) -> int:
        index = self._add(Operand(type_code, list(dims), scale=scale, zeroPoint=zero_point,
                                  lifetime=L.SUBGRAPH_OUTPUT))
        self.outputs.append(index)
        return index

    def temporary(self, type_code: int, dims: Sequence[int], scale: float = 0.0,
                  zero_point: int = 0) -> int:
        return self._add(Operand(type_code, list(dims), scale=scale, zeroPoint=zero_point))

    def constant(self, type_code: int, value, dims: Optional[Sequence[int]] = None,
                 scale: float = 0.0, zero_point: int = 0, in_pool: bool = False) -> int:
        """A CONSTANT_COPY (or, with in_pool, a CONSTANT_REFERENCE in pool 0)."""
        array = np.asarray(value, dtype=STORAGE_DTYPE[type_code])
        data = array.tobytes()
        location = (self.model.add_pool_bytes(data) if in_pool
                    else self.model.add_constant_bytes(data))
        lifetime = L.CONSTANT_REFERENCE if in_pool else L.CONSTANT_COPY
        shape = list(array.shape) if dims is None else list(dims)
        return self._add(Operand(type_code, shape, scale=scale, zeroPoint=zero_point,
                                 lifetime=lifetime, location=location))

    def int_scalar(self, value: int) -> int:
        return self.constant(T.INT32, value, dims=[])

    def subgraph(self, referenced_index: int) -> int:
        return self._add(Operand(T.SUBGRAPH, [], lifetime=L.SUBGRAPH,
                                 location=DataLocation(offset=referenced_index)))

    def operation(self, type_code: int, inputs: Sequence[int], outputs: Sequence[int]) -> None:
        self.operations.append(Operation(type_code, list(inputs), list(outputs)))

    def build(self) -> Subgraph:
        for operand in self.operands:
            operand.numberOfConsumers = 0
        for operation in self.operations:
            for index in operation.inputs:
                self.operands[index].numberOfConsumers += 1
        return Subgraph(self.operands, self.operations, self.inputs, self.outputs)


@dataclass
class ModelCase:
    name: str
    model: Model
    inputs: list[Optional[np.ndarray]]
    expected: Optional[list[np.ndarray]] = None
    #: Output buffer sizes for request(); None: from the model's output dimensions.
    output_lengths: Optional[list[int]] = field(default=None)

    def request(self) -> Request:
        return make_request(self.model, self.inputs, self.output_lengths)


def make_request(model: Model, inputs: Sequence[Optional[np.ndarray]],
                 output_lengths: Optional[Sequence[int]] = None) -> Request:
    """Inputs (None: omitted) packed into pool 0, one buffer per output in pool 1, each
    sized from the model's output dimensions unless output_lengths gives the sizes."""
    main = model.main
    input_args, input_data = [], bytearray()
    for index, value in zip(main.inputIndexes, inputs):
        if value is None:
            input_args.append(RequestArgument(hasNoValue=True))
            continue
        operand = main.operands[index]
        data = np.asarray(value, dtype=STORAGE_DTYPE[operand.type]).tobytes()
        input_args.append(RequestArgument(location=DataLocation(0, len(input_data), len(data))))
        input_data += data + bytes(_padded(len(data)) - len(data))
    if output_lengths is None:
        output_lengths = [_declared_size(main.operands[i]) for i in main.outputIndexes]
    output_args, offset = [], 0
    for length in output_lengths:
        output_args.append(RequestArgument(location=DataLocation(1, offset, length)))
        offset += _padded(length)
    pools = [MemoryPool(hidlMemory=Memory.from_bytes(bytes(input_data) or bytes(_ALIGNMENT))),
             MemoryPool(hidlMemory=Memory.create(max(offset, _ALIGNMENT)))]
    return Request(inputs=input_args, outputs=output_args, pools=pools)


def _declared_size(operand: Operand) -> int:
    if 0 in operand.dimensions:
        raise ValueError(f"output dimensions {operand.dimensions} are not known; pass output_lengths")
    return byte_size(operand.type, operand.dimensions, unknown_dimension=1)   # [] reads as one element


def read_outputs(model: Model, request: Request,
                 shapes: Optional[Sequence[Sequence[int]]] = None) -> list[np.ndarray]:
    """The outputs in the request's buffers, shaped as the model (or ``shapes``) says."""
    results = []
    for k, (argument, index) in enumerate(zip(request.outputs, model.main.outputIndexes)):
        operand = model.main.operands[index]
        shape = tuple(shapes[k]) if shapes is not None else tuple(operand.dimensions)
        dtype = STORAGE_DTYPE[operand.type]
        count = int(np.prod(shape, dtype=np.int64))
        location = argument.location
        raw = request.pools[location.poolIndex].hidlMemory.read(location.offset,
                                                                count * dtype.itemsize)
        results.append(np.frombuffer(raw, dtype=dtype).reshape(shape).copy())
    return results


# --- the models -------------------------------------------------------------------------

NO_ACTIVATION = 0


def add_model() -> ModelCase:
    builder = ModelBuilder()
    g = GraphBuilder(builder)
    a = g.input(T.TENSOR_FLOAT32, [2, 2])
    b = g.input(T.TENSOR_FLOAT32, [2, 2])
    act = g.int_scalar(NO_ACTIVATION)
    out = g.output(T.TENSOR_FLOAT32, [2, 2])
    g.operation(Op.ADD, [a, b, act], [out])
    a_value = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    b_value = np.array([[0.5, -1.0], [10.0, 0.25]], np.float32)
    return ModelCase("add", builder.build(g.build()), [a_value, b_value], [a_value + b_value])


def quant8_add_model() -> ModelCase:
    """out = a + b with a (scale 0.5, zero point 10), constant b (0.25, 5) and out (1.0, 3);
    the sample values avoid rounding ties."""
    builder = ModelBuilder()
    g = GraphBuilder(builder)
    a = g.input(T.TENSOR_QUANT8_ASYMM, [1, 4], scale=0.5, zero_point=10)
    b = g.constant(T.TENSOR_QUANT8_ASYMM, [[5, 9, 15, 0]], scale=0.25, zero_point=5)
    act = g.int_scalar(NO_ACTIVATION)
    out = g.output(T.TENSOR_QUANT8_ASYMM, [1, 4], scale=1.0, zero_point=3)
    g.operation(Op.ADD, [a, b, act], [out])
    a_value = np.array([[10, 20, 31, 255]], np.uint8)
    # real: [0, 5, 10.5, 122.5] + [0, 1, 2.5, -1.25] = [0, 6, 13, 121.25] -> +3 zero point
    expected = np.array([[3, 9, 16, 124]], np.uint8)
    return ModelCase("quant8_add", builder.build(g.build()), [a_value], [expected])


def constant_reference_model() -> ModelCase:
    """t = a + b (b in a shared-memory pool); out = t + a."""
    builder = ModelBuilder()
    g = GraphBuilder(builder)
    a = g.input(T.TENSOR_FLOAT32, [3])
    b_value = np.array([100.0, 200.0, 300.0], np.float32)
    b = g.constant(T.TENSOR_FLOAT32, b_value, in_pool=True)
    act = g.int_scalar(NO_ACTIVATION)
    t = g.temporary(T.TENSOR_FLOAT32, [3])
    out = g.output(T.TENSOR_FLOAT32, [3])
    g.operation(Op.ADD, [a, b, act], [t])
    g.operation(Op.ADD, [t, a, act], [out])
    a_value = np.array([1.0, 2.0, 3.0], np.float32)
    return ModelCase("constant_reference", builder.build(g.build()), [a_value],
                     [a_value + b_value + a_value])


def per_channel_model() -> ModelCase:
    """DEQUANTIZE of a [2, 3] per-channel input quantized along dimension 1."""
    builder = ModelBuilder()
    g = GraphBuilder(builder)
    scales = [0.5, 0.25, 2.0]
    quant = OperandExtraParams(channelQuant=SymmPerChannelQuantParams(scales=scales, channelDim=1))
    x = g.input(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, [2, 3], extra=quant)
    out = g.output(T.TENSOR_FLOAT32, [2, 3])
    g.operation(Op.DEQUANTIZE, [x], [out])
    x_value = np.array([[2, -4, 3], [-127, 127, 0]], np.int8)
    expected = (x_value.astype(np.float32) * np.array(scales, np.float32)).astype(np.float32)
    return ModelCase("per_channel", builder.build(g.build()), [x_value], [expected])


def _float_add_subgraph(builder: ModelBuilder, addend: float) -> Subgraph:
    g = GraphBuilder(builder)
    x = g.input(T.TENSOR_FLOAT32, [2])
    c = g.constant(T.TENSOR_FLOAT32, [addend, addend])
    act = g.int_scalar(NO_ACTIVATION)
    y = g.output(T.TENSOR_FLOAT32, [2])
    g.operation(Op.ADD, [x, c, act], [y])
    return g.build()


def if_model(condition: bool = True) -> ModelCase:
    """out = IF(cond, then: x + 10, else: x - 10)(x)."""
    builder = ModelBuilder()
    then_index = builder.add_referenced(_float_add_subgraph(builder, 10.0))
    else_index = builder.add_referenced(_float_add_subgraph(builder, -10.0))
    g = GraphBuilder(builder)
    cond = g.input(T.TENSOR_BOOL8, [1])
    x = g.input(T.TENSOR_FLOAT32, [2])
    then_ref, else_ref = g.subgraph(then_index), g.subgraph(else_index)
    out = g.output(T.TENSOR_FLOAT32, [2])
    g.operation(Op.IF, [cond, then_ref, else_ref, x], [out])
    x_value = np.array([1.0, 2.5], np.float32)
    expected = x_value + np.float32(10.0 if condition else -10.0)
    return ModelCase("if", builder.build(g.build()),
                     [np.array([condition], np.bool_), x_value], [expected])


def _int_less_than_subgraph(builder: ModelBuilder, limit: int, extra_inputs: int = 0) -> Subgraph:
    """cond(i, extra...) = i < limit, for TENSOR_INT32 [1] values."""
    g = GraphBuilder(builder)
    i = g.input(T.TENSOR_INT32, [1])
    for _ in range(extra_inputs):
        g.input(T.TENSOR_INT32, [1])
    bound = g.constant(T.TENSOR_INT32, [limit])
    result = g.output(T.TENSOR_BOOL8, [1])
    g.operation(Op.LESS, [i, bound], [result])
    return g.build()


def _int_increment_subgraph(builder: ModelBuilder, step: int) -> Subgraph:
    """body(i) = i + step, for a TENSOR_INT32 [1] value."""
    g = GraphBuilder(builder)
    i = g.input(T.TENSOR_INT32, [1])
    step_operand = g.constant(T.TENSOR_INT32, [step])
    act = g.int_scalar(NO_ACTIVATION)
    out = g.output(T.TENSOR_INT32, [1])
    g.operation(Op.ADD, [i, step_operand, act], [out])
    return g.build()


def _count_up(start: int, limit: int, step: int) -> Optional[int]:
    if start < limit and step <= 0:
        return None          # the loop never ends
    value = start
    while value < limit:
        value += step
    return value


def while_counter_model(limit: int = 5, start: int = 0, step: int = 1) -> ModelCase:
    """i = start (input); while i < limit: i = i + step. One loop-carried operand."""
    builder = ModelBuilder()
    cond_index = builder.add_referenced(_int_less_than_subgraph(builder, limit))
    body_index = builder.add_referenced(_int_increment_subgraph(builder, step))
    g = GraphBuilder(builder)
    i = g.input(T.TENSOR_INT32, [1])
    cond_ref, body_ref = g.subgraph(cond_index), g.subgraph(body_index)
    out = g.output(T.TENSOR_INT32, [1])
    g.operation(Op.WHILE, [cond_ref, body_ref, i], [out])
    final = _count_up(start, limit, step)
    expected = None if final is None else [np.array([final], np.int32)]
    return ModelCase("while_counter", builder.build(g.build()),
                     [np.array([start], np.int32)], expected)


def _fibonacci(n: int) -> tuple[int, int]:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a, b


def fibonacci_while_model(n: int = 6) -> ModelCase:
    """(a, b) = (0, 1); i = 0; while i < n: (a, b, i) = (b, a + b, i + 1); returns (a, b).

    m = 2 loop-carried (a, b), k = 1 state-only (i), n = 1 input-only (the bound)."""
    builder = ModelBuilder()
    cond = GraphBuilder(builder)
    for _ in range(2):
        cond.input(T.TENSOR_INT32, [1])            # a, b: unused by the condition
    i = cond.input(T.TENSOR_INT32, [1])
    bound = cond.input(T.TENSOR_INT32, [1])
    keep_going = cond.output(T.TENSOR_BOOL8, [1])
    cond.operation(Op.LESS, [i, bound], [keep_going])
    cond_index = builder.add_referenced(cond.build())

    body = GraphBuilder(builder)
    a, b = body.input(T.TENSOR_INT32, [1]), body.input(T.TENSOR_INT32, [1])
    i = body.input(T.TENSOR_INT32, [1])
    body.input(T.TENSOR_INT32, [1])                # the bound: unused by the body
    zero, one = body.constant(T.TENSOR_INT32, [0]), body.constant(T.TENSOR_INT32, [1])
    act = body.int_scalar(NO_ACTIVATION)
    next_a = body.output(T.TENSOR_INT32, [1])
    next_b = body.output(T.TENSOR_INT32, [1])
    next_i = body.output(T.TENSOR_INT32, [1])
    body.operation(Op.ADD, [b, zero, act], [next_a])    # a copy needs an operation
    body.operation(Op.ADD, [a, b, act], [next_b])
    body.operation(Op.ADD, [i, one, act], [next_i])
    body_index = builder.add_referenced(body.build())

    g = GraphBuilder(builder)
    bound = g.input(T.TENSOR_INT32, [1])
    a0, b0 = g.constant(T.TENSOR_INT32, [0]), g.constant(T.TENSOR_INT32, [1])
    i0 = g.constant(T.TENSOR_INT32, [0])
    cond_ref, body_ref = g.subgraph(cond_index), g.subgraph(body_index)
    out_a, out_b = g.output(T.TENSOR_INT32, [1]), g.output(T.TENSOR_INT32, [1])
    g.operation(Op.WHILE, [cond_ref, body_ref, a0, b0, i0, bound], [out_a, out_b])
    fa, fb = _fibonacci(n)
    return ModelCase("fibonacci_while", builder.build(g.build()), [np.array([n], np.int32)],
                     [np.array([fa], np.int32), np.array([fb], np.int32)])


def nested_model(condition: bool = True, x: int = 2) -> ModelCase:
    """IF(cond, then: WHILE i < 5: i += 1, else: x + 1)(x): control flow inside control
    flow. Referenced subgraphs: 0 then, 1 else, 2 loop condition, 3 loop body."""
    builder = ModelBuilder()
    then_index = builder.add_referenced(Subgraph())        # filled in below
    else_index = builder.add_referenced(_int_increment_subgraph(builder, 1))
    cond_index = builder.add_referenced(_int_less_than_subgraph(builder, 5))
    body_index = builder.add_referenced(_int_increment_subgraph(builder, 1))
    then = GraphBuilder(builder)
    i = then.input(T.TENSOR_INT32, [1])
    cond_ref, body_ref = then.subgraph(cond_index), then.subgraph(body_index)
    result = then.output(T.TENSOR_INT32, [1])
    then.operation(Op.WHILE, [cond_ref, body_ref, i], [result])
    builder.referenced[then_index] = then.build()

    g = GraphBuilder(builder)
    cond = g.input(T.TENSOR_BOOL8, [1])
    value = g.input(T.TENSOR_INT32, [1])
    then_ref, else_ref = g.subgraph(then_index), g.subgraph(else_index)
    out = g.output(T.TENSOR_INT32, [1])
    g.operation(Op.IF, [cond, then_ref, else_ref, value], [out])
    expected = _count_up(x, 5, 1) if condition else x + 1
    return ModelCase("nested", builder.build(g.build()),
                     [np.array([condition], np.bool_), np.array([x], np.int32)],
                     [np.array([expected], np.int32)])


EXTENSION_NAME = "com.example.fuzz_ext"
EXTENSION_PREFIX = 7
EXTENSION_OPERAND_TYPE = (EXTENSION_PREFIX << 16) | 1
EXTENSION_OPERATION_TYPE = (EXTENSION_PREFIX << 16) | 3


def extension_model() -> ModelCase:
    """A valid model this driver cannot run: an extension operation reading an extension
    operand. No sample data (the extension's types have no known layout)."""
    builder = ModelBuilder()
    builder.extensions.append(ExtensionNameAndPrefix(EXTENSION_NAME, EXTENSION_PREFIX))
    g = GraphBuilder(builder)
    x = g.input(EXTENSION_OPERAND_TYPE, [4])
    y = g.output(T.TENSOR_FLOAT32, [4])
    g.operation(EXTENSION_OPERATION_TYPE, [x], [y])
    return ModelCase("extension", builder.build(g.build()), [None])


#: Builders of every valid model above with default arguments, by name.
ALL_MODELS = {
    "add": add_model, "quant8_add": quant8_add_model,
    "constant_reference": constant_reference_model, "per_channel": per_channel_model,
    "if": if_model, "while_counter": while_counter_model,
    "fibonacci_while": fibonacci_while_model, "nested": nested_model,
    "extension": extension_model,
}
