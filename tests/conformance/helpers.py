"""Synthetic conformance test models (the JSON of conformance/FORMAT.md) and a small fake
IDevice whose mistakes can be switched on, to check that the runner notices them."""
from __future__ import annotations

import gzip
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from driver.hal import (ErrorStatus, MeasureTiming, Model, NO_TIMING, OperandType, OutputShape,
                        Request, Timing)
from driver.sync_fence import FenceState, SyncFence
from hal_client.conformance.loader import OPERAND_DTYPE
from hal_client.conformance.runner import unknown_size_while_operand


def operand(type_: str, dims: Sequence[int], lifetime: str, data: Any = None, *,
            consumers: int = 1, name: str = "", ignored: bool = False, scale: float = 0.0,
            zero_point: int = 0, **extra: Any) -> dict:
    return {"name": name, "type": type_, "dimensions": list(dims), "scale": scale,
            "zeroPoint": zero_point, "lifetime": lifetime, "numberOfConsumers": consumers,
            "isIgnored": ignored, "data": data, **extra}


def model_entry(name: str, main: dict, referenced: Sequence[dict] = (), **fields: Any) -> dict:
    return {"name": name, "main": main, "referenced": list(referenced), "isRelaxed": False,
            "expectFailure": False, "expectedMultinomialDistributionTolerance": 0.0,
            "minSupportedVersion": "V1_3", "useSharedMemoryForWeights": False, **fields}


def add_model(name: str = "add_float", a=(1.0, 2.0, 3.0, 4.0), b=(0.5, 0.5, 0.5, 0.5),
              **fields: Any) -> dict:
    """out = a + b, TENSOR_FLOAT32 [2, 2]."""
    expected = [x + y for x, y in zip(a, b)]
    main = {
        "operands": [
            operand("TENSOR_FLOAT32", [2, 2], "SUBGRAPH_INPUT", list(a), name="a"),
            operand("TENSOR_FLOAT32", [2, 2], "SUBGRAPH_INPUT", list(b), name="b"),
            operand("INT32", [], "CONSTANT_COPY", [0], name="act"),
            operand("TENSOR_FLOAT32", [2, 2], "SUBGRAPH_OUTPUT", expected, consumers=0,
                    name="out"),
        ],
        "operations": [{"type": "ADD", "inputs": [0, 1, 2], "outputs": [3]}],
        "inputIndexes": [0, 1], "outputIndexes": [3]}
    return model_entry(name, main, **fields)


