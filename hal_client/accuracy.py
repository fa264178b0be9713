"""When two output values agree: the CTS's accuracy criteria, the one tolerance both the
conformance runner (outputs against a test model's reference values) and the fuzz harness
(a driver against a reference driver, a model against a model that must give the same
outputs) judge by.

Every element must satisfy ``|actual - expected| <= atol + rtol * |expected|``, computed in
float64, with the tolerance of the output's type: float32 within 5 ULP (float16's 5 ULP
when the model computes in float16 anywhere or allows relaxed computation), float16
within 5 ULP, booleans exactly, integers and quantized values within 1 (the rounding of
the reference). The CTS also bounds the mean bias and the mean squared error of float
outputs, but its default bounds for generated tests are unlimited, so there is nothing to
check there.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from driver.hal import OperandType

T = OperandType


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float

    def allowed(self, expected: np.ndarray) -> np.ndarray:
        return self.atol + self.rtol * np.abs(expected)

    def __str__(self) -> str:
        return f"atol={self.atol:g} rtol={self.rtol:g}"


#: 5 ULP of float32 relative, and an absolute floor for values near zero.
FLOAT32_TOLERANCE = Tolerance(atol=1e-5, rtol=5 * 1.1920928955078125e-7)
#: 5 ULP of float16, both absolute and relative.
FLOAT16_TOLERANCE = Tolerance(atol=5 * 0.0009765625, rtol=5 * 0.0009765625)
#: Integers and quantized values may be off by one (rounding of the reference).
INTEGER_TOLERANCE = Tolerance(atol=1, rtol=0)
#: The CTS loosens 8-bit quantized outputs of the mobilenet models.
MOBILENET_QUANT8_TOLERANCE = Tolerance(atol=3, rtol=0)
EXACT = Tolerance(atol=0, rtol=0)

QUANT8_TYPES = frozenset({T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED,
                          T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT8_SYMM_PER_CHANNEL})


def tolerance_for(operand_type: OperandType, *, float16_criterion: bool,
                  loose_quant8: bool = False) -> Tolerance:
    """The tolerance of an output of ``operand_type``. ``float16_criterion``: the model
    allows relaxed computation or computes anything in float16, so float32 outputs are
    held to float16 accuracy; ``loose_quant8``: the CTS's mobilenet allowance."""
    if operand_type in (T.TENSOR_FLOAT32, T.FLOAT32):
        return FLOAT16_TOLERANCE if float16_criterion else FLOAT32_TOLERANCE
    if operand_type in (T.TENSOR_FLOAT16, T.FLOAT16):
        return FLOAT16_TOLERANCE
    if operand_type in (T.TENSOR_BOOL8, T.BOOL):
        return EXACT
    if operand_type in QUANT8_TYPES and loose_quant8:
        return MOBILENET_QUANT8_TOLERANCE
    return INTEGER_TOLERANCE


@dataclass(frozen=True)
class Mismatch:
    """Values outside tolerance: how many of how many, and the first of them."""
    count: int
    size: int
    index: int
    expected: float
    actual: float
    tolerance: Tolerance

    def __str__(self) -> str:
        return (f"{self.count} of {self.size} values outside {self.tolerance}; first at index "
                f"{self.index}: expected {self.expected:.9g}, got {self.actual:.9g}")


def compare_values(expected: np.ndarray, actual: np.ndarray, tolerance: Tolerance) -> Mismatch | None:
    """None when every element is within tolerance, else the mismatch. A NaN where a
    number is expected is a mismatch."""
    expected = expected.astype(np.float64).ravel()
    actual = actual.astype(np.float64).ravel()
    within = np.abs(actual - expected) <= tolerance.allowed(expected)
    if within.all():
        return None
    bad = np.flatnonzero(~within)
    first = int(bad[0])
    return Mismatch(int(bad.size), int(expected.size), first, float(expected[first]),
                    float(actual[first]), tolerance)
