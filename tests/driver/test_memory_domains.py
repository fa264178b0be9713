"""Memory domains (IDevice.allocate, IBuffer, tokens in a Request's pools), in the manner of
the VTS's MemoryDomainTests: every allocate rule, copyTo and copyFrom, and executions on
every path reading and writing driver-managed buffers."""
from __future__ import annotations

import gc
import math

import numpy as np
import pytest

from driver.device import SampleDriver
from driver.hal.enums import ErrorStatus, OperandType as T, OperationType as Op
from driver.hal.structs import (BufferDesc, BufferRole, DataLocation, MemoryPool, Model,
                                OperandExtraParams, Request, RequestArgument,
                                SymmPerChannelQuantParams)
from driver.memory import Memory
from hal_client.builder import ModelBuilder
from tests.driver.execution import ALL_PATHS, SHAPE_PATHS, Path, execute, prepare, run_concurrently

INVALID, FAILURE, NONE = (ErrorStatus.INVALID_ARGUMENT, ErrorStatus.GENERAL_FAILURE,
                          ErrorStatus.NONE)
DIMS = [2, 3]
NBYTES = 4 * math.prod(DIMS)


def add_model(dims=DIMS, operand_type=T.TENSOR_FLOAT32, scale=0.0, zero_point=0) -> Model:
    """out = a + b with the activation an INT32 scalar input (so that a role may be a
    scalar): inputs a, b, act; output out."""
    mb = ModelBuilder()
    g = mb.main
    a = g.input(operand_type, dims, scale, zero_point)
    b = g.input(operand_type, dims, scale, zero_point)
    act = g.input(T.INT32)
    g.outputs(g.apply(Op.ADD, [a, b, act], operand_type, dims, scale, zero_point))
    return mb.build()


def twin_model() -> Model:
    """Two independent doublings: out0 = x0 + x0, out1 = x1 + x1 (TENSOR_FLOAT32 DIMS)."""
    mb = ModelBuilder()
    g = mb.main
    x0, x1 = g.input(T.TENSOR_FLOAT32, DIMS), g.input(T.TENSOR_FLOAT32, DIMS)
    g.outputs(g.add(x0, x0), g.add(x1, x1))
    return mb.build()


@pytest.fixture
def device():
    return SampleDriver()


def allocate(device, prepared_models, inputs=(), outputs=(), dims=()):
    """(status, buffer, token) of roles (modelIndex, ioIndex) at frequency 1."""
    return device.allocate(BufferDesc(list(dims)), list(prepared_models),
                           [BufferRole(m, i, 1.0) for m, i in inputs],
                           [BufferRole(m, i, 1.0) for m, i in outputs])


def allocated(device, prepared, inputs=(), outputs=(), dims=()):
    """A buffer of ``prepared``'s roles and its token; fails the test unless allocated."""
    status, buffer, token = allocate(device, [prepared], [(0, i) for i in inputs],
                                     [(0, i) for i in outputs], dims)
    assert status == NONE and buffer is not None and token > 0
    return buffer, token


def floats(values, dims=DIMS) -> Memory:
    return Memory.from_bytes(np.asarray(values, np.float32).reshape(dims).tobytes())


def read_floats(buffer, dims=DIMS) -> np.ndarray:
    memory = Memory.create(4 * math.prod(dims))
    assert buffer.copyTo(memory) == NONE
    return np.frombuffer(memory.read(), np.float32).reshape(dims)


# --- a request mixing shared memory and buffers --------------------------------------------

