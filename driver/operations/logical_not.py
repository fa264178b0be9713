"""LOGICAL_NOT: element-wise ``not x`` of a TENSOR_BOOL8 tensor."""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from .common import check_counts, check_input_type, check_not_omitted, check_output_type
from .registry import OperationDef, register


def validate(ctx):
    check_counts(ctx, 1, 1)
    check_not_omitted(ctx)
    check_input_type(ctx, 0, (T.TENSOR_BOOL8,))
    check_output_type(ctx, 0, (T.TENSOR_BOOL8,))


def infer_shapes(ctx, shapes):
    return [shapes[0]]


def build(ctx):
    def kernel(x):
        return (np.logical_not(x),)
    return kernel


register(OperationDef(OperationType.LOGICAL_NOT, validate, infer_shapes, build))
