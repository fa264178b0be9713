"""Invalid variants of the valid models in tests/models.py, one field at a time, in the
manner of the VTS ValidateModel/ValidateRequest tests.

A mutation is (id, build, mutate): ``build()`` returns a fresh valid ModelCase and
``mutate`` turns its model (or request) invalid in place. Ids read like
"add/main/operand 1/scale=1.0". Both the validator tests and the device tests use them.
A model mutation names the rule that must reject it (``rule``: text of its message, or a
pattern of a family of rules), so that one stopped by another check is seen.
"""
from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Iterator, Union

import numpy as np

from driver.hal import (DataLocation, ExtensionNameAndPrefix, MemoryPool, Model, Operand,
                        OperandExtraParams, OperandLifeTime as L, OperandType as T, Operation,
                        OperationType as Op, Request, RequestArgument, Subgraph,
                        SymmPerChannelQuantParams)
from driver.hal.dtypes import byte_size
from driver.memory import Memory
from driver.operations.common import STORAGE_DTYPE
from driver.operations.registry import lookup
from hal_client.builder import ModelBuilder
from tests import models
from tests.models import ModelCase

Build = Callable[[], ModelCase]
Select = Callable[[Model], Subgraph]


Rule = Union[str, "re.Pattern[str]"]


@dataclass(frozen=True)
class ModelMutation:
    id: str
    build: Build
    mutate: Callable[[Model], None]
    rule: Rule

    def invalid_model(self) -> Model:
        model = self.build().model
        self.mutate(model)
        return model

    def rejects(self, message: str) -> bool:
        """Whether ``message`` is one of the rule this mutation breaks."""
        rule = self.rule
        return rule in message if isinstance(rule, str) else rule.search(message) is not None


@dataclass(frozen=True)
class RequestMutation:
    id: str
    build: Build
    mutate: Callable[[Request, Model], None]

    def invalid_request(self) -> tuple[Request, Model]:
        case = self.build()
        request = case.request()
        self.mutate(request, case.model)
        return request, case.model


#: Valid models whose every part gets mutated: all of the catalogue's.
MODEL_BUILDERS: dict[str, Build] = models.ALL_MODELS


def _selectors(model: Model) -> list[tuple[str, Select]]:
    return [("main", lambda m: m.main),
            *((f"ref{i}", lambda m, i=i: m.referenced[i]) for i in range(len(model.referenced)))]


def is_validated_operation(type_code: int) -> bool:
    """Operations whose signature the validator checks: IF, WHILE and registered ones."""
    return type_code <= 0xFFFF and (type_code in (Op.IF, Op.WHILE) or lookup(type_code) is not None)


#: The rules of IF and WHILE against the subgraphs they call (driver/validation/control_flow.py).
CONTROL_FLOW = re.compile(r"\((IF|WHILE)\): (needs at least|.*\b(branch|condition|body)\b)")


def signature_rule(operation: Operation, kind: str, count: int) -> Rule:
    """The rule an operation breaks with ``count`` operands of ``kind`` ("inputs",
    "outputs"): the signature checker's count of a registered operation, or one of
    IF's and WHILE's."""
    if operation.type in (Op.IF, Op.WHILE):
        return CONTROL_FLOW
    return f"expected {len(getattr(operation, kind))} {kind}, got {count}"


def _unwritten_rule(subgraph: Subgraph, index: int) -> str:
    """The data-flow rule operand ``index`` breaks once no operation writes it."""
    if subgraph.operands[index].numberOfConsumers > 0:
        return f"(operand {index}) is read before it is written"
    return f"operand {index}: no operation writes it"


# --- helpers that keep the rest of a model consistent -----------------------------------

def _byte_size(operand: Operand) -> int:
    return byte_size(operand.type, operand.dimensions) or 0


def _become_constant_copy(model: Model, operand: Operand) -> None:
    size = _byte_size(operand)
    operand.location = DataLocation(0, len(model.operandValues), size)
    model.operandValues = bytes(model.operandValues) + bytes(size)


def _append_operand(subgraph: Subgraph, operand: Operand) -> int:
    subgraph.operands.append(operand)
    return len(subgraph.operands) - 1


def _remove_operand(subgraph: Subgraph, index: int) -> None:
    """Drop operand ``index`` from the subgraph and every list naming it; later indexes
    shift down by one."""
    def remap(indexes: list[int]) -> list[int]:
        return [i - (i > index) for i in indexes if i != index]
    del subgraph.operands[index]
    for operation in subgraph.operations:
        operation.inputs = remap(operation.inputs)
        operation.outputs = remap(operation.outputs)
    subgraph.inputIndexes = remap(subgraph.inputIndexes)
    subgraph.outputIndexes = remap(subgraph.outputIndexes)


def _set(select: Select, index: int | Callable[[Subgraph], int],
         **fields) -> Callable[[Model], None]:
    """Set fields of operand ``index`` (or ``index(subgraph)``) of the subgraph selected, to
    copies of ``fields`` (the models a mutation makes share no list)."""
    def mutate(model: Model) -> None:
        subgraph = select(model)
        operand = subgraph.operands[index if isinstance(index, int) else index(subgraph)]
        for name, value in fields.items():
            setattr(operand, name, copy.copy(value))
    return mutate


# --- operand mutations (VTS: type, rank, scale, zeroPoint, lifetime, consumers...) ------

#: Past the fundamental types, past the OEM types, an extension type of unknown prefix.
_INVALID_OPERAND_TYPES = (16, 10002, 0xFFFF_0001)
_SCALARS = (T.FLOAT32, T.INT32, T.UINT32, T.BOOL, T.FLOAT16)
_NO_SCALE = (*_SCALARS, T.SUBGRAPH, T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_BOOL8,
             T.TENSOR_QUANT8_SYMM_PER_CHANNEL)
_POSITIVE_SCALE = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM,
                   T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT16_SYMM)
_INVALID_ZERO_POINTS = {
    T.TENSOR_QUANT8_ASYMM: (-1, 256), T.TENSOR_QUANT8_ASYMM_SIGNED: (-129, 128),
    T.TENSOR_QUANT8_SYMM: (-1, 1), T.TENSOR_QUANT16_ASYMM: (-1, 65536),
    T.TENSOR_QUANT16_SYMM: (-1, 1),
}


