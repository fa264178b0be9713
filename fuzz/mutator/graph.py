"""Graph structure: an operation appended to an output, an operation run twice or cut
out, an operation changed into a similar one, two inputs of an operation swapped."""
from __future__ import annotations

from driver.hal import OperandLifeTime as L, Operation

from ..codec import (MAX_IO_INDEXES, MAX_OPERANDS, MAX_OPERATIONS, MAX_REQUEST_ARGUMENTS,
                     ArgumentSpec, CaseSpec, OperandSpec, SubgraphSpec, writable_operand,
                     writable_operation)
from ..codec.lowering import lower_extra
from .blocks import (TENSOR_TYPES, Rng, ensure_request_pool, input_pool, new_operand,
                     output_argument, random_seed, subgraphs, typed_operations)
from .operations import SAME_OPERANDS, plan_following
from .registry import mutation

_OUTPUT_LIFETIME = L.SUBGRAPH_OUTPUT


def _output_candidates(spec: CaseSpec) -> list[tuple[SubgraphSpec, int, int]]:
    """(subgraph, position in outputIndexes, operand index) of tensor outputs."""
    return [(sg, position, index) for sg in subgraphs(spec)
            for position, index in enumerate(sg.outputIndexes)
            if index < len(sg.operands) and sg.operands[index].type in TENSOR_TYPES
            and sg.operands[index].lifetime == _OUTPUT_LIFETIME]


def _extend_output(spec: CaseSpec, rng: Rng, tensor_inputs: int) -> bool:
    """Replace an output o by op(o, ...) taking o as each of its ``tensor_inputs``: o
    becomes a temporary, the new operand the output."""
    candidates = _output_candidates(spec)
    rng.shuffle(candidates)
    for sg, position, index in candidates:
        if len(sg.operations) >= MAX_OPERATIONS or len(sg.operands) + 3 > MAX_OPERANDS:
            continue
        old = sg.operands[index]
        planned = plan_following(sg, index, old, rng, tensor_inputs)
        if planned is None:
            continue
        operation_type, inputs, out_scale, out_zero_point = planned
        result = new_operand(sg, OperandSpec(old.type, list(old.dimensions), out_scale,
                                             out_zero_point, L.SUBGRAPH_OUTPUT))
        writable_operand(sg, index).lifetime = L.TEMPORARY_VARIABLE
        sg.outputIndexes[position] = result
        sg.operations.append(Operation(operation_type, inputs, [result]))
        return True
    return False


@mutation(weight=6)
def append_unary(spec: CaseSpec, rng: Rng) -> bool:
    """o -> UNARY(o, parameters) on an output (any subgraph: shapes and types are kept, so
    IF/WHILE signatures still match)."""
    return _extend_output(spec, rng, 1)


@mutation(weight=4)
def append_binary(spec: CaseSpec, rng: Rng) -> bool:
    """o -> BINARY(o, o, parameters) on an output."""
    return _extend_output(spec, rng, 2)


@mutation(weight=3)
def duplicate_operation(spec: CaseSpec, rng: Rng) -> bool:
    """Run an operation of main twice: the copy's results become new model outputs, so they
    are computed and compared too."""
    main = spec.model.main
    ops = [op for op in main.operations
           if all(i < len(main.operands) for i in op.inputs + op.outputs)]
    if not ops or len(main.operations) >= MAX_OPERATIONS:
        return False
    op = rng.choice(ops)
    if (len(main.operands) + len(op.outputs) > MAX_OPERANDS
            or len(main.outputIndexes) + len(op.outputs) > MAX_IO_INDEXES
            or len(spec.request.outputs) + len(op.outputs) > MAX_REQUEST_ARGUMENTS):
        return False
    ensure_request_pool(spec)
    outputs = []
    for index in op.outputs:
        old = main.operands[index]
        copy = OperandSpec(old.type, list(old.dimensions), old.scale, old.zeroPoint,
                           L.SUBGRAPH_OUTPUT, extraParams=lower_extra(old.extraParams))
        new_index = new_operand(main, copy)
        main.outputIndexes.append(new_index)
        spec.request.outputs.append(output_argument(spec, copy))
        outputs.append(new_index)
    main.operations.append(Operation(op.type, list(op.inputs), outputs))
    return True


@mutation(weight=2)
def cut_operation(spec: CaseSpec, rng: Rng) -> bool:
    """Remove an operation of main; its results become model inputs fed by the request."""
    main = spec.model.main
    # Main must keep an output: only operations that do not produce all of them.
    candidates = [k for k, op in enumerate(main.operations)
                  if any(i not in op.outputs for i in main.outputIndexes)]
    if not candidates:
        return False
    k = rng.choice(candidates)
    op = main.operations[k]
    outputs = [i for i in op.outputs if i < len(main.operands)]
    if len(main.inputIndexes) + len(outputs) > MAX_IO_INDEXES:
        return False
    ensure_request_pool(spec)
    del main.operations[k]
    for index in outputs:
        operand = writable_operand(main, index)
        if index in main.outputIndexes:
            position = main.outputIndexes.index(index)
            del main.outputIndexes[position]
            if position < len(spec.request.outputs):
                del spec.request.outputs[position]
        if operand.lifetime in (L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT):
            operand.lifetime = L.SUBGRAPH_INPUT
            main.inputIndexes.append(index)
            dims = [d if d else rng.randint(1, 3) for d in operand.dimensions]
            spec.request.inputs.append(ArgumentSpec(
                dimensions=dims if 0 in operand.dimensions else [], target=input_pool(spec),
                value=random_seed(rng)))
    return True


@mutation(weight=5)
def change_operation_type(spec: CaseSpec, rng: Rng) -> bool:
    """An operation becomes another taking the same operand types at every position."""
    ops = [(sg, k, others) for sg, k, op, inputs, outputs in typed_operations(spec)
           if (others := [t for t in SAME_OPERANDS.get((inputs, outputs), ()) if t != op.type])]
    if not ops:
        return False
    sg, k, others = rng.choice(ops)
    writable_operation(sg, k).type = rng.choice(others)
    return True


@mutation(weight=2)
def swap_operation_inputs(spec: CaseSpec, rng: Rng) -> bool:
    """Swap two inputs of an operation, preferring two of the same type (ADD's operands,
    IF's branches, WHILE's state)."""
    ops = [(sg, k) for sg in subgraphs(spec) for k, op in enumerate(sg.operations)
           if len(op.inputs) >= 2]
    if not ops:
        return False
    sg, k = rng.choice(ops)
    op = writable_operation(sg, k)
    inputs = op.inputs
    types = [sg.operands[i].type if i < len(sg.operands) else -1 for i in inputs]
    pairs = [(a, b) for a in range(len(inputs)) for b in range(a + 1, len(inputs))
             if types[a] == types[b] and inputs[a] != inputs[b]]
    if pairs and rng.random() < 0.9:
        a, b = rng.choice(pairs)
    else:
        a, b = rng.sample(range(len(op.inputs)), 2)
    op.inputs[a], op.inputs[b] = op.inputs[b], op.inputs[a]
    return True

