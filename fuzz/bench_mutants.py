"""Mutation score of the harness: how many small faults planted in the bundled driver the
fuzzer finds (a measurement, not a test).

    nnhal-bench-mutants [-n 100] [-t 60] [-j 1] [--seed 0] [--operation-files 8] [--rev HEAD]
                        [--work-dir DIR] [--out DIR] [--classified FILE] [--no-control]
                        [--keep-copies] [--fake-kill]
    nnhal-bench-mutants --from-json reports/bench-mutants/report.json [--classified FILE]

The mutants are cosmic-ray's: its operators, its count of where each applies, and its
``mutate_code``, over the driver at ``--rev``. They are drawn from three AREAS:
driver/validation/, driver/executor/, and --operation-files modules of driver/operations/
drawn at random. The sample of N mutants is stratified: split evenly between the areas
(each area's score is judged on its own), each area's share drawn uniformly from every
mutant of its files. Both draws follow --seed, so a sample is the same on every machine
while the sources are.

A mutant is killed when one fuzz run of it reports a violation. Each mutant gets its own
scratch copy of the repository (``git archive`` of --rev, its one file mutated) and one
process of the public command there, ``fuzz/driver_fuzz.py --reference
driver_pristine:SampleDriver`` from corpus/, relations on, the reference being the
unmutated driver of --rev (fuzz/pristine.py, as ``--reference-rev`` makes it). The run
gets --seconds of fuzzing from libFuzzer's start, the replay of the corpus included but
not the start-up before it (instrumenting the driver: 10 to 30 s on a loaded machine, and
much the same for every mutant), and ends at its first finding. The harness's own
validator is the copy's, the mutant's (as a changed driver's is under --reference-rev):
a stricter validation is seen by the reference alone, which is asked about every model
and request that validator rejects (fuzz/harness.py). A run that dies before
libFuzzer starts (the mutant does not import, or breaks the harness's own start-up) is
killed by start-up, counted apart: such mutants say nothing about the fuzzer. Before the
mutants, the unmutated copy runs the same way (the control): a finding there means a
kill may be no mutant's doing, and the report says so. ``--fake-kill`` checks the
benchmark itself: a run imports its mutated module and reports a finding, instead of
fuzzing.

Each mutant has an ``id`` made of its file, operator and the text of the line it changes,
so that it keeps its id while its line does. A survivor's class comes from --classified
(``benchmarks/mutants-classified.json``: ``{"<id>": {"class": ..., "why": ...}}``),
written by hand and kept across runs: ``equivalent`` (no input tells it from the
original), ``unreachable`` (no input the decoder makes reaches the change),
``missing-oracle`` (reached and wrong, but no rule sees it), ``rare`` (the decoder can make
an input that reaches it, and a rule sees that input, but the fuzzer makes such inputs too
seldom for the time; ``--only ID -t S`` runs it alone for longer); any other survivor is
``unclassified``. An area's score is the share of its mutants the fuzzer killed, leaving
out the equivalent ones and those killed by start-up. ``--from-json`` writes an earlier
report again, with the classification as it is now.

Targets (TARGETS): 60 % of validation's and of executor's mutants killed, 50 % of
operations'.
"""
from __future__ import annotations

import argparse
import difflib
import hashlib
import importlib
import io
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from fuzz import bench_find, pristine
from fuzz.bench_find import markdown_table
from fuzz.nightly import DEFAULT_TIMEOUT_S

