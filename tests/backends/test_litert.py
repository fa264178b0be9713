"""LiteRT as the engine of the bundled HAL surface (backends/litert): every operation the
table maps computes what the bundled driver computes (alone, in IF branches, in a WHILE
body), getSupportedOperations_1_3 follows the table, loops end at their timeout, and a
crash of LiteRT's worker is a finding. Skipped without the ``litert`` extra."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ai_edge_litert")
pytest.importorskip("flatbuffers")

import backends.litert as litert  # noqa: E402
from backends.litert import auto, builtin, builtin_ref, table, worker  # noqa: E402
from driver import SampleDriver  # noqa: E402
from driver.hal import (ErrorStatus, ExecutionPreference, MeasureTiming,  # noqa: E402
                        OptionalTimeoutDuration, OptionalTimePoint, PreparedModelCallback, Priority)
from driver.hal.enums import OperandType as T, OperationType  # noqa: E402
from fuzz import oracles, seed_models  # noqa: E402
from fuzz.harness import Oracles, run_case  # noqa: E402
from hal_client.builder import ModelBuilder, make_request, out_like  # noqa: E402
from hal_client.examples import counter_loop_model, int32_request  # noqa: E402
from hal_client.paths import END_OF_TIME_NS  # noqa: E402

FACTORIES = {"auto": auto, "builtin": builtin, "builtin_ref": builtin_ref}
REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def device():
    device = builtin_ref()
    yield device
    device.engine.close()


@pytest.fixture(scope="module")
def reference():
    return Oracles(reference=SampleDriver(), relations=False)


SEEDS = seed_models.operation_seeds()
MAPPED = {name: seed for name, seed in SEEDS.items() if seed.operation in table.TABLE}


def _prepare(device, model):
    callback = PreparedModelCallback()
    device.prepareModel_1_3(model, ExecutionPreference.FAST_SINGLE_ANSWER, Priority.MEDIUM,
                            OptionalTimePoint(), [], [], bytes(32), callback)
    return callback.wait()


def _counter(device, n: int, loop_timeout_ns: int):
    status, prepared = _prepare(device, counter_loop_model())
    assert status == ErrorStatus.NONE
    io = int32_request([np.array([0], np.int32), np.array([n], np.int32)], [[1]])
    result = prepared.executeSynchronously_1_3(io.request, MeasureTiming.NO, OptionalTimePoint(),
                                               OptionalTimeoutDuration(nanoseconds=loop_timeout_ns))
    return result, io


# --- what the table maps computes as the bundled driver does --------------------------------

@pytest.mark.parametrize("name", sorted(MAPPED))
def test_operation_matches_the_bundled_driver(name, device, reference):
    """The harness's reference oracle compares LiteRT's outputs with the bundled driver's;
    a seed LiteRT does not support is not run (the table said no)."""
    case = MAPPED[name].case()
    outcome = run_case(case, device, reference)
    if all(device.getSupportedOperations_1_3(case.model)[1]):
        assert outcome.prepare_status == ErrorStatus.NONE
        assert outcome.first.status == ErrorStatus.NONE, outcome.first


def test_most_mapped_seeds_are_supported(device):
    supported = [all(device.getSupportedOperations_1_3(seed.case().model)[1]) for seed in MAPPED.values()]
    assert sum(supported) >= 0.5 * len(supported)


@pytest.mark.parametrize("name", [n for n in sorted(MAPPED) if n.endswith("_example_0")])
def test_operation_in_if_and_while(name, device, reference):
    """IF runs its branch and WHILE its body inside LiteRT, as its own IF and WHILE."""
    seed = MAPPED[name]
    for case in (seed.in_if(True), seed.in_if(False), seed.in_while(3)):
        outcome = run_case(case, device, reference)
        if outcome.prepare_status == ErrorStatus.NONE:
            assert outcome.first.status == ErrorStatus.NONE, outcome.first


def test_control_flow_lowers_to_litert_builtins(device):
    from ai_edge_litert import schema_py_generated as S
    from backends.litert import convert
    model = counter_loop_model()
    analysis = device._analyse(model)
    tflite = S.ModelT.InitFromPackedBuf(convert.lower(model, analysis, table).content)
    codes = [code.builtinCode for code in tflite.operatorCodes]
    assert S.BuiltinOperator.WHILE in codes
    assert len(tflite.subgraphs) == 3          # main, condition, body
    body = tflite.subgraphs[tflite.subgraphs[0].operators[0].builtinOptions.bodySubgraphIndex]
    assert len(body.outputs) == len(body.inputs)   # LiteRT's body returns every loop variable


@pytest.mark.parametrize("seed", [seed_models.while_state_and_input_only, seed_models.nested_if_in_while,
                                  seed_models.nested_while_in_if, seed_models.while_in_while,
                                  seed_models.if_constant_condition])
def test_control_flow_seeds(seed, device, reference):
    outcome = run_case(seed(), device, reference)
    assert outcome.prepare_status == ErrorStatus.NONE
    assert outcome.first.status == ErrorStatus.NONE, outcome.first


# --- getSupportedOperations_1_3 ------------------------------------------------------------------

def test_supported_operations_follow_the_table(device):
    """An operation is supported exactly when the table expresses it: never one without
    an entry, and a mapped one whose types the entry lists."""
    for name, seed in SEEDS.items():
        case = seed.case()
        status, supported = device.getSupportedOperations_1_3(case.model)
        assert status == ErrorStatus.NONE, name
        expected = table.supported_operations(case.model, device._analyse(case.model), "BUILTIN_REF")
        assert supported == expected, name
        if seed.operation not in table.TABLE:
            assert supported == [False], name


def test_a_kernel_set_is_one_of_those_under_test():
    """A name LiteRT knows but the table does not (BUILTIN) would refuse every operation."""
    with pytest.raises(ValueError, match="no LiteRT kernel set 'BUILTIN'"):
        litert.device("BUILTIN")
    assert set(table.TABLE[OperationType.ADD].kernel_sets) == set(litert.KERNEL_SETS.values())


def test_unsupported_operation_is_not_prepared(device):
    """A valid model LiteRT cannot compute is no fault of the model: GENERAL_FAILURE, never
    INVALID_ARGUMENT (which the bundled driver would contradict)."""
    seed = next(s for s in SEEDS.values() if s.operation == OperationType.LSH_PROJECTION)
    model = seed.case().model
    assert device.getSupportedOperations_1_3(model) == (ErrorStatus.NONE, [False])
    status, prepared = _prepare(device, model)
    assert status == ErrorStatus.GENERAL_FAILURE and prepared is None


def _tiled(driver, multiples: list[int], declared: list[int], budget_bytes: int | None = None):
    """The status of TILE of a [2, 3] float32 input by constant ``multiples`` into an output
    the model declares ``declared``, executed on ``driver``."""
    mb = ModelBuilder()
    g = mb.main
    data = g.input(T.TENSOR_FLOAT32, [2, 3])
    (out,) = g.operation(OperationType.TILE, [data, g.constant(T.TENSOR_INT32, multiples, [2])],
                         [(T.TENSOR_FLOAT32, declared)])
    g.outputs(out)
    io = make_request([np.ones((2, 3), np.float32)],
                      [out_like(np.float32, [2 * multiples[0], 3 * multiples[1]])], one_pool=True)
    if budget_bytes is not None:
        driver.memory_budget_bytes = budget_bytes
    status, prepared = _prepare(driver, mb.build())
    assert status == ErrorStatus.NONE
    return prepared.executeSynchronously_1_3(io.request, MeasureTiming.NO, OptionalTimePoint(),
                                             OptionalTimeoutDuration())[0]


def test_a_result_the_model_rules_out_fails_the_execution(device):
    """TILE by a multiple of 0 makes a [0, 12] result, where the model says [4, ?]: LiteRT
    computes it, the driver must not report it (as the bundled executor fails it too)."""
    for driver in (device, SampleDriver()):
        assert _tiled(driver, [0, 4], [4, 0]) == ErrorStatus.GENERAL_FAILURE, driver


# --- time limits and crashes -------------------------------------------------------------------

def _children() -> set[int]:
    """The child processes of this process (of any of its threads)."""
    pids = set()
    for task in os.listdir(f"/proc/{os.getpid()}/task"):
        try:
            with open(f"/proc/{os.getpid()}/task/{task}/children") as f:
                pids.update(int(pid) for pid in f.read().split())
        except (FileNotFoundError, ProcessLookupError):     # the thread ended since listed
            continue
    return pids


def _settled(device) -> int:
    """The threads alive once the engine has a worker ready and started its spare."""
    assert device.engine.workers.wait_ready(60)
    for thread in threading.enumerate():
        if thread.name == "litert-worker-start":
            thread.join(60)
    return threading.active_count()


def _stat(pid: int) -> list[str] | None:
    """The fields of process ``pid``'s /proc stat after its name (its state first); None
    once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _zombies() -> list[int]:
    """Child processes that ended and were never reaped."""
    return [pid for pid in _children() if (_stat(pid) or [""])[0] == "Z"]


