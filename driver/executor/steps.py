"""Run-time steps of a plan: closures over slot indexes, built once at prepare time.

A step is ``step(slots, ctx)``: it reads its inputs from the subgraph's slot list and
writes its outputs there. Static steps (every shape known at prepare time) call their
kernel and nothing else: they sit in the hot path of WHILE loops.
"""
from __future__ import annotations

import time
from typing import Callable, Optional, Sequence

from ..errors import ExecutionError, ResourceError
from ..hal.enums import ErrorStatus, LoopTimeoutDurationNs, OperationType
from ..limits import MEMORY_BUDGET_BYTES, check_shape, itemsize
from ..operations.registry import Shape
from .shapes import is_fully_known, matches_declared, merge_shapes

monotonic_ns = time.monotonic_ns

#: (position in the value list, declared shape) for each value that needs a run-time check.
InputCheck = tuple[int, Shape]

#: Where an operation sits, for messages: (subgraph name, operation index, operation type).
#: Kept as a tuple and spelt out (describe) only when a message needs it.
OperationWhere = tuple[str, int, int]

_OPERATION_NAMES = {member.value: member.name for member in OperationType}


def describe(where: OperationWhere) -> str:
    """'main subgraph, operation 3 (ADD)'."""
    name, op_index, op_type = where
    type_name = _OPERATION_NAMES.get(op_type)
    return f"{name}, operation {op_index} ({type_name if type_name is not None else op_type})"



class ExecutionContext:
    """Per-execution limits: an absolute deadline (time.monotonic_ns), the WHILE loop
    timeout, both in ns, and the memory budget. While a loop runs, ``deadline_ns`` is the
    nearer of the deadline around it and its own, and ``deadline_message`` says which, so
    that every operation of its condition and body checks both (plan.py checks after each
    step). ``held_bytes`` counts the bytes of the values the execution holds: a value is
    counted by the step that stores it and uncounted by the step after which it dies."""

    __slots__ = ("deadline_ns", "loop_timeout_ns", "deadline_message", "held_bytes",
                 "budget_bytes")

    def __init__(self, deadline_ns: Optional[int] = None,
                 loop_timeout_ns: int = LoopTimeoutDurationNs.DEFAULT,
                 budget_bytes: int = MEMORY_BUDGET_BYTES) -> None:
        self.deadline_ns = deadline_ns
        self.loop_timeout_ns = loop_timeout_ns
        self.deadline_message = "the execution deadline passed while executing"
        self.held_bytes = 0
        self.budget_bytes = budget_bytes

    def check_deadline(self) -> None:
        if self.deadline_ns is not None and monotonic_ns() > self.deadline_ns:
            raise ExecutionError(self.deadline_message, ErrorStatus.MISSED_DEADLINE_TRANSIENT)

    def reserve(self, nbytes: int, where: OperationWhere) -> None:
        """Count ``nbytes`` the operation at ``where`` is about to allocate, or fail if
        they would take the execution over its budget."""
        held = self.held_bytes + nbytes
        if held > self.budget_bytes:
            raise over_budget(where, nbytes, self)
        self.held_bytes = held


def over_budget(where: OperationWhere, nbytes: int, ctx: ExecutionContext) -> ResourceError:
    return ResourceError(f"{describe(where)}: its {nbytes} bytes of results would take the "
                         f"execution's values to {ctx.held_bytes + nbytes} bytes, over its "
                         f"budget of {ctx.budget_bytes} bytes",
                         ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT)


