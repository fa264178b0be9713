"""The custom mutator: structural mutations of a decoded case, for libFuzzer through atheris.

``mutate(data, max_size, seed)`` takes the input as a :class:`fuzz.codec.CaseSpec`, applies
one to three mutations drawn by weight, and serializes the result; some of the time (and
whenever the result would not fit) it leaves the input to libFuzzer's own byte mutation
instead. ``crossover(data1, data2, max_out_size, seed)`` combines two inputs.

Inputs are parsed once: their specs are kept (with the bytes of each part, see
:class:`fuzz.codec.EncodedSpec`), and each call works on a copy that shares the operands,
operations and request arguments with the kept spec, so only what a mutation changes is
copied and serialized again. A mutation therefore never changes one of those in place: it
takes it through ``writable_operand``, ``writable_operation`` or ``writable_argument``.

Most mutations keep a valid case valid, so that the fuzzer spends its time past validation:
changing a loop bound or another constant, resizing one dimension everywhere it occurs,
converting all float32 operands to float16, appending an operation to an output, turning a
constant into a model input and back, changing execution choices. A minority breaks one
thing on purpose (a type, a lifetime, an index, a location, a buffer size), which is what
validation needs to be fuzzed with. Every mutation is a plain function of (spec, rng) that
returns whether it applied, so tests can drive each one; ``@mutation(weight=...)``
registers it where it is defined.

Rarely, a mutation adds a graph at a driver's limits: ranks at and past its rank limit,
values large together under an execution's memory budget; or takes a case to the extremes
(``extremes``): a value of no element fed to an operation, a shape of a hundred thousand
dimensions, one operation made thousands of times heavier under a short deadline.

Modules: ``blocks`` (shared building blocks), ``operations`` (the operations, read from
the driver's signatures), ``registry`` (the mutations and their weights), one module per
subject of mutation (below), and ``engine`` (``mutate``, ``crossover``, the kept specs).
"""
# The subjects, imported in the order their mutations are registered: a draw picks a
# mutation by its position in MUTATIONS, so this order decides which mutation each seed
# applies (reordering changes every mutant, not what is possible). The engine comes after
# them, as it imports some of them itself.
from . import values, shapes, operand_types, graph, control_flow, lifetimes
from . import request, choices, breaking, limits, extremes
from .engine import (MUTANT_SOURCES, PARSED_INPUTS, RECENT_OUTPUTS, SpecCache,
                     builtin_byte_mutate, crossover, mutate, mutate_spec)
from .registry import MUTATIONS, Mutation, WeightedMutation, mutation

__all__ = ["MUTANT_SOURCES", "MUTATIONS", "Mutation", "PARSED_INPUTS", "RECENT_OUTPUTS",
           "SpecCache", "WeightedMutation", "builtin_byte_mutate", "crossover", "mutate",
           "mutate_spec", "mutation",
           "values", "shapes", "operand_types", "graph", "control_flow", "lifetimes", "request",
           "choices", "breaking", "limits", "extremes"]
