"""QUANTIZE: float values to TENSOR_QUANT8_ASYMM(_SIGNED):
``clamp(round(x / scale) + zeroPoint)``, rounding halves away from zero in single precision.
NaN saturates to the top of the range, as the reference's min/max chain does."""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from ._unary import same_shape
from .common import (QUANT8_ASYMM_TENSORS, check_counts, check_input_type, check_not_omitted,
                     check_output_type, check_quant_params, check_rank_in, quant_range,
                     round_half_away)
from .registry import Kernel, OperationContext, OperationDef, register


def validate(ctx: OperationContext) -> None:
    check_counts(ctx, 1, 1)
    check_not_omitted(ctx)
    check_input_type(ctx, 0, (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32))
    check_output_type(ctx, 0, QUANT8_ASYMM_TENSORS)
    check_rank_in(ctx, 0, 1)
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


register(OperationDef(OperationType.QUANTIZE, validate, same_shape, build))
