"""The conformance runner against a fake device: it passes a correct driver and names each
mistake of a wrong one. Also the command line."""
from __future__ import annotations

import json

import pytest

from driver.buffers import DeviceBuffer
from driver.device import SampleDriver
from driver.hal import ErrorStatus
from driver.hal.enums import LoopTimeoutDurationNs
from hal_client import contract
from hal_client.conformance.__main__ import main
from hal_client.conformance.loader import load_examples
from hal_client.conformance.runner import RunOptions, Variant, Verdict, run_example
from hal_client.paths import ExecutionPath

from tests.conformance.helpers import (FakeDevice, Mistakes, add_model, model_entry, operand,
                                       write_models)

FAKE_DRIVER = "tests.conformance.helpers:FakeDevice"


def load(tmp_path, entry):
    return next(load_examples(write_models(tmp_path / "m.json", [entry])))


def run(tmp_path, entry=None, options=RunOptions(), compute=None, **mistakes):
    example = load(tmp_path, entry or add_model())
    return run_example(FakeDevice(Mistakes(**mistakes), compute), example, options)


def failed_steps(result) -> dict[tuple[str, str], str]:
    return {(c.step, c.variant.value): c.reason for c in result.checks
            if c.verdict is Verdict.FAILED}


def test_a_correct_driver_passes_every_path_and_variant(tmp_path):
    result = run(tmp_path)
    assert result.verdict is Verdict.PASSED, result.reason
    steps = sorted((c.step, c.variant.value) for c in result.checks)
    assert steps == sorted(
        [(p.label, "normal") for p in ExecutionPath] + [(p.label, "dynamic") for p in ExecutionPath]
        + [(p.label, "insufficient") for p in ExecutionPath if p is not ExecutionPath.FENCED]
        + [("allocate", "buffers"), ("prepare", "cache")])
    # The fake offers no memory domains and caches nothing, as a driver may.
    assert {c.reason for c in result.checks if c.variant in (Variant.BUFFERS, Variant.CACHE)} == {
        "the driver offers no memory domains", "the driver caches nothing"}
    fenced_dynamic = next(c for c in result.checks
                          if (c.step, c.variant) == ("fenced", Variant.DYNAMIC))
    assert fenced_dynamic.status == ErrorStatus.INVALID_ARGUMENT


def test_wrong_values_fail_every_path(tmp_path):
    result = run(tmp_path, value_offset=0.01)
    assert result.verdict is Verdict.FAILED
    failures = failed_steps(result)
    normal_failures = {step for step, variant in failures if variant == "normal"}
    assert normal_failures == {path.label for path in ExecutionPath}
    assert "output 0 (out): 4 of 4 values outside atol=1e-05" in failures[("sync", "normal")]
    assert result.failure_line().startswith("FAIL add_float [")
    assert "more failing steps" in result.failure_line()


def test_unreported_dynamic_shapes_fail(tmp_path):
    failures = failed_steps(run(tmp_path, report_model_dims=True))
    assert "output 0: shape [0, 0] reported, expected [2, 2]" in failures[("sync", "dynamic")]
    assert ("sync", "normal") not in failures
    assert ("fenced", "dynamic") not in failures


def test_ignoring_a_short_buffer_fails(tmp_path):
    failures = failed_steps(run(tmp_path, ignore_insufficient=True))
    assert set(failures) == {(p, "insufficient") for p in ("sync", "async", "burst")}
    assert failures[("async", "insufficient")] == "status NONE, expected OUTPUT_INSUFFICIENT_SIZE"


def test_unsupported_operations_skip(tmp_path):
    result = run(tmp_path, unsupported=True)
    assert result.verdict is Verdict.SKIPPED
    assert result.reason == "unsupported operations: ADD (operation 0)"


def test_an_error_from_get_supported_operations_fails(tmp_path):
    result = run(tmp_path, supported_status=ErrorStatus.GENERAL_FAILURE)
    assert result.verdict is Verdict.FAILED
    assert result.reason == "getSupportedOperations_1_3 returned GENERAL_FAILURE for a valid model"


def test_a_driver_exception_is_reported_with_its_origin(tmp_path):
    result = run(tmp_path, raise_in_execute=True)
    assert result.verdict is Verdict.FAILED
    assert "raised RuntimeError: fake driver bug (at helpers.py:" in result.reason


def test_a_hung_call_fails_after_the_call_timeout(tmp_path):
    options = RunOptions(paths=(ExecutionPath.SYNC,), variants=(Variant.NORMAL,), call_timeout=0.2)
    result = run(tmp_path, options=options, execute_delay=1.0)
    assert result.reason == "[hang] executeSynchronously_1_3 did not return within 0.2 s"


def test_timing_without_measure_fails(tmp_path):
    failures = failed_steps(run(tmp_path, timing_without_measure=True))
    assert failures and all("although timing was not requested" in reason
                           for reason in failures.values())


def failing_model():
    return add_model("must_fail", expectFailure=True)


