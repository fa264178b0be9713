"""Checks of one operand on its own: type, dimensions, quantization parameters,
extraParams, lifetime and location.

``where`` names the operand in messages ("main subgraph, operand 3"). The rules follow the
HAL 1.3 reference validator, with these deliberate additions, each for a driver that must
never crash on what a client sends:
- a tensor's known dimensions must describe at most 2**32-1 bytes;
- scales are finite float32 values, and a scale that must be positive is positive as the
  HAL's float32 (a double below about 7e-46 rounds to 0 there);
- only TENSOR_QUANT8_SYMM_PER_CHANNEL carries channelQuant and only extension types carry
  extension parameters, OEM types included;
- constants of OEM types must hold exactly their bytes as this driver stores them (one
  byte per element), since their values are read like any other constant.
"""
from __future__ import annotations

import enum
import math
from math import prod
from operator import attrgetter
from typing import NamedTuple

from ..errors import fail
from ..hal.enums import OperandLifeTime as L, OperandType as T
from ..hal.structs import (DataLocation, Model, Operand, OperandExtraParams,
                           SymmPerChannelQuantParams)
from .common import (BASE_OPERAND_TYPES, CONSTANT_LIFETIMES, FLOAT32_MAX, INT32_MAX, INT32_MIN,
                     LIFETIMES, MAX_BYTE_SIZE, UINT32_MAX, byte_size, check_type_code,
                     element_size, is_extension_type, is_float32, is_int, is_int32,
                     is_scalar_type, is_uint32, is_uint32_list,
                     operand_type_name)

#: Types whose scale must be exactly 0.
_NO_SCALE_TYPES = frozenset({
    T.FLOAT16, T.FLOAT32, T.INT32, T.UINT32, T.BOOL, T.SUBGRAPH, T.TENSOR_FLOAT16,
    T.TENSOR_FLOAT32, T.TENSOR_BOOL8, T.TENSOR_QUANT8_SYMM_PER_CHANNEL,
})
#: Quantized types whose scale must be positive.
_POSITIVE_SCALE_TYPES = frozenset({
    T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM,
    T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT16_SYMM,
})
#: Inclusive zero-point ranges; types not listed (except OEM ones) need a zero point of 0.
_ZERO_POINT_RANGES = {
    T.TENSOR_QUANT8_ASYMM: (0, 255),
    T.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
    T.TENSOR_QUANT16_ASYMM: (0, 65535),
}
_OEM_TYPES = frozenset({T.OEM, T.TENSOR_OEM_BYTE})


class ModelStorage(NamedTuple):
    """What operand locations may point into. A tuple: one is made for every model
    validated, and a frozen dataclass costs twice as much to make."""
    operand_values_size: int
    pool_sizes: tuple[int, ...]
    referenced_count: int
    extension_prefixes: frozenset[int]


_LIFETIME_NAMES = {int(t): t.name for t in L}


# --- the fast path ----------------------------------------------------------------------
#
# Nearly every operand is plainly valid. ``operand_is_plainly_valid`` recognises the
# common case with one table lookup and a few comparisons, and answers False whenever
# anything is unusual; ``check_operand`` then runs the detailed checks, which find the
# error (or accept the operand) and name it. The fast path therefore only has to be
# conservative: it never accepts an operand check_operand would reject.
#
# It is two checks: the classes of the fields, then their values, the part of the latter
# that depends on the operand alone remembered by content (_PLAIN_OPERANDS). A model that
# model_fingerprint fingerprints has plain classes throughout (that function's contract),
# so validation of such a model runs the value checks alone.

class _Storage(enum.Enum):
    """Where a lifetime's value lives, as far as its location is concerned."""
    NONE = enum.auto()              # location all zero
    OPERAND_VALUES = enum.auto()    # CONSTANT_COPY
    POOL = enum.auto()              # CONSTANT_REFERENCE
    SUBGRAPH = enum.auto()          # an index into Model.referenced


class _PlainRule(NamedTuple):
    """What check_operand requires of an operand of one base type and lifetime, folded
    into ranges: scale in [scale_low, scale_high] (a positive scale is one of at least
    SMALLEST_POSITIVE_SCALE), zeroPoint in [zero_point_low, zero_point_high]. A tuple, so
    that the fast path unpacks it at once."""
    scalar: bool
    constant: bool
    element_size: int           # 0: no storage (SUBGRAPH)
    scale_low: float
    scale_high: float
    zero_point_low: int
    zero_point_high: int
    storage: _Storage