REPO_ROOT = Path(__file__).resolve().parent.parent
AREAS = ("validation", "executor", "operations")
OPERATIONS = "operations"
#: The least share of an area's non-equivalent mutants the fuzzer should kill.
TARGETS = {"validation": 0.60, "executor": 0.60, "operations": 0.50}
CLASSIFIED = REPO_ROOT / "benchmarks" / "mutants-classified.json"
#: What a survivor may be classified as; any other survivor is UNCLASSIFIED.
CLASSES = ("equivalent", "unreachable", "missing-oracle", "rare")
UNCLASSIFIED = "unclassified"
EQUIVALENT = "equivalent"
KILLED, STARTUP, SURVIVED = "killed", "killed-by-startup", "survived"
#: A run whose libFuzzer has not started this long after its launch is stopped.
STARTUP_LIMIT_S = 300.0
#: libFuzzer's -seed of every run: each mutant meets the same mutations.
FUZZ_SEED = 1
#: Lines of context in a mutant's diff.
DIFF_CONTEXT = 1
#: The z of a 95 % Wilson interval.
Z_95 = 1.959964


# --- the mutants ------------------------------------------------------------------------------

def cosmic_ray():
    """cosmic-ray's modules, imported by name: the frozen fuzzer bundles every module of
    fuzz/ and what they import, and has no use for it."""
    try:
        return tuple(importlib.import_module(f"cosmic_ray.{name}") for name in ("plugins", "ast", "mutating"))
    except ImportError:
        raise SystemExit("cosmic-ray is not installed: pip install -e '.[bench]'") from None


def operators() -> dict:
    """cosmic-ray's operators that need no arguments, by name, as instances."""
    plugins, _, _ = cosmic_ray()
    classes = {name: plugins.get_operator(name) for name in plugins.operator_names()}
    return {name: cls() for name, cls in classes.items() if not cls.arguments()}


@dataclass(frozen=True)
class Mutant:
    id: str
    area: str
    path: str              # of the mutated file, in the repository
    operator: str          # cosmic-ray's
    occurrence: int        # of the operator in the file, as cosmic-ray counts them
    line: int
    diff: str = ""


def mutant_id(path: str, operator: str, line_text: str, offset: int, repeat: int) -> str:
    """A name that holds while the changed line does: the file, the operator, the line's
    text and where on it (``offset`` past its indentation), and how many mutants of the
    same operator at the same place of a line of the same text came before."""
    key = "\n".join([path, operator, line_text.strip(), str(offset), str(repeat)])
    return hashlib.sha1(key.encode()).hexdigest()[:12]


def mutants_of(path: str, area: str, source: str, named_operators: dict) -> list[Mutant]:
    """Every mutant cosmic-ray makes of ``source``, in its order (operator, occurrence)."""
    _, ast, _ = cosmic_ray()
    nodes = list(ast.ast_nodes(ast.get_ast(source)))
    lines = source.splitlines()
    out = []
    for name, operator in named_operators.items():
        seen: dict[tuple[str, int], int] = {}
        starts = (start for node in nodes for start, _ in operator.mutation_positions(node))
        for occurrence, (line, column) in enumerate(starts):
            text = lines[line - 1] if line <= len(lines) else ""
            place = (text.strip(), column - (len(text) - len(text.lstrip())))
            repeat = seen[place] = seen.get(place, -1) + 1
            out.append(Mutant(mutant_id(path, name, text, place[1], repeat), area, path, name, occurrence, line))
    return out


def mutated(mutant: Mutant, source: str, named_operators: dict) -> str | None:
    """The source with ``mutant`` applied (cosmic-ray's own way), or None where it changes
    nothing."""
    _, _, mutating = cosmic_ray()
    code = mutating.mutate_code(source, named_operators[mutant.operator], mutant.occurrence)
    return None if code is None or code == source else code


def unified_diff(path: str, before: str, after: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True),
                                        f"a/{path}", f"b/{path}", n=DIFF_CONTEXT))


