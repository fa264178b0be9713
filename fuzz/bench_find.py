"""Time to find: how long the fuzzer takes to find each planted bug of
tests/fuzz/broken_drivers.py (a measurement, not a test).

    nnhal-bench-find [-r 5] [-t 120] [-j 1] [--configurations default,no-relations|all]
                     [--bugs Raising,Hanging] [--work-dir DIR] [--out DIR] [--compare OLD.json]
                     [--require-found]
    nnhal-bench-find --from-json reports/bench-find/report.json [--compare OLD.json]

Each run is one process of the public command, ``fuzz/driver_fuzz.py --driver
tests.fuzz.broken_drivers:NAME``, fuzzing from corpus/ (a configuration may change that)
with its own -seed, output corpus and -artifact_prefix under the work directory, for at
most --seconds of wall time from its launch (start-up and the replay of the corpus
included: what a user waits for). libFuzzer stops at the first finding. A run records
whether it found something, when (the harness saves a finding's input as it happens, and
libFuzzer its oom-/timeout-/crash- artifact: the earliest file's time), after how many
inputs (libFuzzer's final statistics) and how much CPU, and which rule the finding names
(findings.log, else the kind of libFuzzer's artifact): a finding breaking another rule
than the planted bug's is found, but not by the oracle meant to catch it.

SUITE is every planted bug with the rules that may name it; CONFIGURATIONS are the
ablations. The report (report.md, report.html, report.json, survival.png/.svg in --out)
gives per bug and configuration the share of runs that found it, and the median, quartiles
and range of the time to find, a run that found nothing counting as its time limit; and the
share of all runs found against time, one line per configuration. ``--compare`` tells per
bug and configuration whether it became faster or slower than in another report, and
whether the difference is beyond run-to-run spread (a two-sided Mann-Whitney U test, as
FuzzBench does, at ALPHA: with fewer than 4 runs a side, no difference can be).

Targets (default configuration): every planted bug found in every repetition within
TARGET_FOUND_WITHIN_S, with a median time to find of at most TARGET_MEDIAN_S.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import html
import importlib.metadata
import itertools
import json
import math
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from fuzz import oracles
from fuzz.relations import RULES as RELATION_RULES
from hal_client import contract

REPO_ROOT = Path(__file__).resolve().parent.parent
FUZZ_ENTRY = REPO_ROOT / "fuzz" / "driver_fuzz.py"
CORPUS = REPO_ROOT / "corpus"
BROKEN_DRIVERS = "tests.fuzz.broken_drivers"

TARGET_FOUND_WITHIN_S = 300.0
TARGET_MEDIAN_S = 15.0
#: The significance level of --compare.
ALPHA = 0.05
#: A run still alive this long after its time is up (and told to stop) is killed.
STOP_GRACE_S = 30.0

#: The rule a finding libFuzzer makes itself carries, by its artifact's prefix (the
#: harness's own findings carry their violation's rule).
LIBFUZZER_KINDS = {"oom-": "out-of-memory", "timeout-": "timeout", "leak-": "leak", "crash-": "crash"}
OUT_OF_MEMORY = LIBFUZZER_KINDS["oom-"]
#: The files whose time is the time of a finding: the harness's copy of the input, then
#: libFuzzer's artifacts.
FINDING_FILES = ("finding-", *LIBFUZZER_KINDS)


# --- the suite ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Bug:
    """A planted bug: its broken driver (a factory of tests/fuzz/broken_drivers.py), the
    rules a finding of it may carry, and the libFuzzer flags it needs to be seen."""
    name: str
    rules: tuple[str, ...]
    flags: tuple[str, ...] = ()

    @property
    def driver(self) -> str:
        return f"{BROKEN_DRIVERS}:{self.name}"


def rules(*violations: type[contract.OracleViolation]) -> tuple[str, ...]:
    return tuple(violation.rule for violation in violations)


METAMORPHIC = tuple(rule.Violation.rule for rule in RELATION_RULES.values())
#: Hoarding fills 512 MiB in preparation: only a memory limit below that sees it.
HOARDING_RSS_LIMIT_MB = 400

SUITE: tuple[Bug, ...] = (
    Bug("Raising", rules(contract.HalExceptionViolation)),
    Bug("Hanging", rules(contract.HangViolation)),
    Bug("FencedBitFlip", rules(oracles.NondeterminismViolation)),
    Bug("SupportedDisagrees", rules(oracles.SupportedPrepareViolation)),
    Bug("Hoarding", (OUT_OF_MEMORY,), (f"-rss_limit_mb={HOARDING_RSS_LIMIT_MB}",)),
    Bug("RankUnchecked", rules(contract.HalExceptionViolation)),
    Bug("OverBudget", rules(oracles.MemoryBudgetViolation)),
    Bug("LiveRequest", rules(oracles.RequestChangedViolation)),
    # Wrong answers: the reference sees them all, the relations where the operation sits.
    Bug("LoopBodyMulAdds", rules(oracles.ReferenceMismatchViolation)),
    Bug("SignedAddSubtracts", rules(oracles.ReferenceMismatchViolation)),
    Bug("NestedIfSwapsBranches", rules(oracles.ReferenceMismatchViolation) + METAMORPHIC),
    Bug("BroadcastSubReversed", rules(oracles.ReferenceMismatchViolation)),
    # One request check dropped.
    Bug("InputLengthUnchecked", rules(oracles.InvalidRequestAcceptedViolation)),
    Bug("PoolBoundsUnchecked", rules(contract.HalExceptionViolation)),
    Bug("DimensionsUnchecked", rules(oracles.InvalidRequestAcceptedViolation)),
    Bug("PoolIndexUnchecked", rules(contract.HalExceptionViolation)),
    Bug("UnspecifiedUnchecked", rules(oracles.InvalidRequestAcceptedViolation)),
    # Memory domains and compilation caching (the routes, which run with the relations).
    Bug("CopyToZeroes", rules(oracles.BuffersDifferViolation)),
    Bug("FreedTokenKept", rules(oracles.InvalidTokenAcceptedViolation)),
    Bug("SharedBetweenPreparations", rules(oracles.InvalidTokenAcceptedViolation)),
    Bug("CacheUnchecked", rules(oracles.CorruptedCacheAcceptedViolation)),
    Bug("BufferExtentUnchecked", rules(oracles.InvalidRequestAcceptedViolation)),
    Bug("BufferArgumentsRefused", rules(oracles.BuffersDifferViolation)),
)
BUGS = {bug.name: bug for bug in SUITE}


@dataclass(frozen=True)
class Configuration:
    """A way to run the fuzzer over the suite: harness flags, libFuzzer flags, and whether
    it starts from corpus/ or from nothing."""
    name: str
    harness_flags: tuple[str, ...] = ()
    libfuzzer_flags: tuple[str, ...] = ()
    seeds: bool = True
    about: str = ""


CONFIGURATIONS = {c.name: c for c in (
    Configuration("default", about="as users run it: corpus/, reference, relations, the custom mutator"),
    Configuration("no-relations", ("--no-relations",), about="no metamorphic relations (nor routes)"),
    Configuration("no-reference", ("--reference", "none"), about="no reference driver"),
    Configuration("byte-mutations", ("--no-custom-mutator",), about="libFuzzer's byte mutations only"),
    Configuration("empty-corpus", seeds=False, about="from an empty corpus instead of corpus/"),
    Configuration("trace-comparisons", ("--trace-comparisons",), ("-use_value_profile=1",),
                  about="comparison operands traced, value profile on"),
)}


# --- one run --------------------------------------------------------------------------------

@dataclass
class Run:
    configuration: str
    bug: str
    repetition: int
    seed: int
    found: bool = False
    seconds: float = 0.0           # wall seconds from launch to the finding (or to the end)
    startup_seconds: float | None = None   # wall seconds until libFuzzer started
    inputs: int | None = None      # inputs run, up to the finding
    cpu_seconds: float = 0.0       # of the process, up to its end (the finding ends it)
    rule: str | None = None        # the rule the finding names
    expected_rule: bool = False    # ... is one of the planted bug's
    exit_code: int | None = None
    directory: str = ""


def fuzz_command(bug: Bug, configuration: Configuration, seconds: float, seed: int,
                 directory: Path) -> list[str]:
    corpora = [str(directory / "corpus")] + ([str(CORPUS)] if configuration.seeds else [])
    return [sys.executable, str(FUZZ_ENTRY), "--driver", bug.driver, *configuration.harness_flags,
            *corpora, f"-max_total_time={math.ceil(seconds)}", f"-seed={seed}",
            f"-artifact_prefix={directory / 'artifacts'}/", "-print_final_stats=1",
            *configuration.libfuzzer_flags, *bug.flags]


def first_finding(artifacts: Path) -> tuple[float, str] | None:
    """(time, rule) of the earliest finding in ``artifacts``, or None."""
    files = [p for p in artifacts.iterdir() if p.name.startswith(FINDING_FILES)] if artifacts.is_dir() else []
    return (min(p.stat().st_mtime for p in files), finding_rule(artifacts, files)) if files else None


#: A line of findings.log: the input's hash, the exception's class, then its message,
#: which starts with the rule in brackets for an oracle violation.
FINDING_LINE = re.compile(r"^\S+\s+(?P<kind>[\w.]+): (?:\[(?P<rule>[^\]]+)\])?")


def finding_rule(artifacts: Path, files: list[Path]) -> str:
    """The rule the harness logged for the first finding; else (a finding libFuzzer made
    itself: a memory limit, its own -timeout, a signal) the kind of its earliest artifact."""
    log = artifacts / "findings.log"
    first_line = next(iter(log.read_text().splitlines()), "") if log.exists() else ""
    if match := FINDING_LINE.match(first_line):
        return match["rule"] or match["kind"]
    earliest = min(files, key=lambda p: p.stat().st_mtime).name
    return next((kind for prefix, kind in LIBFUZZER_KINDS.items() if earliest.startswith(prefix)), "unknown")


EXECUTED = re.compile(r"^stat::number_of_executed_units:\s*(\d+)")
PROGRESS = re.compile(r"^#(\d+)\s")
#: libFuzzer's first line once atheris hands it control: start-up is over.
FUZZING_STARTS = re.compile(r"^INFO: Seed: \d+")


def run_once(bug: Bug, configuration: Configuration, repetition: int, seconds: float,
             work_dir: Path) -> Run:
    """One fuzz process of ``bug`` under ``configuration``, stopped after ``seconds`` of
    wall time; its output is kept in ``run.log`` (each line with its time since launch)."""
    seed = repetition + 1
    directory = work_dir / configuration.name / bug.name / f"rep{repetition}"
    shutil.rmtree(directory, ignore_errors=True)
    (directory / "corpus").mkdir(parents=True)
    (directory / "artifacts").mkdir()
    run = Run(configuration.name, bug.name, repetition, seed, directory=str(directory))
    command = fuzz_command(bug, configuration, seconds, seed, directory)
    started = time.time()
    process = launch(command, REPO_ROOT, REPO_ROOT)
    stopper = threading.Timer(seconds, stop, (process,))
    stopper.daemon = True
    stopper.start()
    run.startup_seconds, run.inputs = follow(process, started, command, directory / "run.log")
    run.cpu_seconds = reap(process)
    run.exit_code = process.returncode
    stopper.cancel()
    ended = time.time()
    finding = first_finding(directory / "artifacts")
    run.rule = finding[1] if finding is not None else None
    run.found = finding is not None and finding[0] - started <= seconds
    run.seconds = round(finding[0] - started if run.found else min(ended - started, seconds), 3)
    run.expected_rule = run.found and run.rule in bug.rules
    return run


def launch(command: list[str], cwd: Path, *paths: Path) -> subprocess.Popen:
    """``command`` started in ``cwd`` with ``paths`` first on its Python path, its output
    (stderr too) piped, unbuffered: each line is timed as it is written."""
    path = os.pathsep.join(filter(None, [*map(str, paths), os.environ.get("PYTHONPATH")]))
    return subprocess.Popen(command, cwd=cwd, env=dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=path),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")


def reap(process: subprocess.Popen) -> float:
    """Wait for ``process`` to end (its returncode set); the CPU seconds it took (which
    Popen.wait does not give)."""
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return round(usage.ru_utime + usage.ru_stime, 3)


def follow(process: subprocess.Popen, started: float, command: list[str],
           log_path: Path, on_start=None) -> tuple[float | None, int | None]:
    """Copy the run's output to ``log_path``, each line with its time since launch, until
    it ends; returns (start-up seconds, inputs run: libFuzzer's final count, else its
    latest progress line's). ``on_start`` is called when libFuzzer starts."""
    startup = inputs = progress = None
    with open(log_path, "w") as log:
        log.write(" ".join(command) + "\n")
        for line in process.stdout:
            at = time.time() - started
            log.write(f"{at:8.3f} {line}")
            if startup is None and FUZZING_STARTS.match(line):
                startup = round(at, 3)
                if on_start is not None:
                    on_start()
            if m := PROGRESS.match(line):
                progress = int(m[1])
            if m := EXECUTED.match(line):
                inputs = int(m[1])
    return startup, inputs if inputs is not None else progress


def stop(process: subprocess.Popen) -> None:
    """Time is up: libFuzzer stops on SIGINT with its final statistics; a process that does
    not is killed."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        killer = threading.Timer(STOP_GRACE_S, lambda: process.poll() is None and process.kill())
        killer.daemon = True
        killer.start()


def run_suite(configurations: list[Configuration], bugs: list[Bug], repetitions: int,
              seconds: float, jobs: int, work_dir: Path, on_run=None) -> list[Run]:
    """Every (configuration, bug, repetition), ``jobs`` processes at a time; ``on_run`` is
    called with each run as it ends (and the runs so far)."""
    plan = [(b, c, r) for c in configurations for b in bugs for r in range(repetitions)]
    return in_parallel([lambda task=task: run_once(*task, seconds, work_dir) for task in plan], jobs,
                       on_run and (lambda run, runs: on_run(run, runs, len(plan))))


def in_parallel(tasks: list, jobs: int, on_done=None) -> list:
    """The results of ``tasks`` (calls of no argument), ``jobs`` at a time, in their order;
    ``on_done`` is called with each result as it comes (and the results so far, in order)."""
    results: dict[int, object] = {}
    lock = threading.Lock()

    def one(index: int) -> None:
        result = tasks[index]()
        with lock:
            results[index] = result
            if on_done is not None:
                on_done(result, [results[i] for i in sorted(results)])
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for future in [pool.submit(one, index) for index in range(len(tasks))]:
            future.result()
    return [results[i] for i in sorted(results)]


# --- statistics -----------------------------------------------------------------------------

def censored_times(runs: list[dict], seconds: float) -> np.ndarray:
    """Time to find of each run; a run that found nothing within ``seconds`` counts as
    ``seconds`` (ranked last, as no time to find can be larger)."""
    return np.array([min(r["seconds"], seconds) if r["found"] else seconds for r in runs], dtype=float)


def found_within(run: dict, seconds: float) -> bool:
    return run["found"] and run["seconds"] <= seconds


def mann_whitney_p(a, b) -> float:
    """Two-sided p-value of the Mann-Whitney U test of samples ``a`` and ``b`` (ties get
    mid-ranks). Exact (every split of the pooled ranks) for small samples, else the
    normal approximation with tie correction."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        return 1.0
    pooled = np.concatenate([a, b])
    ranks = mid_ranks(pooled)
    mean = n1 * (n1 + n2 + 1) / 2
    observed = abs(ranks[:n1].sum() - mean)
    if math.comb(n1 + n2, n1) <= 200_000:
        splits = np.array(list(itertools.combinations(range(n1 + n2), n1)))
        sums = ranks[splits].sum(axis=1)
        return float(np.mean(np.abs(sums - mean) >= observed - 1e-9))
    _, counts = np.unique(pooled, return_counts=True)
    n = n1 + n2
    variance = n1 * n2 / 12 * ((n + 1) - (counts ** 3 - counts).sum() / (n * (n - 1)))
    if variance <= 0:
        return 1.0
    z = max(observed - 0.5, 0) / math.sqrt(variance)
    return math.erfc(z / math.sqrt(2))


def mid_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks from 1, equal values sharing the mean of their ranks."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(1, len(values) + 1)
    for value in np.unique(values):
        tied = values == value
        ranks[tied] = ranks[tied].mean()
    return ranks


@dataclass
class Summary:
    configuration: str
    bug: str
    runs: int
    found: int               # within the time limit
    named: int               # ... by one of the planted bug's rules
    median_s: float
    q1_s: float
    q3_s: float
    min_s: float
    max_s: float
    median_inputs: float | None      # of the runs that found it
    median_cpu_s: float | None
    median_startup_s: float | None   # of all runs: launch to libFuzzer's start
    rules: list[str] = field(default_factory=list)   # the rules the findings named


def summarise(runs: list[dict], seconds: float) -> list[Summary]:
    groups: dict[tuple[str, str], list[dict]] = {}
    for run in runs:
        groups.setdefault((run["configuration"], run["bug"]), []).append(run)
    summaries = []
    for (configuration, bug), group in groups.items():
        times = censored_times(group, seconds)
        hits = [r for r in group if found_within(r, seconds)]
        q1, median, q3 = np.percentile(times, [25, 50, 75])
        summaries.append(Summary(
            configuration, bug, len(group), len(hits), sum(r["expected_rule"] for r in hits),
            float(median), float(q1), float(q3), float(times.min()), float(times.max()),
            median_of([r["inputs"] for r in hits]), median_of([r["cpu_seconds"] for r in hits]),
            median_of([r["startup_seconds"] for r in group]),
            sorted({r["rule"] for r in hits if r["rule"]})))
    return summaries


def median_of(values: list) -> float | None:
    known = [v for v in values if v is not None]
    return float(np.median(known)) if known else None


@dataclass
class Targets:
    """Whether a bug meets the targets of the default configuration: found in every
    repetition within TARGET_FOUND_WITHIN_S (None: not known, a run was stopped sooner),
    with a median time to find of at most TARGET_MEDIAN_S."""
    every_repetition: bool | None
    median: bool


def targets(summary: Summary, seconds: float) -> Targets:
    every = (True if summary.found == summary.runs and summary.max_s <= TARGET_FOUND_WITHIN_S
             else None if seconds < TARGET_FOUND_WITHIN_S else False)
    return Targets(every, summary.median_s <= TARGET_MEDIAN_S and summary.found * 2 > summary.runs)


def survival(runs: list[dict], seconds: float, clock: str = "seconds") -> tuple[np.ndarray, np.ndarray]:
    """The share of ``runs`` that found their bug by each time on ``clock`` (a Run field:
    wall ``seconds`` or ``cpu_seconds``): (times, shares) of a step function from 0 to the
    last run's end."""
    times = np.sort([r[clock] for r in runs if found_within(r, seconds)])
    end = max([seconds if clock == "seconds" else r[clock] for r in runs] + list(times))
    xs = np.concatenate([[0.0], times, [end]])
    ys = np.concatenate([[0.0], np.arange(1, len(times) + 1), [len(times)]]) / max(len(runs), 1)
    return xs, ys


# --- the report ---------------------------------------------------------------------------------

def machine() -> dict:
    cpu = ""
    try:
        cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name")), "")
    except OSError:
        pass
    return {"platform": platform.platform(), "python": platform.python_version(), "cpu": cpu,
            "cpus": os.cpu_count(), "load_average": list(os.getloadavg()), "atheris": version_of("atheris")}


def version_of(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except Exception:   # not installed as a distribution
        return None


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def machine_text(m: dict, extra: str = "", load: bool = True) -> str:
    """The machine a report's runs were made on (``extra`` after its Python), with the load
    average at their start and end."""
    text = (f"Machine: {m['cpu'] or 'unknown CPU'}, {m['cpus']} CPUs, {m['platform']}, "
            f"Python {m['python']}{extra}")
    if not load:
        return text + "."
    return (f"{text}; load average at start {', '.join(f'{x:.1f}' for x in m['load_average'])}"
            + (f", at the end {', '.join(f'{x:.1f}' for x in m['load_average_end'])}"
               if "load_average_end" in m else "") + ".")


def commit() -> dict:
    def git(*arguments: str) -> str:
        result = subprocess.run(["git", "-C", str(REPO_ROOT), *arguments], capture_output=True, text=True)
        return result.stdout.strip() if result.returncode == 0 else ""
    return {"sha": git("rev-parse", "HEAD"), "branch": git("rev-parse", "--abbrev-ref", "HEAD"),
            "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def new_report(configurations: list[Configuration], bugs: list[Bug], repetitions: int,
               seconds: float, jobs: int) -> dict:
    return {
        "settings": {"repetitions": repetitions, "seconds": seconds, "jobs": jobs,
                     "corpus_inputs": sum(1 for _ in CORPUS.iterdir()) if CORPUS.is_dir() else 0,
                     "configurations": {c.name: dict(asdict(c), seconds=seconds) for c in configurations},
                     "bugs": {b.name: asdict(b) for b in bugs}},
        "machine": machine(), "commit": commit(),
        "started": utc_now(),
        "runs": [],
    }


def limits(report: dict) -> dict[str, float]:
    """Each configuration's time limit (-t of the run that made it; a report written before
    configurations kept their own has one for all)."""
    return {name: c.get("seconds", report["settings"]["seconds"])
            for name, c in report["settings"]["configurations"].items()}


def merged(reports: list[dict]) -> dict:
    """One report of the runs of several (the first one's machine). Each configuration
    keeps its own time limit, at which its runs are judged (the lines of the picture are
    comparable up to the shortest), and its run's commit, start and load."""
    first = reports[0]
    if len(reports) == 1:
        return first
    configurations: dict[str, dict] = {}
    for r in reports:
        for name, configuration in r["settings"]["configurations"].items():
            made = configuration.get("run", provenance(r))
            if name not in configurations:
                configurations[name] = dict(configuration, seconds=limits(r)[name], run=made)
                continue
            if configurations[name]["seconds"] != limits(r)[name]:
                raise SystemExit(f"{name} ran with two time limits: merge reports of one -t per configuration")
            bugs = sorted({run["bug"] for run in r["runs"] if run["configuration"] == name})
            configurations[name]["run"] += f"; {', '.join(bugs)}: {made}"
    settings = dict(first["settings"],
                    seconds=max(r["settings"]["seconds"] for r in reports),
                    repetitions=max(r["settings"]["repetitions"] for r in reports),
                    configurations=configurations,
                    bugs={k: v for r in reports for k, v in r["settings"]["bugs"].items()})
    return dict(first, settings=settings, runs=[run for r in reports for run in r["runs"]])


def provenance(report: dict) -> str:
    """Where and when a report's runs were made, for a configuration merged into another."""
    m = report["machine"]
    load = f"load average {m['load_average'][0]:.1f}" + (
        f" to {m['load_average_end'][0]:.1f}" if "load_average_end" in m else "")
    return f"commit {report['commit']['sha'][:7]}, started {report['started']}, {load}"


def summaries(report: dict) -> list[Summary]:
    """summarise() of each configuration's runs at its own time limit."""
    return [s for name, seconds in limits(report).items()
            for s in summarise([r for r in report["runs"] if r["configuration"] == name], seconds)]


def limits_text(report: dict) -> str:
    """'120 s', or '300 s (default, no-relations), 120 s (empty-corpus)'."""
    by_limit: dict[float, list[str]] = {}
    for name, seconds in limits(report).items():
        by_limit.setdefault(seconds, []).append(name)
    if len(by_limit) == 1:
        return f"{next(iter(by_limit)):g} s"
    return ", ".join(f"{seconds:g} s ({', '.join(names)})" for seconds, names in by_limit.items())


def with_summaries(report: dict) -> dict:
    every = summaries(report)
    out = dict(report, summaries=[asdict(s) for s in every])
    out["targets"] = {s.bug: asdict(targets(s, limits(report)["default"]))
                      for s in every if s.configuration == "default"}
    return out


def seconds_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def yes_no(value: bool | None) -> str:
    return {True: "yes", False: "**no**", None: "unknown"}[value]


def summary_rows(report: dict) -> list[tuple[str, list[str]]]:
    """(configuration, cells) per configuration and bug, for the tables."""
    configurations = report["settings"]["configurations"]
    default_limit = limits(report).get("default")
    rows = []
    for s in summaries(report):
        # libFuzzer first runs each input of the corpus once (and an empty one).
        replayed = 1 + report["settings"]["corpus_inputs"] * configurations[s.configuration]["seeds"]
        cells = [s.bug, f"{s.found}/{s.runs}", seconds_text(s.median_s),
                 f"{s.q1_s:.1f}-{s.q3_s:.1f}", f"{s.min_s:.1f}-{s.max_s:.1f}",
                 "-" if s.median_inputs is None else
                 f"{s.median_inputs:,.0f}{' (replay)' if s.median_inputs <= replayed else ''}",
                 seconds_text(s.median_cpu_s), seconds_text(s.median_startup_s),
                 f"{s.named}/{s.found}" if s.found else "-",
                 ", ".join(s.rules) or "-"]
        if s.configuration == "default":
            t = targets(s, default_limit)
            cells += [yes_no(t.every_repetition), yes_no(t.median)]
        rows.append((s.configuration, cells))
    return rows


COLUMNS = ["bug", "found", "median s", "IQR s", "min-max s", "median inputs", "median CPU s",
           "median start-up s", "planted rule", "rules named"]
TARGET_COLUMNS = [f"all within {TARGET_FOUND_WITHIN_S:.0f} s", f"median <= {TARGET_MEDIAN_S:.0f} s"]


def settings_lines(report: dict) -> list[str]:
    s, m, c = report["settings"], report["machine"], report["commit"]
    separate = [f"{name}: {configuration['run']}." for name, configuration in s["configurations"].items()
                if "run" in configuration]
    return ["Configurations run separately, each one's commit, start and load below." if separate else
            f"Commit {c['sha'][:12]}{' (with uncommitted changes)' if c['dirty'] else ''} on {c['branch']}, "
            f"started {report['started']}.",
            machine_text(m, f", atheris {m['atheris']}", load=not separate),
            f"Settings: {s['repetitions']} repetition(s) (-seed=1..{s['repetitions']}) of at most "
            f"{limits_text(report)} wall time each, {s['jobs']} at once; corpus/ holds {s['corpus_inputs']} "
            f"inputs. A run that found nothing counts as its time limit. Found: any finding (planted rule: "
            f"how many of them named the rule meant to catch the bug); inputs marked (replay): found while "
            f"libFuzzer replayed the corpus, before any mutation.", *separate]


def overview(report: dict) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of a table of bugs by configuration: found/runs and median seconds."""
    configurations = list(report["settings"]["configurations"])
    cells = {(s.bug, s.configuration): f"{s.found}/{s.runs}, {s.median_s:.1f} s"
             for s in summaries(report)}
    bugs = list(dict.fromkeys(run["bug"] for run in report["runs"]))
    return ["bug", *configurations], [[bug, *(cells.get((bug, c), "") for c in configurations)] for bug in bugs]


def markdown(report: dict, picture: str | None) -> str:
    out = ["# Time to find the planted bugs", "", *settings_lines(report), ""]
    if picture:
        out += [f"![Share of the suite found against time]({picture})", ""]
    if len(report["settings"]["configurations"]) > 1:
        header, body = overview(report)
        out += ["## Overview (found/runs, median time to find)", "", *markdown_table(header, body)]
    rows = summary_rows(report)
    for name, configuration in report["settings"]["configurations"].items():
        out += [f"## {name}", "", configuration.get("about", ""), ""]
        out += markdown_table(COLUMNS + (TARGET_COLUMNS if name == "default" else []),
                              [cells for c, cells in rows if c == name])
    return "\n".join(out)


def markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """The lines of a Markdown table, and a blank one after it."""
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(cells) + " |" for cells in rows), ""]


def html_page(report: dict, picture: str | None) -> str:
    def table(header, body) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        rows = "".join("<tr>" + "".join(f"<td>{html.escape(cell.replace('**', ''))}</td>" for cell in cells) + "</tr>"
                       for cells in body)
        return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
    rows = summary_rows(report)
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>Time to find</title>",
             "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}td:first-child{text-align:left}</style>",
             "</head><body><h1>Time to find the planted bugs</h1>"]
    parts += [f"<p>{html.escape(line)}</p>" for line in settings_lines(report)]
    if picture:
        parts.append(f"<img src='{html.escape(picture)}' alt='Share of the suite found against time'>")
    if len(report["settings"]["configurations"]) > 1:
        parts += ["<h2>Overview (found/runs, median time to find)</h2>", table(*overview(report))]
    for name, configuration in report["settings"]["configurations"].items():
        header = COLUMNS + (TARGET_COLUMNS if name == "default" else [])
        parts += [f"<h2>{html.escape(name)}</h2><p>{html.escape(configuration.get('about', ''))}</p>",
                  table(header, [cells for c, cells in rows if c == name])]
    parts.append("</body></html>")
    return "\n".join(parts)


def common_bugs(report: dict) -> set[str]:
    """The bugs every configuration of the report ran: the lines of the picture are
    comparable only over the same bugs."""
    ran: dict[str, set[str]] = {}
    for run in report["runs"]:
        ran.setdefault(run["configuration"], set()).add(run["bug"])
    return set.intersection(*ran.values()) if ran else set()


def plot(report: dict, out_dir: Path) -> str | None:
    """survival.png and survival.svg: per configuration, the share of its runs that found
    their bug by each time. Returns the PNG's name, or None without matplotlib."""
    try:
        # By name: the frozen fuzzer bundles every module of fuzz/ and what they import,
        # and has no use for matplotlib.
        importlib.import_module("matplotlib").use("Agg")
        pyplot = importlib.import_module("matplotlib.pyplot")
    except ImportError:
        print("no matplotlib (pip install '.[bench]'): the report has no picture", file=sys.stderr)
        return None
    common = common_bugs(report)
    limit = limits(report)
    figure, panes = pyplot.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    for axes, clock, label in zip(panes, ("seconds", "cpu_seconds"),
                                  ("wall seconds from launch", "CPU seconds of the run")):
        for name in report["settings"]["configurations"]:
            runs = [r for r in report["runs"] if r["configuration"] == name and r["bug"] in common]
            if runs:
                xs, ys = survival(runs, limit[name], clock)
                axes.step(xs, 100 * ys, where="post", label=name)
        if clock == "seconds" and len(set(limit.values())) > 1:
            # Beyond the shortest time limit, the lines no longer compare like with like.
            axes.axvline(min(limit.values()), color="grey", linestyle=":", linewidth=1)
        axes.set_xlim(left=0)
        axes.set_ylim(0, 100)
        axes.set_xlabel(label)
        axes.grid(alpha=0.3)
    panes[0].set_ylabel("% of runs that found their bug")
    panes[0].legend(loc="lower right", fontsize="small")
    figure.suptitle(f"Planted bugs found ({len(common)} bugs, {report['settings']['repetitions']} run(s) each)\n"
                    f"at most {limits_text(report)}", fontsize="medium")
    figure.tight_layout()
    for suffix in ("png", "svg"):
        figure.savefig(out_dir / f"survival.{suffix}")
    pyplot.close(figure)
    return "survival.png"


def write_report(report: dict, out_dir: Path, with_picture: bool = True) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    picture = plot(report, out_dir) if with_picture else None
    (out_dir / "report.json").write_text(json.dumps(with_summaries(report), indent=1) + "\n")
    (out_dir / "report.md").write_text(markdown(report, picture))
    (out_dir / "report.html").write_text(html_page(report, picture))


# --- comparison ---------------------------------------------------------------------------------

@dataclass
class Change:
    configuration: str
    bug: str
    before_s: float      # median time to find in the other report
    after_s: float       # ... in this one
    p: float

    @property
    def verdict(self) -> str:
        return "faster" if self.after_s < self.before_s else "slower" if self.after_s > self.before_s else "same"

    @property
    def significant(self) -> bool:
        return self.p < ALPHA


def compare(report: dict, other: dict) -> list[Change]:
    """Per configuration and bug in both reports, the change from ``other`` to ``report``;
    runs are censored at the shorter of the configuration's two time limits."""
    mine, theirs = limits(report), limits(other)

    def groups(r: dict) -> dict[tuple[str, str], np.ndarray]:
        keyed: dict[tuple[str, str], list[dict]] = {}
        for run in r["runs"]:
            keyed.setdefault((run["configuration"], run["bug"]), []).append(run)
        return {(c, bug): censored_times(runs, min(mine.get(c, math.inf), theirs.get(c, math.inf)))
                for (c, bug), runs in keyed.items()}
    after, before = groups(report), groups(other)
    return [Change(*key, float(np.median(before[key])), float(np.median(after[key])),
                   mann_whitney_p(after[key], before[key]))
            for key in after if key in before]


def comparison_lines(changes: list[Change]) -> list[str]:
    return [f"{'configuration':18} {'bug':26} {'before s':>9} {'after s':>9}  verdict",
            *(f"{c.configuration:18} {c.bug:26} {c.before_s:9.1f} {c.after_s:9.1f}  {c.verdict}, "
              f"{'beyond' if c.significant else 'within'} run-to-run spread (p={c.p:.3f})" for c in changes)]


def write_comparison(lines: list[str], other: Path, out_dir: Path) -> None:
    """comparison.md beside the report, for a reader who has only the report's directory
    (the weekly workflow's step summary)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "comparison.md").write_text("\n".join([f"## Against {other}", "", "```", *lines, "```", ""]))


# --- the command --------------------------------------------------------------------------------

def names(value: str, known: dict, what: str) -> list:
    if value == "all":
        return list(known.values())
    unknown = [n for n in value.split(",") if n not in known]
    if unknown:
        raise SystemExit(f"no {what} {', '.join(unknown)}; known: {', '.join(known)}")
    return [known[n] for n in value.split(",")]


def target_lines(report: dict) -> list[str]:
    default_limit = limits(report).get("default")
    lines = []
    for s in summaries(report):
        if s.configuration == "default":
            t = targets(s, default_limit)
            lines.append(f"{s.bug:26} found {s.found}/{s.runs}, median {s.median_s:6.1f} s: "
                         f"all within {TARGET_FOUND_WITHIN_S:.0f} s {yes_no(t.every_repetition)}, "
                         f"median <= {TARGET_MEDIAN_S:.0f} s {yes_no(t.median)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-r", "--repetitions", type=int, default=5,
                        help="runs of each bug; --compare needs 4 or more a side to tell anything")
    parser.add_argument("-t", "--seconds", type=float, default=120.0, help="most wall time of a run")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="runs at once")
    parser.add_argument("--configurations", default="default",
                        help=f"comma-separated, or all: {', '.join(CONFIGURATIONS)}")
    parser.add_argument("--bugs", default="all", help="comma-separated names of broken drivers, or all")
    parser.add_argument("--work-dir", type=Path, default=REPO_ROOT / "fuzz-work" / "bench-find")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "reports" / "bench-find")
    parser.add_argument("--compare", type=Path, metavar="OTHER.json", help="an earlier report.json")
    parser.add_argument("--from-json", type=Path, nargs="+", metavar="REPORT.json",
                        help="write the report of earlier runs again (of several, together: the "
                             "configurations of one run beside another's); no fuzzing")
    parser.add_argument("--no-picture", action="store_true")
    parser.add_argument("--require-found", action="store_true",
                        help="exit 1 unless every run found its bug, named by its planted rule")
    args = parser.parse_args(argv)

    if args.from_json:
        report = merged([json.loads(path.read_text()) for path in args.from_json])
    else:
        configurations = names(args.configurations, CONFIGURATIONS, "configuration")
        bugs = names(args.bugs, BUGS, "bug")
        report = new_report(configurations, bugs, args.repetitions, args.seconds, args.jobs)

        def on_run(run: Run, runs: list[Run], total: int) -> None:
            what = (f"found in {run.seconds:.1f} s ({run.inputs} inputs, {run.cpu_seconds:.0f} CPU s), "
                    f"{run.rule}{'' if run.expected_rule else ' (not the planted rule)'}") if run.found \
                else f"not found in {run.seconds:.0f} s ({run.inputs} inputs)"
            print(f"[{len(runs)}/{total}] {run.configuration} {run.bug} seed {run.seed}: {what}", flush=True)
            report["runs"] = [asdict(r) for r in runs]
            write_report(report, args.out, with_picture=False)     # what is done so far, kept
        run_suite(configurations, bugs, args.repetitions, args.seconds, args.jobs, args.work_dir, on_run)
        report["machine"]["load_average_end"] = list(os.getloadavg())
    write_report(report, args.out, with_picture=not args.no_picture)
    print("\n".join(["", "Targets of the default configuration:", *target_lines(report)]))
    print(f"\nReport: {args.out / 'report.md'}, {args.out / 'report.html'}, {args.out / 'report.json'}")
    if args.compare:
        lines = comparison_lines(compare(report, json.loads(args.compare.read_text())))
        print("\n".join(["", f"Against {args.compare}:", *lines]))
        write_comparison(lines, args.compare, args.out)
    limit = limits(report)
    missed = [f"{r['configuration']} {r['bug']} seed {r['seed']}" for r in report["runs"]
              if not (found_within(r, limit[r["configuration"]]) and r["expected_rule"])]
    if args.require_found and missed:
        print(f"\nnot found by the planted rule: {', '.join(missed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
