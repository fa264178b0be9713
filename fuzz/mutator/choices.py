"""Execution choices: the path, timing, preference, priority, deadline, loop timeout,
fences, the request's change after launch and the metamorphic relation or route of a
case; costly waits redrawn so that slow inputs do not breed slow children."""
from __future__ import annotations

from driver.hal import ExecutionPreference, MeasureTiming, Priority
from hal_client.paths import DeadlineEdge

from ..case import PLACED_RELATIONS, ExecutionChoices, ExecutionPath, Relation, RequestChange
from ..codec import CaseSpec, read_choices, with_choices
from ..relations import RULES
from ..routes import ROUTES
from .blocks import Rng
from .registry import mutation

_PATH_CHOICES = tuple(ExecutionPath)
_PREFERENCE_CHOICES = tuple(ExecutionPreference)
_PRIORITY_CHOICES = tuple(Priority)
_REQUEST_CHANGES = tuple(RequestChange)
_ROUTES, _REWRITES = tuple(ROUTES), tuple(RULES)
#: The share of relations that are routes (memory domains, caching): a quarter of new
#: choices, and half of what ``relate`` draws.
ROUTE_SHARE = 0.5


def loop_timeout_ns(rng: Rng) -> int | None:
    """Mostly under a millisecond (65 %), else 1-2 ms (30 %), rarely 3-20 ms (4.5 %) or
    omitted (0.5 %: the 2 s default). An endless loop costs its whole timeout, twice per
    input (both executions), so short timeouts keep the fuzzer fast while still exercising
    the timeout path."""
    r = rng.random()
    if r < 0.005:
        return None
    if r < 0.655:
        return rng.randrange(0, 1000) * 1000
    if r < 0.955:
        return rng.randrange(1000, 2001) * 1000
    return rng.randint(3, 20) * 1_000_000


def fence_delay_ns(rng: Rng) -> int:
    """How long after executeFenced its wait fences signal: mostly within 0.2 ms, sometimes
    up to 1 ms, rarely up to 5 ms (the harness waits that long, so it is time spent idle)."""
    r = rng.random()
    if r < 0.7:
        return rng.randrange(0, 201) * 1000
    if r < 0.95:
        return rng.randrange(200, 1001) * 1000
    return rng.randrange(1000, 5001) * 1000


#: Above these, a choice makes an input slow: an endless loop costs its whole timeout twice
#: per input, a fence delay is waited out. Every mutation redraws such a choice with
#: COSTLY_CHOICE_REDRAW probability, so that a slow input kept in the corpus (coverage
#: guidance favours loops that run longer) does not breed a line of slow children.
COSTLY_LOOP_TIMEOUT_NS = 2_000_000
COSTLY_FENCE_DELAY_NS = 1_000_000
COSTLY_CHOICE_REDRAW = 0.9


def shorten_costly_waits(choices: ExecutionChoices, rng: Rng) -> None:
    loop = choices.loopTimeoutDuration_ns
    if (loop is None or loop > COSTLY_LOOP_TIMEOUT_NS) and rng.random() < COSTLY_CHOICE_REDRAW:
        choices.loopTimeoutDuration_ns = loop_timeout_ns(rng)
    if choices.wait_fence_delay_ns > COSTLY_FENCE_DELAY_NS and rng.random() < COSTLY_CHOICE_REDRAW:
        choices.wait_fence_delay_ns = fence_delay_ns(rng)


def with_short_waits(data: bytes, max_size: int, rng: Rng) -> bytes:
    """``data`` (a byte-level mutant) with its costly waits mostly redrawn, as a structural
    mutation would: flipping the loop timeout's byte to 0 omits it (the 2 s default)."""
    choices, _ = read_choices(data)
    before = (choices.loopTimeoutDuration_ns, choices.wait_fence_delay_ns)
    shorten_costly_waits(choices, rng)
    if (choices.loopTimeoutDuration_ns, choices.wait_fence_delay_ns) == before:
        return data
    shortened = with_choices(data, choices)
    return shortened if len(shortened) <= max_size else data


def deadline_ns(rng: Rng) -> int | None:
    """Mostly none; sometimes generous; rarely so short it must be missed."""
    r = rng.random()
    if r < 0.9:
        return None
    if r < 0.97:
        return 1_000_000_000
    return rng.randrange(0, 2000) * 1000


def random_choices(rng: Rng) -> ExecutionChoices:
    wait = rng.choice([0, 0, 0, 1, 2, 3])
    return ExecutionChoices(
        path=rng.choice(_PATH_CHOICES), second_path=rng.choice(_PATH_CHOICES),
        measureTiming=MeasureTiming.YES if rng.random() < 0.3 else MeasureTiming.NO,
        preference=rng.choice(_PREFERENCE_CHOICES), priority=rng.choice(_PRIORITY_CHOICES),
        deadline_ns=deadline_ns(rng), loopTimeoutDuration_ns=loop_timeout_ns(rng),
        wait_fences=wait, wait_fence_delay_ns=fence_delay_ns(rng) if wait else 0,
        fenced_duration_ns=None if rng.random() < 0.85 else rng.choice(
            [1_000_000_000, rng.randrange(0, 2000) * 1000]),
        request_change=rng.choice(_REQUEST_CHANGES), relation=relation(rng),
        corruption=rng.randrange(1 << 16))


def relation(rng: Rng) -> Relation:
    """None half of the time: a relation costs a second preparation and execution."""
    return some_relation(rng) if rng.random() < 0.5 else Relation.NONE


def some_relation(rng: Rng) -> Relation:
    return rng.choice(_ROUTES if rng.random() < ROUTE_SHARE else _REWRITES)


@mutation(weight=8)
def change_choice(spec: CaseSpec, rng: Rng) -> bool:
    """Redraw one execution choice."""
    fresh = random_choices(rng)
    name = rng.choice(["path", "path", "second_path", "measureTiming", "preference", "priority",
                       "deadline_ns", "loopTimeoutDuration_ns", "loopTimeoutDuration_ns",
                       "wait_fences", "fenced_duration_ns", "request_change", "relation",
                       "corruption"])
    choices = spec.choices
    setattr(choices, name, getattr(fresh, name))
    if name == "deadline_ns":
        choices.deadline_edge = DeadlineEdge.NONE
    if name == "wait_fences":
        choices.wait_fence_delay_ns = fresh.wait_fence_delay_ns
    if choices.wait_fences == 0:
        choices.wait_fence_delay_ns = 0
    _drop_unused_corruption(choices)
    return True


def set_deadline(choices: ExecutionChoices, deadline_ns: int | None) -> None:
    """A deadline relative to the call (None: none), in place of an edge of the clock."""
    choices.deadline_ns = deadline_ns
    choices.deadline_edge = DeadlineEdge.NONE


@mutation(weight=6)
def relate(spec: CaseSpec, rng: Rng) -> bool:
    """Check the case by a metamorphic relation or a route too (fuzz/relations.py,
    fuzz/routes.py), another one."""
    relation = some_relation(rng)
    if relation == spec.choices.relation:
        return False
    spec.choices.relation = relation
    _drop_unused_corruption(spec.choices)
    return True


def _drop_unused_corruption(choices: ExecutionChoices) -> None:
    """Only a placed relation has a corruption on the wire: a spec keeps none otherwise,
    so that a kept spec equals the parse of its bytes (and a later mutation to a placed
    relation starts from the same corruption either way)."""
    if choices.relation not in PLACED_RELATIONS:
        choices.corruption = 0