class Snapshot:
    """The repository at a commit: its archive, and the text of its files."""

    def __init__(self, commit: str, archive: bytes) -> None:
        self.commit = commit
        self.archive = archive
        with tarfile.open(fileobj=io.BytesIO(self.archive)) as tar:
            self.files = {m.name: tar.extractfile(m).read().decode() for m in tar.getmembers()
                          if m.isfile() and m.name.endswith(".py") and m.name.startswith("driver/")}

    @classmethod
    def at(cls, rev: str, repo: Path = REPO_ROOT) -> Snapshot:
        commit = pristine.resolve(rev, repo)
        return cls(commit, subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", commit],
                                          capture_output=True, check=True).stdout)

    def modules(self, area: str) -> list[str]:
        """The Python files of an area of the driver."""
        return sorted(path for path in self.files if path.startswith(f"driver/{area}/"))

    def extract(self, destination: Path, changed: dict[str, str]) -> None:
        """The repository at the commit into ``destination``, with ``changed`` files' text."""
        with tarfile.open(fileobj=io.BytesIO(self.archive)) as tar:
            tar.extractall(destination, filter="data")
        for path, text in changed.items():
            (destination / path).write_text(text)


def area_files(snapshot: Snapshot, operation_files: int, rng: random.Random) -> dict[str, list[str]]:
    """The files of each area: all of validation's and executor's, a draw of operations'."""
    files = {area: snapshot.modules(area) for area in AREAS}
    files[OPERATIONS] = sorted(rng.sample(files[OPERATIONS], min(operation_files, len(files[OPERATIONS]))))
    return files


