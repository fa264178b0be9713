"""MINIMUM: element-wise minimum of two broadcast tensors."""
from __future__ import annotations

from ..hal.enums import OperationType
from ._minmax import build_minmax, infer_minmax, minimum, validate_minmax
from .registry import OperationDef, register


def build(ctx):
    return build_minmax(ctx, minimum)


register(OperationDef(OperationType.MINIMUM, validate_minmax, infer_minmax, build))
