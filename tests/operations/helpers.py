"""Building operation contexts directly (no Model) and running one operation through
validate -> infer_shapes -> build -> kernel, as the executor would."""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np
import pytest

from driver.errors import ValidationError
from driver.hal.enums import OperandLifeTime as L, OperandType as T, OperationType
from driver.operations.common import STORAGE_DTYPE
from driver.operations.registry import OperandInfo, OperationContext, OperationDef, lookup

SCALAR_TYPES = (T.INT32, T.FLOAT32, T.FLOAT16, T.BOOL, T.UINT32)
F32, F16, I32, B8 = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, T.TENSOR_BOOL8
Q8, QS8 = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED

#: A run-time value for an input the request omits (RequestArgument.hasNoValue).
OMITTED = object()


def tensor(operand_type: int, dims: Sequence[int] = (), scale: float = 0.0,
           zero_point: int = 0) -> OperandInfo:
    """A run-time tensor (a subgraph input): its value comes with each run."""
    return OperandInfo(index=-1, type=operand_type, dimensions=tuple(dims), scale=scale,
                       zeroPoint=zero_point, lifetime=L.SUBGRAPH_INPUT, value=None)


def const(operand_type: int, value, dims: Sequence[int] | None = None, scale: float = 0.0,
          zero_point: int = 0) -> OperandInfo:
    """A constant tensor or scalar; the value is stored in the type's storage dtype."""
    array = np.asarray(value, dtype=STORAGE_DTYPE[operand_type])
    if operand_type in SCALAR_TYPES:
        array = array.reshape(())
        dims = ()
    elif dims is not None:
        array = array.reshape(dims)
    array.flags.writeable = False
    return OperandInfo(index=-1, type=operand_type, dimensions=tuple(array.shape) if dims is None else tuple(dims),
                       scale=scale, zeroPoint=zero_point, lifetime=L.CONSTANT_COPY, value=array)


def scalar(operand_type: int) -> OperandInfo:
    """A scalar only known at run time."""
    return tensor(operand_type)


def omitted(operand_type: int) -> OperandInfo:
    return OperandInfo(index=-1, type=operand_type, dimensions=(), scale=0.0, zeroPoint=0,
                       lifetime=L.NO_VALUE, value=None)


def output(operand_type: int, dims: Sequence[int] = (), scale: float = 0.0,
           zero_point: int = 0) -> OperandInfo:
    return dataclasses.replace(tensor(operand_type, dims, scale, zero_point),
                               lifetime=L.SUBGRAPH_OUTPUT)


def context(op: OperationType, inputs: Sequence[OperandInfo],
            outputs: Sequence[OperandInfo], relaxed: bool = False) -> OperationContext:
    numbered = [dataclasses.replace(o, index=i) for i, o in enumerate([*inputs, *outputs])]
    return OperationContext(type=op, index=0, inputs=tuple(numbered[:len(inputs)]),
                            outputs=tuple(numbered[len(inputs):]), relaxed=relaxed)


def definition(op: OperationType) -> OperationDef:
    found = lookup(op)
    assert found is not None, f"{op.name} is not registered"
    return found


def declared_shape(operand: OperandInfo):
    if operand.type in SCALAR_TYPES:
        return ()
    return tuple(operand.dimensions) if operand.dimensions else None


def validate(op: OperationType, inputs, outputs) -> OperationContext:
    ctx = context(op, inputs, outputs)
    definition(op).validate(ctx)
    return ctx


def rejects(op: OperationType, inputs, outputs, match: str | None = None) -> None:
    """validate (or prepare-time shape inference) refuses the signature."""
    ctx = context(op, inputs, outputs)
    with pytest.raises(ValidationError, match=match):
        definition(op).validate(ctx)
        infer(op, ctx)


def infer(op: OperationType, ctx: OperationContext, shapes=None):
    if shapes is None:
        shapes = [declared_shape(o) for o in ctx.inputs]
    return definition(op).infer_shapes(ctx, shapes)


def run(op: OperationType, inputs: Sequence[OperandInfo], outputs: Sequence[OperandInfo],
        values: Sequence) -> tuple[np.ndarray, ...]:
    """Validate, infer at prepare time, build, then run with ``values`` for the non-constant
    inputs (in order; OMITTED for one the request leaves out). Checks that run-time
    inference agrees with what the kernel made."""
    ctx = validate(op, inputs, outputs)
    infer(op, ctx)
    kernel = definition(op).build(ctx)
    supplied = iter(values)
    args = []
    for operand in ctx.inputs:
        if operand.is_constant:
            args.append(operand.value)
        elif operand.is_omitted:
            args.append(None)
        else:
            given = next(supplied, None)
            assert given is not None, f"no value for run-time input {operand.index}"
            args.append(None if given is OMITTED else np.asarray(given, dtype=STORAGE_DTYPE[operand.type]))
    assert next(supplied, None) is None, "more values than run-time inputs"
    run_shapes = infer(op, ctx, [None if a is None else a.shape for a in args])
    with np.errstate(all="ignore"):   # as during an execution, which sets it once for the run
        results = kernel(*args)
    assert isinstance(results, tuple) and len(results) == len(ctx.outputs)
    for result, out, shape in zip(results, ctx.outputs, run_shapes):
        assert isinstance(result, np.ndarray), f"{op.name} returned {type(result)}"
        assert result.dtype == STORAGE_DTYPE[out.type], f"{op.name}: dtype {result.dtype}"
        if shape is not None:
            assert len(shape) == result.ndim and all(d in (0, r) for d, r in zip(shape, result.shape)), \
                f"{op.name}: inferred {shape} but computed {result.shape}"
    return results


def run1(op: OperationType, inputs, outputs, values) -> np.ndarray:
    return run(op, inputs, outputs, values)[0]


def quantize(real, scale: float, zero_point: int, dtype) -> np.ndarray:
    """Test-side quantization: numpy's own rounding (halves to even) is avoided by adding
    a half and flooring, which rounds positive halves up; tests compare within 1."""
    info = np.iinfo(dtype)
    return np.clip(np.floor(np.asarray(real) / scale + 0.5) + zero_point, info.min, info.max).astype(dtype)


def dequantize(q, scale: float, zero_point: int) -> np.ndarray:
    return (np.asarray(q, dtype=np.float64) - zero_point) * scale
