"""The loop-counter and condition case for every registered operation: TENSOR_INT32 [1] and
TENSOR_BOOL8 [1] operands (what control-flow models carry around)."""
from __future__ import annotations

import numpy as np
import pytest

from driver.errors import ValidationError
from driver.hal.enums import OperandType as T, OperationType as Op
from driver.operations import supported_types
from tests.operations.helpers import B8, I32, const, context, definition, output, run1, tensor


def i32():
    return tensor(I32, [1])


def b8():
    return tensor(B8, [1])


NONE = 0
#: op -> (inputs, output type, run-time values, expected output)
CASES = {
    Op.ADD: ([i32(), i32(), const(T.INT32, NONE)], I32, [[5], [3]], [8]),
    Op.SUB: ([i32(), i32(), const(T.INT32, NONE)], I32, [[5], [3]], [2]),
    Op.MUL: ([i32(), i32(), const(T.INT32, NONE)], I32, [[5], [3]], [15]),
    Op.DIV: ([i32(), i32(), const(T.INT32, NONE)], I32, [[-5], [3]], [-2]),
    Op.EQUAL: ([i32(), i32()], B8, [[5], [5]], [True]),
    Op.NOT_EQUAL: ([i32(), i32()], B8, [[5], [5]], [False]),
    Op.LESS: ([i32(), i32()], B8, [[4], [5]], [True]),
    Op.LESS_EQUAL: ([i32(), i32()], B8, [[6], [5]], [False]),
    Op.GREATER: ([i32(), i32()], B8, [[6], [5]], [True]),
    Op.GREATER_EQUAL: ([i32(), i32()], B8, [[4], [5]], [False]),
    Op.LOGICAL_AND: ([b8(), b8()], B8, [[True], [False]], [False]),
    Op.LOGICAL_OR: ([b8(), b8()], B8, [[True], [False]], [True]),
    Op.LOGICAL_NOT: ([b8()], B8, [[True]], [False]),
    Op.ABS: ([i32()], I32, [[-4]], [4]),
    Op.NEG: ([i32()], I32, [[4]], [-4]),
    Op.MAXIMUM: ([i32(), i32()], I32, [[4], [9]], [9]),
    Op.MINIMUM: ([i32(), i32()], I32, [[4], [9]], [4]),
    Op.SELECT: ([b8(), i32(), i32()], I32, [[False], [1], [2]], [2]),
    Op.SLICE: ([i32(), const(I32, [0]), const(I32, [1])], I32, [[7]], [7]),
    Op.CAST: ([i32()], I32, [[7]], [7]),
    Op.EXPAND_DIMS: ([i32(), const(T.INT32, 0)], I32, [[7]], [[7]]),
    Op.GATHER: ([i32(), const(T.INT32, 0), const(I32, [0])], I32, [[7]], [7]),
    Op.TILE: ([i32(), const(I32, [2])], I32, [[7]], [7, 7]),
    Op.SPLIT: ([i32(), const(T.INT32, 0), const(T.INT32, 1)], I32, [[7]], [7]),
    Op.ARGMAX: ([i32(), const(T.INT32, 0)], I32, [[7]], [0]),
    Op.ARGMIN: ([i32(), const(T.INT32, 0)], I32, [[7]], [0]),
    Op.FILL: ([const(I32, [1]), const(T.INT32, 3)], I32, [], [3]),
    Op.RANK: ([i32()], T.INT32, [[7]], 1),
    Op.REDUCE_ALL: ([b8(), const(I32, [0]), const(T.BOOL, False)], B8, [[True]], [True]),
    Op.REDUCE_ANY: ([b8(), const(I32, [0]), const(T.BOOL, False)], B8, [[False]], [False]),
}


@pytest.mark.parametrize("op", sorted(CASES), ids=lambda op: op.name)
def test_int32_and_bool8_single_element(op):
    inputs, out_type, values, expected = CASES[op]
    got = run1(op, inputs, [output(out_type)], values)
    assert got.tolist() == expected


# Signatures tried on every registered operation: each one an operation accepts must run.
PROBES = [
    ([i32()], I32), ([b8()], B8), ([i32()], B8),
    ([i32(), i32()], I32), ([i32(), i32()], B8), ([b8(), b8()], B8),
    ([i32(), i32(), const(T.INT32, NONE)], I32),
    ([b8(), i32(), i32()], I32),
    ([i32(), const(T.INT32, 0)], I32),
    ([i32(), const(I32, [0]), const(T.BOOL, False)], I32),
    ([b8(), const(I32, [0]), const(T.BOOL, False)], B8),
]
PROBE_VALUES = {I32: [3], B8: [True]}


def _accepts(op, inputs, out_type) -> bool:
    try:
        ctx = context(op, inputs, [output(out_type)])
        definition(op).validate(ctx)
        definition(op).infer_shapes(ctx, [tuple(o.dimensions) if o.dimensions else
                                          (None if o.type not in (T.INT32, T.BOOL) else ())
                                          for o in ctx.inputs])
        return True
    except ValidationError:
        return False


@pytest.mark.parametrize("op", sorted(supported_types()), ids=lambda op: Op(op).name)
def test_every_registered_operation_runs_single_element_int32_bool8(op):
    accepted = [(inputs, out_type) for inputs, out_type in PROBES if _accepts(op, inputs, out_type)]
    if not accepted:
        pytest.skip(f"{Op(op).name} takes no TENSOR_INT32 [1] / TENSOR_BOOL8 [1] signature probed here")
    for inputs, out_type in accepted:
        values = [PROBE_VALUES[o.type] for o in inputs if not o.is_constant]
        result = run1(op, inputs, [output(out_type)], values)
        assert result.dtype == (np.int32 if out_type == I32 else np.bool_)
