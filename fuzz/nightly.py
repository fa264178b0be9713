"""The nightly fuzz job, run the same way on a laptop and in CI (.github/workflows/fuzz.yml).

    nnhal-nightly [--minutes M | --seconds S] [--driver MODULE:FACTORY]
                  [--reference MODULE:FACTORY|none] [--jobs N]
                  [--seeds DIR] [--work DIR] [--out DIR] [--timeout S] [--rss-limit-mb MB]

1. fuzz on N processes (libFuzzer's -fork=N, default: every CPU) from the seeds (corpus/)
   plus the persisted working corpus (--work), with a per-input timeout and an RSS limit;
   failures do not stop the run;
2. triage the findings with fuzz/triage.py's functions: reproduce each (smallest first,
   taking turns between the failures findings.log names) and put it in its bucket
   (triage.bucket_key, the signature); a bucket with an open reproducer in crashes/ is
   known. Of each other bucket, minimise the smallest few findings, store the one that
   minimised best in OUT/findings/ laid out like crashes/
   (reproducer, .json sidecar, and a readable .md of the case; a Graphviz .dot, and a
   .png where `dot` is installed, in OUT/findings/graphs/), and count the rest;
3. merge (-merge=1) the working corpus with the seeds and keep, of the result, the inputs
   that are not seeds, at most --max-corpus of them (the smallest): it only grows by
   inputs that add coverage;
4. replay the seeds and the merged working corpus under coverage.py: HTML report of
   driver/ and fuzz/ in OUT/coverage/;
5. write OUT/summary.md (Markdown, for $GITHUB_STEP_SUMMARY). For a LiteRT driver, each new
   finding also gets its standalone reproducer (OUT/findings/litert/<digest>/, its sidecar
   marked upstream: fuzz/litert_repro.py), and the night's LiteRT buckets their report,
   OUT/litert/findings.md and .html (fuzz/litert_report.py), linked from the summary.

--minutes (or --seconds) is the time of the whole job, shared out by Budget: fuzzing gets
what the other phases' shares leave; each phase stops at its end and the summary says what
it left undone (findings not reproduced, buckets not minimised: their raw artifacts stay in
OUT/artifacts/; the corpus not merged; coverage not measured). The job ends at most
MARGIN_S after its time.

Exit status: 0 when there is no new finding, 1 when there is, 2 when the job could not run.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Iterator

from fuzz import codec, harness, litert_report, litert_repro, oracles, show_case, triage
from fuzz.driver_fuzz import STATS_DIR_ENV, findings_log
from fuzz.drivers import DRIVER_ENV, REFERENCE_ENV, configured_reference, configured_spec, make_device
from fuzz.memory_limit import memory_budget

REPO_ROOT = Path(__file__).resolve().parent.parent
KNOWN = REPO_ROOT / "crashes"
FUZZ_ENTRY = REPO_ROOT / "fuzz" / "driver_fuzz.py"
DEFAULT_MINUTES = 60.0
#: libFuzzer's -timeout of an input, s: a driver hanging while it holds the GIL (where the
#: harness's own watchdog cannot run) is stopped there. fuzz/bench_mutants.py runs with it.
DEFAULT_TIMEOUT_S = 30
DEFAULT_RSS_LIMIT_MB = 2048
#: Bound of the persisted working corpus (inputs); the smallest are kept.
DEFAULT_MAX_CORPUS = 5000
#: Shares of the job's time (--minutes) by phase; fuzzing gets the rest. Triage's share
#: bounds minimisation. Merge and coverage take about as long whatever was found, and a
#: start-up's worth at least: each gets at least MIN_WRAP_UP_S, but never over a quarter.
TRIAGE_SHARE = 0.15
MERGE_SHARE = 0.05
COVERAGE_SHARE = 0.05
MIN_WRAP_UP_S = 30.0
#: How long past its time the job may end: the readable cases, the coverage report's HTML
#: and the summary are written after the phases' ends, and stopped processes take a moment.
MARGIN_S = 30
#: libFuzzer is told to stop this share of the fuzzing time early (at most WIND_DOWN_S):
#: in -fork mode it then waits for its running jobs; at the phase's end they are killed.
WIND_DOWN_SHARE = 0.2
WIND_DOWN_S = 60
#: Of the triage time, the share that reproducing the findings (to bucket them) may take.
REPRODUCTION_SHARE = 0.5
#: A bucket is minimised only when at least this much of the triage time is left for it;
#: each of its few smallest findings minimised gets at least as much.
MIN_MINIMISATION_S = 5.0
#: libFuzzer's minimiser starts a process per step: with less time it may make none.
MIN_LIBFUZZER_S = 10
#: How long past the triage phase's end the standalone reproducers of LiteRT's new findings
#: may take (from the merge's share): each runs the case on LiteRT and the reference.
LITERT_REPRODUCERS_S = 60.0
#: The packages the coverage report covers.
COVERED = ("driver", "fuzz")
#: libFuzzer's progress line, in -fork mode (exec/s without a colon) and out of it.
PROGRESS = re.compile(r"^#(\d+):? .*?cov: (\d+) ft: (\d+) corp: (\d+).*?exec/s:? (\d+)(?:.*?time: (\d+)s)?")


def log(line: str) -> None:
    print(line, flush=True)


def sha1(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def inputs_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")) if folder.is_dir() else []


def child_env(spec: str, **extra: str) -> dict[str, str]:
    """This checkout first on the path (not an installed copy), and the driver chosen."""
    path = os.pathsep.join(filter(None, (str(REPO_ROOT), os.environ.get("PYTHONPATH"))))
    return dict(os.environ, PYTHONPATH=path, **{DRIVER_ENV: spec}, **extra)


def run_logged(command: list[str], env: dict[str, str], log_path: Path, limit_s: float,
               echo: re.Pattern | None = None) -> int:
    """Run ``command`` with its output in ``log_path`` (lines matching ``echo`` shown as
    they come); stopped with its children after ``limit_s``."""
    with open(log_path, "a") as out:
        process = subprocess.Popen(command, env=env, cwd=REPO_ROOT, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, errors="replace",
                                   start_new_session=True)
        stopper = threading.Timer(limit_s, os.killpg, (process.pid, signal.SIGKILL))
        stopper.start()
        try:
            for line in process.stdout:
                out.write(line)
                if echo is not None and echo.match(line):
                    log(line.rstrip())
            return process.wait()
        finally:
            stopper.cancel()


# --- the budget -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Budget:
    """When each phase of the job ends, in time.monotonic() seconds. A phase stops at its end
    and reports what it left undone; one that ends early leaves its time to the next."""
    fuzz: float
    triage: float
    merge: float
    coverage: float

    @classmethod
    def plan(cls, total_s: float, start: float) -> Budget:
        """A job of ``total_s`` seconds from ``start``: the phases after fuzzing get their
        shares of it, counted back from its end."""
        coverage = start + total_s
        merge = coverage - wrap_up_s(COVERAGE_SHARE, total_s)
        triage = merge - wrap_up_s(MERGE_SHARE, total_s)
        return cls(triage - TRIAGE_SHARE * total_s, triage, merge, coverage)


def wrap_up_s(share: float, total_s: float) -> float:
    return min(max(share * total_s, MIN_WRAP_UP_S), total_s / 4)


def left_s(end: float) -> float:
    """Seconds until ``end`` (time.monotonic()), none once it has passed."""
    return max(0.0, end - time.monotonic())


def fuzzing_seconds(phase_s: float) -> int:
    """libFuzzer's -max_total_time in a fuzzing phase of ``phase_s``: its wind-down fits."""
    return max(1, round(phase_s - min(WIND_DOWN_S, WIND_DOWN_SHARE * phase_s)))


