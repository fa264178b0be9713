"""scripts/nightly.py end to end, on a small seed set to stay short: on the bundled driver
it finds nothing and exits 0; on a driver broken on purpose it exits 1 with one minimised
reproducer per bug, laid out as crashes/ is, which the replay test takes as an open bug.
Either run ends within its time (--seconds, the whole job) and the stated margin.

The broken driver's bug is not left to chance: data/ holds two unminimised inputs that
reach it (found by fuzzing SupportedDisagrees), added to the seeds. libFuzzer reports a
failing seed as it loads the seeds, so the run has two raw findings of one bug: one
bucket, minimised once, the other counted. (Each failing seed restarts libFuzzer's
process, which takes seconds: many findings of one bug are triaged without it, under a
deadline.)"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from driver import SampleDriver
from driver.hal import OperandType as T, OperationType as Op
from fuzz import nightly, oracles, reduce, triage
from fuzz.case import ExecutionChoices, ExecutionPath, FuzzCase
from fuzz.codec import decode, encode
from fuzz.drivers import make_device
from hal_client.builder import ModelBuilder
from hal_client.examples import count_condition
from tests.models import model_request
from tests.fuzz import test_replay
from tests.fuzz.cases import make_case, sqrt_branch_model

REPO_ROOT = Path(__file__).resolve().parents[2]

BROKEN = "tests.fuzz.broken_drivers:SupportedDisagrees"
REACHING_THE_BUG = sorted((Path(__file__).resolve().parent / "data").glob("supported-disagrees-*"))
SEEDS = 10


@pytest.fixture(scope="module")
def seeds(tmp_path_factory) -> Path:
    """Every 100th corpus input (a short run)."""
    folder = tmp_path_factory.mktemp("seeds")
    for path in sorted((REPO_ROOT / "corpus").iterdir())[::100][:SEEDS]:
        shutil.copy(path, folder / path.name)
    return folder


#: The job's time in these runs: enough, on two loaded cores, for libFuzzer to load the
#: seeds and for the merge and the coverage replay to end.
JOB_S = 150


def run_nightly(tmp_path: Path, seeds: Path, *flags: str) -> subprocess.CompletedProcess:
    """The nightly job of JOB_S seconds, which must end within its margin."""
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    command = [sys.executable, str(REPO_ROOT / "scripts" / "nightly.py"), "--jobs=2", f"--seeds={seeds}",
               f"--work={tmp_path / 'work'}", f"--out={tmp_path / 'out'}", f"--seconds={JOB_S}", *flags]
    start = time.monotonic()
    result = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert time.monotonic() - start <= JOB_S + nightly.MARGIN_S, result.stdout[-3000:]
    return result


def reproducers(folder: Path) -> list[Path]:
    return test_replay.inputs_in(folder)


@pytest.mark.slow
def test_bundled_driver_nightly_finds_nothing(tmp_path, seeds):
    result = run_nightly(tmp_path, seeds, "--max-corpus=10")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = tmp_path / "out"
    summary = (out / "summary.md").read_text()
    assert "### Findings\n\nNone." in summary
    stats = re.search(r"harness: (\d+) inputs, .*prepared (\d+) .*executed_ok (\d+)", summary)
    assert stats and all(int(count) > 0 for count in stats.groups()), summary
    assert re.search(rf"\| job \| {JOB_S} s: fuzzing \d+ s, triage \d+ s, merge \d+ s, coverage \d+ s \|", summary)
    # Measured, or said not to be (a loaded machine may not replay the corpus in time).
    assert re.search(r"line coverage .*\| (\d+\.\d % \(driver/ \d+\.\d %, fuzz/ \d+\.\d %\)|not measured) \|",
                     summary), summary
    assert reproducers(out / "findings") == []


@pytest.mark.slow
def test_the_merge_keeps_new_inputs_and_the_replay_measures_coverage(tmp_path, seeds):
    work = tmp_path / "work"
    work.mkdir()
    for path in [*sorted((REPO_ROOT / "corpus").iterdir())[1::100][:SEEDS], *seeds.iterdir()]:
        shutil.copy(path, work / path.name)
    args = nightly.parse_args([f"--seeds={seeds}", f"--work={work}", "--max-corpus=3"])
    hours = time.monotonic() + 3600                       # these phases' ends do not come
    before, after = nightly.merge_corpus(args, "driver:SampleDriver", tmp_path / "merge.log", hours)
    # The working corpus keeps only inputs that are not seeds, at most --max-corpus of them.
    kept = [p.read_bytes() for p in work.iterdir()]
    assert before == 2 * SEEDS and after == len(kept) and 0 < len(kept) <= 3
    assert not set(kept) & {p.read_bytes() for p in seeds.iterdir()}
    report = tmp_path / "coverage"
    percents = nightly.coverage_report(args, "driver:SampleDriver", report, tmp_path / "replay.log", hours)
    assert set(percents) == {"driver", "fuzz", "total"} and all(0 < value < 100 for value in percents.values())
    assert (report / "index.html").exists()


def bug_reaching_variants() -> list[bytes]:
    """A dozen inputs reaching the broken driver's bug, by the execution paths they name:
    one bug, many findings."""
    paths = list(ExecutionPath)
    return [encode(make_case(sqrt_branch_model(), first, second)) for first in paths for second in paths][:12]


@pytest.mark.slow
def test_broken_driver_nightly_stores_one_minimised_reproducer(tmp_path, seeds):
    (tmp_path / "seeds").mkdir()
    for path in [*sorted(seeds.iterdir())[:10], *REACHING_THE_BUG]:
        shutil.copy(path, tmp_path / "seeds" / path.name)
    result = run_nightly(tmp_path, tmp_path / "seeds", f"--driver={BROKEN}")
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

    # Every finding reproduced is counted in the one bucket; only the smallest few of them
    # were minimised (the minimiser names each artifact it starts on).
    raw = triage.new_artifacts(out / "artifacts")
    assert len(raw) >= 1
    summary = (out / "summary.md").read_text()
    headline = re.search(r"(\d+) findings in 1 buckets: 1 minimised, 0 known, 0 left unminimised; "
                         r"0 not reproduced, (\d+) not triaged for lack of time", summary)
    assert headline and int(headline[1]) == len(raw), summary
    in_bucket = len(raw) - int(headline[2])
    assert f"| `{path.name}` | new | {in_bucket} | assertion |" in summary
    minimised = re.findall(r"^\S+/(?:crash|finding)-\w+: assertion: ", result.stdout, re.MULTILINE)
    assert 1 <= len(minimised) <= nightly.MINIMISED_PER_BUG, result.stdout[-3000:]

    # Minimised, or at least no larger than the smallest input reaching the bug.
    smallest = min(p.read_bytes() for p in raw)
    assert reduce.case_size(decode(path.read_bytes())) <= reduce.case_size(decode(smallest))

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


@pytest.mark.slow
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


# --- the budget -------------------------------------------------------------------------------

@pytest.mark.parametrize("total_s", [60, 240, 3600])
def test_the_phases_share_the_jobs_time(total_s):
    budget = nightly.Budget.plan(total_s, start=0.0)
    assert 0 < budget.fuzz < budget.triage < budget.merge < budget.coverage == total_s
    assert budget.triage - budget.fuzz == pytest.approx(nightly.TRIAGE_SHARE * total_s)
    for wrap_up_s in (budget.merge - budget.triage, budget.coverage - budget.merge):
        assert min(nightly.MIN_WRAP_UP_S, total_s / 4) <= wrap_up_s <= max(nightly.MIN_WRAP_UP_S, total_s / 20)
    assert budget.fuzz >= total_s / 4
    assert nightly.fuzzing_seconds(budget.fuzz) < budget.fuzz      # libFuzzer winds down within it


def test_findings_are_reproduced_taking_turns_between_the_failures_recorded(tmp_path):
    """A failure found thousands of times does not keep a rarer one from being reproduced
    before the time runs out."""
    sizes = {"crash-bbb": 1, "finding-ddd": 2, "crash-aaa": 3, "crash-ccc": 4, "timeout-eee": 5}
    for name, size in sizes.items():
        (tmp_path / name).write_bytes(b"x" * size)
    (tmp_path / "findings.log").write_text(
        "aaa  SupportedPrepareViolation: [supported-vs-prepare] one\n"
        "bbb  SupportedPrepareViolation: [supported-vs-prepare] two\n"
        "ccc  HalExceptionViolation: [exception-from-hal] three\n"
        "ddd  SupportedPrepareViolation: [supported-vs-prepare] four\n")
    order = nightly.reproduction_order(triage.new_artifacts(tmp_path))
    assert [path.name for path in order] == ["crash-bbb", "crash-ccc", "timeout-eee", "finding-ddd", "crash-aaa"]


def bug_artifacts(folder: Path, count: int) -> list[Path]:
    folder.mkdir()
    paths = [folder / f"crash-{k}" for k in range(count)]
    for path, data in zip(paths, bug_reaching_variants()):
        path.write_bytes(data)
    return paths


@pytest.mark.slow
def test_many_findings_of_one_bug_are_minimised_once_and_counted(tmp_path, capsys):
    artifacts = bug_artifacts(tmp_path / "artifacts", 12)
    args = nightly.parse_args([])                  # 120 s per finding, were there the time
    triage_s = 30
    deadline = time.monotonic() + triage_s
    found = nightly.triage_findings(artifacts, BROKEN, tmp_path / "findings", args, known=tmp_path / "known",
                                    deadline=deadline)
    assert time.monotonic() <= deadline + nightly.MARGIN_S
    statuses = [finding.status for finding in found]
    assert statuses.count("new") == 1 and set(statuses) <= {"new", "duplicate", "not triaged"}, statuses
    assert len(reproducers(tmp_path / "findings")) == 1
    [bucket] = nightly.buckets_of(found)
    assert len(bucket) == 12 - statuses.count("not triaged") and nightly.standing_for(bucket).status == "new"
    started = re.findall(r"^\S+/crash-\d+: assertion: ", capsys.readouterr().out, re.MULTILINE)
    assert 1 <= len(started) <= nightly.MINIMISED_PER_BUG


def test_findings_past_the_deadline_are_reported_not_triaged(tmp_path):
    artifacts = bug_artifacts(tmp_path / "artifacts", 3)
    args = nightly.parse_args([])
    found = nightly.triage_findings(artifacts, BROKEN, tmp_path / "findings", args, known=tmp_path / "known",
                                    deadline=time.monotonic())
    assert [finding.status for finding in found] == ["not triaged"] * 3
    assert nightly.findings_headline(found) == ("3 findings in 0 buckets: 0 minimised, 0 known, 0 left "
                                                "unminimised; 0 not reproduced, 3 not triaged for lack of time.")
    assert all(path.exists() for path in artifacts)            # the raw artifacts stay


def test_a_bucket_without_the_time_to_minimise_is_counted_unminimised(tmp_path):
    artifacts = bug_artifacts(tmp_path / "artifacts", 4)
    with closing(triage.Worker(BROKEN)) as worker:
        same_bug = [(path, worker.run(path.read_bytes())) for path in artifacts]
        [bucket] = {failure.digest for _, failure in same_bug}
        found = nightly.minimise_bucket(bucket, same_bug, nightly.MIN_MINIMISATION_S / 2, worker, BROKEN,
                                        tmp_path / "findings", tmp_path / "known", set(), tmp_path,
                                        nightly.parse_args([]))
    assert [(finding.artifact, finding.status) for finding in found] == [
        ("crash-0", "unminimised"), ("crash-1", "duplicate"), ("crash-2", "duplicate"), ("crash-3", "duplicate")]
    assert reproducers(tmp_path / "findings") == []
    summary = nightly.findings_headline(found)
    assert summary.startswith("4 findings in 1 buckets: 0 minimised, 0 known, 1 left unminimised;")
    [bucket_findings] = nightly.buckets_of(found)
    assert nightly.standing_for(bucket_findings).artifact == "crash-0"


def test_the_statistics_of_every_process_are_added_up(tmp_path):
    """-fork children each write their counts; the engine's (a LiteRT driver's) are added up
    too, so that a gap of a converter shows over the whole campaign."""
    (tmp_path / "1.json").write_text(json.dumps({"inputs": 3, "valid": 2, "engine": {"executed": 2}}))
    (tmp_path / "2.json").write_text(json.dumps({"inputs": 5, "valid": 1,
                                                 "engine": {"executed": 1, "load failed": 4}}))
    (tmp_path / "3.json").write_text(json.dumps({"inputs": 1}))     # a driver without an engine
    harness_line, engine_line = nightly.harness_summary(tmp_path).splitlines()
    assert harness_line.startswith("harness: 9 inputs") and "valid 3 (33.3%)" in harness_line
    assert engine_line == "engine: executed 3, load failed 4"
