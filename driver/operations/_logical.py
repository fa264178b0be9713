"""The shared shape of LOGICAL_AND and LOGICAL_OR: two broadcast TENSOR_BOOL8 tensors."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..hal.enums import OperandType as T
from ._arithmetic import broadcast_failure
from .common import (broadcast_shapes, check_counts, check_input_type, check_not_omitted,
                     check_output_type)
from .registry import Kernel, OperationContext, Shape


def validate_logical(ctx: OperationContext) -> None:
    check_counts(ctx, 2, 1)
    check_not_omitted(ctx)
    check_input_type(ctx, 0, (T.TENSOR_BOOL8,))
    check_input_type(ctx, 1, (T.TENSOR_BOOL8,))
    check_output_type(ctx, 0, (T.TENSOR_BOOL8,))


def infer_logical(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    return [broadcast_shapes(ctx, shapes[0], shapes[1])]


def build_logical(ctx: OperationContext, fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Kernel:
    def kernel(a, b):
        try:
            return (fn(a, b),)
        except ValueError:
            broadcast_failure(ctx, a, b)
    return kernel
