"""The integer fixed-point arithmetic of the reference's quantized kernels (gemmlowp's and
TFLite's), and the rule relating a bias's scale to the scales it multiplies. Pure
functions; no registration here.

A quantized kernel sums integer products into a 32-bit accumulator, then scales it by a
real multiplier (input scale * filter scale / output scale, say) held as a 31-bit
significand and a power-of-two exponent. The rounding is the reference's, bit for bit: a
saturating rounding doubling high multiplication (to nearest, a half towards +infinity:
-1.5 gives -1), then a rounding division by a power of two (to nearest, a half away from
zero), so that a power-of-two multiplier may round twice. L2_NORMALIZATION's inverse
square root is computed in the same arithmetic.

Values are int64 numpy arrays (or numbers) holding int32 values, so that products and sums
are exact before they are rounded, saturated or wrapped the way int32 code would; every
function broadcasts.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import check
from .registry import OperationContext

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1

#: The reference's tolerance between a bias's scale and input_scale * filter_scale.
BIAS_SCALE_RELATIVE_TOLERANCE = 1e-6


# --- scales and multipliers ----------------------------------------------------------------

def product_scale(input_scale: float, filter_scale: float) -> float:
    """input_scale * filter_scale as the reference computes it: a single-precision product
    (infinite past float range, which quantize_multiplier refuses)."""
    with np.errstate(over="ignore"):
        return float(np.float32(input_scale) * np.float32(filter_scale))


def check_bias(ctx: OperationContext, i: int, input_scale: float | None = None,
               filter_scale: float | None = None, filter_name: str = "filter") -> None:
    """A quantized bias (input ``i``) has zero point 0 and, given the scales it multiplies
    (not for a filter quantized per channel), the scale input_scale * filter_scale within
    the reference's tolerance."""
    bias = ctx.inputs[i]
    check(bias.zeroPoint == 0, "{}: input {} (bias, operand {}) zero point {} must be 0",
          ctx.name, i, bias.index, bias.zeroPoint)
    if filter_scale is None:
        return
    product = product_scale(input_scale, filter_scale)
    check(abs(product - bias.scale) <= BIAS_SCALE_RELATIVE_TOLERANCE * min(product, bias.scale),
          "{}: input {} (bias, operand {}) scale {} must equal input_scale * {}_scale = {}",
          ctx.name, i, bias.index, bias.scale, filter_name, product)


def quantize_multiplier(real_multiplier: float, what: str = "a quantized operation") -> tuple[int, int]:
    """(significand, exponent) with real_multiplier ~= significand * 2**(exponent - 31) and
    the significand in [2**30, 2**31): frexp's fraction rounded half away from zero
    (QuantizeMultiplier). A multiplier below 2**-31 flushes to (0, 0), as the reference
    does, rather than shift every bit out. Valid scales may still give an infinite one
    (0.5 / 1e-45 in single precision), which no significand holds: ``what`` (the
    operation) is refused."""
    check(math.isfinite(real_multiplier), "{}: its scales give the multiplier {}, which is "
          "not finite", what, real_multiplier)
    if real_multiplier == 0.0:
        return 0, 0
    fraction, exponent = math.frexp(real_multiplier)
    significand = int(math.copysign(math.floor(abs(fraction) * (1 << 31) + 0.5), fraction))
    if significand == 1 << 31:          # the fraction rounded up to 1
        significand, exponent = significand // 2, exponent + 1
    return (0, 0) if exponent < -31 else (significand, exponent)


# --- int32 arithmetic ----------------------------------------------------------------------

