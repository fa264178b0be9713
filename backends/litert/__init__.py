"""LiteRT (the TFLite interpreter) as a driver under test: the bundled driver's HAL surface
over LiteRT's kernels. One factory per kernel set, each usable as ``--driver
backends.litert:FACTORY`` by the fuzzer, the conformance runner and triage:

- ``auto``: OpResolverType AUTO, the builtin kernels with the XNNPACK delegate;
- ``builtin``: BUILTIN_WITHOUT_DEFAULT_DELEGATES, the optimized kernels alone (LiteRT's
  BUILTIN would apply the XNNPACK delegate too);
- ``builtin_ref``: BUILTIN_REF, the reference kernels.

Needs the ``litert`` extra (``pip install -e '.[litert]'``).
"""
from __future__ import annotations

from driver import SampleDriver

from . import table
from .engine import LiteRTEngine
from .worker import KERNEL_SETS


#: How long a factory waits for its first worker to start.
STARTUP_WAIT_S = 60


def device(resolver: str, mapping=table) -> SampleDriver:
    """The device of a kernel set (an OpResolverType name, one of KERNEL_SETS), lowering by
    ``mapping`` (the table), once a worker is ready: starting one is not part of any
    execution."""
    if resolver not in KERNEL_SETS.values():
        raise ValueError(f"no LiteRT kernel set {resolver!r}; known: {', '.join(KERNEL_SETS.values())}")
    engine = LiteRTEngine(resolver, mapping)
    engine.workers.wait_ready(STARTUP_WAIT_S)
    return SampleDriver(name=f"litert-{resolver.lower().replace('_', '-')}", engine=engine)


def auto() -> SampleDriver:
    return device(KERNEL_SETS["auto"])


def builtin() -> SampleDriver:
    return device(KERNEL_SETS["builtin"])


def builtin_ref() -> SampleDriver:
    return device(KERNEL_SETS["builtin_ref"])


__all__ = ["auto", "builtin", "builtin_ref", "device", "KERNEL_SETS", "LiteRTEngine"]
