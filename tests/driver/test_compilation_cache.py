"""Compilation caching (prepareModel_1_3 with cache handles, prepareModelFromCache_1_3), in
the manner of the VTS's CompilationCachingTests: a round trip computes the same outputs,
wrong handles are refused as the HAL says, and every cache content the driver did not
write for the token (each byte flipped, each truncation, swapped files, another token's or
another driver version's) is an error status, never an exception and never a model.

The token is the MAC's key, and the client chooses it: a client can seal any payload. So
payloads sealed with the client's own token (forged: any count, length, enum, name or
value) must end the same way, with the callback notified exactly once."""
from __future__ import annotations

import hashlib
import math
import os
import resource

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import driver.device
from driver import cache
from driver.device import SampleDriver
from driver.hal.callbacks import PreparedModelCallback
from driver.hal.enums import ErrorStatus, ExecutionPreference, OperandType, OperationType, Priority
from driver.hal.structs import (DataLocation, ExtensionNameAndPrefix, Model, OperandExtraParams,
                                OptionalTimePoint, SymmPerChannelQuantParams)
from driver.memory import Memory
from driver.validation.common import POOL_NAMES
from tests.driver.execution import CALLBACK_TIMEOUT_S, ALL_PATHS, Path, execute
from tests.driver.test_execution_memory import traced_peak
from tests.models import (ALL_MODELS, ModelCase, add_model, constant_reference_model,
                          fibonacci_while_model, nested_model, per_channel_model,
                          quant8_add_model, read_outputs)

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


# --- payloads sealed with the client's own token ------------------------------------------

def forge(structure: bytes, data: bytes, token: bytes = TOKEN) -> tuple[list[int], list[int]]:
    """Cache files (memfds, closed with the returned lists' owner: see forged_files) holding
    ``structure`` and ``data`` sealed with ``token``, as a client can make them."""
    version = driver.device.VERSION
    model_file = cache.seal(cache.CacheKind.MODEL, structure + hashlib.sha256(data).digest(),
                            token, version)
    data_file = cache.seal(cache.CacheKind.DATA, data, token, version)
    handles = []
    for content in (model_file, data_file):
        fd = os.memfd_create("forged-cache", os.MFD_CLOEXEC)
        os.write(fd, content)
        handles.append([fd])
    return handles[0], handles[1]


@pytest.mark.parametrize("kind", list(cache.CacheKind), ids=lambda k: k.name)
def test_resealing_a_file_is_sealing_its_new_payload(kind):
    """The sealer a client forges with (SampleDriver.cache_payload_sealer) writes the file
    ``seal`` writes for the edited payload: one header writer, one MAC."""
    version = driver.device.VERSION
    sealed = cache.seal(kind, b"a payload", TOKEN, version)
    resealed = SampleDriver.cache_payload_sealer(sealed, TOKEN, lambda p: p.upper() + b"!")
    assert resealed == cache.seal(kind, b"A PAYLOAD!", TOKEN, version)


def prepare_forged(structure: bytes, data: bytes) -> tuple[ErrorStatus, object]:
    model_cache, data_cache = forge(structure, data)
    try:
        return prepare_from_cache(SampleDriver(), model_cache, data_cache)
    finally:
        for fd in model_cache + data_cache:
            os.close(fd)


def own_pool(content: bytes, name: str) -> Memory:
    """A pool of any name around a memfd of its own (never recycled)."""
    fd = os.memfd_create("forged-pool", os.MFD_CLOEXEC)
    os.write(fd, content)
    return Memory(fd, len(content), name)


@pytest.mark.parametrize("name", ["ash\0mem", "a" * 300, "\u00e9" * 150, "", "ASHMEM"],
                         ids=["NUL", "300-bytes", "300-bytes-in-150-characters", "empty",
                              "upper-case"])
def test_a_forged_pool_name_is_refused(name):
    model = constant_reference_model().model
    model.pools = [own_pool(pool.read(), name) for pool in model.pools]
    status, prepared = prepare_forged(*cache.serialize_model(model))
    assert (status, prepared) == (ErrorStatus.GENERAL_FAILURE, None)


