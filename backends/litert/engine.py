"""LiteRT as the engine of the bundled driver's HAL surface (driver/engine.py).

``compile`` lowers a validated model to a .tflite flatbuffer (convert.py, by the table in
table.py), once per content; executions run it in a worker process (worker.py). What
LiteRT does maps to the HAL's statuses as a driver would report them:

- a model LiteRT refuses to load, allocate or run: GENERAL_FAILURE;
- a WHILE running past the loop timeout, or the deadline passing: the worker is killed (a
  new one starts for the next execution) and the execution ends with
  MISSED_DEADLINE_TRANSIENT, within the limit plus the time to kill a process;
- the worker dying on its own (a native crash of LiteRT): GENERAL_FAILURE, and the crash
  is kept for the harness (``take_crashes``), which reports it as a finding;
- a worker found dead when an execution takes it (killed while idle, by a signal or the
  OOM killer): another runs the execution; the death is counted, no crash of its model.

A model whose operations read runtime scalars (main inputs, table.py) as parameters LiteRT
takes as constants is specialised per request (SpecialisedModel): preparation finds those
inputs; an execution makes them constants of their values, and runs that model, validated,
compiled and lowered once per distinct values.

``statistics`` counts each kind of outcome, so that a gap of the converter or of LiteRT
shows as a number.
"""
from __future__ import annotations

import atexit
import hashlib
import threading
import time
import weakref
from collections import Counter
from typing import Callable, Hashable, Optional, Sequence

import numpy as np

from driver import cache
from driver.engine import CompiledModel
from driver.errors import ExecutionError, ResourceError, ValidationError
from driver.executor.plan import ModelAnalysis, compile_model
from driver.executor.shapes import matches_declared
from driver.executor.steps import ExecutionContext
from driver.fingerprint import ContentMemo, model_fingerprint
from driver.hal.dtypes import STORAGE_DTYPE
from driver.hal.enums import ErrorStatus, OperandLifeTime, OperationType
from driver.hal.structs import DataLocation, Model
from driver.limits import running
from driver.validation.model import check_model

from . import convert, table
from .convert import NUMPY_TYPE, TENSOR_TYPE
from .worker import STARTUP_LIMIT_NS, Worker, WorkerDied, WorkerTimeout, seconds_until

#: Worker processes an engine runs at most (executions beyond wait for one).
MAX_WORKERS = 4
#: How long an execution without loops or deadline may run before it is taken for a hang
#: of LiteRT (kept under the fuzz harness's own hang limit).
UNBOUNDED_LIMIT_NS = 8_000_000_000

#: What a loop gets beyond its timeout: the round trip to the worker (a loop of a few ms
#: would otherwise be killed on a busy machine for the time its values spent in pipes).
#: Within the 100 ms past the timeout by which the HAL's answer must come.
LOOP_GRACE_NS = 40_000_000

#: Specialisations an engine keeps (the most recently used): models made of a model with
#: runtime scalars and one request's values of them.
SPECIALISATIONS = 32

_MISSED = ErrorStatus.MISSED_DEADLINE_TRANSIENT


