"""The operation registry: each operation module registers one OperationDef here.

An operation owns three things (as an OperationResolver entry does in the reference):

``validate(ctx)``
    The signature check: input/output counts, operand types, scalar parameter types,
    quantization parameters, constant parameter ranges when the value is known. Raises
    ValidationError through ``check``. Called once, when a model is validated.
``infer_shapes(ctx, input_shapes)``
    Output shapes from input shapes. A shape is a tuple of ints where 0 is an unknown
    dimension, or None for an unknown rank. Called at prepare time with the shapes known
    then (possibly partly unknown) and, for operations whose shapes were not all known,
    again at run time with the actual shapes, before the kernel runs. Raises
    ValidationError when the shapes are incompatible.
``build(ctx)``
    Returns the kernel: ``kernel(*inputs) -> tuple[np.ndarray, ...]``, one array per
    output. Inputs are numpy arrays in their storage dtype (scalars are 0-d arrays);
    parameters that are constants can be bound here so the kernel does no per-run
    decoding. The kernel may assume infer_shapes accepted its input shapes.

Registration is one line at the bottom of the operation's module:
``register(OperationDef(OperationType.ADD, validate, infer_shapes, build))``.

Shapes at run time
    A 0 in a shape means "unknown" at prepare time, but in the actual shapes given at run
    time it is a zero-sized dimension; infer_shapes cannot tell them apart, so it treats
    0 as unknown in both cases. Kernels therefore re-check what a zero size could break
    (through ``check``), and never let a numpy exception escape.
Outputs whose shape depends on input values
    When an output shape depends on the values of a non-constant input (SLICE's begin and
    size, RESHAPE's target shape, FILL's dims, a run-time axis), infer_shapes returns 0
    for the dimensions (or None for the rank) it cannot know, even at run time. The array
    the kernel returns is then authoritative; the executor checks it against the
    declared and inferred shapes, where 0 and None match anything.
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
    Input positions listed in ``OperationDef.optional_inputs`` may have no value: a
    NO_VALUE operand, or a subgraph input that the request omits (hasNoValue). The kernel
    then receives None there, and infer_shapes a None shape. validate rejects NO_VALUE at
    any other position; an input omitted by the request at any other position must be
    refused by the executor before the kernel runs (kernels do not test for None).
"""
from __future__ import annotations

import functools
import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np

from ..hal.enums import OperandLifeTime, OperandType, OperationType
from ..hal.structs import SymmPerChannelQuantParams

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


@dataclass(frozen=True)
class OperationDef:
    type: OperationType
    validate: Callable[[OperationContext], None]
    infer_shapes: Callable[[OperationContext, Sequence[Shape]], list[Shape]]
    build: Callable[[OperationContext], Kernel]
    #: Input positions that may have no value (see the module docstring).
    optional_inputs: frozenset[int] = frozenset()


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
        if module.name not in ("registry", "common") and not module.name.startswith("_"):
            importlib.import_module(f"{package_name}.{module.name}")
    _loaded = True


def lookup(operation_type: int) -> OperationDef | None:
    _load_all()
    return _REGISTRY.get(operation_type)


def supported_types() -> frozenset[int]:
    _load_all()
    return frozenset(_REGISTRY)