def make_operation_step(definition, ctx, kernel, inputs: tuple[int, ...],
                        outputs: tuple[int, ...], output_shapes: list[Shape],
                        operands: Sequence, output_operands: Sequence[int], is_static: bool,
                        where: OperationWhere) -> Callable:
    """The step of one operation; ``inputs`` and ``outputs`` are slots, ``operands`` the
    subgraph's operands and ``output_operands`` the operation's output operand indexes."""
    if is_static:
        # Every shape is known, so a tuple already.
        return _static_step(kernel, inputs, outputs, tuple(output_shapes), where)
    validate, infer = definition.validate, definition.infer_shapes
    zero_sized_inputs = definition.zero_sized_inputs
    output_itemsizes = [itemsize(operands[o].type) for o in output_operands]

    def what(k: int) -> str:
        return f"{describe(where)}, output {k} (operand {output_operands[k]})"

    def dynamic_step(slots, _ctx):
        args = [slots[i] for i in inputs]
        if not zero_sized_inputs:
            check_no_zero_sized_input(args, where)
        shapes = [None if a is None else a.shape for a in args]
        inferred = infer(ctx, shapes)
        if not all(map(is_fully_known, inferred)):
            # Shapes that follow from values known only now (a layout, multiples, a size
            # the request gives): validated and inferred with those values, so that they
            # are checked against the model and counted against the budget before the
            # kernel computes anything.
            run_ctx = ctx.at_run_time(args)
            validate(run_ctx)
            inferred = infer(run_ctx, shapes)
        expected, reserved = [], 0
        for k, shape in enumerate(inferred):
            planned = output_shapes[k]
            if planned is None:
                merged = shape
            elif shape is None or planned == shape:
                merged = planned
            else:
                merged = merge_shapes(planned, shape, what(k))
            reserved += check_shape(merged, output_itemsizes[k], what(k))
            expected.append(merged)
        _ctx.reserve(reserved, where)
        for k, value in enumerate(kernel(*args)):
            if not matches_declared(value.shape, expected[k]):
                raise ExecutionError(f"{describe(where)}, output {k} (operand {output_operands[k]}): "
                                     f"computed shape {list(value.shape)} is incompatible "
                                     f"with {list(expected[k])}")
            slots[outputs[k]] = value
            reserved -= value.nbytes
        # What inference could not size is counted once computed.
        _ctx.held_bytes -= reserved
    return dynamic_step


def check_no_zero_sized_input(args: Sequence, where: OperationWhere) -> None:
    """An operation that does not declare zero_sized_inputs fails on an input with a 0
    dimension, as the reference's does. (Only a dynamic step can meet one: a shape known at
    prepare time has no 0.)"""
    for k, value in enumerate(args):
        if value is not None and not value.size:
            raise ExecutionError(f"{describe(where)} does not take zero-sized inputs, but "
                                 f"input {k} has shape {list(value.shape)}")


def _static_step(kernel, inputs: tuple[int, ...], outputs: tuple[int, ...],
                 shapes: tuple[tuple[int, ...], ...], where: OperationWhere) -> Callable:
    # Specialised closures for the common arities: these run once per operation per loop
    # iteration, so avoiding a list comprehension and *args matters. The one check kept is
    # a tuple comparison of the result's shape with the planned one: a zero-sized result
    # can hide behind a planned shape (0 also means "unknown" in a model's dimensions).
    if len(outputs) == 1:
        out, shape = outputs[0], shapes[0]
        ufunc = getattr(kernel, "binary_ufunc", None)
        if ufunc is not None and len(inputs) >= 2:
            a, b = inputs[0], inputs[1]

            def step_ufunc(slots, _ctx):
                # The kernel's own numpy call, without the kernel around it (see
                # registry.py, binary_ufunc).
                try:
                    value = ufunc(slots[a], slots[b])
                except ValueError:
                    # Not the planned shapes after all: the kernel reports it.
                    value = kernel(*[slots[i] for i in inputs])[0]
                if value.shape != shape:
                    raise _mismatch(where, outputs, shapes, 0, value)
                slots[out] = value
            return step_ufunc
        if len(inputs) == 2:
            a, b = inputs

            def step2(slots, _ctx):
                value = kernel(slots[a], slots[b])[0]
                if value.shape != shape:
                    raise _mismatch(where, outputs, shapes, 0, value)
                slots[out] = value
            return step2
        if len(inputs) == 3:
            a, b, c = inputs

            def step3(slots, _ctx):
                value = kernel(slots[a], slots[b], slots[c])[0]
                if value.shape != shape:
                    raise _mismatch(where, outputs, shapes, 0, value)
                slots[out] = value
            return step3
        if len(inputs) == 1:
            (a,) = inputs

            def step1(slots, _ctx):
                value = kernel(slots[a])[0]
                if value.shape != shape:
                    raise _mismatch(where, outputs, shapes, 0, value)
                slots[out] = value
            return step1

        def step_n(slots, _ctx):
            value = kernel(*[slots[i] for i in inputs])[0]
            if value.shape != shape:
                raise _mismatch(where, outputs, shapes, 0, value)
            slots[out] = value
        return step_n

    def step_multi(slots, _ctx):
        for k, (slot, value) in enumerate(zip(outputs, kernel(*[slots[i] for i in inputs]))):
            if value.shape != shapes[k]:
                raise _mismatch(where, outputs, shapes, k, value)
            slots[slot] = value
    return step_multi