def loop_model(name: str = "loop", body_dims=(1,), **fields):
    """A WHILE whose output is the model's output; ``body_dims`` of the body's operands."""
    cond = {"operands": [operand("TENSOR_FLOAT32", [1], "SUBGRAPH_INPUT"),
                         operand("TENSOR_BOOL8", [1], "SUBGRAPH_OUTPUT", consumers=0)],
            "operations": [], "inputIndexes": [0], "outputIndexes": [1]}
    body = {"operands": [operand("TENSOR_FLOAT32", list(body_dims), "SUBGRAPH_INPUT"),
                         operand("TENSOR_FLOAT32", list(body_dims), "SUBGRAPH_OUTPUT",
                                 consumers=0)],
            "operations": [], "inputIndexes": [0], "outputIndexes": [1]}
    main = {"operands": [operand("SUBGRAPH", [], "SUBGRAPH", [0]),
                         operand("SUBGRAPH", [], "SUBGRAPH", [1]),
                         operand("TENSOR_FLOAT32", [1], "SUBGRAPH_INPUT", [0.0]),
                         operand("TENSOR_FLOAT32", [1], "SUBGRAPH_OUTPUT", [3.0], consumers=0)],
            "operations": [{"type": "WHILE", "inputs": [0, 1, 2], "outputs": [3]}],
            "inputIndexes": [2], "outputIndexes": [3]}
    return model_entry(name, main, [cond, body], **fields)


ENDLESS_LOOP = loop_model("endless", expectFailure=True)   # the fake decides it never ends


@pytest.mark.parametrize("entry, status, verdict, reason", [
    (failing_model(), None, Verdict.FAILED, "status NONE, expected an error (the model must fail)"),
    (failing_model(), ErrorStatus.GENERAL_FAILURE, Verdict.PASSED, ""),
    (ENDLESS_LOOP, ErrorStatus.GENERAL_FAILURE, Verdict.FAILED,
     "status GENERAL_FAILURE, expected MISSED_DEADLINE_TRANSIENT (the loop never ends)"),
    (ENDLESS_LOOP, ErrorStatus.MISSED_DEADLINE_TRANSIENT, Verdict.PASSED, ""),
], ids=["fail-none", "fail-error", "loop-wrong-status", "loop-timeout"])
def test_models_that_must_fail(tmp_path, entry, status, verdict, reason):
    # A driver reports a loop timed out once the loop timeout has passed (the runner gives
    # none: the default); sooner is a violation of its own (deadline-missed-early).
    delay = LoopTimeoutDurationNs.DEFAULT / 1e9 if status in contract.MISSED_DEADLINE else 0
    result = run(tmp_path, entry, execution_status=status, execute_delay=delay)
    assert (result.verdict, result.reason) == (verdict, reason)
    assert {c.variant for c in result.checks} == {Variant.NORMAL}   # no unknown-shape variants
    assert len(result.checks) == len(ExecutionPath)


def test_the_bundled_driver_passes_buffers_and_cache(tmp_path):
    example = load(tmp_path, add_model())
    options = RunOptions(variants=(Variant.BUFFERS, Variant.CACHE))
    result = run_example(SampleDriver(), example, options)
    assert result.verdict is Verdict.PASSED, result.reason
    assert sorted((c.step, c.variant.value) for c in result.checks) == sorted(
        [(p.label, "buffers") for p in ExecutionPath] + [("sync", "cache")])


def wrong_copies(buffer, dst):
    dst.write(bytes(dst.size))
    return ErrorStatus.NONE


@pytest.mark.parametrize("mistake, reason", [
    ("copyTo", "output 0 (out): 4 of 4 values outside atol=1e-05"),
    ("allocate", "IDevice.allocate returned INVALID_ARGUMENT for a role of the model"),
    ("cache", "prepareModelFromCache_1_3 notified GENERAL_FAILURE for the files "
              "prepareModel_1_3 had just written"),
])
def test_mistakes_in_buffers_and_caching_fail(tmp_path, monkeypatch, mistake, reason):
    device = SampleDriver()
    if mistake == "copyTo":
        monkeypatch.setattr(DeviceBuffer, "copyTo", wrong_copies)
    elif mistake == "allocate":
        monkeypatch.setattr(device, "allocate", lambda *args: (ErrorStatus.INVALID_ARGUMENT, None, 0))
    else:
        monkeypatch.setattr(device, "_save_to_cache", lambda *args: None)
    result = run_example(device, load(tmp_path, add_model()),
                         RunOptions(variants=(Variant.BUFFERS, Variant.CACHE)))
    assert result.verdict is Verdict.FAILED
    assert any(c.reason.startswith(reason) for c in result.checks), result.checks


def test_only_the_chosen_paths_and_variants_run(tmp_path):
    options = RunOptions(paths=(ExecutionPath.BURST,), variants=(Variant.INSUFFICIENT,))
    result = run(tmp_path, options=options)
    assert [(c.step, c.variant) for c in result.checks] == [("burst", Variant.INSUFFICIENT)]
    assert result.verdict is Verdict.PASSED


