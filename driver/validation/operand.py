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

import math
from typing import NamedTuple

from ..errors import check
from ..hal.enums import OperandLifeTime as L, OperandType as T
from ..hal.structs import (DataLocation, Model, Operand, OperandExtraParams,
                           SymmPerChannelQuantParams)
from .common import (BASE_OPERAND_TYPES, CONSTANT_LIFETIMES, LIFETIME_NAMES, LIFETIMES,
                     MAX_BYTE_SIZE, byte_size, check_type_code, is_extension_type, is_float32,
                     is_int, is_int32, is_scalar_type, is_uint32, is_uint32_list,
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


#: The smallest double that is not 0 as a float32 (2**-150 rounds to 0, to even): the HAL's
#: scale is a float32, and a quantized type's scale of 0 would divide by zero.
SMALLEST_POSITIVE_SCALE = math.nextafter(2.0 ** -150, 1.0)


class ModelStorage(NamedTuple):
    """What operand locations may point into."""
    operand_values_size: int
    pool_sizes: tuple[int, ...]
    referenced_count: int
    extension_prefixes: tuple[int, ...]


def storage_of(model: Model, extension_prefixes: tuple[int, ...]) -> ModelStorage:
    """Assumes the pools were checked (each a Memory)."""
    return ModelStorage(len(model.operandValues), tuple(pool.size for pool in model.pools),
                        len(model.referenced), extension_prefixes)


def check_operand(operand: Operand, storage: ModelStorage, where: str) -> None:
    check(isinstance(operand, Operand), "{}: {} is not an Operand", where, type(operand).__name__)
    check_type_code(operand.type, BASE_OPERAND_TYPES, storage.extension_prefixes, "operand",
                    where)
    check(is_uint32(operand.numberOfConsumers),
          "{}: numberOfConsumers {!r} is not a uint32", where, operand.numberOfConsumers)
    check(is_int(operand.lifetime) and operand.lifetime in LIFETIMES,
          "{}: invalid lifetime {!r}", where, operand.lifetime)
    check_dimensions(operand, where)
    check_scale(operand, where)
    check_zero_point(operand, where)
    check_extra_params(operand, where)
    check_location(operand, storage, where)


def check_dimensions(operand: Operand, where: str) -> None:
    dims, type_code = operand.dimensions, operand.type
    check(is_uint32_list(dims), "{}: dimensions {!r} are not a list of uint32", where, dims)
    if is_extension_type(type_code):
        return   # whether an extension type is a tensor is not known here
    name = operand_type_name(type_code)
    if is_scalar_type(type_code):
        check(len(dims) == 0, "{}: scalar {} has dimensions {}", where, name, list(dims))
        return
    if operand.lifetime in CONSTANT_LIFETIMES:
        check(len(dims) > 0, "{}: constant {} tensor has unknown rank", where, name)
        check(all(d > 0 for d in dims),
              "{}: constant {} tensor has unknown dimensions {}", where, name, list(dims))
    size = byte_size(type_code, dims, unknown_dimension=1)
    check(size is None or size <= MAX_BYTE_SIZE, "{}: {} tensor of dimensions "
          "{} needs more than {} bytes", where, name, list(dims), MAX_BYTE_SIZE)


def check_scale(operand: Operand, where: str) -> None:
    scale, type_code = operand.scale, operand.type
    check(is_float32(scale), "{}: scale {!r} is not a finite float32", where, scale)
    name = operand_type_name(type_code)
    if type_code in _NO_SCALE_TYPES or is_extension_type(type_code):
        check(scale == 0, "{}: {} operand has non-zero scale {}", where, name, scale)
    elif type_code == T.TENSOR_INT32:
        # TENSOR_INT32 carries a scale when it is a quantized bias.
        check(scale >= 0, "{}: TENSOR_INT32 operand has negative scale {}", where, scale)
    elif type_code in _POSITIVE_SCALE_TYPES:
        check(scale > 0, "{}: {} operand has non-positive scale {}", where, name, scale)
        check(scale >= SMALLEST_POSITIVE_SCALE,
              "{}: {} operand has scale {}, which is 0 as a float32", where, name, scale)


def check_zero_point(operand: Operand, where: str) -> None:
    zero_point, type_code = operand.zeroPoint, operand.type
    check(is_int32(zero_point), "{}: zeroPoint {!r} is not an int32", where, zero_point)
    if type_code in _OEM_TYPES:
        return   # OEM data is opaque: any quantization is the vendor's business
    name = operand_type_name(type_code)
    if type_code in _ZERO_POINT_RANGES:
        low, high = _ZERO_POINT_RANGES[type_code]
        check(low <= zero_point <= high,
              "{}: {} operand has zeroPoint {} outside [{}, {}]",
              where, name, zero_point, low, high)
    else:
        check(zero_point == 0, "{}: {} operand has non-zero zeroPoint {}", where, name, zero_point)


def check_extra_params(operand: Operand, where: str) -> None:
    params, type_code = operand.extraParams, operand.type
    check(isinstance(params, OperandExtraParams),
          "{}: extraParams {!r} is not an OperandExtraParams", where, params)
    check(params.channelQuant is None or params.extension is None,
          "{}: extraParams sets both channelQuant and extension", where)
    name = operand_type_name(type_code)
    if type_code == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        check(params.channelQuant is not None,
              "{}: TENSOR_QUANT8_SYMM_PER_CHANNEL operand has no channelQuant", where)
        check_channel_quant(params.channelQuant, operand.dimensions, where)
    elif is_extension_type(type_code):
        check(params.channelQuant is None, "{}: extension operand has channelQuant", where)
        check(params.extension is None or isinstance(params.extension, (bytes, bytearray)),
              "{}: extension parameters are not bytes", where)
    else:
        check(params.channelQuant is None, "{}: {} operand has channelQuant", where, name)
        check(params.extension is None, "{}: {} operand has extension parameters", where, name)


def check_channel_quant(channel_quant: SymmPerChannelQuantParams, dims, where: str) -> None:
    check(isinstance(channel_quant, SymmPerChannelQuantParams),
          "{}: channelQuant {!r} is not a SymmPerChannelQuantParams", where, channel_quant)
    channel_dim = channel_quant.channelDim
    check(is_uint32(channel_dim) and channel_dim < len(dims),
          "{}: channelQuant.channelDim {!r} is not a dimension index "
          "of rank {}", where, channel_dim, len(dims))
    channels = dims[channel_dim]
    check(channels != 0, "{}: channel dimension {} is unknown", where, channel_dim)
    scales = channel_quant.scales
    check(isinstance(scales, (list, tuple)),
          "{}: channelQuant.scales {!r} is not a list", where, scales)
    check(len(scales) == channels,
          "{}: channelQuant has {} scales for {} channels", where, len(scales), channels)
    for i, scale in enumerate(scales):
        check(is_float32(scale) and scale >= SMALLEST_POSITIVE_SCALE,
              "{}: channelQuant.scales[{}] = {!r} is not a positive finite float32",
              where, i, scale)


def check_location(operand: Operand, storage: ModelStorage, where: str) -> None:
    location, lifetime = operand.location, operand.lifetime
    check(isinstance(location, DataLocation),
          "{}: location {!r} is not a DataLocation", where, location)
    pool, offset, length = location.poolIndex, location.offset, location.length
    check(is_uint32(pool) and is_uint32(offset) and is_uint32(length),
          "{}: location fields {!r} are not uint32", where, (pool, offset, length))
    name = LIFETIME_NAMES[lifetime]
    check((operand.type == T.SUBGRAPH) == (lifetime == L.SUBGRAPH), "{}: operand of type "
          "{} cannot have lifetime {}", where, operand_type_name(operand.type), name)
    if lifetime in (L.CONSTANT_COPY, L.SUBGRAPH):
        check(pool == 0, "{}: {} with non-zero poolIndex {}", where, name, pool)
    check_location_bounds(operand, storage, where)
    if lifetime == L.SUBGRAPH:
        check(length == 0, "{}: SUBGRAPH with non-zero length {}", where, length)
    elif lifetime not in _STORED_LIFETIMES:
        check(pool == 0 and offset == 0 and length == 0,
              "{}: {} operand has location (poolIndex {}, offset {}, "
              "length {}), expected all zero", where, name, pool, offset, length)
    if lifetime in CONSTANT_LIFETIMES and not is_extension_type(operand.type):
        expected = byte_size(operand.type, operand.dimensions)
        check(length == expected, "{}: constant {} of "
              "dimensions {} needs {} bytes, location gives {}",
              where, operand_type_name(operand.type), list(operand.dimensions), expected, length)


#: Lifetimes whose location points somewhere (the others have an all-zero location).
_STORED_LIFETIMES = frozenset({L.CONSTANT_COPY, L.CONSTANT_REFERENCE, L.SUBGRAPH})


def check_location_bounds(operand: Operand, storage: ModelStorage, where: str) -> None:
    """The location lies inside the model's storage (or names one of its referenced
    subgraphs): the one operand rule that depends on the rest of the model."""
    location, lifetime = operand.location, operand.lifetime
    if lifetime not in _STORED_LIFETIMES:
        return      # most operands: an all-zero location
    pool, offset, end = location.poolIndex, location.offset, location.offset + location.length
    if lifetime == L.CONSTANT_COPY:
        check(end <= storage.operand_values_size, "{}: CONSTANT_COPY bytes [{}, "
              "{}) outside operandValues of {} bytes",
              where, offset, end, storage.operand_values_size)
    elif lifetime == L.CONSTANT_REFERENCE:
        pool_sizes = storage.pool_sizes
        check(pool < len(pool_sizes), "{}: CONSTANT_REFERENCE poolIndex {} out of "
              "range ({} pools)", where, pool, len(pool_sizes))
        check(end <= pool_sizes[pool], "{}: CONSTANT_REFERENCE bytes [{}, {}) "
              "outside pool {} of {} bytes", where, offset, end, pool, pool_sizes[pool])
    else:
        check(offset < storage.referenced_count, "{}: subgraph reference {} out "
              "of range ({} referenced subgraphs)", where, offset, storage.referenced_count)
