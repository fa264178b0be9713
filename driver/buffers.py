"""Memory domains: driver-managed buffers (IBuffer), the tokens that name them in a
Request's pools, and binding such a request for an execution.

A buffer holds its content as bytes with the dimensions they have, or nothing while it is
uninitialised. It starts uninitialised; a successful copyFrom, or a successful execution
writing it as an output, initialises it; a failed one of either leaves it uninitialised
again (IDevice.allocate in HAL 1.3). Content is replaced whole, never written in place, so
an execution that read it keeps what it read.

Tokens live in the device's BufferTracker, which holds each buffer weakly: once the client
drops its IBuffer, the token names nothing and requests naming it are invalid. An execution
resolves tokens when it is launched and keeps the buffers it resolved until it ends.
"""
from __future__ import annotations

import threading
import weakref
from collections import Counter
from typing import Optional

from .errors import ExecutionError, ValidationError, check
from .executor.io import LaunchedRequest
from .hal.dtypes import byte_size
from .hal.enums import ErrorStatus
from .hal.structs import DataLocation, Request, RequestArgument
from .validation.buffer import BufferLayout
from .validation.common import is_scalar_type, is_uint32_list
from .validation.compat import combined_dimensions, dimensions_compatible
from .validation.model import check_memory

#: Tokens are positive int32 values (IDevice.allocate returns an int32 token).
MAX_TOKEN = 2 ** 31 - 1


class DeviceBuffer:
    """IBuffer: one driver-managed buffer. Any thread may use it."""

    def __init__(self, layout: BufferLayout) -> None:
        self.operand = layout.operand       # its type, and the dimensions known at allocation
        self.roles = layout.roles
        # (data, dimensions), or None while uninitialised. Replaced by one assignment, so
        # that any thread reads either the old content or the new, never a mix.
        self._content: Optional[tuple[bytes, list[int]]] = None

    # --- IBuffer ---------------------------------------------------------------------

    def copyTo(self, dst) -> ErrorStatus:
        try:
            check_memory(dst, "dst")
            content = self._content
            if content is None:
                return ErrorStatus.GENERAL_FAILURE      # nothing to copy yet
            data = content[0]
            check(dst.size == len(data),
                  "dst has {} bytes, the buffer's data {}", dst.size, len(data))
            dst.write(data)     # ValidationError if its file was shrunk (driver/memory.py)
        except ValidationError:
            return ErrorStatus.INVALID_ARGUMENT
        return ErrorStatus.NONE

    def copyFrom(self, src, dimensions) -> ErrorStatus:
        try:
            shape = self._copy_shape(src, dimensions)
            data = src.read()       # ValidationError if its file was shrunk (driver/memory.py)
        except ValidationError:
            self.forget()
            return ErrorStatus.INVALID_ARGUMENT
        self.store(data, shape)
        return ErrorStatus.NONE

    def _copy_shape(self, src, dimensions) -> list[int]:
        """The dimensions copyFrom gives the buffer, once its arguments are found valid."""
        check_memory(src, "src")
        check(is_uint32_list(dimensions), "dimensions {!r} are not a list of uint32", dimensions)
        declared = self.operand.dimensions
        if is_scalar_type(self.operand.type):
            check(not dimensions, "dimensions {} given for a scalar buffer", list(dimensions))
        elif dimensions:
            check(all(d > 0 for d in dimensions), "dimensions {} are not fully specified",
                  list(dimensions))
            check(dimensions_compatible(dimensions, declared),
                  "dimensions {} are incompatible with the buffer's {}", list(dimensions), declared)
        else:
            check(fully_specified(self.operand.type, declared), "the buffer's dimensions {} "
                  "are not fully specified, and no dimensions are given", declared)
        shape = list(dimensions or declared)
        size = byte_size(self.operand.type, shape)
        check(src.size == size, "src has {} bytes, the buffer's data {}", src.size, size)
        return shape

    # --- for executions ----------------------------------------------------------------

    def plays(self, prepared_model, is_input: bool, index: int) -> bool:
        return (prepared_model, is_input, index) in self.roles

    def content(self, where: str) -> tuple[bytes, list[int]]:
        """(data, dimensions); ExecutionError (GENERAL_FAILURE) while uninitialised."""
        content = self._content
        if content is None:
            raise ExecutionError(f"{where}: the buffer is uninitialised")
        return content

    def store(self, data: bytes, dimensions: list[int]) -> None:
        self._content = (data, dimensions)

    def forget(self) -> None:
        self._content = None


