"""Compilation caching (prepareModel_1_3 with cache handles, prepareModelFromCache_1_3), in
the manner of the VTS's CompilationCachingTests: a round trip computes the same outputs,
wrong handles are refused as the HAL says, and every cache content the driver did not
write for the token (each byte flipped, each truncation, swapped files, another token's or
another driver version's) is an error status, never an exception and never a model."""
from __future__ import annotations

import os

import numpy as np
import pytest

import driver.device
from driver import cache
from driver.device import SampleDriver
from driver.hal.callbacks import PreparedModelCallback
from driver.hal.enums import ErrorStatus, ExecutionPreference, Priority
from driver.hal.structs import Model, OptionalTimePoint
from tests.driver.execution import CALLBACK_TIMEOUT_S, ALL_PATHS, Path, execute
from tests.models import (ModelCase, add_model, constant_reference_model, fibonacci_while_model,
                          nested_model, per_channel_model, quant8_add_model, read_outputs)

TOKEN = bytes(range(32))
OTHER_TOKEN = bytes(range(1, 33))
CASES = [add_model, quant8_add_model, constant_reference_model, per_channel_model,
         fibonacci_while_model, nested_model]


@pytest.fixture
def device():
    return SampleDriver()


class CacheFiles:
    """Cache files in a folder, opened on demand with a given access mode; every
    descriptor is closed at the end of the test."""

    def __init__(self, folder) -> None:
        self.folder = folder
        self.fds: list[int] = []

    def open(self, name: str, flags: int = os.O_RDWR) -> int:
        fd = os.open(self.folder / name, flags | os.O_CREAT, 0o600)
        self.fds.append(fd)
        return fd

    def handles(self, prefix: str = "", model_flags: int = os.O_RDWR,
                data_flags: int = os.O_RDWR) -> tuple[list[int], list[int]]:
        return [self.open(prefix + "model", model_flags)], [self.open(prefix + "data", data_flags)]

    def read(self, name: str) -> bytes:
        return (self.folder / name).read_bytes()

    def write(self, name: str, content: bytes) -> None:
        (self.folder / name).write_bytes(content)


@pytest.fixture
def files(tmp_path):
    opened = CacheFiles(tmp_path)
    yield opened
    for fd in opened.fds:
        os.close(fd)


def prepare_with_cache(device, model: Model, model_cache, data_cache, token=TOKEN):
    callback = PreparedModelCallback()
    launch = device.prepareModel_1_3(model, ExecutionPreference.FAST_SINGLE_ANSWER,
                                     Priority.MEDIUM, OptionalTimePoint(), model_cache,
                                     data_cache, token, callback)
    status, prepared = callback.wait(CALLBACK_TIMEOUT_S)
    assert launch == status and (status == ErrorStatus.NONE) == (prepared is not None)
    return status, prepared


def prepare_from_cache(device, model_cache, data_cache, token=TOKEN):
    callback = PreparedModelCallback()
    launch = device.prepareModelFromCache_1_3(OptionalTimePoint(), model_cache, data_cache,
                                              token, callback)
    assert callback.wait_for_notify(CALLBACK_TIMEOUT_S) and callback.notify_count == 1
    status, prepared = callback.calls[0]
    assert launch == status and (status == ErrorStatus.NONE) == (prepared is not None)
    return status, prepared


def assert_refused(device, model_cache, data_cache, token=TOKEN) -> None:
    """prepareModelFromCache_1_3 fails as the VTS allows (GENERAL_FAILURE or
    INVALID_ARGUMENT), with no prepared model."""
    status, prepared = prepare_from_cache(device, model_cache, data_cache, token)
    assert status in (ErrorStatus.GENERAL_FAILURE, ErrorStatus.INVALID_ARGUMENT)
    assert prepared is None


def computes(prepared, case: ModelCase, path: Path = Path.SYNC) -> list[np.ndarray]:
    request = case.request()
    assert execute(prepared, request, path).status == ErrorStatus.NONE
    return read_outputs(case.model, request)


def saved(device, files, case: ModelCase, token=TOKEN, prefix: str = ""):
    model_cache, data_cache = files.handles(prefix)
    status, prepared = prepare_with_cache(device, case.model, model_cache, data_cache, token)
    assert status == ErrorStatus.NONE
    return model_cache, data_cache


# --- round trips ---------------------------------------------------------------------------

def test_the_driver_asks_for_one_model_and_one_data_cache_file(device):
    assert device.getNumberOfCacheFilesNeeded() == (ErrorStatus.NONE, 1, 1)


