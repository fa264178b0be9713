#!/usr/bin/env python3
"""Triage fuzzer artifacts: reproduce, classify, minimise, sign and store each one.

    python scripts/triage.py [--driver MODULE:FACTORY] [--out DIR] [ARTIFACT ...]

Without ARTIFACT, every new artifact is taken: libFuzzer's crash-*/timeout-*/oom-*/
slow-unit-* files in the output folder (default crashes/) and in the current folder.

For each artifact:
1. reproduce it in a separate process (a crash may take the process down, a hang needs a
   timeout) and classify it: ``crash`` (the driver raised, or the process died),
   ``assertion`` (an oracle rule broke) or ``hang``;
2. minimise it: libFuzzer's -minimize_crash for crashes and assertions, then, for every
   kind, a structural minimiser on the decoded case (drop operations, outputs, inputs,
   operands, subgraphs; shrink dimensions; simplify the execution choices) that keeps a
   change only while the failure still reproduces;
3. sign it: kind + rule or exception + the project frames where it happened;
4. store the minimal input as OUT/<signature hash> with a readable sidecar
   OUT/<signature hash>.json (kind, signature, message, date, status open/fixed). An input
   with a signature already stored is a duplicate: the smaller of the two is kept.

The reproducing process is a worker that runs inputs sent to it one by one (no start-up
cost per attempt); it is restarted after a hang or a death.
"""
from __future__ import annotations

import argparse
import base64
import copy
import datetime
import hashlib
import json
import os
import select
import signal
import subprocess
import sys
import sysconfig
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from fuzz.drivers import DRIVER_ENV, configured_spec  # noqa: E402

