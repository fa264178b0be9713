"""Integer fixed-point arithmetic of the reference's quantized kernels (gemmlowp's and
TFLite's): a real multiplier as a 32-bit significand and a power-of-two shift, rounding
right shifts, the saturating doubling high multiply, and the inverse square root that
L2_NORMALIZATION computes per row. Values are int64 numpy arrays holding int32 values, so
that products and sums are exact before they are rounded or wrapped the way int32 code
would; every function accepts arrays (or numbers) and broadcasts.
"""
from __future__ import annotations

import math

import numpy as np

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def wrap_int32(x: np.ndarray) -> np.ndarray:
    """Two's complement wrap-around of int32 arithmetic, on int64 values."""
    return ((np.asarray(x, np.int64) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def quantize_multiplier(real_multiplier: float) -> tuple[int, int]:
    """(significand, shift) with real_multiplier ~ significand * 2**(shift - 31) and the
    significand in [2**30, 2**31); frexp's fraction rounded half away from zero. A
    multiplier below 2**-31 would shift every bit out: it becomes (0, 0)."""
    if real_multiplier == 0:
        return 0, 0
    fraction, shift = math.frexp(real_multiplier)
    significand = int(math.copysign(math.floor(abs(fraction) * (1 << 31) + 0.5), fraction))
    if significand == 1 << 31:      # the fraction rounded up to 1
        significand, shift = significand // 2, shift + 1
    return (0, 0) if shift < -31 else (significand, shift)


def rounding_divide_by_pot(x, exponent) -> np.ndarray:
    """x / 2**exponent rounded to nearest, halves away from zero (gemmlowp's
    RoundingDivideByPOT)."""
    x = np.asarray(x, np.int64)
    exponent = np.asarray(exponent, np.int64)
    mask = (np.int64(1) << exponent) - 1
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + ((x & mask) > threshold)


def saturating_rounding_doubling_high_mul(a, b) -> np.ndarray:
    """The high 32 bits of 2 * a * b, rounded to nearest; INT32_MIN * INT32_MIN saturates."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    product = a * b
    nudged = product + np.where(product >= 0, 1 << 30, 1 - (1 << 30))
    # C++ integer division truncates toward zero.
    high = np.where(nudged >= 0, nudged >> 31, -((-nudged) >> 31))
    return np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, high)


def multiply_by_quantized_multiplier(x, significand, shift) -> np.ndarray:
    """x * significand * 2**(shift - 31), rounded as TFLite's MultiplyByQuantizedMultiplier:
    a positive shift multiplies x first (in int32), a negative one divides the product."""
    shift = np.asarray(shift, np.int64)
    left = np.maximum(shift, 0)
    scaled = wrap_int32(np.asarray(x, np.int64) << left)
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(scaled, significand),
                                  np.maximum(-shift, 0))


def multiply_by_quantized_multiplier_smaller_than_one(x, significand, left_shift) -> np.ndarray:
    """x * significand * 2**(left_shift - 31) for left_shift <= 0 (TFLite's
    MultiplyByQuantizedMultiplierSmallerThanOneExp)."""
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, significand),
                                  -np.asarray(left_shift, np.int64))


def _saturating_shift_left(x: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp's SaturatingRoundingMultiplyByPOT for a positive exponent."""
    threshold = (1 << (31 - exponent)) - 1
    return np.where(x > threshold, INT32_MAX, np.where(x < -threshold, INT32_MIN, x << exponent))


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
    half_input = rounding_divide_by_pot(x >> 1, 1)
    estimate = np.full(x.shape, _ONE_Q3, np.int64)
    for _ in range(5):
        cube = _saturating_shift_left(saturating_rounding_doubling_high_mul(
            saturating_rounding_doubling_high_mul(estimate, estimate), estimate), 6)
        estimate = _saturating_shift_left(wrap_int32(
            saturating_rounding_doubling_high_mul(_ONE_AND_HALF_Q3, estimate)
            - saturating_rounding_doubling_high_mul(half_input, cube)), 3)
    significand = saturating_rounding_doubling_high_mul(estimate, _HALF_SQRT2_Q0)
    significand = np.where(shift < 0, wrap_int32(significand << np.maximum(-shift, 0)), significand)
    shift = -np.maximum(shift, 0)
    return np.where(small, INT32_MAX, significand), np.where(small, 0, shift)
