#!/usr/bin/env python3
"""Benchmark of the driver's operations (a measurement, not a test).

    python scripts/bench_ops.py [--size 224] [--repeats 5] [--conformance DIR] [-k SUBSTRING]

Prints:
- MobileNet v1 (a 3x3 stride-2 CONV_2D, 13 depthwise-separable blocks of a 3x3
  DEPTHWISE_CONV_2D and a 1x1 CONV_2D, all with RELU6, then AVERAGE_POOL_2D,
  FULLY_CONNECTED and SOFTMAX; random weights, seeded) in float32 and in quant8 asymm:
  one inference through the driver (prepared once, executed synchronously, best of
  --repeats), against the floor of a numpy implementation: the same convolutions as bare
  np.matmul calls on im2col matrices built beforehand (float32; for quant8, float64 on
  zero-point-free values, exact for these integer sums). Targets for driver / floor:
  <= 2.0 float32, <= 4.0 quant8. An operation the driver does not support
  (getSupportedOperations_1_3) is named and the whole model is not timed; the tail
  (pooling, fully connected, softmax) is timed either way.
- The conformance examples (when the folder exists), each prepared once and executed
  synchronously through the driver (best of --repeats), grouped by operation family (the operation types an example uses;
  ADD is left out when other operations are present, as the suite uses it to feed their
  inputs): per family the examples, their total time and the slowest few; then the total.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from driver import SampleDriver
from driver.hal import ErrorStatus, MeasureTiming, Model, OptionalTimeoutDuration, OptionalTimePoint
from driver.hal.enums import FusedActivationFunc, OperandType as T, OperationType as Op
from hal_client.builder import ModelBuilder, make_request, out_like
from hal_client.conformance.loader import (LoadError, build_model, build_request,
                                           find_model_files, load_examples)
from hal_client.examples import prepared_on

#: (depthwise stride, pointwise output channels) of MobileNet v1's 13 blocks.
BLOCKS = ((1, 64), (2, 128), (1, 128), (2, 256), (1, 256), (2, 512), *((1, 512),) * 5,
          (2, 1024), (1, 1024))
FIRST_CHANNELS, CLASSES = 32, 1001
SAME = 1
RELU6 = int(FusedActivationFunc.RELU6)
#: Quantization (scale, zero point) of the image, of every RELU6 output ([0, 6]) and of the
#: logits; SOFTMAX's output quantization is fixed by the HAL.
IMAGE_QUANT, RELU6_QUANT, LOGITS_QUANT, SOFTMAX_QUANT = (2 / 255, 128), (6 / 255, 0), (16 / 255, 128), (1 / 256, 0)
#: The CTS models beside this checkout, where the test suite looks for them too.
DEFAULT_CONFORMANCE = Path(__file__).resolve().parent.parent.parent / "shared" / "conformance" / "cts"


@dataclass(frozen=True)
class Convolution:
    """One convolution's geometry, for the im2col floor."""
    out_height: int
    out_width: int
    kernel: int
    in_channels: int
    out_channels: int
    depthwise: bool


