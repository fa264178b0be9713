"""Compilation caching: a prepared model saved to the client's cache files, and prepared
again from them (IDevice.prepareModel_1_3 and prepareModelFromCache_1_3).

What is saved is the Model, not the compiled plan: preparing from the cache validates and
compiles the stored model exactly as prepareModel_1_3 does, so a model prepared from a
cache can never compute anything the saved model would not.

There are two files (getNumberOfCacheFilesNeeded): the data cache holds the model's
constants (operandValues, then the content of each pool); the model cache holds the rest
of the model and the SHA-256 of the data cache's payload, which binds the two together.
Each file is

    header | payload | HMAC-SHA256 of header and payload, keyed by the token

with the header ``magic, format version, kind (model or data), SHA-256 of the driver's
version string, token, payload length`` (``seal`` makes such a file). A file is accepted
only when its size is one the driver writes and its header says exactly what the reader
expects (both checked before anything else is read: a file of any other size or header
costs no more than its header to refuse), then its MAC verifies (computed piece by piece,
before the payload is kept), then (for the model cache) the data payload's digest matches.
Anything else (a truncated or altered file, another token's, another driver version's, the
two files swapped) is a CacheError: GENERAL_FAILURE, never a model.

The MAC's key is the token, which the client chooses: any client can seal any payload, so
a payload that verifies is still untrusted input. Every count, length, enum, name and
value in it is checked as it is read (a CacheError at the first that does not fit), and
the model it holds is validated as any client's; a stored model that does not validate
was not stored by the driver, and is refused with GENERAL_FAILURE too (device.py).

Files are read and written only through the descriptors the client passes (os.pread,
os.pwrite, os.ftruncate), never by path; the descriptors stay the client's.
"""
from __future__ import annotations

import enum
import hashlib
import hmac
import os
import struct
from typing import Callable, Sequence

from .errors import DriverError, ResourceError
from .hal.enums import ErrorStatus, OperandLifeTime, OperandType, OperationType
from .hal.structs import (DataLocation, ExtensionNameAndPrefix, Model, Operand,
                          OperandExtraParams, Operation, Subgraph, SymmPerChannelQuantParams)
from .memory import Memory
from .validation.common import POOL_NAMES

#: getNumberOfCacheFilesNeeded: (numModelCache, numDataCache).
MODEL_CACHE_FILES, DATA_CACHE_FILES = 1, 1

#: Larger files are neither written nor read (reading one whole could exhaust memory).
MAX_CACHE_FILE_BYTES = 2 ** 32

MAGIC = b"NNHALPY\0"
FORMAT_VERSION = 1
_HEADER = struct.Struct("<8sHB32s32sQ")
_SHA256_BYTES = hashlib.sha256().digest_size

#: A file is read (and its MAC computed) this many bytes at a time: what reading a file
#: costs in memory before its MAC verifies.
READ_CHUNK_BYTES = 1 << 20


class CacheKind(enum.IntEnum):
    MODEL = 1
    DATA = 2


class CacheError(DriverError):
    """Cache files this driver did not write for this token, or cannot read."""

    status = ErrorStatus.GENERAL_FAILURE


# --- files --------------------------------------------------------------------------------

def save(model: Model, model_fds: Sequence[int], data_fds: Sequence[int], token: bytes,
         driver_version: str) -> None:
    """Write ``model`` to the cache files (OSError when a file cannot be written)."""
    structure, data = serialize_model(model)
    model_file = seal(CacheKind.MODEL, structure + hashlib.sha256(data).digest(), token,
                      driver_version)
    data_file = seal(CacheKind.DATA, data, token, driver_version)
    if max(len(model_file), len(data_file)) > MAX_CACHE_FILE_BYTES:
        return      # it could not be read back
    _write_file(data_fds[0], data_file)
    _write_file(model_fds[0], model_file)


