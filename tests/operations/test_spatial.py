"""Window geometry shared by the 2-D operations, against hand-computed cases."""
import numpy as np
import pytest

from driver.operations._spatial import (PaddingScheme, from_nhwc, implicit_padding, output_size,
                                        pad_spatial, to_nhwc, transpose_output_size, windows)


@pytest.mark.parametrize("in_size, stride, filter_size, dilation, expected", [
    (5, 1, 3, 1, (1, 1)),      # same size out: one cell each side
    (4, 2, 3, 1, (0, 1)),      # odd total: the extra cell at the tail
    (7, 2, 3, 2, (2, 2)),      # dilation 2 widens a 3-tap filter to 5
    (2, 3, 1, 1, (0, 0)),      # a 1-tap filter never needs padding
    (0, 1, 3, 1, (0, 0)),      # unknown size
])
def test_same_padding(in_size, stride, filter_size, dilation, expected):
    assert implicit_padding(in_size, stride, filter_size, dilation, PaddingScheme.SAME) == expected
    head, tail = expected
    if in_size:
        assert output_size(in_size, filter_size, stride, dilation, head, tail) == -(-in_size // stride)


def test_valid_padding_and_sizes():
    assert implicit_padding(5, 1, 3, 1, PaddingScheme.VALID) == (0, 0)
    assert output_size(5, 3, 1, 1, 0, 0) == 3
    assert output_size(5, 3, 2, 2, 0, 0) == 1
    assert output_size(2, 3, 1, 1, 0, 0) == 0     # the filter does not fit: callers reject it
    assert output_size(0, 3, 1, 1, 0, 0) == 0     # unknown
    assert transpose_output_size(3, 3, 2, 0, 0) == 7
    assert transpose_output_size(3, 3, 2, 1, 1) == 5


def test_windows_with_stride_and_dilation():
    x = np.arange(1 * 5 * 5 * 1).reshape(1, 5, 5, 1)
    w = windows(x, 2, 2, 2, 3, dilation_height=2, dilation_width=1)
    assert w.shape == (1, 2, 2, 1, 2, 2)
    np.testing.assert_array_equal(w[0, 0, 0, 0], [[0, 1], [10, 11]])
    np.testing.assert_array_equal(w[0, 0, 1, 0], [[3, 4], [13, 14]])


def test_layout_round_trip_and_padding():
    x = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)      # NCHW
    nhwc = to_nhwc(x, True)
    assert nhwc.shape == (2, 4, 5, 3)
    np.testing.assert_array_equal(from_nhwc(nhwc, True), x)
    padded = pad_spatial(nhwc, 1, 0, 0, 2, value=-1)
    assert padded.shape == (2, 5, 7, 3)
    assert (padded[:, 0] == -1).all() and (padded[:, :, 5:] == -1).all()
