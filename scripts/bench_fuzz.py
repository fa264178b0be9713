#!/usr/bin/env python3
"""Benchmark of the fuzz harness on the bundled driver (a measurement, not a test).

    python scripts/bench_fuzz.py [--seconds 60] [--corpus corpus/] [--skip-fuzz] [--skip-coverage]

Prints:
- libFuzzer's exec/s of ``fuzz/driver_fuzz.py`` fuzzing from the corpus for --seconds, one
  process (instrumented, with the custom mutator), and the harness statistics of that run:
  prepare and execute success rates, the share of executions running IF/WHILE; then the
  same with the metamorphic relations off (--no-relations);
- the in-process rate of ``run_one`` over the corpus inputs and mutations of them (no
  instrumentation, no libFuzzer: the harness and driver alone), with each of the oracles
  that know the right answer on and off: the metamorphic relations (on by default), and
  the bundled driver as reference (on by default only for another driver);
- the instrumented basic blocks the driver executes per input, by phase, replaying the
  corpus and a fixed set of mutations of it. atheris calls back into libFuzzer at every
  block, so this count is the instrumentation's cost per input, and unlike a rate it does
  not depend on how busy the machine is (only loops that run until their timeout vary);
- the line coverage of driver/ reached by replaying the corpus (coverage.py).

Targets: >= 2000 exec/s per core, >= 90 % line coverage.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

FUZZ_ENTRY = REPO_ROOT / "fuzz" / "driver_fuzz.py"
TARGET_EXECS_PER_S = 2000
TARGET_COVERAGE = 90.0


def corpus_files(corpus: Path) -> list[Path]:
    return sorted(p for p in corpus.iterdir() if p.is_file()) if corpus.is_dir() else []


def fuzz_rate(corpus: Path, seconds: int, flags: tuple[str, ...] = ()) -> dict:
    """Fuzz for ``seconds`` from a scratch copy of the corpus (with the entry point's
    ``flags``); libFuzzer's figures and the harness statistics line."""
    with tempfile.TemporaryDirectory(prefix="bench-fuzz-") as scratch:
        command = [sys.executable, str(FUZZ_ENTRY), *flags, scratch, str(corpus), f"-max_total_time={seconds}",
                   "-print_final_stats=1", f"-artifact_prefix={scratch}/", "-timeout=30"]
        run = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True,
                             timeout=seconds * 3 + 120)
        artifacts = [p.name for p in Path(scratch).iterdir() if p.name.startswith(("crash-", "timeout-"))]
    log = run.stderr
    figures = dict(re.findall(r"stat::(\w+):\s+(\d+)", log))
    stats_line = next((line for line in log.splitlines() if line.startswith("harness: ")), "")
    # How the run counted blocks and whether it had a CPU of its own (driver_fuzz.py's INFO
    # lines): both move the figure.
    setup = ["block counting: " + ("list.append" if "counting block hits with list.append" in log
                                   else "compiled counter")]
    binding = re.search(r"INFO: bound to CPU (\d+)", log)
    setup.append(f"bound to CPU {binding.group(1)}" if binding else "not bound to a CPU")
    return {"setup": ", ".join(setup), "execs_per_s": int(figures.get("average_exec_per_sec", 0)),
            "executed": int(figures.get("number_of_executed_units", 0)),
            "harness": stats_line, "artifacts": artifacts,
            "tail": "\n".join(log.splitlines()[-5:]) if run.returncode else ""}


#: (label, reference on, relations on) of the in-process runs.
ORACLE_SETTINGS = (("no reference, no relations", False, False), ("relations (default)", False, True),
                   ("reference, no relations", True, False), ("reference and relations", True, True))