def _invalid_scales(type_code: int) -> tuple[tuple[float, str], ...]:
    """(scale, the rule it breaks)."""
    if type_code in _NO_SCALE or type_code > 0xFFFF:
        return ((1.0, "operand has non-zero scale 1.0"),)
    if type_code == T.TENSOR_INT32:
        return ((-1.0, "TENSOR_INT32 operand has negative scale -1.0"),)
    if type_code in _POSITIVE_SCALE:
        return ((0.0, "operand has non-positive scale 0.0"),
                (math.nan, "scale nan is not a finite float32"))
    return ()   # OEM types: any scale


def _invalid_zero_points(type_code: int) -> tuple[tuple[int, str], ...]:
    """(zero point, the rule it breaks)."""
    if type_code in _INVALID_ZERO_POINTS:
        return tuple((zero_point, f"operand has zeroPoint {zero_point} outside")
                     for zero_point in _INVALID_ZERO_POINTS[type_code])
    if type_code in (T.OEM, T.TENSOR_OEM_BYTE):
        return ()
    return ((1, "operand has non-zero zeroPoint 1"),)


def _lifetime_mutations(model: Model, subgraph: Subgraph, index: int) -> list[tuple[L, str]]:
    """VTS getInvalidLifeTimes: change whether the operand should have a writer. (lifetime,
    the rule it breaks)."""
    operand = subgraph.operands[index]
    if operand.lifetime in (L.SUBGRAPH_OUTPUT, L.TEMPORARY_VARIABLE):
        targets = [(t, f"has lifetime {t.name} and cannot be written")
                   for t in (L.SUBGRAPH_INPUT, L.CONSTANT_COPY)]
    elif operand.lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE, L.SUBGRAPH_INPUT):
        targets = [(t, _unwritten_rule(subgraph, index))
                   for t in (L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT)]
    else:
        return []
    if _byte_size(operand) == 0:
        targets = [(t, rule) for t, rule in targets if t != L.CONSTANT_COPY]
    return targets


def _change_lifetime(select: Select, index: int, lifetime: L) -> Callable[[Model], None]:
    def mutate(model: Model) -> None:
        subgraph = select(model)
        operand = subgraph.operands[index]
        if operand.lifetime == L.SUBGRAPH_INPUT:
            subgraph.inputIndexes.remove(index)
        elif operand.lifetime == L.SUBGRAPH_OUTPUT:
            subgraph.outputIndexes.remove(index)
        operand.lifetime = lifetime
        operand.location = DataLocation()
        if lifetime == L.CONSTANT_COPY:
            _become_constant_copy(model, operand)
        elif lifetime == L.SUBGRAPH_INPUT:
            subgraph.inputIndexes.append(index)
        elif lifetime == L.SUBGRAPH_OUTPUT:
            subgraph.outputIndexes.append(index)
    return mutate


def _input_output_swap(operand: Operand) -> L | None:
    """VTS getInputOutputLifeTime: keep writer-ness, change input/output-ness, without
    touching inputIndexes/outputIndexes."""
    return {L.CONSTANT_COPY: L.SUBGRAPH_INPUT, L.CONSTANT_REFERENCE: L.SUBGRAPH_INPUT,
            L.SUBGRAPH_INPUT: L.CONSTANT_COPY if _byte_size(operand) else None,
            L.SUBGRAPH_OUTPUT: L.TEMPORARY_VARIABLE,
            L.TEMPORARY_VARIABLE: L.SUBGRAPH_OUTPUT}.get(operand.lifetime)


#: The rule each swap breaks: an operand missing from its list, or listed with another lifetime.
_SWAP_RULES = {
    L.SUBGRAPH_INPUT: "SUBGRAPH_INPUT operand missing from inputIndexes",
    L.SUBGRAPH_OUTPUT: "SUBGRAPH_OUTPUT operand missing from outputIndexes",
    L.CONSTANT_COPY: "has lifetime CONSTANT_COPY, expected SUBGRAPH_INPUT",
    L.TEMPORARY_VARIABLE: "has lifetime TEMPORARY_VARIABLE, expected SUBGRAPH_OUTPUT",
}


def _swap_lifetime(select: Select, index: int, lifetime: L) -> Callable[[Model], None]:
    def mutate(model: Model) -> None:
        operand = select(model).operands[index]
        operand.lifetime = lifetime
        operand.location = DataLocation()
        if lifetime == L.CONSTANT_COPY:
            _become_constant_copy(model, operand)
    return mutate


def _location_mutations(model: Model, operand: Operand) -> list[tuple[str, DataLocation, str]]:
    """(what, location, the rule it breaks)."""
    loc = operand.location
    not_uint32, all_zero = "location fields", "expected all zero"
    if operand.lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE):
        def wrong_length(length: int) -> str:
            return f"needs {loc.length} bytes, location gives {length}"
    if operand.lifetime == L.CONSTANT_COPY:
        return [("poolIndex=1", replace(loc, poolIndex=1),
                 "CONSTANT_COPY with non-zero poolIndex 1"),
                ("offset past end", replace(loc, offset=len(model.operandValues)),
                 "outside operandValues"),
                # One byte more reaches past operandValues unless padding follows the value.
                ("length+1", replace(loc, length=loc.length + 1),
                 "outside operandValues" if loc.offset + loc.length == len(model.operandValues)
                 else wrong_length(loc.length + 1)),
                ("length-1", replace(loc, length=loc.length - 1), wrong_length(loc.length - 1))]
    if operand.lifetime == L.CONSTANT_REFERENCE:
        pool_size = model.pools[loc.poolIndex].size
        return [("poolIndex out of range", replace(loc, poolIndex=len(model.pools)),
                 f"CONSTANT_REFERENCE poolIndex {len(model.pools)} out of range"),
                ("offset past pool", replace(loc, offset=pool_size),
                 f"outside pool {loc.poolIndex}"),
                ("length-1", replace(loc, length=loc.length - 1), wrong_length(loc.length - 1)),
                ("offset 2**32", replace(loc, offset=2 ** 32), not_uint32)]
    if operand.lifetime == L.SUBGRAPH:
        return [("poolIndex=1", replace(loc, poolIndex=1), "SUBGRAPH with non-zero poolIndex 1"),
                ("reference out of range", replace(loc, offset=len(model.referenced)),
                 f"subgraph reference {len(model.referenced)} out of range"),
                ("length=1", replace(loc, length=1), "SUBGRAPH with non-zero length 1")]
    return [("poolIndex=1", replace(loc, poolIndex=1), all_zero),
            ("offset=1", replace(loc, offset=1), all_zero),
            ("length=1", replace(loc, length=1), all_zero),
            ("offset=-1", replace(loc, offset=-1), not_uint32)]


