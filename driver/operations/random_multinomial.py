"""RANDOM_MULTINOMIAL: ``sample_count`` class indices drawn per batch row of unnormalized
log-probabilities [batches, classes] (float16 widened to float32).

As in the reference: the random stream is Philox4x32-10 keyed by the first seed and with
the second seed in the high half of its 128-bit counter (each sign-extended to 64 bits;
two zero seeds are replaced by random ones); every sample takes two 32-bit outputs
(x0, x1) as the double ``1.x`` with mantissa bits (x0 & 0xfffff) << 32 | x1, minus 1,
samples of row 0 first. A row's non-finite logits get probability 0; the others'
``exp(logit - max)`` summed in double precision form a cumulative distribution, and a
sample is the first class whose cumulative sum exceeds ``u * total`` (so a row of no
finite logit gives ``classes``).
"""
from __future__ import annotations

import secrets
from typing import Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from ..limits import SCRATCH_BYTES_PER_CHUNK, check_shape, checkpoint
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Example, ExampleOperand, Range, Signature, scalar, tensor

INPUT, SAMPLES, SEEDS = range(3)
SAMPLES_OPERAND = scalar(T.INT32, Range(low=1), "sample count")
SIGNATURES = (Signature(inputs=(tensor((T.TENSOR_FLOAT16, T.TENSOR_FLOAT32), rank=(2, 2), name="logits"),
                                SAMPLES_OPERAND, tensor((T.TENSOR_INT32,), rank=(1, 1), name="seeds")),
                        outputs=(tensor((T.TENSOR_INT32,)),)),)

_PHILOX_MULTIPLIERS = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
_PHILOX_KEY_STEPS = (0x9E3779B9, 0xBB67AE85)
_LOW32 = np.uint64(0xFFFFFFFF)


def philox_4x32_10(blocks: int, key: tuple[int, int], counter_high: tuple[int, int],
                   first: int = 0) -> np.ndarray:
    """Outputs ``first`` to ``first + blocks`` of Philox4x32-10 with this key, counting from
    (0, 0, *counter_high): uint32 [blocks, 4], computed for all counters at once."""
    index = np.arange(first, first + blocks, dtype=np.uint64)
    counter = [index & _LOW32, index >> np.uint64(32),
               np.full(blocks, counter_high[0], np.uint64), np.full(blocks, counter_high[1], np.uint64)]
    k0, k1 = key
    for round_ in range(10):
        if round_:
            k0, k1 = (k0 + _PHILOX_KEY_STEPS[0]) & 0xFFFFFFFF, (k1 + _PHILOX_KEY_STEPS[1]) & 0xFFFFFFFF
        product0 = _PHILOX_MULTIPLIERS[0] * counter[0]
        product1 = _PHILOX_MULTIPLIERS[1] * counter[2]
        counter = [(product1 >> np.uint64(32)) ^ counter[1] ^ np.uint64(k0), product1 & _LOW32,
                   (product0 >> np.uint64(32)) ^ counter[3] ^ np.uint64(k1), product0 & _LOW32]
    return np.stack(counter, axis=1).astype(np.uint32)


