"""Run-time steps of a plan: closures over slot indexes, built once at prepare time.

A step is ``step(slots, ctx)``: it reads its inputs from the subgraph's slot list and
writes its outputs there. Every operation runs through one step (make_operation_step);
IF and WHILE have theirs. The bytes the values hold are counted by a Budget.
"""
from __future__ import annotations

import time
from operator import itemgetter
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


class Budget:
    """The bytes the values of one execution hold, against the most they may hold: a step's
    results are reserved before its kernel computes them (refused past the limit), and a
    value is released after the last step that reads it."""

    __slots__ = ("held_bytes", "limit_bytes")

    def __init__(self, limit_bytes: int) -> None:
        self.held_bytes = 0
        self.limit_bytes = limit_bytes

    def hold_inputs(self, values: list, name: str) -> None:
        """The execution of the subgraph ``name`` starts holding its input values, or fails
        if they are over the budget already."""
        self.held_bytes = sum(value.nbytes for value in values if value is not None)
        if self.held_bytes > self.limit_bytes:
            raise ResourceError(f"{name}: the inputs take {self.held_bytes} bytes, over the "
                                f"execution's budget of {self.limit_bytes} bytes",
                                ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT)

    def reserve(self, nbytes: int, where: OperationWhere) -> None:
        """Count the ``nbytes`` of results the operation at ``where`` is about to compute,
        or fail if they would take the execution over its budget."""
        held = self.held_bytes + nbytes
        if held > self.limit_bytes:
            raise ResourceError(f"{describe(where)}: its {nbytes} bytes of results would take "
                                f"the execution's values to {held} bytes, over its budget of "
                                f"{self.limit_bytes} bytes",
                                ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT)
        self.held_bytes = held

    def count(self, nbytes: int) -> None:
        """Count bytes a slot holds that no reservation covered (negative: bytes one
        covered that no value took): a subgraph's input or constant passed on as its output,
        results of sizes inference could not tell. Nothing is allocated here, so nothing is
        refused."""
        self.held_bytes += nbytes

    def release(self, nbytes: int) -> None:
        self.held_bytes -= nbytes


class ExecutionContext:
    """Per-execution limits: an absolute deadline (time.monotonic_ns), the WHILE loop
    timeout, both in ns, and the memory budget. While a loop runs, ``deadline_ns`` is the
    nearer of the deadline around it and its own, and ``deadline_message`` says which, so
    that every operation of its condition and body checks both (plan.py checks after each
    step)."""

    __slots__ = ("deadline_ns", "loop_timeout_ns", "deadline_message", "budget")

    def __init__(self, deadline_ns: Optional[int] = None,
                 loop_timeout_ns: int = LoopTimeoutDurationNs.DEFAULT,
                 budget_bytes: int = MEMORY_BUDGET_BYTES) -> None:
        self.deadline_ns = deadline_ns
        self.loop_timeout_ns = loop_timeout_ns
        self.deadline_message = "the execution deadline passed while executing"
        self.budget = Budget(budget_bytes)

    def check_deadline(self) -> None:
        if self.deadline_ns is not None and monotonic_ns() > self.deadline_ns:
            raise ExecutionError(self.deadline_message, ErrorStatus.MISSED_DEADLINE_TRANSIENT)


def make_operation_step(definition, op_ctx, kernel, inputs: tuple[int, ...],
                        outputs: tuple[int, ...], output_shapes: list[Shape],
                        operands: Sequence, output_operands: Sequence[int], is_static: bool,
                        where: OperationWhere) -> Callable:
    """The step of an operation, the one way a planned operation runs: its kernel on the
    values of its input slots, each result checked against the shape expected of it and
    stored in its output slot. ``inputs`` and ``outputs`` are slots, ``operands`` the
    subgraph's operands and ``output_operands`` the operation's output operand indexes.

    A static step (every shape known ahead) expects the planned shapes, whose bytes the
    plan reserves before the step; the check on its results is then a tuple comparison, kept
    because a zero-sized result can hide behind a planned shape (0 also means "unknown" in
    a model's dimensions). Any other step sizes its results before its kernel runs
    (run_time_sizes) and counts what the sizes missed once they are computed."""
    fetch = values_at(inputs)
    size = None if is_static else run_time_sizes(definition, op_ctx, output_shapes, operands,
                                                  output_operands, where)
    sizes_ahead = (tuple(output_shapes), 0)
    positions = tuple(range(len(outputs)))
    # A kernel that is one binary ufunc of its first two inputs is called as that ufunc
    # where its shapes are known ahead (registry.py, with_binary_ufunc), which gives its one
    # result alone: the kernel, still the authority, reports what the ufunc refuses.
    ufunc = getattr(kernel, "binary_ufunc", None) if is_static else None

    def step(slots, ctx):
        args = fetch(slots)
        expected, reserved = sizes_ahead if size is None else size(args, ctx.budget)
        if ufunc is None:
            results = kernel(*args)
        else:
            try:
                results = (ufunc(args[0], args[1]),)
            except ValueError:
                results = kernel(*args)
        for k in positions:
            value = results[k]
            if value.shape != expected[k] and not matches_declared(value.shape, expected[k]):
                raise ExecutionError(f"{describe(where)}, output {k} (operand "
                                     f"{output_operands[k]}): computed shape "
                                     f"{list(value.shape)} is incompatible with "
                                     f"{list(expected[k])}")
            slots[outputs[k]] = value
        if size is not None:
            ctx.budget.count(sum([value.nbytes for value in results]) - reserved)
    return step


def values_at(slots: tuple[int, ...]) -> Callable[[list], Sequence]:
    """The values of ``slots`` in a slot list, read by one C call: a plan's steps do this
    for every operation of every loop iteration. (itemgetter of one index gives the value
    itself, so one slot is read as a slice.)"""
    if len(slots) == 1:
        return itemgetter(slice(slots[0], slots[0] + 1))
    return itemgetter(*slots)


