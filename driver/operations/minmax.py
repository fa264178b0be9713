"""MAXIMUM and MINIMUM: element-wise extremes of two broadcast tensors of one type.
Quantized inputs are first requantized to the output's scale and zero point, then compared."""
from __future__ import annotations

from functools import partial
from typing import Callable

import numpy as np

from ..hal.enums import OperationType as Op
from .common import (DATA_TENSORS, QUANT8_ASYMM_TENSORS, broadcast, broadcasting,
                     check_quant_scales, requantize_values)
from .registry import Kernel, OperationContext, OperationDef, register
from .signatures import Signature, same_as, tensor

TYPES = DATA_TENSORS
SIGNATURES = (Signature(inputs=(tensor(TYPES), same_as(0)), outputs=(same_as(0),)),)

Pick = Callable[[np.ndarray, np.ndarray], np.ndarray]


def maximum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """std::max(a, b) = (a < b) ? b : a: a NaN in b gives a, a NaN in a gives NaN."""
    return np.where(a < b, b, a)


def minimum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """std::min(a, b) = (b < a) ? b : a."""
    return np.where(b < a, b, a)


def build_minmax(ctx: OperationContext, pick: Pick) -> Kernel:
    in0, in1, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    if in0.type in QUANT8_ASYMM_TENSORS:
        def quant_kernel(a, b):
            a_out = requantize_values(a, in0.scale, in0.zeroPoint, out.scale, out.zeroPoint, out.type)
            b_out = requantize_values(b, in1.scale, in1.zeroPoint, out.scale, out.zeroPoint, out.type)
            return (broadcasting(ctx, pick, a_out, b_out),)
        return quant_kernel

    def kernel(a, b):
        return (broadcasting(ctx, pick, a, b),)
    return kernel


for operation, pick in ((Op.MAXIMUM, maximum), (Op.MINIMUM, minimum)):
    register(OperationDef(operation, SIGNATURES, broadcast,
                          partial(build_minmax, pick=pick),
                          partial(check_quant_scales, inputs=(0, 1))))