def request(inputs, outputs, device_pools=()) -> Request:
    """``inputs`` / ``outputs``: per argument, a numpy array (input data, in a pool of its
    own), an int n (an output buffer of n bytes, in a pool of its own), None (no value), or
    ("token", k, dims) naming device_pools[k]. Device pools come after the memory pools."""
    pools, arguments = [], []
    for kind, items in (("input", inputs), ("output", outputs)):
        args = []
        for item in items:
            if item is None:
                args.append(RequestArgument(hasNoValue=True))
            elif isinstance(item, tuple):
                args.append(("token", item[1], list(item[2]) if len(item) > 2 else []))
            else:
                memory = (Memory.from_bytes(np.asarray(item).tobytes()) if kind == "input"
                          else Memory.create(item))
                pools.append(MemoryPool(hidlMemory=memory))
                args.append(RequestArgument(location=DataLocation(len(pools) - 1, 0, memory.size)))
        arguments.append(args)
    first_device_pool = len(pools)
    pools += [MemoryPool(token=token) for token in device_pools]
    resolved = [[RequestArgument(location=DataLocation(first_device_pool + arg[1]), dimensions=arg[2])
                 if isinstance(arg, tuple) else arg for arg in args] for args in arguments]
    return Request(inputs=resolved[0], outputs=resolved[1], pools=pools)


def output_values(req: Request, position: int = 0, dims=DIMS) -> np.ndarray:
    location = req.outputs[position].location
    raw = req.pools[location.poolIndex].hidlMemory.read(location.offset, location.length)
    return np.frombuffer(raw, np.float32).reshape(dims)


def token_arg(k: int, dims=()):
    return ("token", k, dims)


A = np.arange(6, dtype=np.float32).reshape(DIMS)
B = np.full(DIMS, 0.5, np.float32)
ACT = np.int32(0)


# --- IDevice.allocate --------------------------------------------------------------------

def test_allocate_returns_a_buffer_and_distinct_positive_tokens(device):
    prepared = prepare(add_model(), device)
    tokens = set()
    buffers = []
    for roles in ([(0, 0)], [(0, 1)], [(0, 2)]):
        status, buffer, token = allocate(device, [prepared], roles, [(0, 0)] if roles != [(0, 2)] else [])
        assert status == NONE and buffer is not None and token > 0
        buffers.append(buffer)
        tokens.add(token)
    assert len(tokens) == 3


@pytest.mark.parametrize("case", [
    "no roles", "no roles, one model", "model index out of range", "input index out of range",
    "output index out of range", "None prepared model", "not a prepared model",
    "prepared model of another device", "frequency 10", "frequency 0", "frequency -0.5",
    "frequency nan", "frequency not a number", "input role twice", "output role twice",
    "one model listed twice", "desc rank differs", "desc dimension differs",
    "desc dimensions for a scalar", "desc dimensions not uint32", "role not a BufferRole",
])
def test_allocate_refuses(device, case):
    prepared = prepare(add_model(), device)
    models, inputs, outputs, desc = [prepared], [BufferRole(0, 0, 1.0)], [], BufferDesc([])
    if case == "no roles":
        models, inputs = [], []
    elif case == "no roles, one model":
        inputs = []
    elif case == "model index out of range":
        inputs = [BufferRole(1, 0, 1.0)]
    elif case == "input index out of range":
        inputs = [BufferRole(0, 3, 1.0)]
    elif case == "output index out of range":
        outputs = [BufferRole(0, 1, 1.0)]
    elif case == "None prepared model":
        models = [None]
    elif case == "not a prepared model":
        models = [object()]
    elif case == "prepared model of another device":
        models = [prepare(add_model(), SampleDriver())]
    elif case.startswith("frequency"):
        frequency = {"10": 10.0, "0": 0.0, "-0.5": -0.5, "nan": math.nan,
                     "not": "1"}[case.split()[1]]
        inputs = [BufferRole(0, 0, frequency)]
        outputs = [BufferRole(0, 0, frequency)]
    elif case == "input role twice":
        inputs = [BufferRole(0, 0, 1.0), BufferRole(0, 0, 0.5)]
    elif case == "output role twice":
        inputs, outputs = [], [BufferRole(0, 0, 1.0), BufferRole(0, 0, 1.0)]
    elif case == "one model listed twice":
        models, inputs = [prepared, prepared], [BufferRole(0, 0, 1.0), BufferRole(1, 0, 1.0)]
    elif case == "desc rank differs":
        desc = BufferDesc([2])
    elif case == "desc dimension differs":
        desc = BufferDesc([2, 4])
    elif case == "desc dimensions for a scalar":
        inputs, desc = [BufferRole(0, 2, 1.0)], BufferDesc([1])
    elif case == "desc dimensions not uint32":
        desc = BufferDesc([2, -3])
    elif case == "role not a BufferRole":
        inputs = [(0, 0, 1.0)]
    assert device.allocate(desc, models, inputs, outputs) == (INVALID, None, 0)