# --- 1. fuzzing -----------------------------------------------------------------------------------

@dataclass
class Progress:
    """libFuzzer's last progress line."""
    executions: int = 0
    coverage: int = 0
    features: int = 0
    corpus: int = 0
    exec_per_s: int = 0
    seconds: int = 0


def last_progress(log_text: str) -> Progress:
    matches = [match for match in map(PROGRESS.match, log_text.splitlines()) if match]
    return Progress(*(int(group or 0) for group in matches[-1].groups())) if matches else Progress()


def harness_summary(stats_dir: Path) -> str:
    """The harness statistics line, added up over every process that ran inputs, and the
    line of the engine's counts (a LiteRT driver's, say) if it keeps any."""
    total, engine = harness.HarnessStats(), Counter()
    for path in stats_dir.glob("*.json"):
        counts = json.loads(path.read_text())
        for field in fields(total):
            setattr(total, field.name, getattr(total, field.name) + counts.get(field.name, 0))
        engine.update(counts.get("engine", {}))
    return "\n".join(line for line in (total.summary(), oracles.engine_summary(engine)) if line)


def fuzz(args, spec: str, seconds: int, limit_s: float, artifacts: Path, stats_dir: Path,
         log_path: Path) -> int:
    """Fuzz for ``seconds``; libFuzzer and its jobs are stopped after ``limit_s``."""
    command = [sys.executable, str(FUZZ_ENTRY), str(args.work), str(args.seeds),
               f"-fork={args.jobs}", f"-max_total_time={seconds}", f"-timeout={args.timeout}",
               f"-rss_limit_mb={args.rss_limit_mb}", f"-artifact_prefix={artifacts}/",
               "-ignore_crashes=1", "-ignore_timeouts=1", "-ignore_ooms=1", "-print_final_stats=1"]
    log(f"fuzzing {seconds} s on {args.jobs} processes: {' '.join(command[1:])}")
    echo = re.compile(r"^(#\d+|==\d+== ERROR|INFO: -fork)")
    return run_logged(command, child_env(spec, **{STATS_DIR_ENV: str(stats_dir)}), log_path,
                      limit_s, echo)


