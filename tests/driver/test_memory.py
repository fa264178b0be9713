"""Shared-memory pools (driver/memory.py): real shared memory, bounds-checked views, closed
pools refused, and the recycling of closed pools' memfds, which must never let a pool see
or change memory that something else can still reach."""
from __future__ import annotations

import json
import mmap
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from driver import memory as memory_module
from driver.memory import MAX_IDLE_POOLS, MAX_RECYCLED_POOL_SIZE, Memory
from tests.driver.execution import run_concurrently


@pytest.fixture(autouse=True)
def no_idle_pools():
    """Each test starts without idle pools, whatever ran before."""
    memory_module._idle_pools.release_all()
    yield
    memory_module._idle_pools.release_all()


def inode(pool: Memory) -> int:
    """The memfd behind a pool (read without fileno(), which would make it unrecyclable)."""
    return os.fstat(pool._fd).st_ino


def file_size(pool: Memory) -> int:
    return os.fstat(pool._fd).st_size


def idle_count() -> int:
    return memory_module._idle_pools._count


# --- the pool itself --------------------------------------------------------------------------

@pytest.mark.parametrize("size", [0, 1, 16, 4095, 4096, 4097, MAX_RECYCLED_POOL_SIZE + 1])
def test_from_bytes_holds_the_content_in_a_file_of_the_pool_size(size):
    data = bytes(i % 251 for i in range(size))
    for _ in range(2):                              # a new memfd, then a recycled one
        pool = Memory.from_bytes(data, "mmap_fd")
        assert (pool.name, pool.size, pool.read(), bytes(pool.buffer())) == ("mmap_fd", size, data, data)
        assert file_size(pool) == size
        pool.close()


def test_views_and_accesses_are_bounds_checked():
    pool = Memory.from_bytes(b"0123456789")
    assert pool.read(2, 3) == b"234" and pool.read(10, 0) == b""
    pool.write(b"ab", 8)
    assert pool.read() == b"01234567ab"
    assert len(pool.buffer()) == 10
    for offset, length in [(-1, 1), (0, 11), (9, 2), (11, 0), (0, -1)]:
        with pytest.raises(IndexError, match="outside memory pool of 10 bytes"):
            pool.read(offset, length)
    with pytest.raises(IndexError, match=r"\[9, 11\)"):
        pool.write(b"xy", 9)
    assert pool.read() == b"01234567ab"


def test_a_closed_pool_refuses_access_and_closes_once():
    for size in (0, 8):
        pool = Memory.from_bytes(bytes(size))
        pool.close()
        assert pool.closed
        for access in (pool.buffer, pool.read):
            with pytest.raises(ValueError, match="memory pool is closed"):
                access()
        pool.close()
        assert pool.fileno() == -1


def test_negative_size_is_refused():
    with pytest.raises(ValueError, match="memory size must be >= 0, got -1"):
        Memory(-1, -1)
    with pytest.raises(OSError):
        Memory.create(-1)


def test_the_descriptor_maps_the_same_memory_in_another_process():
    pool = Memory.from_bytes(b"from parent.")
    fd = pool.fileno()
    child = ("import mmap, sys\n"
             "fd = int(sys.argv[1])\n"
             "m = mmap.mmap(fd, 12)\n"
             "assert m[:] == b'from parent.', m[:]\n"
             "m[:] = b'from child!!'\n")
    subprocess.run([sys.executable, "-c", child, str(fd)], pass_fds=[fd], check=True, timeout=60)
    assert pool.read() == b"from child!!"


def test_from_fd_maps_a_duplicate_of_a_received_descriptor():
    sender = Memory.from_bytes(b"shared")
    receiver = Memory.from_fd(sender.fileno(), sender.size, "mmap_fd")
    assert receiver.fileno() != sender.fileno() and receiver.read() == b"shared"
    receiver.write(b"SH")
    assert sender.read() == b"SHared"
    receiver.close()
    assert sender.read() == b"SHared"


# --- recycling --------------------------------------------------------------------------------

