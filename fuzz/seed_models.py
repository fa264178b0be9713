"""The project's own seed models: hand-written control flow the fuzzer should start from (IF
on both branches, nested IF/WHILE, loop-carried, state-only and input-only operands, a loop
whose carried tensor grows, a loop that must time out, operations run inside IF branches
and WHILE bodies), plus small models of every operation the driver registers, generated
from its signatures, so that a corpus can be grown from the project's own models alone.

Each seed is a HAL case (:class:`fuzz.case.FuzzCase`) built with hal_client.builder;
``SEEDS`` maps a name to the function making it and ``seed_specs()`` gives each as the codec
spec its bytes serialize, with every value placed by the decoder itself (the form the
structural mutations keep valid). Values that decide control flow (loop bounds, IF
conditions) are literal so they are reproduced exactly; bulk data is the codec's generated
values, so that it encodes as a one-byte seed.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np

from driver.hal import (MemoryPool, OperandExtraParams, OperandLifeTime as L, OperandType as T,
                        OperationType as Op, SymmPerChannelQuantParams)
from driver.hal.dtypes import byte_size
from driver.memory import Memory
from driver.operations.common import STORAGE_DTYPE
from driver.operations.registry import OperandInfo, definitions
from driver.operations.signatures import ExampleOperand, Range, concrete_types
from hal_client.builder import (ModelBuilder, OperandDeclaration, SubgraphBuilder, make_request,
                                out_bytes, out_for)
from hal_client.examples import count_condition

from . import codec
from .case import ExecutionChoices, ExecutionPath, FuzzCase
from .mutator.blocks import TENSOR_TYPES
from .mutator.operations import output_shapes

#: Every seed bounds its loops: a loop that never ends costs this much, not the 2 s default.
#: The longest timeout the codec carries, so that every seed's loops end well inside it on
#: a slow or loaded machine (the slowest, a quantized LSTM in a WHILE body, takes about
#: 25 ms on a fast one); a mutation of the choices makes the timeout short again.
SEED_LOOP_TIMEOUT_NS = codec.LOOP_TIMEOUT_CAP_US * 1000

F32, F16, I32, B8 = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, T.TENSOR_BOOL8
Q8 = T.TENSOR_QUANT8_ASYMM
INT32_1 = (I32, [1])
Seed = Callable[[], FuzzCase]


def literal(operand_type: int, values) -> np.ndarray:
    return np.asarray(values, STORAGE_DTYPE[operand_type])


def generated(operand_type: int, dims: Sequence[int], seed: int) -> np.ndarray:
    """The codec's generated values of ``seed`` for an operand of this type and shape."""
    data = codec.generated_bytes(codec.element_kind(operand_type), seed,
                                 byte_size(operand_type, dims))
    return np.frombuffer(data, STORAGE_DTYPE[operand_type]).reshape(dims)


def case(mb: ModelBuilder, inputs: Sequence[np.ndarray], path: ExecutionPath = ExecutionPath.SYNC,
         output_lengths: Sequence[Optional[int]] = (), **choices) -> FuzzCase:
    """The case feeding ``inputs`` to main, every argument in one request pool; an output
    buffer is as large as its operand declares unless ``output_lengths`` says otherwise
    (outputs of unknown shape)."""
    model = mb.build()
    main = model.main
    outputs = [out_for(main.operands[index]) for index in main.outputIndexes]
    for k, length in enumerate(output_lengths):
        if length is not None:
            outputs[k] = out_bytes(outputs[k].dtype, length)
    request = make_request(inputs, outputs, state_input_dims=False, one_pool=True).request
    choices.setdefault("loopTimeoutDuration_ns", SEED_LOOP_TIMEOUT_NS)
    return FuzzCase(model, request, ExecutionChoices(path=path, **choices))


# --- control-flow building blocks ----------------------------------------------------------

def counter_cond(mb: ModelBuilder, acc: OperandDeclaration = (F32, [2]),
                 comparison: int = Op.LESS) -> SubgraphBuilder:
    """cond(i, n, acc): i <comparison> n, for the loops of accumulate_body."""
    return count_condition(mb, I32, comparison=comparison, others=[acc])


