"""What the mutations know about particular operations, all of it here.

These tables stand in for the operation signatures of the driver's registry: which
operation can follow an operand of a type (with the parameters and output quantization it
needs), which operations take the same operands, which operand types convert into one
another, which inputs of IF may be exchanged. Reading the signatures instead replaces this
module alone.
"""
from __future__ import annotations

from driver.hal import OperandType as T, OperationType as Op

from ..codec import OperandSpec, SubgraphSpec
from .blocks import Rng, int32_constant, scalar_constant

FLOAT_TENSORS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
QUANT8_TENSORS = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)

_UNARY_FLOAT = (Op.RELU, Op.RELU1, Op.RELU6, Op.LOGISTIC, Op.TANH, Op.ABS, Op.FLOOR, Op.NEG,
                Op.EXP, Op.SQRT, Op.RSQRT, Op.SIN, Op.LOG, Op.HARD_SWISH)
_UNARY_QUANT = (Op.RELU, Op.RELU1, Op.RELU6, Op.HARD_SWISH, Op.LOGISTIC, Op.TANH)
#: Output quantization LOGISTIC and TANH require: (scale, zero point) per type.
_FIXED_OUTPUT_QUANT = {
    (Op.LOGISTIC, T.TENSOR_QUANT8_ASYMM): (1 / 256, 0),
    (Op.LOGISTIC, T.TENSOR_QUANT8_ASYMM_SIGNED): (1 / 256, -128),
    (Op.TANH, T.TENSOR_QUANT8_ASYMM): (1 / 128, 128),
    (Op.TANH, T.TENSOR_QUANT8_ASYMM_SIGNED): (1 / 128, 0),
}
_BINARY_WITH_ACTIVATION = (Op.ADD, Op.SUB, Op.MUL)
_BINARY_PLAIN = (Op.MAXIMUM, Op.MINIMUM)

#: An operation planned on an operand: (operation type, input operand indexes, output scale,
#: output zero point); None where no operation fits the operand.
Plan = tuple[int, list[int], float, int] | None


def unary_plan(sg: SubgraphSpec, index: int, o: OperandSpec, rng: Rng) -> Plan:
    """UNARY(o), its output of o's type and shape (parameter operands added to ``sg``)."""
    if o.type in FLOAT_TENSORS:
        choice = rng.choice(_UNARY_FLOAT + (Op.ELU, Op.SOFTMAX))
        if choice == Op.ELU:
            alpha = scalar_constant(sg, T.FLOAT16 if o.type == T.TENSOR_FLOAT16 else T.FLOAT32,
                                    rng.choice([1.0, 0.5]))
            return choice, [index, alpha], o.scale, o.zeroPoint
        if choice == Op.SOFTMAX:
            if not o.dimensions:
                return None
            beta = scalar_constant(sg, T.FLOAT16 if o.type == T.TENSOR_FLOAT16 else T.FLOAT32,
                                   1.0)
            return choice, [index, beta], o.scale, o.zeroPoint
        return choice, [index], o.scale, o.zeroPoint
    if o.type in QUANT8_TENSORS:
        choice = rng.choice(_UNARY_QUANT)
        scale, zero_point = _FIXED_OUTPUT_QUANT.get((choice, o.type), (o.scale, o.zeroPoint))
        return choice, [index], scale, zero_point
    if o.type == T.TENSOR_INT32:
        return rng.choice((Op.ABS, Op.NEG)), [index], o.scale, o.zeroPoint
    if o.type == T.TENSOR_BOOL8:
        return Op.LOGICAL_NOT, [index], o.scale, o.zeroPoint
    return None


def binary_plan(sg: SubgraphSpec, index: int, o: OperandSpec, rng: Rng) -> Plan:
    """BINARY(o, o), its output of o's type and shape (the fused activation added to ``sg``)."""
    if o.type == T.TENSOR_BOOL8:
        return rng.choice((Op.LOGICAL_AND, Op.LOGICAL_OR)), [index, index], 0.0, 0
    if o.type not in FLOAT_TENSORS + QUANT8_TENSORS + (T.TENSOR_INT32,):
        return None
    if rng.random() < 0.3:
        return rng.choice(_BINARY_PLAIN), [index, index], o.scale, o.zeroPoint
    division = (Op.DIV,) if o.type in FLOAT_TENSORS else ()
    choice = rng.choice(_BINARY_WITH_ACTIVATION + division)
    activation = 0 if o.type == T.TENSOR_INT32 else rng.randrange(4)
    act = int32_constant(sg, activation)
    return choice, [index, index, act], o.scale, o.zeroPoint


_SIMILAR_OPERATIONS = [
    (Op.ADD, Op.SUB, Op.MUL, Op.DIV),
    (Op.MAXIMUM, Op.MINIMUM, Op.POW),
    (Op.EQUAL, Op.NOT_EQUAL, Op.LESS, Op.LESS_EQUAL, Op.GREATER, Op.GREATER_EQUAL),
    (Op.LOGICAL_AND, Op.LOGICAL_OR),
    (Op.RELU, Op.RELU1, Op.RELU6, Op.LOGISTIC, Op.TANH, Op.ABS, Op.FLOOR, Op.NEG, Op.EXP,
     Op.SQRT, Op.RSQRT, Op.SIN, Op.LOG, Op.HARD_SWISH, Op.DEQUANTIZE, Op.QUANTIZE, Op.CAST),
    (Op.REDUCE_MAX, Op.REDUCE_MIN, Op.REDUCE_PROD, Op.REDUCE_SUM, Op.MEAN),
    (Op.REDUCE_ALL, Op.REDUCE_ANY),
    (Op.ARGMAX, Op.ARGMIN),
    (Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D, Op.L2_POOL_2D),
    (Op.RESIZE_BILINEAR, Op.RESIZE_NEAREST_NEIGHBOR),
    (Op.SPACE_TO_DEPTH, Op.DEPTH_TO_SPACE),
    (Op.SPACE_TO_BATCH_ND, Op.BATCH_TO_SPACE_ND),
    (Op.PAD, Op.PAD_V2),
    (Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.GROUPED_CONV_2D, Op.TRANSPOSE_CONV_2D),
    (Op.SQUEEZE, Op.EXPAND_DIMS, Op.RESHAPE),
    (Op.SLICE, Op.STRIDED_SLICE),
    (Op.GATHER, Op.TILE),
    (Op.SOFTMAX, Op.LOG_SOFTMAX, Op.L2_NORMALIZATION),
    (Op.IF, Op.WHILE),
]
#: Each operation type of a family -> its family (mostly operations taking the same operands).
SIMILAR = {t: group for group in _SIMILAR_OPERATIONS for t in group}

#: Operand type conversions applied to a whole case, one family at a time: float32 <->
#: float16 with their scalars, quant8 asymm <-> signed.
RETYPE_FAMILIES = [
    {T.TENSOR_FLOAT32: T.TENSOR_FLOAT16, T.FLOAT32: T.FLOAT16},
    {T.TENSOR_FLOAT16: T.TENSOR_FLOAT32, T.FLOAT16: T.FLOAT32},
    {T.TENSOR_QUANT8_ASYMM: T.TENSOR_QUANT8_ASYMM_SIGNED},
    {T.TENSOR_QUANT8_ASYMM_SIGNED: T.TENSOR_QUANT8_ASYMM},
]

IF = Op.IF
#: IF's inputs after its condition: the two branch subgraphs (exchanging them keeps it valid).
IF_BRANCH_INPUTS = (1, 2)
