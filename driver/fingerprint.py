"""Content fingerprints of HAL models and requests, and the memo class keyed by them
(ContentMemo; the driver's memo itself is driver/validation/memo.py).

Validation and compilation are pure functions of a model's content (and of the limits in
force), and a client often hands the driver the same content several times in a row
(getSupportedOperations_1_3, then prepareModel_1_3 of the same model).
``model_fingerprint`` captures, in one hashable value, every field validation and
compilation read: each subgraph's operands, operations and input/output lists,
operandValues, every pool (kind, size and bytes), the relaxation flag and the extension
table. Two models with equal fingerprints get the same verdict, message for message, and
compile to the same plan, under the same limits.

Only values of the exact types a well-formed model uses are fingerprinted (an exact int,
not a bool or a float that compares equal to one; a float compared by its bits, so -0.0
and 0.0 differ; the HAL enums where a field is an enum). Anything else, and models too
large to be worth keeping, get no fingerprint (None): the caller then does the full work,
which reports the value's error as usual. Fingerprints are content, never identity: a
client may change its Model between calls. ``request_key`` is the same for a request.
"""
from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from dataclasses import dataclass
from operator import itemgetter
from typing import Callable, Generic, Hashable, Iterable, Optional, TypeVar, Union

from .errors import DriverError
from .hal.enums import ErrorStatus, OperandLifeTime, OperandType, OperationType
from .hal.structs import (DataLocation, ExtensionNameAndPrefix, MemoryPool, Model, Operand,
                          OperandExtraParams, Operation, Request, RequestArgument, Subgraph,
                          SymmPerChannelQuantParams)
from .memory import Memory


#: Models whose operandValues, pools and extraParams hold more bytes than this are not
#: fingerprinted: a memo entry keeps a copy of them, and copying would cost more than it saves.
MAX_FINGERPRINTED_BYTES = 256 * 1024
#: Likewise for models with more integer fields than this (dimensions, indexes, ...).
MAX_FINGERPRINTED_INTS = 64 * 1024

_INT = frozenset({int})
_FLOAT = frozenset({float})
_MEMORY = frozenset({Memory})
# The classes of a model's relaxComputationFloat32toFloat16, operandValues (bytes: a
# bytearray or memoryview is mutable, not kept), pools, referenced and extensionNameToPrefix.
_MODEL_CLASSES = (bool, bytes, list, list, list)
# A subgraph's operands, operations, inputIndexes and outputIndexes.
_SUBGRAPH_FIELD_CLASSES = (list, list, list, list)
# An operand and its dimensions, location and extraParams.
_OPERAND_CLASSES = (Operand, list, DataLocation, OperandExtraParams)
# An operand's type, lifetime, scale, numberOfConsumers, zeroPoint and its location's
# poolIndex, offset and length: the usual classes, then every allowed variant (an enum
# field may hold a plain int).
_OPERAND_FIELD_CLASSES = (OperandType, OperandLifeTime, float, int, int, int, int, int)
_OPERAND_FIELD_CLASS_VARIANTS = frozenset(
    (type_class, lifetime_class) + _OPERAND_FIELD_CLASSES[2:]
    for type_class in (OperandType, int) for lifetime_class in (OperandLifeTime, int))
# An operation and its type, inputs and outputs, likewise.
_OPERATION_CLASSES = (Operation, OperationType, list, list)
_OPERATION_CLASS_VARIANTS = frozenset({_OPERATION_CLASSES, (Operation, int, list, list)})


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

    @property
    def subgraph_parts(self) -> tuple:
        """Per subgraph, main first, its part of the content: its counts, each operand's
        key (followed by its extraParams when it has any), one row per operation and its
        int lists."""
        return self.content[0]


def structure_key(part: tuple) -> tuple:
    """What the checks of a subgraph's structure read, from its entry of ``subgraph_parts``:
    its operands' lifetimes and numberOfConsumers, its operations' types and operand
    indexes, its input and output lists (as plain ints)."""
    counts, keys, rows, indexes = part
    return counts, tuple(map(_LIFETIME, keys)), tuple(map(_CONSUMERS, keys)), rows, indexes


