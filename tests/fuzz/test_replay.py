"""Replay every committed fuzz input through the harness, in-process, against the driver it
was found on (its sidecar's, the bundled driver for the corpus): the seed corpus must pass,
and so must every reproducer in crashes/ that its sidecar marks "fixed". Each reproducer is
its own case: a missing or malformed sidecar fails that case, saying what is wrong, and
nothing else. A reproducer of a driver that cannot be made here (LiteRT's, without the
``litert`` extra) is skipped.

A reproducer whose sidecar says "open" is a known, not yet fixed failure: it is expected to
fail (a strict xfail, with the sidecar's message as the reason), so the suite stays green
while the bug is open, and fails with XPASS(strict) once a fix lands, saying to mark it
fixed. One whose failure killed the process (the sidecar's message says the worker died: a
SIGBUS, say) is replayed in a child process, so that it cannot take the suite down.

A reproducer whose sidecar says "upstream" is a discrepancy of LiteRT, known and reported
upstream with the standalone reproducer in crashes/litert/<name>/: LiteRT must still
disagree with the reference on it, so that an upgrade of LiteRT that fixes it is noticed
(the case then fails, saying to mark it fixed); and each standalone reproducer, run on its
own, must still exit with status 1.
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

from fuzz import harness
from fuzz.litert_repro import run_script
from fuzz.memory_limit import DEFAULT_BUDGET_MB, memory_budget
from fuzz.spec import FINDING_CLASSES
from hal_client.device import DEFAULT_DRIVER, DriverSpecError, make_device

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
STATUSES = ("open", "fixed", "upstream")
#: What an upstream sidecar says of LiteRT (under "litert"; fuzz/litert_repro.py).
UPSTREAM_FIELDS = ("version", "kernel_set", "kind", "reproducer", "class")


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
    if info["status"] == "upstream":
        litert = info.get("litert")
        assert isinstance(litert, dict) and all(isinstance(litert.get(k), str) for k in UPSTREAM_FIELDS), (
            f"{sidecar.name}: an upstream reproducer needs \"litert\" with the text field(s) "
            f"{', '.join(UPSTREAM_FIELDS)}")
        assert litert["class"] in FINDING_CLASSES, (
            f"{sidecar.name}: class {litert['class']!r} is not one of {', '.join(FINDING_CLASSES)}")
    budget = info.get("memory_limit_mb", DEFAULT_BUDGET_MB)
    assert isinstance(budget, int) and not isinstance(budget, bool) and budget > 0, (
        f"{sidecar.name}: memory_limit_mb {budget!r} is not a positive whole number")
    return info


def replay(path: Path, device, memory_limit_mb: int = DEFAULT_BUDGET_MB) -> None:
    started = time.monotonic()
    # Bounded like the fuzzer's -rss_limit_mb (a reproducer's sidecar gives the budget it
    # was triaged with): a regressed out-of-memory bug fails here with MemoryError
    # instead of filling the machine.
    with memory_budget(memory_limit_mb):
        harness.run_one(path.read_bytes(), device)
    elapsed = time.monotonic() - started
    assert elapsed < REPLAY_LIMIT_S, f"{path.name} took {elapsed:.1f} s"


#: How a sidecar's message begins when the failure killed the process (fuzz/triage.py).
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


_DEVICES: dict[str, object] = {}


def device_of(spec: str):
    """The device of a --driver spec, made once; the test is skipped when it cannot be
    made here (an extra not installed)."""
    if spec not in _DEVICES:
        try:
            _DEVICES[spec] = make_device(spec)
        except DriverSpecError as error:
            pytest.skip(f"{spec} cannot be made here: {error}")
    return _DEVICES[spec]


def replay_upstream(path: Path, info: dict) -> None:
    """An upstream reproducer still shows its discrepancy of the same kind (a wrong value, a
    failure, a crash, outputs where the reference fails) between its driver and its
    reference, as backends/litert/reproducer.py finds it: judged on values, not by an
    oracle's rule, so that outputs LiteRT reads out of bounds, which two runs may give
    alike, still count (or a crash, as such a read may end in). Else LiteRT was fixed: the
    failure says to mark it so."""
    driver = device_of(info.get("driver", DEFAULT_DRIVER))        # skips without the extra
    reference = device_of(info.get("reference", DEFAULT_DRIVER))
    from backends.litert import reproducer                       # imports LiteRT
    from fuzz.codec import decode
    litert = info["litert"]
    found = reproducer.reproduce(driver, reference, decode(path.read_bytes()),
                                 reproducer.divergence_of(sidecar=info))
    # A crash is never right: one that reads out of bounds may crash on another run.
    if found is None or found.kind not in (litert.get("kind", found.kind), "crash"):
        pytest.fail(f"{path.name}: LiteRT {reproducer.litert_version()} no longer reproduces this "
                    f"discrepancy ({litert.get('kind')}; found with LiteRT {litert['version']}, kernel "
                    f"set {litert['kernel_set']}; now {found.kind if found else 'none'}): it is fixed "
                    f"upstream: set the status in {path.with_suffix('.json').name} to fixed")


def replay_reproducer(path: Path, device, request) -> None:
    """Replay a reproducer of crashes/ as its sidecar says: one still open must fail."""
    info = read_sidecar(path)
    if info["status"] == "upstream":
        replay_upstream(path, info)
        return
    if info.get("driver", DEFAULT_DRIVER) != DEFAULT_DRIVER:
        device = device_of(info["driver"])
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


def standalone_scripts(folder: Path) -> list:
    """The standalone reproducers of LiteRT's discrepancies: <folder>/litert/<name>/<name>.py."""
    return [pytest.param(script, id=f"{script.parent.name}") for script in
            sorted((folder / "litert").glob("*/*.py"))]


