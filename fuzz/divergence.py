"""Where a wrong answer first appears: the first operation of the main subgraph, in
execution order, one of whose results differs from the reference driver's value of the same
operand beyond the accuracy criteria the outputs are judged by (oracles.values_mismatch).

The operand values come from an optional capability of a prepared model,
``operand_values(request) -> dict[int, ndarray] | None`` (the bundled driver has it for any
engine that keeps them: driver/engine.py, OperandValues). It is asked for only after a
wrong answer: both drivers run the case once more, keeping every value. A driver without it
(or one whose run fails) leaves the wrong answer bucketed by the operation producing the
output (oracles.wrong_output_bucket).

What a divergence says (``Divergence``) is a bucket (``bucket()``: the operation's type, its
tensor operand types, the parameters that select another kernel, the class of its
quantization, and the driver's name, which names its kernel set; no shapes, no values:
findings of one bug share it) and, for a report, where and by how much (``as_dict()``).
The main subgraph's operands are compared: a difference inside an IF or a WHILE is found
at the IF or WHILE. At an IF, the branch it took runs alone (as a model of its own, on the
IF's input values) on both drivers, and its first diverging operation, if any, is the
bucket ('ADD(...) in IF'); where none diverges there (the IF computes wrong only in its
context), or at a WHILE, the bucket is the IF or WHILE. An operand whose reference value
is NaN or infinite anywhere is not judged, as such an output is not.

A wrong answer whose every diverging operation, run alone on the reference fed the driver's
own values of its inputs, gives the driver's values (``carried_on``) is no finding: each
step is within the criteria, and the differences only added up along the chain (a
convolution summed in another order, its result magnified by an EXP after it).
"""
from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, replace
from typing import Any, Iterator, Mapping, Optional

import numpy as np

from driver.hal import (FusedActivationFunc, Model, Operand, OperandLifeTime, OperandType, Operation,
                        OperationType as Op, Request, Subgraph)
from driver.hal.enums import SCALAR_OPERAND_TYPES
from driver.operands import constant_value
from driver.operations.registry import lookup

from . import oracles
from .spec import Run

T = OperandType
L = OperandLifeTime

#: The quantization class of an operation: the first class any of its tensor operands has.
QUANTIZATION_CLASSES = (
    ("per-channel", frozenset({T.TENSOR_QUANT8_SYMM_PER_CHANNEL})),
    ("signed", frozenset({T.TENSOR_QUANT8_ASYMM_SIGNED})),
    ("asymmetric", frozenset({T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT16_ASYMM})),
    ("symmetric", frozenset({T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT16_SYMM})),
    ("float", frozenset({T.TENSOR_FLOAT32, T.TENSOR_FLOAT16})),
)
#: IFs a divergence is followed into, one inside another, at most.
MAX_BRANCHES = 8
#: Padding schemes by their HAL code (ANEURALNETWORKS_PADDING_*).
PADDING_SCHEMES = {1: "SAME", 2: "VALID"}


@dataclass(frozen=True)
class Divergence:
    """The first operation whose result differs: its index in the main subgraph and what
    selects its kernel (``type``, its tensor ``inputs`` and ``outputs`` types, the
    ``parameters`` that matter, the ``quantization`` class), the ``driver`` under test and
    the ``reference``, by name; the first differing output ``operand``, whether its
    ``shape`` or its values differ, and for values: how many of ``size`` are beyond
    tolerance, the largest absolute difference and in units in the last place (``max_ulp``;
    a quantized or integer value's unit is one step; None where a difference is not
    finite), the first ``index`` beyond tolerance (row-major) with its ``expected`` and
    ``actual`` values."""
    operation: int
    type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    parameters: tuple[str, ...]
    quantization: str
    driver: str
    reference: str
    operand: int
    shape: bool
    count: int
    size: int
    max_abs: Optional[float]
    max_ulp: Optional[int]
    index: Optional[int]
    expected: Optional[float]
    actual: Optional[float]
    #: For an IF: the first diverging operation of the branch it took, run alone on the
    #: IF's inputs (None: none diverges there; the IF diverges in its context only)
    inner: Optional["Divergence"] = None
    #: The subgraph the operation is in: None for the main one, else its index in
    #: Model.referenced
    subgraph: Optional[int] = None
    #: Every operation whose results differ computes them alike from the driver's own
    #: inputs: the difference was carried on from within the criteria (carried_on)
    carried: bool = False

    def bucket(self) -> str:
        """'first diverging: ADD(TENSOR_FLOAT32, TENSOR_FLOAT32 -> TENSOR_FLOAT32; activation
        RELU; float) on litert-auto' ('... diverging shape: ...' when a shape differs; an
        operation inside an IF's branch is followed by ' in IF')."""
        innermost, within = self, ""
        while innermost.inner is not None:
            within = f" in {innermost.type}" + within
            innermost = innermost.inner
        what = "first diverging shape" if innermost.shape else "first diverging"
        return f"{what}: {innermost.kernel()}{within} on {self.driver}"

    def kernel(self) -> str:
        """The operation's type and what selects its kernel."""
        return kernel_text(self.type, self.inputs, self.outputs, self.parameters, self.quantization)

    def as_dict(self) -> dict[str, Any]:
        """The fields and the bucket, as JSON takes them (a value not finite as None)."""
        fields = {name: None if isinstance(value, float) and not np.isfinite(value) else value
                  for name, value in asdict(self).items()}
        return {**fields, "bucket": self.bucket()}


