"""The GitHub workflows lint clean (actionlint, and check-jsonschema against GitHub's
workflow schema), pin their actions, and give ClusterFuzzLite the project's language."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((REPO_ROOT / ".github" / "workflows").glob("*.yml"))


def tool(name: str) -> str:
    """The tool installed beside this interpreter (the `ci` extra), else on PATH."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[ci]')")
    return found


def test_the_workflows_are_there():
    assert {p.name for p in WORKFLOWS} >= {"ci.yml", "fuzz.yml", "cflite_pr.yml", "cflite_batch.yml",
                                           "cflite_cron.yml", "bench.yml"}


def test_actionlint():
    result = subprocess.run([tool("actionlint"), *map(str, WORKFLOWS)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_github_workflow_schema():
    result = subprocess.run([tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
                             *map(str, WORKFLOWS)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("path", WORKFLOWS, ids=[p.name for p in WORKFLOWS])
def test_actions_are_pinned_to_commits(path):
    uses = re.findall(r"uses:\s*(\S+)", path.read_text())
    assert uses and all(re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", action) for action in uses), uses


@pytest.mark.parametrize("path", [p for p in WORKFLOWS if p.name.startswith("cflite_")],
                         ids=lambda p: p.name)
def test_clusterfuzzlite_steps_name_the_language(path):
    """build_fuzzers and run_fuzzers both default to C++."""
    steps = re.split(r"\n\s+- name:", path.read_text())
    actions = [step for step in steps if "google/clusterfuzzlite/actions/" in step]
    assert actions and all("language: python" in step for step in actions)
