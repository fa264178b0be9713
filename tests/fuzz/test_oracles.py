"""Each oracle rule on hand-made results: it passes what the HAL allows and raises its own
violation class for what it forbids."""
from __future__ import annotations

import struct

import pytest

from driver.hal import (UINT64_MAX, DataLocation, ErrorStatus, ExecutionCallback, MeasureTiming,
                        MemoryPool, Model, Operand, OperandLifeTime as L, OperandType as T,
                        Operation, OperationType, OutputShape, Request, RequestArgument, Subgraph,
                        Timing)
from driver.hal.enums import LoopTimeoutDurationNs
from driver.memory import Memory
from fuzz import harness, oracles
from fuzz.case import RequestChange
from fuzz.oracles import ExecutionResult
from hal_client import contract, paths
from hal_client.paths import ExecutionPath

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
    assert contract.as_status(ErrorStatus.GENERAL_FAILURE, "x") is ErrorStatus.GENERAL_FAILURE
    assert contract.as_status(4, "x") is ErrorStatus.INVALID_ARGUMENT
    for bad in (None, 99, True, "NONE"):
        with pytest.raises(contract.MalformedResultViolation, match="not an ErrorStatus"):
            contract.as_status(bad, "executeSynchronously_1_3")


def test_unpack_checks_arity():
    assert contract.unpack((1, 2), 2, "x") == (1, 2)
    with pytest.raises(contract.MalformedResultViolation, match="expected a tuple of 3"):
        contract.unpack((NONE, []), 3, "executeSynchronously_1_3")


def test_supported_list_has_one_entry_per_main_operation():
    model = one_output_model()
    contract.check_supported_list(NONE, [True], model)
    contract.check_supported_list(ErrorStatus.INVALID_ARGUMENT, [], model)
    with pytest.raises(contract.MalformedResultViolation, match="one bool per operation"):
        contract.check_supported_list(NONE, [], model)


# --- callbacks ----------------------------------------------------------------------------

def test_notified_exactly_once():
    callback = ExecutionCallback()
    with pytest.raises(contract.CallbackNotifyViolation, match="0 times"):
        contract.check_notified_once(callback, "execute_1_3")
    callback.notify_1_3(NONE, [], Timing())
    contract.check_notified_once(callback, "execute_1_3")
    callback.notify_1_3(NONE, [], Timing())
    with pytest.raises(contract.CallbackNotifyViolation, match="2 times"):
        contract.check_notified_once(callback, "execute_1_3")


def test_failed_launch_must_notify_its_own_status():
    contract.check_launch_matches_callback(NONE, ErrorStatus.GENERAL_FAILURE, "execute_1_3")
    contract.check_launch_matches_callback(ErrorStatus.INVALID_ARGUMENT, ErrorStatus.INVALID_ARGUMENT, "x")
    with pytest.raises(contract.LaunchStatusViolation, match="returned INVALID_ARGUMENT but notified"):
        contract.check_launch_matches_callback(ErrorStatus.INVALID_ARGUMENT, NONE, "prepareModel_1_3")


def test_prepared_model_presence_matches_status():
    contract.check_prepared_model_presence(NONE, object())
    contract.check_prepared_model_presence(ErrorStatus.GENERAL_FAILURE, None)
    with pytest.raises(contract.CallbackResultViolation, match="without a prepared model"):
        contract.check_prepared_model_presence(NONE, None)
    with pytest.raises(contract.CallbackResultViolation, match="with a prepared model"):
        contract.check_prepared_model_presence(ErrorStatus.GENERAL_FAILURE, object())


def test_fence_error_needs_an_error_status():
    contract.check_fence_consistent(True, ErrorStatus.GENERAL_FAILURE)
    contract.check_fence_consistent(False, NONE)
    with pytest.raises(contract.FenceViolation):
        contract.check_fence_consistent(True, NONE)


