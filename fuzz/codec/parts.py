"""Serializing part by part: ``encode_parts`` and ``parse_parts`` (see the package
docstring)."""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from itertools import chain, compress, islice
from math import copysign
from operator import is_not, length_hint
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Sequence, TypeVar

from driver.hal import ExtensionNameAndPrefix

from ..case import ExecutionChoices
from .grammar import (MAX_IO_INDEXES, MAX_OPERANDS, MAX_OPERATIONS, MAX_POOLS,
                      MAX_REQUEST_ARGUMENTS, CodecLimitError)
from .spec import CaseSpec, ModelSpec, RequestSpec, SubgraphSpec, copy_choices, copy_subgraph
from .values import place_name, write_indexes
from .wire import (ARGUMENT, OPERAND, OPERATION, REQUEST_POOL, Record, parse, parse_choices,
                   parse_extensions, parse_model_head, parse_request, parse_subgraph,
                   serialize_choices, serialize_model_head, serialize_model_tail,
                   serialize_request, serialize_subgraph, subgraph_name, write_count,
                   write_records)

_P = TypeVar("_P")
# The custom mutator changes a few things of a spec per call. An EncodedSpec keeps the bytes
# of each part of a spec (choices, model head (flags .. pools), each subgraph (main first),
# model tail (extensions), request) and of each element of the lists a part holds (operands,
# operations, request inputs and outputs). Its copy() is the spec to change, noting where
# each part came from; encode_parts then serializes what no longer is what it came from.
# with_choices() and with_request() make a result that replaces one part of a spec and
# keeps the others as they are, without looking at those.

#: The bytes of the elements of a part: (operands, operations) of a subgraph, (inputs,
#: outputs) of the request, nothing for the other parts.
Elements = tuple[tuple[bytes, ...], tuple[bytes, ...]]
_NO_ELEMENTS: Elements = ((), ())


class Origin(NamedTuple):
    """Where a part of a copied spec came from: the part it was copied from, with the bytes
    of that part and of its elements. Holding the copy keeps its id from being reused by
    another object."""
    copy: object
    source: Any
    data: bytes
    elements: Elements


#: id() of a part of a copied spec -> its Origin.
Origins = dict[int, Origin]


@dataclass(frozen=True)
class EncodedSpec:
    """A spec with the serialized bytes of its parts and their elements. The spec must not
    change afterwards (copy() gives one that may): that is what makes the bytes reusable."""
    spec: CaseSpec
    parts: tuple[bytes, ...]
    elements: tuple[Elements, ...]      # per part

    @property
    def data(self) -> bytes:
        return b"".join(self.parts)

    def copy(self, origins: Origins) -> CaseSpec:
        """A copy of the spec to change; its parts' origins are added to ``origins``."""
        r = self.spec.request
        request = RequestSpec(r.inputs.copy(), r.outputs.copy(), r.pools.copy())
        origins[id(request)] = Origin(request, r, self.parts[-1], self.elements[-1])
        return CaseSpec(self.copy_model(origins), request, self.copy_choices(origins))

    def with_choices(self, choices: ExecutionChoices, origins: Origins) -> EncodedSpec:
        """This spec's model and request as they are (shared, so they must not change)
        with other execution choices: encode_parts of such a spec, taking the choices'
        bytes from their origin in ``origins`` when they still equal it."""
        spec = self.spec
        data, elements = _choices_part(choices, _origin(origins, choices))
        return EncodedSpec(CaseSpec(spec.model, spec.request, choices),
                           (data, *self.parts[1:]), (elements, *self.elements[1:]))

    def with_request(self, request: RequestSpec, choices: EncodedSpec) -> EncodedSpec:
        """This spec's model as it is (shared) with a new request, serialized, and the
        execution choices of ``choices`` (shared): encode_parts of such a spec."""
        data, elements = _request_part(request, None, _UNLIMITED)
        return EncodedSpec(CaseSpec(self.spec.model, request, choices.spec.choices),
                           (choices.parts[0], *self.parts[1:-1], data),
                           (choices.elements[0], *self.elements[1:-1], elements))

    def copy_choices(self, origins: Origins) -> ExecutionChoices:
        c = self.spec.choices
        copy = copy_choices(c)
        origins[id(copy)] = Origin(copy, c, self.parts[0], self.elements[0])
        return copy

    def copy_subgraph(self, k: int, origins: Origins) -> SubgraphSpec:
        """A copy of subgraph k (0: main, k: referenced[k - 1])."""
        model = self.spec.model
        sg = model.main if k == 0 else model.referenced[k - 1]
        copy = copy_subgraph(sg)
        origins[id(copy)] = Origin(copy, sg, self.parts[2 + k], self.elements[2 + k])
        return copy

    def copy_model(self, origins: Origins) -> ModelSpec:
        m = self.spec.model
        parts, elements = self.parts, self.elements
        # (Not through copy_subgraph: a copy is made per custom mutation, and the calls cost
        # as much again.)
        copies = []
        for k, sg in enumerate([m.main, *m.referenced]):
            copy = copy_subgraph(sg)
            origins[id(copy)] = Origin(copy, sg, parts[2 + k], elements[2 + k])
            copies.append(copy)
        model = ModelSpec(copies[0], copies[1:], m.operandValues.copy(), m.pools.copy(),
                          m.relaxComputationFloat32toFloat16, m.extensionNameToPrefix.copy())
        origins[id(model)] = Origin(model, m, parts[1], elements[1])
        return model


