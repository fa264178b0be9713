"""WHILE loop timeouts (loopTimeoutDuration): a loop whose condition never turns false is
aborted with MISSED_DEADLINE_TRANSIENT on every execution path, no later than the timeout
plus a margin, and no earlier than the timeout."""
from __future__ import annotations

import numpy as np
import pytest

from driver.hal.enums import ErrorStatus, LoopTimeoutDurationNs, MeasureTiming
from hal_client.builder import make_request, out_like
from tests.driver.execution import (ALL_PATHS, EARLY_SLACK_S, MARGIN_S, MS, Outcome, Path,
                                    duration, execute, run_concurrently)


def run_loop(prepared, path: Path, loop_timeout_ns, measure=MeasureTiming.YES) -> Outcome:
    io = make_request([np.array([0], np.float32)], [out_like(np.float32, [1])])
    return execute(prepared, io.request, path, measure=measure, loop_timeout=duration(loop_timeout_ns))


def assert_aborted_by_loop_timeout(outcome: Outcome, timeout_s: float) -> None:
    assert outcome.status == ErrorStatus.MISSED_DEADLINE_TRANSIENT, outcome
    assert timeout_s - EARLY_SLACK_S <= outcome.elapsed_s <= timeout_s + MARGIN_S, outcome.elapsed_s


@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
def test_short_loop_timeout_aborts_infinite_loop(infinite_loop, path):
    outcome = run_loop(infinite_loop, path, 100 * MS)
    assert_aborted_by_loop_timeout(outcome, 0.1)


def test_default_loop_timeout_aborts_infinite_loop_on_every_path(infinite_loop):
    """loopTimeoutDuration omitted: the default of 2 s. The four paths run at once so the
    test costs one timeout, not four."""
    outcomes: dict[Path, Outcome] = {}

    def run_one(path: Path) -> None:
        outcomes[path] = run_loop(infinite_loop, path, None)

    run_concurrently(run_one, [(path,) for path in ALL_PATHS],
                     timeout_s=LoopTimeoutDurationNs.DEFAULT / 1e9 + 10)
    assert set(outcomes) == set(ALL_PATHS)
    for path, outcome in outcomes.items():
        assert_aborted_by_loop_timeout(outcome, LoopTimeoutDurationNs.DEFAULT / 1e9)


@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
@pytest.mark.parametrize("loop_timeout_ns", [LoopTimeoutDurationNs.MAXIMUM + 1, 2 ** 64 - 1])
def test_loop_timeout_above_maximum_is_invalid(finite_loop, path, loop_timeout_ns):
    outcome = run_loop(finite_loop, path, loop_timeout_ns)
    assert outcome.status == ErrorStatus.INVALID_ARGUMENT, outcome


@pytest.mark.parametrize("path", ALL_PATHS, ids=lambda p: p.value)
@pytest.mark.parametrize("loop_timeout_ns", [LoopTimeoutDurationNs.MAXIMUM, 50 * MS, None])
def test_finite_loop_completes_within_its_timeout(finite_loop, path, loop_timeout_ns):
    io = make_request([np.array([0], np.float32)], [out_like(np.float32, [1])])
    outcome = execute(finite_loop, io.request, path, loop_timeout=duration(loop_timeout_ns))
    assert outcome.status == ErrorStatus.NONE, outcome
    assert io.output(0, [1]).tolist() == [100.0]


def test_loop_timeout_is_per_execution(infinite_loop, finite_loop):
    """An aborted loop leaves the prepared model usable, and one execution's timeout does
    not carry over to the next."""
    assert_aborted_by_loop_timeout(run_loop(infinite_loop, Path.SYNC, 50 * MS), 0.05)
    assert_aborted_by_loop_timeout(run_loop(infinite_loop, Path.SYNC, 150 * MS), 0.15)
    assert run_loop(finite_loop, Path.SYNC, 50 * MS).status == ErrorStatus.NONE
