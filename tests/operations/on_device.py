"""One operation in a model on a SampleDriver: run on every execution path, or refused.

The operation's inputs are ``ExampleOperand`` (driver.operations.signatures), built into a
model as the seed generator builds one (``fuzz.seed_models.OperationSeed``); outputs are
(type, shape, scale, zero point)."""
from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

import numpy as np

from driver import SampleDriver
from driver.hal import Model
from driver.hal.enums import ErrorStatus
from driver.operations.common import STORAGE_DTYPE
from driver.operations.signatures import ExampleOperand
from fuzz.seed_models import OperationSeed
from hal_client.builder import ModelBuilder, make_request, out_like
from tests.driver.execution import ALL_PATHS, execute, prepare, prepare_status

#: The ``value`` of a request-fed input to which the request gives no value.
NO_VALUE = object()


def fed_input(operand_type: int, value, scale: float = 0.0, zero_point: int = 0,
              dims: Optional[Sequence[int]] = None) -> ExampleOperand:
    """An input the request feeds with ``value`` (None: no value); ``dims``, unless given,
    are the value's shape."""
    return ExampleOperand(operand_type, tuple(np.shape(value) if dims is None else dims),
                          value=NO_VALUE if value is None else value, scale=scale, zero_point=zero_point)


def constant_input(operand_type: int, value, scale: float = 0.0, zero_point: int = 0) -> ExampleOperand:
    return ExampleOperand(operand_type, np.shape(value), constant=value, scale=scale, zero_point=zero_point)


def one_operation_model(operation: int, args: Sequence[ExampleOperand], outputs: Sequence[tuple]
                        ) -> tuple[Model, list[Optional[np.ndarray]]]:
    """The model of the operation, and the values its request feeds (None: no value)."""
    mb = ModelBuilder()
    fed = OperationSeed(operation, [dataclasses.replace(arg, value=None) if arg.value is NO_VALUE else arg
                                    for arg in args],
                        [(t, list(shape), scale, zero_point) for t, shape, scale, zero_point in outputs]
                        ).add_to(mb.main)
    fed_args = [arg for arg in args if arg.constant is None and not arg.omitted]
    return mb.build(), [None if arg.value is NO_VALUE else value for arg, value in zip(fed_args, fed)]


def run_everywhere(operation: int, args: Sequence[ExampleOperand], outputs: Sequence[tuple],
                   device=None) -> dict[str, tuple[ErrorStatus, list[np.ndarray]]]:
    """Run the operation on each path of ``device`` (a SampleDriver by default). Per path
    name: the status and, when it is NONE, the outputs read back."""
    model, fed = one_operation_model(operation, args, outputs)
    prepared = prepare(model, device)
    results = {}
    for path in ALL_PATHS:
        io = make_request(fed, [out_like(STORAGE_DTYPE[t], shape) for t, shape, *_ in outputs],
                          state_input_dims=False)
        outcome = execute(prepared, io.request, path)
        read = ([io.output(k, shape) for k, (_, shape, *_) in enumerate(outputs)]
                if outcome.status == ErrorStatus.NONE else [])
        results[path.value] = (outcome.status, read)
    return results


def assert_same_everywhere(results, expected: Sequence[np.ndarray], rtol: float = 0.0) -> None:
    """Every path ran and read back ``expected`` (exactly, or within ``rtol``)."""
    for path, (status, outputs) in results.items():
        assert status == ErrorStatus.NONE, f"{path}: {status.name}"
        for got, want in zip(outputs, expected, strict=True):
            if rtol:
                np.testing.assert_allclose(got, want, rtol=rtol, err_msg=path)
            else:
                np.testing.assert_array_equal(got, want, err_msg=path)


def refused_by_the_device(operation: int, args: Sequence[ExampleOperand], outputs: Sequence[tuple]) -> None:
    """The device finds the model invalid: INVALID_ARGUMENT from getSupportedOperations_1_3
    and prepareModel_1_3."""
    model, _ = one_operation_model(operation, args, outputs)
    device = SampleDriver()
    assert device.getSupportedOperations_1_3(model) == (ErrorStatus.INVALID_ARGUMENT, [])
    assert prepare_status(device, model)[0] == ErrorStatus.INVALID_ARGUMENT