@pytest.mark.parametrize("make_case", CASES, ids=lambda f: f.__name__)
def test_a_model_prepared_from_its_cache_computes_the_same(device, files, make_case):
    case = make_case()
    model_cache, data_cache = saved(device, files, case)
    status, prepared = prepare_from_cache(SampleDriver(), model_cache, data_cache)
    assert status == ErrorStatus.NONE
    for path in ALL_PATHS:
        outputs = computes(prepared, case, path)
        for output, expected in zip(outputs, case.expected):
            np.testing.assert_array_equal(output, expected)


@pytest.mark.parametrize("make_case", CASES, ids=lambda f: f.__name__)
def test_serialising_a_model_is_exact(make_case):
    model = make_case().model
    assert cache.deserialize_model(*cache.serialize_model(model)) == model


def test_files_of_any_size_and_offset_are_truncated_before_writing(device, files):
    model_cache, data_cache = files.handles()
    for fd in model_cache + data_cache:
        os.write(fd, b"stale content " * 100)   # leaves the offset at the end
    case = add_model()
    assert prepare_with_cache(device, case.model, model_cache, data_cache)[0] == ErrorStatus.NONE
    status, prepared = prepare_from_cache(device, model_cache, data_cache)
    assert status == ErrorStatus.NONE
    assert files.read("model").find(b"stale") < 0 and files.read("data").find(b"stale") < 0
    # The client's descriptors stay open and the client's.
    for fd in model_cache + data_cache:
        os.fstat(fd)


def test_saving_again_replaces_the_cache(device, files):
    model_cache, data_cache = saved(device, files, add_model())
    case = constant_reference_model()
    assert prepare_with_cache(device, case.model, model_cache, data_cache)[0] == ErrorStatus.NONE
    status, prepared = prepare_from_cache(device, model_cache, data_cache)
    np.testing.assert_array_equal(computes(prepared, case)[0], case.expected[0])


# --- handles -------------------------------------------------------------------------------

@pytest.mark.parametrize("counts", [(0, 1), (1, 0), (2, 1), (1, 2), (0, 0)])
def test_another_number_of_files_prepares_without_caching(device, files, counts):
    model_cache = [files.open(f"model{i}") for i in range(counts[0])]
    data_cache = [files.open(f"data{i}") for i in range(counts[1])]
    case = add_model()
    status, prepared = prepare_with_cache(device, case.model, model_cache, data_cache)
    assert status == ErrorStatus.NONE
    np.testing.assert_array_equal(computes(prepared, case)[0], case.expected[0])
    assert all(os.fstat(fd).st_size == 0 for fd in model_cache + data_cache)
    assert_refused(device, model_cache, data_cache)


@pytest.mark.parametrize("counts", [(0, 1), (1, 0), (2, 1), (1, 2), (0, 0)])
def test_preparing_from_another_number_of_files_is_refused(device, files, counts):
    model_cache, data_cache = saved(device, files, add_model())
    extra = files.open("extra")
    model_cache = (model_cache + [extra])[:counts[0]]
    data_cache = (data_cache + [extra])[:counts[1]]
    assert_refused(device, model_cache, data_cache)


@pytest.mark.parametrize("handle", [None, "3", -1, 2 ** 31, 2.0, True, object()],
                         ids=["None", "str", "-1", "2^31", "float", "bool", "object"])
def test_a_handle_that_is_no_file_descriptor_is_invalid(device, files, handle):
    model_cache, data_cache = saved(device, files, add_model())
    case = add_model()
    assert prepare_with_cache(device, case.model, [handle], data_cache)[0] == ErrorStatus.INVALID_ARGUMENT
    assert prepare_with_cache(device, case.model, model_cache, [handle])[0] == ErrorStatus.INVALID_ARGUMENT
    assert prepare_from_cache(device, [handle], data_cache)[0] == ErrorStatus.INVALID_ARGUMENT
    assert prepare_from_cache(device, model_cache, [handle])[0] == ErrorStatus.INVALID_ARGUMENT


@pytest.mark.parametrize("read_only", ["model", "data"])
def test_files_that_cannot_be_written_leave_no_cache(device, files, read_only):
    files.write("model", b"")
    files.write("data", b"")
    flags = {"model": os.O_RDWR, "data": os.O_RDWR, read_only: os.O_RDONLY}
    model_cache, data_cache = files.handles(model_flags=flags["model"], data_flags=flags["data"])
    case = add_model()
    status, prepared = prepare_with_cache(device, case.model, model_cache, data_cache)
    assert status == ErrorStatus.NONE
    np.testing.assert_array_equal(computes(prepared, case)[0], case.expected[0])
    assert_refused(device, model_cache, data_cache)


