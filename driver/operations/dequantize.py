"""DEQUANTIZE: quantized values to floats, ``(q - zeroPoint) * scale`` in single precision.
TENSOR_QUANT8_SYMM_PER_CHANNEL inputs take each channel's scale along channelDim."""
from __future__ import annotations

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from .common import same_shape
from .registry import Kernel, OperationContext, OperationDef, register
from .signatures import Signature, tensor

INPUT_TYPES = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM,
               T.TENSOR_QUANT8_SYMM_PER_CHANNEL)
SIGNATURES = (Signature(inputs=(tensor(INPUT_TYPES, rank=(1, 4)),),
                        outputs=(tensor((T.TENSOR_FLOAT16, T.TENSOR_FLOAT32)),)),)


def check_channels(ctx: OperationContext) -> None:
    inp = ctx.inputs[0]
    if inp.type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        check(inp.channelQuant is not None,
              f"{ctx.name}: input 0 (operand {inp.index}) has no per-channel quantization")


def build(ctx: OperationContext) -> Kernel:
    inp = ctx.inputs[0]
    dtype = np.float32 if ctx.outputs[0].type == T.TENSOR_FLOAT32 else np.float16
    if inp.type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        scales = np.asarray(inp.channelQuant.scales, dtype=np.float32)
        channel_dim = inp.channelQuant.channelDim

        def per_channel_kernel(x):
            check(channel_dim < x.ndim and x.shape[channel_dim] == scales.size,
                  f"{ctx.name}: {scales.size} channel scales for dimension {channel_dim} of "
                  f"shape {list(x.shape)}")
            shape = [1] * x.ndim
            shape[channel_dim] = scales.size
            with np.errstate(over="ignore"):     # float16 results may round to inf
                return ((x.astype(np.float32) * scales.reshape(shape)).astype(dtype),)
        return per_channel_kernel

    scale, zero_point = np.float32(inp.scale), np.float32(inp.zeroPoint)

    def kernel(x):
        with np.errstate(over="ignore"):
            return (((x.astype(np.float32) - zero_point) * scale).astype(dtype),)
    return kernel


register(OperationDef(OperationType.DEQUANTIZE, SIGNATURES, same_shape, build, check_channels,
                      zero_sized_inputs=True))
