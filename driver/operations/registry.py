"""The operation registry: each family module registers an OperationDef per operation.

An operation owns four things (as an OperationResolver entry does in the reference):

``signatures``
    Its signatures as data (signatures.py): per variant, the operand types of every input
    and output, rank ranges, optional inputs, scalar parameters and their allowed values.
    One generic checker, compiled from them at registration, validates every operation.
``check(ctx)``
    The rules a table cannot say, as one-line checks: quantization relations, values that
    depend on other operands (an axis against a rank, num_splits against the outputs).
    Raises ValidationError through ``check``/``fail``. May be None.
``infer(ctx, input_shapes)``
    Output shapes from input shapes. A shape is a tuple of ints where 0 is an unknown
    dimension, or None for an unknown rank. Called at prepare time with the shapes known
    then (possibly partly unknown) and, for operations whose shapes it could not all
    tell then, again at run time before the kernel runs: with the actual shapes, and
    where those do not tell either, with a context holding the run's values (see
    below). The ranks the signatures allow are checked before it is called. Raises
    ValidationError when the shapes are incompatible.
``build(ctx)``
    Returns the kernel: ``kernel(*inputs) -> tuple[np.ndarray, ...]``, one array per
    output. Inputs are numpy arrays in their storage dtype (scalars are 0-d arrays);
    parameters that are constants can be bound here so the kernel does no per-run
    decoding. The kernel may assume infer accepted its input shapes.

Callers use ``definition.validate(ctx)`` (the signatures, then ``check``; called when a
model is validated, and at run time before infer runs with the run's values),
``definition.infer_shapes(ctx, shapes)`` (the signatures' ranks, then ``infer``) and
``definition.build(ctx)``.

Adding an operation
    README.md says how, step by step. Modules whose names start with "_" are not loaded.

Signatures as data, for other users
    ``definitions()`` returns every OperationDef (sorted by type); signatures.py says how
    generators read its ``.signatures``. A near miss changes one property by one step.

Shapes at run time
    A 0 in a shape means "unknown" at prepare time, but in the actual shapes given at run
    time it is a zero-sized dimension; infer cannot tell them apart, so it treats 0 as
    unknown in both cases. Zero-sized inputs therefore reach only the operations that
    declare ``zero_sized_inputs`` (those the reference runs on them: the arithmetic,
    activations, convolutions, pooling, resizing, SLICE, CONCATENATION, TRANSPOSE, SOFTMAX,
    FULLY_CONNECTED, QUANTIZE, DEQUANTIZE and the detection operations whose results feed
    one another); the executor fails any other operation given one with GENERAL_FAILURE,
    before infer runs. The kernels and infer of those operations handle empty values
    (a 0 they read as "unknown" must not let a wrong shape through), and never let a
    numpy exception escape.
Outputs whose shape depends on input values
    When an output shape depends on the values of a non-constant input (SLICE's begin and
    size, RESHAPE's target shape, FILL's dims, a run-time axis), infer returns 0 for the
    dimensions (or None for the rank) it cannot know at prepare time. At run time, where
    the actual shapes leave it unknown, the executor validates and infers again against
    ``ctx.at_run_time(inputs)``, where those inputs hold the run's values as constants
    would: the shape is then checked against the model and the budget before the kernel
    runs. What infer still cannot tell (an output sized by the data) the kernel's array
    decides; the executor checks it against the declared and inferred shapes, where 0
    and None match anything.
Limits on values (driver/limits.py)
    The executor checks every shape infer returns against the rank and size limits before
    the kernel runs. A kernel whose output shape comes from input values (FILL, TILE, PAD)
    checks it with ``check_shape`` before allocating, and an infer or kernel making a
    shape from a vector's length calls ``check_rank`` before building it.
Cost and deadlines (driver/limits.py)
    A kernel whose work grows faster than its values (rounds over candidates, filter taps,
    matrix products, time steps) checks it with ``check_cost`` against a bound of
    limits.py before working (``common.matrix_product`` does for products), and calls
    ``checkpoint()`` between its rounds, steps or chunks: the deadline or loop timeout of
    the execution (or preparation) it runs within then stops it there. Scratch that grows
    with a value is computed in chunks (``SCRATCH_BYTES_PER_CHUNK``).
Floating-point errors
    Kernels run with numpy's floating-point errors ignored: the executor enters
    ``np.errstate(all="ignore")`` once per execution, on the executing thread, so overflow,
    division by zero and invalid operations give their IEEE results (inf, NaN; 0 for an
    integer division by zero) without a kernel entering errstate on every call. Code that
    calls a kernel directly sets the same state for the same results without warnings.
The binary ufunc of a kernel (``with_binary_ufunc``)
    A kernel whose result is a single numpy ufunc of its first two inputs (``ADD`` of
    int32 with a constant NONE activation is ``np.add(a, b)``) says so; a step whose shapes
    are all known at prepare time then calls the ufunc itself. The kernel stays the
    authority: it is still called whenever the ufunc raises ValueError.
Omitted inputs (``optional_inputs``)
    Inputs a signature marks optional may have no value: a NO_VALUE operand, or a
    subgraph input that the request omits (hasNoValue). The kernel then receives None
    there, and infer a None shape. validate rejects NO_VALUE at any other position; an
    input omitted by the request at any other position must be refused by the executor
    before the kernel runs (kernels do not test for None).
"""
from __future__ import annotations

