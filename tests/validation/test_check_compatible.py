"""check_compatible / dimensions_compatible: the IF/WHILE subgraph-boundary rule."""
from __future__ import annotations

from dataclasses import replace

import pytest

from driver.errors import ValidationError
from driver.hal import (OperandExtraParams, OperandLifeTime, Operand, OperandType as T,
                        SymmPerChannelQuantParams)
from driver.operations.registry import OperandInfo
from driver.validation import check_compatible, dimensions_compatible


@pytest.mark.parametrize("a,b,expected", [
    ([2, 3], [2, 3], True),
    ([2, 3], [2, 0], True),          # unknown dimension on one side
    ([0, 3], [2, 0], True),
    ([2, 3], [], True),              # unknown rank
    ([], [], True),
    ([2, 3], [3, 2], False),
    ([2, 3], [2, 3, 1], False),      # ranks differ
    ([2], [0, 0], False),
])
def test_dimensions_compatible(a, b, expected):
    assert dimensions_compatible(a, b) is expected
    assert dimensions_compatible(b, a) is expected


OUTER = Operand(T.TENSOR_QUANT8_ASYMM, [2, 3], scale=0.5, zeroPoint=3)


@pytest.mark.parametrize("dims", [[2, 3], [0, 3], []], ids=["identical", "unknown dimension",
                                                          "unknown rank"])
def test_identical_operands_or_unknown_inner_dimensions_are_compatible(dims):
    check_compatible(OUTER, replace(OUTER, dimensions=dims), "x")


@pytest.mark.parametrize("field,value,word", [
    ("type", T.TENSOR_QUANT8_ASYMM_SIGNED, "type"),
    ("dimensions", [3, 2], "dimensions"),
    ("scale", 0.25, "scale"),
    ("zeroPoint", 4, "zero point"),
    ("extraParams", OperandExtraParams(extension=b"\x01"), "extraParams"),
])
def test_each_field_is_compared(field, value, word):
    with pytest.raises(ValidationError, match=f"^where: {word}"):
        check_compatible(OUTER, replace(OUTER, **{field: value}), "where")


def test_channel_quantization_is_compared():
    def per_channel(scales):
        return Operand(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, [2], extraParams=OperandExtraParams(
            channelQuant=SymmPerChannelQuantParams(scales, 0)))
    check_compatible(per_channel([0.5, 1.0]), per_channel([0.5, 1.0]), "x")
    with pytest.raises(ValidationError):
        check_compatible(per_channel([0.5, 1.0]), per_channel([0.5, 2.0]), "x")


def test_accepts_operand_infos():
    """The executor holds OperandInfo, not Operand."""
    info = OperandInfo(index=0, type=T.TENSOR_FLOAT32, dimensions=(2, 0), scale=0.0,
                       zeroPoint=0, lifetime=OperandLifeTime.SUBGRAPH_INPUT, value=None)
    check_compatible(info, Operand(T.TENSOR_FLOAT32, [2, 5]), "x")
    with pytest.raises(ValidationError):
        check_compatible(info, Operand(T.TENSOR_FLOAT32, [3, 5]), "x")
