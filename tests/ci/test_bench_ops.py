"""scripts/bench_ops.py on tiny sizes, so that it cannot rot: its MobileNet models are valid
(every operation the driver registers is supported), the tail runs through the driver, the
im2col floor runs, and the conformance section times a small folder and skips a missing one."""
from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from driver import SampleDriver
from driver.hal import ErrorStatus
from driver.hal.enums import OperationType as Op
from driver.operations.registry import supported_types
from tests.conformance.helpers import add_model
from tests.scripts import load_script

bench_ops = load_script("bench_ops")


@pytest.mark.parametrize("quantized", [False, True])
def test_mobilenet_models_are_valid_and_their_tail_runs(quantized):
    device = SampleDriver()
    net = bench_ops.mobilenet_v1(size=32, quantized=quantized, width=0.125)
    model = net.build()
    assert [op.type for op in model.main.operations][-3:] == [Op.AVERAGE_POOL_2D, Op.FULLY_CONNECTED, Op.SOFTMAX]
    assert len(net.convolutions) == 27 and net.shape == (1, bench_ops.CLASSES)
    status, supported = device.getSupportedOperations_1_3(model)
    assert status == ErrorStatus.NONE
    assert supported == [op.type in supported_types() for op in model.main.operations]
    assert bench_ops.unsupported_operations(device, model) == sorted(
        {Op(op.type).name for op in model.main.operations if op.type not in supported_types()})
    tail = bench_ops.mobilenet_tail(size=32, quantized=quantized, width=0.125)
    assert tail.mb.main.spec(0)[1] == [1, 1, 1, 128]
    best, median = bench_ops.driver_seconds(device, tail, tail.build(), repeats=1)
    assert 0 < best <= median
    bench_ops.im2col_floor(net.convolutions, quantized, np.random.default_rng(0))()


def test_conformance_section(tmp_path, capsys):
    with gzip.open(tmp_path / "add.json.gz", "wt") as file:
        json.dump([add_model("add_one"), add_model("add_two")], file)
    bench_ops.conformance_report(SampleDriver(), tmp_path, "add", slowest=1, repeats=2)
    bench_ops.conformance_report(SampleDriver(), tmp_path / "absent", "", slowest=1, repeats=2)
    out = capsys.readouterr().out
    assert "2 executed in" in out and "ADD: 2 examples" in out
    assert "absent, not timed" in out