def accumulate_body(mb: ModelBuilder, acc: OperandDeclaration = (F32, [2]),
                    operation: int = Op.MUL) -> SubgraphBuilder:
    """body(i, n, acc) -> (i + 1, n, acc <operation> acc)."""
    body = mb.subgraph()
    i, n, x = body.input(*INT32_1), body.input(*INT32_1), body.input(*acc)
    body.outputs(body.add(i, body.constant(I32, [1])), body.copy(n),
                 body.arithmetic(operation, x, x))
    return body


def counted_loop(g: SubgraphBuilder, cond: SubgraphBuilder, body: SubgraphBuilder, n: int,
                 acc: int) -> int:
    """WHILE over (i = 0, n, acc) in ``g``, keeping only the final acc."""
    return g.while_(cond, body, [g.constant(I32, [0]), n, acc])[2]


# --- seeds ---------------------------------------------------------------------------------

def if_branches(condition: bool, operand_type: int = F32,
                path: ExecutionPath = ExecutionPath.SYNC) -> FuzzCase:
    """IF on a request-fed condition: then adds 10, else subtracts 10."""
    mb = ModelBuilder()
    branches = []
    for operation in (Op.ADD, Op.SUB):
        g = mb.subgraph()
        x = g.input(operand_type, [3, 4])
        g.outputs(g.arithmetic(operation, x, g.constant(operand_type, [10])))
        branches.append(g)
    g = mb.main
    cond, x = g.input(B8, [1]), g.input(operand_type, [3, 4])
    g.outputs(*g.if_(cond, *branches, [x]))
    return case(mb, [literal(B8, [condition]), generated(operand_type, [3, 4], 1)], path)


def if_constant_condition() -> FuzzCase:
    """IF whose condition is a constant, with the branch outputs of unknown shape."""
    mb = ModelBuilder()
    branches = []
    for operation in (Op.MUL, Op.DIV):
        g = mb.subgraph()
        x, y = g.input(F32, [2, 2]), g.input(F32, [2, 2])
        g.outputs(g.arithmetic(operation, x, y, [0, 0], activation=1))
        branches.append(g)
    g = mb.main
    x, y = g.input(F32, [2, 2]), g.input(F32, [2, 2])
    g.outputs(*g.if_(g.constant(B8, [False]), *branches, [x, y]))
    return case(mb, [generated(F32, [2, 2], 2), literal(F32, [[1, 2], [4, 8]])],
                ExecutionPath.ASYNC, output_lengths=[16])


def while_counter(n: int, path: ExecutionPath = ExecutionPath.SYNC,
                  acc_type: int = F32) -> FuzzCase:
    """WHILE i < n: (i, n, acc) <- (i + 1, n, acc * acc); all three loop-carried."""
    mb = ModelBuilder()
    acc = (acc_type, [2])
    cond, body = counter_cond(mb, acc), accumulate_body(mb, acc)
    g = mb.main
    n_in, acc_in = g.input(*INT32_1), g.input(*acc)
    g.outputs(*g.while_(cond, body, [g.constant(I32, [0]), n_in, acc_in]))
    return case(mb, [literal(I32, [n]), literal(acc_type, [1, 2])], path)


def while_state_and_input_only() -> FuzzCase:
    """WHILE with one loop-carried (acc), one state-only (i) and one input-only (n, x)
    operand: body(acc, i, n, x) -> (acc + x, i + 1), WHILE outputs only acc."""
    mb = ModelBuilder()
    specs = [(F32, [1, 2]), INT32_1, INT32_1, (F32, [1, 2])]
    cond = mb.subgraph()
    _acc, i, n, _x = (cond.input(*spec) for spec in specs)
    cond.outputs(cond.compare(Op.LESS, i, n))
    body = mb.subgraph()
    acc, i, _n, x = (body.input(*spec) for spec in specs)
    body.outputs(body.add(acc, x), body.add(i, body.constant(I32, [1])))
    g = mb.main
    n, x = g.input(*INT32_1), g.input(F32, [1, 2])
    g.outputs(g.while_(cond, body, [g.constant(F32, [[0.0, 0.0]]), g.constant(I32, [0]), n, x],
                       count=1)[0])
    return case(mb, [literal(I32, [4]), generated(F32, [1, 2], 3)], ExecutionPath.FENCED,
                wait_fences=1, wait_fence_delay_ns=1_000_000)


