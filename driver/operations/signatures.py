"""Operation signatures as data, and the one checker that validates an operation against them.

A :class:`Signature` lists, for one variant of an operation, what each input and output
operand must be (an :class:`Operand`): its types (or the type of an earlier input), the
range of its rank, whether it may be omitted, and for scalars the values allowed when the
operand is a constant. An operation has several signatures where the HAL has variants (one
per type family, an optional trailing input present or absent). Three users read them: the
validation of a model (:class:`SignatureTable`, compiled once per operation), shape
inference (the rank ranges), and generators of well-typed operations and their near misses,
which pick concrete types with :func:`concrete_types`, ranks from ``Operand.rank`` and
scalar values from ``Operand.values``; where those rarely fit together, an operation also
declares a few :class:`Example` instances.
"""
from __future__ import annotations

import itertools
import operator
import sys
from dataclasses import dataclass, replace
from enum import Enum
from typing import Iterator, Optional, Sequence, Union

import numpy as np

from ..errors import fail
from ..hal.enums import OperandLifeTime, OperandType
from ..hal.structs import SymmPerChannelQuantParams

#: The rank of a tensor lies in [low, high]; high None: no upper bound.
RankRange = tuple[int, Optional[int]]


@dataclass(frozen=True)
class Range:
    """Allowed values of a scalar: ``low <= v <= high`` (None: unbounded), or ``low < v``
    when ``low_exclusive``. NaN lies in no range."""
    low: Optional[float] = None
    high: Optional[float] = None
    low_exclusive: bool = False

    def __contains__(self, value) -> bool:
        if self.low is not None and not (value > self.low if self.low_exclusive else value >= self.low):
            return False
        return self.high is None or value <= self.high

    def describe(self) -> str:
        if self.low == 0 and self.high is None:
            return "positive" if self.low_exclusive else "non-negative"
        low = "" if self.low is None else f"{'>' if self.low_exclusive else '>='} {self.low}"
        high = "" if self.high is None else f"<= {self.high}"
        return " and ".join(part for part in (low, high) if part)


Values = Union[frozenset, Range]


@dataclass(frozen=True)
class Operand:
    """One input or output position of a signature.

    ``types``: the allowed OperandTypes (empty when ``same_as`` is set); ``same_as``: the
    index of an earlier input whose type this operand has; ``rank``: the allowed range of a
    known rank (None: any; a declared rank of 0 dimensions means unknown and always
    passes); ``values``: for a scalar, the values a constant may take (a frozenset, whose
    IntEnum members name themselves, or a Range; None: any); ``optional``: the input may
    have no value (NO_VALUE, or omitted by the request); ``repeated``: None for exactly one
    operand, else this operand repeats at least that many times (the variadic inputs of
    CONCATENATION, the outputs of SPLIT); ``name``: what the operand is, for messages;
    ``quantization``: for an output, the (type, scale, zero point) its quantization must
    be when it has that type (LOGISTIC's 1/256 and 0 for TENSOR_QUANT8_ASYMM).
    """
    types: tuple[OperandType, ...] = ()
    same_as: Optional[int] = None
    rank: Optional[RankRange] = None
    values: Optional[Values] = None
    optional: bool = False
    repeated: Optional[int] = None
    name: str = ""
    quantization: tuple[tuple[OperandType, float, int], ...] = ()

    def fixed_quantization(self, operand_type: int) -> Optional[tuple[float, int]]:
        """The (scale, zero point) ``quantization`` requires of this type, else None."""
        return next(((scale, zero_point) for t, scale, zero_point in self.quantization
                     if t == operand_type), None)

    def check_quantization(self, ctx, k: int) -> None:
        """Output ``k`` against ``quantization``."""
        out = ctx.outputs[k]
        fixed = self.fixed_quantization(out.type)
        if fixed is not None and not (np.float32(out.scale) == np.float32(fixed[0])
                                      and out.zeroPoint == fixed[1]):
            fail(f"{ctx.name}: output {k} (operand {out.index}) must have scale {fixed[0]} and "
                 f"zero point {fixed[1]}, has {out.scale} and {out.zeroPoint}")

    def check_value(self, ctx, i: int, value) -> None:
        """The value of input ``i`` against ``values``: one rule for a constant, at
        validation, and for a value a kernel reads at run time."""
        if value not in self.values:
            fail(f"{ctx.name}: input {i} (operand {ctx.inputs[i].index}): "
                 f"{self.name or 'value'} {value} {_not_allowed(self.values)}")


def tensor(types: Sequence[OperandType], rank: Optional[RankRange] = None, name: str = "",
           optional: bool = False) -> Operand:
    return Operand(types=tuple(types), rank=rank, name=name, optional=optional)


