"""GREATER_EQUAL: element-wise ``x >= y`` of two broadcast tensors, as a TENSOR_BOOL8."""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperationType
from ._comparison import build_comparison, infer_comparison, validate_comparison
from .registry import OperationDef, register


def build(ctx):
    return build_comparison(ctx, np.greater_equal)


register(OperationDef(OperationType.GREATER_EQUAL, validate_comparison, infer_comparison, build))
