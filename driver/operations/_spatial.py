"""Window geometry shared by the 2-D operations (convolutions and pooling): padding, output
sizes, the data layout, and windows as strided views. Pure functions; no registration here
(modules whose names start with "_" are not loaded as operation modules).

Sizes follow the HAL's definitions. A size of 0 in a shape is unknown at prepare time
(see registry.py), so the size functions map an unknown input size to an unknown output.
"""
from __future__ import annotations

import enum

import numpy as np

from ..hal.enums import OperandType
from .signatures import scalar


class PaddingScheme(enum.IntEnum):
    """The implicit padding code of the HAL's 2-D operations (ANEURALNETWORKS_PADDING_*)."""
    SAME = 1
    VALID = 2


def effective_filter_size(filter_size: int, dilation: int) -> int:
    """The extent of a filter whose taps are ``dilation`` apart."""
    return (filter_size - 1) * dilation + 1


def implicit_padding(in_size: int, stride: int, filter_size: int, dilation: int,
                     scheme: int) -> tuple[int, int]:
    """(head, tail) padding of one spatial dimension for an implicit padding scheme. SAME
    pads so that the output has ceil(in / stride) positions, the extra cell at the tail;
    VALID does not pad. An unknown input size (0) gives (0, 0)."""
    if scheme != PaddingScheme.SAME or in_size == 0:
        return 0, 0
    out_size = (in_size + stride - 1) // stride
    needed = (out_size - 1) * stride + effective_filter_size(filter_size, dilation)
    total = max(needed - in_size, 0)
    return total // 2, total - total // 2


def transpose_implicit_padding(out_size: int, stride: int, filter_size: int,
                               scheme: int) -> tuple[int, int]:
    """(head, tail) padding of one spatial dimension of a transposed convolution whose
    output has ``out_size`` positions. SAME pads as a convolution of that output would,
    except that the tail always fits the last stride exactly: it is negative when the
    strides reach short of the output (which then ends in cells only the bias reaches)."""
    if scheme != PaddingScheme.SAME:
        return 0, 0
    needed = ((out_size + stride - 1) // stride - 1) * stride + filter_size
    head = max(needed - out_size, 0) // 2
    return head, needed - out_size - head


def output_size(in_size: int, filter_size: int, stride: int, dilation: int,
                head: int, tail: int) -> int:
    """Positions of a window of ``filter_size`` taps moved by ``stride`` over the padded
    input; 0 when the input size is unknown. May be <= 0 for a filter larger than the
    padded input: callers reject that."""
    if in_size == 0:
        return 0
    return (in_size + head + tail - effective_filter_size(filter_size, dilation)) // stride + 1


def transpose_output_size(in_size: int, filter_size: int, stride: int, head: int, tail: int) -> int:
    """The output size of a transposed convolution (the inverse of ``output_size`` with no
    dilation); 0 when the input size is unknown."""
    if in_size == 0:
        return 0
    return (in_size - 1) * stride + filter_size - head - tail


def to_nhwc(x: np.ndarray, nchw: bool) -> np.ndarray:
    """A 4-D tensor in the layout the kernels compute in (a view, no copy)."""
    return x.transpose(0, 2, 3, 1) if nchw else x


def from_nhwc(x: np.ndarray, nchw: bool) -> np.ndarray:
    """An NHWC result back in the operation's layout."""
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if nchw else x


def nhwc_shape(shape: tuple[int, ...], nchw: bool) -> tuple[int, ...]:
    """A 4-D shape as (batches, height, width, channels)."""
    return (shape[0], shape[2], shape[3], shape[1]) if nchw else tuple(shape)


def layout_shape(batches: int, height: int, width: int, channels: int, nchw: bool) -> tuple[int, ...]:
    """An NHWC shape in the operation's layout."""
    return (batches, channels, height, width) if nchw else (batches, height, width, channels)


def pad_spatial(x: np.ndarray, top: int, bottom: int, left: int, right: int,
                value: float | int = 0) -> np.ndarray:
    """An NHWC tensor with its height and width padded by ``value``."""
    if not (top or bottom or left or right):
        return x
    return np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=value)


def dilate_spatial(x: np.ndarray, stride_height: int, stride_width: int) -> np.ndarray:
    """An NHWC tensor with ``stride - 1`` zeros between neighbouring cells of its height
    and width: a transposed convolution is a convolution of its input so spread out."""
    if stride_height == stride_width == 1:
        return x
    batches, height, width, channels = x.shape
    spread = np.zeros((batches, (height - 1) * stride_height + 1, (width - 1) * stride_width + 1,
                       channels), x.dtype)
    spread[:, ::stride_height, ::stride_width] = x
    return spread


def windows(x: np.ndarray, filter_height: int, filter_width: int, stride_height: int,
            stride_width: int, dilation_height: int = 1, dilation_width: int = 1) -> np.ndarray:
    """Every window of a padded NHWC tensor, as a read-only strided view of shape
    [batches, out_height, out_width, channels, filter_height, filter_width]."""
    view = np.lib.stride_tricks.sliding_window_view(
        x, (effective_filter_size(filter_height, dilation_height),
            effective_filter_size(filter_width, dilation_width)), axis=(1, 2))
    return view[:, ::stride_height, ::stride_width, :, ::dilation_height, ::dilation_width]


#: The optional layout input of the 2-D operations (HAL 1.2 on): true for NCHW, false (or
#: no such input) for NHWC.
LAYOUT = scalar(OperandType.BOOL, name="layout (true: NCHW)")


def flag(ctx, i: int, inputs=None) -> bool | None:
    """Boolean input ``i`` (the layout, RESIZE's align_corners ...): False when the operation
    has no input ``i``; its constant value; else None at prepare time (``inputs`` None) and
    the value given at run time."""
    if i >= len(ctx.inputs):
        return False
    value = ctx.scalar(i)
    if value is None and inputs is not None:
        value = inputs[i].item()
    return None if value is None else bool(value)