def scalar(operand_type: OperandType, values: Optional[Values] = None, name: str = "") -> Operand:
    return Operand(types=(operand_type,), values=values, name=name)


def same_as(i: int, rank: Optional[RankRange] = None, name: str = "",
            quantization: Optional[dict] = None) -> Operand:
    """The type of input ``i``, which comes earlier; ``quantization``: {type: (scale, zero
    point)} an output of that type must have."""
    return Operand(same_as=i, rank=rank, name=name, quantization=tuple(
        (t, scale, zero_point) for t, (scale, zero_point) in (quantization or {}).items()))


def repeated(operand: Operand, at_least: int) -> Operand:
    return replace(operand, repeated=at_least)


@dataclass(frozen=True)
class Signature:
    inputs: tuple[Operand, ...]
    outputs: tuple[Operand, ...]
    #: The output's type selects the variant (FILL's value has the output's element type):
    #: types are matched outputs first, so a mismatch is reported at the input.
    selected_by_output: bool = False

    def counts(self) -> tuple[tuple[int, bool], tuple[int, bool]]:
        """(fewest inputs, more allowed), (fewest outputs, more allowed)."""
        return _count(self.inputs), _count(self.outputs)

    def operands_for(self, input_count: int, output_count: int
                     ) -> Optional[tuple[tuple[Operand, ...], tuple[Operand, ...]]]:
        """The operand of each position for these counts (repeats expanded), or None."""
        inputs, outputs = _expand(self.inputs, input_count), _expand(self.outputs, output_count)
        return None if inputs is None or outputs is None else (inputs, outputs)


@dataclass(frozen=True)
class ExampleOperand:
    """One input of an :class:`Example`: fed by the request (``value``: its literal values;
    None: values a generator makes), a constant (``constant``: its values) or omitted."""
    type: OperandType
    dims: Sequence[int] = ()
    constant: object = None
    value: object = None
    scale: float = 0.0
    zero_point: int = 0
    channel_quant: Optional[SymmPerChannelQuantParams] = None
    omitted: bool = False


@dataclass(frozen=True)
class Example:
    """A small valid instance of an operation, declared beside its signatures for the
    generators of seed models where the signatures alone rarely give one (a filter whose
    shape must fit its input's): its inputs, and each output's (type, scale, zero point).
    Output shapes are inferred."""
    inputs: tuple[ExampleOperand, ...]
    outputs: tuple[tuple[OperandType, float, int], ...]


