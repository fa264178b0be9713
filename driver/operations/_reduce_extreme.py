"""REDUCE_MAX and REDUCE_MIN kernels: an empty reduction yields the type's lowest (for
max) or highest (for min) value, as the reference's initial value."""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperandType as T
from .registry import OperationContext

TYPES = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)


def _limits(dtype: np.dtype) -> tuple:
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    return info.min, info.max


def reduce_extreme(ctx: OperationContext, use_max: bool):
    def reduce(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
        lowest, highest = _limits(x.dtype)
        if use_max:
            # The reference folds with std::max(acc, x), which keeps acc when x is NaN:
            # fmax ignores NaN the same way.
            return np.fmax.reduce(x, axis=axes, keepdims=True, initial=lowest)
        return np.fmin.reduce(x, axis=axes, keepdims=True, initial=highest)
    return reduce
