"""``python -m hal_client.conformance PATH...``: run the conformance test models against a driver.

Prints one ``FAIL <name> [<step>/<variant>]: <reason>`` line per failing example and ends
with ``N passed, N failed, N skipped``. Exit status 1 when anything failed.
"""
from __future__ import annotations

import argparse
import enum
import json
import sys
from pathlib import Path
from typing import Sequence

from ..device import DEFAULT_DRIVER, DriverSpecError, make_device, report_spec_error
from ..paths import ExecutionPath
from .loader import LoadError, find_model_files, load_examples
from .runner import MAX_CALL_TIMEOUT_S, RunOptions, Variant, Verdict, run_files


def _choices(known: dict[str, enum.Enum], text: str) -> tuple:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"{','.join(unknown) or 'nothing'}: choose from {','.join(known)}")
    return tuple(known[name] for name in names)


def _call_timeout(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds <= MAX_CALL_TIMEOUT_S:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected seconds above 0 and at most {MAX_CALL_TIMEOUT_S:g} (a day)")
    return seconds


def parse_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m hal_client.conformance",
        description="Run NNAPI CTS test models (.json / .json.gz files, or folders of them) "
                    "against an NN HAL 1.3 driver.")
    parser.add_argument("paths", nargs="+", metavar="PATH")
    parser.add_argument("--driver", default=DEFAULT_DRIVER, metavar="MODULE:FACTORY",
                        help=f"callable returning the IDevice to test (default {DEFAULT_DRIVER})")
    parser.add_argument("--paths", dest="execution_paths", default=tuple(ExecutionPath),
                        type=lambda text: _choices({p.label: p for p in ExecutionPath}, text),
                        metavar="sync,async,fenced,burst", help="execution paths (default all)")
    parser.add_argument("--variants", default=tuple(Variant),
                        type=lambda text: _choices({v.value: v for v in Variant}, text),
                        metavar="normal,dynamic,insufficient", help="variants (default all)")
    parser.add_argument("-k", dest="name_filter", default="", metavar="SUBSTRING",
                        help="only the examples whose name contains SUBSTRING")
    parser.add_argument("-j", dest="jobs", type=int, default=1, metavar="N",
                        help="run files in N processes")
    parser.add_argument("--timeout", type=_call_timeout, default=RunOptions.call_timeout, metavar="S",
                        help="seconds one HAL call may take before the driver counts as hung "
                             f"(at most {MAX_CALL_TIMEOUT_S:g})")
    parser.add_argument("--report", type=Path, metavar="FILE",
                        help="write a JSON list of {name, status, reason}")
    parser.add_argument("--list", action="store_true", help="list the examples, run nothing")
    parser.add_argument("-v", "--verbose", action="store_true", help="also print skipped examples")
    parser.add_argument("--strict", action="store_true",
                        help="exit status 1 also when an example was skipped")
    return parser.parse_args(argv)


def list_examples(files: Sequence[Path], name_filter: str) -> int:
    status = 0
    for path in files:
        try:
            for example in load_examples(path):
                if name_filter in example.name:
                    print(f"{example.name}\t{path}")
        except LoadError as error:
            print(f"ERROR {error}", file=sys.stderr)
            status = 1
    return status


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parse_arguments(argv)
    try:
        files = find_model_files(arguments.paths)
    except LoadError as error:
        print(f"ERROR {error}", file=sys.stderr)
        return 2
    if arguments.list:
        return list_examples(files, arguments.name_filter)
    # Fail on a bad --driver before any work (and before any worker process starts), with
    # a message rather than a traceback.
    try:
        make_device(arguments.driver)
    except DriverSpecError as error:
        return report_spec_error(error)
    options = RunOptions(paths=arguments.execution_paths, variants=arguments.variants,
                         call_timeout=arguments.timeout)
    counts = {verdict: 0 for verdict in Verdict}
    report: list[dict[str, str]] = []
    for file_result in run_files(files, options, driver_spec=arguments.driver,
                                 jobs=arguments.jobs, name_filter=arguments.name_filter):
        if file_result.load_error is not None:
            # A malformed file counts as one failure under its own name.
            print(f"FAIL {file_result.path} [load/file]: {file_result.load_error}", flush=True)
            counts[Verdict.FAILED] += 1
            report.append({"name": file_result.path, "status": Verdict.FAILED.value,
                           "reason": file_result.load_error})
        for result in file_result.results:
            counts[result.verdict] += 1
            report.append(result.as_report())
            if result.verdict is Verdict.FAILED:
                print(result.failure_line(), flush=True)
            elif result.verdict is Verdict.SKIPPED and arguments.verbose:
                print(f"SKIP {result.name}: {result.reason}", flush=True)
    if arguments.report is not None:
        arguments.report.write_text(json.dumps(report, indent=1) + "\n")
    print(f"{counts[Verdict.PASSED]} passed, {counts[Verdict.FAILED]} failed, "
          f"{counts[Verdict.SKIPPED]} skipped")
    incomplete = counts[Verdict.FAILED] or (arguments.strict and counts[Verdict.SKIPPED])
    return 1 if incomplete else 0


if __name__ == "__main__":
    sys.exit(main())