class WorkerPool:
    """Idle workers, at most MAX_WORKERS alive. One starts with the pool, and a spare
    whenever no worker is left idle, on a short-lived thread of its own: an execution,
    also the one after a worker was killed, should find a worker ready, since starting one
    (importing LiteRT) takes long. A worker that died idle (a signal, the OOM killer) is
    replaced when an execution would have taken it, and counted (``count``, the engine's)."""

    def __init__(self, resolver: str, count: Callable[[str], None]) -> None:
        self.resolver = resolver
        self._count_outcome = count
        self._idle: list[Worker] = []
        self._count = 0             # alive or starting
        self._starting = 0
        self._available = threading.Condition()
        self._closed = False
        _POOLS.add(self)
        self._start_spare()

    def acquire(self, limit_ns: Optional[int]) -> Worker:
        while (worker := self._take_idle(limit_ns)) is not None and not worker.alive:
            worker.close()
            self._forget()
            self._count_outcome("idle worker died")
        if worker is not None:
            self._start_spare()     # ready for the execution after this one, if it is killed
            return worker
        try:
            return Worker(self.resolver)
        except BaseException:
            self._forget()
            raise

    def _take_idle(self, limit_ns: Optional[int]) -> Optional[Worker]:
        """An idle worker, or None when the caller is to start one (counted already)."""
        with self._available:
            while not self._idle and (self._starting or self._count >= MAX_WORKERS):
                wait_s = seconds_until(limit_ns)
                if wait_s == 0:
                    raise WorkerTimeout()
                self._available.wait(wait_s)
            if self._idle:
                return self._idle.pop()
            self._count += 1
            return None

    def release(self, worker: Worker) -> None:
        if not worker.alive:
            worker.close()          # reaped, its pipes closed, however it died
            self._forget()
            self._start_spare()
            return
        with self._available:
            if not self._closed:
                self._idle.append(worker)
                self._available.notify()
                return
        self._forget()
        worker.close()

    def _start_spare(self) -> None:
        with self._available:
            if self._closed or self._idle or self._starting or self._count >= MAX_WORKERS:
                return
            self._count += 1
            self._starting += 1
        threading.Thread(target=self._spare, name="litert-worker-start", daemon=True).start()

    def _spare(self) -> None:
        try:
            worker = Worker(self.resolver)
        except Exception:
            worker = None
        with self._available:
            self._starting -= 1
            if worker is not None and not self._closed:
                self._idle.append(worker)
                self._available.notify_all()
                return
            self._count -= 1
            self._available.notify_all()
        if worker is not None:
            worker.close()

    def _forget(self) -> None:
        with self._available:
            self._count -= 1
            self._available.notify_all()

    def close(self) -> None:
        """Stop the workers: the idle and starting ones now, the others when their
        execution ends."""
        with self._available:
            self._closed = True
            self._available.wait_for(lambda: not self._starting, STARTUP_LIMIT_NS / 1e9)
            idle, self._idle = self._idle, []
            self._count -= len(idle)
        for worker in idle:
            worker.close()

    @property
    def alive(self) -> int:
        return self._count

    def wait_ready(self, timeout_s: float) -> bool:
        """Whether a worker is idle within ``timeout_s`` (for tests and benchmarks)."""
        with self._available:
            return self._available.wait_for(lambda: bool(self._idle), timeout_s)


_POOLS: "weakref.WeakSet[WorkerPool]" = weakref.WeakSet()


@atexit.register
def _close_pools() -> None:
    for pool in list(_POOLS):
        pool.close()


