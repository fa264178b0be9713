"""ADD, SUB, MUL and DIV: two broadcast tensors of one type and a fused activation
(NONE only for TENSOR_INT32). Quantized operands compute on real values and requantize to
the output, whose scale MUL requires to exceed the product of the input scales (the
quantized kernel's rescale factor must be below one).

DIV: float division follows IEEE (x/0 is +-inf or NaN); TENSOR_INT32 division is floor
division (-5 // 2 == -3). An int32 zero divisor has no defined result, yet the execution
must succeed (the conformance suite runs it and ignores the value): it yields 0, and
INT32_MIN // -1 wraps to INT32_MIN as it would in two's complement.

Kernels are specialised at build time: with a constant activation (the usual case) the
float and int32 kernels are one numpy call, because they run in the hot path of WHILE
loops (``i = i + 1`` on TENSOR_INT32 [1]).
"""
from __future__ import annotations

from functools import partial
from typing import Callable

import numpy as np

from ..errors import check
from ..hal.enums import FusedActivationFunc, OperandType as T, OperationType as Op
from .common import (ACTIVATION, QUANT8_ASYMM_TENSORS, activation_bounds, activation_value,
                     broadcast, broadcasting, check_quant_scales, dequantize,
                     quantized_activation_range, requantize)
from .registry import Kernel, OperationContext, OperationDef, register, with_binary_ufunc
from .signatures import Signature, same_as, scalar, tensor

BinaryFn = Callable[[np.ndarray, np.ndarray], np.ndarray]

RANK = (0, 4)
NO_ACTIVATION = scalar(T.INT32, frozenset({FusedActivationFunc.NONE}), "fused activation")


def signatures(non_int_types) -> tuple[Signature, ...]:
    """The types besides TENSOR_INT32 take any fused activation; TENSOR_INT32 only NONE."""
    return tuple(Signature(inputs=(tensor(types, rank=RANK), same_as(0, rank=RANK), activation),
                           outputs=(same_as(0),))
                 for types, activation in ((non_int_types, ACTIVATION),
                                           ((T.TENSOR_INT32,), NO_ACTIVATION)))


FLOAT_AND_QUANT = signatures((T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM,
                              T.TENSOR_QUANT8_ASYMM_SIGNED))
FLOAT = signatures((T.TENSOR_FLOAT32, T.TENSOR_FLOAT16))


def check_arithmetic(ctx: OperationContext) -> None:
    check_quant_scales(ctx, (0, 1))


def check_mul(ctx: OperationContext) -> None:
    check_arithmetic(ctx)
    in0, in1, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    if in0.type in QUANT8_ASYMM_TENSORS:
        check(out.scale > in0.scale * in1.scale,
              f"{ctx.name}: output 0 (operand {out.index}) scale {out.scale} must exceed the "
              f"product of the input scales {in0.scale} * {in1.scale}")


def build_arithmetic(ctx: OperationContext, float_fn: BinaryFn, int_fn: BinaryFn) -> Kernel:
    """The kernel of an arithmetic operation. ``int_fn`` computes TENSOR_INT32 results
    (wrapping like C int32); ``float_fn`` computes float results and the real-valued
    results of quantized operands."""
    tensor_type = ctx.inputs[0].type
    if tensor_type == T.TENSOR_INT32:
        return _int_kernel(ctx, int_fn)
    if tensor_type in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16):
        return _float_kernel(ctx, float_fn)
    return _quant_kernel(ctx, float_fn)


def _int_kernel(ctx: OperationContext, int_fn: BinaryFn) -> Kernel:
    # int32 arrays wrap silently in numpy (no warning), as int32 arithmetic does in C.
    if ctx.scalar(2) is not None:      # validation accepted it, so it is NONE
        def int_kernel(a, b, _activation):
            return (broadcasting(ctx, int_fn, a, b),)
        return with_binary_ufunc(int_kernel, int_fn)

    def int_kernel_checked(a, b, activation):
        activation_value(ctx, 2, (a, b, activation), NO_ACTIVATION)
        return (broadcasting(ctx, int_fn, a, b),)
    return int_kernel_checked


def _float_kernel(ctx: OperationContext, float_fn: BinaryFn) -> Kernel:
    static_activation = ctx.scalar(2)

    # inf/nan follow IEEE, as on a device: kernels run with floating-point errors ignored
    # (registry.py, "Floating-point errors").
    if static_activation == FusedActivationFunc.NONE:
        def float_kernel(a, b, _activation):
            return (broadcasting(ctx, float_fn, a, b),)
        return with_binary_ufunc(float_kernel, float_fn)

    static_bounds = None if static_activation is None else activation_bounds(static_activation)

    def float_clamped_kernel(a, b, activation):
        low, high = static_bounds or activation_bounds(activation_value(ctx, 2, (a, b, activation)))
        result = broadcasting(ctx, float_fn, a, b)
        return (np.clip(result, low, high).astype(result.dtype, copy=False),)
    return float_clamped_kernel


def _quant_kernel(ctx: OperationContext, float_fn: BinaryFn) -> Kernel:
    in0, in1, out = ctx.inputs[0], ctx.inputs[1], ctx.outputs[0]
    check(out.scale > 0, f"{ctx.name}: output 0 (operand {out.index}) scale must be > 0")
    static_activation = ctx.scalar(2)
    static_range = (None if static_activation is None else
                    quantized_activation_range(static_activation, out.scale, out.zeroPoint, out.type))

    def quant_kernel(a, b, activation):
        qmin, qmax = static_range or quantized_activation_range(
            activation_value(ctx, 2, (a, b, activation)), out.scale, out.zeroPoint, out.type)
        real = broadcasting(ctx, float_fn, dequantize(a, in0.scale, in0.zeroPoint),
                            dequantize(b, in1.scale, in1.zeroPoint))
        return (requantize(real, out.scale, out.zeroPoint, qmin, qmax, a.dtype),)
    return quant_kernel


# numpy gives 0 for x // 0 (its divide-by-zero warning is off while kernels run, see
# registry.py), and floor_divide wraps INT32_MIN // -1.
for operation, table, float_fn, int_fn, check_op in (
        (Op.ADD, FLOAT_AND_QUANT, np.add, np.add, check_arithmetic),
        (Op.SUB, FLOAT_AND_QUANT, np.subtract, np.subtract, check_arithmetic),
        (Op.MUL, FLOAT_AND_QUANT, np.multiply, np.multiply, check_mul),
        (Op.DIV, FLOAT, np.divide, np.floor_divide, check_arithmetic)):
    register(OperationDef(operation, table, broadcast,
                          partial(build_arithmetic, float_fn=float_fn, int_fn=int_fn), check_op,
                          zero_sized_inputs=True))