def test_a_closed_pool_is_reused_by_the_next_pool_of_its_kind_and_content_is_replaced():
    first = Memory.from_bytes(b"secret content", "ashmem")
    memfd = inode(first)
    first.close()
    assert idle_count() == 1
    second = Memory.from_bytes(b"new", "ashmem")             # same name, same page count
    assert inode(second) == memfd and second.read() == b"new" and file_size(second) == 3
    second.close()
    zeroed = Memory.create(14, "ashmem")
    assert inode(zeroed) == memfd and zeroed.read() == bytes(14) and file_size(zeroed) == 14


def test_a_resized_pool_shows_nothing_of_its_previous_content_past_its_size():
    pool = Memory.from_bytes(b"\xff" * 4096)
    memfd = inode(pool)
    pool.close()
    small = Memory.from_bytes(b"\x01")
    assert inode(small) == memfd
    small.close()
    again = Memory.create(4096)
    assert inode(again) == memfd and again.read() == bytes(4096)


def test_an_idle_pool_of_the_exact_size_is_taken_first():
    """No resize (two system calls) when a pool of the size asked for is idle, whichever
    was given last; otherwise the last one given is resized."""
    sized_100, sized_200 = Memory.from_bytes(bytes(100)), Memory.from_bytes(bytes(200))
    memfd_100, memfd_200 = inode(sized_100), inode(sized_200)
    sized_100.close()
    sized_200.close()                                       # given last
    again_100 = Memory.from_bytes(b"\x07" * 100)
    assert inode(again_100) == memfd_100 and again_100.read() == b"\x07" * 100
    other = Memory.from_bytes(b"\x01" * 150)                # no exact match: the last given
    assert inode(other) == memfd_200 and file_size(other) == 150 and other.read() == b"\x01" * 150


def test_pools_of_another_name_or_page_count_are_not_reused():
    pool = Memory.from_bytes(bytes(100), "ashmem")
    memfd = inode(pool)
    pool.close()
    other_name = Memory.from_bytes(bytes(100), "mmap_fd")
    other_pages = Memory.from_bytes(bytes(4097), "ashmem")
    assert memfd not in (inode(other_name), inode(other_pages))
    assert Memory.from_bytes(bytes(1), "ashmem").read() == b"\0"


def test_a_reused_memfd_keeps_the_name_its_pool_would_have_been_created_with():
    Memory.from_bytes(b"abc", "hardware_buffer_blob").close()
    pool = Memory.from_bytes(b"abcd", "hardware_buffer_blob")
    assert os.readlink(f"/proc/self/fd/{pool.fileno()}").startswith("/memfd:nnhal-hardware_buffer_blob")


def test_a_pool_with_an_exported_view_is_not_reused():
    pool = Memory.from_bytes(b"kept by a view")
    view = pool.buffer()[5:7]
    array = np.frombuffer(pool.buffer(), np.uint8)
    pool.close()
    assert pool.closed and idle_count() == 0
    for _ in range(3):
        Memory.from_bytes(b"X" * 14).write(b"Y" * 14)
    assert bytes(view) == b"by" and array.tobytes() == b"kept by a view"
    view[:] = b"BY"                                 # still writable, and only its own
    assert array.tobytes() == b"kept BY a view"


def test_a_pool_whose_descriptor_was_handed_out_is_not_reused():
    pool = Memory.from_bytes(b"handed out")
    outside = os.dup(pool.fileno())
    try:
        pool.close()
        assert idle_count() == 0
        Memory.from_bytes(b"0123456789").close()
        reused = Memory.from_bytes(b"overwrites")
        with mmap.mmap(outside, 10) as seen_outside:
            assert seen_outside[:] == b"handed out"
        assert reused.read() == b"overwrites"
    finally:
        os.close(outside)


def test_a_pool_mapped_from_a_received_descriptor_is_never_reused():
    raw = os.memfd_create("received")
    try:
        os.ftruncate(raw, 8)
        os.pwrite(raw, b"received", 0)
        Memory.from_fd(raw, 8).close()
        Memory(os.dup(raw), 8).close()
        assert idle_count() == 0
        assert Memory.from_bytes(b"ZZZZZZZZ").read() == b"ZZZZZZZZ"
        assert os.pread(raw, 8, 0) == b"received"
    finally:
        os.close(raw)


