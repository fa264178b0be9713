"""The crash pipeline: structural reductions (fuzz/reduce.py), signatures, storage with
sidecars and deduplication, out-of-memory under the worker's memory limit, and artifacts
triaged end to end (fuzz/triage.py)."""
from __future__ import annotations

import errno
import json
import sys
import time
import traceback
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from driver import SampleDriver
from driver.hal import ErrorStatus, OperandLifeTime as L, OperandType, OperationType
from fuzz import harness, oracles, reduce, triage
from fuzz.case import ExecutionChoices, ExecutionPath, FuzzCase
from fuzz.codec import decode, encode
from hal_client import contract
from hal_client.builder import ModelBuilder
from tests import models
from tests.fuzz import broken_drivers
from tests.fuzz.cases import loop_condition, make_case, sqrt_branch_model


def case_of(model_case: models.ModelCase, **choices) -> FuzzCase:
    return FuzzCase(model_case.model, model_case.request(), ExecutionChoices(**choices))


def valid(case: FuzzCase) -> bool:
    return harness.reference_errors(case.model, case.request) == (None, None)


# --- reductions -------------------------------------------------------------------------------

def test_bypass_replaces_an_operation_by_its_input():
    case = case_of(models.constant_reference_model())      # two chained ADDs
    before = len(case.model.main.operations)
    reduce.bypass_operation(case, 0, 1)                      # the second ADD
    assert len(case.model.main.operations) == before - 1
    assert valid(case)
    assert harness.run_case(case, harness.default_device()).first.status == 0


def test_drop_operation_keeps_consumer_counts():
    case = case_of(models.constant_reference_model())
    reduce.drop_operation(case, 0, 1)
    main = case.model.main
    read = [sum(op.inputs.count(i) for op in main.operations) for i in range(len(main.operands))]
    assert [o.numberOfConsumers for o in main.operands] == read
    assert len(case.request.outputs) == len(main.outputIndexes)


def one_input_case(model) -> FuzzCase:
    return FuzzCase(model, models.model_request(model, [np.ones(2, np.float32)]), ExecutionChoices())


def test_drop_operation_takes_the_operands_only_it_wrote():
    # y = ABS(x) that nothing reads, beside out = x + x: left behind, y would be a
    # temporary no operation writes (an invalid model), so it goes with its operation.
    mb = ModelBuilder()
    g = mb.main
    x = g.input(OperandType.TENSOR_FLOAT32, [2])
    g.apply(OperationType.ABS, [x], OperandType.TENSOR_FLOAT32, [2])
    g.outputs(g.add(x, x))
    case = one_input_case(mb.build())
    operands = len(case.model.main.operands)
    assert valid(case)
    reduce.drop_operation(case, 0, 0)
    assert [op.type for op in case.model.main.operations] == [OperationType.ADD]
    assert len(case.model.main.operands) == operands - 1
    assert valid(case)


def test_bypass_takes_an_input_where_the_output_shape_was_left_to_inference():
    # t = ABS(x) declared [0] (its length inferred), out = t + x: the ADD may read x itself.
    mb = ModelBuilder()
    g = mb.main
    x = g.input(OperandType.TENSOR_FLOAT32, [2])
    t = g.apply(OperationType.ABS, [x], OperandType.TENSOR_FLOAT32, [0])
    g.outputs(g.add(t, x))
    case = one_input_case(mb.build())
    reduce.bypass_operation(case, 0, 0)
    assert [op.type for op in case.model.main.operations] == [OperationType.ADD]
    assert valid(case)


def test_merge_referenced_gives_an_if_one_branch_twice():
    case = case_of(models.if_model())         # referenced: then (x + 10), else (x - 10)
    reduce.merge_referenced(case, 1, 0)
    assert len(case.model.referenced) == 1
    assert [o.location.offset for o in case.model.main.operands if o.lifetime == L.SUBGRAPH] == [0, 0]
    assert valid(case)


