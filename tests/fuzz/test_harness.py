"""The harness flow: a correct driver passes every path; a driver breaking one contract is
caught by that contract's oracle, through the HAL surface only."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from driver import SampleDriver
from driver.hal import (NO_TIMING, ErrorStatus, LoopTimeoutDurationNs, MeasureTiming, Model, Operand,
                        OperandType, OutputShape, Priority, Subgraph, Timing)
from fuzz import harness, oracles
from fuzz.case import ExecutionPath
from hal_client import contract
from hal_client.device import DriverSpecError
from hal_client.watchdog import STALL_ALLOWANCE_S, Watchdog
from tests import models
from tests.fuzz import broken_drivers
from tests.fuzz.broken_drivers import DeviceWrapper, PreparedModelWrapper
from tests.fuzz.cases import (endless_loop_case, make_case, six_operation_loop, split_model,
                              sqrt_branch_model)

PATHS = list(ExecutionPath)


# --- a correct driver ---------------------------------------------------------------------

@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name)
@pytest.mark.parametrize("build", [models.add_model, models.if_model, models.fibonacci_while_model,
                                   models.nested_model], ids=lambda b: b.__name__)
def test_sample_driver_passes_every_path(device, build, path):
    second = PATHS[(path + 1) % len(PATHS)]
    outcome = harness.run_case(make_case(build(), path, second, measureTiming=MeasureTiming.YES), device)
    assert outcome.model_error is None and outcome.request_error is None
    assert outcome.prepare_status == ErrorStatus.NONE
    assert outcome.first.status == ErrorStatus.NONE and outcome.second.status == ErrorStatus.NONE
    assert outcome.first.outputs == outcome.second.outputs


@pytest.mark.parametrize("priority", [Priority.MEDIUM, Priority.HIGH], ids=lambda p: p.name)
def test_loop_timeout_is_an_error_status_not_a_hang(device, priority):
    """At HIGH too: the loop Hanging overruns the requested timeout in, at that priority."""
    outcome = harness.run_case(endless_loop_case(ExecutionPath.SYNC, priority=priority), device)
    assert outcome.first.status == ErrorStatus.MISSED_DEADLINE_TRANSIENT
    assert outcome.second is None


def test_invalid_model_is_rejected_and_reported(device):
    outcome = harness.run_case(invalid_model_case(), device)
    assert "operand 0" in outcome.model_error
    assert outcome.supported_status == outcome.prepare_status == ErrorStatus.INVALID_ARGUMENT
    assert outcome.first is None


def test_second_run_gets_fresh_output_buffers(device):
    case = make_case(models.add_model())
    request = case.request
    output_pool = request.pools[request.outputs[0].location.poolIndex].hidlMemory
    output_pool.write(b"\xAA" * output_pool.size)
    before = harness.snapshot_pools(request)
    outcome = harness.run_case(case, device)
    assert outcome.first.outputs == outcome.second.outputs
    fresh = harness.with_fresh_pools(request, before)
    assert all(a.hidlMemory is not b.hidlMemory for a, b in zip(request.pools, fresh.pools))
    assert fresh.pools[1].hidlMemory.read() == b"\xAA" * output_pool.size


def test_statistics_count_the_stages(device):
    before = harness.HarnessStats(**vars(harness.STATS))
    harness.run_case(make_case(models.if_model()), device)
    harness.run_case(make_case(models.while_counter_model(5, 0, 0)), device)
    stats = harness.STATS
    assert stats.valid - before.valid == 2 and stats.prepared - before.prepared == 2
    assert stats.executed_ok - before.executed_ok == 1
    assert stats.control_flow - before.control_flow == 2
    assert "executed_ok" in stats.summary() and "%" in stats.summary()


# --- execution time bounds ------------------------------------------------------------------

def test_execution_limit_grows_with_loops_and_is_cut_by_deadlines():
    single = make_case(models.while_counter_model(), loopTimeoutDuration_ns=100_000_000)
    assert harness.execution_limit_s(single) == pytest.approx(0.1 + harness.HANG_MARGIN_S)
    nested = make_case(models.nested_model(), loopTimeoutDuration_ns=100_000_000)
    assert harness.loops_to_wait_for(nested.model, nested.model.main) == 1
    default = make_case(models.add_model(), loopTimeoutDuration_ns=None)
    assert harness.execution_limit_s(default) == pytest.approx(2 + harness.HANG_MARGIN_S)
    capped = make_case(models.add_model(), loopTimeoutDuration_ns=10 ** 12)
    assert harness.execution_limit_s(capped) == pytest.approx(
        LoopTimeoutDurationNs.MAXIMUM * 1e-9 + harness.HANG_MARGIN_S)
    with_deadline = make_case(models.add_model(), loopTimeoutDuration_ns=None, deadline_ns=50_000_000)
    assert harness.execution_limit_s(with_deadline) == pytest.approx(0.05 + harness.HANG_MARGIN_S)


# --- each contract broken -------------------------------------------------------------------

class RaisingQueries(DeviceWrapper):
    def getSupportedOperations_1_3(self, model):
        raise KeyError("operand table")


class DoubleNotify(DeviceWrapper):
    def prepareModel_1_3(self, model, *args):
        callback = args[-1]
        status = self.inner.prepareModel_1_3(model, *args)
        callback.notify_1_3(status, None)
        return status


class LaunchDisagrees(DeviceWrapper):
    def prepareModel_1_3(self, model, preference, priority, deadline, mc, dc, token, callback):
        self.inner.prepareModel_1_3(model, preference, priority, deadline, mc, dc, token, callback)
        return ErrorStatus.GENERAL_FAILURE


class NoModel(DeviceWrapper):
    def prepareModel_1_3(self, model, *args):
        args[-1].notify_1_3(ErrorStatus.NONE, None)
        return ErrorStatus.NONE


class AcceptsAnything(DeviceWrapper):
    """Prepares a fixed valid model, whatever it is given."""

    def prepareModel_1_3(self, model, *args):
        return super().prepareModel_1_3(models.add_model().model, *args)


def prepared_model_breaking(execute_sync):
    class Device(DeviceWrapper):
        class prepared_model_class(PreparedModelWrapper):
            def executeSynchronously_1_3(self, request, measure, deadline, loop):
                return execute_sync(self.inner, request, measure, deadline, loop)
    return Device()


def claims_success(inner, request, measure, deadline, loop):
    return ErrorStatus.NONE, [OutputShape([2, 2])], NO_TIMING


def too_many_shapes(inner, *args):
    status, shapes, timing = inner.executeSynchronously_1_3(*args)
    return status, shapes + shapes, timing


def insufficient_but_ok(inner, *args):
    status, shapes, timing = inner.executeSynchronously_1_3(*args)
    return status, [OutputShape(s.dimensions, False) for s in shapes], timing


def insufficient_status(inner, *args):
    status, shapes, timing = inner.executeSynchronously_1_3(*args)
    return ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, shapes, timing


def unrequested_timing(inner, *args):
    status, shapes, timing = inner.executeSynchronously_1_3(*args)
    return status, shapes, Timing(1, 2)


def timing_in_nanoseconds(inner, *args):
    """Durations in nanoseconds, where the HAL says microseconds."""
    status, shapes, timing = inner.executeSynchronously_1_3(*args)
    return status, shapes, Timing(timing.timeOnDevice * 1000, timing.timeInDriver * 1000)


def gives_up_at_once(inner, *args):
    """A missed deadline with none given, long before the loop timeout."""
    return ErrorStatus.MISSED_DEADLINE_TRANSIENT, [], NO_TIMING


def not_a_status(inner, *args):
    status, shapes, timing = inner.executeSynchronously_1_3(*args)
    return "fine", shapes, timing


class FencedWithoutCallback(DeviceWrapper):
    class prepared_model_class(PreparedModelWrapper):
        def executeFenced(self, *args):
            status, fence, callback = self.inner.executeFenced(*args)
            return status, fence, None


class DyingWorker(DeviceWrapper):
    class prepared_model_class(PreparedModelWrapper):
        def execute_1_3(self, request, measure, deadline, loop, callback):
            def work():
                raise ZeroDivisionError("scale")
            threading.Thread(target=work, name="worker").start()
            return ErrorStatus.NONE


def invalid_model_case():
    case = make_case(models.add_model())
    case.model.main.operands[0].numberOfConsumers = 7
    return case


def invalid_request_case():
    case = make_case(models.add_model())
    case.request.inputs[0].location.length -= 1
    return case


BROKEN = [
    ("raising query", RaisingQueries, lambda: make_case(models.add_model()),
     contract.HalExceptionViolation, "getSupportedOperations_1_3 raised KeyError"),
    ("double notify", DoubleNotify, lambda: make_case(models.add_model()),
     contract.CallbackNotifyViolation, "notified 2 times"),
    ("launch disagrees", LaunchDisagrees, lambda: make_case(models.add_model()),
     contract.LaunchStatusViolation, "returned GENERAL_FAILURE but notified the callback with NONE"),
    ("no prepared model", NoModel, lambda: make_case(models.add_model()),
     contract.CallbackResultViolation, "without a prepared model"),
    ("accepts invalid model", AcceptsAnything, lambda: invalid_model_case(),
     oracles.InvalidModelAcceptedViolation, "prepareModel_1_3 accepted an invalid model"),
    ("accepts invalid request", lambda: prepared_model_breaking(claims_success), invalid_request_case,
     oracles.InvalidRequestAcceptedViolation, "SYNC execution returned NONE for an invalid request"),
    ("too many shapes", lambda: prepared_model_breaking(too_many_shapes), lambda: make_case(models.add_model()),
     contract.OutputShapesViolation, "2 output shapes for 1"),
    ("insufficient with NONE", lambda: prepared_model_breaking(insufficient_but_ok),
     lambda: make_case(models.add_model()), contract.SufficiencyViolation, "marked insufficient"),
    ("insufficient status, buffers fine", lambda: prepared_model_breaking(insufficient_status),
     lambda: make_case(models.add_model()), contract.InsufficientSizeViolation, "every output buffer holds"),
    ("timing not requested", lambda: prepared_model_breaking(unrequested_timing),
     lambda: make_case(models.add_model()), contract.TimingViolation, "not requested"),
    ("timing in nanoseconds", lambda: prepared_model_breaking(timing_in_nanoseconds),
     lambda: make_case(models.fibonacci_while_model(), measureTiming=MeasureTiming.YES), contract.TimingViolation,
     "us, longer than the .* us the call took"),
    ("deadline missed early", lambda: prepared_model_breaking(gives_up_at_once),
     lambda: make_case(models.fibonacci_while_model()), contract.EarlyDeadlineViolation,
     r"MISSED_DEADLINE_TRANSIENT after \d+ us, with no deadline and a timeout of \d+ us"),
    ("status of the wrong type", lambda: prepared_model_breaking(not_a_status),
     lambda: make_case(models.add_model()), contract.MalformedResultViolation, "'fine', not an ErrorStatus"),
    ("fenced without callback", FencedWithoutCallback,
     lambda: make_case(models.add_model(), ExecutionPath.FENCED),
     contract.MalformedResultViolation, "without an IFencedExecutionCallback"),
    ("worker thread dies", DyingWorker, lambda: make_case(models.add_model(), ExecutionPath.ASYNC),
     contract.HalExceptionViolation, "driver thread worker raised ZeroDivisionError"),
]


@pytest.mark.parametrize("name, make_device, make, violation, message", BROKEN, ids=[b[0] for b in BROKEN])
def test_each_broken_contract_is_caught(name, make_device, make, violation, message):
    with pytest.raises(violation, match=message):
        harness.run_case(make(), make_device())


def test_exception_from_a_rare_graph_shape_is_caught():
    case = make_case(six_operation_loop())
    assert harness.run_case(case, harness.default_device()).first.outputs    # valid, runs
    with pytest.raises(contract.HalExceptionViolation, match="prepareModel_1_3 raised IndexError") as info:
        harness.run_case(case, broken_drivers.Raising())
    assert any(frame.name == "_schedule_loop_body" for frame in info.value.frames)


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name)
def test_fenced_bit_flip_is_nondeterminism(path):
    second = ExecutionPath.SYNC if path == ExecutionPath.FENCED else ExecutionPath.FENCED
    with pytest.raises(oracles.NondeterminismViolation, match="output 0 bytes differ"):
        harness.run_case(make_case(split_model(), path, second), broken_drivers.FencedBitFlip())


@pytest.mark.parametrize("path", [ExecutionPath.SYNC, ExecutionPath.FENCED], ids=lambda p: p.name)
def test_ignored_loop_timeout_is_a_hang_naming_where_it_is_stuck(path):
    started = time.monotonic()
    with pytest.raises(contract.HangViolation) as info:
        harness.run_case(endless_loop_case(path, priority=Priority.HIGH), broken_drivers.Hanging())
    elapsed = time.monotonic() - started
    # Judged once the margin is spent; a spinning thread at once, one starved of the CPU
    # by a loaded machine after the stall allowance (hal_client/watchdog.py).
    assert harness.HANG_MARGIN_S < elapsed < harness.HANG_MARGIN_S + STALL_ALLOWANCE_S + 1.5
    assert "while_step" in str(info.value) and info.value.frames


# --- watchdog and scheduler -----------------------------------------------------------------

def spin(seconds: float) -> int:
    end = time.monotonic() + seconds
    count = 0
    while time.monotonic() < end:
        count += 1
    return count


def test_watchdog_returns_results_and_passes_exceptions():
    watchdog = Watchdog(poll_interval_s=0.01)
    assert watchdog.call(1.0, "quick", lambda x: x + 1, 1) == 2
    with pytest.raises(ValueError):
        watchdog.call(1.0, "raising", int, "x")


def test_watchdog_interrupts_an_overrunning_call_and_shows_its_stack():
    watchdog = Watchdog(poll_interval_s=0.01)
    started = time.monotonic()
    with pytest.raises(contract.HangViolation, match="spinner overran its 0.10 s limit") as info:
        watchdog.call(0.1, "spinner", spin, 10.0)
    assert time.monotonic() - started < 1.0
    assert info.value.frames[0].name == "spin"
    assert watchdog.call(1.0, "after", lambda: "still usable") == "still usable"


def doze(seconds: float) -> None:
    """Wait without using the CPU, yet interruptibly (as a process that is not scheduled)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.005)


