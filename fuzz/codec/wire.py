"""The wire grammar (see the package docstring): ``parse`` reads any byte string as a
CaseSpec, ``serialize`` writes a CaseSpec back, raising CodecLimitError for what the
encoding cannot express.

The records (operands, operations, request arguments and pools) are read and written by one
reader and one writer, ``Record.read`` and ``Record.write``, which walk the records' field
tables (grammar.OPERAND_FIELDS, ...) bound here to the spec classes and to the reader and
writer of each field's kind. The parts around them (choices, model, subgraphs, request) are
read by ``parse_*`` and written by ``serialize_*``, which parts.py and decoding.py use too."""
from __future__ import annotations

from functools import partial
from operator import attrgetter, length_hint
from typing import Any, Callable, Iterator, Sequence

from driver.hal import DataLocation, ExtensionNameAndPrefix, Operation, SymmPerChannelQuantParams

from hal_client.paths import DeadlineEdge

from ..case import PLACED_RELATIONS, ExecutionChoices, Relation
from .grammar import (
    ARGUMENT_FIELDS, CHOICES_DEADLINE, CHOICES_FENCED_DURATION, CHOICES_MAX_BYTES,
    CHOICES_RELATION, CHOICES_REQUEST_CHANGE_SHIFT, CORRUPTION_CAP, DEADLINE_CAP_US,
    DEADLINE_EDGE_BASE, DEADLINE_EDGES, FENCED_DURATION_CAP_US, FILL_BUDGET, LIFETIMES,
    LOOP_TIMEOUT_CAP_US, MAX_CHANNEL_SCALES, MAX_EXTENSIONS, MAX_GENERATED_VALUE, MAX_IO_INDEXES,
    MAX_OPERANDS, MAX_OPERATIONS, MAX_POOLS, MAX_REFERENCED, MAX_REQUEST_ARGUMENTS,
    MAX_SEGMENTS, MAX_WAIT_FENCES, MEASURE, MEMORY_NAMES, NUM_SEEDS, OPERAND_FIELDS,
    OPERAND_TYPES, OPERATION_FIELDS, OPERATION_TYPES, PATHS, PREFERENCES, PRIORITIES,
    RECIPE_GENERATED, RECIPE_LITERAL, RECIPE_ZERO, RELATIONS, REQUEST_CHANGES,
    REQUEST_POOL_FIELDS, UINT16_MAX, UINT32_MAX, WAIT_FENCE_DELAY_CAP_US, CodecLimitError,
    Field, Kind)
from .spec import (ZERO_VALUE, ArgumentSpec, BlobSpec, CaseSpec, ModelSpec, OperandSpec,
                   RequestPoolSpec, RequestSpec, Segment, SubgraphSpec, ValueKind, ValueSpec,
                   new_instance, require_fields, writable)
from .values import (ElementKind, limit_error, read_count, read_dimensions, read_float,
                     read_i32, read_indexes, read_memory_name, read_text, read_u32, read_varint,
                     take, varint_tail, write_dimensions, write_floats, write_i32,
                     write_indexes, write_text, write_u32, write_varint)

# --- the kinds of fields (see grammar.Kind; values.py: past the end every field reads as
# zero, and ``where`` names the field at fault) ---------------------------------------------

def wide_code(it: Iterator[int], first: int, codes: dict[int, Any]) -> Any:
    """The enum member (else the int) a code whose first byte ``first`` (already read) is
    over one byte names."""
    value = min(varint_tail(it, first), UINT32_MAX)
    return codes.get(value, value)


def _code_reader(codes: dict[int, Any]) -> Callable[[Iterator[int], bytes], Any]:
    """The reader of a U32 that codes a member of ``codes`` (else reads as the int)."""
    of_byte = tuple(codes.get(b, b) for b in range(0x80))

    def read(it: Iterator[int], data: bytes = b"") -> Any:
        b = next(it, 0)
        return of_byte[b] if b < 0x80 else wide_code(it, b, codes)
    return read


#: A value recipe byte -> its ValueSpec (a literal's is only its kind: its bytes follow).
_VALUE_OF_TAG: tuple[ValueSpec, ...] = (
    ZERO_VALUE, ValueSpec(ValueKind.LITERAL),
    *(ValueSpec(ValueKind.GENERATED, seed) for seed in range(NUM_SEEDS)))


def read_value(it: Iterator[int], data: bytes) -> ValueSpec:
    tag = next(it, 0)
    if tag == RECIPE_LITERAL:
        return ValueSpec(ValueKind.LITERAL, 0, take(it, data, read_varint(it)))
    return _VALUE_OF_TAG[tag]


