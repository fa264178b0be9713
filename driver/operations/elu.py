"""ELU: element-wise ``max(0, x) + min(0, alpha * (exp(x) - 1))`` with a scalar alpha of the
tensor's float type."""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from ._unary import same_shape
from .common import (check_counts, check_input_type, check_not_omitted, check_rank_in,
                     check_same_type)
from .registry import Kernel, OperationContext, OperationDef, register

ALPHA_TYPE = {T.TENSOR_FLOAT16: T.FLOAT16, T.TENSOR_FLOAT32: T.FLOAT32}


def validate(ctx: OperationContext) -> None:
    check_counts(ctx, 2, 1)
    check_not_omitted(ctx)
    check_input_type(ctx, 0, tuple(ALPHA_TYPE))
    check_input_type(ctx, 1, (ALPHA_TYPE[ctx.inputs[0].type],))
    check_same_type(ctx, "output 0", ctx.outputs[0], ctx.inputs[0].type)
    check_rank_in(ctx, 0, 1)


def infer_shapes(ctx, shapes):
    return same_shape(ctx, shapes[:1])


def build(ctx: OperationContext) -> Kernel:
    dtype = np.float32 if ctx.inputs[0].type == T.TENSOR_FLOAT32 else np.float16

    def kernel(x, alpha):
        x32 = x.astype(np.float32, copy=False)
        with np.errstate(all="ignore"):     # IEEE overflow, also when rounding to float16
            result = (np.maximum(x32, np.float32(0))
                      + np.minimum(np.float32(0), np.float32(alpha) * np.expm1(x32)))
            return (result.astype(dtype, copy=False),)
    return kernel


register(OperationDef(OperationType.ELU, validate, infer_shapes, build))
