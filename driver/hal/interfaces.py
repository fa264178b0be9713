"""The HAL 1.3 interfaces a driver implements, as Protocols.

Any object with these methods is a driver: the harness and the conformance runner talk to
a driver only through them. Values that HIDL returns through a synchronous callback are
returned as a tuple in HAL order; asynchronous results go to callback objects.
"""
from __future__ import annotations

from typing import Any, Protocol, Sequence

from ..memory import Memory
from ..sync_fence import SyncFence
from .enums import DeviceStatus, DeviceType, ErrorStatus, ExecutionPreference, MeasureTiming, Priority
from .structs import (BufferDesc, BufferRole, Capabilities, Extension, Model,
                      OptionalTimePoint, OptionalTimeoutDuration, OutputShape, Request, Timing)


class IPreparedModelCallback(Protocol):
    def notify_1_3(self, status: ErrorStatus, preparedModel: "IPreparedModel | None") -> None: ...


class IExecutionCallback(Protocol):
    def notify_1_3(self, status: ErrorStatus, outputShapes: list[OutputShape], timing: Timing) -> None: ...


class IFencedExecutionCallback(Protocol):
    def getExecutionInfo(self) -> tuple[ErrorStatus, Timing, Timing]:
        """(status, timingLaunched, timingFenced)."""


class IBurstCallback(Protocol):
    def getMemories(self, slots: Sequence[int]) -> tuple[ErrorStatus, list]: ...


class IBurstContext(Protocol):
    def execute(self, request: Request, slots: Sequence[int], measure: MeasureTiming,
                deadline: OptionalTimePoint, loopTimeoutDuration: OptionalTimeoutDuration,
                ) -> tuple[ErrorStatus, list[OutputShape], Timing]:
        """Run one request; pool i of the request is cached under slots[i]."""

    def freeMemory(self, slot: int) -> None: ...


class IBuffer(Protocol):
    """A driver-managed buffer (memory domains), from IDevice.allocate."""

    def copyTo(self, dst: Memory) -> ErrorStatus: ...

    def copyFrom(self, src: Memory, dimensions: Sequence[int]) -> ErrorStatus: ...


class IPreparedModel(Protocol):
    def execute_1_3(self, request: Request, measure: MeasureTiming, deadline: OptionalTimePoint,
                    loopTimeoutDuration: OptionalTimeoutDuration,
                    callback: IExecutionCallback) -> ErrorStatus: ...

    def executeSynchronously_1_3(self, request: Request, measure: MeasureTiming,
                                 deadline: OptionalTimePoint,
                                 loopTimeoutDuration: OptionalTimeoutDuration,
                                 ) -> tuple[ErrorStatus, list[OutputShape], Timing]: ...

    def executeFenced(self, request: Request, waitFor: Sequence[SyncFence], measure: MeasureTiming,
                      deadline: OptionalTimePoint, loopTimeoutDuration: OptionalTimeoutDuration,
                      duration: OptionalTimeoutDuration,
                      ) -> tuple[ErrorStatus, SyncFence | None, IFencedExecutionCallback | None]: ...

    def configureExecutionBurst(self, callback: IBurstCallback | None = None,
                                ) -> tuple[ErrorStatus, IBurstContext | None]: ...


class IDevice(Protocol):
    def getCapabilities_1_3(self) -> tuple[ErrorStatus, Capabilities]: ...

    def getSupportedOperations_1_3(self, model: Model) -> tuple[ErrorStatus, list[bool]]: ...

    def prepareModel_1_3(self, model: Model, preference: ExecutionPreference, priority: Priority,
                         deadline: OptionalTimePoint, modelCache: Sequence[Any],
                         dataCache: Sequence[Any], token: bytes,
                         callback: IPreparedModelCallback) -> ErrorStatus: ...

    def prepareModelFromCache_1_3(self, deadline: OptionalTimePoint, modelCache: Sequence[Any],
                                  dataCache: Sequence[Any], token: bytes,
                                  callback: IPreparedModelCallback) -> ErrorStatus: ...

    def getVersionString(self) -> tuple[ErrorStatus, str]: ...

    def getType(self) -> tuple[ErrorStatus, DeviceType]: ...

    def getSupportedExtensions(self) -> tuple[ErrorStatus, list[Extension]]: ...

    def getNumberOfCacheFilesNeeded(self) -> tuple[ErrorStatus, int, int]: ...

    def getStatus(self) -> DeviceStatus: ...

    def allocate(self, desc: BufferDesc, preparedModels: Sequence[IPreparedModel],
                 inputRoles: Sequence[BufferRole], outputRoles: Sequence[BufferRole],
                 ) -> tuple[ErrorStatus, IBuffer | None, int]: ...
