"""How each operand type's values are laid out in memory: the numpy dtype of one element
(types.hal gives every base type's byte size). SUBGRAPH and extension types have none."""
from __future__ import annotations

from math import prod
from typing import Sequence

import numpy as np

from .enums import SCALAR_OPERAND_TYPES, OperandType as T

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

#: Bytes per element by operand type; SUBGRAPH and extension types, whose size a driver
#: cannot know, have none.
ELEMENT_SIZE = {operand_type: dtype.itemsize for operand_type, dtype in STORAGE_DTYPE.items()}


def byte_size(operand_type: int, dimensions: Sequence[int], *,
              unknown_dimension: int | None = None) -> int | None:
    """The bytes of an operand of this type and these dimensions: the one definition.

    A scalar has one element whatever its dimensions. An unknown rank (no dimensions) or
    an unknown (0) dimension makes the size unknown (None), unless ``unknown_dimension``
    says what to count such a dimension as (1 gives a lower bound). None too when the
    element size is unknown."""
    size = ELEMENT_SIZE.get(operand_type)
    if size is None or operand_type in SCALAR_OPERAND_TYPES:
        return size
    if unknown_dimension is None:
        if not dimensions or 0 in dimensions:
            return None
        return size * bounded_product(dimensions)
    if unknown_dimension != 0 and 0 in dimensions:
        dimensions = [d or unknown_dimension for d in dimensions]
    return size * bounded_product(dimensions)


#: Past this, a product of dimensions is not computed further: no memory holds that many
#: elements, and no HAL size field (uint32) counts that many bytes.
PRODUCT_BOUND = 1 << 64

#: Dimensions multiplied at once: 32 of them (uint32 each) make an integer of at most
#: 1,024 bits, still cheap to multiply.
_CHUNK = 32


def bounded_product(factors: Sequence[int], bound: int = PRODUCT_BOUND) -> int:
    """The product of non-negative ``factors`` if it is at most ``bound``, else ``bound + 1``.

    Multiplying stops once past the bound: the full product of a list of any length (a
    request or a model may state 100,000 dimensions of 2**32 - 1) is an integer of as
    many words, and building it takes time quadratic in the length."""
    if len(factors) <= _CHUNK:
        product = prod(factors)
        return product if product <= bound else bound + 1
    if 0 in factors:
        return 0
    product = 1
    for start in range(0, len(factors), _CHUNK):
        product *= prod(factors[start:start + _CHUNK])
        if product > bound:
            return bound + 1
    return product
