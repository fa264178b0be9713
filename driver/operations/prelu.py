"""PRELU: ``x if x >= 0 else alpha * x``, with alpha broadcast against the input (the
output has the broadcast shape). Float16 multiplies in half precision, as the reference.

Quantized tensors (the output's quantization may differ from the input's) use the
reference's integer arithmetic: with x and alpha taken from their zero points, the output
is ``x * M_pos`` when x >= 0 and ``x * alpha * M_neg`` otherwise, where M_pos = s_in / s_out
and M_neg = s_in * s_alpha / s_out are fixed-point multipliers (_fixed_point.py), plus the
output's zero point, saturated to the type.
"""
from __future__ import annotations

import numpy as np

from ..hal.enums import OperandType as T, OperationType
from ._fixed_point import multiply_by_quantized_multiplier, quantize_multiplier
from .common import (QUANT8_ASYMM_TENSORS, broadcast, broadcasting, check_quant_params,
                     quant_range)
from .registry import Kernel, OperationContext, OperationDef, register
from .signatures import Example, ExampleOperand, Signature, same_as, tensor

INPUT, ALPHA = range(2)
SIGNATURES = (Signature(inputs=(tensor((T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, *QUANT8_ASYMM_TENSORS), rank=(1, None)),
                                same_as(INPUT, rank=(1, None), name="alpha")),
                        outputs=(same_as(INPUT),)),)


def check_prelu(ctx: OperationContext) -> None:
    check_quant_params(ctx, ctx.inputs[INPUT], "input 0")
    check_quant_params(ctx, ctx.inputs[ALPHA], "input 1 (alpha)")
    check_quant_params(ctx, ctx.outputs[0], "output 0")


def build(ctx: OperationContext) -> Kernel:
    inp, alpha_info, out = ctx.inputs[INPUT], ctx.inputs[ALPHA], ctx.outputs[0]
    if inp.type not in QUANT8_ASYMM_TENSORS:
        def float_kernel(x, alpha):
            return (np.where(x >= 0, x, broadcasting(ctx, np.multiply, x, alpha)),)
        return float_kernel

    # The reference forms the multipliers from single-precision scales: s_in / s_out is a
    # float quotient, s_in * s_alpha a float product divided in double precision.
    in_scale, out_scale = np.float32(inp.scale), np.float32(out.scale)
    with np.errstate(over="ignore"):        # an infinite quotient is refused below
        positive = quantize_multiplier(float(in_scale / out_scale), ctx.name)
    negative = quantize_multiplier(float(in_scale * np.float32(alpha_info.scale)) / float(out_scale),
                                   ctx.name)
    low, high = quant_range(out.type)

    def quantized_kernel(x, alpha):
        values = x.astype(np.int64) - inp.zeroPoint
        product = broadcasting(ctx, np.multiply, values, alpha.astype(np.int64) - alpha_info.zeroPoint)
        scaled = np.where(values >= 0, multiply_by_quantized_multiplier(values, *positive),
                          multiply_by_quantized_multiplier(product, *negative))
        return (np.clip(scaled + out.zeroPoint, low, high).astype(x.dtype),)
    return quantized_kernel


#: Quantized alpha of a different scale, broadcast over the last dimension.
EXAMPLES = (Example(inputs=(ExampleOperand(T.TENSOR_QUANT8_ASYMM, (2, 3), scale=0.5, zero_point=120),
                            ExampleOperand(T.TENSOR_QUANT8_ASYMM, (3,), scale=0.25, zero_point=50,
                                           constant=[50, 54, 40])),
                    outputs=((T.TENSOR_QUANT8_ASYMM, 0.75, 100),)),
            Example(inputs=(ExampleOperand(T.TENSOR_QUANT8_ASYMM_SIGNED, (2, 1, 2), scale=0.5, zero_point=-1),
                            ExampleOperand(T.TENSOR_QUANT8_ASYMM_SIGNED, (3, 1), scale=0.125, zero_point=0)),
                    outputs=((T.TENSOR_QUANT8_ASYMM_SIGNED, 0.5, 2),)))

register(OperationDef(OperationType.PRELU, SIGNATURES, broadcast, build, check_prelu, EXAMPLES))
