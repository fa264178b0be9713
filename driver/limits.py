"""The driver's limits: the rank and byte size of any one value, the bytes the values of one
execution may hold at once, and the time steps of a sequence.

The HAL bounds none of them: a model or request asking for more is valid, only more than this
driver holds. So a model declaring a rank over the limit has its operations reported
unsupported (getSupportedOperations_1_3; prepareModel_1_3 then refuses it, as it refuses
any model with an unsupported operation), and every other shape over a limit, whether
inferred at prepare time, supplied by a request, carried by a loop or computed from values
at run time, is refused with RESOURCE_EXHAUSTED_PERSISTENT before anything is allocated:
retrying cannot help. Each check below is the one place its rule and message live.
"""
from __future__ import annotations

from math import prod
from operator import attrgetter
from typing import Sequence

from .errors import ResourceError
from .hal.dtypes import STORAGE_DTYPE
from .hal.structs import Operand

#: The highest rank of any value. numpy holds at most 64 dimensions (32 before numpy 2)
#: and crashes or raises past that, while a rank read from a model, a request or a vector's
#: length may be anything up to 2**32 - 1.
MAX_RANK = 32

#: No value may be larger than this. It also bounds the time an execution takes, which the
#: fuzz harness holds to its loop timeout plus a second: at 256 MiB, two FILLs of 115
#: million float16 values and a FLOOR of one took over a second (float16 arithmetic runs
#: through float32 loops); at 32 MiB, a tenth.
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

#: Bytes per element by operand type (1 for types without a storage dtype).
_ITEMSIZE = {operand_type: dtype.itemsize for operand_type, dtype in STORAGE_DTYPE.items()}


def itemsize(operand_type: int) -> int:
    return _ITEMSIZE.get(operand_type, 1)


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
    """Refuse a sequence of more than MAX_TIME_STEPS steps."""
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
