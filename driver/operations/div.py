"""DIV: element-wise quotient of two broadcast tensors with a fused activation.

Float division follows IEEE (x/0 is +-inf or NaN). TENSOR_INT32 division is floor
division (-5 // 2 == -3). An int32 zero divisor has no defined result, yet the execution
must succeed (the conformance suite runs it and ignores the value): it yields 0, and
INT32_MIN // -1 wraps to INT32_MIN as it would in two's complement.
"""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from ._arithmetic import build_arithmetic, infer_broadcast, validate_arithmetic
from .registry import OperationDef, register

TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32)


def validate(ctx):
    validate_arithmetic(ctx, TYPES)


def build(ctx):
    # numpy gives 0 for x // 0 (its divide-by-zero warning is off while kernels run, see
    # registry.py), and floor_divide wraps INT32_MIN // -1.
    return build_arithmetic(ctx, np.divide, np.floor_divide)


register(OperationDef(OperationType.DIV, validate, infer_broadcast, build))
