"""Routes: a case that ran successfully run again by another route through the HAL, on
the same driver: its arguments in driver-managed buffers (memory domains), or its model
prepared from the cache files its preparation wrote (compilation caching). Each route is a
function ``(RouteRun) -> ExecutionResult | None`` registered with ``@route(Relation.X,
Violation)``; None means the driver does not offer the route for the case, which is then
skipped, never judged: a driver need offer neither memory domains nor caching (allocate
may answer GENERAL_FAILURE, getNumberOfCacheFilesNeeded NONE, 0 and 0).

Most routes must compute what the case computed (``expects`` None): their outputs are
compared like a metamorphic relation's (fuzz/oracles.py, check_same_outputs), and one whose
request is as valid as the case's (``valid_request``) may not have it refused with
INVALID_ARGUMENT. A route whose request names buffers by tokens the execution may not use,
or in a way the HAL forbids, expects its execution to fail with INVALID_ARGUMENT instead.

The cache routes also corrupt the files between the two preparations: a corrupted cache
may be refused, or even loaded, but a model prepared from it must compute what the
model the files were written for computes. A driver that offers to seal a cache file's
payload (``CACHE_SEALER``) has its files forged: a string of the model in them rewritten,
and sealed again, so that the forgery gets past the file's authentication.

Two routes are a client misusing its own memory, which a driver must survive (an error
status, not a dead process): a request pool cut short after the request was made, and
request pools handed to the driver as cache files (which it may truncate and rewrite)
before the request is executed. Only their executions' contracts judge them (an exception
from the HAL, or a dead process: a SIGBUS).
"""
from __future__ import annotations

import gc
import os
import struct
from dataclasses import dataclass, replace
from typing import Any, Callable

from driver.hal import (BufferRole, DataLocation, ErrorStatus, Memory, MemoryPool, OptionalTimePoint,
                        Request, RequestArgument)
from driver.hal.dtypes import byte_size
from hal_client import domains
from hal_client.contract import HalExceptionViolation, OracleViolation, main_output_operand
from hal_client.paths import ExecutionPath, HalClient

from . import relations
from .case import FuzzCase, Relation
from .oracles import (BuffersDifferViolation, CacheDiffersViolation,
                      CorruptedCacheAcceptedViolation, ExecutionResult, InvalidRequestAcceptedViolation,
                      InvalidTokenAcceptedViolation, check_expected_status, check_same_outputs)

#: The token the cache routes prepare with (any 32 bytes whose reverse, CACHE_OTHER_TOKEN's,
#: differs: not the zeros of a preparation without cache files, paths.UNCACHED_TOKEN).
CACHE_TOKEN = bytes(range(32))


@dataclass(frozen=True)
class RouteRun:
    """What a route runs: ``case`` was prepared as ``prepared`` by ``device`` and ran
    successfully; ``request`` is its request over fresh pools; ``execute(prepared,
    request)`` is a synchronous execution of the case with the harness's contract checks."""
    client: HalClient
    device: Any
    case: FuzzCase
    prepared: Any
    request: Request
    execute: Callable[[Any, Request], ExecutionResult]


Run = Callable[[RouteRun], "ExecutionResult | None"]


@dataclass(frozen=True)
class Route:
    relation: Relation
    run: Run
    Violation: type[OracleViolation]
    #: The status the route's execution must give; None: the case's outputs.
    expects: ErrorStatus | None = None
    #: True: the route's request is valid wherever the case's is, so INVALID_ARGUMENT for
    #: it is a violation (any other failure says nothing: buffers may run a driver short).
    valid_request: bool = False
    uses_cache: bool = False
    #: False: the route's request is not the case's (the client broke it), so only the
    #: contract checks of its execution judge it; its outputs are not compared.
    compares: bool = True


ROUTES: dict[Relation, Route] = {}


def route(which: Relation, Violation: type[OracleViolation], **options: Any) -> Callable[[Run], Run]:
    """Register ``run`` as the route ``which``, judged by ``Violation`` (options: Route's)."""
    def register(run: Run) -> Run:
        ROUTES[which] = Route(which, run, Violation, **options)
        return run
    return register


