"""Helpers shared by operation modules: storage dtypes, signature checks, broadcasting,
fused activations and quantization arithmetic. Pure functions; no registration here."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..errors import check, fail
from ..hal.enums import FusedActivationFunc, OperandType
from ..hal.dtypes import STORAGE_DTYPE  # noqa: F401  (re-exported for operation modules)
from .registry import OperationContext, Shape

T = OperandType

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
    # Messages are built only on failure: these checks run for every operation validated.
    input_count = len(ctx.inputs)
    count_allowed = input_count == inputs if isinstance(inputs, int) else input_count in inputs
    if not count_allowed:
        allowed = (inputs,) if isinstance(inputs, int) else tuple(inputs)
        fail(f"{ctx.name}: expected {' or '.join(map(str, allowed))} inputs, got {input_count}")
    if len(ctx.outputs) != outputs:
        fail(f"{ctx.name}: expected {outputs} outputs, got {len(ctx.outputs)}")


def check_input_type(ctx: OperationContext, i: int, allowed: Sequence[int]) -> None:
    operand = ctx.inputs[i]
    if operand.type not in allowed:     # the message is only worth building on failure
        check(False, f"{ctx.name}: input {i} (operand {operand.index}) has type "
                     f"{_name(operand.type)}, expected {' or '.join(_name(t) for t in allowed)}")


def check_same_type(ctx: OperationContext, what: str, operand, expected_type: int) -> None:
    if operand.type != expected_type:
        check(False, f"{ctx.name}: {what} (operand {operand.index}) has type "
                     f"{_name(operand.type)}, expected {_name(expected_type)}")


def check_not_omitted(ctx: OperationContext) -> None:
    for i, operand in enumerate(ctx.inputs):
        if operand.is_omitted:
            fail(f"{ctx.name}: input {i} (operand {operand.index}) has no value")


def check_rank_at_most(ctx: OperationContext, i: int, max_rank: int) -> None:
    dims = ctx.inputs[i].dimensions
    if len(dims) > max_rank:
        fail(f"{ctx.name}: input {i} (operand {ctx.inputs[i].index}) has rank {len(dims)} > {max_rank}")


def check_quant_params(ctx: OperationContext, operand, what: str) -> None:
    """Asymmetric 8-bit operands need a positive scale (tensor types validation already
    enforces zero-point ranges); arithmetic kernels rely on it."""
    if operand.type in QUANT8_ASYMM_TENSORS and not operand.scale > 0:
        fail(f"{ctx.name}: {what} (operand {operand.index}) has scale {operand.scale} <= 0")


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

_ACTIVATIONS = tuple(FusedActivationFunc)


def check_activation(ctx: OperationContext, i: int, *, allow: Sequence[int] | None = None) -> None:
    check_input_type(ctx, i, (T.INT32,))
    value = ctx.scalar(i)
    if value is not None:
        allowed = _ACTIVATIONS if allow is None else tuple(allow)
        if value not in allowed:
            fail(f"{ctx.name}: fused activation {value} is not one of "
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
        qmin = max(qmin, zero_point + _round_scalar(low, scale))
    if high != np.inf:
        qmax = min(qmax, zero_point + _round_scalar(high, scale))
    return qmin, qmax


#: Stands for a quotient past float32's range: beyond every quantized value, so the clamp
#: it bounds is the type's own.
_BEYOND_ANY_QUANTIZED = 1 << 40


def _round_scalar(value: float, scale: float) -> int:
    """std::round(value / scale) in single precision (Python's round() goes to even). A
    valid scale may be so small (1e-45, say) that the quotient overflows to infinity."""
    with np.errstate(over="ignore"):
        quotient = float(np.float32(value) / np.float32(scale))
    if math.isinf(quotient):
        return int(math.copysign(_BEYOND_ANY_QUANTIZED, quotient))
    return int(math.copysign(math.floor(abs(quotient) + 0.5), quotient))


def dequantize(x: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    return (x.astype(np.float64) - zero_point) * scale


def requantize(real: np.ndarray, scale: float, zero_point: int, qmin: int, qmax: int,
               dtype: np.dtype) -> np.ndarray:
    """Round half away from zero, as the reference kernels do, then clamp."""
    q = round_half_away(real / scale) + zero_point
    return np.clip(q, qmin, qmax).astype(dtype)


def activation_value(ctx: OperationContext, i: int, inputs: Sequence[np.ndarray]) -> int:
    """A fused activation known at build time, or read from the run-time input."""
    value = ctx.scalar(i)
    if value is None:
        value = int(inputs[i])
        check(value in tuple(FusedActivationFunc),
              f"{ctx.name}: fused activation {value} is not a FusedActivationFunc")
    return value


# --- more signature checks --------------------------------------------------------------

def check_output_type(ctx: OperationContext, j: int, allowed: Sequence[int]) -> None:
    operand = ctx.outputs[j]
    if operand.type not in allowed:
        fail(f"{ctx.name}: output {j} (operand {operand.index}) has type {_name(operand.type)},"
             f" expected {' or '.join(_name(t) for t in allowed)}")


def check_scalar_input(ctx: OperationContext, i: int, scalar_type: int) -> None:
    check_input_type(ctx, i, (scalar_type,))


def check_rank_in(ctx: OperationContext, i: int, low: int, high: int | None = None) -> None:
    """A known input rank (declared dimensions not empty) lies in [low, high]."""
    dims = ctx.inputs[i].dimensions
    if not dims:
        return
    rank = len(dims)
    if rank < low:
        fail(f"{ctx.name}: input {i} (operand {ctx.inputs[i].index}) has rank {rank} < {low}")
    if high is not None and rank > high:
        fail(f"{ctx.name}: input {i} (operand {ctx.inputs[i].index}) has rank {rank} > {high}")


def check_same_quantization(ctx: OperationContext, operand, reference, what: str,
                            reference_what: str) -> None:
    """For quantized types: scale and zero point must equal the reference operand's."""
    if operand.type in QUANT8_ASYMM_TENSORS or operand.type in (T.TENSOR_QUANT16_ASYMM,
                                                                 T.TENSOR_QUANT16_SYMM):
        if not (operand.scale == reference.scale and operand.zeroPoint == reference.zeroPoint):
            fail(f"{ctx.name}: {what} (operand {operand.index}) has scale {operand.scale} and "
                 f"zero point {operand.zeroPoint}, expected those of {reference_what} "
                 f"({reference.scale}, {reference.zeroPoint})")


# --- shape inference helpers ------------------------------------------------------------

def check_shape_rank(ctx: OperationContext, shape: Shape, what: str, low: int = 0,
                     high: int | None = None) -> None:
    """An inferred-from shape of known rank has low <= rank <= high."""
    if shape is None:
        return
    if len(shape) < low:
        fail(f"{ctx.name}: {what} has rank {len(shape)} < {low}")
    if high is not None and len(shape) > high:
        fail(f"{ctx.name}: {what} has rank {len(shape)} > {high}")


def merge_dims(ctx: OperationContext, a: int, b: int, what: str) -> int:
    """Two sizes of one dimension (0: unknown) that must agree."""
    if not (a == 0 or b == 0 or a == b):
        fail(f"{ctx.name}: {what}: sizes {a} and {b} differ")
    return a or b


def constant_vector(ctx: OperationContext, i: int) -> np.ndarray | None:
    """The value of constant tensor input i, flattened; None when only known at run time."""
    value = ctx.inputs[i].value
    return None if value is None else value.reshape(-1)


# --- run-time limits --------------------------------------------------------------------

#: No kernel allocates a result larger than this; shapes that ask for more (a FILL or TILE
#: sized by run-time values) are refused with RESOURCE_EXHAUSTED instead. It also bounds
#: the time an execution takes, which the fuzz harness holds to its loop timeout plus a
#: second: at 256 MiB, two FILLs of 115 million float16 values and a FLOOR of one took
#: over a second (float16 arithmetic runs through float32 loops); at 32 MiB, a tenth.
MAX_RESULT_BYTES = 32 * 1024 * 1024


#: The highest rank of a result whose rank comes from the length of a vector (FILL's
#: shape, RESHAPE's target, TILE's multiples): numpy holds at most 32 dimensions (64 from
#: numpy 2), and a length read from a model or request may be anything up to 2**32-1.
MAX_RESULT_RANK = 32


def check_result_rank(ctx: OperationContext, rank: int, what: str) -> None:
    check(rank <= MAX_RESULT_RANK,
          f"{ctx.name}: {what} gives the output rank {rank}, over this driver's {MAX_RESULT_RANK}")


def check_result_size(ctx: OperationContext, shape: Sequence[int], dtype: np.dtype) -> None:
    from ..errors import ResourceError
    count = 1
    for d in shape:
        count *= int(d)
    if count * np.dtype(dtype).itemsize > MAX_RESULT_BYTES:
        raise ResourceError(f"{ctx.name}: result shape {list(shape)} needs more than "
                            f"{MAX_RESULT_BYTES} bytes")


# --- quantization -----------------------------------------------------------------------

def real_values_f32(x: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """Dequantized values computed as the reference does, in single precision."""
    return (x.astype(np.float32) - np.float32(zero_point)) * np.float32(scale)


def round_half_away(x: np.ndarray) -> np.ndarray:
    """std::round: halves round away from zero (numpy's rint rounds them to even).
    Exact: x - trunc(x) is representable, unlike |x| + 0.5."""
    whole = np.trunc(x)
    return whole + np.copysign(np.abs(x - whole) >= 0.5, x)


def quantize_to(real: np.ndarray, scale: float, zero_point: int, operand_type: int,
                dtype: np.dtype) -> np.ndarray:
    """Real values to a quantized type: round half away from zero, add the zero point,
    saturate to the type's range. NaN maps to the zero point."""
    qmin, qmax = quant_range(operand_type)
    with np.errstate(all="ignore"):
        q = round_half_away(np.asarray(real, dtype=np.float64) / scale)
    # clip saturates infinities; NaN has no order, so it is mapped first.
    return np.clip(np.nan_to_num(q, nan=0.0) + zero_point, qmin, qmax).astype(dtype)


def requantize_values(x: np.ndarray, scale: float, zero_point: int, out_scale: float,
                      out_zero_point: int, out_type: int) -> np.ndarray:
    """Stored values of one quantization expressed in another, as the reference requantizes
    (MAXIMUM, MINIMUM, SELECT): a single-precision real value, then double precision."""
    qmin, qmax = quant_range(out_type)
    real = ((x.astype(np.int32) - zero_point).astype(np.float32) * np.float32(scale)).astype(np.float64)
    q = round_half_away(real / np.float32(out_scale) + out_zero_point)
    return np.clip(q, qmin, qmax).astype(STORAGE_DTYPE[out_type])


def normalize_axis(ctx: OperationContext, axis: int, rank: int, what: str = "axis") -> int:
    """An axis in [-rank, rank) as a non-negative index."""
    if not -rank <= axis < rank:
        fail(f"{ctx.name}: {what} {axis} is out of range for rank {rank}")
    return axis % rank
