"""Replay every committed fuzz input through the harness, in-process, against the bundled
driver: the seed corpus must pass, and so must every reproducer in crashes/ that its
sidecar marks "fixed" (or that has no sidecar yet).

A reproducer whose sidecar says "open" is a known, not yet fixed failure: it is expected to
fail (xfail, not strict, with the sidecar's message as the reason), so the suite stays
green while the bug is open and reports XPASS once a fix lands, the cue to mark it fixed.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from driver import SampleDriver
from fuzz import harness
from fuzz.memory_limit import DEFAULT_BUDGET_MB, memory_budget

REPO_ROOT = Path(__file__).resolve().parents[2]
#: A replay is bounded by the harness's hang detection already; this catches inputs that
#: are merely slow, which would slow fuzzing down just as much.
REPLAY_LIMIT_S = 30.0
#: Sidecars and the fuzzer's findings.log live beside the inputs.
NOT_INPUTS = {".json", ".log", ".md"}


def inputs_in(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir()
                  if p.is_file() and p.suffix not in NOT_INPUTS and not p.name.startswith((".", "README")))


def replay_params(folder: Path) -> list:
    params = []
    for path in inputs_in(folder):
        sidecar = path.with_suffix(".json")
        marks = ()
        if sidecar.exists():
            info = json.loads(sidecar.read_text())
            if info.get("status") == "open":
                marks = (pytest.mark.xfail(strict=False, reason=f"open: {info.get('message', '')[:200]}"),)
        params.append(pytest.param(path, marks=marks, id=f"{folder.name}/{path.name}"))
    return params


@pytest.fixture(scope="module")
def device():
    return SampleDriver()


def memory_budget_of(path: Path) -> int:
    """The memory a replay may take: the budget an out-of-memory reproducer was triaged
    with (its sidecar says), libFuzzer's default otherwise."""
    sidecar = path.with_suffix(".json")
    if sidecar.exists():
        return int(json.loads(sidecar.read_text()).get("memory_limit_mb", DEFAULT_BUDGET_MB))
    return DEFAULT_BUDGET_MB


def replay(path: Path, device) -> None:
    started = time.monotonic()
    # Bounded like the fuzzer's -rss_limit_mb: a regressed out-of-memory bug fails here
    # with MemoryError instead of filling the machine.
    with memory_budget(memory_budget_of(path)):
        harness.run_one(path.read_bytes(), device)
    elapsed = time.monotonic() - started
    assert elapsed < REPLAY_LIMIT_S, f"{path.name} took {elapsed:.1f} s"


@pytest.mark.parametrize("path", replay_params(REPO_ROOT / "corpus"))
def test_corpus_input_passes(path, device):
    replay(path, device)


@pytest.mark.parametrize("path", replay_params(REPO_ROOT / "crashes"))
def test_crash_reproducer_passes(path, device):
    replay(path, device)
