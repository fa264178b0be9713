"""Lowering a validated NNAPI Model to a TFLite flatbuffer.

The flatbuffer is written with the object API that LiteRT's wheel generates from TFLite's
schema (``ai_edge_litert.schema_py_generated``, over the ``flatbuffers`` package): the
model, its buffers, operator codes and subgraphs. Subgraph 0 is the main subgraph, its
inputs and outputs in the HAL's order; referenced subgraphs follow, one per use (a WHILE
body returns every loop variable in TFLite, so it gets a variant that passes its
loop-invariant inputs through).

Each operation is lowered by its entry in the one mapping table (table.py); an operation
the table cannot express makes ``supported`` false for it, and ``lower`` is only called
for models whose every operation is supported.

TENSOR_FLOAT16 (and FLOAT16) runs as float32 in LiteRT, whose kernels take float16 almost
nowhere: float16 values are widened on the way in and rounded once on the way out, as the
bundled driver computes float16 in single precision and rounds once.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Optional, Sequence

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as S

from driver.executor.plan import ModelAnalysis
from driver.hal.enums import OperandLifeTime, OperandType as T
from driver.hal.structs import Model, Operation, Subgraph
from driver.operands import operation_context, subgraph_infos
from driver.operations.registry import OperandInfo, OperationContext

#: The TFLite tensor type each HAL operand type is stored as.
TENSOR_TYPE = {
    T.TENSOR_FLOAT32: S.TensorType.FLOAT32, T.FLOAT32: S.TensorType.FLOAT32,
    T.TENSOR_FLOAT16: S.TensorType.FLOAT32, T.FLOAT16: S.TensorType.FLOAT32,
    T.TENSOR_INT32: S.TensorType.INT32, T.INT32: S.TensorType.INT32,
    T.TENSOR_QUANT8_ASYMM: S.TensorType.UINT8, T.TENSOR_QUANT8_ASYMM_SIGNED: S.TensorType.INT8,
    T.TENSOR_QUANT8_SYMM_PER_CHANNEL: S.TensorType.INT8, T.TENSOR_QUANT8_SYMM: S.TensorType.INT8,
    T.TENSOR_QUANT16_SYMM: S.TensorType.INT16,
    T.TENSOR_BOOL8: S.TensorType.BOOL, T.BOOL: S.TensorType.BOOL,
}
NUMPY_TYPE = {S.TensorType.FLOAT32: np.float32, S.TensorType.INT32: np.int32,
              S.TensorType.UINT8: np.uint8, S.TensorType.INT8: np.int8,
              S.TensorType.INT16: np.int16, S.TensorType.BOOL: np.bool_}
QUANTIZED = frozenset({T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM,
                       T.TENSOR_QUANT16_SYMM})
#: The most subgraphs a lowered model may have (each use of a referenced subgraph is one).
MAX_SUBGRAPHS = 256
#: The last builtin code that fits the deprecated 8-bit field.
_PLACEHOLDER_FOR_GREATER_OP_CODES = 127


class Unsupported(Exception):
    """The converter cannot express an operation (a gap of the table, or of LiteRT)."""


def made(cls, **fields):
    """An object of a class of the schema's object API, with these fields."""
    value = cls()
    for name, field_value in fields.items():
        setattr(value, name, field_value)
    return value


def options(cls, **fields) -> tuple[int, object]:
    """(BuiltinOptions type, options object) of an options class of the schema."""
    return getattr(S.BuiltinOptions, cls.__name__[:-1]), made(cls, **fields)


# --- per operation ----------------------------------------------------------------------