@pytest.mark.parametrize("make_case", [add_model, constant_reference_model, nested_model],
                         ids=lambda f: f.__name__)
def test_a_forged_invalid_model_is_a_general_failure(make_case):
    # IDevice.hal: the arguments (handles, token) are valid; the cache holds what the driver
    # never stores, a model it does not prepare.
    model = make_case().model
    model.main.inputIndexes = [len(model.main.operands) + 5]
    status, prepared = prepare_forged(*cache.serialize_model(model))
    assert (status, prepared) == (ErrorStatus.GENERAL_FAILURE, None)


def test_more_pools_than_descriptors_left_are_refused():
    model = constant_reference_model().model
    model.pools += [own_pool(b"x", "ashmem") for _ in range(100)]
    payload = cache.serialize_model(model)
    model.pools = []
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # Room for the cache files, not for the pools (each costs a memfd and its mapping's dup).
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 60, hard))
    try:
        status, prepared = prepare_forged(*payload)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert (status, prepared) == (ErrorStatus.GENERAL_FAILURE, None)


U32 = st.integers(0, 2 ** 32 - 1)
I64 = st.integers(-2 ** 63, 2 ** 63 - 1)
SMALL_OR_U32 = st.one_of(st.integers(0, 8), st.sampled_from([2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1]), U32)
F64 = st.one_of(st.sampled_from([0.0, 0.5, 1.0, -1.0, math.nan, math.inf, -math.inf, 1e300]),
                st.floats())
ENUM = {"type": st.one_of(st.sampled_from(sorted(OperandType)), U32),
        "operation": st.one_of(st.sampled_from(sorted(OperationType)), U32)}
NAMES = st.one_of(st.sampled_from(sorted(POOL_NAMES)), st.just("ash\0mem"), st.just("a" * 300),
                  st.text(st.characters(blacklist_categories=("Cs",)), max_size=300))
EXTRA_PARAMS = st.one_of(
    st.just(OperandExtraParams()),
    st.builds(lambda scales, dim: OperandExtraParams(
        channelQuant=SymmPerChannelQuantParams(scales, dim)), st.lists(F64, max_size=4), SMALL_OR_U32),
    st.builds(lambda blob: OperandExtraParams(extension=blob), st.binary(max_size=8)))
OPERAND_FIELDS = {
    "type": ENUM["type"], "dimensions": st.lists(SMALL_OR_U32, max_size=5),
    "numberOfConsumers": SMALL_OR_U32, "scale": F64, "zeroPoint": I64,
    "lifetime": st.one_of(st.integers(0, 7), U32),
    "location": st.builds(DataLocation, SMALL_OR_U32, SMALL_OR_U32, SMALL_OR_U32),
    "extraParams": EXTRA_PARAMS,
}
#: What a count or length in the payload may be forged to.
LIES = st.one_of(st.integers(0, 8), st.sampled_from([2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 63,
                                                     2 ** 64 - 1]))


def forged_model(data) -> Model:
    """A model of the test suite with fields set to anything their stored widths hold."""
    model = ALL_MODELS[data.draw(st.sampled_from(sorted(ALL_MODELS)), "model")]().model
    subgraphs = [model.main, *model.referenced]
    for _ in range(data.draw(st.integers(1, 4), "corruptions")):
        subgraph = data.draw(st.sampled_from(subgraphs), "subgraph")
        target = data.draw(st.sampled_from(["operand", "operation", "indexes", "pool",
                                            "model"]), "target")
        if target == "operand" and subgraph.operands:
            operand = data.draw(st.sampled_from(subgraph.operands), "operand")
            field = data.draw(st.sampled_from(sorted(OPERAND_FIELDS)), "field")
            setattr(operand, field, data.draw(OPERAND_FIELDS[field], field))
        elif target == "operation" and subgraph.operations:
            operation = data.draw(st.sampled_from(subgraph.operations), "operation")
            operation.type = data.draw(ENUM["operation"], "type")
            operation.inputs = data.draw(st.lists(SMALL_OR_U32, max_size=6), "inputs")
        elif target == "indexes":
            field = data.draw(st.sampled_from(["inputIndexes", "outputIndexes"]), "field")
            setattr(subgraph, field, data.draw(st.lists(SMALL_OR_U32, max_size=4), field))
        elif target == "pool":
            content = data.draw(st.binary(max_size=64), "content")
            model.pools.append(own_pool(content, data.draw(NAMES, "name")))
        else:
            model.operandValues = data.draw(st.binary(max_size=64), "operandValues")
            model.relaxComputationFloat32toFloat16 = data.draw(st.booleans(), "relax")
            model.extensionNameToPrefix = [ExtensionNameAndPrefix(name, prefix) for name, prefix
                                           in data.draw(st.lists(st.tuples(NAMES, SMALL_OR_U32),
                                                                 max_size=2), "extensions")]
    return model


