#!/usr/bin/env python3
"""Coverage-guided fuzzing of an NN HAL 1.3 driver with atheris and libFuzzer.

    python fuzz/driver_fuzz.py [--driver MODULE:FACTORY] [--reference MODULE:FACTORY|none]
                               [--reference-rev REV] [--no-relations] [--trace-comparisons]
                               [--no-custom-mutator] [--no-cpu-binding]
                               [CORPUS_DIR ...] [libFuzzer flags]

``--driver`` names a callable returning an IDevice (default ``driver:SampleDriver``); the
bundled driver package and the named driver's package are instrumented for coverage.
``--reference`` names the driver whose outputs and verdicts the driver's are compared with
(default: the bundled driver, unless it is the one under test; ``none``: no reference), and
``--reference-rev REV`` makes the reference the bundled driver as it was at the git revision
REV (fuzz/pristine.py). ``--no-relations`` turns the metamorphic relations off (see
fuzz/harness.py); ``--no-custom-mutator`` leaves mutation to libFuzzer's byte mutations
(what the structure-aware mutator of fuzz/mutator/ adds shows against it). Every
other argument goes to libFuzzer unchanged (-max_total_time, -runs, -jobs, -fork, -timeout,
-merge, -minimize_crash, -dict, ...). Artifacts go to the repository's crashes/ unless
-artifact_prefix says otherwise; -timeout defaults to 60 s (the harness reports hangs
itself, long before that); -entropic_scale_per_exec_time defaults to 1 (fast inputs are
mutated more often). Harness statistics are printed when the process ends, and each
failure is logged as one line (artifact hash, violation) to findings.log beside the
artifacts.

Coverage is traced per basic block only. atheris can also trace the operands of every
comparison (for libFuzzer's value profile and comparison-guided byte mutations), but this
harness mutates structure with its own mutator, and that tracing more than halves
throughput and makes memory grow with every input. ``--trace-comparisons`` turns it back
on (with -use_value_profile=1, say). Block hits are counted by fuzz/branch_counters.py
rather than by atheris's own tracing function, which costs several times more; the
driver's bookkeeping modules (NOT_INSTRUMENTED) are not traced at all.

Each process that runs inputs binds itself to a CPU no other fuzzing process holds
(fuzz/cpu_binding.py: hand-offs between the harness's and the driver's threads cost a
fraction on one CPU); ``--no-cpu-binding`` leaves it to the kernel.

libFuzzer's -fork, -jobs and -minimize_crash modes re-execute this script by its path, so
it is executable and carries the driver, reference, relations, tracing, mutator and binding
choices in the environment.
A process that ran inputs also writes its harness statistics, as JSON, into the folder
$NNHAL_FUZZ_STATS_DIR when that is set: -fork children's output goes to logs libFuzzer
deletes (scripts/nightly.py adds them up).

No `from __future__` import here: OSS-Fuzz's coverage build prepends code to this file.
"""
import ctypes
import gc
import hashlib
import json
import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
# Run as a script (as libFuzzer's -fork, -jobs and -minimize_crash re-execute it), this
# file's folder comes first on sys.path, where its module names would shadow packages: the
# checkout's root takes its place, so that this checkout's packages are the ones imported.
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(REPO_ROOT)

from fuzz import pristine  # noqa: E402
from fuzz.cpu_binding import NO_BINDING_ENV, bind_to_free_cpu, supervises_others  # noqa: E402
from fuzz.drivers import (DRIVER_ENV, NO_RELATIONS_ENV, REFERENCE_ENV, configured_spec,  # noqa: E402
                          top_package)
from hal_client.device import DriverSpecError, report_spec_error  # noqa: E402

