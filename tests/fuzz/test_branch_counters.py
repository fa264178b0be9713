"""BranchCounters: block hits recorded by list.append become libFuzzer's 8-bit counters."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from fuzz import branch_counters
from fuzz.branch_counters import MAX_COUNT, BranchCounters

REPO_ROOT = Path(__file__).resolve().parents[2]


class CallableNamespace(SimpleNamespace):
    """A stand-in for a ctypes function: callable, with argtypes and restype to set."""

    def __call__(self, *arguments):
        return self.__dict__["__call__"](*arguments)


@pytest.fixture
def library(monkeypatch) -> SimpleNamespace:
    ranges: dict[str, list] = {"counters": [], "pcs": []}

    def recorder(kind: str) -> CallableNamespace:
        return CallableNamespace(__call__=lambda start, stop: ranges[kind].append((start, stop)),
                                 argtypes=None, restype=None)

    fake = SimpleNamespace(**{branch_counters.COUNTERS_INIT: recorder("counters"),
                              branch_counters.PCS_INIT: recorder("pcs")})
    # The registered part grows to every counter atheris reserved so far: pretend 100.
    monkeypatch.setitem(sys.modules, "atheris", SimpleNamespace(_reserve_counter=lambda: 100))
    fake.ranges = ranges
    return fake


def test_hits_become_counts(library):
    counters = BranchCounters(library, capacity=1024)
    counters.hits.extend([5, 7, 5, 5, 0])
    counters.flush()
    assert counters.hits == []
    assert counters.counters[[0, 5, 7]].tolist() == [1, 3, 1]
    assert np.count_nonzero(counters.counters) == 3
    counters.hits.extend([7])
    counters.flush()
    assert counters.counters[7] == 2


def test_counts_saturate_instead_of_wrapping(library):
    """atheris's counters wrap: a block run 256 times read as never run."""
    counters = BranchCounters(library, capacity=1024)
    counters.hits.extend([3] * 256 + [4] * 1000)
    counters.flush()
    assert counters.counters[3] == MAX_COUNT
    assert counters.counters[4] == MAX_COUNT
    counters.hits.extend([5] * 200)
    counters.flush()
    counters.hits.extend([5] * 100 + [3])      # across flushes too
    counters.flush()
    assert counters.counters[[3, 4, 5]].tolist() == [MAX_COUNT] * 3


def test_registration_covers_every_reserved_counter_once(library):
    counters = BranchCounters(library, capacity=1024)
    base = counters.counters.ctypes.data
    pcs = counters.pc_table.ctypes.data
    counters.hits.append(3)
    counters.flush()
    # Everything reserved so far (100 counters and one more for asking), in one range.
    assert library.ranges["counters"] == [(base, base + 101)]
    assert library.ranges["pcs"] == [(pcs, pcs + 101 * 16)]
    counters.hits.append(50)
    counters.flush()
    assert len(library.ranges["counters"]) == 1        # already registered: nothing new
    counters.hits.append(500)                          # a module imported later
    counters.flush()
    assert library.ranges["counters"][1] == (base + 101, base + 501)
    assert library.ranges["pcs"][1] == (pcs + 101 * 16, pcs + 501 * 16)
    assert counters.counters[500] == 1


def test_counter_numbers_beyond_capacity_share_counters(library):
    counters = BranchCounters(library, capacity=128)
    counters.hits.extend([130, 2])
    counters.flush()
    assert counters.counters[2] == 2
    assert counters.registered <= 128


def test_install_replaces_the_function_instrumented_code_calls(library):
    counters = BranchCounters(library, capacity=64)
    module = SimpleNamespace(_trace_branch=None)
    counters.install(module)
    module._trace_branch(9)
    module._trace_branch(9)
    assert counters.hits == [9, 9]


def test_empty_flush_registers_nothing(library):
    counters = BranchCounters(library, capacity=64)
    counters.flush()
    assert library.ranges["counters"] == [] and counters.registered == 0


@pytest.mark.timeout(300)
def test_libfuzzer_sees_the_counted_coverage(tmp_path):
    """End to end: libFuzzer's coverage of a few seeds comes through these counters
    (atheris's own stay zero, so without them libFuzzer would see no coverage at all)."""
    pytest.importorskip("atheris")
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    for seed in sorted((REPO_ROOT / "corpus").iterdir())[:40]:
        shutil.copy(seed, seeds / seed.name)
    run = subprocess.run([sys.executable, str(REPO_ROOT / "fuzz" / "driver_fuzz.py"), str(seeds),
                          "-runs=0", f"-artifact_prefix={tmp_path}/"],
                         capture_output=True, text=True, timeout=280, cwd=tmp_path)
    output = run.stdout + run.stderr
    assert "coverage registration not found" not in output, output[-3000:]
    inited = re.search(r"INITED cov: (\d+) ft: (\d+)", output)
    assert inited, output[-3000:]
    assert int(inited.group(1)) > 200 and int(inited.group(2)) > int(inited.group(1)), inited.group(0)


