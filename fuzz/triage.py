"""Triage fuzzer artifacts: reproduce, classify, minimise, sign and store each one.

    nnhal-triage [--driver MODULE:FACTORY] [--reference MODULE:FACTORY|none]
                 [--out DIR] [ARTIFACT ...]

Without ARTIFACT, every new artifact is taken: libFuzzer's crash-*/timeout-*/oom-*/
slow-unit-* files in the output folder (default crashes/) and in the current folder, and
the harness's finding-* copies of failing inputs whose libFuzzer artifact is missing (the
process died before writing it).

For each artifact:
1. reproduce it in a separate process (a crash may take the process down, a hang needs a
   timeout, an allocation must not take the machine down) and classify it: ``crash`` (the
   driver raised, or the process died), ``assertion`` (an oracle rule broke), ``hang`` or
   ``oom`` (the process ran out of the memory it is allowed, --memory-limit-mb);
2. minimise it: for every kind, the structural minimiser of fuzz/reduce.py on the decoded
   case (drop or merge subgraphs, drop operations, outputs, inputs, operands; bypass
   operations; shrink dimensions; pack the constants; simplify the execution choices),
   keeping a change only while the failure still reproduces; then, for crashes and
   assertions, libFuzzer's -minimize_crash on its encoding, kept when it is shorter and
   reads no larger;
3. sign it (its bucket, bucket_key): kind + rule or exception + the project frames where
   it happened (for an out-of-memory with no such frames, the model's operation types) +
   the violation's bucket refinement, if its oracle set one (for a wrong answer, its first
   diverging operation; for a native crash of LiteRT, the first operation whose run
   crashes it, found here);
4. store the minimal input as OUT/<signature hash> with a readable sidecar
   OUT/<signature hash>.json (kind, signature, message, date, status open/fixed; for a
   wrong answer whose first diverging operation was found, ``divergence``: see
   fuzz/divergence.py). An input with a signature already stored is a duplicate: the
   smaller of the two is kept;
5. for a LiteRT driver (backends/litert), write each new reproducer's standalone reproducer
   in OUT/litert/<signature hash>/ and mark its sidecar upstream (fuzz/litert_repro.py).

The reproducing process is a worker that runs inputs sent to it one by one (no start-up
cost per attempt); it is restarted after a hang, an out-of-memory or a death. Its address
space is capped (RLIMIT_AS) at what it maps once loaded plus --memory-limit-mb, so an
allocation past that fails at once with MemoryError instead of growing until the machine
swaps; an input that set off libFuzzer's -rss_limit_mb (an oom-* artifact) reproduces as
such when given the same limit.
"""
from __future__ import annotations

import argparse
import base64
import datetime
import errno
import hashlib
import json
import os
import select
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import IO, Callable

from fuzz import harness, litert_repro, oracles
from fuzz.codec import CodecLimitError, decode, encode
from fuzz.driver_fuzz import FINDING_PREFIX
from fuzz.drivers import (DRIVER_ENV, NO_REFERENCE, REFERENCE_ENV, configured_reference,
                          configured_spec, environment)
from fuzz.memory_limit import DEFAULT_BUDGET_MB, limit_memory
from hal_client.contract import HalExceptionViolation, HangViolation, OracleViolation
from hal_client.device import DriverSpecError, make_device, report_spec_error
from fuzz.reduce import case_size, minimize