def test_failed_fenced_launch_returns_no_fence_nor_callback():
    contract.check_fenced_failure_bare(ErrorStatus.INVALID_ARGUMENT, None, None)
    contract.check_fenced_failure_bare(NONE, object(), object())
    for fence, callback in ((object(), None), (None, object())):
        with pytest.raises(contract.FenceViolation, match="failed with INVALID_ARGUMENT"):
            contract.check_fenced_failure_bare(ErrorStatus.INVALID_ARGUMENT, fence, callback)


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
    with pytest.raises(oracles.InvalidRequestAcceptedViolation, match="SYNC execution returned GENERAL_FAILURE"):
        oracles.check_invalid_request_rejected("bad", ErrorStatus.GENERAL_FAILURE, ExecutionPath.SYNC)
    oracles.check_invalid_request_rejected("bad", ErrorStatus.MISSED_DEADLINE_PERSISTENT, ExecutionPath.SYNC)


# --- execution results --------------------------------------------------------------------

def test_output_shapes_count_and_dimensions():
    model, request = one_output_model(dims=(2, 0)), request_with_output_length(16)
    contract.check_output_shapes(NONE, [OutputShape([2, 2])], request, model, "SYNC")
    contract.check_output_shapes(ErrorStatus.GENERAL_FAILURE, [], request, model, "SYNC")
    contract.check_output_shapes(NONE, None, request, model, "FENCED")
    with pytest.raises(contract.OutputShapesViolation, match="0 output shapes for 1"):
        contract.check_output_shapes(INSUFFICIENT, [], request, model, "SYNC")
    with pytest.raises(contract.OutputShapesViolation, match="incompatible with the model"):
        contract.check_output_shapes(NONE, [OutputShape([3, 2])], request, model, "SYNC")
    with pytest.raises(contract.MalformedResultViolation, match="not an OutputShape"):
        contract.check_output_shapes(NONE, [[2, 2]], request, model, "SYNC")


def test_output_shapes_only_with_none_or_insufficient_size():
    contract.check_shapes_only_on_success(NONE, [OutputShape([2])], "SYNC")
    contract.check_shapes_only_on_success(INSUFFICIENT, [OutputShape([2], False)], "SYNC")
    contract.check_shapes_only_on_success(ErrorStatus.GENERAL_FAILURE, [], "SYNC")
    with pytest.raises(contract.OutputShapesViolation, match="output shapes with status GENERAL_FAILURE"):
        contract.check_shapes_only_on_success(ErrorStatus.GENERAL_FAILURE, [OutputShape([2])], "SYNC")


def test_output_shapes_must_agree_with_request_dimensions():
    model = one_output_model(dims=(0, 0))
    request = request_with_output_length(16)
    request.outputs[0].dimensions = [2, 2]
    with pytest.raises(contract.OutputShapesViolation, match="request"):
        contract.check_output_shapes(NONE, [OutputShape([4, 1])], request, model, "ASYNC")


def test_insufficient_flag_with_none_status():
    model, request = one_output_model(), request_with_output_length(16)
    contract.check_sufficiency(NONE, [OutputShape([2, 2], True)], request, model, "SYNC")
    with pytest.raises(contract.SufficiencyViolation):
        contract.check_sufficiency(NONE, [OutputShape([2, 2], False)], request, model, "SYNC")


def test_insufficient_size_needs_a_short_buffer():
    model = one_output_model()
    short = request_with_output_length(15)
    contract.check_sufficiency(INSUFFICIENT, [OutputShape([2, 2], False)], short, model, "SYNC")
    with pytest.raises(contract.InsufficientSizeViolation, match="every output buffer holds"):
        contract.check_sufficiency(INSUFFICIENT, [OutputShape([2, 2], True)],
                                  request_with_output_length(16), model, "SYNC")
    with pytest.raises(contract.InsufficientSizeViolation, match="flagged insufficient"):
        contract.check_sufficiency(INSUFFICIENT, [OutputShape([1, 2], False)], short, model, "SYNC")


