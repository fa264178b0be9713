"""What the specifications say of an operation, in one place: the citations of NNAPI's and
TFLite's documentation that a finding's report gives for the semantics it breaks
(CITATIONS, per operation type), and the documented ambiguities: the conditions under
which NNAPI leaves a result open, so that two drivers may both be right and differ
(AMBIGUITIES). The reference oracle does not count a difference an ambiguity explains
(harness.compare_with_reference); the fuzzer's statistics do (``ambiguous``).

Citations say what the documents say in our own words, with where to read it.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Callable, Optional, Sequence

import numpy as np

from driver.hal import (DataLocation, Model, Operand, OperandLifeTime as L, OperandType as T, OperationType as Op,
                        Subgraph)
from driver.hal.dtypes import STORAGE_DTYPE
from hal_client import VALUE_ALIGNMENT
from hal_client.accuracy import FLOAT16_TOLERANCE, compare_values, tolerance_for

from .case import FuzzCase

#: What a driver's discrepancy with the reference is found to be (a LiteRT finding's class,
#: fuzz/litert_repro.py): first taken for the runtime's bug; a reviewer who finds it is
#: the converter's or the reference's fixes it, one NNAPI leaves open joins AMBIGUITIES.
FINDING_CLASSES = ("LiteRT bug", "converter bug (fixed)", "reference bug (fixed)",
                   "spec ambiguity (documented)")

TYPES_HAL = ("types.hal (NN HAL 1.3)",
             "https://android.googlesource.com/platform/hardware/interfaces/+/refs/heads/main/neuralnetworks/1.3/types.hal")
NEURAL_NETWORKS_H = ("NeuralNetworks.h", "https://developer.android.com/ndk/reference/group/neural-networks")
TFLITE_SCHEMA = ("TFLite schema.fbs",
                 "https://github.com/tensorflow/tensorflow/blob/master/tensorflow/compiler/mlir/lite/schema/schema.fbs")
TFLITE_OPS = ("TFLite operator reference", "https://www.tensorflow.org/mlir/tfl_ops")


@dataclass(frozen=True)
class Citation:
    """Where a document says something (``where``: the document and its section), what it
    says, in a sentence of our own, and its address."""
    where: str
    says: str
    url: str

    def markdown(self) -> str:
        return f"{self.says} ([{self.where}]({self.url}))"


def _cite(document: tuple[str, str], section: str, says: str) -> Citation:
    return Citation(f"{document[0]}, {section}", says, document[1])


@dataclass(frozen=True)
class Semantics:
    """An operation's semantics as NNAPI defines them, and as TFLite's builtin states them."""
    nnapi: Citation
    tflite: Optional[Citation] = None


def _comparison(operation: str, symbol: str) -> Semantics:
    return Semantics(
        _cite(TYPES_HAL, f"OperationType::{operation}",
              f"output = input0 {symbol} input1 elementwise (broadcast), on the real values: "
              f"quantized inputs of any scale, an answer for each"),
        _cite(TFLITE_OPS, f"tfl.{operation.lower()}", f"elementwise {symbol}, of uint8 and int8 tensors too"))


#: The operations findings were made of; any other gets ``semantics_of``'s general entry.
CITATIONS: dict[str, Semantics] = {
    **{name: _comparison(name, symbol) for name, symbol in (
        ("EQUAL", "=="), ("NOT_EQUAL", "!="), ("GREATER", ">"), ("GREATER_EQUAL", ">="),
        ("LESS", "<"), ("LESS_EQUAL", "<="))},
    "ADD": Semantics(
        _cite(TYPES_HAL, "OperationType::ADD", "output = input0 + input1 elementwise (broadcast), "
              "then the fused activation"),
        _cite(TFLITE_OPS, "tfl.add", "elementwise sum with broadcasting and a fused activation")),
    "STRIDED_SLICE": Semantics(
        _cite(TYPES_HAL, "OperationType::STRIDED_SLICE, input 6 (shrinkAxisMask)",
              "a set bit i removes dimension i, taking the element at begin[i]: the slice along "
              "that dimension must then hold exactly one element"),
        _cite(TFLITE_SCHEMA, "StridedSliceOptions.shrink_axis_mask",
              "the same mask: the dimension is dropped, reading the element at its begin")),
    "WHILE": Semantics(
        _cite(TYPES_HAL, "OperationType::WHILE",
              "runs the body while the condition holds; a loop running past the execution's "
              "loopTimeoutDuration (IPreparedModel.hal) ends it with MISSED_DEADLINE_TRANSIENT or "
              "_PERSISTENT: an answer, never the end of the process"),
        _cite(TFLITE_OPS, "tfl.while", "runs the body subgraph while the condition subgraph "
              "gives true; no limit on the iterations is stated")),
}


def semantics_of(operation: str) -> Semantics:
    """The citations of an operation type (by name): its own entry, else the general one."""
    found = CITATIONS.get(operation)
    if found is not None:
        return found
    name = operation or "the operation"
    return Semantics(_cite(TYPES_HAL, f"OperationType::{name}", f"the outputs {name} defines for its inputs"),
                     _cite(TFLITE_OPS, "the builtin it is lowered to", "the outputs of the TFLite builtin"))


# --- ambiguities ------------------------------------------------------------------------------

#: The values of a case's request inputs (None: omitted).
Inputs = Sequence[Optional[np.ndarray]]
#: ``run(model, inputs)``: the reference's outputs of another model for the given input
#: values (None when it does not run it successfully).
Run = Callable[[Model, Inputs], Optional[Sequence[np.ndarray]]]


@dataclass(frozen=True)
class Ambiguity:
    """A condition under which NNAPI leaves a result open. ``applies(case, output)`` is the
    condition on the model (cheap, structural); ``explains(case, output, got, inputs, run)``
    whether the difference is the one the ambiguity allows (it may run other models on the
    reference): ``got`` is the driver's value of the output, ``inputs`` the request's."""
    operation: str
    condition: str
    reason: str
    citations: tuple[Citation, ...]
    applies: Callable[[FuzzCase, int], bool] = field(repr=False)
    explains: Callable[[FuzzCase, int, np.ndarray, Inputs, Run], bool] = field(repr=False)


# float16 computed between operations in another precision -------------------------------------

WIDER = {T.TENSOR_FLOAT16: T.TENSOR_FLOAT32, T.FLOAT16: T.FLOAT32}


def float16_chain(case: FuzzCase, output: int) -> bool:
    """The output is float16, and the operation computing it reads the float16 result of
    another operation (one operation alone has one rounding whatever the precision)."""
    main = case.model.main
    if output >= len(main.outputIndexes):
        return False
    target = main.outputIndexes[output]
    if main.operands[target].type != T.TENSOR_FLOAT16:
        return False
    written = {o: op for op in main.operations for o in op.outputs}
    producer = written.get(target)
    return producer is not None and any(
        main.operands[i].type in WIDER and i in written for i in producer.inputs)


def widened(model: Model) -> Model:
    """The model with every float16 operand float32 (constants converted, as CONSTANT_COPY):
    the same computation, rounded nowhere in between."""
    values = bytearray(model.operandValues)

    def operand(o: Operand) -> Operand:
        wider = WIDER.get(o.type)
        if wider is None:
            return o
        if o.lifetime not in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE):
            return replace(o, type=wider)
        where = o.location
        raw = (bytes(model.operandValues[where.offset:where.offset + where.length]) if o.lifetime == L.CONSTANT_COPY
               else model.pools[where.poolIndex].read(where.offset, where.length))
        data = np.frombuffer(raw, np.float16).astype(np.float32).tobytes()
        values.extend(bytes(-len(values) % VALUE_ALIGNMENT))
        location = DataLocation(0, len(values), len(data))
        values.extend(data)
        return replace(o, type=wider, lifetime=L.CONSTANT_COPY, location=location)

    def subgraph(g: Subgraph) -> Subgraph:
        return replace(g, operands=[operand(o) for o in g.operands])
    main, referenced = subgraph(model.main), [subgraph(g) for g in model.referenced]
    return replace(model, main=main, referenced=referenced, operandValues=bytes(values))


def agrees_with_float32(case: FuzzCase, output: int, got: np.ndarray, inputs: Inputs, run: Run) -> bool:
    """The driver's output is the reference's computation of the model in float32, rounded
    once to float16, within float16's tolerance."""
    wide = [None if v is None else v.astype(np.float32) if v.dtype == np.float16 else v for v in inputs]
    outputs = run(widened(case.model), wide)
    if outputs is None or output >= len(outputs):
        return False
    rounded = np.asarray(outputs[output]).astype(np.float16).ravel()
    return (got.size >= rounded.size
            and compare_values(rounded, got[:rounded.size], FLOAT16_TOLERANCE) is None)