def test_pack_constants_keeps_only_the_values_still_read():
    case = case_of(models.if_model())         # each branch: ADD of a [2] constant, activation 0
    reduce.merge_referenced(case, 1, 0)       # the else branch's constants are left unread
    reduce.pack_constants(case)
    assert len(case.model.operandValues) == 2 * 4 + 4
    assert valid(case)
    with pytest.raises(ValueError):
        reduce.pack_constants(case)           # nothing more to pack: not a reduction


def test_drop_referenced_renumbers_references():
    case = case_of(models.nested_model())    # referenced: then, else, loop condition, loop body
    references = lambda: sorted(o.location.offset for g in reduce.subgraphs(case)   # noqa: E731
                                for o in g.operands if o.lifetime == L.SUBGRAPH)
    assert references() == [0, 1, 2, 3]
    reduce.drop_referenced(case, 1)
    assert references() == [0, 1, 1, 2]      # the dangling one now points elsewhere: invalid
    assert not valid(case)


def test_shrink_dimension_keeps_byte_lengths_consistent():
    case = case_of(models.add_model())       # [2, 2] inputs and output
    reduce.shrink_dimension(case, 2)
    assert all(o.dimensions == [1, 1] for o in case.model.main.operands if o.dimensions)
    assert valid(case)


def test_minimize_keeps_what_the_predicate_needs():
    case = case_of(models.constant_reference_model(), path=ExecutionPath.BURST, measureTiming=1)
    size = reduce.case_size(case)

    def still_adds(candidate: FuzzCase) -> bool:
        return valid(candidate) and any(op.type == OperationType.ADD for op in candidate.model.main.operations)
    smaller = reduce.minimize(case, still_adds, budget_s=30)
    assert still_adds(smaller)
    assert len(smaller.model.main.operations) == 1
    assert all(d == 1 for o in smaller.model.main.operands for d in o.dimensions)
    assert smaller.choices.path == ExecutionPath.SYNC and smaller.choices.measureTiming == 0
    assert reduce.case_size(case) == size          # the original is left as it was


# --- signatures and storage -------------------------------------------------------------------

def failure_from(make_error) -> triage.Failure:
    try:
        make_error()
    except Exception as error:   # the error under test, whatever its type
        return triage.describe(error)
    raise AssertionError("nothing raised")


def raise_from_driver_frame():
    broken_drivers._schedule_loop_body(type("Body", (), {"operations": [object()] * 6})())


def test_crash_signature_names_exception_and_driver_frames_only():
    def call():
        harness.CLIENT.call(1.0, "prepareModel_1_3", raise_from_driver_frame)
    failure = failure_from(call)
    assert failure.kind == "crash" and failure.exception == "IndexError"
    assert failure.frames[0] == ("tests/fuzz/broken_drivers.py", "_schedule_loop_body")
    assert all(not path.startswith("fuzz/") for path, _ in failure.frames)
    assert failure.signature == failure_from(call).signature
    assert len(failure.digest) == 16


def test_assertion_and_hang_signatures():
    assertion = triage.describe(contract.TimingViolation("late", key="SYNC: on error"))
    assert assertion.kind == "assertion" and "timing" in assertion.signature
    assert "SYNC: on error" in assertion.signature
    stack = traceback.extract_stack()
    hang = triage.describe(contract.HangViolation("stuck", key="x", frames=stack))
    assert hang.kind == "hang" and hang.same_bug(triage.describe(contract.HangViolation("y", frames=[])))
    # Where it was stuck, by module: hangs in two kernels reached the same way differ.
    assert "| in tests/fuzz/test_triage.py: " in hang.signature
    assert not hang.same_bug(assertion)


def test_a_violations_bucket_refines_its_signature():
    """An oracle (or a driver's own check) that knows more of where a failure lies sets the
    violation's bucket: another bucket, another bug; the minimiser still takes either."""
    key = "SYNC: output values"
    plain = triage.describe(oracles.ReferenceMismatchViolation("differs", key=key))
    refined = triage.describe(oracles.ReferenceMismatchViolation("differs", key=key, bucket="output of CONV_2D"))
    assert refined.signature == triage.bucket_key(refined) == plain.signature + " | output of CONV_2D"
    assert refined.digest != plain.digest
    assert refined.same_bug(plain) and plain.same_bug(refined)


