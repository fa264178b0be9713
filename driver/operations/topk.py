"""TOPK_V2: the k largest values along the last dimension, in descending order, and their
indices (TENSOR_INT32). As in the reference, which orders (value, index) pairs and takes
the greatest: of equal values the one with the larger index comes first (and is the one
kept when only some of them fit in k). NaN orders above every number. 0 < k <= the last
dimension; the values output keeps the input's quantization.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from ..limits import SCRATCH_BYTES_PER_CHUNK, checkpoint
from .common import check_kept_quantization
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Example, ExampleOperand, Range, Signature, same_as, scalar, tensor

INPUT, K = range(2)
K_OPERAND = scalar(T.INT32, Range(low=1), "k")
SIGNATURES = (Signature(inputs=(tensor((T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32,
                                        T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED), rank=(1, None)),
                                K_OPERAND),
                        outputs=(same_as(INPUT), tensor((T.TENSOR_INT32,)))),)


def check_k(ctx: OperationContext, k: int, last_dimension: int) -> None:
    check(k <= last_dimension, "{}: input 1 (k) {} exceeds the last dimension {} of input 0",
          ctx.name, k, last_dimension)


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    inp, k = shapes[INPUT], ctx.scalar(K)
    if inp is None:
        return [None, None]
    if k is not None and inp[-1]:
        check_k(ctx, k, inp[-1])
    out = tuple(inp[:-1]) + (k or 0,)
    return [out, out]


def build(ctx: OperationContext) -> Kernel:
    def kernel(x, k):
        k = int(k)
        K_OPERAND.check_value(ctx, K, k)
        check_k(ctx, k, x.shape[-1])
        rows = x.reshape(-1, x.shape[-1])
        indices = top_indices(rows, k).reshape(*x.shape[:-1], k)
        return np.take_along_axis(x, indices, axis=-1), indices.astype(np.int32)
    return kernel


#: Rows at least this long are not sorted: their k largest are selected first (a sort of a
#: row of millions took seconds, and held 8 bytes an element).
SELECTED_ROW = 1 << 12


def top_indices(rows: np.ndarray, k: int) -> np.ndarray:
    """The indices of each row's k largest, in their order: [rows, k]. A stable ascending
    sort keeps equal values in index order; reversed, the larger index of equal values
    comes first. Short rows are sorted a chunk of rows at a time, long ones one at a time
    by selection, with a checkpoint between."""
    count, length = rows.shape
    indices = np.empty((count, k), np.intp)
    if length >= SELECTED_ROW:
        for r in range(count):
            checkpoint()
            indices[r] = selected_top(rows[r], k)
        return indices
    chunk = max(1, SCRATCH_BYTES_PER_CHUNK // (8 * max(1, length)))
    for start in range(0, count, chunk):
        checkpoint()
        ascending = np.argsort(rows[start:start + chunk], axis=-1, kind="stable")
        indices[start:start + chunk] = ascending[:, :-k - 1:-1]
    return indices


def selected_top(row: np.ndarray, k: int) -> np.ndarray:
    """The indices of the k largest of ``row`` (1 <= k <= its length) as the reversed
    stable sort orders them: those above the k-th largest (NaN above all, as numpy's
    partition and sort order it) and the last of those equal to it, then only they sorted."""
    threshold = np.partition(row, len(row) - k)[len(row) - k]
    checkpoint()
    nan = np.isnan(row) if row.dtype.kind == "f" else None
    if nan is not None and np.isnan(threshold):
        above, equal = np.zeros(len(row), bool), nan
    else:
        above, equal = row > threshold, row == threshold
        if nan is not None:
            above |= nan
    ties = np.flatnonzero(equal)[np.count_nonzero(above) - k:]
    chosen = np.sort(np.concatenate([np.flatnonzero(above), ties]))
    return chosen[np.argsort(row[chosen], kind="stable")[::-1]]


#: A row with ties straddling k (the seeds' generated values rarely repeat).
EXAMPLES = (Example(inputs=(ExampleOperand(T.TENSOR_QUANT8_ASYMM, (2, 4), scale=0.5, zero_point=3,
                                           value=[[7, 9, 7, 1], [5, 5, 5, 5]]),
                            ExampleOperand(T.INT32, constant=2)),
                    outputs=((T.TENSOR_QUANT8_ASYMM, 0.5, 3), (T.TENSOR_INT32, 0.0, 0))),)

register(OperationDef(OperationType.TOPK_V2, SIGNATURES, infer_shapes, build, check_kept_quantization,
                      EXAMPLES))
