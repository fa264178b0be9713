"""EMBEDDING_LOOKUP and HASHTABLE_LOOKUP: rows of a values tensor picked by a 1-D
TENSOR_INT32 of lookups; the output is [lookups, values.shape[1:]...] and keeps the
values' quantization.

EMBEDDING_LOOKUP: each lookup is a row index, which must lie within the rows (the
execution fails otherwise). HASHTABLE_LOOKUP: each lookup is searched among the keys, a
1-D TENSOR_INT32 with one key per row that must be strictly increasing (the reference
binary-searches it); a miss gives a row of zeros. Its second output, hits, is a
TENSOR_QUANT8_ASYMM (scale 1, zero point 0) holding 1 for a hit and 0 for a miss.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType as Op
from .common import DATA_TENSORS, check_same_quantization, merge_dims
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Example, ExampleOperand, Signature, same_as, tensor

LOOKUPS = tensor((T.TENSOR_INT32,), rank=(1, 1), name="lookups")


def lookup_shape(lookups: Shape, values: Shape) -> Shape:
    return None if values is None else (lookups[0] if lookups else 0,) + tuple(values[1:])


def check_output_quantization(ctx: OperationContext, values_input: int) -> None:
    check_same_quantization(ctx, ctx.outputs[0], ctx.inputs[values_input], "output 0",
                            f"input {values_input} (values)")


# --- EMBEDDING_LOOKUP ------------------------------------------------------------------------

EMBEDDING_VALUES = 1
EMBEDDING_SIGNATURES = (Signature(
    inputs=(LOOKUPS, tensor(DATA_TENSORS, rank=(2, None), name="values")),
    outputs=(same_as(EMBEDDING_VALUES),)),)


def check_rows(ctx: OperationContext, lookups: np.ndarray, rows: int) -> None:
    check(lookups.size == 0 or (int(lookups.min()) >= 0 and int(lookups.max()) < rows),
          "{}: input 0 (lookups) must lie in [0, {})", ctx.name, rows)


def check_embedding(ctx: OperationContext) -> None:
    check_output_quantization(ctx, EMBEDDING_VALUES)
    lookups, rows = ctx.inputs[0].value, ctx.inputs[EMBEDDING_VALUES].dimensions[:1]
    if lookups is not None and rows and rows[0]:
        check_rows(ctx, lookups, rows[0])


def build_embedding(ctx: OperationContext) -> Kernel:
    def kernel(lookups, values):
        check_rows(ctx, lookups, values.shape[0])
        return (values[lookups],)
    return kernel


#: Lookups must be valid row indices, which generated values rarely are.
EMBEDDING_EXAMPLES = (Example(inputs=(ExampleOperand(T.TENSOR_INT32, (3,), value=[2, 0, 2]),
                                      ExampleOperand(T.TENSOR_QUANT8_ASYMM_SIGNED, (3, 2, 2), scale=0.5,
                                                     zero_point=-1)),
                              outputs=((T.TENSOR_QUANT8_ASYMM_SIGNED, 0.5, -1),)),)

register(OperationDef(Op.EMBEDDING_LOOKUP, EMBEDDING_SIGNATURES,
                      lambda ctx, shapes: [lookup_shape(*shapes)], build_embedding, check_embedding,
                      EMBEDDING_EXAMPLES))


# --- HASHTABLE_LOOKUP ------------------------------------------------------------------------

KEYS, HASHTABLE_VALUES = 1, 2
HITS = replace(tensor((T.TENSOR_QUANT8_ASYMM,), name="hits"),
               quantization=((T.TENSOR_QUANT8_ASYMM, 1.0, 0),))
HASHTABLE_SIGNATURES = (Signature(
    inputs=(LOOKUPS, tensor((T.TENSOR_INT32,), rank=(1, 1), name="keys"),
            tensor((T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM), rank=(1, None), name="values")),
    outputs=(same_as(HASHTABLE_VALUES), HITS)),)


def check_keys(ctx: OperationContext, keys: np.ndarray) -> None:
    check(np.all(keys[1:] > keys[:-1]), "{}: input 1 (keys) must be strictly increasing", ctx.name)


def check_hashtable(ctx: OperationContext) -> None:
    check_output_quantization(ctx, HASHTABLE_VALUES)
    keys = ctx.inputs[KEYS].value
    if keys is not None:
        check_keys(ctx, keys)


def infer_hashtable(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    lookups, keys, values = shapes
    if keys is not None and values is not None:
        merge_dims(ctx, keys[0], values[0], "input 1 (keys) and input 2 (values) rows")
    return [lookup_shape(lookups, values), (lookups[0],) if lookups else (0,)]


def build_hashtable(ctx: OperationContext) -> Kernel:
    def kernel(lookups, keys, values):
        check(keys.shape[0] == values.shape[0], "{}: {} keys for {} rows of input 2 (values)",
              ctx.name, keys.shape[0], values.shape[0])
        check_keys(ctx, keys)
        if keys.size == 0:
            return np.zeros(lookups.shape + values.shape[1:], values.dtype), np.zeros(lookups.shape, np.uint8)
        rows = np.minimum(np.searchsorted(keys, lookups), keys.size - 1)
        hits = keys[rows] == lookups
        output = np.where(hits.reshape(hits.shape + (1,) * (values.ndim - 1)), values[rows], values.dtype.type(0))
        return output, hits.astype(np.uint8)
    return kernel


#: Sorted keys, a hit and a miss (generated keys are rarely sorted).
HASHTABLE_EXAMPLES = (Example(inputs=(ExampleOperand(T.TENSOR_INT32, (3,), value=[7, -3, 2]),
                                      ExampleOperand(T.TENSOR_INT32, (2,), constant=[-3, 7]),
                                      ExampleOperand(T.TENSOR_FLOAT32, (2, 2))),
                              outputs=((T.TENSOR_FLOAT32, 0.0, 0), (T.TENSOR_QUANT8_ASYMM, 1.0, 0))),)

register(OperationDef(Op.HASHTABLE_LOOKUP, HASHTABLE_SIGNATURES, infer_hashtable, build_hashtable,
                      check_hashtable, HASHTABLE_EXAMPLES))