# Where an operand key holds the operand's lifetime and numberOfConsumers.
_LIFETIME, _CONSUMERS = itemgetter(1), itemgetter(3)


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
    relaxed, operand_values = model.relaxComputationFloat32toFloat16, model.operandValues
    pools, referenced, table = model.pools, model.referenced, model.extensionNameToPrefix
    if (type(relaxed), type(operand_values), type(pools), type(referenced),
            type(table)) != _MODEL_CLASSES:
        raise _NotFingerprintable
    kept_bytes = len(operand_values)
    pool_parts: tuple = ()
    if pools:                       # most models have none
        pool_parts, kept_bytes = _pools_content(pools, kept_bytes)
    if kept_bytes > MAX_FINGERPRINTED_BYTES:
        raise _NotFingerprintable
    subgraphs = _subgraphs_content(model.main, referenced, kept_bytes)
    return ModelFingerprint(subgraphs + (operand_values, pool_parts, relaxed,
                                         _extension_table(table) if table else ()))


def _pools_content(pools: list, kept_bytes: int) -> tuple[tuple, int]:
    """Each pool's kind, size and bytes, and ``kept_bytes`` plus their sizes. Sizes first:
    large pools are not even read."""
    _require_classes(pools, _MEMORY)
    sizes = [pool.size for pool in pools]
    _require_classes(sizes, _INT)
    kept_bytes += sum(sizes)
    if kept_bytes > MAX_FINGERPRINTED_BYTES:
        raise _NotFingerprintable
    return tuple(map(_pool_content, pools)), kept_bytes


def _pool_content(pool: Memory) -> tuple:
    if pool.closed or type(pool.name) is not str:
        raise _NotFingerprintable
    return pool.name, pool.size, bytes(pool.buffer())


def _extension_table(table: list) -> tuple:
    entries = []
    for entry in table:
        if (type(entry) is not ExtensionNameAndPrefix or type(entry.name) is not str
                or type(entry.prefix) is not int):
            raise _NotFingerprintable
        entries.append((entry.name, entry.prefix))
    return tuple(entries)


