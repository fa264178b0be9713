"""Shape bookkeeping of the executor: the fast paths give what the general rules give."""
from __future__ import annotations

import pytest

from driver.errors import ValidationError
from driver.executor.shapes import is_fully_known, matches_declared, merge_shapes


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