def test_a_wrong_output_is_bucketed_by_the_operation_producing_it():
    case = case_of(models.add_model())

    def result(path: ExecutionPath, value: float) -> oracles.ExecutionResult:
        return oracles.ExecutionResult(path, ErrorStatus.NONE, None, [np.full(4, value, np.float32).tobytes()])
    expected = result(ExecutionPath.SYNC, 1.0)
    mismatch = failure_from(lambda: oracles.check_same_outputs(
        expected, result(ExecutionPath.SYNC, 2.0), case.model, case.request,
        oracles.ReferenceMismatchViolation, "SYNC"))
    assert mismatch.signature == "assertion | reference-mismatch | SYNC: output values | output of ADD"
    differing = failure_from(lambda: oracles.check_same_results(
        expected, result(ExecutionPath.BURST, 2.0), case.model, case.request, fenced_comparable=True))
    assert differing.signature == "assertion | determinism | SYNC vs BURST: output bytes | output of ADD"


def test_store_writes_sidecar_and_collapses_duplicates(tmp_path):
    failure = triage.describe(contract.TimingViolation("late", key="k"))
    small = encode(case_of(models.add_model()))
    big = encode(case_of(models.nested_model()))
    path, duplicate = triage.store(big, failure, tmp_path, "driver:SampleDriver", "crash-1")
    assert not duplicate and Path(path).read_bytes() == big
    sidecar = json.loads(Path(path).with_suffix(".json").read_text())
    assert sidecar["status"] == "open" and sidecar["kind"] == "assertion"
    assert sidecar["signature"] == failure.signature and sidecar["message"] == "[timing] late"
    path, duplicate = triage.store(small, failure, tmp_path, "driver:SampleDriver", "crash-2")
    assert duplicate and Path(path).read_bytes() == small           # the smaller one stays
    triage.store(big, failure, tmp_path, "driver:SampleDriver", "crash-3")
    assert Path(path).read_bytes() == small
    assert json.loads(Path(path).with_suffix(".json").read_text())["duplicates"] == 1
    assert len(list(tmp_path.iterdir())) == 2


def test_a_case_the_validator_fails_on_is_kept_behind_a_valid_one(monkeypatch):
    """The bug being triaged may be in the reference validator itself: choosing between
    two reproducers must not fail with it."""
    data = encode(case_of(models.add_model()))
    valid = triage.preference(data)

    def failing_validator(model, request):
        raise RuntimeError("a bug of the validator")
    monkeypatch.setattr(harness, "reference_errors", failing_validator)
    assert triage.preference(data) > valid


@pytest.mark.slow
def test_an_artifact_is_triaged_end_to_end(tmp_path):
    case = make_case(sqrt_branch_model(), ExecutionPath.ASYNC, measureTiming=1)
    artifact = tmp_path / "crash-planted"
    artifact.write_bytes(encode(case))
    out = tmp_path / "out"
    spec = "tests.fuzz.broken_drivers:SupportedDisagrees"
    with closing(triage.Worker(spec)) as worker:
        result = triage.triage_one(artifact, worker, out, spec, libfuzzer_s=0, structural_s=60,
                                   workdir=tmp_path, log=lambda _line: None)
    assert result.failure.kind == "assertion" and result.failure.rule == "supported-vs-prepare"
    reproducer = decode(Path(result.stored).read_bytes())
    assert reproducer.choices.path == ExecutionPath.SYNC and valid(reproducer)
    with pytest.raises(oracles.SupportedPrepareViolation):
        harness.run_case(reproducer, broken_drivers.SupportedDisagrees())


# --- out of memory --------------------------------------------------------------------------

def allocate_in_driver_frame():
    raise MemoryError("Unable to allocate 4.00 GiB")