def judge(route: Route, run: RouteRun, expected: ExecutionResult) -> int | None:
    """Run ``route`` and judge what it gave against the case's successful execution
    ``expected``: raises the route's violation; returns how many outputs were left out of
    the comparison (see check_same_outputs), None when the driver offers no such route
    for the case."""
    result = route.run(run)
    if result is None:
        return None
    what = f"route {route.relation.name} (SYNC)"
    if not route.compares:
        return 0
    if route.expects is not None:
        check_expected_status(result.status, route.expects, route.Violation, what)
        return 0
    if result.status != ErrorStatus.NONE:
        if route.valid_request and result.status == ErrorStatus.INVALID_ARGUMENT:
            raise route.Violation(f"{what}: INVALID_ARGUMENT for a valid request, which ran on "
                                  f"{expected.path.name} with plain pools", key=f"{what}: INVALID_ARGUMENT")
        return 0
    return check_same_outputs(expected, result, run.case.model, run.request, route.Violation,
                              f"{what} vs {expected.path.name}")


# --- memory domains ---------------------------------------------------------------------------

@dataclass(frozen=True)
class BufferedRequest:
    """The case's request with each argument that has a value in a buffer of its own, and
    those buffers by argument, the inputs' first (None for an argument without a value):
    the client holds each IBuffer as long as its token must name it."""
    request: Request
    buffers: list[Any]

    @property
    def output_buffers(self) -> list[Any]:
        return self.buffers[len(self.request.inputs):]


def buffered(run: RouteRun, prepared: Any) -> BufferedRequest | None:
    """``run.request`` through buffers allocated for ``prepared``'s roles, the inputs'
    copied in; None where the driver does not allocate or copy them, or the request names
    no argument with a value. An input in a token pool has no bytes the client can read:
    copyFrom refuses the empty source it is given, and the route is skipped."""
    request, pools, buffers = run.request, [], []

    def moved(argument: RequestArgument, k: int, is_input: bool) -> RequestArgument | None:
        buffers.append(None)
        if argument.hasNoValue:
            return argument
        roles = ([BufferRole(0, k, 1.0)], [])
        status, buffers[-1], token = domains.allocate(run.client, run.device, [prepared],
                                                      *(roles if is_input else roles[::-1]))
        if status != ErrorStatus.NONE or (is_input and domains.copy_from(
                run.client, buffers[-1], Memory.from_bytes(relations.argument_bytes(request, argument) or b""),
                argument.dimensions) != ErrorStatus.NONE):
            return None
        pools.append(MemoryPool(token=token))
        return RequestArgument(False, DataLocation(len(pools) - 1), list(argument.dimensions))
    inputs = [moved(argument, k, True) for k, argument in enumerate(request.inputs)]
    outputs = [moved(argument, k, False) for k, argument in enumerate(request.outputs)]
    if not pools or None in inputs or None in outputs:
        return None
    return BufferedRequest(Request(inputs, outputs, pools), buffers)


@route(Relation.THROUGH_BUFFERS, BuffersDifferViolation, valid_request=True)
def through_buffers(run: RouteRun) -> ExecutionResult | None:
    """Every argument with a value in a buffer of its own: inputs copied in with copyFrom,
    outputs read with copyTo (sized by the shapes the execution reports), which may not fail
    once the execution that wrote them succeeded."""
    through = buffered(run, run.prepared)
    if through is None:
        return None
    result = run.execute(run.prepared, through.request)
    if result.status != ErrorStatus.NONE:
        return result
    outputs = []
    for k, (buffer, shape) in enumerate(zip(through.output_buffers, result.shapes or ())):
        if buffer is None:
            outputs.append(None)
            continue
        size = byte_size(main_output_operand(run.case.model, k).type, shape.dimensions, unknown_dimension=0)
        if size == 0:       # no memory of 0 bytes is valid to copy into: nothing to read
            outputs.append(b"")
            continue
        copied = domains.copy_to(run.client, buffer, size)
        if copied is None:
            raise BuffersDifferViolation(f"route THROUGH_BUFFERS (SYNC): IBuffer.copyTo of output {k} failed "
                                         f"after the execution that wrote it returned NONE",
                                         key="route THROUGH_BUFFERS: copyTo failed")
        outputs.append(copied)
    return replace(result, outputs=outputs)