def while_infinite() -> FuzzCase:
    """WHILE i >= 0 with i growing: never ends, must hit the (short) loop timeout."""
    mb = ModelBuilder()
    cond = counter_cond(mb, comparison=Op.GREATER_EQUAL)
    body = accumulate_body(mb, operation=Op.ADD)
    g = mb.main
    acc = g.input(F32, [2])
    g.outputs(g.while_(cond, body, [g.constant(I32, [0]), g.constant(I32, [0]), acc])[2])
    return case(mb, [generated(F32, [2], 4)], loopTimeoutDuration_ns=2_000_000)


def while_growing_concatenation() -> FuzzCase:
    """The loop-carried tensor grows by one column per iteration (CONCATENATION in the
    body), so its shape changes across iterations and the outputs have unknown shape."""
    mb = ModelBuilder()
    grown, column = (F32, [1, 0]), (F32, [1, 1])
    cond = count_condition(mb, I32, others=[grown, column])
    body = mb.subgraph()
    i, n = body.input(*INT32_1), body.input(*INT32_1)
    x, c = body.input(*grown), body.input(*column)
    body.outputs(body.add(i, body.constant(I32, [1])), body.copy(n),
                 body.apply(Op.CONCATENATION, [x, c, body.int32(1)], *grown))
    g = mb.main
    n_in, start, column_in = g.input(*INT32_1), g.input(*column), g.input(*column)
    i_out, _n_out, grown_out = g.while_(cond, body, [g.constant(I32, [0]), n_in, start, column_in])
    g.outputs(i_out, grown_out)
    return case(mb, [literal(I32, [3]), literal(F32, [[1.0]]), literal(F32, [[2.0]])],
                output_lengths=[None, 4 * 8])


def nested_if_in_while() -> FuzzCase:
    """WHILE i < n whose body picks ADD or SUB through an IF on i < 2."""
    mb = ModelBuilder()
    acc = (F32, [2, 2])
    cond = counter_cond(mb, acc)
    branches = []
    for operation in (Op.ADD, Op.SUB):
        g = mb.subgraph()
        g.outputs(g.arithmetic(operation, g.input(*acc), g.constant(F32, [1.5])))
        branches.append(g)
    body = mb.subgraph()
    i, n, x = body.input(*INT32_1), body.input(*INT32_1), body.input(*acc)
    early = body.compare(Op.LESS, i, body.constant(I32, [2]))
    x_next = body.if_(early, *branches, [x])[0]
    body.outputs(body.add(i, body.constant(I32, [1])), body.copy(n), x_next)
    g = mb.main
    n_in, acc_in = g.input(*INT32_1), g.input(*acc)
    g.outputs(counted_loop(g, cond, body, n_in, acc_in))
    return case(mb, [literal(I32, [4]), generated(F32, [2, 2], 5)], ExecutionPath.ASYNC,
                measureTiming=1)


def nested_while_in_if() -> FuzzCase:
    """IF whose then-branch runs a WHILE and whose else-branch is a plain MUL."""
    mb = ModelBuilder()
    acc = (F32, [3])
    cond, body = counter_cond(mb, acc), accumulate_body(mb, acc, Op.ADD)
    then = mb.subgraph()
    n, x = then.input(*INT32_1), then.input(*acc)
    then.outputs(counted_loop(then, cond, body, n, x))
    otherwise = mb.subgraph()
    otherwise.input(*INT32_1)
    y = otherwise.input(*acc)
    otherwise.outputs(otherwise.mul(y, y))
    g = mb.main
    flag, n_in, x_in = g.input(B8, [1]), g.input(*INT32_1), g.input(*acc)
    g.outputs(*g.if_(flag, then, otherwise, [n_in, x_in]))
    return case(mb, [literal(B8, [True]), literal(I32, [3]), generated(F32, [3], 6)],
                ExecutionPath.BURST)