# --- 2. findings ----------------------------------------------------------------------------------

@dataclass
class Finding:
    artifact: str
    #: new, duplicate (of another of its bucket, or of a new one), known (open in crashes/),
    #: recurred (fixed there), unminimised (a new bucket left for lack of time), not
    #: reproduced, not triaged (for lack of time)
    status: str
    failure: triage.Failure | None = None
    stored: Path | None = None
    #: The digest of the bucket it was put in when reproduced ("" if it was not).
    bucket: str = ""


def write_readable_case(path: Path) -> None:
    """The case as text beside the reproducer, its graph in graphs/ (a picture where
    Graphviz is installed): the replay test skips .md files and subfolders."""
    data = path.read_bytes()
    case = codec.decode(data)
    text = show_case.describe(case, codec.parse(data))
    path.with_suffix(".md").write_text(f"# {path.name} ({len(data)} bytes)\n\n```\n{text}\n```\n")
    graphs = path.parent / "graphs"
    graphs.mkdir(exist_ok=True)
    dot_path = graphs / f"{path.name}.dot"
    dot_path.write_text(show_case.to_dot(case, path.name))
    if shutil.which("dot"):
        show_case.render_png(dot_path)


#: The statuses of findings that need a look: the reproducers of new and recurred ones
#: are in findings/, an unminimised one is its raw artifact.
NEWS = ("new", "recurred", "unminimised")


def reproducers_of(known: Path, digest: str) -> list[Path]:
    """The reproducers in ``known`` (crashes/) of one signature: ``<digest>``, and
    ``<digest>-<n>`` for later bugs that failed the same way."""
    return sorted(path for path in known.glob(f"{digest}*") if not path.suffix)


def is_open(reproducer: Path) -> bool:
    """Whether ``reproducer`` stands for a bug not fixed yet (its sidecar says so)."""
    sidecar = reproducer.with_suffix(".json")
    return not sidecar.exists() or json.loads(sidecar.read_text()).get("status") != "fixed"


def open_reproducer(known: Path, failure: triage.Failure) -> Path | None:
    """An open reproducer of ``failure``'s signature in ``known`` (crashes/), if any."""
    return next((p for p in reproducers_of(known, failure.digest) if is_open(p)), None)


#: How many of one bug's artifacts (the smallest) are minimised, to keep the best. One for a
#: hang or an out-of-memory: each of their attempts may take a timeout or a worker restart.
MINIMISED_PER_BUG = 3


def minimised_per_bug(failure: triage.Failure) -> int:
    return MINIMISED_PER_BUG if failure.kind in ("crash", "assertion") else 1


def recorded_failures(folders: set[Path]) -> dict[str, str]:
    """The exception type the harness recorded for each input it saw fail, by the hash
    artifacts are named with (findings.log, beside them)."""
    recorded = {}
    for folder in folders:
        log_path = findings_log(["", f"-artifact_prefix={folder}/"])
        if log_path is not None and log_path.exists():
            for line in log_path.read_text(errors="replace").splitlines():
                digest, _, failure = line.partition("  ")
                recorded[digest] = failure.partition(":")[0]
    return recorded