class LiteRTEngine:
    """One LiteRT kernel set (``resolver``: an OpResolverType name: AUTO, the builtin
    kernels with the XNNPACK delegate; BUILTIN_WITHOUT_DEFAULT_DELEGATES, the optimized
    kernels alone; BUILTIN_REF, the reference kernels). ``mapping`` is the table the
    converter lowers by (table.py; tests plant converter bugs with another)."""

    def __init__(self, resolver: str, mapping=table) -> None:
        self.resolver = resolver
        self.mapping = mapping
        self.statistics: Counter[str] = Counter()
        self._crashes: list[str] = []
        self._lock = threading.Lock()
        self.workers = WorkerPool(resolver, self.count)
        self._compiled: ContentMemo = ContentMemo(64)
        #: LiteRTModels by (the content of a model with runtime scalars, their values)
        self._specialisations: ContentMemo = ContentMemo(SPECIALISATIONS)
        self._specialising = threading.Lock()
        #: When a list: each execution appends the .tflite it runs and its inputs as LiteRT
        #: gets them (what a standalone reproducer needs: backends/litert/reproducer.py).
        self.recording: Optional[list[tuple[bytes, list[np.ndarray]]]] = None

    def supports(self, model: Model, analysis: ModelAnalysis) -> Sequence[bool]:
        try:
            return self.mapping.supported_operations(model, analysis, self.resolver)
        except Exception:           # a model the table's checks cannot judge
            self.count("supports failed")
            return [False] * len(model.main.operations)

    def compile(self, model: Model, analysis: ModelAnalysis) -> CompiledModel:
        fingerprint = model_fingerprint(model)
        if fingerprint is None:
            return self._compile(model, analysis)
        return self._compiled.remember(fingerprint, lambda: self._compile(model, analysis))

    def _compile(self, model: Model, analysis: ModelAnalysis) -> CompiledModel:
        runtime = table.runtime_scalars(model)
        if runtime:
            return SpecialisedModel(self, model, analysis, runtime)
        return self.lower(model, analysis, "compiled")

    def lower(self, model: Model, analysis: ModelAnalysis, counted: str) -> "LiteRTModel":
        """The model lowered to LiteRT, counted as ``counted``."""
        try:
            lowered = convert.lower(model, analysis, self.mapping)
        except Exception as error:
            self.count("conversion failed")
            raise ExecutionError(f"LiteRT: the model could not be converted: "
                                 f"{type(error).__name__}: {error}") from error
        self.count(counted)
        return LiteRTModel(self, lowered, model, analysis)

    def specialisation(self, key: Hashable, make: Callable[[], "LiteRTModel"]) -> "LiteRTModel":
        """The specialisation remembered by ``key``, or ``make()``'s: made once while it is
        remembered (one is made at a time, so that two executions of new values alike do
        not both make it)."""
        found = self._specialisations.get(key)
        if isinstance(found, LiteRTModel):
            return found
        with self._specialising:
            return self._specialisations.remember(key, make)

    # --- what the harness reads ---------------------------------------------------------

    def count(self, what: str) -> None:
        with self._lock:
            self.statistics[what] += 1

    def crashed(self, message: str) -> None:
        with self._lock:
            self.statistics["worker crashed"] += 1
            self._crashes.append(message)

    def take_crashes(self) -> list[str]:
        """The worker deaths since the last call (each a native crash of LiteRT)."""
        with self._lock:
            crashes, self._crashes = self._crashes, []
        return crashes

    def close(self) -> None:
        self.workers.close()


