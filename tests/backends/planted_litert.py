"""A LiteRT driver with a discrepancy planted in its converter, for the tests of what is made
of LiteRT's findings (standalone reproducers, crashes/, the findings report): ADD lowered
to TFLite's SUB. The .tflite itself is wrong, so LiteRT alone, run by a standalone
reproducer, shows the discrepancy. Usable as ``--driver tests.backends.planted_litert:add_as_sub``.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

from ai_edge_litert import schema_py_generated as S

from backends.litert import device, table
from backends.litert.convert import OpLowering, options
from driver import SampleDriver
from driver.hal.enums import OperationType


class AddLoweredAsSub:
    """backends/litert/table.py, but for ADD, which it lowers to SUB."""
    supported_operations = staticmethod(table.supported_operations)

    @staticmethod
    def lower(op: OpLowering) -> None:
        if op.ctx.type != OperationType.ADD:
            table.lower(op)
            return
        op.emit(S.BuiltinOperator.SUB, [op.input(0), op.input(1)], [op.output()],
                options(S.SubOptionsT, fusedActivationFunction=op.scalar(2)))


def add_as_sub() -> SampleDriver:
    return device("BUILTIN_REF", AddLoweredAsSub)


@contextmanager
def running(factory: Callable[[], SampleDriver]) -> Iterator[SampleDriver]:
    """A LiteRT device of ``factory``, its workers stopped at the end."""
    device = factory()
    try:
        yield device
    finally:
        device.engine.close()
