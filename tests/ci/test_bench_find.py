"""fuzz/bench_find.py without fuzzing: its suite names every planted bug with the rule the
test suite expects of it, and its statistics, report and --compare hold on synthetic runs."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from fuzz import bench_find
from fuzz.bench_find import CONFIGURATIONS, SUITE, Bug, Configuration
from tests.fuzz import broken_drivers

SECONDS = 60.0


# --- the suite ------------------------------------------------------------------------------

def planted_rules() -> dict[str, set[str]]:
    """Each broken driver with a bug and the rules the test suite catches it with."""
    expected: dict[str, set[str]] = {}
    tables = (broken_drivers.EXPECTED_RULES, broken_drivers.FOUND_BY_THE_CORPUS, broken_drivers.DOMAIN_RULES)
    for table in tables:
        for name, violation in table.items():
            expected.setdefault(name, set()).add(violation.rule)
    for name in broken_drivers.MISCOMPUTING:
        expected.setdefault(name, set()).add(broken_drivers.oracles.ReferenceMismatchViolation.rule)
    expected.setdefault("Hoarding", set())        # caught by a memory limit, no oracle
    return expected


def test_the_suite_has_every_planted_bug_with_the_rule_that_catches_it():
    by_name = {bug.name: bug for bug in SUITE}
    assert set(by_name) == set(planted_rules())
    for name, rules in planted_rules().items():
        assert rules <= set(by_name[name].rules), name
    assert by_name["Hoarding"].rules == (bench_find.OUT_OF_MEMORY,)


def test_every_broken_driver_is_in_the_suite_or_has_no_bug():
    drivers = {name for name, value in vars(broken_drivers).items()
               if isinstance(value, type) and issubclass(value, broken_drivers.DeviceWrapper)
               and not name.startswith("_") and value is not broken_drivers.DeviceWrapper}
    assert drivers - {bug.name for bug in SUITE} == {"Faithful", "NoDomainsNoCache"}


def test_a_run_is_the_public_command_with_its_own_scratch(tmp_path):
    bug = Bug("Hoarding", ("out-of-memory",), ("-rss_limit_mb=400",))
    command = bench_find.fuzz_command(bug, CONFIGURATIONS["empty-corpus"], 30, 4, tmp_path)
    assert command[1] == str(bench_find.FUZZ_ENTRY)
    assert command[2:4] == ["--driver", "tests.fuzz.broken_drivers:Hoarding"]
    assert str(bench_find.CORPUS) not in command and str(tmp_path / "corpus") in command
    assert {f"-artifact_prefix={tmp_path / 'artifacts'}/", "-seed=4", "-max_total_time=30",
            "-rss_limit_mb=400"} <= set(command)
    seeded = bench_find.fuzz_command(bug, CONFIGURATIONS["no-reference"], 30, 1, tmp_path)
    assert str(bench_find.CORPUS) in seeded and seeded[4:6] == ["--reference", "none"]


# --- reading a run's files -----------------------------------------------------------------

def test_the_first_finding_is_the_earliest_file_and_names_the_logged_rule(tmp_path):
    (tmp_path / "crash-ab").write_bytes(b"x")
    (tmp_path / "finding-ab").write_bytes(b"x")
    (tmp_path / "findings.log").write_text(
        "ab  HalExceptionViolation: [exception-from-hal] execute_1_3 raised IndexError\n")
    os.utime(tmp_path / "finding-ab", (100.0, 100.0))
    os.utime(tmp_path / "crash-ab", (101.0, 101.0))
    assert bench_find.first_finding(tmp_path) == (100.0, "exception-from-hal")


def test_a_finding_libfuzzer_made_names_its_kind(tmp_path):
    assert bench_find.first_finding(tmp_path) is None
    (tmp_path / "oom-cd").write_bytes(b"x")
    assert bench_find.first_finding(tmp_path)[1] == "out-of-memory"


# --- statistics -----------------------------------------------------------------------------

@pytest.mark.parametrize("a, b, p", [
    ([1, 2, 3], [4, 5, 6], 0.1),                       # 2 of the 20 splits as extreme
    ([1, 2, 3, 4, 5], [6, 7, 8, 9, 10], 2 / 252),
    ([1, 2, 3], [1, 2, 3], 1.0),
    ([5.0], [60.0], 1.0),                              # one run each: never significant
])
def test_mann_whitney_exact(a, b, p):
    assert bench_find.mann_whitney_p(a, b) == pytest.approx(p)
    assert bench_find.mann_whitney_p(b, a) == pytest.approx(p)


def test_mann_whitney_normal_approximation_of_large_samples():
    rng = np.random.default_rng(0)
    same = bench_find.mann_whitney_p(rng.normal(0, 1, 40), rng.normal(0, 1, 40))
    shifted = bench_find.mann_whitney_p(rng.normal(0, 1, 40), rng.normal(2, 1, 40))
    assert same > 0.05 and shifted < 1e-6


def test_mid_ranks_share_ties():
    assert list(bench_find.mid_ranks(np.array([3.0, 1.0, 3.0, 2.0]))) == [3.5, 1.0, 3.5, 2.0]


def synthetic_run(configuration: str, bug: str, repetition: int, seconds: float | None,
                  rule: str = "exception-from-hal") -> dict:
    found = seconds is not None
    return dict(configuration=configuration, bug=bug, repetition=repetition, seed=repetition + 1,
                found=found, seconds=seconds if found else SECONDS, startup_seconds=8.0,
                inputs=100 * repetition if found else 5000, cpu_seconds=(seconds or SECONDS) * 0.9,
                rule=rule if found else None, expected_rule=found and rule == "exception-from-hal",
                exit_code=1 if found else 0, directory="")


def synthetic_report(times: dict[tuple[str, str], list[float | None]]) -> dict:
    configurations = sorted({c for c, _ in times}, key=list(CONFIGURATIONS).index)
    report = bench_find.new_report([CONFIGURATIONS[c] for c in configurations],
                                   [bench_find.BUGS[b] for _, b in times], 5, SECONDS, 1)
    report["runs"] = [synthetic_run(c, b, r, t) for (c, b), ts in times.items() for r, t in enumerate(ts)]
    return report


def test_summaries_count_a_run_that_found_nothing_as_the_time_limit():
    report = synthetic_report({("default", "Raising"): [10.0, 20.0, None, 30.0, None]})
    [summary] = bench_find.summarise(report["runs"], SECONDS)
    assert (summary.runs, summary.found, summary.named) == (5, 3, 3)
    assert summary.median_s == 30.0 and summary.max_s == SECONDS and summary.min_s == 10.0
    assert (summary.q1_s, summary.q3_s) == (20.0, SECONDS)
    assert summary.median_inputs == 100.0        # of the runs that found it: 0, 100, 300
    targets = bench_find.targets(summary, SECONDS)
    assert targets.every_repetition is None and not targets.median   # T < 300 s: not known


def test_targets_of_a_bug_always_found_fast():
    report = synthetic_report({("default", "Raising"): [3.0, 4.0, 5.0, 6.0, 7.0]})
    [summary] = bench_find.summarise(report["runs"], SECONDS)
    assert bench_find.targets(summary, SECONDS) == bench_find.Targets(True, True)


def test_a_finding_after_the_time_limit_is_not_found():
    run = synthetic_run("default", "Raising", 0, SECONDS + 1)
    assert not bench_find.found_within(run, SECONDS)
    assert list(bench_find.censored_times([run], SECONDS)) == [SECONDS]


def test_survival_is_the_share_found_by_each_time():
    runs = [synthetic_run("default", "Raising", r, t) for r, t in enumerate([5.0, None, 20.0, 10.0])]
    xs, ys = bench_find.survival(runs, SECONDS)
    assert list(xs) == [0.0, 5.0, 10.0, 20.0, SECONDS]
    assert list(ys) == [0.0, 0.25, 0.5, 0.75, 0.75]


# --- the report and --compare ---------------------------------------------------------------

BEFORE = {("default", "Raising"): [40.0, 45.0, None, 50.0, 42.0],
          ("default", "Hanging"): [10.0, 12.0, 11.0, 13.0, 9.0],
          ("no-relations", "Raising"): [20.0, 21.0, 22.0, 23.0, 24.0]}
AFTER = {("default", "Raising"): [5.0, 6.0, 4.0, 7.0, 5.5],           # clearly faster
         ("default", "Hanging"): [11.0, 9.5, 12.5, 10.0, 13.5],       # the same, within spread
         ("no-relations", "Raising"): [23.0, 20.5, 23.5, 21.5, 25.0]}


def test_the_report_has_tables_a_picture_and_json(tmp_path):
    pytest.importorskip("matplotlib")
    report = synthetic_report(AFTER)
    bench_find.write_report(report, tmp_path)
    written = json.loads((tmp_path / "report.json").read_text())
    assert written["runs"] == report["runs"]
    assert {(s["configuration"], s["bug"]) for s in written["summaries"]} == set(AFTER)
    assert written["targets"]["Raising"] == {"every_repetition": True, "median": True}
    markdown = (tmp_path / "report.md").read_text()
    assert "## default" in markdown and "## no-relations" in markdown
    assert "| Raising | 5/5 | 5.5 |" in markdown and "![" in markdown
    assert "<img src='survival.png'" in (tmp_path / "report.html").read_text()
    assert (tmp_path / "survival.png").stat().st_size > 0 and (tmp_path / "survival.svg").exists()
    again = tmp_path / "again"
    bench_find.main(["--from-json", str(tmp_path / "report.json"), "--out", str(again), "--no-picture"])
    assert (again / "report.md").read_text() == markdown.replace(
        "![Share of the suite found against time](survival.png)\n\n", "")


def test_reports_merge_side_by_side(tmp_path):
    default = synthetic_report({("default", "Raising"): [5.0, 6.0]})
    ablation = synthetic_report({("no-reference", "Raising"): [None, 50.0]})
    both = bench_find.merged([default, ablation])
    assert list(both["settings"]["configurations"]) == ["default", "no-reference"]
    assert both["runs"] == default["runs"] + ablation["runs"]
    assert "| Raising | 2/2, 5.5 s | 1/2, 55.0 s |" in bench_find.markdown(both, None)
    both["runs"].append(synthetic_run("default", "Hanging", 0, 3.0))
    assert bench_find.common_bugs(both) == {"Raising"}        # what the picture compares


def test_merged_reports_keep_each_configurations_time_limit():
    default = synthetic_report({("default", "Raising"): [5.0, 6.0]})
    longer = synthetic_report({("no-reference", "Raising"): [None, 90.0]})
    longer["settings"]["seconds"] = 2 * SECONDS
    for configuration in longer["settings"]["configurations"].values():
        configuration["seconds"] = 2 * SECONDS
    longer["runs"][0]["seconds"] = 2 * SECONDS
    both = bench_find.merged([default, longer])
    assert bench_find.limits(both) == {"default": SECONDS, "no-reference": 2 * SECONDS}
    markdown = bench_find.markdown(both, None)
    assert "| Raising | 2/2, 5.5 s | 1/2, 105.0 s |" in markdown      # 90 s is within its 120 s
    assert "at most 60 s (default), 120 s (no-reference) wall time" in markdown
    assert "Configurations run separately" in markdown                    # not one commit for all
    assert f"no-reference: commit {longer['commit']['sha'][:7]}, started {longer['started']}" in markdown
    # More bugs of a configuration, run later, join it at the same limit, with their run named.
    later = synthetic_report({("default", "Hanging"): [3.0, 4.0]})
    later["commit"]["sha"] = "f" * 40
    again = bench_find.merged([both, later])
    assert again["settings"]["configurations"]["default"]["run"].endswith(
        f"; Hanging: commit fffffff, started {later['started']}, load average "
        f"{later['machine']['load_average'][0]:.1f}")
    assert "## default" in bench_find.markdown(again, None)
    with pytest.raises(SystemExit, match="two time limits"):
        bench_find.merged([longer, synthetic_report({("no-reference", "Hanging"): [3.0]})])
    # A report written before configurations kept their own limit has one for all.
    del default["settings"]["configurations"]["default"]["seconds"]
    assert bench_find.limits(default) == {"default": SECONDS}
    # Compared with a report of the shorter limit, the 90 s finding is censored at 60 s.
    shorter = synthetic_report({("no-reference", "Raising"): [30.0, 40.0]})
    [change] = bench_find.compare(both, shorter)
    assert (change.before_s, change.after_s) == (35.0, SECONDS)


def test_a_bug_found_while_the_corpus_was_replayed_is_marked():
    report = synthetic_report({("default", "Raising"): [5.0, 6.0, 7.0]})
    report["settings"]["corpus_inputs"] = 150
    assert "| Raising | 3/3 | 6.0 | 5.5-6.5 | 5.0-7.0 | 100 (replay) |" in bench_find.markdown(report, None)
    report["settings"]["corpus_inputs"] = 50
    assert "| 5.0-7.0 | 100 | " in bench_find.markdown(report, None)


def test_compare_tells_faster_slower_and_whether_beyond_spread():
    changes = {(c.configuration, c.bug): c
               for c in bench_find.compare(synthetic_report(AFTER), synthetic_report(BEFORE))}
    faster = changes["default", "Raising"]
    assert faster.verdict == "faster" and faster.significant
    assert faster.before_s == 45.0 and faster.after_s == 5.5
    assert not changes["default", "Hanging"].significant
    slower = changes["no-relations", "Raising"]
    assert slower.verdict == "slower" and not slower.significant
    lines = bench_find.comparison_lines(list(changes.values()))
    assert any("Raising" in line and "faster, beyond run-to-run spread" in line for line in lines)


def test_compare_from_the_command_line(tmp_path, capsys):
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    before.write_text(json.dumps(synthetic_report(BEFORE)))
    after.write_text(json.dumps(synthetic_report(AFTER)))
    assert bench_find.main(["--from-json", str(after), "--compare", str(before),
                            "--out", str(tmp_path / "out"), "--no-picture"]) == 0
    out = capsys.readouterr().out
    assert "faster, beyond run-to-run spread" in out and "slower, within run-to-run spread" in out
    kept = (tmp_path / "out" / "comparison.md").read_text()
    assert str(before) in kept and "faster, beyond run-to-run spread" in kept


def test_configurations_are_the_ablations():
    assert set(CONFIGURATIONS) == {"default", "no-relations", "no-reference", "byte-mutations",
                                   "empty-corpus", "trace-comparisons"}
    assert CONFIGURATIONS["default"] == Configuration("default", about=CONFIGURATIONS["default"].about)
