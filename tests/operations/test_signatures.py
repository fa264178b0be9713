"""The signatures as data (signatures.py) and the one checker compiled from them: every
type assignment a signature lists is accepted, a near miss (one type, rank, count or value
off) is refused with a message naming the operation and the operand."""
from __future__ import annotations

import dataclasses

import pytest

from driver.errors import ValidationError
from driver.hal.enums import OperandType as T, OperationType as Op
from driver.operations.registry import definitions, supported_types
from driver.operations.signatures import (Range, Signature, SignatureTable, concrete_types,
                                          same_as, scalar, tensor)
from tests.operations.helpers import (const, context, definition, omitted, output,
                                      tensor as tensor_info)


def operands_of(types, outputs=None):
    """Run-time operands (unknown shape, positive scale) of the given types; ``outputs``:
    they are outputs, of these signature operands (whose fixed quantization they take)."""
    if outputs is None:
        return [tensor_info(t, (), 1.0, 0) for t in types]
    return [output(t, (), *(o.fixed_quantization(t) or (1.0, 0))) for t, o in zip(types, outputs)]


def test_definitions_cover_every_supported_operation():
    found = definitions()
    assert [d.type for d in found] == sorted(supported_types())
    assert all(d.signatures for d in found)
    optional = {d.type: d.optional_inputs for d in found if d.optional_inputs}
    cell = {1, 5, 9, 10, 11, 12, 16, 17}       # an LSTM cell's CIFG, peephole, projection weights
    assert optional == {Op.SQUEEZE: frozenset({1}), Op.TRANSPOSE: frozenset({1}),
                        Op.LSH_PROJECTION: frozenset({2}), Op.SVDF: frozenset({3}),
                        Op.BIDIRECTIONAL_SEQUENCE_RNN: frozenset({9, 10, 11}),
                        Op.LSTM: frozenset(cell | {23, 24, 25, 26}),
                        Op.UNIDIRECTIONAL_SEQUENCE_LSTM: frozenset(cell | {24, 25, 26, 27}),
                        Op.BIDIRECTIONAL_SEQUENCE_LSTM: frozenset(
                            cell | {k + 17 for k in cell} | set(range(39, 48)) | set(range(53, 61))),
                        Op.QUANTIZED_LSTM: frozenset(cell | {20, 21, 22, 23})}


@pytest.mark.parametrize("definition", definitions(), ids=lambda d: d.type.name)
def test_every_listed_assignment_is_accepted_and_a_wrong_type_refused(definition):
    for signature in definition.signatures:
        for in_types, out_types in concrete_types(signature):
            outputs = signature.operands_for(len(in_types), len(out_types))[1]
            ctx = context(definition.type, operands_of(in_types), operands_of(out_types, outputs))
            definition.table.check(ctx)
            # A near miss: input 0 of a type no signature takes at that position.
            wrong = next(t for t in (T.TENSOR_QUANT16_SYMM, T.UINT32, T.TENSOR_BOOL8, T.INT32)
                         if not any(types[0][0] == t for s in definition.signatures
                                    for types in concrete_types(s, len(in_types), len(out_types))))
            bad = context(definition.type, operands_of((wrong, *in_types[1:])),
                          operands_of(out_types, outputs))
            with pytest.raises(ValidationError, match=rf"\({definition.type.name}\): input 0 "):
                definition.table.check(bad)


def test_counts_types_ranks_and_values_name_the_operand():
    add = definition(Op.ADD)
    f32 = [tensor_info(T.TENSOR_FLOAT32, [2]), tensor_info(T.TENSOR_FLOAT32, [2])]
    cases = [
        (f32, [output(T.TENSOR_FLOAT32)], r"\(ADD\): expected 3 inputs, got 2"),
        ([*f32, const(T.INT32, 0)], [output(T.TENSOR_FLOAT32)] * 2, "expected 1 outputs, got 2"),
        ([f32[0], tensor_info(T.TENSOR_INT32, [2]), const(T.INT32, 0)], [output(T.TENSOR_FLOAT32)],
         r"input 1 \(operand 1\) has type TENSOR_INT32, expected TENSOR_FLOAT32"),
        ([f32[0], tensor_info(T.TENSOR_FLOAT32, [1] * 5), const(T.INT32, 0)],
         [output(T.TENSOR_FLOAT32)], r"input 1 \(operand 1\) has rank 5 > 4"),
        ([*f32, const(T.INT32, 7)], [output(T.TENSOR_FLOAT32)],
         r"input 2 \(operand 2\): fused activation 7 is not one of NONE, RELU, RELU1, RELU6"),
        ([*f32, omitted(T.INT32)], [output(T.TENSOR_FLOAT32)], r"input 2 \(operand 2\) has no value"),
    ]
    for inputs, outputs, message in cases:
        with pytest.raises(ValidationError, match=message):
            add.validate(context(Op.ADD, inputs, outputs))