class BufferTracker:
    """The live buffers of one device by token, held weakly (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buffers: weakref.WeakValueDictionary[int, DeviceBuffer] = weakref.WeakValueDictionary()
        self._next = 1

    def add(self, buffer: DeviceBuffer) -> int:
        """A token for ``buffer``, unique among the live buffers."""
        with self._lock:
            while self._next in self._buffers:
                self._next = self._next % MAX_TOKEN + 1
            token = self._next
            self._next = token % MAX_TOKEN + 1
            self._buffers[token] = buffer
        return token

    def get(self, token: int) -> Optional[DeviceBuffer]:
        with self._lock:
            return self._buffers.get(token)


def has_device_memory(request: object) -> bool:
    """Does a request name a buffer by token? (Anything malformed answers False: validation
    then reports it.)"""
    pools = getattr(request, "pools", None)
    return isinstance(pools, list) and any(getattr(pool, "token", None) is not None for pool in pools)


def bind_device_memory(request: Request, prepared_model, tracker: BufferTracker,
                       allow_unspecified_output: bool) -> LaunchedRequest:
    """A validated request naming buffers by token, as an execution of ``prepared_model``
    runs it: each input read from a buffer gets a snapshot of the buffer's content and its
    dimensions; each output written to a buffer has no value in the pools (hasNoValue) but
    the dimensions the buffer allows, and the buffer is where the execution stores it.

    Raises ValidationError for a token that names no live buffer, a role the buffer was
    not allocated for, dimensions the buffer does not allow, a buffer written by an output
    and used by another argument; ExecutionError for an input read from an uninitialised
    buffer."""
    pools = request.pools
    device_pools = {}
    for index, pool in enumerate(pools):
        if pool.token is not None:
            device_pools[index] = tracker.get(pool.token)
            check(device_pools[index] is not None,
                  "request pool {}: token {} names no live buffer", index, pool.token)
    arguments = [*request.inputs, *request.outputs]
    uses = Counter(id(device_pools[argument.location.poolIndex]) for argument in arguments
                   if not argument.hasNoValue and argument.location.poolIndex in device_pools)
    views = [None if pool.token is not None else pool.hidlMemory.buffer() for pool in pools]
    inputs, outputs, device_outputs = [], [], {}

    def role_buffer(argument: RequestArgument, is_input: bool, position: int):
        """The buffer the argument names by token (checked to play this role), else None."""
        buffer = None if argument.hasNoValue else device_pools.get(argument.location.poolIndex)
        if buffer is not None:
            kind = "input" if is_input else "output"
            check(buffer.plays(prepared_model, is_input, position),
                  "request {} {}: the buffer of pool {} was not allocated for this {}",
                  kind, position, argument.location.poolIndex, kind)
        return buffer

    for position, argument in enumerate(request.inputs):
        buffer = role_buffer(argument, True, position)
        if buffer is None:
            inputs.append(argument)
            continue
        where, pool = f"request input {position}", argument.location.poolIndex
        data, dimensions = buffer.content(where)
        check(dimensions_compatible(argument.dimensions, dimensions),
              "{}: dimensions {} differ from the buffer's {}", where, list(argument.dimensions), dimensions)
        views[pool] = memoryview(data)
        inputs.append(RequestArgument(False, DataLocation(pool, 0, len(data)), list(dimensions)))
    for position, argument in enumerate(request.outputs):
        buffer = role_buffer(argument, False, position)
        if buffer is None:
            outputs.append(argument)
            continue
        where = f"request output {position}"
        check(uses[id(buffer)] == 1, "{}: the buffer it writes is used by another argument too", where)
        declared = buffer.operand.dimensions
        check(dimensions_compatible(argument.dimensions, declared), "{}: dimensions {} are "
              "incompatible with the buffer's {}", where, list(argument.dimensions), declared)
        dimensions = combined_dimensions(declared, argument.dimensions)
        check(allow_unspecified_output or fully_specified(buffer.operand.type, dimensions),
              "{}: dimensions {} are not fully specified", where, dimensions)
        device_outputs[position] = buffer
        outputs.append(RequestArgument(True, DataLocation(), dimensions))
    return LaunchedRequest.of(Request(inputs=inputs, outputs=outputs, pools=list(pools)),
                              views, device_outputs)


def fully_specified(operand_type: int, dimensions: list[int]) -> bool:
    return is_scalar_type(operand_type) or (bool(dimensions) and 0 not in dimensions)