class OpLowering:
    """One operation being lowered: its context (the operands' types, shapes, constants)
    and the means to add tensors and operators to its TFLite subgraph."""

    def __init__(self, sub: "SubgraphLowering", operation: Operation, ctx: OperationContext) -> None:
        self.sub, self.operation, self.ctx = sub, operation, ctx
        #: Where the HAL gives a one-element result the shape [1] and LiteRT a scalar (all
        #: axes reduced, squeezed or shrunk), outputs of rank 1 are reshaped after the
        #: operator (``finish``).
        self.rank_one_outputs = False
        self._reshaped: dict[int, tuple[int, int]] = {}

    # what the operation reads
    def scalar(self, i: int):
        """The value of constant scalar input i (the table only accepts constant ones)."""
        value = self.ctx.scalar(i)
        if value is None:
            raise Unsupported(f"input {i} is not a constant")
        return value

    def value(self, i: int) -> np.ndarray:
        value = self.ctx.inputs[i].value
        if value is None:
            raise Unsupported(f"input {i} is not a constant")
        return value

    def has(self, i: int) -> bool:
        return i < len(self.ctx.inputs) and not self.ctx.inputs[i].is_omitted

    def flag(self, i: int) -> bool:
        """Optional boolean input i (a layout, a corner alignment): false when omitted."""
        return self.has(i) and bool(self.scalar(i))

    def shape(self, i: int) -> Optional[tuple[int, ...]]:
        """Input i's shape as known at prepare time (0: an unknown dimension; None: rank
        unknown)."""
        return self.sub.static[self.operation.inputs[i]]

    # tensors
    def input(self, i: int) -> int:
        return self.sub.tensor(self.operation.inputs[i])

    def output(self, k: int = 0) -> int:
        tensor = self.sub.tensor(self.operation.outputs[k])
        shape = self.sub.static[self.operation.outputs[k]]
        if not self.rank_one_outputs or shape is None or len(shape) != 1:
            return tensor
        if k not in self._reshaped:
            self._reshaped[k] = (self.temporary(self.ctx.outputs[k]), tensor)
        return self._reshaped[k][0]

    def finish(self) -> None:
        for computed, tensor in self._reshaped.values():
            self.emit(S.BuiltinOperator.RESHAPE,
                      [computed, self.constant(np.array([-1], np.int32))], [tensor])

    def constant(self, value: np.ndarray, like: Optional[OperandInfo] = None) -> int:
        return self.sub.constant(np.asarray(value), like)

    def temporary(self, like: OperandInfo, shape: Optional[Sequence[int]] = None) -> int:
        """A tensor of ``like``'s type and quantization, of the given shape (or unknown)."""
        return self.sub.add_tensor(like, shape, name=f"op{self.ctx.index}.t")

    # operators
    def emit(self, builtin: int, inputs: Sequence[int], outputs: Sequence[int],
             builtin_options: Optional[tuple[int, object]] = None) -> None:
        self.sub.emit(builtin, inputs, outputs, builtin_options)

    def subgraph(self, i: int, passes_through: int = 0) -> int:
        """The TFLite subgraph index of the referenced subgraph named by input i."""
        info = self.ctx.inputs[i]
        return self.sub.lowering.subgraph(int(self.sub.subgraph.operands[info.index].location.offset) + 1,
                                          passes_through)

    def referenced(self, i: int) -> Subgraph:
        return self.sub.lowering.subgraphs[self.sub.subgraph.operands[self.ctx.inputs[i].index].location.offset + 1]

    # NCHW: LiteRT's 2-D kernels take NHWC only
    def nhwc_input(self, i: int, nchw: bool) -> int:
        tensor = self.input(i)
        if not nchw:
            return tensor
        shape = self.shape(i)
        nhwc = self.temporary(self.ctx.inputs[i],
                              None if shape is None else [shape[0], shape[2], shape[3], shape[1]])
        self.emit(S.BuiltinOperator.TRANSPOSE, [tensor, self.constant(np.array([0, 2, 3, 1], np.int32))], [nhwc])
        return nhwc

    def nhwc_output(self, k: int, nchw: bool) -> tuple[int, Callable[[], None]]:
        """The tensor the NHWC operator writes, and what to emit after it (a transpose back
        to NCHW when the layout flag is set)."""
        tensor = self.output(k)
        if not nchw:
            return tensor, lambda: None
        nhwc = self.temporary(self.ctx.outputs[k])

        def back() -> None:
            self.emit(S.BuiltinOperator.TRANSPOSE,
                      [nhwc, self.constant(np.array([0, 3, 1, 2], np.int32))], [tensor])
        return nhwc, back


