"""CaseSpec: a description of a fuzz case that mirrors the HAL structures but leaves to
the decoder what it can work out itself (see the package docstring), and the copies the
custom mutator changes."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields
from typing import TypeVar

from driver.hal import (DataLocation, ExtensionNameAndPrefix, OperandExtraParams,
                        OperandLifeTime, OperandType, Operation)

from ..case import ExecutionChoices
from .values import ElementKind

_D = TypeVar("_D", "OperandSpec", "ArgumentSpec")

# The hottest structures (specs and HAL ones) are made as their dataclass __init__ makes them
# (every field assigned, in declaration order, to a bare instance), without the generic
# dispatch of type.__call__ and the __init__ frame: a case holds dozens to hundreds of them.
new_instance = object.__new__


def require_fields(cls: type, *names: str) -> None:
    """Fail at import, not with half-built objects, if a structure built field by field
    gains, loses or reorders a field, or gains a __post_init__ it would skip."""
    declared = tuple(f.name for f in fields(cls))
    if declared != names:
        raise TypeError(f"the codec builds {cls.__name__} with the fields {names}, "
                        f"but it declares {declared}")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"the codec builds {cls.__name__} field by field, which would skip "
                        "its __post_init__")



class ValueKind(enum.IntEnum):
    ZERO = 0
    LITERAL = 1
    GENERATED = 2


@dataclass(frozen=True)
class ValueSpec:
    """The content of a constant or request argument whose place the decoder chooses. Its
    length follows from the operand type and dimensions (plus a request argument's
    ``size_delta``), except for literals, which are exactly ``data``. Immutable, so that
    operands and arguments can share one (the decoder shares one per seed)."""
    kind: ValueKind = ValueKind.ZERO
    seed: int = 0          # GENERATED: 0 .. NUM_SEEDS-1
    data: bytes = b""      # LITERAL


ZERO_VALUE = ValueSpec()


@dataclass
class Segment:
    """A run of explicitly laid-out pool content."""
    kind: ValueKind = ValueKind.ZERO
    length: int = 0                        # ZERO, GENERATED
    element: ElementKind = ElementKind.BYTES   # GENERATED
    seed: int = 0                          # GENERATED: 0..255
    data: bytes = b""                      # LITERAL


@dataclass
class BlobSpec:
    """A memory pool: explicit segments first, then the values placed by the decoder."""
    name: str = "ashmem"
    segments: list[Segment] = field(default_factory=list)


@dataclass
class OperandSpec:
    type: OperandType | int
    dimensions: list[int] = field(default_factory=list)
    scale: float = 0.0
    zeroPoint: int = 0
    lifetime: OperandLifeTime | int = OperandLifeTime.TEMPORARY_VARIABLE
    #: None: counted from the operations of the subgraph.
    consumers: int | None = None
    #: None: placed by the decoder. CONSTANT_COPY values go to operandValues,
    #: CONSTANT_REFERENCE values to pool ``target``, SUBGRAPH operands refer to referenced
    #: subgraph ``target``; any other lifetime gets the all-zero location.
    location: DataLocation | None = None
    target: int = 0
    value: ValueSpec = ZERO_VALUE
    extraParams: OperandExtraParams = field(default_factory=OperandExtraParams)


@dataclass
class SubgraphSpec:
    operands: list[OperandSpec] = field(default_factory=list)
    operations: list[Operation] = field(default_factory=list)
    inputIndexes: list[int] = field(default_factory=list)
    outputIndexes: list[int] = field(default_factory=list)


@dataclass
class ModelSpec:
    main: SubgraphSpec = field(default_factory=SubgraphSpec)
    referenced: list[SubgraphSpec] = field(default_factory=list)
    operandValues: list[Segment] = field(default_factory=list)
    pools: list[BlobSpec] = field(default_factory=list)
    relaxComputationFloat32toFloat16: bool = False
    extensionNameToPrefix: list[ExtensionNameAndPrefix] = field(default_factory=list)

    def subgraphs(self) -> list[SubgraphSpec]:
        return [self.main, *self.referenced]


@dataclass
class ArgumentSpec:
    hasNoValue: bool = False
    dimensions: list[int] = field(default_factory=list)
    #: None: placed by the decoder in request pool ``target`` (no location for hasNoValue).
    location: DataLocation | None = None
    target: int = 0
    value: ValueSpec = ZERO_VALUE
    #: Added to the operand's storage size (not for literals): < 0 gives a too-small buffer.
    size_delta: int = 0


@dataclass
class RequestPoolSpec:
    """A hidl_memory pool (``token`` None) or a driver-allocated buffer's token."""
    token: int | None = None
    blob: BlobSpec = field(default_factory=BlobSpec)


@dataclass
class RequestSpec:
    inputs: list[ArgumentSpec] = field(default_factory=list)
    outputs: list[ArgumentSpec] = field(default_factory=list)
    pools: list[RequestPoolSpec] = field(default_factory=list)


@dataclass
class CaseSpec:
    model: ModelSpec = field(default_factory=ModelSpec)
    request: RequestSpec = field(default_factory=RequestSpec)
    choices: ExecutionChoices = field(default_factory=ExecutionChoices)


def copy_subgraph(sg: SubgraphSpec) -> SubgraphSpec:
    """A copy with lists of its own, sharing their elements."""
    copy = new_instance(SubgraphSpec)
    copy.operands = sg.operands.copy()
    copy.operations = sg.operations.copy()
    copy.inputIndexes = sg.inputIndexes.copy()
    copy.outputIndexes = sg.outputIndexes.copy()
    return copy


# A copy has lists of its own (operands, operations, indexes, arguments, pools, ...) and
# shares their elements with the original: a mutation changes few of them, and replaces
# each by a copy first (writable_operand, writable_operation, writable_argument). Values,
# locations, extra params, segments and pools are only ever replaced, never changed.

def writable(items: list[_D], i: int) -> _D:
    """items[i] (an OperandSpec or ArgumentSpec), first replaced by a copy with its own
    list of dimensions."""
    # Copying the instance's __dict__: copy.copy without the cost of its generic protocol.
    item = items[i]
    fields = item.__dict__.copy()
    fields["dimensions"] = fields["dimensions"].copy()
    copy = new_instance(type(item))
    copy.__dict__ = fields
    items[i] = copy
    return copy


def writable_operand(sg: SubgraphSpec, i: int) -> OperandSpec:
    """Operand i of ``sg``, first replaced by a copy of its own (with its own dimensions):
    change an operand only through this, as copies of an EncodedSpec share operands."""
    return writable(sg.operands, i)


def writable_operation(sg: SubgraphSpec, k: int) -> Operation:
    """Operation k of ``sg``, first replaced by a copy of its own: change an operation only
    through this, as copies of an EncodedSpec share operations."""
    op = sg.operations[k]
    copy = Operation(op.type, op.inputs.copy(), op.outputs.copy())
    sg.operations[k] = copy
    return copy


def writable_argument(arguments: list[ArgumentSpec], i: int) -> ArgumentSpec:
    """Argument i of a request's ``arguments`` (inputs or outputs), first replaced by a copy
    of its own: change an argument only through this, as copies of an EncodedSpec share
    arguments."""
    return writable(arguments, i)


def copy_choices(c: ExecutionChoices) -> ExecutionChoices:
    # Copying the instance's __dict__: copy.copy without the cost of its generic protocol
    # (every field is an int, an enum member or None).
    copy = new_instance(ExecutionChoices)
    copy.__dict__ = c.__dict__.copy()
    return copy

