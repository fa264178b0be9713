"""Which driver the harness fuzzes: ``MODULE:FACTORY``, a callable returning an IDevice.

The choice travels in an environment variable as well as on the command line, because
libFuzzer's -fork, -jobs and -minimize_crash modes re-execute the entry script with only
the flags libFuzzer knows about.
"""
from __future__ import annotations

import importlib
import os
from typing import Any, Callable

DEFAULT_DRIVER = "driver:SampleDriver"
DRIVER_ENV = "NNHAL_FUZZ_DRIVER"

#: The IDevice methods the harness calls; a factory result lacking one is refused early.
REQUIRED_METHODS = ("getSupportedOperations_1_3", "prepareModel_1_3")


class DriverSpecError(ValueError):
    """A --driver value that does not name a usable device factory."""


def configured_spec() -> str:
    return os.environ.get(DRIVER_ENV) or DEFAULT_DRIVER


def top_package(spec: str) -> str:
    """The package a spec's module belongs to (what coverage instrumentation must include)."""
    return spec.partition(":")[0].split(".")[0]


def load_factory(spec: str) -> Callable[[], Any]:
    module_name, colon, attribute_path = spec.partition(":")
    if not colon or not module_name or not attribute_path:
        raise DriverSpecError(f"--driver {spec!r}: expected MODULE:FACTORY, e.g. {DEFAULT_DRIVER}")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise DriverSpecError(f"--driver {spec!r}: cannot import {module_name}: {exc}") from exc
    for name in attribute_path.split("."):
        if not hasattr(target, name):
            raise DriverSpecError(f"--driver {spec!r}: {target!r} has no attribute {name!r}")
        target = getattr(target, name)
    if not callable(target):
        raise DriverSpecError(f"--driver {spec!r}: {attribute_path} is not callable")
    return target


def make_device(spec: str | None = None) -> Any:
    """A device from ``spec`` (default: the configured one)."""
    spec = spec or configured_spec()
    device = load_factory(spec)()
    missing = [name for name in REQUIRED_METHODS if not callable(getattr(device, name, None))]
    if missing:
        raise DriverSpecError(f"--driver {spec!r}: the device lacks {', '.join(missing)}")
    return device