# --- per subgraph ------------------------------------------------------------------------

class SubgraphLowering:
    """One TFLite subgraph made of an NNAPI subgraph."""

    def __init__(self, lowering: "Lowering", index: int, passes_through: int) -> None:
        self.lowering = lowering
        self.subgraph = lowering.subgraphs[index]
        self.static = lowering.analysis.plans[index].static
        self.infos = lowering.infos(index)
        self.graph = S.SubGraphT()
        self.graph.tensors, self.graph.operators = [], []
        self.graph.name = f"subgraph{index}"
        self._tensors: dict[int, int] = {}
        self.passes_through = passes_through

    def build(self, table) -> S.SubGraphT:
        subgraph = self.subgraph
        self.graph.inputs = [self.tensor(i) for i in subgraph.inputIndexes]
        for op_index, operation in enumerate(subgraph.operations):
            ctx = operation_context(self.lowering.model, subgraph, op_index, self.infos)
            table.lower(OpLowering(self, operation, ctx))
        outputs = [self.tensor(i) for i in subgraph.outputIndexes]
        if self.passes_through:
            outputs += self.graph.inputs[len(self.graph.inputs) - self.passes_through:]
        self.graph.outputs = outputs
        return self.graph

    def tensor(self, operand_index: int) -> int:
        """The tensor of an operand (made on first use; a constant gets its buffer)."""
        found = self._tensors.get(operand_index)
        if found is None:
            info = self.infos[operand_index]
            shape = self.static[operand_index]
            if info.lifetime == OperandLifeTime.NO_VALUE:
                found = -1
            elif info.value is not None:
                found = self.constant(info.value, info)
            else:
                found = self.add_tensor(info, shape, name=f"operand{operand_index}")
            self._tensors[operand_index] = found
        return found

    def tensors(self) -> dict[int, int]:
        """The tensor of each operand that has one, by operand index."""
        return {operand: tensor for operand, tensor in self._tensors.items() if tensor >= 0}

    def add_tensor(self, like: OperandInfo, shape, name: str, buffer: int = 0) -> int:
        tensor = made(S.TensorT, type=TENSOR_TYPE[like.type], name=name, buffer=buffer)
        if shape is not None:
            tensor.shape = [d if d > 0 else 1 for d in shape]
            if any(d <= 0 for d in shape):
                tensor.shapeSignature = [d if d > 0 else -1 for d in shape]
        tensor.quantization = quantization(like)
        self.graph.tensors.append(tensor)
        return len(self.graph.tensors) - 1

    def constant(self, value: np.ndarray, like: Optional[OperandInfo]) -> int:
        if like is None:
            like = _plain_info(value.dtype)
        stored = np.ascontiguousarray(value, NUMPY_TYPE[TENSOR_TYPE[like.type]])
        buffer = self.lowering.buffer(stored.tobytes())
        return self.add_tensor(like, stored.shape, name=f"constant{buffer}", buffer=buffer)

    def emit(self, builtin: int, inputs: Sequence[int], outputs: Sequence[int],
             builtin_options: Optional[tuple[int, object]]) -> None:
        operator = made(S.OperatorT, opcodeIndex=self.lowering.opcode(builtin), inputs=list(inputs),
                        outputs=list(outputs))
        if builtin_options is not None:
            operator.builtinOptionsType, operator.builtinOptions = builtin_options
        self.graph.operators.append(operator)


_PLAIN = {np.dtype(np.int32): T.TENSOR_INT32, np.dtype(np.float32): T.TENSOR_FLOAT32,
          np.dtype(np.bool_): T.TENSOR_BOOL8}


def _plain_info(dtype: np.dtype) -> OperandInfo:
    return OperandInfo(-1, _PLAIN[np.dtype(dtype)], (), 0.0, 0, OperandLifeTime.CONSTANT_COPY, None)


