"""What one fuzz input means: a HAL Model, a Request and the execution choices.

The codec (codec.py) maps bytes to a FuzzCase and back; the harness (harness.py) runs one.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

from driver.hal import ExecutionPreference, Model, Priority, Request
from hal_client.paths import ExecutionArguments, ExecutionPath


class RequestChange(enum.IntEnum):
    """What the caller does to its Request once the second execution has been launched on
    another thread (execute_1_3, executeFenced): HIDL copies a request at the call, so the
    execution must run the request as it was then, whatever the caller does after."""
    NONE = 0
    ARGUMENTS = 1   # every argument's location and dimensions rewritten
    POOLS = 2       # every pool replaced by a new one holding other bytes
    CLOSED = 3      # the pools closed and the Request emptied


class Relation(enum.IntEnum):
    """The metamorphic relation a case is also checked by: the model and request are
    rewritten into ones that must give the same outputs (fuzz/relations.py), or run by
    another route through the HAL (fuzz/routes.py: memory domains, compilation caching),
    on the same driver, and compared."""
    NONE = 0
    IF_THEN = 1                  # the main subgraph as the then-branch of IF(true)
    IF_ELSE = 2                  # ... as the else-branch of IF(false)
    CONSTANT_COPY = 3            # a main input given as a CONSTANT_COPY operand
    CONSTANT_REFERENCE = 4       # ... as a CONSTANT_REFERENCE operand in a model pool
    OWN_POOLS = 5                # each request argument in a pool of its own, at an offset
    RENUMBERED = 6               # operands and operations renumbered, operations reordered
    UNKNOWN_OUTPUT_SHAPES = 7    # main output dimensions left for the driver to work out
    # The routes:
    THROUGH_BUFFERS = 8          # every argument in a buffer of its own (IDevice.allocate)
    FREED_BUFFER = 9             # ... whose IBuffers are dropped before the execution
    OTHER_MODELS_BUFFER = 10     # ... allocated for another preparation of the model
    FROM_CACHE = 11              # prepared with cache files, then from them
    CACHE_BYTE_FLIPPED = 12      # ... a byte of a cache file inverted in between
    CACHE_TRUNCATED = 13         # ... a cache file cut short in between
    CACHE_FILES_SWAPPED = 14     # ... the cache files' contents rotated in between
    CACHE_OTHER_TOKEN = 15       # ... prepared from them with another token
    CACHE_FORGED = 16            # ... a string of the model in them rewritten, and resealed
    POOL_SHRUNK = 17             # a request pool cut short (ftruncate) before the execution
    POOL_AS_CACHE = 18           # the request pools given as cache files, then the execution
    BUFFER_WITH_LENGTH = 19      # every argument in a buffer of its own, one given a length


#: The relations whose case says where they change a cache file (``ExecutionChoices.corruption``).
PLACED_RELATIONS = frozenset({Relation.CACHE_BYTE_FLIPPED, Relation.CACHE_TRUNCATED,
                              Relation.CACHE_FORGED, Relation.POOL_SHRUNK})


@dataclass(kw_only=True)
class ExecutionChoices(ExecutionArguments):
    """How a case is run: the execution's arguments besides the request (those of
    ExecutionArguments), the paths, and prepareModel_1_3's arguments."""
    path: ExecutionPath = ExecutionPath.SYNC
    second_path: ExecutionPath = ExecutionPath.ASYNC   # the determinism re-run
    preference: ExecutionPreference = ExecutionPreference.FAST_SINGLE_ANSWER
    priority: Priority = Priority.MEDIUM
    #: What happens to the second execution's request after an ASYNC or FENCED launch.
    request_change: RequestChange = RequestChange.NONE
    #: The metamorphic relation the case is also checked by, once it ran successfully.
    relation: Relation = Relation.NONE
    #: Where a PLACED_RELATIONS member changes a cache file: which file (modulo their
    #: number) and, from the quotient, which byte (modulo its length); for CACHE_FORGED,
    #: which string and how it is rewritten; for POOL_SHRUNK, which pool and to how many
    #: bytes.
    corruption: int = 0


@dataclass
class FuzzCase:
    model: Model = field(default_factory=Model)
    request: Request = field(default_factory=Request)
    choices: ExecutionChoices = field(default_factory=ExecutionChoices)
