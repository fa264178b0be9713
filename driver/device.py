"""SampleDriver: the bundled IDevice. ``SampleDriver()`` is a ready device."""
from __future__ import annotations

from typing import Any, Sequence

from . import arguments, cache
from .buffers import BufferTracker, DeviceBuffer
from .engine import BUNDLED, Engine
from .errors import DriverError, ValidationError, check
from .executor.plan import ModelAnalysis, compile_model
from .executor.run import MainProgram
from .hal.dtypes import byte_size
from .hal.enums import (DeviceStatus, DeviceType, ErrorStatus, ExecutionPreference,
                        OperandType, Priority)
from .hal.structs import (BufferDesc, BufferRole, Capabilities, Extension, Model, Operand,
                          OperandExtraParams, OperandPerformance, OptionalTimePoint,
                          PerformanceInfo, Subgraph, SymmPerChannelQuantParams)
from .limits import MEMORY_BUDGET_BYTES, PreparationDeadline, running
from .prepared_model import SamplePreparedModel
from .validation import memo
from .validation.buffer import validate_allocation
from .validation.common import is_extension_type

VERSION = "nnhal-py-1.3"


class SampleDriver:
    """IDevice of the bundled CPU driver. Every method validates its arguments and returns
    a status; only bugs raise.

    ``memory_budget_bytes``: the most memory the values of one execution may hold (of any
    prepared model of this device, read when the execution starts); past it, an execution
    fails with RESOURCE_EXHAUSTED_PERSISTENT instead of exhausting the host. A client may
    lower it (the fuzz harness does, and holds the driver to it).

    ``buffers``: the driver-managed buffers allocated by this device, by token.

    ``cache_payload_sealer(content, token, edit)``: the cache file ``content`` this driver
    wrote for ``token``, its payload replaced by ``edit(payload)`` and sealed again (see
    driver/cache.py): how a client tests that the driver survives a cache file that passes
    its authentication but holds what the driver never writes.

    ``engine``: what computes (driver/engine.py): the bundled executor by default, or a
    real runtime behind the same HAL surface."""

    cache_payload_sealer = staticmethod(cache.reseal)

    def __init__(self, name: str = "sample-python",
                 memory_budget_bytes: int = MEMORY_BUDGET_BYTES, engine: Engine = BUNDLED) -> None:
        self.name = name
        self.memory_budget_bytes = memory_budget_bytes
        self.buffers = BufferTracker()
        self.engine = engine

    # --- queries -------------------------------------------------------------------------

    def getCapabilities_1_3(self) -> tuple[ErrorStatus, Capabilities]:
        # Relative figures (lower is better); a CPU in Python is no faster for any type.
        perf = PerformanceInfo(execTime=1.0, powerUsage=1.0)
        operand_performance = [OperandPerformance(t, PerformanceInfo(1.0, 1.0))
                               for t in sorted(OperandType) if t != OperandType.SUBGRAPH]
        return ErrorStatus.NONE, Capabilities(
            relaxedFloat32toFloat16PerformanceScalar=perf,
            relaxedFloat32toFloat16PerformanceTensor=perf,
            operandPerformance=operand_performance,
            ifPerformance=perf, whilePerformance=perf)

    def getVersionString(self) -> tuple[ErrorStatus, str]:
        return ErrorStatus.NONE, VERSION

    def getType(self) -> tuple[ErrorStatus, DeviceType]:
        return ErrorStatus.NONE, DeviceType.CPU

    def getSupportedExtensions(self) -> tuple[ErrorStatus, list[Extension]]:
        return ErrorStatus.NONE, []

    def getNumberOfCacheFilesNeeded(self) -> tuple[ErrorStatus, int, int]:
        return ErrorStatus.NONE, cache.MODEL_CACHE_FILES, cache.DATA_CACHE_FILES

    def getStatus(self) -> DeviceStatus:
        return DeviceStatus.AVAILABLE

    # --- models --------------------------------------------------------------------------

    def _analyse(self, model: Model) -> ModelAnalysis:
        """The model validated, then compiled with the operand views validation made, once
        per content (driver/validation/memo.py). Sharing a ModelAnalysis is safe: a plan
        holds copies of the model's constants and no per-execution state (many executions
        already run one plan)."""
        arguments.check_type(model, Model, "model")
        key = memo.model_key(model)
        return memo.remembered(key, "analysis", lambda: compile_model(
            model, infos=memo.validate_keyed_model(model, key)))

    def getSupportedOperations_1_3(self, model: Model) -> tuple[ErrorStatus, list[bool]]:
        try:
            analysis = self._analyse(model)
        except DriverError as error:
            return error.status, []
        return ErrorStatus.NONE, list(self._supported(model, analysis))

    def _supported(self, model: Model, analysis: ModelAnalysis) -> Sequence[bool]:
        """Per main operation: supported by this driver's validation and by its engine."""
        if self.engine is BUNDLED:
            return analysis.supported[0]
        return [ours and theirs for ours, theirs in
                zip(analysis.supported[0], self.engine.supports(model, analysis))]

    def _check_engine_supports(self, model: Model, analysis: ModelAnalysis) -> None:
        """A valid model with an operation the engine cannot compute fails to prepare with
        GENERAL_FAILURE: the model is not at fault, as INVALID_ARGUMENT would say."""
        if self.engine is BUNDLED:
            return
        engine_supported = list(self.engine.supports(model, analysis))
        if not all(engine_supported):
            raise DriverError(f"main subgraph, operation {engine_supported.index(False)} "
                              f"is not supported by this driver's engine")

    def prepareModel_1_3(self, model: Model, preference, priority, deadline: OptionalTimePoint,
                         modelCache: Sequence[Any], dataCache: Sequence[Any], token: bytes,
                         callback) -> ErrorStatus:
        if not arguments.implements(callback, "notify_1_3"):
            return ErrorStatus.INVALID_ARGUMENT     # nobody to notify
        status, prepared = self._prepare(model, preference, priority, deadline, modelCache,
                                         dataCache, token)
        if status == ErrorStatus.NONE:
            self._save_to_cache(model, modelCache, dataCache, token)
        # Preparation is done before returning; the callback hears the outcome. A missed
        # deadline is a failure of the launched preparation, not of the launch (as the
        # VTS quality-of-service tests expect), so the launch itself reports NONE.
        callback.notify_1_3(status, prepared)
        if status in (ErrorStatus.MISSED_DEADLINE_PERSISTENT, ErrorStatus.MISSED_DEADLINE_TRANSIENT):
            return ErrorStatus.NONE
        return status

    def _prepare(self, model, preference, priority, deadline, modelCache, dataCache, token):
        try:
            arguments.execution_preference(preference)
            checked_priority = arguments.priority(priority)
            deadline_ns = arguments.deadline(deadline)
            arguments.cache_handles(modelCache, "modelCache")
            arguments.cache_handles(dataCache, "dataCache")
            arguments.cache_token(token)
            if arguments.deadline_passed(deadline_ns):
                return ErrorStatus.MISSED_DEADLINE_PERSISTENT, None
            # Folding constants may compute an operation: it watches the deadline too.
            with running(None if deadline_ns is None else PreparationDeadline(deadline_ns)):
                analysis = self._analyse(model)
            main_supported = analysis.supported[0]
            if not all(main_supported):
                raise ValidationError(f"main subgraph, operation {main_supported.index(False)} "
                                      f"is not supported by this driver")
            self._check_engine_supports(model, analysis)
            program = self._main_program(model, analysis)
        except DriverError as error:
            return error.status, None
        if arguments.deadline_passed(deadline_ns):
            return ErrorStatus.MISSED_DEADLINE_PERSISTENT, None
        return ErrorStatus.NONE, SamplePreparedModel(program, checked_priority, self)

    def _main_program(self, model: Model, analysis: ModelAnalysis) -> MainProgram:
        """What executions run: what the engine compiles (an engine keeps its own memo), or
        the bundled plan, made once per content: the prepared models of equal content share
        it, as they share the plans (it holds no per-execution state either). It keeps its
        own copy of what requests are checked against; the constants are in the plans."""
        if self.engine is not BUNDLED:
            return MainProgram.of(_model_for_requests(model), self.engine.compile(model, analysis))
        if analysis.main_program is None:
            analysis.main_program = MainProgram.of(_model_for_requests(model), analysis.plans[0])
        return analysis.main_program

    def _save_to_cache(self, model: Model, modelCache: list[int], dataCache: list[int],
                       token: bytes) -> None:
        """Save a model just prepared, when the client gave as many cache files as
        getNumberOfCacheFilesNeeded asks for (with none, or another number, it caches
        nothing). A failure to save must not fail the preparation (IDevice.hal): a file
        that cannot be written leaves no cache the token would find whole."""
        if (len(modelCache), len(dataCache)) != (cache.MODEL_CACHE_FILES, cache.DATA_CACHE_FILES):
            return
        try:
            cache.save(model, modelCache, dataCache, token, VERSION)
        except (OSError, DriverError):  # a file not writable, or a pool shrunk meanwhile
            pass

    def prepareModelFromCache_1_3(self, deadline: OptionalTimePoint, modelCache: Sequence[Any],
                                  dataCache: Sequence[Any], token: bytes, callback) -> ErrorStatus:
        if not arguments.implements(callback, "notify_1_3"):
            return ErrorStatus.INVALID_ARGUMENT
        try:
            arguments.deadline(deadline)
            model_fds = arguments.cache_handles(modelCache, "modelCache")
            data_fds = arguments.cache_handles(dataCache, "dataCache")
            checked_token = arguments.cache_token(token)
            check_cache_counts(len(model_fds), len(data_fds))
            model = cache.load(model_fds, data_fds, checked_token, VERSION)
        except DriverError as error:
            callback.notify_1_3(error.status, None)
            return error.status
        # The stored model is prepared as any other: validated and compiled anew. The driver
        # only stores models it prepared, so one that does not validate was not stored by
        # it: the cache was modified, which IDevice.hal answers with GENERAL_FAILURE (the
        # arguments, handles and token, are valid).
        status, prepared = self._prepare(model, ExecutionPreference.FAST_SINGLE_ANSWER,
                                         Priority.MEDIUM, deadline, [], [], checked_token)
        if status == ErrorStatus.INVALID_ARGUMENT:
            status = ErrorStatus.GENERAL_FAILURE
        callback.notify_1_3(status, prepared)
        return status

    def allocate(self, desc: BufferDesc, preparedModels, inputRoles: Sequence[BufferRole],
                 outputRoles: Sequence[BufferRole]) -> tuple[ErrorStatus, Any, int]:
        try:
            layout = validate_allocation(desc, preparedModels, inputRoles, outputRoles,
                                         self._model_of)
        except ValidationError:
            return ErrorStatus.INVALID_ARGUMENT, None, 0
        operand_type = layout.operand.type
        if is_extension_type(operand_type) or byte_size(operand_type, [1]) is None:
            # Valid, but this driver keeps no buffers of types it cannot size.
            return ErrorStatus.GENERAL_FAILURE, None, 0
        buffer = DeviceBuffer(layout)
        return ErrorStatus.NONE, buffer, self.buffers.add(buffer)

    def _model_of(self, prepared_model: object) -> Model | None:
        """What a prepared model of this device checks requests against (its main inputs
        and outputs); None for anything else."""
        if isinstance(prepared_model, SamplePreparedModel) and prepared_model._device is self:
            return prepared_model._model
        return None


