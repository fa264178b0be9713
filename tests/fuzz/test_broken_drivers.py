"""The reproducers the fuzzer found for the planted bugs of broken_drivers.py (minimised by
scripts/triage.py into tests/fuzz/data/): each must still fail against its broken driver
with the oracle violation meant to catch it, and pass against the bundled driver."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from driver import SampleDriver
from fuzz import harness
from fuzz.drivers import make_device
from tests.fuzz import broken_drivers

DATA = Path(__file__).resolve().parent / "data"
MODULE = broken_drivers.__name__


def reproducers() -> list[tuple[Path, dict]]:
    found = []
    for sidecar in sorted(DATA.glob("*.json")) if DATA.is_dir() else []:
        info = json.loads(sidecar.read_text())
        found.append((sidecar.with_suffix(""), info))
    return found


def driver_name(info: dict) -> str:
    module, _, name = info["driver"].partition(":")
    assert module == MODULE, f"{info['driver']} is not one of the broken drivers"
    return name


REPRODUCERS = reproducers()
CORPUS = Path(__file__).resolve().parents[2] / "corpus"


@pytest.mark.parametrize("name", sorted(broken_drivers.EXPECTED_RULES))
def test_the_corpus_does_not_already_hold_the_planted_bug(name):
    """Otherwise fuzzing from the corpus would find it at once and show nothing. Inputs of
    the right shape must also run clean (for Hanging, the shape alone does not decide)."""
    from fuzz.codec import decode
    inputs = sorted(CORPUS.iterdir()) if CORPUS.is_dir() else []
    reaching = [p for p in inputs if broken_drivers.planted_bug_reached(name, decode(p.read_bytes()))]
    if name != "Hanging":
        assert not reaching, f"corpus inputs already reaching {name}'s bug: {[p.name for p in reaching[:5]]}"
    device = make_device(f"{MODULE}:{name}")
    for path in reaching:
        harness.run_one(path.read_bytes(), device)


@pytest.mark.parametrize("name", sorted(broken_drivers.EXPECTED_RULES))
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
