"""The integer fixed-point arithmetic of the reference's quantized kernels (gemmlowp's and
TFLite's), and the rule relating a bias's scale to the scales it multiplies. Pure
functions; no registration here.

A quantized kernel sums integer products into a 32-bit accumulator, then scales it by a
real multiplier (input scale * filter scale / output scale, say) held as a 31-bit
significand and a power-of-two exponent. The rounding is the reference's, bit for bit: a
saturating rounding doubling high multiplication (to nearest, a half towards +infinity:
-1.5 gives -1), then a rounding division by a power of two (to nearest, a half away from
zero), so that a power-of-two multiplier may round twice. L2_NORMALIZATION's inverse
square root is computed in the same arithmetic, and the integer LSTMs' tanh and logistic
in gemmlowp's 16-bit fixed point.

Values are int64 numpy arrays (or numbers) holding int32 values, so that products and sums
are exact before they are rounded, saturated or wrapped the way int32 code would; every
function broadcasts.
"""
from __future__ import annotations

import functools
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
    return np.minimum(np.maximum(x, INT32_MIN), INT32_MAX)     # np.clip costs more on small arrays


def saturating_shift_left(x: np.ndarray, exponent) -> np.ndarray:
    """x * 2**exponent (exponent >= 0) saturated to int32 (gemmlowp's
    SaturatingRoundingMultiplyByPOT for a positive exponent). |x| < 2**31, so a shift by
    at most 31 is exact in int64, and a larger shift of a non-zero x saturates all the same."""
    return saturate_int32(x << np.minimum(exponent, 31))


def saturating_rounding_doubling_high_mul(a, b, bits: int = 32) -> np.ndarray:
    """The high 32 bits of 2 * a * b, i.e. a * b / 2**31, rounded to nearest with a half
    towards +infinity (the reference's nudge for a negative product is one short of a
    half). INT32_MIN * INT32_MIN, the one product past int32, saturates to INT32_MAX.
    ``bits=16``: the same for int16 values (a * b / 2**15, gemmlowp's 16-bit version)."""
    a = np.asarray(a, np.int64)
    # The reference adds its nudge (2**30, or 1 - 2**30 for a negative product) and
    # divides with C's truncation; for a negative sum that is rounding up, so both signs
    # come to one floor division of the product plus a half. Only the lowest value squared
    # gives one past the highest value, which the minimum saturates.
    return np.minimum((a * b + (1 << (bits - 2))) >> (bits - 1), (1 << (bits - 1)) - 1)


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
    if left.any():
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


# --- 16-bit fixed point: gemmlowp's tanh and logistic ------------------------------------------
#
# A Q-format value with m integer bits is an int16 raw value standing for raw / 2**(15 - m).
# gemmlowp computes in int16 itself: its additions and negations wrap around (a C++ int16
# assignment of the int sum), its products are the 16-bit doubling high multiplication and
# a change of format with fewer integer bits is a saturating shift.

INT16_MIN, INT16_MAX = -(1 << 15), (1 << 15) - 1


def wrap_int16(x) -> np.ndarray:
    """Two's complement wrap-around of int16 arithmetic, on int64 values."""
    return ((np.asarray(x, np.int64) + (1 << 15)) & 0xFFFF) - (1 << 15)


def saturate_int16(x) -> np.ndarray:
    """int64 values held to the int16 range."""
    return np.minimum(np.maximum(x, INT16_MIN), INT16_MAX)


def mul_q16(a, b) -> np.ndarray:
    """The product of 16-bit fixed-point values, with their integer bits added."""
    return saturating_rounding_doubling_high_mul(a, b, 16)


def _constant16(raw32: int) -> int:
    """A gemmlowp constant, written as a 32-bit raw value, in a 16-bit format: rounded by
    16 bits (its RescaleConstantInitializer)."""
    return int(rounding_divide_by_power_of_two(raw32, 16))


_EXP_MINUS_EIGHTH, _ONE_THIRD = _constant16(1895147668), _constant16(715827883)
#: exp(-2**k) in Q0.15, for the bits of the part of |x| beyond its last quarter.
_EXP_OF_MINUS_POWER_OF_TWO = tuple((k, _constant16(raw)) for k, raw in (
    (-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535),
    (3, 720401), (4, 242)))
_48_OVER_17, _MINUS_32_OVER_17 = _constant16(1515870810), _constant16(-1010580540)   # Q2.13