def test_watchdog_gives_an_idle_overrun_the_stall_allowance():
    watchdog = Watchdog(poll_interval_s=0.01, stall_allowance_s=0.4)
    started = time.monotonic()
    with pytest.raises(contract.HangViolation, match="idle"):
        watchdog.call(0.1, "idle", doze, 10.0)
    assert 0.5 <= time.monotonic() - started < 1.5
    watchdog.call(0.1, "idle but done in time", doze, 0.3)     # no verdict before 0.5 s


def test_watchdog_guards_calls_on_any_thread():
    watchdog = Watchdog(poll_interval_s=0.01)
    errors = []

    def worker():
        try:
            watchdog.call(0.05, "worker call", spin, 10.0)
        except contract.HangViolation as error:
            errors.append(error)
    thread = threading.Thread(target=worker)
    thread.start()
    assert watchdog.call(1.0, "main call", spin, 0.2) > 0
    thread.join(2)
    assert len(errors) == 1


def test_fenced_wait_fences_are_signalled_after_their_delay(device):
    case = make_case(models.add_model(), ExecutionPath.FENCED, ExecutionPath.FENCED,
                     wait_fences=3, wait_fence_delay_ns=5_000_000)
    started = time.monotonic()
    outcome = harness.run_case(case, device)
    assert outcome.first.status == ErrorStatus.NONE and outcome.second.status == ErrorStatus.NONE
    assert time.monotonic() - started >= 0.01


