"""Models shared by the driver tests, each with a numpy reference computed the way the
model computes (same dtype, same order of operations), so results compare exactly."""
from __future__ import annotations

import numpy as np

from driver.hal.enums import OperandType as T, OperationType as Op
from driver.hal.structs import Model
from tests.driver.builders import ModelBuilder

F32, I32 = np.float32, np.int32


FIB_WEIGHTS = np.array([[0, 1], [1, 1]], F32)    # [a, b] -> [b, a + b]


def fibonacci_model() -> Model:
    """fib = [1, 1]; i = 1; while i < n: fib = FC(fib); i += 1 -> fib.

    m = 1 (fib), k = 1 (the counter), n = 1 (the bound). The weights are a constant in a
    shared-memory pool (CONSTANT_REFERENCE) inside the body."""
    mb = ModelBuilder()
    cond = mb.subgraph()
    _fib, i, n = cond.input(T.TENSOR_FLOAT32, [1, 2]), cond.input(T.TENSOR_INT32, [1]), cond.input(T.TENSOR_INT32, [1])
    cond.outputs(cond.compare(Op.LESS, i, n))

    body = mb.subgraph()
    fib, i, _n = body.input(T.TENSOR_FLOAT32, [1, 2]), body.input(T.TENSOR_INT32, [1]), body.input(T.TENSOR_INT32, [1])
    weights = body.constant(T.TENSOR_FLOAT32, FIB_WEIGHTS, in_pool=True)
    bias = body.constant(T.TENSOR_FLOAT32, [0, 0])
    next_fib = body.apply(Op.FULLY_CONNECTED, [fib, weights, bias, body.int32(0)], T.TENSOR_FLOAT32, [1, 2])
    body.outputs(next_fib, body.add(i, body.constant(T.TENSOR_INT32, [1])))

    main = mb.main
    n = main.input(T.TENSOR_INT32, [1])
    fib0 = main.constant(T.TENSOR_FLOAT32, [[1, 1]])
    i0 = main.constant(T.TENSOR_INT32, [1])
    main.outputs(*main.while_(cond, body, [fib0, i0, n], count=1))
    return mb.build()


def fibonacci_reference(n: int) -> np.ndarray:
    fib = np.array([[1, 1]], F32)
    i = 1
    while i < n:
        fib = (fib @ FIB_WEIGHTS.T).astype(F32)
        i += 1
    return fib


def if_model() -> Model:
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


def infinite_loop_model() -> Model:
    """x = x0; while x >= 0: x = x + 1. The condition stays true for any x0 >= 0."""
    mb = ModelBuilder()
    cond = mb.subgraph()
    x = cond.input(T.TENSOR_FLOAT32, [1])
    cond.outputs(cond.compare(Op.GREATER_EQUAL, x, cond.constant(T.TENSOR_FLOAT32, [0])))
    body = mb.subgraph()
    x = body.input(T.TENSOR_FLOAT32, [1])
    body.outputs(body.add(x, body.constant(T.TENSOR_FLOAT32, [1])))
    main = mb.main
    main.outputs(*main.while_(cond, body, [main.input(T.TENSOR_FLOAT32, [1])]))
    return mb.build()


def finite_loop_model() -> Model:
    """The same loop with a bound: while x < 100: x = x + 1."""
    mb = ModelBuilder()
    cond = mb.subgraph()
    x = cond.input(T.TENSOR_FLOAT32, [1])
    cond.outputs(cond.compare(Op.LESS, x, cond.constant(T.TENSOR_FLOAT32, [100])))
    body = mb.subgraph()
    x = body.input(T.TENSOR_FLOAT32, [1])
    body.outputs(body.add(x, body.constant(T.TENSOR_FLOAT32, [1])))
    main = mb.main
    main.outputs(*main.while_(cond, body, [main.input(T.TENSOR_FLOAT32, [1])]))
    return mb.build()
