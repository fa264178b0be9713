"""The request and its pools: output buffers resized, arguments omitted, arguments moved
to other pools; pools left empty dropped; a request built for a model."""
from __future__ import annotations

from typing import Callable, Sequence

from driver.hal import DataLocation, OperandLifeTime as L

from ..codec import (MAX_POOLS, ArgumentSpec, BlobSpec, CaseSpec, OperandSpec, RequestPoolSpec,
                     RequestSpec, writable_argument, writable_operand)
from .blocks import Rng, argument_slots, output_argument, random_seed, subgraphs
from .registry import mutation

_REFERENCE_LIFETIME = L.CONSTANT_REFERENCE


@mutation(weight=2)
def output_buffer_size(spec: CaseSpec, rng: Rng) -> bool:
    """Make an output buffer too small (OUTPUT_INSUFFICIENT_SIZE) or larger than needed."""
    outputs = [i for i, a in enumerate(spec.request.outputs)
               if a.location is None and not a.hasNoValue]
    if not outputs:
        return False
    arg = writable_argument(spec.request.outputs, rng.choice(outputs))
    arg.size_delta += rng.choice([-1, -1, -4, 1, 4, 64])
    return True


@mutation(weight=1)
def toggle_no_value(spec: CaseSpec, rng: Rng) -> bool:
    args = argument_slots(spec)
    if not args:
        return False
    arg = writable_argument(*rng.choice(args))
    arg.hasNoValue = not arg.hasNoValue
    if not arg.hasNoValue and arg.location is None:
        arg.value = random_seed(rng)
    return True


@mutation(weight=1)
def split_pools(spec: CaseSpec, rng: Rng) -> bool:
    """Move a request argument to another (possibly new) pool."""
    args = [(arguments, i) for arguments, i in argument_slots(spec)
            if arguments[i].location is None]
    if not args:
        return False
    arg = writable_argument(*rng.choice(args))
    pools = spec.request.pools
    others = [j for j in range(len(pools)) if j != arg.target]
    if len(pools) < MAX_POOLS and (not others or rng.random() < 0.5):
        pools.append(RequestPoolSpec(blob=BlobSpec(rng.choice(["ashmem", "mmap_fd"]))))
        arg.target = len(pools) - 1
    elif others:
        arg.target = rng.choice(others)
    else:
        return False
    return True


# --- after the mutations ----------------------------------------------------------------------

def _unused_pools(count: int, placed: Sequence[int], explicit: Sequence[int],
                  empty: Callable[[int], bool]) -> list[int]:
    used = set(placed) | set(explicit)
    return [j for j in range(count) if j not in used and empty(j)]


def _renumbered(index: int, removed: Sequence[int]) -> int:
    return index - sum(1 for j in removed if j < index)


def _renumber_pool(item: ArgumentSpec | OperandSpec, removed: Sequence[int]) -> None:
    """A writable argument's or operand's pool renumbered past the ``removed`` pools."""
    location = item.location
    if location is None:
        item.target = _renumbered(item.target, removed)
    else:       # a new DataLocation, not a change to the old one: specs share those
        item.location = DataLocation(_renumbered(location.poolIndex, removed), location.offset,
                                     location.length)


def tidy_pools(spec: CaseSpec) -> None:
    """Drop pools that a mutation left empty (nothing placed there, no explicit segment or
    location): a zero-sized pool is invalid, and that is not what the mutation was about."""
    request = spec.request
    args = request.inputs + request.outputs
    # At least one pool stays, and a model needs none: most specs have nothing to check.
    removed = [] if len(request.pools) < 2 else _unused_pools(
        len(request.pools),
        [a.target for a in args if a.location is None and not a.hasNoValue],
        [a.location.poolIndex for a in args if a.location is not None],
        lambda j: request.pools[j].token is None and not request.pools[j].blob.segments)
    if removed and len(removed) < len(request.pools):
        request.pools = [p for j, p in enumerate(request.pools) if j not in removed]
        for arguments, i in argument_slots(spec):
            _renumber_pool(writable_argument(arguments, i), removed)
    model = spec.model
    if not model.pools:
        return
    references = [(sg, i) for sg in subgraphs(spec) for i, o in enumerate(sg.operands)
                  if o.lifetime == _REFERENCE_LIFETIME]
    located = [sg.operands[i].location for sg, i in references]
    removed = _unused_pools(
        len(model.pools),
        [sg.operands[i].target for (sg, i), loc in zip(references, located) if loc is None],
        [loc.poolIndex for loc in located if loc is not None],
        lambda j: not model.pools[j].segments)
    if removed:
        model.pools = [p for j, p in enumerate(model.pools) if j not in removed]
        for sg, i in references:
            _renumber_pool(writable_operand(sg, i), removed)


# --- for crossover ----------------------------------------------------------------------------

def default_request(spec: CaseSpec, rng: Rng) -> None:
    """A request matching main's inputs and outputs: generated inputs, outputs sized by
    their operands, all in one pool."""
    main = spec.model.main
    spec.request = RequestSpec(pools=[RequestPoolSpec()])
    for index in main.inputIndexes:
        operand = main.operands[index] if index < len(main.operands) else None
        unknown = operand is not None and 0 in operand.dimensions
        dims = [d if d else rng.randint(1, 3) for d in operand.dimensions] if unknown else []
        spec.request.inputs.append(ArgumentSpec(dimensions=dims, value=random_seed(rng)))
    for index in main.outputIndexes:
        operand = main.operands[index] if index < len(main.operands) else None
        spec.request.outputs.append(ArgumentSpec() if operand is None
                                    else output_argument(spec, operand))