def load(model_fds: Sequence[int], data_fds: Sequence[int], token: bytes,
         driver_version: str) -> Model:
    """The model the cache files hold; CacheError unless this driver wrote them for
    ``token`` (or a client sealed them with it, see the module's docstring)."""
    try:
        model_payload = _open(CacheKind.MODEL, model_fds[0], token, driver_version)
        data = _open(CacheKind.DATA, data_fds[0], token, driver_version)
        structure, data_digest = model_payload_parts(model_payload)
        if data_digest != hashlib.sha256(data).digest():
            raise CacheError("the data cache does not belong to the model cache")
        return deserialize_model(structure, data)
    except MemoryError:
        # The files hold no more than the driver writes, but the host may still lack room.
        raise ResourceError("the host ran out of memory reading the cache",
                            ErrorStatus.RESOURCE_EXHAUSTED_TRANSIENT) from None


def _write_file(fd: int, content: bytes) -> None:
    # The HAL: a cache file may have any size and offset; truncate it before writing.
    os.ftruncate(fd, 0)
    view = memoryview(content)
    written = 0
    while written < len(content):
        written += os.pwrite(fd, view[written:], written)


def _open(kind: CacheKind, fd: int, token: bytes, driver_version: str) -> bytearray:
    """The payload of the file ``seal`` wrote with these arguments; CacheError otherwise.

    The size and the header are checked first; then the MAC is computed piece by piece
    without keeping the payload; only when it verifies is the payload read into memory,
    its MAC computed again on the bytes kept (the file may change between two reads)."""
    what = f"the {kind.name.lower()} cache"
    try:
        size = os.fstat(fd).st_size
        if size > MAX_CACHE_FILE_BYTES:
            raise CacheError(f"{what} has {size} bytes, more than {MAX_CACHE_FILE_BYTES}")
        payload_length = size - _HEADER.size - _SHA256_BYTES
        if payload_length < 0:
            raise CacheError(f"{what} is too short to be one")
        header = _header(kind, _version_digest(driver_version), token, payload_length)
        if _read_exactly(fd, _HEADER.size, 0) != header:
            raise CacheError(f"{what}'s header is not this driver's {kind.name.lower()} "
                             f"cache header for this token and length")
        mac = _read_exactly(fd, _SHA256_BYTES, size - _SHA256_BYTES)
        _check_mac(what, mac, _payload_mac(fd, header, payload_length, token,
                                           bytearray(min(payload_length, READ_CHUNK_BYTES)),
                                           keep=False))
        payload = bytearray(payload_length)
        _check_mac(what, mac, _payload_mac(fd, header, payload_length, token, payload,
                                           keep=True))
    except OSError as error:
        raise CacheError(f"cannot read cache file descriptor {fd}: {error}") from None
    return payload


def _read_exactly(fd: int, count: int, offset: int) -> bytes:
    content = os.pread(fd, count, offset)
    if len(content) != count:       # the file shrank since its size was read
        raise CacheError(f"cache file descriptor {fd} ends early")
    return content


def _payload_mac(fd: int, header: bytes, payload_length: int, token: bytes,
                 buffer: bytearray, keep: bool) -> bytes:
    """The MAC of ``header`` followed by the payload the file holds after its header, read
    into ``buffer`` piece by piece: at its offset in the payload when ``keep`` (then
    ``buffer`` has the payload's length), each piece over the last otherwise."""
    mac = hmac.new(token, header, hashlib.sha256)
    view = memoryview(buffer)
    done = 0
    while done < payload_length:
        start = done if keep else 0
        piece = view[start:start + min(payload_length - done, len(view) - start)]
        count = os.preadv(fd, [piece], _HEADER.size + done)
        if count == 0:
            raise CacheError(f"cache file descriptor {fd} ends early")
        mac.update(piece[:count])
        done += count
    return mac.digest()


def _check_mac(what: str, expected: bytes, computed: bytes) -> None:
    if not hmac.compare_digest(expected, computed):
        raise CacheError(f"{what} was not written by this driver for this token")


def _version_digest(driver_version: str) -> bytes:
    return hashlib.sha256(driver_version.encode()).digest()


def _header(kind: int, version_digest: bytes, token: bytes, payload_length: int) -> bytes:
    """The one writer of a file's header (``_HEADER``: its fields in this order, after the
    magic and the format version)."""
    return _HEADER.pack(MAGIC, FORMAT_VERSION, kind, version_digest, token, payload_length)


def _sealed(kind: int, version_digest: bytes, token: bytes, payload: bytes) -> bytes:
    content = _header(kind, version_digest, token, len(payload)) + payload
    return content + hmac.new(token, content, hashlib.sha256).digest()