#: The smallest double that is not 0 as a float32 (2**-150 rounds to 0, to even): the HAL's
#: scale is a float32, and a quantized type's scale of 0 would divide by zero.
SMALLEST_POSITIVE_SCALE = math.nextafter(2.0 ** -150, 1.0)
_STORAGE_OF_LIFETIME = {L.CONSTANT_COPY: _Storage.OPERAND_VALUES,
                        L.CONSTANT_REFERENCE: _Storage.POOL, L.SUBGRAPH: _Storage.SUBGRAPH}


def _plain_rule(type_code: T, lifetime: L) -> _PlainRule:
    if type_code in _NO_SCALE_TYPES:
        scale_range = (0.0, 0.0)
    elif type_code == T.TENSOR_INT32:
        scale_range = (0.0, FLOAT32_MAX)
    elif type_code in _POSITIVE_SCALE_TYPES:
        scale_range = (SMALLEST_POSITIVE_SCALE, FLOAT32_MAX)
    else:   # OEM types
        scale_range = (-FLOAT32_MAX, FLOAT32_MAX)
    if type_code in _OEM_TYPES:
        zero_point_range = (INT32_MIN, INT32_MAX)
    else:
        zero_point_range = _ZERO_POINT_RANGES.get(type_code, (0, 0))
    return _PlainRule(is_scalar_type(type_code), lifetime in CONSTANT_LIFETIMES,
                      element_size(type_code) or 0, *scale_range, *zero_point_range,
                      _STORAGE_OF_LIFETIME.get(lifetime, _Storage.NONE))


#: Rules by (type, lifetime) for every combination check_location allows (SUBGRAPH type
#: exactly with SUBGRAPH lifetime). Per-channel operands, which carry channelQuant, and
#: extension types are left to the detailed checks.
_PLAIN_RULES = {(int(type_code), int(lifetime)): _plain_rule(type_code, lifetime)
                for type_code in T if type_code != T.TENSOR_QUANT8_SYMM_PER_CHANNEL
                for lifetime in L if (type_code == T.SUBGRAPH) == (lifetime == L.SUBGRAPH)}
#: The classes of a plain operand's fields (type, lifetime, numberOfConsumers, zeroPoint,
#: scale, dimensions, location, extraParams): the enum fields hold the enum or a plain int,
#: never a bool or a float that equals one.
_PLAIN_FIELD_CLASSES = frozenset(
    (type_class, lifetime_class, int, int, float, list, DataLocation, OperandExtraParams)
    for type_class in (int, T) for lifetime_class in (int, L))
_THREE_INTS = (int, int, int)
_NO_LOCATION = (0, 0, 0)
_INT = frozenset({int})
# Enum members as module constants: looking one up through its class costs more than
# the comparison it is used in.
_NO_STORAGE, _IN_SUBGRAPH = _Storage.NONE, _Storage.SUBGRAPH
_IN_OPERAND_VALUES = _Storage.OPERAND_VALUES


def operand_is_plainly_valid(operand: Operand, storage: ModelStorage) -> bool:
    """True only for an operand check_operand accepts; False for anything unusual (which
    may still be valid)."""
    return (operand_has_plain_classes(operand)
            and operand_values_are_plainly_valid(operand, storage))


def operand_has_plain_classes(operand: object) -> bool:
    """Whether every field of ``operand`` has the class a well-formed model gives it: an
    Operand, exact ints (the enum fields: the enum or an int), a float scale, a list of
    exact ints for the dimensions, a DataLocation of exact ints and an OperandExtraParams.
    Never a bool or a float that equals an int."""
    if type(operand) is not Operand:
        return False
    location = operand.location
    return ((type(operand.type), type(operand.lifetime), type(operand.numberOfConsumers),
             type(operand.zeroPoint), type(operand.scale), type(operand.dimensions),
             type(location), type(operand.extraParams)) in _PLAIN_FIELD_CLASSES
            and (type(location.poolIndex), type(location.offset),
                 type(location.length)) == _THREE_INTS
            and _INT.issuperset(map(type, operand.dimensions)))