def test_timing_rules():
    measured = Timing(timeOnDevice=5, timeInDriver=7)
    contract.check_timing(NONE, Timing(), MeasureTiming.NO, "x")
    contract.check_timing(NONE, measured, MeasureTiming.YES, "x")
    contract.check_timing(NONE, Timing(UINT64_MAX, 7), MeasureTiming.YES, "x")
    with pytest.raises(contract.TimingViolation, match="not requested"):
        contract.check_timing(NONE, measured, MeasureTiming.NO, "x")
    with pytest.raises(contract.TimingViolation, match="with status GENERAL_FAILURE"):
        contract.check_timing(ErrorStatus.GENERAL_FAILURE, measured, MeasureTiming.YES, "x")
    with pytest.raises(contract.TimingViolation, match="timeInDriver 3 < timeOnDevice 5"):
        contract.check_timing(NONE, Timing(5, 3), MeasureTiming.YES, "x")
    with pytest.raises(contract.MalformedResultViolation):
        contract.check_timing(NONE, None, MeasureTiming.NO, "x")


def test_a_deadline_is_missed_without_one_only_after_the_timeout_in_force():
    late, early = 2_000_000_000, 1_000_000
    contract.check_missed_deadline(ErrorStatus.MISSED_DEADLINE_PERSISTENT, 2_000_000_000, late, "x")
    contract.check_missed_deadline(ErrorStatus.MISSED_DEADLINE_TRANSIENT, None, early, "x")   # a deadline
    contract.check_missed_deadline(ErrorStatus.GENERAL_FAILURE, 2_000_000_000, early, "x")
    with pytest.raises(contract.EarlyDeadlineViolation, match="after 1000 us, with no deadline"):
        contract.check_missed_deadline(ErrorStatus.MISSED_DEADLINE_TRANSIENT, 2_000_000_000, early, "x")


def test_the_timeout_in_force():
    def arguments(**given):
        return paths.ExecutionArguments(**given)
    assert paths.timeout_in_force_ns(arguments()) == LoopTimeoutDurationNs.DEFAULT
    assert paths.timeout_in_force_ns(arguments(loopTimeoutDuration_ns=2**64 - 1)) == LoopTimeoutDurationNs.MAXIMUM
    assert paths.timeout_in_force_ns(arguments(loopTimeoutDuration_ns=5, fenced_duration_ns=3), fenced=True) == 3
    assert paths.timeout_in_force_ns(arguments(fenced_duration_ns=3)) == LoopTimeoutDurationNs.DEFAULT
    assert paths.timeout_in_force_ns(arguments(deadline_ns=10)) is None
    assert paths.timeout_in_force_ns(arguments(deadline_ns=0, deadline_edge=paths.DeadlineEdge.EPOCH)) is None
    assert paths.timeout_in_force_ns(arguments(deadline_ns=0, deadline_edge=paths.DeadlineEdge.END)) \
        == LoopTimeoutDurationNs.DEFAULT     # a deadline at the end of time is none


def test_a_duration_longer_than_the_call_is_a_timing_violation():
    """Microseconds, within the client's time of the call and the clocks' slack: a driver
    reporting nanoseconds is a thousandfold over."""
    call_ns = 2_000_000
    contract.check_timing(NONE, Timing(1_500, 2_000), MeasureTiming.YES, "x", call_ns)
    contract.check_timing(NONE, Timing(UINT64_MAX, 2_000 + contract.TIMING_SLACK_US), MeasureTiming.YES, "x",
                          call_ns)
    with pytest.raises(contract.TimingViolation, match="longer than the 2000 us the call took"):
        contract.check_timing(NONE, Timing(1_500, call_ns), MeasureTiming.YES, "x", call_ns)
    with pytest.raises(contract.TimingViolation, match="2000000 us, longer than the 2000 us"):
        contract.check_timing(NONE, Timing(call_ns, UINT64_MAX), MeasureTiming.YES, "x", call_ns)


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


