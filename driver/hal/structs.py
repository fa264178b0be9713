"""Structures of the NN HAL 1.0-1.3 (types.hal) as typed dataclasses, with the HAL's field
names and order. Safe unions (OptionalTimePoint, MemoryPool, ExtraParams) are dataclasses
whose unset branches are None."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..memory import Memory
from .enums import OperandLifeTime, OperandType, OperationType, UINT64_MAX


@dataclass
class PerformanceInfo:
    execTime: float = 1.0
    powerUsage: float = 1.0


@dataclass
class OperandPerformance:
    type: OperandType
    info: PerformanceInfo


@dataclass
class Capabilities:
    relaxedFloat32toFloat16PerformanceScalar: PerformanceInfo
    relaxedFloat32toFloat16PerformanceTensor: PerformanceInfo
    operandPerformance: list[OperandPerformance]
    ifPerformance: PerformanceInfo
    whilePerformance: PerformanceInfo


@dataclass
class DataLocation:
    poolIndex: int = 0
    offset: int = 0
    length: int = 0


@dataclass
class SymmPerChannelQuantParams:
    scales: list[float] = field(default_factory=list)
    channelDim: int = 0


@dataclass
class OperandExtraParams:
    """safe_union ExtraParams { none; SymmPerChannelQuantParams channelQuant; vec<uint8_t>
    extension }: at most one of the two fields is set."""
    channelQuant: SymmPerChannelQuantParams | None = None
    extension: bytes | None = None


@dataclass
class Operand:
    type: OperandType | int
    dimensions: list[int] = field(default_factory=list)
    numberOfConsumers: int = 0
    scale: float = 0.0
    zeroPoint: int = 0
    lifetime: OperandLifeTime | int = OperandLifeTime.TEMPORARY_VARIABLE
    location: DataLocation = field(default_factory=DataLocation)
    extraParams: OperandExtraParams = field(default_factory=OperandExtraParams)


@dataclass
class Operation:
    type: OperationType | int
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)


@dataclass
class Subgraph:
    operands: list[Operand] = field(default_factory=list)
    operations: list[Operation] = field(default_factory=list)
    inputIndexes: list[int] = field(default_factory=list)
    outputIndexes: list[int] = field(default_factory=list)


@dataclass
class ExtensionNameAndPrefix:
    name: str
    prefix: int


@dataclass
class Model:
    main: Subgraph = field(default_factory=Subgraph)
    referenced: list[Subgraph] = field(default_factory=list)
    operandValues: bytes = b""
    pools: list[Memory] = field(default_factory=list)
    relaxComputationFloat32toFloat16: bool = False
    extensionNameToPrefix: list[ExtensionNameAndPrefix] = field(default_factory=list)


@dataclass
class RequestArgument:
    hasNoValue: bool = False
    location: DataLocation = field(default_factory=DataLocation)
    dimensions: list[int] = field(default_factory=list)


@dataclass
class MemoryPool:
    """safe_union MemoryPool { hidl_memory hidlMemory; uint32_t token }: exactly one is set.
    A token names a driver-allocated buffer (IDevice.allocate)."""
    hidlMemory: Memory | None = None
    token: int | None = None


@dataclass
class Request:
    inputs: list[RequestArgument] = field(default_factory=list)
    outputs: list[RequestArgument] = field(default_factory=list)
    pools: list[MemoryPool] = field(default_factory=list)


@dataclass
class OutputShape:
    dimensions: list[int] = field(default_factory=list)
    isSufficient: bool = True


@dataclass
class Timing:
    timeOnDevice: int = UINT64_MAX
    timeInDriver: int = UINT64_MAX


#: The Timing reported when nothing was measured.
NO_TIMING = Timing()


@dataclass
class OptionalTimePoint:
    """safe_union { none; uint64_t nanosecondsSinceEpoch }. The clock is the driver's
    steady clock: ``time.monotonic_ns()``, as Android uses the boot-time steady clock."""
    nanosecondsSinceEpoch: int | None = None


@dataclass
class OptionalTimeoutDuration:
    """safe_union { none; uint64_t nanoseconds }."""
    nanoseconds: int | None = None


@dataclass
class OperandTypeInformation:
    type: int
    isTensor: bool
    byteSize: int


@dataclass
class Extension:
    name: str
    operandTypes: list[OperandTypeInformation] = field(default_factory=list)


@dataclass
class BufferDesc:
    dimensions: list[int] = field(default_factory=list)


@dataclass
class BufferRole:
    modelIndex: int
    ioIndex: int
    frequency: float


__all__ = [name for name in dir() if not name.startswith("_") and name[0].isupper()]