def operand_mutations(name: str, build: Build) -> Iterator[ModelMutation]:
    model = build().model
    for sg_name, select in _selectors(model):
        subgraph = select(model)
        for index, operand in enumerate(subgraph.operands):
            prefix = f"{name}/{sg_name}/operand {index}"
            type_name = T(operand.type).name if operand.type <= 0xFFFF else None

            def mutation(what: str, mutate: Callable[[Model], None], rule: Rule) -> ModelMutation:
                return ModelMutation(f"{prefix}/{what}", build, mutate, rule)

            def setting(what: str, rule: Rule, **fields) -> ModelMutation:
                return mutation(what, _set(select, index, **fields), rule)

            for bad_type in _INVALID_OPERAND_TYPES:
                yield setting(f"type={bad_type:#x}", _type_rule("operand", bad_type), type=bad_type)
            if operand.type in (*_SCALARS, T.SUBGRAPH, T.OEM):
                for what, dims in (("scalar rank 1", [0]), ("scalar dims [1]", [1])):
                    yield setting(what, f"scalar {type_name} has dimensions {dims}",
                                  dimensions=dims)
            elif operand.lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE):
                yield setting("constant rank 0", "tensor has unknown rank", dimensions=[])
                yield setting("constant unknown dim", "tensor has unknown dimensions",
                              dimensions=[0] + list(operand.dimensions)[1:])
            if operand.type <= 0xFFFF and STORAGE_DTYPE.get(operand.type) is not None \
                    and operand.type not in (*_SCALARS, T.OEM):
                for what, dims in (("dims overflow", [0xFFFF_FFFF, 2]),
                                   ("dims product overflow", [65536, 65536])):
                    yield setting(what, f"dimensions {dims} needs more than 4294967295 bytes",
                                  dimensions=dims)
            for scale, rule in _invalid_scales(operand.type):
                yield setting(f"scale={scale}", rule, scale=scale)
            for zero_point, rule in _invalid_zero_points(operand.type):
                yield setting(f"zeroPoint={zero_point}", rule, zeroPoint=zero_point)
            for lifetime, rule in _lifetime_mutations(model, subgraph, index):
                yield mutation(f"lifetime={lifetime.name}",
                               _change_lifetime(select, index, lifetime), rule)
            swapped = _input_output_swap(operand)
            if swapped is not None:
                yield mutation(f"io lifetime={swapped.name}",
                               _swap_lifetime(select, index, swapped), _SWAP_RULES[swapped])
            if operand.type == T.SUBGRAPH:
                yield setting("SUBGRAPH type as TEMPORARY",
                              "of type SUBGRAPH cannot have lifetime TEMPORARY_VARIABLE",
                              lifetime=L.TEMPORARY_VARIABLE, location=DataLocation())
            else:
                yield setting("lifetime SUBGRAPH", "cannot have lifetime SUBGRAPH",
                              lifetime=L.SUBGRAPH, location=DataLocation())
            consumers = operand.numberOfConsumers
            for bad in ((1,) if consumers == 0 else (consumers - 1, consumers + 1)):
                yield setting(f"numberOfConsumers={bad}",
                              f"operand {index}: numberOfConsumers is {bad}, but",
                              numberOfConsumers=bad)
            for what, location, rule in _location_mutations(model, operand):
                yield setting(f"location {what}", rule, location=location)
            if operand.type != T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
                quant = SymmPerChannelQuantParams(scales=[1.0], channelDim=0)
                yield setting("channelQuant on non-per-channel", "operand has channelQuant",
                              extraParams=OperandExtraParams(channelQuant=quant))
            # (A per-channel operand's channelQuant and extension together: "per_channel/".)
            if operand.type <= 0xFFFF and operand.type != T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
                yield setting("extension params on base type", "operand has extension parameters",
                              extraParams=OperandExtraParams(extension=b"x"))
            if operand.numberOfConsumers > 0 and all(
                    is_validated_operation(op.type) for op in subgraph.operations
                    if index in op.inputs):
                # Without its operand, a validated operation has a wrong signature.
                yield mutation("removed", lambda m, s=select, i=index: _remove_operand(s(m), i),
                               _operand_removed_rule(sg_name, subgraph, index))


def _type_rule(kind: str, bad_type: int) -> str:
    if bad_type > 0xFFFF:
        return f"extension {kind} type {bad_type:#x} has prefix"
    return f"invalid {kind} type {bad_type}"


def _operand_removed_rule(sg_name: str, subgraph: Subgraph, index: int) -> Rule:
    """A referenced subgraph's input or output breaks the IF or WHILE calling it; any other
    operand the first operation that names it."""
    if sg_name != "main" and index in (*subgraph.inputIndexes, *subgraph.outputIndexes):
        return CONTROL_FLOW
    first = next(op for op in subgraph.operations if index in (*op.inputs, *op.outputs))
    kind = "outputs" if index in first.outputs else "inputs"
    return signature_rule(first, kind, sum(i != index for i in getattr(first, kind)))


# --- operation mutations ----------------------------------------------------------------

#: Past the fundamental operations, past OEM_OPERATION, an extension of unknown prefix.
_INVALID_OPERATION_TYPES = (102, 10001, 0xFFFF_0003)


def _new_operand_like(subgraph: Subgraph, index: int, lifetime: L) -> int:
    source = subgraph.operands[index]
    copy = replace(source, numberOfConsumers=0, lifetime=lifetime, location=DataLocation(),
                   dimensions=list(source.dimensions))
    return _append_operand(subgraph, copy)


