"""Zero-sized values reaching every operation, on every execution path.

A value with a 0 dimension is a real, empty tensor at run time (0 means "unknown" only in
an operand's declared dimensions). A model makes one with a SLICE of size 0; a request
cannot feed one (a request input must be fully specified, as VTS has it). For every
registered operation and each of its seed models (one per signature variant and type set,
and one per declared example: fuzz.seed_models.operation_seeds), each tensor input in turn
is read through a SLICE of size 0 along its first dimension (and its last, for an operation
that takes zero-sized inputs), with the outputs' dimensions left to the driver. (SLICE
reads every tensor type but BOOL8, QUANT16 and per-channel ones; no operation makes an empty
value of those from an empty input, so LOGICAL_AND, LOGICAL_OR and LOGICAL_NOT never get one.)

Every execution path must answer with a HAL status, never an exception. An operation that
does not declare ``zero_sized_inputs`` fails with GENERAL_FAILURE, as the reference's
operations without allowZeroSizedInput do. One that declares it answers NONE or an error
status, the same on every path; a NONE keeps the declared ranks and is no larger in any
dimension than the answer for a slice of size 1.
"""
from __future__ import annotations

import threading
from collections import defaultdict
from typing import Optional

import pytest

from driver import SampleDriver
from driver.hal.enums import ErrorStatus, OperandType as T, OperationType as Op
from driver.operations import slice as slice_operation
from driver.operations.common import STORAGE_DTYPE
from driver.operations.registry import definitions, lookup
from fuzz.seed_models import OperationSeed, operation_seeds
from hal_client.builder import ModelBuilder, make_request, out_bytes
from tests.driver.execution import SHAPE_PATHS, Path, execute, prepare_status

_BY_OPERATION: dict[int, list[tuple[str, OperationSeed]]] = defaultdict(list)
for _name, _seed in operation_seeds().items():
    _BY_OPERATION[_seed.operation].append((_name, _seed))

#: Bytes of each output buffer: more than any seed's output needs.
OUTPUT_BYTES = 4096
NONE, GENERAL_FAILURE = ErrorStatus.NONE, ErrorStatus.GENERAL_FAILURE


def sliced_model(seed: OperationSeed, k: int, axis: int, size: int):
    """The seed's model with input ``k`` read through SLICE(x, 0, dims with dims[axis] =
    size), its outputs of unknown dimensions (and their rank); and the request's values."""
    mb = ModelBuilder()
    g = mb.main
    inputs, fed = seed.add_inputs(g)
    arg = seed.args[k]
    dims = list(arg.dims)
    dims[axis] = size
    begin, size = g.constant(T.TENSOR_INT32, [0] * len(dims)), g.constant(T.TENSOR_INT32, dims)
    inputs[k] = g.apply(Op.SLICE, [inputs[k], begin, size], arg.type, dims, arg.scale, arg.zero_point)
    outputs = [(t, [0] * len(dims), scale, zero_point) for t, dims, scale, zero_point in seed.outputs]
    g.outputs(*g.operation(seed.operation, inputs, outputs))
    return mb.build(), fed


def run_on_every_path(device, seed: OperationSeed, k: int, axis: int, size: int) -> Optional[dict]:
    """Per path, (status, output shapes, output bytes); None when preparation refused the
    model. A fenced execution takes only outputs of known shape: it is given the seed's."""
    model, fed = sliced_model(seed, k, axis, size)
    launch, status, prepared = prepare_status(device, model)
    assert isinstance(launch, ErrorStatus) and isinstance(status, ErrorStatus)
    if status != NONE:
        return None
    results = {}
    for path in (*SHAPE_PATHS, Path.FENCED):
        io = make_request(fed, [out_bytes(STORAGE_DTYPE[t], OUTPUT_BYTES, dims if path is Path.FENCED else ())
                                for t, dims, *_ in seed.outputs], state_input_dims=False)
        outcome = execute(prepared, io.request, path)
        shapes = ([tuple(shape.dimensions) for shape in outcome.output_shapes]
                  if path is not Path.FENCED else [tuple(dims) for _, dims, *_ in seed.outputs])
        results[path] = ((outcome.status, shapes, [io.output(n, s).tobytes() for n, s in enumerate(shapes)])
                         if outcome.status == NONE else (outcome.status, None, None))
    return results


def check_answers(what: str, seed: OperationSeed, empty: dict, one: Optional[dict]) -> None:
    statuses = {path.value: answer[0].name for path, answer in empty.items()}
    if not lookup(seed.operation).zero_sized_inputs:
        assert set(statuses.values()) == {GENERAL_FAILURE.name}, f"{what}: {statuses}"
        return
    status, shapes, values = empty[Path.SYNC]
    assert all(empty[path] == empty[Path.SYNC] for path in SHAPE_PATHS), f"{what}: {statuses}"
    assert status != ErrorStatus.OUTPUT_INSUFFICIENT_SIZE, f"{what}: {OUTPUT_BYTES} bytes are plenty"
    if status != NONE:
        assert empty[Path.FENCED][0] == status, f"{what}: {statuses}"
        return
    if empty[Path.FENCED][0] == NONE:
        # The seed's shapes, stated by the request, were the right ones.
        assert empty[Path.FENCED] == empty[Path.SYNC], f"{what}: fenced differs from sync"
    for n, (shape, (_, declared, *_)) in enumerate(zip(shapes, seed.outputs)):
        assert len(shape) == len(declared), f"{what}: output {n} has rank {len(shape)}, declared {len(declared)}"
    if one is not None and one[Path.SYNC][0] == NONE:
        for n, (shape, shape_of_one) in enumerate(zip(shapes, one[Path.SYNC][1])):
            assert all(d <= e for d, e in zip(shape, shape_of_one)), \
                f"{what}: output {n} is {list(shape)} from an empty input, {list(shape_of_one)} from one row"


def sliced_axes(seed: OperationSeed, k: int) -> list[int]:
    """The axes along which input k is made empty (none where SLICE cannot read it)."""
    arg = seed.args[k]
    if arg.omitted or arg.type not in slice_operation.TYPES or not arg.dims:
        return []
    return sorted({0, len(arg.dims) - 1}) if lookup(seed.operation).zero_sized_inputs else [0]


def test_every_registered_operation_has_seeds_to_empty():
    assert {definition.type for definition in definitions()} == set(_BY_OPERATION)


@pytest.fixture
def escaped(monkeypatch):
    """Exceptions that left an execution thread (execute_1_3, executeFenced)."""
    reported = []
    monkeypatch.setattr(threading, "excepthook", lambda args: reported.append(args.exc_value))
    return reported


@pytest.mark.parametrize("operation", sorted(_BY_OPERATION), ids=lambda o: Op(o).name)
def test_a_zero_sized_input_gets_a_status_on_every_path(operation, escaped):
    device = SampleDriver()
    for name, seed in _BY_OPERATION[operation]:
        for k in range(len(seed.args)):
            for axis in sliced_axes(seed, k):
                what = f"{name}, input {k} empty along axis {axis}"
                empty = run_on_every_path(device, seed, k, axis, 0)
                if empty is None:
                    continue
                one = run_on_every_path(device, seed, k, axis, 1) if empty[Path.SYNC][0] == NONE else None
                check_answers(what, seed, empty, one)
    assert not escaped, escaped
