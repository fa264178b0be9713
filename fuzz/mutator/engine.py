"""The libFuzzer entry points: ``mutate`` applies mutations drawn from the registry (or
leaves the input to byte-level mutation), ``crossover`` combines two inputs; both work on
specs parsed once and kept by input bytes."""
from __future__ import annotations

import random
import sys
from typing import Callable

from ..codec import (MAX_REFERENCED, CaseSpec, CodecLimitError, EncodedSpec, Origins,
                     RequestSpec, encode_parts, parse_parts, writable_operand)
from .blocks import SUBGRAPH_LIFETIME, Rng
from .breaking import BREAKERS
from .choices import shorten_costly_waits, with_short_waits
from .control_flow import retarget_subgraph
from .registry import pick_mutation
from .request import default_request, tidy_pools

#: Share of calls left to libFuzzer's byte-level mutation (which also breaks the encoding's
#: structure in ways no structural mutation would).
BYTE_MUTATION_SHARE = 0.15


# --- structural mutation ----------------------------------------------------------------------

def mutate_spec(spec: CaseSpec, rng: Rng, count: int | None = None) -> list[str]:
    """Apply ``count`` (default: 1-3) mutations in place; the names of those that applied."""
    if count is None:
        count = rng.choice((1, 1, 1, 2, 2, 3))
    applied = []
    for _ in range(count * 4):          # some mutations do not apply to every case
        mutation = pick_mutation(rng)
        if mutation.apply(spec, rng):
            applied.append(mutation.name)
            if len(applied) == count:
                break
    if BREAKERS.isdisjoint(applied):
        tidy_pools(spec)
    shorten_costly_waits(spec.choices, rng)
    return applied


# --- byte mutation ----------------------------------------------------------------------------

def builtin_byte_mutate(data: bytes, max_size: int, rng: Rng) -> bytes:
    """A small stand-in for libFuzzer's mutation outside a fuzzing run (tests, tools):
    flip, set, insert or erase a few bytes."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        action = rng.randrange(4)
        if action == 0 and out:
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
        elif action == 1 and out:
            out[rng.randrange(len(out))] = rng.choice([0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)])
        elif action == 2:
            out.insert(rng.randrange(len(out) + 1), rng.randrange(256))
        elif out:
            del out[rng.randrange(len(out))]
    return bytes(out[:max_size])


def libfuzzer_byte_mutate(data: bytes, max_size: int, rng: Rng) -> bytes:
    import atheris
    return atheris.Mutate(data, max_size)


def _under_libfuzzer() -> bool:
    """atheris.Mutate only works inside atheris.Fuzz() (it ends the process otherwise);
    the fuzz entry point is the script that runs it."""
    main = sys.modules.get("__main__")
    return "atheris" in sys.modules and getattr(main, "__file__", "").endswith("driver_fuzz.py")


#: The byte-level mutation used; None: libFuzzer's inside a fuzzing run, else builtin.
BYTE_MUTATE: Callable[[bytes, int, Rng], bytes] | None = None


def byte_mutate(data: bytes, max_size: int, rng: Rng) -> bytes:
    global BYTE_MUTATE
    if BYTE_MUTATE is None:
        BYTE_MUTATE = libfuzzer_byte_mutate if _under_libfuzzer() else builtin_byte_mutate
    return BYTE_MUTATE(data, max_size, rng)


# --- inputs already parsed --------------------------------------------------------------------
# libFuzzer mutates the same inputs over and over: each corpus input many times, and within an
# iteration the output of the previous mutation (up to -mutate_depth times in a row). Their
# specs are kept, with the bytes of each part (EncodedSpec), so that an input is parsed once,
# and encode_parts serializes only what a mutation changed.

class SpecCache:
    """Encoded specs by the input bytes they came from, the least recently used dropped
    first. The specs are never changed: mutations work on copies."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._entries: dict[bytes, EncodedSpec] = {}

    def get(self, data: bytes) -> EncodedSpec | None:
        entry = self._entries.pop(data, None)
        if entry is not None:
            self._entries[data] = entry         # now the most recently used
        return entry

    def peek(self, data: bytes) -> EncodedSpec | None:
        """get() without making the entry the most recently used."""
        return self._entries.get(data)

    def put(self, data: bytes, entry: EncodedSpec) -> None:
        self._entries[data] = entry
        if len(self._entries) > self.capacity:
            del self._entries[next(iter(self._entries))]

    def clear(self) -> None:
        self._entries.clear()


