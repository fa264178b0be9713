"""The rank and size limits on any one value (driver/limits.py), wherever a shape comes
from: declared by the model, inferred by an operation at prepare or run time, supplied by
a request, carried by a loop, or computed from values. A model declaring a rank over the
limit has its operations reported unsupported; every other shape over a limit is refused
with RESOURCE_EXHAUSTED_PERSISTENT, on every execution path, before numpy is asked for it
(past its own limits numpy raises, or crashes the process)."""
from __future__ import annotations

import math
import time
from typing import Sequence

import numpy as np
import pytest

from driver.device import SampleDriver
from driver.hal import Model, OperandType as T, OperationType as Op
from driver.hal.enums import ErrorStatus
from driver.errors import ResourceError
from driver.hal.dtypes import PRODUCT_BOUND, bounded_product
from driver.limits import MAX_RANK, MAX_VALUE_BYTES, check_shape, itemsize, value_nbytes
from hal_client.builder import ModelBuilder, SubgraphBuilder, make_request, out_bytes
from hal_client.examples import count_condition
from tests.driver.execution import (ALL_PATHS, Path, deadline_in, execute, prepare,
                                   prepare_status)

EXHAUSTED = ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT


def rank_of(g: SubgraphBuilder, value: int) -> None:
    """Make RANK(value) the subgraph's output: a scalar, whatever the shape of value, so
    that the fenced path (which needs fully specified outputs) runs these models too."""
    g.outputs(g.apply(Op.RANK, [value], T.INT32, []))


def rank_of_input(dims: Sequence[int]) -> Model:
    """RANK of a TENSOR_FLOAT32 input declared ``dims``."""
    mb = ModelBuilder()
    rank_of(mb.main, mb.main.input(T.TENSOR_FLOAT32, dims))
    return mb.build()


def run(model: Model, inputs: Sequence[np.ndarray], path, dims: Sequence[Sequence[int]] = ()):
    """Execute with the inputs' shapes stated in the request, or ``dims`` (rank past
    numpy's) in their place: returns (status, the RANK output when there is one)."""
    io = make_request(inputs, [out_bytes(np.int32, 4)])
    for argument, stated in zip(io.request.inputs, dims):
        argument.dimensions = list(stated)
    outcome = execute(prepare(model), io.request, path)
    return outcome.status, int(io.output(0, ())) if outcome.status == ErrorStatus.NONE else None


def gather_model(x_dims: Sequence[int], indices_dims: Sequence[int]) -> Model:
    mb = ModelBuilder()
    g = mb.main
    x, indices = g.input(T.TENSOR_FLOAT32, x_dims), g.input(T.TENSOR_INT32, indices_dims)
    rank_of(g, g.apply(Op.GATHER, [x, g.int32(0), indices], T.TENSOR_FLOAT32, []))
    return mb.build()


# --- the checks ---------------------------------------------------------------------------

@pytest.mark.parametrize("operand_type, shape", [
    (T.TENSOR_FLOAT32, (2, 3)), (T.TENSOR_FLOAT16, (0, 5)), (T.TENSOR_INT32, ()),
    (T.TENSOR_QUANT8_ASYMM, (1, 0, 0, 7)), (T.SUBGRAPH, (4,)), (T.TENSOR_BOOL8, (-3, 2)),
])
def test_value_nbytes_counts_zero_dimensions_as_one(operand_type, shape):
    item_bytes = {T.TENSOR_FLOAT32: 4, T.TENSOR_FLOAT16: 2, T.TENSOR_INT32: 4,
                  T.TENSOR_QUANT8_ASYMM: 1, T.SUBGRAPH: 1, T.TENSOR_BOOL8: 1}[operand_type]
    assert itemsize(operand_type) == item_bytes
    assert value_nbytes(shape, item_bytes) == item_bytes * math.prod(max(d, 1) for d in shape)