ARTIFACT_PREFIXES = ("crash-", "timeout-", "oom-", "leak-", "slow-unit-")
FUZZ_ENTRY = REPO_ROOT / "fuzz" / "driver_fuzz.py"
HARNESS_DIR = str(REPO_ROOT / "fuzz") + os.sep
LIBRARY_DIRS = tuple({sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")})
#: Project frames in a signature; more would tie it to incidental call paths.
SIGNATURE_FRAMES = 3
#: A reproduction that takes longer than this is a hang the harness did not catch.
PROBE_TIMEOUT_S = 60.0
MESSAGE_LIMIT = 4000


# --- what one run of an input gives ------------------------------------------------------------

@dataclass(frozen=True)
class Failure:
    """How an input failed: ``kind`` crash / assertion / hang; ``rule`` the oracle rule or
    ``exception`` the exception type; ``frames`` (file, function) pairs, innermost first."""
    kind: str
    rule: str
    exception: str
    key: str
    message: str
    frames: tuple[tuple[str, str], ...] = ()

    @property
    def signature(self) -> str:
        # A hang is interrupted wherever the loop happened to be: its innermost frames
        # vary from run to run, the way into the driver does not.
        frames = self.frames[-SIGNATURE_FRAMES:] if self.kind == "hang" else self.frames[:SIGNATURE_FRAMES]
        where = " < ".join(f"{function} ({path})" for path, function in frames)
        parts = [self.kind, self.rule, self.exception, self.key if self.kind == "assertion" else "", where]
        return " | ".join(part for part in parts if part)

    @property
    def digest(self) -> str:
        return hashlib.sha1(self.signature.encode()).hexdigest()[:16]

    def same_bug(self, other: "Failure | None") -> bool:
        """Loose match, used while minimising: same kind, rule, exception and innermost
        project function (for hangs only the kind and rule: where it spins may move)."""
        if other is None or (self.kind, self.rule, self.exception) != (other.kind, other.rule, other.exception):
            return False
        if self.kind == "assertion":
            return self.key == other.key
        if self.kind == "crash":
            return self.frames[:1] == other.frames[:1]
        return True


def project_frames(frames) -> tuple[tuple[str, str], ...]:
    """(path, function) of frames in the driver's code, innermost first: neither the
    harness (fuzz/) nor the standard library or installed packages."""
    kept = []
    for frame in reversed(list(frames)):
        filename = frame.filename
        if filename.startswith(HARNESS_DIR) or filename.startswith(LIBRARY_DIRS) or filename.startswith("<"):
            continue
        path = os.path.relpath(filename, REPO_ROOT) if filename.startswith(str(REPO_ROOT)) else filename
        kept.append((path, frame.name))
    return tuple(kept)


def describe(error: BaseException) -> Failure:
    from fuzz.oracles import HalExceptionViolation, HangViolation, OracleViolation
    message = str(error)[:MESSAGE_LIMIT]
    if isinstance(error, HangViolation):
        return Failure("hang", error.rule, "", error.key, message, project_frames(error.frames or ()))
    if isinstance(error, HalExceptionViolation):
        cause = error.__cause__
        exception = type(cause).__name__ if cause is not None else error.key.rpartition(": ")[2]
        return Failure("crash", error.rule, exception, error.key, message, project_frames(error.frames or ()))
    if isinstance(error, OracleViolation):
        return Failure("assertion", error.rule, "", error.key, message, ())
    frames = traceback.extract_tb(error.__traceback__)
    return Failure("crash", "", type(error).__name__, "", message, project_frames(frames))


# --- the worker: runs inputs in its own process ------------------------------------------------

def worker_main() -> None:
    """Read base64 inputs, one per line; answer one JSON line each."""
    from fuzz import harness
    from fuzz.oracles import HangViolation
    device = harness.default_device()
    out = sys.stdout
    sys.stdout = sys.stderr          # the driver's prints must not garble the protocol
    for line in sys.stdin:
        failure = None
        try:
            harness.run_one(base64.b64decode(line), device)
        except Exception as error:   # the failure is the answer here, whatever raised it
            failure = error
        answer = {"failure": asdict(describe(failure)) if failure is not None else None}
        out.write(json.dumps(answer) + "\n")
        out.flush()
        if isinstance(failure, HangViolation):
            return      # an interrupted driver may keep threads busy: start afresh


class Worker:
    """A worker process, restarted when it dies or stops answering."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.process: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        env = dict(os.environ, **{DRIVER_ENV: self.spec})
        return subprocess.Popen([sys.executable, __file__, "--worker"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                cwd=REPO_ROOT)

    def run(self, data: bytes, timeout_s: float = PROBE_TIMEOUT_S) -> Failure | None:
        if self.process is None or self.process.poll() is not None:
            self.process = self._start()
        process = self.process
        try:
            process.stdin.write(base64.b64encode(data) + b"\n")
            process.stdin.flush()
        except BrokenPipeError:
            return self._died(process)
        ready, _, _ = select.select([process.stdout], [], [], timeout_s)
        if not ready:
            self.close()
            return Failure("hang", "timeout", "", "", f"no answer within {timeout_s:.0f} s")
        line = process.stdout.readline()
        if not line:
            return self._died(process)
        answer = json.loads(line)
        if answer["failure"] is None:
            return None
        fields = answer["failure"]
        fields["frames"] = tuple(tuple(frame) for frame in fields["frames"])
        return Failure(**fields)

    def _died(self, process: subprocess.Popen) -> Failure:
        code = process.wait()
        self.process = None
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(code)
        return Failure("crash", "", f"exit {name}", "", f"the worker died ({name})")

    def close(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


# --- minimisation -------------------------------------------------------------------------------

def libfuzzer_minimize(artifact: Path, spec: str, seconds: int, workdir: Path) -> Path | None:
    """libFuzzer's own crash minimiser, stopped after ``seconds``; it rewrites its output
    after every step, so what is there then is the smallest it found (None: nothing)."""
    out = workdir / f"minimized-{artifact.name}"
    out.unlink(missing_ok=True)
    env = dict(os.environ, **{DRIVER_ENV: spec})
    command = [sys.executable, str(FUZZ_ENTRY), "-minimize_crash=1", f"-max_total_time={seconds}",
               f"-exact_artifact_path={out}", f"-artifact_prefix={workdir}/", str(artifact.resolve())]
    process = subprocess.Popen(command, env=env, cwd=workdir, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)   # the minimiser and the children it started
        process.wait()
    return out if out.exists() else None


def _remap(indexes: list[int], removed: int) -> list[int]:
    return [i - (i > removed) for i in indexes]


def remove_operand(subgraph, index: int) -> None:
    """Delete an operand nothing refers to, renumbering the later ones."""
    del subgraph.operands[index]
    for operation in subgraph.operations:
        operation.inputs = _remap(operation.inputs, index)
        operation.outputs = _remap(operation.outputs, index)
    subgraph.inputIndexes = _remap(subgraph.inputIndexes, index)
    subgraph.outputIndexes = _remap(subgraph.outputIndexes, index)


def tidy(case) -> None:
    """Drop operands and referenced subgraphs that nothing uses any more."""
    from driver.hal import OperandLifeTime
    for subgraph in (case.model.main, *case.model.referenced):
        used = {i for op in subgraph.operations for i in (*op.inputs, *op.outputs)}
        used |= set(subgraph.inputIndexes) | set(subgraph.outputIndexes)
        for index in sorted(set(range(len(subgraph.operands))) - used, reverse=True):
            remove_operand(subgraph, index)
    while True:
        referenced = {operand.location.offset
                      for subgraph in (case.model.main, *case.model.referenced)
                      for operand in subgraph.operands if operand.lifetime == OperandLifeTime.SUBGRAPH}
        unused = [j for j in range(len(case.model.referenced)) if j not in referenced]
        if not unused:
            return
        j = unused[-1]
        del case.model.referenced[j]
        for subgraph in (case.model.main, *case.model.referenced):
            for operand in subgraph.operands:
                if operand.lifetime == OperandLifeTime.SUBGRAPH and operand.location.offset > j:
                    operand.location.offset -= 1


def _drop_operation(case, subgraph_index: int, op_index: int) -> None:
    from driver.hal import OperandLifeTime
    subgraphs = [case.model.main, *case.model.referenced]
    subgraph = subgraphs[subgraph_index]
    operation = subgraph.operations.pop(op_index)
    for i in operation.inputs:
        if 0 <= i < len(subgraph.operands) and subgraph.operands[i].numberOfConsumers > 0:
            subgraph.operands[i].numberOfConsumers -= 1
    for i in operation.outputs:
        if i in subgraph.outputIndexes and subgraph_index == 0:
            _drop_main_output(case, subgraph.outputIndexes.index(i))
        elif 0 <= i < len(subgraph.operands) and i not in subgraph.outputIndexes:
            subgraph.operands[i].lifetime = OperandLifeTime.TEMPORARY_VARIABLE


def _drop_main_output(case, position: int) -> None:
    from driver.hal import OperandLifeTime
    main = case.model.main
    index = main.outputIndexes.pop(position)
    main.operands[index].lifetime = OperandLifeTime.TEMPORARY_VARIABLE
    if position < len(case.request.outputs):
        del case.request.outputs[position]


def _drop_main_input(case, position: int) -> None:
    main = case.model.main
    index = main.inputIndexes[position]
    if main.operands[index].numberOfConsumers:
        raise ValueError("input still consumed")
    del main.inputIndexes[position]
    if position < len(case.request.inputs):
        del case.request.inputs[position]


def _shrink_dimension(case, value: int) -> None:
    """Every dimension equal to ``value`` becomes 1, and byte lengths that were exactly the
    size of the old shape (constants, request arguments) become the size of the new one."""
    from driver.hal import OperandLifeTime
    from driver.operands import storage_size

    def shrunk(dims: list[int]) -> list[int]:
        return [1 if d == value else d for d in dims]

    main = case.model.main
    arguments = [(argument, main.operands[index])
                 for args, indexes in ((case.request.inputs, main.inputIndexes),
                                       (case.request.outputs, main.outputIndexes))
                 for argument, index in zip(args, indexes)
                 if not argument.hasNoValue and 0 <= index < len(main.operands)]
    old_sizes = [storage_size(operand.type, argument.dimensions or operand.dimensions)
                 for argument, operand in arguments]
    for subgraph in (main, *case.model.referenced):
        for operand in subgraph.operands:
            old = storage_size(operand.type, operand.dimensions)
            operand.dimensions = shrunk(operand.dimensions)
            if (operand.lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)
                    and operand.location.length == old):
                operand.location.length = storage_size(operand.type, operand.dimensions)
    for (argument, operand), old in zip(arguments, old_sizes):
        argument.dimensions = shrunk(argument.dimensions)
        if old is not None and argument.location.length == old:
            argument.location.length = storage_size(operand.type, argument.dimensions or operand.dimensions)


def _simplified_choices(case) -> Iterator[tuple[str, Callable]]:
    from driver.hal import ExecutionPreference, MeasureTiming, Priority
    from fuzz.case import ExecutionPath
    defaults = [("measureTiming", MeasureTiming.NO), ("deadline_ns", None),
                ("fenced_duration_ns", None), ("preference", ExecutionPreference.FAST_SINGLE_ANSWER),
                ("priority", Priority.MEDIUM), ("path", ExecutionPath.SYNC),
                ("second_path", ExecutionPath.SYNC)]
    for name, value in defaults:
        if getattr(case.choices, name) != value:
            yield f"choices.{name} = {value!r}", lambda c, n=name, v=value: setattr(c.choices, n, v)
    if case.choices.wait_fences:
        def no_fences(c):
            c.choices.wait_fences = 0
            c.choices.wait_fence_delay_ns = 0
        yield "no wait fences", no_fences


def candidate_reductions(case) -> Iterator[tuple[str, Callable]]:
    """Changes that make a case smaller, biggest first. Each is a function editing a copy
    of the case in place; it may raise (IndexError, ValueError) when it does not apply."""
    subgraphs = [case.model.main, *case.model.referenced]
    for s in range(len(subgraphs) - 1, -1, -1):
        for i in range(len(subgraphs[s].operations) - 1, -1, -1):
            yield f"drop operation {i} of subgraph {s}", lambda c, s=s, i=i: _drop_operation(c, s, i)
    for k in range(len(case.model.main.outputIndexes) - 1, -1, -1):
        yield f"drop main output {k}", lambda c, k=k: _drop_main_output(c, k)
    for k in range(len(case.model.main.inputIndexes) - 1, -1, -1):
        yield f"drop main input {k}", lambda c, k=k: _drop_main_input(c, k)
    dims = sorted({d for g in subgraphs for operand in g.operands for d in operand.dimensions if d > 1},
                  reverse=True)
    for value in dims:
        yield f"dimension {value} -> 1", lambda c, v=value: _shrink_dimension(c, v)
    yield from _simplified_choices(case)


def case_size(case) -> tuple[int, ...]:
    """How big a case reads: operations, operands, subgraphs, then tensor elements. Bytes
    do not say it: libFuzzer's minimiser shortens inputs by leaning on the decoder's
    defaults for missing bytes, not by making the model simpler."""
    import math
    subgraphs = [case.model.main, *case.model.referenced]
    return (sum(len(g.operations) for g in subgraphs), sum(len(g.operands) for g in subgraphs),
            len(subgraphs), sum(math.prod(o.dimensions) for g in subgraphs for o in g.operands))


def copy_case(case):
    """A deep copy sharing the memory pools (mappings cannot be copied; reductions change
    where data is, never the pools' content)."""
    pools = [*case.model.pools, *(pool.hidlMemory for pool in case.request.pools)]
    return copy.deepcopy(case, memo={id(pool): pool for pool in pools if pool is not None})


def minimize_case(case, still_fails: Callable[[object], bool], budget_s: float,
                  log: Callable[[str], None] = lambda _: None):
    """Greedy structural minimisation: apply each reduction that keeps the failure, until
    none does or the time budget is spent."""
    deadline = time.monotonic() + budget_s
    improved = True
    while improved and time.monotonic() < deadline:
        improved = False
        for description, reduce in candidate_reductions(case):
            if time.monotonic() > deadline:
                break
            candidate = copy_case(case)
            try:
                reduce(candidate)
                tidy(candidate)
            except (IndexError, ValueError, KeyError):
                continue
            if still_fails(candidate):
                log(f"  kept: {description}")
                case = candidate
                improved = True
                break          # the candidate list is stale now
    return case


# --- one artifact -----------------------------------------------------------------------------

@dataclass
class Triaged:
    artifact: str
    failure: Failure | None
    stored: str | None = None
    duplicate: bool = False
    sizes: list[int] = field(default_factory=list)


def triage_one(artifact: Path, worker: Worker, out_dir: Path, spec: str, *, libfuzzer_s: int,
               structural_s: float, workdir: Path, log: Callable[[str], None]) -> Triaged:
    from fuzz.codec import CodecLimitError, decode, encode
    data = artifact.read_bytes()
    failure = worker.run(data)
    result = Triaged(str(artifact), failure, sizes=[len(data)])
    if failure is None:
        log(f"{artifact}: does not reproduce; left in place")
        return result
    log(f"{artifact}: {failure.kind}: {failure.signature}")

    if failure.kind != "hang" and libfuzzer_s > 0:
        minimized = libfuzzer_minimize(artifact, spec, libfuzzer_s, workdir)
        if minimized is not None:
            smaller = minimized.read_bytes()
            if len(smaller) < len(data) and failure.same_bug(worker.run(smaller)):
                data = smaller
                result.sizes.append(len(data))
                log(f"  libFuzzer minimised it to {len(data)} bytes")

    def still_fails(case) -> bool:
        try:
            candidate = encode(case)
        except CodecLimitError:
            return False
        return failure.same_bug(worker.run(candidate))

    original = decode(data)
    case = minimize_case(original, still_fails, structural_s, log)
    final = encode(case)
    confirmed = worker.run(final)
    if failure.same_bug(confirmed) and case_size(case) <= case_size(original):
        data, failure = final, confirmed
        result.sizes.append(len(data))
    result.failure = failure
    result.stored, result.duplicate = store(data, failure, out_dir, spec, artifact.name)
    log(f"  stored {result.stored}{' (duplicate)' if result.duplicate else ''}; sizes {result.sizes}")
    return result


def store(data: bytes, failure: Failure, out_dir: Path, spec: str, source: str) -> tuple[str, bool]:
    """Write OUT/<hash> and its sidecar; a known signature keeps the smaller input."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / failure.digest
    sidecar_path = path.with_suffix(".json")
    duplicate = path.exists()
    if duplicate and len(path.read_bytes()) <= len(data):
        sidecar = json.loads(sidecar_path.read_text()) if sidecar_path.exists() else {}
        sidecar["duplicates"] = sidecar.get("duplicates", 0) + 1
        sidecar_path.write_text(json.dumps(sidecar, indent=2) + "\n")
        return str(path), True
    path.write_bytes(data)
    sidecar = {
        "kind": failure.kind,
        "signature": failure.signature,
        "rule": failure.rule,
        "exception": failure.exception,
        "message": failure.message,
        "driver": spec,
        "source": source,
        "size": len(data),
        "date": datetime.date.today().isoformat(),
        "status": "open",
    }
    sidecar_path.write_text(json.dumps(sidecar, indent=2) + "\n")
    return str(path), duplicate


def new_artifacts(out_dir: Path) -> list[Path]:
    found = []
    for folder in {out_dir.resolve(), Path.cwd().resolve()}:
        if folder.is_dir():
            found += sorted(p for p in folder.iterdir() if p.is_file() and p.name.startswith(ARTIFACT_PREFIXES))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("artifacts", nargs="*", type=Path)
    parser.add_argument("--driver", default=None, help="MODULE:FACTORY (default: $%s or driver:SampleDriver)" % DRIVER_ENV)
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "crashes", help="where reproducers go")
    parser.add_argument("--libfuzzer-seconds", type=int, default=30,
                        help="libFuzzer -minimize_crash time for crashes and assertions (0: skip)")
    parser.add_argument("--structural-seconds", type=float, default=120,
                        help="time budget of the structural minimiser per artifact")
    parser.add_argument("--keep", action="store_true", help="keep the raw artifacts")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker_main()
        return 0
    spec = args.driver or configured_spec()
    artifacts = args.artifacts or new_artifacts(args.out)
    if not artifacts:
        print("no artifacts to triage")
        return 0
    workdir = REPO_ROOT / "fuzz-work" / "triage"
    workdir.mkdir(parents=True, exist_ok=True)
    worker = Worker(spec)
    results = []
    try:
        for artifact in artifacts:
            result = triage_one(artifact, worker, args.out, spec, libfuzzer_s=args.libfuzzer_seconds,
                                structural_s=args.structural_seconds, workdir=workdir,
                                log=lambda line: print(line, flush=True))
            results.append(result)
            if result.stored and not args.keep and artifact.resolve() != Path(result.stored).resolve():
                artifact.unlink()
    finally:
        worker.close()
    stored = {r.stored for r in results if r.stored}
    print(f"{len(artifacts)} artifacts, {len(stored)} distinct reproducers, "
          f"{sum(r.failure is None for r in results)} not reproduced")
    return 0


if __name__ == "__main__":
    sys.exit(main())
