"""The broken drivers missing one request check (tests/fuzz/broken_drivers.py, 13-17): each
drops a check request validation has, and those whose invalid requests the corpus holds
are caught by replaying it (the others by their reproducers in tests/fuzz/data/)."""
from __future__ import annotations

import ast
import inspect

import pytest

from driver.validation import request as request_validation
from fuzz import harness
from fuzz.codec import decode
from fuzz.drivers import make_device
from tests.fuzz import broken_drivers
from tests.fuzz.test_broken_drivers import CORPUS


@pytest.mark.parametrize("name", broken_drivers.REQUEST_CHECK_DROPPED)
def test_the_dropped_check_is_one_of_request_validation(name):
    """Else the driver would drop nothing, and run as the bundled one."""
    strings = {node.value for node in ast.walk(ast.parse(inspect.getsource(request_validation)))
               if isinstance(node, ast.Constant)}
    assert getattr(broken_drivers, name).dropped in strings


@pytest.mark.parametrize("name", sorted(broken_drivers.FOUND_BY_THE_CORPUS))
def test_replaying_the_corpus_catches_the_dropped_check(name):
    """Without a reference: the harness's own validator or the HAL contract catches it. A
    corpus input whose request fails the dropped check runs clean or breaks that rule."""
    expected = broken_drivers.FOUND_BY_THE_CORPUS[name]
    device = make_device(f"{broken_drivers.__name__}:{name}")
    caught = []
    for path in sorted(CORPUS.iterdir()):
        data = path.read_bytes()
        if not broken_drivers.planted_bug_reached(name, decode(data)):
            continue
        try:
            harness.run_one(data, device, harness.Oracles())
        except expected as violation:
            caught.append(violation)
    assert caught, f"no corpus input caught {name}"