# NaN through a clamp -----------------------------------------------------------------------------

#: The operations that clamp a float value to a range, as max(low, min(x, high)).
CLAMPS = frozenset({Op.RELU, Op.RELU1, Op.RELU6})
FLOAT_TENSORS = frozenset({T.TENSOR_FLOAT32, T.TENSOR_FLOAT16})


def with_outputs(model: Model, operands: Sequence[int]) -> Model:
    """The model with the given temporaries of its main subgraph made outputs too (after
    its own), so that a driver reports their values."""
    main = copy.deepcopy(model.main)
    for index in operands:
        main.operands[index].lifetime = L.SUBGRAPH_OUTPUT
    main.outputIndexes = [*main.outputIndexes, *operands]
    return replace(model, main=main)


def clamped_output(case: FuzzCase, output: int) -> bool:
    """The output is a float tensor written by RELU, RELU1 or RELU6."""
    main = case.model.main
    if output >= len(main.outputIndexes) or main.operands[main.outputIndexes[output]].type not in FLOAT_TENSORS:
        return False
    producer = next((op for op in main.operations if main.outputIndexes[output] in op.outputs), None)
    return producer is not None and producer.type in CLAMPS


def clamp_input(case: FuzzCase, output: int, inputs: Inputs, run: Run) -> Optional[np.ndarray]:
    """The reference's value of what the clamp writing the output reads (None: unknown)."""
    main = case.model.main
    producer = next(op for op in main.operations if main.outputIndexes[output] in op.outputs)
    source = producer.inputs[0]
    if source in main.inputIndexes:
        return inputs[main.inputIndexes.index(source)]
    if main.operands[source].lifetime != L.TEMPORARY_VARIABLE:
        return None
    outputs = run(with_outputs(case.model, [source]), inputs)
    return None if outputs is None else np.asarray(outputs[-1])


