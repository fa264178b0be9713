"""MAXIMUM: element-wise maximum of two broadcast tensors."""
from __future__ import annotations

from ..hal.enums import OperationType
from ._minmax import build_minmax, infer_minmax, maximum, validate_minmax
from .registry import OperationDef, register


def build(ctx):
    return build_minmax(ctx, maximum)


register(OperationDef(OperationType.MAXIMUM, validate_minmax, infer_minmax, build))
