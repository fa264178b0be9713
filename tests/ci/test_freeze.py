"""The fuzzer frozen as ClusterFuzzLite and OSS-Fuzz freeze it (PyInstaller, one file, the
hidden imports of scripts/freeze_args.py that .clusterfuzzlite/build.sh passes) runs the
driver on its own; what the fuzzer builds at run time falls back when it cannot."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz import native_counter
from tests.scripts import load_script

REPO_ROOT = Path(__file__).resolve().parents[2]
freeze_args = load_script("freeze_args")

STATS = re.compile(r"harness: (\d+) inputs, .*prepared (\d+) .*executed_ok (\d+) .*violations (\d+)")


def test_hidden_imports_cover_the_modules_loaded_by_name():
    names = set(freeze_args.hidden_imports())
    assert {"driver", "driver.operations.registry", "fuzz.harness", "fuzz.drivers"} <= names
    operations = REPO_ROOT / "driver" / "operations"
    assert {f"driver.operations.{p.stem}" for p in operations.glob("*.py") if p.stem != "__init__"} <= names
    assert not any("__pycache__" in name or name.startswith("tests") for name in names)


def test_build_script_takes_its_arguments_from_freeze_args():
    build = (REPO_ROOT / ".clusterfuzzlite" / "build.sh").read_text()
    assert "scripts/freeze_args.py" in build and "compile_python_fuzzer fuzz/driver_fuzz.py" in build
    assert "driver_fuzz_seed_corpus.zip" in build


def test_entry_script_starts_without_a_future_import():
    """The coverage build prepends code to it: a `from __future__` would then be a syntax error."""
    source = (REPO_ROOT / "fuzz" / "driver_fuzz.py").read_text()
    assert not re.search(r"^from __future__", source, re.MULTILINE)


def test_native_counter_falls_back_when_frozen(monkeypatch, tmp_path):
    monkeypatch.delenv(native_counter.DISABLE_ENV, raising=False)
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(native_counter, "build", lambda folder: pytest.fail("built while frozen"))
    assert native_counter.load(tmp_path) is None


def test_native_counter_falls_back_without_a_compiler(monkeypatch, tmp_path):
    monkeypatch.delenv(native_counter.DISABLE_ENV, raising=False)
    config = native_counter.sysconfig.get_config_var
    monkeypatch.setattr(native_counter.sysconfig, "get_config_var",
                        lambda name: str(tmp_path / "no-such-cc") if name == "CC" else config(name))
    assert native_counter.load(tmp_path / "cache") is None


@pytest.mark.slow
def test_frozen_fuzzer_runs_the_driver(tmp_path):
    pytest.importorskip("PyInstaller", reason="PyInstaller is not installed (pip install -e '.[ci]')")
    pytest.importorskip("atheris")
    subprocess.run([sys.executable, "-m", "PyInstaller", "--onefile", "--name", "driver_fuzz.pkg",
                    "--distpath", str(tmp_path / "dist"), "--workpath", str(tmp_path / "build"),
                    "--specpath", str(tmp_path), "--noconfirm", "--log-level", "WARN",
                    *freeze_args.pyinstaller_args(), str(REPO_ROOT / "fuzz" / "driver_fuzz.py")],
                   cwd=tmp_path, check=True, capture_output=True, timeout=900)
    (tmp_path / "work").mkdir()
    (tmp_path / "tmp").mkdir()
    # Outside the checkout and without PYTHONPATH: everything it runs is inside it. It
    # unpacks itself into TMPDIR; without -artifact_prefix, artifacts would go to the
    # current folder (a crashes/ folder beside the bundle would be the checkout's default).
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    env["TMPDIR"] = str(tmp_path / "tmp")
    result = subprocess.run([str(tmp_path / "dist" / "driver_fuzz.pkg"), "work", str(REPO_ROOT / "corpus"),
                             "-runs=3000"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    stats = STATS.search(result.stderr)
    assert stats, result.stderr[-3000:]
    inputs, prepared, executed, violations = map(int, stats.groups())
    assert inputs >= 3000 and prepared > 0 and executed > 0 and violations == 0
    assert "list.append" in result.stderr          # no compiled counter in a frozen fuzzer
    assert "Instrumenting driver.operations" in result.stderr
    assert not (tmp_path / "tmp" / "crashes").exists()
    assert not list(tmp_path.glob("crash-*")) and not list(tmp_path.glob("finding-*"))