class LiteRTModel:
    """A model lowered to LiteRT: what executions of it run (driver/engine.py's
    CompiledModel)."""

    def __init__(self, engine: LiteRTEngine, lowered: convert.Lowered, model: Model,
                 analysis: ModelAnalysis) -> None:
        self.engine = engine
        self.content = lowered.content
        self.digest = hashlib.sha1(self.content).digest()
        #: the TFLite tensor of each main operand, and the dtype the HAL stores it in
        self.tensors = lowered.main_tensors
        self.storage_dtypes = {i: STORAGE_DTYPE.get(model.main.operands[i].type) for i in self.tensors}
        self.required_inputs = analysis.plans[0].required_inputs
        main = model.main
        self.input_dtypes = [NUMPY_TYPE[TENSOR_TYPE[main.operands[i].type]] for i in main.inputIndexes]
        self.output_dtypes = [STORAGE_DTYPE[main.operands[i].type] for i in main.outputIndexes]
        #: what the model and inference say of each output's shape ahead (0, None: unknown)
        self.output_shapes = [analysis.plans[0].static[i] for i in main.outputIndexes]
        self.has_loops = any(op.type == OperationType.WHILE
                             for subgraph in (main, *model.referenced) for op in subgraph.operations)

    def run_outputs(self, inputs: list, ctx: ExecutionContext) -> list[np.ndarray]:
        if any(value is None for value in inputs):
            self.engine.count("omitted input")
            raise ExecutionError("LiteRT: an omitted input is not supported")
        values = [np.ascontiguousarray(value, dtype) for value, dtype in zip(inputs, self.input_dtypes)]
        if self.engine.recording is not None:
            self.engine.recording.append((self.content, values))
        held = sum(value.nbytes for value in values)
        if held > ctx.budget.limit_bytes:
            raise ResourceError(f"LiteRT: the inputs take {held} bytes, over the execution's "
                                f"budget of {ctx.budget.limit_bytes} bytes")
        engine, late = self.engine, None
        try:
            worker = engine.workers.acquire(ctx.deadline_ns)
        except WorkerTimeout:
            engine.count("deadline passed waiting for a worker")
            raise ExecutionError("LiteRT: the deadline passed waiting for a worker", _MISSED) from None
        except WorkerDied as death:
            engine.crashed(str(death))
            raise ExecutionError(f"LiteRT: {death}") from None
        try:
            answer = worker.load(self.digest, self.content, ctx.deadline_ns)
            if answer[0] == "ok":
                limit_ns, late = self._limit(ctx)
                answer = worker.run(self.digest, values, ctx.budget.limit_bytes - held, limit_ns)
        except WorkerTimeout:
            engine.count("worker killed at the time limit")
            if late is None:
                raise ExecutionError("LiteRT: the deadline passed while loading the model", _MISSED) from None
            raise late from None
        except WorkerDied as death:
            engine.crashed(f"{death} (model sha1 {self.digest.hex()})")
            raise ExecutionError(f"LiteRT: {death}") from None
        finally:
            engine.workers.release(worker)
        if answer[0] != "ok":
            stage, message = answer[1:] if len(answer) == 3 else ("exchange", repr(answer))
            engine.count(f"{stage} failed")
            if stage == "budget":
                raise ResourceError(f"LiteRT: {message}")
            raise ExecutionError(f"LiteRT: {stage} failed: {message}")
        outputs = answer[1]
        if len(outputs) != len(self.output_dtypes):
            engine.count("wrong output count")
            raise ExecutionError("LiteRT: the interpreter gave another number of outputs")
        for k, (value, known) in enumerate(zip(outputs, self.output_shapes)):
            if not matches_declared(tuple(np.shape(value)), known):
                # As the bundled executor fails an operation whose result contradicts
                # the model, never reporting a shape the model rules out.
                engine.count("output shape contradicts the model")
                raise ExecutionError(f"LiteRT: output {k} has shape {list(np.shape(value))}, "
                                     f"where the model says {list(known)}")
        engine.count("executed")
        with np.errstate(over="ignore"):        # float16 results past its range are inf
            return [np.asarray(value).astype(dtype, copy=False)
                    for value, dtype in zip(outputs, self.output_dtypes)]

    def operand_values(self, inputs: list, ctx: ExecutionContext) -> dict[int, np.ndarray]:
        """driver/engine.py's OperandValues: a diagnostic run, on an interpreter that keeps
        every tensor, in a worker of this kernel set. Its failures, a death of the worker
        included, fail the diagnosis only (ExecutionError): the case's own executions
        already ran."""
        if any(value is None for value in inputs):
            raise ExecutionError("LiteRT: an omitted input is not supported")
        values = [np.ascontiguousarray(value, dtype) for value, dtype in zip(inputs, self.input_dtypes)]
        try:
            worker = self.engine.workers.acquire(ctx.deadline_ns)
            try:
                answer = worker.kept_tensors(self.content, values, ctx.budget.limit_bytes,
                                             list(self.tensors.values()), self._limit(ctx)[0])
            finally:
                self.engine.workers.release(worker)
        except (WorkerTimeout, WorkerDied) as error:
            raise ExecutionError(f"LiteRT: the diagnostic run ended: {type(error).__name__}") from None
        if answer[0] != "ok":
            raise ExecutionError(f"LiteRT: the diagnostic run failed: {answer[1:]}")
        kept = answer[1]
        with np.errstate(over="ignore"):        # as run_outputs: float16 past its range is inf
            return {operand: np.asarray(kept[tensor]).astype(dtype, copy=False)
                    for operand, tensor in self.tensors.items()
                    if (dtype := self.storage_dtypes[operand]) is not None}

    def _limit(self, ctx: ExecutionContext) -> tuple[int, ExecutionError]:
        """When the execution must end (time.monotonic_ns), and the error it ends with
        then: the deadline; for a model with a loop, the loop timeout (LiteRT runs a whole
        execution at once, so the first loop's timeout stands for every loop); otherwise a
        generous bound that only a hang of LiteRT reaches."""
        now = time.monotonic_ns()
        if self.has_loops:
            limit, late = now + ctx.loop_timeout_ns + LOOP_GRACE_NS, ExecutionError(
                f"LiteRT: the execution ran longer than its loop timeout of "
                f"{ctx.loop_timeout_ns} ns", _MISSED)
        else:
            limit, late = now + UNBOUNDED_LIMIT_NS, ExecutionError(
                "LiteRT: the interpreter did not finish (a hang of LiteRT)")
        if ctx.deadline_ns is not None and ctx.deadline_ns <= limit:
            return ctx.deadline_ns, ExecutionError("LiteRT: the deadline passed while executing", _MISSED)
        return limit, late