def quantization(info: OperandInfo) -> Optional[S.QuantizationParametersT]:
    quant = info.channelQuant
    if quant is not None:
        return made(S.QuantizationParametersT, scale=[float(s) for s in quant.scales],
                    zeroPoint=[0] * len(quant.scales), quantizedDimension=int(quant.channelDim))
    if info.type in QUANTIZED or (info.type == T.TENSOR_INT32 and info.scale > 0):
        return made(S.QuantizationParametersT, scale=[float(info.scale)],
                    zeroPoint=[int(info.zeroPoint)])
    return None


# --- the model ----------------------------------------------------------------------------

@dataclass
class Lowering:
    """The TFLite model being made of one NNAPI model."""
    model: Model
    analysis: ModelAnalysis
    table: object
    subgraphs: list[Subgraph] = field(init=False)
    _buffers: list = field(default_factory=list)
    _opcodes: dict[int, int] = field(default_factory=dict)
    _codes: list = field(default_factory=list)
    _graphs: list = field(default_factory=list)
    _infos: dict[int, list[OperandInfo]] = field(default_factory=dict)
    #: The TFLite tensor of each main-subgraph operand that has one, in subgraph 0.
    main_tensors: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.subgraphs = [self.model.main, *self.model.referenced]
        self._buffers.append(S.BufferT())        # buffer 0: no data, by convention

    def infos(self, index: int) -> list[OperandInfo]:
        found = self._infos.get(index)
        if found is None:
            found = self._infos[index] = subgraph_infos(self.model, self.subgraphs[index])
        return found

    def buffer(self, data: bytes) -> int:
        self._buffers.append(made(S.BufferT, data=np.frombuffer(data, np.uint8) if data else None))
        return len(self._buffers) - 1

    def opcode(self, builtin: int) -> int:
        found = self._opcodes.get(builtin)
        if found is None:
            code = made(S.OperatorCodeT, builtinCode=builtin, version=1,
                        deprecatedBuiltinCode=min(builtin, _PLACEHOLDER_FOR_GREATER_OP_CODES))
            self._codes.append(code)
            found = self._opcodes[builtin] = len(self._codes) - 1
        return found

    def subgraph(self, index: int, passes_through: int = 0) -> int:
        """A new TFLite subgraph of NNAPI subgraph ``index`` (0: main), and its index; with
        ``passes_through``, a variant that also outputs its last that many inputs. Each
        use gets its own copy: LiteRT's IF and WHILE keep state in the subgraphs they run,
        so a condition shared by an outer and an inner loop fails to invoke."""
        if len(self._graphs) >= MAX_SUBGRAPHS:
            raise Unsupported(f"the model takes more than {MAX_SUBGRAPHS} TFLite subgraphs")
        made = len(self._graphs)
        self._graphs.append(None)
        lowering = SubgraphLowering(self, index, passes_through)
        self._graphs[made] = lowering.build(self.table)
        if made == 0:
            self.main_tensors = lowering.tensors()
        return made

    def serialize(self) -> bytes:
        self.subgraph(0)
        tflite = made(S.ModelT, version=3, description="nnhal-fuzz", operatorCodes=self._codes,
                      subgraphs=self._graphs, buffers=self._buffers)
        builder = flatbuffers.Builder(1024)
        builder.Finish(tflite.Pack(builder), file_identifier=b"TFL3")
        return bytes(builder.Output())


class Lowered(NamedTuple):
    """A lowered model: the .tflite flatbuffer, and the tensor of each main-subgraph
    operand in its subgraph 0 (to read the operands' values, fuzz/divergence.py)."""
    content: bytes
    main_tensors: dict[int, int]


def lower(model: Model, analysis: ModelAnalysis, table) -> Lowered:
    """The lowered model of a model whose every operation the table supports."""
    lowering = Lowering(model, analysis, table)
    return Lowered(lowering.serialize(), lowering.main_tensors)