def shares(total: int, areas: tuple[str, ...] = AREAS) -> dict[str, int]:
    """``total`` split evenly between the areas, the first ones taking what is left over."""
    return {area: total // len(areas) + (i < total % len(areas)) for i, area in enumerate(areas)}


def sample(snapshot: Snapshot, total: int, seed: int, operation_files: int) -> tuple[list[tuple[Mutant, str]], dict]:
    """The stratified sample: (mutant with its diff, mutated source) in area order, and per
    area its files and how many mutants they have."""
    rng = random.Random(seed)
    named_operators = operators()
    files = area_files(snapshot, operation_files, rng)
    chosen, population = [], {}
    for area, share in shares(total).items():
        if share == 0:
            population[area] = {"files": files[area], "mutants": None}    # not counted: none drawn
            continue
        every = [m for path in files[area] for m in mutants_of(path, area, snapshot.files[path], named_operators)]
        population[area] = {"files": files[area], "mutants": len(every)}
        taken = 0
        for mutant in rng.sample(every, len(every)):
            if taken == share:
                break
            source = snapshot.files[mutant.path]
            code = mutated(mutant, source, named_operators)
            if code is not None:
                chosen.append((Mutant(**dict(asdict(mutant), diff=unified_diff(mutant.path, source, code))), code))
                taken += 1
    return chosen, population


# --- one run ----------------------------------------------------------------------------------

@dataclass
class Outcome:
    verdict: str
    seconds: float | None = None        # from libFuzzer's start to the finding
    wall_seconds: float = 0.0           # from launch to the finding (or to the end)
    startup_seconds: float | None = None
    inputs: int | None = None
    cpu_seconds: float = 0.0
    rule: str | None = None
    finding: str | None = None          # the first line findings.log has of it
    exit_code: int | None = None
    why: str | None = None              # what a start-up kill died of
    directory: str = ""


def fuzz_command(copy: Path, directory: Path) -> list[str]:
    """The public fuzz command in the scratch copy, against the unmutated driver, with the
    nightly's -timeout (a mutant hanging while it holds the GIL ends there)."""
    return [sys.executable, str(copy / "fuzz" / "driver_fuzz.py"), "--reference", pristine.PRISTINE_SPEC,
            str(directory / "corpus"), str(copy / "corpus"), f"-seed={FUZZ_SEED}", f"-timeout={DEFAULT_TIMEOUT_S}",
            f"-artifact_prefix={directory / 'artifacts'}/", "-print_final_stats=1"]


#: What a run is in --fake-kill mode: it imports the mutated module and the reference, then
#: "starts fuzzing" and reports a finding as the harness does (the finding's input and
#: its line in findings.log). A mutant that does not import dies before starting.
FAKE_RUN = """import importlib, pathlib, sys
importlib.import_module(sys.argv[1])
importlib.import_module(sys.argv[2].split(":")[0])
print("INFO: Seed: 1", flush=True)
artifacts = pathlib.Path(sys.argv[3])
(artifacts / "finding-fake").write_bytes(b"")
(artifacts / "findings.log").write_text(f"fake  FakeKill: [fake-kill] {sys.argv[1]} imports\\n")
"""
FAKE_RULE = "fake-kill"


def fake_command(directory: Path, changed: dict[str, str]) -> list[str]:
    """A run of FAKE_RUN: instant, and its verdict known (killed, or killed by start-up)."""
    module = ".".join(Path(next(iter(changed), "driver/__init__.py")).with_suffix("").parts)
    return [sys.executable, "-c", FAKE_RUN, module.removesuffix(".__init__"), pristine.PRISTINE_SPEC,
            str(directory / "artifacts")]


def first_log_line(artifacts: Path) -> str | None:
    log = artifacts / "findings.log"
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    return lines[0].split(None, 1)[-1][:300] if lines else None


#: The harness's statistics line, printed when the run ends: inputs it ran.
HARNESS_INPUTS = re.compile(r"^\s*[\d.]+ harness: (\d+) inputs")


def harness_inputs(log_path: Path) -> int | None:
    """The inputs the harness ran, from its statistics in the run's log (libFuzzer's own
    count is of its last progress line when it is stopped)."""
    counts = [int(m[1]) for line in log_path.read_text(errors="replace").splitlines()
              if (m := HARNESS_INPUTS.match(line))]
    return counts[-1] if counts else None


def last_output_line(log_path: Path) -> str:
    """The last line a run printed (a start-up death's exception), without its time."""
    lines = [line for line in log_path.read_text(errors="replace").splitlines()[1:] if line.strip()]
    return lines[-1].split(None, 1)[-1][:300] if lines else ""


def run_copy(name: str, changed: dict[str, str], snapshot: Snapshot, reference_root: Path, seconds: float,
             work_dir: Path, keep_copy: bool = False, fake: bool = False,
             startup_limit: float = STARTUP_LIMIT_S) -> Outcome:
    """One fuzz run (``fake``: FAKE_RUN) of a scratch copy of the snapshot with ``changed``
    files, for ``seconds`` from libFuzzer's start; its output is kept in ``run.log``."""
    directory = work_dir / name
    shutil.rmtree(directory, ignore_errors=True)
    copy = directory / "repo"
    snapshot.extract(copy, changed)
    (directory / "corpus").mkdir()
    (directory / "artifacts").mkdir()
    command = fake_command(directory, changed) if fake else fuzz_command(copy, directory)
    started = time.time()
    process = bench_find.launch(command, copy, copy, reference_root)
    stopped = threading.Event()
    fuzzing_since: list[float] = []

    def stop() -> None:
        stopped.set()
        bench_find.stop(process)
    timers = [threading.Timer(startup_limit, stop)]

    def on_start() -> None:
        fuzzing_since.append(time.time())
        timers[0].cancel()
        timers.append(threading.Timer(seconds, stop))
        timers[-1].daemon = True
        timers[-1].start()
    timers[0].daemon = True
    timers[0].start()
    startup, inputs = bench_find.follow(process, started, command, directory / "run.log", on_start)
    inputs = harness_inputs(directory / "run.log") or inputs
    cpu_seconds = bench_find.reap(process)
    for timer in timers:
        timer.cancel()
    ended = time.time()
    outcome = Outcome(SURVIVED, wall_seconds=round(ended - started, 3), startup_seconds=startup, inputs=inputs,
                      cpu_seconds=cpu_seconds, exit_code=process.returncode,
                      directory=str(directory))
    finding = bench_find.first_finding(directory / "artifacts")
    if not fuzzing_since:
        outcome.verdict = STARTUP
        outcome.why = (f"libFuzzer had not started after {startup_limit:g} s" if stopped.is_set()
                       else last_output_line(directory / "run.log"))
    elif finding is not None and finding[0] - fuzzing_since[0] <= seconds:
        outcome.verdict = KILLED
        outcome.seconds = round(max(0.0, finding[0] - fuzzing_since[0]), 3)   # (file times are coarser)
        outcome.wall_seconds = round(finding[0] - started, 3)
        outcome.rule = finding[1]
        outcome.finding = first_log_line(directory / "artifacts")
    elif not stopped.is_set() and process.returncode != 0:
        # Died while fuzzing with nothing saved (killed by the system, say): no survivor.
        outcome.verdict = KILLED
        outcome.seconds = round(ended - fuzzing_since[0], 3)
        outcome.rule = f"died (exit {process.returncode})"
        outcome.finding = last_output_line(directory / "run.log")
    if not keep_copy:
        shutil.rmtree(copy, ignore_errors=True)
    return outcome


def run_all(chosen: list[tuple[Mutant, str]], snapshot: Snapshot, reference_root: Path, seconds: float, jobs: int,
            work_dir: Path, keep_copies: bool = False, fake: bool = False, on_run=None) -> list[tuple[Mutant, Outcome]]:
    """Every mutant in a scratch copy of its own, ``jobs`` runs at a time; ``on_run`` is
    called with each as it ends (and the results so far)."""
    def one(mutant: Mutant, code: str) -> tuple[Mutant, Outcome]:
        directory = work_dir / "mutants"
        outcome = run_copy(mutant.id, {mutant.path: code}, snapshot, reference_root, seconds, directory,
                           keep_copies, fake)
        (directory / mutant.id / "mutant.diff").write_text(mutant.diff)
        return mutant, outcome
    return bench_find.in_parallel([lambda task=task: one(*task) for task in chosen], jobs,
                                  on_run and (lambda result, results: on_run(*result, results, len(chosen))))


# --- the report -------------------------------------------------------------------------------

def load_classified(path: Path) -> dict[str, dict]:
    """The classification of survivors by mutant id (an absent file classifies none)."""
    if not path.exists():
        return {}
    classified = json.loads(path.read_text())
    wrong = {mutant: entry for mutant, entry in classified.items()
             if not isinstance(entry, dict) or entry.get("class") not in CLASSES}
    if wrong:
        raise SystemExit(f"{path}: each entry must be {{\"class\": one of {', '.join(CLASSES)}, \"why\": ...}}; "
                         f"not so: {', '.join(wrong)}")
    return classified


def classify(result: dict, classified: dict[str, dict]) -> str | None:
    """A survivor's class (None for a mutant that was killed)."""
    if result["verdict"] != SURVIVED:
        return None
    return classified.get(result["id"], {}).get("class", UNCLASSIFIED)


def wilson(killed: int, total: int) -> tuple[float, float] | None:
    """The 95 % Wilson interval of a share ``killed`` of ``total``."""
    if total == 0:
        return None
    p = killed / total
    centre = (p + Z_95 ** 2 / (2 * total)) / (1 + Z_95 ** 2 / total)
    half = Z_95 * math.sqrt(p * (1 - p) / total + Z_95 ** 2 / (4 * total ** 2)) / (1 + Z_95 ** 2 / total)
    return round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)