def write_value(out: bytearray, value: ValueSpec, where: tuple, what: str = "value") -> None:
    if value.kind == ValueKind.GENERATED:
        if not 0 <= value.seed < NUM_SEEDS:
            raise limit_error(where, f"{what} seed", value.seed, f"[0, {NUM_SEEDS})")
        out.append(RECIPE_GENERATED + value.seed)
    elif value.kind == ValueKind.LITERAL:
        out.append(RECIPE_LITERAL)
        write_varint(out, len(value.data), 1 << 62, where, "literal length")
        out += value.data
    else:
        out.append(RECIPE_ZERO)


def read_scale(it: Iterator[int], data: bytes = b"") -> float:
    return read_float(it, bool(next(it, 0) & 1))


def write_scale(out: bytearray, scale: float, where: tuple, what: str) -> None:
    write_floats(out, [scale], None, where, what)


def read_channel_quant(it: Iterator[int], data: bytes = b"") -> SymmPerChannelQuantParams:
    wide = bool(next(it, 0) & 1)
    scales = [read_float(it, wide) for _ in range(read_count(it, MAX_CHANNEL_SCALES))]
    return SymmPerChannelQuantParams(scales, read_u32(it))


def write_channel_quant(out: bytearray, quant: SymmPerChannelQuantParams, where: tuple,
                        what: str) -> None:
    write_floats(out, quant.scales, MAX_CHANNEL_SCALES, where, "channel scale")
    write_u32(out, quant.channelDim, where, "channelDim")


def read_location(it: Iterator[int], data: bytes = b"") -> DataLocation:
    return DataLocation(read_u32(it), read_u32(it), read_u32(it))


def write_location(out: bytearray, location: DataLocation, where: tuple, what: str) -> None:
    write_u32(out, location.poolIndex, where, f"{what}.poolIndex")
    write_u32(out, location.offset, where, f"{what}.offset")
    write_u32(out, location.length, where, f"{what}.length")


_KINDS = tuple(ElementKind)


def read_segments(it: Iterator[int], data: bytes) -> list[Segment]:
    segments = []
    for _ in range(read_count(it, MAX_SEGMENTS)):
        tag = next(it, 0)
        if tag == RECIPE_ZERO:
            segments.append(Segment(ValueKind.ZERO, read_count(it, FILL_BUDGET)))
        elif tag == RECIPE_LITERAL:
            segments.append(Segment(ValueKind.LITERAL, data=take(it, data, read_varint(it))))
        else:
            kind = _KINDS[(tag - RECIPE_GENERATED) % len(_KINDS)]
            seed = next(it, 0)
            segments.append(Segment(ValueKind.GENERATED, read_count(it, MAX_GENERATED_VALUE),
                                    kind, seed))
    return segments


def write_segments(out: bytearray, segments: Sequence[Segment], where: tuple) -> None:
    write_varint(out, len(segments), MAX_SEGMENTS, where, "segment count")
    for segment in segments:
        if segment.kind == ValueKind.ZERO:
            out.append(RECIPE_ZERO)
            write_varint(out, segment.length, FILL_BUDGET, where, "zero segment length")
        elif segment.kind == ValueKind.LITERAL:
            out.append(RECIPE_LITERAL)
            write_varint(out, len(segment.data), 1 << 62, where, "literal length")
            out += segment.data
        else:
            if not 0 <= segment.seed <= 0xFF:
                raise limit_error(where, "segment seed", segment.seed, "[0, 255]")
            out.append(RECIPE_GENERATED + int(segment.element))
            out.append(segment.seed)
            write_varint(out, segment.length, MAX_GENERATED_VALUE, where, "generated length")


def read_blob(it: Iterator[int], data: bytes) -> BlobSpec:
    code = next(it, 0)
    name = MEMORY_NAMES[code] if code < len(MEMORY_NAMES) else read_memory_name(it, data)
    return BlobSpec(name, read_segments(it, data))


def write_blob(out: bytearray, blob: BlobSpec, where: tuple, what: str = "blob") -> None:
    if blob.name in MEMORY_NAMES:
        out.append(MEMORY_NAMES.index(blob.name))
    else:
        out.append(0xFF)
        write_text(out, blob.name, where, "memory name")
    write_segments(out, blob.segments, where)