@route(Relation.FREED_BUFFER, InvalidTokenAcceptedViolation, expects=ErrorStatus.INVALID_ARGUMENT)
def freed_buffer(run: RouteRun) -> ExecutionResult | None:
    """The buffered request executed once the client dropped every IBuffer it names."""
    through = buffered(run, run.prepared)
    if through is None:
        return None
    request = through.request
    del through
    result = run.execute(run.prepared, request)
    if result.status == ErrorStatus.NONE:
        gc.collect()     # a driver may hold a buffer in a reference cycle until collected
        result = run.execute(run.prepared, request)
    return result


@route(Relation.OTHER_MODELS_BUFFER, InvalidTokenAcceptedViolation, expects=ErrorStatus.INVALID_ARGUMENT)
def other_models_buffer(run: RouteRun) -> ExecutionResult | None:
    """The request through buffers allocated for another preparation of the same model."""
    choices = run.case.choices
    status, other, _ = run.client.prepare(run.device, run.case.model, choices.preference,
                                          choices.priority, OptionalTimePoint())
    through = buffered(run, other) if status == ErrorStatus.NONE else None
    return None if through is None else run.execute(run.prepared, through.request)


@route(Relation.BUFFER_WITH_LENGTH, InvalidRequestAcceptedViolation, expects=ErrorStatus.INVALID_ARGUMENT)
def buffer_with_length(run: RouteRun) -> ExecutionResult | None:
    """The buffered request, its first argument's location given the length of the value it
    had in its pool, as a client forgetting whose memory it names might: a driver-managed
    buffer's must have offset and length 0 (the HAL)."""
    through = buffered(run, run.prepared)
    if through is None:
        return None
    request = through.request
    arguments = request.inputs + request.outputs
    k = next(k for k, argument in enumerate(arguments) if not argument.hasNoValue)
    length = max(1, (run.request.inputs + run.request.outputs)[k].location.length)
    arguments[k] = replace(arguments[k], location=replace(arguments[k].location, length=length))
    n = len(request.inputs)
    return run.execute(run.prepared, Request(arguments[:n], arguments[n:], request.pools))


# --- compilation caching ------------------------------------------------------------------------

Corrupt = Callable[[domains.CacheFiles, int], "bytes | None"]


def _from_cache(run: RouteRun, corrupt: Corrupt) -> ExecutionResult | None:
    """The model prepared with cache files, the files corrupted by ``corrupt(files,
    place)`` (which gives the token to prepare from them with, None: the files allow no
    such corruption), then prepared from them and executed; where preparing from them
    fails, its status (a driver may refuse any cache)."""
    status, model_files, data_files = domains.cache_files_needed(run.client, run.device)
    if status != ErrorStatus.NONE or model_files + data_files == 0:
        return None
    choices = run.case.choices
    with domains.CacheFiles(model_files, data_files) as files:
        status, _, _ = run.client.prepare(run.device, run.case.model, choices.preference,
                                          choices.priority, OptionalTimePoint(), files.model,
                                          files.data, CACHE_TOKEN)
        token = corrupt(files, choices.corruption) if status == ErrorStatus.NONE else None
        if token is None:
            return None
        status, prepared, _ = run.client.prepare_from_cache(run.device, OptionalTimePoint(), files.model,
                                                            files.data, token)
    if status != ErrorStatus.NONE:
        return ExecutionResult(ExecutionPath.SYNC, status, None, [])
    return run.execute(prepared, run.request)


def cache_route(which: Relation, Violation: type[OracleViolation]) -> Callable[[Corrupt], Corrupt]:
    """Register a corruption of the cache files as the route ``which``."""
    def register(corrupt: Corrupt) -> Corrupt:
        route(which, Violation, uses_cache=True)(lambda run: _from_cache(run, corrupt))
        return corrupt
    return register


@cache_route(Relation.FROM_CACHE, CacheDiffersViolation)
def as_written(files: domains.CacheFiles, place: int) -> bytes:
    """The files as the preparation wrote them."""
    return CACHE_TOKEN


