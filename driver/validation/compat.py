"""Whether two operands may stand for one another across a subgraph boundary (the
operands of an IF/WHILE and those of the subgraphs it calls).

Compatible means: the same type, the same rank unless either rank is unknown, equal
dimensions wherever both are known, the same scale and zero point and the same
extraParams. Unknown dimensions on either side are compatible with anything, so a
subgraph may declare an unknown dimension that its caller knows, and the other way round;
the executor then checks the actual shapes at run time.
"""
from __future__ import annotations

from typing import Sequence

from ..errors import fail
from ..hal.structs import Operand, OperandExtraParams
from ..operations.registry import OperandInfo
from .common import operand_type_name


def dimensions_compatible(a: Sequence[int], b: Sequence[int]) -> bool:
    """Two declared (or actual) shapes agree where both are known; [] is an unknown rank
    and 0 an unknown dimension."""
    if len(a) == 0 or len(b) == 0:
        return True
    return len(a) == len(b) and all(x == 0 or y == 0 or x == y for x, y in zip(a, b))


def _extra_params(operand: Operand | OperandInfo) -> OperandExtraParams:
    # OperandInfo (what the executor holds) keeps only the channel quantization.
    if isinstance(operand, OperandInfo):
        return OperandExtraParams(channelQuant=operand.channelQuant)
    return operand.extraParams


def _same_extra_params(outer: Operand | OperandInfo, inner: Operand | OperandInfo) -> bool:
    """``_extra_params(outer) == _extra_params(inner)``, without building or comparing
    dataclasses in the usual case: two Operands without channel quantization."""
    if type(outer) is Operand and type(inner) is Operand:
        outer_params, inner_params = outer.extraParams, inner.extraParams
        if (type(outer_params) is OperandExtraParams and type(inner_params) is OperandExtraParams
                and outer_params.channelQuant is None and inner_params.channelQuant is None):
            return outer_params.extension == inner_params.extension
    return _extra_params(outer) == _extra_params(inner)


def compatible(outer: Operand | OperandInfo, inner: Operand | OperandInfo) -> bool:
    """check_compatible's verdict, without a message."""
    return (outer.type == inner.type
            # Equal dimensions, the usual case, are compatible: compared in C first.
            and (outer.dimensions == inner.dimensions
                 or dimensions_compatible(outer.dimensions, inner.dimensions))
            and outer.scale == inner.scale and outer.zeroPoint == inner.zeroPoint
            and _same_extra_params(outer, inner))


def check_compatible(outer: Operand | OperandInfo, inner: Operand | OperandInfo,
                     what: str) -> None:
    """Raise ValidationError naming ``what`` unless ``inner`` (a subgraph's operand) is
    compatible with ``outer`` (the operand its caller passes or receives)."""
    if outer.type != inner.type:
        fail(f"{what}: type {operand_type_name(inner.type)} differs from the caller's "
             f"{operand_type_name(outer.type)}")
    if not dimensions_compatible(outer.dimensions, inner.dimensions):
        fail(f"{what}: dimensions {list(inner.dimensions)} are incompatible with the caller's "
             f"{list(outer.dimensions)}")
    if outer.scale != inner.scale:
        fail(f"{what}: scale {inner.scale} differs from the caller's {outer.scale}")
    if outer.zeroPoint != inner.zeroPoint:
        fail(f"{what}: zero point {inner.zeroPoint} differs from the caller's {outer.zeroPoint}")
    if _extra_params(outer) != _extra_params(inner):
        fail(f"{what}: extraParams {_extra_params(inner)} differ from the caller's "
             f"{_extra_params(outer)}")