DEFAULT_TIMEOUT_S = 60
DRIVER_FLAG = "--driver"
REFERENCE_FLAG = "--reference"
REFERENCE_REV_FLAG = "--reference-rev"
NO_RELATIONS_FLAG = "--no-relations"
TRACE_COMPARISONS_FLAG = "--trace-comparisons"
TRACE_COMPARISONS_ENV = "NNHAL_FUZZ_TRACE_COMPARISONS"
NO_CUSTOM_MUTATOR_FLAG = "--no-custom-mutator"
NO_CUSTOM_MUTATOR_ENV = "NNHAL_FUZZ_NO_CUSTOM_MUTATOR"
NO_CPU_BINDING_FLAG = "--no-cpu-binding"
STATS_DIR_ENV = "NNHAL_FUZZ_STATS_DIR"
#: Modules of the bundled driver whose branches say nothing about the input that
#: validation's do not already say: the content fingerprint walks every field of a
#: well-typed model the same way (tracing it was a fifth of all block hits), and every
#: rule's ``check`` shares the two branches of driver.errors (which rule failed shows in
#: the caller's blocks; tracing them was an eighth of the rest). The shared-memory pools,
#: the HAL callbacks and the worker threads branch on the process's history (a recycled
#: pool, a thread already started), and so does the memo of validation (a content seen
#: before), not on the input: coverage there would be noise.
NOT_INSTRUMENTED = frozenset({"driver.fingerprint", "driver.errors", "driver.memory",
                              "driver.hal.callbacks", "driver.executor.workers",
                              "driver.validation.memo"})


def split_driver_flag(argv: list[str], flag: str = DRIVER_FLAG) -> tuple[str | None, list[str]]:
    """(``--driver`` value or None, the other arguments); or of ``flag``, another flag
    with a value. libFuzzer would take such a flag for one of its own, misspelt, so it must
    not reach atheris.Setup."""
    spec = None
    rest: list[str] = []
    arguments = iter(argv)
    for argument in arguments:
        if argument == flag:
            spec = next(arguments, None)
            if spec is None:
                raise SystemExit(f"{flag} needs a value: MODULE:FACTORY")
        elif argument.startswith(flag + "="):
            spec = argument.split("=", 1)[1]
        else:
            rest.append(argument)
    return spec, rest


def split_switch(argv: list[str], flag: str) -> tuple[bool, list[str]]:
    """(whether the switch ``flag`` (e.g. ``--no-cpu-binding``) was given, the other arguments)."""
    rest = [argument for argument in argv if argument != flag]
    return len(rest) != len(argv), rest


def bind_cpu(libfuzzer_argv: list[str]) -> None:
    """Bind this process to a free CPU when it will run inputs itself (see
    fuzz/cpu_binding.py). Done before numpy or the driver start any thread: threads
    inherit the binding of the thread that starts them."""
    if os.environ.get(NO_BINDING_ENV) or supervises_others(libfuzzer_argv):
        return
    binding = bind_to_free_cpu()
    if binding is None:
        print("INFO: no free CPU to bind to; running unbound", file=sys.stderr)
    else:
        print(f"INFO: bound to CPU {binding.cpu} (lock {binding.lock_path})", file=sys.stderr)
        bind_cpu.binding = binding      # the lock is held while the process lives


def load_native_counter():
    """The compiled block counter (built on first use), or None: then hits are counted
    with list.append (see fuzz/branch_counters.py)."""
    from fuzz import native_counter
    native = native_counter.load()
    if native is None:
        print("INFO: counting block hits with list.append (no compiled counter: no C "
              "compiler, a frozen fuzzer, or disabled)", file=sys.stderr)
    return native


def instrumented_imports(packages: set[str], trace_comparisons: bool):
    """A context in which imports of ``packages`` (and their submodules) are instrumented
    for coverage; comparison operands are traced only when asked (see the module doc)."""
    import atheris
    try:
        from atheris.import_hook import HookManager
    except ImportError:      # an atheris without it: public API, comparisons traced
        return atheris.instrument_imports(include=sorted(packages), exclude=sorted(NOT_INSTRUMENTED))
    return HookManager(set(packages), set(NOT_INSTRUMENTED), enable_loader_override=True,
                       trace_dataflow=trace_comparisons)


def has_flag(argv: list[str], name: str) -> bool:
    return any(argument.startswith(f"-{name}=") for argument in argv[1:])