#: Operands of plain classes found plainly valid, by content (every field but extraParams,
#: which must be empty), with where their location points. Fuzz inputs, and a client's
#: successive models, share most of their operands: the checks that depend on the operand
#: alone run once for each; only the bounds of its location, which depend on the model,
#: are checked on every use. Only operands found valid are kept (a NaN scale, equal to
#: nothing, is never valid), only those of a small rank (a key holds the dimensions), and
#: the table is emptied when full.
_PLAIN_OPERANDS: dict[tuple, _Storage] = {}
PLAIN_OPERANDS_CAPACITY = 4096
PLAIN_OPERANDS_MAX_RANK = 8
_PLAIN_OPERANDS_MAX_KEY_LENGTH = 8 + PLAIN_OPERANDS_MAX_RANK     # the fields, then the dimensions


def operand_values_are_plainly_valid(operand: Operand, storage: ModelStorage) -> bool:
    """operand_is_plainly_valid for an operand of plain classes (operand_has_plain_classes,
    or any operand of a model that model_fingerprint fingerprints): the value checks alone.
    Nearly every operand takes this path."""
    extra = operand.extraParams
    if extra.channelQuant is not None or extra.extension is not None:
        return False
    location = operand.location
    pool, offset, length = location.poolIndex, location.offset, location.length
    # Plain classes: no True standing for 1, no 1.0 for 1 (which would share a key).
    key = (operand.type, operand.lifetime, operand.numberOfConsumers, operand.zeroPoint,
           operand.scale, pool, offset, length, *operand.dimensions)
    where = _PLAIN_OPERANDS.get(key)
    if where is None:
        where = _plain_operand_storage(operand, pool, offset, length)
        if where is None:
            return False
        if len(key) <= _PLAIN_OPERANDS_MAX_KEY_LENGTH:
            if len(_PLAIN_OPERANDS) >= PLAIN_OPERANDS_CAPACITY:
                _PLAIN_OPERANDS.clear()
            _PLAIN_OPERANDS[key] = where
    # The bounds of the location in this model.
    if where is _NO_STORAGE:
        return True
    if where is _IN_OPERAND_VALUES:
        return offset + length <= storage.operand_values_size
    if where is _IN_SUBGRAPH:
        return offset < storage.referenced_count
    return pool < len(storage.pool_sizes) and offset + length <= storage.pool_sizes[pool]


def _plain_operand_storage(operand: Operand, pool: int, offset: int,
                           length: int) -> _Storage | None:
    """Where the location of an operand of plain classes without extraParams points, if
    the operand is plainly valid in any model whose storage bounds its location; None if
    not (it may still be valid). Written for the interpreter: fields read directly (it
    specialises attribute reads, attrgetter it does not), ranges in chained comparisons,
    the rest from one rule."""
    rule = _PLAIN_RULES.get((operand.type, operand.lifetime))
    if rule is None:
        return None
    (scalar, constant, element_bytes, scale_low, scale_high, zero_point_low, zero_point_high,
     where) = rule
    if not (0 <= operand.numberOfConsumers <= UINT32_MAX
            and zero_point_low <= operand.zeroPoint <= zero_point_high
            and scale_low <= operand.scale <= scale_high):
        return None

    # Dimensions (and, for constants, the byte size their location must give).
    dims = operand.dimensions
    if scalar:
        if dims:
            return None
        size = element_bytes
    elif dims:
        if constant:
            if min(dims) <= 0:
                return None
            size = element_bytes * prod(dims)
        else:
            # Unknown dimensions (0) count as 1; a positive dimension is at most the
            # product, so the product's bound also bounds each dimension.
            if min(dims) < 0:
                return None
            size = element_bytes * prod(filter(None, dims))
        if size > MAX_BYTE_SIZE:
            return None
    elif constant:
        return None                 # a constant tensor of unknown rank
    else:
        size = 0

    # The location, but for its bounds.
    if where is _NO_STORAGE:
        return where if (pool, offset, length) == _NO_LOCATION else None
    if where is _IN_SUBGRAPH:
        return where if pool == 0 and length == 0 and offset >= 0 else None
    if length != size or not 0 <= offset <= UINT32_MAX:
        return None
    if where is _IN_OPERAND_VALUES:
        return where if pool == 0 else None
    return where if pool >= 0 else None


_size_of = attrgetter("size")


def storage_of(model: Model, extension_prefixes: frozenset[int]) -> ModelStorage:
    """Assumes the pools were checked (each a Memory)."""
    return ModelStorage(len(model.operandValues), tuple(map(_size_of, model.pools)),
                        len(model.referenced), extension_prefixes)