def seal(kind: CacheKind, payload: bytes, token: bytes, driver_version: str) -> bytes:
    """A cache file holding ``payload``, as ``load`` reads it: its header, the payload, and
    their HMAC-SHA256 keyed by ``token``. ``driver_version`` is the device's version
    string (getVersionString). ``save`` writes its files with it; anyone holding a token
    can seal a payload of their own with it the same way (the payload of a model cache is
    ``serialize_model``'s structure followed by the SHA-256 of the data cache's payload)."""
    return _sealed(kind, _version_digest(driver_version), token, payload)


def reseal(sealed: bytes, token: bytes, edit: Callable[[bytes], bytes]) -> bytes:
    """A file ``seal`` wrote for ``token``, its payload replaced by ``edit(payload)``: what
    ``seal`` writes for the new payload with the header's kind and driver version. Nothing
    is checked."""
    if len(sealed) < _HEADER.size + _SHA256_BYTES:
        return sealed
    header, payload, _ = file_parts(sealed)
    _, _, kind, version_digest, _, _ = _HEADER.unpack(header)
    return _sealed(kind, version_digest, token, edit(payload))


def file_parts(sealed: bytes) -> tuple[bytes, bytes, bytes]:
    """A cache file cut where ``seal`` joins its parts: header, payload, MAC. Nothing is
    checked (``_open`` does that)."""
    return sealed[:_HEADER.size], sealed[_HEADER.size:-_SHA256_BYTES], sealed[-_SHA256_BYTES:]


def model_payload_parts(payload: bytes) -> tuple[bytes, bytes]:
    """A model cache's payload cut where ``save`` joins its parts: the model's structure,
    then the SHA-256 of the data cache's payload."""
    return payload[:-_SHA256_BYTES], payload[-_SHA256_BYTES:]


# --- the Model as bytes -------------------------------------------------------------------
# Little-endian, every list prefixed by its length (u32). Integers in the widths the HAL
# gives them; scales as float64, so that the stored model equals the prepared one exactly.
# The constants (operandValues and pool contents) go to a separate data stream.

_U8, _U32, _I64, _U64, _F64 = (struct.Struct(f"<{code}") for code in "BIqQd")
_NO_PARAMS, _CHANNEL_QUANT, _EXTENSION = 0, 1, 2


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray()

    def put(self, packer: struct.Struct, value) -> None:
        self.out += packer.pack(value)

    def u32s(self, values: Sequence[int]) -> None:
        self.put(_U32, len(values))
        self.out += struct.pack(f"<{len(values)}I", *values)

    def blob(self, data: bytes) -> None:
        self.put(_U64, len(data))
        self.out += data

    def each(self, items: Sequence, write: Callable) -> None:
        self.put(_U32, len(items))
        for item in items:
            write(item)


def serialize_model(model: Model) -> tuple[bytes, bytes]:
    """(structure, constants) of ``model``: what deserialize_model turns back into it."""
    w, data = _Writer(), bytearray()

    def operand(o: Operand) -> None:
        w.put(_U32, o.type)
        w.u32s(o.dimensions)
        w.put(_U32, o.numberOfConsumers)
        w.put(_F64, o.scale)
        w.put(_I64, o.zeroPoint)
        w.put(_U32, o.lifetime)
        w.u32s([o.location.poolIndex, o.location.offset, o.location.length])
        params = o.extraParams
        if params.channelQuant is not None:
            w.put(_U8, _CHANNEL_QUANT)
            w.each(params.channelQuant.scales, lambda scale: w.put(_F64, scale))
            w.put(_U32, params.channelQuant.channelDim)
        elif params.extension is not None:
            w.put(_U8, _EXTENSION)
            w.blob(bytes(params.extension))
        else:
            w.put(_U8, _NO_PARAMS)

    def operation(o: Operation) -> None:
        w.put(_U32, o.type)
        w.u32s(o.inputs)
        w.u32s(o.outputs)

    def subgraph(s: Subgraph) -> None:
        w.each(s.operands, operand)
        w.each(s.operations, operation)
        w.u32s(s.inputIndexes)
        w.u32s(s.outputIndexes)

    def pool(memory: Memory) -> None:
        w.blob(memory.name.encode())
        w.put(_U64, memory.size)
        data.extend(memory.read())

    subgraph(model.main)
    w.each(model.referenced, subgraph)
    w.put(_U64, len(model.operandValues))
    data.extend(model.operandValues)
    w.each(model.pools, pool)
    w.put(_U8, bool(model.relaxComputationFloat32toFloat16))

    def extension(e: ExtensionNameAndPrefix) -> None:
        w.blob(e.name.encode())
        w.put(_U32, e.prefix)
    w.each(model.extensionNameToPrefix, extension)
    return bytes(w.out), bytes(data)


