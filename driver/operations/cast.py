"""CAST: values converted to another type, ignoring quantization parameters (a quantized
tensor is cast as its stored integers).

Conversions among TENSOR_FLOAT16, TENSOR_FLOAT32, TENSOR_INT32 and TENSOR_QUANT8_ASYMM are
allowed; TENSOR_BOOL8, TENSOR_QUANT16_ASYMM, TENSOR_QUANT16_SYMM, TENSOR_QUANT8_ASYMM_SIGNED
and TENSOR_QUANT8_SYMM only cast to themselves. Casting to uint8 saturates to [0, 255] and
truncates toward zero. Casting a float to int32 truncates toward zero; where C leaves the
result undefined (NaN, out of range) this driver saturates and maps NaN to 0.
"""
from __future__ import annotations

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from .common import STORAGE_DTYPE, same_shape
from .registry import Kernel, OperationContext, OperationDef, register
from .signatures import Signature, same_as, tensor

CONVERTIBLE = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM)
IDENTITY_ONLY = (T.TENSOR_BOOL8, T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT16_SYMM,
                 T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM)
INT32_RANGE = (-2147483648.0, 2147483647.0)   # clipped in double precision
SIGNATURES = (Signature(inputs=(tensor(CONVERTIBLE, rank=(1, None)),), outputs=(tensor(CONVERTIBLE),)),
              Signature(inputs=(tensor(IDENTITY_ONLY, rank=(1, None)),), outputs=(same_as(0),)))


def check_shapes(ctx: OperationContext) -> None:
    in_dims, out_dims = ctx.inputs[0].dimensions, ctx.outputs[0].dimensions
    if in_dims and out_dims and all(out_dims):
        check(in_dims == out_dims,
              f"{ctx.name}: output 0 (operand {ctx.outputs[0].index}) dimensions "
              f"{list(out_dims)} differ from input 0 dimensions {list(in_dims)}")


def build(ctx: OperationContext) -> Kernel:
    in_type, out_type = ctx.inputs[0].type, ctx.outputs[0].type
    out_dtype = STORAGE_DTYPE[out_type]
    if in_type == out_type:
        return lambda x: (x.copy(),)
    if out_type == T.TENSOR_QUANT8_ASYMM:
        def to_uint8(x):
            with np.errstate(invalid="ignore"):
                clipped = np.clip(np.nan_to_num(x, nan=0.0) if x.dtype.kind == "f" else x, 0, 255)
            return (np.trunc(clipped).astype(np.uint8),)
        return to_uint8
    if out_type == T.TENSOR_INT32 and in_type in (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32):
        def float_to_int32(x):
            wide = np.nan_to_num(x.astype(np.float64), nan=0.0)
            return (np.trunc(np.clip(wide, *INT32_RANGE)).astype(np.int32),)
        return float_to_int32

    def convert(x):
        with np.errstate(over="ignore"):      # float32 -> float16 overflows to inf
            return (x.astype(out_dtype),)
    return convert


register(OperationDef(OperationType.CAST, SIGNATURES, same_shape, build, check_shapes))