#: The ``room`` of an encoding without a size limit.
_UNLIMITED = 1 << 62


def _too_long(where: tuple, size: int, room: int) -> CodecLimitError:
    return CodecLimitError(f"{place_name(where)}: {size} bytes, more than the {max(room, 0)} bytes"
                           " left of the size allowed")


def _elements_out(out: bytearray, record: Record, items: list[_P], where: tuple,
                  origin_items: Sequence[_P], origin_bytes: tuple[bytes, ...],
                  room: int) -> tuple[bytes, ...]:
    """The items (which are not those of the origin) serialized and appended to ``out``,
    each item the origin holds taking the origin's bytes; returns each item's bytes. An
    item is serialized anew as Record.encoded gives it. Raises CodecLimitError as soon as
    one item serialized anew is longer than ``room``: a mutation that expands a large value
    into literal bytes makes a result too long to use, and writing a megabyte into every
    buffer on the way would cost milliseconds."""
    n, count = len(origin_items), len(items)
    write, encoded = record.write, record.encoded if record.conditional else None
    if not n:
        return _new_elements_out(out, items, write, where, encoded, room)
    if count >= n:
        # Mostly the origin's own list with an element or two replaced, or appended (a new
        # element is only ever appended): find those at C speed. An element the origin
        # holds elsewhere only happens when some were deleted.
        pieces = [*origin_bytes, *[b""] * (count - n)]
        fresh: Iterable[int] = chain(compress(range(n), map(is_not, items, origin_items)),
                                     range(n, count))
        known: dict[int, bytes] = {}
    else:
        pieces = [b""] * count
        fresh = range(count)
        known = {id(x): data for x, data in zip(origin_items, origin_bytes)}
    for i in fresh:
        item = items[i]
        data = known.get(id(item))
        if data is None:
            if encoded is not None:
                item = encoded(items, i)
                # (Operands and arguments: their literal value, if any, is written whole.)
                if len(item.value.data) > room:
                    raise _too_long((*where, i), len(item.value.data), room)
            piece = bytearray()
            write(piece, item, (*where, i))
            if len(piece) > room:
                raise _too_long((*where, i), len(piece), room)
            data = bytes(piece)
        pieces[i] = data
    out += b"".join(pieces)
    return tuple(pieces)


def _new_elements_out(out: bytearray, items: list[_P],
                      write: Callable[[bytearray, _P, tuple], None], where: tuple,
                      encoded: Callable[[list[_P], int], _P] | None,
                      room: int) -> tuple[bytes, ...]:
    """_elements_out without an origin: the items are serialized one after the other into
    one buffer, which is then cut into each item's bytes."""
    written = bytearray()
    ends = []
    for i, item in enumerate(items):
        write(written, item if encoded is None else encoded(items, i), (*where, i))
        if len(written) > room:
            raise _too_long((*where, i), len(written), room)
        ends.append(len(written))
    whole = bytes(written)
    out += whole
    return tuple([whole[start:end] for start, end in zip([0, *ends], ends)])


