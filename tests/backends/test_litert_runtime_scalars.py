"""Runtime scalars on LiteRT (backends/litert): a parameter LiteRT takes as a constant (a
fused activation, strides, a padding code, an axis, keep_dims) given by the request as a
main input. getSupportedOperations_1_3 says yes where the table expresses every value
validation accepts there; each request's values make a specialisation of the model,
lowered once per distinct values and kept by the engine; LiteRT then answers as the
bundled driver does on every path, also with the bundled driver's status for a value it
refuses. Skipped without the ``litert`` extra."""
from __future__ import annotations

import threading

import numpy as np
import pytest

pytest.importorskip("ai_edge_litert")
pytest.importorskip("flatbuffers")

from backends.litert import builtin_ref  # noqa: E402
from backends.litert.engine import SPECIALISATIONS  # noqa: E402
from driver import SampleDriver  # noqa: E402
from driver.hal.enums import ErrorStatus, OperandType as T, OperationType as Op  # noqa: E402
from hal_client.builder import ModelBuilder, make_request, out_like  # noqa: E402
from tests.driver.execution import Path, execute, prepare, run_concurrently  # noqa: E402
from tests.operations.on_device import (constant_input, fed_input, one_operation_model,  # noqa: E402
                                        run_everywhere)

F32, I32, BOOL, U8 = T.TENSOR_FLOAT32, T.INT32, T.BOOL, T.TENSOR_QUANT8_ASYMM
X = np.array([[-3.0, -0.5, 0.25, 2.0], [7.5, -1.25, 0.0, 4.0]], np.float32)
IMAGE = np.arange(1, 26, dtype=np.float32).reshape(1, 5, 5, 1) / 10
FILTER = np.array([1, -2, 0.5, 0, 1, 3, -1, 2, 1], np.float32).reshape(1, 3, 3, 1)
SAME, VALID = 1, 2


def int32(value: int):
    return fed_input(I32, np.array(value, np.int32))


def flag(value: bool):
    return fed_input(BOOL, np.array(value, np.bool_))


def conv(padding: list, strides: tuple[int, int], activation: int, out_hw: tuple[int, int],
         nchw: bool = False) -> tuple:
    """CONV_2D of IMAGE by FILTER, every scalar parameter fed by the request (``padding``:
    a scheme, or left, right, top, bottom)."""
    image = IMAGE.transpose(0, 3, 1, 2) if nchw else IMAGE
    out = (1, 1, *out_hw) if nchw else (1, *out_hw, 1)
    args = [fed_input(F32, image), constant_input(F32, FILTER), constant_input(F32, np.array([0.5], np.float32)),
            *map(int32, padding), *map(int32, strides), int32(activation), flag(nchw)]
    return Op.CONV_2D, args, [(F32, out, 0.0, 0)]


def transpose_conv(padding: tuple[int, int, int, int], strides: tuple[int, int], activation: int,
                   out_hw: tuple[int, int]) -> tuple:
    """TRANSPOSE_CONV_2D of IMAGE by FILTER with explicit padding (left, right, top,
    bottom), every scalar parameter fed by the request."""
    args = [fed_input(F32, IMAGE), constant_input(F32, FILTER), constant_input(F32, np.array([0.5], np.float32)),
            *map(int32, padding), *map(int32, strides), int32(activation), flag(False)]
    return Op.TRANSPOSE_CONV_2D, args, [(F32, (1, *out_hw, 1), 0.0, 0)]


