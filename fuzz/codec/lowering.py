"""Lowering: CaseSpec -> FuzzCase (HAL Model + Request + ExecutionChoices). The decoder
places constants and request arguments without a location, one after the other (aligned),
after their pool's explicit segments, and fills zeros and generated values from a per-case
budget."""
from __future__ import annotations

from typing import Sequence

from driver.hal import (DataLocation, ExtensionNameAndPrefix, MemoryPool, Model, Operand,
                        OperandExtraParams, Operation, Request, RequestArgument, Subgraph,
                        SymmPerChannelQuantParams)
from driver.hal.dtypes import byte_size
from driver.memory import Memory

from ..case import ExecutionChoices, FuzzCase
from .grammar import (COPY, FILL_BUDGET, GENERATED_BUDGET, MAX_GENERATED_VALUE, MAX_LONG_RANK,
                      REFERENCE, SUBGRAPH)
from .spec import (BlobSpec, CaseSpec, ModelSpec, OperandSpec, RequestPoolSpec, RequestSpec,
                   Segment, SubgraphSpec, ValueKind, ValueSpec, copy_choices, new_instance,
                   require_fields)
from .values import ELEMENT_KIND_OF_TYPE, ElementKind, generated_bytes

_LITERAL, _GENERATED, _ZERO = ValueKind.LITERAL, ValueKind.GENERATED, ValueKind.ZERO


class Fill:
    """What is left of the per-case budget of bytes the decoder fills itself."""
    __slots__ = ("fill", "generated")

    def __init__(self) -> None:
        self.fill = FILL_BUDGET
        self.generated = GENERATED_BUDGET

    def zero_count(self, n: int) -> int:
        """How many of ``n`` zero bytes the budget grants (they are taken from it)."""
        n = n if n <= self.fill else self.fill
        self.fill -= n
        return n

    def generate(self, kind: ElementKind, seed: int, n: int) -> bytes:
        n = min(n, MAX_GENERATED_VALUE, self.generated, self.fill)
        self.generated -= n
        self.fill -= n
        return generated_bytes(kind, seed, n)


#: storage_bytes by (type, *dims): byte_size is driver code, which the fuzzer instruments,
#: and the decoder asks for every value it places.
_storage_bytes: dict[tuple[int, ...], int] = {}
_STORAGE_BYTES_LIMIT = 4096


def storage_bytes(operand_type: int, dims: Sequence[int]) -> int:
    """driver.hal.dtypes.byte_size, 0 where that is unknown (unknown dimensions, SUBGRAPH
    and extension types)."""
    if len(dims) > MAX_LONG_RANK:
        return _repeated_rank_storage_bytes(operand_type, dims)
    key = (operand_type, *dims)
    size = _storage_bytes.get(key)
    if size is None:
        if len(_storage_bytes) >= _STORAGE_BYTES_LIMIT:
            _storage_bytes.clear()
        size = _storage_bytes[key] = byte_size(operand_type, dims) or 0
    return size


def _repeated_rank_storage_bytes(operand_type: int, dims: Sequence[int]) -> int:
    """storage_bytes of a shape past MAX_LONG_RANK (a repeated rank) without multiplying
    its dimensions out (minutes, for a hundred thousand of 2^32-1): one element's bytes when
    all are 1, else 0, as for an unknown shape (at least 2^67 bytes: no value the decoder
    places could hold it, and it places none)."""
    return storage_bytes(operand_type, [1]) if dims.count(1) == len(dims) else 0


def value_size(operand_type: int, dims: Sequence[int], value: ValueSpec, delta: int) -> int:
    """Bytes a placed value takes before the budget applies."""
    kind = value.kind
    if kind == _LITERAL:
        return len(value.data)
    size = storage_bytes(operand_type, dims) + delta
    if size <= 0:
        return 0
    cap = MAX_GENERATED_VALUE if kind == _GENERATED else FILL_BUDGET
    return size if size <= cap else cap


def value_bytes(operand_type: int, dims: Sequence[int], value: ValueSpec, delta: int = 0) -> bytes:
    """The bytes a placed value stands for, on its own (no per-case budget applies)."""
    blob = Blob()
    _place_value(blob, 0, operand_type, dims, value, delta, Fill())
    return blob.content()