def _subgraphs_content(main: object, referenced: list, kept_bytes: int) -> tuple:
    """The fields of every subgraph, main first: per subgraph, its row of counts, each
    operand's key (its fields, with its extraParams, if any, appended), one row per
    operation and the contents of its operations' and its own int lists concatenated
    into one tuple (the rows hold the lengths that split it back); then the scales' bits,
    the classes of any enum field holding a plain int, and the non-empty extraParams,
    each keyed by its operand's (or operation's) position in the whole model.
    ``kept_bytes`` (operandValues' and the pools') counts towards the limit with the
    extraParams' bytes."""
    parts: list = []                    # per subgraph: (counts, operand keys, rows, indexes)
    scales: list = []
    dimension_values: list = []
    integer_fields = 0
    operation_count = 0
    odd_operand_classes: list = []
    odd_operation_classes: list = []
    extra_params: list = []
    for subgraph in (main, *referenced):
        if type(subgraph) is not Subgraph:
            raise _NotFingerprintable
        operands, operations = subgraph.operands, subgraph.operations
        inputs, outputs = subgraph.inputIndexes, subgraph.outputIndexes
        if (type(operands), type(operations), type(inputs),
                type(outputs)) != _SUBGRAPH_FIELD_CLASSES:
            raise _NotFingerprintable
        keys: list = []
        for operand in operands:
            dimensions, location, extra = operand.dimensions, operand.location, operand.extraParams
            if (type(operand), type(dimensions), type(location), type(extra)) != _OPERAND_CLASSES:
                raise _NotFingerprintable
            operand_type, lifetime, scale = operand.type, operand.lifetime, operand.scale
            consumers, zero_point = operand.numberOfConsumers, operand.zeroPoint
            pool, offset, length = location.poolIndex, location.offset, location.length
            classes = (type(operand_type), type(lifetime), type(scale), type(consumers),
                       type(zero_point), type(pool), type(offset), type(length))
            if classes != _OPERAND_FIELD_CLASSES:
                if classes not in _OPERAND_FIELD_CLASS_VARIANTS:
                    raise _NotFingerprintable
                # An enum member equals its value: the classes tell the two apart.
                odd_operand_classes.append((len(scales), classes))
            dimension_values += dimensions
            # A NaN equals nothing, not even itself: in the key it is a marker (its bits
            # are in the scales' bits), so that equal contents have equal keys. Enum
            # members become plain ints (their classes are kept apart above): memo keys
            # of ints alone are left alone by the garbage collector.
            key = (int(operand_type), int(lifetime), scale if scale == scale else _NAN,
                   consumers, zero_point, pool, offset, length, *dimensions)
            if extra.channelQuant is not None or extra.extension is not None:
                extra_params.append(_extra_params(len(scales), extra))
                key += extra_params[-1][1:]     # its quantization and extension data
            keys.append(key)
            scales.append(scale)
        rows: list = []
        indexes: list = []
        for operation in operations:
            operation_type, operation_inputs, operation_outputs = (
                operation.type, operation.inputs, operation.outputs)
            classes = (type(operation), type(operation_type), type(operation_inputs),
                       type(operation_outputs))
            if classes != _OPERATION_CLASSES:
                if classes not in _OPERATION_CLASS_VARIANTS:
                    raise _NotFingerprintable
                odd_operation_classes.append((operation_count + len(rows), classes))
            rows.append((int(operation_type), len(operation_inputs), len(operation_outputs)))
            indexes += operation_inputs
            indexes += operation_outputs
        indexes += inputs
        indexes += outputs
        _require_classes(indexes, _INT)
        operation_count += len(rows)
        # Four counts, six integer fields per operand, two lengths per operation, and the
        # contents of the int lists.
        integer_fields += 4 + 6 * len(keys) + 2 * len(rows) + len(indexes)
        if integer_fields + len(dimension_values) > MAX_FINGERPRINTED_INTS:
            raise _NotFingerprintable
        parts.append(((len(operands), len(operations), len(inputs), len(outputs)),
                      tuple(keys), tuple(rows), tuple(indexes)))
    _require_classes(dimension_values, _INT)
    if extra_params:
        kept_bytes += sum(map(_extra_params_size, extra_params))
        if kept_bytes > MAX_FINGERPRINTED_BYTES:
            raise _NotFingerprintable
    return (tuple(parts), _float_bits(scales), tuple(odd_operand_classes),
            tuple(odd_operation_classes), tuple(extra_params))


_NAN = "NaN"


def _float_bits(values: list) -> bytes:
    """Floats by their bits: 0.0 and -0.0 compare equal but read differently in messages,
    and a NaN equals nothing, not even itself."""
    return array("d", values).tobytes()


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
        quant = (_float_bits(scales), channel_dim)
    if not (extension is None or type(extension) is bytes):
        raise _NotFingerprintable
    return operand_number, quant, extension


def _extra_params_size(entry: tuple) -> int:
    """The bytes a memo entry keeps for one non-empty extraParams."""
    _, quant, extension = entry
    return (0 if quant is None else len(quant[0])) + (0 if extension is None else len(extension))


def request_key(request: object, model: Model) -> Optional[tuple]:
    """What the checks of a request read, as a hashable value: its pools, its arguments and
    the main subgraph's inputs and outputs they fill (each operand's index, type and
    dimensions); None for a field of an unexpected class, as for model_fingerprint."""
    try:
        pools, main = request.pools, model.main
        if type(request) is not Request or type(pools) is not list:
            return None
        return (tuple(map(_pool_key, pools)),
                _arguments_key(request.inputs, main.inputIndexes, main.operands),
                _arguments_key(request.outputs, main.outputIndexes, main.operands))
    # A field of an unexpected class, a deleted one, an index the model lacks: checking
    # names the error.
    except (_NotFingerprintable, AttributeError, IndexError):
        return None