import functools
import importlib
import pkgutil
from dataclasses import dataclass, field, replace
from typing import Callable, Optional, Sequence

import numpy as np

from ..hal.enums import OperandLifeTime, OperandType, OperationType
from ..hal.structs import SymmPerChannelQuantParams
from .signatures import Example, Operand as SignatureOperand, Signature, SignatureTable

Shape = Optional[tuple[int, ...]]   # None: unknown rank; 0 in a dimension: unknown size
Kernel = Callable[..., tuple]


# Not frozen: a frozen dataclass sets each field through object.__setattr__, which made
# building these views (one per operand per analysed model) several times dearer. They are
# still never changed once made; compiled plans share them.
@dataclass(slots=True)
class OperandInfo:
    """What an operation sees of one of its operands while being validated or built."""
    index: int                      # operand index in its subgraph (for messages)
    type: OperandType | int
    dimensions: tuple[int, ...]     # as declared; () for scalars and unknown rank
    scale: float
    zeroPoint: int
    lifetime: OperandLifeTime
    value: np.ndarray | None        # the constant's value (storage dtype), else None
    channelQuant: SymmPerChannelQuantParams | None = None

    @property
    def is_constant(self) -> bool:
        return self.value is not None

    @property
    def is_omitted(self) -> bool:
        return self.lifetime == OperandLifeTime.NO_VALUE


@dataclass   # not frozen, for the reason given at OperandInfo
class OperationContext:
    """An operation instance with its operands, as validate/infer_shapes/build see it."""
    type: OperationType
    index: int                      # operation index in its subgraph (for messages)
    inputs: Sequence[OperandInfo]
    outputs: Sequence[OperandInfo]
    relaxed: bool = False           # Model.relaxComputationFloat32toFloat16

    @functools.cached_property
    def name(self) -> str:
        return f"operation {self.index} ({self.type.name})"

    def scalar(self, i: int) -> int | float | bool | None:
        """The value of constant scalar input i, or None when it is only known at run time."""
        value = self.inputs[i].value
        return None if value is None else value.reshape(-1)[0].item()

    def at_run_time(self, values: Sequence[np.ndarray | None]) -> "OperationContext":
        """The operation as one run sees it: each input known only at run time holds its
        value in ``values`` (the kernel's arguments), as a constant of that value would.
        Validating and inferring against it check and size what the kernel is about to
        compute, as the reference prepares each operation with the run's values."""
        inputs = tuple(info if info.value is not None or value is None
                       else replace(info, dimensions=value.shape, value=value)
                       for info, value in zip(self.inputs, values))
        return replace(self, inputs=inputs)

    def run_scalar(self, i: int, inputs: Sequence[np.ndarray],
                   spec: SignatureOperand) -> int | float | bool:
        """Scalar input i in a run: its constant value, or the value in this run's
        ``inputs``, checked against its signature operand ``spec`` as validation checks a
        constant's (a value known only at run time escaped validation)."""
        value = self.scalar(i)
        if value is None:
            value = inputs[i].item()
            if spec.values is not None:
                spec.check_value(self, i, value)
        return value