def _mismatch(where: OperationWhere, outputs: tuple[int, ...],
              shapes: tuple[tuple[int, ...], ...], k: int, value) -> ExecutionError:
    return ExecutionError(f"{describe(where)}, output {k} (operand slot {outputs[k]}): "
                          f"computed shape {list(value.shape)} differs from the planned "
                          f"{list(shapes[k])}")


def make_input_checks(where: str, declared: Sequence[Shape],
                      entering: Sequence[Shape]) -> list[InputCheck]:
    """Checks for values entering a subgraph: none where the entering value's static shape
    already satisfies the declared one."""
    # None where the rank is unknown (anything may enter), nor where every dimension the
    # subgraph fixes is already guaranteed.
    return [(position, inner) for position, (inner, outer) in enumerate(zip(declared, entering))
            if inner is not None and not (
                outer is not None and len(outer) == len(inner)
                and all([i == 0 or o == i for o, i in zip(outer, inner)]))]


def verify_values(values: list, checks: list[InputCheck], where: str) -> None:
    for position, declared in checks:
        value = values[position]
        if value is not None and not matches_declared(value.shape, declared):
            raise ExecutionError(f"{where}: value {position} has shape {list(value.shape)}, "
                                 f"incompatible with the subgraph's declared {list(declared)}")


def _store_outputs(slots, outputs, values, declared, where: str) -> None:
    for k, (slot, value) in enumerate(zip(outputs, values)):
        if not matches_declared(value.shape, declared[k]):
            raise ExecutionError(f"{where}, output {k} (operand {slot}): shape "
                                 f"{list(value.shape)} is incompatible with declared "
                                 f"{list(declared[k])}")
        slots[slot] = value


def _condition_value(value, where: str) -> bool:
    if value is None or value.size != 1:
        raise ExecutionError(f"{where}: condition must hold exactly one TENSOR_BOOL8 value, got "
                             f"shape {None if value is None else list(value.shape)}")
    return bool(value.item())      # its one element, whatever the shape


def _check_present(values: list, required, where: str, subgraph: str = "") -> None:
    """Values a subgraph needs must exist: an omitted (NO_VALUE) operand handed to IF or
    WHILE fails the execution when the subgraph uses it."""
    for position in required:
        if values[position] is None:
            raise ExecutionError(f"{where}{', ' if subgraph else ''}{subgraph}: input {position} "
                                 f"has no value, but the subgraph uses it")


def make_if_step(where: str, cond: int, data: tuple[int, ...], outputs: tuple[int, ...],
                 then_plan, else_plan, then_checks, else_checks,
                 declared_outputs: list[Shape]) -> Callable:
    def if_step(slots, ctx):
        values = [slots[i] for i in data]
        if _condition_value(slots[cond], where):
            plan, checks = then_plan, then_checks
        else:
            plan, checks = else_plan, else_checks
        if checks:
            verify_values(values, checks, f"{where}, {plan.name}")
        _check_present(values, plan.required_inputs, where, plan.name)
        branch = plan.run(values, ctx)
        results = [branch[i] for i in plan.output_slots]
        _store_outputs(slots, outputs, results, declared_outputs, where)
        _count_aliases(ctx, results, plan.uncounted_outputs)
    return if_step


