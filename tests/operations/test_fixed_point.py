"""The reference's fixed-point arithmetic (driver.operations._fixed_point), by hand: the
multipliers, the rounding of the high product and of the division, saturation, and the
inverse square root."""
from __future__ import annotations

import numpy as np
import pytest

from driver.errors import ValidationError
from driver.operations import _fixed_point as fp


@pytest.mark.parametrize("real, expected", [
    (0.5, (1 << 30, 0)), (0.25, (1 << 30, -1)), (1.0, (1 << 30, 1)),
    (0.75, (3 << 29, 0)), (2.0 ** -40, (0, 0)), (0.0, (0, 0)),
    (1 - 2.0 ** -40, (1 << 30, 1)),      # the significand rounds up to 2**31: halved
])
def test_quantize_multiplier(real, expected):
    assert fp.quantize_multiplier(real) == expected


def test_rounding_halves():
    # The division's halves round away from zero.
    assert fp.rounding_divide_by_power_of_two(np.array([5, -5, 4, -4, 6, -6]), 2).tolist() == [1, -1, 1, -1, 2, -2]
    assert fp.rounding_divide_by_power_of_two(np.array([2, -2, 3, -3]), 2).tolist() == [1, -1, 1, -1]
    assert fp.saturating_rounding_doubling_high_mul(fp.INT32_MIN, fp.INT32_MIN) == fp.INT32_MAX
    assert fp.saturating_rounding_doubling_high_mul(1 << 30, 1 << 30) == 1 << 29


def test_saturating_shift_left():
    x = np.array([3, -3, (1 << 29) - 1, 1 << 29, -(1 << 29), -(1 << 29) - 1, 0])
    assert fp.saturating_shift_left(x, 2).tolist() == [12, -12, fp.INT32_MAX - 3, fp.INT32_MAX,
                                                       fp.INT32_MIN, fp.INT32_MIN, 0]
    assert fp.saturating_shift_left(x, 40).tolist() == [fp.INT32_MAX, fp.INT32_MIN, fp.INT32_MAX, fp.INT32_MAX,
                                                        fp.INT32_MIN, fp.INT32_MIN, 0]


@pytest.mark.parametrize("x, real, expected", [
    (100, 0.5, 50), (3, 0.5, 2), (-5, 0.25, -1), (6, 0.25, 2),
    (5, 0.25, 2),                       # rounded twice: 2.5 up to 3, then 1.5 up to 2
    (-3, 0.5, -1),                      # the high product's halves go towards +infinity
    (-6, 0.25, -2), (-3, 0.25, -1),     # the division's halves away from zero
    (3, 1.0, 3), (7, 3.0, 21), (-7, 0.375, -3),
    (1 << 30, 4.0, 1 << 30),            # x * 8 saturates to INT32_MAX before the high product
])
def test_multiply_by_quantized_multiplier_rounds_as_the_reference(x, real, expected):
    significand, exponent = fp.quantize_multiplier(real)
    assert fp.multiply_by_quantized_multiplier(np.int64(x), significand, exponent) == expected


def test_multiply_by_quantized_multiplier_takes_numbers_and_arrays():
    assert fp.multiply_by_quantized_multiplier(np.array([100, -3, 3]), 1 << 30, 0).tolist() == [50, -1, 2]
    assert fp.multiply_by_quantized_multiplier(7, 3 << 29, 2) == 21        # 7 * 0.75 * 4


def test_multiply_by_quantized_multiplier_per_channel():
    pairs = [fp.quantize_multiplier(r) for r in (0.5, 0.25, 2.0)]
    significands, exponents = (np.array(column, np.int64) for column in zip(*pairs))
    got = fp.multiply_by_quantized_multiplier(np.array([[3, 6, 3], [-3, -6, fp.INT32_MAX]], np.int64),
                                              significands, exponents)
    np.testing.assert_array_equal(got, [[2, 2, 6], [-1, -2, 1 << 30]])   # INT32_MAX * 4 saturates


def test_inverse_square_root():
    values = np.array([0, 1, 2, 4, 100, 12345, 1 << 29, (1 << 31) - 1])
    significand, shift = fp.inv_sqrt_quantized_multiplier(values)
    assert significand[:2].tolist() == [fp.INT32_MAX] * 2 and shift[:2].tolist() == [0, 0]
    approximation = significand[2:] * 2.0 ** (shift[2:] - 31.0)
    np.testing.assert_allclose(approximation, 1 / np.sqrt(values[2:]), rtol=2e-6)
    assert (shift <= 0).all()


def test_an_infinite_multiplier_is_refused_naming_the_operation():
    with pytest.raises(ValidationError, match=r"operation 3 \(PRELU\): its scales give the multiplier inf"):
        fp.quantize_multiplier(float("inf"), "operation 3 (PRELU)")
