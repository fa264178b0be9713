"""FULLY_CONNECTED: ``activation(input * weights' + bias)``.

The input (rank 2 to 4) is flattened to [batch_size, input_size], where input_size is the
second dimension of the weights [num_units, input_size]; the output is
[batch_size, num_units]. Quantized inputs take a TENSOR_INT32 bias whose scale is
input_scale * weights_scale and whose zero point is 0.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from ._fixed_point import check_bias, product_scale
from .common import (ACTIVATION, QUANT8_ASYMM_TENSORS, activation_bounds, activation_value,
                     check_quant_params, declared_shape, matrix_product, merge_dims,
                     quantized_activation_range, round_half_away)
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Example, ExampleOperand, Signature, same_as, tensor

INPUT, WEIGHTS, BIAS, FUSED = range(4)
#: Float inputs take a bias of their type; quantized inputs a TENSOR_INT32 bias.
SIGNATURES = tuple(Signature(inputs=(tensor(types, rank=(2, 4)),
                                     same_as(INPUT, rank=(2, 2), name="weights"), bias, ACTIVATION),
                             outputs=(same_as(INPUT),))
                   for types, bias in (((T.TENSOR_FLOAT32, T.TENSOR_FLOAT16),
                                        same_as(INPUT, rank=(1, 1), name="bias")),
                                       (QUANT8_ASYMM_TENSORS,
                                        tensor((T.TENSOR_INT32,), rank=(1, 1), name="bias"))))

#: A quantized layer of 3 units over 4 features, with constant weights and bias.
EXAMPLES = (Example(inputs=(ExampleOperand(T.TENSOR_QUANT8_ASYMM, (2, 4), scale=0.5, zero_point=128),
                            ExampleOperand(T.TENSOR_QUANT8_ASYMM, (3, 4), scale=0.25, zero_point=120,
                                           constant=[[100, 130, 120, 90]] * 3),
                            ExampleOperand(T.TENSOR_INT32, (3,), scale=0.125, constant=[8, -8, 0]),
                            ExampleOperand(T.INT32, constant=1)),
                    outputs=((T.TENSOR_QUANT8_ASYMM, 1.0, 100),)),)


def check_fully_connected(ctx: OperationContext) -> None:
    if ctx.inputs[INPUT].type in QUANT8_ASYMM_TENSORS:
        _validate_quantization(ctx)
    infer_shapes(ctx, [declared_shape(ctx.inputs[i]) for i in (INPUT, WEIGHTS, BIAS)])


def _validate_quantization(ctx: OperationContext) -> None:
    inp, weights = ctx.inputs[INPUT], ctx.inputs[WEIGHTS]
    check_quant_params(ctx, inp, "input 0")
    check_quant_params(ctx, weights, "input 1 (weights)")
    check_quant_params(ctx, ctx.outputs[0], "output 0")
    check_bias(ctx, BIAS, inp.scale, weights.scale, "weights")


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    inp, weights, bias = shapes[INPUT], shapes[WEIGHTS], shapes[BIAS]
    num_units, input_size = weights if weights is not None else (0, 0)
    if bias is not None:
        num_units = merge_dims(ctx, num_units, bias[0], "num_units of weights and bias")
    batch = 0
    if inp is not None and input_size and all(inp):
        elements = math.prod(inp)
        check(elements % input_size == 0,
              f"{ctx.name}: input 0 has {elements} elements, not a multiple of input_size {input_size}")
        batch = elements // input_size
    return [(batch, num_units)]


def _check_run_shapes(ctx: OperationContext, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> None:
    """Run-time shape checks that inference could not make (0 there means unknown, here
    it means zero-sized)."""
    num_units, input_size = w.shape
    check(num_units > 0 and input_size > 0,
          f"{ctx.name}: weights shape {list(w.shape)} has a zero dimension")
    check(b.shape == (num_units,),
          f"{ctx.name}: bias shape {list(b.shape)} does not match num_units {num_units}")
    check(x.size % input_size == 0,
          f"{ctx.name}: input 0 has {x.size} elements, not a multiple of input_size {input_size}")


def build(ctx: OperationContext) -> Kernel:
    if ctx.inputs[INPUT].type in QUANT8_ASYMM_TENSORS:
        return _build_quantized(ctx)
    return _build_float(ctx)


def _build_float(ctx: OperationContext) -> Kernel:
    dtype = np.float32 if ctx.inputs[INPUT].type == T.TENSOR_FLOAT32 else np.float16
    weights, bias = ctx.inputs[WEIGHTS].value, ctx.inputs[BIAS].value
    # float16 is computed in single precision and rounded once, as the reference does.
    const_wt = None if weights is None else np.ascontiguousarray(weights.astype(np.float32).T)
    const_bias = None if bias is None else bias.astype(np.float32)
    static_activation = ctx.scalar(FUSED)
    static_bounds = None if static_activation is None else activation_bounds(static_activation)

    def kernel(x, w, b, activation):
        _check_run_shapes(ctx, x, w, b)
        wt = const_wt if const_wt is not None else w.astype(np.float32).T
        bias32 = const_bias if const_bias is not None else b.astype(np.float32)
        with np.errstate(all="ignore"):
            x32 = x.reshape(-1, w.shape[1]).astype(np.float32, copy=False)
            result = matrix_product(x32, wt, ctx.name) + bias32
        low, high = (static_bounds if static_bounds is not None else
                     activation_bounds(activation_value(ctx, FUSED, (x, w, b, activation))))
        if low != -np.inf or high != np.inf:
            np.clip(result, low, high, out=result)
        with np.errstate(over="ignore"):     # float16 results may round to inf
            return (result.astype(dtype, copy=False),)
    return kernel


def _build_quantized(ctx: OperationContext) -> Kernel:
    inp, weights_info, out = ctx.inputs[INPUT], ctx.inputs[WEIGHTS], ctx.outputs[0]
    # Integer products summed in double precision are exact (|sum| stays far below 2**53)
    # and let numpy use its BLAS matrix product.
    const_wt = (None if weights_info.value is None else
                np.ascontiguousarray((weights_info.value.astype(np.float64) - weights_info.zeroPoint).T))
    multiplier = product_scale(inp.scale, weights_info.scale) / out.scale
    static_activation = ctx.scalar(FUSED)
    static_range = (None if static_activation is None else
                    quantized_activation_range(static_activation, out.scale, out.zeroPoint, out.type))

    def kernel(x, w, b, activation):
        _check_run_shapes(ctx, x, w, b)
        wt = const_wt if const_wt is not None else (w.astype(np.float64) - weights_info.zeroPoint).T
        qmin, qmax = (static_range if static_range is not None else quantized_activation_range(
            activation_value(ctx, FUSED, (x, w, b, activation)), out.scale, out.zeroPoint, out.type))
        shifted = x.reshape(-1, w.shape[1]).astype(np.float64) - inp.zeroPoint
        accumulator = matrix_product(shifted, wt, ctx.name) + b
        q = round_half_away(accumulator * multiplier) + out.zeroPoint
        return (np.clip(q, qmin, qmax).astype(x.dtype),)
    return kernel


register(OperationDef(OperationType.FULLY_CONNECTED, SIGNATURES, infer_shapes, build,
                      check_fully_connected, EXAMPLES, zero_sized_inputs=True))
