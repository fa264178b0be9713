"""Conformance test models (the JSON files described by conformance/FORMAT.md) as HAL objects.

A file holds a list of test models; each becomes an :class:`Example`: its subgraphs with the
operands' values already encoded in their storage dtype. From an Example,
:func:`build_model` makes a HAL ``Model`` (constants in ``operandValues`` or a shared-memory
pool) and :func:`build_request` a ``Request`` whose inputs and outputs live in shared-memory
request pools.

Only the HAL surface (driver.hal, driver.memory) is used, so that the runner built on this
module can drive any IDevice, and so that the fuzz seed generator can reuse it.
"""
from __future__ import annotations

import gzip
import json
import math
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np

from driver.hal import (DataLocation, MemoryPool, Model, Operand, OperandExtraParams,
                        OperandLifeTime, OperandType, Operation, OperationType, Request,
                        RequestArgument, Subgraph, SymmPerChannelQuantParams)
from driver.hal.dtypes import STORAGE_DTYPE, byte_size
from driver.hal.enums import SCALAR_OPERAND_TYPES
from driver.memory import Memory

from .. import VALUE_ALIGNMENT

T = OperandType

#: How a value of each operand type is laid out in memory (a fact of the HAL's types,
#: from driver.hal); a SUBGRAPH operand's "value" is the index of the referenced subgraph.
OPERAND_DTYPE: dict[OperandType, np.dtype] = {**STORAGE_DTYPE, T.SUBGRAPH: np.dtype(np.uint32)}

#: Request pool layout: all inputs in one pool, all outputs in another.
INPUT_POOL_INDEX = 0
OUTPUT_POOL_INDEX = 1

#: Output pools start filled with this byte, so a driver that never writes an output is not
#: rescued by an expected value of zero (0xFF is a NaN in float32 and float16).
OUTPUT_POISON_BYTE = 0xFF

MODEL_FILE_SUFFIXES = (".json", ".json.gz")


class LoadError(ValueError):
    """A conformance file that cannot be read or does not follow FORMAT.md. The message
    names the file, the test model and the field at fault."""


# --- the parsed form -------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class TestOperand:
    """An operand of a test model, as CTS's test harness names it: declared with its data."""
    name: str
    type: OperandType
    dimensions: tuple[int, ...]
    scale: float
    zeroPoint: int
    lifetime: OperandLifeTime
    numberOfConsumers: int
    isIgnored: bool
    #: ``data`` encoded in the type's storage dtype (flat); None when ``data`` was null.
    values: np.ndarray | None
    channelQuant: SymmPerChannelQuantParams | None = None

    @property
    def byte_size(self) -> int:
        return 0 if self.values is None else self.values.nbytes

    @property
    def is_scalar(self) -> bool:
        return self.type in SCALAR_OPERAND_TYPES


@dataclass(frozen=True)
class OperationSpec:
    type: OperationType
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class SubgraphSpec:
    operands: tuple[TestOperand, ...]
    operations: tuple[OperationSpec, ...]
    inputIndexes: tuple[int, ...]
    outputIndexes: tuple[int, ...]

    @property
    def inputs(self) -> list[TestOperand]:
        return [self.operands[i] for i in self.inputIndexes]

    @property
    def outputs(self) -> list[TestOperand]:
        return [self.operands[i] for i in self.outputIndexes]


@dataclass(frozen=True, eq=False)
class Example:
    """One test model of a conformance file."""
    name: str
    source: str                     # the file it came from
    main: SubgraphSpec
    referenced: tuple[SubgraphSpec, ...]
    isRelaxed: bool
    expectFailure: bool
    expectedMultinomialDistributionTolerance: float
    minSupportedVersion: str
    useSharedMemoryForWeights: bool

    @property
    def subgraphs(self) -> tuple[SubgraphSpec, ...]:
        return (self.main, *self.referenced)

    def has_operand_type(self, operand_type: OperandType) -> bool:
        return any(operand.type == operand_type
                   for subgraph in self.subgraphs for operand in subgraph.operands)

    @property
    def has_scalar_outputs(self) -> bool:
        return any(output.is_scalar for output in self.main.outputs)

    @property
    def is_infinite_loop_test(self) -> bool:
        """A model that must fail because its WHILE loop never ends: the execution must be
        aborted by the loop timeout (MISSED_DEADLINE_TRANSIENT)."""
        return self.expectFailure and any(
            operation.type == OperationType.WHILE for operation in self.main.operations)