def reproduction_order(artifacts: list[Path]) -> list[Path]:
    """Smallest first, taking turns between the failures findings.log names (a timeout or
    an out-of-memory only libFuzzer saw goes by its prefix): when the time to reproduce
    them runs out, a failure found thousands of times has not kept a rarer one out of the
    buckets."""
    recorded = recorded_failures({artifact.parent for artifact in artifacts})
    groups: dict[str, list[Path]] = {}
    for artifact in sorted(artifacts, key=lambda p: p.stat().st_size):
        prefix, _, digest = artifact.name.partition("-")
        groups.setdefault(recorded.get(digest, prefix), []).append(artifact)
    turns = itertools.zip_longest(*groups.values())
    return [artifact for turn in turns for artifact in turn if artifact is not None]


@contextlib.contextmanager
def localiser(spec: str) -> Iterator[triage.Localise | None]:
    """For a LiteRT driver compared with a reference, triage's localiser (a crash or a status
    disagreement of LiteRT bucketed by its operation, as crashes/ names them), its devices
    closed after; None for another driver, whose device is not made here."""
    reference_spec = configured_reference(spec)
    if reference_spec is None or not litert_repro.is_litert_spec(spec):
        yield None
        return
    driver = make_device(spec)
    try:
        yield triage.litert_localiser(driver, make_device(reference_spec))
    finally:
        driver.engine.close()


def triage_findings(artifacts: list[Path], spec: str, findings: Path, args, known: Path = KNOWN,
                    deadline: float | None = None) -> list[Finding]:
    """Reproduce each artifact (reproduction_order) into its bucket (triage.bucket_key; for a
    LiteRT driver, as triage's localiser buckets it: ``localiser``); minimise and store in
    ``findings`` one per bucket, unless ``known`` holds an open reproducer of it. A bucket whose reproducers there are all fixed has come back (the fix came undone,
    or another bug fails the same way): it is stored beside them as ``<digest>-<n>``,
    status recurred.

    By ``deadline`` (time.monotonic()) it is done: reproducing may take REPRODUCTION_SHARE
    of the time (findings left then are not triaged), the buckets share the rest (one
    left less than MIN_MINIMISATION_S is unminimised); the raw artifacts stay."""
    workdir = Path(tempfile.mkdtemp(prefix="nightly-triage-"))
    reproduced_by = time.monotonic() + REPRODUCTION_SHARE * left_s(deadline) if deadline is not None else None
    worker = triage.Worker(spec, args.rss_limit_mb, deadline=reproduced_by)
    results: list[Finding] = []
    seen: set[str] = set()
    try:
        with localiser(spec) as localise:
            bugs: dict[str, list[tuple[Path, triage.Failure]]] = {}
            for artifact in reproduction_order(artifacts):
                try:
                    failure = worker.reproduce(artifact.read_bytes())
                except triage.OutOfTime:
                    results.append(Finding(artifact.name, "not triaged"))
                    continue
                if failure is not None and localise is not None:
                    failure = localise(artifact.read_bytes(), failure)
                if failure is None:
                    results.append(Finding(artifact.name, "not reproduced"))
                elif (reproducer := open_reproducer(known, failure)) is not None:
                    results.append(Finding(artifact.name, "known", failure, reproducer, failure.digest))
                else:
                    bugs.setdefault(failure.digest, []).append((artifact, failure))
            for same_bug in bugs.values():
                same_bug.sort(key=lambda found: found[0].stat().st_size)
            worker.deadline = deadline
            # The most frequent first, a hang or an out-of-memory (costlier to minimise) last.
            ordered = sorted(bugs.items(), key=lambda bug: (minimised_per_bug(bug[1][0][1]) == 1, -len(bug[1])))
            for position, (bucket, same_bug) in enumerate(ordered):
                time_s = left_s(deadline) / (len(ordered) - position) if deadline is not None else None
                results += minimise_bucket(bucket, same_bug, time_s, worker, spec, findings, known, seen,
                                           workdir, args, localise)
    finally:
        worker.close()
        shutil.rmtree(workdir, ignore_errors=True)
    for stored in {f.stored for f in results if f.status in NEWS and f.stored is not None}:
        write_readable_case(stored)
    return results


