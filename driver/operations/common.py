"""Helpers shared by operation modules: storage dtypes, signature checks, broadcasting,
fused activations and quantization arithmetic. Pure functions; no registration here."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import check
from ..hal.enums import FusedActivationFunc, OperandType
from .registry import OperationContext, Shape

T = OperandType

#: How each operand type is stored in memory (and in run-time slots).
STORAGE_DTYPE: dict[int, np.dtype] = {
    T.FLOAT32: np.dtype(np.float32), T.INT32: np.dtype(np.int32),
    T.UINT32: np.dtype(np.uint32), T.BOOL: np.dtype(np.bool_),
    T.FLOAT16: np.dtype(np.float16),
    T.TENSOR_FLOAT32: np.dtype(np.float32), T.TENSOR_INT32: np.dtype(np.int32),
    T.TENSOR_QUANT8_ASYMM: np.dtype(np.uint8), T.TENSOR_QUANT16_SYMM: np.dtype(np.int16),
    T.TENSOR_FLOAT16: np.dtype(np.float16), T.TENSOR_BOOL8: np.dtype(np.bool_),
    T.TENSOR_QUANT8_SYMM_PER_CHANNEL: np.dtype(np.int8),
    T.TENSOR_QUANT16_ASYMM: np.dtype(np.uint16), T.TENSOR_QUANT8_SYMM: np.dtype(np.int8),
    T.TENSOR_QUANT8_ASYMM_SIGNED: np.dtype(np.int8),
    T.TENSOR_OEM_BYTE: np.dtype(np.uint8), T.OEM: np.dtype(np.uint8),
}

FLOAT_TENSORS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
QUANT8_ASYMM_TENSORS = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)

_QUANT_RANGE = {
    T.TENSOR_QUANT8_ASYMM: (0, 255), T.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
    T.TENSOR_QUANT8_SYMM: (-127, 127), T.TENSOR_QUANT8_SYMM_PER_CHANNEL: (-127, 127),
    T.TENSOR_QUANT16_ASYMM: (0, 65535), T.TENSOR_QUANT16_SYMM: (-32768, 32767),
}


def quant_range(operand_type: int) -> tuple[int, int]:
    return _QUANT_RANGE[operand_type]


# --- signature checks -------------------------------------------------------------------

def check_counts(ctx: OperationContext, inputs: int | Sequence[int], outputs: int) -> None:
    allowed = (inputs,) if isinstance(inputs, int) else tuple(inputs)
    check(len(ctx.inputs) in allowed,
          f"{ctx.name}: expected {' or '.join(map(str, allowed))} inputs, got {len(ctx.inputs)}")
    check(len(ctx.outputs) == outputs,
          f"{ctx.name}: expected {outputs} outputs, got {len(ctx.outputs)}")


def check_input_type(ctx: OperationContext, i: int, allowed: Sequence[int]) -> None:
    operand = ctx.inputs[i]
    check(operand.type in allowed,
          f"{ctx.name}: input {i} (operand {operand.index}) has type {_name(operand.type)},"
          f" expected {' or '.join(_name(t) for t in allowed)}")


def check_same_type(ctx: OperationContext, what: str, operand, expected_type: int) -> None:
    check(operand.type == expected_type,
          f"{ctx.name}: {what} (operand {operand.index}) has type {_name(operand.type)},"
          f" expected {_name(expected_type)}")


def check_not_omitted(ctx: OperationContext) -> None:
    for i, operand in enumerate(ctx.inputs):
        check(not operand.is_omitted, f"{ctx.name}: input {i} (operand {operand.index}) has no value")


def check_rank_at_most(ctx: OperationContext, i: int, max_rank: int) -> None:
    dims = ctx.inputs[i].dimensions
    check(len(dims) <= max_rank,
          f"{ctx.name}: input {i} (operand {ctx.inputs[i].index}) has rank {len(dims)} > {max_rank}")


def check_quant_params(ctx: OperationContext, operand, what: str) -> None:
    """Asymmetric 8-bit operands need a positive scale (tensor types validation already
    enforces zero-point ranges); arithmetic kernels rely on it."""
    if operand.type in QUANT8_ASYMM_TENSORS:
        check(operand.scale > 0, f"{ctx.name}: {what} (operand {operand.index}) has scale {operand.scale} <= 0")


def _name(operand_type: int) -> str:
    try:
        return OperandType(operand_type).name
    except ValueError:
        return str(operand_type)


# --- shapes -----------------------------------------------------------------------------

def broadcast_shapes(ctx: OperationContext, a: Shape, b: Shape) -> Shape:
    """NumPy-style broadcasting (trailing dimensions) with unknown dimensions (0) and ranks
    (None). An unknown dimension against 1 stays unknown; against n>1 it becomes n."""
    if a is None or b is None:
        return None
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + tuple(a)
    b = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for axis, (x, y) in enumerate(zip(a, b)):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        elif x == 0 or y == 0:
            out.append(x or y)
        else:
            check(False, f"{ctx.name}: dimensions {x} and {y} of axis {axis} do not broadcast")
    return tuple(out)


def shape_known(shape: Shape) -> bool:
    return shape is not None and all(d > 0 for d in shape)


# --- fused activations ------------------------------------------------------------------

def check_activation(ctx: OperationContext, i: int, *, allow: Sequence[int] | None = None) -> None:
    check_input_type(ctx, i, (T.INT32,))
    value = ctx.scalar(i)
    if value is not None:
        allowed = tuple(FusedActivationFunc) if allow is None else tuple(allow)
        check(value in allowed, f"{ctx.name}: fused activation {value} is not one of "
              f"{', '.join(FusedActivationFunc(a).name for a in allowed)}")


def activation_bounds(activation: int) -> tuple[float, float]:
    if activation == FusedActivationFunc.RELU:
        return 0.0, np.inf
    if activation == FusedActivationFunc.RELU1:
        return -1.0, 1.0
    if activation == FusedActivationFunc.RELU6:
        return 0.0, 6.0
    return -np.inf, np.inf


def apply_float_activation(x: np.ndarray, activation: int) -> np.ndarray:
    if activation == FusedActivationFunc.NONE:
        return x
    low, high = activation_bounds(activation)
    return np.clip(x, low, high, out=x) if x.flags.writeable else np.clip(x, low, high)


def quantized_activation_range(activation: int, scale: float, zero_point: int,
                               operand_type: int) -> tuple[int, int]:
    """The clamp of a fused activation, in the output's quantized domain."""
    qmin, qmax = quant_range(operand_type)
    low, high = activation_bounds(activation)
    if low != -np.inf:
        qmin = max(qmin, zero_point + int(round(low / scale)))
    if high != np.inf:
        qmax = min(qmax, zero_point + int(round(high / scale)))
    return qmin, qmax


def dequantize(x: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    return (x.astype(np.float64) - zero_point) * scale


def requantize(real: np.ndarray, scale: float, zero_point: int, qmin: int, qmax: int,
               dtype: np.dtype) -> np.ndarray:
    """Round half away from zero, as the reference kernels do, then clamp."""
    q = np.sign(real) * np.floor(np.abs(real) / scale + 0.5) + zero_point
    return np.clip(q, qmin, qmax).astype(dtype)


def activation_value(ctx: OperationContext, i: int, inputs: Sequence[np.ndarray]) -> int:
    """A fused activation known at build time, or read from the run-time input."""
    value = ctx.scalar(i)
    if value is None:
        value = int(inputs[i])
        check(value in tuple(FusedActivationFunc),
              f"{ctx.name}: fused activation {value} is not a FusedActivationFunc")
    return value