def wrap_int32(x) -> np.ndarray:
    """Two's complement wrap-around of int32 arithmetic, on int64 values."""
    return ((np.asarray(x, np.int64) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def saturate_int32(x: np.ndarray) -> np.ndarray:
    """int64 values held to the int32 range."""
    return np.clip(x, INT32_MIN, INT32_MAX)


def saturating_shift_left(x: np.ndarray, exponent) -> np.ndarray:
    """x * 2**exponent (exponent >= 0) saturated to int32 (gemmlowp's
    SaturatingRoundingMultiplyByPOT for a positive exponent). |x| < 2**31, so a shift by
    at most 31 is exact in int64, and a larger shift of a non-zero x saturates all the same."""
    return saturate_int32(x << np.minimum(exponent, 31))


def saturating_rounding_doubling_high_mul(a, b) -> np.ndarray:
    """The high 32 bits of 2 * a * b, i.e. a * b / 2**31, rounded to nearest with a half
    towards +infinity (the reference's nudge for a negative product is one short of a
    half). INT32_MIN * INT32_MIN, the one product past int32, saturates to INT32_MAX."""
    a = np.asarray(a, np.int64)
    # The reference adds its nudge (2**30, or 1 - 2**30 for a negative product) and
    # divides with C's truncation; for a negative sum that is rounding up, so both signs
    # come to one floor division of the product plus a half.
    high = (a * b + (1 << 30)) >> 31
    if np.any(np.equal(b, INT32_MIN)):      # never for a significand of quantize_multiplier
        high = np.where((a == INT32_MIN) & np.equal(b, INT32_MIN), INT32_MAX, high)
    return high


def rounding_divide_by_power_of_two(x, exponent) -> np.ndarray:
    """x / 2**exponent rounded to nearest, halves away from zero (exponent in [0, 31];
    gemmlowp's RoundingDivideByPOT)."""
    mask = (np.int64(1) << exponent) - 1
    # A floor division of x plus a half, a half less one for a negative x (so that its
    # halves go down); the half is 0 for exponent 0.
    return (x + ((mask + (x >= 0)) >> 1)) >> exponent


def multiply_by_quantized_multiplier(x, significand, exponent) -> np.ndarray:
    """x * significand * 2**(exponent - 31) with the reference's rounding (TFLite's
    MultiplyByQuantizedMultiplier), for int32 values x; significand and exponent (from
    quantize_multiplier) may be arrays broadcasting against x, one per output channel, say.
    A positive exponent multiplies x by 2**exponent first, saturating where the reference's
    int32 product would overflow (C++ leaves that undefined)."""
    x = np.asarray(x, np.int64)
    left = np.maximum(exponent, 0)
    if np.any(left):
        x = saturating_shift_left(x, left)
    return rounding_divide_by_power_of_two(saturating_rounding_doubling_high_mul(x, significand),
                                           np.maximum(-exponent, 0))


# --- the inverse square root ---------------------------------------------------------------

#: Fixed-point constants of the Newton-Raphson iteration: 1.5 and 1 with 3 integer bits,
#: sqrt(2)/2 with none.
_ONE_AND_HALF_Q3, _ONE_Q3, _HALF_SQRT2_Q0 = (1 << 28) + (1 << 27), 1 << 28, 1518500250


def inv_sqrt_quantized_multiplier(value) -> tuple[np.ndarray, np.ndarray]:
    """1 / sqrt(value) of non-negative int32 values as (significand, left shift <= 0),
    as TFLite's GetInvSqrtQuantizedMultiplierExp with a reverse shift: the value is
    normalised into [2**27, 2**29) by pairs of bits, then five Newton-Raphson steps run in
    fixed point with 3 integer bits. Values 0 and 1 give (INT32_MAX, 0)."""
    value = np.asarray(value, np.int64)
    small = value <= 1
    x = np.where(small, 2, value)
    shift = np.full(x.shape, 11, np.int64)
    while (big := x >= 1 << 29).any():
        x = np.where(big, x // 4, x)
        shift += big
    leading_zeros = 32 - np.frexp(x.astype(np.float64))[1]
    pairs = (leading_zeros - 1) // 2 - 1
    shift -= pairs
    x = x << (2 * pairs)
    half_input = rounding_divide_by_power_of_two(x >> 1, 1)
    estimate = np.full(x.shape, _ONE_Q3, np.int64)
    for _ in range(5):
        cube = saturating_shift_left(saturating_rounding_doubling_high_mul(
            saturating_rounding_doubling_high_mul(estimate, estimate), estimate), 6)
        estimate = saturating_shift_left(wrap_int32(
            saturating_rounding_doubling_high_mul(_ONE_AND_HALF_Q3, estimate)
            - saturating_rounding_doubling_high_mul(half_input, cube)), 3)
    significand = saturating_rounding_doubling_high_mul(estimate, _HALF_SQRT2_Q0)
    significand = np.where(shift < 0, wrap_int32(significand << np.maximum(-shift, 0)), significand)
    shift = -np.maximum(shift, 0)
    return np.where(small, INT32_MAX, significand), np.where(small, 0, shift)
