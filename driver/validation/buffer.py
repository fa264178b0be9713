"""validate_allocation: the arguments of IDevice.allocate (a buffer descriptor and the roles
a driver-managed buffer is to play), as HAL 1.3 states them:
- at least one role, each naming one of ``preparedModels`` (which must be prepared models
  of this device) and an input or output of its main subgraph, with a frequency in (0, 1];
- no role twice (a prepared model listed twice is still one prepared model);
- the roles' operands agree: the same type, scale, zero point and extraParams, and
  compatible dimensions; the descriptor's dimensions are compatible with theirs too, and a
  scalar buffer has none.
The buffer's dimensions are everything the roles and the descriptor know together; some may
stay unknown until a copyFrom or an execution writing the buffer gives them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from ..errors import check
from ..hal.structs import BufferDesc, BufferRole, Model, Operand
from .common import is_scalar_type, is_uint32, is_uint32_list
from .compat import check_compatible, combined_dimensions, dimensions_compatible

#: A role as an execution checks it: (prepared model, is_input, ioIndex). The prepared
#: model itself, not its position in preparedModels, so that a model listed twice is one.
Role = tuple[object, bool, int]


@dataclass(frozen=True)
class BufferLayout:
    """What allocate validated: the buffer's operand (its type, quantization and the
    dimensions known at allocation) and the roles it may play."""
    operand: Operand
    roles: frozenset[Role]


def validate_allocation(desc: BufferDesc, preparedModels: Sequence, inputRoles: Sequence,
                        outputRoles: Sequence, model_of: Callable[[object], Optional[Model]],
                        ) -> BufferLayout:
    """Raise ValidationError naming the argument at fault unless the arguments are valid;
    ``model_of`` gives what a prepared model of this device was prepared from (None for
    anything else)."""
    check(isinstance(desc, BufferDesc), "desc: {} is not a BufferDesc", type(desc).__name__)
    check(is_uint32_list(desc.dimensions), "desc: dimensions {!r} are not a list of uint32",
          desc.dimensions)
    check(isinstance(preparedModels, (list, tuple)), "preparedModels is not a list")
    roles: set[Role] = set()
    operands: list[tuple[str, Operand]] = []
    for kind, role_list in (("input", inputRoles), ("output", outputRoles)):
        check(isinstance(role_list, (list, tuple)), "{}Roles is not a list", kind)
        for position, role in enumerate(role_list):
            where = f"{kind}Roles[{position}]"
            key, operand = _role(role, kind, preparedModels, model_of, where)
            check(key not in roles, "{}: the same role is given twice", where)
            roles.add(key)
            operands.append((where, operand))
    check(operands, "no input or output role is given")
    first_where, first = operands[0]
    dimensions = list(first.dimensions)
    for where, operand in operands[1:]:
        check_compatible(first, operand, f"{where} (against {first_where})")
        dimensions = combined_dimensions(dimensions, operand.dimensions)
    check(not (is_scalar_type(first.type) and desc.dimensions),
          "desc: dimensions {} given for a buffer of scalar type", list(desc.dimensions))
    check(dimensions_compatible(desc.dimensions, dimensions), "desc: dimensions {} are "
          "incompatible with the roles' {}", list(desc.dimensions), dimensions)
    operand = Operand(type=first.type, dimensions=combined_dimensions(desc.dimensions, dimensions),
                      scale=first.scale, zeroPoint=first.zeroPoint, extraParams=first.extraParams)
    return BufferLayout(operand, frozenset(roles))


def _role(role: object, kind: str, prepared_models: Sequence,
          model_of: Callable[[object], Optional[Model]], where: str) -> tuple[Role, Operand]:
    check(isinstance(role, BufferRole), "{}: {} is not a BufferRole", where, type(role).__name__)
    check(is_uint32(role.modelIndex) and role.modelIndex < len(prepared_models),
          "{}: modelIndex {!r} names none of the {} prepared models", where, role.modelIndex,
          len(prepared_models))
    prepared = prepared_models[role.modelIndex]
    model = model_of(prepared)
    check(model is not None, "{}: preparedModels[{}] is not a prepared model of this device",
          where, role.modelIndex)
    indexes = model.main.inputIndexes if kind == "input" else model.main.outputIndexes
    check(is_uint32(role.ioIndex) and role.ioIndex < len(indexes),
          "{}: ioIndex {!r} names none of the model's {} {}s", where, role.ioIndex, len(indexes), kind)
    frequency = role.frequency
    check(isinstance(frequency, (int, float)) and not isinstance(frequency, bool)
          and math.isfinite(frequency) and 0 < frequency <= 1,
          "{}: frequency {!r} is not in (0, 1]", where, frequency)
    return (prepared, kind == "input", role.ioIndex), model.main.operands[indexes[role.ioIndex]]
