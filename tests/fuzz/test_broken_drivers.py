"""The reproducers the fuzzer found for the planted bugs of broken_drivers.py (minimised by
scripts/triage.py into tests/fuzz/data/): each must still fail against its broken driver
with the oracle violation meant to catch it, and pass against the bundled driver. The bugs
of the driver's limits, its memory budget and its copy of a launched request are found by
a short fuzz run from the corpus here, minimised and replayed."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from driver import SampleDriver
from fuzz import harness, reduce
from fuzz.codec import decode, encode
from fuzz.drivers import make_device
from fuzz.mutator import mutate
from hal_client.contract import OracleViolation
from tests.fuzz import broken_drivers

DATA = Path(__file__).resolve().parent / "data"
MODULE = broken_drivers.__name__


def driver_name(info: dict) -> str:
    module, _, name = info["driver"].partition(":")
    assert module == MODULE, f"{info['driver']} is not one of the broken drivers"
    return name


#: Each reproducer of DATA and its sidecar.
REPRODUCERS = [(sidecar.with_suffix(""), json.loads(sidecar.read_text()))
               for sidecar in sorted(DATA.glob("*.json"))]
CORPUS = Path(__file__).resolve().parents[2] / "corpus"
#: libFuzzer's -max_len default for a corpus of small inputs.
MAX_INPUT_BYTES = 4096
#: The drivers whose bug a short in-process fuzz run from the corpus finds (with the custom
#: mutator, as libFuzzer drives it): (mutation seeds, most inputs to try per seed) for each.
#: The first seed finds it within a few seconds (at most about 650 inputs for the corpus
#: of today, the others within 2,000); the bound leaves room for a corpus that grows.
FUZZED = {"RankUnchecked": ((3, 1, 2), 6000), "OverBudget": ((1, 2, 3), 6000),
          "LiveRequest": ((3, 1, 2), 6000)}
#: Each mutant is mutated again this often (libFuzzer mutates its latest outputs too).
STACKED_MUTATIONS = 0.5


@pytest.mark.parametrize("name", sorted(broken_drivers.EXPECTED_RULES))
def test_the_corpus_does_not_already_hold_the_planted_bug(name):
    """Otherwise fuzzing from the corpus would find it at once and show nothing. Inputs of
    the right shape must also run clean (for SHAPE_NOT_ENOUGH, the shape alone does not
    decide)."""
    inputs = sorted(CORPUS.iterdir()) if CORPUS.is_dir() else []
    reaching = [p for p in inputs if broken_drivers.planted_bug_reached(name, decode(p.read_bytes()))]
    if name not in broken_drivers.SHAPE_NOT_ENOUGH:
        assert not reaching, f"corpus inputs already reaching {name}'s bug: {[p.name for p in reaching[:5]]}"
    device = make_device(f"{MODULE}:{name}")
    for path in reaching:
        harness.run_one(path.read_bytes(), device)


@pytest.mark.parametrize("name", sorted(set(broken_drivers.EXPECTED_RULES) - set(FUZZED)))
def test_every_broken_driver_has_a_reproducer(name):
    assert any(driver_name(info) == name for _, info in REPRODUCERS), \
        f"no reproducer for {name} in {DATA}"


@pytest.mark.parametrize("path, info", REPRODUCERS, ids=[p.name for p, _ in REPRODUCERS])
def test_reproducer_fails_with_the_expected_violation(path, info):
    name = driver_name(info)
    expected = broken_drivers.EXPECTED_RULES[name]
    with pytest.raises(expected) as caught:
        harness.run_one(path.read_bytes(), make_device(info["driver"]))
    assert type(caught.value) is expected
    assert caught.value.rule == info["rule"]


@pytest.mark.parametrize("path, info", REPRODUCERS, ids=[p.name for p, _ in REPRODUCERS])
def test_reproducer_passes_on_the_bundled_driver(path, info):
    harness.run_one(path.read_bytes(), SampleDriver())


# --- found by fuzzing from the corpus ---------------------------------------------------------

def fuzz_from_corpus(device, seeds: tuple[int, ...], inputs: int,
                     enabled: harness.Oracles | None = None) -> tuple[bytes, OracleViolation]:
    """The first input (and its violation) of a fuzz run from the corpus that breaks a rule
    (with the optional oracles ``enabled``: by default, the configured ones): a run of at
    most ``inputs`` inputs per mutation seed, the seeds in turn. The inputs of a seed are
    always the same, but what some do depends on the clock (the mutator favours short loop
    timeouts, which a busy machine may miss): a later seed stands in for one that missed."""
    corpus = [path.read_bytes() for path in sorted(CORPUS.iterdir())]
    for seed in seeds:
        rng = random.Random(seed)
        data = None
        for _ in range(inputs):
            source = data if data is not None and rng.random() < STACKED_MUTATIONS else rng.choice(corpus)
            data = mutate(source, MAX_INPUT_BYTES, rng.randrange(1 << 30))
            try:
                harness.run_one(data, device, enabled)
            except OracleViolation as violation:
                return data, violation
    pytest.fail(f"no violation in {inputs} inputs from each of the seeds {list(seeds)}")


@pytest.mark.parametrize("name", sorted(FUZZED))
@pytest.mark.usefixtures("generous_hang_margin")
def test_fuzzing_from_the_corpus_finds_the_planted_bug(name):
    """Found with the rule meant to catch it, minimised, and the minimal case replays: it
    fails on the broken driver and passes on the bundled one."""
    device = make_device(f"{MODULE}:{name}")
    expected = broken_drivers.EXPECTED_RULES[name]
    data, violation = fuzz_from_corpus(device, *FUZZED[name])
    assert type(violation) is expected, violation

    def still_fails(case) -> bool:
        # Run from its bytes: a run writes its outputs into the case's pools, which the
        # candidates share (see reduce.copy_case).
        try:
            harness.run_one(encode(case), device)
        except OracleViolation as again:
            return type(again) is expected
        return False
    found = decode(data)
    smallest = reduce.minimize(found, still_fails, budget_s=10)
    assert reduce.case_size(smallest) <= reduce.case_size(found)
    assert broken_drivers.planted_bug_reached(name, smallest)
    replayed = encode(smallest)
    with pytest.raises(expected):
        harness.run_one(replayed, device)
    harness.run_one(replayed, SampleDriver())