def test_fixed_output_quantization_is_signature_data():
    q8 = tensor_info(T.TENSOR_QUANT8_ASYMM, [2], 0.5, 128)
    for operation, scale, zero_point in ((Op.LOGISTIC, 1 / 256, 0), (Op.TANH, 1 / 128, 128)):
        definition(operation).validate(context(operation, [q8], [
            output(T.TENSOR_QUANT8_ASYMM, [2], scale, zero_point)]))
        with pytest.raises(ValidationError, match=rf"\({operation.name}\): output 0 \(operand 1\) "
                                                  rf"must have scale {scale} and zero point {zero_point}"):
            definition(operation).validate(context(operation, [q8], [
                output(T.TENSOR_QUANT8_ASYMM, [2], 0.5, 128)]))


def test_optional_and_variadic_operands():
    squeeze = definition(Op.SQUEEZE)
    squeeze.validate(context(Op.SQUEEZE, [tensor_info(T.TENSOR_FLOAT32, [1, 2]), omitted(T.TENSOR_INT32)],
                             [output(T.TENSOR_FLOAT32)]))
    with pytest.raises(ValidationError, match="input 0 .* has no value"):
        squeeze.validate(context(Op.SQUEEZE, [omitted(T.TENSOR_FLOAT32), omitted(T.TENSOR_INT32)],
                                 [output(T.TENSOR_FLOAT32)]))
    concatenation = definition(Op.CONCATENATION)
    for count in (1, 2, 5):
        tensors = [tensor_info(T.TENSOR_FLOAT32, [1, 2])] * count
        concatenation.validate(context(Op.CONCATENATION, [*tensors, const(T.INT32, 1)],
                                       [output(T.TENSOR_FLOAT32)]))
    with pytest.raises(ValidationError, match=r"input 2 \(operand 2\) has type TENSOR_FLOAT16"):
        concatenation.validate(context(Op.CONCATENATION, [
            tensor_info(T.TENSOR_FLOAT32), tensor_info(T.TENSOR_FLOAT32), tensor_info(T.TENSOR_FLOAT16),
            const(T.INT32, 0)], [output(T.TENSOR_FLOAT32)]))
    with pytest.raises(ValidationError, match="axis -1 must be non-negative"):
        concatenation.validate(context(Op.CONCATENATION, [tensor_info(T.TENSOR_FLOAT32), const(T.INT32, -1)],
                                       [output(T.TENSOR_FLOAT32)]))
    with pytest.raises(ValidationError, match="expected at least 1 outputs, got 0"):
        definition(Op.SPLIT).validate(context(Op.SPLIT, [tensor_info(T.TENSOR_FLOAT32, [2]),
                                                         const(T.INT32, 0), const(T.INT32, 1)], []))


def test_shape_inference_checks_the_signature_ranks():
    pad = definition(Op.PAD)
    ctx = context(Op.PAD, [tensor_info(T.TENSOR_FLOAT32), tensor_info(T.TENSOR_INT32)], [output(T.TENSOR_FLOAT32)])
    with pytest.raises(ValidationError, match=r"input 1 \(paddings\) has rank 1 < 2"):
        pad.infer_shapes(ctx, [(2,), (2,)])


def test_range_values_and_self_description():
    positive = Range(low=0, low_exclusive=True)
    assert 1e-30 in positive and 0.0 not in positive and float("nan") not in positive
    assert -1 not in Range(low=0) and 5 in Range(low=0, high=5) and 6 not in Range(high=5)
    signature = Signature(inputs=(tensor((T.TENSOR_FLOAT32, T.TENSOR_INT32), rank=(1, 4)), same_as(0),
                                  scalar(T.INT32, frozenset({0, 1}), name="flag")),
                          outputs=(tensor((T.TENSOR_BOOL8,)),))
    assert list(concrete_types(signature)) == [
        ((T.TENSOR_FLOAT32, T.TENSOR_FLOAT32, T.INT32), (T.TENSOR_BOOL8,)),
        ((T.TENSOR_INT32, T.TENSOR_INT32, T.INT32), (T.TENSOR_BOOL8,))]


def test_two_signatures_accepting_the_same_types_are_refused_at_registration():
    one = Signature(inputs=(tensor((T.TENSOR_FLOAT32,)),), outputs=(same_as(0),))
    with pytest.raises(ValueError, match="two signatures"):
        SignatureTable([one, dataclasses.replace(one)])
