"""Write a standalone reproducer of a LiteRT discrepancy, fit to attach to a bug report.

    nnhal-litert-repro CASE_OR_REPRODUCER [--driver backends.litert:KERNELSET]
                       [--reference MODULE:FACTORY] [--out DIR] [--name NAME]
    nnhal-litert-repro crashes/<digest> --mark-upstream

CASE_OR_REPRODUCER is a fuzz input: a libFuzzer artifact, or a reproducer of crashes/ (its
sidecar gives the driver, the reference and the first diverging operation, when the
oracle reported one). The case is run on LiteRT and on the reference, and the smallest
form that still shows the discrepancy is kept (backends/litert/reproducer.py: the
diverging operation alone, else the whole model). DIR gets NAME.tflite (what LiteRT ran),
NAME.npz (its inputs and the expected outputs) and NAME.py, which imports only numpy and
ai_edge_litert. The script is then run once, in a bare environment, to check that it
reproduces (exit status 1).

DIR defaults to litert/NAME beside the input (crashes/litert/<digest>/ for a reproducer
of crashes/), NAME to the input's file name. --mark-upstream also marks the reproducer's
sidecar as triage does for a LiteRT finding (status upstream, and what the findings
report says): to write it again after an upgrade of LiteRT, say.

Exit status: 0 when the reproducer is written and reproduces, 1 when the case shows no
discrepancy on LiteRT (or the written script does not reproduce it), 2 on bad arguments.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from fuzz.codec import decode
from fuzz.spec import FINDING_CLASSES
from fuzz.drivers import configured_reference, configured_spec
from fuzz.oracles import RuntimeCrashViolation
from hal_client.device import DriverSpecError, make_device, report_spec_error

#: How long the written script may take to run.
SCRIPT_LIMIT_S = 120
#: The status of a reproducer of crashes/ that is LiteRT's, known and reported upstream.
UPSTREAM = "upstream"
#: Where a reproducer's standalone folder is, beside it.
FOLDER = "litert"
#: What a reviewer writes in a sidecar's "litert" part, kept when the reproducer is written
#: again: its class (one of FINDING_CLASSES) and the cause found, in a sentence.
REVIEWED = ("class", "cause")


#: The package of LiteRT's driver factories (--driver backends.litert:KERNELSET).
LITERT_PACKAGE = "backends.litert"


def is_litert_spec(spec: str | None) -> bool:
    """Whether a --driver spec names one of LiteRT's factories (without importing them,
    which needs the litert extra)."""
    return bool(spec) and spec.partition(":")[0] == LITERT_PACKAGE


def is_litert_device(device: Any) -> bool:
    """Whether a device computes with LiteRT (its engine records what it runs)."""
    return hasattr(getattr(device, "engine", None), "recording")


def sidecar_of(path: Path) -> dict:
    sidecar = path.with_suffix(".json")
    if not sidecar.exists():
        return {}
    try:
        found = json.loads(sidecar.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return found if isinstance(found, dict) else {}


def run_script(script: Path) -> subprocess.CompletedProcess:
    """The written script run as a user would: in its folder, with nothing of this project
    on the path."""
    environment = {"PATH": "/usr/bin:/bin", "HOME": str(Path.home())}
    return subprocess.run([sys.executable, "-I", script.name], cwd=script.parent, env=environment,
                          capture_output=True, text=True, timeout=SCRIPT_LIMIT_S)


def write_reproducer(case_path: Path, driver: object, reference: object, out: Path, name: str,
                     divergence=None, log=print):
    """The standalone reproducer of the case at ``case_path`` (a Bundle), run once to check
    it; None when the case shows no discrepancy."""
    from backends.litert import reproducer
    found = reproducer.reproduce(driver, reference, decode(case_path.read_bytes()), divergence)
    if found is None:
        log(f"{case_path}: LiteRT and the reference agree on it (or the reference does not run it): "
            f"nothing to reproduce")
        return None
    bundle = reproducer.write(found, out, name)
    checked = run_script(bundle.script)
    log(f"{bundle.script}: {bundle.kind} of {bundle.operation or 'the model'} ({found.origin}); "
        f"{bundle.magnitude}")
    if checked.returncode != 1:
        log(f"  the script exits with {checked.returncode}, not 1: it does not reproduce on its own\n"
            f"{checked.stdout[-2000:]}{checked.stderr[-2000:]}")
        return None
    return bundle


def localised(failure: Any, case: Any, driver: Any, reference: Any) -> Any:
    """A finding of LiteRT (a triage Failure) bucketed by the reduced specimen the case
    gives when run again (backends/litert/reproducer.py, specimen_bucket): a native crash
    by the first operation whose run crashes LiteRT, a status disagreement by the operation
    it is about, neither by the execution path (the way the rule broke, ``key``): LiteRT
    computes alike on every path. A wrong value, or a finding no operation is found for,
    as it is."""
    from backends.litert import reproducer
    if failure.rule != RuntimeCrashViolation.rule and failure.divergence is not None:
        return failure
    found = reproducer.reproduce(driver, reference, case)
    bucket = reproducer.specimen_bucket(found) if found is not None else None
    return replace(failure, key="", bucket=bucket) if bucket else failure


def mark_upstream(stored: Path, driver: Any, reference: Any, failure: Any = None, log=print) -> bool:
    """Write the standalone reproducer of the LiteRT finding stored at ``stored`` (a
    reproducer and its sidecar, as fuzz/triage.py stores them) in litert/<name>/ beside
    it, and mark its sidecar: status upstream, and under "litert" what the findings report
    says (the reproducer's folder relative to the sidecar; the class a reviewer gave it
    kept, else the first of FINDING_CLASSES, and the cause found: REVIEWED). False, and
    the sidecar as it was, when the case shows no discrepancy LiteRT alone reproduces."""
    from backends.litert.reproducer import divergence_of
    sidecar = sidecar_of(stored)
    folder = stored.parent / FOLDER / stored.name
    bundle = write_reproducer(stored, driver, reference, folder, stored.name,
                              divergence_of(failure, sidecar), log)
    if bundle is None:
        shutil.rmtree(folder, ignore_errors=True)
        return False
    known = sidecar.get("litert") if isinstance(sidecar.get("litert"), dict) else {}
    sidecar["status"] = UPSTREAM
    reviewed = {key: known[key] for key in REVIEWED if key in known}
    sidecar["litert"] = {**bundle.facts(), "class": FINDING_CLASSES[0], **reviewed,
                         "reproducer": f"{FOLDER}/{stored.name}/"}
    stored.with_suffix(".json").write_text(json.dumps(sidecar, indent=2) + "\n")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("case", type=Path, help="a fuzz input or a reproducer of crashes/")
    parser.add_argument("--driver", help="backends.litert:auto|builtin|builtin_ref (default: the "
                                         "sidecar's, else $NNHAL_FUZZ_DRIVER)")
    parser.add_argument("--reference", help="MODULE:FACTORY (default: the sidecar's, else the bundled driver)")
    parser.add_argument("--out", type=Path, help="the folder to write (default: litert/NAME beside the input)")
    parser.add_argument("--name", help="the files' name (default: the input's file name)")
    parser.add_argument("--mark-upstream", action="store_true",
                        help="mark the reproducer's sidecar upstream (into litert/NAME beside it)")
    args = parser.parse_args(argv)
    if not args.case.is_file():
        parser.error(f"{args.case} is not a file")
    sidecar = sidecar_of(args.case)
    spec = args.driver or sidecar.get("driver") or configured_spec()
    reference_spec = args.reference or sidecar.get("reference") or configured_reference(spec)
    if not reference_spec:
        parser.error("a reference driver is needed (--reference)")
    name = args.name or args.case.name
    out = args.out or args.case.parent / FOLDER / name
    try:
        driver, reference = make_device(spec), make_device(reference_spec)
    except DriverSpecError as error:
        return report_spec_error(error)
    if not is_litert_device(driver):
        parser.error(f"{spec} is not a LiteRT driver (backends.litert:auto|builtin|builtin_ref)")
    try:
        if args.mark_upstream:
            if not sidecar:
                parser.error(f"{args.case} has no sidecar to mark")
            return 0 if mark_upstream(args.case, driver, reference) else 1
        from backends.litert.reproducer import divergence_of
        bundle = write_reproducer(args.case, driver, reference, out, name, divergence_of(sidecar=sidecar))
        return 0 if bundle is not None else 1
    finally:
        driver.engine.close()


if __name__ == "__main__":
    sys.exit(main())