@dataclass
class AreaSummary:
    area: str
    mutants: int
    killed: int
    killed_by_startup: int
    survived: int
    equivalent: int
    unreachable: int
    missing_oracle: int
    rare: int
    unclassified: int
    scored: int                  # non-equivalent mutants that reached the fuzzer
    score: float | None          # killed / scored
    interval: tuple[float, float] | None
    target: float
    met: bool | None
    median_seconds_to_kill: float | None


def summarise(results: list[dict]) -> list[AreaSummary]:
    """Per area (each result carrying its ``class``), the counts and the score."""
    summaries = []
    for area in AREAS:
        of = [r for r in results if r["area"] == area]
        count = {verdict: sum(r["verdict"] == verdict for r in of) for verdict in (KILLED, STARTUP, SURVIVED)}
        classes = {c: sum(r["class"] == c for r in of) for c in (*CLASSES, UNCLASSIFIED)}
        scored = count[KILLED] + count[SURVIVED] - classes[EQUIVALENT]
        score = count[KILLED] / scored if scored else None
        times = sorted(r["seconds"] for r in of if r["verdict"] == KILLED)
        summaries.append(AreaSummary(
            area, len(of), count[KILLED], count[STARTUP], count[SURVIVED], classes[EQUIVALENT],
            classes["unreachable"], classes["missing-oracle"], classes["rare"], classes[UNCLASSIFIED], scored,
            None if score is None else round(score, 4), wilson(count[KILLED], scored), TARGETS[area],
            None if score is None else score >= TARGETS[area],
            times[len(times) // 2] if times else None))
    return summaries


def with_classes(report: dict, classified: dict[str, dict]) -> dict:
    """The report with each mutant's class and the summaries, as written to report.json."""
    results = [dict(r, **{"class": classify(r, classified),
                          "why_class": classified.get(r["id"], {}).get("why") if r["verdict"] == SURVIVED else None})
               for r in report["mutants"]]
    return dict(report, mutants=results, summaries=[asdict(s) for s in summarise(results)],
                stale_classes=sorted(i for i in classified if any(r["id"] == i and r["verdict"] != SURVIVED
                                                                   for r in results)))


def percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f} %"


def met_text(met: bool | None) -> str:
    return {True: "met", False: "**not met**", None: "unknown (nothing scored)"}[met]


def target_lines(report: dict) -> list[str]:
    return [f"{s['area']}: {s['killed']} of {s['scored']} non-equivalent mutants killed "
            f"({percent(s['score'])}); target >= {percent(s['target'])}: {met_text(s['met'])}"
            for s in report["summaries"]]


def settings_lines(report: dict) -> list[str]:
    s, m = report["settings"], report["machine"]
    control = report.get("control")
    lines = [f"Commit {s['commit'][:12]} (`--rev {s['rev']}`), started {report['started']}.",
             bench_find.machine_text(m),
             f"Settings: {s['mutants']} mutants (--seed {s['seed']}), cosmic-ray {s['cosmic_ray']}; each fuzzed for "
             f"at most {s['seconds']:g} s from libFuzzer's start (start-up not counted), {s['jobs']} at once, "
             f"against the unmutated driver as reference, relations on. Operations files drawn: "
             f"{', '.join(Path(f).name for f in report['population'][OPERATIONS]['files'])}."]
    if control is None:
        lines.append("No control run (`--no-control`).")
    elif control["verdict"] == SURVIVED:
        lines.append(f"Control: the unmutated copy found nothing in {s['seconds']:g} s "
                     f"({control['inputs']} inputs, start-up {control['startup_seconds']} s).")
    else:
        lines.append(f"**Control: the unmutated copy itself {control['verdict']} ({control['rule'] or control['why']}): "
                     f"kills may not be the mutants' doing.**")
    return lines


SUMMARY_COLUMNS = ["area", "mutants (of)", "killed", "killed by start-up", "survived", "equivalent", "unreachable",
                   "missing oracle", "rare", "unclassified", "score", "95 % interval", "target", "met",
                   "median s to kill"]


def summary_row(s: dict, population: dict) -> list[str]:
    interval = s["interval"]
    of = population[s["area"]]["mutants"]
    return [s["area"], f"{s['mutants']} ({'-' if of is None else f'{of:,}'})", str(s["killed"]),
            str(s["killed_by_startup"]), str(s["survived"]), str(s["equivalent"]), str(s["unreachable"]),
            str(s["missing_oracle"]), str(s["rare"]), str(s["unclassified"]), percent(s["score"]),
            "-" if interval is None else f"{percent(interval[0])}-{percent(interval[1])}",
            f">= {percent(s['target'])}", met_text(s["met"]),
            bench_find.seconds_text(s["median_seconds_to_kill"])]


def where(r: dict) -> str:
    return f"`{r['path']}:{r['line']}`"


def markdown(report: dict) -> str:
    results = report["mutants"]
    out = ["# Mutation score of the harness", "", *settings_lines(report), "",
           "The score is the share of an area's mutants the fuzzer killed, leaving out the equivalent "
           "ones and those killed by start-up; mutants (of): sampled (of all in the area's files).", ""]
    out += markdown_table(SUMMARY_COLUMNS, [summary_row(s, report["population"]) for s in report["summaries"]])
    out += ["## Targets", "", *(f"- {line}" for line in target_lines(report)), ""]
    killed = [r for r in results if r["verdict"] == KILLED]
    out += ["## Killed", "", "Time to kill: seconds from libFuzzer's start (wall: from launch).", ""]
    out += markdown_table(["mutant", "area", "where", "operator", "s to kill", "wall s", "inputs", "rule"],
                          [[r["id"], r["area"], where(r), r["operator"], f"{r['seconds']:.1f}",
                            f"{r['wall_seconds']:.1f}", "-" if r["inputs"] is None else f"{r['inputs']:,}",
                            r["rule"] or "-"] for r in killed])
    startup = [r for r in results if r["verdict"] == STARTUP]
    if startup:
        out += ["## Killed by start-up", ""]
        out += markdown_table(["mutant", "area", "where", "operator", "died of"],
                              [[r["id"], r["area"], where(r), r["operator"], f"`{r['why']}`"] for r in startup])
    out += ["## Survivors", "", f"Classified in `{report['settings']['classified']}` (by mutant id).", ""]
    for r in (r for r in results if r["verdict"] == SURVIVED):
        out += [f"### {r['id']}: {r['class']}", "",
                f"{r['area']}, {where(r)}, {r['operator']}, {r['inputs'] or 0:,} inputs."
                + (f" {r['why_class']}" if r["why_class"] else ""), "", "```diff", r["diff"].rstrip("\n"), "```", ""]
    if report["stale_classes"]:
        out += ["Classified but killed in this run: " + ", ".join(report["stale_classes"]) + ".", ""]
    return "\n".join(out)


def write_report(report: dict, out_dir: Path, classified: dict[str, dict]) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    full = with_classes(report, classified)
    (out_dir / "report.json").write_text(json.dumps(full, indent=1) + "\n")
    (out_dir / "report.md").write_text(markdown(full))
    return full


def new_report(snapshot: Snapshot, rev: str, args: argparse.Namespace, population: dict) -> dict:
    return {
        "settings": {"rev": rev, "commit": snapshot.commit, "mutants": args.mutants, "seed": args.seed,
                     "seconds": args.seconds, "jobs": args.jobs, "operation_files": args.operation_files,
                     "classified": str(args.classified.relative_to(REPO_ROOT) if args.classified.is_relative_to(REPO_ROOT)
                                       else args.classified),
                     "cosmic_ray": bench_find.version_of("cosmic-ray"), "fake_kill": args.fake_kill},
        "machine": bench_find.machine(),
        "started": bench_find.utc_now(),
        "population": population, "control": None, "mutants": [],
    }


# --- the command ------------------------------------------------------------------------------

def only(chosen: list, ids: list[str]) -> list:
    """The mutants of the sample ``chosen`` with these ids."""
    unknown = set(ids) - {mutant.id for mutant, _ in chosen}
    if unknown:
        raise SystemExit(f"no mutant {', '.join(sorted(unknown))} in the sample (same -n, --seed, --rev?)")
    return [(mutant, text) for mutant, text in chosen if mutant.id in ids]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--mutants", type=int, default=100, help="mutants, split evenly between the areas")
    parser.add_argument("-t", "--seconds", type=float, default=60.0,
                        help="fuzzing time of each mutant, from libFuzzer's start")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="runs at once")
    parser.add_argument("--seed", type=int, default=0, help="of the draw of operations files and of the sample")
    parser.add_argument("--operation-files", type=int, default=8, help="modules of driver/operations/ drawn")
    parser.add_argument("--rev", default="HEAD", help="the commit whose driver is mutated (and is the reference)")
    parser.add_argument("--classified", type=Path, default=CLASSIFIED, help="the classes of survivors, by mutant id")
    parser.add_argument("--only", help="comma-separated mutant ids: run only these of the sample (a survivor "
                                       "again, for longer)")
    parser.add_argument("--no-control", action="store_true", help="no run of the unmutated copy first")
    parser.add_argument("--keep-copies", action="store_true", help="keep each mutant's scratch copy")
    parser.add_argument("--fake-kill", action="store_true",
                        help="no fuzzing: a run imports the mutated module and reports a finding (a check of "
                             "the benchmark itself: exit 1 if any mutant survives)")
    parser.add_argument("--work-dir", type=Path, default=REPO_ROOT / "fuzz-work" / "bench-mutants")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "reports" / "bench-mutants")
    parser.add_argument("--from-json", type=Path, metavar="REPORT.json",
                        help="write an earlier report again, with the classification as it is now; no fuzzing")
    args = parser.parse_args(argv)
    args.classified = args.classified.resolve()
    classified = load_classified(args.classified)

    if args.from_json:
        report = json.loads(args.from_json.read_text())
    else:
        snapshot = Snapshot.at(args.rev)
        chosen, population = sample(snapshot, args.mutants, args.seed, args.operation_files)
        if args.only:
            chosen = only(chosen, args.only.split(","))
        report = new_report(snapshot, args.rev, args, population)
        print(f"{len(chosen)} mutants of {snapshot.commit[:12]}: "
              + ", ".join(f"{area} {sum(m.area == area for m, _ in chosen)} of {population[area]['mutants'] or 0:,}"
                          for area in AREAS), flush=True)
        reference_root = pristine.pristine_root(snapshot.commit)
        if not args.no_control:
            control = run_copy("control", {}, snapshot, reference_root, args.seconds, args.work_dir, args.keep_copies,
                               args.fake_kill)
            report["control"] = asdict(control)
            print(f"control: {control.verdict}" + (f" ({control.rule or control.why})" if control.verdict != SURVIVED
                                                   else ""), flush=True)

        def on_run(mutant: Mutant, outcome: Outcome, results: list, total: int) -> None:
            what = (f"killed in {outcome.seconds:.1f} s ({outcome.inputs} inputs), {outcome.rule}"
                    if outcome.verdict == KILLED else
                    f"killed by start-up: {outcome.why}" if outcome.verdict == STARTUP else
                    f"survived {outcome.inputs} inputs")
            print(f"[{len(results)}/{total}] {mutant.id} {mutant.area} {mutant.path}:{mutant.line} "
                  f"{mutant.operator}: {what}", flush=True)
            report["mutants"] = [dict(asdict(m), **asdict(o)) for m, o in results]
            write_report(report, args.out, classified)      # what is done so far, kept
        run_all(chosen, snapshot, reference_root, args.seconds, args.jobs, args.work_dir, args.keep_copies,
                args.fake_kill, on_run)
        report["machine"]["load_average_end"] = list(os.getloadavg())
    full = write_report(report, args.out, classified)
    print("\n".join(["", "Targets:", *target_lines(full), "",
                     f"Report: {args.out / 'report.md'}, {args.out / 'report.json'}"]))
    lost = [r["id"] for r in full["mutants"] if r["verdict"] == SURVIVED]
    if full["settings"]["fake_kill"] and lost:
        print(f"\nfake kill: these mutants import, yet their finding was not seen: {', '.join(lost)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
