"""How each operand type's values are laid out in memory: the numpy dtype of one element
(types.hal gives every base type's byte size). SUBGRAPH and extension types have none."""
from __future__ import annotations

import numpy as np

from .enums import OperandType as T

#: Storage dtype per operand type (also the dtype of run-time values).
STORAGE_DTYPE: dict[int, np.dtype] = {
    T.FLOAT32: np.dtype(np.float32), T.INT32: np.dtype(np.int32),
    T.UINT32: np.dtype(np.uint32), T.BOOL: np.dtype(np.bool_),
    T.FLOAT16: np.dtype(np.float16),
    T.TENSOR_FLOAT32: np.dtype(np.float32), T.TENSOR_INT32: np.dtype(np.int32),
    T.TENSOR_QUANT8_ASYMM: np.dtype(np.uint8), T.TENSOR_QUANT16_SYMM: np.dtype(np.int16),
    T.TENSOR_FLOAT16: np.dtype(np.float16), T.TENSOR_BOOL8: np.dtype(np.bool_),
    T.TENSOR_QUANT8_SYMM_PER_CHANNEL: np.dtype(np.int8),
    T.TENSOR_QUANT16_ASYMM: np.dtype(np.uint16), T.TENSOR_QUANT8_SYMM: np.dtype(np.int8),
    T.TENSOR_QUANT8_ASYMM_SIGNED: np.dtype(np.int8),
    T.TENSOR_OEM_BYTE: np.dtype(np.uint8), T.OEM: np.dtype(np.uint8),
}