def test_a_refused_allocation_is_an_oom_signed_where_it_was_refused():
    def call():
        harness.CLIENT.call(1.0, "executeSynchronously_1_3", allocate_in_driver_frame)
    failure = failure_from(call)
    assert (failure.kind, failure.rule, failure.exception) == ("oom", "memory-limit", "MemoryError")
    assert failure.frames[0] == ("tests/fuzz/test_triage.py", "allocate_in_driver_frame")
    assert failure.signature.startswith("oom | memory-limit | allocate_in_driver_frame (tests/fuzz/test_triage.py)")
    assert failure_from(allocate_in_driver_frame).kind == "oom"         # outside the HAL too

    def enomem():
        raise OSError(errno.ENOMEM, "Cannot allocate memory")
    assert failure_from(enomem).kind == "oom"
    assert failure_from(lambda: harness.CLIENT.call(1.0, "x", enomem)).kind == "oom"

    def eacces():
        raise OSError(errno.EACCES, "Permission denied")
    assert failure_from(eacces).kind == "crash"


def test_an_oom_without_frames_is_signed_by_the_model_operations():
    # A driver thread's exception travels by name only, and may have no project frame.
    thread_failure = triage.describe(contract.HalExceptionViolation(
        "driver thread t raised _ArrayMemoryError: ...", key="thread: _ArrayMemoryError", frames=[]))
    assert thread_failure.kind == "oom" and not thread_failure.frames
    data = encode(case_of(models.if_model()))
    signed = replace(thread_failure, operations=triage.operation_types(data))
    assert signed.signature == "oom | memory-limit | operations: ADD, IF"
    crash = failure_from(raise_from_driver_frame)
    assert signed.same_bug(failure_from(allocate_in_driver_frame))    # wherever the limit is crossed
    assert not signed.same_bug(crash) and not crash.same_bug(signed)


class ScriptedWorker(triage.Worker):
    """A stand-in worker process answering by the input: ``quiet`` passes after mentioning
    a MemoryError on stderr, ``dies`` exits 3, ``stalls`` answers after a minute,
    ``starved`` exits 1 after a MemoryError, ``second`` fails from its second run on."""

    SCRIPT = """
import base64, json, sys, time
runs = 0
for line in sys.stdin:
    data = base64.b64decode(line)
    if data == b"second":
        runs += 1
        failure = dict(kind="crash", rule="exception-from-hal", exception="OverflowError", key="",
                       message="late", frames=[], operations=[], bucket="") if runs > 1 else None
        print(json.dumps({"failure": failure}), flush=True)
    elif data == b"stalls":
        time.sleep(60)
        print('{"failure": null}', flush=True)
    elif data == b"quiet":
        sys.stderr.write("no MemoryError here\\n"); sys.stderr.flush()
        print('{"failure": null}', flush=True)
    elif data == b"dies":
        sys.exit(3)
    else:
        sys.stderr.write("MemoryError\\n"); sys.exit(1)
"""

    def command(self) -> list[str]:
        return [sys.executable, "-c", self.SCRIPT]


def test_a_worker_dying_of_memory_exhaustion_is_an_oom():
    with closing(ScriptedWorker("unused")) as worker:
        assert worker.run(b"quiet") is None
        died = worker.run(b"dies")               # the earlier input's stderr does not count
        assert (died.kind, died.exception) == ("crash", "exit 3")
        starved = worker.run(b"starved")
        assert (starved.kind, starved.exception) == ("oom", "exit 1")
        assert "out of memory: MemoryError" in starved.message
        assert starved.signature.startswith("oom | memory-limit | operations:")


def test_an_artifact_failing_on_a_later_run_reproduces():
    """A failure that hangs on timing (which worker is ready first) may miss one run: an
    artifact is run again before it is said not to reproduce."""
    with closing(ScriptedWorker("unused")) as worker:
        failure = worker.reproduce(b"second")
        assert (failure.kind, failure.exception) == ("crash", "OverflowError")
        assert worker.reproduce(b"quiet") is None


def test_a_run_still_going_at_the_workers_deadline_is_out_of_time():
    """Not a hang: the input's failure, if any, is unknown."""
    with closing(ScriptedWorker("unused", deadline=time.monotonic() + 5)) as worker:
        with pytest.raises(triage.OutOfTime):
            worker.run(b"stalls")
        with pytest.raises(triage.OutOfTime):         # past the deadline, nothing runs
            worker.run(b"quiet")
        assert worker.process is None


