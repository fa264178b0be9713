"""check_request: a Request against the main subgraph of an already validated Model.

As in the HAL 1.3 reference:
- an argument with hasNoValue has an all-zero location and no dimensions; inputs and
  outputs may both be omitted;
- otherwise its location lies inside a request pool, and its dimensions (if any) have the
  model's rank (when known) and agree with every dimension the model knows;
- inputs end up fully specified; outputs may stay partly unknown unless the caller forbids
  it (executeFenced does, as its outputs cannot report shapes);
- an output buffer smaller than its data is not invalid: the execution reports
  OUTPUT_INSUFFICIENT_SIZE.
Stricter than the reference, so that the driver never reads or sizes past what a client
described: an input's length equals its byte size, a scalar argument has no dimensions,
and sizes beyond 2**32-1 bytes are refused.

A pool may be a token naming a driver-managed buffer (memory domains): an argument in it
has offset and length 0, and its dimensions may stay unknown here, as the buffer knows
them. What only the buffer can tell (does the token name a live buffer, was the buffer
allocated for this role, do the dimensions fit it) is checked when the request is bound
for an execution (driver/buffers.py).
"""
from __future__ import annotations

from typing import Sequence

from ..errors import check
from ..hal.structs import DataLocation, MemoryPool, Model, Operand, Request, RequestArgument
from .common import (MAX_BYTE_SIZE, byte_size, is_extension_type, is_scalar_type, is_uint32,
                     is_uint32_list)
from .model import check_memory
from .structure import naming_missing_fields


@naming_missing_fields("request")
def check_request(request: Request, model: Model, allow_unspecified_output: bool = True) -> None:
    """Raise ValidationError, naming the argument or pool at fault, unless ``request`` is
    a valid request for ``model`` (which check_model accepted)."""
    check(isinstance(request, Request), "request: {} is not a Request", type(request).__name__)
    pool_sizes = check_request_pools(request.pools)
    main = model.main
    check_arguments(request.inputs, main.inputIndexes, main.operands, pool_sizes,
                    "input", allow_unspecified=False)
    check_arguments(request.outputs, main.outputIndexes, main.operands, pool_sizes,
                    "output", allow_unspecified=allow_unspecified_output)


#: The "size" check_request_pools gives a pool naming a driver-managed buffer.
DEVICE_MEMORY = -1


def check_request_pools(pools: list) -> list[int]:
    """Each pool is a shared memory (hidlMemory) or a token; returns their sizes
    (DEVICE_MEMORY for a token)."""
    check(isinstance(pools, list), "request: pools is not a list")
    for i, pool in enumerate(pools):
        where = f"request pool {i}"
        check(isinstance(pool, MemoryPool), "{}: {} is not a MemoryPool",
              where, type(pool).__name__)
        check((pool.hidlMemory is None) != (pool.token is None),
              "{}: exactly one of hidlMemory and token must be set", where)
        if pool.token is not None:
            check(is_uint32(pool.token) and pool.token > 0, "{}: token {!r} is not a "
                  "positive uint32", where, pool.token)
        else:
            check_memory(pool.hidlMemory, where)
    return [DEVICE_MEMORY if pool.token is not None else pool.hidlMemory.size for pool in pools]


def check_arguments(arguments: list, operand_indexes: Sequence[int], operands: list[Operand],
                    pool_sizes: list[int], kind: str, *, allow_unspecified: bool) -> None:
    check(isinstance(arguments, list), "request: {}s is not a list", kind)
    check(len(arguments) == len(operand_indexes),
          "request: {} {}s given, the model has {}", len(arguments), kind, len(operand_indexes))
    for position, (argument, index) in enumerate(zip(arguments, operand_indexes)):
        where = f"request {kind} {position} (operand {index})"
        check(isinstance(argument, RequestArgument),
              "{}: {} is not a RequestArgument", where, type(argument).__name__)
        check_argument(argument, operands[index], pool_sizes, where,
                       is_input=kind == "input", allow_unspecified=allow_unspecified)


def check_argument(argument: RequestArgument, operand: Operand, pool_sizes: list[int],
                   where: str, *, is_input: bool, allow_unspecified: bool) -> None:
    location, dims = argument.location, argument.dimensions
    check(isinstance(argument.hasNoValue, bool), "{}: hasNoValue is not a bool", where)
    check(isinstance(location, DataLocation), "{}: location is not a DataLocation", where)
    pool, offset, length = location.poolIndex, location.offset, location.length
    check(is_uint32(pool) and is_uint32(offset) and is_uint32(length),
          "{}: location fields {!r} are not uint32", where, (pool, offset, length))
    check(is_uint32_list(dims), "{}: dimensions {!r} are not a list of uint32", where, dims)
    if argument.hasNoValue:
        check(pool == 0 and offset == 0 and length == 0 and len(dims) == 0,
              "{}: has no value, yet a location or dimensions", where)
        return
    check(pool < len(pool_sizes), "{}: poolIndex {} out of range ({} pools)",
          where, pool, len(pool_sizes))
    if pool_sizes[pool] == DEVICE_MEMORY:
        check(offset == 0 and length == 0, "{}: offset {} and length {} in a driver-managed "
              "buffer, where both must be 0", where, offset, length)
        check_dimensions(dims, operand, where, allow_unspecified=True)
        return
    check(offset + length <= pool_sizes[pool], "{}: bytes [{}, {})"
          " outside pool {} of {} bytes", where, offset, offset + length, pool, pool_sizes[pool])
    shape = check_dimensions(dims, operand, where, allow_unspecified)
    if is_input and shape is not None:
        expected = byte_size(operand.type, shape)
        check(expected is None or length == expected,
              "{}: length {} differs from the {} bytes of its data", where, length, expected)


def check_dimensions(dims: Sequence[int], operand: Operand, where: str,
                     allow_unspecified: bool) -> list[int] | None:
    """The shape the argument gives its operand (request dimensions refining the model's);
    None for extension types, whose shapes the driver cannot interpret."""
    model_dims = list(operand.dimensions)
    if is_extension_type(operand.type):
        return None
    if is_scalar_type(operand.type):
        check(len(dims) == 0, "{}: scalar operand given dimensions {}", where, list(dims))
        return []
    if len(dims) == 0:
        shape = model_dims
        check(allow_unspecified or len(model_dims) > 0,
              "{}: the model's rank is unknown and the request does not give it", where)
    else:
        check(len(model_dims) == 0 or len(dims) == len(model_dims),
              "{}: rank {} differs from the model's {}", where, len(dims), len(model_dims))
        for axis, (given, declared) in enumerate(zip(dims, model_dims)):
            check(declared == 0 or given == declared,
                  "{}: dimension {} is {}, the model's is {}", where, axis, given, declared)
        shape = list(dims)
    check(allow_unspecified or all(d > 0 for d in shape),
          "{}: dimensions {} are not fully specified", where, shape)
    size = byte_size(operand.type, shape, unknown_dimension=1)
    check(size is None or size <= MAX_BYTE_SIZE,
          "{}: dimensions {} need more than {} bytes", where, shape, MAX_BYTE_SIZE)
    return shape
