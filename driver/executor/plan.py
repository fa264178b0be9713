"""Compiling a validated Model into an execution plan, once, at prepare time.

A plan has one SubgraphPlan per subgraph: a slot per operand (constants pre-filled), the
steps in execution order (bound kernels, IF, WHILE) and the input/output slots. Shapes are
propagated statically here; a step whose shapes are all known ahead runs its kernel and
nothing else, the others re-infer their shapes at run time.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..errors import ValidationError
from ..hal.enums import (CONTROL_FLOW_OPERATION_TYPES, SCALAR_OPERAND_TYPES, OperandLifeTime,
                         OperationType)
from ..hal.structs import Model, Operand, Operation, Subgraph
from ..limits import check_shape, itemsize, operands_over_rank, running
from ..operands import CONSTANT_LIFETIMES, ModelInfos, constant_value, operation_context
from ..operations.registry import OperandInfo, OperationContext, OperationDef, Shape, lookup
from ..validation.common import callee_nodes, node_label
from .shapes import is_fully_known, merge_shapes
from .steps import (Budget, InputCheck, OperationWhere, describe, make_if_step,
                    make_input_checks, make_operation_step, make_while_step)

Step = Callable[[list, object], None]
monotonic_ns = time.monotonic_ns

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
    #: per step: where its operation sits, the bytes its results take when known ahead
    #: (0: the step counts them itself), and the slots that die after it
    step_wheres: list[OperationWhere] = field(default_factory=list)
    step_bytes: list[int] = field(default_factory=list)
    dead_after: list[tuple[int, ...]] = field(default_factory=list)
    #: the above by step, as a run goes through them: (step, bytes, dead slots, where)
    schedule: tuple[tuple[Step, int, tuple[int, ...], OperationWhere], ...] = ()
    #: whether every step's results have sizes known ahead: a run of a subgraph that is
    #: not the main one then reserves and releases the same bytes whatever its values
    fixed: bool = False
    #: positions of inputs that some operation needs a value for (no hasNoValue allowed)
    required_inputs: frozenset[int] = frozenset()
    #: positions of outputs no step computes (an input or constant passed through): the
    #: caller counts their bytes (Budget.count), the steps counted the others
    uncounted_outputs: tuple[int, ...] = ()

    def run(self, inputs: list, ctx) -> list:
        """Run the steps on the given input values, counted on ``ctx``'s budget; returns
        the slot list."""
        return self.run_slots(inputs + self.tail, ctx, ctx.budget)

    def run_slots(self, slots: list, ctx, budget: Optional[Budget]) -> list:
        """Run the steps on ``slots`` (the inputs, then the tail), in place; returns them.

        Before a step whose results' sizes are known ahead, their bytes are reserved on
        ``budget``; after it, the values no later step needs are dropped and released, so
        that an execution holds only what is still to be used. ``budget`` None: the caller
        knows the run fits (a loop's iterations, make_while_step), and nothing is counted."""
        deadline_ns = ctx.deadline_ns      # a WHILE step changes it only while it runs
        for step, nbytes, dead, where in self.schedule:
            if budget is not None and nbytes:
                budget.reserve(nbytes, where)
            step(slots, ctx)
            if dead:
                for slot in dead:
                    if budget is not None:
                        budget.release(slots[slot].nbytes)
                    slots[slot] = None
            # The clock read inline, the method (which raises) only once it is late.
            if deadline_ns is not None and monotonic_ns() > deadline_ns:
                ctx.check_deadline()
        return slots

    # As a decorator, errstate sets its state per call without making a context manager
    # each time (a third of the cost of ``with np.errstate(...)``), and thread-safely.
    @np.errstate(all="ignore")
    def run_outputs(self, inputs: list, ctx) -> list:
        """Run as a whole execution and return the output values. The inputs count against
        the budget, and ``inputs`` becomes the slot list, so that each input is freed after
        its last use. Floating-point errors are ignored here, once, on the executing
        thread: results follow IEEE (inf, NaN) as on a device, and kernels rely on it
        instead of each entering np.errstate. Long kernels check ``ctx``'s deadline as they
        work (limits.checkpoint), not only the steps between them."""
        ctx.budget.hold_inputs(inputs, self.name)
        inputs += self.tail
        with running(ctx):
            slots = self.run_slots(inputs, ctx, ctx.budget)
        return [slots[i] for i in self.output_slots]

    @np.errstate(all="ignore")
    def operand_values(self, inputs: list, ctx) -> dict[int, np.ndarray]:
        """The value of every operand a run on ``inputs`` holds at its end, by operand
        index (omitted inputs have none): the steps of ``run_outputs``, with nothing
        dropped after its last use and no byte counted but by the steps that count their
        own. For diagnosis (which operation computed a wrong value), never an execution's
        path. IF and WHILE are one step each: what the subgraphs they run hold is not
        kept."""
        slots = inputs + self.tail
        with running(ctx):
            for step in self.steps:
                step(slots, ctx)
        return {operand: slots[slot] for operand, slot in enumerate(self.slot_of)
                if slots[slot] is not None}

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


def compile_model(model: Model, *, infos: Optional[ModelInfos] = None) -> ModelAnalysis:
    """Analyse and compile a model that validate_model accepted.

    ``infos`` are the OperandInfo views validation made for this model (or for one of the
    same content: an OperandInfo holds no reference into the client's model), per
    subgraph; compiling reuses them rather than copying the constants again, and makes any
    missing one.

    Raises ValidationError when shapes are inconsistent and ResourceError when a value
    would be too large. Subgraphs are compiled callee-first so IF/WHILE steps can bind the
    plans of the subgraphs they reference.
    """
    subgraphs = [model.main, *model.referenced]
    callees = [callee_nodes(subgraph) for subgraph in subgraphs]
    compiled = _Compiled(plans=[None] * len(subgraphs), supported=[[] for _ in subgraphs],
                         depths=[0] * len(subgraphs))
    for index in _callee_first_order(callees):
        compiled.depths[index] = 1 + max((compiled.depths[c] for c in callees[index]), default=0)
        compiled.plans[index], compiled.supported[index] = _compile_subgraph(
            model, subgraphs[index], index, compiled,
            list(infos[index]) if infos is not None else [None] * len(subgraphs[index].operands))
    return ModelAnalysis(plans=compiled.plans, supported=compiled.supported)


@dataclass
class _Compiled:
    """The subgraphs compiled so far, by plan index (0: main, i + 1: Model.referenced[i])."""
    plans: list[Optional[SubgraphPlan]]
    supported: list[list[bool]]         # per operation
    depths: list[int]                   # subgraphs on the longest reference chain from each


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


def _compile_subgraph(model: Model, subgraph: Subgraph, index: int, compiled: _Compiled,
                      infos: list[Optional[OperandInfo]]) -> tuple[SubgraphPlan, list[bool]]:
    """The plan of subgraph ``index`` (0: main), and which of its operations the driver
    supports. ``infos`` holds the OperandInfo views already made, by operand index; the
    missing ones an operation needs are made here."""
    name, main = node_label(index), index == 0
    plan = _slot_layout(subgraph, name)
    definitions = [None if operation.type in CONTROL_FLOW_OPERATION_TYPES
                   else lookup(operation.type) for operation in subgraph.operations]
    over_rank = operands_over_rank(subgraph.operands)
    supported: list[bool] = []
    stepped: list[Operation] = []      # the operations that have a step, in step order
    for op_index, (operation, definition) in enumerate(zip(subgraph.operations, definitions)):
        where = (name, op_index, operation.type)
        if operation.type in CONTROL_FLOW_OPERATION_TYPES:
            ok = _control_flow_supported(operation, subgraph.operands, compiled)
            if ok:
                plan.steps.append(_control_flow_step(operation, plan, subgraph.operands,
                                                     compiled.plans, describe(where)))
                plan.step_bytes.append(0)       # counted by the step (see steps.py)
        else:
            ok = (definition is not None and over_rank.isdisjoint(operation.inputs)
                  and over_rank.isdisjoint(operation.outputs))
            if ok:
                step, nbytes = _operation_step(model, subgraph, op_index, definition, plan,
                                               infos, where)
                plan.steps.append(step)
                plan.step_bytes.append(nbytes)
        if ok:
            plan.step_wheres.append(where)
            stepped.append(operation)
        supported.append(ok)
    plan.required_inputs = _required_inputs(subgraph, definitions)
    # The main subgraph's inputs are the execution's own (run_outputs): those that must
    # have a value are dropped after their last use too.
    owned_inputs = [plan.input_operands[k] for k in plan.required_inputs] if main else []
    plan.dead_after = _dead_after(stepped, plan, owned_inputs)
    computed = {output for operation in stepped for output in operation.outputs}
    plan.uncounted_outputs = tuple(k for k, operand in enumerate(plan.output_operands)
                                   if operand not in computed)
    plan.tail = _initial_tail(model, subgraph, plan, infos)
    plan.schedule = tuple(zip(plan.steps, plan.step_bytes, plan.dead_after, plan.step_wheres))
    plan.fixed = all(plan.step_bytes)
    return plan, supported


def _slot_layout(subgraph: Subgraph, name: str) -> SubgraphPlan:
    """A plan without steps: the inputs take the first slots, then every other operand in
    index order; declared (and so far statically known) shapes per operand."""
    inputs, count = list(subgraph.inputIndexes), len(subgraph.operands)
    if len(set(inputs)) != len(inputs):
        raise ValidationError(f"{name}: an operand is listed twice as an input")
    listed = set(inputs)
    order = inputs + [i for i in range(count) if i not in listed]
    slot_of = [0] * count
    for slot, operand_index in enumerate(order):
        slot_of[operand_index] = slot
    # () for a scalar, None for a tensor of unknown rank.
    declared = [() if operand.type in SCALAR_OPERAND_TYPES else tuple(operand.dimensions) or None
                for operand in subgraph.operands]
    outputs = tuple(subgraph.outputIndexes)
    return SubgraphPlan(name=name, slot_of=slot_of, tail=[], input_operands=tuple(inputs),
                        output_operands=outputs, output_slots=tuple(slot_of[i] for i in outputs),
                        declared=declared, static=list(declared))


def _dead_after(operations: list[Operation], plan: SubgraphPlan,
                owned_inputs: Sequence[int]) -> list[tuple[int, ...]]:
    """Per step (running ``operations[i]``), the slots that die after it: each value a step
    computes, and each of ``owned_inputs`` (operand indexes), lives until the last step
    that reads it (or only through the step that computes it, if none does), unless it
    is an output of the subgraph. Other inputs belong to the caller (an IF's or a loop's
    values) and constants to the plan: dropping them would free nothing."""
    slot_of = plan.slot_of
    last_use: dict[int, int] = {}
    for index, operation in enumerate(operations):
        for operand in (*operation.inputs, *operation.outputs):
            last_use[slot_of[operand]] = index
    kept = set(plan.output_slots)
    dead: list[list[int]] = [[] for _ in operations]
    for operand in (*owned_inputs, *(o for operation in operations for o in operation.outputs)):
        slot = slot_of[operand]
        if slot not in kept and slot in last_use:
            kept.add(slot)
            dead[last_use[slot]].append(slot)
    return [tuple(slots) for slots in dead]


def _required_inputs(subgraph: Subgraph,
                     definitions: list[Optional[OperationDef]]) -> frozenset[int]:
    """Positions of the inputs some operation needs a value for (no hasNoValue allowed):
    any input of IF/WHILE (passed on), of an unsupported operation, or at a position the
    operation does not list as optional."""
    position_of = {operand: position for position, operand in enumerate(subgraph.inputIndexes)}
    required: set[int] = set()
    for operation, definition in zip(subgraph.operations, definitions):
        optional = definition.optional_inputs if definition is not None else frozenset()
        required.update(position_of[operand] for k, operand in enumerate(operation.inputs)
                        if operand in position_of and k not in optional)
    return frozenset(required)


def _operation_step(model: Model, subgraph: Subgraph, op_index: int, definition: OperationDef,
                    plan: SubgraphPlan, infos: list[Optional[OperandInfo]],
                    where: OperationWhere) -> tuple[Step, int]:
    """The step running one supported operation, and the bytes of its results when all
    its shapes are known ahead (else 0: the step counts them once inferred); records its
    outputs' static shapes."""
    operation = subgraph.operations[op_index]
    ctx = operation_context(model, subgraph, op_index, infos)
    output_shapes, is_static, nbytes = _propagate_shapes(definition, ctx, operation,
                                                         subgraph.operands, plan, where)
    slot_of = plan.slot_of
    step = make_operation_step(definition, ctx, definition.build(ctx),
                               tuple(slot_of[i] for i in operation.inputs),
                               tuple(slot_of[o] for o in operation.outputs), output_shapes,
                               subgraph.operands, operation.outputs, is_static, where)
    return step, nbytes if is_static else 0


def _propagate_shapes(definition: OperationDef, ctx: OperationContext, operation: Operation,
                      operands: list[Operand], plan: SubgraphPlan,
                      where: OperationWhere) -> tuple[list[Shape], bool, int]:
    """The outputs' shapes known ahead (the declared shape merged with the inferred one,
    recorded in ``plan.static``), whether inference knows every shape the operation reads
    and writes ahead, so that its step need not infer shapes at run time, and the bytes
    of the outputs (unknown dimensions counted as 1).

    A declared shape that inference cannot confirm ahead (it follows from a value the
    request gives, or from the data) is not enough: the step infers at run time, so that a
    model declaring a small output of a huge computation fails before the kernel runs,
    its memory never allocated (as the reference checks each operation's computed shapes
    before running it)."""
    omitted = [operands[i].lifetime == OperandLifeTime.NO_VALUE for i in operation.inputs]
    in_shapes = [None if o else plan.static[i] for i, o in zip(operation.inputs, omitted)]
    inferred = definition.infer_shapes(ctx, in_shapes)
    if len(inferred) != len(operation.outputs):
        raise ValidationError(f"{describe(where)}: shape inference gave {len(inferred)} "
                              f"shapes for {len(operation.outputs)} outputs")
    output_shapes, total = [], 0
    for k, (out, found) in enumerate(zip(operation.outputs, inferred)):
        what = f"{describe(where)}, output {k} (operand {out})"
        shape = merge_shapes(plan.declared[out], found, what)
        total += check_shape(shape, itemsize(operands[out].type), what)
        plan.static[out] = shape
        output_shapes.append(shape)
    is_static = all(is_fully_known(shape) for shape, o in zip(in_shapes, omitted) if not o) \
        and all(map(is_fully_known, inferred))
    return output_shapes, is_static, total


def _control_flow_supported(operation: Operation, operands: list[Operand],
                            compiled: _Compiled) -> bool:
    """IF/WHILE are supported when every operation of the subgraphs they call is. Each
    nesting level costs interpreter stack: deeper control flow is reported unsupported
    rather than risking a RecursionError mid-execution."""
    callees = [operands[i].location.offset + 1 for i in operation.inputs
               if operands[i].lifetime == OperandLifeTime.SUBGRAPH]
    return all(all(compiled.supported[callee]) and compiled.depths[callee] < MAX_CONTROL_FLOW_DEPTH
               for callee in callees)


_PREFILLED_LIFETIMES = CONSTANT_LIFETIMES | {OperandLifeTime.SUBGRAPH}


def _initial_tail(model: Model, subgraph: Subgraph, plan: SubgraphPlan,
                  infos: list[Optional[OperandInfo]]) -> list:
    """What the non-input slots hold before a run: a constant's value, or the plan index
    of a referenced subgraph; None for the others."""
    first = len(plan.input_operands)
    tail = [None] * (len(subgraph.operands) - first)
    for i, operand in enumerate(subgraph.operands):
        if operand.lifetime in _PREFILLED_LIFETIMES and plan.slot_of[i] >= first:
            tail[plan.slot_of[i] - first] = (
                operand.location.offset + 1 if operand.lifetime == OperandLifeTime.SUBGRAPH
                else infos[i].value if infos[i] is not None else constant_value(model, operand))
    return tail


def _control_flow_step(operation: Operation, plan: SubgraphPlan, operands: list[Operand],
                       plans: list, where: str) -> Step:
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


__all__ = ["SubgraphPlan", "ModelAnalysis", "compile_model"]
