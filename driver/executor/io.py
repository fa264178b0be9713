"""Moving data between a Request's memory pools and a plan: reading main inputs, writing
main outputs and reporting their shapes.

What each main input needs of its operand (type, storage dtype, declared dimensions, and
whether an operation requires a value) is gathered once per prepared model into
InputLayouts, so that reading a request's inputs only looks at the request."""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping, Optional

import numpy as np

from ..errors import ExecutionError, ValidationError
from ..hal.enums import SCALAR_OPERAND_TYPES, ErrorStatus
from ..hal.structs import DataLocation, Model, OutputShape, Request, RequestArgument
from ..limits import check_shape
from ..operations.common import STORAGE_DTYPE
from .shapes import matches_declared


# Not frozen: a frozen dataclass sets each field through object.__setattr__, and a layout is
# made per main input of every newly prepared content. Never changed once made.
@dataclass(slots=True)
class InputLayout:
    """One main-subgraph input, as reading a request argument for it needs it."""
    position: int                   # in Request.inputs
    operand: int                    # operand index in the main subgraph
    operand_type: int
    dtype: Optional[np.dtype]       # storage dtype; None for types without one
    scalar: bool
    declared: tuple[int, ...]       # the model's dimensions (used when the request gives none)
    required: bool                  # an operation needs a value (hasNoValue refused)
    itemsize: int                   # bytes per element (1 for types without a dtype)

    @property
    def what(self) -> str:
        return f"request input {self.position} (operand {self.operand})"


def input_layouts(model: Model, required: frozenset[int]) -> tuple[InputLayout, ...]:
    """The layouts of the main subgraph's inputs; ``required`` holds the positions some
    operation needs a value for."""
    main = model.main
    layouts = []
    for position, index in enumerate(main.inputIndexes):
        operand = main.operands[index]
        dtype = STORAGE_DTYPE.get(operand.type)
        # Positional, in field order (see the fields above).
        layouts.append(InputLayout(
            position, index, operand.type, dtype, operand.type in SCALAR_OPERAND_TYPES,
            tuple(operand.dimensions), position in required,
            dtype.itemsize if dtype is not None else 1))
    return tuple(layouts)


def request_pool_buffers(request: Request) -> list[memoryview]:
    """The request's pools as byte views (validate_request checked each is a Memory). A
    view holds its pool's mapping: a pool the caller closes stays mapped while a view of
    it lives (driver/memory.py)."""
    return [pool.hidlMemory.buffer() for pool in request.pools]


#: No output of the request is written to a driver-managed buffer.
NO_DEVICE_OUTPUTS: Mapping[int, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class LaunchedRequest:
    """A validated request as an execution launched on another thread holds it: its own
    copy of every argument and its own views of the pools, taken at the call. HIDL copies
    a request at the call, so a caller may change, reuse or close what it passed as soon
    as the call returns.

    ``device_outputs`` maps the position of each output written to a driver-managed
    buffer (driver/buffers.py) to that buffer; such an output has no value in the pools
    (hasNoValue) and is stored into its buffer when the execution succeeds."""
    request: Request
    buffers: list[memoryview | None]   # None for a pool naming a driver-managed buffer
    device_outputs: Mapping[int, Any]

    @classmethod
    def of(cls, request: Request, buffers: list[memoryview | None] | None = None,
           device_outputs: Mapping[int, Any] = NO_DEVICE_OUTPUTS) -> "LaunchedRequest":
        """``buffers``: the pools' views, if not those of the request's memories."""
        copy = Request(inputs=[_copied(argument) for argument in request.inputs],
                       outputs=[_copied(argument) for argument in request.outputs],
                       pools=list(request.pools))
        return cls(copy, request_pool_buffers(request) if buffers is None else buffers,
                   device_outputs)

    def forget_outputs(self) -> None:
        """The execution failed: the buffers it was to write are uninitialised (HAL 1.3)."""
        for buffer in self.device_outputs.values():
            buffer.forget()


def _copied(argument: RequestArgument) -> RequestArgument:
    location = argument.location
    return RequestArgument(argument.hasNoValue,
                           DataLocation(location.poolIndex, location.offset, location.length),
                           list(argument.dimensions))


def read_inputs(layouts: tuple[InputLayout, ...], request: Request,
                buffers: list[memoryview]) -> list:
    """Main-subgraph input values as fresh numpy arrays (None for omitted inputs, which
    are refused where an operation requires a value).

    Copies, so that a client writing to its pool while an execution runs cannot change
    what the execution sees."""
    values = []
    for layout, argument in zip(layouts, request.inputs):
        if argument.hasNoValue:
            if layout.required:
                raise ValidationError(f"{layout.what} has no value, but an operation requires it")
            values.append(None)
            continue
        if layout.scalar:
            shape: tuple[int, ...] = ()
        else:
            dims = argument.dimensions
            shape = tuple(dims) if dims else layout.declared
            if shape and min(shape) <= 0:
                raise ValidationError(f"{layout.what}: dimensions {list(shape)} are not fully specified")
        # Every dimension is known and positive here: the size is the plain product.
        nbytes = check_shape(shape, layout.itemsize, layout.what)
        # A type without a storage dtype has no numpy form to read it into.
        dtype = layout.dtype if layout.dtype is not None else STORAGE_DTYPE[layout.operand_type]
        location = argument.location
        if location.length < nbytes:
            raise ValidationError(f"{layout.what}: {location.length} bytes given, {nbytes} "
                                  f"needed for shape {list(shape)}")
        # The copy is a bytearray the array then owns the data of (writable, C order):
        # one step instead of frombuffer, reshape and copy.
        offset = location.offset
        values.append(np.ndarray(shape, dtype, bytearray(
            buffers[location.poolIndex][offset:offset + nbytes])))
    return values


def write_outputs(request: Request, values: list, buffers: list[memoryview],
                  device_outputs: Mapping[int, Any] = NO_DEVICE_OUTPUTS,
                  ) -> tuple[ErrorStatus, list[OutputShape]]:
    """Copy output values into their buffers (and into the driver-managed buffers of
    ``device_outputs``), or report OUTPUT_INSUFFICIENT_SIZE (writing nothing) when any
    buffer is too small for its value."""
    shapes = []
    sufficient = True
    for position, (argument, value) in enumerate(zip(request.outputs, values)):
        shape = value.shape
        dims = argument.dimensions
        if dims and not matches_declared(shape, tuple(dims)):
            # The request fixed the output's shape; the computation disagrees with it.
            raise ExecutionError(f"request output {position}: computed shape {list(shape)} "
                                 f"is incompatible with the request's {list(dims)}")
        fits = argument.hasNoValue or value.nbytes <= argument.location.length
        sufficient = sufficient and fits
        shapes.append(OutputShape(list(shape), fits))
    if not sufficient:
        return ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, shapes
    for argument, value in zip(request.outputs, values):
        nbytes = value.nbytes
        if argument.hasNoValue or nbytes == 0:
            continue
        location = argument.location
        # tobytes() lays out any array in C order, contiguous or not.
        buffers[location.poolIndex][location.offset:location.offset + nbytes] = value.tobytes()
    for position, buffer in device_outputs.items():
        value = values[position]
        buffer.store(value.tobytes(), list(value.shape))
    return ErrorStatus.NONE, shapes
