"""Memory domains and compilation caching from the client's side: IDevice.allocate,
IBuffer.copyFrom and copyTo, getNumberOfCacheFilesNeeded, and the cache files a client
hands prepareModel_1_3 and prepareModelFromCache_1_3. Each call goes through a HalClient
(its time limit, an exception becomes a violation) and has its answer checked by
contract.py. The conformance runner and the fuzz harness both use these.
"""
from __future__ import annotations

import os
from typing import Any, Sequence

from driver.hal import BufferDesc, BufferRole, ErrorStatus, Memory

from . import contract
from .paths import HalClient


def allocate(client: HalClient, device: Any, prepared_models: Sequence[Any],
             inputRoles: Sequence[BufferRole], outputRoles: Sequence[BufferRole],
             ) -> tuple[ErrorStatus, Any, int]:
    """IDevice.allocate of a buffer whose properties the roles decide (an empty BufferDesc)."""
    what = "IDevice.allocate"
    status, buffer, token = contract.unpack(client.call(
        client.call_limit_s, what, device.allocate, BufferDesc(), list(prepared_models),
        list(inputRoles), list(outputRoles)), 3, what)
    status = contract.as_status(status, what)
    contract.check_allocation(status, buffer, token)
    return status, buffer, token


def copy_from(client: HalClient, buffer: Any, src: Memory, dimensions: Sequence[int]) -> ErrorStatus:
    what = "IBuffer.copyFrom"
    return contract.as_status(client.call(client.call_limit_s, what, buffer.copyFrom, src,
                                          list(dimensions)), what)


def copy_to(client: HalClient, buffer: Any, size: int) -> bytes | None:
    """The buffer's content through IBuffer.copyTo into a memory of ``size`` bytes (None
    when the copy fails)."""
    what = "IBuffer.copyTo"
    dst = Memory.create(size)
    status = contract.as_status(client.call(client.call_limit_s, what, buffer.copyTo, dst), what)
    return dst.read() if status == ErrorStatus.NONE else None


def cache_files_needed(client: HalClient, device: Any) -> tuple[ErrorStatus, int, int]:
    """getNumberOfCacheFilesNeeded: (status, numModelCache, numDataCache)."""
    what = "getNumberOfCacheFilesNeeded"
    status, model_files, data_files = contract.unpack(
        client.call(client.call_limit_s, what, device.getNumberOfCacheFilesNeeded), 3, what)
    status = contract.as_status(status, what)
    contract.check_cache_file_counts(status, model_files, data_files)
    return status, model_files, data_files


class CacheFiles:
    """The cache files a client gives a driver: anonymous in-memory files (a temporary
    file on disk costs milliseconds to close), closed on leaving the ``with`` block."""

    def __init__(self, model_files: int, data_files: int) -> None:
        handles = [os.memfd_create("nnhal-cache", os.MFD_CLOEXEC)
                   for _ in range(model_files + data_files)]
        self.handles = handles
        self.model, self.data = handles[:model_files], handles[model_files:]

    def __enter__(self) -> CacheFiles:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        for handle in self.handles:
            os.close(handle)

    def contents(self) -> list[bytes]:
        """Each file's bytes, the model cache files first."""
        return [os.pread(fd, os.fstat(fd).st_size, 0) for fd in self.handles]

    def write(self, contents: Sequence[bytes]) -> None:
        """Replace each file's bytes (as ``contents`` orders them)."""
        for fd, content in zip(self.handles, contents):
            os.ftruncate(fd, 0)
            os.pwrite(fd, content, 0)
