"""POW: element-wise ``base ** exponent`` of two broadcast float tensors (IEEE results:
a negative base with a fractional exponent is NaN)."""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from ._arithmetic import broadcast_failure
from ._comparison import infer_comparison
from .common import check_counts, check_input_type, check_not_omitted, check_same_type
from .registry import Kernel, OperationContext, OperationDef, register

TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32)


def validate(ctx: OperationContext) -> None:
    check_counts(ctx, 2, 1)
    check_not_omitted(ctx)
    check_input_type(ctx, 0, TYPES)
    check_same_type(ctx, "input 1", ctx.inputs[1], ctx.inputs[0].type)
    check_same_type(ctx, "output 0", ctx.outputs[0], ctx.inputs[0].type)


def build(ctx: OperationContext) -> Kernel:
    half = ctx.inputs[0].type == T.TENSOR_FLOAT16

    def kernel(base, exponent):
        try:
            with np.errstate(all="ignore"):
                if half:    # computed in single precision, as the reference does
                    return (np.power(base.astype(np.float32), exponent.astype(np.float32))
                            .astype(np.float16),)
                return (np.power(base, exponent),)
        except ValueError:
            broadcast_failure(ctx, base, exponent)
    return kernel


register(OperationDef(OperationType.POW, validate, infer_comparison, build))