def device_name(device: Any) -> str:
    """A driver's name, which names its kernel set: what ``getName()`` returns where the
    device has it (alone or after a status), else its ``name``, else its class."""
    get_name = getattr(device, "getName", None)
    if callable(get_name):
        named = get_name()
        return str(named[-1] if isinstance(named, tuple) else named)
    name = getattr(device, "name", None)
    return name if isinstance(name, str) else type(device).__name__


# --- the values ------------------------------------------------------------------------------

def operand_values(prepared: Any, request: Request) -> Optional[dict[int, np.ndarray]]:
    """The prepared model's values of its main operands for ``request`` (None: it does not
    offer them)."""
    values_of = getattr(prepared, "operand_values", None)
    return values_of(request) if callable(values_of) else None


def differences(model: Model, expected: dict[int, np.ndarray],
                actual: dict[int, np.ndarray]) -> Iterator[tuple[int, int, tuple]]:
    """(operation index, operand, difference) for each main operation, in execution order,
    with an output whose ``actual`` value differs from its ``expected`` one: its first such
    output (operands either lacks are skipped)."""
    float16 = oracles.computes_in_float16(model)
    operands = model.main.operands
    for index, operation in enumerate(model.main.operations):
        for operand in operation.outputs:
            want, got = expected.get(operand), actual.get(operand)
            if want is None or got is None:
                continue
            difference = _difference(operands[operand].type, np.asarray(want), np.asarray(got), float16)
            if difference is not None:
                yield index, operand, difference
                break


def first_divergence(model: Model, expected: dict[int, np.ndarray], actual: dict[int, np.ndarray],
                     driver: str, reference: str) -> Optional[Divergence]:
    """The first main operation, in execution order, with an output whose ``actual`` value
    differs from its ``expected`` one; None if none."""
    for index, operand, difference in differences(model, expected, actual):
        return Divergence(index, *describe_operation(model, model.main.operations[index]), driver,
                          reference, operand, *difference)
    return None


# --- a difference carried on --------------------------------------------------------------------

def one_operation_model(model: Model, operation: Operation,
                        values: Mapping[int, Optional[np.ndarray]]) -> tuple[Model, list]:
    """A model of ``operation`` alone, and its inputs: each of its operands that is not a
    constant becomes a model input of the shape of its value in ``values`` (None: omitted);
    constants stay constants, its outputs are the model's outputs."""
    main = model.main
    operands: list[Operand] = []
    renumbered: dict[int, int] = {}
    inputs, input_values = [], []
    for index in (*operation.inputs, *operation.outputs):
        if index in renumbered:
            continue
        operand = copy.deepcopy(main.operands[index])
        operand.numberOfConsumers = operation.inputs.count(index)
        if index in operation.outputs:
            operand.lifetime = L.SUBGRAPH_OUTPUT
        elif operand.lifetime in (L.TEMPORARY_VARIABLE, L.SUBGRAPH_INPUT, L.SUBGRAPH_OUTPUT):
            value = values.get(index)
            operand.location = type(operand.location)()
            if value is None:
                operand.lifetime = L.NO_VALUE
            else:
                operand.lifetime = L.SUBGRAPH_INPUT
                if operand.type not in SCALAR_OPERAND_TYPES:
                    operand.dimensions = list(value.shape)
                inputs.append(len(operands))
                input_values.append(value)
        renumbered[index] = len(operands)
        operands.append(operand)
    subgraph = Subgraph(operands, [Operation(operation.type, [renumbered[i] for i in operation.inputs],
                                             [renumbered[o] for o in operation.outputs])],
                        inputs, [renumbered[o] for o in operation.outputs])
    uses_subgraphs = any(o.lifetime == L.SUBGRAPH for o in operands)
    return replace(model, main=subgraph, referenced=model.referenced if uses_subgraphs else []), input_values