def _write_bytes(out: bytearray, value: bytes, where: tuple, what: str, *, cap: int) -> None:
    write_varint(out, len(value), cap, where, f"{what} length")
    out += value


def _write_i32(out: bytearray, value: int, where: tuple, what: str, *, cap: int) -> None:
    if abs(value) > cap:
        raise limit_error(where, what, value, f"±{cap}")
    write_i32(out, value, where, what)


_KIND_IO: dict[Kind, tuple[Callable | None, Callable | None]] = {
    Kind.BIT: (None, None),     # (held in the head)
    Kind.U32: (read_u32, write_u32), Kind.I32: (read_i32, write_i32),
    Kind.DIMENSIONS: (read_dimensions, write_dimensions), Kind.SCALE: (read_scale, write_scale),
    Kind.CHANNEL_QUANT: (read_channel_quant, write_channel_quant),
    Kind.LOCATION: (read_location, write_location), Kind.VALUE: (read_value, write_value),
    Kind.BLOB: (read_blob, write_blob), Kind.OPERAND_TYPE: (_code_reader(OPERAND_TYPES), write_u32),
    Kind.OPERATION_TYPE: (_code_reader(OPERATION_TYPES), write_u32),
    Kind.LIFETIME: (_code_reader(LIFETIMES), write_u32),
}


def _kind_io(kind: Kind, cap: int) -> tuple[Callable, Callable]:
    """The reader ``(it, data) -> value`` and writer ``(out, value, where, what)`` of a
    field of this kind and cap."""
    if kind is Kind.INDEXES:
        return (lambda it, data: read_indexes(it, cap),
                lambda out, value, where, what: write_indexes(out, value, cap, where, what))
    if kind is Kind.BYTES:
        return (lambda it, data: take(it, data, read_count(it, cap)),
                partial(_write_bytes, cap=cap))
    if kind is Kind.I32 and cap:
        return (lambda it, data: min(max(read_i32(it), -cap), cap),
                partial(_write_i32, cap=cap))
    return _KIND_IO[kind]


# --- records ---------------------------------------------------------------------------------

class Record:
    """A record of the grammar bound to the spec class it is read into (``new`` makes one,
    every field at its default) and to the reader and writer of each field's kind. Which
    fields follow a head byte is worked out once per value of the head (its plan): the
    values the head holds itself, the fields to read, the fields to write."""

    def __init__(self, new: Callable[[], Any], fields: tuple[Field, ...]) -> None:
        self.new = new
        default = new()
        bound = [(f, *_kind_io(f.kind, f.cap)) for f in fields]
        #: (get, flag, escape, default) of the fields the head says something of.
        self.head = tuple((attrgetter(f.name), f.flag, f.escape,
                           None if f.escape else attrgetter(f.name)(default))
                          for f in fields if f.flag or f.escape)
        #: (get, name, when, default) of the fields that follow only when ``when`` holds.
        self.conditional = tuple((attrgetter(f.name), f.name, f.when,
                                  attrgetter(f.name)(default)) for f in fields if f.when)
        self.plans = tuple(_plan(bound, head) for head in range(256 if self.head else 1))

    def read(self, it: Iterator[int], data: bytes, head: int | None = None) -> Any:
        """The record at ``it`` (after its head byte when that is given)."""
        if head is None:
            head = next(it, 0) if self.head else 0
        held, reads, _ = self.plans[head]
        record = self.new()
        for name, value in held:
            setattr(record, name, value)
        for owner, name, read, when in reads:
            if when is None or when(record):
                setattr(record if owner is None else getattr(record, owner), name,
                        read(it, data))
        return record

    def write(self, out: bytearray, record: Any, where: tuple) -> None:
        head = 0
        for get, flag, escape, default in self.head:
            value = get(record)
            if escape:
                head |= value if 0 <= value < escape else escape
            elif value != default:
                head |= flag
        if self.head:
            out.append(head)
        for get, write, when, name in self.plans[head][2]:
            if when is None or when(record):
                write(out, get(record), where, name)

    def encoded(self, records: list, i: int) -> Any:
        """records[i] with the fields its bytes leave out (those whose ``when`` fails) at
        their defaults: replaced by a copy first (spec.writable) if some is not."""
        record = records[i]
        unused = [(name, default) for get, name, when, default in self.conditional
                  if not when(record) and get(record) != default]
        if unused:
            record = writable(records, i)
            for name, default in unused:
                setattr(record, name, default)
        return record


