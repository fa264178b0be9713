"""The driver's limits: the rank and byte size of any one value, the bytes the values of one
execution may hold at once, the time steps of a sequence, the work one operation may cost,
and the deadline a long kernel watches while it works.

The HAL bounds none of them: a model or request asking for more is valid, only more than this
driver holds. So a model declaring a rank over the limit has its operations reported
unsupported (getSupportedOperations_1_3; prepareModel_1_3 then refuses it, as it refuses
any model with an unsupported operation), and every other shape over a limit, whether
inferred at prepare time, supplied by a request, carried by a loop or computed from values
at run time, is refused with RESOURCE_EXHAUSTED_PERSISTENT before anything is allocated:
retrying cannot help. Each check below is the one place its rule and message live.

A value's size does not bound the time an operation takes: NMS compares each pick with
every candidate left, a depthwise filter tap adds a slice of every output, a recurrent step
multiplies the state by the recurrent weights. So each such operation has a cost bound
(``check_cost``, with the bounds below, each about a second of numpy on one core), checked
before the work starts and refused the same way. Within the bounds, a kernel that works in
rounds, steps or chunks calls ``checkpoint()`` between them: an execution's deadline or
loop timeout (``running``), or a preparation's deadline, interrupts the operation there
rather than after it.
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from math import prod
from operator import attrgetter
from typing import Iterator, Optional, Protocol, Sequence

from .errors import ExecutionError, ResourceError
from .hal.enums import ErrorStatus
from .hal.dtypes import ELEMENT_SIZE
from .hal.structs import Operand

#: The highest rank of any value. numpy holds at most 64 dimensions (32 before numpy 2)
#: and crashes or raises past that, while a rank read from a model, a request or a vector's
#: length may be anything up to 2**32 - 1.
MAX_RANK = 32

#: No value may be larger than this. It also bounds the time an operation of linear cost
#: takes (the others have cost bounds, below), which the fuzz harness holds to its loop
#: timeout plus a second: at 256 MiB, two FILLs of 115 million float16 values and a FLOOR of
#: one took over a second (float16 arithmetic runs through float32 loops); at 32 MiB, a tenth.
MAX_VALUE_BYTES = 32 * 1024 * 1024

#: The bytes the values of one execution may hold at once: its inputs and every value its
#: operations computed that a later operation or an output still needs. Thirty-two values
#: of the largest size one value may have (32 MiB): far more than any model of the
#: conformance suite holds at once, yet a bounded share of a host that runs several
#: executions (or fuzzing workers) side by side. Past it an execution fails with
#: RESOURCE_EXHAUSTED_PERSISTENT before allocating: the same request would need the same
#: memory again, so retrying cannot help.
MEMORY_BUDGET_BYTES = 32 * MAX_VALUE_BYTES

#: The most time steps a recurrent operation runs. Its steps follow one another, a few numpy
#: calls each (some microseconds), so the largest sequence a value may hold (16 million steps
#: of one float16) would run for a minute; 32,768 steps of a bidirectional RNN take 0.2 s.
MAX_TIME_STEPS = 1 << 15

#: The candidate comparisons of one non-maximum suppression (BOX_WITH_NMS_LIMIT,
#: GENERATE_PROPOSALS, DETECTION_POSTPROCESSING): each round picks one box per group and
#: compares it with every candidate, so the work is rounds times candidates. 2,048
#: candidates that never overlap (2,048 rounds) take about a second; the values allow
#: millions of boxes, whose rounds would take hours.
MAX_NMS_COMPARISONS = 1 << 22

#: The products of a depthwise convolution: filter taps times output elements. Each tap
#: adds one output-sized multiply to the sums, some 0.6 billion elements a second; a
#: filter of 160,000 taps over a 100,000-element output took 49 s.
MAX_TAP_PRODUCTS = 1 << 28

#: The multiply-adds of one matrix product (operations.common.matrix_product): a
#: convolution's windows with its filters (CONV_2D, GROUPED_CONV_2D, TRANSPOSE_CONV_2D),
#: FULLY_CONNECTED, SVDF's features; and those of a quantized LSTM's cell, the products of
#: its gates and projection together. Three factors of a product each within a value allow
#: some 2**34; BLAS does about 15 billion a second in single precision and half that in the
#: double precision that exact integer sums use.
MAX_PRODUCT_MULTIPLY_ADDS = 1 << 33

#: How many multiply-adds a kernel hands BLAS at once between checkpoints: some
#: milliseconds, a small share of the tolerance on a deadline.
MULTIPLY_ADDS_PER_CHUNK = 1 << 24

#: The scratch a kernel that computes in chunks holds for one chunk (an LSTM's input part of
#: a chunk of steps, RANDOM_MULTINOMIAL's draws): a few MiB, small beside a value.
SCRATCH_BYTES_PER_CHUNK = 1 << 22

#: The multiply-adds of one recurrent operation (RNN, LSTM and their sequence forms): time
#: steps times batch times gate units times the sizes each unit reads (input, state,
#: auxiliary input). A step multiplies a batch of state rows at a time, at under 2 billion
#: multiply-adds a second; 32,768 steps of 16,384 units would take hours.
MAX_RECURRENT_MULTIPLY_ADDS = 1 << 31

#: The bytes LSH_PROJECTION hashes: every seed before every input row, hashed in 64-byte
#: blocks of numpy on many keys at once, some 30 million bytes a second (each round over
#: the blocks of long keys counted as more: lsh_projection.hashing_cost). 4,096 seeds over
#: 4,096 int32 rows took 2.3 s; 16 seeds over one row of 1 MiB, 67 s.
MAX_HASHED_BYTES = 1 << 24

#: The names of the limits above (what in_force returns the values of).
_LIMITS = tuple(name for name, value in globals().items() if name.isupper() and type(value) is int)


def in_force() -> tuple[int, ...]:
    """The limits as they stand now: what the driver derives from a model depends on them,
    and a test (or a driver built on this one) may change one, so its memo's keys hold them
    (driver/validation/memo.py)."""
    return tuple(map(globals().__getitem__, _LIMITS))


def itemsize(operand_type: int) -> int:
    """Bytes per element (1 for types without a storage dtype)."""
    return ELEMENT_SIZE.get(operand_type, 1)


def operands_over_rank(operands: Sequence[Operand]) -> frozenset[int]:
    """The indexes of the operands declaring a rank over MAX_RANK: the operations reading
    or writing them are unsupported. (map and max run in C: this is on every model's path.)"""
    ranks = list(map(len, map(_DIMENSIONS, operands)))
    if max(ranks, default=0) <= MAX_RANK:
        return frozenset()
    return frozenset(i for i, rank in enumerate(ranks) if rank > MAX_RANK)


_DIMENSIONS = attrgetter("dimensions")


def check_rank(rank: int, what: str) -> None:
    """Refuse a rank over MAX_RANK; called before a shape of that rank is built."""
    if rank > MAX_RANK:
        raise ResourceError(f"{what}: rank {rank} is over this driver's limit of {MAX_RANK}")


def check_time_steps(steps: int, what: str) -> None:
    if steps > MAX_TIME_STEPS:
        raise ResourceError(f"{what}: {steps} time steps are over this driver's limit of {MAX_TIME_STEPS}")


def value_nbytes(shape: Sequence[int], item_bytes: int) -> int:
    """Bytes of a value of this shape, a zero dimension counted as one: at prepare time 0
    means unknown, and at run time numpy refuses an empty array whose other dimensions
    multiply past its index range, so an empty value is held to the same bound. Called
    once the rank is checked (check_shape): at most MAX_RANK factors, a small product."""
    return item_bytes * prod(filter(_OVER_ONE, shape))


_OVER_ONE = (1).__lt__     # d > 1, as filter calls it without a Python frame


def check_shape(shape: Sequence[int] | None, item_bytes: int, what: str) -> int:
    """Refuse a value whose rank or byte size is over the limits; returns its byte size
    (value_nbytes; 0 for an unknown rank, None, which passes)."""
    if shape is None:
        return 0
    check_rank(len(shape), what)
    nbytes = value_nbytes(shape, item_bytes)
    if nbytes > MAX_VALUE_BYTES:
        raise ResourceError(f"{what}: shape {list(shape)} needs {nbytes} bytes, over this "
                            f"driver's limit of {MAX_VALUE_BYTES} per value")
    return nbytes


def check_cost(cost: int, bound: int, unit: str, what: str) -> None:
    """Refuse an operation whose work (``cost`` of ``unit``) is over ``bound``, one of the
    cost bounds above: called before the work starts."""
    if cost > bound:
        raise ResourceError(f"{what}: {cost} {unit} are over this driver's limit of {bound}")


# --- interrupting long kernels ---------------------------------------------------------------

class Deadline(Protocol):
    def check_deadline(self) -> None:
        """Raise the DriverError of a deadline passed, if it has."""


class PreparationDeadline:
    """A preparation's deadline (time.monotonic_ns()), for what preparation computes (the
    constants some shape inferences fold)."""
    __slots__ = ("deadline_ns",)

    def __init__(self, deadline_ns: int) -> None:
        self.deadline_ns = deadline_ns

    def check_deadline(self) -> None:
        if time.monotonic_ns() > self.deadline_ns:
            raise ExecutionError("the preparation deadline passed while preparing",
                                 ErrorStatus.MISSED_DEADLINE_PERSISTENT)


class _Running(threading.local):
    deadline: Optional[Deadline] = None


_RUNNING = _Running()


@contextmanager
def running(deadline: Optional[Deadline]) -> Iterator[None]:
    """Kernels run on this thread within ``deadline`` (an execution's ExecutionContext,
    whose deadline a WHILE loop narrows to its timeout while it runs, or a
    PreparationDeadline): ``checkpoint()`` checks it. Set once per execution or preparation,
    not per operation."""
    outer, _RUNNING.deadline = _RUNNING.deadline, deadline
    try:
        yield
    finally:
        _RUNNING.deadline = outer


def checkpoint() -> None:
    """Called by a long kernel between rounds, time steps or chunks of its work: raises the
    deadline's error once the deadline the kernel runs within has passed. Costs an
    attribute read when none is set, a clock read when one is."""
    deadline = _RUNNING.deadline
    if deadline is not None:
        deadline.check_deadline()