def uniform_doubles(count: int, seed: int, seed2: int, first: int = 0) -> np.ndarray:
    """Doubles ``first`` to ``first + count`` in [0, 1) of the reference's stream of these
    seeds. Each takes two 32-bit words, a Philox block four: a run of them starting
    anywhere is computed from the blocks it covers alone."""
    seed, seed2 = seed & (2**64 - 1), seed2 & (2**64 - 1)      # sign-extended, as int64
    skipped = 2 * first % 4                                      # words of the first block before it
    words = philox_4x32_10((skipped + 2 * count + 3) // 4, (seed & 0xFFFFFFFF, seed >> 32),
                           (seed2 & 0xFFFFFFFF, seed2 >> 32), 2 * first // 4)
    words = words.reshape(-1)[skipped:skipped + 2 * count].astype(np.uint64)
    bits = (np.uint64(1023) << np.uint64(52)) | ((words[0::2] & np.uint64(0xFFFFF)) << np.uint64(32)) | words[1::2]
    return bits.view(np.float64) - 1.0


def upper_bound(cumulative: np.ndarray, rows: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """std::upper_bound of each target in its row (``rows``) of ``cumulative`` (rows
    non-decreasing): the count of entries not above it, by bisection on every target at once."""
    last = max(cumulative.shape[1] - 1, 0)
    low = np.zeros(targets.shape, np.int64)
    high = np.full(targets.shape, cumulative.shape[1], np.int64)
    while (active := low < high).any():
        middle = (low + high) // 2
        above = cumulative[rows, np.minimum(middle, last)] <= targets
        low = np.where(active & above, middle + 1, low)
        high = np.where(active & ~above, middle, high)
    return low


def cumulative_weights(x: np.ndarray) -> np.ndarray:
    """Per row of logits (float32), the cumulative sums of exp(logit - the row's max) in
    double precision, non-finite logits weighing 0."""
    finite = np.isfinite(x)
    lowest = np.finfo(np.float32).min
    row_max = np.max(np.where(finite, x, lowest), axis=1, initial=lowest)
    # In place: one double per logit.
    weights = x.astype(np.float64)
    weights -= row_max[:, None].astype(np.float64)
    np.exp(weights, out=weights)
    weights[~finite] = 0.0
    return np.cumsum(weights, axis=1, out=weights)


#: Samples drawn at once: drawing takes some 100 bytes of scratch a sample (Philox's
#: 64-bit words, the doubles, the bisection's bounds), so the draws are made in chunks.
SAMPLES_PER_CHUNK = SCRATCH_BYTES_PER_CHUNK // 128


def draw(logits: np.ndarray, samples: int, seed: int, seed2: int) -> np.ndarray:
    """The samples [batches, samples], drawn a chunk at a time (the stream is the same:
    sample k of the flattened output takes double k), the rows' cumulative weights a few
    rows at a time."""
    batches, classes = logits.shape
    out = np.empty(batches * samples, np.int32)
    rows_per_chunk = max(1, SCRATCH_BYTES_PER_CHUNK // (8 * max(1, classes)))
    for first_row in range(0, batches, rows_per_chunk):
        checkpoint()
        last_row = min(first_row + rows_per_chunk, batches)
        cumulative = cumulative_weights(logits[first_row:last_row].astype(np.float32, copy=False))
        totals = cumulative[:, -1] if classes else np.zeros(last_row - first_row)
        for start in range(first_row * samples, last_row * samples, SAMPLES_PER_CHUNK):
            checkpoint()
            stop = min(start + SAMPLES_PER_CHUNK, last_row * samples)
            rows = np.arange(start, stop) // samples - first_row
            targets = uniform_doubles(stop - start, seed, seed2, start) * totals[rows]
            out[start:stop] = upper_bound(cumulative, rows, targets)
    return out.reshape(batches, samples)


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    logits, seeds = shapes[INPUT], shapes[SEEDS]
    if seeds is not None and seeds[0]:
        check_seed_count(ctx, seeds[0])
    return [((logits[0] if logits else 0), ctx.scalar(SAMPLES) or 0)]


def check_seed_count(ctx: OperationContext, count: int) -> None:
    check(count == 2, "{}: input 2 (seeds) must hold 2 seeds, has {}", ctx.name, count)


def build(ctx: OperationContext) -> Kernel:
    def kernel(logits, sample_count, seeds):
        samples = int(sample_count)
        SAMPLES_OPERAND.check_value(ctx, SAMPLES, samples)
        check_seed_count(ctx, seeds.shape[0])
        batches = logits.shape[0]
        check_shape((batches, samples), 4, f"{ctx.name}: output 0")
        seed, seed2 = int(seeds[0]), int(seeds[1])
        if seed == 0 and seed2 == 0:
            seed, seed2 = secrets.randbits(64), secrets.randbits(64)
        return (draw(logits, samples, seed, seed2),)
    return kernel


#: A class of probability 0 (a -inf logit), and negative seeds (sign-extended).
EXAMPLES = (Example(inputs=(ExampleOperand(T.TENSOR_FLOAT32, (2, 3), value=[[0.5, -np.inf, 1.0], [2.0, 0.0, 1.0]]),
                            ExampleOperand(T.INT32, constant=4), ExampleOperand(T.TENSOR_INT32, (2,), constant=[37, -42])),
                    outputs=((T.TENSOR_INT32, 0.0, 0),)),)

register(OperationDef(OperationType.RANDOM_MULTINOMIAL, SIGNATURES, infer_shapes, build, None, EXAMPLES))