def while_in_while() -> FuzzCase:
    """Nested loops: the outer body runs an inner WHILE i < n and then i + 1."""
    mb = ModelBuilder()
    cond, inner_body = counter_cond(mb), accumulate_body(mb, operation=Op.ADD)
    outer = mb.subgraph()
    i, n, acc = outer.input(*INT32_1), outer.input(*INT32_1), outer.input(F32, [2])
    acc_next = counted_loop(outer, cond, inner_body, i, acc)
    outer.outputs(outer.add(i, outer.constant(I32, [1])), outer.copy(n), acc_next)
    g = mb.main
    n_in, acc_in = g.input(*INT32_1), g.input(F32, [2])
    g.outputs(counted_loop(g, cond, outer, n_in, acc_in))
    return case(mb, [literal(I32, [3]), literal(F32, [0.5, -1.0])])


def logical_chain() -> FuzzCase:
    """LOGICAL_NOT(LOGICAL_AND(a, b)) OR c."""
    mb = ModelBuilder()
    g = mb.main
    a, b, c = (g.input(B8, [4]) for _ in range(3))
    t = g.apply(Op.LOGICAL_NOT, [g.apply(Op.LOGICAL_AND, [a, b], B8, [4])], B8, [4])
    g.outputs(g.apply(Op.LOGICAL_OR, [t, c], B8, [4]))
    return case(mb, [generated(B8, [4], seed) for seed in (13, 14, 15)])


def constant_in_pool() -> FuzzCase:
    """ADD of an input and a CONSTANT_REFERENCE held in a model memory pool."""
    mb = ModelBuilder()
    g = mb.main
    a = g.input(F32, [2, 2])
    g.outputs(g.add(a, g.constant(F32, generated(F32, [2, 2], 16), in_pool=True)))
    return case(mb, [generated(F32, [2, 2], 17)], ExecutionPath.FENCED,
                fenced_duration_ns=1_000_000_000)


def dynamic_output_shape() -> FuzzCase:
    """A broadcast whose output shape is left unknown, with an output buffer just big enough."""
    mb = ModelBuilder()
    g = mb.main
    a, b = g.input(F32, [2, 1]), g.input(F32, [1, 3])
    t = g.arithmetic(Op.MUL, a, b, [0, 0])
    g.outputs(g.arithmetic(Op.SUB, t, a, [], activation=2))
    return case(mb, [generated(F32, [2, 1], 18), generated(F32, [1, 3], 19)],
                output_lengths=[24])


def two_pools_and_omitted_dims() -> FuzzCase:
    """Inputs in one request pool, outputs in another of a different kind; the input gives
    its dims in the request because the operand leaves them unknown."""
    mb = ModelBuilder()
    g = mb.main
    g.outputs(g.add(g.input(F32, [0, 2]), g.input(F32, [2])))
    io = make_request([generated(F32, [3, 2], 9), generated(F32, [2], 10)],
                      [out_bytes(np.float32, 24)], state_input_dims=False)
    io.request.inputs[0].dimensions = [3, 2]
    io.request.pools[1] = MemoryPool(hidlMemory=Memory.create(io.output_pool.size, "mmap_fd"))
    return FuzzCase(mb.build(), io.request,
                    ExecutionChoices(loopTimeoutDuration_ns=SEED_LOOP_TIMEOUT_NS))


def repeated_in_while(operation: int, n: int) -> FuzzCase:
    """WHILE i < n: x <- operation(x), for a same-shape float operation."""
    mb = ModelBuilder()
    x_spec = (F32, [2, 3])
    cond = counter_cond(mb, x_spec)
    body = mb.subgraph()
    i, count, x = body.input(*INT32_1), body.input(*INT32_1), body.input(*x_spec)
    body.outputs(body.add(i, body.constant(I32, [1])), body.copy(count),
                 body.apply(operation, [x], *x_spec))
    g = mb.main
    n_in, x_in = g.input(*INT32_1), g.input(*x_spec)
    g.outputs(counted_loop(g, cond, body, n_in, x_in))
    return case(mb, [literal(I32, [n]), generated(F32, [2, 3], 30)])