def nan_left_unclamped(case: FuzzCase, output: int, got: np.ndarray, inputs: Inputs, run: Run) -> bool:
    """Every element where the driver differs from the reference has a NaN going into the
    clamp, and the driver gives NaN there: the other reading of max(0, NaN)."""
    before = clamp_input(case, output, inputs, run)
    outputs = run(case.model, inputs)
    if before is None or outputs is None:
        return False
    expected = np.asarray(outputs[output]).ravel()
    if got.size < expected.size or before.size != expected.size:
        return False
    got, nan = got[:expected.size], np.isnan(before.ravel())
    operand_type = case.model.main.operands[case.model.main.outputIndexes[output]].type
    return bool(nan.any() and np.isnan(got[nan]).all() and compare_values(
        expected[~nan], got[~nan], tolerance_for(operand_type, float16_criterion=False)) is None)


AMBIGUITIES: tuple[Ambiguity, ...] = (
    Ambiguity(
        "any",
        "a TENSOR_FLOAT16 output computed from another operation's TENSOR_FLOAT16 result, "
        "which the reference's run of the model in float32 (rounded once) matches",
        "NNAPI types each operand, but does not say in what precision a chain of float16 "
        "operations is computed: the CTS judges a model's outputs only, within float16's "
        "tolerance. The reference rounds each operation's result to float16; LiteRT's "
        "lowering computes float16 as float32 and rounds at the outputs, so a chain that "
        "cancels (a + b - a) differs by more than the tolerance.",
        (_cite(NEURAL_NETWORKS_H, "ANEURALNETWORKS_TENSOR_FLOAT16",
               "a tensor of IEEE 754 half-precision values: the type of each operand, no word "
               "on the precision of the arithmetic producing it"),
         _cite(NEURAL_NETWORKS_H, "ANeuralNetworksModel_relaxComputationFloat32toFloat16",
               "precision is stated only as a floor: float32 may be computed as low as float16")),
        float16_chain, agrees_with_float32),
    Ambiguity(
        "RELU, RELU1, RELU6",
        "a NaN going into the clamp comes out NaN, where the reference gives the clamp's bound",
        "NNAPI defines the clamps as max(0, x), min(1, max(-1, x)) and min(6, max(0, x)), and "
        "says nothing of a NaN input. The reference computes them as Android's CPU kernels do, "
        "with std::max/std::min, which return the bound for NaN; TFLite's kernels compare "
        "x with the bound and keep x, so NaN passes through (IEEE 754 has both readings: "
        "maxNum and maximum).",
        (_cite(TYPES_HAL, "OperationType::RELU, RELU1, RELU6",
               "output = max(0, input), min(1, max(-1, input)), min(6, max(0, input)): no word on NaN"),
         _cite(TFLITE_OPS, "tfl.relu", "x if x > 0 else 0, elementwise: no word on NaN")),
        clamped_output, nan_left_unclamped),
)


def documented_ambiguity(case: FuzzCase, output: int, outputs: Sequence[Optional[bytes]],
                         inputs: Callable[[], Inputs], run: Run,
                         table: Sequence[Ambiguity] = AMBIGUITIES) -> Optional[Ambiguity]:
    """The ambiguity that explains why request output ``output`` of the driver's execution
    (``outputs``: each output's bytes) differs from the reference's, or None. ``inputs()``
    gives the request's input values, read only where an ambiguity applies."""
    operand = case.model.main.operands[case.model.main.outputIndexes[output]]
    raw = outputs[output] if output < len(outputs) else None
    dtype = STORAGE_DTYPE.get(operand.type)
    if raw is None or dtype is None:
        return None
    got = np.frombuffer(raw[:len(raw) - len(raw) % dtype.itemsize], dtype)
    for ambiguity in table:
        if ambiguity.applies(case, output) and ambiguity.explains(case, output, got, inputs(), run):
            return ambiguity
    return None