# --- bytes in ---------------------------------------------------------------------------------

def test_run_one_decodes_and_runs(device):
    codec = pytest.importorskip("fuzz.codec")
    case = make_case(models.fibonacci_while_model(), ExecutionPath.BURST, ExecutionPath.FENCED)
    outcome = harness.run_one(codec.encode(case), device)
    assert outcome.first.status == ErrorStatus.NONE
    assert outcome.first.outputs == outcome.second.outputs


# --- driver choice and entry point ---------------------------------------------------------

def test_driver_specs_are_loaded_and_checked(monkeypatch):
    from fuzz import drivers
    assert isinstance(drivers.make_device("driver:SampleDriver"), SampleDriver)
    monkeypatch.setenv(drivers.DRIVER_ENV, "tests.fuzz.broken_drivers:Hanging")
    assert isinstance(drivers.make_device(), broken_drivers.Hanging)
    assert drivers.top_package("tests.fuzz.broken_drivers:Hanging") == "tests"
    for spec, message in [("driver", "expected MODULE:FACTORY"), ("no_such_module:X", "cannot import"),
                          ("driver:NoSuchFactory", "has no attribute"), ("driver.device:VERSION", "not callable"),
                          ("driver.hal:Timing", "lacks getSupportedOperations_1_3")]:
        with pytest.raises(DriverSpecError, match=message):
            drivers.make_device(spec)


