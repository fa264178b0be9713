"""EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER and GREATER_EQUAL: two broadcast tensors of
one type compared element-wise into a TENSOR_BOOL8.

Quantized operands compare their real values, (q - zeroPoint) * scale in single precision
as the reference computes them; the two inputs may have different scales and zero points.
TENSOR_BOOL8 compares stored bytes. Every other type compares stored values directly: one
numpy call per run, since loop conditions (``i < n`` on TENSOR_INT32 [1]) run once per
WHILE iteration. NaN compares false (and unequal), as in C.
"""
from __future__ import annotations

from functools import partial
from typing import Callable

import numpy as np

from ..hal.enums import OperandType as T, OperationType as Op
from .common import QUANT8_ASYMM_TENSORS, broadcast, broadcasting, check_quant_scales, real_values_f32
from .registry import Kernel, OperationContext, OperationDef, register, with_binary_ufunc
from .signatures import Signature, same_as, tensor

Comparison = Callable[[np.ndarray, np.ndarray], np.ndarray]

TYPES = (T.TENSOR_BOOL8, T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32,
         T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
SIGNATURES = (Signature(inputs=(tensor(TYPES), same_as(0)), outputs=(tensor((T.TENSOR_BOOL8,)),)),)


def build_comparison(ctx: OperationContext, compare: Comparison) -> Kernel:
    in0, in1 = ctx.inputs[0], ctx.inputs[1]
    if in0.type in QUANT8_ASYMM_TENSORS:
        def quant_kernel(a, b):
            return (broadcasting(ctx, compare, real_values_f32(a, in0.scale, in0.zeroPoint),
                                 real_values_f32(b, in1.scale, in1.zeroPoint)),)
        return quant_kernel

    if in0.type == T.TENSOR_BOOL8:
        # The reference compares the stored bytes, and a client may store any nonzero
        # byte as true: compare bytes too (numpy would treat 2 and 1 as equal booleans).
        def bool_kernel(a, b):
            return (broadcasting(ctx, compare, a.view(np.uint8), b.view(np.uint8)),)
        return bool_kernel

    def kernel(a, b):
        return (broadcasting(ctx, compare, a, b),)
    return with_binary_ufunc(kernel, compare)


for operation, compare in ((Op.EQUAL, np.equal), (Op.NOT_EQUAL, np.not_equal),
                           (Op.LESS, np.less), (Op.LESS_EQUAL, np.less_equal),
                           (Op.GREATER, np.greater), (Op.GREATER_EQUAL, np.greater_equal)):
    register(OperationDef(operation, SIGNATURES, broadcast,
                          partial(build_comparison, compare=compare),
                          # output 0 is a TENSOR_BOOL8, which has no scale
                          partial(check_quant_scales, inputs=(0, 1))))