class SpecialisedModel:
    """A model some of whose operations read main inputs (``positions``) as parameters
    LiteRT takes as constants: an execution runs its specialisation to the request's values
    of them, the model with those inputs made constants of those values, validated,
    compiled and lowered as a prepared model is (driver/engine.py's CompiledModel).

    The values are checked by that validation, as the bundled driver checks a runtime
    scalar when its operation runs: a value it refuses (an activation code out of range,
    an axis past the rank) fails the execution with GENERAL_FAILURE there too."""

    def __init__(self, engine: LiteRTEngine, model: Model, analysis: ModelAnalysis,
                 positions: Sequence[int]) -> None:
        self.engine = engine
        self.required_inputs = analysis.plans[0].required_inputs
        main = model.main
        self.operands = [main.inputIndexes[k] for k in positions]
        self.positions = positions
        self.kept = [k for k in range(len(main.inputIndexes)) if k not in positions]
        # A copy of its own (the client may change its Model after preparation), and the
        # content it stands for in the engine's memo.
        self.stored = structure, data = cache.serialize_model(model)
        self.digest = hashlib.sha1(len(structure).to_bytes(8, "little") + structure + data).digest()

    def run_outputs(self, inputs: list, ctx: ExecutionContext) -> list[np.ndarray]:
        return self._specialised(inputs, ctx).run_outputs([inputs[k] for k in self.kept], ctx)

    def operand_values(self, inputs: list, ctx: ExecutionContext) -> dict[int, np.ndarray]:
        """driver/engine.py's OperandValues, of the specialisation (it keeps the model's
        operand indexes; the runtime scalars are constants there)."""
        return self._specialised(inputs, ctx).operand_values([inputs[k] for k in self.kept], ctx)

    def _specialised(self, inputs: list, ctx: ExecutionContext) -> "LiteRTModel":
        scalars = [inputs[k] for k in self.positions]
        if any(value is None for value in scalars):
            raise ExecutionError("LiteRT: an omitted runtime scalar")   # required: refused before
        values = tuple(np.asarray(value).tobytes() for value in scalars)
        return self.engine.specialisation((self.digest, values), lambda: self._specialise(values, ctx))

    def _specialise(self, values: tuple[bytes, ...], ctx: ExecutionContext) -> "LiteRTModel":
        model = with_constants(cache.deserialize_model(*self.stored), dict(zip(self.operands, values)))
        try:
            with running(ctx):      # compiling may fold constants: within the deadline
                analysis = compile_model(model, infos=check_model(model))
        except ValidationError as error:
            self.engine.count("runtime scalar refused")
            raise ExecutionError(f"LiteRT: a runtime scalar's value: {error}") from None
        if not all(table.supported_operations(model, analysis, self.engine.resolver)):
            self.engine.count("specialisation not expressed")
            raise ExecutionError("LiteRT: the table does not express the model specialised to "
                                 "the request's runtime scalars")
        return self.engine.lower(model, analysis, "specialised")


def with_constants(model: Model, values: dict[int, bytes]) -> Model:
    """``model`` (changed: a copy of its own) with main operands ``values`` (operand index:
    stored bytes) constants of those values instead of inputs."""
    main, data = model.main, bytearray(model.operandValues)
    for index, raw in values.items():
        operand = main.operands[index]
        operand.lifetime = OperandLifeTime.CONSTANT_COPY
        operand.location = DataLocation(poolIndex=0, offset=len(data), length=len(raw))
        data += raw
    main.inputIndexes = [index for index in main.inputIndexes if index not in values]
    model.operandValues = bytes(data)
    return model
