"""MEAN: the average of elements over the given axes; keep_dims is an INT32 (kept when
positive). Quantized tensors average their stored values with the output in the input's
quantization, truncating the integer quotient toward zero as the reference does."""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from ._reduce import build_reduce, infer_reduce, validate_reduce
from .common import QUANT8_ASYMM_TENSORS, check_quant_params
from .registry import OperationDef, register

TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)


def validate(ctx):
    validate_reduce(ctx, TYPES, keep_dims_type=T.INT32)
    check_quant_params(ctx, ctx.inputs[0], "input 0")


def float_mean(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    count = np.prod([x.shape[a] for a in axes], dtype=np.int64)
    with np.errstate(all="ignore"):
        total = np.sum(x.astype(np.float32, copy=False), axis=axes, keepdims=True)
        return (total / np.float32(count)).astype(x.dtype, copy=False)


def quant_mean(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    total = np.sum(x, axis=axes, keepdims=True, dtype=np.int64)
    quotient = np.abs(total) // count * np.sign(total)      # C integer division
    return quotient.astype(x.dtype)


def build(ctx):
    quantized = ctx.inputs[0].type in QUANT8_ASYMM_TENSORS
    return build_reduce(ctx, quant_mean if quantized else float_mean, empty_allowed=False)


register(OperationDef(OperationType.MEAN, validate, infer_reduce, build))