def _ended(pid: int) -> bool:
    """Whether process ``pid`` ended (gone, or a zombie waiting to be reaped)."""
    fields = _stat(pid)
    return fields is None or fields[0] == "Z"


def _exited(child: int) -> bool:
    """Whether this process's child ``child`` has exited as waitpid sees it, without
    reaping it. Not _ended: a killed process's first thread is a zombie while its other
    threads still unwind, and until they have, the process is not dead to its parent."""
    try:
        return os.waitid(os.P_PID, child, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:       # reaped already
        return True


def _cpu_seconds(pid: int) -> float:
    """The CPU time process ``pid`` took (user and system); 0 once it ended."""
    fields = _stat(pid)
    return 0.0 if fields is None else (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _await(condition, timeout_s: float) -> bool:
    """Whether ``condition()`` holds within ``timeout_s``, polled."""
    limit = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > limit:
            return False
        time.sleep(0.05)
    return True


def test_endless_loop_ends_at_its_timeout_and_leaks_nothing():
    device = builtin_ref()
    (status, _, _), io = _counter(device, 10, 1_000_000_000)
    assert status == ErrorStatus.NONE and io.output(0, [1])[0] == 10
    settled = _settled(device)
    for _ in range(2):
        assert device.engine.workers.wait_ready(60)     # a spare replaces a killed worker
        started = time.monotonic()
        (status, _, _), _ = _counter(device, 2**31 - 1, 50_000_000)
        took = time.monotonic() - started
        assert status == ErrorStatus.MISSED_DEADLINE_TRANSIENT
        assert took < 0.05 + 0.1 + 2.0      # the timeout, the kill, and a loaded machine
    assert device.engine.statistics["worker killed at the time limit"] == 2
    assert _settled(device) == settled          # no thread left behind
    assert device.engine.workers.alive <= 2     # a worker ready and its spare
    assert _zombies() == []                     # the killed workers were reaped
    (status, _, _), io = _counter(device, 10, 1_000_000_000)      # a new worker runs it
    assert status == ErrorStatus.NONE and io.output(0, [1])[0] == 10
    # The spares outlived the threads that started them (they die with their parent).
    assert device.engine.statistics["idle worker died"] == 0
    device.engine.close()
    assert device.engine.workers.alive == 0


def test_a_dead_worker_is_a_runtime_crash():
    device = builtin_ref()
    _counter(device, 1, 1_000_000_000)
    killed = []

    def kill_the_worker() -> None:
        time.sleep(0.3)
        for pid in _children():
            os.kill(pid, signal.SIGSEGV)
            killed.append(pid)
    killer = threading.Thread(target=kill_the_worker)
    killer.start()
    (status, _, _), _ = _counter(device, 2**31 - 1, 5_000_000_000)
    killer.join()
    assert killed
    assert status == ErrorStatus.GENERAL_FAILURE
    with pytest.raises(oracles.RuntimeCrashViolation, match="signal 11") as crash:
        oracles.check_runtime_alive(device, counter_loop_model())
    # Bucketed by the model's operation types, not by the model's digest its message names.
    assert crash.value.bucket == "operations: ADD, LESS, WHILE"
    oracles.check_runtime_alive(device, counter_loop_model())        # reported once
    device.engine.close()


def test_a_worker_dead_while_idle_is_replaced():
    """A worker killed while idle (by a signal, the OOM killer) is not handed to an
    execution: another runs it, and the death is counted, no crash of the model."""
    others = _children()
    device = builtin_ref()
    _counter(device, 1, 1_000_000_000)
    _settled(device)
    idle = _children() - others
    assert idle
    for pid in idle:
        os.kill(pid, signal.SIGKILL)
    assert _await(lambda: all(_exited(pid) for pid in idle), 60)
    (status, _, _), io = _counter(device, 10, 1_000_000_000)
    assert status == ErrorStatus.NONE and io.output(0, [1])[0] == 10
    assert device.engine.statistics["idle worker died"] == len(idle)
    assert device.engine.take_crashes() == []
    assert not idle & _children()               # the dead workers were reaped
    device.engine.close()


# A process whose device runs a loop that never ends (i = 0; while i < 1: i = i + 0) for
# the longest loop timeout (15 s): it prints the pid of the one worker it has, which the
# execution then takes, and blocks in the execution. Its argument: the repository's root.
ENDLESS_LOOP_CHILD = textwrap.dedent("""
    import glob, sys
    sys.path.insert(0, sys.argv[1])
    from backends.litert import builtin_ref
    from driver.hal import MeasureTiming, OptionalTimeoutDuration, OptionalTimePoint
    from hal_client.examples import prepared_on
    from tests.models import while_counter_model
    device = builtin_ref()
    assert device.engine.workers.wait_ready(60)
    case = while_counter_model(limit=1, start=0, step=0)
    prepared = prepared_on(device, case.model)
    worker, = (pid for path in glob.glob("/proc/self/task/*/children") for pid in open(path).read().split())
    print(worker, flush=True)
    prepared.executeSynchronously_1_3(case.request(), MeasureTiming.NO, OptionalTimePoint(),
                                      OptionalTimeoutDuration(nanoseconds=15_000_000_000))
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_worker_dies_with_its_parent():
    """The process running the driver is killed (libFuzzer's -fork parent kills its
    child; a crash) while its worker runs an endless loop: the worker ends too, instead
    of spinning for ever, nobody left to kill it."""
    child = subprocess.Popen([sys.executable, "-c", ENDLESS_LOOP_CHILD, str(REPO_ROOT)],
                             stdout=subprocess.PIPE, text=True)
    spinning = None
    try:
        spinning = int(child.stdout.readline())
        spun = _cpu_seconds(spinning)
        # In the loop: the worker, idle before the execution, keeps taking CPU time.
        assert _await(lambda: _cpu_seconds(spinning) > spun + 1.0, 120)
        child.kill()
        child.wait()
        assert _await(lambda: _ended(spinning), 30)
    finally:
        child.kill()
        child.wait()
        if spinning is not None and not _ended(spinning):
            os.kill(spinning, signal.SIGKILL)     # what the old code left spinning


def test_a_worker_whose_parent_ended_before_it_started_exits():
    """A worker whose parent ended before it asked the kernel to kill it with its parent
    (it was handed to another parent then: nothing would kill it) exits without serving."""
    started = subprocess.run([sys.executable, worker.__file__, "BUILTIN_REF", str(os.getppid())],
                             input=b"", capture_output=True, timeout=120)
    assert (started.returncode, started.stdout) == (0, b""), started.stderr


def test_a_deadline_at_the_end_of_the_clock_is_waited_for():
    """A deadline of 2^64-1 ns: the wait for the worker is taken in pieces, not handed whole
    to select(), which refuses a timeout past time_t (an OverflowError out of the driver).
    A device of its own: a worker that ran the module's other models may have had its
    memory corrupted by one of them (LiteRT's out-of-bounds reads and writes) and die."""
    device = builtin_ref()
    status, prepared = _prepare(device, counter_loop_model())
    assert status == ErrorStatus.NONE
    for n in (3, 4):            # loading the model, then running it loaded
        io = int32_request([np.array([0], np.int32), np.array([n], np.int32)], [[1]])
        status, _, _ = prepared.executeSynchronously_1_3(
            io.request, MeasureTiming.NO, OptionalTimePoint(nanosecondsSinceEpoch=END_OF_TIME_NS),
            OptionalTimeoutDuration(nanoseconds=1_000_000_000))
        assert status == ErrorStatus.NONE and io.output(0, [1])[0] == n
    device.engine.close()


@pytest.mark.parametrize("factory", sorted(FACTORIES))
def test_every_kernel_set_runs_a_loop(factory):
    device = FACTORIES[factory]()
    (status, _, _), io = _counter(device, 7, 1_000_000_000)
    assert status == ErrorStatus.NONE and io.output(0, [1])[0] == 7
    device.engine.close()


def test_an_execution_keeps_to_the_memory_budget():
    """A result larger than the device's budget ends the execution with
    RESOURCE_EXHAUSTED_PERSISTENT before it reaches the driver's process, as on the
    bundled driver."""
    device = builtin_ref()
    for driver in (device, SampleDriver()):
        assert (_tiled(driver, [1000, 1000], [2000, 3000], budget_bytes=16 << 20)
                == ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT), driver
    device.engine.close()
