"""LOGICAL_AND and LOGICAL_OR of two broadcast TENSOR_BOOL8 tensors; LOGICAL_NOT of one."""
from __future__ import annotations

from functools import partial
from typing import Callable

import numpy as np

from ..hal.enums import OperandType as T, OperationType as Op
from .common import broadcast, broadcasting, same_shape
from .registry import Kernel, OperationContext, OperationDef, register
from .signatures import Signature, tensor

BOOL = tensor((T.TENSOR_BOOL8,))


def build_binary(ctx: OperationContext, fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Kernel:
    def kernel(a, b):
        return (broadcasting(ctx, fn, a, b),)
    return kernel


for operation, fn in ((Op.LOGICAL_AND, np.logical_and), (Op.LOGICAL_OR, np.logical_or)):
    register(OperationDef(operation, (Signature(inputs=(BOOL, BOOL), outputs=(BOOL,)),), broadcast,
                          partial(build_binary, fn=fn)))

register(OperationDef(Op.LOGICAL_NOT, (Signature(inputs=(BOOL,), outputs=(BOOL,)),), same_shape,
                      lambda ctx: lambda x: (np.logical_not(x),)))
