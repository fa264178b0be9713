"""Shared-memory pools (the HAL's hidl_memory).

A pool is an anonymous memfd mapped into this process. Its file descriptor can be sent to
another process (fork inheritance, SCM_RIGHTS, multiprocessing's fd passing) and mapped
there, so a pool is real shared memory, not a Python buffer. Views handed out are
bounds-checked: an operand location outside its pool is rejected during validation and can
never be read here.
"""
from __future__ import annotations

import mmap
import os
import threading


class Memory:
    """An mmap-backed shared-memory region: the Python form of ``hidl_memory``.

    ``name`` follows the HAL's memory names ("ashmem", "mmap_fd", "hardware_buffer_blob").
    """

    __slots__ = ("name", "size", "_fd", "_map", "_lock", "__weakref__")

    def __init__(self, fd: int, size: int, name: str = "ashmem") -> None:
        if size < 0:
            raise ValueError(f"memory size must be >= 0, got {size}")
        self.name = name
        self.size = size
        self._fd = fd
        # mmap refuses a zero-length map; a zero-sized pool is still a valid (empty) pool.
        self._map = mmap.mmap(fd, size) if size > 0 else None
        self._lock = threading.Lock()

    @classmethod
    def create(cls, size: int, name: str = "ashmem") -> "Memory":
        fd = os.memfd_create(f"nnhal-{name}", os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, size)
            return cls(fd, size, name)
        except BaseException:
            os.close(fd)
            raise

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview, name: str = "ashmem") -> "Memory":
        memory = cls.create(len(data), name)
        if len(data):
            memory._map[:] = data
        return memory

    @classmethod
    def from_fd(cls, fd: int, size: int, name: str = "ashmem") -> "Memory":
        """Map a pool received from another process (the descriptor is duplicated)."""
        return cls(os.dup(fd), size, name)

    def fileno(self) -> int:
        return self._fd

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def buffer(self) -> memoryview:
        """A writable view of the whole pool (empty for a zero-sized pool)."""
        if self.closed:
            raise ValueError("memory pool is closed")
        return memoryview(self._map) if self._map is not None else memoryview(bytearray())

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
            if self._map is not None:
                try:
                    self._map.close()
                except BufferError:
                    # A view is still exported (e.g. a caller keeps a numpy array on it);
                    # the mapping is released when that view goes away.
                    pass
                self._map = None
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

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