@dataclass
class Network:
    """A model being built, layer by layer, with the shape and quantization of its last
    output; random weights from ``rng``."""
    quantized: bool
    rng: np.random.Generator
    mb: ModelBuilder = field(default_factory=ModelBuilder)
    convolutions: list[Convolution] = field(default_factory=list)
    x: int = -1
    shape: tuple[int, ...] = ()
    quant: tuple[float, int] = (0.0, 0)

    @property
    def tensor_type(self) -> int:
        return T.TENSOR_QUANT8_ASYMM if self.quantized else T.TENSOR_FLOAT32

    def input(self, shape: Sequence[int], quant: tuple[float, int] = IMAGE_QUANT) -> "Network":
        self.shape, self.quant = tuple(shape), quant if self.quantized else (0.0, 0)
        self.x = self.mb.main.input(self.tensor_type, self.shape, *self.quant)
        return self

    def weights(self, shape: Sequence[int], fan_in: int, units: int) -> tuple[int, int]:
        """Constant weights (He-initialised; quantized per tensor around 128) and a zero
        bias of ``units`` entries: their operand indexes."""
        real = self.rng.normal(0.0, math.sqrt(2.0 / fan_in), shape).astype(np.float32)
        g = self.mb.main
        if not self.quantized:
            return g.constant(T.TENSOR_FLOAT32, real), g.constant(T.TENSOR_FLOAT32, np.zeros(units, np.float32))
        scale = float(np.abs(real).max()) / 127
        stored = np.clip(np.round(real / scale) + 128, 0, 255).astype(np.uint8)
        bias_scale = float(np.float32(self.quant[0]) * np.float32(scale))
        return (g.constant(T.TENSOR_QUANT8_ASYMM, stored, scale=scale, zero_point=128),
                g.constant(T.TENSOR_INT32, np.zeros(units, np.int32), scale=bias_scale))

    def _apply(self, operation: int, inputs: Sequence[int], shape: Sequence[int],
               quant: tuple[float, int]) -> "Network":
        self.shape, self.quant = tuple(shape), quant if self.quantized else (0.0, 0)
        self.x = self.mb.main.apply(operation, [self.x, *inputs], self.tensor_type, self.shape, *self.quant)
        return self

    def conv(self, out_channels: int, kernel: int, stride: int) -> "Network":
        _, height, width, in_channels = self.shape
        out_height, out_width = -(-height // stride), -(-width // stride)
        self.convolutions.append(Convolution(out_height, out_width, kernel, in_channels, out_channels, False))
        w, b = self.weights((out_channels, kernel, kernel, in_channels), kernel * kernel * in_channels,
                            out_channels)
        g = self.mb.main
        return self._apply(Op.CONV_2D, [w, b, *(g.int32(v) for v in (SAME, stride, stride, RELU6))],
                           (1, out_height, out_width, out_channels), RELU6_QUANT)

    def depthwise(self, stride: int) -> "Network":
        _, height, width, channels = self.shape
        out_height, out_width = -(-height // stride), -(-width // stride)
        self.convolutions.append(Convolution(out_height, out_width, 3, channels, channels, True))
        w, b = self.weights((1, 3, 3, channels), 9, channels)
        g = self.mb.main
        return self._apply(Op.DEPTHWISE_CONV_2D, [w, b, *(g.int32(v) for v in (SAME, stride, stride, 1, RELU6))],
                           (1, out_height, out_width, channels), RELU6_QUANT)

    def average_pool(self) -> "Network":
        _, height, width, channels = self.shape
        g = self.mb.main
        return self._apply(Op.AVERAGE_POOL_2D, [g.int32(v) for v in (2, 1, 1, width, height, 0)],
                           (1, 1, 1, channels), self.quant)

    def fully_connected(self, units: int) -> "Network":
        w, b = self.weights((units, self.shape[-1]), self.shape[-1], units)
        return self._apply(Op.FULLY_CONNECTED, [w, b, self.mb.main.int32(0)], (1, units), LOGITS_QUANT)

    def softmax(self) -> "Network":
        return self._apply(Op.SOFTMAX, [self.mb.main.constant(T.FLOAT32, 1.0)], self.shape, SOFTMAX_QUANT)

    def build(self) -> Model:
        self.mb.main.outputs(self.x)
        return self.mb.build()


def channels(count: int, width: float) -> int:
    return max(1, int(count * width))


def mobilenet_v1(size: int = 224, quantized: bool = False, width: float = 1.0, seed: int = 0) -> Network:
    """The whole network on a [1, size, size, 3] image; ``width`` scales every channel count."""
    net = Network(quantized, np.random.default_rng(seed)).input((1, size, size, 3))
    net.conv(channels(FIRST_CHANNELS, width), 3, 2)
    for stride, out_channels in BLOCKS:
        net.depthwise(stride).conv(channels(out_channels, width), 1, 1)
    return net.average_pool().fully_connected(CLASSES).softmax()


def mobilenet_tail(size: int = 224, quantized: bool = False, width: float = 1.0, seed: int = 0) -> Network:
    """The network's last layers (pooling, fully connected, softmax) on the features the
    blocks make of a [1, size, size, 3] image."""
    side = size
    for _ in range(1 + sum(stride == 2 for stride, _ in BLOCKS)):
        side = -(-side // 2)
    net = Network(quantized, np.random.default_rng(seed))
    net.input((1, side, side, channels(BLOCKS[-1][1], width)), RELU6_QUANT)
    return net.average_pool().fully_connected(CLASSES).softmax()


# --- timing ------------------------------------------------------------------------------------

def unsupported_operations(device, model: Model) -> list[str]:
    """The main subgraph's operations the device does not support, named."""
    status, supported = device.getSupportedOperations_1_3(model)
    if status != ErrorStatus.NONE:
        return [f"the whole model ({ErrorStatus(status).name})"]
    return sorted({Op(model.main.operations[i].type).name for i, ok in enumerate(supported) if not ok})


def best_seconds(run: Callable[[], None], repeats: int) -> tuple[float, float]:
    """(best, median) seconds of ``run`` after one warm-up call."""
    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def driver_seconds(device, net: Network, model: Model, repeats: int) -> tuple[float, float]:
    """One inference of ``model`` (built by ``net``) through the driver: prepared once,
    executed synchronously."""
    prepared = prepared_on(device, model)
    image = net.rng.integers(0, 256, net.mb.main.spec(net.mb.main.input_indexes[0])[1]).astype(np.uint8)
    if not net.quantized:
        image = (image.astype(np.float32) - 128) / 128
    out = net.mb.main.spec(model.main.outputIndexes[0])
    io = make_request([image], [out_like(np.uint8 if net.quantized else np.float32, out[1])])

    def run() -> None:
        status, _, _ = prepared.executeSynchronously_1_3(io.request, MeasureTiming.NO, OptionalTimePoint(),
                                                         OptionalTimeoutDuration())
        assert status == ErrorStatus.NONE, status
    return best_seconds(run, repeats)


def im2col_floor(convolutions: Sequence[Convolution], quantized: bool, rng: np.random.Generator
                 ) -> Callable[[], None]:
    """The convolutions as bare np.matmul calls on im2col matrices built here: a regular
    convolution is [positions, kernel * kernel * in] @ [kernel * kernel * in, out]; a
    depthwise one, per channel, [channels, positions, 9] @ [channels, 9, 1]."""
    dtype = np.float64 if quantized else np.float32
    operands = []
    for c in convolutions:
        positions, taps = c.out_height * c.out_width, c.kernel * c.kernel
        if c.depthwise:
            operands.append((rng.standard_normal((c.in_channels, positions, taps)).astype(dtype),
                             rng.standard_normal((c.in_channels, taps, 1)).astype(dtype)))
        else:
            operands.append((rng.standard_normal((positions, taps * c.in_channels)).astype(dtype),
                             rng.standard_normal((taps * c.in_channels, c.out_channels)).astype(dtype)))

    def run() -> None:
        for columns, weights in operands:
            np.matmul(columns, weights)
    return run


def mobilenet_report(device, size: int, quantized: bool, repeats: int, target: float) -> None:
    kind = "quant8 asymm" if quantized else "float32"
    net = mobilenet_v1(size, quantized)
    print(f"MobileNet v1, {size}x{size}x3, {kind}: {len(net.mb.main.operations)} operations, "
          f"{len(net.convolutions)} convolutions")
    floor, floor_median = best_seconds(im2col_floor(net.convolutions, quantized, net.rng), repeats)
    print(f"  im2col + np.matmul floor:  {floor * 1e3:8.2f} ms (best of {repeats}; median {floor_median * 1e3:.2f})")
    tail_net = mobilenet_tail(size, quantized)
    tail, tail_median = driver_seconds(device, tail_net, tail_net.build(), repeats)
    print(f"  tail through the driver:   {tail * 1e3:8.2f} ms (AVERAGE_POOL_2D, FULLY_CONNECTED, "
          f"SOFTMAX; median {tail_median * 1e3:.2f})")
    model = net.build()
    missing = unsupported_operations(device, model)
    if missing:
        print(f"  whole model: not timed, the driver does not support {', '.join(missing)}")
        return
    whole, whole_median = driver_seconds(device, net, model, repeats)
    ratio = whole / floor
    print(f"  whole model, driver:       {whole * 1e3:8.2f} ms (median {whole_median * 1e3:.2f})")
    print(f"  ratio driver / floor: {ratio:.2f}x (target <= {target}): "
          f"{'OK' if ratio <= target else 'OVER TARGET'}")


# --- conformance examples -------------------------------------------------------------------------

def family(operation_types: Sequence[int]) -> str:
    names = sorted({Op(t).name for t in operation_types})
    return "+".join([n for n in names if n != "ADD"] or names)


def example_seconds(device, example, repeats: int) -> Optional[float]:
    """The best time of a synchronous execution of ``example``, prepared once; None when
    the driver does not support all of its operations."""
    model = build_model(example)
    if unsupported_operations(device, model):
        return None
    prepared, request = prepared_on(device, model), build_request(example)
    return best_seconds(lambda: prepared.executeSynchronously_1_3(
        request, MeasureTiming.NO, OptionalTimePoint(), OptionalTimeoutDuration()), repeats)[0]


def conformance_report(device, folder: Path, name_filter: str, slowest: int, repeats: int) -> None:
    if not folder.is_dir():
        print(f"conformance examples: {folder} is absent, not timed")
        return
    times: dict[str, list[tuple[float, str]]] = defaultdict(list)
    skipped = 0
    for path in find_model_files([folder]):
        try:
            examples = [e for e in load_examples(path) if name_filter in e.name]
        except LoadError as error:
            print(f"  {error}")
            continue
        for example in examples:
            # A loop that must time out measures the loop timeout, not the operations.
            seconds = None if example.expectFailure else example_seconds(device, example, repeats)
            if seconds is None:
                skipped += 1
                continue
            times[family([op.type for op in example.main.operations])].append((seconds, example.name))
    total = sum(s for runs in times.values() for s, _ in runs)
    count = sum(map(len, times.values()))
    print(f"conformance examples under {folder}: {count} executed in {total:.2f} s (each the best "
          f"of {repeats}); {skipped} skipped (unsupported operations, or must fail)")
    for name, runs in sorted(times.items(), key=lambda item: -sum(s for s, _ in item[1])):
        runs.sort(reverse=True)
        print(f"  {name}: {len(runs)} examples, {sum(s for s, _ in runs) * 1e3:.1f} ms; slowest: "
              + ", ".join(f"{example} {s * 1e3:.1f} ms" for s, example in runs[:slowest]))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=224, help="image height and width (default 224)")
    parser.add_argument("-r", "--repeats", type=int, default=5)
    parser.add_argument("--conformance", type=Path, default=DEFAULT_CONFORMANCE,
                        help=f"folder of conformance examples (default {DEFAULT_CONFORMANCE})")
    parser.add_argument("-k", default="", metavar="SUBSTRING",
                        help="only the conformance examples whose name contains SUBSTRING")
    parser.add_argument("--slowest", type=int, default=3, help="slowest examples shown per family")
    parser.add_argument("--skip-mobilenet", action="store_true")
    parser.add_argument("--skip-conformance", action="store_true")
    args = parser.parse_args(argv)

    device = SampleDriver()
    if not args.skip_mobilenet:
        mobilenet_report(device, args.size, False, args.repeats, target=2.0)
        mobilenet_report(device, args.size, True, args.repeats, target=4.0)
    if not args.skip_conformance:
        conformance_report(device, args.conformance, args.k, args.slowest, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
