"""Each oracle rule on hand-made results: it passes what the HAL allows and raises its own
violation class for what it forbids."""
from __future__ import annotations

import struct

import pytest

from driver.hal import (UINT64_MAX, DataLocation, ErrorStatus, MeasureTiming, Model, Operand,
                        OperandLifeTime as L, OperandType as T, Operation, OperationType,
                        OutputShape, Request, RequestArgument, Subgraph, Timing)
from driver.hal import ExecutionCallback
from fuzz import oracles
from fuzz.case import ExecutionPath
from fuzz.oracles import ExecutionResult

NONE = ErrorStatus.NONE
INSUFFICIENT = ErrorStatus.OUTPUT_INSUFFICIENT_SIZE


def one_output_model(operand_type: T = T.TENSOR_FLOAT32, dims=(2, 2)) -> Model:
    operands = [Operand(T.TENSOR_FLOAT32, [2, 2], 1, lifetime=L.SUBGRAPH_INPUT),
                Operand(operand_type, list(dims), lifetime=L.SUBGRAPH_OUTPUT)]
    main = Subgraph(operands, [Operation(OperationType.ABS, [0], [1])], [0], [1])
    return Model(main=main)


def request_with_output_length(length: int) -> Request:
    return Request(inputs=[RequestArgument(location=DataLocation(0, 0, 16))],
                   outputs=[RequestArgument(location=DataLocation(1, 0, length))])


# --- results of the right form ------------------------------------------------------------

def test_as_status_accepts_enum_and_int_and_rejects_others():
    assert oracles.as_status(ErrorStatus.GENERAL_FAILURE, "x") is ErrorStatus.GENERAL_FAILURE
    assert oracles.as_status(4, "x") is ErrorStatus.INVALID_ARGUMENT
    for bad in (None, 99, True, "NONE"):
        with pytest.raises(oracles.MalformedResultViolation, match="not an ErrorStatus"):
            oracles.as_status(bad, "executeSynchronously_1_3")


def test_unpack_checks_arity():
    assert oracles.unpack((1, 2), 2, "x") == (1, 2)
    with pytest.raises(oracles.MalformedResultViolation, match="expected a tuple of 3"):
        oracles.unpack((NONE, []), 3, "executeSynchronously_1_3")


def test_supported_list_has_one_entry_per_main_operation():
    model = one_output_model()
    oracles.check_supported_list(NONE, [True], model)
    oracles.check_supported_list(ErrorStatus.INVALID_ARGUMENT, [], model)
    with pytest.raises(oracles.MalformedResultViolation, match="one bool per operation"):
        oracles.check_supported_list(NONE, [], model)


# --- callbacks ----------------------------------------------------------------------------

def test_notified_exactly_once():
    callback = ExecutionCallback()
    with pytest.raises(oracles.CallbackNotifyViolation, match="0 times"):
        oracles.check_notified_once(callback, "execute_1_3")
    callback.notify_1_3(NONE, [], Timing())
    oracles.check_notified_once(callback, "execute_1_3")
    callback.notify_1_3(NONE, [], Timing())
    with pytest.raises(oracles.CallbackNotifyViolation, match="2 times"):
        oracles.check_notified_once(callback, "execute_1_3")


def test_failed_launch_must_notify_its_own_status():
    oracles.check_launch_matches_callback(NONE, ErrorStatus.GENERAL_FAILURE, "execute_1_3")
    oracles.check_launch_matches_callback(ErrorStatus.INVALID_ARGUMENT, ErrorStatus.INVALID_ARGUMENT, "x")
    with pytest.raises(oracles.LaunchStatusViolation, match="returned INVALID_ARGUMENT but notified"):
        oracles.check_launch_matches_callback(ErrorStatus.INVALID_ARGUMENT, NONE, "prepareModel_1_3")


def test_prepared_model_presence_matches_status():
    oracles.check_prepared_model_presence(NONE, object())
    oracles.check_prepared_model_presence(ErrorStatus.GENERAL_FAILURE, None)
    with pytest.raises(oracles.CallbackResultViolation, match="without a prepared model"):
        oracles.check_prepared_model_presence(NONE, None)
    with pytest.raises(oracles.CallbackResultViolation, match="with a prepared model"):
        oracles.check_prepared_model_presence(ErrorStatus.GENERAL_FAILURE, object())


def test_fence_error_needs_an_error_status():
    oracles.check_fence_consistent(True, ErrorStatus.GENERAL_FAILURE)
    oracles.check_fence_consistent(False, NONE)
    with pytest.raises(oracles.FenceViolation):
        oracles.check_fence_consistent(True, NONE)


# --- validity -----------------------------------------------------------------------------

