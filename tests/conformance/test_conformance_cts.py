"""The bundled driver against the CTS's control-flow models (IF and WHILE), on every
execution path and variant. Needs ../shared/conformance beside the checkout; skipped
without it."""
from __future__ import annotations

from pathlib import Path

import pytest

from hal_client.conformance.runner import RunOptions, Verdict, run_files
from hal_client.paths import ExecutionPath
from driver.hal import ErrorStatus, LoopTimeoutDurationNs

REPO_ROOT = Path(__file__).resolve().parents[2]
CTS = REPO_ROOT.parent / "shared" / "conformance" / "cts"

pytestmark = pytest.mark.skipif(not CTS.is_dir(), reason=f"{CTS} is absent")

#: How long past the loop timeout an endless WHILE may take to be stopped.
LOOP_TIMEOUT_SLACK_S = 0.5


def control_flow_files() -> list[Path]:
    return sorted(path for version in ("V1_3", "V1_3_cts_only")
                  for pattern in ("if_*.json*", "while_*.json*")
                  for path in (CTS / version).glob(pattern))


@pytest.fixture(scope="module")
def control_flow_results():
    files = control_flow_files()
    assert files, f"no if_* / while_* models under {CTS}"
    # The endless loops dominate (2 s per execution), so the files run in two processes.
    file_results = list(run_files(files, RunOptions(), jobs=2))
    assert [r.load_error for r in file_results if r.load_error] == []
    return [result for file_result in file_results for result in file_result.results]


def test_control_flow_models_pass_on_every_path_and_variant(control_flow_results):
    failures = [r.failure_line() for r in control_flow_results if r.verdict is Verdict.FAILED]
    assert failures == []
    passed = [r for r in control_flow_results if r.verdict is Verdict.PASSED]
    assert len(passed) > len(control_flow_results) // 2, "most models were skipped"
    # Models that are valid HAL 1.3 models are never skipped: only the CTS-only WHILE
    # loops with operands of unknown size may be refused.
    skipped = {r.name for r in control_flow_results if r.verdict is Verdict.SKIPPED}
    assert all(name.startswith("while_") and "unknown_" in name for name in skipped), skipped
    variants = {(c.step, c.variant.value) for r in passed for c in r.checks}
    assert {("fenced", "dynamic"), ("burst", "insufficient"), ("async", "normal"),
            ("fenced", "buffers"), ("burst", "buffers"), ("sync", "cache")} <= variants


def test_endless_loops_stop_at_the_loop_timeout_on_every_path(control_flow_results):
    loops = [r for r in control_flow_results if r.name.startswith("while_infinite_loop")]
    assert loops
    limit = LoopTimeoutDurationNs.DEFAULT / 1e9 + LOOP_TIMEOUT_SLACK_S
    for result in loops:
        assert {c.step for c in result.checks} == {path.label for path in ExecutionPath}
        for check in result.checks:
            assert check.status == ErrorStatus.MISSED_DEADLINE_TRANSIENT, (result.name, check)
            assert check.elapsed <= limit, (result.name, check.step, check.elapsed)