def test_a_difference_after_a_request_change_is_a_late_read_of_the_request():
    model, request = one_output_model(), request_with_output_length(16)
    flipped = result(ExecutionPath.ASYNC, outputs=(b"\x01" + b"\0" * 15,))
    with pytest.raises(oracles.RequestChangedViolation,
                       match=r"SYNC vs ASYNC \(request POOLS after launch\): output 0 bytes differ"):
        oracles.check_same_results(result(ExecutionPath.SYNC), flipped, model, request, True,
                                   RequestChange.POOLS)
    oracles.check_same_results(result(ExecutionPath.SYNC), result(ExecutionPath.ASYNC), model,
                               request, True, RequestChange.CLOSED)


def test_peak_memory_within_budget_and_slack():
    oracles.check_peak_memory(150, 100, 50, "SYNC")
    with pytest.raises(oracles.MemoryBudgetViolation, match="SYNC execution allocated up to 151 bytes"):
        oracles.check_peak_memory(151, 100, 50, "SYNC")


@pytest.mark.parametrize("change", [RequestChange.ARGUMENTS, RequestChange.POOLS, RequestChange.CLOSED])
def test_a_request_changed_after_launch_leaves_the_results_where_they_were(change):
    """The harness reads results through a copy of the request as it was launched: the
    change replaces or rewrites what the caller holds, never the launched pools' content."""
    request = request_with_output_length(16)
    inputs, outputs = Memory.from_bytes(bytes(range(16))), Memory.create(16)
    request.pools = [MemoryPool(hidlMemory=inputs), MemoryPool(hidlMemory=outputs)]
    launched = harness.copied_request(request)
    harness.change_request(request, change)
    assert [pool.hidlMemory for pool in launched.pools] == [inputs, outputs]
    assert launched.outputs[0].location == DataLocation(1, 0, 16)
    assert request != launched
    assert not outputs.closed and inputs.closed == (change == RequestChange.CLOSED)
    if not inputs.closed:
        assert inputs.read() == bytes(range(16))


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


def test_outputs_sharing_bytes_with_another_are_not_compared():
    """Which of two outputs over the same bytes stays there is the order a driver writes
    them in, which the HAL leaves open: neither is compared, on any path."""
    def output(pool, offset, length, has_no_value=False):
        return RequestArgument(hasNoValue=has_no_value, location=DataLocation(pool, offset, length))
    request = Request(inputs=[], outputs=[output(1, 0, 8), output(1, 4, 8), output(1, 12, 4),
                                          output(2, 0, 8), output(1, 0, 16, has_no_value=True)])
    assert oracles.outputs_sharing_bytes(request) == {0, 1}    # 2 only touches 1's end

    model = one_output_model()
    first = result(ExecutionPath.SYNC, shapes=None, outputs=(b"\1" * 16, b"\0" * 16))
    second = result(ExecutionPath.ASYNC, shapes=None, outputs=(b"\2" * 16, b"\0" * 16))
    overlapping = Request(inputs=[], outputs=[output(1, 0, 16), output(1, 8, 16)])
    oracles.check_same_results(first, second, model, overlapping, True)
    apart = Request(inputs=[], outputs=[output(1, 0, 16), output(1, 16, 16)])
    with pytest.raises(oracles.NondeterminismViolation, match="output 0 bytes differ"):
        oracles.check_same_results(first, second, model, apart, True)
    assert oracles.check_same_outputs(first, second, model, overlapping,
                                      oracles.ReferenceMismatchViolation, "x") == 2


def test_random_operations_are_not_compared_bytewise():
    model, request = one_output_model(), request_with_output_length(16)
    model.main.operations[0].type = OperationType.RANDOM_MULTINOMIAL
    oracles.check_same_results(result(ExecutionPath.SYNC, outputs=(b"\1" * 16,)),
                               result(ExecutionPath.SYNC, outputs=(b"\2" * 16,)), model, request, True)


def test_violations_name_their_rule_and_are_assertions():
    rules = {cls.rule for cls in contract.OracleViolation.__subclasses__()}
    assert len(rules) == len(contract.OracleViolation.__subclasses__())   # one rule per class
    violation = contract.TimingViolation("late", key="k")
    assert isinstance(violation, AssertionError)
    assert str(violation) == "[timing] late" and violation.key == "k"