def _count_aliases(ctx: ExecutionContext, values: list, positions: Sequence[int]) -> None:
    """Count the values a step stores that no operation computed for it (a subgraph's
    input or constant passed through as its output): the step's output slots count what
    they hold, and uncount it when they die."""
    for position in positions:
        ctx.held_bytes += values[position].nbytes


def make_while_step(where: str, data: tuple[int, ...], outputs: tuple[int, ...], m: int,
                    loop_carried: int, cond_plan, body_plan, cond_checks, body_checks,
                    declared_outputs: list[Shape]) -> Callable:
    cond_name, body_name = f"{where}, {cond_plan.name}", f"{where}, {body_plan.name}"
    # run_slots on a fresh list rather than run: one call less per subgraph run.
    run_cond, run_body = cond_plan.run_slots, body_plan.run_slots
    cond_tail, body_tail = cond_plan.tail, body_plan.tail
    cond_slot = cond_plan.output_slots[0]
    cond_static = cond_plan.static[cond_plan.output_operands[0]]
    cond_is_one = cond_static is not None and tuple(cond_static) == (1,)
    body_slots = body_plan.output_slots
    single_body_slot = body_slots[0] if len(body_slots) == 1 else None

    # Loop-carried values are replaced by body outputs, which always exist: only the values
    # entering the loop can be missing.
    required = sorted(cond_plan.required_inputs | body_plan.required_inputs)

    # Each operation of the condition and body checks the deadline (plan.py); a loop whose
    # condition or body has no operation checks it between iterations instead.
    checks_between_iterations = not (cond_plan.steps and body_plan.steps)

    # The condition's value is counted when computed and dropped once read. The body's
    # computed outputs are counted by the body; from the second iteration on, the values
    # they replace were the previous iteration's, and are uncounted.
    cond_counted = not cond_plan.uncounted_outputs
    body_counted = [j for j in range(loop_carried) if j not in body_plan.uncounted_outputs]

    def while_step(slots, ctx):
        state = [slots[i] for i in data]
        counted = ()     # positions of state whose value this loop counted
        _check_present(state, required, where)
        outer = ctx.deadline_ns, ctx.deadline_message
        loop_deadline = monotonic_ns() + ctx.loop_timeout_ns
        if ctx.deadline_ns is None or loop_deadline < ctx.deadline_ns:
            ctx.deadline_ns = loop_deadline
            ctx.deadline_message = (f"{where}: the loop ran longer than its timeout of "
                                    f"{ctx.loop_timeout_ns} ns")
        try:
            while True:
                if cond_checks:
                    verify_values(state, cond_checks, cond_name)
                flag = run_cond(state + cond_tail, ctx)[cond_slot]
                if cond_counted:
                    ctx.held_bytes -= flag.nbytes
                if not (flag[0] if cond_is_one else _condition_value(flag, cond_name)):
                    break
                if checks_between_iterations:
                    ctx.check_deadline()
                if body_checks:
                    verify_values(state, body_checks, body_name)
                body = run_body(state + body_tail, ctx)
                if single_body_slot is not None:
                    if counted:
                        ctx.held_bytes -= state[0].nbytes
                    state[0] = body[single_body_slot]
                    counted = body_counted
                else:
                    for j in counted:
                        ctx.held_bytes -= state[j].nbytes
                    state[:loop_carried] = [body[i] for i in body_slots]
                    counted = body_counted
        finally:
            ctx.deadline_ns, ctx.deadline_message = outer
        _store_outputs(slots, outputs, state[:m], declared_outputs, where)
        # The output slots take over the count of the first m values; the other
        # loop-carried values are dropped here.
        for j in counted:
            if j >= m:
                ctx.held_bytes -= state[j].nbytes
        _count_aliases(ctx, state, [j for j in range(m) if j not in counted])
    return while_step
