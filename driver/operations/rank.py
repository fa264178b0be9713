"""RANK: the number of dimensions of a tensor, as an INT32 scalar."""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from .common import check_counts, check_input_type, check_not_omitted, check_output_type
from .registry import OperationDef, register

TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM,
         T.TENSOR_QUANT16_SYMM, T.TENSOR_BOOL8, T.TENSOR_QUANT8_SYMM_PER_CHANNEL,
         T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)


def validate(ctx):
    check_counts(ctx, 1, 1)
    check_not_omitted(ctx)
    check_input_type(ctx, 0, TYPES)
    check_output_type(ctx, 0, (T.INT32,))


def infer_shapes(ctx, shapes):
    return [()]


def build(ctx):
    return lambda x: (np.array(x.ndim, dtype=np.int32),)


register(OperationDef(OperationType.RANK, validate, infer_shapes, build))