def computed_alike(model: Model, operation: Operation, actual: dict[int, np.ndarray], run: Run) -> bool:
    """Whether the reference, fed the driver's values of the operation's inputs, computes the
    driver's values of its outputs (within the accuracy criteria): the operation is right,
    and a difference in its results came with its inputs."""
    main = model.main
    fed = [i for i in operation.inputs
           if main.operands[i].lifetime in (L.TEMPORARY_VARIABLE, L.SUBGRAPH_INPUT, L.SUBGRAPH_OUTPUT)]
    if any(i not in actual for i in (*fed, *operation.outputs)):
        return False
    alone, inputs = one_operation_model(model, operation, actual)
    outputs = run(alone, inputs)
    # A value the criteria do not judge (NaN or infinite) cannot be said to agree.
    if outputs is None or not all(oracles.judged(np.asarray(value)) for value in outputs):
        return False
    float16 = oracles.computes_in_float16(model)
    return all(_difference(main.operands[o].type, np.asarray(value), np.asarray(actual[o]), float16) is None
               for o, value in zip(operation.outputs, outputs))


def carried_on(model: Model, found: Divergence, expected: dict[int, np.ndarray],
               actual: dict[int, np.ndarray], run: Run) -> bool:
    """Whether every operation whose results differ computes them alike from the driver's
    own inputs (computed_alike), the IF followed into judged by its branch (``found.inner``):
    each step within the accuracy criteria, the differences only add up along the chain,
    as a summation order may make them. Such a wrong answer is no finding."""
    for index, _, _ in differences(model, expected, actual):
        if found.inner is not None and index == found.operation:
            if not found.inner.carried:
                return False
        elif not computed_alike(model, model.main.operations[index], actual, run):
            return False
    return True


@dataclass(frozen=True)
class Branch:
    """The branch an IF took, as a model of its own (its main subgraph the branch, the
    referenced subgraphs those of the whole model), with the values the IF gave it and
    got from it: where a divergence at an IF is looked for inside."""
    model: Model
    subgraph: int
    inputs: list[np.ndarray]
    outputs: list[np.ndarray]


def taken_branch(model: Model, found: Divergence, values: dict[int, np.ndarray]) -> Optional[Branch]:
    """The branch the IF at ``found`` took, by the condition's value in ``values`` (None:
    not an IF, or a value it needs is missing)."""
    operation = model.main.operations[found.operation]
    if operation.type != Op.IF:
        return None
    condition, then, otherwise, *arguments = operation.inputs
    chosen = values.get(condition)
    if chosen is None or any(i not in values for i in (*arguments, *operation.outputs)):
        return None
    index = model.main.operands[then if bool(np.asarray(chosen).reshape(-1)[0]) else otherwise].location.offset
    branch = Model(model.referenced[index], model.referenced, model.operandValues, model.pools,
                   model.relaxComputationFloat32toFloat16, model.extensionNameToPrefix)
    return Branch(branch, index, [values[i] for i in arguments], [values[i] for i in operation.outputs])


def _difference(operand_type: int, want: np.ndarray, got: np.ndarray, float16: bool) -> Optional[tuple]:
    """(shape differs, count, size, max_abs, max_ulp, index, expected, actual) of ``got``
    against ``want``, or None where they agree or ``want`` cannot be judged."""
    if want.shape != got.shape and not (want.size == got.size == 1):
        return True, 0, int(want.size), None, None, None, None, None
    if not oracles.judged(want):
        return None
    want, got = want.reshape(-1), got.reshape(-1)
    mismatch = oracles.values_mismatch(operand_type, want, got, float16)
    if mismatch is None:
        return None
    gap = np.abs(got.astype(np.float64) - want.astype(np.float64))
    finite = bool(np.isfinite(gap).all())
    max_abs = float(gap.max()) if finite else None
    return (False, mismatch.count, mismatch.size, max_abs, _max_ulp(want, got) if finite else None,
            mismatch.index, mismatch.expected, mismatch.actual)