# --- one operation per seed -----------------------------------------------------------------

def operand_info(arg: ExampleOperand, index: int) -> OperandInfo:
    """An input of a single-operation seed as the driver's operations see it."""
    lifetime = (L.NO_VALUE if arg.omitted else L.SUBGRAPH_INPUT if arg.constant is None
                else L.CONSTANT_COPY)
    value = None if arg.constant is None else literal(arg.type, arg.constant)
    return OperandInfo(index, arg.type, tuple(arg.dims), arg.scale, arg.zero_point,
                       lifetime, value, arg.channel_quant)


@dataclass(frozen=True)
class OperationSeed:
    """A model of one operation: its inputs, its outputs' specs, the execution path, and
    the seed of the generated values of its first input (the next inputs count on)."""
    operation: int
    args: Sequence[ExampleOperand]
    outputs: Sequence[OperandDeclaration]
    path: ExecutionPath = ExecutionPath.SYNC
    first_seed: int = 20

    def add_to(self, g: SubgraphBuilder) -> list[np.ndarray]:
        """Add the operation to ``g`` (its fed arguments become inputs of ``g``, its
        results outputs of ``g``); returns the values the request feeds."""
        inputs, fed = self.add_inputs(g)
        g.outputs(*g.operation(self.operation, inputs, self.outputs))
        return fed

    def add_inputs(self, g: SubgraphBuilder) -> tuple[list[int], list[np.ndarray]]:
        """The operation's inputs in ``g`` (fed ones become inputs of ``g``), and the
        values the request feeds."""
        inputs, fed = [], []
        for k, arg in enumerate(self.args):
            quant = dict(scale=arg.scale, zero_point=arg.zero_point,
                         extra=arg.channel_quant and OperandExtraParams(channelQuant=arg.channel_quant))
            if arg.omitted:
                inputs.append(g.omitted(arg.type, arg.dims))
            elif arg.constant is not None:
                inputs.append(g.constant(arg.type, arg.constant, arg.dims, **quant))
            else:
                inputs.append(g.input(arg.type, arg.dims, **quant))
                fed.append(generated(arg.type, arg.dims, self.first_seed + k) if arg.value is None
                           else literal(arg.type, arg.value))
        return inputs, fed

    def case(self) -> FuzzCase:
        mb = ModelBuilder()
        return case(mb, self.add_to(mb.main), self.path)

    def in_if(self, condition: bool) -> FuzzCase:
        """The operation inside both branches of an IF on a request-fed condition."""
        mb = ModelBuilder()
        then, otherwise = mb.subgraph(), mb.subgraph()
        fed = self.add_to(then)
        self.add_to(otherwise)
        g = mb.main
        cond = g.input(B8, [1])
        inputs = [g.input(*then.spec(i)) for i in then.input_indexes]
        g.outputs(*g.if_(cond, then, otherwise, inputs))
        return case(mb, [literal(B8, [condition]), *fed], self.path)

    def in_while(self, n: int) -> FuzzCase:
        """The operation in a WHILE body run ``n`` times: its fed inputs are input-only
        operands of the loop, its results are carried (their first values fed too)."""
        mb = ModelBuilder()
        body = mb.subgraph()
        i, count = body.input(*INT32_1), body.input(*INT32_1)
        for output in self.outputs:
            body.input(*output)
        inputs, fed = self.add_inputs(body)
        body.outputs(body.add(i, body.constant(I32, [1])), body.copy(count),
                     *body.operation(self.operation, inputs, self.outputs))
        loop_values = [body.spec(k) for k in body.input_indexes[2:]]
        cond = count_condition(mb, I32, others=loop_values)
        g = mb.main
        loop_inputs = [g.constant(I32, [0]), g.input(*INT32_1), *(g.input(*v) for v in loop_values)]
        g.outputs(*g.while_(cond, body, loop_inputs)[2:])
        first = [generated(t, dims, 40 + k) for k, (t, dims, *_) in enumerate(self.outputs)]
        return case(mb, [literal(I32, [n]), *first, *fed], self.path)