def operation_mutations(name: str, build: Build) -> Iterator[ModelMutation]:
    model = build().model
    for sg_name, select in _selectors(model):
        subgraph = select(model)
        count = len(subgraph.operands)
        for p, operation in enumerate(subgraph.operations):
            prefix = f"{name}/{sg_name}/operation {p}"

            def mutation(what: str, mutate: Callable[[Model], None], rule: Rule) -> ModelMutation:
                return ModelMutation(f"{prefix}/{what}", build, mutate, rule)

            def op(m: Model, s=select, p=p) -> Operation:
                return s(m).operations[p]

            def edit(change: Callable, *args, s=select, p=p) -> Callable[[Model], None]:
                """``change(subgraph, p, *args)`` on the subgraph of operation p."""
                return lambda m: change(s(m), p, *args)

            for bad_type in _INVALID_OPERATION_TYPES:
                yield mutation(f"type={bad_type:#x}",
                               lambda m, t=bad_type, op=op: setattr(op(m), "type", t),
                               _type_rule("operation", bad_type))
            for kind in ("input", "output"):
                for j in range(len(getattr(operation, f"{kind}s"))):
                    def out_of_range(m, j=j, op=op, kinds=f"{kind}s", n=count) -> None:
                        getattr(op(m), kinds)[j] = n
                    yield mutation(f"{kind} {j} index out of range", out_of_range,
                                   f"{kind} {j} names operand {count}, out of range")
            yield from _execution_order_mutations(prefix, build, select, subgraph, p)
            for j, index in enumerate(operation.outputs):
                yield mutation(f"second writer of output {j}", edit(_add_writer, j),
                               f"output {j} (operand {index}) was already written")
                if subgraph.operands[index].numberOfConsumers > 0:
                    yield mutation(f"output {j} no longer written", edit(_remove_write, j),
                                   _unwritten_rule(subgraph, index))
            yield mutation("removed", edit(_remove_operation), _operation_removed_rule(subgraph, p))
            if not is_validated_operation(operation.type):
                continue   # an unimplemented type's signature is not checked
            inputs, outputs = len(operation.inputs), len(operation.outputs)
            for j in range(inputs):
                yield mutation(f"input {j} removed", edit(_remove_input, j),
                               signature_rule(operation, "inputs", inputs - 1))
            for j, index in enumerate(operation.outputs):
                yield mutation(f"output {j} removed",
                               lambda m, j=j, op=op: op(m).outputs.pop(j),
                               _unwritten_rule(subgraph, index))
            # In a referenced subgraph, the new operand is one of its inputs or outputs too:
            # the IF or WHILE calling it is checked first.
            called = sg_name != "main"
            yield mutation("extra input", edit(_add_input), CONTROL_FLOW if called else
                           signature_rule(operation, "inputs", inputs + 1))
            yield mutation("extra output", edit(_add_output), CONTROL_FLOW if called else
                           signature_rule(operation, "outputs", outputs + 1))


def _execution_order_mutations(prefix, build, select, subgraph, p) -> Iterator[ModelMutation]:
    """VTS mutateExecutionOrderTest: move a reader before its writer, a writer after its
    reader."""
    operation = subgraph.operations[p]
    read_early = "is read before it is written"
    if any(subgraph.operands[i].lifetime in (L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT)
           for i in operation.inputs):
        def reader_first(m: Model, s=select, p=p) -> None:
            ops = s(m).operations
            ops.insert(0, ops.pop(p))
        yield ModelMutation(f"{prefix}/reader moved first", build, reader_first, read_early)
    if any(subgraph.operands[i].numberOfConsumers > 0 for i in operation.outputs):
        def writer_last(m: Model, s=select, p=p) -> None:
            ops = s(m).operations
            ops.append(ops.pop(p))
        yield ModelMutation(f"{prefix}/writer moved last", build, writer_last, read_early)


def _operation_removed_rule(subgraph: Subgraph, p: int) -> str:
    """A subgraph left without operations, or the outputs of operation p unwritten."""
    if len(subgraph.operations) == 1:
        return "has no operations"
    outputs = subgraph.operations[p].outputs
    if any(index in later.inputs for later in subgraph.operations[p + 1:] for index in outputs):
        return "is read before it is written"
    return "no operation writes it"


def _add_writer(subgraph: Subgraph, p: int, output: int) -> None:
    """A copy of operation p appended, writing output ``output`` again (its other outputs
    are fresh temporaries)."""
    copy = Operation(subgraph.operations[p].type, list(subgraph.operations[p].inputs),
                     list(subgraph.operations[p].outputs))
    for i in copy.inputs:
        subgraph.operands[i].numberOfConsumers += 1
    for j, index in enumerate(copy.outputs):
        if j != output:
            copy.outputs[j] = _new_operand_like(subgraph, index, L.TEMPORARY_VARIABLE)
    subgraph.operations.append(copy)


def _remove_write(subgraph: Subgraph, p: int, output: int) -> None:
    """Operation p writes a fresh temporary instead, so its former output is unwritten."""
    operation = subgraph.operations[p]
    operation.outputs[output] = _new_operand_like(subgraph, operation.outputs[output],
                                                  L.TEMPORARY_VARIABLE)


def _remove_operation(subgraph: Subgraph, p: int) -> None:
    for i in subgraph.operations[p].inputs:
        subgraph.operands[i].numberOfConsumers -= 1
    del subgraph.operations[p]


def _remove_input(subgraph: Subgraph, p: int, j: int) -> None:
    operation = subgraph.operations[p]
    subgraph.operands[operation.inputs[j]].numberOfConsumers -= 1
    del operation.inputs[j]


def _replace_input(subgraph: Subgraph, p: int, j: int, index: int) -> None:
    """Operation p reads operand ``index`` as input j (consumer counts kept right)."""
    operation = subgraph.operations[p]
    subgraph.operands[operation.inputs[j]].numberOfConsumers -= 1
    subgraph.operands[index].numberOfConsumers += 1
    operation.inputs[j] = index


def _add_input(subgraph: Subgraph, p: int) -> None:
    index = _append_operand(subgraph, Operand(T.TENSOR_FLOAT32, [1], numberOfConsumers=1,
                                              lifetime=L.SUBGRAPH_INPUT))
    subgraph.operations[p].inputs.append(index)
    subgraph.inputIndexes.append(index)


def _add_output(subgraph: Subgraph, p: int) -> None:
    index = _append_operand(subgraph, Operand(T.TENSOR_FLOAT32, [1],
                                              lifetime=L.SUBGRAPH_OUTPUT))
    subgraph.operations[p].outputs.append(index)
    subgraph.outputIndexes.append(index)


# --- model-level and model-specific mutations -------------------------------------------

def closed_memory() -> Memory:
    memory = Memory.create(8)
    memory.close()
    return memory


#: Models whose model-wide fields (pools, extension table...) get mutated: one each of a
#: plain model, a model with referenced subgraphs and a model with extensions suffice.
MODEL_LEVEL_MUTATED = ("add", "constant_reference", "nested", "extension")


