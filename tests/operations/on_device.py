"""One operation in a model, prepared on a SampleDriver and run on every execution path."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from driver.hal.enums import ErrorStatus
from driver.operations.common import STORAGE_DTYPE
from hal_client.builder import ModelBuilder, make_request, out_like
from tests.driver.execution import ALL_PATHS, execute, prepare


@dataclass
class Arg:
    """An operand of the operation: a request input (``value``; None: omitted by the
    request) or, with ``constant``, a constant."""
    type: int
    value: object = None
    constant: bool = False
    scale: float = 0.0
    zero_point: int = 0
    dims: Optional[Sequence[int]] = None


def run_everywhere(operation: int, args: Sequence[Arg], outputs: Sequence[tuple]
                   ) -> dict[str, tuple[ErrorStatus, list[np.ndarray]]]:
    """Run the operation on each path; outputs are (type, shape, scale, zero point). Per
    path name: the status and, when it is NONE, the outputs read back."""
    mb = ModelBuilder()
    main = mb.main
    inputs, fed = [], []
    for arg in args:
        value = None if arg.value is None else np.asarray(arg.value, STORAGE_DTYPE[arg.type])
        if arg.constant:
            inputs.append(main.constant(arg.type, value, arg.dims, scale=arg.scale, zero_point=arg.zero_point))
        else:
            dims = arg.dims if arg.dims is not None else ([] if value is None else value.shape)
            inputs.append(main.input(arg.type, dims, arg.scale, arg.zero_point))
            fed.append(value)
    main.outputs(*main.operation(operation, inputs, [(t, list(shape), scale, zero_point)
                                                      for t, shape, scale, zero_point in outputs]))
    prepared = prepare(mb.build())
    results = {}
    for path in ALL_PATHS:
        io = make_request(fed, [out_like(STORAGE_DTYPE[t], shape) for t, shape, *_ in outputs],
                          state_input_dims=False)
        outcome = execute(prepared, io.request, path)
        read = ([io.output(k, shape) for k, (_, shape, *_) in enumerate(outputs)]
                if outcome.status == ErrorStatus.NONE else [])
        results[path.value] = (outcome.status, read)
    return results


def assert_same_everywhere(results, expected: Sequence[np.ndarray]) -> None:
    for path, (status, outputs) in results.items():
        assert status == ErrorStatus.NONE, f"{path}: {status.name}"
        for got, want in zip(outputs, expected):
            np.testing.assert_array_equal(got, want, err_msg=path)