def test_the_reference_is_the_bundled_driver_unless_that_is_the_one_fuzzed(monkeypatch):
    from fuzz import drivers
    monkeypatch.delenv(drivers.DRIVER_ENV, raising=False)
    monkeypatch.delenv(drivers.REFERENCE_ENV, raising=False)
    assert drivers.configured_reference() is None
    monkeypatch.setenv(drivers.DRIVER_ENV, "tests.fuzz.broken_drivers:Hanging")
    assert drivers.configured_reference() == "driver:SampleDriver"
    monkeypatch.setenv(drivers.REFERENCE_ENV, drivers.NO_REFERENCE)
    assert drivers.configured_reference() is None
    monkeypatch.setenv(drivers.REFERENCE_ENV, "m:f")
    assert drivers.configured_reference() == "m:f"
    assert drivers.environment("m:f", None) == {drivers.DRIVER_ENV: "m:f",
                                                drivers.REFERENCE_ENV: drivers.NO_REFERENCE}


def test_entry_point_strips_its_own_flag_and_adds_defaults():
    from fuzz import driver_fuzz
    spec, rest = driver_fuzz.split_driver_flag(["fuzz.py", "--driver", "m:f", "corpus", "-runs=5"])
    assert spec == "m:f" and rest == ["fuzz.py", "corpus", "-runs=5"]
    spec, rest = driver_fuzz.split_driver_flag(["fuzz.py", "--driver=m:g", "-fork=2"])
    assert spec == "m:g" and rest == ["fuzz.py", "-fork=2"]
    assert driver_fuzz.split_driver_flag(["fuzz.py", "corpus"]) == (None, ["fuzz.py", "corpus"])
    trace = driver_fuzz.TRACE_COMPARISONS_FLAG
    assert driver_fuzz.split_switch(["fuzz.py", trace, "corpus"], trace) == (True, ["fuzz.py", "corpus"])
    assert driver_fuzz.split_switch(["fuzz.py", "corpus"], trace) == (False, ["fuzz.py", "corpus"])
    spec, rest = driver_fuzz.split_driver_flag(["fuzz.py", "--reference=none", "corpus"], driver_fuzz.REFERENCE_FLAG)
    assert (spec, rest) == ("none", ["fuzz.py", "corpus"])
    flags = driver_fuzz.with_default_flags(["fuzz.py", "corpus"])
    assert any(f.startswith("-artifact_prefix=") and f.endswith("crashes/") for f in flags)
    assert f"-timeout={driver_fuzz.DEFAULT_TIMEOUT_S}" in flags
    assert "-entropic_scale_per_exec_time=1" in flags
    mine = driver_fuzz.with_default_flags(["fuzz.py", "-artifact_prefix=out/", "-timeout=5",
                                           "-entropic_scale_per_exec_time=0"])
    assert mine == ["fuzz.py", "-artifact_prefix=out/", "-timeout=5", "-entropic_scale_per_exec_time=0"]


