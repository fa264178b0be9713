"""fuzz/bench_mutants.py without fuzzing: cosmic-ray's mutants are numbered as it applies
them, keep their ids while their line does, and are drawn reproducibly, stratified by
area; a scratch copy carries its mutant and leaves the working tree alone; the score,
the classification of survivors and the report hold on synthetic results."""
from __future__ import annotations

import io
import json
import tarfile
import textwrap
from types import SimpleNamespace

import pytest

from fuzz import bench_mutants, nightly
from fuzz.bench_mutants import AREAS, KILLED, STARTUP, SURVIVED, Snapshot

pytest.importorskip("cosmic_ray", reason="cosmic-ray is not installed (pip install -e '.[bench]')")

RULES = textwrap.dedent('''\
    LIMIT = 4


    def too_big(values, limit=LIMIT):
        total = 0
        for value in values:
            if value > limit or value < -limit:
                return True
            total += value * 2
        return total >= limit and not values
''')


def snapshot_of(files: dict[str, str]) -> Snapshot:
    """A snapshot of a repository holding ``files`` (each area's package marked)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path, text in files.items():
            data = text.encode()
            member = tarfile.TarInfo(path)
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    return Snapshot("0" * 40, buffer.getvalue())


def small_driver() -> dict[str, str]:
    files = {"driver/__init__.py": ""}
    for area in AREAS:
        files[f"driver/{area}/__init__.py"] = ""
        for name in ("rules", "more_rules", "other_rules"):
            files[f"driver/{area}/{name}.py"] = RULES.replace("LIMIT = 4", f"LIMIT = {len(name)}")
    return files


# --- the mutants ------------------------------------------------------------------------------

def test_each_mutant_changes_the_line_it_is_said_to():
    operators = bench_mutants.operators()
    mutants = bench_mutants.mutants_of("driver/validation/rules.py", "validation", RULES, operators)
    assert len({m.operator for m in mutants}) > 10       # cosmic-ray's operators, many of them
    lines = RULES.splitlines()
    for mutant in mutants:
        code = bench_mutants.mutated(mutant, RULES, operators)
        if code is None:
            continue
        changed = [i + 1 for i, (a, b) in enumerate(zip(lines, code.splitlines())) if a != b]
        assert changed[:1] == [mutant.line], (mutant, code)


def test_ids_are_distinct_and_hold_while_the_line_does():
    operators = bench_mutants.operators()
    before = bench_mutants.mutants_of("driver/validation/rules.py", "validation", RULES, operators)
    moved = "import math\n\n" + RULES
    after = bench_mutants.mutants_of("driver/validation/rules.py", "validation", moved, operators)
    assert len({m.id for m in before}) == len(before)
    assert [m.id for m in before] == [m.id for m in after]
    assert [m.line + 2 for m in before] == [m.line for m in after]
    elsewhere = bench_mutants.mutants_of("driver/executor/rules.py", "executor", RULES, operators)
    assert not {m.id for m in before} & {m.id for m in elsewhere}


def test_the_sample_is_stratified_and_reproducible():
    snapshot = snapshot_of(small_driver())
    chosen, population = bench_mutants.sample(snapshot, 8, seed=3, operation_files=2)
    assert [m.area for m, _ in chosen] == ["validation"] * 3 + ["executor"] * 3 + ["operations"] * 2
    assert len(population["operations"]["files"]) == 2
    assert all(m.path in population[m.area]["files"] for m, _ in chosen)
    assert len(population["validation"]["files"]) == 4 and population["validation"]["mutants"] > 8
    for mutant, code in chosen:
        assert code != snapshot.files[mutant.path] and f"+++ b/{mutant.path}" in mutant.diff
    again, _ = bench_mutants.sample(snapshot, 8, seed=3, operation_files=2)
    assert [m.id for m, _ in again] == [m.id for m, _ in chosen]
    other, _ = bench_mutants.sample(snapshot, 8, seed=4, operation_files=2)
    assert [m.id for m, _ in other] != [m.id for m, _ in chosen]


def test_shares_split_evenly():
    assert bench_mutants.shares(100) == {"validation": 34, "executor": 33, "operations": 33}
    assert bench_mutants.shares(2) == {"validation": 1, "executor": 1, "operations": 0}


# --- a run in a scratch copy ------------------------------------------------------------------

def test_a_mutant_runs_in_its_own_copy_and_one_that_does_not_import_dies_at_start(tmp_path):
    snapshot = snapshot_of(small_driver())
    reference = tmp_path / "reference"
    (reference / "driver_pristine").mkdir(parents=True)
    (reference / "driver_pristine" / "__init__.py").write_text("")
    path = "driver/validation/rules.py"
    changed = RULES.replace("value > limit", "value >= limit")
    killed = bench_mutants.run_copy("kept", {path: changed}, snapshot, reference, 10, tmp_path, keep_copy=True,
                                    fake=True)
    assert (killed.verdict, killed.rule) == (KILLED, bench_mutants.FAKE_RULE)
    assert killed.finding == "FakeKill: [fake-kill] driver.validation.rules imports"
    assert (tmp_path / "kept" / "repo" / path).read_text() == changed
    broken = bench_mutants.run_copy("broken", {path: RULES.replace("def too_big", "def too big")}, snapshot,
                                    reference, 10, tmp_path, fake=True)
    assert broken.verdict == STARTUP and "SyntaxError" in broken.why
    assert not (tmp_path / "broken" / "repo").exists()          # the copy is let go


def test_the_fuzz_command_is_the_public_one_against_the_unmutated_driver(tmp_path):
    command = bench_mutants.fuzz_command(tmp_path / "repo", tmp_path)
    assert command[1] == str(tmp_path / "repo" / "fuzz" / "driver_fuzz.py")
    assert command[2:4] == ["--reference", "driver_pristine:SampleDriver"]
    assert str(tmp_path / "repo" / "corpus") in command and "--no-relations" not in command
    assert f"-artifact_prefix={tmp_path / 'artifacts'}/" in command
    assert f"-timeout={nightly.DEFAULT_TIMEOUT_S}" in command     # a hang holding the GIL ends too


# --- the score and the report -----------------------------------------------------------------

def result(mutant_id: str, area: str, verdict: str, seconds: float | None = None) -> dict:
    mutant = bench_mutants.Mutant(mutant_id, area, f"driver/{area}/rules.py", "core/AddNot", 0, 7,
                                  f"--- a/x\n+++ b/x\n@@ -7 +7 @@\n-            if {mutant_id}:\n")
    outcome = bench_mutants.Outcome(verdict, seconds=seconds, wall_seconds=(seconds or 30) + 20, inputs=400,
                                    rule="reference-mismatch" if verdict == KILLED else None,
                                    why="SyntaxError" if verdict == STARTUP else None)
    return dict(bench_mutants.asdict(mutant), **bench_mutants.asdict(outcome))


def synthetic_report() -> dict:
    population = {area: {"files": [f"driver/{area}/rules.py"], "mutants": 50} for area in AREAS}
    return {"settings": {"rev": "HEAD", "commit": "a" * 40, "mutants": 9, "seed": 0, "seconds": 30.0, "jobs": 1,
                         "operation_files": 1, "classified": "benchmarks/mutants-classified.json",
                         "cosmic_ray": "8.7.0", "fake_kill": False},
            "machine": {"cpu": "", "cpus": 2, "platform": "Linux", "python": "3.11", "load_average": [1, 1, 1]},
            "started": "2026-01-01T00:00:00+00:00", "population": population,
            "control": dict(bench_mutants.asdict(bench_mutants.Outcome(SURVIVED, inputs=900, startup_seconds=20))),
            "mutants": [result("v1", "validation", KILLED, 4.0), result("v2", "validation", KILLED, 12.0),
                        result("v3", "validation", KILLED, 8.0), result("v4", "validation", STARTUP),
                        result("v5", "validation", SURVIVED), result("v6", "validation", SURVIVED),
                        result("e1", "executor", SURVIVED), result("e2", "executor", KILLED, 1.0),
                        result("o1", "operations", SURVIVED)]}


def test_the_score_leaves_out_equivalent_mutants_and_start_up_kills():
    classified = {"v5": {"class": "equivalent", "why": "the same value either way"},
                  "e1": {"class": "missing-oracle", "why": "no rule compares it"},
                  "v6": {"class": "rare", "why": "killed in a longer run"},
                  "v1": {"class": "unreachable", "why": "killed since"}}
    full = bench_mutants.with_classes(synthetic_report(), classified)
    by_area = {s["area"]: s for s in full["summaries"]}
    validation = by_area["validation"]
    assert (validation["killed"], validation["killed_by_startup"], validation["survived"]) == (3, 1, 2)
    assert (validation["equivalent"], validation["rare"], validation["scored"]) == (1, 1, 4)
    assert validation["score"] == 0.75 and validation["met"] and validation["median_seconds_to_kill"] == 8.0
    assert by_area["executor"]["score"] == 0.5 and not by_area["executor"]["met"]
    assert by_area["executor"]["missing_oracle"] == 1
    assert by_area["operations"]["score"] == 0.0 and not by_area["operations"]["met"]
    assert full["stale_classes"] == ["v1"]
    assert {r["id"]: r["class"] for r in full["mutants"]}["v6"] == "rare"
    unclassified = bench_mutants.with_classes(synthetic_report(), {})
    assert {r["id"]: r["class"] for r in unclassified["mutants"]}["v6"] == "unclassified"


def test_wilson_interval():
    assert bench_mutants.wilson(0, 0) is None
    low, high = bench_mutants.wilson(6, 10)
    assert (low, high) == pytest.approx((0.3127, 0.8318), abs=1e-4)
    assert bench_mutants.wilson(10, 10)[1] == 1.0


def test_a_classification_must_name_a_known_class(tmp_path):
    path = tmp_path / "classified.json"
    assert bench_mutants.load_classified(path) == {}
    path.write_text(json.dumps({"ab": {"class": "equivalent", "why": "x"}, "cd": {"class": "dunno"}}))
    with pytest.raises(SystemExit, match="not so: cd"):
        bench_mutants.load_classified(path)


def test_the_report_lists_kills_and_survivors_with_their_diff_and_class(tmp_path):
    report = synthetic_report()
    classified = tmp_path / "classified.json"
    classified.write_text(json.dumps({"v5": {"class": "equivalent", "why": "The same value either way."}}))
    (tmp_path / "report.json").write_text(json.dumps(report))
    out = tmp_path / "out"
    assert bench_mutants.main(["--from-json", str(tmp_path / "report.json"), "--out", str(out),
                               "--classified", str(classified)]) == 0
    markdown = (out / "report.md").read_text()
    assert "| validation | 6 (50) | 3 | 1 | 2 | 1 | 0 | 0 | 0 | 1 | 75 % |" in markdown
    assert "validation: 3 of 4 non-equivalent mutants killed (75 %); target >= 60 %: met" in markdown
    assert "executor: 1 of 2 non-equivalent mutants killed (50 %); target >= 60 %: **not met**" in markdown
    assert "| v1 | validation | `driver/validation/rules.py:7` | core/AddNot | 4.0 | 24.0 | 400 | reference-mismatch |" \
        in markdown
    assert "### v5: equivalent" in markdown and "The same value either way." in markdown
    assert "### v6: unclassified" in markdown and "-            if v6:" in markdown
    assert "| v4 | validation |" in markdown.split("## Killed by start-up")[1]
    # The classification is read again on every run: a survivor classified later shows so.
    classified.write_text(json.dumps({"v6": {"class": "unreachable", "why": "No input reaches it."}}))
    bench_mutants.main(["--from-json", str(tmp_path / "report.json"), "--out", str(out),
                        "--classified", str(classified)])
    assert "### v6: unreachable" in (out / "report.md").read_text()
    assert json.loads((out / "report.json").read_text())["summaries"][0]["unreachable"] == 1


def test_the_classification_kept_in_the_repository_is_well_formed():
    classified = bench_mutants.load_classified(bench_mutants.CLASSIFIED)
    assert all(entry.get("why") for entry in classified.values())


def test_only_keeps_the_named_mutants_of_the_sample():
    chosen = [(SimpleNamespace(id=name), "") for name in ("a", "b", "c")]
    assert [mutant.id for mutant, _ in bench_mutants.only(chosen, ["c", "a"])] == ["a", "c"]
    with pytest.raises(SystemExit, match="no mutant z in the sample"):
        bench_mutants.only(chosen, ["z"])
