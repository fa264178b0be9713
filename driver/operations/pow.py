"""POW: element-wise ``base ** exponent`` of two broadcast float tensors (IEEE results:
a negative base with a fractional exponent is NaN)."""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from .common import broadcast, broadcasting
from .registry import Kernel, OperationContext, OperationDef, register
from .signatures import Signature, same_as, tensor

TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32)
SIGNATURES = (Signature(inputs=(tensor(TYPES, name="base"), same_as(0, name="exponent")),
                        outputs=(same_as(0),)),)


def build(ctx: OperationContext) -> Kernel:
    half = ctx.inputs[0].type == T.TENSOR_FLOAT16

    def kernel(base, exponent):
        if half:    # computed in single precision, as the reference does
            return (broadcasting(ctx, np.power, base.astype(np.float32),
                                 exponent.astype(np.float32)).astype(np.float16),)
        return (broadcasting(ctx, np.power, base, exponent),)
    return kernel


register(OperationDef(OperationType.POW, SIGNATURES, broadcast, build))