def _edited_at(files: domains.CacheFiles, place: int,
               edit: Callable[[bytes, int], bytes]) -> bytes | None:
    """The file ``place`` picks among the non-empty ones rewritten as ``edit(content, at)``,
    at the byte it picks; CACHE_TOKEN (None: every file is empty)."""
    contents = files.contents()
    written = [k for k, content in enumerate(contents) if content]
    if not written:
        return None
    k = written[place % len(written)]
    contents[k] = edit(contents[k], place // len(written) % len(contents[k]))
    files.write(contents)
    return CACHE_TOKEN


@cache_route(Relation.CACHE_BYTE_FLIPPED, CorruptedCacheAcceptedViolation)
def byte_flipped(files: domains.CacheFiles, place: int) -> bytes | None:
    """One byte of one file inverted."""
    return _edited_at(files, place, lambda content, at: content[:at] + bytes([content[at] ^ 0xFF])
                      + content[at + 1:])


@cache_route(Relation.CACHE_TRUNCATED, CorruptedCacheAcceptedViolation)
def truncated(files: domains.CacheFiles, place: int) -> bytes | None:
    """One file cut short."""
    return _edited_at(files, place, lambda content, at: content[:at])


@cache_route(Relation.CACHE_FILES_SWAPPED, CorruptedCacheAcceptedViolation)
def files_swapped(files: domains.CacheFiles, place: int) -> bytes | None:
    """Each file given the content of the next (the last, the first's)."""
    contents = files.contents()
    rotated = contents[1:] + contents[:1]
    if rotated == contents:
        return None
    files.write(rotated)
    return CACHE_TOKEN


@cache_route(Relation.CACHE_OTHER_TOKEN, CorruptedCacheAcceptedViolation)
def other_token(files: domains.CacheFiles, place: int) -> bytes:
    """The files as written, prepared from with another token."""
    return CACHE_TOKEN[::-1]


# --- forged cache files -----------------------------------------------------------------------

#: The optional attribute of a device that seals cache files: ``sealer(content, token,
#: edit)`` is the cache file ``content`` (as the device wrote it for ``token``) with its
#: payload replaced by ``edit(payload)``, sealed as the device seals its files; the bundled
#: driver offers it. Without it, a forged file keeps its old seal (and should be refused).
CACHE_SEALER = "cache_payload_sealer"
#: How a string is rewritten (forged_string): its own length with a NUL byte in it (None),
#: no bytes, or longer than any file name (255 bytes).
FORGED_LENGTHS = (None, 0, 300)
_LENGTH_PREFIXES = ("<Q", "<I", "<H", "<B")


def model_strings(case: FuzzCase) -> list[bytes]:
    """The strings of the case's model a driver may store in its cache: pool names and
    extension names."""
    model = case.model
    names = [pool.name for pool in model.pools] + [e.name for e in model.extensionNameToPrefix]
    return sorted({name.encode() for name in names if name})


def forged_string(length: int | None, original: bytes) -> bytes:
    """``original`` rewritten: a NUL byte in its middle (length None), or ``length`` bytes."""
    if length is None:
        middle = len(original) // 2
        return original[:middle] + b"\0" + original[middle + 1:]
    return (original * (length // max(1, len(original)) + 1))[:length]


def forge(payload: bytes, strings: list[bytes], place: int) -> bytes:
    """``payload`` with one occurrence of one of ``strings`` rewritten (``place`` picks which
    and how, see FORGED_LENGTHS); a length prefix just before it (little-endian, 8, 4, 2 or
    1 bytes) follows the new length. Unchanged when no string occurs."""
    found = [(at, s) for s in strings for at in _occurrences(payload, s)]
    if not found:
        return payload
    at, original = found[place % len(found)]
    length = FORGED_LENGTHS[place // len(found) % len(FORGED_LENGTHS)]
    new = forged_string(length, original)
    start = at
    for code in _LENGTH_PREFIXES:
        width = struct.calcsize(code)
        if at >= width and struct.unpack_from(code, payload, at - width)[0] == len(original):
            if len(new) < 1 << (8 * width):
                start = at - width
                new = struct.pack(code, len(new)) + new
            break
    return payload[:start] + new + payload[at + len(original):]


def _occurrences(data: bytes, s: bytes) -> list[int]:
    found, at = [], data.find(s)
    while at >= 0:
        found.append(at)
        at = data.find(s, at + 1)
    return found


@route(Relation.CACHE_FORGED, CorruptedCacheAcceptedViolation, uses_cache=True)
def forged(run: RouteRun) -> ExecutionResult | None:
    """The model's cache files, a string of the model in them rewritten (``forge``) and
    sealed again where the device offers a sealer; then prepared from them."""
    strings = model_strings(run.case)
    if not strings:
        return None
    sealer = getattr(run.device, CACHE_SEALER, None)
    place = run.case.choices.corruption

    def corrupt(files: domains.CacheFiles, _: int) -> bytes | None:
        contents = files.contents()
        if callable(sealer):
            rewritten = [sealer(content, CACHE_TOKEN, lambda p: forge(p, strings, place))
                         if content else content for content in contents]
        else:
            rewritten = [forge(content, strings, place) for content in contents]
        if rewritten == contents:
            return None
        files.write(rewritten)
        return CACHE_TOKEN
    return _from_cache(run, corrupt)


# --- a client misusing its request pools ---------------------------------------------------------

#: Where the misused pools hold their inputs: past the end of any small cache file, so
#: that a pool cut short or rewritten shorter no longer holds them.
MISUSED_POOL_OFFSET = 1 << 16


def _inputs_apart(run: RouteRun) -> tuple[Request, list[Memory]] | None:
    """The route's request with each argument in a pool of its own, at MISUSED_POOL_OFFSET,
    and the pools of its inputs: a client may do what it likes with those, as it never
    reads them again."""
    request = relations.arguments_apart(run.request, lambda k: MISUSED_POOL_OFFSET)
    if request is None:
        return None
    pools = [MemoryPool(hidlMemory=_clients_own(pool.hidlMemory)) for pool in request.pools]
    request = replace(request, pools=pools)
    memories = [pools[a.location.poolIndex].hidlMemory for a in request.inputs
                if not a.hasNoValue]
    return (request, memories) if memories else None


def _clients_own(memory: Memory) -> Memory:
    """``memory``'s bytes in a file the client made itself (a memfd without seals), as a
    client allocating its own shared memory hands it to a driver: nothing stops the client
    (or a driver given it as a cache file) from shrinking it."""
    fd = os.memfd_create("client-pool", os.MFD_CLOEXEC)
    os.pwrite(fd, memory.read(), 0)
    return Memory(fd, memory.size)


@route(Relation.POOL_SHRUNK, HalExceptionViolation, compares=False)
def pool_shrunk(run: RouteRun) -> ExecutionResult | None:
    """The request executed after the client cut one of its input pools short (ftruncate):
    the pool is mapped longer than its file, which a driver must not read past (SIGBUS)."""
    apart = _inputs_apart(run)
    if apart is None:
        return None
    request, memories = apart
    place = run.case.choices.corruption
    memory = memories[place % len(memories)]
    os.ftruncate(memory.fileno(), place // len(memories) % max(1, memory.size))
    return run.execute(run.prepared, request)


@route(Relation.POOL_AS_CACHE, HalExceptionViolation, compares=False, uses_cache=True)
def pool_as_cache(run: RouteRun) -> ExecutionResult | None:
    """The model prepared with the request's input pools as its cache files (a driver may
    truncate and rewrite them), then the request executed."""
    apart = _inputs_apart(run)
    status, model_files, data_files = domains.cache_files_needed(run.client, run.device)
    if apart is None or status != ErrorStatus.NONE or model_files + data_files == 0:
        return None
    request, memories = apart
    fds = [memories[k % len(memories)].fileno() for k in range(model_files + data_files)]
    choices = run.case.choices
    run.client.prepare(run.device, run.case.model, choices.preference, choices.priority,
                       OptionalTimePoint(), fds[:model_files], fds[model_files:], CACHE_TOKEN)
    return run.execute(run.prepared, request)