def with_default_flags(argv: list[str]) -> list[str]:
    argv = list(argv)
    # A frozen fuzzer (ClusterFuzzLite, OSS-Fuzz) has no repository: libFuzzer's default
    # (the current folder) or the runner's -artifact_prefix.
    if not has_flag(argv, "artifact_prefix") and not getattr(sys, "frozen", False):
        crashes = REPO_ROOT / "crashes"
        crashes.mkdir(exist_ok=True)
        argv.append(f"-artifact_prefix={crashes}/")
    if not has_flag(argv, "timeout"):
        argv.append(f"-timeout={DEFAULT_TIMEOUT_S}")
    if not has_flag(argv, "entropic_scale_per_exec_time"):
        # Inputs whose loops run until a long timeout are slow, and coverage of loop hit
        # counts keeps such inputs in the corpus; scheduling by execution time keeps them
        # from eating the run (at the price of libFuzzer's determinism under -seed).
        argv.append("-entropic_scale_per_exec_time=1")
    return argv


def keep_interpreter_for_children() -> None:
    """Children start this script through its `#!/usr/bin/env python3` line; make that find
    the interpreter running now (a virtualenv's, with atheris), not the system's."""
    bin_dir = os.path.dirname(sys.executable)
    if os.path.exists(os.path.join(bin_dir, "python3")):
        path = os.environ.get("PATH", "")
        if path.split(os.pathsep)[0] != bin_dir:
            os.environ["PATH"] = bin_dir + os.pathsep + path


def print_stats_at_exit(print_stats) -> None:
    """libFuzzer ends the process with exit() from inside atheris.Fuzz(): Python's atexit
    handlers never run, C ones do (the interpreter is still alive then)."""
    callback = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p)(lambda _status, _arg: print_stats())
    print_stats_at_exit.keepalive = callback   # the C side holds only a raw pointer
    ctypes.CDLL(None).on_exit(callback, None)


def findings_log(argv: list[str]) -> Path | None:
    """Where each failure gets one line, keyed like libFuzzer's artifact names. In -fork
    and -jobs modes the children's output is dropped or scattered; this keeps what failed."""
    prefix = next((a.split("=", 1)[1] for a in argv[1:] if a.startswith("-artifact_prefix=")), "")
    folder = Path(prefix) if prefix.endswith("/") else Path(prefix).parent
    return folder / "findings.log" if folder.is_dir() else None


#: The input of a failure is also saved beside findings.log under this prefix and the
#: hash libFuzzer names its artifact with: libFuzzer writes its crash- file only after the
#: failure has unwound to it, and a signal in between (its own -timeout alarm, say) can end
#: the process first. triage.py takes these files too.
FINDING_PREFIX = "finding-"


def record_finding(log: Path | None, data: bytes, error: BaseException) -> None:
    if log is None:
        return
    digest = hashlib.sha1(data).hexdigest()
    (log.parent / f"{FINDING_PREFIX}{digest}").write_bytes(data)
    first_line = (str(error).splitlines() or [""])[0]
    with open(log, "a") as out:
        out.write(f"{digest}  {type(error).__name__}: {first_line}\n")


#: Young-generation size for the cyclic garbage collector (CPython's default is 700). An
#: input allocates thousands of objects, and the mutator's cache of parsed inputs keeps
#: many alive: with the default, collections took about 6 % of the fuzzer's time.
GC_YOUNG_THRESHOLD = 10_000


def tune_garbage_collection() -> None:
    """Fewer, cheaper collections: everything alive after start-up (modules, the driver
    and its tables) is moved out of the collector's sight, and young objects are collected
    in larger batches."""
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


class CoverageCounting:
    """Block hits counted by BranchCounters, set up at the first input (libFuzzer's
    registration functions are loaded by then); atheris's own tracing when they cannot be
    found. ``native`` is the compiled counter module (fuzz/native_counter.py), or None."""

    def __init__(self, atheris_module, native) -> None:
        self._atheris = atheris_module
        self._native = native
        self._counters = None
        self._looked = False

    def start_input(self) -> None:
        if self._looked:
            return
        self._looked = True
        from fuzz.branch_counters import BranchCounters, find_sanitizer_library
        library = find_sanitizer_library()
        if library is None:
            print("WARNING: libFuzzer's coverage registration not found; tracing with atheris's "
                  "own (slower) function", file=sys.stderr)
            return
        self._counters = BranchCounters(library, native=self._native)
        self._counters.install(self._atheris)
        self._counters.start_background_flush()

    def end_input(self) -> None:
        if self._counters is not None:
            self._counters.flush()