# Each part is written by a function of the part and its origin (None: no origin), which
# returns the part's bytes and its elements' bytes: the origin's own when the part still
# equals the origin. The elements a mutation left alone are the very objects of the origin,
# which lists compare at C speed; one replaced compares by value (an equal copy still counts
# as unchanged). Equal parts serialize to the same bytes, but for the sign of a zero scale,
# which no mutation produces on purpose. Each list is compared once: a list equal to the
# origin's takes the origin's bytes, the others are serialized element by element.

_Part = tuple[bytes, Elements]
# What a part without an origin is compared with: nothing (never changed).
_NO_SUBGRAPH = SubgraphSpec()
_NO_REQUEST = RequestSpec()


def _written(write: Callable[[bytearray, list[list[int]]], None]) -> _Part:
    """A part as ``write`` writes it (with offsets: see wire.write_records), with its
    elements' bytes."""
    out = bytearray()
    offsets: list[list[int]] = []
    write(out, offsets)
    part = bytes(out)
    return part, (_cut(part, offsets[0]), _cut(part, offsets[1])) if offsets else _NO_ELEMENTS


def _cut(whole: bytes, offsets: list[int]) -> tuple[bytes, ...]:
    """The bytes between each offset and the next."""
    return tuple([whole[start:end] for start, end in zip(offsets, offsets[1:])])


def _choices_part(c: ExecutionChoices, origin: Origin | None) -> _Part:
    if origin is not None and vars(c) == vars(origin.source):
        return origin.data, origin.elements
    return _written(lambda out, _: serialize_choices(out, c))


def _model_head_part(m: ModelSpec, origin: Origin | None) -> _Part:
    if origin is not None:
        known = origin.source
        if (m.relaxComputationFloat32toFloat16 == known.relaxComputationFloat32toFloat16
                and bool(m.extensionNameToPrefix) == bool(known.extensionNameToPrefix)
                and len(m.referenced) == len(known.referenced)
                and m.operandValues == known.operandValues and m.pools == known.pools):
            return origin.data, origin.elements
    return _written(lambda out, _: serialize_model_head(out, m))


def _kept_list_out(out: bytearray, record: Record, items: list[_P], cap: int, where: tuple,
                   same: bool, origin_items: Sequence[_P], origin_bytes: tuple[bytes, ...],
                   room: int) -> tuple[bytes, ...]:
    """The count and the items, as wire.write_records writes them: _elements_out, or, for
    a list equal to its origin's (``same``), the origin's bytes as they are."""
    write_count(out, items, cap, where)
    if same:
        out += b"".join(origin_bytes)
        return origin_bytes
    return _elements_out(out, record, items, where, origin_items, origin_bytes, room)


def _subgraph_part(sg: SubgraphSpec, k: int, origin: Origin | None, room: int) -> _Part:
    """serialize_subgraph of subgraph k, taking the bytes of the origin's operands and
    operations that ``sg`` still holds (see _elements_out for ``room``)."""
    known = _NO_SUBGRAPH if origin is None else origin.source
    same_operands = sg.operands == known.operands
    same_operations = sg.operations == known.operations
    if (origin is not None and same_operands and same_operations
            and sg.inputIndexes == known.inputIndexes and sg.outputIndexes == known.outputIndexes):
        return origin.data, origin.elements
    operands, operations = _NO_ELEMENTS if origin is None else origin.elements
    name = subgraph_name(k)
    out = bytearray()
    operands = _kept_list_out(out, OPERAND, sg.operands, MAX_OPERANDS, (name, "operand"),
                              same_operands, known.operands, operands, room)
    operations = _kept_list_out(out, OPERATION, sg.operations, MAX_OPERATIONS,
                                (name, "operation"), same_operations, known.operations,
                                operations, room)
    write_indexes(out, sg.inputIndexes, MAX_IO_INDEXES, (name,), "inputIndexes")
    write_indexes(out, sg.outputIndexes, MAX_IO_INDEXES, (name,), "outputIndexes")
    return bytes(out), (operands, operations)


