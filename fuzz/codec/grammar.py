"""The wire grammar's constants (see the package docstring): the caps on every count (so that
decoding any input stays cheap), the codes of enums, recipes and choices, the bits of the
head bytes, and the field tables of the records (operands, operations, request arguments and
pools), which wire.py walks to read and write them. The caps are generous enough for every
conformance model (at most 218 operands, 61 operation inputs, 56 subgraph inputs, rank 5, 4
referenced subgraphs)."""
from __future__ import annotations

import enum
from typing import Callable, NamedTuple

from driver.hal import (ExecutionPreference, MeasureTiming, OperandLifeTime, OperandType,
                        OperationType, Priority)
from hal_client.paths import DeadlineEdge

from ..case import ExecutionPath, Relation, RequestChange

# --- caps ------------------------------------------------------------------------------------

UINT16_MAX = 0xFFFF
UINT32_MAX = 0xFFFF_FFFF
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1

MAX_REFERENCED = 8
MAX_OPERANDS = 256
MAX_OPERATIONS = 128
MAX_OPERATION_INPUTS = 128
MAX_OPERATION_OUTPUTS = 16
MAX_IO_INDEXES = 128
#: A rank written as one byte is capped here (as it always was: corpus inputs keep their
#: meaning) ...
MAX_RANK = 8
#: ... and one written as a longer varint here (the encoder writes ranks over MAX_RANK so):
#: past the bundled driver's rank limit (driver.limits.MAX_RANK, 32) and numpy's (64). A
#: driver must refuse such ranks itself, as numpy raises or crashes on them.
MAX_LONG_RANK = 66
#: A long rank varint from REPEATED_RANK_BASE + 1 to REPEATED_RANK_BASE + MAX_REPEATED_RANK
#: is a rank of (varint - REPEATED_RANK_BASE) given by one dimension, repeated: a shape far
#: past any rank limit (a driver must not spend time in proportion to its rank, or worse,
#: before refusing it) in a few bytes. Such varints read as MAX_RANK before (no input of
#: corpus/ or crashes/ holds one).
REPEATED_RANK_BASE = 1 << 14
MAX_REPEATED_RANK = 1 << 17
MAX_POOLS = 8
MAX_SEGMENTS = 16
MAX_CHANNEL_SCALES = 64
MAX_EXTENSION_BYTES = 64
MAX_EXTENSIONS = 8
MAX_NAME_BYTES = 64
MAX_REQUEST_ARGUMENTS = 128
MAX_WAIT_FENCES = 3

#: Largest single value the decoder generates from a seed.
MAX_GENERATED_VALUE = 64 * 1024
#: Per case: bytes the decoder fills itself (zeros + generated values) ...
FILL_BUDGET = 1 << 20
#: ... of which generated (the more expensive kind).
GENERATED_BUDGET = 256 * 1024
#: Request buffers may be this many bytes larger or smaller than their operand needs.
MAX_SIZE_DELTA = 1 << 20

#: Time choices are encoded in microseconds and capped so a fuzz input can never make one
#: execution slow: a loop runs at most 100 ms unless the timeout is omitted (2 s default).
LOOP_TIMEOUT_CAP_US = 100_000
DEADLINE_CAP_US = 10_000_000
WAIT_FENCE_DELAY_CAP_US = 5_000
FENCED_DURATION_CAP_US = 10_000_000
#: A deadline varint DEADLINE_EDGE_BASE + k (k from 1) is the k-th edge of the clock (such
#: varints read as the cap before: no input of corpus/ or crashes/ holds one).
DEADLINE_EDGE_BASE = DEADLINE_CAP_US
#: A cache corruption's place is below this.
CORRUPTION_CAP = UINT32_MAX
#: The most bytes the execution choices at the head of an input take: two bytes and at most
#: six varints of at most 10 bytes.
CHOICES_MAX_BYTES = 2 + 6 * 10

#: Seeds an operand value can name (its recipe byte is 2 + seed).
NUM_SEEDS = 254


