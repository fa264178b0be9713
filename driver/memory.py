"""Shared-memory pools (the HAL's hidl_memory).

A pool is an anonymous memfd mapped into this process. Its file descriptor can be sent to
another process (fork inheritance, SCM_RIGHTS, multiprocessing's fd passing) and mapped
there, so a pool is real shared memory, not a Python buffer. Views handed out are
bounds-checked: an operand location outside its pool is rejected during validation and can
never be read here.

Recycling. Creating a memfd and mapping it, then unmapping and closing it, costs about eight
system calls, and the fuzz harness makes and drops a few small pools per input. So the
memfd and mapping of a closed pool are kept in a small bounded list of idle pools and given
to the next pool of the same name and page count. This is safe because a pool is only
recycled when nothing outside this module can still reach its memory:

- no view of it is exported. Every buffer an mmap exports holds a strong reference to the
  mmap object (CPython's buffer protocol), and close() first detaches the mapping from the
  pool, then counts the references left to it: any view, or any thread about to make one
  from the mapping it had already loaded, keeps the count above close()'s own, and then
  the pool is closed as it always was (an exported view keeps its mapping alive);
- its descriptor never left the pool: fileno() marks the pool as shared for good, and a
  pool mapped from a received descriptor (from_fd) or built around a caller's descriptor
  is never recycled;
- no other process shares it through fork: a fork makes every pool then alive
  unrecyclable, in the parent and in the child, and the child drops the idle pools it
  inherited;
- its previous content never shows: a reused pool is resized to its new size (the memfd
  and the mapping always have the pool's exact size) and its whole content is overwritten
  (from_bytes) or zeroed (create) before the pool is handed out.

Shrunk files. Touching a mapping past the end of its file raises SIGBUS, which kills the
process; and whoever holds a pool's descriptor can shrink the file (ftruncate), or hand it
to the driver as a compilation cache file, which the driver must truncate before writing
it. So a pool's memfd is sealed against shrinking (F_SEAL_SHRINK) when its descriptor
leaves the pool (fileno()); and a pool whose descriptor may be held elsewhere unsealed (one
built around a caller's descriptor, or alive at a fork) has the size of its file checked
each time a view of it is made (buffer(), read(), write()): a file now shorter than the pool
is a ValidationError, an error status for the call that brought the pool, never a SIGBUS.
Views are made when a call starts (a launched execution holds the views it made at the
launch): a file shrunk while a call runs is only ever refused by the seal.

Idle pools are keyed by name and page count: a resize within the last page is cheap (and
skipped when an idle pool of the exact size is there: it is still two system calls), and a
recycled memfd carries the name it would have been created with (so a name memfd_create
refuses never reaches the idle list either). The list is bounded (MAX_IDLE_POOLS pools of
at most MAX_RECYCLED_POOL_SIZE bytes) and evicts the pool idle the longest.
"""
from __future__ import annotations

import collections
import fcntl
import mmap
import os
import sys
import threading
from typing import NamedTuple

from .errors import ValidationError

# On inputs from a fuzzing run, 16 idle pools (8 of a kind at most) serve over 90% of the
# pools created; they keep at most 1 MiB and 32 descriptors (a pool has its own descriptor
# and the one its mmap object duplicates). Larger pools are rare and not worth keeping.
MAX_IDLE_POOLS = 16
MAX_IDLE_POOLS_PER_KIND = 8
MAX_RECYCLED_POOL_SIZE = 64 * 1024


def _refcount_of_an_object_held_by_one_local() -> int:
    """What sys.getrefcount says of an object only a local variable refers to, asked the
    way Memory.close asks it of a detached mapping. Whether the call's own argument counts
    differs between Python versions, hence measured rather than written down."""
    only_here = bytearray()
    return sys.getrefcount(only_here)


# Any reference beyond Memory.close's own local means a view (or a thread about to make
# one) still holds the mapping.
_UNSHARED_REFCOUNT = _refcount_of_an_object_held_by_one_local()


# What makes an idle pool reusable as-is, up to a resize within its last page: its name and
# its page count. A plain tuple: it is hashed on every pool created and closed.
_PoolKind = tuple[str, int]