def test_idle_pools_are_bounded_in_number_and_size():
    pools = [Memory.from_bytes(bytes(1 + 4096 * (i % 3))) for i in range(3 * MAX_IDLE_POOLS)]
    pools.append(Memory.from_bytes(bytes(MAX_RECYCLED_POOL_SIZE + 1)))
    for pool in pools:
        pool.close()
    assert idle_count() == MAX_IDLE_POOLS
    large = Memory.from_bytes(bytes(MAX_RECYCLED_POOL_SIZE + 1))
    assert all(inode(large) != inode(Memory.from_bytes(bytes(1))) for _ in range(3))


def test_the_pool_idle_the_longest_is_evicted_first():
    oldest = Memory.from_bytes(bytes(5), "oldest")
    oldest_memfd = inode(oldest)
    oldest.close()
    newer = [Memory.from_bytes(bytes(5), f"kind {i % 4}") for i in range(MAX_IDLE_POOLS)]
    for pool in newer:
        pool.close()
    assert idle_count() == MAX_IDLE_POOLS
    assert inode(Memory.from_bytes(bytes(5), "oldest")) != oldest_memfd


def _fork_and_check(parent_step, child_step) -> bytes:
    """Runs ``child_step`` in a forked child after ``parent_step`` ran here; the child's
    answer (bytes) is returned."""
    go_read, go_write = os.pipe()
    answer_read, answer_write = os.pipe()
    pid = os.fork()
    if pid == 0:                                    # pragma: no cover (child)
        status = 1
        try:
            os.close(go_write)
            os.close(answer_read)
            os.read(go_read, 1)
            os.write(answer_write, child_step())
            status = 0
        finally:
            os._exit(status)
    # Only the child keeps these ends open: a child that fails ends the parent's read.
    os.close(go_read)
    os.close(answer_write)
    try:
        parent_step()
        os.write(go_write, b"x")
        answer = os.read(answer_read, 1 << 16)
    finally:
        os.close(go_write)
        _, status = os.waitpid(pid, 0)
        os.close(answer_read)
    assert status == 0, "the forked child failed"
    return answer


def test_a_pool_alive_at_a_fork_is_not_reused_by_the_parent():
    pool = Memory.from_bytes(b"before fork")

    def parent_step():
        pool.close()
        assert idle_count() == 0
        Memory.from_bytes(b"parent!!!!!").write(b"overwritten")

    assert _fork_and_check(parent_step, pool.read) == b"before fork"


def test_idle_pools_at_a_fork_are_not_reused_by_the_child():
    Memory.from_bytes(b"idle").close()
    assert idle_count() == 1
    taken: list[Memory] = []

    def parent_step():
        taken.append(Memory.from_bytes(b"mine"))

    def child_step():
        assert idle_count() == 0
        Memory.from_bytes(b"kids").write(b"KIDS")
        return b"done"

    assert _fork_and_check(parent_step, child_step) == b"done"
    assert taken[0].read() == b"mine"


def test_concurrent_pools_never_share_memory():
    problems: list[str] = []
    kept_views: list[tuple[memoryview, bytes]] = []
    lock = threading.Lock()

    def worker(seed: int) -> None:
        for i in range(300):
            content = bytes([seed, i % 256]) * (1 + (seed + i) % 40)
            pool = Memory.from_bytes(content, ("ashmem", "mmap_fd")[i % 2])
            if pool.read() != content:
                problems.append(f"thread {seed} pool {i}: foreign content")
            if i % 25 == 0:
                with lock:
                    kept_views.append((pool.buffer(), content))
            pool.close()

    run_concurrently(worker, [(seed,) for seed in range(8)])
    assert problems == []
    assert all(bytes(view) == content for view, content in kept_views)


def test_closing_from_several_threads_at_once_recycles_a_pool_once():
    for _ in range(50):
        pool = Memory.from_bytes(b"closing")
        barrier = threading.Barrier(4)

        def close():
            barrier.wait()
            pool.close()

        run_concurrently(close, [()] * 4)
        assert idle_count() == 1
        a, b = Memory.from_bytes(b"first!!"), Memory.from_bytes(b"second!")
        assert inode(a) != inode(b) and (a.read(), b.read()) == (b"first!!", b"second!")
        a.close(), b.close()
        memory_module._idle_pools.release_all()