#: Placed values start at multiples of this, as the conformance loader and the NN runtime
#: place them, so a driver may view any value as an aligned array of its element type.
VALUE_ALIGNMENT = 4


def aligned(offset: int) -> int:
    return -(-offset // VALUE_ALIGNMENT) * VALUE_ALIGNMENT


#: Zeros that runs of zeros are copied from when a blob's content is joined. A fresh zero
#: bytes object of a megabyte has none of its pages mapped yet, and reading it faults every
#: one of them in (that took as long as the rest of decoding); this buffer is resident.
_ZERO_BYTES = b"\0" * (FILL_BUDGET + 4096)
_ZEROS = memoryview(_ZERO_BYTES)
#: Pools larger than this are written piece by piece, leaving their zeros to the pages of
#: a new memfd (writing a megabyte of zeros faulted every page of it in); smaller ones are
#: written whole, in one copy.
_PIECEWISE_POOL_BYTES = 64 * 1024


def _zeros(n: int) -> bytes | memoryview:
    return _ZEROS[:n] if n <= len(_ZEROS) else bytes(n)


def _is_zeros(part: bytes | memoryview) -> bool:
    return isinstance(part, memoryview) and part.obj is _ZERO_BYTES


class Blob:
    """The content of a memory pool (or of operandValues) as the decoder lays it out: its
    size and its parts, runs of zeros (zero segments and values, alignment padding) being
    views of _ZEROS. So a large zero fill is never built, and never written into a
    shared-memory pool, whose pages start out as zeros."""
    __slots__ = ("size", "parts")

    def __init__(self) -> None:
        self.size = 0
        self.parts: list[bytes | memoryview] = []

    def extend(self, raw: bytes) -> None:
        """``raw`` appended right at the end (an explicit segment)."""
        if raw:
            self.parts.append(raw)
            self.size += len(raw)

    def extend_zeros(self, n: int) -> None:
        """``n`` zero bytes appended right at the end (a zero segment)."""
        if n:
            self.parts.append(_zeros(n))
            self.size += n

    def place(self, raw: bytes) -> int:
        """``raw`` appended at the next aligned offset, which is returned."""
        offset = self.size
        padding = -offset % VALUE_ALIGNMENT
        if padding:
            self.parts.append(_ZEROS[:padding])
            offset += padding
        if raw:
            self.parts.append(raw)
        self.size = offset + len(raw)
        return offset

    def place_zeros(self, n: int) -> int:
        """``n`` zero bytes appended at the next aligned offset, which is returned."""
        offset = self.size
        padding = -offset % VALUE_ALIGNMENT
        if padding + n:
            self.parts.append(_zeros(padding + n))
        self.size = offset + padding + n
        return offset + padding

    def content(self) -> bytes:
        return b"".join(self.parts)

    def memory(self, name: str) -> Memory:
        """A new shared-memory pool holding the content."""
        if self.size <= _PIECEWISE_POOL_BYTES:
            return Memory.from_bytes(self.content(), name)
        memory = Memory.create(self.size, name)
        view = memory.buffer()
        try:
            offset = 0
            for part in self.parts:
                if not _is_zeros(part):
                    view[offset:offset + len(part)] = part
                offset += len(part)
        finally:
            view.release()
        return memory


def segment_blob(segments: Sequence[Segment], fill: Fill) -> Blob:
    blob = Blob()
    for segment in segments:
        if segment.kind == _LITERAL:
            blob.extend(segment.data)
        elif segment.kind == _GENERATED:
            blob.extend(fill.generate(segment.element, segment.seed, segment.length))
        else:
            blob.extend_zeros(fill.zero_count(segment.length))
    return blob


# The HAL structures are made field by field (see spec.require_fields): a decoded case holds
# dozens to hundreds of them.
require_fields(DataLocation, "poolIndex", "offset", "length")
require_fields(Subgraph, "operands", "operations", "inputIndexes", "outputIndexes")
require_fields(RequestArgument, "hasNoValue", "location", "dimensions")
require_fields(MemoryPool, "hidlMemory", "token")
require_fields(Request, "inputs", "outputs", "pools")
require_fields(Model, "main", "referenced", "operandValues", "pools",
               "relaxComputationFloat32toFloat16", "extensionNameToPrefix")
require_fields(FuzzCase, "model", "request", "choices")


def data_location(pool_index: int, offset: int, length: int) -> DataLocation:
    location = new_instance(DataLocation)
    location.poolIndex = pool_index
    location.offset = offset
    location.length = length
    return location


def subgraph(operands: list[Operand], operations: list[Operation], inputs: list[int],
             outputs: list[int]) -> Subgraph:
    sg = new_instance(Subgraph)
    sg.operands, sg.operations, sg.inputIndexes, sg.outputIndexes = (operands, operations,
                                                                     inputs, outputs)
    return sg


def argument(has_no_value: bool, location: DataLocation, dims: list[int]) -> RequestArgument:
    a = new_instance(RequestArgument)
    a.hasNoValue, a.location, a.dimensions = has_no_value, location, dims
    return a


def request(inputs: list[RequestArgument], outputs: list[RequestArgument],
            pools: list[MemoryPool]) -> Request:
    r = new_instance(Request)
    r.inputs, r.outputs, r.pools = inputs, outputs, pools
    return r


def case(model: Model, request: Request, choices: ExecutionChoices) -> FuzzCase:
    c = new_instance(FuzzCase)
    c.model, c.request, c.choices = model, request, choices
    return c


def _place_value(blob: Blob, pool_index: int, operand_type: int, dims: Sequence[int],
                 value: ValueSpec, delta: int, fill: Fill) -> DataLocation:
    """Append the bytes ``value`` stands for (for an operand of this type and dimensions,
    ``delta`` bytes more) to ``blob``, pool ``pool_index``, and return where they went."""
    size = value_size(operand_type, dims, value, delta)
    kind = value.kind
    if kind == _ZERO:
        # (fill.zero_count inline: zero values are the most common kind.)
        n = size if size <= fill.fill else fill.fill
        fill.fill -= n
        return data_location(pool_index, blob.place_zeros(n), n)
    raw = (value.data if kind == _LITERAL
           else fill.generate(ELEMENT_KIND_OF_TYPE.get(operand_type, ElementKind.BYTES),
                              value.seed, size))
    return data_location(pool_index, blob.place(raw), len(raw))


def placed_location(lifetime: int, operand_type: int, dims: Sequence[int], target: int,
                    value: ValueSpec, values: Blob, blobs: list[Blob],
                    fill: Fill) -> DataLocation:
    """The location of an operand the decoder places, after placing its value
    (constants)."""
    if lifetime == COPY:
        return _place_value(values, 0, operand_type, dims, value, 0, fill)
    if lifetime == REFERENCE:
        if target < len(blobs):
            return _place_value(blobs[target], target, operand_type, dims, value, 0, fill)
        return data_location(target, 0, value_size(operand_type, dims, value, 0))
    if lifetime == SUBGRAPH:
        return data_location(0, target, 0)
    return data_location(0, 0, 0)


def lower_extra(extra: OperandExtraParams) -> OperandExtraParams:
    quant = extra.channelQuant
    if quant is None and extra.extension is None:
        return OperandExtraParams()
    return OperandExtraParams(
        None if quant is None else SymmPerChannelQuantParams(list(quant.scales), quant.channelDim),
        extra.extension)


def lower_operand(o: OperandSpec, counted: int, values: Blob, blobs: list[Blob],
                  fill: Fill) -> Operand:
    """The operand ``o`` describes, its value placed; ``counted``: its consumers in the
    operations."""
    loc = o.location
    location = (placed_location(o.lifetime, o.type, o.dimensions, o.target, o.value, values,
                                blobs, fill) if loc is None
                else data_location(loc.poolIndex, loc.offset, loc.length))
    return Operand(o.type, list(o.dimensions), counted if o.consumers is None else o.consumers,
                   o.scale, o.zeroPoint, o.lifetime, location, lower_extra(o.extraParams))


def consumer_counts(operand_count: int, operations: Sequence[Operation]) -> list[int]:
    """How many operation inputs name each operand."""
    counts = [0] * operand_count
    for op in operations:
        for i in op.inputs:
            if i < operand_count:
                counts[i] += 1
    return counts


def _lower_subgraph(sg: SubgraphSpec, values: Blob, blobs: list[Blob],
                    fill: Fill) -> Subgraph:
    counted = consumer_counts(len(sg.operands), sg.operations)
    operands = [lower_operand(o, counted[k], values, blobs, fill)
                for k, o in enumerate(sg.operands)]
    operations = [Operation(op.type, list(op.inputs), list(op.outputs)) for op in sg.operations]
    return subgraph(operands, operations, list(sg.inputIndexes), list(sg.outputIndexes))


def pool_blobs(operand_values: Sequence[Segment], pools: Sequence[BlobSpec],
               fill: Fill) -> tuple[Blob, list[Blob]]:
    """The explicit content of operandValues and of the model's pools."""
    return segment_blob(operand_values, fill), [segment_blob(p.segments, fill) for p in pools]


def lowered_model(subgraphs: list[Subgraph], values: Blob, blobs: list[Blob],
                  pools: Sequence[BlobSpec], relaxed: bool,
                  extensions: list[ExtensionNameAndPrefix]) -> Model:
    """The model of these lowered subgraphs, pool contents and the rest."""
    model = new_instance(Model)
    model.main, model.referenced = subgraphs[0], subgraphs[1:]
    model.operandValues = values.content()
    model.pools = [blob.memory(pool.name) for blob, pool in zip(blobs, pools)]
    model.relaxComputationFloat32toFloat16, model.extensionNameToPrefix = relaxed, extensions
    return model


def _lower_model(m: ModelSpec, fill: Fill) -> Model:
    values, blobs = pool_blobs(m.operandValues, m.pools, fill)
    subgraphs = [_lower_subgraph(sg, values, blobs, fill) for sg in m.subgraphs()]
    return lowered_model(subgraphs, values, blobs, m.pools, m.relaxComputationFloat32toFloat16,
                         [ExtensionNameAndPrefix(e.name, e.prefix)
                          for e in m.extensionNameToPrefix])


NO_TYPE = -1   # an argument without a matching model operand: no storage size


def lower_request(r: RequestSpec, main: Subgraph, fill: Fill) -> Request:
    blobs: list[Blob | None] = [
        None if pool.token is not None else segment_blob(pool.blob.segments, fill)
        for pool in r.pools]
    operands = main.operands
    n = len(operands)
    lowered: list[list[RequestArgument]] = [[], []]
    for role, (args, indexes) in enumerate(((r.inputs, main.inputIndexes),
                                            (r.outputs, main.outputIndexes))):
        io_operands = [operands[k] if k < n else None for k in indexes[:len(args)]]
        io_operands += [None] * (len(args) - len(io_operands))
        for a, operand in zip(args, io_operands):
            if a.location is not None:
                location = data_location(a.location.poolIndex, a.location.offset, a.location.length)
            elif a.hasNoValue:
                location = data_location(0, 0, 0)
            else:
                operand_type = NO_TYPE if operand is None else operand.type
                dims = a.dimensions or ([] if operand is None else operand.dimensions)
                target = a.target
                if target >= len(blobs):
                    location = data_location(target, 0, value_size(operand_type, dims, a.value,
                                                                   a.size_delta))
                elif blobs[target] is None:        # driver-allocated buffer: whole buffer
                    location = data_location(target, 0, 0)
                else:
                    location = _place_value(blobs[target], target, operand_type, dims, a.value,
                                            a.size_delta, fill)
            lowered[role].append(argument(a.hasNoValue, location, list(a.dimensions)))
    return request(lowered[0], lowered[1], lowered_pools(r.pools, blobs))


def lowered_pools(pools: Sequence[RequestPoolSpec], blobs: list[Blob | None]) -> list[MemoryPool]:
    """A request's pools: their tokens, or new shared memories holding their contents."""
    lowered = []
    for pool, blob in zip(pools, blobs):
        memory_pool = new_instance(MemoryPool)
        memory_pool.hidlMemory = None if blob is None else blob.memory(pool.blob.name)
        memory_pool.token = pool.token if blob is None else None
        lowered.append(memory_pool)
    return lowered


def lower(spec: CaseSpec) -> FuzzCase:
    """The FuzzCase a spec describes (fresh objects: later changes to the spec do not leak)."""
    fill = Fill()
    model = _lower_model(spec.model, fill)
    return case(model, lower_request(spec.request, model.main, fill),
                copy_choices(spec.choices))