def _pool_key(pool: object) -> tuple:
    memory, token = pool.hidlMemory, pool.token
    if (type(pool) is not MemoryPool or type(token) not in _TOKEN_CLASSES
            or type(memory) not in _POOL_MEMORY_CLASSES):
        raise _NotFingerprintable
    if memory is None:
        return (token,)
    if type(memory.name) is not str:
        raise _NotFingerprintable
    return token, memory.name, memory.size, memory.closed


_TOKEN_CLASSES = frozenset({int, type(None)})
_TYPE_CLASSES = frozenset({OperandType, int})
_POOL_MEMORY_CLASSES = frozenset({Memory, type(None)})


def _arguments_key(arguments: object, indexes: list, operands: list) -> tuple:
    """The arguments' count, the indexes' count, then per argument its fields and its
    operand's index, type and dimensions."""
    if type(arguments) is not list:
        raise _NotFingerprintable
    keys = [len(arguments), len(indexes)]
    for argument, index in zip(arguments, indexes):
        location, dimensions = argument.location, argument.dimensions
        if (type(argument) is not RequestArgument or type(argument.hasNoValue) is not bool
                or type(location) is not DataLocation or type(dimensions) is not list):
            raise _NotFingerprintable
        fields = (location.poolIndex, location.offset, location.length, *dimensions)
        _require_classes(fields, _INT)
        operand = operands[index]
        if type(operand.type) not in _TYPE_CLASSES:
            raise _NotFingerprintable
        keys.append((argument.hasNoValue, index, int(operand.type), tuple(operand.dimensions),
                     *fields))
    return tuple(keys)


# --- memos ------------------------------------------------------------------------------

#: Failures that follow from the model's content alone, and so may be remembered by
#: content: an invalid model, a size over the driver's limits. Anything else (a transient
#: shortage, say) is reported but left out of the memo, so the next call tries again.
CONTENT_DETERMINED_STATUSES = frozenset({ErrorStatus.INVALID_ARGUMENT,
                                         ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT})


@dataclass(frozen=True)
class CachedFailure:
    """A DriverError remembered by class, message and status, re-raised as a new error
    each time (a raised exception carries its traceback: never share one)."""
    kind: type
    message: str
    status: ErrorStatus

    def raise_again(self) -> None:
        raise self.kind(self.message, self.status)


V = TypeVar("V")
MISSING = object()


class ContentMemo(Generic[V]):
    """The ``capacity`` most recently used results, keyed by content. Thread-safe; the
    work itself runs outside any lock (two threads may both compute an entry)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Union[V, object]:
        """The remembered value, or MISSING. Without the lock: a lookup is one atomic
        operation of the OrderedDict, and so is marking it recently used."""
        value = self._entries.get(key, MISSING)
        if value is not MISSING:
            try:
                self._entries.move_to_end(key)
            except KeyError:
                pass            # evicted by another thread meanwhile: still a valid answer
        return value

    def put(self, key: Hashable, value: V) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)

    def remember(self, key: Hashable, compute: Callable[[], V]) -> V:
        """``compute()``, done once while ``key`` is remembered. A DriverError whose status
        follows from the content (CONTENT_DETERMINED_STATUSES) is remembered too, and
        raised again as a new error of the same message; any other is not remembered."""
        value = self.get(key)
        if value is MISSING:
            try:
                value = compute()
            except DriverError as error:
                if error.status in CONTENT_DETERMINED_STATUSES:
                    self.put(key, CachedFailure(type(error), str(error), error.status))
                raise
            self.put(key, value)
        elif isinstance(value, CachedFailure):
            value.raise_again()
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


__all__ = ["ModelFingerprint", "model_fingerprint", "structure_key", "request_key",
           "CachedFailure", "ContentMemo", "MISSING", "CONTENT_DETERMINED_STATUSES"]
