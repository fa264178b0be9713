"""Helpers shared by operation modules: storage dtypes, quantization checks, broadcasting,
fused activations and quantization arithmetic. Pure functions; no registration here."""
from __future__ import annotations

import math
from typing import Callable, Iterable, Sequence

import numpy as np

from ..errors import check, fail
from ..hal.enums import FusedActivationFunc, OperandLifeTime, OperandType
from ..hal.dtypes import STORAGE_DTYPE  # noqa: F401  (re-exported for operation modules)
from ..limits import MAX_PRODUCT_MULTIPLY_ADDS, MULTIPLY_ADDS_PER_CHUNK, check_cost, checkpoint
from .registry import OperationContext, Shape
from .signatures import Operand, scalar

T = OperandType

QUANT8_ASYMM_TENSORS = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
FLOAT_AND_QUANT8_TENSORS = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, *QUANT8_ASYMM_TENSORS)
#: The tensor types of the operations that move, pick or compare values whatever they are.
DATA_TENSORS = (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, *QUANT8_ASYMM_TENSORS)

_QUANT_RANGE = {
    T.TENSOR_QUANT8_ASYMM: (0, 255), T.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
    T.TENSOR_QUANT8_SYMM: (-127, 127), T.TENSOR_QUANT8_SYMM_PER_CHANNEL: (-127, 127),
    T.TENSOR_QUANT16_ASYMM: (0, 65535), T.TENSOR_QUANT16_SYMM: (-32768, 32767),
}


def quant_range(operand_type: int) -> tuple[int, int]:
    return _QUANT_RANGE[operand_type]


# --- quantization checks ----------------------------------------------------------------

def check_quant_params(ctx: OperationContext, operand, what: str) -> None:
    """Asymmetric 8-bit operands need a positive scale (tensor types validation already
    enforces zero-point ranges); arithmetic kernels rely on it."""
    if operand.type in QUANT8_ASYMM_TENSORS and not operand.scale > 0:
        fail(f"{ctx.name}: {what} (operand {operand.index}) has scale {operand.scale} <= 0")


def check_quant_scales(ctx: OperationContext, inputs: Iterable[int]) -> None:
    """check_quant_params of the inputs at ``inputs``, then of output 0."""
    for i in inputs:
        check_quant_params(ctx, ctx.inputs[i], f"input {i}")
    check_quant_params(ctx, ctx.outputs[0], "output 0")


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