def _request_part(r: RequestSpec, origin: Origin | None, room: int) -> _Part:
    """serialize_request, taking the bytes of the origin's arguments that ``r`` still
    holds (see _elements_out for ``room``)."""
    known = _NO_REQUEST if origin is None else origin.source
    same_inputs = r.inputs == known.inputs
    same_outputs = r.outputs == known.outputs
    if origin is not None and same_inputs and same_outputs and r.pools == known.pools:
        return origin.data, origin.elements
    inputs, outputs = _NO_ELEMENTS if origin is None else origin.elements
    out = bytearray()
    write_records(out, REQUEST_POOL, r.pools, MAX_POOLS, ("request", "pool"))
    inputs = _kept_list_out(out, ARGUMENT, r.inputs, MAX_REQUEST_ARGUMENTS, ("request", "input"),
                            same_inputs, known.inputs, inputs, room)
    outputs = _kept_list_out(out, ARGUMENT, r.outputs, MAX_REQUEST_ARGUMENTS,
                             ("request", "output"), same_outputs, known.outputs, outputs, room)
    return bytes(out), (inputs, outputs)


def _origin(origins: Origins, part: object) -> Origin | None:
    origin = origins.get(id(part))
    return origin if origin is not None and origin.copy is part else None


def encode_parts(spec: CaseSpec, origins: Origins | None = None,
                 max_size: int | None = None) -> EncodedSpec:
    """``spec`` serialized part by part, as serialize() does (and raising as it does), taking
    the bytes of a part, or else of its elements, from its origin in ``origins`` where the
    spec still holds them. Fields the encoding leaves out are reset in what is serialized
    (the value or target of an operand whose lifetime or explicit location has no use for
    them, and of an argument with a location or no value), so that the EncodedSpec made can
    stand for the parsed bytes. With ``max_size``, bytes longer than that raise
    CodecLimitError too (as soon as that is certain)."""
    if origins is None:
        origins = {}
    room = _UNLIMITED if max_size is None else max_size
    m = spec.model
    written = [_choices_part(spec.choices, _origin(origins, spec.choices)),
               _model_head_part(m, _origin(origins, m))]
    room -= len(written[0][0]) + len(written[1][0])
    for k, sg in enumerate(m.subgraphs()):
        part = _subgraph_part(sg, k, _origin(origins, sg), room)
        room -= len(part[0])
        written.append(part)
    written.append(_written(lambda out, _: serialize_model_tail(out, m)))
    written.append(_request_part(spec.request, _origin(origins, spec.request), room))
    room -= len(written[-2][0]) + len(written[-1][0])
    if room < 0:
        raise CodecLimitError(f"the spec takes {max_size - room} bytes, more than the"
                              f" {max_size} allowed")
    parts, elements = zip(*written)
    return EncodedSpec(spec, parts, elements)


def parse_parts(data: bytes, near: EncodedSpec | None = None) -> EncodedSpec:
    """``encode_parts(parse(data))``, cheaper: a spec parse() made has no field to reset
    and no part to take from an origin, so each part is serialized as it is, noting where
    each element ends, and its bytes are cut up afterwards.

    ``near`` is an EncodedSpec that ``data`` is likely to share parts with (the input a
    byte-level mutation made ``data`` from): see _parse_parts_near."""
    if near is not None:
        return _parse_parts_near(bytes(data), near)
    spec = parse(data)
    m = spec.model
    written = [_written(lambda out, _: serialize_choices(out, spec.choices)),
               _written(lambda out, _: serialize_model_head(out, m)),
               *[_written(lambda out, offsets, sg=sg, k=k:
                          serialize_subgraph(out, sg, subgraph_name(k), offsets))
                 for k, sg in enumerate(m.subgraphs())],
               _written(lambda out, _: serialize_model_tail(out, m)),
               _written(lambda out, offsets: serialize_request(out, spec.request, offsets))]
    parts, elements = zip(*written)
    return EncodedSpec(spec, parts, elements)