def _plan(fields: list[tuple[Field, Callable, Callable]],
          head: int) -> tuple[tuple, tuple, tuple]:
    """(what the head holds itself, the fields to read, the fields to write) of a record
    whose head byte is ``head``; ``fields``: each with its reader and writer."""
    held, reads, writes = [], [], []
    for f, read, write in fields:
        if f.kind is Kind.BIT:
            held.append((f.name, bool(head & f.flag)))
        elif f.escape and head & f.escape != f.escape:
            held.append((f.name, read(iter((head & f.escape,)), b"")))
        elif not f.flag or head & f.flag:
            owner, _, name = f.name.rpartition(".")
            reads.append((owner or None, name, read, f.when))
            writes.append((attrgetter(f.name), write, f.when, f.name))
    return tuple(held), tuple(reads), tuple(writes)


# The records as wire.py reads them; an operation (no head byte, every field read) is built
# field by field (see spec.require_fields).
require_fields(Operation, *(f.name for f in OPERATION_FIELDS))
OPERAND = Record(partial(OperandSpec, 0), OPERAND_FIELDS)
OPERATION = Record(partial(new_instance, Operation), OPERATION_FIELDS)
ARGUMENT = Record(ArgumentSpec, ARGUMENT_FIELDS)
REQUEST_POOL = Record(RequestPoolSpec, REQUEST_POOL_FIELDS)


def read_records(record: Record, cap: int, it: Iterator[int], data: bytes) -> list:
    """A count (capped), then as many records."""
    read = record.read
    return [read(it, data) for _ in range(read_count(it, cap))]


def write_count(out: bytearray, items: Sequence, cap: int, where: tuple) -> None:
    """The count of ``items``, named by ``where`` (the part, then what the items are)."""
    write_varint(out, len(items), cap, where[:1], f"{where[-1]} count")


def write_records(out: bytearray, record: Record, items: Sequence, cap: int, where: tuple,
                  offsets: list[list[int]] | None = None) -> None:
    """A count, then the items; with ``offsets``, the offset each item starts at (and the
    end of the last) is added to it as one list."""
    write_count(out, items, cap, where)
    write = record.write
    if offsets is None:
        for i, item in enumerate(items):
            write(out, item, (*where, i))
        return
    starts = [len(out)]
    for i, item in enumerate(items):
        write(out, item, (*where, i))
        starts.append(len(out))
    offsets.append(starts)


# --- choices ---------------------------------------------------------------------------------

def _deadline(us: int) -> tuple[int, DeadlineEdge]:
    """A deadline varint: µs from the call (capped), or just past the cap, an edge of the
    clock (see DEADLINE_EDGE_BASE)."""
    if DEADLINE_EDGE_BASE < us <= DEADLINE_EDGE_BASE + len(DEADLINE_EDGES):
        return 0, DEADLINE_EDGES[us - DEADLINE_EDGE_BASE - 1]
    return min(us, DEADLINE_CAP_US) * 1000, DeadlineEdge.NONE


def parse_choices(it: Iterator[int]) -> ExecutionChoices:
    a, b = next(it, 0), next(it, 0)
    wait_fences = (b >> 2) & 3
    loop = read_varint(it)
    deadline, edge = (_deadline(read_varint(it)) if a & CHOICES_DEADLINE
                      else (None, DeadlineEdge.NONE))
    delay = min(read_varint(it), WAIT_FENCE_DELAY_CAP_US) * 1000 if wait_fences else 0
    duration = (min(read_varint(it), FENCED_DURATION_CAP_US) * 1000
                if b & CHOICES_FENCED_DURATION else None)
    relation = (RELATIONS[min(read_varint(it), len(RELATIONS) - 1)] if b & CHOICES_RELATION
                else Relation.NONE)
    corruption = min(read_varint(it), CORRUPTION_CAP) if relation in PLACED_RELATIONS else 0
    return ExecutionChoices(
        path=PATHS[a & 3], second_path=PATHS[(a >> 2) & 3], measureTiming=MEASURE[(a >> 4) & 1],
        preference=PREFERENCES[b & 3], priority=PRIORITIES[(a >> 5) & 3], deadline_ns=deadline,
        deadline_edge=edge,
        loopTimeoutDuration_ns=min(loop - 1, LOOP_TIMEOUT_CAP_US) * 1000 if loop else None,
        wait_fences=wait_fences, wait_fence_delay_ns=delay, fenced_duration_ns=duration,
        request_change=REQUEST_CHANGES[(b >> CHOICES_REQUEST_CHANGE_SHIFT) & 3],
        relation=relation, corruption=corruption)