class CodecLimitError(ValueError):
    """A case or spec holds something the encoding cannot express (a count over its cap, a
    time that is not a whole number of microseconds, ...)."""


# --- codes -----------------------------------------------------------------------------------

OPERAND_TYPES = {int(t): t for t in OperandType}
OPERATION_TYPES = {int(t): t for t in OperationType}
LIFETIMES = {int(t): t for t in OperandLifeTime}
# Codes that fit one varint byte (all but OEM's) are looked up by index: cheaper than a dict
# lookup with a default, and decoding does one per operand and operation.
OPERAND_TYPE_OF_BYTE = tuple(OPERAND_TYPES.get(b, b) for b in range(0x80))
OPERATION_TYPE_OF_BYTE = tuple(OPERATION_TYPES.get(b, b) for b in range(0x80))
# Lifetimes as plain ints: they are compared with raw codes as well as with enum members.
COPY = int(OperandLifeTime.CONSTANT_COPY)
REFERENCE = int(OperandLifeTime.CONSTANT_REFERENCE)
SUBGRAPH = int(OperandLifeTime.SUBGRAPH)
#: An operand head's lifetime bits (the low three) hold its lifetime below this; this
#: value there: the raw lifetime follows, after the dimensions.
LIFETIME_ESCAPE = 7
LIFETIME_OF_CODE = tuple(LIFETIMES.get(b, b) for b in range(LIFETIME_ESCAPE))

MEMORY_NAMES = ("ashmem", "mmap_fd", "hardware_buffer_blob")

# The first byte of a value or segment: zeros, literal bytes (their length and the bytes
# follow), or from RECIPE_GENERATED on, generated values (of the seed the byte less it names,
# for a value; of the element kind it names, for a segment).
RECIPE_ZERO = 0
RECIPE_LITERAL = 1
RECIPE_GENERATED = 2

# Choices: the first byte's path:2 second_path:2 measure:1 priority:2 has_deadline:1, the
# second's preference:2 wait_fences:2 has_fenced_duration:1 request_change:2 has_relation:1.
PATHS = tuple(ExecutionPath)
MEASURE = (MeasureTiming.NO, MeasureTiming.YES)
PRIORITIES = (Priority.LOW, Priority.MEDIUM, Priority.HIGH, Priority.MEDIUM)
PREFERENCES = (ExecutionPreference.LOW_POWER, ExecutionPreference.FAST_SINGLE_ANSWER,
               ExecutionPreference.SUSTAINED_SPEED, ExecutionPreference.FAST_SINGLE_ANSWER)
REQUEST_CHANGES = tuple(RequestChange)
#: The relations a set relation bit can name (a varint past the last reads as the last, which
#: takes no corruption varint: a varint out of range never makes the choices longer).
RELATIONS = tuple(Relation)[1:]
DEADLINE_EDGES = tuple(DeadlineEdge)[1:]
CHOICES_DEADLINE = 0x80
CHOICES_FENCED_DURATION = 0x10
#: The second byte's bits 5-6: the request change (every input written before the field
#: existed has both bits clear, so it decodes as it did: no change).
CHOICES_REQUEST_CHANGE_SHIFT = 5
#: The second byte's bit 7: a metamorphic relation follows, as the last varint of the
#: choices (clear in every input written before the field existed: no relation).
CHOICES_RELATION = 0x80

# --- records ---------------------------------------------------------------------------------
# A record is a head byte (when some field has a bit there) and its fields, in the order of
# its table. A field with a ``flag`` follows only when its bit is set in the head (which the
# writer sets when the field differs from its default); a field with ``when`` only when that
# holds of the fields before it. Fields are read into, and written from, the attribute named
# (of an attribute, for a dotted name) of the spec the record stands for.


