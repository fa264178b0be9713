"""Whether an execution's outputs match a test model's reference values, by the CTS's
accuracy criteria (conformance/FORMAT.md; the tolerances are hal_client/accuracy.py's,
which the fuzz harness shares).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from driver.hal import OperandType, OperationType
from ..accuracy import Tolerance, compare_values, tolerance_for as type_tolerance
from .loader import OPERAND_DTYPE, Example, TestOperand

T = OperandType


def uses_float16_criterion(example: Example) -> bool:
    """float32 outputs are held to float16 accuracy when the model allows relaxed
    computation or computes anything in float16."""
    return example.isRelaxed or example.has_operand_type(T.TENSOR_FLOAT16)


def tolerance_for(example: Example, operand_type: OperandType) -> Tolerance:
    return type_tolerance(operand_type, float16_criterion=uses_float16_criterion(example),
                          loose_quant8="mobilenet" in example.name)


def decode_output(raw: bytes, spec: TestOperand) -> np.ndarray:
    """An output buffer as a flat array of as many elements as the reference has. Booleans
    are read as bytes so that a byte other than 0 or 1 does not pass for True."""
    dtype = OPERAND_DTYPE[spec.type]
    if dtype.kind == "b":
        dtype = np.dtype(np.uint8)
    return np.frombuffer(raw, dtype=dtype, count=spec.values.size)


def check_outputs(example: Example, raw_outputs: Sequence[bytes]) -> list[str]:
    """One message per main output that does not match its reference (empty: all match).
    Ignored outputs, outputs without a reference and zero-sized outputs are not compared."""
    if example.expectedMultinomialDistributionTolerance > 0:
        return check_multinomial(example, raw_outputs)
    messages = []
    for i, (spec, raw) in enumerate(zip(example.main.outputs, raw_outputs, strict=True)):
        if spec.isIgnored or spec.values is None or spec.values.size == 0:
            continue
        label = f"output {i} ({spec.name or spec.type.name})"
        if len(raw) < spec.byte_size:
            messages.append(f"{label}: buffer of {len(raw)} bytes, expected {spec.byte_size}")
            continue
        problem = compare_values(spec.values, decode_output(raw, spec),
                                 tolerance_for(example, spec.type))
        if problem:
            messages.append(f"{label}: {problem}")
    return messages


def check_multinomial(example: Example, raw_outputs: Sequence[bytes]) -> list[str]:
    """RANDOM_MULTINOMIAL draws samples, so its reference is a distribution: in each batch
    row, the frequency of every class among the samples must be within the tolerance of
    that class's probability, softmax(logits)."""
    main = example.main
    if not (len(main.operations) == 1
            and main.operations[0].type == OperationType.RANDOM_MULTINOMIAL
            and len(main.inputs) >= 1 and len(main.outputs) == 1
            and len(main.inputs[0].dimensions) == 2 and len(main.outputs[0].dimensions) == 2):
        return ["a multinomial tolerance is given, but the model is not one RANDOM_MULTINOMIAL "
                "with 2-D logits and 2-D samples"]
    logits_spec, samples_spec = main.inputs[0], main.outputs[0]
    batches, classes = logits_spec.dimensions
    samples = decode_output(raw_outputs[0], samples_spec).astype(np.int64)
    samples = samples.reshape(batches, -1)
    if samples.shape[1] == 0:
        return ["output 0: no samples drawn"]
    if samples.size and (samples.min() < 0 or samples.max() >= classes):
        return [f"output 0: sampled class {samples.min()}..{samples.max()} outside [0, {classes})"]
    # Count every (batch, class) pair at once by flattening the pair to one index.
    flat = (samples + np.arange(batches)[:, None] * classes).ravel()
    frequencies = np.bincount(flat, minlength=batches * classes).reshape(batches, classes)
    frequencies = frequencies / samples.shape[1]
    logits = logits_spec.values.astype(np.float64).reshape(batches, classes)
    weights = np.exp(logits - logits.max(axis=1, keepdims=True))
    probabilities = weights / weights.sum(axis=1, keepdims=True)
    error = np.abs(frequencies - probabilities)
    tolerance = example.expectedMultinomialDistributionTolerance
    if error.max() <= tolerance:
        return []
    batch, klass = np.unravel_index(np.argmax(error), error.shape)
    return [f"output 0: class {klass} of batch {batch} drawn with frequency "
            f"{frequencies[batch, klass]:.4f}, probability {probabilities[batch, klass]:.4f} "
            f"(tolerance {tolerance})"]