def _write_microseconds(out: bytearray, ns: int, cap_us: int, what: str, plus: int = 0) -> None:
    """``ns`` as a varint of whole µs (plus ``plus``), which must be within [0, cap_us]."""
    if ns % 1000 or not 0 <= ns // 1000 <= cap_us:
        raise CodecLimitError(f"choices: {what} = {ns} ns is not a whole number of"
                              f" microseconds in [0, {cap_us}] µs")
    write_varint(out, ns // 1000 + plus, cap_us + plus, ("choices",), what)


def serialize_choices(out: bytearray, c: ExecutionChoices) -> None:
    where = ("choices",)
    if not 0 <= c.wait_fences <= MAX_WAIT_FENCES:
        raise limit_error(where, "wait_fences", c.wait_fences, f"[0, {MAX_WAIT_FENCES}]")
    out.append(int(c.path) | int(c.second_path) << 2 | int(c.measureTiming) << 4
               | int(c.priority) << 5 | (CHOICES_DEADLINE if c.deadline_ns is not None else 0))
    out.append(int(c.preference) | c.wait_fences << 2
               | (CHOICES_FENCED_DURATION if c.fenced_duration_ns is not None else 0)
               | int(c.request_change) << CHOICES_REQUEST_CHANGE_SHIFT
               | (CHOICES_RELATION if c.relation != Relation.NONE else 0))
    if c.loopTimeoutDuration_ns is None:
        out.append(0)
    else:
        _write_microseconds(out, c.loopTimeoutDuration_ns, LOOP_TIMEOUT_CAP_US,
                            "loopTimeoutDuration", plus=1)
    if c.deadline_ns is not None and c.deadline_edge != DeadlineEdge.NONE:
        if c.deadline_ns != 0:
            raise CodecLimitError(f"choices: deadline_edge {c.deadline_edge.name} with "
                                  f"deadline_ns {c.deadline_ns}, not 0")
        edge = DEADLINE_EDGE_BASE + DEADLINE_EDGES.index(c.deadline_edge) + 1
        write_varint(out, edge, edge, where, "deadline edge")
    elif c.deadline_ns is not None:
        _write_microseconds(out, c.deadline_ns, DEADLINE_CAP_US, "deadline")
    if c.wait_fences:
        _write_microseconds(out, c.wait_fence_delay_ns, WAIT_FENCE_DELAY_CAP_US, "wait_fence_delay")
    elif c.wait_fence_delay_ns:
        raise CodecLimitError("choices: wait_fence_delay_ns without wait fences")
    if c.fenced_duration_ns is not None:
        _write_microseconds(out, c.fenced_duration_ns, FENCED_DURATION_CAP_US, "fenced duration")
    if c.relation != Relation.NONE:
        write_varint(out, RELATIONS.index(c.relation), len(RELATIONS) - 1, where, "relation")
    if c.relation in PLACED_RELATIONS:
        write_varint(out, c.corruption, CORRUPTION_CAP, where, "corruption")


def read_choices(data: bytes) -> tuple[ExecutionChoices, int]:
    """The execution choices an input starts with, and how many of its bytes they take
    (without parsing the rest)."""
    head = bytes(data[:CHOICES_MAX_BYTES])
    it = iter(head)
    choices = parse_choices(it)
    return choices, len(head) - length_hint(it)


def with_choices(data: bytes, choices: ExecutionChoices) -> bytes:
    """``data`` with its execution choices replaced; the rest decodes as it did."""
    _, used = read_choices(data)
    out = bytearray()
    serialize_choices(out, choices)
    return bytes(out) + bytes(data[used:])


# --- model -----------------------------------------------------------------------------------

def parse_model_head(it: Iterator[int],
                     data: bytes) -> tuple[int, int, list[Segment], list[BlobSpec]]:
    """The model up to its subgraphs: flags, referenced count, operandValues, pools."""
    flags = next(it, 0)
    referenced_count = read_count(it, MAX_REFERENCED)
    values = read_segments(it, data)
    pools = [read_blob(it, data) for _ in range(read_count(it, MAX_POOLS))]
    return flags, referenced_count, values, pools


def serialize_model_head(out: bytearray, m: ModelSpec) -> None:
    """The model up to its subgraphs."""
    out.append((1 if m.relaxComputationFloat32toFloat16 else 0)
               | (2 if m.extensionNameToPrefix else 0))
    write_varint(out, len(m.referenced), MAX_REFERENCED, ("model",), "referenced count")
    write_segments(out, m.operandValues, ("operandValues",))
    write_varint(out, len(m.pools), MAX_POOLS, ("model",), "pool count")
    for j, pool in enumerate(m.pools):
        write_blob(out, pool, ("model pool", j))


def parse_subgraph(it: Iterator[int], data: bytes) -> SubgraphSpec:
    operands = read_records(OPERAND, MAX_OPERANDS, it, data)
    operations = read_records(OPERATION, MAX_OPERATIONS, it, data)
    inputs = read_indexes(it, MAX_IO_INDEXES)
    return SubgraphSpec(operands, operations, inputs, read_indexes(it, MAX_IO_INDEXES))


def subgraph_name(k: int) -> str:
    """Subgraph k (0: main) as error messages name it."""
    return "main" if k == 0 else f"subgraph {k}"


def serialize_subgraph(out: bytearray, sg: SubgraphSpec, name: str,
                       offsets: list[list[int]] | None = None) -> None:
    """The subgraph; with ``offsets``, where its operands, then its operations, start (see
    write_records)."""
    write_records(out, OPERAND, sg.operands, MAX_OPERANDS, (name, "operand"), offsets)
    write_records(out, OPERATION, sg.operations, MAX_OPERATIONS, (name, "operation"), offsets)
    write_indexes(out, sg.inputIndexes, MAX_IO_INDEXES, (name,), "inputIndexes")
    write_indexes(out, sg.outputIndexes, MAX_IO_INDEXES, (name,), "outputIndexes")


def parse_extensions(it: Iterator[int], data: bytes) -> list[ExtensionNameAndPrefix]:
    extensions = []
    for _ in range(read_count(it, MAX_EXTENSIONS)):
        name = read_text(it, data)
        extensions.append(ExtensionNameAndPrefix(name, min(read_varint(it), UINT16_MAX)))
    return extensions


def serialize_model_tail(out: bytearray, m: ModelSpec) -> None:
    """The model after its subgraphs."""
    if m.extensionNameToPrefix:
        write_varint(out, len(m.extensionNameToPrefix), MAX_EXTENSIONS, ("model",),
                     "extension count")
        for ext in m.extensionNameToPrefix:
            write_text(out, ext.name, ("extension",), "name")
            write_varint(out, ext.prefix, UINT16_MAX, ("extension", ext.name), "prefix")


# --- request ---------------------------------------------------------------------------------

def parse_request(it: Iterator[int], data: bytes) -> RequestSpec:
    pools = read_records(REQUEST_POOL, MAX_POOLS, it, data)
    inputs = read_records(ARGUMENT, MAX_REQUEST_ARGUMENTS, it, data)
    return RequestSpec(inputs, read_records(ARGUMENT, MAX_REQUEST_ARGUMENTS, it, data), pools)


def serialize_request(out: bytearray, r: RequestSpec,
                      offsets: list[list[int]] | None = None) -> None:
    """The request; with ``offsets``, where its inputs, then its outputs, start (see
    write_records)."""
    write_records(out, REQUEST_POOL, r.pools, MAX_POOLS, ("request", "pool"))
    write_records(out, ARGUMENT, r.inputs, MAX_REQUEST_ARGUMENTS, ("request", "input"), offsets)
    write_records(out, ARGUMENT, r.outputs, MAX_REQUEST_ARGUMENTS, ("request", "output"),
                  offsets)


# --- the case --------------------------------------------------------------------------------

def parse(data: bytes) -> CaseSpec:
    """Any byte string -> its CaseSpec (never raises)."""
    data = bytes(data)
    it = iter(data)
    choices = parse_choices(it)
    flags, referenced_count, values, pools = parse_model_head(it, data)
    main = parse_subgraph(it, data)
    referenced = [parse_subgraph(it, data) for _ in range(referenced_count)]
    extensions = parse_extensions(it, data) if flags & 2 else []
    model = ModelSpec(main, referenced, values, pools, bool(flags & 1), extensions)
    return CaseSpec(model, parse_request(it, data), choices)


def serialize(spec: CaseSpec) -> bytes:
    """CaseSpec -> bytes; raises CodecLimitError for what the encoding cannot express."""
    out = bytearray()
    serialize_choices(out, spec.choices)
    m = spec.model
    serialize_model_head(out, m)
    for k, sg in enumerate(m.subgraphs()):
        serialize_subgraph(out, sg, subgraph_name(k))
    serialize_model_tail(out, m)
    serialize_request(out, spec.request)
    return bytes(out)
