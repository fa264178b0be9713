"""RELU: element-wise ``max(0, x)``."""
from __future__ import annotations

from ..hal.enums import FusedActivationFunc, OperationType
from ._activation import build_clamp, validate_clamp
from ._unary import same_shape_up_to_4
from .registry import OperationDef, register


def build(ctx):
    return build_clamp(ctx, FusedActivationFunc.RELU)


register(OperationDef(OperationType.RELU, validate_clamp, same_shape_up_to_4, build))
