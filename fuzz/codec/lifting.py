"""Lifting: FuzzCase -> CaseSpec, the most compact spec that lowers to exactly the case
(``lift``), and so ``encode``, the inverse of ``decode``; ``relayout`` for seeds made from
other models."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Sequence

from driver.hal import (DataLocation, ExtensionNameAndPrefix, Model, Operand, Operation,
                        Request, RequestArgument, Subgraph)

from ..case import FuzzCase
from .decoding import decode
from .grammar import (COPY, FILL_BUDGET, MAX_GENERATED_VALUE, MAX_SEGMENTS, MAX_SIZE_DELTA,
                      NUM_SEEDS, REFERENCE, SUBGRAPH, CodecLimitError)
from .lowering import NO_TYPE, aligned, consumer_counts, lower_extra, storage_bytes
from .spec import (ArgumentSpec, BlobSpec, CaseSpec, ModelSpec, OperandSpec, RequestPoolSpec,
                   RequestSpec, Segment, SubgraphSpec, ValueKind, ValueSpec)
from .values import ElementKind, element_kind, find_seed
from .wire import serialize


def _classify(data: bytes, operand_type: int, dims: Sequence[int], allow_delta: bool,
              compact: bool) -> tuple[ValueSpec, int]:
    """A placed-value recipe (and size delta) that reproduces ``data`` exactly."""
    n = len(data)
    if compact:
        delta = n - storage_bytes(operand_type, dims)
        if delta == 0 or (allow_delta and abs(delta) <= MAX_SIZE_DELTA):
            if n <= FILL_BUDGET and data.count(0) == n:
                return ValueSpec(), delta
            if n <= MAX_GENERATED_VALUE:
                seed = find_seed(element_kind(operand_type), data)
                if seed is not None:
                    return ValueSpec(ValueKind.GENERATED, seed), delta
    return ValueSpec(ValueKind.LITERAL, data=bytes(data)), 0


@dataclass
class _Placeable:
    """One constant or request argument that lift tries to describe as placed."""
    location: DataLocation
    operand_type: int
    dims: Sequence[int]
    allow_delta: bool
    value: ValueSpec | None = None
    delta: int = 0


def _chain(blob: bytes, items: Sequence[_Placeable], pool_index: int, compact: bool) -> bool:
    """Whether the blob is exactly the items placed one after the other as the decoder
    places them; on success each item gets its value recipe."""
    offset = 0
    for item in items:
        loc = item.location
        start = aligned(offset)
        end = start + loc.length
        if loc.poolIndex != pool_index or loc.offset != start or end > len(blob):
            return False
        if blob.count(0, offset, start) != start - offset:
            return False
        item.value, item.delta = _classify(blob[start:end], item.operand_type, item.dims,
                                           item.allow_delta, compact)
        offset = end
    return offset == len(blob)


def _explicit_segments(blob: bytes, regions: Iterable[tuple[int, int, int]],
                       compact: bool) -> list[Segment]:
    """The blob as segments cut where the (offset, length, operand type) regions start and
    end, each piece as zeros, generated values or literal bytes."""
    if not blob:
        return []
    if not compact:
        return [Segment(ValueKind.LITERAL, data=bytes(blob))]
    size = len(blob)
    cuts = {0, size}
    kinds: dict[int, ElementKind] = {}
    for offset, length, operand_type in regions:
        if offset < size:
            cuts.add(offset)
            kinds.setdefault(offset, element_kind(operand_type))
            if offset + length < size:
                cuts.add(offset + length)
    points = sorted(cuts)
    segments: list[Segment] = []
    for start, end in zip(points, points[1:]):
        piece = bytes(blob[start:end])
        seed = None
        if piece.count(0) == len(piece):
            segment = Segment(ValueKind.ZERO, len(piece))
        else:
            kind = kinds.get(start, ElementKind.BYTES)
            if 4 <= len(piece) <= MAX_GENERATED_VALUE:
                seed = find_seed(kind, piece)
            segment = (Segment(ValueKind.LITERAL, data=piece) if seed is None
                       else Segment(ValueKind.GENERATED, len(piece), kind, seed))
        last = segments[-1] if segments else None
        if last is not None and last.kind == segment.kind == ValueKind.ZERO:
            last.length += segment.length
        elif last is not None and last.kind == segment.kind == ValueKind.LITERAL:
            last.data += segment.data
        else:
            segments.append(segment)
    if len(segments) > MAX_SEGMENTS or any(s.kind == ValueKind.ZERO and s.length > FILL_BUDGET
                                           for s in segments):
        return [Segment(ValueKind.LITERAL, data=bytes(blob))]
    return segments


def _operand_base(o: Operand, counted: int) -> OperandSpec:
    return OperandSpec(
        o.type, list(o.dimensions), o.scale, o.zeroPoint, o.lifetime,
        None if o.numberOfConsumers == counted else o.numberOfConsumers,
        DataLocation(o.location.poolIndex, o.location.offset, o.location.length), 0,
        ValueSpec(), lower_extra(o.extraParams))


def _lift_model(model: Model, placed: bool, compact: bool) -> ModelSpec:
    subgraphs = [model.main, *model.referenced]
    pairs: list[tuple[OperandSpec, Operand]] = []
    specs = []
    for sg in subgraphs:
        counted = consumer_counts(len(sg.operands), sg.operations)
        operands = [_operand_base(o, counted[i]) for i, o in enumerate(sg.operands)]
        pairs.extend(zip(operands, sg.operands))
        specs.append(SubgraphSpec(
            operands,
            [Operation(op.type, list(op.inputs), list(op.outputs)) for op in sg.operations],
            list(sg.inputIndexes), list(sg.outputIndexes)))

    def place(blob: bytes, members: list[tuple[OperandSpec, Operand]], pool_index: int,
              target: int | None) -> list[Segment]:
        items = [_Placeable(o.location, o.type, o.dimensions, False) for _, o in members]
        if placed and _chain(blob, items, pool_index, compact):
            for (spec, _), item in zip(members, items):
                spec.location, spec.value = None, item.value
                if target is not None:
                    spec.target = target
            return []
        return _explicit_segments(
            blob, [(o.location.offset, o.location.length, o.type) for _, o in members
                   if o.location.poolIndex == pool_index], compact)

    copies = [(s, o) for s, o in pairs if o.lifetime == COPY]
    values = place(model.operandValues, copies, 0, None)
    pools = []
    for j, memory in enumerate(model.pools):
        members = [(s, o) for s, o in pairs
                   if o.lifetime == REFERENCE and o.location.poolIndex == j]
        pools.append(BlobSpec(memory.name, place(memory.read(), members, j, j)))
    if placed:
        for spec, o in pairs:
            loc = o.location
            if o.lifetime == SUBGRAPH:
                if loc.poolIndex == 0 and loc.length == 0:
                    spec.location, spec.target = None, loc.offset
            elif (o.lifetime not in (COPY, REFERENCE)
                  and loc.poolIndex == loc.offset == loc.length == 0):
                spec.location = None
    extensions = [ExtensionNameAndPrefix(e.name, e.prefix) for e in model.extensionNameToPrefix]
    return ModelSpec(specs[0], specs[1:], values, pools, model.relaxComputationFloat32toFloat16,
                     extensions)


def io_operand(main: Subgraph, indexes: Sequence[int], i: int) -> Operand | None:
    if i < len(indexes) and indexes[i] < len(main.operands):
        return main.operands[indexes[i]]
    return None


def _argument_base(a: RequestArgument) -> ArgumentSpec:
    loc = a.location
    return ArgumentSpec(a.hasNoValue, list(a.dimensions),
                        DataLocation(loc.poolIndex, loc.offset, loc.length))


def _lift_request(request: Request, main: Subgraph, placed: bool, compact: bool) -> RequestSpec:
    inputs = [_argument_base(a) for a in request.inputs]
    outputs = [_argument_base(a) for a in request.outputs]
    args: list[tuple[ArgumentSpec, RequestArgument, Operand | None]] = []
    for specs, hal_args, indexes in ((inputs, request.inputs, main.inputIndexes),
                                     (outputs, request.outputs, main.outputIndexes)):
        args.extend((s, a, io_operand(main, indexes, i))
                    for i, (s, a) in enumerate(zip(specs, hal_args)))
    if placed:
        for spec, a, _ in args:
            loc = a.location
            if a.hasNoValue and loc.poolIndex == loc.offset == loc.length == 0:
                spec.location = None
    pools = []
    for j, pool in enumerate(request.pools):
        members = [(s, a, o) for s, a, o in args if not a.hasNoValue and a.location.poolIndex == j]
        if pool.token is not None and pool.hidlMemory is None:
            pools.append(RequestPoolSpec(token=pool.token))
            if placed:
                for spec, a, _ in members:
                    if a.location.offset == a.location.length == 0:
                        spec.location, spec.target = None, j
            continue
        if pool.hidlMemory is None or pool.token is not None:
            raise CodecLimitError(f"request pool {j} must hold exactly one of hidlMemory, token")
        blob = pool.hidlMemory.read()
        items = [_Placeable(a.location, NO_TYPE if o is None else o.type,
                            a.dimensions or ([] if o is None else o.dimensions), True)
                 for _, a, o in members]
        if placed and _chain(blob, items, j, compact):
            for (spec, _, _), item in zip(members, items):
                spec.location, spec.target = None, j
                spec.value, spec.size_delta = item.value, item.delta
            segments = []
        else:
            segments = _explicit_segments(
                blob, [(a.location.offset, a.location.length, NO_TYPE if o is None else o.type)
                       for _, a, o in members], compact)
        pools.append(RequestPoolSpec(blob=BlobSpec(pool.hidlMemory.name, segments)))
    return RequestSpec(inputs, outputs, pools)


def lift(case: FuzzCase, *, placed: bool = True, compact: bool = True) -> CaseSpec:
    """A spec that lowers to ``case``, as compact as the options allow: ``placed`` lets the
    decoder place constants and arguments where their layout is the one it would choose,
    ``compact`` describes contents as zeros or generated values where they are."""
    return CaseSpec(_lift_model(case.model, placed, compact),
                    _lift_request(case.request, case.model.main, placed, compact),
                    replace(case.choices))


def encode(case: FuzzCase) -> bytes:
    """FuzzCase -> bytes with ``decode(encode(case)) == case``, for every case ``decode`` can
    produce. Tries the most compact description first and checks each by decoding it."""
    for placed, compact in ((True, True), (True, False), (False, True), (False, False)):
        data = serialize(lift(case, placed=placed, compact=compact))
        if decode(data) == case:
            return data
    raise CodecLimitError("the case holds a value the encoding cannot reproduce exactly"
                          " (a NaN scale?)")


# --- seeds from other models ---------------------------------------------------------------

def _readable(blob: bytes | None, location: DataLocation) -> bytes | None:
    if blob is None or location.offset + location.length > len(blob):
        return None
    return bytes(blob[location.offset:location.offset + location.length])


def _recipe(data: bytes, operand_type: int, dims: Sequence[int], allow_delta: bool,
            max_literal: int | None) -> tuple[ValueSpec, int]:
    value, delta = _classify(data, operand_type, dims, allow_delta, True)
    if (max_literal is not None and value.kind == ValueKind.LITERAL and len(data) > max_literal
            and len(data) == storage_bytes(operand_type, dims)):
        # Bulk data whose exact values do not matter: generated values of the same size
        # (zeros beyond what the decoder generates).
        value = (ValueSpec(ValueKind.GENERATED, sum(data[:64]) % NUM_SEEDS)
                 if len(data) <= MAX_GENERATED_VALUE else ValueSpec())
        delta = 0
    return value, delta


def relayout(case: FuzzCase, *, max_literal: int | None = None, zero_outputs: bool = True,
             one_request_pool: bool = False) -> CaseSpec:
    """A spec of the same model and request in which the decoder places every constant and
    request argument itself, which is the form structural mutations keep valid. Meant for
    valid cases (conformance models, hand-written ones); values at unreadable locations are
    left where they were. ``max_literal`` replaces literal values longer than that by
    generated values of the same size; ``zero_outputs`` starts output buffers as zeros;
    ``one_request_pool`` puts every request argument in one pool (each pool costs the
    decoder a shared-memory mapping)."""
    spec = lift(case)
    model = case.model
    pools = [memory.read() for memory in model.pools]
    for sg_spec, sg in zip(spec.model.subgraphs(), [model.main, *model.referenced]):
        for o_spec, o in zip(sg_spec.operands, sg.operands):
            loc = o.location
            if o.lifetime == SUBGRAPH:
                o_spec.location, o_spec.target = None, loc.offset
            elif o.lifetime in (COPY, REFERENCE):
                blob = (model.operandValues if o.lifetime == COPY
                        else pools[loc.poolIndex] if loc.poolIndex < len(pools) else None)
                content = _readable(blob, loc)
                if content is not None:
                    o_spec.value, _ = _recipe(content, o.type, o.dimensions, False, max_literal)
                    o_spec.location = None
                    o_spec.target = loc.poolIndex if o.lifetime == REFERENCE else 0
            elif loc.poolIndex == loc.offset == loc.length == 0:
                o_spec.location = None
    spec.model.operandValues = []
    for pool in spec.model.pools:
        pool.segments = []
    request = case.request
    contents = [None if p.hidlMemory is None else p.hidlMemory.read() for p in request.pools]
    main = model.main
    for role, (args, specs, indexes) in enumerate(
            ((request.inputs, spec.request.inputs, main.inputIndexes),
             (request.outputs, spec.request.outputs, main.outputIndexes))):
        for i, (arg, arg_spec) in enumerate(zip(args, specs)):
            loc = arg.location
            if arg.hasNoValue:
                arg_spec.location = None
                continue
            operand = io_operand(main, indexes, i)
            operand_type = NO_TYPE if operand is None else operand.type
            dims = arg.dimensions or ([] if operand is None else operand.dimensions)
            if loc.poolIndex >= len(request.pools):
                continue
            if contents[loc.poolIndex] is None:      # a token: the whole buffer
                arg_spec.location, arg_spec.target = None, loc.poolIndex
                continue
            content = _readable(contents[loc.poolIndex], loc)
            if content is None:
                continue
            if role == 1 and zero_outputs:
                content = bytes(len(content))
            value, delta = _recipe(content, operand_type, dims, True, max_literal)
            arg_spec.location, arg_spec.target = None, loc.poolIndex
            arg_spec.value, arg_spec.size_delta = value, delta
    for pool in spec.request.pools:
        pool.blob.segments = []
    args = spec.request.inputs + spec.request.outputs
    if (one_request_pool and len(spec.request.pools) > 1
            and all(p.token is None for p in spec.request.pools)
            and all(a.location is None for a in args)):
        for arg in args:
            arg.target = 0
        del spec.request.pools[1:]
    return spec
