"""Compiling a validated Model into an execution plan, once, at prepare time.

A plan has one SubgraphPlan per subgraph: a slot per operand (constants pre-filled), the
steps in execution order (bound kernels, IF, WHILE) and the input/output slots. Shapes are
propagated statically here; a step whose shapes are all known ahead runs its kernel and
nothing else, the others re-infer their shapes at run time.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..errors import ValidationError
from ..hal.enums import SCALAR_OPERAND_TYPES, OperandLifeTime, OperationType
from ..hal.structs import Model, Operand, Subgraph
from ..operands import ModelInfos, constant_value, operand_info
from ..operations.registry import (OperandInfo, OperationContext, OperationDef, lookup,
                                   supported_types)
from .shapes import (MAX_VALUE_BYTES, is_fully_known, merge_shapes, value_nbytes,
                     value_too_large)
from .steps import (InputCheck, OperationWhere, describe, make_if_step, make_input_checks,
                    make_operation_step, make_while_step)

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


def compile_model(model: Model, *, build_steps: bool = True,
                  infos: Optional[ModelInfos] = None) -> ModelAnalysis:
    """Analyse (and, with build_steps, compile) a model that validate_model accepted.

    ``infos`` are the OperandInfo views validation made for this model (or for one of the
    same content: an OperandInfo holds no reference into the client's model), per
    subgraph; compiling reuses them rather than copying the constants again, and makes any
    missing one.

    Raises ValidationError when shapes are inconsistent and ResourceError when a value
    would be too large. Subgraphs are compiled callee-first so IF/WHILE steps can bind the
    plans of the subgraphs they reference.
    """
    if not model.referenced:
        # Nothing to order (most models): the main subgraph alone, which then names no
        # subgraph (validation checks every SUBGRAPH operand's index).
        plan, supported = _compile_subgraph(model, model.main, 0, _NO_PLANS, _NO_PLANS,
                                            build_steps, _NO_PLANS,
                                            None if infos is None else infos[0])
        return ModelAnalysis(plans=[plan], supported=[supported])
    subgraphs = [model.main, *model.referenced]
    lifetimes = [[operand.lifetime for operand in subgraph.operands] for subgraph in subgraphs]
    callees = list(map(_callees, subgraphs, lifetimes))
    plans: list[Optional[SubgraphPlan]] = [None] * len(subgraphs)
    supported: list[list[bool]] = [[] for _ in subgraphs]
    depths = [0] * len(subgraphs)
    for index in _callee_first_order(callees):
        callee_depths = [depths[c] for c in callees[index]]
        depths[index] = 1 + max(callee_depths) if callee_depths else 1
        plans[index], supported[index] = _compile_subgraph(
            model, subgraphs[index], index, plans, supported, build_steps, depths,
            None if infos is None else infos[index], lifetimes[index])
    return ModelAnalysis(plans=plans, supported=supported)


_NO_PLANS: list = []


def _callees(subgraph: Subgraph, lifetimes: list) -> list[int]:
    """Plan indexes (1 + index into Model.referenced) of the subgraphs a subgraph names;
    ``lifetimes`` are its operands' lifetimes."""
    if _SUBGRAPH not in lifetimes:
        return []
    operands = subgraph.operands
    return [operands[i].location.offset + 1
            for i, lifetime in enumerate(lifetimes) if lifetime == _SUBGRAPH]


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


# Plain ints: comparing an operand's lifetime or an operation's type with an IntEnum
# member costs more than with an int.
_SUBGRAPH = int(OperandLifeTime.SUBGRAPH)
_NO_VALUE = int(OperandLifeTime.NO_VALUE)
#: Lifetimes whose slots hold a value before a run starts (see _initial_value).
_PREFILLED_LIFETIMES = frozenset({int(OperandLifeTime.CONSTANT_COPY),
                                  int(OperandLifeTime.CONSTANT_REFERENCE), _SUBGRAPH})
_CONTROL_FLOW_TYPES = frozenset(map(int, CONTROL_FLOW))
_IF = int(OperationType.IF)

#: The registered operations by type, read from the registry at the first compile: a dict
#: lookup per operation instead of a call. A type missing here is asked of the registry
#: (which answers None for a type it does not implement), so the table stays bounded.
_DEFINITIONS: dict[int, OperationDef] = {}


def _definitions() -> dict[int, OperationDef]:
    if not _DEFINITIONS:
        _DEFINITIONS.update((t, lookup(t)) for t in supported_types())
    return _DEFINITIONS


def _compile_subgraph(model: Model, subgraph: Subgraph, index: int, plans: list,
                      supported_by_subgraph: list, build_steps: bool, depths: list[int],
                      known_infos: Optional[Sequence[Optional[OperandInfo]]] = None,
                      lifetimes: Optional[list] = None):
    name = subgraph_name(index)
    operands = subgraph.operands
    count = len(operands)
    if lifetimes is None:
        lifetimes = [operand.lifetime for operand in operands]
    declared = [() if operand.type in SCALAR_OPERAND_TYPES
                else tuple(operand.dimensions) if operand.dimensions else None
                for operand in operands]
    static = list(declared)
    inputs = list(subgraph.inputIndexes)
    position_of = {operand: position for position, operand in enumerate(inputs)}
    if len(position_of) != len(inputs):
        raise ValidationError(f"{name}: an operand is listed twice as an input")
    # Slots: the inputs first, then every other operand in index order. Most subgraphs
    # list their first operands as inputs, in order: slots are then operand indexes.
    identity = inputs == list(range(len(inputs)))
    if identity:
        slot_of = list(range(count))
    else:
        order = inputs + [i for i in range(count) if i not in position_of]
        slot_of = [0] * count
        for slot, operand_index in enumerate(order):
            slot_of[operand_index] = slot
    outputs = tuple(subgraph.outputIndexes)
    # Positional arguments, in field order: keywords cost more.
    plan = SubgraphPlan(name, slot_of, [], tuple(inputs), outputs,
                        outputs if identity else tuple([slot_of[i] for i in outputs]),
                        declared, static)
    steps = plan.steps
    # OperandInfo views are needed only for operands that operations read or write (an
    # operand that only enters IF/WHILE, or nothing, is never looked at by an operation):
    # validation made exactly those; any missing one is made here.
    infos: list = [None] * count if known_infos is None else list(known_infos)
    relaxed = model.relaxComputationFloat32toFloat16
    has_omitted = _NO_VALUE in lifetimes
    definitions = _DEFINITIONS or _definitions()
    required: set[int] = set()
    supported: list[bool] = []
    for op_index, operation in enumerate(subgraph.operations):
        op_type = operation.type
        op_inputs = operation.inputs
        if op_type in _CONTROL_FLOW_TYPES:
            ok = _control_flow_supported(operation, operands, lifetimes, supported_by_subgraph,
                                         depths)
            supported.append(ok)
            # Values passed on to IF/WHILE count as required.
            required.update([position_of[i] for i in op_inputs if i in position_of])
            if ok and build_steps:
                steps.append(_control_flow_step(operation, plan, operands, plans,
                                                describe((name, op_index, op_type))))
            continue
        definition = definitions.get(op_type)
        if definition is None:
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
        op_outputs = operation.outputs
        in_infos = tuple([infos[i] for i in op_inputs])
        out_infos = tuple([infos[i] for i in op_outputs])
        if not (all(in_infos) and all(out_infos)):
            for i in (*op_inputs, *op_outputs):
                if infos[i] is None:
                    infos[i] = operand_info(model, subgraph, i)
            in_infos = tuple([infos[i] for i in op_inputs])
            out_infos = tuple([infos[i] for i in op_outputs])
        # The shapes inference gets (None for an omitted input), and whether every present
        # input's shape is known ahead.
        if has_omitted:
            in_shapes = [None if lifetimes[i] == _NO_VALUE else static[i] for i in op_inputs]
            present = [static[i] for i in op_inputs if lifetimes[i] != _NO_VALUE]
        else:
            in_shapes = present = [static[i] for i in op_inputs]
        is_static = True
        for shape in present:
            if shape is None or shape and min(shape) <= 0:
                is_static = False
                break
        where = (name, op_index, op_type)
        ctx = OperationContext(definition.type, op_index, in_infos, out_infos, relaxed)
        inferred = definition.infer_shapes(ctx, in_shapes)
        if len(inferred) != len(op_outputs):
            raise ValidationError(f"{describe(where)}: shape inference gave {len(inferred)} "
                                  f"shapes for {len(op_outputs)} outputs")
        output_shapes = []
        for k, out in enumerate(op_outputs):
            # The declared shape merged with the inferred one, refused when too large. The
            # common cases (equal shapes, nothing declared) take no merging.
            shape = declared[out]
            found = inferred[k]
            if shape is None:
                shape = found
            elif found is not None and shape != found:
                shape = merge_shapes(shape, found, _output_what(where, k, out))
            if shape is None:
                is_static = False
            else:
                nbytes = value_nbytes(operands[out].type, shape)
                if nbytes > MAX_VALUE_BYTES:
                    raise value_too_large(_output_what(where, k, out), shape, nbytes)
                if shape and min(shape) <= 0:
                    is_static = False
            static[out] = shape
            output_shapes.append(shape)
        if build_steps:
            if identity:
                in_slots, out_slots = tuple(op_inputs), tuple(op_outputs)
            else:
                in_slots = tuple([slot_of[i] for i in op_inputs])
                out_slots = tuple([slot_of[o] for o in op_outputs])
            steps.append(make_operation_step(definition, ctx, definition.build(ctx), in_slots,
                                             out_slots, output_shapes, operands, op_outputs,
                                             is_static, where))
    # A run starts from ``inputs + tail``: constants and referenced plans pre-filled.
    first = len(inputs)
    tail = [None] * (count - first)
    if not _PREFILLED_LIFETIMES.isdisjoint(lifetimes):
        for i, lifetime in enumerate(lifetimes):
            if lifetime in _PREFILLED_LIFETIMES and i not in position_of:
                tail[slot_of[i] - first] = _initial_value(model, operands[i], lifetime, infos[i])
    plan.tail = tail
    plan.required_inputs = frozenset(required)
    plan.finalize()
    return plan, supported


_NO_OPTIONAL_INPUTS: frozenset[int] = frozenset()


def _output_what(where: OperationWhere, k: int, operand_index: int) -> str:
    return f"{describe(where)}, output {k} (operand {operand_index})"


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
    outputs = tuple([slot_of[o] for o in operation.outputs])
    declared_outputs = [plan.declared[o] for o in operation.outputs]
    if operation.type == _IF:
        cond, then_ref, else_ref, *data = operation.inputs
        then_plan, else_plan = plans[_plan_index(operands, then_ref)], plans[_plan_index(operands, else_ref)]
        data_static = [outer_static[i] for i in data]
        return make_if_step(
            where, slot_of[cond], tuple([slot_of[i] for i in data]), outputs, then_plan, else_plan,
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
        where, tuple([slot_of[i] for i in data]), outputs, len(operation.outputs), loop_carried,
        cond_plan, body_plan, cond_plan.input_checks(entering), body_plan.input_checks(entering),
        declared_outputs)


def _plan_index(operands: list[Operand], operand_index: int) -> int:
    return operands[operand_index].location.offset + 1


__all__ = ["SubgraphPlan", "ModelAnalysis", "compile_model", "subgraph_name"]
