"""fuzz/pristine.py: the bundled driver at a git revision, importable as driver_pristine,
serves as the reference of a fuzz run (``--reference-rev``)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import driver
from fuzz import harness, pristine
from fuzz.drivers import make_device

CORPUS = Path(__file__).resolve().parents[2] / "corpus"


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
