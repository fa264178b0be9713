"""SVDF: a layer of num_units * rank filters, each a feature filter followed by a filter
over time (a rank-``rank`` singular value decomposition of a dense layer over a window of
memory_size input frames).

For each batch, the state [num_filters, memory_size] (stored flat, [batch_size,
memory_size * num_filters]) holds the last memory_size - 1 feature activations of each
filter, oldest first, and a free last slot. One step puts ``input * weights_feature'`` in
that slot, gives each filter the dot product of its memory with its row of weights_time,
sums the filters of each unit (rank consecutive ones) and adds the optional bias, then
applies the activation; the output state is the memory shifted one slot to the left, the
last slot 0 again. weights_feature is [num_filters, input_size] and weights_time
[num_filters, memory_size]. Float16 is computed in single precision and rounded once.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from .common import ACTIVATION, STORAGE_DTYPE, activation_bounds, agreed_size, matrix_product
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .rnn import float_inputs, results, shapes_of
from .signatures import Example, ExampleOperand as Arg, Range, Signature, same_as, scalar, tensor

F32, F16 = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16
INPUT, WEIGHTS_FEATURE, WEIGHTS_TIME, BIAS, STATE_IN, RANK, FUSED_ACTIVATION = range(7)
SIGNATURES = (Signature(
    inputs=(tensor((F32, F16), (2, 2), "input"),
            same_as(INPUT, (2, 2), "weights_feature"), same_as(INPUT, (2, 2), "weights_time"),
            replace(same_as(INPUT, (1, 1), "bias"), optional=True), same_as(INPUT, (2, 2), "state_in"),
            scalar(T.INT32, Range(0, low_exclusive=True), "rank"), ACTIVATION),
    outputs=(same_as(INPUT), same_as(INPUT))),)
SPECS = SIGNATURES[0].inputs


def sizes(ctx: OperationContext, shapes: Sequence[Shape], rank: int | None, exact: bool = False
          ) -> tuple[int, int, int, int, int]:
    """batch_size, num_filters, memory_size, the state size and num_units (0: unknown;
    ``rank`` None: not known before the run), checking that the operands' shapes agree
    (``exact``: see agreed_size)."""
    batch = agreed_size(ctx, shapes, "batch_size", [(INPUT, 0), (STATE_IN, 0)], exact=exact)
    agreed_size(ctx, shapes, "input_size", [(INPUT, 1), (WEIGHTS_FEATURE, 1)], exact=exact)
    filters = agreed_size(ctx, shapes, "num_filters", [(WEIGHTS_FEATURE, 0), (WEIGHTS_TIME, 0)], exact=exact)
    memory_size = agreed_size(ctx, shapes, "memory_size", [(WEIGHTS_TIME, 1)], exact=exact)
    if exact:       # the newest activation needs a slot
        check(memory_size > 0, "{}: input 2 (weights_time, operand {}) has memory_size 0",
              ctx.name, ctx.inputs[WEIGHTS_TIME].index)
    state = agreed_size(ctx, shapes, "memory_size * num_filters", [(STATE_IN, 1)],
                        memory_size * filters, exact)
    units = 0
    if rank is not None:
        check(filters % rank == 0, "{}: num_filters {} of input 1 (operand {}) is not a multiple of rank {}",
              ctx.name, filters, ctx.inputs[WEIGHTS_FEATURE].index, rank)
        units = filters // rank
    units = agreed_size(ctx, shapes, "num_units", [(BIAS, 0)], units, exact)
    return batch, filters, memory_size, state, units


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    batch, _, _, state, units = sizes(ctx, shapes, ctx.scalar(RANK))
    return [(batch, state), (batch, units)]


def build(ctx: OperationContext) -> Kernel:
    floats, dtype = float_inputs(ctx, STATE_IN + 1), STORAGE_DTYPE[ctx.inputs[INPUT].type]

    def kernel(*inputs):
        rank = ctx.run_scalar(RANK, inputs, SPECS[RANK])
        batch, filters, memory_size, state_size, units = sizes(ctx, shapes_of(inputs), rank, exact=True)
        activation = ctx.run_scalar(FUSED_ACTIVATION, inputs, SPECS[FUSED_ACTIVATION])
        low, high = activation_bounds(activation)
        x, weights_feature, weights_time, bias, state = floats(inputs)
        memory = state.reshape(batch, filters, memory_size).copy()
        memory[:, :, -1] = matrix_product(x, weights_feature.T, ctx.name)
        filtered = np.einsum("bfm,fm->bf", memory, weights_time)
        output = filtered.reshape(batch, units, rank).sum(axis=2)
        if bias is not None:
            output += bias
        np.clip(output, low, high, out=output)
        state_out = np.zeros_like(memory)
        state_out[:, :, :-1] = memory[:, :, 1:]
        return results(dtype, state_out.reshape(batch, state_size), output)
    return kernel


#: Rank 1 with a bias in single precision; rank 2 without one, and run-time weights, in half.
EXAMPLES = (
    Example(inputs=(Arg(F32, (2, 3)), Arg(F32, (2, 3), constant=[[0.5, -0.25, 1], [0, 1, -1]]),
                    Arg(F32, (2, 3), constant=[[1, 0.5, 0.25], [-0.5, 0, 1]]),
                    Arg(F32, (2,), constant=[0.5, -0.5]), Arg(F32, (2, 6)),
                    Arg(T.INT32, constant=1), Arg(T.INT32, constant=1)),
            outputs=((F32, 0.0, 0),) * 2),
    Example(inputs=(Arg(F16, (1, 2)), Arg(F16, (4, 2)), Arg(F16, (4, 2)), Arg(F16, omitted=True),
                    Arg(F16, (1, 8)), Arg(T.INT32, constant=2), Arg(T.INT32, constant=0)),
            outputs=((F16, 0.0, 0),) * 2))

register(OperationDef(OperationType.SVDF, SIGNATURES, infer_shapes, build, None, EXAMPLES))