#: One operation each, with runtime scalars: (operation, inputs, outputs).
CASES = {
    **{f"add_activation_{a}": (Op.ADD, [fed_input(F32, X), fed_input(F32, X[::-1].copy()), int32(a)],
                               [(F32, (2, 4), 0.0, 0)]) for a in range(4)},
    "add_int32": (Op.ADD, [fed_input(T.TENSOR_INT32, np.array([3, -4], np.int32)),
                           constant_input(T.TENSOR_INT32, np.array([1, 1], np.int32)), int32(0)],
                  [(T.TENSOR_INT32, (2,), 0.0, 0)]),
    "add_quant8_relu6": (Op.ADD, [fed_input(U8, np.array([0, 90, 200], np.uint8), 0.05, 100),
                                  constant_input(U8, np.array([3, 4, 5], np.uint8), 0.1, 0), int32(3)],
                         [(U8, (3,), 0.05, 100, )]),
    "fully_connected_relu1": (Op.FULLY_CONNECTED, [
        fed_input(F32, X), constant_input(F32, np.eye(4, dtype=np.float32)[:3]),
        constant_input(F32, np.zeros(3, np.float32)), int32(2)], [(F32, (2, 3), 0.0, 0)]),
    "conv_same_stride_2": conv([SAME], (2, 2), 0, (3, 3)),
    "conv_valid_strides_1_2_relu": conv([VALID], (1, 2), 1, (2, 3)),
    "conv_explicit_padding_nchw": conv([1, 0, 2, 1], (2, 1), 3, (6, 2), nchw=True),
    "transpose_conv_explicit_padding": transpose_conv((1, 0, 0, 2), (2, 1), 1, (5, 10)),
    "mean_keep_dims": (Op.MEAN, [fed_input(F32, X), constant_input(T.TENSOR_INT32, np.array([1], np.int32)),
                                 int32(1)], [(F32, (2, 1), 0.0, 0)]),
    "mean_no_keep_dims": (Op.MEAN, [fed_input(F32, X), constant_input(T.TENSOR_INT32, np.array([1], np.int32)),
                                    int32(0)], [(F32, (2,), 0.0, 0)]),
    "softmax_beta_axis_0": (Op.SOFTMAX, [fed_input(F32, X), fed_input(T.FLOAT32, np.array(0.5, np.float32)),
                                         int32(0)], [(F32, (2, 4), 0.0, 0)]),
    "concatenation_axis_1": (Op.CONCATENATION, [fed_input(F32, X), fed_input(F32, X), int32(1)],
                             [(F32, (2, 8), 0.0, 0)]),
    "average_pool_window": (Op.AVERAGE_POOL_2D, [fed_input(F32, IMAGE), int32(SAME), int32(2), int32(1),
                                                 int32(3), int32(2), int32(0)], [(F32, (1, 5, 3, 1), 0.0, 0)]),
    "resize_bilinear_size_and_flags": (Op.RESIZE_BILINEAR, [
        fed_input(F32, IMAGE), int32(3), int32(7), flag(False), flag(True), flag(False)],
        [(F32, (1, 7, 3, 1), 0.0, 0)]),
    "argmax_axis": (Op.ARGMAX, [fed_input(F32, X), int32(0)], [(T.TENSOR_INT32, (4,), 0.0, 0)]),
    "gather_axis": (Op.GATHER, [fed_input(F32, X), int32(1), constant_input(T.TENSOR_INT32, np.array([3, 0], np.int32))],
                    [(F32, (2, 2), 0.0, 0)]),
    "pad_v2_value": (Op.PAD_V2, [fed_input(F32, X), constant_input(T.TENSOR_INT32, np.array([[1, 0], [0, 2]], np.int32)),
                                fed_input(T.FLOAT32, np.array(-9.5, np.float32))], [(F32, (3, 6), 0.0, 0)]),
    "space_to_depth_block": (Op.SPACE_TO_DEPTH, [fed_input(F32, IMAGE[:, :4, :4]), int32(2), flag(False)],
                             [(F32, (1, 2, 2, 4), 0.0, 0)]),
}


@pytest.fixture(scope="module")
def litert():
    device = builtin_ref()
    yield device
    device.engine.close()


def assert_same_answers(litert, case: tuple) -> dict:
    """LiteRT's statuses and outputs on every path are the bundled driver's; returns them."""
    expected = run_everywhere(*case)
    got = run_everywhere(*case, device=litert)
    for path, (status, outputs) in expected.items():
        assert got[path][0] == status, f"{path}: LiteRT {got[path][0].name}, bundled {status.name}"
        for mine, theirs in zip(got[path][1], outputs, strict=True):
            np.testing.assert_allclose(mine, theirs, rtol=1e-6, atol=1e-6, err_msg=path)
    return got