def minimise_bucket(bucket: str, same_bug: list[tuple[Path, triage.Failure]], time_s: float | None,
                    worker: triage.Worker, spec: str, findings: Path, known: Path, seen: set[str],
                    workdir: Path, args, localise: triage.Localise | None = None) -> list[Finding]:
    """Of one bucket's findings (smallest first), minimise the smallest few within ``time_s``
    (None: the per-finding limits alone), store the one that minimised best and count the
    rest as duplicates. With less than MIN_MINIMISATION_S, or when none is minimised in
    time, the smallest stands for the bucket, unminimised."""
    first = same_bug[0][1]
    count = minimised_per_bug(first)
    structural_s = args.minimise_seconds
    libfuzzer_s = args.libfuzzer_seconds if first.kind in ("crash", "assertion") else 0
    if time_s is not None:
        # libFuzzer's polish gets at most a third, if that is enough to make a step.
        libfuzzer_s = min(libfuzzer_s, int(time_s / 3))
        libfuzzer_s = libfuzzer_s if libfuzzer_s >= MIN_LIBFUZZER_S else 0
        count = max(0, min(count, int((time_s - libfuzzer_s) // MIN_MINIMISATION_S)))
        structural_s = min(structural_s, (time_s - libfuzzer_s) / max(count, 1))
        if first.kind == "hang":     # minimise_structure gives a hang that many times as long
            structural_s /= triage.HANG_BUDGET_FACTOR
    if count == 0:
        log(f"bucket {bucket}: {len(same_bug)} findings, no time left to minimise them")
    minimised, results = [], []
    for artifact, failure in same_bug[:count]:
        # Of the smallest few, the one that minimises best is kept: one may minimise much
        # further than another (an IF where another has a WHILE).
        try:
            data, result = triage.minimise_structure(artifact, worker, structural_s=structural_s, log=log)
        except triage.OutOfTime:
            results.append(Finding(artifact.name, "duplicate", failure, bucket=bucket))
            continue
        if result.failure is None:
            results.append(Finding(artifact.name, "not reproduced", bucket=bucket))
        else:
            minimised.append((data, result))
    results += [Finding(artifact.name, "duplicate", failure, bucket=bucket)
                for artifact, failure in same_bug[count:]]
    if not minimised:
        artifact, failure = same_bug[0]
        results = [finding for finding in results if finding.artifact != artifact.name]
        return [Finding(artifact.name, "unminimised", failure, bucket=bucket), *results]
    data, best = min(minimised, key=lambda found: triage.preference(found[0]))
    results += [Finding(Path(result.artifact).name, "duplicate", result.failure, bucket=bucket)
                for _, result in minimised if result is not best]
    data = triage.shorten_bytes(data, best, worker, spec, libfuzzer_s=libfuzzer_s, workdir=workdir, log=log)
    if localise is not None:     # minimised, it is bucketed again as crashes/ names it
        best.failure = localise(data, best.failure)
    stored = store_finding(data, best, spec, findings, known, seen, args)
    stored.bucket = bucket
    return [stored, *results]


def store_finding(data: bytes, result: triage.Triaged, spec: str, findings: Path, known: Path,
                  seen: set[str], args) -> Finding:
    """Store one bug's minimised reproducer in ``findings``, unless ``known`` holds an open
    one of its signature (minimisation may have changed the signature) or one was stored
    tonight."""
    failure, source = result.failure, Path(result.artifact).name
    if (reproducer := open_reproducer(known, failure)) is not None:
        return Finding(source, "known", failure, reproducer)
    fixed = reproducers_of(known, failure.digest)
    name = f"{failure.digest}-{len(fixed) + 1}" if fixed else failure.digest
    stored, duplicate = triage.store(data, failure, findings, spec, source,
                                     memory_limit_mb=args.rss_limit_mb, name=name)
    duplicate = duplicate or failure.digest in seen
    seen.add(failure.digest)
    return Finding(source, "duplicate" if duplicate else "recurred" if fixed else "new", failure, Path(stored))


def litert_findings(results: list[Finding], spec: str, out: Path, deadline: float) -> Path | None:
    """For a LiteRT driver: the standalone reproducers of the night's new findings (their
    sidecars marked upstream), written by ``deadline`` (time.monotonic()), and the report of
    the night's LiteRT buckets, OUT/litert/findings.md and .html; its Markdown's path (None
    for another driver, or a night without findings)."""
    if not any(finding.stored is not None for finding in results):
        return None
    reference_spec = configured_reference(spec)
    driver = make_device(spec)
    if reference_spec is None or not litert_repro.is_litert_device(driver):
        return None
    reference = make_device(reference_spec)
    try:
        for finding in results:
            if finding.status not in ("new", "recurred") or finding.stored is None:
                continue
            if left_s(deadline) < 1:
                log(f"no time left for the standalone reproducer of {finding.stored.name}")
                break
            litert_repro.mark_upstream(finding.stored, driver, reference, finding.failure, log)
    finally:
        driver.engine.close()
    buckets = [(standing_for(bucket), len(bucket)) for bucket in buckets_of(results)]
    found = [litert_report.finding_of(standing.stored, count) for standing, count in buckets
             if standing.stored is not None]
    markdown, _ = litert_report.write_report([f for f in found if f is not None], out / "litert",
                                             "LiteRT findings of the night")
    return markdown


# --- 3. corpus merge ------------------------------------------------------------------------------

def merge_corpus(args, spec: str, log_path: Path, end: float) -> tuple[int, int]:
    """Merge the working corpus with the seeds; keep the non-seed part, bounded. Returns
    (inputs before the merge, after). A merge not done by ``end`` (time.monotonic()) leaves
    the corpus as it was."""
    before = len(inputs_in(args.work))
    if left_s(end) < 1:
        log("no time left to merge: the working corpus is kept as it was")
        return before, before
    with tempfile.TemporaryDirectory(prefix="nightly-merge-") as scratch:
        merged, artifacts = Path(scratch, "merged"), Path(scratch, "artifacts")
        merged.mkdir()
        artifacts.mkdir()
        command = [sys.executable, str(FUZZ_ENTRY), str(merged), str(args.seeds), str(args.work), "-merge=1",
                   f"-timeout={args.timeout}", f"-rss_limit_mb={args.rss_limit_mb}",
                   f"-artifact_prefix={artifacts}/"]
        log("merging the working corpus")
        status = run_logged(command, child_env(spec), log_path, left_s(end))
        if status != 0:
            log(f"merge failed or did not end in time (exit {status}): the working corpus is kept as it was")
            return before, before
        seeds = {sha1(p.read_bytes()) for p in inputs_in(args.seeds)}
        kept = [p for p in inputs_in(merged) if sha1(p.read_bytes()) not in seeds]
        kept = sorted(kept, key=lambda p: (p.stat().st_size, p.name))[:args.max_corpus]
        shutil.rmtree(args.work)
        args.work.mkdir(parents=True)
        for path in kept:
            shutil.move(path, args.work / path.name)
    return before, len(kept)


# --- 4. coverage ----------------------------------------------------------------------------------

def replay(folders: list[Path], memory_limit_mb: int) -> None:
    """Run every input of ``folders`` once through the harness (under coverage.py)."""
    device = make_device()
    failing = 0
    for path in (p for folder in folders for p in inputs_in(folder)):
        try:
            with memory_budget(memory_limit_mb):
                harness.run_one(path.read_bytes(), device)
        except Exception:           # a failing input still counts for coverage
            failing += 1
    print(harness.STATS.summary(), f"({failing} failing)", file=sys.stderr)


def coverage_report(args, spec: str, report: Path, log_path: Path, end: float) -> dict[str, float]:
    """HTML report in ``report``; percent of lines covered per package and in total (none
    when the replay and the report are not done by ``end``, time.monotonic())."""
    data_file = report.parent / ".coverage"
    sources = ",".join(str(REPO_ROOT / name) for name in COVERED)
    env = child_env(spec)
    coverage = [sys.executable, "-m", "coverage"]
    json_path = report / "coverage.json"
    steps = {
        "replaying the merged corpus under coverage.py":
            [*coverage, "run", f"--data-file={data_file}", f"--source={sources}", "-m", "fuzz.nightly",
             "--replay", str(args.seeds), str(args.work), f"--rss-limit-mb={args.rss_limit_mb}"],
        "writing the coverage report": [*coverage, "html", f"--data-file={data_file}", "-d", str(report), "--quiet"],
        "reading the coverage figures": [*coverage, "json", f"--data-file={data_file}", "-o", str(json_path), "--quiet"],
    }
    for step, command in steps.items():
        if left_s(end) < 1:
            log(f"no time left for {step}: coverage not measured")
            return {}
        log(step)
        if run_logged(command, env, log_path, left_s(end)) != 0:
            log(f"{step} failed or did not end in time: coverage not measured; see {log_path}")
            return {}
    files = json.loads(json_path.read_text())["files"]
    json_path.unlink()
    data_file.unlink()
    percents = {}
    for name in (*COVERED, "total"):
        chosen = [f["summary"] for path, f in files.items() if name == "total" or path.startswith(name + os.sep)]
        statements = sum(s["num_statements"] for s in chosen)
        percents[name] = 100.0 * sum(s["covered_lines"] for s in chosen) / (statements or 1)
    return percents


# --- 5. summary -----------------------------------------------------------------------------------

#: Which finding of a bucket stands for it in the summary: the first status listed.
STANDING = ("new", "recurred", "unminimised", "known", "duplicate", "not reproduced")


def buckets_of(findings: list[Finding]) -> list[list[Finding]]:
    """The findings reproduced into buckets, by bucket, in the order first met."""
    buckets: dict[str, list[Finding]] = {}
    for finding in findings:
        if finding.bucket:
            buckets.setdefault(finding.bucket, []).append(finding)
    return list(buckets.values())


def standing_for(bucket: list[Finding]) -> Finding:
    return min(bucket, key=lambda finding: STANDING.index(finding.status))


def findings_headline(findings: list[Finding]) -> str:
    """How many findings in how many buckets, and what was left undone for lack of time."""
    standing = [standing_for(bucket) for bucket in buckets_of(findings)]
    known = sum(finding.status == "known" for finding in standing)
    unminimised = sum(finding.status == "unminimised" for finding in standing)
    outside = [finding.status for finding in findings if not finding.bucket]
    return (f"{len(findings)} findings in {len(standing)} buckets: "
            f"{len(standing) - known - unminimised} minimised, {known} known, "
            f"{unminimised} left unminimised; "
            f"{outside.count('not reproduced')} not reproduced, "
            f"{outside.count('not triaged')} not triaged for lack of time.")


def summary_markdown(spec: str, args, seconds: int, progress: Progress, harness_line: str,
                     corpus: tuple[int, int, int], percents: dict[str, float], findings: list[Finding],
                     timing: tuple[int, dict[str, float]], litert: Path | None = None) -> str:
    rate = progress.executions / max(progress.seconds or seconds, 1)
    covered = ", ".join(f"{name}/ {value:.1f} %" for name, value in percents.items() if name != "total")
    line_coverage = f"{percents['total']:.1f} % ({covered})" if percents else "not measured"
    lines = [
        f"## Nightly fuzzing of `{spec}`",
        "",
        "| | |",
        "| --- | --- |",
        f"| time | {seconds} s on {args.jobs} processes (`-fork={args.jobs}`) |",
        f"| job | {timing[0]} s: {', '.join(f'{phase} {taken:.0f} s' for phase, taken in timing[1].items())} |",
        f"| inputs run | {progress.executions:,} ({rate:,.0f} exec/s) |" if progress.executions else
        "| inputs run | not reported (libFuzzer was stopped before its first report) |",
        f"| coverage features | cov {progress.coverage:,}, ft {progress.features:,} |",
        f"| corpus | {len(inputs_in(args.seeds)):,} seeds; working corpus {corpus[0]:,} inputs restored, {corpus[1]:,} after fuzzing, {corpus[2]:,} after merge |",
        f"| line coverage (replay of the merged corpus) | {line_coverage} |",
        "",
        *(f"`{line}`  " for line in harness_line.splitlines()),
        "",
        "### Findings",
        "",
    ]
    if not findings:
        lines.append("None.")
    else:
        lines += [findings_headline(findings), "",
                  "| reproducer | status | findings | kind | signature | message |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for bucket in buckets_of(findings):
            finding = standing_for(bucket)
            failure = finding.failure
            name = finding.stored.name if finding.stored else f"artifacts/{finding.artifact}"
            message = (failure.message.splitlines() or [""])[0][:160] if failure else ""
            cells = [f"`{name}`", finding.status, str(len(bucket)), failure.kind if failure else "",
                     f"`{failure.signature}`" if failure else "", message.replace("|", "\\|")]
            lines.append("| " + " | ".join(cells) + " |")
        lines += ["", "A new finding's reproducer, sidecar and readable case are in `findings/`: "
                      "copy them into `crashes/` and the test suite replays them. Every raw "
                      "finding is in `artifacts/`: an unminimised one may be minimised with "
                      "`scripts/triage.py`."]
    if litert is not None:
        lines += ["", "LiteRT's findings, by bucket, with their standalone reproducers (in "
                      "`findings/litert/`): [litert/findings.md](litert/findings.md) "
                      f"([HTML](litert/findings.html))."]
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    duration = parser.add_mutually_exclusive_group()
    duration.add_argument("--minutes", type=float,
                          help=f"the whole job's time: fuzzing, triage, merge and report (default "
                               f"{DEFAULT_MINUTES:g}; it may end up to {MARGIN_S} s later)")
    duration.add_argument("--seconds", type=int, help="the whole job's time in seconds")
    parser.add_argument("--driver", default=None, help="MODULE:FACTORY (default: driver:SampleDriver)")
    parser.add_argument("--reference", default=None,
                        help="MODULE:FACTORY or none: the reference driver (default: driver:SampleDriver "
                             "for any other driver)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes (-fork=N; default: CPUs)")
    parser.add_argument("--seeds", type=Path, default=REPO_ROOT / "corpus", help="the seed corpus")
    parser.add_argument("--work", type=Path, default=REPO_ROOT / "fuzz-work" / "nightly-corpus",
                        help="the persisted working corpus")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "reports" / "nightly",
                        help="findings, coverage report, summary.md and logs (emptied first)")
    parser.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_S, help="per-input timeout, s")
    parser.add_argument("--rss-limit-mb", type=int, default=DEFAULT_RSS_LIMIT_MB, help="memory limit per process")
    parser.add_argument("--max-corpus", type=int, default=DEFAULT_MAX_CORPUS, help="bound of the working corpus")
    parser.add_argument("--libfuzzer-seconds", type=int, default=30,
                        help="libFuzzer minimisation per bucket, at most (triage's share of the time bounds it)")
    parser.add_argument("--minimise-seconds", type=float, default=120,
                        help="structural minimisation per finding, at most (as above)")
    parser.add_argument("--replay", nargs="+", type=Path, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.replay:
        replay(args.replay, args.rss_limit_mb)
        return 0
    spec = args.driver or configured_spec()
    if args.reference:
        os.environ[REFERENCE_ENV] = args.reference   # the fuzzer, triage and replays inherit it
    start = time.monotonic()
    total_s = args.seconds if args.seconds is not None else round(60 * (args.minutes or DEFAULT_MINUTES))
    budget = Budget.plan(total_s, start)
    args.work, args.seeds = args.work.resolve(), args.seeds.resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    out = args.out.resolve()
    shutil.rmtree(out, ignore_errors=True)
    artifacts, findings, stats_dir = out / "artifacts", out / "findings", out / "stats"
    for folder in (artifacts, findings, stats_dir):
        folder.mkdir(parents=True)
    log_path = out / "fuzz.log"
    restored = len(inputs_in(args.work))

    seconds = fuzzing_seconds(left_s(budget.fuzz))
    status = fuzz(args, spec, seconds, left_s(budget.fuzz), artifacts, stats_dir, log_path)
    ends = {"fuzzing": time.monotonic()}
    progress = last_progress(log_path.read_text(errors="replace"))
    if progress.executions == 0 and status != -signal.SIGKILL:
        log(f"the fuzzer ran no input (exit {status}); see {log_path}")
        return 2
    if status == -signal.SIGKILL:
        log("the fuzzer was stopped at the end of its share of the time")
    harness_line = harness_summary(stats_dir)
    shutil.rmtree(stats_dir)
    log(harness_line)
    results = triage_findings(triage.new_artifacts(artifacts), spec, findings, args, deadline=budget.triage)
    litert = litert_findings(results, spec, out, min(budget.merge, max(budget.triage, time.monotonic())
                                                     + LITERT_REPRODUCERS_S))
    ends["triage"] = time.monotonic()
    corpus = (restored, *merge_corpus(args, spec, out / "merge.log", budget.merge))
    ends["merge"] = time.monotonic()
    percents = coverage_report(args, spec, out / "coverage", out / "replay.log", budget.coverage)
    ends["coverage"] = time.monotonic()
    times = [start, *ends.values()]
    phases = {phase: end - begin for phase, begin, end in zip(ends, times, times[1:])}
    summary = summary_markdown(spec, args, seconds, progress, harness_line, corpus, percents, results,
                               (total_s, phases), litert)
    (out / "summary.md").write_text(summary)
    log(summary)
    return 1 if any(finding.status in NEWS for finding in results) else 0


if __name__ == "__main__":
    sys.exit(main())