def model_level_mutations(name: str, build: Build) -> Iterator[ModelMutation]:
    model = build().model

    def mutation(what: str, mutate: Callable[[Model], None], rule: Rule) -> ModelMutation:
        return ModelMutation(f"{name}/model/{what}", build, mutate, rule)

    for i in range(len(model.referenced)):
        yield mutation(f"referenced {i} empty",
                       lambda m, i=i: m.referenced.__setitem__(i, Subgraph()),
                       f"referenced subgraph {i}: has no operands")
        yield mutation(f"referenced {i} without operations",
                       lambda m, i=i: setattr(m.referenced[i], "operations", []),
                       f"referenced subgraph {i}: has no operations")
    if name not in MODEL_LEVEL_MUTATED:
        return
    for what, (mutate, rule) in {
        "main without operations": (lambda m: setattr(m.main, "operations", []),
                                    "main subgraph: has no operations"),
        "main without operands": (lambda m: setattr(m, "main", Subgraph()),
                                  "main subgraph: has no operands"),
        "relax is an int": (lambda m: setattr(m, "relaxComputationFloat32toFloat16", 1),
                            "relaxComputationFloat32toFloat16 1 is not a bool"),
        "pool closed": (lambda m: m.pools.append(closed_memory()), "memory is closed"),
        "pool of size 0": (lambda m: m.pools.append(Memory.create(0)), "memory has size 0"),
        "pool of unknown kind": (lambda m: m.pools.append(Memory.create(8, name="bogus")),
                                 "unsupported memory type 'bogus'"),
        "pool is None": (lambda m: m.pools.append(None), "NoneType is not a Memory"),
        "operandValues is a list": (lambda m: setattr(m, "operandValues", [0]),
                                    "operandValues is a list, not bytes"),
        "extension name invalid": (lambda m: m.extensionNameToPrefix.append(
            ExtensionNameAndPrefix("NoPeriod", 40)), "invalid extension name 'NoPeriod'"),
        "extension name repeated": (lambda m: m.extensionNameToPrefix.extend(
            [ExtensionNameAndPrefix("com.a.b", 40), ExtensionNameAndPrefix("com.a.b", 41)]),
            "extension name 'com.a.b' listed twice"),
        "extension prefix repeated": (lambda m: m.extensionNameToPrefix.extend(
            [ExtensionNameAndPrefix("com.a.b", 40), ExtensionNameAndPrefix("com.a.c", 40)]),
            "prefix 40 listed twice"),
        "extension prefix 2**16": (lambda m: m.extensionNameToPrefix.append(
            ExtensionNameAndPrefix("com.a.b", 0x10000)), "prefix 65536 is not a uint16"),
        "main input listed twice": (lambda m: m.main.inputIndexes.append(m.main.inputIndexes[0]),
                                    "is listed as input twice"),
        "main output index out of range": (
            lambda m: m.main.outputIndexes.append(len(m.main.operands)),
            re.compile(r"main subgraph: output \d+ names operand \d+, out of range")),
        "main is not a Subgraph": (lambda m: setattr(m, "main", None),
                                   "main subgraph: NoneType is not a Subgraph"),
        "operation type -1": (lambda m: setattr(m.main.operations[0], "type", -1),
                              "invalid operation type -1"),
        "operation type 9999": (lambda m: setattr(m.main.operations[0], "type", 9999),
                                "invalid operation type 9999"),
        "operation inputs None": (lambda m: setattr(m.main.operations[0], "inputs", None),
                                  "inputs None are not uint32"),
        "operand not an Operand": (lambda m: m.main.operands.append(None),
                                   "NoneType is not an Operand"),
        "operands a tuple": (lambda m: setattr(m.main, "operands", tuple(m.main.operands)),
                             "operands is not a list"),
        "operations None": (lambda m: setattr(m.main, "operations", None),
                            "operations is not a list"),
        "operation not an Operation": (lambda m: m.main.operations.append(None),
                                       "NoneType is not an Operation"),
        "referenced is a tuple": (lambda m: setattr(m, "referenced", tuple(m.referenced)),
                                  "referenced is not a list"),
        **{f"operand 0 {what}": (set_operand(0, **fields), rule) for what, (fields, rule) in {
            "operand type -1": ({"type": -1}, "invalid operand type -1"),
            "operand type 9999": ({"type": 9999}, "invalid operand type 9999"),
            "operand type 1.0": ({"type": 1.0}, "invalid operand type 1.0"),
            "dims negative": ({"dimensions": [-1, 2]}, "dimensions [-1, 2] are not"),
            "dims not ints": ({"dimensions": [2, 1.5]}, "dimensions [2, 1.5] are not"),
            "dims a tuple of bools": ({"dimensions": (True, True)},
                                      "dimensions (True, True) are not"),
            "dims 2**32": ({"dimensions": [2 ** 32, 1]}, "dimensions [4294967296, 1] are not"),
            "zeroPoint 2**31": ({"zeroPoint": 2 ** 31}, "zeroPoint 2147483648 is not an int32"),
            "scale inf": ({"scale": math.inf}, "scale inf is not a finite float32"),
            "scale -inf": ({"scale": -math.inf}, "scale -inf is not a finite float32"),
            "scale a string": ({"scale": "0"}, "scale '0' is not a finite float32"),
            "lifetime 7": ({"lifetime": 7}, "invalid lifetime 7"),
            "lifetime -1": ({"lifetime": -1}, "invalid lifetime -1"),
            "numberOfConsumers -1": ({"numberOfConsumers": -1},
                                     "numberOfConsumers -1 is not a uint32"),
            "location None": ({"location": None}, "location None is not a DataLocation"),
            "extraParams None": ({"extraParams": None},
                                 "extraParams None is not an OperandExtraParams"),
        }.items()},
    }.items():
        yield mutation(what, mutate, rule)


def _reference(subgraph: Subgraph, target: int) -> None:
    """An unused SUBGRAPH operand naming referenced subgraph ``target``."""
    _append_operand(subgraph, Operand(T.SUBGRAPH, [], lifetime=L.SUBGRAPH,
                                      location=DataLocation(offset=target)))


def _specific(name: str, build: Build, cases: dict[str, tuple[Callable[[Model], None], Rule]]
              ) -> Iterator[ModelMutation]:
    for what, (mutate, rule) in cases.items():
        yield ModelMutation(f"{name}/{what}", build, mutate, rule)


def _channel_quant(m: Model) -> SymmPerChannelQuantParams:
    return m.main.operands[0].extraParams.channelQuant


