"""Replay every committed fuzz input through the harness, in-process, against the bundled
driver: the seed corpus must pass, and so must every reproducer in crashes/ that its
sidecar marks "fixed". Each reproducer is its own case: a missing or malformed sidecar
fails that case, saying what is wrong, and nothing else.

A reproducer whose sidecar says "open" is a known, not yet fixed failure: it is expected to
fail (a strict xfail, with the sidecar's message as the reason), so the suite stays green
while the bug is open, and fails with XPASS(strict) once a fix lands, saying to mark it
fixed. One whose failure killed the process (the sidecar's message says the worker died: a
SIGBUS, say) is replayed in a child process, so that it cannot take the suite down.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
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
    # Only the file names are read at collection: a bad sidecar must fail its own case,
    # not stop the collection of every test.
    return [pytest.param(path, id=f"{folder.name}/{path.name}") for path in inputs_in(folder)]


#: What every sidecar says, and the statuses a reproducer can have.
SIDECAR_FIELDS = ("kind", "signature", "message", "status")
STATUSES = ("open", "fixed")


def read_sidecar(path: Path) -> dict:
    """The sidecar of reproducer ``path``, or an AssertionError saying what is wrong with it."""
    sidecar = path.with_suffix(".json")
    assert sidecar.exists(), (f"{path.name} has no sidecar {sidecar.name}: triage it "
                              f"(scripts/triage.py) so that it says what it reproduces")
    try:
        info = json.loads(sidecar.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise AssertionError(f"{sidecar.name} is not valid JSON: {error}") from None
    assert isinstance(info, dict), f"{sidecar.name} holds a {type(info).__name__}, not an object"
    missing = [name for name in SIDECAR_FIELDS if not isinstance(info.get(name), str)]
    assert not missing, f"{sidecar.name} lacks the text field(s) {', '.join(missing)}"
    assert info["status"] in STATUSES, (f"{sidecar.name}: status {info['status']!r} is not "
                                        f"one of {', '.join(STATUSES)}")
    budget = info.get("memory_limit_mb", DEFAULT_BUDGET_MB)
    assert isinstance(budget, int) and not isinstance(budget, bool) and budget > 0, (
        f"{sidecar.name}: memory_limit_mb {budget!r} is not a positive whole number")
    return info


@pytest.fixture(scope="module")
def device():
    return SampleDriver()


def replay(path: Path, device, memory_limit_mb: int = DEFAULT_BUDGET_MB) -> None:
    started = time.monotonic()
    # Bounded like the fuzzer's -rss_limit_mb (a reproducer's sidecar gives the budget it
    # was triaged with): a regressed out-of-memory bug fails here with MemoryError
    # instead of filling the machine.
    with memory_budget(memory_limit_mb):
        harness.run_one(path.read_bytes(), device)
    elapsed = time.monotonic() - started
    assert elapsed < REPLAY_LIMIT_S, f"{path.name} took {elapsed:.1f} s"


#: How a sidecar's message begins when the failure killed the process (scripts/triage.py).
DIED = "the worker died"


def replay_in_child(path: Path, memory_limit_mb: int) -> None:
    """``replay`` in a child process: a failure that kills it fails the test instead."""
    code = ("import sys; from pathlib import Path; from driver import SampleDriver; "
            "from tests.fuzz.test_replay import replay; "
            "replay(Path(sys.argv[1]), SampleDriver(), int(sys.argv[2]))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (
        str(REPO_ROOT), os.environ.get("PYTHONPATH"))))}
    child = subprocess.run([sys.executable, "-c", code, str(path), str(memory_limit_mb)],
                           cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    assert child.returncode == 0, (f"{path.name}: the replay ended with {child.returncode}: "
                                   f"{child.stderr[-2000:]}")


@pytest.mark.parametrize("path", replay_params(REPO_ROOT / "corpus"))
def test_corpus_input_passes(path, device):
    replay(path, device)


def replay_reproducer(path: Path, device, request) -> None:
    """Replay a reproducer of crashes/ as its sidecar says: one still open must fail."""
    info = read_sidecar(path)
    if info["status"] == "open":
        request.applymarker(pytest.mark.xfail(strict=True, reason=(
            f"open: {info['message'][:200]} (if it passes, the bug is fixed: set the status "
            f"in {path.with_suffix('.json').name} to fixed)")))
    memory_limit_mb = info.get("memory_limit_mb", DEFAULT_BUDGET_MB)
    if info["message"].startswith(DIED):
        replay_in_child(path, memory_limit_mb)
    else:
        replay(path, device, memory_limit_mb)


@pytest.mark.parametrize("path", replay_params(REPO_ROOT / "crashes"))
def test_crash_reproducer_passes(path, device, request):
    replay_reproducer(path, device, request)


def test_an_open_reproducer_that_passes_fails_the_suite(tmp_path):
    """An open reproducer the driver no longer fails on is an XPASS(strict) failure, which
    says to mark it fixed."""
    reproducer = tmp_path / "0123456789abcdef"
    reproducer.write_bytes(inputs_in(REPO_ROOT / "corpus")[0].read_bytes())
    reproducer.with_suffix(".json").write_text(json.dumps(
        {"kind": "crash", "signature": "s", "message": "a bug", "status": "open"}))
    test_file = tmp_path / "test_open_reproducer.py"
    test_file.write_text(
        "from pathlib import Path\n"
        "from driver import SampleDriver\n"
        "from tests.fuzz.test_replay import replay_reproducer\n\n"
        "def test_open(request):\n"
        f"    replay_reproducer(Path({str(reproducer)!r}), SampleDriver(), request)\n")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rX", str(test_file)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)))
    assert result.returncode == pytest.ExitCode.TESTS_FAILED, result.stdout[-2000:]
    assert "XPASS(strict)" in result.stdout and "to fixed" in result.stdout, result.stdout[-2000:]


@pytest.mark.parametrize("sidecar, complaint", [
    (None, "has no sidecar"),
    ("{not json", "is not valid JSON"),
    ("[1, 2]", "holds a list"),
    ('{"kind": "crash", "signature": "s", "message": "m"}', "lacks the text field(s) status"),
    ('{"kind": "crash", "signature": "s", "message": "m", "status": "gone"}', "is not one of"),
    ('{"kind": "oom", "signature": "s", "message": "m", "status": "fixed", '
     '"memory_limit_mb": "lots"}', "is not a positive whole number"),
])
def test_a_bad_sidecar_fails_its_own_case_with_a_reason(tmp_path, sidecar, complaint):
    reproducer = tmp_path / "0123456789abcdef"
    reproducer.write_bytes(b"\x00")
    if sidecar is not None:
        reproducer.with_suffix(".json").write_text(sidecar)
    assert [param.values[0] for param in replay_params(tmp_path)] == [reproducer]
    with pytest.raises(AssertionError, match=re.escape(complaint)):
        read_sidecar(reproducer)


def test_a_good_sidecar_is_read():
    reproducers = inputs_in(REPO_ROOT / "crashes")
    assert reproducers, "crashes/ holds reproducers"
    for path in reproducers:
        assert read_sidecar(path)["status"] in STATUSES