def forged_bytes(data, content: bytes, what: str) -> bytes:
    """``content`` with a few of its words overwritten (a count, a length, an enum or a tag
    made to lie), then cut short or lengthened."""
    content = bytearray(content)
    for _ in range(data.draw(st.integers(0, 3), f"{what} lies")):
        if not content:
            break
        width = data.draw(st.sampled_from([1, 4, 8]), "width")
        value = data.draw(LIES, "value") % (1 << 8 * width)
        at = data.draw(st.integers(0, max(len(content) - width, 0)), "at")
        content[at:at + width] = value.to_bytes(width, "little")[:len(content) - at]
    cut = data.draw(st.one_of(st.none(), st.integers(0, len(content))), f"{what} cut")
    if cut is not None:
        content = content[:cut]
    return bytes(content) + data.draw(st.binary(max_size=9), f"{what} tail")


@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_forged_payloads_end_in_an_error_status_notified_once(data):
    model = forged_model(data)
    structure, constants = cache.serialize_model(model)
    structure = forged_bytes(data, structure, "structure")
    constants = forged_bytes(data, constants, "data")
    # prepare_from_cache checks the callback is notified exactly once, with the status
    # returned, and a prepared model exactly on NONE.
    status, prepared = prepare_forged(structure, constants)
    if status == ErrorStatus.NONE:
        # Forged, but a model the driver prepares when given it directly.
        direct, _ = prepare_with_cache(SampleDriver(), cache.deserialize_model(structure, constants),
                                       [], [])
        assert direct == ErrorStatus.NONE
    else:
        assert status in (ErrorStatus.GENERAL_FAILURE, ErrorStatus.RESOURCE_EXHAUSTED_PERSISTENT)


# --- size before content ------------------------------------------------------------------

def _sparse_file(files, name: str, size: int, head: bytes = b"") -> int:
    fd = files.open(name)
    os.ftruncate(fd, size)      # a hole: it costs no disk, and reads as zeros
    os.pwrite(fd, head, 0)
    return fd


def test_a_large_file_of_another_header_is_refused_unread(device, files):
    model_cache, data_cache = saved(device, files, add_model())
    sparse = _sparse_file(files, "sparse", 1 << 30)
    assert traced_peak(lambda: assert_refused(device, [sparse], data_cache))[1] < 1 << 20
    assert traced_peak(lambda: assert_refused(device, model_cache, [sparse]))[1] < 1 << 20


def test_a_file_is_authenticated_before_its_payload_is_kept(device, files):
    """A file with this driver's header for the token but a payload that is not the one
    sealed: its MAC is computed piece by piece, never holding the payload."""
    model_cache, data_cache = saved(device, files, add_model())
    size = 64 << 20
    payload_length = size - cache._HEADER.size - hashlib.sha256().digest_size
    header = cache.seal(cache.CacheKind.DATA, b"", TOKEN, driver.device.VERSION)[:cache._HEADER.size]
    header = header[:-8] + payload_length.to_bytes(8, "little")     # the length comes last
    forged = _sparse_file(files, "forged", size, header)
    _, peak = traced_peak(lambda: assert_refused(device, model_cache, [forged]))
    assert peak < 2 * cache.READ_CHUNK_BYTES + (1 << 20)