def test_the_idle_list_never_waits_for_its_lock():
    """A garbage-collected pool is closed from __del__, possibly on a thread already
    inside the idle list: a busy list means a pool is closed for good, or made anew."""
    Memory.from_bytes(b"idle").close()
    idle = inode(Memory.from_bytes(b"kept"))     # dropped right away: idle again
    assert idle_count() == 1
    lock = memory_module._idle_pools._lock
    with lock:
        fresh = Memory.from_bytes(b"anew")
        assert inode(fresh) != idle
        fresh.close()
        assert idle_count() == 1
    assert inode(Memory.from_bytes(b"last")) == idle


# --- files shrunk under their pools -----------------------------------------------------------
# Touching a mapping past the end of its file is a SIGBUS, which would kill the driver's
# process: each case runs in a child process, so that it fails the test instead.

_SHRINK_CHILD = """
import json, os, sys
from driver.device import SampleDriver
from driver.hal.callbacks import PreparedModelCallback
from driver.hal.enums import ErrorStatus, ExecutionPreference, Priority
from driver.hal.structs import OptionalTimePoint
from driver.memory import Memory
from tests.driver.execution import ALL_PATHS, CALLBACK_TIMEOUT_S, execute, prepare
from tests.models import add_model, read_outputs

pool_kind, trigger = sys.argv[1:]
PAST = 64 * 1024
case = add_model()
request = case.request()
# The inputs, moved past the pages a cache file the driver writes fills (a page the file
# still reaches reads as zeros: only a page wholly past its end raises SIGBUS).
content = bytes(PAST) + request.pools[0].hidlMemory.read()
for argument in request.inputs:
    argument.location.offset += PAST
if pool_kind == "driver-memory":
    pool = Memory.from_bytes(content)
else:                                       # the client's own memfd, which it never sealed
    fd = os.memfd_create("client-pool", os.MFD_CLOEXEC)
    os.write(fd, content)
    pool = Memory(fd, len(content))
request.pools[0].hidlMemory = pool
device = SampleDriver()
prepared = prepare(case.model, device)
report = {}
if trigger == "ftruncate":                  # another holder of the descriptor shrinks it
    try:
        os.ftruncate(os.dup(pool.fileno()), 0)
        report["shrunk"] = True
    except PermissionError:
        report["shrunk"] = False
else:                                       # the pool handed to the driver as a cache file
    data_cache = os.memfd_create("data-cache", os.MFD_CLOEXEC)
    callback = PreparedModelCallback()
    device.prepareModel_1_3(case.model, ExecutionPreference.FAST_SINGLE_ANSWER, Priority.MEDIUM,
                            OptionalTimePoint(), [pool.fileno()], [data_cache], bytes(32), callback)
    report["prepared"] = callback.wait(CALLBACK_TIMEOUT_S)[0].name
    report["shrunk"] = os.fstat(pool.fileno()).st_size < pool.size
statuses = []
for path in ALL_PATHS:
    outcome = execute(prepared, request, path)
    right = (outcome.status == ErrorStatus.NONE
             and all((out == exp).all() for out, exp in zip(read_outputs(case.model, request),
                                                           case.expected)))
    statuses.append("right" if right else outcome.status.name)
report["executions"] = statuses
print(json.dumps(report))
"""


@pytest.mark.parametrize("trigger", ["ftruncate", "cache-file"])
@pytest.mark.parametrize("pool_kind", ["driver-memory", "client-memfd"])
def test_a_pool_shrunk_by_a_holder_of_its_descriptor_never_kills_the_process(pool_kind, trigger):
    """A pool of the driver's Memory is sealed against shrinking once its descriptor is
    handed out: shrinking it is refused, and executions go on as before. A client's own
    memfd cannot be sealed by the driver: once shrunk, executions reading it fail with
    INVALID_ARGUMENT. Either way the process lives."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    child = subprocess.run([sys.executable, "-c", _SHRINK_CHILD, pool_kind, trigger],
                           cwd=root, env={**os.environ, "PYTHONPATH": root},
                           capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, f"child ended with {child.returncode}: {child.stderr[-2000:]}"
    report = json.loads(child.stdout.splitlines()[-1])
    sealed = pool_kind == "driver-memory"
    assert report["shrunk"] is not sealed
    assert report.get("prepared", "NONE") == "NONE"     # the cache is not written, that's all
    expected = "right" if sealed else "INVALID_ARGUMENT"
    assert report["executions"] == [expected] * 4