class Kind(enum.Enum):
    """How a field's value is written (``v`` a varint, ``b`` a byte)."""
    BIT = enum.auto()            # the head bit ``flag`` itself; nothing follows
    U32 = enum.auto()            # v, capped at UINT32_MAX
    I32 = enum.auto()            # zigzag v, capped at ±cap (the int32 range without one)
    BYTES = enum.auto()          # v(n <= cap) n*b
    INDEXES = enum.auto()        # v(n <= cap) n*U32
    DIMENSIONS = enum.auto()     # rank, as many dimensions (see the package docstring)
    SCALE = enum.auto()          # b(wide) f32|f64
    CHANNEL_QUANT = enum.auto()  # b(wide) v(#) f32|f64* v(channelDim)
    LOCATION = enum.auto()       # v(poolIndex) v(offset) v(length)
    VALUE = enum.auto()          # a value recipe
    BLOB = enum.auto()           # a pool's memory name and segments
    OPERAND_TYPE = enum.auto()   # U32, as the OperandType it codes (else the int)
    OPERATION_TYPE = enum.auto()  # U32, as the OperationType it codes (else the int)
    LIFETIME = enum.auto()       # held in the head's low bits (below ``escape``), else U32


class Field(NamedTuple):
    name: str
    kind: Kind
    flag: int = 0
    when: Callable[[object], bool] | None = None
    cap: int = 0
    #: The head's bits under this mask hold the value when it is below it; the mask there:
    #: the value follows, at the field's place.
    escape: int = 0


OPERAND_QUANT = 0x08
OPERAND_CONSUMERS = 0x10
OPERAND_LOCATION = 0x20
OPERAND_CHANNEL_QUANT = 0x40
OPERAND_EXTENSION = 0x80
OPERAND_FIELDS = (
    Field("type", Kind.OPERAND_TYPE),
    Field("dimensions", Kind.DIMENSIONS),
    Field("lifetime", Kind.LIFETIME, escape=LIFETIME_ESCAPE),
    Field("scale", Kind.SCALE, OPERAND_QUANT),
    Field("zeroPoint", Kind.I32, OPERAND_QUANT),
    Field("consumers", Kind.U32, OPERAND_CONSUMERS),
    Field("location", Kind.LOCATION, OPERAND_LOCATION),
    # Placed: a referenced subgraph or pool, and a constant's value.
    Field("target", Kind.U32,
          when=lambda o: o.location is None and o.lifetime in (REFERENCE, SUBGRAPH)),
    Field("value", Kind.VALUE,
          when=lambda o: o.location is None and o.lifetime in (COPY, REFERENCE)),
    Field("extraParams.channelQuant", Kind.CHANNEL_QUANT, OPERAND_CHANNEL_QUANT),
    Field("extraParams.extension", Kind.BYTES, OPERAND_EXTENSION, cap=MAX_EXTENSION_BYTES),
)

OPERATION_FIELDS = (
    Field("type", Kind.OPERATION_TYPE),
    Field("inputs", Kind.INDEXES, cap=MAX_OPERATION_INPUTS),
    Field("outputs", Kind.INDEXES, cap=MAX_OPERATION_OUTPUTS),
)

ARGUMENT_NO_VALUE = 0x01
ARGUMENT_LOCATION = 0x02
ARGUMENT_DELTA = 0x04
ARGUMENT_FIELDS = (
    Field("hasNoValue", Kind.BIT, ARGUMENT_NO_VALUE),
    Field("dimensions", Kind.DIMENSIONS),
    Field("size_delta", Kind.I32, ARGUMENT_DELTA, cap=MAX_SIZE_DELTA),
    Field("location", Kind.LOCATION, ARGUMENT_LOCATION),
    # Placed: the request pool and the value.
    Field("target", Kind.U32, when=lambda a: a.location is None and not a.hasNoValue),
    Field("value", Kind.VALUE, when=lambda a: a.location is None and not a.hasNoValue),
)

POOL_TOKEN = 0x01
REQUEST_POOL_FIELDS = (
    Field("token", Kind.U32, POOL_TOKEN),
    Field("blob", Kind.BLOB, when=lambda p: p.token is None),
)