def check_operand(operand: Operand, storage: ModelStorage, where: str) -> None:
    if not isinstance(operand, Operand):
        fail(f"{where}: {type(operand).__name__} is not an Operand")
    check_operand_type(operand.type, storage.extension_prefixes, where)
    if not is_uint32(operand.numberOfConsumers):
        fail(f"{where}: numberOfConsumers {operand.numberOfConsumers!r} is not a uint32")
    if not (is_int(operand.lifetime) and operand.lifetime in LIFETIMES):
        fail(f"{where}: invalid lifetime {operand.lifetime!r}")
    check_dimensions(operand, where)
    check_scale(operand, where)
    check_zero_point(operand, where)
    check_extra_params(operand, where)
    check_location(operand, storage, where)


def check_operand_type(type_code: object, extension_prefixes: frozenset[int], where: str) -> None:
    check_type_code(type_code, BASE_OPERAND_TYPES, extension_prefixes, "operand", where)


def check_dimensions(operand: Operand, where: str) -> None:
    dims = operand.dimensions
    if not is_uint32_list(dims):
        fail(f"{where}: dimensions {dims!r} are not a list of uint32")
    type_code = operand.type
    if is_extension_type(type_code):
        return   # whether an extension type is a tensor is not known here
    name = operand_type_name(type_code)
    if is_scalar_type(type_code):
        if len(dims) != 0:
            fail(f"{where}: scalar {name} has dimensions {list(dims)}")
        return
    if operand.lifetime in CONSTANT_LIFETIMES:
        if len(dims) <= 0:
            fail(f"{where}: constant {name} tensor has unknown rank")
        if not all(d > 0 for d in dims):
            fail(f"{where}: constant {name} tensor has unknown dimensions {list(dims)}")
    size = byte_size(type_code, dims, unknown_dimension=1)
    if not (size is None or size <= MAX_BYTE_SIZE):
        fail(f"{where}: {name} tensor of dimensions {list(dims)} needs more than "
             f"{MAX_BYTE_SIZE} bytes")


def check_scale(operand: Operand, where: str) -> None:
    scale, type_code = operand.scale, operand.type
    if not is_float32(scale):
        fail(f"{where}: scale {scale!r} is not a finite float32")
    name = operand_type_name(type_code)
    if type_code in _NO_SCALE_TYPES or is_extension_type(type_code):
        if scale != 0:
            fail(f"{where}: {name} operand has non-zero scale {scale}")
    elif type_code == T.TENSOR_INT32:
        # TENSOR_INT32 carries a scale when it is a quantized bias.
        if scale < 0:
            fail(f"{where}: TENSOR_INT32 operand has negative scale {scale}")
    elif type_code in _POSITIVE_SCALE_TYPES:
        if scale <= 0:
            fail(f"{where}: {name} operand has non-positive scale {scale}")
        if scale < SMALLEST_POSITIVE_SCALE:
            fail(f"{where}: {name} operand has scale {scale}, which is 0 as a float32")


def check_zero_point(operand: Operand, where: str) -> None:
    zero_point, type_code = operand.zeroPoint, operand.type
    if not is_int32(zero_point):
        fail(f"{where}: zeroPoint {zero_point!r} is not an int32")
    if type_code in _OEM_TYPES:
        return   # OEM data is opaque: any quantization is the vendor's business
    name = operand_type_name(type_code)
    if type_code in _ZERO_POINT_RANGES:
        low, high = _ZERO_POINT_RANGES[type_code]
        if not low <= zero_point <= high:
            fail(f"{where}: {name} operand has zeroPoint {zero_point} outside [{low}, {high}]")
    else:
        if zero_point != 0:
            fail(f"{where}: {name} operand has non-zero zeroPoint {zero_point}")


def check_extra_params(operand: Operand, where: str) -> None:
    params = operand.extraParams
    if not isinstance(params, OperandExtraParams):
        fail(f"{where}: extraParams {params!r} is not an OperandExtraParams")
    if not (params.channelQuant is None or params.extension is None):
        fail(f"{where}: extraParams sets both channelQuant and extension")
    type_code = operand.type
    name = operand_type_name(type_code)
    if type_code == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        if params.channelQuant is None:
            fail(f"{where}: TENSOR_QUANT8_SYMM_PER_CHANNEL operand has no channelQuant")
        check_channel_quant(params.channelQuant, operand.dimensions, where)
    elif is_extension_type(type_code):
        if params.channelQuant is not None:
            fail(f"{where}: extension operand has channelQuant")
        if not (params.extension is None or isinstance(params.extension, (bytes, bytearray))):
            fail(f"{where}: extension parameters are not bytes")
    else:
        if params.channelQuant is not None:
            fail(f"{where}: {name} operand has channelQuant")
        if params.extension is not None:
            fail(f"{where}: {name} operand has extension parameters")


