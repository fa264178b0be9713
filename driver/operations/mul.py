"""MUL: element-wise product of two broadcast tensors with a fused activation."""
from __future__ import annotations

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from ._arithmetic import build_arithmetic, infer_broadcast, validate_arithmetic
from .common import QUANT8_ASYMM_TENSORS
from .registry import OperationDef, register

TYPES = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM,
         T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_INT32)


def validate(ctx):
    validate_arithmetic(ctx, TYPES)
    if ctx.inputs[0].type in QUANT8_ASYMM_TENSORS:
        # The quantized kernel's rescale factor (input scales over output scale) must be
        # below one.
        in0, in1, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
        check(out.scale > in0.scale * in1.scale,
              f"{ctx.name}: output 0 (operand {out.index}) scale {out.scale} must exceed the "
              f"product of the input scales {in0.scale} * {in1.scale}")


def build(ctx):
    return build_arithmetic(ctx, np.multiply, np.multiply)


register(OperationDef(OperationType.MUL, validate, infer_broadcast, build))
