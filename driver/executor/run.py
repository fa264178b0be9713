"""Running a compiled plan for one Request: the work shared by every execution path."""
from __future__ import annotations

import time
from dataclasses import dataclass

from ..errors import DriverError, ExecutionError, ResourceError, ValidationError
from ..hal.enums import ErrorStatus, MeasureTiming
from ..hal.structs import NO_TIMING, Model, OutputShape, Request, Timing
from ..validation import validate_request
from .io import (NO_DEVICE_OUTPUTS, InputLayout, LaunchedRequest, input_layouts, read_inputs,
                 request_pool_buffers, write_outputs)
from .plan import SubgraphPlan
from .steps import ExecutionContext


@dataclass
class ExecutionResult:
    status: ErrorStatus
    outputShapes: list[OutputShape]
    timing: Timing
    message: str = ""

    def as_tuple(self) -> tuple[ErrorStatus, list[OutputShape], Timing]:
        return self.status, self.outputShapes, self.timing


def failure(error: DriverError) -> ExecutionResult:
    return ExecutionResult(error.status, [], NO_TIMING, error.message)


@dataclass(slots=True)    # not frozen: see InputLayout
class MainProgram:
    """What executions of a prepared model run: the model requests are checked against,
    the compiled model (the main subgraph's plan, or an engine's: driver/engine.py) and the
    layout of its inputs. Never changed once made, and
    shared by every execution; each run has its own slots."""
    model: Model
    plan: SubgraphPlan
    inputs: tuple[InputLayout, ...]

    @classmethod
    def of(cls, model: Model, plan: SubgraphPlan) -> "MainProgram":
        return cls(model, plan, input_layouts(model, plan.required_inputs))


def run_request(program: MainProgram, request: Request | LaunchedRequest, measure: MeasureTiming,
                ctx: ExecutionContext, started_ns: int | None = None) -> ExecutionResult:
    """Validate the request, run the plan and fill the output buffers.

    ``started_ns`` is when the driver got the call (timeInDriver counts from there). A
    LaunchedRequest was validated at launch and is run from the driver's own copy.

    The host running out of memory anywhere (reading inputs, in a kernel, writing outputs)
    fails the execution with RESOURCE_EXHAUSTED_TRANSIENT: unlike a budget exceeded, it
    depends on what else the host holds, so a retry may succeed."""
    try:
        result = _run_request(program, request, measure, ctx, started_ns)
    except MemoryError:
        result = failure(ResourceError("the host ran out of memory during the execution",
                                       ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT))
    if result.status != _NONE and type(request) is LaunchedRequest:
        request.forget_outputs()
    return result


def _run_request(program: MainProgram, request: Request | LaunchedRequest, measure: MeasureTiming,
                 ctx: ExecutionContext, started_ns: int | None) -> ExecutionResult:
    driver_start = perf_counter_ns() if started_ns is None else started_ns
    device_outputs = NO_DEVICE_OUTPUTS
    try:
        if isinstance(request, LaunchedRequest):
            request, buffers, device_outputs = request.request, request.buffers, request.device_outputs
        else:
            validate_request(request, program.model)
            buffers = request_pool_buffers(request)
        inputs = read_inputs(program.inputs, request, buffers)
    except DriverError as error:
        return failure(error)
    if ctx.deadline_ns is not None and monotonic_ns() > ctx.deadline_ns:
        return failure(ExecutionError("the deadline passed before the execution started",
                                      ErrorStatus.MISSED_DEADLINE_PERSISTENT))
    device_start = perf_counter_ns()
    try:
        outputs = program.plan.run_outputs(inputs, ctx)
    except ValidationError as error:
        # Shapes only known at run time did not fit an operation: the execution fails, the
        # request itself was valid.
        return failure(ExecutionError(error.message))
    except DriverError as error:
        return failure(error)
    device_end = perf_counter_ns()
    try:
        status, shapes = write_outputs(request, outputs, buffers, device_outputs)
    except ExecutionError as error:
        return failure(error)
    if status != _NONE or measure != _MEASURE:
        return ExecutionResult(status, shapes, NO_TIMING)
    driver_end = perf_counter_ns()
    return ExecutionResult(status, shapes, Timing(
        (device_end - device_start) // 1000, (driver_end - driver_start) // 1000))


perf_counter_ns, monotonic_ns = time.perf_counter_ns, time.monotonic_ns
_NONE, _MEASURE = ErrorStatus.NONE, MeasureTiming.YES