def _max_ulp(want: np.ndarray, got: np.ndarray) -> int:
    """The largest distance between two values in units in the last place of their float
    type (steps of an integer type)."""
    if want.dtype.kind != "f":
        return int(np.abs(got.astype(np.int64) - want.astype(np.int64)).max())
    signed = np.dtype(f"i{want.dtype.itemsize}")
    lowest = np.iinfo(signed).min

    def ordered(values: np.ndarray) -> np.ndarray:
        # Sign and magnitude as one monotonic integer line (-0.0 and 0.0 both at 0).
        bits = values.astype(want.dtype).view(signed).astype(np.int64)
        return np.where(bits < 0, lowest - bits, bits)
    return int(np.abs(ordered(got) - ordered(want)).max())


# --- what selects an operation's kernel ---------------------------------------------------------

def describe_operation(model: Model, operation: Operation) -> tuple:
    """(type, tensor input types, tensor output types, parameters, quantization class) of a
    main-subgraph operation: what selects its kernel, without shapes or values."""
    operands = model.main.operands
    present = [i for i in operation.inputs
               if 0 <= i < len(operands) and operands[i].lifetime != OperandLifeTime.NO_VALUE]
    tensors = [operands[i].type for i in (*present, *operation.outputs) if _is_tensor(operands[i].type)]
    inputs = tuple(_name(T, operands[i].type) for i in present if _is_tensor(operands[i].type))
    outputs = tuple(_name(T, operands[i].type) for i in operation.outputs if _is_tensor(operands[i].type))
    return (_name(type(operation.type), operation.type), inputs, outputs,
            parameters(model, operation), quantization_class(tensors))


def kernel_text(type_: str, inputs: tuple[str, ...], outputs: tuple[str, ...],
                parameters: tuple[str, ...], quantization: str) -> str:
    """'ADD(TENSOR_FLOAT32, TENSOR_FLOAT32 -> TENSOR_FLOAT32; activation RELU; float)': an
    operation as ``describe_operation`` gives it (parameters: what else a bucket names)."""
    selected = "; ".join((f"{', '.join(inputs)} -> {', '.join(outputs)}", *parameters, quantization))
    return f"{type_}({selected})"


def parameters(model: Model, operation: Operation) -> tuple[str, ...]:
    """The parameters among an operation's inputs that select another kernel, by the names
    its signature gives them: the fused activation, the padding (a scheme, or explicit) and
    an NCHW layout. A parameter the request supplies is 'from the request'."""
    names = _input_names(operation)
    found: list[str] = []
    for name, index in zip(names, operation.inputs):
        if name == "fused activation":
            value = _scalar(model, index)
            found.append("activation " + (_name(FusedActivationFunc, value) if value is not None
                                          else "from the request"))
        elif name == "padding scheme":
            value = _scalar(model, index)
            found.append("padding " + (PADDING_SCHEMES.get(value, str(value)) if value is not None
                                       else "from the request"))
        elif name.startswith("padding ") and "padding explicit" not in found:
            found.append("padding explicit")
        elif "NCHW" in name and _scalar(model, index):
            found.append("NCHW")
    return tuple(found)


def quantization_class(types) -> str:
    present = set(types)
    return next((name for name, members in QUANTIZATION_CLASSES if present & members), "integer")


def _input_names(operation: Operation) -> tuple[str, ...]:
    """The names the operation's signature gives its inputs, for its input and output counts
    (none for IF, WHILE or an operation without a signature)."""
    definition = lookup(operation.type)
    for signature in definition.signatures if definition is not None else ():
        expanded = signature.operands_for(len(operation.inputs), len(operation.outputs))
        if expanded is not None:
            return tuple(operand.name for operand in expanded[0])
    return ()


def _scalar(model: Model, index: int) -> Optional[int]:
    """A constant scalar's value (None: not a constant)."""
    operands = model.main.operands
    value = constant_value(model, operands[index]) if 0 <= index < len(operands) else None
    return None if value is None or value.size != 1 else int(value.reshape(-1)[0])


def _is_tensor(operand_type: int) -> bool:
    return _name(T, operand_type).startswith("TENSOR_")


def _name(enum: type, value: int) -> str:
    try:
        return enum(value).name
    except ValueError:
        return str(value)
