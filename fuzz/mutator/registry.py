"""The mutations and their weights: each module registers its mutations where it defines
them, with ``@mutation(weight=...)``, and a draw picks one by weight."""
from __future__ import annotations

from bisect import bisect
from dataclasses import dataclass
from typing import Callable

from ..codec import CaseSpec
from .blocks import Rng

#: A mutation changes the spec in place (through writable_operand and friends, see the
#: package docstring) and returns whether it applied.
Mutation = Callable[[CaseSpec, Rng], bool]


@dataclass(frozen=True)
class WeightedMutation:
    name: str
    weight: float
    apply: Mutation


#: The mutations in the order they were registered (see the package's imports).
MUTATIONS: list[WeightedMutation] = []
_CUMULATIVE_WEIGHTS: list[float] = []


def mutation(weight: float) -> Callable[[Mutation], Mutation]:
    """Register the decorated function as a mutation drawn with relative ``weight``."""
    def register(apply: Mutation) -> Mutation:
        MUTATIONS.append(WeightedMutation(apply.__name__, weight, apply))
        _CUMULATIVE_WEIGHTS.append(weight + (_CUMULATIVE_WEIGHTS[-1] if _CUMULATIVE_WEIGHTS
                                             else 0))
        return apply
    return register


def pick_mutation(rng: Rng) -> WeightedMutation:
    """A mutation drawn by weight: rng.choices(MUTATIONS, weights) without its overhead (the
    same draw from the same random number)."""
    return MUTATIONS[bisect(_CUMULATIVE_WEIGHTS, rng.random() * _CUMULATIVE_WEIGHTS[-1], 0,
                            len(MUTATIONS) - 1)]