#: This script's own flags: (flag, the variable handing it on to the children libFuzzer starts,
#: the variable's value from the flag's; None: a switch, "1").
OWN_FLAGS = ((DRIVER_FLAG, DRIVER_ENV, str),
             (REFERENCE_FLAG, REFERENCE_ENV, str),
             (REFERENCE_REV_FLAG, REFERENCE_ENV, pristine.install),
             (NO_RELATIONS_FLAG, NO_RELATIONS_ENV, None),
             (TRACE_COMPARISONS_FLAG, TRACE_COMPARISONS_ENV, None),
             (NO_CUSTOM_MUTATOR_FLAG, NO_CUSTOM_MUTATOR_ENV, None),
             (NO_CPU_BINDING_FLAG, NO_BINDING_ENV, None))


def configure(argv: list[str]) -> list[str]:
    """This script's own flags (OWN_FLAGS) into the environment, a CPU bound; libFuzzer's
    arguments, with its defaults."""
    given: dict[str, str] = {}          # flag by variable
    for flag, variable, value_of in OWN_FLAGS:
        if value_of is None:
            switched, argv = split_switch(argv, flag)
            value = "1" if switched else None
        else:
            value, argv = split_driver_flag(argv, flag)
        if not value:
            continue
        if variable in given:
            raise SystemExit(f"{given[variable]} or {flag}: not both")
        given[variable] = flag
        os.environ[variable] = "1" if value_of is None else value_of(value)
    keep_interpreter_for_children()
    argv = with_default_flags(argv)
    bind_cpu(argv)
    return argv


def instrumented_device(spec: str):
    """(the device of ``spec``, the configured oracles), with the bundled driver and the
    named driver's package instrumented as they are imported."""
    trace_comparisons = os.environ.get(TRACE_COMPARISONS_ENV) == "1"
    try:
        with instrumented_imports({"driver", top_package(spec)}, trace_comparisons):
            from driver.operations.registry import supported_types
            from fuzz import harness
            from fuzz.drivers import make_device
            supported_types()            # operation modules load lazily: load them instrumented
            device = make_device(spec)
        return device, harness.configured_oracles()
    except DriverSpecError as error:
        sys.exit(report_spec_error(error))


def set_up(atheris, argv: list[str], device, oracles) -> None:
    """atheris.Setup with the input function, the custom mutator unless turned off, and
    the statistics printed at exit, at a hang and at a failure."""
    from fuzz import harness, oracles as oracles_module
    from hal_client.watchdog import WATCHDOG
    stats_dir = os.environ.get(STATS_DIR_ENV)

    def print_stats() -> None:
        if harness.STATS.inputs:
            print(harness.STATS.summary(), file=sys.stderr, flush=True)
            engine = oracles_module.engine_statistics(device)
            if engine:
                print(oracles_module.engine_summary(engine), file=sys.stderr, flush=True)
            if stats_dir:
                Path(stats_dir, f"{os.getpid()}.json").write_text(
                    json.dumps(dict(vars(harness.STATS), engine=engine)))

    findings = findings_log(argv)
    coverage = CoverageCounting(atheris, load_native_counter())

    def test_one_input(data: bytes) -> None:
        coverage.start_input()
        try:
            harness.run_one(data, device, oracles)
        except BaseException as error:
            print_stats()
            record_finding(findings, data, error)
            raise
        finally:
            coverage.end_input()

    WATCHDOG.before_abort = lambda _report: print_stats()
    from fuzz.mutator import crossover, mutate
    tune_garbage_collection()
    if os.environ.get(NO_CUSTOM_MUTATOR_ENV) == "1":
        atheris.Setup(argv, test_one_input)
    else:
        atheris.Setup(argv, test_one_input, custom_mutator=mutate, custom_crossover=crossover)
    print_stats_at_exit(print_stats)


def main() -> None:
    argv = configure(sys.argv)
    import atheris
    device, oracles = instrumented_device(configured_spec())
    set_up(atheris, argv, device, oracles)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
