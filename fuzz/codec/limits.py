"""The encoding's limits: every count is capped, so that decoding any input stays cheap.
Generous enough for every conformance model (at most 218 operands, 61 operation inputs, 56
subgraph inputs, rank 5, 4 referenced subgraphs)."""
from __future__ import annotations


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

#: Seeds an operand value can name (its recipe byte is 2 + seed).
NUM_SEEDS = 254



class CodecLimitError(ValueError):
    """A case or spec holds something the encoding cannot express (a count over its cap, a
    time that is not a whole number of microseconds, ...)."""

