"""Loading a driver: ``MODULE:FACTORY`` names a callable returning an IDevice.

Any object with the methods of driver/hal/interfaces.py's IDevice is a driver; the bundled
one is only the default of the command lines.
"""
from __future__ import annotations

import importlib
import os
import sys
from typing import Any, Callable

DEFAULT_DRIVER = "driver:SampleDriver"

#: The IDevice methods every client calls; a factory result lacking one is refused early.
REQUIRED_METHODS = ("getSupportedOperations_1_3", "prepareModel_1_3")
#: The exit status of a command line whose --driver (or --reference) gives no device.
SPEC_ERROR_EXIT_STATUS = 2


class DriverSpecError(ValueError):
    """A --driver value that does not name a usable device factory."""


def load_factory(spec: str) -> Callable[[], Any]:
    module_name, colon, attribute_path = spec.partition(":")
    if not colon or not module_name or not attribute_path:
        raise DriverSpecError(f"--driver {spec!r}: expected MODULE:FACTORY, e.g. {DEFAULT_DRIVER}")
    # A driver module in the current folder is found without being installed, as `python
    # -m` finds one; the folder comes last, so it never shadows an installed package.
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    try:
        target: Any = importlib.import_module(module_name)
    except (Exception, SystemExit) as exc:   # a module may fail to load in any way
        raise DriverSpecError(f"--driver {spec!r}: cannot import {module_name}: "
                              f"{_failure(exc)}") from exc
    for name in attribute_path.split("."):
        if not hasattr(target, name):
            raise DriverSpecError(f"--driver {spec!r}: {target!r} has no attribute {name!r}")
        target = getattr(target, name)
    if not callable(target):
        raise DriverSpecError(f"--driver {spec!r}: {attribute_path} is not callable")
    return target


def make_device(spec: str) -> Any:
    """The device made by the factory ``spec`` names. A factory that fails in any way (it
    raises, calls sys.exit, returns something that is no device) is a DriverSpecError."""
    factory = load_factory(spec)
    try:
        device = factory()
    except (Exception, SystemExit) as exc:
        raise DriverSpecError(f"--driver {spec!r}: the factory failed: {_failure(exc)}") from exc
    missing = [name for name in REQUIRED_METHODS if not callable(getattr(device, name, None))]
    if missing:
        raise DriverSpecError(f"--driver {spec!r}: the factory returned {type(device).__name__}, "
                              f"not a device: it lacks {', '.join(missing)}")
    return device


def _failure(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r})"
    return f"{type(exc).__name__}: {exc}"


def report_spec_error(error: DriverSpecError) -> int:
    """For command lines: print the error as a message (not a traceback) and return the
    exit status to end with."""
    print(f"ERROR cannot make the device: {error}", file=sys.stderr, flush=True)
    return SPEC_ERROR_EXIT_STATUS
