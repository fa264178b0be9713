"""ARGMAX: the index of the largest value along an axis."""
from __future__ import annotations

from ..hal.enums import OperationType
from ._argminmax import build_arg, infer_arg, validate_arg
from .registry import OperationDef, register


def build(ctx):
    return build_arg(ctx, use_max=True)


register(OperationDef(OperationType.ARGMAX, validate_arg, infer_arg, build))