REPO_ROOT = Path(__file__).resolve().parent.parent
ARTIFACT_PREFIXES = ("crash-", "timeout-", "oom-", "leak-", "slow-unit-")
FUZZ_ENTRY = REPO_ROOT / "fuzz" / "driver_fuzz.py"
HARNESS_DIR = str(REPO_ROOT / "fuzz") + os.sep
LIBRARY_DIRS = tuple({sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")})
#: Project frames in a signature; more would tie it to incidental call paths.
SIGNATURE_FRAMES = 3
#: A reproduction that takes longer than this is a hang the harness did not catch.
PROBE_TIMEOUT_S = 60.0
MESSAGE_LIMIT = 4000
#: Hangs get this many times the structural minimiser's time budget.
HANG_BUDGET_FACTOR = 3
#: The worker's memory beyond its own footprint: libFuzzer's -rss_limit_mb default, so an
#: oom-* artifact of a fuzz run with default flags reproduces.
DEFAULT_MEMORY_LIMIT_MB = DEFAULT_BUDGET_MB
#: The rule of an out-of-memory: the worker's memory limit was reached.
MEMORY_LIMIT_RULE = "memory-limit"
#: What a process dying of memory exhaustion leaves on its stderr (Python, C, C++).
MEMORY_EXHAUSTION_MARKERS = ("MemoryError", "Cannot allocate memory", "out of memory", "bad_alloc")
#: How much of a dead worker's stderr is searched for those.
STDERR_TAIL_BYTES = 4000
#: Kinds after which the worker is started afresh: an interrupted driver may keep threads
#: busy; after running out of memory any thread of the process (the watchdog's too) may
#: have lost an allocation half-way.
WORKER_RESTARTED_AFTER = ("hang", "oom")
#: Runs of an artifact before it is said not to reproduce: a failure that depends on timing
#: (which of a driver's threads or worker processes is ready first) may miss one run.
REPRODUCTION_ATTEMPTS = 3


# --- what one run of an input gives ------------------------------------------------------------

def bucket_key(failure: Failure) -> str:
    """The bucket a failure falls in, as text: findings of one bucket are taken for one bug
    (only the smallest few are minimised, the rest counted), and a reproducer in crashes/
    is named by its hash (it is the failure's ``signature``). The parts, " | " between them:

    - the kind, and the oracle rule broken (any violation: a crash, a status disagreement,
      a wrong answer);
    - for a crash, the exception type; for an assertion, the violation's ``key`` (the way
      the rule broke: which call, which path, which field). A status disagreement has no
      stack: the call and the execution path are where it happened. A driver's paths are
      separate code, and a key names a handful of them at most: a bug reached on every
      path makes a few buckets, not one per finding;
    - the normalised stack: the innermost SIGNATURE_FRAMES frames in the driver's code
      (project_frames: neither the harness nor libraries), as function and file, without
      line numbers: a line moves with every edit above it, and a bucket must still match
      the reproducers crashes/ kept from earlier versions. A hang is interrupted wherever
      its loop happened to be: its outermost frames are taken, and the module it was
      stuck in (a kernel's, say; without it every execution hanging on one path would
      share a bucket). An out-of-memory's rule is the limit, whatever type reported it;
      with no frames, the model's operation types stand in;
    - the violation's ``bucket`` refinement, when the oracle or driver set one: what it
      knows of where the failure lies beyond its rule and key. A wrong answer against the
      reference (or a relation's, with a reference) names the first operation whose
      values diverge from the reference's (fuzz/divergence.py: its type, tensor operand
      types, fused activation, padding, layout, quantization class, and the driver's name,
      which names its kernel set), where both drivers keep their operand values; otherwise
      (and for another route's or another path's) the type of the operation that
      produced the output. A crash of the runtime behind a driver names the model's
      operation types; triage of a LiteRT driver's names the first operation whose run
      crashes LiteRT, and how, and a status disagreement the operation it is about, its
      key dropped (backends/litert/reproducer.py, specimen_bucket). A part added here
      changes the bucket of every failure that has it.
    """
    frames = failure.frames[-SIGNATURE_FRAMES:] if failure.kind == "hang" else failure.frames[:SIGNATURE_FRAMES]
    where = " < ".join(f"{function} ({path})" for path, function in frames)
    if failure.kind == "hang" and failure.frames:
        where = f"in {failure.frames[0][0]}: {where}"
    if failure.kind == "oom":
        where = where or "operations: " + ", ".join(failure.operations)
        parts = [failure.kind, failure.rule, where]
    else:
        parts = [failure.kind, failure.rule, failure.exception,
                 failure.key if failure.kind == "assertion" else "", where]
    return " | ".join(part for part in (*parts, failure.bucket) if part)


@dataclass(frozen=True)
class Failure:
    """How an input failed: ``kind`` crash / assertion / hang / oom; ``rule`` the oracle rule
    or ``exception`` the exception type; ``frames`` (file, function) pairs, innermost first;
    ``operations`` the model's operation types, for an out-of-memory with no frames;
    ``bucket`` the violation's refinement of its bucket (see bucket_key); ``divergence``
    a wrong answer's first diverging operation, structured (fuzz/divergence.py), where it
    was found."""
    kind: str
    rule: str
    exception: str
    key: str
    message: str
    frames: tuple[tuple[str, str], ...] = ()
    operations: tuple[str, ...] = ()
    bucket: str = ""
    divergence: dict | None = None

    @property
    def signature(self) -> str:
        return bucket_key(self)

    @property
    def digest(self) -> str:
        return hashlib.sha1(self.signature.encode()).hexdigest()[:16]

    def same_bug(self, other: "Failure | None") -> bool:
        """Loose match, used while minimising: same kind, rule, exception and innermost
        project function (for hangs only the kind and rule: where it spins may move; for
        an out-of-memory only the kind: whichever allocation crosses the limit fails). The
        bucket refinement may change: a wrong answer minimised may lose the operations
        between the one computing it wrong and the output; but a wrong answer whose first
        diverging operation is known keeps it (that operation is the bug)."""
        if other is None or self.kind != other.kind:
            return False
        if self.kind == "oom":
            return True
        if (self.rule, self.exception) != (other.rule, other.exception):
            return False
        if self.kind == "assertion":
            return self.key == other.key and (self.divergence is None or self.bucket == other.bucket)
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


def raised_type_name(error: HalExceptionViolation) -> str:
    """The type of the exception that left the HAL (of one that ended a driver thread, only
    the name travels, in the key)."""
    cause = error.__cause__
    return type(cause).__name__ if cause is not None else error.key.rpartition(": ")[2]


def is_out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` (or, for an exception from the HAL, its cause) is an allocation
    refused: MemoryError (numpy's included) or an OS call failing with ENOMEM."""
    if isinstance(error, HalExceptionViolation):
        if error.__cause__ is None:
            return raised_type_name(error).endswith("MemoryError")
        error = error.__cause__
    return isinstance(error, MemoryError) or (isinstance(error, OSError) and error.errno == errno.ENOMEM)


def describe(error: BaseException) -> Failure:
    message = str(error)[:MESSAGE_LIMIT]
    kind, rule = ("oom", MEMORY_LIMIT_RULE) if is_out_of_memory(error) else ("crash", "")
    if isinstance(error, HangViolation):
        return Failure("hang", error.rule, "", error.key, message, project_frames(error.frames or ()),
                       bucket=error.bucket)
    if isinstance(error, HalExceptionViolation):
        return Failure(kind, rule or error.rule, raised_type_name(error), error.key, message,
                       project_frames(error.frames or ()), bucket=error.bucket)
    if isinstance(error, OracleViolation):
        return Failure("assertion", error.rule, "", error.key, message, (), bucket=error.bucket,
                       divergence=error.divergence)
    frames = traceback.extract_tb(error.__traceback__)
    return Failure(kind, rule, type(error).__name__, "", message, project_frames(frames))


# --- the worker: runs inputs in its own process ------------------------------------------------

def worker_main(memory_limit_mb: int) -> None:
    """Read base64 inputs, one per line; answer one JSON line each."""
    device, oracles = harness.default_device(), harness.configured_oracles()
    # Loaded first: the limit is the inputs' allowance, not the interpreter's and drivers'.
    limit_memory(memory_limit_mb)
    out = sys.stdout
    sys.stdout = sys.stderr          # the driver's prints must not garble the protocol
    for line in sys.stdin:
        failure = None
        try:
            harness.run_one(base64.b64decode(line), device, oracles)
        except Exception as error:   # the failure is the answer here, whatever raised it
            failure = error
        described = describe(failure) if failure is not None else None
        out.write(json.dumps({"failure": asdict(described) if described is not None else None}) + "\n")
        out.flush()
        if described is not None and described.kind in WORKER_RESTARTED_AFTER:
            return


def operation_types(data: bytes) -> tuple[str, ...]:
    """The operation types of an input's model, every subgraph's, sorted."""
    return oracles.operation_types(decode(data).model)


def ran_out_of_memory(stderr_tail: str) -> bool:
    return any(marker in stderr_tail for marker in MEMORY_EXHAUSTION_MARKERS)


class OutOfTime(Exception):
    """A run was stopped at the worker's deadline: the input's failure, if any, is unknown."""


class Worker:
    """A worker process, restarted when it dies, stops answering, hangs or runs out of
    memory; its stderr is kept (per input) to tell a death of memory exhaustion. With a
    ``deadline`` (time.monotonic()), no run outlasts it: one still running then raises
    OutOfTime."""

    def __init__(self, spec: str, memory_limit_mb: int = DEFAULT_MEMORY_LIMIT_MB,
                 deadline: float | None = None) -> None:
        self.spec = spec
        self.memory_limit_mb = memory_limit_mb
        self.deadline = deadline
        self.process: subprocess.Popen | None = None
        self.stderr: IO[bytes] | None = None

    def command(self) -> list[str]:
        return [sys.executable, "-m", "fuzz.triage", "--worker", f"--memory-limit-mb={self.memory_limit_mb}"]

    def _start(self) -> subprocess.Popen:
        env = dict(os.environ, **{DRIVER_ENV: self.spec})
        self._drop_stderr()
        self.stderr = tempfile.TemporaryFile()
        return subprocess.Popen(self.command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=self.stderr, env=env, cwd=REPO_ROOT)

    def run(self, data: bytes, timeout_s: float = PROBE_TIMEOUT_S) -> Failure | None:
        left_s = self.deadline - time.monotonic() if self.deadline is not None else timeout_s
        if left_s <= 0:
            raise OutOfTime("the deadline has passed")
        cut_short = left_s < timeout_s
        timeout_s = min(timeout_s, left_s)
        if self.process is None or self.process.poll() is not None:
            self.process = self._start()
        process = self.process
        # The worker writes through the same file offset: it starts again at 0.
        self.stderr.seek(0)
        self.stderr.truncate()
        try:
            process.stdin.write(base64.b64encode(data) + b"\n")
            process.stdin.flush()
        except BrokenPipeError:
            return self._died(process, data)
        ready, _, _ = select.select([process.stdout], [], [], timeout_s)
        if not ready:
            self.close()
            if cut_short:
                raise OutOfTime(f"stopped at the deadline, {timeout_s:.1f} s in")
            return Failure("hang", "timeout", "", "", f"no answer within {timeout_s:.0f} s")
        line = process.stdout.readline()
        if not line:
            return self._died(process, data)
        fields = json.loads(line)["failure"]
        if fields is None:
            return None
        fields["frames"] = tuple(tuple(frame) for frame in fields["frames"])
        fields["operations"] = tuple(fields["operations"])
        failure = Failure(**fields)
        if failure.kind in WORKER_RESTARTED_AFTER:
            self.close()    # it is on its way out: the next input must not reach it
        if failure.kind == "oom" and not failure.frames:
            failure = replace(failure, operations=operation_types(data))
        return failure

    def reproduce(self, data: bytes) -> Failure | None:
        """The failure of an artifact, run up to REPRODUCTION_ATTEMPTS times (None: none
        failed)."""
        for _ in range(REPRODUCTION_ATTEMPTS):
            failure = self.run(data)
            if failure is not None:
                return failure
        return None

    def _died(self, process: subprocess.Popen, data: bytes) -> Failure:
        code = process.wait()
        self.process = None
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(code)
        tail = self._stderr_tail()
        if ran_out_of_memory(tail):
            last_line = tail.strip().rpartition("\n")[2]
            return Failure("oom", MEMORY_LIMIT_RULE, f"exit {name}", "",
                           f"the worker died ({name}) out of memory: {last_line}"[:MESSAGE_LIMIT],
                           operations=operation_types(data))
        return Failure("crash", "", f"exit {name}", "", f"the worker died ({name})")

    def _stderr_tail(self) -> str:
        self.stderr.seek(0, os.SEEK_END)
        self.stderr.seek(max(0, self.stderr.tell() - STDERR_TAIL_BYTES))
        return self.stderr.read().decode("utf-8", "replace")

    def _drop_stderr(self) -> None:
        if self.stderr is not None:
            self.stderr.close()
            self.stderr = None

    def close(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None
        self._drop_stderr()


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


# --- one artifact -----------------------------------------------------------------------------

@dataclass
class Triaged:
    artifact: str
    failure: Failure | None
    stored: str | None = None
    duplicate: bool = False
    sizes: list[int] = field(default_factory=list)


def validity(case) -> tuple[bool, bool] | None:
    """(model valid, request valid) per the reference validator; None when the validator
    itself fails (the bug being triaged may be in it)."""
    try:
        model_error, request_error = harness.reference_errors(case.model, case.request)
    except Exception:
        return None
    return model_error is None, request_error is None


def minimise_artifact(artifact: Path, worker: Worker, spec: str, *, libfuzzer_s: int,
                      structural_s: float, workdir: Path,
                      log: Callable[[str], None]) -> tuple[bytes, Triaged]:
    """Reproduce and minimise one artifact: (the smallest input found that fails the same
    way, the result); the result's failure is None when the artifact does not reproduce."""
    data, result = minimise_structure(artifact, worker, structural_s=structural_s, log=log)
    if result.failure is not None:
        data = shorten_bytes(data, result, worker, spec, libfuzzer_s=libfuzzer_s, workdir=workdir,
                             log=log)
    return data, result


def failing_the_same_way(data: bytes, failure: Failure, worker: Worker) -> Callable[[bytes], bool]:
    """Whether a candidate fails as ``data`` does: the same bug, with a valid model or
    request staying valid (reproducers read as what a client could send, not as wreckage
    that happens to trip the same check)."""
    wanted_validity = validity(decode(data))

    def still_fails(candidate: bytes) -> bool:
        if validity(decode(candidate)) != wanted_validity:
            return False
        try:
            return failure.same_bug(worker.run(candidate))
        except OutOfTime:        # not known to fail: the case found so far stands
            return False
    return still_fails


def minimise_structure(artifact: Path, worker: Worker, *, structural_s: float,
                       log: Callable[[str], None]) -> tuple[bytes, Triaged]:
    """Reproduce one artifact and minimise its decoded case (fuzz/reduce.py): (the
    encoding of the smallest case found that fails the same way, the result); the
    result's failure is None when the artifact does not reproduce. Past the worker's
    deadline the case found so far is the result (OutOfTime while reproducing it)."""
    data = artifact.read_bytes()
    failure = worker.reproduce(data)
    result = Triaged(str(artifact), failure, sizes=[len(data)])
    if failure is None:
        # libFuzzer's RSS limit is per process: memory a run of earlier inputs kept counts
        # against the input that happened to cross it.
        hint = " alone (libFuzzer's RSS limit counts what earlier inputs kept, too)" if artifact.name.startswith("oom-") else ""
        log(f"{artifact}: does not reproduce{hint}; left in place")
        return data, result
    log(f"{artifact}: {failure.kind}: {failure.signature}")
    still_fails = failing_the_same_way(data, failure, worker)

    def case_still_fails(case) -> bool:
        try:
            return still_fails(encode(case))
        except CodecLimitError:
            return False

    original = decode(data)
    # Every attempt that still hangs costs the hang's time limit and a worker restart.
    budget_s = structural_s * (HANG_BUDGET_FACTOR if failure.kind == "hang" else 1)
    case = minimize(original, case_still_fails, budget_s, log)
    final = encode(case)
    try:
        confirmed = worker.run(final)
    except OutOfTime:
        confirmed = None
    if failure.same_bug(confirmed) and case_size(case) <= case_size(original):
        data, result.failure = final, confirmed
        result.sizes.append(len(data))
    return data, result


def shorten_bytes(data: bytes, result: Triaged, worker: Worker, spec: str, *, libfuzzer_s: int,
                  workdir: Path, log: Callable[[str], None]) -> bytes:
    """After the structure, libFuzzer's byte-level minimiser (crashes and assertions) may
    shorten the encoding, kept when the case reads no larger. (Run first, it made a worse
    start: a byte it changes can pin an operation the structural minimiser would remove.)
    libFuzzer replays in-process: a hang would take its time limit per attempt, an
    out-of-memory its RSS limit's worth of the machine's memory."""
    if result.failure.kind not in ("crash", "assertion") or libfuzzer_s <= 0:
        return data
    start = workdir / f"structural-{Path(result.artifact).name}"
    start.write_bytes(data)
    minimized = libfuzzer_minimize(start, spec, libfuzzer_s, workdir)
    if minimized is None:
        return data
    smaller = minimized.read_bytes()
    if (len(smaller) < len(data) and case_size(decode(smaller)) <= case_size(decode(data))
            and failing_the_same_way(data, result.failure, worker)(smaller)):
        result.sizes.append(len(smaller))
        log(f"  libFuzzer minimised it to {len(smaller)} bytes")
        return smaller
    return data


#: What a failure's bucket becomes once its input is looked at closer, in the triaging
#: process (a native crash of LiteRT: at its first crashing operation).
Localise = Callable[[bytes, Failure], Failure]


def litert_localiser(driver, reference) -> Localise | None:
    """For a LiteRT driver compared with a reference: a native crash of LiteRT bucketed by
    the first operation whose run crashes it, a status disagreement by the operation it is
    about (fuzz/litert_repro.py, localised)."""
    if reference is None or not litert_repro.is_litert_device(driver):
        return None
    return lambda data, failure: litert_repro.localised(failure, decode(data), driver, reference)


def triage_one(artifact: Path, worker: Worker, out_dir: Path, spec: str, *,
               log: Callable[[str], None], localise: Localise | None = None, **budgets) -> Triaged:
    """Reproduce, minimise and store one artifact (``budgets``: minimise_artifact's), its
    failure re-bucketed by ``localise`` when given."""
    data, result = minimise_artifact(artifact, worker, spec, log=log, **budgets)
    if result.failure is not None and localise is not None:
        bucket, result.failure = result.failure.bucket, localise(data, result.failure)
        if result.failure.bucket != bucket:
            log(f"  localised: {result.failure.signature}")
    if result.failure is not None:
        result.stored, result.duplicate = store(data, result.failure, out_dir, spec, artifact.name,
                                                memory_limit_mb=worker.memory_limit_mb)
        log(f"  stored {result.stored}{' (duplicate)' if result.duplicate else ''}; sizes {result.sizes}")
    return result


def preference(data: bytes) -> tuple:
    """Which of two reproducers of one bug to keep (lower first): a valid model and request
    over an invalid one (or one the reference validator fails on), then the one that reads
    smaller (fuzz/reduce.py's case_size), then the shorter."""
    case = decode(data)
    model_valid, request_valid = validity(case) or (False, False)
    return not model_valid, not request_valid, case_size(case), len(data)


def store(data: bytes, failure: Failure, out_dir: Path, spec: str, source: str, *,
          memory_limit_mb: int = DEFAULT_MEMORY_LIMIT_MB, name: str | None = None) -> tuple[str, bool]:
    """Write OUT/<name> (by default the signature's hash) and its sidecar; a known
    signature keeps the better input (see ``preference``). An out-of-memory's sidecar says
    the limit it was found under."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / (name or failure.digest)
    sidecar_path = path.with_suffix(".json")
    duplicate = path.exists()
    if duplicate and preference(path.read_bytes()) <= preference(data):
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
        **({"reference": reference} if (reference := configured_reference(spec)) else {}),
        "source": source,
        "size": len(data),
        "date": datetime.date.today().isoformat(),
        "status": "open",
    }
    if failure.kind == "oom":
        sidecar["memory_limit_mb"] = memory_limit_mb
    if failure.divergence is not None:
        sidecar["divergence"] = failure.divergence
    sidecar_path.write_text(json.dumps(sidecar, indent=2) + "\n")
    return str(path), duplicate


def mark_litert_findings(results: list[Triaged], driver, reference, log: Callable[[str], None]) -> int:
    """Each reproducer of a LiteRT driver stored without a standalone reproducer gets one,
    and the status upstream (fuzz/litert_repro.py); how many did."""
    marked = 0
    for stored in dict.fromkeys(Path(r.stored) for r in results if r.stored):
        sidecar = litert_repro.sidecar_of(stored)
        if "litert" not in sidecar:
            failure = next(r.failure for r in results if r.stored and Path(r.stored) == stored)
            marked += litert_repro.mark_upstream(stored, driver, reference, failure, log)
    return marked


def finding_twin(artifact: Path) -> Path:
    """The harness's copy of a libFuzzer artifact's input (both are named by its SHA-1)."""
    return artifact.with_name(FINDING_PREFIX + artifact.name.split("-", 1)[-1])


def new_artifacts(*folders: Path) -> list[Path]:
    """The artifacts in ``folders``, without the finding- copies of those libFuzzer wrote."""
    found = []
    for folder in dict.fromkeys(folder.resolve() for folder in folders):
        if not folder.is_dir():
            continue
        files = sorted(p for p in folder.iterdir() if p.is_file())
        artifacts = [p for p in files if p.name.startswith(ARTIFACT_PREFIXES)]
        twins = {finding_twin(p) for p in artifacts}
        found += artifacts + [p for p in files if p.name.startswith(FINDING_PREFIX) and p not in twins]
    return found


def given_artifacts(paths: list[Path]) -> list[Path]:
    """The artifacts the command line names: a file as it is, a folder as the artifacts in
    it (as ``new_artifacts`` finds them)."""
    artifacts = []
    for path in paths:
        if not path.is_dir():
            artifacts.append(path)
        elif found := new_artifacts(path):
            artifacts += found
        else:
            print(f"{path}: a folder with no artifacts in it", file=sys.stderr)
    return list(dict.fromkeys(artifacts))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("artifacts", nargs="*", type=Path)
    parser.add_argument("--driver", default=None, help="MODULE:FACTORY (default: $%s or driver:SampleDriver)" % DRIVER_ENV)
    parser.add_argument("--reference", default=None,
                        help="MODULE:FACTORY or none, the reference driver the fuzz run compared "
                             "with (default: $%s, else as the fuzzer chooses)" % REFERENCE_ENV)
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "crashes", help="where reproducers go")
    parser.add_argument("--libfuzzer-seconds", type=int, default=30,
                        help="libFuzzer -minimize_crash time for crashes and assertions (0: skip)")
    parser.add_argument("--structural-seconds", type=float, default=120,
                        help="time budget of the structural minimiser per artifact "
                             f"({HANG_BUDGET_FACTOR}x for hangs)")
    parser.add_argument("--memory-limit-mb", type=int, default=DEFAULT_MEMORY_LIMIT_MB,
                        help="memory the reproducing process may take beyond its own footprint; "
                             "past it an input is an out-of-memory (default: libFuzzer's "
                             "-rss_limit_mb default, %(default)s)")
    parser.add_argument("--keep", action="store_true", help="keep the raw artifacts")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_limit_mb <= 0:
        parser.error("--memory-limit-mb must be positive")
    if args.worker:
        worker_main(args.memory_limit_mb)
        return 0
    spec = args.driver or configured_spec()
    reference = (configured_reference(spec) if args.reference is None
                 else None if args.reference == NO_REFERENCE else args.reference)
    # A spec that gives no device would have every artifact "reproduce" as the worker's
    # death: refuse it here, with a message.
    try:
        driver = make_device(spec)
        reference_device = make_device(reference) if reference else None
    except DriverSpecError as error:
        return report_spec_error(error)
    os.environ.update(environment(spec, reference))  # the worker and libFuzzer's minimiser inherit it
    artifacts = given_artifacts(args.artifacts) if args.artifacts else new_artifacts(args.out, Path.cwd())
    if not artifacts:
        print("no artifacts to triage")
        return 0
    workdir = REPO_ROOT / "fuzz-work" / "triage"
    workdir.mkdir(parents=True, exist_ok=True)
    worker = Worker(spec, args.memory_limit_mb)
    localise = litert_localiser(driver, reference_device)
    results, errors = [], 0
    try:
        for artifact in artifacts:
            try:
                result = triage_one(artifact, worker, args.out, spec, libfuzzer_s=args.libfuzzer_seconds,
                                    structural_s=args.structural_seconds, workdir=workdir,
                                    log=lambda line: print(line, flush=True), localise=localise)
            except Exception as error:   # one artifact's trouble; the others are still triaged
                print(f"ERROR {artifact}: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
                errors += 1
                continue
            results.append(result)
            if result.stored and not args.keep and artifact.resolve() != Path(result.stored).resolve():
                artifact.unlink()
                twin = finding_twin(artifact)
                if twin != artifact and twin.exists():
                    twin.unlink()
    finally:
        worker.close()
    stored = {r.stored for r in results if r.stored}
    upstream = 0
    if reference_device is not None and litert_repro.is_litert_device(driver):
        upstream = mark_litert_findings(results, driver, reference_device, lambda line: print(line, flush=True))
        driver.engine.close()
    print(f"{len(artifacts)} artifacts, {len(stored)} distinct reproducers, "
          f"{sum(r.failure is None for r in results)} not reproduced"
          + (f", {upstream} LiteRT discrepancies reproduced standalone" if upstream else "")
          + (f", {errors} could not be triaged" if errors else ""))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
