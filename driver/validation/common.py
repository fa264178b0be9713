"""Small pure helpers shared by the model and request validators: value-range predicates,
operand-type classification, byte sizes and the names used in messages."""
from __future__ import annotations

import numbers

from ..hal.enums import (ExtensionTypeEncoding, OperandLifeTime, OperandType, OperationType,
                         SCALAR_OPERAND_TYPES)
from ..errors import check
from ..hal.dtypes import byte_size  # noqa: F401  (re-exported to validators)
from ..hal.structs import Subgraph

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

# An exact int (or float) is tested first: the ABC's isinstance costs several times more,
# and these run on every field of every operand.

def is_int(value: object) -> bool:
    """An integer (numpy integers included) that is not a bool: True is no dimension."""
    return type(value) is int or (isinstance(value, numbers.Integral)
                                  and not isinstance(value, bool))


def is_uint32(value: object) -> bool:
    return is_int(value) and 0 <= value <= UINT32_MAX


def is_int32(value: object) -> bool:
    return is_int(value) and INT32_MIN <= value <= INT32_MAX


def is_float32(value: object) -> bool:
    """A finite number a HAL ``float`` field can hold."""
    return ((type(value) is float or isinstance(value, numbers.Real)
             and not isinstance(value, bool))
            and -FLOAT32_MAX <= value <= FLOAT32_MAX)     # False for NaN and infinities


def is_uint32_list(values: object) -> bool:
    return isinstance(values, (list, tuple)) and all(map(is_uint32, values))


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


def _type_name(enum_type, type_code: object) -> str:
    try:
        return enum_type(type_code).name
    except ValueError:
        if is_int(type_code) and is_extension_type(type_code):
            return f"extension type {type_code:#x}"
        return f"type {type_code!r}"


_OPERAND_TYPE_NAMES = {int(t): t.name for t in OperandType}
_OPERATION_TYPE_NAMES = {int(t): t.name for t in OperationType}
#: The names of the lifetimes, by value (a lifetime field may hold a plain int).
LIFETIME_NAMES = {int(t): t.name for t in OperandLifeTime}


def check_type_code(type_code: object, base_types: frozenset[int],
                    extension_prefixes: tuple[int, ...], kind: str, where: str) -> None:
    """A base type of the HAL, or an extension type whose prefix the model declares."""
    check(is_uint32(type_code), "{}: invalid {} type {!r}", where, kind, type_code)
    if is_extension_type(type_code):
        check(extension_prefix(type_code) in extension_prefixes, "{}: extension {} "
              "type {:#x} has prefix {}, which extensionNameToPrefix does not list",
              where, kind, type_code, extension_prefix(type_code))
    else:
        check(type_code in base_types, "{}: invalid {} type {}", where, kind, type_code)


# The names by table first: any value equal to a type's value names it, as the enum's
# constructor would (a list is no key: TypeError).

def operand_type_name(type_code: object) -> str:
    try:
        return _OPERAND_TYPE_NAMES[type_code]
    except (KeyError, TypeError):
        return _type_name(OperandType, type_code)


def operation_type_name(type_code: object) -> str:
    try:
        return _OPERATION_TYPE_NAMES[type_code]
    except (KeyError, TypeError):
        return _type_name(OperationType, type_code)


# --- names in messages ------------------------------------------------------------------

def subgraph_label(referenced_index: int | None) -> str:
    """How messages name a subgraph: None is the main subgraph."""
    return "main subgraph" if referenced_index is None else f"referenced subgraph {referenced_index}"


def node_label(node: int) -> str:
    """How messages name a subgraph by its node: 0 is the main subgraph, i + 1 referenced[i]."""
    return subgraph_label(None if node == 0 else node - 1)


def callee_nodes(subgraph: Subgraph) -> list[int]:
    """The nodes of the subgraphs that ``subgraph`` names, each once, in order."""
    return sorted({operand.location.offset + 1 for operand in subgraph.operands
                   if operand.lifetime == OperandLifeTime.SUBGRAPH})


def operation_label(index: int, type_code: object) -> str:
    return f"operation {index} ({operation_type_name(type_code)})"
