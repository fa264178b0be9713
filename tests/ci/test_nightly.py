"""scripts/nightly.py end to end, on a small seed set to stay short: on the bundled driver
it finds nothing and exits 0; on a driver broken on purpose it exits 1 with one minimised
reproducer per bug, laid out as crashes/ is, which the replay test takes as an open bug.

The broken driver's bug is not left to chance: data/ holds two unminimised inputs that
reach it (found by fuzzing SupportedDisagrees), added to the seeds. libFuzzer reports a
failing seed as it loads the seeds, so the run has two raw findings of one bug."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from driver import SampleDriver
from driver.hal import OperandType as T, OperationType as Op
from fuzz import oracles
from fuzz.case import ExecutionChoices, FuzzCase
from fuzz.codec import decode, encode
from fuzz.drivers import make_device
from hal_client.builder import ModelBuilder
from hal_client.examples import count_condition
from tests.models import model_request
from tests.fuzz import test_replay

REPO_ROOT = Path(__file__).resolve().parents[2]
import nightly

pytestmark = pytest.mark.slow
BROKEN = "tests.fuzz.broken_drivers:SupportedDisagrees"
REACHING_THE_BUG = sorted((Path(__file__).resolve().parent / "data").glob("supported-disagrees-*"))
SEEDS = 40


@pytest.fixture(scope="module")
def seeds(tmp_path_factory) -> Path:
    """Every 25th corpus input (some of every kind, a short run)."""
    folder = tmp_path_factory.mktemp("seeds")
    for path in sorted((REPO_ROOT / "corpus").iterdir())[::25][:SEEDS]:
        shutil.copy(path, folder / path.name)
    return folder


def run_nightly(tmp_path: Path, seeds: Path, *flags: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    command = [sys.executable, str(REPO_ROOT / "scripts" / "nightly.py"), "--jobs=2", f"--seeds={seeds}",
               f"--work={tmp_path / 'work'}", f"--out={tmp_path / 'out'}", *flags]
    return subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)


def reproducers(folder: Path) -> list[Path]:
    return test_replay.inputs_in(folder)


def test_bundled_driver_nightly_finds_nothing(tmp_path, seeds):
    result = run_nightly(tmp_path, seeds, "--seconds=10", "--max-corpus=10")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = tmp_path / "out"
    summary = (out / "summary.md").read_text()
    assert "### Findings\n\nNone." in summary
    stats = re.search(r"harness: (\d+) inputs, .*prepared (\d+) .*executed_ok (\d+)", summary)
    assert stats and all(int(count) > 0 for count in stats.groups()), summary
    assert re.search(r"line coverage .*\| \d+\.\d % \(driver/ \d+\.\d %, fuzz/ \d+\.\d %\)", summary), summary
    assert (out / "coverage" / "index.html").exists()
    assert reproducers(out / "findings") == []
    # The working corpus keeps only inputs that are not seeds, at most --max-corpus of them.
    kept = [p.read_bytes() for p in (tmp_path / "work").iterdir()]
    assert len(kept) <= 10
    assert not set(kept) & {p.read_bytes() for p in seeds.iterdir()}


def test_broken_driver_nightly_stores_one_minimised_reproducer(tmp_path, seeds):
    shutil.copytree(seeds, tmp_path / "seeds")
    for path in REACHING_THE_BUG:
        shutil.copy(path, tmp_path / "seeds" / path.name)
    # The structural minimiser takes about a second here; libFuzzer's minimiser then starts
    # a process (and imports the instrumented driver) per step, so it gets 30 s.
    result = run_nightly(tmp_path, tmp_path / "seeds", f"--driver={BROKEN}", "--seconds=5",
                         "--libfuzzer-seconds=30", "--minimise-seconds=90")
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    out = tmp_path / "out"
    found = reproducers(out / "findings")
    assert len(found) == 1, found                     # one bug, one reproducer
    path = found[0]
    sidecar = json.loads(path.with_suffix(".json").read_text())
    assert sidecar["rule"] == "supported-vs-prepare" and sidecar["driver"] == BROKEN
    assert sidecar["status"] == "open"
    assert path.with_suffix(".md").read_text().startswith(f"# {path.name}")
    assert (out / "findings" / "graphs" / f"{path.name}.dot").exists()
    summary = (out / "summary.md").read_text()
    assert f"`{path.name}` | new | assertion" in summary and "| duplicate | assertion" in summary

    # Minimised: smaller than either input reaching the bug, down to the operations it needs.
    raw = [p for p in (out / "artifacts").iterdir() if p.name.startswith("crash-")]
    assert len(raw) >= len(REACHING_THE_BUG)
    assert path.stat().st_size < min(p.stat().st_size for p in REACHING_THE_BUG)
    model = decode(path.read_bytes()).model
    assert sum(len(graph.operations) for graph in (model.main, *model.referenced)) <= 4

    # The replay test takes it: an open bug (xfail) that fails on its driver, passes on ours.
    [param] = test_replay.replay_params(out / "findings")
    assert test_replay.read_sidecar(param.values[0])["status"] == "open"
    with pytest.raises(oracles.SupportedPrepareViolation):
        test_replay.replay(path, make_device(BROKEN))
    test_replay.replay(path, SampleDriver())

    # Once in crashes/, the same bug is known: no new finding.
    args = nightly.parse_args(["--libfuzzer-seconds=0", "--minimise-seconds=5"])
    again = nightly.triage_findings(raw[:1], BROKEN, tmp_path / "again", args, known=out / "findings")
    assert [finding.status for finding in again] == ["known"]
    assert reproducers(tmp_path / "again") == []

    # Marked fixed there, a failure of the same signature is news again: it recurred.
    sidecar = path.with_suffix(".json")
    sidecar.write_text(json.dumps({**json.loads(sidecar.read_text()), "status": "fixed"}))
    recurred = nightly.triage_findings(raw[:1], BROKEN, tmp_path / "recurred", args, known=out / "findings")
    assert [finding.status for finding in recurred] == ["recurred"]
    # Named so that it can sit beside the fixed one in crashes/.
    assert [p.name for p in reproducers(tmp_path / "recurred")] == [f"{path.name}-2"]


def sqrt_loop_case() -> FuzzCase:
    """(i, x) = (0, x0); while i < 2: (i, x) = (i + 1, SQRT(x)). The broken driver's bug
    again (SQRT in a referenced subgraph), in a loop: no reduction takes the loop, its
    condition or its count away, so it minimises to four operations."""
    mb = ModelBuilder()
    body = mb.subgraph()
    i, x = body.input(T.TENSOR_INT32, [1]), body.input(T.TENSOR_FLOAT32, [1])
    body.outputs(body.add(i, body.constant(T.TENSOR_INT32, [1])),
                 body.apply(Op.SQRT, [x], T.TENSOR_FLOAT32, [1]))
    condition = count_condition(mb, limit=2, others=[(T.TENSOR_FLOAT32, [1])])
    main = mb.main
    main.outputs(*main.while_(condition, body, [main.input(T.TENSOR_INT32, [1]),
                                                main.input(T.TENSOR_FLOAT32, [1])]))
    model = mb.build()
    request = model_request(model, [np.zeros(1, np.int32), np.full(1, 16.0, np.float32)])
    return FuzzCase(model, request, ExecutionChoices())


def test_of_one_bugs_findings_the_one_that_minimises_best_is_stored(tmp_path):
    branch = min(REACHING_THE_BUG, key=lambda p: p.stat().st_size)
    loop = tmp_path / "crash-loop"
    loop.write_bytes(encode(sqrt_loop_case()))
    assert loop.stat().st_size < branch.stat().st_size     # the loop would be minimised first
    args = nightly.parse_args(["--libfuzzer-seconds=0", "--minimise-seconds=60"])
    found = nightly.triage_findings([loop, branch], BROKEN, tmp_path / "findings", args,
                                    known=tmp_path / "known")
    assert {finding.artifact: finding.status for finding in found} == {branch.name: "new",
                                                                       loop.name: "duplicate"}
    [stored] = {finding.stored for finding in found if finding.status == "new"}
    model = decode(stored.read_bytes()).model
    assert [operation.type for graph in (model.main, *model.referenced)
            for operation in graph.operations] == [Op.IF, Op.SQRT]
