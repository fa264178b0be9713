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
from .common import check_same_quantization
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Example, ExampleOperand, Range, Signature, same_as, scalar, tensor

INPUT, K = range(2)
K_OPERAND = scalar(T.INT32, Range(low=1), "k")
SIGNATURES = (Signature(inputs=(tensor((T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32,
                                        T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED), rank=(1, None)),
                                K_OPERAND),
                        outputs=(same_as(INPUT), tensor((T.TENSOR_INT32,)))),)


def check_topk(ctx: OperationContext) -> None:
    check_same_quantization(ctx, ctx.outputs[0], ctx.inputs[INPUT], "output 0", "input 0")


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
        # A stable ascending sort keeps equal values in index order; reversed, the larger
        # index of equal values comes first.
        indices = np.argsort(x, axis=-1, kind="stable")[..., :-k - 1:-1]
        return np.take_along_axis(x, indices, axis=-1), indices.astype(np.int32)
    return kernel


#: A row with ties straddling k (the seeds' generated values rarely repeat).
EXAMPLES = (Example(inputs=(ExampleOperand(T.TENSOR_QUANT8_ASYMM, (2, 4), scale=0.5, zero_point=3,
                                           value=[[7, 9, 7, 1], [5, 5, 5, 5]]),
                            ExampleOperand(T.INT32, constant=2)),
                    outputs=((T.TENSOR_QUANT8_ASYMM, 0.5, 3), (T.TENSOR_INT32, 0.0, 0))),)

register(OperationDef(OperationType.TOPK_V2, SIGNATURES, infer_shapes, build, check_topk, EXAMPLES))