@pytest.mark.slow
def test_an_oom_artifact_is_triaged_under_the_memory_limit(tmp_path, monkeypatch):
    # Hoarding fills 512 MiB while preparing a loop with a LESS_EQUAL condition; the worker
    # may have 128 MB: the allocation is refused up front, nothing of it is ever touched.
    case = make_case(loop_condition(OperationType.LESS_EQUAL), ExecutionPath.BURST,
                     ExecutionPath.FENCED, measureTiming=1)
    artifact = tmp_path / "oom-planted"
    artifact.write_bytes(encode(case))
    out = tmp_path / "out"
    spec = "tests.fuzz.broken_drivers:Hoarding"

    def no_libfuzzer(*_args):
        raise AssertionError("libFuzzer's minimiser would replay the allocation in-process")
    monkeypatch.setattr(triage, "libfuzzer_minimize", no_libfuzzer)
    with closing(triage.Worker(spec, memory_limit_mb=128)) as worker:
        result = triage.triage_one(artifact, worker, out, spec, libfuzzer_s=30, structural_s=30,
                                   workdir=tmp_path, log=lambda _line: None)
    failure = result.failure
    assert (failure.kind, failure.rule) == ("oom", "memory-limit")
    assert failure.frames[0] == ("tests/fuzz/broken_drivers.py", "_iteration_history")
    sidecar = json.loads(Path(result.stored).with_suffix(".json").read_text())
    assert (sidecar["kind"], sidecar["status"], sidecar["memory_limit_mb"]) == ("oom", "open", 128)
    assert sidecar["signature"] == failure.signature
    reproducer = decode(Path(result.stored).read_bytes())
    assert broken_drivers.planted_bug_reached("Hoarding", reproducer) and valid(reproducer)
    assert reproducer.choices.path == reproducer.choices.second_path == ExecutionPath.SYNC
    assert reproducer.choices.measureTiming == 0
    harness.run_case(reproducer, SampleDriver())          # the bundled driver has no such bug


def test_finding_copies_are_taken_only_without_their_libfuzzer_artifact(tmp_path, monkeypatch):
    """The harness saves each failing input as finding-<sha1>; libFuzzer's crash-<sha1>
    of the same input is the artifact when it exists, the copy stands in when it does not."""
    monkeypatch.chdir(tmp_path)
    for name in ("crash-aaa", "finding-aaa", "finding-bbb", "oom-ccc", "notes.txt"):
        (tmp_path / name).write_bytes(b"x")
    assert [p.name for p in triage.new_artifacts(tmp_path)] == ["crash-aaa", "oom-ccc", "finding-bbb"]
    assert triage.finding_twin(tmp_path / "oom-ccc") == tmp_path / "finding-ccc"


# --- the command line -----------------------------------------------------------------------

def test_the_command_line_takes_folders_and_goes_past_what_it_cannot_triage(tmp_path, capsys,
                                                                          monkeypatch):
    """A folder stands for the artifacts in it; an argument that cannot be triaged is
    reported and the ones after it are still triaged."""
    seen = []

    def triage_one(artifact, *_args, **_kwargs):
        seen.append(artifact.name)
        artifact.read_bytes()           # a missing file raises here
        return triage.Triaged(artifact.name, None)

    monkeypatch.setattr(triage, "triage_one", triage_one)
    for variable in (triage.DRIVER_ENV, triage.REFERENCE_ENV):   # main sets them for its worker
        monkeypatch.setenv(variable, "")
    folder = tmp_path / "run"
    folder.mkdir()
    for name in ("crash-1", "timeout-2", "notes.txt"):
        (folder / name).write_bytes(b"\0")
    last = tmp_path / "crash-3"
    last.write_bytes(b"\0")
    empty = tmp_path / "empty"
    empty.mkdir()
    code = triage.main([str(folder), str(empty), str(tmp_path / "crash-missing"), str(last),
                        "--out", str(tmp_path / "out")])
    assert seen == ["crash-1", "timeout-2", "crash-missing", "crash-3"]
    err = capsys.readouterr().err
    assert "crash-missing" in err and "FileNotFoundError" in err
    assert f"{empty}: a folder with no artifacts" in err
    assert code == 1
