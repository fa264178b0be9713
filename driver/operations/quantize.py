"""QUANTIZE: float values to TENSOR_QUANT8_ASYMM(_SIGNED):
``clamp(round(x / scale) + zeroPoint)``, rounding halves away from zero in single precision.
NaN saturates to the top of the range, as the reference's min/max chain does."""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from .common import (QUANT8_ASYMM_TENSORS, check_quant_params, quant_range, round_half_away,
                     same_shape)
from .registry import Kernel, OperationContext, OperationDef, register
from .signatures import Signature, tensor

SIGNATURES = (Signature(inputs=(tensor((T.TENSOR_FLOAT16, T.TENSOR_FLOAT32), rank=(1, None)),),
                        outputs=(tensor(QUANT8_ASYMM_TENSORS),)),)


def check_output(ctx: OperationContext) -> None:
    check_quant_params(ctx, ctx.outputs[0], "output 0")


def build(ctx: OperationContext) -> Kernel:
    out = ctx.outputs[0]
    qmin, qmax = quant_range(out.type)
    scale = np.float32(out.scale)
    dtype = np.uint8 if out.type == T.TENSOR_QUANT8_ASYMM else np.int8

    def kernel(x):
        with np.errstate(all="ignore"):
            q = round_half_away(x.astype(np.float32) / scale) + np.float32(out.zeroPoint)
        q = np.nan_to_num(q, nan=qmax)
        return (np.clip(q, qmin, qmax).astype(dtype),)
    return kernel


register(OperationDef(OperationType.QUANTIZE, SIGNATURES, same_shape, build, check_output,
                      zero_sized_inputs=True))