# --- supported, and the bundled driver's answers ---------------------------------------------

@pytest.mark.parametrize("keep_dims", [constant_input(I32, np.array(-1, np.int32)), int32(-1)],
                         ids=["constant", "runtime"])
def test_mean_keeps_the_reduced_dimensions_only_for_a_positive_keep_dims(litert, keep_dims):
    """MEAN's keep_dims is an INT32, set when positive: -1 reduces [2, 2, 2] to [2, 2]."""
    case = (Op.MEAN, [fed_input(F32, X.reshape(2, 2, 2)), constant_input(T.TENSOR_INT32, np.array([1], np.int32)),
                      keep_dims], [(F32, (2, 2), 0.0, 0)])
    got = assert_same_answers(litert, case)
    assert all(status == ErrorStatus.NONE for status, _ in got.values()), got


#: Values validation refuses, and values that contradict the model: (operation, inputs,
#: outputs).
REFUSED = {
    "activation_out_of_range": (Op.ADD, [fed_input(F32, X), fed_input(F32, X), int32(4)], [(F32, (2, 4), 0.0, 0)]),
    "negative_activation": (Op.FULLY_CONNECTED, [
        fed_input(F32, X), constant_input(F32, np.eye(4, dtype=np.float32)[:3]),
        constant_input(F32, np.zeros(3, np.float32)), int32(-1)], [(F32, (2, 3), 0.0, 0)]),
    "int32_activation": (Op.ADD, [fed_input(T.TENSOR_INT32, np.array([3, -4], np.int32)),
                                  constant_input(T.TENSOR_INT32, np.array([1, 1], np.int32)), int32(1)],
                         [(T.TENSOR_INT32, (2,), 0.0, 0)]),
    "padding_code_3": conv([3], (1, 1), 0, (3, 3)),
    "stride_0": conv([VALID], (0, 1), 0, (3, 3)),
    "keep_dims_against_the_declared_rank": (Op.MEAN, [
        fed_input(F32, X), constant_input(T.TENSOR_INT32, np.array([1], np.int32)), int32(0)],
        [(F32, (2, 1), 0.0, 0)]),
    "negative_axis": (Op.CONCATENATION, [fed_input(F32, X), fed_input(F32, X), int32(-1)],
                           [(F32, (2, 8), 0.0, 0)]),
    "transpose_conv_padding_past_the_output": transpose_conv((0, 0, 4, 4), (1, 1), 0, (1, 7)),
    "zero_beta": (Op.SOFTMAX, [fed_input(F32, X), fed_input(T.FLOAT32, np.array(0.0, np.float32)), int32(-1)],
                  [(F32, (2, 4), 0.0, 0)]),
    "pool_filter_past_the_input": (Op.AVERAGE_POOL_2D, [fed_input(F32, IMAGE), int32(VALID), int32(1), int32(1),
                                                        int32(6), int32(1), int32(0)], [(F32, (1, 5, 5, 1), 0.0, 0)]),
}


@pytest.mark.parametrize("name", sorted(CASES) + sorted(REFUSED))
def test_runtime_scalars_are_supported_and_answered_as_the_bundled_driver_does(litert, name):
    """Supported whatever the values; a value the bundled driver refuses gets its status."""
    case = CASES[name] if name in CASES else REFUSED[name]
    model, _ = one_operation_model(*case)
    assert litert.getSupportedOperations_1_3(model) == (ErrorStatus.NONE, [True])
    got = assert_same_answers(litert, case)
    expected = ErrorStatus.GENERAL_FAILURE if name in REFUSED else ErrorStatus.NONE
    assert all(status == expected for status, _ in got.values()), got


# --- specialisations ----------------------------------------------------------------------------

