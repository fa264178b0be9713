"""A --driver whose factory gives no device (it raises, calls sys.exit, returns something
that is no device) ends every command line that loads drivers with a message and a non-zero
exit status: the fuzzer, the conformance runner and triage."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz import triage
from hal_client.conformance.__main__ import main as conformance_main
from hal_client.device import SPEC_ERROR_EXIT_STATUS, DriverSpecError, make_device
from tests.fuzz import failing_factories

REPO_ROOT = Path(__file__).resolve().parents[2]
MODULE = failing_factories.__name__
MESSAGE = "ERROR cannot make the device"


@pytest.mark.parametrize("name", failing_factories.NAMES)
def test_a_factory_that_gives_no_device_is_a_spec_error(name):
    with pytest.raises(DriverSpecError, match=f"{MODULE}:{name}"):
        make_device(f"{MODULE}:{name}")


def test_a_module_that_exits_on_import_is_a_spec_error(tmp_path, monkeypatch):
    (tmp_path / "exits_on_import.py").write_text("import sys\nsys.exit(0)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(DriverSpecError, match="cannot import exits_on_import"):
        make_device("exits_on_import:Device")


@pytest.mark.parametrize("name", ["exits_0", "returns_none"])
def test_the_fuzzer_refuses_a_factory_that_gives_no_device(tmp_path, name):
    pytest.importorskip("atheris")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    env.pop("NNHAL_FUZZ_DRIVER", None)
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "fuzz" / "driver_fuzz.py"), "--no-cpu-binding",
         f"--driver={MODULE}:{name}", str(corpus), "-runs=0", f"-artifact_prefix={tmp_path}/"],
        capture_output=True, text=True, timeout=240, env=env, cwd=REPO_ROOT)
    assert result.returncode == SPEC_ERROR_EXIT_STATUS, result.stderr[-2000:]
    assert f"{MESSAGE}: --driver '{MODULE}:{name}'" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("name", ["exits_0", "raises"])
def test_the_conformance_runner_refuses_a_factory_that_gives_no_device(tmp_path, capsys, name):
    assert conformance_main(["--driver", f"{MODULE}:{name}", str(tmp_path)]) == SPEC_ERROR_EXIT_STATUS
    assert MESSAGE in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--driver", "--reference"])
def test_triage_refuses_a_factory_that_gives_no_device(tmp_path, capsys, flag):
    artifact = tmp_path / "crash-0"
    artifact.write_bytes(b"\0" * 16)
    out = tmp_path / "out"
    assert triage.main([flag, f"{MODULE}:exits_0", "--out", str(out), str(artifact)]) \
        == SPEC_ERROR_EXIT_STATUS
    assert MESSAGE in capsys.readouterr().err
    assert not out.exists(), "the artifact was triaged with no device"