# --- command line -------------------------------------------------------------------------

@pytest.fixture
def suite(tmp_path):
    folder = tmp_path / "suite"
    (folder / "sub").mkdir(parents=True)
    write_models(folder / "sub" / "good.json.gz", [add_model("good_one"), add_model("good_two")])
    (folder / "broken.json").write_text('[{"name": "x", "main": {}}]')
    return folder


def test_cli_summary_failure_lines_and_report(suite, tmp_path, capsys):
    report = tmp_path / "report.json"
    status = main([str(suite), "--driver", FAKE_DRIVER, "--report", str(report)])
    lines = capsys.readouterr().out.splitlines()
    assert status == 1
    assert lines[-1] == "2 passed, 1 failed, 0 skipped"
    assert lines[0].startswith(f"FAIL {suite / 'broken.json'} [load/file]: ")
    assert "missing field 'referenced'" in lines[0]
    entries = json.loads(report.read_text())
    assert [set(e) for e in entries] == [{"name", "status", "reason"}] * 3
    assert [e["status"] for e in entries] == ["failed", "passed", "passed"]


def test_cli_filters_paths_and_processes(suite, capsys):
    status = main([str(suite / "sub"), "--driver", FAKE_DRIVER, "-k", "two", "-j", "2",
                   "--paths", "sync,burst", "--variants", "normal"])
    assert status == 0
    assert capsys.readouterr().out.splitlines() == ["1 passed, 0 failed, 0 skipped"]


def unsupporting_device():
    return FakeDevice(Mistakes(unsupported=True))


@pytest.mark.parametrize("strict, status", [(False, 0), (True, 1)])
def test_cli_strict_counts_a_skipped_example_as_incomplete(suite, capsys, strict, status):
    arguments = [str(suite / "sub"), "--driver", f"{__name__}:unsupporting_device"]
    assert main(arguments + ["--strict"] * strict) == status
    assert capsys.readouterr().out.splitlines()[-1] == "0 passed, 0 failed, 2 skipped"


def test_cli_list(suite, capsys):
    assert main([str(suite / "sub"), "--list"]) == 0
    assert [line.split("\t")[0] for line in capsys.readouterr().out.splitlines()] == [
        "good_one", "good_two"]


def test_cli_rejects_bad_arguments(suite, capsys):
    assert main([str(suite), "--driver", "no_such_module:Factory"]) == 2
    assert "cannot make the device" in capsys.readouterr().err
    assert main([str(suite / "missing")]) == 2
    with pytest.raises(SystemExit):
        main([str(suite), "--paths", "sync,teleport"])


@pytest.mark.parametrize("timeout", ["1e10", "0", "-1", "nan", "inf", "soon"])
def test_cli_refuses_a_call_timeout_that_no_wait_takes(suite, capsys, timeout):
    """A timeout past threading.TIMEOUT_MAX raised OverflowError out of every call's wait
    (each example failed with it); none at all, or a negative one, failed every call as a
    hang. Refused when the arguments are read, with the limit in the message."""
    with pytest.raises(SystemExit) as exited:
        main([str(suite / "sub"), "--driver", FAKE_DRIVER, f"--timeout={timeout}"])
    assert exited.value.code == 2
    assert "--timeout" in capsys.readouterr().err


def test_cli_takes_a_call_timeout_up_to_a_day(suite, capsys):
    assert main([str(suite / "sub"), "--driver", FAKE_DRIVER, "--paths", "sync", "--variants",
                 "normal", "--timeout", "86400"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "2 passed, 0 failed, 0 skipped"


def count_to_three(inputs):
    return [inputs[0] + 3]


@pytest.mark.parametrize("body_dims, verdict", [((), Verdict.SKIPPED), ((1,), Verdict.PASSED)])
def test_a_driver_may_refuse_while_operands_of_unknown_size(tmp_path, body_dims, verdict):
    result = run(tmp_path, loop_model(body_dims=body_dims), compute=count_to_three,
                 refuse_unknown_size_while=True)
    assert result.verdict is verdict, result.reason
    refused = [c for c in result.checks if c.step == "supported"]
    assert refused and all(c.reason.startswith("not a HAL 1.3 model (main subgraph, "
                                               "operation 0 (WHILE)") for c in refused)
    # With known sizes only the altered model (outputs of unknown shape) is refused.
    assert {(c.variant, c.verdict) for c in refused} == (
        {(Variant.NORMAL, Verdict.SKIPPED), (Variant.DYNAMIC, Verdict.SKIPPED)}
        if verdict is Verdict.SKIPPED else {(Variant.DYNAMIC, Verdict.PASSED)})


def test_refusing_a_valid_loop_fails(tmp_path):
    result = run(tmp_path, loop_model(), supported_status=ErrorStatus.INVALID_ARGUMENT)
    assert result.reason == "getSupportedOperations_1_3 returned INVALID_ARGUMENT for a valid model"