@pytest.mark.parametrize("conflict", [
    dict(operand_type=T.TENSOR_FLOAT16), dict(dims=[2]), dict(dims=[4, 3]),
])
@pytest.mark.parametrize("roles", ["inputs", "input and output", "outputs"])
def test_allocate_refuses_conflicting_roles(device, conflict, roles):
    first, second = prepare(add_model(), device), prepare(add_model(**conflict), device)
    inputs, outputs = {"inputs": ([(0, 0), (1, 0)], []), "input and output": ([(0, 0)], [(1, 0)]),
                       "outputs": ([], [(0, 0), (1, 0)])}[roles]
    assert allocate(device, [first, second], inputs, outputs) == (INVALID, None, 0)


@pytest.mark.parametrize("conflict", [dict(scale=1.0), dict(zero_point=10)])
def test_allocate_refuses_conflicting_quantization(device, conflict):
    quant = dict(operand_type=T.TENSOR_QUANT8_ASYMM, scale=0.5, zero_point=0)
    first, second = prepare(add_model(**quant), device), prepare(add_model(**{**quant, **conflict}), device)
    assert allocate(device, [first, second], [(0, 0), (1, 0)]) == (INVALID, None, 0)
    assert allocate(device, [first, second], [(0, 0)], [(1, 0)]) == (INVALID, None, 0)


def test_allocate_refuses_conflicting_channel_quantization(device):
    def model(scales):
        mb = ModelBuilder()
        g = mb.main
        quant = OperandExtraParams(channelQuant=SymmPerChannelQuantParams(scales, 1))
        x = g.input(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, DIMS, extra=quant)
        g.outputs(g.apply(Op.DEQUANTIZE, [x], T.TENSOR_FLOAT32, DIMS))
        return mb.build()
    first, second = prepare(model([0.5, 1.0, 2.0]), device), prepare(model([0.5, 1.0, 4.0]), device)
    assert allocate(device, [first, second], [(0, 0), (1, 0)]) == (INVALID, None, 0)
    assert allocate(device, [first, first], [(0, 0)])[0] == NONE


def test_allocate_combines_the_dimensions_of_roles_and_descriptor(device):
    # One role knows the first dimension, the other the second, the descriptor neither.
    first, second = prepare(add_model(dims=[2, 0]), device), prepare(add_model(dims=[0, 3]), device)
    status, buffer, _ = allocate(device, [first, second], [(0, 0), (1, 0)])
    assert status == NONE
    assert buffer.copyFrom(floats(A), []) == NONE      # [2, 3], fully known
    assert buffer.copyFrom(floats(A), [2, 3]) == NONE


def test_a_buffer_of_unknown_rank(device):
    prepared = prepare(add_model(dims=[]), device)
    buffer, _ = allocated(device, prepared, inputs=[0], outputs=[0])
    assert buffer.copyFrom(floats(A), []) == INVALID
    assert buffer.copyFrom(floats(A), [6]) == NONE
    assert read_floats(buffer, [6]).tolist() == A.ravel().tolist()


# --- IBuffer.copyFrom and copyTo ----------------------------------------------------------

def test_copy_to_an_uninitialised_buffer_fails(device):
    buffer, _ = allocated(device, prepare(add_model(), device), inputs=[0], outputs=[0])
    assert buffer.copyTo(Memory.create(NBYTES)) == FAILURE