def _relu_model():
    """ADD of two [3] inputs (a shape no other test uses, so that its specialisations are
    this test's own), its fused activation a model input."""
    mb = ModelBuilder()
    g = mb.main
    a, b, activation = g.input(F32, [3]), g.input(F32, [3]), g.input(I32)
    (out,) = g.operation(Op.ADD, [a, b, activation], [(F32, [3])])
    g.outputs(out)
    return mb.build()


def _add(prepared, activation: int, path: Path) -> np.ndarray:
    io = make_request([np.array([-4, 0.5, 9], np.float32), np.array([1, 0, -1], np.float32),
                       np.array(activation, np.int32)], [out_like(np.float32, [3])])
    outcome = execute(prepared, io.request, path)
    assert outcome.status == ErrorStatus.NONE, outcome
    return io.output(0, [3])


def test_each_distinct_value_is_specialised_once(litert):
    statistics = litert.engine.statistics
    prepared, again = prepare(_relu_model(), litert), prepare(_relu_model(), litert)
    before = statistics["specialised"]
    np.testing.assert_array_equal(_add(prepared, 0, Path.SYNC), [-3, 0.5, 8])
    np.testing.assert_array_equal(_add(prepared, 3, Path.ASYNC), [0, 0.5, 6])
    assert statistics["specialised"] == before + 2
    compiled = statistics["compiled"]
    # The same values again, also through another prepared model of the same content.
    np.testing.assert_array_equal(_add(prepared, 3, Path.FENCED), [0, 0.5, 6])
    np.testing.assert_array_equal(_add(again, 0, Path.BURST), [-3, 0.5, 8])
    np.testing.assert_array_equal(_add(again, 2, Path.SYNC), [-1, 0.5, 1])
    assert statistics["specialised"] == before + 3
    assert statistics["compiled"] == compiled


def test_a_diagnostic_run_reads_the_specialisations_operands(litert):
    """The values of the main operands (what the fuzz harness compares after a wrong
    answer) come from the specialisation to the request's values."""
    model = _relu_model()
    prepared = prepare(model, litert)
    io = make_request([np.array([-4, 0.5, 9], np.float32), np.array([1, 0, -1], np.float32),
                       np.array(3, np.int32)], [out_like(np.float32, [3])])
    values = prepared.operand_values(io.request)
    np.testing.assert_array_equal(values[model.main.outputIndexes[0]], [0, 0.5, 6])


def test_executions_of_new_values_at_once_make_one_specialisation(litert, monkeypatch):
    """Four executions ask for the same new specialisation; the first to make it does so
    only once all four have asked."""
    engine, executions = litert.engine, 4
    prepared = prepare(_relu_model(), litert)
    before = engine.statistics["specialised"]
    asked, all_asked = [], threading.Event()
    specialisation, lower = engine.specialisation, engine.lower

    def asking(*args):
        asked.append(1)
        if len(asked) == executions:
            all_asked.set()
        return specialisation(*args)

    def lowering(*args):
        assert all_asked.wait(30)
        return lower(*args)
    monkeypatch.setattr(engine, "specialisation", asking)
    monkeypatch.setattr(engine, "lower", lowering)
    results = []

    def run() -> None:
        results.append(_add(prepared, 1, Path.SYNC))
    run_concurrently(run, [()] * executions)
    assert len(results) == executions and all((result == [0, 0.5, 8]).all() for result in results)
    assert engine.statistics["specialised"] == before + 1


def test_the_engine_keeps_the_most_recent_specialisations(litert):
    """SOFTMAX's beta takes any positive value: one past the memo's capacity evicts the
    least recently used."""
    mb = ModelBuilder()
    g = mb.main
    data, beta = g.input(F32, [1, 5]), g.input(T.FLOAT32)
    (out,) = g.operation(Op.SOFTMAX, [data, beta], [(F32, [1, 5])])
    g.outputs(out)
    prepared = prepare(mb.build(), litert)
    statistics = litert.engine.statistics

    def softmax(beta: float) -> None:
        io = make_request([np.arange(5, dtype=np.float32).reshape(1, 5), np.array(beta, np.float32)],
                          [out_like(np.float32, [1, 5])])
        assert execute(prepared, io.request, Path.SYNC).status == ErrorStatus.NONE
    before = statistics["specialised"]
    for k in range(SPECIALISATIONS + 1):
        softmax(1.0 + k)
    assert statistics["specialised"] == before + SPECIALISATIONS + 1
    softmax(1.0 + SPECIALISATIONS)          # the most recent: kept
    assert statistics["specialised"] == before + SPECIALISATIONS + 1
    softmax(1.0)                            # the least recent: evicted
    assert statistics["specialised"] == before + SPECIALISATIONS + 2


