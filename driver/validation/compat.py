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

from ..errors import check
from ..hal.structs import Operand, OperandExtraParams
from ..operations.registry import OperandInfo
from .common import operand_type_name


def dimensions_compatible(a: Sequence[int], b: Sequence[int]) -> bool:
    """Two declared (or actual) shapes agree where both are known; [] is an unknown rank
    and 0 an unknown dimension."""
    if len(a) == 0 or len(b) == 0 or tuple(a) == tuple(b):
        return True
    return len(a) == len(b) and all(x == 0 or y == 0 or x == y for x, y in zip(a, b))


def combined_dimensions(a: Sequence[int], b: Sequence[int]) -> list[int]:
    """What two compatible shapes (dimensions_compatible) know together: every dimension
    either of them knows."""
    if len(a) == 0 or len(b) == 0:
        return list(a or b)
    return [x or y for x, y in zip(a, b)]


def _extra_params(operand: Operand | OperandInfo) -> OperandExtraParams:
    # OperandInfo (what the executor holds) keeps only the channel quantization.
    if isinstance(operand, OperandInfo):
        return OperandExtraParams(channelQuant=operand.channelQuant)
    return operand.extraParams


def check_compatible(outer: Operand | OperandInfo, inner: Operand | OperandInfo,
                     what: str) -> None:
    """Raise ValidationError naming ``what`` unless ``inner`` (a subgraph's operand) is
    compatible with ``outer`` (the operand its caller passes or receives)."""
    check(outer.type == inner.type, "{}: type {} differs from the caller's {}",
          what, operand_type_name(inner.type), operand_type_name(outer.type))
    check(dimensions_compatible(outer.dimensions, inner.dimensions), "{}: dimensions "
          "{} are incompatible with the caller's {}",
          what, list(inner.dimensions), list(outer.dimensions))
    check(outer.scale == inner.scale,
          "{}: scale {} differs from the caller's {}", what, inner.scale, outer.scale)
    check(outer.zeroPoint == inner.zeroPoint,
          "{}: zero point {} differs from the caller's {}", what, inner.zeroPoint, outer.zeroPoint)
    outer_params, inner_params = _extra_params(outer), _extra_params(inner)
    check(outer_params == inner_params,
          "{}: extraParams {} differ from the caller's {}", what, inner_params, outer_params)