def in_process_rate(corpus: Path, seconds: float, reference: bool = False, relations: bool = True) -> dict:
    """run_one over the corpus and mutations of it, for ``seconds``, with the bundled driver
    as reference or not, and the metamorphic relations or not."""
    from driver import SampleDriver
    from fuzz import harness
    from hal_client.contract import OracleViolation
    try:
        from fuzz.mutator import mutate
    except ImportError:
        mutate = None
    seeds = [p.read_bytes() for p in corpus_files(corpus)]
    if not seeds:
        return {"execs_per_s": 0}
    device = harness.default_device()
    enabled = harness.Oracles(SampleDriver() if reference else None, relations)
    harness.STATS = stats = harness.HarnessStats()
    runs = violations = 0
    started = time.perf_counter()
    deadline = started + seconds
    while time.perf_counter() < deadline:
        data = seeds[runs % len(seeds)]
        if mutate is not None and runs % 2:
            data = mutate(data, 4096, runs)
        try:
            harness.run_one(data, device, enabled)
        except OracleViolation:
            violations += 1
        runs += 1
    elapsed = time.perf_counter() - started
    return {"execs_per_s": runs / elapsed, "runs": runs, "violations": violations,
            "harness": stats.summary()}


def replay_inputs(corpus: Path, mutations: int, seed: int = 1) -> list[bytes]:
    """The corpus, then ``mutations`` inputs made from it by the custom mutator (a fixed
    sequence for a given corpus)."""
    import random
    from fuzz.mutator import mutate
    seeds = [p.read_bytes() for p in corpus_files(corpus)]
    rng = random.Random(seed)
    return seeds + [mutate(rng.choice(seeds), 4096, rng.randrange(1 << 30))
                    for _ in range(mutations if seeds else 0)]


def blocks_child(corpus: Path, mutations: int, report: Path) -> None:
    """Replay under atheris instrumentation (as the fuzzer does, without libFuzzer), with
    the block callback counting; write the counts per phase to ``report``."""
    import atheris
    from fuzz.driver_fuzz import instrumented_imports
    with instrumented_imports({"driver"}, trace_comparisons=False):
        from driver.operations.registry import supported_types
        from fuzz import harness
        supported_types()
        device = harness.default_device()
    counted = [0]

    def count_block(_index: int) -> None:
        counted[0] += 1
    atheris._trace_branch = count_block      # what instrumented code calls at each block
    per_phase: dict[str, int] = {}

    def counting(name: str, function):
        def wrapper(*args, **kwargs):
            before = counted[0]
            try:
                return function(*args, **kwargs)
            finally:
                per_phase[name] = per_phase.get(name, 0) + counted[0] - before
        return wrapper
    harness.reference_errors = counting("reference validation", harness.reference_errors)
    device.getSupportedOperations_1_3 = counting("getSupportedOperations_1_3",
                                                 device.getSupportedOperations_1_3)
    harness.prepare = counting("prepareModel_1_3", harness.prepare)
    harness.execute = counting("executions", harness.execute)
    inputs = replay_inputs(corpus, mutations)
    from hal_client.contract import OracleViolation
    for data in inputs:
        try:
            harness.run_one(data, device)
        except OracleViolation:
            pass
    report.write_text(json.dumps({"inputs": len(inputs), "total": counted[0], "phases": per_phase}))


