"""The tests' model catalogue, built with hal_client.builder.

Each function of the first part returns a fresh :class:`ModelCase` (new memory pools every
call, so a test may mutate what it gets), a valid model with sample inputs and expected
outputs:

    case = add_model()
    case.model            # the HAL Model
    case.request()        # a Request: inputs in pool 0, output buffers in pool 1
    case.expected         # expected outputs (numpy arrays), None when undefined
    read_outputs(case.model, request)   # the outputs an execution wrote

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

The second part returns bare Models for the driver tests, which build their requests with
``hal_client.builder.make_request``; their numpy references compute the way the model
computes (same dtype, same order of operations), so results compare exactly.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from driver.hal import (ExtensionNameAndPrefix, Model, OperandExtraParams, OperandType as T,
                        OperationType as Op, Request, SymmPerChannelQuantParams)
from driver.operations.common import STORAGE_DTYPE
from hal_client.builder import ModelBuilder, SubgraphBuilder, make_request, out_bytes, out_for
from hal_client.examples import count_condition, count_step

F32, I32 = np.float32, np.int32


@dataclass
class ModelCase:
    name: str
    model: Model
    inputs: list[Optional[np.ndarray]]
    expected: Optional[list[np.ndarray]] = None
    #: Output buffer sizes for request(); None: from the model's output dimensions.
    output_lengths: Optional[list[int]] = field(default=None)

    def request(self) -> Request:
        return model_request(self.model, self.inputs, self.output_lengths)


def model_request(model: Model, inputs: Sequence[Optional[np.ndarray]],
                  output_lengths: Optional[Sequence[int]] = None) -> Request:
    """Inputs (None: omitted) stored as their operands' types in pool 0, stating no
    dimensions; one buffer per output in pool 1, sized from the model's output dimensions
    (an unknown one counted as 1) unless ``output_lengths`` gives the sizes."""
    main = model.main
    stored = [None if value is None else np.asarray(value, STORAGE_DTYPE[main.operands[i].type])
              for i, value in zip(main.inputIndexes, inputs)]
    outputs = [out_for(main.operands[i]) for i in main.outputIndexes]
    if output_lengths is not None:
        outputs = [out_bytes(out.dtype, length) for out, length in zip(outputs, output_lengths)]
    return make_request(stored, outputs, state_input_dims=False).request


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


def fibonacci(n: int) -> tuple[int, int]:
    """(F(n), F(n + 1)), with F(0) = 0, F(1) = 1."""
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a, b


def count_up(start: int, limit: int, step: int) -> Optional[int]:
    """Where i = start; while i < limit: i += step ends; None if it never does."""
    if start < limit and step <= 0:
        return None
    value = start
    while value < limit:
        value += step
    return value


# --- model cases ------------------------------------------------------------------------

def add_model() -> ModelCase:
    mb = ModelBuilder()
    g = mb.main
    g.outputs(g.add(g.input(T.TENSOR_FLOAT32, [2, 2]), g.input(T.TENSOR_FLOAT32, [2, 2])))
    a_value = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    b_value = np.array([[0.5, -1.0], [10.0, 0.25]], np.float32)
    return ModelCase("add", mb.build(), [a_value, b_value], [a_value + b_value])


def quant8_add_model() -> ModelCase:
    """out = a + b with a (scale 0.5, zero point 10), constant b (0.25, 5) and out (1.0, 3);
    the sample values avoid rounding ties."""
    mb = ModelBuilder()
    g = mb.main
    a = g.input(T.TENSOR_QUANT8_ASYMM, [1, 4], scale=0.5, zero_point=10)
    b = g.constant(T.TENSOR_QUANT8_ASYMM, [[5, 9, 15, 0]], scale=0.25, zero_point=5)
    g.outputs(g.apply(Op.ADD, [a, b, g.int32(0)], T.TENSOR_QUANT8_ASYMM, [1, 4], 1.0, 3))
    a_value = np.array([[10, 20, 31, 255]], np.uint8)
    # real: [0, 5, 10.5, 122.5] + [0, 1, 2.5, -1.25] = [0, 6, 13, 121.25] -> +3 zero point
    expected = np.array([[3, 9, 16, 124]], np.uint8)
    return ModelCase("quant8_add", mb.build(), [a_value], [expected])


def constant_reference_model() -> ModelCase:
    """t = a + b (b in a shared-memory pool); out = t + a."""
    mb = ModelBuilder()
    g = mb.main
    a = g.input(T.TENSOR_FLOAT32, [3])
    b_value = np.array([100.0, 200.0, 300.0], np.float32)
    b = g.constant(T.TENSOR_FLOAT32, b_value, in_pool=True)
    act = g.int32(0)
    t = g.apply(Op.ADD, [a, b, act], T.TENSOR_FLOAT32, [3])
    g.outputs(g.apply(Op.ADD, [t, a, act], T.TENSOR_FLOAT32, [3]))
    a_value = np.array([1.0, 2.0, 3.0], np.float32)
    return ModelCase("constant_reference", mb.build(), [a_value], [a_value + b_value + a_value])


def per_channel_model() -> ModelCase:
    """DEQUANTIZE of a [2, 3] per-channel input quantized along dimension 1."""
    mb = ModelBuilder()
    g = mb.main
    scales = [0.5, 0.25, 2.0]
    quant = OperandExtraParams(channelQuant=SymmPerChannelQuantParams(scales=scales, channelDim=1))
    x = g.input(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, [2, 3], extra=quant)
    g.outputs(g.apply(Op.DEQUANTIZE, [x], T.TENSOR_FLOAT32, [2, 3]))
    x_value = np.array([[2, -4, 3], [-127, 127, 0]], np.int8)
    expected = (x_value.astype(np.float32) * np.array(scales, np.float32)).astype(np.float32)
    return ModelCase("per_channel", mb.build(), [x_value], [expected])


def _float_add_subgraph(mb: ModelBuilder, addend: float) -> SubgraphBuilder:
    g = mb.subgraph()
    g.outputs(g.add(g.input(T.TENSOR_FLOAT32, [2]), g.constant(T.TENSOR_FLOAT32, [addend] * 2)))
    return g


def if_model(condition: bool = True) -> ModelCase:
    """out = IF(cond, then: x + 10, else: x - 10)(x)."""
    mb = ModelBuilder()
    then, otherwise = _float_add_subgraph(mb, 10.0), _float_add_subgraph(mb, -10.0)
    g = mb.main
    cond, x = g.input(T.TENSOR_BOOL8, [1]), g.input(T.TENSOR_FLOAT32, [2])
    g.outputs(*g.if_(cond, then, otherwise, [x]))
    x_value = np.array([1.0, 2.5], np.float32)
    expected = x_value + np.float32(10.0 if condition else -10.0)
    return ModelCase("if", mb.build(), [np.array([condition], np.bool_), x_value], [expected])


def while_counter_model(limit: int = 5, start: int = 0, step: int = 1) -> ModelCase:
    """i = start (input); while i < limit: i = i + step. One loop-carried operand."""
    mb = ModelBuilder()
    cond, body = count_condition(mb, limit=limit), count_step(mb, step=step)
    g = mb.main
    g.outputs(*g.while_(cond, body, [g.input(T.TENSOR_INT32, [1])]))
    final = count_up(start, limit, step)
    expected = None if final is None else [np.array([final], np.int32)]
    return ModelCase("while_counter", mb.build(), [np.array([start], np.int32)], expected)


def fibonacci_while_model(n: int = 6) -> ModelCase:
    """(a, b) = (0, 1); i = 0; while i < n: (a, b, i) = (b, a + b, i + 1); returns (a, b).

    m = 2 loop-carried (a, b), k = 1 state-only (i), n = 1 input-only (the bound)."""
    mb = ModelBuilder()
    cond = mb.subgraph()
    _a, _b, i, bound = (cond.input(T.TENSOR_INT32, [1]) for _ in range(4))
    cond.outputs(cond.compare(Op.LESS, i, bound))

    body = mb.subgraph()
    a, b, i, _bound = (body.input(T.TENSOR_INT32, [1]) for _ in range(4))
    zero, one = body.constant(T.TENSOR_INT32, [0]), body.constant(T.TENSOR_INT32, [1])
    act = body.int32(0)
    body.outputs(body.apply(Op.ADD, [b, zero, act], T.TENSOR_INT32, [1]),   # a copy needs an operation
                 body.apply(Op.ADD, [a, b, act], T.TENSOR_INT32, [1]),
                 body.apply(Op.ADD, [i, one, act], T.TENSOR_INT32, [1]))

    g = mb.main
    bound = g.input(T.TENSOR_INT32, [1])
    a0, b0, i0 = (g.constant(T.TENSOR_INT32, [v]) for v in (0, 1, 0))
    g.outputs(*g.while_(cond, body, [a0, b0, i0, bound], count=2))
    fa, fb = fibonacci(n)
    return ModelCase("fibonacci_while", mb.build(), [np.array([n], np.int32)],
                     [np.array([fa], np.int32), np.array([fb], np.int32)])


def nested_model(condition: bool = True, x: int = 2) -> ModelCase:
    """IF(cond, then: WHILE i < 5: i += 1, else: x + 1)(x): control flow inside control
    flow. Referenced subgraphs: 0 then, 1 else, 2 loop condition, 3 loop body."""
    mb = ModelBuilder()
    then = mb.subgraph()                                   # filled in below
    otherwise = count_step(mb)
    cond, body = count_condition(mb, limit=5), count_step(mb)
    then.outputs(*then.while_(cond, body, [then.input(T.TENSOR_INT32, [1])]))
    g = mb.main
    flag, value = g.input(T.TENSOR_BOOL8, [1]), g.input(T.TENSOR_INT32, [1])
    g.outputs(*g.if_(flag, then, otherwise, [value]))
    expected = count_up(x, 5, 1) if condition else x + 1
    return ModelCase("nested", mb.build(),
                     [np.array([condition], np.bool_), np.array([x], np.int32)],
                     [np.array([expected], np.int32)])


EXTENSION_NAME = "com.example.fuzz_ext"
EXTENSION_PREFIX = 7
EXTENSION_OPERAND_TYPE = (EXTENSION_PREFIX << 16) | 1
EXTENSION_OPERATION_TYPE = (EXTENSION_PREFIX << 16) | 3


def extension_model() -> ModelCase:
    """A valid model this driver cannot run: an extension operation reading an extension
    operand. No sample data (the extension's types have no known layout)."""
    mb = ModelBuilder()
    mb.extensions.append(ExtensionNameAndPrefix(EXTENSION_NAME, EXTENSION_PREFIX))
    g = mb.main
    x = g.input(EXTENSION_OPERAND_TYPE, [4])
    g.outputs(g.apply(EXTENSION_OPERATION_TYPE, [x], T.TENSOR_FLOAT32, [4]))
    return ModelCase("extension", mb.build(), [None])


#: Builders of every valid model above with default arguments, by name.
ALL_MODELS = {
    "add": add_model, "quant8_add": quant8_add_model,
    "constant_reference": constant_reference_model, "per_channel": per_channel_model,
    "if": if_model, "while_counter": while_counter_model,
    "fibonacci_while": fibonacci_while_model, "nested": nested_model,
    "extension": extension_model,
}


# --- bare models for the driver tests -------------------------------------------------------

FIB_WEIGHTS = np.array([[0, 1], [1, 1]], F32)    # [a, b] -> [b, a + b]


def fibonacci_fc_model() -> Model:
    """fib = [1, 1]; i = 1; while i < n: fib = FC(fib); i += 1 -> fib.

    m = 1 (fib), k = 1 (the counter), n = 1 (the bound). The weights are a constant in a
    shared-memory pool (CONSTANT_REFERENCE) inside the body."""
    mb = ModelBuilder()
    specs = [(T.TENSOR_FLOAT32, [1, 2]), (T.TENSOR_INT32, [1]), (T.TENSOR_INT32, [1])]
    cond = mb.subgraph()
    _fib, i, n = (cond.input(*spec) for spec in specs)
    cond.outputs(cond.compare(Op.LESS, i, n))

    body = mb.subgraph()
    fib, i, _n = (body.input(*spec) for spec in specs)
    weights = body.constant(T.TENSOR_FLOAT32, FIB_WEIGHTS, in_pool=True)
    bias = body.constant(T.TENSOR_FLOAT32, [0, 0])
    next_fib = body.apply(Op.FULLY_CONNECTED, [fib, weights, bias, body.int32(0)], T.TENSOR_FLOAT32, [1, 2])
    body.outputs(next_fib, body.add(i, body.constant(T.TENSOR_INT32, [1])))

    main = mb.main
    n = main.input(T.TENSOR_INT32, [1])
    fib0, i0 = main.constant(T.TENSOR_FLOAT32, [[1, 1]]), main.constant(T.TENSOR_INT32, [1])
    main.outputs(*main.while_(cond, body, [fib0, i0, n], count=1))
    return mb.build()


def fibonacci_fc_reference(n: int) -> np.ndarray:
    """The loop starts at i = 1 with [F(1), F(2)]; every value is exact in float32."""
    return np.array([fibonacci(max(n, 1))], F32)


def if_add_sub_model() -> Model:
    """IF(c, then: a + b, else: a - b)(a, b) on TENSOR_FLOAT32 [3]."""
    mb = ModelBuilder()
    then, otherwise = mb.subgraph(), mb.subgraph()
    a, b = then.input(T.TENSOR_FLOAT32, [3]), then.input(T.TENSOR_FLOAT32, [3])
    then.outputs(then.add(a, b))
    a, b = otherwise.input(T.TENSOR_FLOAT32, [3]), otherwise.input(T.TENSOR_FLOAT32, [3])
    otherwise.outputs(otherwise.sub(a, b))
    main = mb.main
    c, a, b = main.input(T.TENSOR_BOOL8, [1]), main.input(T.TENSOR_FLOAT32, [3]), main.input(T.TENSOR_FLOAT32, [3])
    main.outputs(*main.if_(c, then, otherwise, [a, b]))
    return mb.build()


def mkn_model() -> Model:
    """m = 2 (a, b), k = 2 (i, t), n = 2 (limit, step):
    while i < limit: (a, b, i, t) = (a + step, b + a * t, i + 1, t + t) -> (a, b)."""
    mb = ModelBuilder()
    specs = [(T.TENSOR_FLOAT32, [2]), (T.TENSOR_FLOAT32, [2]), (T.TENSOR_INT32, [1]),
             (T.TENSOR_FLOAT32, [1]), (T.TENSOR_INT32, [1]), (T.TENSOR_FLOAT32, [2])]
    cond = mb.subgraph()
    _a, _b, i, _t, limit, _step = [cond.input(*s) for s in specs]
    cond.outputs(cond.compare(Op.LESS, i, limit))

    body = mb.subgraph()
    a, b, i, t, _limit, step = [body.input(*s) for s in specs]
    body.outputs(body.add(a, step), body.add(b, body.mul(a, t, dims=[2])),
                 body.add(i, body.constant(T.TENSOR_INT32, [1])), body.add(t, t))

    main = mb.main
    a0, b0 = main.input(T.TENSOR_FLOAT32, [2]), main.input(T.TENSOR_FLOAT32, [2])
    limit, step = main.input(T.TENSOR_INT32, [1]), main.input(T.TENSOR_FLOAT32, [2])
    i0, t0 = main.constant(T.TENSOR_INT32, [0]), main.constant(T.TENSOR_FLOAT32, [1])
    main.outputs(*main.while_(cond, body, [a0, b0, i0, t0, limit, step], count=2))
    return mb.build()


def mkn_reference(a: np.ndarray, b: np.ndarray, limit: int, step: np.ndarray,
                  ) -> tuple[np.ndarray, np.ndarray]:
    i, t = 0, np.array([1], F32)
    while i < limit:
        a, b, i, t = a + step, b + a * t, i + 1, t + t
    return a, b


def float_loop_model(limit: Optional[float]) -> Model:
    """x = x0; while x < limit: x = x + 1 (TENSOR_FLOAT32 [1]). With no limit the
    condition is x >= 0 instead, which stays true for any x0 >= 0: the loop never ends."""
    mb = ModelBuilder()
    cond = (count_condition(mb, T.TENSOR_FLOAT32, 0, Op.GREATER_EQUAL) if limit is None
            else count_condition(mb, T.TENSOR_FLOAT32, limit))
    body = count_step(mb, T.TENSOR_FLOAT32)
    main = mb.main
    main.outputs(*main.while_(cond, body, [main.input(T.TENSOR_FLOAT32, [1])]))
    return mb.build()


def infinite_loop_model() -> Model:
    return float_loop_model(None)


def finite_loop_model() -> Model:
    return float_loop_model(100)
