"""Binding fuzzing processes to free CPUs: one lock per CPU, held for the process's life."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fuzz import cpu_binding
from fuzz.cpu_binding import supervises_others

REPO_ROOT = Path(__file__).resolve().parents[2]
TWO_CPUS = len(os.sched_getaffinity(0)) >= 2

# A child process that binds, prints its CPU and its mask, then waits for a line on stdin.
CHILD = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {root!r})
    from pathlib import Path
    from fuzz.cpu_binding import bind_to_free_cpu
    binding = bind_to_free_cpu(Path({lock_dir!r}))
    print(binding.cpu if binding else None, sorted(os.sched_getaffinity(0)), flush=True)
    sys.stdin.readline()
""")


def _start_child(lock_dir: Path) -> tuple[subprocess.Popen, str]:
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(root=str(REPO_ROOT), lock_dir=str(lock_dir))],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return child, child.stdout.readline().strip()


@pytest.mark.skipif(not TWO_CPUS, reason="needs two CPUs to choose from")
def test_processes_take_different_cpus_and_release_them(tmp_path):
    allowed = sorted(os.sched_getaffinity(0))
    children = []
    try:
        for _ in allowed:
            children.append(_start_child(tmp_path))
        cpus = [line.split()[0] for _, line in children]
        assert sorted(map(int, cpus)) == allowed                 # one each, all different
        for (_, line), cpu in zip(children, cpus):
            assert line.endswith(f"[{cpu}]")                      # bound to just that one
        extra, line = _start_child(tmp_path)                    # every CPU taken: unbound
        children.append((extra, line))
        assert line.startswith("None")
        first, _ = children[0]
        first.communicate("\n", timeout=30)                      # exits: its CPU is free again
        again, line = _start_child(tmp_path)
        children.append((again, line))
        assert line.split()[0] == cpus[0]
    finally:
        for child, _ in children:
            if child.poll() is None:
                child.communicate("\n", timeout=30)


def test_a_single_allowed_cpu_leaves_nothing_to_choose(tmp_path, monkeypatch):
    monkeypatch.setattr(cpu_binding.os, "sched_getaffinity", lambda pid: {3})
    assert cpu_binding.bind_to_free_cpu(tmp_path) is None
    assert list(tmp_path.iterdir()) == []


def test_supervising_parents_are_recognised():
    assert supervises_others(["fuzz.py", "corpus", "-fork=2"])
    assert supervises_others(["fuzz.py", "-jobs=4", "-workers=2"])
    assert not supervises_others(["fuzz.py", "corpus", "-fork=0", "-jobs=0"])
    assert not supervises_others(["fuzz.py", "-jobs=x", "-runs=10"])
    assert not supervises_others(["-fork=2"])               # argv[0] is the program


def test_the_fuzzer_reports_its_binding(tmp_path):
    """End to end: the entry point binds before running inputs, and --no-cpu-binding
    (inherited by children through the environment) keeps it unbound."""
    pytest.importorskip("atheris")
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / "one").write_bytes(sorted((REPO_ROOT / "corpus").iterdir())[0].read_bytes())
    env = dict(os.environ, **{cpu_binding.LOCK_DIR_ENV: str(tmp_path / "locks")})
    env.pop(cpu_binding.NO_BINDING_ENV, None)
    command = [sys.executable, str(REPO_ROOT / "fuzz" / "driver_fuzz.py"), str(seeds), "-runs=0",
               f"-artifact_prefix={tmp_path}/"]
    bound = subprocess.run(command, capture_output=True, text=True, timeout=240, env=env)
    unbound = subprocess.run(command[:2] + ["--no-cpu-binding"] + command[2:], capture_output=True,
                             text=True, timeout=240, env=env)
    assert bound.returncode == 0 and unbound.returncode == 0, bound.stderr[-2000:] + unbound.stderr[-2000:]
    if TWO_CPUS:
        assert "INFO: bound to CPU" in bound.stderr, bound.stderr[-2000:]
    assert "bound to CPU" not in unbound.stderr and "running unbound" not in unbound.stderr