# --- one model per operation, from the driver's signatures -----------------------------------

#: The quantization of a quantized operand of each type in a generated seed.
_QUANTIZATION = {Q8: (0.5, 128), T.TENSOR_QUANT8_ASYMM_SIGNED: (0.25, -3),
                 T.TENSOR_QUANT8_SYMM: (0.5, 0), T.TENSOR_QUANT16_SYMM: (0.5, 0),
                 T.TENSOR_QUANT16_ASYMM: (0.5, 32768), T.TENSOR_QUANT8_SYMM_PER_CHANNEL: (0.0, 0)}
_DIMS = (2, 3, 4, 5)
_PATHS = tuple(ExecutionPath)
#: Candidate models tried per form before giving it up.
_MAX_TRIES = 256


def operation_seeds() -> dict[str, OperationSeed]:
    """For every operation the driver registers, each signature variant and a set of its
    concrete types that uses every allowed type at every position: one small model (and
    one more with its optional inputs omitted). Shapes lie in the rank ranges; scalar
    parameters come from the allowed values; parameter tensors (named int32 inputs) are
    small constants. Of the candidate models, the first the driver's validation and shape
    inference accept is kept, its outputs declared with the inferred shapes."""
    seeds: dict[str, OperationSeed] = {}
    for definition in definitions():
        for signature in definition.signatures:
            (inputs, _), (outputs, _) = signature.counts()
            operands = signature.operands_for(inputs, outputs)
            optional = any(o.optional for o in operands[0])
            for k, (in_types, out_types) in enumerate(_covering(concrete_types(signature))):
                for omit in (False, True) if k == 0 and optional else (False,):
                    seed = _operation_seed(definition.type, *operands, in_types, out_types, omit,
                                           _PATHS[len(seeds) % len(_PATHS)])
                    if seed is not None:
                        name = "_".join([definition.type.name.lower(), *dict.fromkeys(
                            _short(t) for t in in_types + out_types if t in TENSOR_TYPES)])
                        name += "_omitted" if omit else ""
                        seeds[name if name not in seeds else f"{name}_{inputs}_inputs"] = seed
        for k, example in enumerate(definition.examples):
            seed = _inferred_seed(definition.type, example.inputs, example.outputs,
                                  _PATHS[len(seeds) % len(_PATHS)])
            if seed is not None:      # tests/fuzz check that every example makes a seed
                seeds[f"{definition.type.name.lower()}_example_{k}"] = seed
    return seeds


def _covering(assignments) -> list[tuple]:
    """The assignments that bring a (position, type) pair not seen before: every allowed
    type at every position, in a few models."""
    seen, kept = set(), []
    for in_types, out_types in assignments:
        pairs = set(enumerate(in_types + out_types))
        if not pairs <= seen:
            seen |= pairs
            kept.append((in_types, out_types))
    return kept


def _short(operand_type: int) -> str:
    return T(operand_type).name.lower().removeprefix("tensor_")


def _operation_seed(operation: int, operands, out_operands, in_types, out_types, omit: bool,
                    path: ExecutionPath) -> Optional[OperationSeed]:
    first = operands[0]
    low, high = first.rank or (1, None)
    dims = list(_DIMS[:min(max(2, low), high or 4)])
    choices = [_arg_choices(o, t, k, dims, in_types[0], omit) for k, (o, t)
               in enumerate(zip(operands, in_types))]
    for args in itertools.islice(itertools.product(*choices), _MAX_TRIES):
        scale, zero_point = args[0].scale, args[0].zero_point
        outputs = [(t, *(operand.fixed_quantization(t) or (
                        (scale, zero_point) if t == in_types[0] else _QUANTIZATION.get(t, (0.0, 0)))))
                   for operand, t in zip(out_operands, out_types)]
        seed = _inferred_seed(operation, args, outputs, path)
        if seed is not None:
            return seed
    return None


