"""fuzz/pristine.py: the bundled driver at a git revision, importable as driver_pristine,
serves as the reference of a fuzz run (``--reference-rev``)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import driver
from driver import SampleDriver
from driver.errors import check
from driver.hal import ErrorStatus, OperationType
from driver.validation import graph, memo, request as request_validation
from fuzz import harness, oracles, pristine
from fuzz.case import ExecutionPath
from fuzz.drivers import make_device
from tests import models
from tests.fuzz.cases import make_case, tanh_model
from tests.fuzz.test_broken_drivers import CORPUS


def git_checkout() -> bool:
    return subprocess.run(["git", "-C", str(pristine.REPO_ROOT), "rev-parse", "HEAD"],
                          capture_output=True).returncode == 0


pytestmark = pytest.mark.skipif(not git_checkout(), reason="not a git checkout")


def test_absolute_imports_of_the_driver_are_rewritten():
    source = "from driver.hal import Model\nimport driver.limits as limits\n    from driver import x\n"
    assert pristine.rewrite_imports(source) == (
        "from driver_pristine.hal import Model\nimport driver_pristine.limits as limits\n"
        "    from driver_pristine import x\n")
    untouched = "from drivers import y\nimport driver_tools\nname = 'driver.hal'\n"
    assert pristine.rewrite_imports(untouched) == untouched


def test_an_unknown_revision_is_refused():
    with pytest.raises(SystemExit, match="names no commit"):
        pristine.resolve("no-such-revision-anywhere")


def test_the_copy_is_the_revision_s_driver_sharing_today_s_interface(tmp_path):
    package = pristine.copy_driver(pristine.resolve("HEAD"), tmp_path)
    assert (package / "device.py").read_text() == subprocess.run(
        ["git", "-C", str(pristine.REPO_ROOT), "show", "HEAD:driver/device.py"],
        capture_output=True, text=True, check=True).stdout
    for name in pristine.SHARED:
        shim = package / name / "__init__.py" if (package / name).is_dir() else package / f"{name}.py"
        assert f"import driver.{name}" in shim.read_text()
    assert not (package / "hal" / "structs.py").exists()


@pytest.fixture
def installed(monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("PYTHONPATH", "elsewhere")
    return pristine.install("HEAD")


def test_install_makes_it_importable_here_and_in_children(installed):
    import driver_pristine
    import driver_pristine.device
    import driver_pristine.hal.structs
    assert installed == "driver_pristine:SampleDriver"
    root = str(Path(driver_pristine.__file__).parent.parent)
    assert sys.path[0] == root and os.environ["PYTHONPATH"].split(os.pathsep) == [root, "elsewhere"]
    assert driver_pristine.device is not driver.device
    assert driver_pristine.hal is driver.hal and driver_pristine.hal.structs is driver.hal.structs
    assert driver_pristine.memory is driver.memory
    assert pristine.install("HEAD") == installed and sys.path.count(root) == 1


def test_the_pristine_driver_as_reference_agrees_with_today_s_on_the_corpus(installed):
    """The harness hands the reference today's HAL objects and pools: with HAL classes of
    its own, the copy would refuse every request."""
    oracles = harness.Oracles(make_device(installed), False)
    before = harness.STATS.reference_compared
    for path in sorted(CORPUS.iterdir())[:60]:
        harness.run_one(path.read_bytes(), make_device("driver:SampleDriver"), oracles)
    assert harness.STATS.reference_compared - before > 10


# --- a change to validation, seen against the pristine copy ------------------------------------

# The harness judges validity with today's validator, which a changed bundled driver shares:
# a rule made stricter rejects valid input on both, and only the pristine copy knows better.

@pytest.fixture
def validation_changed(monkeypatch):
    """Patch (``change(module, name, rule)``) a function of today's validation, which then
    runs ``rule`` with the same arguments before the original: the change a validation
    mutant makes, in the harness's validator and the bundled driver alike. The driver's
    memo is off meanwhile: its verdicts are the unchanged rules'."""
    def change(module, name: str, rule) -> None:
        original = getattr(module, name)

        def changed(*arguments, **keywords):
            rule(*arguments, **keywords)
            return original(*arguments, **keywords)
        monkeypatch.setattr(module, name, changed)
    monkeypatch.setattr(memo, "ENABLED", False)
    yield change


@pytest.fixture
def tanh_refused(validation_changed):
    def refuse_tanh(operation, op_index, operands, extension_prefixes, label):
        check(operation.type != OperationType.TANH, "{}, operation {}: TANH refused", label, op_index)
    validation_changed(graph, "check_operation", refuse_tanh)


@pytest.fixture
def inputs_refused(validation_changed):
    def refuse_inputs(argument, operand, pool_sizes, where, *, is_input, allow_unspecified):
        check(not is_input, "{}: inputs refused", where)
    validation_changed(request_validation, "check_argument", refuse_inputs)


@pytest.mark.parametrize("change, build, call, refused", [
    ("tanh_refused", tanh_model, "getSupportedOperations_1_3", "operation 0: TANH refused"),
    ("inputs_refused", models.add_model, "SYNC execution", "request input 0 .*inputs refused"),
], ids=["model", "request"])
def test_a_changed_validator_refusing_valid_input_is_caught(installed, request, change, build, call, refused):
    """The bundled driver with the change rejects what the harness's validator, changed too,
    rejects: the pristine copy alone tells the input valid. The driver's side is named, and
    the validator's reason, which is the driver's."""
    request.getfixturevalue(change)
    case = make_case(build())
    assert harness.reference_errors(case.model, case.request) != (None, None)
    with pytest.raises(oracles.ReferenceVerdictViolation,
                       match=rf"{call}: the driver rejects it with INVALID_ARGUMENT, the reference accepts "
                             rf"it; the reference validator rejects it too: .*{refused}"):
        harness.run_case(case, SampleDriver(), harness.Oracles(make_device(installed), False))
    harness.run_case(case, SampleDriver(), harness.Oracles(None, False))


@pytest.mark.parametrize("second", [ExecutionPath.ASYNC, ExecutionPath.FENCED], ids=lambda p: p.name)
def test_what_the_reference_accepts_the_validator_cannot_hold_invalid(installed, tanh_refused,
                                                                     inputs_refused, second, monkeypatch):
    """A driver that does not share the changed validator (the pristine copy too) accepts
    model and request as the reference does: the case runs through, on both paths, as a
    valid one (the validator judges no request of a model it holds invalid)."""
    monkeypatch.setattr(harness, "STATS", harness.HarnessStats())
    oracles_on = harness.Oracles(make_device(installed), False)
    outcome = harness.run_case(make_case(tanh_model(), second=second), make_device(installed), oracles_on)
    assert outcome.model_error is None and outcome.request_error is None
    assert outcome.second.status == ErrorStatus.NONE
    outcome = harness.run_case(make_case(models.add_model(), second=second), make_device(installed), oracles_on)
    assert outcome.request_error is None and outcome.second.status == ErrorStatus.NONE
    assert harness.STATS.validator_overruled == 2
