"""The fixed-point requantization of the reference's quantized kernels (convolutions and the
like), and the rule relating a bias's scale to the scales it multiplies. Pure functions; no
registration here.

A quantized kernel sums integer products into a 32-bit accumulator, then scales it to the
output's quantization by a real multiplier (input scale * filter scale / output scale)
held as a 31-bit fixed-point significand and a power-of-two exponent. The rounding of
that product is the reference's, bit for bit: a saturating rounding doubling high
multiplication (to nearest, a half towards +infinity: -1.5 gives -1), then a rounding
division by a power of two (to nearest, a half away from zero).
Numpy's int64 holds every intermediate exactly.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import check
from .registry import OperationContext

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1

#: The reference's tolerance between a bias's scale and input_scale * filter_scale.
BIAS_SCALE_RELATIVE_TOLERANCE = 1e-6


def product_scale(input_scale: float, filter_scale: float) -> float:
    """input_scale * filter_scale as the reference computes it: a single-precision product."""
    return float(np.float32(input_scale) * np.float32(filter_scale))


def check_bias_scale(ctx: OperationContext, i: int, input_scale: float, filter_scale: float) -> None:
    """A per-tensor quantized bias (input ``i``) has the scale input_scale * filter_scale,
    within the reference's tolerance."""
    bias, product = ctx.inputs[i], product_scale(input_scale, filter_scale)
    check(abs(product - bias.scale) <= BIAS_SCALE_RELATIVE_TOLERANCE * min(product, bias.scale),
          "{}: input {} (bias, operand {}) scale {} must equal input_scale * filter_scale = {}",
          ctx.name, i, bias.index, bias.scale, product)


def quantize_multiplier(real_multiplier: float) -> tuple[int, int]:
    """(significand, exponent) with real_multiplier ~= significand * 2**(exponent - 31) and
    significand in [2**30, 2**31) (QuantizeMultiplier). A multiplier below 2**-31 flushes to
    (0, 0), as the reference does, rather than shift every bit out."""
    if real_multiplier == 0.0:
        return 0, 0
    fraction, exponent = math.frexp(real_multiplier)
    significand = int(math.copysign(math.floor(abs(fraction) * (1 << 31) + 0.5), fraction))
    if significand == 1 << 31:          # the fraction rounded up to 1
        significand, exponent = significand // 2, exponent + 1
    if exponent < -31:
        return 0, 0
    return significand, exponent


def saturate_int32(x: np.ndarray) -> np.ndarray:
    """An int64 array held to the int32 range the reference computes in (its sums would
    wrap past it; no model of sensible size gets there)."""
    return np.clip(x, INT32_MIN, INT32_MAX)


def saturating_rounding_doubling_high_mul(a: np.ndarray, b: int | np.ndarray) -> np.ndarray:
    """The high 32 bits of 2 * a * b, i.e. a * b / 2**31, for an int32 a (an int64 array)
    and a significand b of quantize_multiplier, rounded to nearest with a half towards
    +infinity (the reference's nudge for a negative product is one short of a half). b is
    never negative, so the reference's one saturating case (a = b = INT32_MIN) cannot arise."""
    product = a * b
    negative = product < 0
    # The reference divides with C's truncation: the magnitude rounded, the sign put back.
    return ((np.abs(product) + ((1 << 30) - negative)) >> 31) * np.where(negative, -1, 1)


def rounding_divide_by_power_of_two(x: np.ndarray, exponent: np.ndarray | int) -> np.ndarray:
    """x / 2**exponent rounded to nearest, halves away from zero (exponent in [0, 31])."""
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def multiply_by_quantized_multiplier(x: np.ndarray, significand: np.ndarray | int,
                                     exponent: np.ndarray | int) -> np.ndarray:
    """x * significand * 2**(exponent - 31) with the reference's rounding, for an int32
    accumulator x (an int64 array); significand and exponent (from quantize_multiplier)
    may be arrays broadcasting against x, one per output channel. A positive exponent
    shifts x left first, saturating to int32 where the reference's int32 would overflow."""
    left = np.maximum(exponent, 0)
    if np.any(left):
        # |x| < 2**31, so shifting by at most 31 stays exact in int64, and any larger shift
        # of a non-zero x saturates all the same.
        x = saturate_int32(x << np.minimum(left, 31))
    return rounding_divide_by_power_of_two(
        saturating_rounding_doubling_high_mul(x, significand), np.maximum(-exponent, 0))