def test_a_finding_keeps_its_input_beside_the_log(tmp_path):
    """A failure is logged with the hash libFuzzer names its artifact by, and its input is
    saved under that hash: a crash- file lost to a signal during the crash exit loses
    nothing."""
    import hashlib
    from fuzz import driver_fuzz
    log = driver_fuzz.findings_log(["fuzz.py", f"-artifact_prefix={tmp_path}/"])
    assert log == tmp_path / "findings.log"
    data = b"\x01\x02input"
    driver_fuzz.record_finding(log, data, AssertionError("the rule\nand details"))
    digest = hashlib.sha1(data).hexdigest()
    assert (tmp_path / f"{driver_fuzz.FINDING_PREFIX}{digest}").read_bytes() == data
    assert log.read_text() == f"{digest}  AssertionError: the rule\n"
    assert driver_fuzz.findings_log(["fuzz.py", f"-artifact_prefix={tmp_path}/missing/"]) is None


@pytest.mark.slow
def test_fuzzer_finds_a_planted_bug_and_its_children_use_the_same_driver(tmp_path):
    """End to end through libFuzzer: the driver named by --driver finds the bug in the seed,
    and the re-executed child of -minimize_crash (as of -fork and -jobs) uses that driver
    too, so the crash reproduces there."""
    import subprocess
    import sys
    from fuzz.codec import encode
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "seed").write_bytes(encode(make_case(sqrt_branch_model())))
    entry = Path(__file__).resolve().parents[2] / "fuzz" / "driver_fuzz.py"
    driver = ["--driver", "tests.fuzz.broken_drivers:SupportedDisagrees"]

    def fuzz(*arguments: str) -> str:
        run = subprocess.run([sys.executable, str(entry), *driver, *arguments,
                              f"-artifact_prefix={tmp_path}/"],
                             capture_output=True, text=True, timeout=300, cwd=tmp_path)
        return run.stdout + run.stderr

    output = fuzz(str(seeds), "-runs=20")
    assert "SupportedPrepareViolation" in output, output[-3000:]
    artifact = next(tmp_path.glob("crash-*"))
    output = fuzz("-minimize_crash=1", "-runs=20", f"-exact_artifact_path={tmp_path / 'min'}", str(artifact))
    assert "caused a crash. Will try to minimize it further" in output, output[-3000:]