def broadcast(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    """The shape inference of a binary operation broadcasting its first two inputs."""
    return [broadcast_shapes(ctx, shapes[0], shapes[1])]


def broadcasting(ctx: OperationContext, fn: Callable[[np.ndarray, np.ndarray], np.ndarray],
                 a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``fn(a, b)`` for a numpy function broadcasting ``a`` against ``b``; inputs it cannot
    broadcast are the operation's error. Shape inference treats a 0 dimension as unknown, so
    a zero-sized dimension against n > 1 is only caught when the kernel runs."""
    try:
        return fn(a, b)
    except ValueError:
        fail(f"{ctx.name}: input shapes {list(np.shape(a))} and {list(np.shape(b))} do not "
             "broadcast")


def same_shape(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    """The shape inference of an operation whose output has its first input's shape."""
    return [shapes[0]]


# --- fused activations ------------------------------------------------------------------

#: The fused activation parameter of ADD, MUL, FULLY_CONNECTED, ...
ACTIVATION = scalar(T.INT32, frozenset(FusedActivationFunc), "fused activation")


_ACTIVATION_BOUNDS = {FusedActivationFunc.RELU: (0.0, np.inf), FusedActivationFunc.RELU1: (-1.0, 1.0),
                      FusedActivationFunc.RELU6: (0.0, 6.0)}


def activation_bounds(activation: int) -> tuple[float, float]:
    return _ACTIVATION_BOUNDS.get(activation, (-np.inf, np.inf))


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


def activation_value(ctx: OperationContext, i: int, inputs: Sequence[np.ndarray],
                     spec: Operand = ACTIVATION) -> int:
    """A fused activation known at build time, or read from the run-time input and checked
    against its signature's ``spec``."""
    value = ctx.scalar(i)
    if value is None:
        value = int(inputs[i])
        spec.check_value(ctx, i, value)
    return value


def check_same_quantization(ctx: OperationContext, operand, reference, what: str,
                            reference_what: str) -> None:
    """For quantized types: scale and zero point must equal the reference operand's."""
    if operand.type in QUANT8_ASYMM_TENSORS or operand.type in (T.TENSOR_QUANT16_ASYMM,
                                                                 T.TENSOR_QUANT16_SYMM):
        if not (operand.scale == reference.scale and operand.zeroPoint == reference.zeroPoint):
            fail(f"{ctx.name}: {what} (operand {operand.index}) has scale {operand.scale} and "
                 f"zero point {operand.zeroPoint}, expected those of {reference_what} "
                 f"({reference.scale}, {reference.zeroPoint})")


def check_kept_quantization(ctx: OperationContext) -> None:
    """Output 0 keeps input 0's quantization (see check_same_quantization)."""
    check_same_quantization(ctx, ctx.outputs[0], ctx.inputs[0], "output 0", "input 0")


# --- shape inference helpers ------------------------------------------------------------

def merge_dims(ctx: OperationContext, a: int, b: int, what: str) -> int:
    """Two sizes of one dimension (0: unknown) that must agree."""
    if not (a == 0 or b == 0 or a == b):
        fail(f"{ctx.name}: {what}: sizes {a} and {b} differ")
    return a or b


def bind_size(ctx: OperationContext, sizes: dict[str, int], name: str, size: int, who: str,
              axis: int, exact: bool = False) -> None:
    """Bind the named size ``name`` (batch, num_units ...) to ``size``, the size of
    dimension ``axis`` of ``who`` (an input), or check it against the size bound before.
    A 0 is an unknown size and binds nothing unless ``exact``: the actual shapes of a run,
    where it is a zero size, which the others must have too."""
    if (size or exact) and sizes.setdefault(name, size) != size:
        fail(f"{ctx.name}: {who} has {name} {size} in dimension {axis}, expected {sizes[name]}")


def agreed_size(ctx: OperationContext, shapes: Sequence[Shape], what: str,
                dims: Sequence[tuple[int, int]], size: int | None = None, exact: bool = False) -> int:
    """The size ``what`` that dimension ``axis`` of each input ``(i, axis)`` in ``dims``
    must have (``size`` too, unless None), or 0 while none is known; inputs without a shape
    are skipped (see bind_size for ``exact``)."""
    sizes = {} if size is None or not (size or exact) else {what: size}
    for i, axis in dims:
        if shapes[i] is not None:
            bind_size(ctx, sizes, what, shapes[i][axis], f"input {i} (operand {ctx.inputs[i].index})",
                      axis, exact)
    return sizes.get(what, 0)


def declared_shape(operand) -> Shape:
    """An operand's declared shape for shape inference at validation (None: unknown rank)."""
    return tuple(operand.dimensions) if operand.dimensions else None


def has_value(operand) -> bool | None:
    """Whether an optional input has a value: a NO_VALUE operand has none, a constant or a
    temporary has one, and a subgraph input (None) has one unless the request omits it."""
    if operand.is_omitted:
        return False
    return None if operand.lifetime == OperandLifeTime.SUBGRAPH_INPUT else True


def constant_vector(ctx: OperationContext, i: int) -> np.ndarray | None:
    """The value of constant tensor input i, flattened; None when only known at run time."""
    value = ctx.inputs[i].value
    return None if value is None else value.reshape(-1)


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


def quantize_f32(real: np.ndarray, operand) -> np.ndarray:
    """Real values to ``operand``'s quantized type as the box and region operations convert
    them (unlike quantize_to): ``round(real / scale + zero point)`` in single precision,
    halves away from zero, saturated; NaN maps to the zero point."""
    q = round_half_away(real / np.float32(operand.scale) + np.float32(operand.zeroPoint))
    return np.clip(np.nan_to_num(q, nan=operand.zeroPoint), *quant_range(operand.type)).astype(
        STORAGE_DTYPE[operand.type])


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


def matrix_product(a: np.ndarray, b: np.ndarray, what: str) -> np.ndarray:
    """``a @ b`` (``a`` [..., m, k], ``b`` [..., k, n]) for an operation named ``what``: held
    to MAX_PRODUCT_MULTIPLY_ADDS, and computed some rows of ``a`` at a time when large, with
    a checkpoint between them (at least 16 rows, so that BLAS multiplies matrices, not rows)."""
    *stack, rows, inner = a.shape
    per_row = math.prod(np.broadcast_shapes(tuple(stack), b.shape[:-2])) * inner * b.shape[-1]
    check_cost(rows * per_row, MAX_PRODUCT_MULTIPLY_ADDS, "multiply-adds", what)
    chunk = max(16, MULTIPLY_ADDS_PER_CHUNK // max(1, per_row))
    if rows <= chunk:
        return a @ b
    product = np.empty((*np.broadcast_shapes(tuple(stack), b.shape[:-2]), rows, b.shape[-1]),
                       np.result_type(a, b))
    for start in range(0, rows, chunk):
        checkpoint()
        product[..., start:start + chunk, :] = a[..., start:start + chunk, :] @ b
    return product