Check = Callable[[OperationContext], None]
Infer = Callable[[OperationContext, Sequence[Shape]], list[Shape]]


@dataclass(frozen=True)
class OperationDef:
    type: OperationType
    signatures: tuple[Signature, ...]
    infer: Infer
    build: Callable[[OperationContext], Kernel]
    check: Optional[Check] = None
    #: Small valid instances for the generators of seed models (see signatures.Example).
    examples: tuple[Example, ...] = ()
    #: Whether it runs on zero-sized inputs (CpuExecutor's allowZeroSizedInput): an input
    #: with a 0 dimension at run time fails any other operation (see the module docstring).
    zero_sized_inputs: bool = False
    # Made from the above at registration:
    table: SignatureTable = field(init=False, repr=False, compare=False)
    validate: Check = field(init=False, repr=False, compare=False)
    infer_shapes: Infer = field(init=False, repr=False, compare=False)
    #: Input positions that may have no value (see the module docstring).
    optional_inputs: frozenset[int] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        table = SignatureTable(self.signatures)
        object.__setattr__(self, "table", table)
        object.__setattr__(self, "validate", _validator(table.check, self.check))
        object.__setattr__(self, "infer_shapes", _inferrer(table, self.infer))
        object.__setattr__(self, "optional_inputs", table.optional_inputs)


def _validator(check_signatures: Check, check: Optional[Check]) -> Check:
    if check is None:
        return check_signatures

    def validate(ctx: OperationContext) -> None:
        check_signatures(ctx)
        check(ctx)
    return validate


def _inferrer(table: SignatureTable, infer: Infer) -> Infer:
    if not table.ranked:
        return infer
    check_ranks = table.check_shape_ranks

    def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
        check_ranks(ctx, shapes)
        return infer(ctx, shapes)
    return infer_shapes


def with_binary_ufunc(kernel: Kernel, ufunc: Callable) -> Kernel:
    """Mark ``kernel`` as computing ``(ufunc(inputs[0], inputs[1]),)`` for inputs of the
    shapes inference accepted (see the module docstring); only numpy ufuncs qualify, since
    they raise nothing but ValueError for shapes that do not broadcast."""
    if isinstance(ufunc, np.ufunc):
        kernel.binary_ufunc = ufunc
    return kernel


_REGISTRY: dict[int, OperationDef] = {}
_loaded = False


def register(definition: OperationDef) -> OperationDef:
    if definition.type in _REGISTRY:
        raise RuntimeError(f"operation {definition.type.name} registered twice")
    _REGISTRY[definition.type] = definition
    return definition


def _load_all() -> None:
    """Import every module of this package once, so each registers itself."""
    global _loaded
    if _loaded:
        return
    from . import __path__ as package_path, __name__ as package_name
    for module in pkgutil.iter_modules(package_path):
        if module.name not in ("registry", "common", "signatures") and not module.name.startswith("_"):
            importlib.import_module(f"{package_name}.{module.name}")
    _loaded = True


def lookup(operation_type: int) -> OperationDef | None:
    _load_all()
    return _REGISTRY.get(operation_type)


def supported_types() -> frozenset[int]:
    _load_all()
    return frozenset(_REGISTRY)


def definitions() -> tuple[OperationDef, ...]:
    """Every registered operation, sorted by type: its signatures, for generators and docs."""
    _load_all()
    return tuple(_REGISTRY[t] for t in sorted(_REGISTRY))