# --- the memory budget ----------------------------------------------------------------------------

class _FixedBudget:
    """A device (as far as the budget goes) stating a budget no client may set."""
    memory_budget_bytes = property(lambda self: 1 << 30)


def test_the_harness_budget_goes_to_a_device_that_takes_it_and_not_to_one_that_does_not(monkeypatch):
    from fuzz import drivers
    monkeypatch.setattr(drivers.device, "make_device", lambda spec: SampleDriver())
    assert drivers.make_device("any:Factory").memory_budget_bytes == drivers.MEMORY_BUDGET_BYTES
    monkeypatch.setattr(drivers.device, "make_device", lambda spec: _FixedBudget())
    fixed = drivers.make_device("any:Factory")
    assert fixed.memory_budget_bytes == 1 << 30 and harness.memory_budget(fixed) == 1 << 30


def test_declared_elements_are_counted_to_the_measured_bound_whatever_the_rank():
    """A shape past any rank limit is not multiplied out; it declares what its dimensions
    do (a shape of a thousand ones had counted as MEASURED_CASE_ELEMENTS, measured as
    though it held a million elements)."""
    def model(*shapes):
        return Model(main=Subgraph(operands=[Operand(OperandType.TENSOR_FLOAT32, list(s)) for s in shapes]))
    measured = harness.MEASURED_CASE_ELEMENTS
    assert harness.declared_elements(model([1] * 1000, [2, 3])) == 7
    assert harness.declared_elements(model([0] + [2**32 - 1] * 100_000)) == 0
    assert harness.declared_elements(model([2**32 - 1] * 100_000)) == measured + 1
    assert harness.declared_elements(model([1024, 1024], [8])) == measured + 8