def rich_model() -> dict:
    """One of everything the loader handles: constants by copy (of several sizes) and by
    reference, an omitted input, a NO_VALUE operand, a SUBGRAPH operand, per-channel
    quantization, a zero-sized output and an ignored one. Not meant to be executed."""
    branch = {
        "operands": [operand("TENSOR_FLOAT32", [2], "SUBGRAPH_INPUT", name="x"),
                     operand("TENSOR_FLOAT32", [2], "CONSTANT_COPY", [10.0, 20.0], name="ten"),
                     operand("INT32", [], "CONSTANT_COPY", [0], name="act"),
                     operand("TENSOR_FLOAT32", [2], "SUBGRAPH_OUTPUT", consumers=0, name="y")],
        "operations": [{"type": "ADD", "inputs": [0, 1, 2], "outputs": [3]}],
        "inputIndexes": [0], "outputIndexes": [3]}
    main = {
        "operands": [
            operand("TENSOR_BOOL8", [1], "SUBGRAPH_INPUT", [True], name="cond"),          # 0
            operand("SUBGRAPH", [], "SUBGRAPH", [1], name="branch"),                       # 1
            operand("TENSOR_FLOAT32", [2], "SUBGRAPH_INPUT", [1.5, -2.0], name="x"),       # 2
            operand("TENSOR_FLOAT32", [2], "SUBGRAPH_INPUT", [], name="omitted"),          # 3
            operand("TENSOR_QUANT8_ASYMM", [3], "CONSTANT_COPY", [1, 2, 3], name="q8",
                    scale=0.5, zero_point=1),                                              # 4
            operand("TENSOR_FLOAT16", [2], "CONSTANT_COPY", [0.5, 1.25], name="h"),        # 5
            operand("TENSOR_INT32", [2, 2], "CONSTANT_REFERENCE", [7, 8, 9, 10], name="ref"),  # 6
            operand("TENSOR_FLOAT32", [3], "CONSTANT_REFERENCE", [1.0, 2.0, 3.0], name="ref2"),  # 7
            operand("TENSOR_FLOAT32", [2], "NO_VALUE", None, name="none"),                 # 8
            operand("TENSOR_QUANT8_SYMM_PER_CHANNEL", [2, 1], "CONSTANT_COPY", [-1, 1],
                    name="filter", channelQuant={"scales": [0.5, 0.25], "channelDim": 0}),  # 9
            operand("TENSOR_FLOAT32", [2], "SUBGRAPH_OUTPUT", [11.5, 18.0], consumers=0,
                    name="out"),                                                           # 10
            operand("TENSOR_FLOAT32", [0, 2], "SUBGRAPH_OUTPUT", [], consumers=0,
                    name="empty"),                                                         # 11
            operand("TENSOR_INT32", [3], "SUBGRAPH_OUTPUT", [1, 2, 3], consumers=0,
                    name="ignored", ignored=True),                                         # 12
            operand("BOOL", [], "CONSTANT_COPY", [True], name="flag", consumers=2),        # 13
        ],
        "operations": [{"type": "IF", "inputs": [0, 1, 1, 2], "outputs": [10]}],
        "inputIndexes": [0, 2, 3], "outputIndexes": [10, 11, 12]}
    return model_entry("rich", main, [branch, branch], isRelaxed=True,
                      useSharedMemoryForWeights=True)


def write_models(path: Path, models: Sequence[dict]) -> Path:
    text = json.dumps(list(models)).encode()
    path.write_bytes(gzip.compress(text) if path.name.endswith(".gz") else text)
    return path


# --- a fake device ------------------------------------------------------------------------

@dataclass
class Mistakes:
    """What the fake device gets wrong."""
    value_offset: float = 0.0            # added to every output value
    report_model_dims: bool = False      # report the model's (possibly zeroed) dims
    ignore_insufficient: bool = False    # write what fits and answer NONE
    unsupported: bool = False            # claim no operation is supported
    refuse_unknown_size_while: bool = False   # HAL 1.3's strict rule, not a mistake
    supported_status: ErrorStatus = ErrorStatus.NONE
    execution_status: ErrorStatus | None = None   # answer this status instead of running
    raise_in_execute: bool = False
    execute_delay: float = 0.0           # seconds every execution sleeps
    timing_without_measure: bool = False


def _storage_dtype(operand_type: int) -> np.dtype:
    return OPERAND_DTYPE[OperandType(operand_type)]


class FakeDevice:
    """An IDevice that computes every model as ``compute(inputs) -> outputs`` (numpy), by
    default the sum of the first two inputs."""

    def __init__(self, mistakes: Mistakes | None = None,
                 compute: Callable[[list[np.ndarray]], list[np.ndarray]] | None = None) -> None:
        self.mistakes = mistakes or Mistakes()
        self.compute = compute or (lambda inputs: [inputs[0] + inputs[1]])

    def getSupportedOperations_1_3(self, model: Model):
        if self.mistakes.refuse_unknown_size_while and unknown_size_while_operand(model):
            return ErrorStatus.INVALID_ARGUMENT, []
        return self.mistakes.supported_status, [not self.mistakes.unsupported] * len(
            model.main.operations)

    def prepareModel_1_3(self, model, preference, priority, deadline, modelCache, dataCache,
                         token, callback):
        callback.notify_1_3(ErrorStatus.NONE, FakePreparedModel(self, model))
        return ErrorStatus.NONE

    def getNumberOfCacheFilesNeeded(self):
        return ErrorStatus.NONE, 0, 0       # caches nothing

    def allocate(self, desc, preparedModels, inputRoles, outputRoles):
        return ErrorStatus.GENERAL_FAILURE, None, 0     # offers no memory domains


