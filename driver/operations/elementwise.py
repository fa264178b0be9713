"""Element-wise float functions of one tensor: ABS, EXP, FLOOR, LOG, NEG, RSQRT, SIN, SQRT.

Each computes in single precision; float16 results are rounded once at the end, as the
reference computes float16 through float. IEEE results (kernels run with floating-point
errors ignored, registry.py): LOG of 0 is -inf and of a negative NaN, SQRT and RSQRT of a
negative NaN, RSQRT of 0 inf. ABS and NEG also take TENSOR_INT32, which wraps at INT32_MIN
as two's complement does.
"""
from __future__ import annotations

from functools import partial
from typing import Callable

import numpy as np

from ..hal.enums import OperandType as T, OperationType as Op
from .common import same_shape
from .registry import Kernel, OperationContext, OperationDef, register
from .signatures import Signature, same_as, tensor

UnaryFn = Callable[[np.ndarray], np.ndarray]

FLOATS = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32)
FLOATS_AND_INT32 = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32)


def unary(types, max_rank: int | None = None,
          output_quantization: dict | None = None) -> tuple[Signature, ...]:
    return (Signature(inputs=(tensor(types, rank=(1, max_rank)),),
                      outputs=(same_as(0, quantization=output_quantization),)),)


def float_kernel(ctx: OperationContext, fn: UnaryFn) -> Kernel:
    """fn in single precision (float16 rounded once at the end); TENSOR_INT32 directly."""
    if ctx.inputs[0].type == T.TENSOR_FLOAT16:
        def half_kernel(x):
            return (fn(x.astype(np.float32)).astype(np.float16),)
        return half_kernel

    def kernel(x):
        return (fn(x),)
    return kernel


def reciprocal_sqrt(x: np.ndarray) -> np.ndarray:
    return np.reciprocal(np.sqrt(x))


for operation, table, fn in (
        (Op.ABS, unary(FLOATS_AND_INT32), np.abs),
        (Op.EXP, unary(FLOATS), np.exp),
        (Op.FLOOR, unary(FLOATS, 4), np.floor),
        (Op.LOG, unary(FLOATS), np.log),
        (Op.NEG, unary(FLOATS_AND_INT32), np.negative),
        (Op.RSQRT, unary(FLOATS), reciprocal_sqrt),
        (Op.SIN, unary(FLOATS), np.sin),
        (Op.SQRT, unary(FLOATS), np.sqrt)):
    register(OperationDef(operation, table, same_shape, partial(float_kernel, fn=fn)))
