"""Small pure helpers shared by the model and request validators: value-range predicates,
operand-type classification, byte sizes and the names used in messages."""
from __future__ import annotations

import math
import numbers
from typing import Sequence

from ..hal.enums import (ExtensionTypeEncoding, OperandLifeTime, OperandType, OperationType,
                         SCALAR_OPERAND_TYPES)
from ..errors import fail
from ..hal.dtypes import byte_size, element_size  # noqa: F401  (re-exported to validators)

UINT16_MAX = 0xFFFF
UINT32_MAX = 0xFFFF_FFFF
INT32_MIN, INT32_MAX = -(2 ** 31), 2 ** 31 - 1
FLOAT32_MAX = 3.4028234663852886e38

#: HAL sizes and offsets are uint32: a buffer needing more bytes can never be described.
MAX_BYTE_SIZE = UINT32_MAX

#: Memory names a pool may carry (hidl_memory names of 1.0 and those added in 1.2).
POOL_NAMES = frozenset({"ashmem", "mmap_fd", "hardware_buffer_blob", "hardware_buffer"})

BASE_OPERAND_TYPES = frozenset(int(t) for t in OperandType)
BASE_OPERATION_TYPES = frozenset(int(t) for t in OperationType)
LIFETIMES = frozenset(int(t) for t in OperandLifeTime)

#: Lifetimes whose value is known before any operation of the subgraph runs.
VALUE_KNOWN_LIFETIMES = frozenset({
    OperandLifeTime.SUBGRAPH_INPUT, OperandLifeTime.CONSTANT_COPY,
    OperandLifeTime.CONSTANT_REFERENCE, OperandLifeTime.NO_VALUE, OperandLifeTime.SUBGRAPH,
})
#: Lifetimes of operands that exactly one operation must write.
WRITTEN_LIFETIMES = frozenset({OperandLifeTime.TEMPORARY_VARIABLE,
                               OperandLifeTime.SUBGRAPH_OUTPUT})
CONSTANT_LIFETIMES = frozenset({OperandLifeTime.CONSTANT_COPY,
                                OperandLifeTime.CONSTANT_REFERENCE})

_PREFIX_SHIFT = int(ExtensionTypeEncoding.LOW_BITS_TYPE)


# --- value ranges -----------------------------------------------------------------------

# These run for every field of every operand: each tests the plain Python type first,
# since the abstract-class check of numbers.Integral costs several times more.

def is_int(value: object) -> bool:
    """An integer (numpy integers included) that is not a bool: True is no dimension."""
    if isinstance(value, int):      # int and IntEnum: fast
        return not isinstance(value, bool)
    return isinstance(value, numbers.Integral)


def is_uint32(value: object) -> bool:
    if type(value) is int:
        return 0 <= value <= UINT32_MAX
    return is_int(value) and 0 <= value <= UINT32_MAX


def is_int32(value: object) -> bool:
    if type(value) is int:
        return INT32_MIN <= value <= INT32_MAX
    return is_int(value) and INT32_MIN <= value <= INT32_MAX


def is_float32(value: object) -> bool:
    """A finite number a HAL ``float`` field can hold."""
    if type(value) is float or type(value) is int:
        return -FLOAT32_MAX <= value <= FLOAT32_MAX     # False for NaN and infinities
    return (isinstance(value, numbers.Real) and not isinstance(value, bool)
            and math.isfinite(value) and abs(value) <= FLOAT32_MAX)


def is_uint32_list(values: object) -> bool:
    if type(values) is list:
        for v in values:
            if type(v) is not int or not 0 <= v <= UINT32_MAX:
                break
        else:
            return True
    return isinstance(values, (list, tuple)) and all(is_uint32(v) for v in values)


# --- operand and operation types --------------------------------------------------------

def is_extension_type(type_code: int) -> bool:
    """Extension operand and operation types live above the 16-bit base range."""
    return type_code > UINT16_MAX


def extension_prefix(type_code: int) -> int:
    return type_code >> _PREFIX_SHIFT


def is_scalar_type(type_code: int) -> bool:
    """Base scalar types (extension types are neither scalar nor tensor as far as the
    validator knows)."""
    return type_code in SCALAR_OPERAND_TYPES


def is_tensor_type(type_code: int) -> bool:
    return type_code in BASE_OPERAND_TYPES and type_code not in SCALAR_OPERAND_TYPES


def _type_name(enum_type, type_code: object) -> str:
    try:
        return enum_type(type_code).name
    except ValueError:
        if is_int(type_code) and is_extension_type(type_code):
            return f"extension type {type_code:#x}"
        return f"type {type_code!r}"


# Names go into messages built for every operand, failing or not: look base types up in a
# table rather than through the enum's constructor.
_OPERAND_TYPE_NAMES = {int(t): t.name for t in OperandType}
_OPERATION_TYPE_NAMES = {int(t): t.name for t in OperationType}


def check_type_code(type_code: object, base_types: frozenset[int],
                    extension_prefixes: frozenset[int], kind: str, where: str) -> None:
    """A base type of the HAL, or an extension type whose prefix the model declares."""
    if not is_uint32(type_code):
        fail(f"{where}: invalid {kind} type {type_code!r}")
    if is_extension_type(type_code):
        if extension_prefix(type_code) not in extension_prefixes:
            fail(f"{where}: extension {kind} type {type_code:#x} has prefix "
                 f"{extension_prefix(type_code)}, which extensionNameToPrefix does not list")
    elif type_code not in base_types:
        fail(f"{where}: invalid {kind} type {type_code}")


def operand_type_name(type_code: object) -> str:
    name = _OPERAND_TYPE_NAMES.get(type_code) if isinstance(type_code, int) else None
    return name if name is not None else _type_name(OperandType, type_code)


def operation_type_name(type_code: object) -> str:
    name = _OPERATION_TYPE_NAMES.get(type_code) if isinstance(type_code, int) else None
    return name if name is not None else _type_name(OperationType, type_code)


# --- names in messages ------------------------------------------------------------------

# Every model validated gets a label for each of its subgraphs; the usual ones are made once.
_REFERENCED_LABELS = tuple(f"referenced subgraph {i}" for i in range(64))


def subgraph_label(referenced_index: int | None) -> str:
    """How messages name a subgraph: None is the main subgraph."""
    if referenced_index is None:
        return "main subgraph"
    if referenced_index < len(_REFERENCED_LABELS):
        return _REFERENCED_LABELS[referenced_index]
    return f"referenced subgraph {referenced_index}"


def operation_label(index: int, type_code: object) -> str:
    return f"operation {index} ({operation_type_name(type_code)})"