#: Inputs given to mutate and crossover (some 15 KiB each for corpus inputs: 30 MiB full).
PARSED_INPUTS = SpecCache(2048)
#: The latest outputs, which libFuzzer mostly mutates next.
RECENT_OUTPUTS = SpecCache(8)
#: The latest byte-level mutants, by the parsed input each was made from: libFuzzer mostly
#: mutates one next, and parsing it takes the parts it shares with that input from there.
MUTANT_SOURCES = SpecCache(8)


def encoded_input(data: bytes) -> EncodedSpec:
    """The input's spec and part bytes, parsed once; raises CodecLimitError where the
    input's spec cannot be serialized."""
    data = bytes(data)
    entry = RECENT_OUTPUTS.get(data) or PARSED_INPUTS.get(data)
    if entry is None:
        entry = parse_parts(data, MUTANT_SOURCES.peek(data))
        PARSED_INPUTS.put(data, entry)
    return entry


def _byte_mutant(source: bytes, mutant: bytes) -> bytes:
    """``mutant``, a byte-level mutant of ``source``, noted with the parsed ``source`` (when
    it was parsed)."""
    entry = RECENT_OUTPUTS.peek(source) or PARSED_INPUTS.peek(source)
    if entry is not None:
        MUTANT_SOURCES.put(mutant, entry)
    return mutant


def _output(result: EncodedSpec) -> bytes:
    out = result.data
    RECENT_OUTPUTS.put(out, result)
    return out


# --- the libFuzzer entry points ---------------------------------------------------------------

#: The random numbers of a call, seeded by it: one generator reseeded rather than a new one
#: per call (the draws are the same; its 2.5 KiB of state need not be allocated each time).
_RNG = random.Random()


def _seeded(seed: int) -> Rng:
    _RNG.seed(seed)
    return _RNG


def mutate(data: bytes, max_size: int, seed: int) -> bytes:
    """libFuzzer's custom mutator (atheris ``custom_mutator``)."""
    rng = _seeded(seed)
    if rng.random() < BYTE_MUTATION_SHARE:
        return _byte_mutant(data, with_short_waits(byte_mutate(data, max_size, rng), max_size,
                                                   rng))
    try:
        source = encoded_input(data)
        origins: Origins = {}
        spec = source.copy(origins)
        mutate_spec(spec, rng)
        result = encode_parts(spec, origins, max_size)
    except CodecLimitError:         # (a result longer than max_size too)
        return _byte_mutant(data, byte_mutate(data, max_size, rng))
    return _output(result)



def crossover(data1: bytes, data2: bytes, max_out_size: int, seed: int) -> bytes:
    """libFuzzer's custom crossover: the first case with the second's referenced subgraphs
    grafted in (and an IF/WHILE operand pointed at one of a matching signature), or with
    the second's execution choices, or the second's model with a request rebuilt for it."""
    rng = _seeded(seed)
    try:
        source, other = encoded_input(data1), encoded_input(data2)
    except CodecLimitError:
        return data1[:max_out_size]
    origins: Origins = {}
    r = rng.random()
    referenced = len(other.spec.model.referenced)
    try:
        if r < 0.5 and referenced:
            first = source.copy(origins)
            base = len(first.model.referenced)
            room = max(0, MAX_REFERENCED - base)
            for k in range(min(room, referenced)):
                sg = other.copy_subgraph(k + 1, origins)
                for i, o in enumerate(sg.operands):
                    if o.lifetime == SUBGRAPH_LIFETIME and o.location is None:
                        writable_operand(sg, i).target += base
                first.model.referenced.append(sg)
            retarget_subgraph(first, rng)
            result = encode_parts(first, origins, max_out_size)
        elif r < 0.75:
            # The first input's model and request as they are (not copied: nothing changes
            # them, and their bytes are the first's), with the second's choices.
            choices = other.copy_choices(origins)
            shorten_costly_waits(choices, rng)
            result = source.with_choices(choices, origins)
        else:
            # The second input's model as it is, with a new request and the first's choices.
            first = CaseSpec(other.spec.model, RequestSpec(), source.spec.choices)
            default_request(first, rng)
            result = other.with_request(first.request, source)
    except CodecLimitError:
        return data1[:max_out_size]
    if sum(map(len, result.parts)) > max_out_size:
        return data1[:max_out_size]
    return _output(result)
