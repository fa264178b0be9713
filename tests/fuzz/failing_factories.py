"""Device factories that give no device, for the loaders of the command lines
(``--driver tests.fuzz.failing_factories:NAME``)."""
from __future__ import annotations

import sys


def raises():
    raise RuntimeError("no such hardware")


def exits_0():
    sys.exit(0)


def exits_3():
    sys.exit(3)


def exits_with_a_message():
    sys.exit("the driver service is not running")


def returns_none():
    return None


def returns_something_else():
    return object()


NAMES = ("raises", "exits_0", "exits_3", "exits_with_a_message", "returns_none",
         "returns_something_else")