@pytest.mark.parametrize("size", [NBYTES // 2, NBYTES * 2, NBYTES - 1])
def test_copy_sizes_must_match(device, size):
    buffer, _ = allocated(device, prepare(add_model(), device), inputs=[0], outputs=[0])
    assert buffer.copyFrom(Memory.create(size), []) == INVALID
    assert buffer.copyFrom(floats(A), []) == NONE
    assert buffer.copyTo(Memory.create(size)) == INVALID
    assert read_floats(buffer).tolist() == A.tolist()


@pytest.mark.parametrize("dims", [[2], [3, 3], [0, 3], [2, 3, 1]])
def test_copy_from_refuses_dimensions_the_buffer_does_not_allow(device, dims):
    buffer, _ = allocated(device, prepare(add_model(), device), inputs=[0], outputs=[0])
    assert buffer.copyFrom(floats(A), dims) == INVALID
    assert buffer.copyFrom(floats(A), []) == NONE
    assert buffer.copyFrom(floats(A), DIMS) == NONE


def test_copy_from_fixes_unknown_dimensions(device):
    prepared = prepare(add_model(dims=[0, 3]), device)
    buffer, _ = allocated(device, prepared, inputs=[0], outputs=[0])
    assert buffer.copyFrom(floats(A), []) == INVALID           # unknown, none given
    assert buffer.copyFrom(floats(A), [2, 0]) == INVALID       # still unknown
    assert buffer.copyFrom(floats(A), [2, 4]) == INVALID       # against the known 3
    assert buffer.copyFrom(Memory.create(NBYTES * 2), [2, 3]) == INVALID   # size
    assert buffer.copyFrom(floats(A), [2, 3]) == NONE
    assert buffer.copyTo(Memory.create(NBYTES // 2)) == INVALID
    assert read_floats(buffer).tolist() == A.tolist()
    four_rows = np.arange(12, dtype=np.float32).reshape(4, 3)
    assert buffer.copyFrom(floats(four_rows, [4, 3]), [4, 3]) == NONE
    assert read_floats(buffer, [4, 3]).tolist() == four_rows.tolist()


def test_a_failed_copy_from_leaves_the_buffer_uninitialised(device):
    buffer, _ = allocated(device, prepare(add_model(), device), inputs=[0], outputs=[0])
    assert buffer.copyFrom(floats(A), []) == NONE
    assert buffer.copyFrom(Memory.create(3), []) == INVALID
    assert buffer.copyTo(Memory.create(NBYTES)) == FAILURE


def test_scalar_buffers(device):
    buffer, _ = allocated(device, prepare(add_model(), device), inputs=[2])
    assert buffer.copyFrom(Memory.from_bytes(np.int32(0).tobytes()), [1]) == INVALID
    assert buffer.copyFrom(Memory.from_bytes(np.int32(0).tobytes()), []) == NONE
    memory = Memory.create(4)
    assert buffer.copyTo(memory) == NONE and memory.read() == bytes(4)


@pytest.mark.parametrize("garbage", [None, "x", b"1234", 3, Memory.create(NBYTES)],
                         ids=["None", "str", "bytes", "int", "closed"])
def test_copies_answer_garbage_with_invalid_argument(device, garbage):
    if isinstance(garbage, Memory):
        garbage.close()
    buffer, _ = allocated(device, prepare(add_model(), device), inputs=[0], outputs=[0])
    assert buffer.copyFrom(garbage, []) == INVALID
    assert buffer.copyFrom(floats(A), []) == NONE
    assert buffer.copyTo(garbage) == INVALID
    assert buffer.copyFrom(floats(A), garbage) == INVALID


# --- executions --------------------------------------------------------------------------

@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
def test_inputs_and_outputs_through_buffers(device, path):
    prepared = prepare(add_model(), device)
    a, a_token = allocated(device, prepared, inputs=[0])
    b, b_token = allocated(device, prepared, inputs=[1])
    out, out_token = allocated(device, prepared, outputs=[0])
    assert a.copyFrom(floats(A), []) == NONE and b.copyFrom(floats(B), []) == NONE
    outcome = execute(prepared, request([token_arg(0), token_arg(1), ACT], [token_arg(2)],
                                        [a_token, b_token, out_token]), path)
    assert outcome.status == NONE
    if path in SHAPE_PATHS:
        assert [shape.dimensions for shape in outcome.output_shapes] == [DIMS]
        assert outcome.output_shapes[0].isSufficient
    assert read_floats(out).tolist() == (A + B).tolist()


@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
def test_one_buffer_feeds_two_inputs(device, path):
    prepared = prepare(add_model(), device)
    buffer, token = allocated(device, prepared, inputs=[0, 1])
    assert buffer.copyFrom(floats(A), []) == NONE
    req = request([token_arg(0), token_arg(0), ACT], [NBYTES], [token])
    assert execute(prepared, req, path).status == NONE
    assert output_values(req).tolist() == (A + A).tolist()


@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
@pytest.mark.parametrize("token", [0, 100, -1, "x"])
def test_a_token_naming_no_buffer_is_invalid(device, path, token):
    prepared = prepare(add_model(), device)
    assert execute(prepared, request([token_arg(0), B, ACT], [NBYTES], [token]), path).status == INVALID
    assert execute(prepared, request([A, B, ACT], [token_arg(0)], [token]), path).status == INVALID


@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
def test_a_freed_buffer_token_is_invalid(device, path):
    prepared = prepare(add_model(), device)
    buffer, token = allocated(device, prepared, inputs=[0], outputs=[0])
    assert buffer.copyFrom(floats(A), []) == NONE
    assert execute(prepared, request([token_arg(0), B, ACT], [NBYTES], [token]), path).status == NONE
    del buffer
    gc.collect()
    assert execute(prepared, request([token_arg(0), B, ACT], [NBYTES], [token]), path).status == INVALID
    # A later buffer may reuse no token while the old one lived, and now names itself only.
    other, other_token = allocated(device, prepared, inputs=[0])
    assert other.copyFrom(floats(B), []) == NONE
    req = request([token_arg(0), B, ACT], [NBYTES], [other_token])
    assert execute(prepared, req, path).status == NONE


@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
def test_a_buffer_of_another_prepared_model_is_invalid(device, path):
    prepared, other = prepare(add_model(), device), prepare(add_model(), device)
    buffer, token = allocated(device, prepared, inputs=[0], outputs=[0])
    assert buffer.copyFrom(floats(A), []) == NONE
    assert execute(other, request([token_arg(0), B, ACT], [NBYTES], [token]), path).status == INVALID
    assert execute(other, request([A, B, ACT], [token_arg(0)], [token]), path).status == INVALID
    assert execute(prepared, request([token_arg(0), B, ACT], [NBYTES], [token]), path).status == NONE


@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
def test_a_buffer_in_a_role_it_was_not_allocated_for_is_invalid(device, path):
    prepared = prepare(twin_model(), device)
    input_buffer, input_token = allocated(device, prepared, inputs=[0])
    output_buffer, output_token = allocated(device, prepared, outputs=[0])
    assert input_buffer.copyFrom(floats(A), []) == NONE
    assert output_buffer.copyFrom(floats(A), []) == NONE
    # Another input or output index.
    assert execute(prepared, request([A, token_arg(0)], [NBYTES, NBYTES], [input_token]), path).status == INVALID
    assert execute(prepared, request([A, A], [NBYTES, token_arg(0)], [output_token]), path).status == INVALID
    # Input for output and output for input.
    assert execute(prepared, request([A, A], [token_arg(0), NBYTES], [input_token]), path).status == INVALID
    assert execute(prepared, request([token_arg(0), A], [NBYTES, NBYTES], [output_token]), path).status == INVALID


@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
def test_an_uninitialised_input_fails_until_an_execution_writes_the_buffer(device, path):
    prepared = prepare(add_model(), device)
    buffer, token = allocated(device, prepared, inputs=[0], outputs=[0])
    assert execute(prepared, request([token_arg(0), B, ACT], [NBYTES], [token]), path).status == FAILURE
    assert execute(prepared, request([A, B, ACT], [token_arg(0)], [token]), path).status == NONE
    assert read_floats(buffer).tolist() == (A + B).tolist()
    assert execute(prepared, request([token_arg(0), B, ACT], [token_arg(0)], [token]), path).status == INVALID
    req = request([token_arg(0), B, ACT], [NBYTES], [token])
    assert execute(prepared, req, path).status == NONE
    assert output_values(req).tolist() == (A + B + B).tolist()


@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
def test_a_buffer_written_by_an_output_is_used_by_no_other_argument(device, path):
    prepared = prepare(twin_model(), device)
    buffer, token = allocated(device, prepared, inputs=[0, 1], outputs=[0, 1])
    assert buffer.copyFrom(floats(A), []) == NONE
    assert execute(prepared, request([token_arg(0), A], [token_arg(0), NBYTES], [token]), path).status == INVALID
    assert execute(prepared, request([A, A], [token_arg(0), token_arg(0)], [token]), path).status == INVALID
    # The same buffer in two pools is still one buffer.
    assert execute(prepared, request([A, A], [token_arg(0), token_arg(1)], [token, token]), path).status == INVALID
    assert execute(prepared, request([token_arg(0), token_arg(0)], [NBYTES, NBYTES], [token]), path).status == NONE


@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
@pytest.mark.parametrize("location", [DataLocation(0, 4, 0), DataLocation(0, 0, NBYTES)])
def test_a_buffer_argument_has_no_offset_or_length(device, path, location):
    prepared = prepare(add_model(), device)
    buffer, token = allocated(device, prepared, inputs=[0], outputs=[0])
    assert buffer.copyFrom(floats(A), []) == NONE
    req = request([A, B, ACT], [NBYTES], [token])
    device_pool = len(req.pools) - 1
    req.inputs[0] = RequestArgument(location=DataLocation(device_pool, location.offset, location.length))
    assert execute(prepared, req, path).status == INVALID


@pytest.mark.parametrize("path", SHAPE_PATHS, ids=lambda p: p.value)
def test_buffer_dimensions_in_executions(device, path):
    # The model leaves the first dimension unknown; the buffer is allocated as [2, 3].
    prepared = prepare(add_model(dims=[0, 3]), device)
    buffer, token = allocated(device, prepared, inputs=[0, 1], outputs=[0], dims=DIMS)
    assert buffer.copyFrom(floats(A), []) == NONE
    four_rows = np.zeros((4, 3), np.float32)
    assert execute(prepared, request([token_arg(0, [4, 3]), four_rows, ACT], [4 * 12], [token]),
                   path).status == INVALID
    assert execute(prepared, request([four_rows, four_rows, ACT], [token_arg(0, [4, 3])], [token]),
                   path).status == INVALID
    # Dimensions the buffer does not know are found by the execution: it fails when they
    # do not fit the buffer, and the buffer is then uninitialised.
    req = request([four_rows, four_rows, ACT], [token_arg(0)], [token])
    for argument in req.inputs[:2]:
        argument.dimensions = [4, 3]
    assert execute(prepared, req, path).status == FAILURE
    assert buffer.copyTo(Memory.create(NBYTES)) == FAILURE
    # Inputs read from a buffer take its dimensions.
    assert buffer.copyFrom(floats(A), []) == NONE
    outcome = execute(prepared, request([token_arg(0), token_arg(0, DIMS), ACT], [NBYTES], [token]), path)
    assert outcome.status == NONE and outcome.output_shapes[0].dimensions == DIMS


@pytest.mark.parametrize("path", SHAPE_PATHS, ids=lambda p: p.value)
def test_an_execution_gives_a_buffer_its_dimensions(device, path):
    prepared = prepare(add_model(dims=[0, 3]), device)
    buffer, token = allocated(device, prepared, inputs=[0], outputs=[0])
    four_rows = np.arange(12, dtype=np.float32).reshape(4, 3)
    req = request([four_rows, four_rows, ACT], [token_arg(0)], [token])
    for argument in req.inputs[:2]:
        argument.dimensions = [4, 3]
    outcome = execute(prepared, req, path)
    assert outcome.status == NONE and outcome.output_shapes[0].dimensions == [4, 3]
    assert read_floats(buffer, [4, 3]).tolist() == (four_rows * 2).tolist()
    assert buffer.copyTo(Memory.create(NBYTES)) == INVALID


def test_fenced_needs_every_output_dimension_from_the_model_or_the_buffer(device):
    prepared = prepare(add_model(dims=[0, 3]), device)
    unknown, unknown_token = allocated(device, prepared, outputs=[0])
    known, known_token = allocated(device, prepared, outputs=[0], dims=DIMS)
    a = np.zeros(DIMS, np.float32)
    req = request([a, a, ACT], [token_arg(0)], [unknown_token])
    for argument in req.inputs[:2]:
        argument.dimensions = DIMS
    assert execute(prepared, req, Path.FENCED).status == INVALID
    req.pools[-1] = MemoryPool(token=known_token)
    assert execute(prepared, req, Path.FENCED).status == NONE
    assert read_floats(known).tolist() == np.zeros(DIMS).tolist()


@pytest.mark.parametrize("path", SHAPE_PATHS, ids=lambda p: p.value)
def test_a_failed_execution_leaves_its_output_buffers_uninitialised(device, path):
    prepared = prepare(twin_model(), device)
    buffer, token = allocated(device, prepared, outputs=[0])
    assert buffer.copyFrom(floats(A), []) == NONE
    # Output 1's buffer is too small: the execution fails, buffer included.
    outcome = execute(prepared, request([A, A], [token_arg(0), NBYTES - 1], [token]), path)
    assert outcome.status == ErrorStatus.OUTPUT_INSUFFICIENT_SIZE
    assert outcome.output_shapes[0].isSufficient and not outcome.output_shapes[1].isSufficient
    assert buffer.copyTo(Memory.create(NBYTES)) == FAILURE


def test_a_burst_keeps_buffers_named_by_token(device):
    prepared = prepare(add_model(), device)
    buffer, token = allocated(device, prepared, inputs=[0], outputs=[0])
    assert buffer.copyFrom(floats(A), []) == NONE
    status, burst = prepared.configureExecutionBurst(None)
    assert status == NONE
    for step in range(1, 4):
        # Each execution adds B to the buffer through a second buffer-free request.
        req = request([token_arg(0), B, ACT], [token_arg(0)], [token])
        assert execute(prepared, req, Path.BURST, burst=burst).status == INVALID
        out = request([token_arg(0), B, ACT], [NBYTES], [token])
        assert execute(prepared, out, Path.BURST, burst=burst).status == NONE
        assert buffer.copyFrom(floats(output_values(out)), []) == NONE
        assert read_floats(buffer).tolist() == (A + step * B).tolist()


def test_concurrent_executions_read_and_write_buffers(device):
    prepared = prepare(add_model(), device)
    source, source_token = allocated(device, prepared, inputs=[0])
    assert source.copyFrom(floats(A), []) == NONE
    errors = []

    def run(path):
        target, target_token = allocated(device, prepared, outputs=[0])
        for _ in range(20):
            req = request([token_arg(0), B, ACT], [token_arg(1)], [source_token, target_token])
            status = execute(prepared, req, path).status
            if status != NONE or read_floats(target).tolist() != (A + B).tolist():
                errors.append((path, status))
    run_concurrently(run, [(path,) for path in ALL_PATHS for _ in range(2)])
    assert errors == []
