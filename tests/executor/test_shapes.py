"""Shape bookkeeping of the executor: the fast paths give what the general rules give."""
from __future__ import annotations

import math

import pytest

from driver.errors import ResourceError, ValidationError
from driver.executor.shapes import (MAX_VALUE_BYTES, check_value_size, is_fully_known,
                                    matches_declared, merge_shapes, value_nbytes)
from driver.hal.enums import OperandType as T


@pytest.mark.parametrize("shape, known", [
    (None, False), ((), True), ((1,), True), ((2, 3), True), ((0,), False), ((2, 0, 3), False),
    ((-1, 2), False),
])
def test_is_fully_known(shape, known):
    assert is_fully_known(shape) is known


@pytest.mark.parametrize("declared, inferred, merged", [
    (None, (2, 3), (2, 3)), ((2, 3), None, (2, 3)), (None, None, None),
    ((2, 3), (2, 3), (2, 3)), ((0, 3), (2, 0), (2, 3)), ((2, 0), [2, 5], (2, 5)), ((), (), ()),
])
def test_merge_shapes(declared, inferred, merged):
    result = merge_shapes(declared, inferred, "operand 1")
    assert result == merged and (result is None or isinstance(result, (tuple, list)))


@pytest.mark.parametrize("declared, inferred, message", [
    ((2, 3), (2,), "operand 1: inferred rank 1 differs from declared dimensions \\[2, 3\\]"),
    ((2, 3), (2, 4), "operand 1: inferred dimensions \\[2, 4\\] differ from declared \\[2, 3\\]"),
])
def test_merge_shapes_names_the_operand_on_conflict(declared, inferred, message):
    with pytest.raises(ValidationError, match=message):
        merge_shapes(declared, inferred, "operand 1")


@pytest.mark.parametrize("actual, declared, matches", [
    ((2, 3), None, True), ((2, 3), (2, 3), True), ((2, 3), (0, 3), True), ((2, 3), (2, 4), False),
    ((2, 3), (2,), False), ((), (), True), ((0,), (1,), False), ((0,), (0,), True),
])
def test_matches_declared(actual, declared, matches):
    assert matches_declared(actual, declared) is matches


@pytest.mark.parametrize("operand_type, shape", [
    (T.TENSOR_FLOAT32, (2, 3)), (T.TENSOR_FLOAT16, (0, 5)), (T.TENSOR_INT32, ()),
    (T.TENSOR_QUANT8_ASYMM, (1, 0, 0, 7)), (T.SUBGRAPH, (4,)), (T.TENSOR_BOOL8, (-3, 2)),
])
def test_value_nbytes_counts_unknown_dimensions_as_one(operand_type, shape):
    itemsize = {T.TENSOR_FLOAT32: 4, T.TENSOR_FLOAT16: 2, T.TENSOR_INT32: 4,
                T.TENSOR_QUANT8_ASYMM: 1, T.SUBGRAPH: 1, T.TENSOR_BOOL8: 1}[operand_type]
    assert value_nbytes(operand_type, shape) == itemsize * math.prod(max(d, 1) for d in shape)


def test_check_value_size_refuses_values_over_the_limit():
    check_value_size(T.TENSOR_FLOAT32, (MAX_VALUE_BYTES // 4,), "operand 2")
    check_value_size(T.TENSOR_FLOAT32, None, "operand 2")
    with pytest.raises(ResourceError, match=r"operand 2: shape \[1024, 0, 65537\] needs"):
        check_value_size(T.TENSOR_FLOAT32, (1024, 0, 65537), "operand 2")
