"""TILE: a tensor repeated ``multiples[i]`` times along each dimension i; multiples is a
TENSOR_INT32 [rank] of non-negative counts."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from ..limits import check_rank, check_shape
from .common import DATA_TENSORS, check_kept_quantization, constant_vector
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Signature, same_as, tensor

TYPES = DATA_TENSORS
SIGNATURES = (Signature(inputs=(tensor(TYPES, rank=(1, None)),
                                tensor((T.TENSOR_INT32,), rank=(1, 1), name="multiples")),
                        outputs=(same_as(0),)),)


def check_multiples(ctx: OperationContext, multiples: np.ndarray, rank: int) -> None:
    check(multiples.shape == (rank,),
          f"{ctx.name}: multiples have shape {list(multiples.shape)}, expected [{rank}]")
    check(bool(np.all(multiples >= 0)), f"{ctx.name}: multiples {multiples.tolist()} has a negative count")


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    inp, multiples_shape = shapes
    if inp is None:
        if multiples_shape is None or not multiples_shape[0]:
            return [None]
        check_rank(multiples_shape[0], f"{ctx.name}, input 1 (multiples)")
        return [(0,) * multiples_shape[0]]
    multiples = constant_vector(ctx, 1)
    if multiples is None:
        return [(0,) * len(inp)]
    check_multiples(ctx, multiples, len(inp))
    return [tuple(d * int(m) for d, m in zip(inp, multiples))]


def build(ctx: OperationContext) -> Kernel:
    def kernel(x, multiples):
        check_multiples(ctx, multiples, x.ndim)
        counts = [int(m) for m in multiples]
        shape = [d * m for d, m in zip(x.shape, counts)]
        check_shape(shape, x.itemsize, f"{ctx.name}, output 0")
        if 0 in shape:
            # np.tile repeats one axis after another: a huge multiple before a zero one
            # would build a huge intermediate for an empty result.
            return (np.empty(shape, x.dtype),)
        return (np.tile(x, counts),)
    return kernel


register(OperationDef(OperationType.TILE, SIGNATURES, infer_shapes, build, check_kept_quantization))