def concrete_types(signature: Signature, input_count: Optional[int] = None,
                   output_count: Optional[int] = None
                   ) -> Iterator[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Every assignment of types the signature accepts, as (input types, output types);
    repeated operands appear their fewest times unless the counts say otherwise."""
    (min_in, _), (min_out, _) = signature.counts()
    expanded = signature.operands_for(min_in if input_count is None else input_count,
                                      min_out if output_count is None else output_count)
    if expanded is None:
        return
    inputs, outputs = expanded
    positions = inputs + outputs
    free = [i for i, operand in enumerate(positions) if operand.same_as is None]
    for chosen in itertools.product(*(positions[i].types for i in free)):
        types: list[int] = [0] * len(positions)
        for i, t in zip(free, chosen):
            types[i] = t
        for i, operand in enumerate(positions):
            if operand.same_as is not None:
                types[i] = types[operand.same_as]
        yield tuple(types[:len(inputs)]), tuple(types[len(inputs):])


def _count(operands: Sequence[Operand]) -> tuple[int, bool]:
    fewest = sum(1 if o.repeated is None else o.repeated for o in operands)
    return fewest, any(o.repeated is not None for o in operands)


def _expand(operands: tuple[Operand, ...], count: int) -> Optional[tuple[Operand, ...]]:
    fewest, more = _count(operands)
    if count < fewest or (count > fewest and not more):
        return None
    expanded: list[Operand] = []
    for operand in operands:
        if operand.repeated is None:
            expanded.append(operand)
        else:
            expanded.extend([replace(operand, repeated=None)] * (operand.repeated + count - fewest))
    return tuple(expanded)


def _not_allowed(values: Values) -> str:
    if isinstance(values, Range):
        return f"must be {values.describe()}"
    names = [v.name if isinstance(v, Enum) else str(v) for v in sorted(values)]
    return f"is not {names[0]}" if len(names) == 1 else f"is not one of {', '.join(names)}"


def _type_name(operand_type: int) -> str:
    try:
        return OperandType(operand_type).name
    except ValueError:
        return str(operand_type)


# --- the checker ------------------------------------------------------------------------------

#: (input position, lowest rank, highest rank, operand name)
_RankCheck = tuple[int, int, int, str]


@dataclass(frozen=True)
class _Leaf:
    """What remains to check once the free operand types matched a variant."""
    same: tuple[tuple[int, int], ...]       # (position, input whose type it has)
    required: tuple[int, ...]               # inputs that must have a value
    ranks: tuple[_RankCheck, ...]           # declared ranks (a rank of 0 means unknown)
    values: tuple[tuple[int, Operand], ...]  # scalars whose constant value is checked
    quantized: tuple[tuple[int, Operand], ...]  # outputs of a fixed quantization


@dataclass(frozen=True)
class _Compiled:
    """The signatures of one input and output count. Positions count the inputs, then the
    outputs. A trie of the types at the ``walk`` positions (those some variant does not
    tie to an earlier input's type) leads to a leaf holding the checks left; the other
    positions are compared with the input they follow there, so a variadic operation's
    trie does not grow with its operand count."""
    walk: tuple[int, ...]
    trie: dict
    shape_ranks: tuple[_RankCheck, ...]
    names: tuple[str, ...]


_NO_VALUE = OperandLifeTime.NO_VALUE
_LIFETIME = operator.attrgetter("lifetime")
_UNBOUNDED = sys.maxsize                # the highest rank of an unbounded range
#: Input/output counts remembered per variadic operation (a fuzzer makes many).
_MAX_VARIADIC_COUNTS = 64


class SignatureTable:
    """The signatures of one operation, compiled once. ``check(ctx)`` validates the operand
    counts and types, omitted inputs, declared ranks and constant scalars of an operation;
    ``check_shape_ranks(ctx, shapes)`` the ranks of the shapes given to shape inference."""

    def __init__(self, signatures: Sequence[Signature]) -> None:
        self.signatures = tuple(signatures)
        self.optional_inputs = frozenset(
            i for s in self.signatures for i, o in enumerate(s.inputs) if o.optional)
        #: Whether any input has a rank range for shape inference to check.
        self.ranked = any(o.rank is not None and (o.rank[0] > 0 or o.rank[1] is not None)
                          for s in self.signatures for o in s.inputs)
        self._outputs_first = any(s.selected_by_output for s in self.signatures)
        self._variadic = any(o.repeated is not None for s in self.signatures
                             for o in s.inputs + s.outputs)
        self._by_count: dict[tuple[int, int], Optional[_Compiled]] = {}
        for s in self.signatures:
            (inputs, _), (outputs, _) = s.counts()
            self._compile(inputs, outputs)

    def check(self, ctx) -> None:
        inputs = ctx.inputs
        compiled = self._by_count.get((len(inputs), len(ctx.outputs))) or self._compile(
            len(inputs), len(ctx.outputs))
        if compiled is None:
            self._fail_counts(ctx)
        operands = (*inputs, *ctx.outputs)
        node = compiled.trie
        for position in compiled.walk:
            node = node.get(operands[position].type)
            if node is None:
                self._fail_type(ctx, compiled)
        for position, i in node.same:
            if operands[position].type != operands[i].type:
                _fail_type_at(ctx, compiled, position, (operands[i].type,))
        if _NO_VALUE in map(_LIFETIME, inputs):     # rare: looked at closely only then
            for i in node.required:
                if inputs[i].lifetime == _NO_VALUE:
                    fail(f"{ctx.name}: input {i} (operand {inputs[i].index}) has no value")
        for i, low, high, name in node.ranks:
            operand = inputs[i]
            rank = len(operand.dimensions)
            if not low <= rank <= high and rank and operand.lifetime != _NO_VALUE:
                fail(f"{ctx.name}: input {i} ({_named(name)}operand {operand.index}) "
                     f"{_rank_text(rank, low, high)}")
        for i, spec in node.values:
            value = ctx.scalar(i)
            if value is not None:
                spec.check_value(ctx, i, value)
        for k, spec in node.quantized:
            spec.check_quantization(ctx, k)

    def check_shape_ranks(self, ctx, shapes) -> None:
        """The known ranks of the shapes given to shape inference, at prepare or run time."""
        compiled = self._by_count.get((len(ctx.inputs), len(ctx.outputs))) or self._compile(
            len(ctx.inputs), len(ctx.outputs))
        for i, low, high, name in compiled.shape_ranks:
            shape = shapes[i]
            if shape is not None and not low <= len(shape) <= high:
                fail(f"{ctx.name}: input {i}{f' ({name})' if name else ''} "
                     f"{_rank_text(len(shape), low, high)}")

    def _compile(self, input_count: int, output_count: int) -> Optional[_Compiled]:
        """The trie for these counts, made once (for a variadic operation, remembered for a
        bounded number of counts); None when no signature has these counts."""
        key = (input_count, output_count)
        if key in self._by_count:
            return self._by_count[key]
        variants = []
        for signature in self.signatures:
            expanded = signature.operands_for(input_count, output_count)
            if expanded is not None:
                variants.append((signature, *expanded))
        if not variants:
            return self._remember(key, None)
        positions = range(input_count + output_count)
        if self._outputs_first:
            positions = [*positions[input_count:], *positions[:input_count]]
        walked = {p for _, inputs, outputs in variants
                  for p, operand in enumerate(inputs + outputs) if operand.same_as is None}
        walk = tuple(p for p in positions if p in walked)
        trie: dict = {}
        shape_ranks = None
        for signature, inputs, outputs in variants:
            ranked = [(i, o.rank[0], _UNBOUNDED if o.rank[1] is None else o.rank[1], o.name)
                      for i, o in enumerate(inputs) if o.rank is not None]
            leaf = _Leaf(same=tuple((p, o.same_as) for p, o in enumerate(inputs + outputs)
                                    if p not in walked),
                         required=tuple(i for i, o in enumerate(inputs) if not o.optional),
                         # A declared rank is never 0 (that means unknown): low 1 is no check.
                         ranks=tuple(r for r in ranked if r[1] > 1 or r[2] != _UNBOUNDED),
                         values=tuple((i, o) for i, o in enumerate(inputs) if o.values is not None),
                         quantized=tuple((k, o) for k, o in enumerate(outputs) if o.quantization))
            ranks = tuple(r for r in ranked if r[1] > 0 or r[2] != _UNBOUNDED)
            if shape_ranks is not None and ranks != shape_ranks:
                raise ValueError(f"signatures of {input_count} inputs differ in their ranks")
            shape_ranks = ranks
            for in_types, out_types in concrete_types(signature, input_count, output_count):
                types = in_types + out_types
                *path, last = (types[p] for p in walk)
                node = trie
                for t in path:
                    node = node.setdefault(t, {})
                if last in node:
                    raise ValueError(f"two signatures accept {in_types} -> {out_types}")
                node[last] = leaf
        names = tuple(o.name for o in variants[0][1] + variants[0][2])
        return self._remember(key, _Compiled(walk, trie, shape_ranks, names))

    def _remember(self, key: tuple[int, int], compiled: Optional[_Compiled]) -> Optional[_Compiled]:
        if self._variadic and len(self._by_count) >= _MAX_VARIADIC_COUNTS:
            self._by_count.clear()
        self._by_count[key] = compiled
        return compiled

    @staticmethod
    def _fail_type(ctx, compiled: _Compiled) -> None:
        """Walk the types again to name the position at fault."""
        operands = (*ctx.inputs, *ctx.outputs)
        node = compiled.trie
        for position in compiled.walk:
            if operands[position].type not in node:
                _fail_type_at(ctx, compiled, position, node)
            node = node[operands[position].type]

    def _fail_counts(self, ctx) -> None:
        got_in, got_out = len(ctx.inputs), len(ctx.outputs)
        accepting = [s for s in self.signatures if _fits(s.counts()[0], got_in)]
        if not accepting:
            fail(f"{ctx.name}: expected {_counts_text(s.counts()[0] for s in self.signatures)} "
                 f"inputs, got {got_in}")
        fail(f"{ctx.name}: expected {_counts_text(s.counts()[1] for s in accepting)} outputs, "
             f"got {got_out}")


# --- messages (built only on failure) ---------------------------------------------------------

def _fail_type_at(ctx, compiled: _Compiled, position: int, expected) -> None:
    inputs = len(ctx.inputs)
    operand = (*ctx.inputs, *ctx.outputs)[position]
    what = f"input {position}" if position < inputs else f"output {position - inputs}"
    fail(f"{ctx.name}: {what} ({_named(compiled.names[position])}operand {operand.index}) has "
         f"type {_type_name(operand.type)}, expected {' or '.join(_type_name(t) for t in expected)}")


def _fits(count: tuple[int, bool], got: int) -> bool:
    fewest, more = count
    return got == fewest or (more and got > fewest)


def _counts_text(counts) -> str:
    return " or ".join(dict.fromkeys(f"at least {fewest}" if more else str(fewest)
                                     for fewest, more in sorted(set(counts))))


def _named(name: str) -> str:
    return f"{name}, " if name else ""


def _rank_text(rank: int, low: int, high: int) -> str:
    return f"has rank {rank} < {low}" if rank < low else f"has rank {rank} > {high}"
