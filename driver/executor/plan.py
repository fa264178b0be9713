"""Compiling a validated Model into an execution plan, once, at prepare time.

A plan has one SubgraphPlan per subgraph: a slot per operand (constants pre-filled), the
steps in execution order (bound kernels, IF, WHILE) and the input/output slots. Shapes are
propagated statically here; a step whose shapes are all known ahead runs its kernel and
nothing else, the others re-infer their shapes at run time.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from ..errors import ValidationError
from ..hal.enums import SCALAR_OPERAND_TYPES, OperandLifeTime, OperationType
from ..hal.structs import Model, Operand, Subgraph
from ..operands import constant_value, operand_info, operation_context
from ..operations.registry import OperandInfo, Shape, lookup
from .shapes import (MAX_VALUE_BYTES, is_fully_known, merge_shapes, value_nbytes,
                     value_too_large)
from .steps import (InputCheck, make_if_step, make_input_checks, make_operation_step,
                    make_while_step)

Step = Callable[[list, object], None]
CONTROL_FLOW = (OperationType.IF, OperationType.WHILE)

#: How deeply IF/WHILE may nest (subgraphs on the longest reference chain).
MAX_CONTROL_FLOW_DEPTH = 64


@dataclass
class SubgraphPlan:
    """A compiled subgraph. Operands live in slots numbered so that the subgraph's inputs
    come first: a run starts from ``inputs + tail`` with no per-input assignment."""
    name: str
    slot_of: list[int]                  # operand index -> slot
    tail: list                          # initial values of the non-input slots (constants)
    input_operands: tuple[int, ...]     # operand indexes of the inputs, in order
    output_operands: tuple[int, ...]
    output_slots: tuple[int, ...]
    declared: list                      # declared Shape per operand index
    static: list                        # statically known Shape per operand index
    steps: list[Step] = field(default_factory=list)
    #: positions of inputs that some operation needs a value for (no hasNoValue allowed)
    required_inputs: frozenset[int] = frozenset()

    def run(self, inputs: list, ctx) -> list:
        """Run the steps on the given input values; returns the slot list. (finalize()
        replaces this with a closure over the finished steps.)"""
        self.finalize()
        return self.run(inputs, ctx)

    def finalize(self) -> None:
        """Bind run() to a closure over the steps and tail: WHILE loops call it twice per
        iteration, and locals are cheaper than attribute lookups."""
        steps, tail = tuple(self.steps), self.tail

        def run(inputs: list, ctx) -> list:
            slots = inputs + tail
            if ctx.deadline_ns is None:
                for step in steps:
                    step(slots, ctx)
            else:
                for step in steps:
                    step(slots, ctx)
                    ctx.check_deadline()
            return slots
        self.run = run

    def run_outputs(self, inputs: list, ctx) -> list:
        """Run as a whole execution and return the output values. Floating-point errors
        are ignored here, once, on the executing thread: results follow IEEE (inf, NaN) as
        on a device, and kernels rely on it instead of each entering np.errstate."""
        with np.errstate(all="ignore"):
            slots = self.run(inputs, ctx)
        return [slots[i] for i in self.output_slots]

    def input_checks(self, entering: list) -> list[InputCheck]:
        """The run-time shape checks needed when values of the given static shapes enter."""
        return make_input_checks(self.name, [self.declared[i] for i in self.input_operands],
                                 entering)


@dataclass
class ModelAnalysis:
    """What compiling found: per-subgraph plans (steps only for supported operations) and
    which operations of each subgraph the driver supports."""
    plans: list[SubgraphPlan]           # index 0: main, then model.referenced
    supported: list[list[bool]]         # per subgraph, per operation
    #: What executions of this content run (executor.run.MainProgram), made by the first
    #: prepareModel of it and shared by the prepared models of equal content after it.
    main_program: Optional[Any] = None


def subgraph_name(index: int) -> str:
    return "main subgraph" if index == 0 else f"referenced subgraph {index - 1}"


def compile_model(model: Model, *, build_steps: bool = True) -> ModelAnalysis:
    """Analyse (and, with build_steps, compile) a model that validate_model accepted.

    Raises ValidationError when shapes are inconsistent and ResourceError when a value
    would be too large. Subgraphs are compiled callee-first so IF/WHILE steps can bind the
    plans of the subgraphs they reference.
    """
    subgraphs = [model.main, *model.referenced]
    callees = [_callees(subgraph) for subgraph in subgraphs]
    plans: list[Optional[SubgraphPlan]] = [None] * len(subgraphs)
    supported: list[list[bool]] = [[] for _ in subgraphs]
    depths = [0] * len(subgraphs)
    for index in _callee_first_order(callees):
        depths[index] = 1 + max((depths[c] for c in callees[index]), default=0)
        plans[index], supported[index] = _compile_subgraph(
            model, subgraphs[index], index, plans, supported, build_steps, depths)
    return ModelAnalysis(plans=plans, supported=supported)


def _callees(subgraph: Subgraph) -> list[int]:
    """Plan indexes (1 + index into Model.referenced) of the subgraphs a subgraph names."""
    return [operand.location.offset + 1 for operand in subgraph.operands
            if operand.lifetime == _SUBGRAPH]


def _callee_first_order(callees: list[list[int]]) -> list[int]:
    """Post-order over subgraph references (validation guarantees they are acyclic);
    ``callees[i]`` lists the plan indexes subgraph i names."""
    order: list[int] = []
    seen: set[int] = set()
    for root in range(len(callees)):
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(callees[root]))]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                order.append(node)
            elif child not in seen:
                seen.add(child)
                stack.append((child, iter(callees[child])))
    return order


_SUBGRAPH = OperandLifeTime.SUBGRAPH
_NO_VALUE = OperandLifeTime.NO_VALUE
#: Lifetimes whose slots hold a value before a run starts (see _initial_value).
_PREFILLED_LIFETIMES = frozenset({OperandLifeTime.CONSTANT_COPY,
                                  OperandLifeTime.CONSTANT_REFERENCE, OperandLifeTime.SUBGRAPH})
_NO_OPTIONAL_INPUTS: frozenset[int] = frozenset()


def _compile_subgraph(model: Model, subgraph: Subgraph, index: int, plans: list,
                      supported_by_subgraph: list, build_steps: bool, depths: list[int]):
    name = subgraph_name(index)
    operands = subgraph.operands
    lifetimes = [operand.lifetime for operand in operands]
    declared = [() if operand.type in SCALAR_OPERAND_TYPES
                else tuple(operand.dimensions) if operand.dimensions else None
                for operand in operands]
    static = list(declared)
    inputs = list(subgraph.inputIndexes)
    position_of = dict(zip(inputs, range(len(inputs))))
    if len(position_of) != len(inputs):
        raise ValidationError(f"{name}: an operand is listed twice as an input")
    order = inputs + [i for i in range(len(operands)) if i not in position_of]
    slot_of = [0] * len(operands)
    for slot, operand_index in enumerate(order):
        slot_of[operand_index] = slot
    plan = SubgraphPlan(name=name, slot_of=slot_of, tail=[],
                        input_operands=tuple(inputs),
                        output_operands=tuple(subgraph.outputIndexes),
                        output_slots=tuple([slot_of[i] for i in subgraph.outputIndexes]),
                        declared=declared, static=static)
    steps = plan.steps
    # OperandInfo views are made only for operands that operations read or write: an
    # operand that only enters IF/WHILE (or nothing) is never looked at by an operation.
    infos: list = [None] * len(operands)
    required: set[int] = set()
    supported: list[bool] = []
    for op_index, operation in enumerate(subgraph.operations):
        op_type = operation.type
        op_inputs = operation.inputs
        where = f"{name}, operation {op_index} ({_op_name(op_type)})"
        if op_type in CONTROL_FLOW:
            ok = _control_flow_supported(operation, operands, lifetimes, supported_by_subgraph,
                                         depths)
            supported.append(ok)
            # Values passed on to IF/WHILE count as required.
            required.update([position_of[i] for i in op_inputs if i in position_of])
            if ok and build_steps:
                steps.append(_control_flow_step(operation, plan, operands, plans, where))
            continue
        definition = lookup(op_type)
        if position_of:
            optional = definition.optional_inputs if definition is not None else _NO_OPTIONAL_INPUTS
            for k, operand in enumerate(op_inputs):
                if operand in position_of and k not in optional:
                    required.add(position_of[operand])
        if definition is None:
            supported.append(False)
            continue
        supported.append(True)
        # One pass over the inputs: their views, the shapes inference gets, and whether
        # every present input's shape is known ahead.
        in_shapes = []
        is_static = True
        for i in op_inputs:
            if infos[i] is None:
                infos[i] = operand_info(model, subgraph, i)
            if lifetimes[i] == _NO_VALUE:
                in_shapes.append(None)
                continue
            shape = static[i]
            in_shapes.append(shape)
            if is_static and (shape is None or shape and min(shape) <= 0):
                is_static = False
        op_outputs = operation.outputs
        for i in op_outputs:
            if infos[i] is None:
                infos[i] = operand_info(model, subgraph, i)
        ctx = operation_context(model, subgraph, op_index, infos)
        inferred = definition.infer_shapes(ctx, in_shapes)
        if len(inferred) != len(op_outputs):
            raise ValidationError(f"{where}: shape inference gave {len(inferred)} shapes for "
                                  f"{len(op_outputs)} outputs")
        output_shapes = []
        for k, out in enumerate(op_outputs):
            shape = _merged_output_shape(declared[out], inferred[k], operands[out].type,
                                         where, k, out)
            static[out] = shape
            output_shapes.append(shape)
            if is_static and (shape is None or shape and min(shape) <= 0):
                is_static = False
        if build_steps:
            steps.append(make_operation_step(
                definition, ctx, definition.build(ctx), tuple([slot_of[i] for i in op_inputs]),
                tuple([slot_of[o] for o in op_outputs]), output_shapes,
                [operands[o].type for o in op_outputs], is_static, where))
    # A run starts from ``inputs + tail``: constants and referenced plans pre-filled.
    tail = [None] * (len(operands) - len(inputs))
    first = len(inputs)
    for i, lifetime in enumerate(lifetimes):
        if lifetime in _PREFILLED_LIFETIMES and i not in position_of:
            tail[slot_of[i] - first] = _initial_value(model, operands[i], lifetime, infos[i])
    plan.tail = tail
    plan.required_inputs = frozenset(required)
    plan.finalize()
    return plan, supported


def _control_flow_supported(operation, operands: list[Operand], lifetimes: list,
                            supported_by_subgraph: list, depths: list[int]) -> bool:
    """IF/WHILE are supported when every operation of the subgraphs they call is. Each
    nesting level costs interpreter stack: deeper control flow is reported unsupported
    rather than risking a RecursionError mid-execution."""
    for i in operation.inputs:
        if lifetimes[i] == _SUBGRAPH:
            callee = operands[i].location.offset + 1
            if not (all(supported_by_subgraph[callee]) and depths[callee] < MAX_CONTROL_FLOW_DEPTH):
                return False
    return True


def _merged_output_shape(declared: Shape, inferred: Shape, operand_type: int, where: str,
                         k: int, operand_index: int) -> Shape:
    """An output's static shape: the declared one merged with the inferred one, refused
    when too large. The common cases (equal shapes, nothing declared) take no merging."""
    if declared is None:
        merged = inferred
    elif inferred is None or declared == inferred:
        merged = declared
    else:
        merged = merge_shapes(declared, inferred, f"{where}, output {k} (operand {operand_index})")
    if merged is not None:
        nbytes = value_nbytes(operand_type, merged)
        if nbytes > MAX_VALUE_BYTES:
            raise value_too_large(f"{where}, output {k} (operand {operand_index})", merged, nbytes)
    return merged


def _initial_value(model: Model, operand: Operand, lifetime: int, info: Optional[OperandInfo]):
    """What a constant's or a referenced subgraph's slot holds before a run: the constant's
    value, or the plan index of the subgraph."""
    if lifetime == _SUBGRAPH:
        return operand.location.offset + 1      # index into the plans list
    if info is not None:
        return info.value
    return constant_value(model, operand)       # None unless a constant


def _control_flow_step(operation, plan: SubgraphPlan, operands: list[Operand], plans: list,
                       where: str) -> Step:
    """The step of an IF or WHILE. Validation guarantees its subgraph inputs are SUBGRAPH
    operands, whose plan index is 1 + their location offset."""
    outer_static = plan.static
    slot_of = plan.slot_of
    outputs = tuple(slot_of[o] for o in operation.outputs)
    declared_outputs = [plan.declared[o] for o in operation.outputs]
    if operation.type == OperationType.IF:
        cond, then_ref, else_ref, *data = operation.inputs
        then_plan, else_plan = plans[_plan_index(operands, then_ref)], plans[_plan_index(operands, else_ref)]
        data_static = [outer_static[i] for i in data]
        return make_if_step(
            where, slot_of[cond], tuple(slot_of[i] for i in data), outputs, then_plan, else_plan,
            then_plan.input_checks(data_static), else_plan.input_checks(data_static),
            declared_outputs)
    cond_ref, body_ref, *data = operation.inputs
    cond_plan, body_plan = plans[_plan_index(operands, cond_ref)], plans[_plan_index(operands, body_ref)]
    # Loop-carried values (the first m + k) are replaced by body outputs each iteration:
    # their shape is known ahead only if the body keeps the shape they enter with.
    loop_carried = len(body_plan.output_slots)
    entering = [outer_static[i] for i in data]
    for j, operand_index in enumerate(body_plan.output_operands):
        if entering[j] != body_plan.static[operand_index] or not is_fully_known(entering[j]):
            entering[j] = None
    return make_while_step(
        where, tuple(slot_of[i] for i in data), outputs, len(operation.outputs), loop_carried,
        cond_plan, body_plan, cond_plan.input_checks(entering), body_plan.input_checks(entering),
        declared_outputs)


def _plan_index(operands: list[Operand], operand_index: int) -> int:
    return operands[operand_index].location.offset + 1


_OPERATION_NAMES = {member.value: member.name for member in OperationType}


def _op_name(operation_type: int) -> str:
    name = _OPERATION_NAMES.get(operation_type)
    return name if name is not None else str(operation_type)


__all__ = ["SubgraphPlan", "ModelAnalysis", "compile_model", "subgraph_name"]