def check_channel_quant(channel_quant: SymmPerChannelQuantParams, dims, where: str) -> None:
    if not isinstance(channel_quant, SymmPerChannelQuantParams):
        fail(f"{where}: channelQuant {channel_quant!r} is not a SymmPerChannelQuantParams")
    channel_dim = channel_quant.channelDim
    if not (is_uint32(channel_dim) and channel_dim < len(dims)):
        fail(f"{where}: channelQuant.channelDim {channel_dim!r} is not a dimension index "
             f"of rank {len(dims)}")
    channels = dims[channel_dim]
    if channels == 0:
        fail(f"{where}: channel dimension {channel_dim} is unknown")
    scales = channel_quant.scales
    if not isinstance(scales, (list, tuple)):
        fail(f"{where}: channelQuant.scales {scales!r} is not a list")
    if len(scales) != channels:
        fail(f"{where}: channelQuant has {len(scales)} scales for {channels} channels")
    for i, scale in enumerate(scales):
        if not (is_float32(scale) and scale >= SMALLEST_POSITIVE_SCALE):
            fail(f"{where}: channelQuant.scales[{i}] = {scale!r} is not a positive finite float32")


def check_location(operand: Operand, storage: ModelStorage, where: str) -> None:
    location = operand.location
    if not isinstance(location, DataLocation):
        fail(f"{where}: location {location!r} is not a DataLocation")
    pool, offset, length = location.poolIndex, location.offset, location.length
    if not (is_uint32(pool) and is_uint32(offset) and is_uint32(length)):
        fail(f"{where}: location fields {(pool, offset, length)!r} are not uint32")
    lifetime = operand.lifetime
    name = _LIFETIME_NAMES[lifetime]
    if (operand.type == T.SUBGRAPH) != (lifetime == L.SUBGRAPH):
        fail(f"{where}: operand of type {operand_type_name(operand.type)} cannot have "
             f"lifetime {name}")
    if lifetime == L.CONSTANT_COPY:
        if pool != 0:
            fail(f"{where}: CONSTANT_COPY with non-zero poolIndex {pool}")
        if offset + length > storage.operand_values_size:
            fail(f"{where}: CONSTANT_COPY bytes [{offset}, {offset + length}) outside "
                 f"operandValues of {storage.operand_values_size} bytes")
    elif lifetime == L.CONSTANT_REFERENCE:
        if pool >= len(storage.pool_sizes):
            fail(f"{where}: CONSTANT_REFERENCE poolIndex {pool} out of range "
                 f"({len(storage.pool_sizes)} pools)")
        if offset + length > storage.pool_sizes[pool]:
            fail(f"{where}: CONSTANT_REFERENCE bytes [{offset}, {offset + length}) outside "
                 f"pool {pool} of {storage.pool_sizes[pool]} bytes")
    elif lifetime == L.SUBGRAPH:
        if pool != 0:
            fail(f"{where}: SUBGRAPH with non-zero poolIndex {pool}")
        if offset >= storage.referenced_count:
            fail(f"{where}: subgraph reference {offset} out of range "
                 f"({storage.referenced_count} referenced subgraphs)")
        if length != 0:
            fail(f"{where}: SUBGRAPH with non-zero length {length}")
    else:   # TEMPORARY_VARIABLE, SUBGRAPH_INPUT, SUBGRAPH_OUTPUT, NO_VALUE: no storage
        if not (pool == 0 and offset == 0 and length == 0):
            fail(f"{where}: {name} operand has location (poolIndex {pool}, offset {offset}, "
                 f"length {length}), expected all zero")
    if lifetime in CONSTANT_LIFETIMES and not is_extension_type(operand.type):
        expected = byte_size(operand.type, operand.dimensions)
        if length != expected:
            fail(f"{where}: constant {operand_type_name(operand.type)} of dimensions "
                 f"{list(operand.dimensions)} needs {expected} bytes, location gives {length}")
