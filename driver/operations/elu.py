"""ELU: element-wise ``max(0, x) + min(0, alpha * (exp(x) - 1))`` with a scalar alpha of the
tensor's float type."""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from .common import same_shape
from .registry import Kernel, OperationContext, OperationDef, register
from .signatures import Signature, same_as, scalar, tensor

SIGNATURES = tuple(Signature(inputs=(tensor((tensor_type,), rank=(1, None)),
                                     scalar(alpha_type, name="alpha")),
                             outputs=(same_as(0),))
                   for tensor_type, alpha_type in ((T.TENSOR_FLOAT16, T.FLOAT16),
                                                   (T.TENSOR_FLOAT32, T.FLOAT32)))


def build(ctx: OperationContext) -> Kernel:
    dtype = np.float32 if ctx.inputs[0].type == T.TENSOR_FLOAT32 else np.float16

    def kernel(x, alpha):
        x32 = x.astype(np.float32, copy=False)
        with np.errstate(all="ignore"):     # IEEE overflow, also when rounding to float16
            result = (np.maximum(x32, np.float32(0))
                      + np.minimum(np.float32(0), np.float32(alpha) * np.expm1(x32)))
            return (result.astype(dtype, copy=False),)
    return kernel


register(OperationDef(OperationType.ELU, SIGNATURES, same_shape, build))