class FakePreparedModel:
    def __init__(self, device: FakeDevice, model: Model) -> None:
        self.device = device
        self.model = model

    @property
    def outputs_specified(self) -> bool:
        return all(self.model.main.operands[i].dimensions and
                   0 not in self.model.main.operands[i].dimensions
                   for i in self.model.main.outputIndexes)

    def run(self, request: Request, measure: MeasureTiming):
        mistakes = self.device.mistakes
        if mistakes.execute_delay:
            time.sleep(mistakes.execute_delay)
        if mistakes.raise_in_execute:
            raise RuntimeError("fake driver bug")
        if mistakes.execution_status is not None:
            return mistakes.execution_status, [], NO_TIMING
        main = self.model.main
        inputs = []
        for argument, index in zip(request.inputs, main.inputIndexes):
            operand = main.operands[index]
            raw = request.pools[argument.location.poolIndex].hidlMemory.read(
                argument.location.offset, argument.location.length)
            inputs.append(np.frombuffer(raw, _storage_dtype(operand.type)).reshape(
                operand.dimensions))
        results = [np.asarray(result + mistakes.value_offset).astype(
                       _storage_dtype(main.operands[index].type))
                   for result, index in zip(self.device.compute(inputs), main.outputIndexes)]
        shapes, sufficient = [], True
        for argument, result, index in zip(request.outputs, results, main.outputIndexes):
            fits = argument.location.length >= result.nbytes or mistakes.ignore_insufficient
            sufficient &= fits
            dims = (main.operands[index].dimensions if mistakes.report_model_dims
                    else list(result.shape))
            shapes.append(OutputShape(dimensions=list(dims), isSufficient=fits))
        if not sufficient:
            return ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, shapes, NO_TIMING
        for argument, result in zip(request.outputs, results):
            raw = result.tobytes()[:argument.location.length]
            request.pools[argument.location.poolIndex].hidlMemory.write(
                raw, argument.location.offset)
        measured = measure == MeasureTiming.YES or mistakes.timing_without_measure
        return ErrorStatus.NONE, shapes, Timing(10, 20) if measured else NO_TIMING

    def executeSynchronously_1_3(self, request, measure, deadline, loopTimeoutDuration):
        return self.run(request, measure)

    def execute_1_3(self, request, measure, deadline, loopTimeoutDuration, callback):
        callback.notify_1_3(*self.run(request, measure))
        return ErrorStatus.NONE

    def executeFenced(self, request, waitFor, measure, deadline, loopTimeoutDuration, duration):
        if not self.outputs_specified:
            return ErrorStatus.INVALID_ARGUMENT, None, None
        status, _, timing = self.run(request, measure)
        fence = SyncFence.signaled(FenceState.SIGNALED if status == ErrorStatus.NONE
                                   else FenceState.ERROR)
        return ErrorStatus.NONE, fence, _FencedInfo(status, timing)

    def configureExecutionBurst(self, callback=None):
        return ErrorStatus.NONE, _FakeBurst(self)


class _FencedInfo:
    def __init__(self, status: ErrorStatus, timing: Timing) -> None:
        self.info = (status, timing, timing)

    def getExecutionInfo(self):
        return self.info


class _FakeBurst:
    def __init__(self, prepared: FakePreparedModel) -> None:
        self.prepared = prepared
        self.live_slots: set[int] = set()

    def execute(self, request, slots, measure, deadline, loopTimeoutDuration):
        assert len(set(slots)) == len(request.pools), "slots must be distinct, one per pool"
        assert not self.live_slots & set(slots), "a slot was reused before being freed"
        self.live_slots |= set(slots)
        return self.prepared.run(request, measure)

    def freeMemory(self, slot: int) -> None:
        self.live_slots.discard(slot)
