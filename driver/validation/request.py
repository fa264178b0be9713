"""validate_request: a Request against the main subgraph of an already validated Model.

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
sizes beyond 2**32-1 bytes are refused, and memory-domain tokens are refused (this driver
allocates no buffers, so no token can name one).
"""
from __future__ import annotations

from math import prod
from typing import NamedTuple, Sequence

from ..errors import check, fail
from ..hal.enums import OperandType
from ..hal.structs import (DataLocation, MemoryPool, Model, Operand, Request,
                           RequestArgument)
from .common import (MAX_BYTE_SIZE, UINT32_MAX, byte_size, element_size, is_extension_type,
                     is_scalar_type, is_uint32, is_uint32_list)
from .model import check_memory, memory_is_plainly_valid
from .structure import raise_for_missing_field


def validate_request(request: Request, model: Model, *,
                     allow_unspecified_output: bool = True) -> None:
    """Raise ValidationError, naming the argument or pool at fault, unless ``request`` is
    a valid request for ``model`` (which validate_model accepted)."""
    try:
        _validate_request(request, model, allow_unspecified_output)
    except AttributeError:
        raise_for_missing_field(request, "request")
        raise


def _validate_request(request: Request, model: Model, allow_unspecified_output: bool) -> None:
    if not isinstance(request, Request):
        fail(f"request: {type(request).__name__} is not a Request")
    pool_sizes = check_request_pools(request.pools)
    main = model.main
    check_arguments(request.inputs, main.inputIndexes, main.operands, pool_sizes,
                    "input", allow_unspecified=False)
    check_arguments(request.outputs, main.outputIndexes, main.operands, pool_sizes,
                    "output", allow_unspecified=allow_unspecified_output)


def check_request_pools(pools: list) -> list[int]:
    """Each pool is a shared memory (hidlMemory); returns their sizes."""
    check(isinstance(pools, list), "request: pools is not a list")
    sizes = [pool.hidlMemory.size for pool in pools
             if type(pool) is MemoryPool and pool.token is None
             and memory_is_plainly_valid(pool.hidlMemory)]
    if len(sizes) == len(pools):
        return sizes
    sizes = []
    for i, pool in enumerate(pools):
        where = f"request pool {i}"
        if not isinstance(pool, MemoryPool):
            fail(f"{where}: {type(pool).__name__} is not a MemoryPool")
        if not (pool.hidlMemory is None) != (pool.token is None):
            fail(f"{where}: exactly one of hidlMemory and token must be set")
        if pool.token is not None:
            fail(f"{where}: memory-domain token {pool.token!r} names no "
                 f"buffer (this driver allocates none)")
        check_memory(pool.hidlMemory, where)
        sizes.append(pool.hidlMemory.size)
    return sizes


def check_arguments(arguments: list, operand_indexes: Sequence[int], operands: list[Operand],
                    pool_sizes: list[int], kind: str, *, allow_unspecified: bool) -> None:
    if not isinstance(arguments, list):
        fail(f"request: {kind}s is not a list")
    if len(arguments) != len(operand_indexes):
        fail(f"request: {len(arguments)} {kind}s given, the model has {len(operand_indexes)}")
    is_input = kind == "input"
    for position, (argument, index) in enumerate(zip(arguments, operand_indexes)):
        operand = operands[index]
        if argument_is_plainly_valid(argument, operand, pool_sizes, is_input, allow_unspecified):
            continue
        where = f"request {kind} {position} (operand {index})"
        if not isinstance(argument, RequestArgument):
            fail(f"{where}: {type(argument).__name__} is not a RequestArgument")
        check_argument(argument, operand, pool_sizes, where,
                       is_input=is_input, allow_unspecified=allow_unspecified)


# --- the fast path ----------------------------------------------------------------------
#
# As for operands (see operand.py): ``argument_is_plainly_valid`` recognises the usual
# argument and answers False for anything unusual, which check_argument then judges and
# names. It must never accept what check_argument rejects.

class _ArgumentRule(NamedTuple):
    tensor: bool            # False: a scalar, which takes no dimensions
    element_size: int


#: Base types of a known element size (all but SUBGRAPH); extension types are left to
#: the detailed checks.
_ARGUMENT_RULES = {int(type_code): _ArgumentRule(not is_scalar_type(type_code),
                                                 element_size(type_code))
                   for type_code in OperandType if element_size(type_code) is not None}
_PLAIN_ARGUMENT_CLASSES = (bool, DataLocation, list)
_THREE_INTS = (int, int, int)
_NO_LOCATION = (0, 0, 0)
_INT = frozenset({int})