def test_supported_and_prepare_agree_on_invalid_argument():
    invalid = ErrorStatus.INVALID_ARGUMENT
    oracles.check_supported_vs_prepare(invalid, [], invalid, True)
    oracles.check_supported_vs_prepare(NONE, [True, False], invalid, True)   # unsupported op
    oracles.check_supported_vs_prepare(NONE, [True], invalid, False)         # bad preference
    with pytest.raises(oracles.SupportedPrepareViolation, match="prepareModel_1_3 succeeded"):
        oracles.check_supported_vs_prepare(invalid, [], NONE, True)
    with pytest.raises(oracles.SupportedPrepareViolation, match="supports every operation"):
        oracles.check_supported_vs_prepare(NONE, [True, True], invalid, True)


def test_invalid_model_must_be_rejected():
    oracles.check_invalid_model_rejected(None, NONE, [True], NONE)
    oracles.check_invalid_model_rejected("bad", NONE, [False], ErrorStatus.INVALID_ARGUMENT)
    with pytest.raises(oracles.InvalidModelAcceptedViolation, match="prepareModel_1_3 accepted .*bad"):
        oracles.check_invalid_model_rejected("bad", ErrorStatus.INVALID_ARGUMENT, [], NONE)
    with pytest.raises(oracles.InvalidModelAcceptedViolation, match="getSupportedOperations_1_3"):
        oracles.check_invalid_model_rejected("bad", NONE, [True], ErrorStatus.INVALID_ARGUMENT)


def test_invalid_request_must_be_rejected():
    oracles.check_invalid_request_rejected("bad", ErrorStatus.INVALID_ARGUMENT, ExecutionPath.SYNC)
    oracles.check_invalid_request_rejected(None, NONE, ExecutionPath.SYNC)
    with pytest.raises(oracles.InvalidRequestAcceptedViolation, match="BURST execution returned NONE"):
        oracles.check_invalid_request_rejected("bad", NONE, ExecutionPath.BURST)


# --- execution results --------------------------------------------------------------------

def test_output_shapes_count_and_dimensions():
    model, request = one_output_model(dims=(2, 0)), request_with_output_length(16)
    oracles.check_output_shapes(NONE, [OutputShape([2, 2])], request, model, "SYNC")
    oracles.check_output_shapes(ErrorStatus.GENERAL_FAILURE, [], request, model, "SYNC")
    oracles.check_output_shapes(NONE, None, request, model, "FENCED")
    with pytest.raises(oracles.OutputShapesViolation, match="0 output shapes for 1"):
        oracles.check_output_shapes(INSUFFICIENT, [], request, model, "SYNC")
    with pytest.raises(oracles.OutputShapesViolation, match="incompatible with the model"):
        oracles.check_output_shapes(NONE, [OutputShape([3, 2])], request, model, "SYNC")
    with pytest.raises(oracles.MalformedResultViolation, match="not an OutputShape"):
        oracles.check_output_shapes(NONE, [[2, 2]], request, model, "SYNC")


def test_output_shapes_must_agree_with_request_dimensions():
    model = one_output_model(dims=(0, 0))
    request = request_with_output_length(16)
    request.outputs[0].dimensions = [2, 2]
    with pytest.raises(oracles.OutputShapesViolation, match="request"):
        oracles.check_output_shapes(NONE, [OutputShape([4, 1])], request, model, "ASYNC")


def test_insufficient_flag_with_none_status():
    model, request = one_output_model(), request_with_output_length(16)
    oracles.check_sufficiency(NONE, [OutputShape([2, 2], True)], request, model, "SYNC")
    with pytest.raises(oracles.SufficiencyViolation):
        oracles.check_sufficiency(NONE, [OutputShape([2, 2], False)], request, model, "SYNC")


def test_insufficient_size_needs_a_short_buffer():
    model = one_output_model()
    short = request_with_output_length(15)
    oracles.check_sufficiency(INSUFFICIENT, [OutputShape([2, 2], False)], short, model, "SYNC")
    with pytest.raises(oracles.InsufficientSizeViolation, match="every output buffer holds"):
        oracles.check_sufficiency(INSUFFICIENT, [OutputShape([2, 2], True)],
                                  request_with_output_length(16), model, "SYNC")
    with pytest.raises(oracles.InsufficientSizeViolation, match="flagged insufficient"):
        oracles.check_sufficiency(INSUFFICIENT, [OutputShape([1, 2], False)], short, model, "SYNC")


