"""TRANSPOSE: dimensions permuted by ``perm`` (output dimension i is input dimension
perm[i]); an omitted perm reverses the dimensions of a 2-D input."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from .common import FLOAT_AND_QUANT8_TENSORS, check_kept_quantization, constant_vector
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Signature, same_as, tensor

SIGNATURES = (Signature(inputs=(tensor(FLOAT_AND_QUANT8_TENSORS, rank=(1, 4)),
                                tensor((T.TENSOR_INT32,), rank=(1, 1), name="perm", optional=True)),
                        outputs=(same_as(0),)),)


def permutation(ctx: OperationContext, perm: Sequence[int], rank: int) -> tuple[int, ...]:
    check(len(perm) == rank, f"{ctx.name}: perm {list(perm)} has {len(perm)} entries for rank {rank}")
    check(sorted(perm) == list(range(rank)),
          f"{ctx.name}: perm {list(perm)} is not a permutation of 0..{rank - 1}")
    return tuple(perm)


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    inp, perm_shape = shapes
    if ctx.inputs[1].is_omitted:
        if inp is None:
            return [(0, 0)]
        check(len(inp) == 2, f"{ctx.name}: without perm the input must be 2-D, has rank {len(inp)}")
        return [(inp[1], inp[0])]
    perm = constant_vector(ctx, 1)
    rank = len(inp) if inp is not None else (perm.size if perm is not None else 0)
    if perm_shape is not None and perm_shape[0] and rank:
        check(perm_shape[0] == rank, f"{ctx.name}: perm has {perm_shape[0]} entries for rank {rank}")
    if not rank:
        return [None]
    if perm is None:
        return [(0,) * rank]
    order = permutation(ctx, perm.tolist(), rank)
    return [tuple(inp[p] for p in order) if inp is not None else (0,) * rank]


def build(ctx: OperationContext) -> Kernel:
    def kernel(x, perm):
        if perm is None:     # omitted, in the model or by the request
            check(x.ndim == 2, f"{ctx.name}: without perm the input must be 2-D, has rank {x.ndim}")
            return (np.ascontiguousarray(x.T),)
        check(perm.ndim == 1, f"{ctx.name}: perm must be 1-D, has shape {list(perm.shape)}")
        return (np.ascontiguousarray(np.transpose(x, permutation(ctx, perm.tolist(), x.ndim))),)
    return kernel


register(OperationDef(OperationType.TRANSPOSE, SIGNATURES, infer_shapes, build, check_kept_quantization,
                      zero_sized_inputs=True))