def _inferred_seed(operation: int, args: Sequence[ExampleOperand],
                   outputs: Sequence[tuple[int, float, int]], path: ExecutionPath
                   ) -> Optional[OperationSeed]:
    """The seed of these inputs and outputs' (type, scale, zero point), its output shapes
    inferred, if the driver's validation and shape inference accept it."""
    infos = [operand_info(arg, k) for k, arg in enumerate(args)]
    out_infos = [OperandInfo(len(args) + k, t, (), scale, zero_point, L.SUBGRAPH_OUTPUT, None)
                 for k, (t, scale, zero_point) in enumerate(outputs)]
    shapes = output_shapes(operation, infos, out_infos)
    if shapes is None or not all(s is not None and 0 not in s for s in shapes):
        return None
    return OperationSeed(operation, list(args), [
        (t, list(shape), scale, zero_point) for (t, scale, zero_point), shape in zip(outputs, shapes)], path)


def _arg_choices(operand, operand_type: int, k: int, dims: list[int], first_type: int,
                 omit: bool) -> list[ExampleOperand]:
    """The candidates for input ``k``: a scalar from its allowed values, a parameter tensor
    of small constants, or a request-fed tensor of input 0's shape (later inputs also
    broadcast from its last dimension)."""
    if operand.optional and omit:
        return [ExampleOperand(operand_type, omitted=True)]
    if operand_type not in TENSOR_TYPES:
        return [ExampleOperand(operand_type, constant=v) for v in _scalar_choices(operand, operand_type)]
    scale, zero_point = _QUANTIZATION.get(operand_type, (0.0, 0))
    low, high = operand.rank or (0, None)
    shapes = [s for s in ([dims[-1:]] if k else []) + [dims, [len(dims)], [1], [len(dims), 2]]
              if low <= len(s) and (high is None or len(s) <= high)]
    if operand_type == I32 and operand.name:
        quants = [(0.0, 0)] + ([(_QUANTIZATION[first_type][0] ** 2, 0)]
                               if first_type in _QUANTIZATION else [])
        return [ExampleOperand(I32, s, constant=np.reshape(v, s), scale=sc, zero_point=zp)
                for s in shapes for v in _int_tensor_choices(int(np.prod(s)), dims)
                for sc, zp in quants]
    channel_quant = (SymmPerChannelQuantParams([0.5] * dims[0], 0)
                     if operand_type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL else None)
    return [ExampleOperand(operand_type, s, scale=scale, zero_point=zero_point, channel_quant=channel_quant)
            for s in shapes]


def _int_tensor_choices(n: int, dims: list[int]) -> list[list[int]]:
    """Axes and permutations, all ones or zeros (multiples, sizes, begins, paddings), the
    data's own dimensions (a shape)."""
    return [list(range(n)), [1] * n, [0] * n, (dims + [1] * n)[:n]]


def _scalar_choices(operand, operand_type: int) -> list:
    values = operand.values
    if isinstance(values, frozenset):
        return sorted(values)
    if isinstance(values, Range):
        low = values.low if values.low is not None else values.high
        return [low + 1 if values.low_exclusive else low]
    return {T.BOOL: [False, True], T.FLOAT32: [1.0], T.FLOAT16: [1.0]}.get(operand_type, [0, 1, -1])


# --- the seed set ----------------------------------------------------------------------------

def _wrapped_seeds(operations: dict[str, OperationSeed]) -> dict[str, Seed]:
    """Operations of the plain seeds again (their first float32 model, and each operation's
    first declared example), inside IF branches and WHILE bodies."""
    seeds: dict[str, Seed] = {}
    for k, operation in enumerate((Op.CONCATENATION, Op.RESHAPE, Op.SOFTMAX, Op.REDUCE_SUM,
                                   Op.GATHER, Op.SPLIT, Op.SELECT, Op.CAST, Op.QUANTIZE,
                                   Op.FULLY_CONNECTED)):
        name = next(name for name, seed in operations.items()
                    if seed.operation == operation and "float32" in name)
        seeds[f"if_{name}"] = lambda s=operations[name], c=bool(k % 2): s.in_if(c)
    for k, operation in enumerate((Op.LOGISTIC, Op.TANH, Op.RELU1, Op.SIN, Op.HARD_SWISH,
                                   Op.FLOOR)):
        seeds[f"while_{operation.name.lower()}_{k + 1}"] = (
            lambda o=operation, n=k + 1: repeated_in_while(o, n))
    for k, (name, seed) in enumerate((name, seed) for name, seed in operations.items()
                                     if name.endswith("_example_0")):
        seeds[f"if_{name}"] = lambda s=seed, c=bool(k % 2): s.in_if(c)
        seeds[f"while_{name}"] = lambda s=seed, n=k % 3 + 1: s.in_while(n)
    return seeds