class _Reader:
    """Reads what _Writer wrote; CacheError at the first byte that does not fit."""

    def __init__(self, content: bytes) -> None:
        self.content = memoryview(content)
        self.offset = 0

    def take(self, count: int) -> memoryview:
        if count > len(self.content) - self.offset:
            raise CacheError("the cache ends early")
        part = self.content[self.offset:self.offset + count]
        self.offset += count
        return part

    def get(self, packer: struct.Struct):
        return packer.unpack(self.take(packer.size))[0]

    def u32s(self) -> list[int]:
        count = self.get(_U32)
        return list(struct.unpack(f"<{count}I", self.take(4 * count)))

    def blob(self) -> bytes:
        return bytes(self.take(self.get(_U64)))

    def each(self, read: Callable) -> list:
        return [read() for _ in range(self.get(_U32))]

    def text(self) -> str:
        try:
            return self.blob().decode()
        except UnicodeDecodeError:
            raise CacheError("a name in the cache is not UTF-8") from None


def _member(enum_type, value: int):
    """The enum member of ``value`` where it has one (extension codes stay ints)."""
    return enum_type._value2member_map_.get(value, value)


def deserialize_model(structure: bytes, data: bytes) -> Model:
    r, constants = _Reader(structure), _Reader(data)

    def operand() -> Operand:
        result = Operand(type=_member(OperandType, r.get(_U32)), dimensions=r.u32s(),
                         numberOfConsumers=r.get(_U32), scale=r.get(_F64),
                         zeroPoint=r.get(_I64), lifetime=_member(OperandLifeTime, r.get(_U32)))
        location = r.u32s()
        if len(location) != 3:
            raise CacheError("an operand's location is not three numbers")
        result.location = DataLocation(*location)
        tag = r.get(_U8)
        if tag == _CHANNEL_QUANT:
            result.extraParams = OperandExtraParams(channelQuant=SymmPerChannelQuantParams(
                scales=r.each(lambda: r.get(_F64)), channelDim=r.get(_U32)))
        elif tag == _EXTENSION:
            result.extraParams = OperandExtraParams(extension=r.blob())
        elif tag != _NO_PARAMS:
            raise CacheError(f"unknown extraParams tag {tag}")
        return result

    def operation() -> Operation:
        return Operation(type=_member(OperationType, r.get(_U32)), inputs=r.u32s(), outputs=r.u32s())

    def subgraph() -> Subgraph:
        return Subgraph(operands=r.each(operand), operations=r.each(operation),
                        inputIndexes=r.u32s(), outputIndexes=r.u32s())

    def pool() -> Memory:
        # The name becomes a memfd's name: one memfd_create refuses (a NUL byte, too long)
        # must be refused here, and the driver only stores models whose pools validated.
        name = r.text()
        if name not in POOL_NAMES:
            raise CacheError(f"pool name {name[:40]!r} is no memory name a stored model has")
        content = constants.take(r.get(_U64))
        try:
            return Memory.from_bytes(content, name)
        except OSError as error:    # out of descriptors or mappings
            raise CacheError(f"cannot make a pool of {len(content)} bytes: {error}") from None

    main = subgraph()
    referenced = r.each(subgraph)
    operand_values = bytes(constants.take(r.get(_U64)))
    pools = r.each(pool)
    relax = r.get(_U8)
    extensions = r.each(lambda: ExtensionNameAndPrefix(name=r.text(), prefix=r.get(_U32)))
    if r.offset != len(structure) or constants.offset != len(data) or relax > 1:
        raise CacheError("the cache holds more than a model")
    return Model(main=main, referenced=referenced, operandValues=operand_values, pools=pools,
                 relaxComputationFloat32toFloat16=bool(relax), extensionNameToPrefix=extensions)
