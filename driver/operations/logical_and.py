"""LOGICAL_AND: element-wise ``x and y`` of two broadcast TENSOR_BOOL8 tensors."""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperationType
from ._logical import build_logical, infer_logical, validate_logical
from .registry import OperationDef, register


def build(ctx):
    return build_logical(ctx, np.logical_and)


register(OperationDef(OperationType.LOGICAL_AND, validate_logical, infer_logical, build))