def set_operand(index: int, **fields) -> Callable[[Model], None]:
    """Set fields of operand ``index`` of the main subgraph."""
    return _set(lambda m: m.main, index, **fields)


def _io_operand(subgraph: int, kind: str, position: int, **fields) -> Callable[[Model], None]:
    """Set fields of input or output (``kind``) ``position`` of referenced subgraph ``subgraph``."""
    return _set(lambda m: m.referenced[subgraph], lambda g: getattr(g, kind)[position], **fields)


def specific_mutations() -> Iterator[ModelMutation]:
    yield from _specific("per_channel", models.per_channel_model, {
        "channelDim = rank": (lambda m: setattr(_channel_quant(m), "channelDim", 2),
                              "channelQuant.channelDim 2 is not a dimension index of rank 2"),
        "too few scales": (lambda m: setattr(_channel_quant(m), "scales", [0.5, 0.25]),
                           "channelQuant has 2 scales for 3 channels"),
        "scale 0": (lambda m: _channel_quant(m).scales.__setitem__(1, 0.0),
                    "channelQuant.scales[1] = 0.0 is not a positive finite float32"),
        "scale negative": (lambda m: _channel_quant(m).scales.__setitem__(2, -1.0),
                           "channelQuant.scales[2] = -1.0 is not a positive finite float32"),
        "scale nan": (lambda m: _channel_quant(m).scales.__setitem__(0, math.nan),
                      "channelQuant.scales[0] = nan is not a positive finite float32"),
        "no channelQuant": (set_operand(0, extraParams=OperandExtraParams()),
                            "TENSOR_QUANT8_SYMM_PER_CHANNEL operand has no channelQuant"),
        "channel dimension unknown": (set_operand(0, dimensions=[2, 0]),
                                      "channel dimension 1 is unknown"),
        "channelQuant and extension": (lambda m: setattr(
            m.main.operands[0].extraParams, "extension", b"\x01"),
            "extraParams sets both channelQuant and extension"),
    })
    yield from _specific("if", models.if_model, {
        "condition dims [2]": (set_operand(0, dimensions=[2]),
                               "condition (operand 0) has dimensions [2], expected [1]"),
        "condition dims unknown": (set_operand(0, dimensions=[0]),
                                   "condition (operand 0) has dimensions [0], expected [1]"),
        "condition rank unknown": (set_operand(0, dimensions=[]),
                                   "condition (operand 0) has dimensions [], expected [1]"),
        "condition TENSOR_INT32": (
            set_operand(0, type=T.TENSOR_INT32),
            "condition (operand 0) has type TENSOR_INT32, expected TENSOR_BOOL8"),
        "then branch not a subgraph": (
            lambda m: _replace_input(m.main, 0, 1, 1),
            "then branch (operand 1) has type TENSOR_FLOAT32, expected SUBGRAPH"),
        "else branch output dims [3]": (_io_operand(1, "outputIndexes", 0, dimensions=[3]),
                                        "else branch (referenced subgraph 1) output 0"),
        "then branch input dims [3]": (_io_operand(0, "inputIndexes", 0, dimensions=[3]),
                                       "dimensions [3] are incompatible with the caller's [2]"),
        "then branch input rank 2": (_io_operand(0, "inputIndexes", 0, dimensions=[2, 1]),
                                     "dimensions [2, 1] are incompatible with the caller's [2]"),
        "then branch output TENSOR_INT32": (
            _io_operand(0, "outputIndexes", 0, type=T.TENSOR_INT32),
            "type TENSOR_INT32 differs from the caller's TENSOR_FLOAT32"),
        "no data input": (lambda m: _remove_input(m.main, 0, 3),
                          "then branch (referenced subgraph 0) has 1 inputs, the IF passes 0"),
        "only 2 inputs": (lambda m: (_remove_input(m.main, 0, 3), _remove_input(m.main, 0, 2)),
                          "(IF): needs at least 3 inputs, has 2"),
        # The IF's output operand removed with it, so that nothing is left unwritten.
        "no output": (lambda m: _remove_operand(m.main, m.main.operations[0].outputs[0]),
                      "(IF): needs at least 1 output"),
        "branch references itself": (lambda m: _reference(m.referenced[0], 0),
                                     "referenced subgraph 0 references itself"),
    })
    yield from _specific("while_counter", models.while_counter_model, {
        "condition output TENSOR_INT32": (_io_operand(0, "outputIndexes", 0, type=T.TENSOR_INT32),
                                          "has type TENSOR_INT32, expected TENSOR_BOOL8"),
        "condition output dims [2]": (_io_operand(0, "outputIndexes", 0, dimensions=[2]),
                                      "has dimensions [2], expected [1]"),
        "condition used as body": (lambda m: setattr(m.main.operands[2].location, "offset", 0),
                                   "type TENSOR_BOOL8 differs from the caller's TENSOR_INT32"),
        "body used as condition": (lambda m: setattr(m.main.operands[1].location, "offset", 1),
                                   "condition (referenced subgraph 1) output"),
        "body output dims [2]": (_io_operand(1, "outputIndexes", 0, dimensions=[2]),
                                 "body (referenced subgraph 1) output 0"),
        "body references itself": (lambda m: _reference(m.referenced[1], 1),
                                   "referenced subgraph 1 references itself"),
        "condition references body, body condition": (
            lambda m: (_reference(m.referenced[0], 1), _reference(m.referenced[1], 0)),
            "referenced subgraph 0 -> referenced subgraph 1 -> referenced subgraph 0"),
    })
    yield from _specific("fibonacci_while", models.fibonacci_while_model, {
        "state-only body input dims [2]": (_io_operand(1, "inputIndexes", 2, dimensions=[2]),
                                           "body (referenced subgraph 1) input 2"),
        "input-only condition input TENSOR_FLOAT32": (
            _io_operand(0, "inputIndexes", 3, type=T.TENSOR_FLOAT32),
            "type TENSOR_FLOAT32 differs from the caller's TENSOR_INT32"),
        "input-only operand dropped": (
            lambda m: _remove_input(m.main, 0, 5),
            "condition (referenced subgraph 0) has 4 inputs, the WHILE passes 3"),
        # The body loses its (unused) input-only operand: 3 inputs and 3 outputs.
        "body output count > input count": (
            lambda m: _remove_operand(m.referenced[1], m.referenced[1].inputIndexes[3]),
            "body (referenced subgraph 1) has 3 inputs, the WHILE passes 4"),
    })
    yield from _specific("nested", models.nested_model, {
        "loop body references the IF branch (cycle)": (
            lambda m: _reference(m.referenced[3], 0),
            "referenced subgraph 0 -> referenced subgraph 3 -> referenced subgraph 0"),
        "unreferenced subgraphs form a cycle": (_append_cycle, "references itself"),
    })
    yield from _specific("extension", models.extension_model, {
        "prefix no longer declared": (lambda m: m.extensionNameToPrefix.clear(),
                                      "which extensionNameToPrefix does not list"),
        "operation prefix unknown": (lambda m: setattr(
            m.main.operations[0], "type", (models.EXTENSION_PREFIX + 1) << 16),
            "extension operation type"),
        "extension operand with channelQuant": (set_operand(0, extraParams=OperandExtraParams(
            channelQuant=SymmPerChannelQuantParams([1.0] * 4, 0))),
            "extension operand has channelQuant"),
        "extension operand with scale": (set_operand(0, scale=0.5),
                                         "operand has non-zero scale 0.5"),
    })