# --- what stays unsupported -------------------------------------------------------------------

def _concatenation_by_rank() -> ModelBuilder:
    """CONCATENATION along the axis RANK computes (a scalar no request gives)."""
    mb = ModelBuilder()
    g = mb.main
    a, b, c = g.input(F32, [2, 2]), g.input(F32, [2, 2]), g.input(F32, [3])
    (rank,) = g.operation(Op.RANK, [c], [(I32, [])])
    (out,) = g.operation(Op.CONCATENATION, [a, b, rank], [(F32, [0, 0])])
    g.outputs(out)
    return mb.build()


def _scalar_in_a_branch():
    """An IF whose branch adds with the activation its caller passes from a main input."""
    mb = ModelBuilder()
    branch = mb.subgraph()
    x, activation = branch.input(F32, [2]), branch.input(I32)
    (added,) = branch.operation(Op.ADD, [x, x, activation], [(F32, [2])])
    branch.outputs(added)
    g = mb.main
    condition, x, activation = g.input(T.TENSOR_BOOL8, [1]), g.input(F32, [2]), g.input(I32)
    g.outputs(*g.if_(condition, branch, branch, [x, activation], [(F32, [2])]))
    return mb.build()


UNSUPPORTED = {
    # Parameters LiteRT expresses for some values only.
    "elu_alpha": lambda: one_operation_model(Op.ELU, [fed_input(F32, X), fed_input(T.FLOAT32, np.array(1.0, np.float32))],
                                             [(F32, (2, 4), 0.0, 0)])[0],
    "log_softmax_beta": lambda: one_operation_model(Op.LOG_SOFTMAX, [
        fed_input(F32, X), fed_input(T.FLOAT32, np.array(1.0, np.float32)), int32(-1)], [(F32, (2, 4), 0.0, 0)])[0],
    "pool_explicit_padding": lambda: one_operation_model(Op.MAX_POOL_2D, [
        fed_input(F32, IMAGE), *map(int32, (0, 0, 0, 0, 1, 1, 2, 2, 0))], [(F32, (1, 4, 4, 1), 0.0, 0)])[0],
    "transpose_conv_implicit_padding": lambda: one_operation_model(Op.TRANSPOSE_CONV_2D, [
        fed_input(F32, IMAGE), constant_input(F32, FILTER), constant_input(F32, np.array([0.5], np.float32)),
        constant_input(T.TENSOR_INT32, np.array([1, 5, 5, 1], np.int32)), constant_input(I32, np.array(SAME, np.int32)),
        int32(1), int32(1), constant_input(I32, np.array(0, np.int32)), constant_input(BOOL, np.array(False))],
        [(F32, (1, 5, 5, 1), 0.0, 0)])[0],
}


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_a_parameter_expressed_for_some_values_only_stays_unsupported(litert, name):
    assert litert.getSupportedOperations_1_3(UNSUPPORTED[name]()) == (ErrorStatus.NONE, [False])


def test_a_scalar_an_operation_computes_is_unsupported(litert):
    assert litert.getSupportedOperations_1_3(_concatenation_by_rank()) == (ErrorStatus.NONE, [False, False])


def test_a_runtime_scalar_read_in_a_referenced_subgraph_is_unsupported(litert):
    """Specialising makes the main subgraph's inputs constants; a branch reads its own."""
    model = _scalar_in_a_branch()
    assert SampleDriver().getSupportedOperations_1_3(model) == (ErrorStatus.NONE, [True])
    assert litert.getSupportedOperations_1_3(model) == (ErrorStatus.NONE, [False])