def test_the_background_thread_bounds_the_pending_hits(library, monkeypatch):
    """A loop recording millions of hits must not grow the list without bound: the
    background thread flushes it while the input is still running."""
    import threading
    import time
    monkeypatch.setattr(branch_counters, "BACKGROUND_POLL_S", 0.001)
    counters = BranchCounters(library, capacity=1024)
    counters.start_background_flush()
    record = counters.hits.append
    total = 40 * branch_counters.BACKGROUND_FLUSH_AT
    deadline = time.monotonic() + 20
    largest = recorded = 0
    while recorded < total and time.monotonic() < deadline:
        for _ in range(10_000):
            record(7)
        recorded += 10_000
        largest = max(largest, len(counters.hits))
    counters.flush()
    assert counters.hits == [] and counters.counters[7] == MAX_COUNT
    # Without the thread the list would reach `total`; with it, a few thresholds at most
    # (the time the thread waits for the interpreter lock and takes to flush).
    assert largest < total // 4, (largest, recorded)
    assert any(t.name == BranchCounters.THREAD_NAME for t in threading.enumerate())


# --- the compiled counter ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def native(tmp_path_factory):
    from fuzz import native_counter
    module = native_counter.load(tmp_path_factory.mktemp("native"))
    if module is None:
        pytest.skip("no C compiler or Python headers: the compiled counter cannot be built")
    yield module
    module.unbind()


def _counted_both_ways(library, native, hits: list[int], capacity: int) -> tuple[np.ndarray, np.ndarray]:
    by_list = BranchCounters(library, capacity=capacity)
    by_list.hits.extend(hits)
    by_list.flush()
    compiled = BranchCounters(library, capacity=capacity, native=native)
    module = SimpleNamespace(_trace_branch=None)
    compiled.install(module)
    for number in hits:
        module._trace_branch(number)
    compiled.flush()
    compiled.unbind()
    return by_list.counters, compiled.counters


def test_compiled_counter_counts_as_the_list_does(library, native):
    """Same hits, same counters: saturation at 255, numbers beyond capacity folded."""
    rng = np.random.default_rng(5)
    hits = rng.integers(0, 300, 5000).tolist() + [7] * 400 + [1000, 1000, 1]
    expected, counted = _counted_both_ways(library, native, hits, capacity=512)
    assert np.array_equal(expected, counted)
    assert counted[7] == MAX_COUNT and counted[1000 % 512] >= 2


def test_compiled_counter_registers_what_it_hits(library, native):
    counters = BranchCounters(library, capacity=1024, native=native)
    base = counters.counters.ctypes.data
    counters.install(SimpleNamespace())
    counters.flush()
    assert library.ranges["counters"] == []          # nothing hit yet, nothing registered
    native.hit(3)
    counters.flush()
    assert library.ranges["counters"] == [(base, base + 101)]
    native.hit(500)
    counters.flush()
    assert library.ranges["counters"][1] == (base + 101, base + 501)
    assert counters.start_background_flush() is None   # nothing ever piles up
    counters.unbind()


def test_compiled_counter_refuses_to_count_unbound(native):
    native.unbind()
    with pytest.raises(RuntimeError, match="no counter array bound"):
        native.hit(1)
    with pytest.raises(ValueError):
        native.hit(-1)


def test_compiled_counter_is_built_once_and_reused(tmp_path):
    from fuzz import native_counter
    if native_counter.load(tmp_path) is None:
        pytest.skip("no C compiler or Python headers")
    built = native_counter.built_path(tmp_path)
    assert built.exists()
    stamp = built.stat().st_mtime_ns
    assert native_counter.load(tmp_path) is not None and built.stat().st_mtime_ns == stamp
    assert [p.name for p in tmp_path.iterdir()] == [built.name]     # no build leftovers


def test_without_a_compiler_the_list_is_used(tmp_path, monkeypatch):
    from fuzz import native_counter
    monkeypatch.setattr(native_counter, "compiler_command", lambda source, output: ["false"])
    assert native_counter.load(tmp_path) is None
    monkeypatch.setenv(native_counter.DISABLE_ENV, "1")
    assert native_counter.load() is None