@pytest.mark.parametrize("script", standalone_scripts(REPO_ROOT / "crashes"))
def test_standalone_reproducer_still_reproduces(script):
    pytest.importorskip("ai_edge_litert")
    result = run_script(script)
    assert result.returncode == 1, (
        f"{script.name} exits with {result.returncode}: LiteRT no longer shows the discrepancy "
        f"(set the status of {script.parent.name}.json to fixed):\n{result.stdout[-2000:]}{result.stderr[-1000:]}")


def test_every_sidecar_is_read_and_every_upstream_reproducer_has_its_standalone_folder():
    reproducers = inputs_in(REPO_ROOT / "crashes")
    assert reproducers, "crashes/ holds reproducers"
    for path in reproducers:
        info = read_sidecar(path)
        if info["status"] == "upstream":
            folder = path.parent / info["litert"]["reproducer"]
            assert (folder / f"{path.name}.py").exists() and (folder / f"{path.name}.tflite").exists(), folder


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
    ('{"kind": "crash", "signature": "s", "message": "m", "status": "upstream"}', "needs \"litert\""),
    ('{"kind": "crash", "signature": "s", "message": "m", "status": "upstream", '
     '"litert": {"version": "2.3.0"}}', "kernel_set, kind, reproducer, class"),
    ('{"kind": "crash", "signature": "s", "message": "m", "status": "upstream", "litert": '
     '{"version": "2", "kernel_set": "AUTO", "kind": "crash", "reproducer": "r", "class": "bug"}}',
     "class 'bug' is not one of"),
])
def test_a_bad_sidecar_fails_its_own_case_with_a_reason(tmp_path, sidecar, complaint):
    reproducer = tmp_path / "0123456789abcdef"
    reproducer.write_bytes(b"\x00")
    if sidecar is not None:
        reproducer.with_suffix(".json").write_text(sidecar)
    assert [param.values[0] for param in replay_params(tmp_path)] == [reproducer]
    with pytest.raises(AssertionError, match=re.escape(complaint)):
        read_sidecar(reproducer)


def test_an_upstream_reproducer_litert_agrees_on_fails_saying_to_mark_it_fixed(tmp_path):
    """An upgrade of LiteRT that fixed a discrepancy (here: a case it always computed right,
    stored as if it were one) makes its upstream reproducer fail, saying what to do."""
    pytest.importorskip("ai_edge_litert")
    from fuzz.case import FuzzCase
    from fuzz.codec import encode
    from tests.models import add_model
    added = add_model()
    reproducer = tmp_path / "0123456789abcdef"
    reproducer.write_bytes(encode(FuzzCase(added.model, added.request())))
    info = {"kind": "assertion", "signature": "s", "message": "m", "status": "upstream", "rule": "reference-mismatch",
            "driver": "backends.litert:builtin_ref", "reference": DEFAULT_DRIVER,
            "litert": {"version": "2.2.0", "kernel_set": "BUILTIN_REF", "kind": "values",
                       "reproducer": "litert/0123456789abcdef/", "class": "LiteRT bug"}}
    with pytest.raises(pytest.fail.Exception, match="no longer reproduces .* set the status in "
                                                    "0123456789abcdef.json to fixed"):
        replay_upstream(reproducer, info)
