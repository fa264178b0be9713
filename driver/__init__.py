"""A Python driver for the Android Neural Networks HAL 1.3.

``SampleDriver()`` is the bundled IDevice; ``driver.hal`` holds the HAL types."""
from . import hal  # noqa: F401
from .device import SampleDriver  # noqa: F401
from .memory import Memory  # noqa: F401
from .sync_fence import FenceState, SyncFence  # noqa: F401

__all__ = ["SampleDriver", "Memory", "SyncFence", "FenceState", "hal"]
