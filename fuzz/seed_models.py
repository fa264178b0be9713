"""Hand-written seed models: control flow the fuzzer should start from (IF on both branches,
nested IF/WHILE, loop-carried, state-only and input-only operands, a loop whose carried
tensor grows, a loop that must time out, operations run inside IF branches and WHILE
bodies), plus one small model per operation family the driver implements, so that a corpus
can be grown from the project's own models alone.

Each seed is a function returning a :class:`fuzz.codec.CaseSpec`; ``SEEDS`` maps a name to
it and ``seed_cases()`` lowers them all. Values that decide control flow (loop bounds, IF
conditions) are literal so they are reproduced exactly; bulk data is generated from seeds.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from driver.hal import OperandLifeTime as L, OperandType as T, Operation
from driver.hal import OperationType as Op
from driver.operations.common import STORAGE_DTYPE

from .case import ExecutionChoices, ExecutionPath, FuzzCase
from .codec import (ArgumentSpec, BlobSpec, CaseSpec, ModelSpec, OperandSpec, RequestPoolSpec,
                    RequestSpec, SubgraphSpec, ValueKind, ValueSpec, lower)

#: Every seed bounds its loops: a loop that never ends costs this much, not the 2 s default.
SEED_LOOP_TIMEOUT_NS = 5_000_000

BOOL8_1 = (T.TENSOR_BOOL8, [1])
INT32_1 = (T.TENSOR_INT32, [1])


def literal(operand_type: int, values) -> ValueSpec:
    """The exact bytes of ``values`` stored as ``operand_type``."""
    array = np.asarray(values, dtype=STORAGE_DTYPE[operand_type])
    return ValueSpec(ValueKind.LITERAL, data=array.astype(array.dtype.newbyteorder("<")).tobytes())


def generated(seed: int) -> ValueSpec:
    return ValueSpec(ValueKind.GENERATED, seed)


@dataclass
class GraphBuilder:
    """Builds one subgraph spec; operand indexes are returned as they are added."""
    spec: SubgraphSpec = field(default_factory=SubgraphSpec)

    def operand(self, operand_type: int, dims: Sequence[int] = (),
                lifetime: int = L.TEMPORARY_VARIABLE, *, scale: float = 0.0,
                zero_point: int = 0, value: ValueSpec | None = None, target: int = 0) -> int:
        self.spec.operands.append(OperandSpec(
            operand_type, list(dims), scale, zero_point, lifetime, target=target,
            value=value or ValueSpec()))
        return len(self.spec.operands) - 1

    def input(self, operand_type: int, dims: Sequence[int] = (), **kw) -> int:
        index = self.operand(operand_type, dims, L.SUBGRAPH_INPUT, **kw)
        self.spec.inputIndexes.append(index)
        return index

    def output(self, operand_type: int, dims: Sequence[int] = (), **kw) -> int:
        index = self.operand(operand_type, dims, L.SUBGRAPH_OUTPUT, **kw)
        self.spec.outputIndexes.append(index)
        return index

    def temp(self, operand_type: int, dims: Sequence[int] = (), **kw) -> int:
        return self.operand(operand_type, dims, L.TEMPORARY_VARIABLE, **kw)

    def const(self, operand_type: int, dims: Sequence[int], values, **kw) -> int:
        return self.operand(operand_type, dims, L.CONSTANT_COPY,
                            value=literal(operand_type, values), **kw)

    def const_ref(self, operand_type: int, dims: Sequence[int], value: ValueSpec,
                  pool: int = 0, **kw) -> int:
        return self.operand(operand_type, dims, L.CONSTANT_REFERENCE, value=value,
                            target=pool, **kw)

    def int32(self, value: int) -> int:
        return self.const(T.INT32, [], value)

    def subgraph(self, index: int) -> int:
        """A SUBGRAPH operand naming Model.referenced[index - 1]; ``index`` counts main as 0,
        as ModelBuilder.add does."""
        return self.operand(T.SUBGRAPH, [], L.SUBGRAPH, target=index - 1)

    def op(self, operation_type: int, inputs: Sequence[int], outputs: Sequence[int]) -> None:
        self.spec.operations.append(Operation(operation_type, list(inputs), list(outputs)))


@dataclass
class ModelBuilder:
    main: GraphBuilder = field(default_factory=GraphBuilder)
    referenced: list[GraphBuilder] = field(default_factory=list)
    pools: list[BlobSpec] = field(default_factory=list)
    relaxed: bool = False

    def add(self) -> tuple[int, GraphBuilder]:
        """A new referenced subgraph and its number (1 for the first; main is 0)."""
        self.referenced.append(GraphBuilder())
        return len(self.referenced), self.referenced[-1]

    def case(self, inputs: Sequence[ValueSpec | None], *, output_sizes: Sequence[int] = (),
             choices: ExecutionChoices | None = None) -> CaseSpec:
        """The case feeding ``inputs`` (None: hasNoValue) to main; all arguments share one
        request pool. ``output_sizes`` gives buffer sizes for outputs of unknown shape."""
        main = self.main.spec
        args = [ArgumentSpec(hasNoValue=True) if v is None else ArgumentSpec(value=v)
                for v in inputs]
        outputs = []
        for i, _ in enumerate(main.outputIndexes):
            size = output_sizes[i] if i < len(output_sizes) else 0
            outputs.append(ArgumentSpec(size_delta=size))
        model = ModelSpec(main, [g.spec for g in self.referenced], [], list(self.pools),
                          self.relaxed)
        return CaseSpec(model, RequestSpec(args, outputs, [RequestPoolSpec()]),
                        choices or ExecutionChoices(loopTimeoutDuration_ns=SEED_LOOP_TIMEOUT_NS))


def _choices(path: ExecutionPath = ExecutionPath.SYNC, **kw) -> ExecutionChoices:
    kw.setdefault("loopTimeoutDuration_ns", SEED_LOOP_TIMEOUT_NS)
    return ExecutionChoices(path=path, **kw)


# --- control-flow building blocks ----------------------------------------------------------

def _counter_cond(m: ModelBuilder, acc_dims: Sequence[int] = (2,),
                  comparison: int = Op.LESS, acc_type: int = T.TENSOR_FLOAT32) -> int:
    """cond(i, n, acc): i <comparison> n, for the loops of _accumulate_body."""
    number, g = m.add()
    i = g.input(*INT32_1)
    n = g.input(*INT32_1)
    g.input(acc_type, acc_dims)
    out = g.output(*BOOL8_1)
    g.op(comparison, [i, n], [out])
    return number


def _accumulate_body(m: ModelBuilder, operand_type: int = T.TENSOR_FLOAT32,
                     dims: Sequence[int] = (2,), operation: int = Op.MUL) -> int:
    """body(i, n, acc) -> (i + 1, n, acc <operation> acc)."""
    number, g = m.add()
    i = g.input(*INT32_1)
    n = g.input(*INT32_1)
    acc = g.input(operand_type, dims)
    i_next = g.output(*INT32_1)
    n_next = g.output(*INT32_1)
    acc_next = g.output(operand_type, dims)
    g.op(Op.ADD, [i, g.const(*INT32_1, [1]), g.int32(0)], [i_next])
    g.op(Op.ADD, [n, g.const(*INT32_1, [0]), g.int32(0)], [n_next])
    g.op(operation, [acc, acc, g.int32(0)], [acc_next])
    return number


# --- seeds ---------------------------------------------------------------------------------

def if_branches(cond_value: bool, operand_type: int = T.TENSOR_FLOAT32,
                path: ExecutionPath = ExecutionPath.SYNC) -> CaseSpec:
    """IF on a request-fed condition: then adds 10, else subtracts 10."""
    m = ModelBuilder()
    branches = []
    for operation in (Op.ADD, Op.SUB):
        number, g = m.add()
        x = g.input(operand_type, [3, 4])
        out = g.output(operand_type, [3, 4])
        g.op(operation, [x, g.const(operand_type, [1], [10]), g.int32(0)], [out])
        branches.append(number)
    g = m.main
    cond = g.input(*BOOL8_1)
    x = g.input(operand_type, [3, 4])
    out = g.output(operand_type, [3, 4])
    g.op(Op.IF, [cond, g.subgraph(branches[0]), g.subgraph(branches[1]), x], [out])
    return m.case([literal(T.TENSOR_BOOL8, [cond_value]), generated(1)], choices=_choices(path))


def if_constant_condition() -> CaseSpec:
    """IF whose condition is a constant, with the branch outputs of unknown shape."""
    m = ModelBuilder()
    branches = []
    for operation in (Op.MUL, Op.DIV):
        number, g = m.add()
        x = g.input(T.TENSOR_FLOAT32, [2, 2])
        y = g.input(T.TENSOR_FLOAT32, [2, 2])
        out = g.output(T.TENSOR_FLOAT32, [0, 0])
        g.op(operation, [x, y, g.int32(1)], [out])
        branches.append(number)
    g = m.main
    x = g.input(T.TENSOR_FLOAT32, [2, 2])
    y = g.input(T.TENSOR_FLOAT32, [2, 2])
    out = g.output(T.TENSOR_FLOAT32, [0, 0])
    g.op(Op.IF, [g.const(*BOOL8_1, [False]), g.subgraph(branches[0]), g.subgraph(branches[1]),
                 x, y], [out])
    return m.case([generated(2), literal(T.TENSOR_FLOAT32, [[1, 2], [4, 8]])],
                  output_sizes=[16], choices=_choices(ExecutionPath.ASYNC))


def while_counter(n: int, path: ExecutionPath = ExecutionPath.SYNC,
                  acc_type: int = T.TENSOR_FLOAT32) -> CaseSpec:
    """WHILE i < n: (i, n, acc) <- (i + 1, n, acc * acc); all three loop-carried."""
    m = ModelBuilder()
    cond = _counter_cond(m, acc_type=acc_type)
    body = _accumulate_body(m, acc_type)
    g = m.main
    n_in = g.input(*INT32_1)
    acc_in = g.input(acc_type, [2])
    i_out = g.output(*INT32_1)
    n_out = g.output(*INT32_1)
    acc_out = g.output(acc_type, [2])
    g.op(Op.WHILE, [g.subgraph(cond), g.subgraph(body), g.const(*INT32_1, [0]), n_in, acc_in],
         [i_out, n_out, acc_out])
    return m.case([literal(T.TENSOR_INT32, [n]), literal(acc_type, [1, 2])],
                  choices=_choices(path))


def while_state_and_input_only() -> CaseSpec:
    """WHILE with one loop-carried (acc), one state-only (i) and one input-only (n, x)
    operand: body(acc, i, n, x) -> (acc + x, i + 1), WHILE outputs only acc."""
    m = ModelBuilder()
    number, cond = m.add()
    cond.input(T.TENSOR_FLOAT32, [1, 2])
    c_i = cond.input(*INT32_1)
    c_n = cond.input(*INT32_1)
    cond.input(T.TENSOR_FLOAT32, [1, 2])
    c_out = cond.output(*BOOL8_1)
    cond.op(Op.LESS, [c_i, c_n], [c_out])
    body_number, body = m.add()
    acc = body.input(T.TENSOR_FLOAT32, [1, 2])
    i = body.input(*INT32_1)
    body.input(*INT32_1)
    x = body.input(T.TENSOR_FLOAT32, [1, 2])
    acc_next = body.output(T.TENSOR_FLOAT32, [1, 2])
    i_next = body.output(*INT32_1)
    body.op(Op.ADD, [acc, x, body.int32(0)], [acc_next])
    body.op(Op.ADD, [i, body.const(*INT32_1, [1]), body.int32(0)], [i_next])
    g = m.main
    n = g.input(*INT32_1)
    x_in = g.input(T.TENSOR_FLOAT32, [1, 2])
    out = g.output(T.TENSOR_FLOAT32, [1, 2])
    g.op(Op.WHILE, [g.subgraph(number), g.subgraph(body_number),
                    g.const(T.TENSOR_FLOAT32, [1, 2], [0.0, 0.0]), g.const(*INT32_1, [0]),
                    n, x_in], [out])
    return m.case([literal(T.TENSOR_INT32, [4]), generated(3)],
                  choices=_choices(ExecutionPath.FENCED, wait_fences=1,
                                   wait_fence_delay_ns=1_000_000))


def while_zero_iterations() -> CaseSpec:
    """WHILE whose condition is false at once: outputs are the initial values."""
    case = while_counter(0, ExecutionPath.BURST)
    return case


def while_infinite() -> CaseSpec:
    """WHILE i >= 0 with i growing: never ends, must hit the (short) loop timeout."""
    m = ModelBuilder()
    cond = _counter_cond(m, comparison=Op.GREATER_EQUAL)
    body = _accumulate_body(m, operation=Op.ADD)
    g = m.main
    acc_in = g.input(T.TENSOR_FLOAT32, [2])
    acc_out = g.output(T.TENSOR_FLOAT32, [2])
    i_out = g.temp(*INT32_1)
    n_out = g.temp(*INT32_1)
    g.op(Op.WHILE, [g.subgraph(cond), g.subgraph(body), g.const(*INT32_1, [0]),
                    g.const(*INT32_1, [0]), acc_in], [i_out, n_out, acc_out])
    return m.case([generated(4)], choices=_choices(loopTimeoutDuration_ns=2_000_000))


def while_growing_concatenation() -> CaseSpec:
    """The loop-carried tensor grows by one column per iteration (CONCATENATION in the
    body), so its shape changes across iterations and the outputs have unknown shape."""
    m = ModelBuilder()
    cond_number, cond = m.add()
    c_i = cond.input(*INT32_1)
    c_n = cond.input(*INT32_1)
    cond.input(T.TENSOR_FLOAT32, [1, 0])
    cond.input(T.TENSOR_FLOAT32, [1, 1])
    c_out = cond.output(*BOOL8_1)
    cond.op(Op.LESS, [c_i, c_n], [c_out])
    body_number, body = m.add()
    i = body.input(*INT32_1)
    n = body.input(*INT32_1)
    grown = body.input(T.TENSOR_FLOAT32, [1, 0])
    column = body.input(T.TENSOR_FLOAT32, [1, 1])
    i_next = body.output(*INT32_1)
    n_next = body.output(*INT32_1)
    grown_next = body.output(T.TENSOR_FLOAT32, [1, 0])
    body.op(Op.ADD, [i, body.const(*INT32_1, [1]), body.int32(0)], [i_next])
    body.op(Op.ADD, [n, body.const(*INT32_1, [0]), body.int32(0)], [n_next])
    body.op(Op.CONCATENATION, [grown, column, body.int32(1)], [grown_next])
    g = m.main
    n_in = g.input(*INT32_1)
    start = g.input(T.TENSOR_FLOAT32, [1, 1])
    column_in = g.input(T.TENSOR_FLOAT32, [1, 1])
    i_out = g.output(*INT32_1)
    grown_out = g.output(T.TENSOR_FLOAT32, [1, 0])
    n_out = g.temp(*INT32_1)
    g.op(Op.WHILE, [g.subgraph(cond_number), g.subgraph(body_number), g.const(*INT32_1, [0]),
                    n_in, start, column_in], [i_out, n_out, grown_out])
    return m.case([literal(T.TENSOR_INT32, [3]), literal(T.TENSOR_FLOAT32, [[1.0]]),
                   literal(T.TENSOR_FLOAT32, [[2.0]])], output_sizes=[0, 4 * 8])


def nested_if_in_while() -> CaseSpec:
    """WHILE i < n whose body picks ADD or SUB through an IF on i < half."""
    m = ModelBuilder()
    cond = _counter_cond(m, (2, 2))
    add_number, add = m.add()
    sub_number, sub = m.add()
    for g, operation in ((add, Op.ADD), (sub, Op.SUB)):
        x = g.input(T.TENSOR_FLOAT32, [2, 2])
        out = g.output(T.TENSOR_FLOAT32, [2, 2])
        g.op(operation, [x, g.const(T.TENSOR_FLOAT32, [1], [1.5]), g.int32(0)], [out])
    body_number, body = m.add()
    i = body.input(*INT32_1)
    n = body.input(*INT32_1)
    acc = body.input(T.TENSOR_FLOAT32, [2, 2])
    i_next = body.output(*INT32_1)
    n_next = body.output(*INT32_1)
    acc_next = body.output(T.TENSOR_FLOAT32, [2, 2])
    early = body.temp(*BOOL8_1)
    body.op(Op.LESS, [i, body.const(*INT32_1, [2])], [early])
    body.op(Op.IF, [early, body.subgraph(add_number), body.subgraph(sub_number), acc],
            [acc_next])
    body.op(Op.ADD, [i, body.const(*INT32_1, [1]), body.int32(0)], [i_next])
    body.op(Op.ADD, [n, body.const(*INT32_1, [0]), body.int32(0)], [n_next])
    g = m.main
    n_in = g.input(*INT32_1)
    acc_in = g.input(T.TENSOR_FLOAT32, [2, 2])
    acc_out = g.output(T.TENSOR_FLOAT32, [2, 2])
    g.op(Op.WHILE, [g.subgraph(cond), g.subgraph(body_number), g.const(*INT32_1, [0]), n_in,
                    acc_in], [g.temp(*INT32_1), g.temp(*INT32_1), acc_out])
    return m.case([literal(T.TENSOR_INT32, [4]), generated(5)],
                  choices=_choices(ExecutionPath.ASYNC, measureTiming=1))


def nested_while_in_if() -> CaseSpec:
    """IF whose then-branch runs a WHILE and whose else-branch is a plain MUL."""
    m = ModelBuilder()
    cond = _counter_cond(m, (3,))
    body = _accumulate_body(m, dims=(3,), operation=Op.ADD)
    then_number, then = m.add()
    n = then.input(*INT32_1)
    x = then.input(T.TENSOR_FLOAT32, [3])
    out = then.output(T.TENSOR_FLOAT32, [3])
    then.op(Op.WHILE, [then.subgraph(cond), then.subgraph(body), then.const(*INT32_1, [0]), n,
                       x], [then.temp(*INT32_1), then.temp(*INT32_1), out])
    else_number, other = m.add()
    other.input(*INT32_1)
    y = other.input(T.TENSOR_FLOAT32, [3])
    out = other.output(T.TENSOR_FLOAT32, [3])
    other.op(Op.MUL, [y, y, other.int32(0)], [out])
    g = m.main
    flag = g.input(*BOOL8_1)
    n_in = g.input(*INT32_1)
    x_in = g.input(T.TENSOR_FLOAT32, [3])
    result = g.output(T.TENSOR_FLOAT32, [3])
    g.op(Op.IF, [flag, g.subgraph(then_number), g.subgraph(else_number), n_in, x_in], [result])
    return m.case([literal(T.TENSOR_BOOL8, [True]), literal(T.TENSOR_INT32, [3]), generated(6)],
                  choices=_choices(ExecutionPath.BURST))


def while_in_while() -> CaseSpec:
    """Nested loops: the outer body runs an inner WHILE i < n and then i + 1."""
    m = ModelBuilder()
    cond = _counter_cond(m)
    inner_body = _accumulate_body(m, operation=Op.ADD)
    outer_number, outer = m.add()
    i = outer.input(*INT32_1)
    n = outer.input(*INT32_1)
    acc = outer.input(T.TENSOR_FLOAT32, [2])
    i_next = outer.output(*INT32_1)
    n_next = outer.output(*INT32_1)
    acc_next = outer.output(T.TENSOR_FLOAT32, [2])
    outer.op(Op.WHILE, [outer.subgraph(cond), outer.subgraph(inner_body),
                        outer.const(*INT32_1, [0]), i, acc],
             [outer.temp(*INT32_1), outer.temp(*INT32_1), acc_next])
    outer.op(Op.ADD, [i, outer.const(*INT32_1, [1]), outer.int32(0)], [i_next])
    outer.op(Op.ADD, [n, outer.const(*INT32_1, [0]), outer.int32(0)], [n_next])
    g = m.main
    n_in = g.input(*INT32_1)
    acc_in = g.input(T.TENSOR_FLOAT32, [2])
    acc_out = g.output(T.TENSOR_FLOAT32, [2])
    g.op(Op.WHILE, [g.subgraph(cond), g.subgraph(outer_number), g.const(*INT32_1, [0]), n_in,
                    acc_in], [g.temp(*INT32_1), g.temp(*INT32_1), acc_out])
    return m.case([literal(T.TENSOR_INT32, [3]), literal(T.TENSOR_FLOAT32, [0.5, -1.0])])


# --- plain operations (so a corpus can grow from the project's own models alone) ------------

def binary(operation: int, operand_type: int, dims_a: Sequence[int], dims_b: Sequence[int],
           out_dims: Sequence[int], *, scale: float = 0.0, zero_point: int = 0,
           activation: int = 0, b_constant: bool = False,
           path: ExecutionPath = ExecutionPath.SYNC) -> CaseSpec:
    """One ADD/SUB/MUL/DIV: input a, input or constant b, a fused activation."""
    m = ModelBuilder()
    g = m.main
    quant = dict(scale=scale, zero_point=zero_point)
    a = g.input(operand_type, dims_a, **quant)
    if b_constant:
        b = g.operand(operand_type, dims_b, L.CONSTANT_COPY, value=generated(8), **quant)
    else:
        b = g.input(operand_type, dims_b, **quant)
    out = g.output(operand_type, out_dims, **quant)
    g.op(operation, [a, b, g.int32(activation)], [out])
    inputs = [generated(9)] if b_constant else [generated(9), generated(10)]
    return m.case(inputs, choices=_choices(path))


def comparison(operation: int, operand_type: int) -> CaseSpec:
    m = ModelBuilder()
    g = m.main
    a = g.input(operand_type, [2, 3])
    b = g.input(operand_type, [3])
    out = g.output(T.TENSOR_BOOL8, [2, 3])
    g.op(operation, [a, b], [out])
    return m.case([generated(11), generated(12)])


def logical_chain() -> CaseSpec:
    """LOGICAL_NOT(LOGICAL_AND(a, b)) OR c."""
    m = ModelBuilder()
    g = m.main
    a, b, c = (g.input(T.TENSOR_BOOL8, [4]) for _ in range(3))
    t1 = g.temp(T.TENSOR_BOOL8, [4])
    t2 = g.temp(T.TENSOR_BOOL8, [4])
    out = g.output(T.TENSOR_BOOL8, [4])
    g.op(Op.LOGICAL_AND, [a, b], [t1])
    g.op(Op.LOGICAL_NOT, [t1], [t2])
    g.op(Op.LOGICAL_OR, [t2, c], [out])
    return m.case([generated(13), generated(14), generated(15)])


def constant_in_pool() -> CaseSpec:
    """ADD of an input and a CONSTANT_REFERENCE held in a model memory pool."""
    m = ModelBuilder(pools=[BlobSpec()])
    g = m.main
    a = g.input(T.TENSOR_FLOAT32, [2, 2])
    b = g.const_ref(T.TENSOR_FLOAT32, [2, 2], generated(16))
    out = g.output(T.TENSOR_FLOAT32, [2, 2])
    g.op(Op.ADD, [a, b, g.int32(0)], [out])
    return m.case([generated(17)], choices=_choices(ExecutionPath.FENCED,
                                                    fenced_duration_ns=1_000_000_000))


def dynamic_output_shape() -> CaseSpec:
    """A broadcast whose output shape is left unknown, with an output buffer just big enough."""
    m = ModelBuilder()
    g = m.main
    a = g.input(T.TENSOR_FLOAT32, [2, 1])
    b = g.input(T.TENSOR_FLOAT32, [1, 3])
    t = g.temp(T.TENSOR_FLOAT32, [0, 0])
    out = g.output(T.TENSOR_FLOAT32, [])
    g.op(Op.MUL, [a, b, g.int32(0)], [t])
    g.op(Op.SUB, [t, a, g.int32(2)], [out])
    return m.case([generated(18), generated(19)], output_sizes=[24])


def two_pools_and_omitted_dims() -> CaseSpec:
    """Inputs in one request pool, outputs in another; the input gives its dims in the
    request because the operand leaves them unknown."""
    case = binary(Op.ADD, T.TENSOR_FLOAT32, [0, 2], [2], [0, 2])
    request = case.request
    request.inputs[0].dimensions = [3, 2]
    request.pools.append(RequestPoolSpec(blob=BlobSpec("mmap_fd")))
    request.outputs[0].target = 1
    request.outputs[0].size_delta = 24
    return case


@dataclass(frozen=True)
class Arg:
    """One input of a single-operation seed: fed by the request (``value`` a generated seed
    or literal values) or a constant (``constant`` values)."""
    type: int
    dims: Sequence[int] = ()
    constant: object = None
    value: object = None
    scale: float = 0.0
    zero_point: int = 0


def single(operation: int, args: Sequence[Arg],
           outputs: Sequence[tuple[int, Sequence[int]] | tuple[int, Sequence[int], float, int]],
           path: ExecutionPath = ExecutionPath.SYNC) -> CaseSpec:
    """A model of one operation."""
    m = ModelBuilder()
    g = m.main
    inputs, fed = [], []
    for k, arg in enumerate(args):
        quant = dict(scale=arg.scale, zero_point=arg.zero_point)
        if arg.constant is not None:
            inputs.append(g.const(arg.type, arg.dims, arg.constant, **quant))
        else:
            inputs.append(g.input(arg.type, arg.dims, **quant))
            fed.append(literal(arg.type, arg.value) if arg.value is not None
                       else generated(20 + k))
    results = []
    for out in outputs:
        operand_type, dims, *quant = out
        results.append(g.output(operand_type, dims, **(dict(scale=quant[0], zero_point=quant[1])
                                                       if quant else {})))
    g.op(operation, inputs, results)
    return m.case(fed, choices=_choices(path))


F32, I32, B8 = T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_BOOL8
Q8 = T.TENSOR_QUANT8_ASYMM


def _single_seeds() -> dict[str, Callable[[], CaseSpec]]:
    x = Arg(F32, [2, 3])
    seeds: dict[str, Callable[[], CaseSpec]] = {}
    for operation in (Op.ABS, Op.EXP, Op.FLOOR, Op.LOG, Op.NEG, Op.RELU, Op.RELU1, Op.RELU6,
                      Op.LOGISTIC, Op.TANH, Op.SQRT, Op.RSQRT, Op.SIN, Op.HARD_SWISH):
        seeds[f"{operation.name.lower()}_float32"] = (
            lambda o=operation: single(o, [x], [(F32, [2, 3])]))
    table = {
        "abs_int32": lambda: single(Op.ABS, [Arg(I32, [4])], [(I32, [4])]),
        "relu_quant8": lambda: single(Op.RELU, [Arg(Q8, [4], scale=0.5, zero_point=128)],
                                      [(Q8, [4], 0.5, 128)]),
        "elu_float32": lambda: single(Op.ELU, [x, Arg(T.FLOAT32, constant=1.0)], [(F32, [2, 3])]),
        "softmax_float32": lambda: single(Op.SOFTMAX, [x, Arg(T.FLOAT32, constant=1.0)],
                                          [(F32, [2, 3])], ExecutionPath.ASYNC),
        "maximum_float32": lambda: single(Op.MAXIMUM, [x, Arg(F32, [3])], [(F32, [2, 3])]),
        "minimum_int32": lambda: single(Op.MINIMUM, [Arg(I32, [2, 2]), Arg(I32, [2, 2])],
                                        [(I32, [2, 2])]),
        "pow_float32": lambda: single(Op.POW, [x, Arg(F32, [1], constant=[2.0])],
                                      [(F32, [2, 3])]),
        "concatenation_float32": lambda: single(
            Op.CONCATENATION, [x, Arg(F32, [2, 1]), Arg(T.INT32, constant=1)], [(F32, [2, 4])]),
        "reshape_float32": lambda: single(Op.RESHAPE, [x, Arg(I32, [2], constant=[3, 2])],
                                          [(F32, [3, 2])], ExecutionPath.FENCED),
        "transpose_float32": lambda: single(Op.TRANSPOSE, [x, Arg(I32, [2], constant=[1, 0])],
                                            [(F32, [3, 2])]),
        "squeeze_float32": lambda: single(Op.SQUEEZE, [Arg(F32, [1, 3, 1]),
                                                       Arg(I32, [1], constant=[0])],
                                          [(F32, [3, 1])]),
        "expand_dims_float32": lambda: single(Op.EXPAND_DIMS, [x, Arg(T.INT32, constant=0)],
                                              [(F32, [1, 2, 3])]),
        "mean_float32": lambda: single(Op.MEAN, [x, Arg(I32, [1], constant=[1]),
                                                 Arg(T.INT32, constant=0)], [(F32, [2])]),
        "reduce_sum_float32": lambda: single(Op.REDUCE_SUM, [x, Arg(I32, [1], constant=[0]),
                                                             Arg(T.BOOL, constant=True)],
                                             [(F32, [1, 3])], ExecutionPath.BURST),
        "reduce_max_float32": lambda: single(Op.REDUCE_MAX, [x, Arg(I32, [1], constant=[1]),
                                                             Arg(T.BOOL, constant=False)],
                                             [(F32, [2])]),
        "reduce_any_bool8": lambda: single(Op.REDUCE_ANY, [Arg(B8, [2, 3]),
                                                           Arg(I32, [1], constant=[1]),
                                                           Arg(T.BOOL, constant=False)],
                                           [(B8, [2])]),
        "argmax_float32": lambda: single(Op.ARGMAX, [x, Arg(T.INT32, constant=1)], [(I32, [2])]),
        "cast_float32_to_int32": lambda: single(Op.CAST, [x], [(I32, [2, 3])]),
        "quantize_float32": lambda: single(Op.QUANTIZE, [x], [(Q8, [2, 3], 0.05, 128)]),
        "dequantize_quant8": lambda: single(Op.DEQUANTIZE, [Arg(Q8, [2, 3], scale=0.1,
                                                                zero_point=100)],
                                            [(F32, [2, 3])]),
        "select_float32": lambda: single(Op.SELECT, [Arg(B8, [2, 3]), x, Arg(F32, [2, 3])],
                                         [(F32, [2, 3])]),
        "gather_float32": lambda: single(Op.GATHER, [x, Arg(T.INT32, constant=1),
                                                     Arg(I32, [2], value=[2, 0])],
                                         [(F32, [2, 2])]),
        "tile_float32": lambda: single(Op.TILE, [x, Arg(I32, [2], constant=[2, 1])],
                                       [(F32, [4, 3])]),
        "slice_float32": lambda: single(Op.SLICE, [x, Arg(I32, [2], constant=[0, 1]),
                                                   Arg(I32, [2], constant=[2, 2])],
                                        [(F32, [2, 2])]),
        "pad_float32": lambda: single(Op.PAD, [x, Arg(I32, [2, 2], constant=[[1, 0], [0, 2]])],
                                      [(F32, [3, 5])]),
        "fill_float32": lambda: single(Op.FILL, [Arg(I32, [2], constant=[2, 2]),
                                                 Arg(T.FLOAT32, constant=1.5)], [(F32, [2, 2])]),
        "rank_float32": lambda: single(Op.RANK, [x], [(T.INT32, [])]),
        "fully_connected_float32": lambda: single(
            Op.FULLY_CONNECTED, [Arg(F32, [2, 3]), Arg(F32, [4, 3], constant=np.ones((4, 3))),
                                 Arg(F32, [4], constant=[0.5, 0, 0, -0.5]),
                                 Arg(T.INT32, constant=0)], [(F32, [2, 4])]),
        "split_float32": lambda: single(Op.SPLIT, [Arg(F32, [2, 4]), Arg(T.INT32, constant=1),
                                                   Arg(T.INT32, constant=2)],
                                        [(F32, [2, 2]), (F32, [2, 2])]),
    }
    seeds.update(table)
    return seeds


def in_if(case: CaseSpec, condition: bool) -> CaseSpec:
    """The model of ``case`` (no control flow of its own) run by an IF whose branches are
    both copies of it, on a request-fed condition."""
    inner = case.model.main
    model = ModelBuilder(pools=list(case.model.pools))
    branches = []
    for _ in range(2):
        number, branch = model.add()
        branch.spec = copy.deepcopy(inner)
        branches.append(number)
    g = model.main
    cond = g.input(*BOOL8_1)
    inputs = [g.input(inner.operands[i].type, inner.operands[i].dimensions,
                      scale=inner.operands[i].scale, zero_point=inner.operands[i].zeroPoint)
              for i in inner.inputIndexes]
    outputs = [g.output(inner.operands[i].type, inner.operands[i].dimensions,
                        scale=inner.operands[i].scale, zero_point=inner.operands[i].zeroPoint)
               for i in inner.outputIndexes]
    g.op(Op.IF, [cond, g.subgraph(branches[0]), g.subgraph(branches[1]), *inputs], outputs)
    request = case.request
    request.inputs.insert(0, ArgumentSpec(value=literal(T.TENSOR_BOOL8, [condition])))
    return CaseSpec(ModelSpec(g.spec, [b.spec for b in model.referenced], [], model.pools),
                    request, case.choices)


def repeated_in_while(operation: int, n: int) -> CaseSpec:
    """WHILE i < n: x <- operation(x), for a same-shape float operation."""
    m = ModelBuilder()
    cond = _counter_cond(m, (2, 3))
    number, body = m.add()
    i = body.input(*INT32_1)
    count = body.input(*INT32_1)
    x = body.input(F32, [2, 3])
    i_next = body.output(*INT32_1)
    count_next = body.output(*INT32_1)
    x_next = body.output(F32, [2, 3])
    body.op(Op.ADD, [i, body.const(*INT32_1, [1]), body.int32(0)], [i_next])
    body.op(Op.ADD, [count, body.const(*INT32_1, [0]), body.int32(0)], [count_next])
    body.op(operation, [x], [x_next])
    g = m.main
    n_in = g.input(*INT32_1)
    x_in = g.input(F32, [2, 3])
    x_out = g.output(F32, [2, 3])
    g.op(Op.WHILE, [g.subgraph(cond), g.subgraph(number), g.const(*INT32_1, [0]), n_in, x_in],
         [g.temp(*INT32_1), g.temp(*INT32_1), x_out])
    return m.case([literal(T.TENSOR_INT32, [n]), generated(30)])


def _plain_seeds() -> dict[str, Callable[[], CaseSpec]]:
    seeds: dict[str, Callable[[], CaseSpec]] = {}
    quant = {T.TENSOR_QUANT8_ASYMM: (0.5, 128), T.TENSOR_QUANT8_ASYMM_SIGNED: (0.25, -3)}
    for operation in (Op.ADD, Op.SUB, Op.MUL, Op.DIV):
        name = operation.name.lower()
        seeds[f"{name}_float32"] = lambda o=operation: binary(o, T.TENSOR_FLOAT32, [2, 3], [3],
                                                             [2, 3], activation=1)
        seeds[f"{name}_float16_const"] = lambda o=operation: binary(
            o, T.TENSOR_FLOAT16, [2, 2], [2, 2], [2, 2], b_constant=True,
            path=ExecutionPath.BURST)
        seeds[f"{name}_int32"] = lambda o=operation: binary(o, T.TENSOR_INT32, [4], [1], [4])
        for operand_type, (scale, zp) in quant.items():
            if operation == Op.DIV:
                continue
            seeds[f"{name}_{operand_type.name.lower()}"] = (
                lambda o=operation, t=operand_type, s=scale, z=zp: binary(
                    o, t, [1, 2, 2, 1], [1, 2, 2, 1], [1, 2, 2, 1], scale=s, zero_point=z,
                    path=ExecutionPath.ASYNC))
    for operation in (Op.EQUAL, Op.NOT_EQUAL, Op.LESS, Op.LESS_EQUAL, Op.GREATER,
                      Op.GREATER_EQUAL):
        seeds[f"{operation.name.lower()}_float32"] = lambda o=operation: comparison(
            o, T.TENSOR_FLOAT32)
        seeds[f"{operation.name.lower()}_int32"] = lambda o=operation: comparison(
            o, T.TENSOR_INT32)
    seeds["logical_chain"] = logical_chain
    seeds["constant_in_pool"] = constant_in_pool
    seeds["dynamic_output_shape"] = dynamic_output_shape
    seeds["two_pools_and_omitted_dims"] = two_pools_and_omitted_dims
    seeds.update(_single_seeds())
    return seeds


def _wrapped_seeds() -> dict[str, Callable[[], CaseSpec]]:
    """Operations of the plain seeds again, inside IF branches and WHILE bodies."""
    singles = _single_seeds()
    seeds: dict[str, Callable[[], CaseSpec]] = {}
    for k, name in enumerate(("concatenation_float32", "reshape_float32", "softmax_float32",
                              "reduce_sum_float32", "gather_float32", "split_float32",
                              "select_float32", "cast_float32_to_int32", "quantize_float32",
                              "fully_connected_float32")):
        seeds[f"if_{name}"] = lambda n=name, c=bool(k % 2): in_if(singles[n](), c)
    for k, operation in enumerate((Op.LOGISTIC, Op.TANH, Op.RELU1, Op.SIN, Op.HARD_SWISH,
                                   Op.FLOOR)):
        seeds[f"while_{operation.name.lower()}_{k + 1}"] = (
            lambda o=operation, n=k + 1: repeated_in_while(o, n))
    return seeds


CONTROL_FLOW_SEEDS: dict[str, Callable[[], CaseSpec]] = {
    "if_true": lambda: if_branches(True),
    "if_false": lambda: if_branches(False),
    "if_true_float16_async": lambda: if_branches(True, T.TENSOR_FLOAT16, ExecutionPath.ASYNC),
    "if_false_int32_fenced": lambda: if_branches(False, T.TENSOR_INT32, ExecutionPath.FENCED),
    "if_true_int32_burst": lambda: if_branches(True, T.TENSOR_INT32, ExecutionPath.BURST),
    "if_constant_condition": if_constant_condition,
    "while_counter_3": lambda: while_counter(3),
    "while_counter_1_fenced": lambda: while_counter(1, ExecutionPath.FENCED),
    "while_counter_2_float16_async": lambda: while_counter(2, ExecutionPath.ASYNC,
                                                          T.TENSOR_FLOAT16),
    "while_counter_4_int32_burst": lambda: while_counter(4, ExecutionPath.BURST, T.TENSOR_INT32),
    "while_state_and_input_only": while_state_and_input_only,
    "while_zero_iterations": while_zero_iterations,
    "while_infinite": while_infinite,
    "while_growing_concatenation": while_growing_concatenation,
    "nested_if_in_while": nested_if_in_while,
    "nested_while_in_if": nested_while_in_if,
    "while_in_while": while_in_while,
    **_wrapped_seeds(),
}

SEEDS: dict[str, Callable[[], CaseSpec]] = {**CONTROL_FLOW_SEEDS, **_plain_seeds()}


def seed_specs() -> dict[str, CaseSpec]:
    return {name: make() for name, make in SEEDS.items()}


def seed_cases() -> dict[str, FuzzCase]:
    return {name: lower(spec) for name, spec in seed_specs().items()}