def run_time_sizes(definition, op_ctx, planned: list[Shape], operands: Sequence,
                   output_operands: Sequence[int], where: OperationWhere) -> Callable:
    """``size(args, budget)``: the shapes expected of the results of an operation whose
    shapes are not all known ahead, given its arguments, and the bytes reserved for them.
    They are inferred from the actual shapes; where those leave a shape unknown (it follows
    from a value: a layout, multiples, a size the request gives), validated and inferred
    again with the run's values, so that they are checked against the model, the limits
    and the budget before the kernel computes anything."""
    validate, infer = definition.validate, definition.infer_shapes
    zero_sized_inputs = definition.zero_sized_inputs
    output_itemsizes = [itemsize(operands[o].type) for o in output_operands]

    def size(args: Sequence, budget: Budget) -> tuple[list[Shape], int]:
        if not zero_sized_inputs:
            check_no_zero_sized_input(args, where)
        shapes = [None if a is None else a.shape for a in args]
        inferred = infer(op_ctx, shapes)
        if not all(map(is_fully_known, inferred)):
            run_ctx = op_ctx.at_run_time(args)
            validate(run_ctx)
            inferred = infer(run_ctx, shapes)
        expected, reserved = [], 0
        for k, shape in enumerate(inferred):
            what = f"{describe(where)}, output {k} (operand {output_operands[k]})"
            expected.append(merge_shapes(planned[k], shape, what))
            reserved += check_shape(expected[k], output_itemsizes[k], what)
        budget.reserve(reserved, where)
        return expected, reserved
    return size


def check_no_zero_sized_input(args: Sequence, where: OperationWhere) -> None:
    """An operation that does not declare zero_sized_inputs fails on an input with a 0
    dimension, as the reference's does. (Only a step that is not static can meet one: a
    shape known at prepare time has no 0.)"""
    for k, value in enumerate(args):
        if value is not None and not value.size:
            raise ExecutionError(f"{describe(where)} does not take zero-sized inputs, but "
                                 f"input {k} has shape {list(value.shape)}")


def make_input_checks(where: str, declared: Sequence[Shape],
                      entering: Sequence[Shape]) -> list[InputCheck]:
    """Checks for values entering a subgraph: none where the declared rank is unknown
    (anything may enter), nor where the entering value's static shape already guarantees
    every dimension the subgraph fixes."""
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
        _count_aliases(ctx.budget, results, plan.uncounted_outputs)
    return if_step


def _count_aliases(budget: Budget, values: list, positions: Sequence[int]) -> None:
    """Count the values a step stores that no operation computed for it (a subgraph's
    input or constant passed through as its output): the step's output slots count what
    they hold, and uncount it when they die."""
    for position in positions:
        budget.count(values[position].nbytes)


def make_while_step(where: str, data: tuple[int, ...], outputs: tuple[int, ...], m: int,
                    loop_carried: int, cond_plan, body_plan, cond_checks, body_checks,
                    declared_outputs: list[Shape]) -> Callable:
    cond_name, body_name = f"{where}, {cond_plan.name}", f"{where}, {body_plan.name}"
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
    # they replace were the previous iteration's, and are released.
    cond_counted = not cond_plan.uncounted_outputs
    body_counted = [j for j in range(loop_carried) if j not in body_plan.uncounted_outputs]

    # A condition and body whose results all have sizes known ahead reserve and release the
    # same bytes in every iteration: once one iteration has ended holding what it began
    # with, each later one would too, within the budget as that one was, so they run
    # uncounted (budget None).
    fixed = cond_plan.fixed and body_plan.fixed

    def while_step(slots, ctx):
        state = [slots[i] for i in data]
        counted = ()     # positions of state whose value this loop counted
        _check_present(state, required, where)
        budget = ctx.budget
        outer = ctx.deadline_ns, ctx.deadline_message
        loop_deadline = monotonic_ns() + ctx.loop_timeout_ns
        if ctx.deadline_ns is None or loop_deadline < ctx.deadline_ns:
            ctx.deadline_ns = loop_deadline
            ctx.deadline_message = (f"{where}: the loop ran longer than its timeout of "
                                    f"{ctx.loop_timeout_ns} ns")
        try:
            while True:
                if budget is not None:
                    began = budget.held_bytes
                if cond_checks:
                    verify_values(state, cond_checks, cond_name)
                flag = run_cond(state + cond_tail, ctx, budget)[cond_slot]
                if cond_counted and budget is not None:
                    budget.release(flag.nbytes)
                # A [1] flag is true as its one element is.
                if not (flag if cond_is_one else _condition_value(flag, cond_name)):
                    break
                if checks_between_iterations:
                    ctx.check_deadline()
                if body_checks:
                    verify_values(state, body_checks, body_name)
                body = run_body(state + body_tail, ctx, budget)
                if budget is not None:
                    for j in counted:
                        budget.release(state[j].nbytes)
                    if fixed and budget.held_bytes == began:
                        budget = None
                if single_body_slot is not None:
                    state[0] = body[single_body_slot]
                else:
                    state[:loop_carried] = [body[i] for i in body_slots]
                counted = body_counted
        finally:
            ctx.deadline_ns, ctx.deadline_message = outer
        _store_outputs(slots, outputs, state[:m], declared_outputs, where)
        # The output slots take over the count of the first m values; the other
        # loop-carried values are dropped here.
        for j in counted:
            if j >= m:
                ctx.budget.release(state[j].nbytes)
        _count_aliases(ctx.budget, state, [j for j in range(m) if j not in counted])
    return while_step