def _exp_on_last_quarter(a: np.ndarray) -> np.ndarray:
    """exp(a) for a in [-1/4, 0) (Q0.15): a Taylor expansion around -1/8 to the 4th power."""
    x = wrap_int16(a + (1 << 12))
    x2 = mul_q16(x, x)
    x3 = mul_q16(x2, x)
    x4 = mul_q16(x2, x2)
    x4_over_4 = rounding_divide_by_power_of_two(x4, 2)
    terms = rounding_divide_by_power_of_two(
        wrap_int16(mul_q16(wrap_int16(x4_over_4 + x3), _ONE_THIRD) + x2), 1)
    return saturate_int16(_EXP_MINUS_EIGHTH + mul_q16(_EXP_MINUS_EIGHTH, wrap_int16(x + terms)))


def _exp_on_negative_values_q16(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """exp(a) in Q0.15 of a <= 0 with ``integer_bits``: exp of a's last quarter, times
    exp(-2**k) for each bit k of the rest (gemmlowp's barrel shifter)."""
    fractional_bits = 15 - integer_bits
    quarter = 1 << (fractional_bits - 2)
    last_quarter = wrap_int16((a & (quarter - 1)) - quarter)
    result = _exp_on_last_quarter(saturate_int16(last_quarter << integer_bits))
    rest = wrap_int16(last_quarter - a)
    for k, exp_of_minus_power in _EXP_OF_MINUS_POWER_OF_TWO:
        if integer_bits > k:
            result = np.where(rest & (1 << (fractional_bits + k)), mul_q16(result, exp_of_minus_power),
                              result)
    if integer_bits > 5:            # exp(x) below -32 is 0
        result = np.where(a < _constant16(-(1 << (36 - integer_bits))), 0, result)
    return np.where(a == 0, INT16_MAX, result)


def _reciprocal_of_half_sum_q2(a: np.ndarray) -> np.ndarray:
    """For a in (0, 1) (Q0.15): 2 / (1 + a) in Q2.13, by three Newton-Raphson steps from
    48/17 - 32/17 * (1 + a) / 2."""
    total = a + INT16_MAX
    # (a + 1) / 2 rounded half away from zero, the way gemmlowp's RoundingHalfSum does.
    half_denominator = np.where(total >= 0, (total + 1) >> 1, -((1 - total) >> 1))
    x = wrap_int16(_48_OVER_17 + mul_q16(half_denominator, _MINUS_32_OVER_17))
    for _ in range(3):
        one_minus_half_denominator_times_x = wrap_int16((1 << 13) - mul_q16(half_denominator, x))
        x = wrap_int16(x + saturate_int16(mul_q16(x, one_minus_half_denominator_times_x) << 2))
    return x


def _tanh_q16(a: np.ndarray, integer_bits: int) -> np.ndarray:
    negative = a < 0
    minus_abs = np.where(negative, a, wrap_int16(-a))
    # exp(2 * minus_abs): the same raw value read with one more integer bit.
    exp = _exp_on_negative_values_q16(minus_abs, integer_bits + 1)
    t = saturate_int16(wrap_int16(_reciprocal_of_half_sum_q2(exp) - (1 << 13)) << 2)
    return np.where(a == 0, 0, np.where(negative, wrap_int16(-t), t))


def _logistic_q16(a: np.ndarray, integer_bits: int) -> np.ndarray:
    positive = a > 0
    abs_a = np.where(positive, a, wrap_int16(-a))
    exp = _exp_on_negative_values_q16(wrap_int16(-abs_a), integer_bits)
    if_positive = saturate_int16(_reciprocal_of_half_sum_q2(exp) << 1)
    return np.where(a == 0, 1 << 14, np.where(positive, if_positive, wrap_int16(INT16_MAX - if_positive)))


@functools.cache
def _table_q16(function, integer_bits: int) -> np.ndarray:
    """``function`` of every int16 value, computed once: the kernels look their values up."""
    return function(np.arange(INT16_MIN, INT16_MAX + 1, dtype=np.int64), integer_bits)


def tanh_q16(a, integer_bits: int) -> np.ndarray:
    """gemmlowp's tanh of int16 values with ``integer_bits`` (0 to 6), in Q0.15:
    (1 - exp(-2|a|)) / (1 + exp(-2|a|)) with the sign of a."""
    return _table_q16(_tanh_q16, integer_bits)[np.asarray(a, np.int64) - INT16_MIN]


def logistic_q16(a, integer_bits: int) -> np.ndarray:
    """gemmlowp's logistic of int16 values with ``integer_bits``, in Q0.15:
    1 / (1 + exp(-|a|)), and 1 minus that for a negative a."""
    return _table_q16(_logistic_q16, integer_bits)[np.asarray(a, np.int64) - INT16_MIN]
