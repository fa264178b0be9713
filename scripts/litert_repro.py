#!/usr/bin/env python3
"""Write a standalone reproducer of a LiteRT discrepancy, fit to attach to a bug report.

    python scripts/litert_repro.py CASE_OR_REPRODUCER [--driver backends.litert:KERNELSET]
                                   [--reference MODULE:FACTORY] [--out DIR] [--name NAME]

CASE_OR_REPRODUCER is a fuzz input: a libFuzzer artifact, or a reproducer of crashes/ (its
sidecar gives the driver, the reference and the first diverging operation, when the
oracle reported one). The case is run on LiteRT and on the reference, and the smallest
form that still shows the discrepancy is kept (backends/litert/reproducer.py: the
diverging operation alone, else the whole model). DIR gets NAME.tflite (what LiteRT ran),
NAME.npz (its inputs and the expected outputs) and NAME.py, which imports only numpy and
ai_edge_litert. The script is then run once, in a bare environment, to check that it
reproduces (exit status 1).

DIR defaults to litert/NAME beside the input (crashes/litert/<digest>/ for a reproducer
of crashes/), NAME to the input's file name.

Exit status: 0 when the reproducer is written and reproduces, 1 when the case shows no
discrepancy on LiteRT (or the written script does not reproduce it), 2 on bad arguments.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

from fuzz.codec import decode
from fuzz.drivers import configured_reference, configured_spec
from hal_client.device import DriverSpecError, make_device, report_spec_error

#: How long the written script may take to run.
SCRIPT_LIMIT_S = 120


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("case", type=Path, help="a fuzz input or a reproducer of crashes/")
    parser.add_argument("--driver", help="backends.litert:auto|builtin|builtin_ref (default: the "
                                         "sidecar's, else $NNHAL_FUZZ_DRIVER)")
    parser.add_argument("--reference", help="MODULE:FACTORY (default: the sidecar's, else the bundled driver)")
    parser.add_argument("--out", type=Path, help="the folder to write (default: litert/NAME beside the input)")
    parser.add_argument("--name", help="the files' name (default: the input's file name)")
    args = parser.parse_args(argv)
    if not args.case.is_file():
        parser.error(f"{args.case} is not a file")
    sidecar = sidecar_of(args.case)
    spec = args.driver or sidecar.get("driver") or configured_spec()
    reference_spec = args.reference or sidecar.get("reference") or configured_reference(spec)
    if not reference_spec:
        parser.error("a reference driver is needed (--reference)")
    name = args.name or args.case.name
    out = args.out or args.case.parent / "litert" / name
    try:
        driver, reference = make_device(spec), make_device(reference_spec)
    except DriverSpecError as error:
        return report_spec_error(error)
    if not hasattr(getattr(driver, "engine", None), "recording"):
        parser.error(f"{spec} is not a LiteRT driver (backends.litert:auto|builtin|builtin_ref)")
    from backends.litert.reproducer import divergence_of
    bundle = write_reproducer(args.case, driver, reference, out, name, divergence_of(sidecar=sidecar))
    driver.engine.close()
    return 0 if bundle is not None else 1


if __name__ == "__main__":
    sys.exit(main())