def argument_is_plainly_valid(argument: RequestArgument, operand: Operand,
                              pool_sizes: list[int], is_input: bool,
                              allow_unspecified: bool) -> bool:
    """True only for an argument check_argument accepts for ``operand`` (the validated
    model's); False for anything unusual, which may still be valid: an input whose shape
    is not fully known, say."""
    if type(argument) is not RequestArgument:
        return False
    location, dims = argument.location, argument.dimensions
    if (type(argument.hasNoValue), type(location), type(dims)) != _PLAIN_ARGUMENT_CLASSES:
        return False
    pool, offset, length = location.poolIndex, location.offset, location.length
    if ((type(pool), type(offset), type(length)) != _THREE_INTS
            or not _INT.issuperset(map(type, dims))):
        return False
    if argument.hasNoValue:
        return (pool, offset, length) == _NO_LOCATION and not dims
    rule = _ARGUMENT_RULES.get(operand.type)
    if not (rule is not None and 0 <= pool < len(pool_sizes) and 0 <= offset <= UINT32_MAX
            and 0 <= length <= UINT32_MAX and offset + length <= pool_sizes[pool]):
        return False
    tensor, element_bytes = rule
    if not tensor:
        return not dims and (not is_input or length == element_bytes)
    declared = operand.dimensions
    if dims:
        # uint32 values, the model's rank where it is known, and the model's value
        # wherever it knows one (the usual case: the model's very dimensions).
        if min(dims) < 0 or max(dims) > UINT32_MAX:
            return False
        if declared and dims != declared:
            if len(dims) != len(declared):
                return False
            for given, known in zip(dims, declared):
                if known and given != known:
                    return False
        shape = dims
    else:
        shape = declared
    if not shape or 0 in shape:
        # Not fully specified: an output may be (the execution reports its shape); an
        # input never is, and is left to the detailed checks.
        if is_input or not allow_unspecified:
            return False
    size = element_bytes * prod(filter(None, shape))    # unknown dimensions count as 1
    return size <= MAX_BYTE_SIZE and (not is_input or length == size)


def check_argument(argument: RequestArgument, operand: Operand, pool_sizes: list[int],
                   where: str, *, is_input: bool, allow_unspecified: bool) -> None:
    location = argument.location
    if not isinstance(argument.hasNoValue, bool):
        fail(f"{where}: hasNoValue is not a bool")
    if not isinstance(location, DataLocation):
        fail(f"{where}: location is not a DataLocation")
    pool, offset, length = location.poolIndex, location.offset, location.length
    if not (is_uint32(pool) and is_uint32(offset) and is_uint32(length)):
        fail(f"{where}: location fields {(pool, offset, length)!r} are not uint32")
    dims = argument.dimensions
    if not is_uint32_list(dims):
        fail(f"{where}: dimensions {dims!r} are not a list of uint32")
    if argument.hasNoValue:
        if not (pool == 0 and offset == 0 and length == 0 and len(dims) == 0):
            fail(f"{where}: has no value, yet a location or dimensions")
        return
    if pool >= len(pool_sizes):
        fail(f"{where}: poolIndex {pool} out of range "
             f"({len(pool_sizes)} pools)")
    if offset + length > pool_sizes[pool]:
        fail(f"{where}: bytes [{offset}, {offset + length})"
             f" outside pool {pool} of {pool_sizes[pool]} bytes")
    shape = check_dimensions(argument.dimensions, operand, where, allow_unspecified)
    if is_input and shape is not None:
        expected = byte_size(operand.type, shape)
        if expected is not None:
            if length != expected:
                fail(f"{where}: length {length} differs from the "
                     f"{expected} bytes of its data")


def check_dimensions(dims: Sequence[int], operand: Operand, where: str,
                     allow_unspecified: bool) -> list[int] | None:
    """The shape the argument gives its operand (request dimensions refining the model's);
    None for extension types, whose shapes the driver cannot interpret."""
    model_dims = list(operand.dimensions)
    if is_extension_type(operand.type):
        return None
    if is_scalar_type(operand.type):
        if len(dims) != 0:
            fail(f"{where}: scalar operand given dimensions {list(dims)}")
        return []
    if len(dims) == 0:
        shape = model_dims
        if not (allow_unspecified or len(model_dims) > 0):
            fail(f"{where}: the model's rank is unknown and the request does not give it")
    else:
        if not (len(model_dims) == 0 or len(dims) == len(model_dims)):
            fail(f"{where}: rank {len(dims)} differs from the model's {len(model_dims)}")
        for axis, (given, declared) in enumerate(zip(dims, model_dims)):
            if not (declared == 0 or given == declared):
                fail(f"{where}: dimension {axis} is {given}, the model's is {declared}")
        shape = list(dims)
    if not (allow_unspecified or all(d > 0 for d in shape)):
        fail(f"{where}: dimensions {shape} are not fully specified")
    size = byte_size(operand.type, shape, unknown_dimension=1)
    if not (size is None or size <= MAX_BYTE_SIZE):
        fail(f"{where}: dimensions {shape} need more than {MAX_BYTE_SIZE} bytes")
    return shape