_OPERATIONS = operation_seeds()

CONTROL_FLOW_SEEDS: dict[str, Seed] = {
    "if_true": lambda: if_branches(True),
    "if_false": lambda: if_branches(False),
    "if_true_float16_async": lambda: if_branches(True, F16, ExecutionPath.ASYNC),
    "if_false_int32_fenced": lambda: if_branches(False, I32, ExecutionPath.FENCED),
    "if_true_int32_burst": lambda: if_branches(True, I32, ExecutionPath.BURST),
    "if_constant_condition": if_constant_condition,
    "while_counter_3": lambda: while_counter(3),
    "while_counter_1_fenced": lambda: while_counter(1, ExecutionPath.FENCED),
    "while_counter_2_float16_async": lambda: while_counter(2, ExecutionPath.ASYNC, F16),
    "while_counter_4_int32_burst": lambda: while_counter(4, ExecutionPath.BURST, I32),
    "while_state_and_input_only": while_state_and_input_only,
    "while_zero_iterations": lambda: while_counter(0, ExecutionPath.BURST),
    "while_infinite": while_infinite,
    "while_growing_concatenation": while_growing_concatenation,
    "nested_if_in_while": nested_if_in_while,
    "nested_while_in_if": nested_while_in_if,
    "while_in_while": while_in_while,
    **_wrapped_seeds(_OPERATIONS),
}

SEEDS: dict[str, Seed] = {
    **CONTROL_FLOW_SEEDS,
    "logical_chain": logical_chain,
    "constant_in_pool": constant_in_pool,
    "dynamic_output_shape": dynamic_output_shape,
    "two_pools_and_omitted_dims": two_pools_and_omitted_dims,
    "add_float16_const": OperationSeed(
        Op.ADD, [ExampleOperand(F16, [2, 2]), ExampleOperand(F16, [2, 2], constant=generated(F16, [2, 2], 8)),
                 ExampleOperand(T.INT32, constant=0)], [(F16, [2, 2])], ExecutionPath.BURST).case,
    **{name: seed.case for name, seed in _OPERATIONS.items()},
}


def seed_specs() -> dict[str, codec.CaseSpec]:
    """Every seed as the spec its bytes serialize: the decoder places each value."""
    return {name: _one_element_values_literal(codec.relayout(make()))
            for name, make in SEEDS.items()}


def _one_element_values_literal(spec: codec.CaseSpec) -> codec.CaseSpec:
    """One-element constants and inputs (loop bounds and steps, IF conditions, scalar
    parameters) spelled out as literal bytes. The codec describes some as zeros or as
    generated values whose stream happens to start with them, which a mutation of the
    seed byte would replace by an unrelated value."""
    main = spec.model.main
    values = [(o, o.type, o.dimensions) for sg in spec.model.subgraphs() for o in sg.operands
              if o.lifetime in (L.CONSTANT_COPY, L.CONSTANT_REFERENCE)]
    values += [(a, main.operands[i].type, main.operands[i].dimensions)
               for a, i in zip(spec.request.inputs, main.inputIndexes) if not a.hasNoValue]
    for holder, operand_type, dims in values:
        data = codec.value_bytes(operand_type, dims, holder.value)
        if holder.value.kind != codec.ValueKind.LITERAL and len(data) == byte_size(operand_type, [1]):
            holder.value = codec.ValueSpec(codec.ValueKind.LITERAL, data=data)
    return spec
