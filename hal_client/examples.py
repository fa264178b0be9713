"""Small example models built with hal_client.builder: documentation by example and the
benchmark's workload.

``counter_loop_model()`` is the canonical loop-counter program::

    i = i0
    while i < n:
        i = i + 1
    return i

Its condition and body come from :func:`count_condition` and :func:`count_step`, which the
tests and the fuzz seeds reuse for their own counting loops.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from driver.hal.callbacks import PreparedModelCallback
from driver.hal.enums import (Constant, ErrorStatus, ExecutionPreference, OperandType as T,
                              OperationType as Op, Priority)
from driver.hal.structs import Model, OptionalTimePoint

from .builder import (ModelBuilder, OperandDeclaration, RequestIO, SubgraphBuilder, make_request,
                      out_like)


def count_condition(mb: ModelBuilder, operand_type: int = T.TENSOR_INT32,
                    limit: Optional[float] = None, comparison: int = Op.LESS,
                    others: Sequence[OperandDeclaration] = ()) -> SubgraphBuilder:
    """cond(i) = i <comparison> limit, or with no ``limit`` cond(i, n) = i <comparison> n,
    on [1] tensors of ``operand_type``; inputs of the specs ``others`` follow, for the
    loop's other values (the condition does not read them)."""
    cond = mb.subgraph()
    i = cond.input(operand_type, [1])
    bound = (cond.input(operand_type, [1]) if limit is None
             else cond.constant(operand_type, [limit]))
    for spec in others:
        cond.input(*spec)
    cond.outputs(cond.compare(comparison, i, bound))
    return cond


def count_step(mb: ModelBuilder, operand_type: int = T.TENSOR_INT32, step: float = 1,
               bound_input: bool = False) -> SubgraphBuilder:
    """body(i) = i + step, on a [1] tensor of ``operand_type``; ``bound_input`` adds the
    input-only bound n: body(i, n) = i + step."""
    body = mb.subgraph()
    i = body.input(operand_type, [1])
    if bound_input:
        body.input(operand_type, [1])
    body.outputs(body.add(i, body.constant(operand_type, [step])))
    return body


def counter_loop_model() -> Model:
    """main(i0: int32[1], n: int32[1]) -> i: int32[1], by WHILE(i < n) { i = i + 1 }."""
    mb = ModelBuilder()
    cond, body = count_condition(mb), count_step(mb, bound_input=True)
    main = mb.main
    i0, n = main.input(T.TENSOR_INT32, [1]), main.input(T.TENSOR_INT32, [1])
    main.outputs(*main.while_(cond, body, [i0, n]))
    return mb.build()


def int32_request(inputs: Sequence[np.ndarray], output_shapes: Sequence[Sequence[int]]) -> RequestIO:
    """A request with every int32 input and output in one shared-memory pool, inputs
    first; ``.request`` is the Request, ``.output(k, shape)`` reads output k back."""
    return make_request(inputs, [out_like(np.int32, shape) for shape in output_shapes],
                        state_input_dims=False, one_pool=True)


def prepared_on(device, model: Model,
                preference: ExecutionPreference = ExecutionPreference.SUSTAINED_SPEED):
    """``model`` prepared on ``device`` (an IDevice), as the README shows it; raises
    RuntimeError unless preparation succeeds."""
    callback = PreparedModelCallback()
    device.prepareModel_1_3(model, preference, Priority.MEDIUM, OptionalTimePoint(), [], [],
                            bytes(Constant.BYTE_SIZE_OF_CACHE_TOKEN), callback)
    status, prepared = callback.wait()
    if status != ErrorStatus.NONE or prepared is None:
        raise RuntimeError(f"prepareModel_1_3 failed: {status!r}")
    return prepared