def _pool_kind(name: str, size: int) -> _PoolKind:
    return name, -(-size // mmap.PAGESIZE)


class _IdlePool(NamedTuple):
    fd: int
    mapping: mmap.mmap | None   # None for a zero-sized pool
    size: int

    def release(self) -> None:
        if self.mapping is not None:
            self.mapping.close()
        os.close(self.fd)


class _IdlePools:
    """The memfds and mappings of closed pools waiting for reuse, bounded in number.

    take and give never wait for the lock: give runs from Memory.__del__, which the garbage
    collector may call on a thread already inside take or give (the lock is not reentrant).
    Finding it held just means a pool is created anew, or closed for good."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Kinds in the order they were last given a pool: the first is idle the longest.
        self._by_kind: collections.OrderedDict[_PoolKind, list[_IdlePool]] = \
            collections.OrderedDict()
        self._count = 0

    def take(self, kind: _PoolKind, size: int) -> _IdlePool | None:
        """An idle pool of ``kind``: one of exactly ``size`` bytes if there is one (no
        resize needed), else the one given last."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            pools = self._by_kind.get(kind)
            if not pools:
                return None
            exact = len(pools) - 1
            while exact >= 0 and pools[exact].size != size:
                exact -= 1
            pool = pools.pop(exact)     # -1, the last one, when none has the size
            if not pools:
                del self._by_kind[kind]
            self._count -= 1
            return pool
        finally:
            self._lock.release()

    def give(self, kind: _PoolKind, pool: _IdlePool) -> bool:
        """Keep ``pool`` for reuse; False when there is no room for one more of its kind
        (or the list is busy): then the caller releases it."""
        if not self._lock.acquire(blocking=False):
            return False
        evicted = None
        try:
            same_kind = self._by_kind.get(kind)
            if same_kind is not None and len(same_kind) >= MAX_IDLE_POOLS_PER_KIND:
                return False
            if self._count >= MAX_IDLE_POOLS:
                evicted = self._pop_oldest()     # may be the last one of this very kind
            self._by_kind.setdefault(kind, []).append(pool)
            self._by_kind.move_to_end(kind)
            self._count += 1
        finally:
            self._lock.release()
        if evicted is not None:
            evicted.release()
        return True

    def _pop_oldest(self) -> _IdlePool:
        oldest_kind, oldest = next(iter(self._by_kind.items()))
        pool = oldest.pop(0)
        if not oldest:
            del self._by_kind[oldest_kind]
        self._count -= 1
        return pool

    def release_all(self) -> None:
        with self._lock:
            pools = [pool for kind_pools in self._by_kind.values() for pool in kind_pools]
            self._by_kind.clear()
            self._count = 0
        for pool in pools:
            pool.release()


_idle_pools = _IdlePools()

# Bumped by every fork, in parent and child: a pool records the generation it was created
# in and is only recycled in that same generation, i.e. while no other process shares it.
_fork_generation = 0
_NEVER_RECYCLED = -1


def _after_fork_in_parent() -> None:
    global _fork_generation
    _fork_generation += 1


def _after_fork_in_child() -> None:
    global _fork_generation, _idle_pools
    _fork_generation += 1
    # The child is single-threaded now, but a thread of the parent may have held the lock
    # at the fork: start from a fresh list rather than take that lock. The inherited idle
    # pools are shared with the parent, which may reuse them: release them here.
    inherited, _idle_pools = _idle_pools, _IdlePools()
    inherited._lock = threading.Lock()
    inherited.release_all()


os.register_at_fork(after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child)


def _shrink_sealed(fd: int) -> bool:
    try:
        return bool(fcntl.fcntl(fd, fcntl.F_GET_SEALS) & fcntl.F_SEAL_SHRINK)
    except OSError:     # not a memfd: no seals
        return False


def _check_file_covers(fd: int, size: int) -> None:
    try:
        file_size = os.fstat(fd).st_size
    except OSError:     # closed by a concurrent close()
        raise ValueError("memory pool is closed") from None
    if file_size < size:
        raise ValidationError(f"memory pool of {size} bytes is backed by a file of {file_size} "
                              f"bytes: it was shrunk through another descriptor")


class Memory:
    """An mmap-backed shared-memory region: the Python form of ``hidl_memory``.

    ``name`` follows the HAL's memory names ("ashmem", "mmap_fd", "hardware_buffer_blob").
    """

    __slots__ = ("name", "size", "_fd", "_map", "_lock", "_recyclable_generation",
                 "_own_memfd", "_shrink_sealed", "__weakref__")

    def __init__(self, fd: int, size: int, name: str = "ashmem") -> None:
        if size < 0:
            raise ValueError(f"memory size must be >= 0, got {size}")
        # mmap refuses a zero-length map; a zero-sized pool is still a valid (empty) pool.
        # The descriptor came from the caller, who may share it: never recycled, and its
        # file's size checked at each view unless it is sealed against shrinking already.
        self._setup(fd, mmap.mmap(fd, size) if size > 0 else None, size, name,
                    _NEVER_RECYCLED, own_memfd=False, shrink_sealed=_shrink_sealed(fd))

    def _setup(self, fd: int, mapping: mmap.mmap | None, size: int, name: str,
               recyclable_generation: int, own_memfd: bool, shrink_sealed: bool) -> None:
        self.name = name
        self.size = size
        self._fd = fd
        self._map = mapping
        self._lock = threading.Lock()
        self._recyclable_generation = recyclable_generation
        self._own_memfd = own_memfd           # made by _create_new, which allows sealing
        self._shrink_sealed = shrink_sealed

    @classmethod
    def _own(cls, fd: int, mapping: mmap.mmap | None, size: int, name: str) -> "Memory":
        """A pool on a memfd this module made, whose descriptor has not left it."""
        memory = cls.__new__(cls)
        memory._setup(fd, mapping, size, name, _fork_generation, own_memfd=True,
                      shrink_sealed=False)
        return memory

    @classmethod
    def _reuse(cls, size: int, name: str) -> "Memory | None":
        """A pool of ``size`` bytes on an idle memfd, content not yet written; None if
        there is none of that kind."""
        if not 0 <= size <= MAX_RECYCLED_POOL_SIZE:
            return None
        idle = _idle_pools.take(_pool_kind(name, size), size)
        if idle is None:
            return None
        if idle.size != size:
            try:
                # Same page count: the file is truncated or extended within its last page,
                # the mapping keeps its pages; the kernel zeroes the file past the new size.
                idle.mapping.resize(size)
            except OSError:
                idle.release()
                return None
        return cls._own(idle.fd, idle.mapping, size, name)

    @classmethod
    def create(cls, size: int, name: str = "ashmem") -> "Memory":
        memory = cls._reuse(size, name)
        if memory is not None:
            if size:
                memory._map[:] = bytes(size)
            return memory
        return cls._create_new(size, name)

    @classmethod
    def _create_new(cls, size: int, name: str) -> "Memory":
        fd = os.memfd_create(f"nnhal-{name}", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        try:
            if size:        # a new memfd is empty already
                os.ftruncate(fd, size)
            return cls._own(fd, mmap.mmap(fd, size) if size > 0 else None, size, name)
        except BaseException:
            os.close(fd)
            raise

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview, name: str = "ashmem") -> "Memory":
        size = len(data)
        memory = cls._reuse(size, name) or cls._create_new(size, name)
        if size:
            memory._map[:] = data
        return memory

    @classmethod
    def from_fd(cls, fd: int, size: int, name: str = "ashmem") -> "Memory":
        """Map a pool received from another process (the descriptor is duplicated)."""
        return cls(os.dup(fd), size, name)

    def fileno(self) -> int:
        # The descriptor may now reach another process, which could map the pool for as long
        # as it likes: this pool's memory can never be given to another pool. Nor may it be
        # shrunk under the mapping (by that process, or by the driver given it as a cache file).
        with self._lock:
            self._recyclable_generation = _NEVER_RECYCLED
            if self._own_memfd and not self._shrink_sealed and self._fd >= 0:
                fcntl.fcntl(self._fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK)
                self._shrink_sealed = True
            return self._fd

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def buffer(self) -> memoryview:
        """A writable view of the whole pool (empty for a zero-sized pool)."""
        # Load the mapping before checking the descriptor: close() marks the pool closed
        # before detaching the mapping, so a mapping seen here is either still the pool's
        # or refused below; holding it also keeps a concurrent close() from recycling it.
        mapping = self._map
        fd = self._fd
        if fd < 0:
            raise ValueError("memory pool is closed")
        if mapping is None:
            return memoryview(bytearray())
        if not self._shrink_sealed and self._recyclable_generation != _fork_generation:
            # Someone else may hold the descriptor (see the module's docstring).
            _check_file_covers(fd, self.size)
        return memoryview(mapping)

    def read(self, offset: int = 0, length: int | None = None) -> bytes:
        length = self.size - offset if length is None else length
        self._check_range(offset, length)
        return bytes(self.buffer()[offset:offset + length])

    def write(self, data: bytes | bytearray | memoryview, offset: int = 0) -> None:
        self._check_range(offset, len(data))
        if len(data):
            self.buffer()[offset:offset + len(data)] = data

    def _check_range(self, offset: int, length: int) -> None:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise IndexError(
                f"range [{offset}, {offset + length}) outside memory pool of {self.size} bytes")

    def close(self) -> None:
        with self._lock:
            fd, self._fd = self._fd, -1
            mapping, self._map = self._map, None
            if fd < 0:
                return
            recyclable = (self._recyclable_generation == _fork_generation
                          and self.size <= MAX_RECYCLED_POOL_SIZE
                          and (mapping is None
                               or sys.getrefcount(mapping) == _UNSHARED_REFCOUNT))
            if recyclable and _idle_pools.give(_pool_kind(self.name, self.size),
                                               _IdlePool(fd, mapping, self.size)):
                return
            if mapping is not None:
                try:
                    mapping.close()
                except BufferError:
                    # A view is still exported (e.g. a caller keeps a numpy array on it);
                    # the mapping is released when that view goes away.
                    pass
            os.close(fd)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing useful to do
            pass

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Memory):
            return NotImplemented
        return (self.name == other.name and self.size == other.size
                and self.read() == other.read())

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"Memory(name={self.name!r}, size={self.size})"