def _append_cycle(m: Model) -> None:
    base = len(m.referenced)
    for target in (base + 1, base):
        subgraph = models.add_model().model.main
        _reference(subgraph, target)
        m.referenced.append(subgraph)


def unknown_size_while_mutations() -> list[ModelMutation]:
    """WHILE operands of unknown size: invalid under the strict HAL 1.3 reference rule,
    valid for this driver by default (validate_model(allow_unknown_size_while=True))."""
    return list(_specific("while_counter", models.while_counter_model, {
        "outer output of unknown size": (set_operand(3, dimensions=[0]), "which WHILE requires"),
        "outer input of unknown rank": (set_operand(0, dimensions=[]), "which WHILE requires"),
    }))


def by_model(mutations: Iterable) -> dict[str, list]:
    """Mutations by the model they mutate (the first part of their ids): the tests run
    those of one model as one case, listing every mutation at fault."""
    groups: dict[str, list] = {}
    for mutation in mutations:
        groups.setdefault(mutation.id.split("/")[0], []).append(mutation)
    return groups


def all_model_mutations() -> list[ModelMutation]:
    mutations: list[ModelMutation] = []
    for name, build in MODEL_BUILDERS.items():
        mutations += operand_mutations(name, build)
        mutations += operation_mutations(name, build)
        mutations += model_level_mutations(name, build)
    mutations += specific_mutations()
    return mutations


# --- valid variants ---------------------------------------------------------------------

def _oem_model() -> Model:
    mb = ModelBuilder()
    g = mb.main
    x = g.input(T.TENSOR_OEM_BYTE, [4], scale=0.5, zero_point=7)   # OEM: any quantization
    k = g.constant(T.TENSOR_OEM_BYTE, [1, 2, 3, 4])
    g.outputs(g.apply(Op.OEM_OPERATION, [x, k], T.TENSOR_OEM_BYTE, [4]))
    return mb.build()


def valid_variants() -> dict[str, Callable[[], Model]]:
    """Models built by editing a valid one that must still be valid."""
    def edited(build: Build, edit: Callable[[Model], None]) -> Callable[[], Model]:
        def make() -> Model:
            model = build().model
            edit(model)
            return model
        return make

    return {
        "unreferenced subgraph": edited(models.add_model, lambda m: m.referenced.append(
            models.add_model().model.main)),
        "if branch input of unknown dimension": edited(
            models.if_model, _io_operand(0, "inputIndexes", 0, dimensions=[0])),
        "if branch output of unknown rank": edited(
            models.if_model, _io_operand(1, "outputIndexes", 0, dimensions=[])),
        "if outer output of unknown dimension": edited(models.if_model,
                                                       set_operand(4, dimensions=[0])),
        "main output of unknown dimension": edited(models.add_model,
                                                   set_operand(3, dimensions=[2, 0])),
        "main input of unknown rank": edited(models.add_model, set_operand(0, dimensions=[])),
        "TENSOR_INT32 with a scale": edited(models.add_model, lambda m: m.main.inputIndexes.append(
            _append_operand(m.main, Operand(T.TENSOR_INT32, [3], scale=0.5,
                                            lifetime=L.SUBGRAPH_INPUT)))),
        "OEM operation": _oem_model,
        "relaxed": edited(models.add_model, lambda m: setattr(
            m, "relaxComputationFloat32toFloat16", True)),
        "two extension entries": edited(models.extension_model, lambda m: (
            m.extensionNameToPrefix.append(ExtensionNameAndPrefix("com.example.other", 8)))),
        "extension operand with extension params": edited(models.extension_model, set_operand(
            0, extraParams=OperandExtraParams(extension=b"\x01\x02"))),
    }


# --- request mutations ------------------------------------------------------------------

REQUEST_BUILDERS: dict[str, Build] = {name: MODEL_BUILDERS[name] for name in (
    "add", "quant8_add", "constant_reference", "per_channel", "if", "fibonacci_while")}


def _set_argument(kind: str, position: int, in_location: bool = False, /,
                  **fields) -> Callable[[Request, Model], None]:
    """Set fields of request argument ``position`` of ``kind`` ("inputs", "outputs"), or of
    its location."""
    def mutate(request: Request, model: Model) -> None:
        argument = getattr(request, kind)[position]
        target = argument.location if in_location else argument
        for name, value in fields.items():
            setattr(target, name, copy.copy(value))
    return mutate


