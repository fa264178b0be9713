"""ARGMIN: the index of the smallest value along an axis."""
from __future__ import annotations

from ..hal.enums import OperationType
from ._argminmax import build_arg, infer_arg, validate_arg
from .registry import OperationDef, register


def build(ctx):
    return build_arg(ctx, use_max=False)


register(OperationDef(OperationType.ARGMIN, validate_arg, infer_arg, build))