def test_check_shape_refuses_values_over_the_limits():
    assert check_shape((MAX_VALUE_BYTES // 4,), 4, "operand 2") == MAX_VALUE_BYTES
    assert check_shape(None, 4, "operand 2") == 0
    assert check_shape((1,) * MAX_RANK, 4, "operand 2") == 4
    with pytest.raises(ResourceError, match=r"operand 2: shape \[1024, 0, 65537\] needs"):
        check_shape((1024, 0, 65537), 4, "operand 2")
    with pytest.raises(ResourceError, match=f"operand 2: rank {MAX_RANK + 1} is over"):
        check_shape((1,) * (MAX_RANK + 1), 4, "operand 2")


# --- declared by the model, inferred at prepare time -------------------------------------

@pytest.mark.parametrize("rank, supported", [(MAX_RANK, True), (MAX_RANK + 1, False), (65, False)])
@pytest.mark.parametrize("constant", [False, True], ids=["input", "constant"])
def test_a_declared_rank_over_the_limit_is_unsupported_not_invalid(rank, supported, constant):
    """Ranks past numpy's own limit (64) too: a constant's value is never made."""
    if constant:
        mb = ModelBuilder()
        g = mb.main
        x = g.constant(T.TENSOR_FLOAT32, np.zeros(1), dims=[1] * rank)
        rank_of(g, g.apply(Op.GATHER, [x, g.int32(0), g.input(T.TENSOR_INT32, [1])],
                           T.TENSOR_FLOAT32, []))
        model = mb.build()
    else:
        model = gather_model([1] * rank, [1])
    assert SampleDriver().getSupportedOperations_1_3(model) == (ErrorStatus.NONE, [supported, True])
    expected = ErrorStatus.NONE if supported else ErrorStatus.INVALID_ARGUMENT
    assert prepare_status(SampleDriver(), model)[:2] == (expected, expected)


def test_a_rank_inferred_over_the_limit_at_prepare_time_is_refused():
    model = gather_model([1] * 17, [1] * 17)    # the output's rank: 33
    assert SampleDriver().getSupportedOperations_1_3(model) == (EXHAUSTED, [])
    assert prepare_status(SampleDriver(), model)[:2] == (EXHAUSTED, EXHAUSTED)


# --- inferred at run time ----------------------------------------------------------------

@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
@pytest.mark.parametrize("x_rank, indices_rank", [(17, 17), (33, 33), (36, 36)])
def test_a_rank_inferred_over_the_limit_at_run_time_is_refused(path, x_rank, indices_rank):
    """GATHER of inputs of unknown rank: ranks 36 and 36 (an output of rank 71) crashed
    numpy; 33 and 33 raised ValueError out of the driver."""
    model = gather_model([], [])
    inputs = [np.zeros(1, np.float32), np.zeros(1, np.int32)]
    dims = [[1] * x_rank, [1] * indices_rank]
    assert run(model, inputs, path, dims) == (EXHAUSTED, None)
    assert run(model, inputs, path, [[1] * 16, [1] * 17]) == (ErrorStatus.NONE, MAX_RANK)


@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
def test_expand_dims_past_the_rank_limit_is_refused(path):
    mb = ModelBuilder()
    g = mb.main
    rank_of(g, g.apply(Op.EXPAND_DIMS, [g.input(T.TENSOR_FLOAT32, []), g.int32(0)],
                       T.TENSOR_FLOAT32, []))
    model, x = mb.build(), [np.zeros(1, np.float32)]
    assert run(model, x, path, [[1] * MAX_RANK]) == (EXHAUSTED, None)
    assert run(model, x, path, [[1] * (MAX_RANK - 1)]) == (ErrorStatus.NONE, MAX_RANK)


# --- supplied by a request ---------------------------------------------------------------

@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
@pytest.mark.parametrize("rank", [MAX_RANK + 1, 65])
def test_request_dimensions_over_the_rank_limit_are_refused(path, rank):
    model, x = rank_of_input([]), [np.zeros(1, np.float32)]
    assert run(model, x, path, [[1] * rank]) == (EXHAUSTED, None)
    assert run(model, x, path, [[1] * MAX_RANK]) == (ErrorStatus.NONE, MAX_RANK)


# --- carried by a loop -------------------------------------------------------------------

def growing_while_model(iterations: int) -> Model:
    """i = 0; while i < iterations: (i, x) = (i + 1, EXPAND_DIMS(x, 0)); returns RANK(x)."""
    mb = ModelBuilder()
    grows = (T.TENSOR_FLOAT32, [], 0.0, 0)
    cond = count_condition(mb, limit=iterations, others=[grows])
    body = mb.subgraph()
    i, x = body.input(T.TENSOR_INT32, [1]), body.input(T.TENSOR_FLOAT32, [])
    body.outputs(body.add(i, body.constant(T.TENSOR_INT32, [1])),
                 body.apply(Op.EXPAND_DIMS, [x, body.int32(0)], T.TENSOR_FLOAT32, []))
    g = mb.main
    _, grown = g.while_(cond, body, [g.input(T.TENSOR_INT32, [1]), g.input(T.TENSOR_FLOAT32, [1])])
    rank_of(g, grown)
    return mb.build()


@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
def test_a_loop_growing_its_state_past_the_rank_limit_is_refused(path):
    inputs = [np.zeros(1, np.int32), np.zeros(1, np.float32)]
    assert run(growing_while_model(64), inputs, path) == (EXHAUSTED, None)
    assert run(growing_while_model(MAX_RANK - 1), inputs, path) == (ErrorStatus.NONE, MAX_RANK)


# --- computed from values at run time ----------------------------------------------------

def sized_by_values_model(operation: int) -> Model:
    """FILL(dims), TILE(x, multiples) or PAD(x, paddings), sized by a request input."""
    mb = ModelBuilder()
    g = mb.main
    if operation == Op.FILL:
        inputs = [g.input(T.TENSOR_INT32, [0]), g.constant(T.FLOAT32, 1.0)]
    else:
        inputs = [g.input(T.TENSOR_FLOAT32, [2, 3]),
                  g.input(T.TENSOR_INT32, [2] if operation == Op.TILE else [2, 2])]
    rank_of(g, g.apply(operation, inputs, T.TENSOR_FLOAT32, []))
    return mb.build()


HUGE = 2**31 - 1
#: The fuzzer's FILL: 2**31 - 1 among 32 sizes, some 0, raised "array is too big" from
#: np.full (numpy refuses an empty array whose other sizes overflow its index range).
FUZZED_FILL_DIMS = [4, 4, HUGE, 4, 3, 2, 0, 6, 6, 1, 3, 3, 3, 6, 0, 6,
                    4, 4, 3, 2, 0, 5, 1, 2, 4, 0, 7, 7, 0, 3, 1, 3]
X = np.zeros((2, 3), np.float32)
SIZED_BY_VALUES = {
    "fill-fuzzed": (Op.FILL, [np.array(FUZZED_FILL_DIMS, np.int32)]),
    "fill": (Op.FILL, [np.array([MAX_VALUE_BYTES // 4 + 1], np.int32)]),
    "tile": (Op.TILE, [X, np.array([HUGE, 0], np.int32)]),
    "pad": (Op.PAD, [X, np.array([[0, MAX_VALUE_BYTES // 12], [0, 0]], np.int32)]),
}


@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
@pytest.mark.parametrize("case", sorted(SIZED_BY_VALUES))
def test_sizes_computed_from_values_past_the_limit_are_refused(path, case):
    operation, inputs = SIZED_BY_VALUES[case]
    assert run(sized_by_values_model(operation), inputs, path) == (EXHAUSTED, None)


# --- huge dimension lists ----------------------------------------------------------------

UINT32_MAX = 2**32 - 1
#: How many times longer a huge dimension list may take to answer than the same list of
#: ones, which the driver walks the same way: the product of the dimensions built in full
#: took 15 s for the request and 264 s for the model below, about 100 times the list of
#: ones. A ratio, so that a loaded or slow machine slows both sides alike.
SLOWER_THAN_ONES_AT_MOST = 10


def seconds(answer) -> float:
    started = time.monotonic()
    answer()
    return time.monotonic() - started


def test_bounded_product_stops_past_its_bound():
    assert bounded_product([]) == 1
    assert bounded_product([3, 5, 7], 105) == 105
    assert bounded_product([3, 5, 7], 104) == 105
    assert bounded_product([UINT32_MAX] * 3) == PRODUCT_BOUND + 1
    assert bounded_product([2] * 100 + [0]) == 0
    assert bounded_product([1] * 1000 + [6], 6) == 6
    assert bounded_product([UINT32_MAX] * 1000 + [0]) == 0
    assert bounded_product([2] * 63 + [1] * 100) == 2**63
    assert bounded_product([2] * 65 + [1] * 100) == PRODUCT_BOUND + 1


def test_a_request_stating_100000_huge_dimensions_is_refused_at_once():
    """Its bytes overflow uint32 (INVALID_ARGUMENT), within its 100 ms deadline or so."""
    prepared = prepare(rank_of_input([]))

    def refused(dimension: int) -> None:
        io = make_request([np.zeros(2, np.float32)], [out_bytes(np.int32, 4)])
        io.request.inputs[0].dimensions = [dimension] * 100_000
        outcome = execute(prepared, io.request, Path.SYNC, deadline=deadline_in(0.1))
        assert outcome.status == ErrorStatus.INVALID_ARGUMENT
    assert seconds(lambda: refused(UINT32_MAX)) < SLOWER_THAN_ONES_AT_MOST * seconds(lambda: refused(1))


def test_a_model_declaring_400000_huge_dimensions_is_refused_at_once():
    def refused() -> None:
        model = rank_of_input([UINT32_MAX] * 400_000)
        assert SampleDriver().getSupportedOperations_1_3(model) == (ErrorStatus.INVALID_ARGUMENT, [])

    def unsupported() -> None:
        assert SampleDriver().getSupportedOperations_1_3(rank_of_input([1] * 400_000)) == (
            ErrorStatus.NONE, [False])
    assert seconds(refused) < SLOWER_THAN_ONES_AT_MOST * seconds(unsupported)


def test_a_model_declaring_400000_dimensions_of_one_has_its_operation_unsupported():
    """Valid (one element), and over the rank limit: unsupported, not a product of 400,000
    factors (nor a numpy array of that rank)."""
    assert SampleDriver().getSupportedOperations_1_3(rank_of_input([1] * 400_000)) == (
        ErrorStatus.NONE, [False])
