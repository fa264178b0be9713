"""Content fingerprints of HAL models, and the small memos keyed by them.

Validation and compilation are pure functions of a model's content, and a client often
hands the driver the same content several times in a row (getSupportedOperations_1_3,
then prepareModel_1_3 of the same model). ``model_fingerprint`` captures, in one hashable
value, every field validation and compilation read: each subgraph's operands, operations
and input/output lists, operandValues, every pool (kind, size and bytes), the relaxation
flag and the extension table. Two models with equal fingerprints get the same verdict,
message for message, and compile to the same plan.

Only values of the exact types a well-formed model uses are fingerprinted (an exact int,
not a bool or a float that compares equal to one; a float compared by its bits, so -0.0
and 0.0 differ; the HAL enums where a field is an enum). Anything else, and models too
large to be worth keeping, get no fingerprint (None): the caller then does the full work,
which reports the value's error as usual. Fingerprints are content, never identity: a
client may change its Model between calls.
"""
from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from dataclasses import dataclass, field
from itertools import chain
from typing import Generic, Hashable, Iterable, Optional, TypeVar, Union

from .errors import DriverError
from .hal.enums import ErrorStatus, OperandLifeTime, OperandType, OperationType
from .hal.structs import (DataLocation, ExtensionNameAndPrefix, Model, Operand,
                          OperandExtraParams, Operation, Subgraph, SymmPerChannelQuantParams)
from .memory import Memory


#: Models whose operandValues and pools hold more bytes than this are not fingerprinted:
#: a memo entry keeps a copy of them, and copying would cost more than it saves.
MAX_FINGERPRINTED_BYTES = 256 * 1024
#: Likewise for models with more integer fields than this (dimensions, indexes, ...).
MAX_FINGERPRINTED_INTS = 64 * 1024

_INT = frozenset({int})
_FLOAT = frozenset({float})
_MEMORY = frozenset({Memory})
# Enum fields may hold the enum or a plain int (the fingerprint records which, field by
# field).
_OPERAND_TYPE_CLASSES = frozenset({int, OperandType})
_LIFETIME_CLASSES = frozenset({int, OperandLifeTime})
_OPERATION_TYPE_CLASSES = frozenset({int, OperationType})
_OPERAND_CLASSES = (Operand, list, DataLocation, OperandExtraParams)
_OPERATION_CLASSES = (Operation, list, list)
_NO_EXTRA_PARAMS = (None, None)


class ModelFingerprint:
    """The content of a model, compared by full equality (never by its hash alone). The
    hash is computed once: a memo lookup hashes its key several times."""

    __slots__ = ("content", "_hash")

    def __init__(self, content: tuple) -> None:
        self.content = content
        self._hash = hash(content)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ModelFingerprint):
            return NotImplemented
        return self._hash == other._hash and self.content == other.content

    def __repr__(self) -> str:
        return f"ModelFingerprint({self._hash:#x})"


class _NotFingerprintable(Exception):
    """A field of a type the fingerprint does not describe: full validation instead."""


def _require_classes(values: Iterable, allowed: frozenset) -> None:
    if not allowed.issuperset(map(type, values)):
        raise _NotFingerprintable


def model_fingerprint(model: object) -> Optional[ModelFingerprint]:
    """The content of ``model`` as a hashable value, or None when it has a field of an
    unexpected type or is too large (see the module docstring)."""
    if type(model) is not Model:
        return None
    try:
        return _fingerprint(model)
    # A field of an unexpected type or a deleted attribute: garbage that full validation
    # will name.
    except (_NotFingerprintable, AttributeError):
        return None


def _fingerprint(model: Model) -> ModelFingerprint:
    relaxed = model.relaxComputationFloat32toFloat16
    if type(relaxed) is not bool:
        raise _NotFingerprintable
    operand_values = model.operandValues
    if type(operand_values) is not bytes:   # bytearray, memoryview: mutable, not kept
        raise _NotFingerprintable
    pools = model.pools
    referenced = model.referenced
    if type(pools) is not list or type(referenced) is not list:
        raise _NotFingerprintable
    _require_classes(pools, _MEMORY)
    # Sizes first: large pools are not even read.
    pool_sizes = [pool.size for pool in pools]
    _require_classes(pool_sizes, _INT)
    if len(operand_values) + sum(pool_sizes) > MAX_FINGERPRINTED_BYTES:
        raise _NotFingerprintable
    pool_parts = tuple(map(_pool_content, pools))

    fields = _ModelFields(ints=[len(referenced)])
    fields.add_subgraph(model.main)
    for subgraph in referenced:
        fields.add_subgraph(subgraph)
    return ModelFingerprint(fields.content() + (operand_values, pool_parts, relaxed,
                                                _extension_table(model.extensionNameToPrefix)))


def _pool_content(pool: Memory) -> tuple:
    if pool.closed or type(pool.name) is not str:
        raise _NotFingerprintable
    return pool.name, pool.size, bytes(pool.buffer())


def _extension_table(table: object) -> tuple:
    if type(table) is not list:
        raise _NotFingerprintable
    entries = []
    for entry in table:
        if (type(entry) is not ExtensionNameAndPrefix or type(entry.name) is not str
                or type(entry.prefix) is not int):
            raise _NotFingerprintable
        entries.append((entry.name, entry.prefix))
    return tuple(entries)