# --- reading JSON ----------------------------------------------------------------------

def find_model_files(paths: Iterable[str | Path]) -> list[Path]:
    """The conformance files named by ``paths``: files as given, folders searched
    recursively (sorted, so runs are reproducible)."""
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*")
                                if p.is_file() and p.name.endswith(MODEL_FILE_SUFFIXES)))
        elif path.is_file():
            found.append(path)
        else:
            raise LoadError(f"{path}: no such file or directory")
    return found


def read_json(path: Path) -> Any:
    try:
        raw = path.read_bytes()
        if path.name.endswith(".gz"):
            raw = gzip.decompress(raw)
        return json.loads(raw)
    except (OSError, EOFError, zlib.error) as error:
        raise LoadError(f"{path}: cannot read: {error}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise LoadError(f"{path}: not valid JSON: {error}") from None


def load_examples(path: str | Path) -> Iterator[Example]:
    """The test models of one conformance file, in file order."""
    path = Path(path)
    document = read_json(path)
    _require(isinstance(document, list), f"{path}: expected a list of test models, "
             f"got {type(document).__name__}")
    for position, entry in enumerate(document):
        yield parse_example(entry, source=str(path), where=f"{path}: test model #{position}")


def parse_example(entry: Any, *, source: str, where: str) -> Example:
    _require(isinstance(entry, dict), f"{where}: expected an object")
    name = _field(entry, "name", str, where)
    where = f"{source}: {name}"
    referenced_json = _field(entry, "referenced", list, where)
    referenced = tuple(parse_subgraph(subgraph, f"{where}: referenced[{i}]", len(referenced_json))
                       for i, subgraph in enumerate(referenced_json))
    main = parse_subgraph(_field(entry, "main", dict, where), f"{where}: main", len(referenced))
    tolerance = entry.get("expectedMultinomialDistributionTolerance", 0.0)
    _require(_is_number(tolerance), f"{where}: expectedMultinomialDistributionTolerance "
             f"must be a number, got {tolerance!r}")
    return Example(
        name=name, source=source, main=main, referenced=referenced,
        isRelaxed=_optional_field(entry, "isRelaxed", bool, False, where),
        expectFailure=_optional_field(entry, "expectFailure", bool, False, where),
        expectedMultinomialDistributionTolerance=float(tolerance),
        minSupportedVersion=_optional_field(entry, "minSupportedVersion", str, "UNKNOWN", where),
        useSharedMemoryForWeights=_optional_field(entry, "useSharedMemoryForWeights", bool,
                                                  False, where))


def parse_subgraph(entry: Any, where: str, referenced_count: int) -> SubgraphSpec:
    _require(isinstance(entry, dict), f"{where}: expected an object")
    operands = tuple(parse_operand(operand, f"{where}: operand {i}", referenced_count)
                     for i, operand in enumerate(_field(entry, "operands", list, where)))
    operations = tuple(parse_operation(operation, f"{where}: operation {i}")
                       for i, operation in enumerate(_field(entry, "operations", list, where)))
    input_indexes = _index_list(entry, "inputIndexes", len(operands), where)
    output_indexes = _index_list(entry, "outputIndexes", len(operands), where)
    return SubgraphSpec(operands, operations, input_indexes, output_indexes)


def parse_operation(entry: Any, where: str) -> OperationSpec:
    _require(isinstance(entry, dict), f"{where}: expected an object")
    # Operand indexes are the driver's to validate; the loader only needs them to be ints.
    return OperationSpec(
        type=_enum_field(entry, "type", OperationType, where),
        inputs=tuple(_int_list(entry, "inputs", where)),
        outputs=tuple(_int_list(entry, "outputs", where)))


def parse_operand(entry: Any, where: str, referenced_count: int) -> TestOperand:
    _require(isinstance(entry, dict), f"{where}: expected an object")
    name = entry.get("name", "")
    where = f"{where} ({name})" if name else where
    operand_type = _enum_field(entry, "type", OperandType, where)
    dimensions = tuple(_int_list(entry, "dimensions", where))
    _require(all(d >= 0 for d in dimensions), f"{where}: negative dimension in {list(dimensions)}")
    lifetime = _enum_field(entry, "lifetime", OperandLifeTime, where)
    data = entry.get("data")
    _require(data is None or isinstance(data, list),
             f"{where}: data must be a list or null, got {type(data).__name__}")
    values = None if data is None else encode_values(data, operand_type, where)
    if values is not None and values.size:
        _check_value_count(values.size, operand_type, dimensions, where)
    if operand_type == OperandType.SUBGRAPH:
        _require(lifetime != OperandLifeTime.SUBGRAPH or (
            values is not None and values.size == 1 and values[0] < referenced_count),
            f"{where}: a SUBGRAPH operand's data must be [i] with i < {referenced_count} "
            f"(the number of referenced subgraphs), got {data!r}")
    return TestOperand(
        name=name, type=operand_type, dimensions=dimensions,
        scale=float(_optional_number(entry, "scale", 0.0, where)),
        zeroPoint=_optional_field(entry, "zeroPoint", int, 0, where),
        lifetime=lifetime,
        numberOfConsumers=_field(entry, "numberOfConsumers", int, where),
        isIgnored=_optional_field(entry, "isIgnored", bool, False, where),
        values=values,
        channelQuant=_channel_quant(entry.get("channelQuant"), where))


def encode_values(data: list, operand_type: OperandType, where: str) -> np.ndarray:
    """``data`` (JSON numbers or booleans) as a flat array of the type's storage dtype.
    Values that the dtype cannot hold are an error, not a silent wrap-around."""
    dtype = OPERAND_DTYPE.get(operand_type)
    if dtype is None:
        raise LoadError(f"{where}: no storage layout for operand type {operand_type.name}")
    try:
        # One conversion in C; its inferred dtype tells what kind of JSON values came in.
        parsed = np.asarray(data)
    except (ValueError, OverflowError) as error:
        raise LoadError(f"{where}: data is not a flat list of values: {error}") from None
    if not parsed.size:
        return np.zeros(0, dtype)
    if parsed.ndim != 1:
        raise LoadError(f"{where}: data is not a flat list of values")
    if dtype.kind == "b":
        if parsed.dtype.kind != "b":
            raise LoadError(f"{where}: {operand_type.name} data must be JSON booleans")
        return parsed.astype(dtype)
    if dtype.kind in "iu":
        if parsed.dtype.kind not in "iu":
            raise LoadError(f"{where}: {operand_type.name} data must be integers")
        info = np.iinfo(dtype)
        low, high = parsed.min(), parsed.max()
        if low < info.min or high > info.max:
            raise LoadError(f"{where}: {operand_type.name} values {low}..{high} outside "
                            f"[{info.min}, {info.max}]")
        return parsed.astype(dtype)
    if parsed.dtype.kind not in "iuf":
        raise LoadError(f"{where}: {operand_type.name} data must be numbers")
    with np.errstate(over="ignore"):   # float16 overflow to inf is what the spec value means
        return parsed.astype(np.float64).astype(dtype)


def _check_value_count(count: int, operand_type: OperandType, dimensions: tuple[int, ...],
                       where: str) -> None:
    if operand_type in SCALAR_OPERAND_TYPES:
        if count != 1:
            raise LoadError(f"{where}: a scalar takes one value, got {count}")
    elif dimensions and 0 not in dimensions and count != math.prod(dimensions):
        raise LoadError(f"{where}: dimensions {list(dimensions)} take {math.prod(dimensions)} "
                        f"values, got {count}")


def _channel_quant(entry: Any, where: str) -> SymmPerChannelQuantParams | None:
    if entry is None:
        return None
    where = f"{where}: channelQuant"
    _require(isinstance(entry, dict), f"{where}: expected an object")
    scales = _field(entry, "scales", list, where)
    _require(all(_is_number(s) for s in scales), f"{where}: scales must be numbers")
    return SymmPerChannelQuantParams(scales=[float(s) for s in scales],
                                     channelDim=_field(entry, "channelDim", int, where))


def _require(condition: object, message: str) -> None:
    # The message is built before the call: fine once per object, too slow once per value
    # (per-value checks raise directly).
    if not condition:
        raise LoadError(message)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _field(entry: dict, key: str, kind: type, where: str) -> Any:
    if key not in entry:
        raise LoadError(f"{where}: missing field {key!r}")
    value = entry[key]
    # bool is an int in Python; a JSON true is not an index or a count.
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise LoadError(f"{where}: field {key!r} must be {kind.__name__}, got {value!r}")
    return value


def _optional_field(entry: dict, key: str, kind: type, default: Any, where: str) -> Any:
    return _field(entry, key, kind, where) if key in entry else default


def _optional_number(entry: dict, key: str, default: float, where: str) -> float:
    value = entry.get(key, default)
    if not _is_number(value):
        raise LoadError(f"{where}: field {key!r} must be a number, got {value!r}")
    return value


def _enum_field(entry: dict, key: str, enum_type: type, where: str) -> Any:
    name = _field(entry, key, str, where)
    member = enum_type.__members__.get(name)
    if member is None:
        raise LoadError(f"{where}: unknown {enum_type.__name__} {name!r}")
    return member


def _int_list(entry: dict, key: str, where: str) -> list[int]:
    values = _field(entry, key, list, where)
    if not all(isinstance(value, int) and not isinstance(value, bool) for value in values):
        raise LoadError(f"{where}: {key} must be a list of integers, got {values!r}")
    return values


def _index_list(entry: dict, key: str, operand_count: int, where: str) -> tuple[int, ...]:
    indexes = _int_list(entry, key, where)
    _require(all(0 <= i < operand_count for i in indexes),
             f"{where}: {key} {indexes} out of range for {operand_count} operands")
    return tuple(indexes)


# --- HAL objects -----------------------------------------------------------------------

class _Packer:
    """Concatenates values at aligned offsets into one blob."""

    def __init__(self) -> None:
        self.blob = bytearray()

    def add(self, raw: bytes, pool_index: int = 0) -> DataLocation:
        self.blob.extend(bytes(-len(self.blob) % VALUE_ALIGNMENT))
        location = DataLocation(poolIndex=pool_index, offset=len(self.blob), length=len(raw))
        self.blob.extend(raw)
        return location


def build_model(example: Example, *, zero_output_dims: bool = False) -> Model:
    """The HAL Model of an example. Constants of every subgraph share ``operandValues``
    (CONSTANT_COPY) and one shared-memory pool (CONSTANT_REFERENCE). With
    ``zero_output_dims`` the main outputs' dimensions are all unknown (rank kept), so the
    driver has to infer and report them."""
    copies, references = _Packer(), _Packer()
    main = _build_subgraph(example.main, copies, references, zero_output_dims)
    referenced = [_build_subgraph(subgraph, copies, references, False)
                  for subgraph in example.referenced]
    pools = [Memory.from_bytes(references.blob)] if references.blob else []
    return Model(main=main, referenced=referenced, operandValues=bytes(copies.blob), pools=pools,
                 relaxComputationFloat32toFloat16=example.isRelaxed)


def _build_subgraph(spec: SubgraphSpec, copies: _Packer, references: _Packer,
                    zero_output_dims: bool) -> Subgraph:
    operands = [_build_operand(operand, copies, references) for operand in spec.operands]
    if zero_output_dims:
        for index in spec.outputIndexes:
            operands[index].dimensions = [0] * len(operands[index].dimensions)
    return Subgraph(
        operands=operands,
        operations=[Operation(type=op.type, inputs=list(op.inputs), outputs=list(op.outputs))
                    for op in spec.operations],
        inputIndexes=list(spec.inputIndexes), outputIndexes=list(spec.outputIndexes))


def _build_operand(spec: TestOperand, copies: _Packer, references: _Packer) -> Operand:
    return Operand(
        type=spec.type, dimensions=list(spec.dimensions),
        numberOfConsumers=spec.numberOfConsumers, scale=spec.scale, zeroPoint=spec.zeroPoint,
        lifetime=spec.lifetime, location=_operand_location(spec, copies, references),
        extraParams=OperandExtraParams(channelQuant=None if spec.channelQuant is None else
                                       SymmPerChannelQuantParams(list(spec.channelQuant.scales),
                                                                 spec.channelQuant.channelDim)))


def _operand_location(spec: TestOperand, copies: _Packer, references: _Packer) -> DataLocation:
    raw = b"" if spec.values is None else spec.values.tobytes()
    if spec.lifetime == OperandLifeTime.CONSTANT_COPY:
        return copies.add(raw)
    if spec.lifetime == OperandLifeTime.CONSTANT_REFERENCE:
        return references.add(raw)
    if spec.lifetime == OperandLifeTime.SUBGRAPH:
        # The HAL names a referenced subgraph by its index, in location.offset.
        return DataLocation(poolIndex=0, offset=int(spec.values[0]), length=0)
    return DataLocation()


def output_buffer_size(spec: TestOperand) -> int:
    """The reference's size, or the declared shape's when there is no reference. A
    zero-sized output still gets one byte: a request cannot declare a zero-sized output
    (it would read as "no value" or "unknown size")."""
    declared = byte_size(spec.type, spec.dimensions) if spec.values is None else None
    return declared if declared is not None else max(spec.byte_size, 1)


def shrinkable_output(example: Example) -> int | None:
    """The first main output whose buffer can be made one byte too small and still be a
    buffer (more than one byte): the target of the insufficient-output variant."""
    return next((i for i, output in enumerate(example.main.outputs)
                 if output_buffer_size(output) > 1), None)


def build_request(example: Example, *, shrink_output: int | None = None) -> Request:
    """A Request with every main input in pool 0 and every output buffer in pool 1. An
    input whose data is empty or null is omitted; ``shrink_output`` names an output whose
    buffer is one byte smaller than its value needs."""
    inputs_blob = _Packer()
    inputs = [RequestArgument(hasNoValue=True) if not spec.byte_size else
              RequestArgument(location=inputs_blob.add(spec.values.tobytes(), INPUT_POOL_INDEX))
              for spec in example.main.inputs]
    outputs_blob = _Packer()
    outputs = []
    for i, spec in enumerate(example.main.outputs):
        size = output_buffer_size(spec)
        if i == shrink_output:
            if size <= 1:
                raise ValueError(f"{example.name}: output {i} has {size} byte(s); it cannot "
                                 f"be made smaller")
            size -= 1
        outputs.append(RequestArgument(location=outputs_blob.add(
            bytes([OUTPUT_POISON_BYTE]) * size, OUTPUT_POOL_INDEX)))
    # Pools are never empty: a zero-sized shared memory cannot be mapped by every driver.
    pools = [MemoryPool(hidlMemory=Memory.from_bytes(bytes(blob.blob) or b"\0"))
             for blob in (inputs_blob, outputs_blob)]
    return Request(inputs=inputs, outputs=outputs, pools=pools)