@pytest.mark.parametrize("write_only", ["model", "data"])
def test_files_that_cannot_be_read_are_refused(device, files, write_only):
    saved(device, files, add_model())
    flags = {"model": os.O_RDWR, "data": os.O_RDWR, write_only: os.O_WRONLY}
    model_cache, data_cache = files.handles(model_flags=flags["model"], data_flags=flags["data"])
    assert_refused(device, model_cache, data_cache)


def test_a_closed_descriptor_is_refused(device, files):
    model_cache, data_cache = saved(device, files, add_model())
    closed = os.open(files.folder / "model", os.O_RDONLY)
    os.close(closed)
    assert_refused(device, [closed], data_cache)
    case = add_model()
    for handles in ([closed], [2 ** 31 - 1]):     # no open file, so nothing is saved
        status, prepared = prepare_with_cache(device, case.model, handles, data_cache)
        assert status == ErrorStatus.NONE
        np.testing.assert_array_equal(computes(prepared, case)[0], case.expected[0])


def test_an_invalid_model_is_never_cached(device, files):
    model_cache, data_cache = files.handles()
    case = add_model()
    case.model.main.inputIndexes = [99]
    status, _ = prepare_with_cache(device, case.model, model_cache, data_cache)
    assert status == ErrorStatus.INVALID_ARGUMENT
    assert files.read("model") == b"" and files.read("data") == b""


# --- content the driver did not write for this token ---------------------------------------

@pytest.mark.parametrize("name", ["model", "data"])
def test_every_flipped_byte_is_refused(device, files, name):
    model_cache, data_cache = saved(device, files, add_model())
    original = files.read(name)
    assert len(original) > 0
    for position in range(len(original)):
        corrupted = bytearray(original)
        corrupted[position] ^= 0x01 if position % 2 else 0x80
        files.write(name, bytes(corrupted))
        assert_refused(device, model_cache, data_cache)
    files.write(name, original)
    assert prepare_from_cache(device, model_cache, data_cache)[0] == ErrorStatus.NONE


@pytest.mark.parametrize("name", ["model", "data"])
def test_every_truncation_and_extension_is_refused(device, files, name):
    model_cache, data_cache = saved(device, files, add_model())
    original = files.read(name)
    for length in range(len(original)):
        files.write(name, original[:length])
        assert_refused(device, model_cache, data_cache)
    files.write(name, original + b"\0")
    assert_refused(device, model_cache, data_cache)


def test_swapped_files_are_refused(device, files):
    model_cache, data_cache = saved(device, files, add_model())
    assert_refused(device, data_cache, model_cache)


def test_another_tokens_files_are_refused(device, files):
    model_cache, data_cache = saved(device, files, add_model(), token=OTHER_TOKEN)
    assert_refused(device, model_cache, data_cache, token=TOKEN)
    # Nor does a file of one token pair with a file of another.
    other_model, other_data = saved(device, files, add_model(), token=TOKEN, prefix="other-")
    assert_refused(device, model_cache, other_data, token=TOKEN)
    assert_refused(device, other_model, data_cache, token=TOKEN)


def test_a_data_file_of_another_model_is_refused(device, files):
    model_cache, data_cache = saved(device, files, constant_reference_model())
    other_model, other_data = saved(device, files, quant8_add_model(), prefix="other-")
    assert_refused(device, model_cache, other_data)
    assert_refused(device, other_model, data_cache)


def test_another_driver_versions_files_are_refused(device, files, monkeypatch):
    model_cache, data_cache = saved(device, files, add_model())
    monkeypatch.setattr(driver.device, "VERSION", driver.device.VERSION + "-next")
    assert_refused(device, model_cache, data_cache)


def test_another_format_version_is_refused(device, files, monkeypatch):
    monkeypatch.setattr(cache, "FORMAT_VERSION", cache.FORMAT_VERSION + 1)
    model_cache, data_cache = saved(device, files, add_model())
    monkeypatch.undo()
    assert_refused(device, model_cache, data_cache)


def test_files_larger_than_the_driver_writes_are_refused_unread(device, files, monkeypatch):
    model_cache, data_cache = saved(device, files, add_model())
    monkeypatch.setattr(cache, "MAX_CACHE_FILE_BYTES", len(files.read("model")) - 1)
    assert_refused(device, model_cache, data_cache)
    # Nor is such a cache written.
    other_model, other_data = files.handles("other-")
    case = add_model()
    assert prepare_with_cache(device, case.model, other_model, other_data)[0] == ErrorStatus.NONE
    assert files.read("other-model") == b"" and files.read("other-data") == b""


def test_empty_files_are_refused(device, files):
    model_cache, data_cache = files.handles()
    assert_refused(device, model_cache, data_cache)