def request_mutations() -> list[RequestMutation]:
    mutations: list[RequestMutation] = []
    for name, build in REQUEST_BUILDERS.items():
        case = build()
        request = case.request()
        main = case.model.main

        def add(what: str, mutate: Callable[[Request, Model], None]) -> None:
            mutations.append(RequestMutation(f"{name}/{what}", build, mutate))

        for kind, indexes in (("inputs", main.inputIndexes), ("outputs", main.outputIndexes)):
            for k, index in enumerate(indexes):
                where = f"{kind[:-1]} {k}"
                dims = list(main.operands[index].dimensions)
                location = getattr(request, kind)[k].location
                pool_size = request.pools[location.poolIndex].hidlMemory.size
                add(f"{where} removed", lambda r, m, kind=kind, k=k: getattr(r, kind).pop(k))
                add(f"{where} poolIndex out of range", _set_argument(kind, k, True, poolIndex=2))
                add(f"{where} offset past pool", _set_argument(kind, k, True, offset=pool_size))
                add(f"{where} length past pool",
                    _set_argument(kind, k, True, length=pool_size + 1))
                add(f"{where} offset 2**32", _set_argument(kind, k, True, offset=2 ** 32))
                add(f"{where} no value with a location", _set_argument(kind, k, hasNoValue=True))
                add(f"{where} no value with dimensions", _set_argument(
                    kind, k, hasNoValue=True, location=DataLocation(), dimensions=[1]))
                add(f"{where} hasNoValue is an int", _set_argument(kind, k, hasNoValue=0))
                if dims:
                    add(f"{where} rank + 1", _set_argument(kind, k, dimensions=dims + [1]))
                    add(f"{where} dimension 0 differs",
                        _set_argument(kind, k, dimensions=[dims[0] + 1] + dims[1:]))
                    add(f"{where} negative dimension",
                        _set_argument(kind, k, dimensions=[-1] + dims[1:]))
                if kind == "inputs":
                    add(f"{where} length - 1",
                        _set_argument(kind, k, True, length=location.length - 1))
                    add(f"{where} length + 1",
                        _set_argument(kind, k, True, length=location.length + 1))
                    if dims:
                        add(f"{where} dimension 0 unknown",
                            _set_argument(kind, k, dimensions=[0] + dims[1:]))
        add("extra input", lambda r, m: r.inputs.append(RequestArgument(hasNoValue=True)))
        add("extra output", lambda r, m: r.outputs.append(RequestArgument(hasNoValue=True)))
        add("pool 0 is a token", lambda r, m: r.pools.__setitem__(0, MemoryPool(token=1)))
        add("pool 0 has memory and token", lambda r, m: setattr(r.pools[0], "token", 1))
        add("pool 0 is empty", lambda r, m: r.pools.__setitem__(0, MemoryPool()))
        add("pool 0 closed", lambda r, m: r.pools[0].hidlMemory.close())
        add("pool 0 of size 0", lambda r, m: setattr(r.pools[0], "hidlMemory", Memory.create(0)))
        add("pool 0 of unknown kind", lambda r, m: setattr(
            r.pools[0], "hidlMemory", Memory.create(r.pools[0].hidlMemory.size, name="bogus")))
        add("pool 0 a bare Memory", lambda r, m: r.pools.__setitem__(0, r.pools[0].hidlMemory))
        add("pools removed", lambda r, m: r.pools.clear())
    mutations += _shape_request_mutations()
    return mutations


def unknown_input_dims_model() -> ModelCase:
    """add_model with input 0 of dimensions [0, 2]: the request must give them."""
    case = models.add_model()
    case.model.main.operands[0].dimensions = [0, 2]
    return case


def scalar_input_model() -> ModelCase:
    """add_model with the activation as a request input (an INT32 scalar)."""
    case = models.add_model()
    main = case.model.main
    act = main.operands[2]
    act.lifetime, act.location = L.SUBGRAPH_INPUT, DataLocation()
    main.inputIndexes.append(2)
    case.inputs.append(np.array(0, np.int32))
    return case


def unknown_output_dims_model() -> ModelCase:
    case = models.add_model()
    case.model.main.operands[3].dimensions = [0, 0]
    case.output_lengths = [16]
    return case


def _shape_request_mutations() -> list[RequestMutation]:
    return [RequestMutation(id, build, mutate) for id, build, mutate in (
        ("unknown input dims/not given", unknown_input_dims_model, lambda r, m: None),
        ("unknown input dims/given wrong", unknown_input_dims_model,
         _set_argument("inputs", 0, dimensions=[2, 3])),
        ("unknown input dims/given as unknown", unknown_input_dims_model,
         _set_argument("inputs", 0, dimensions=[0, 2])),
        ("unknown input dims/overflowing", unknown_input_dims_model,
         _set_argument("inputs", 0, dimensions=[2 ** 30, 2])),
        ("scalar input/given dimensions", scalar_input_model,
         _set_argument("inputs", 2, dimensions=[1])),
        ("unknown output dims/overflowing", unknown_output_dims_model,
         _set_argument("outputs", 0, dimensions=[2 ** 20, 2 ** 20])),
    )]


def valid_requests() -> dict[str, tuple[Build, Callable[[Request, Model], None], dict]]:
    """Requests edited from valid ones that must stay valid: (build, edit, kwargs)."""
    input_dims = _set_argument("inputs", 0, dimensions=[2, 2])
    return {
        "output buffer too small": (models.add_model, _set_argument("outputs", 0, True, length=4),
                                    {}),
        "output omitted": (models.add_model, lambda r, m: r.outputs.__setitem__(
            0, RequestArgument(hasNoValue=True)), {}),
        "input omitted": (models.add_model, lambda r, m: r.inputs.__setitem__(
            1, RequestArgument(hasNoValue=True)), {}),
        "dimensions equal to the model's": (models.add_model, input_dims, {}),
        "unknown input dims given": (unknown_input_dims_model, input_dims, {}),
        "scalar input": (scalar_input_model, lambda r, m: None, {}),
        "unknown output dims": (unknown_output_dims_model, lambda r, m: None, {}),
        "unknown output dims given in request, fenced": (
            unknown_output_dims_model, _set_argument("outputs", 0, dimensions=[2, 2]),
            {"allow_unspecified_output": False}),
        "larger output buffer": (models.add_model, lambda r, m: (
            r.pools.__setitem__(1, MemoryPool(hidlMemory=Memory.create(32))),
            setattr(r.outputs[0].location, "length", 17)), {}),
    }


def valid_request(name: str) -> tuple[Request, Model, dict]:
    """valid_requests()[name] made: (the edited request, its model, validate_request's
    keyword arguments)."""
    build, edit, options = valid_requests()[name]
    case = build()
    request = case.request()
    edit(request, case.model)
    return request, case.model, options


def invalid_fenced_requests() -> dict[str, tuple[Build, Callable[[Request, Model], None]]]:
    """Valid for executions that report output shapes, invalid when outputs cannot
    report them (allow_unspecified_output=False)."""
    return {
        "unknown output dims": (unknown_output_dims_model, lambda r, m: None),
        "output dims given with an unknown one": (
            unknown_output_dims_model, _set_argument("outputs", 0, dimensions=[2, 0])),
        "output of unknown rank": (models.add_model, lambda r, m: setattr(
            m.main.operands[3], "dimensions", [])),
    }