@dataclass
class _ModelFields:
    """The subgraphs' fields gathered into flat lists, one per kind of value, so that
    their types are checked once per model (in C) rather than once per field.

    ``ints`` lists counts before what they count (so the concatenation over operands and
    subgraphs reads back one way only), then each operand's and operation's integer
    fields. The enum fields, the scales and the rare non-empty extraParams (keyed by the
    operand's position in the whole model) follow in lists of their own."""
    ints: list
    operand_types: list = field(default_factory=list)
    lifetimes: list = field(default_factory=list)
    operation_types: list = field(default_factory=list)
    scales: list = field(default_factory=list)
    extras: list = field(default_factory=list)

    def add_subgraph(self, subgraph: object) -> None:
        if type(subgraph) is not Subgraph:
            raise _NotFingerprintable
        operands, operations = subgraph.operands, subgraph.operations
        inputs, outputs = subgraph.inputIndexes, subgraph.outputIndexes
        if (type(operands) is not list or type(operations) is not list
                or type(inputs) is not list or type(outputs) is not list):
            raise _NotFingerprintable
        ints, scales = self.ints, self.scales
        operand_types, lifetimes = self.operand_types, self.lifetimes
        ints += (len(operands), len(operations), len(inputs), len(outputs))
        # One comparison of a tuple of classes rather than a chain of tests: fewer
        # branches for coverage instrumentation to trace, in a loop run per operand.
        for operand in operands:
            dimensions, location, extra = operand.dimensions, operand.location, operand.extraParams
            if (type(operand), type(dimensions), type(location), type(extra)) != _OPERAND_CLASSES:
                raise _NotFingerprintable
            operand_types.append(operand.type)
            lifetimes.append(operand.lifetime)
            scales.append(operand.scale)
            ints += (operand.numberOfConsumers, operand.zeroPoint, location.poolIndex,
                     location.offset, location.length, len(dimensions))
            ints += dimensions
            if (extra.channelQuant, extra.extension) != _NO_EXTRA_PARAMS:
                self.extras.append(_extra_params(len(scales), extra))
        for operation in operations:
            op_inputs, op_outputs = operation.inputs, operation.outputs
            if (type(operation), type(op_inputs), type(op_outputs)) != _OPERATION_CLASSES:
                raise _NotFingerprintable
            self.operation_types.append(operation.type)
            ints += (len(op_inputs), len(op_outputs))
            ints += op_inputs
            ints += op_outputs
        ints += inputs
        ints += outputs

    def content(self) -> tuple:
        ints = self.ints
        if len(ints) > MAX_FINGERPRINTED_INTS:
            raise _NotFingerprintable
        operand_types, lifetimes = self.operand_types, self.lifetimes
        # The class of every enum field, position by position: equal fingerprints then
        # mean equal values of equal classes everywhere, not merely equal values.
        enum_classes = tuple(map(type, chain(operand_types, lifetimes, self.operation_types)))
        count = len(operand_types)
        if not (_INT.issuperset(map(type, ints)) and _FLOAT.issuperset(map(type, self.scales))
                and _OPERAND_TYPE_CLASSES.issuperset(enum_classes[:count])
                and _LIFETIME_CLASSES.issuperset(enum_classes[count:2 * count])
                and _OPERATION_TYPE_CLASSES.issuperset(enum_classes[2 * count:])):
            raise _NotFingerprintable
        # Floats by their bits: 0.0 and -0.0 compare equal but read differently in messages.
        packed_scales = array("d", self.scales).tobytes()
        return (tuple(ints), tuple(operand_types), tuple(lifetimes),
                tuple(self.operation_types), enum_classes, packed_scales, tuple(self.extras))


def _extra_params(operand_number: int, extra: OperandExtraParams) -> tuple:
    channel_quant, extension = extra.channelQuant, extra.extension
    if channel_quant is None:
        quant = None
    else:
        if type(channel_quant) is not SymmPerChannelQuantParams:
            raise _NotFingerprintable
        scales, channel_dim = channel_quant.scales, channel_quant.channelDim
        if type(scales) is not list or type(channel_dim) is not int:
            raise _NotFingerprintable
        _require_classes(scales, _FLOAT)
        quant = (array("d", scales).tobytes(), channel_dim)
    if not (extension is None or type(extension) is bytes):
        raise _NotFingerprintable
    return operand_number, quant, extension


# --- memos ------------------------------------------------------------------------------

@dataclass(frozen=True)
class CachedFailure:
    """A DriverError remembered by class, message and status, re-raised as a new error
    each time (a raised exception carries its traceback: never share one)."""
    kind: type
    message: str
    status: ErrorStatus

    @classmethod
    def of(cls, error: DriverError) -> "CachedFailure":
        return cls(type(error), str(error), error.status)

    def raise_again(self) -> None:
        raise self.kind(self.message, self.status)


V = TypeVar("V")
_MISSING = object()


class ContentMemo(Generic[V]):
    """The ``capacity`` most recently used results, keyed by content. Thread-safe; the
    work itself runs outside the lock (two threads may both compute an entry)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Union[V, object]:
        """The remembered value, or MISSING."""
        with self._lock:
            value = self._entries.get(key, _MISSING)
            if value is not _MISSING:
                self._entries.move_to_end(key)
            return value

    def put(self, key: Hashable, value: V) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


MISSING = _MISSING

__all__ = ["ModelFingerprint", "model_fingerprint", "CachedFailure", "ContentMemo", "MISSING"]