def _model_for_requests(model: Model) -> Model:
    """What request validation needs of a model: the main subgraph's input and output
    lists and the operands they name, copied so the client changing its Model later cannot
    change the prepared model (the operations and constants already live in the plan).

    A request only ever names the main subgraph's inputs and outputs, so only their
    operands are copied; the other positions of the operand list hold None (a model may
    have hundreds of operands, and copying them all cost more than the rest of a prepare)."""
    main = model.main
    source = main.operands
    copies = {index: _request_operand(source[index])
              for index in (*main.inputIndexes, *main.outputIndexes)}
    return Model(main=Subgraph(list(map(copies.get, range(len(source)))), [],
                               list(main.inputIndexes), list(main.outputIndexes)))


def _request_operand(operand: Operand) -> Operand:
    # The location is left empty: no request check reads it. The extra parameters are
    # kept, as allocate compares those of a buffer's roles.
    channel_quant = operand.extraParams.channelQuant
    extra_params = OperandExtraParams(
        channelQuant=None if channel_quant is None else SymmPerChannelQuantParams(
            list(channel_quant.scales), channel_quant.channelDim),
        extension=operand.extraParams.extension)
    return Operand(type=operand.type, dimensions=list(operand.dimensions),
                   numberOfConsumers=operand.numberOfConsumers, scale=operand.scale,
                   zeroPoint=operand.zeroPoint, lifetime=operand.lifetime, extraParams=extra_params)


def check_cache_counts(model_files: int, data_files: int) -> None:
    check((model_files, data_files) == (cache.MODEL_CACHE_FILES, cache.DATA_CACHE_FILES),
          "{} model and {} data cache files given, where this driver needs {} and {}",
          model_files, data_files, cache.MODEL_CACHE_FILES, cache.DATA_CACHE_FILES)
