"""RANK: the number of dimensions of a tensor, as an INT32 scalar."""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from .registry import OperationDef, register
from .signatures import Signature, scalar, tensor

TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM,
         T.TENSOR_QUANT16_SYMM, T.TENSOR_BOOL8, T.TENSOR_QUANT8_SYMM_PER_CHANNEL,
         T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
SIGNATURES = (Signature(inputs=(tensor(TYPES),), outputs=(scalar(T.INT32),)),)


def infer_shapes(ctx, shapes):
    return [()]


def build(ctx):
    return lambda x: (np.array(x.ndim, dtype=np.int32),)


register(OperationDef(OperationType.RANK, SIGNATURES, infer_shapes, build))