# Parsing near a known spec. A byte-level mutation changes an input in one place or a few, and
# the custom mutator is then called on the result: most of its parts are those of the input it
# was made from. Parsing reads the fields of a part one after the other and nothing past them,
# and the bytes of a part of an EncodedSpec parse to that part: so where ``data`` holds, at the
# point a part starts, the bytes of the same part of the known spec, that part is the known
# one, which is taken (spec and bytes) instead of being parsed and serialized again.

def _holds(data: bytes, it: Iterator[int], part: bytes) -> bool:
    """Whether the bytes of ``data`` that ``it`` is at start with ``part``."""
    return data.startswith(part, len(data) - length_hint(it))


def _skip(it: Iterator[int], n: int) -> None:
    deque(islice(it, n), maxlen=0)      # at C speed


def _drops_a_negative_zero(sg: SubgraphSpec) -> bool:
    """Whether an operand of ``sg`` has a scale of -0.0 that its bytes leave out (with
    zeroPoint 0 no quantization is written): they parse to +0.0, so the subgraph equals what
    they parse to but is not quite it (a later zeroPoint change would write the -0.0)."""
    return any(not o.scale and not o.zeroPoint and copysign(1.0, o.scale) < 0
               for o in sg.operands)


def _parse_parts_near(data: bytes, near: EncodedSpec) -> EncodedSpec:
    """parse_parts(data), taking from ``near`` the parts ``data`` holds as they are."""
    it = iter(data)
    known, known_parts, known_elements = near.spec, near.parts, near.elements
    known_model = known.model
    if _holds(data, it, known_parts[0]):
        _skip(it, len(known_parts[0]))
        choices = known.choices
        written = [(known_parts[0], _NO_ELEMENTS)]
    else:
        choices = parse_choices(it)
        written = [_written(lambda out, _: serialize_choices(out, choices))]
    # The model head's bytes are written once the extensions are known (they have a flag).
    head_kept = _holds(data, it, known_parts[1])
    if head_kept:
        _skip(it, len(known_parts[1]))
        relaxed = known_model.relaxComputationFloat32toFloat16
        has_extensions = bool(known_model.extensionNameToPrefix)
        referenced_count = len(known_model.referenced)
        values, pools = known_model.operandValues, known_model.pools
    else:
        flags, referenced_count, values, pools = parse_model_head(it, data)
        relaxed, has_extensions = bool(flags & 1), bool(flags & 2)
    written.append((b"", _NO_ELEMENTS))
    known_subgraphs = known_model.subgraphs()
    subgraphs = []
    for k in range(referenced_count + 1):
        if (k < len(known_subgraphs) and _holds(data, it, known_parts[2 + k])
                and not _drops_a_negative_zero(known_subgraphs[k])):
            _skip(it, len(known_parts[2 + k]))
            sg = known_subgraphs[k]
            written.append((known_parts[2 + k], known_elements[2 + k]))
        else:
            sg = parse_subgraph(it, data)
            written.append(_written(lambda out, offsets, sg=sg, k=k:
                                    serialize_subgraph(out, sg, subgraph_name(k), offsets)))
        subgraphs.append(sg)
    known_extensions = known_model.extensionNameToPrefix
    if not has_extensions:
        extensions: list[ExtensionNameAndPrefix] = []
    elif known_extensions and _holds(data, it, known_parts[-2]):
        _skip(it, len(known_parts[-2]))
        extensions = known_extensions
    else:
        extensions = parse_extensions(it, data)
    model = ModelSpec(subgraphs[0], subgraphs[1:], values, pools, relaxed, extensions)
    written[1] = ((known_parts[1], _NO_ELEMENTS) if head_kept and bool(extensions) == has_extensions
                  else _written(lambda out, _: serialize_model_head(out, model)))
    written.append((known_parts[-2], _NO_ELEMENTS) if extensions is known_extensions
                   else _written(lambda out, _: serialize_model_tail(out, model)))
    if _holds(data, it, known_parts[-1]):
        request = known.request
        written.append((known_parts[-1], known_elements[-1]))
    else:
        request = parse_request(it, data)
        written.append(_written(lambda out, offsets: serialize_request(out, request, offsets)))
    parts, elements = zip(*written)
    return EncodedSpec(CaseSpec(model, request, choices), parts, elements)