def test_timing_rules():
    measured = Timing(timeOnDevice=5, timeInDriver=7)
    oracles.check_timing(NONE, Timing(), MeasureTiming.NO, "x")
    oracles.check_timing(NONE, measured, MeasureTiming.YES, "x")
    oracles.check_timing(NONE, Timing(UINT64_MAX, 7), MeasureTiming.YES, "x")
    with pytest.raises(oracles.TimingViolation, match="not requested"):
        oracles.check_timing(NONE, measured, MeasureTiming.NO, "x")
    with pytest.raises(oracles.TimingViolation, match="with status GENERAL_FAILURE"):
        oracles.check_timing(ErrorStatus.GENERAL_FAILURE, measured, MeasureTiming.YES, "x")
    with pytest.raises(oracles.TimingViolation, match="timeInDriver 3 < timeOnDevice 5"):
        oracles.check_timing(NONE, Timing(5, 3), MeasureTiming.YES, "x")
    with pytest.raises(oracles.MalformedResultViolation):
        oracles.check_timing(NONE, None, MeasureTiming.NO, "x")


# --- determinism --------------------------------------------------------------------------

def result(path, status=NONE, shapes=([2, 2],), outputs=(b"\0" * 16,)) -> ExecutionResult:
    shapes = None if shapes is None else [OutputShape(list(s)) for s in shapes]
    return ExecutionResult(path, status, shapes, list(outputs))


def test_same_results_pass():
    model, request = one_output_model(), request_with_output_length(16)
    oracles.check_same_results(result(ExecutionPath.SYNC), result(ExecutionPath.BURST),
                               model, request, True)
    oracles.check_same_results(result(ExecutionPath.SYNC), result(ExecutionPath.FENCED, shapes=None),
                               model, request, True)


def test_different_status_shape_or_bytes_is_nondeterminism():
    model, request = one_output_model(), request_with_output_length(16)
    sync = result(ExecutionPath.SYNC)
    with pytest.raises(oracles.NondeterminismViolation, match="status NONE vs GENERAL_FAILURE"):
        oracles.check_same_results(sync, result(ExecutionPath.ASYNC, ErrorStatus.GENERAL_FAILURE),
                                   model, request, True)
    with pytest.raises(oracles.NondeterminismViolation, match="shape"):
        oracles.check_same_results(sync, result(ExecutionPath.ASYNC, shapes=([4, 1],)), model, request, True)
    flipped = b"\x01" + b"\0" * 15
    with pytest.raises(oracles.NondeterminismViolation, match="SYNC vs FENCED: output 0 bytes differ"):
        oracles.check_same_results(sync, result(ExecutionPath.FENCED, shapes=None, outputs=(flipped,)),
                                   model, request, True)


def test_time_dependent_statuses_and_unspecified_fenced_outputs_are_excepted():
    model, request = one_output_model(), request_with_output_length(16)
    sync = result(ExecutionPath.SYNC)
    late = result(ExecutionPath.ASYNC, ErrorStatus.MISSED_DEADLINE_TRANSIENT, shapes=())
    oracles.check_same_results(sync, late, model, request, True)
    fenced_failure = result(ExecutionPath.FENCED, ErrorStatus.INVALID_ARGUMENT, shapes=None)
    oracles.check_same_results(sync, fenced_failure, model, request, False)
    with pytest.raises(oracles.NondeterminismViolation):
        oracles.check_same_results(sync, fenced_failure, model, request, True)


def test_nan_payloads_compare_equal_but_other_bits_do_not():
    model, request = one_output_model(), request_with_output_length(16)
    quiet_nan = struct.pack("<I", 0x7FC00000) + bytes(12)
    other_nan = struct.pack("<I", 0x7FC00001) + bytes(12)
    oracles.check_same_results(result(ExecutionPath.SYNC, outputs=(quiet_nan,)),
                               result(ExecutionPath.BURST, outputs=(other_nan,)), model, request, True)
    int_model = one_output_model(T.TENSOR_INT32)
    with pytest.raises(oracles.NondeterminismViolation):
        oracles.check_same_results(result(ExecutionPath.SYNC, outputs=(quiet_nan,)),
                                   result(ExecutionPath.BURST, outputs=(other_nan,)),
                                   int_model, request, True)


def test_random_operations_are_not_compared_bytewise():
    model, request = one_output_model(), request_with_output_length(16)
    model.main.operations[0].type = OperationType.RANDOM_MULTINOMIAL
    oracles.check_same_results(result(ExecutionPath.SYNC, outputs=(b"\1" * 16,)),
                               result(ExecutionPath.SYNC, outputs=(b"\2" * 16,)), model, request, True)


def test_violations_name_their_rule_and_are_assertions():
    rules = {cls.rule for cls in oracles.OracleViolation.__subclasses__()}
    assert len(rules) == len(oracles.OracleViolation.__subclasses__())   # one rule per class
    violation = oracles.TimingViolation("late", key="k")
    assert isinstance(violation, AssertionError)
    assert str(violation) == "[timing] late" and violation.key == "k"