def child_report(flag: str, corpus: Path, *extra: str, stderr=None) -> dict:
    """The JSON report of this script run again as a child (``flag``: --blocks-child or
    --coverage-child) on ``corpus``."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        subprocess.run([sys.executable, __file__, flag, str(report), "--corpus", str(corpus), *extra],
                       cwd=REPO_ROOT, check=True, timeout=1800, stderr=stderr)
        return json.loads(report.read_text())


def coverage_child(corpus: Path, report: Path) -> None:
    """Replay the corpus under coverage.py; write the totals to ``report``."""
    import coverage
    cov = coverage.Coverage(source=[str(REPO_ROOT / "driver")])
    cov.start()
    from fuzz import harness
    from hal_client.contract import OracleViolation
    device = harness.default_device()
    for path in corpus_files(corpus):
        try:
            harness.run_one(path.read_bytes(), device)
        except OracleViolation as violation:
            print(f"{path.name}: {violation}", file=sys.stderr)
    cov.stop()
    with open(os.devnull, "w") as quiet:
        percent = cov.report(file=quiet)
    data = cov.get_data()
    files = {}
    for filename in data.measured_files():
        _, statements, _, missing, _ = cov.analysis2(filename)
        files[os.path.relpath(filename, REPO_ROOT)] = (len(statements), len(missing))
    report.write_text(json.dumps({"percent": percent, "files": files}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=REPO_ROOT / "corpus")
    parser.add_argument("--seconds", type=int, default=60, help="length of the libFuzzer run")
    parser.add_argument("--in-process-seconds", type=float, default=20)
    parser.add_argument("--skip-fuzz", action="store_true")
    parser.add_argument("--skip-coverage", action="store_true")
    parser.add_argument("--skip-blocks", action="store_true")
    parser.add_argument("--mutations", type=int, default=2000,
                        help="mutated inputs replayed after the corpus for the block count")
    parser.add_argument("--coverage-child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--blocks-child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.coverage_child:
        coverage_child(args.corpus, args.coverage_child)
        return 0
    if args.blocks_child:
        blocks_child(args.corpus, args.mutations, args.blocks_child)
        return 0

    inputs = corpus_files(args.corpus)
    print(f"corpus: {args.corpus} ({len(inputs)} inputs)")
    for flags in (() if args.skip_fuzz else ((), ("--no-relations",))):
        fuzz = fuzz_rate(args.corpus, args.seconds, flags)
        verdict = "meets" if fuzz["execs_per_s"] >= TARGET_EXECS_PER_S else "below"
        print(f"libFuzzer, 1 process, {args.seconds} s{''.join(' ' + f for f in flags)}: "
              f"{fuzz['execs_per_s']} exec/s "
              f"({fuzz['executed']} inputs; {verdict} the {TARGET_EXECS_PER_S} exec/s target)")
        print(f"  {fuzz['setup']}")
        print(f"  {fuzz['harness']}")
        if fuzz["artifacts"]:
            print(f"  artifacts: {', '.join(fuzz['artifacts'])}")
        if fuzz["tail"]:
            print(f"  libFuzzer exited abnormally:\n{fuzz['tail']}")
    for label, reference, relations in ORACLE_SETTINGS:
        local = in_process_rate(args.corpus, args.in_process_seconds, reference, relations)
        if local["execs_per_s"]:
            print(f"in-process run_one (no instrumentation), corpus + mutations, {label}: "
                  f"{local['execs_per_s']:.0f} exec/s over {local['runs']} inputs, "
                  f"{local['violations']} violations")
            print(f"  {local['harness']}")
    if not args.skip_blocks:
        blocks = child_report("--blocks-child", args.corpus, "--mutations", str(args.mutations),
                              stderr=subprocess.DEVNULL)
        count = max(1, blocks["inputs"])
        print(f"instrumented blocks per input (corpus + {args.mutations} mutations, "
              f"{blocks['inputs']} inputs): {blocks['total'] / count:.0f}")
        for phase, total in sorted(blocks["phases"].items(), key=lambda item: -item[1]):
            print(f"  {phase}: {total / count:.0f}")
    if not args.skip_coverage:
        covered = child_report("--coverage-child", args.corpus)
        verdict = "meets" if covered["percent"] >= TARGET_COVERAGE else "below"
        print(f"line coverage of driver/ replaying the corpus: {covered['percent']:.1f} % "
              f"({verdict} the {TARGET_COVERAGE:.0f} % target)")
        worst = sorted(covered["files"].items(), key=lambda item: -item[1][1])[:8]
        for name, (statements, missing) in worst:
            print(f"  {name}: {statements - missing}/{statements} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
