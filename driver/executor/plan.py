"""Compiling a validated Model into an execution plan, once, at prepare time.

A plan has one SubgraphPlan per subgraph: a slot per operand (constants pre-filled), the
steps in execution order (bound kernels, IF, WHILE) and the input/output slots. Shapes are
propagated statically here; a step whose shapes are all known ahead runs its kernel and
nothing else, the others re-infer their shapes at run time.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from ..errors import check
from ..hal.enums import OperandLifeTime, OperationType
from ..hal.structs import Model, Subgraph
from ..operands import operation_context, subgraph_infos
from ..operations.registry import lookup
from .shapes import check_value_size, declared_shape, is_fully_known, merge_shapes
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


def subgraph_name(index: int) -> str:
    return "main subgraph" if index == 0 else f"referenced subgraph {index - 1}"


def compile_model(model: Model, *, build_steps: bool = True) -> ModelAnalysis:
    """Analyse (and, with build_steps, compile) a model that validate_model accepted.

    Raises ValidationError when shapes are inconsistent and ResourceError when a value
    would be too large. Subgraphs are compiled callee-first so IF/WHILE steps can bind the
    plans of the subgraphs they reference.
    """
    subgraphs = [model.main, *model.referenced]
    order = _callee_first_order(subgraphs)
    plans: list[Optional[SubgraphPlan]] = [None] * len(subgraphs)
    supported: list[list[bool]] = [[] for _ in subgraphs]
    depths = [0] * len(subgraphs)
    for index in order:
        callees = _callees(subgraphs[index])
        depths[index] = 1 + max((depths[c] for c in callees), default=0)
        plans[index], supported[index] = _compile_subgraph(
            model, subgraphs, index, plans, supported, build_steps, depths)
    return ModelAnalysis(plans=plans, supported=supported)


def _callees(subgraph: Subgraph) -> list[int]:
    """Plan indexes (1 + index into Model.referenced) of the subgraphs a subgraph names."""
    return [operand.location.offset + 1 for operand in subgraph.operands
            if operand.lifetime == OperandLifeTime.SUBGRAPH]


def _callee_first_order(subgraphs: list[Subgraph]) -> list[int]:
    """Post-order over subgraph references (validation guarantees they are acyclic)."""
    order: list[int] = []
    seen: set[int] = set()
    for root in range(len(subgraphs)):
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(_callees(subgraphs[root])))]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                order.append(node)
            elif child not in seen:
                seen.add(child)
                stack.append((child, iter(_callees(subgraphs[child]))))
    return order


def _compile_subgraph(model: Model, subgraphs: list[Subgraph], index: int, plans: list,
                      supported_by_subgraph: list, build_steps: bool, depths: list[int]):
    subgraph = subgraphs[index]
    name = subgraph_name(index)
    infos = subgraph_infos(model, subgraph)
    declared = [declared_shape(operand) for operand in subgraph.operands]
    static = list(declared)
    inputs = list(subgraph.inputIndexes)
    check(len(set(inputs)) == len(inputs), f"{name}: an operand is listed twice as an input")
    input_set = set(inputs)
    order = inputs + [i for i in range(len(subgraph.operands)) if i not in input_set]
    slot_of = [0] * len(subgraph.operands)
    for slot, operand_index in enumerate(order):
        slot_of[operand_index] = slot
    values: list = [info.value for info in infos]
    for i, operand in enumerate(subgraph.operands):
        if operand.lifetime == OperandLifeTime.SUBGRAPH:
            values[i] = operand.location.offset + 1     # index into the plans list
    plan = SubgraphPlan(name=name, slot_of=slot_of,
                        tail=[values[i] for i in order[len(inputs):]],
                        input_operands=tuple(inputs),
                        output_operands=tuple(subgraph.outputIndexes),
                        output_slots=tuple(slot_of[i] for i in subgraph.outputIndexes),
                        declared=declared, static=static)
    supported: list[bool] = []
    for op_index, operation in enumerate(subgraph.operations):
        where = f"{name}, operation {op_index} ({_op_name(operation.type)})"
        if operation.type in CONTROL_FLOW:
            callees = [values[i] for i in operation.inputs
                       if subgraph.operands[i].lifetime == OperandLifeTime.SUBGRAPH]
            # Each nesting level costs interpreter stack: deeper control flow is reported
            # unsupported rather than risking a RecursionError mid-execution.
            ok = all(all(supported_by_subgraph[c]) and depths[c] < MAX_CONTROL_FLOW_DEPTH
                     for c in callees)
            supported.append(ok)
            if ok and build_steps:
                plan.steps.append(_control_flow_step(operation, plan, values, plans, where))
            continue
        definition = lookup(operation.type)
        if definition is None:
            supported.append(False)
            continue
        supported.append(True)
        ctx = operation_context(model, subgraph, op_index, infos)
        in_shapes = [None if infos[i].lifetime == OperandLifeTime.NO_VALUE else static[i]
                     for i in operation.inputs]
        inferred = definition.infer_shapes(ctx, in_shapes)
        check(len(inferred) == len(operation.outputs),
              f"{where}: shape inference gave {len(inferred)} shapes for "
              f"{len(operation.outputs)} outputs")
        for k, out in enumerate(operation.outputs):
            static[out] = merge_shapes(declared[out], inferred[k], f"{where}, output {k} (operand {out})")
            check_value_size(subgraph.operands[out].type, static[out], f"{where}, output {k} (operand {out})")
        if build_steps:
            present_inputs = [static[i] for i in operation.inputs
                              if infos[i].lifetime != OperandLifeTime.NO_VALUE]
            is_static = all(map(is_fully_known, present_inputs + [static[o] for o in operation.outputs]))
            plan.steps.append(make_operation_step(
                definition, ctx, definition.build(ctx), tuple(slot_of[i] for i in operation.inputs),
                tuple(slot_of[o] for o in operation.outputs), [static[o] for o in operation.outputs],
                [subgraph.operands[o].type for o in operation.outputs], is_static, where))
    plan.required_inputs = _required_inputs(subgraph)
    plan.finalize()
    return plan, supported


def _required_inputs(subgraph: Subgraph) -> frozenset[int]:
    """Input positions consumed where a value is required: by any operation input that
    is not one of its optional inputs (values passed on to IF/WHILE count as required)."""
    position_of = {operand: k for k, operand in enumerate(subgraph.inputIndexes)}
    required = set()
    for operation in subgraph.operations:
        definition = None if operation.type in CONTROL_FLOW else lookup(operation.type)
        optional = definition.optional_inputs if definition is not None else frozenset()
        for k, operand in enumerate(operation.inputs):
            if operand in position_of and k not in optional:
                required.add(position_of[operand])
    return frozenset(required)


def _control_flow_step(operation, plan: SubgraphPlan, values: list, plans: list, where: str) -> Step:
    outer_static = plan.static
    slot_of = plan.slot_of
    outputs = tuple(slot_of[o] for o in operation.outputs)
    declared_outputs = [plan.declared[o] for o in operation.outputs]
    if operation.type == OperationType.IF:
        cond, then_ref, else_ref, *data = operation.inputs
        then_plan, else_plan = plans[values[then_ref]], plans[values[else_ref]]
        data_static = [outer_static[i] for i in data]
        return make_if_step(
            where, slot_of[cond], tuple(slot_of[i] for i in data), outputs, then_plan, else_plan,
            then_plan.input_checks(data_static), else_plan.input_checks(data_static),
            declared_outputs)
    cond_ref, body_ref, *data = operation.inputs
    cond_plan, body_plan = plans[values[cond_ref]], plans[values[body_ref]]
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


def _op_name(operation_type: int) -> str:
    try:
        return OperationType(operation_type).name
    except ValueError:
        return str(operation_type)


__all__ = ["SubgraphPlan", "ModelAnalysis", "compile_model", "subgraph_name"]
