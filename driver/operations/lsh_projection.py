"""LSH_PROJECTION: locality-sensitive hashing of the rows of an input into bits.

Each seed of the hash tensor [num_hash, num_bits] (float16 seeds are widened to float32)
gives one bit: every input row (the raw bytes of input[i], whatever its type) is hashed
with the seed's 4 bytes in front, ``Fingerprint64(seed bytes + row bytes)`` (FarmHash's
64-bit fingerprint), the fingerprints are read as signed integers, weighted (by
weight[i] when a weight is given, else 1) and summed in double precision, in row order;
the bit is 1 when the sum is positive.

DENSE (2) outputs the num_hash * num_bits bits. SPARSE (3) and SPARSE_DEPRECATED (1)
output one int32 per hash function, its bits read most significant first; SPARSE adds
``k << num_bits`` to the signature of hash function k so that they do not collide, for
which num_bits + ceil(log2(num_hash)) must not exceed 32. num_bits never exceeds 32.
The weight (1-D, one per input row) is optional for every type, as the HAL documents it;
the reference's executor refuses a dense projection without it and a sparse one with it,
but its hashing weighs the rows whenever the weight is given.
"""
from __future__ import annotations

import enum
import math
from dataclasses import replace
from typing import Optional, Sequence

import numpy as np

from ..errors import check
from ..hal.enums import OperandType as T, OperationType
from ..limits import MAX_HASHED_BYTES, check_cost, checkpoint
from .registry import Kernel, OperationContext, OperationDef, Shape, register
from .signatures import Example, ExampleOperand, Signature, same_as, scalar, tensor


class LshProjectionType(enum.IntEnum):
    SPARSE_DEPRECATED = 1
    DENSE = 2
    SPARSE = 3


HASH, INPUT, WEIGHT, TYPE = range(4)
TYPE_OPERAND = scalar(T.INT32, frozenset(LshProjectionType), "projection type")
MAX_BITS = 32
SIGNATURES = (Signature(
    inputs=(tensor((T.TENSOR_FLOAT16, T.TENSOR_FLOAT32), rank=(2, 2), name="hash"),
            tensor((T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM),
                   rank=(1, None), name="input"),
            replace(same_as(HASH, rank=(1, 1), name="weight"), optional=True),
            TYPE_OPERAND),
    outputs=(tensor((T.TENSOR_INT32,)),)),)


# --- FarmHash Fingerprint64 (farmhashna::Hash64), over many keys of one length at once ----------

_MASK = (1 << 64) - 1
K0, K1, K2 = 0xc3a5c85c97cb3127, 0xb492b66fbe98f273, 0x9ae16a3b2f90404f
U = np.uint64


def _fetch64(keys: np.ndarray, offset: int) -> np.ndarray:
    return np.ascontiguousarray(keys[:, offset:offset + 8]).view("<u8")[:, 0]


def _fetch32(keys: np.ndarray, offset: int) -> np.ndarray:
    return np.ascontiguousarray(keys[:, offset:offset + 4]).view("<u4")[:, 0].astype(U)


def _rotate(v: np.ndarray, shift: int) -> np.ndarray:
    return (v >> U(shift)) | (v << U(64 - shift))


def _shift_mix(v: np.ndarray) -> np.ndarray:
    return v ^ (v >> U(47))


def _hash_len16(u: np.ndarray, v: np.ndarray, mul) -> np.ndarray:
    a = _shift_mix((u ^ v) * mul)
    return _shift_mix((v ^ a) * mul) * mul


def _weak_hash_len32(keys: np.ndarray, offset: int, a: np.ndarray, b: np.ndarray):
    w, x, y, z = (_fetch64(keys, offset + 8 * k) for k in range(4))
    a = a + w
    b = _rotate(b + a + z, 21)
    c = a
    a = a + x + y
    return a + z, b + _rotate(a, 44) + c


def _hash_len0to16(keys: np.ndarray, length: int) -> np.ndarray:
    count = keys.shape[0]
    if length >= 8:
        mul = U((K2 + 2 * length) & _MASK)
        a = _fetch64(keys, 0) + U(K2)
        b = _fetch64(keys, length - 8)
        return _hash_len16(_rotate(b, 37) * mul + a, (_rotate(a, 25) + b) * mul, mul)
    if length >= 4:
        mul = U((K2 + 2 * length) & _MASK)
        return _hash_len16((_fetch32(keys, 0) << U(3)) + U(length), _fetch32(keys, length - 4), mul)
    if length > 0:
        y = keys[:, 0].astype(U) + (keys[:, length >> 1].astype(U) << U(8))
        z = U(length) + (keys[:, length - 1].astype(U) << U(2))
        return _shift_mix(y * U(K2) ^ z * U(K0)) * U(K2)
    return np.full(count, K2, U)


def _hash_len17to32(keys: np.ndarray, length: int) -> np.ndarray:
    mul = U((K2 + 2 * length) & _MASK)
    a = _fetch64(keys, 0) * U(K1)
    b = _fetch64(keys, 8)
    c = _fetch64(keys, length - 8) * mul
    d = _fetch64(keys, length - 16) * U(K2)
    return _hash_len16(_rotate(a + b, 43) + _rotate(c, 30) + d, a + _rotate(b + U(K2), 18) + c, mul)


def _hash_len33to64(keys: np.ndarray, length: int) -> np.ndarray:
    mul = U((K2 + 2 * length) & _MASK)
    a = _fetch64(keys, 0) * U(K2)
    b = _fetch64(keys, 8)
    c = _fetch64(keys, length - 8) * mul
    d = _fetch64(keys, length - 16) * U(K2)
    y = _rotate(a + b, 43) + _rotate(c, 30) + d
    z = _hash_len16(y, a + _rotate(b + U(K2), 18) + c, mul)
    e = _fetch64(keys, 16) * mul
    f = _fetch64(keys, 24)
    g = (y + _fetch64(keys, length - 32)) * mul
    h = (z + _fetch64(keys, length - 24)) * mul
    return _hash_len16(_rotate(e + f, 43) + _rotate(g, 30) + h, e + _rotate(f + a, 18) + g, mul)


def _hash_long(keys: np.ndarray, length: int) -> np.ndarray:
    """Keys over 64 bytes: 64-byte blocks mixed into a 56-byte state (the loop runs over
    blocks, each step on every key at once), then the last 64 bytes."""
    count = keys.shape[0]
    seed = 81
    y0 = (seed * K1 + 113) & _MASK
    x = np.full(count, (seed * K2) & _MASK, U) + _fetch64(keys, 0)
    y = np.full(count, y0, U)
    z = _shift_mix(np.full(count, (y0 * K2 + 113) & _MASK, U)) * U(K2)
    v0 = v1 = w0 = w1 = np.zeros(count, U)
    for offset in range(0, (length - 1) // 64 * 64, 64):
        checkpoint()
        x = _rotate(x + y + v0 + _fetch64(keys, offset + 8), 37) * U(K1)
        y = _rotate(y + v1 + _fetch64(keys, offset + 48), 42) * U(K1)
        x = x ^ w1
        y = y + v0 + _fetch64(keys, offset + 40)
        z = _rotate(z + w0, 33) * U(K1)
        v0, v1 = _weak_hash_len32(keys, offset, v1 * U(K1), x + w0)
        w0, w1 = _weak_hash_len32(keys, offset + 32, z + w1, y + _fetch64(keys, offset + 16))
        x, z = z, x
    mul = U(K1) + ((z & U(0xff)) << U(1))
    last = length - 64
    w0 = w0 + U((length - 1) & 63)
    v0 = v0 + w0
    w0 = w0 + v0
    x = _rotate(x + y + v0 + _fetch64(keys, last + 8), 37) * mul
    y = _rotate(y + v1 + _fetch64(keys, last + 48), 42) * mul
    x = x ^ (w1 * U(9))
    y = y + v0 * U(9) + _fetch64(keys, last + 40)
    z = _rotate(z + w0, 33) * mul
    v0, v1 = _weak_hash_len32(keys, last, v1 * mul, x + w0)
    w0, w1 = _weak_hash_len32(keys, last + 32, z + w1, y + _fetch64(keys, last + 16))
    x, z = z, x
    return _hash_len16(_hash_len16(v0, w0, mul) + _shift_mix(y) * U(K0) + z,
                       _hash_len16(v1, w1, mul) + x, mul)


def fingerprint64(keys: np.ndarray) -> np.ndarray:
    """FarmHash's Fingerprint64 of each row of ``keys`` (uint8 [count, length]), as uint64."""
    keys = np.ascontiguousarray(keys, np.uint8)
    length = keys.shape[1]
    for limit, hash_rows in ((16, _hash_len0to16), (32, _hash_len17to32), (64, _hash_len33to64)):
        if length <= limit:
            return hash_rows(keys, length)
    return _hash_long(keys, length)


# --- the operation ---------------------------------------------------------------------------

def check_bits(ctx: OperationContext, kind: int, num_hash: int, num_bits: int) -> None:
    check(num_bits <= MAX_BITS, "{}: input 0 (hash) has {} bits per hash function, more than {}",
          ctx.name, num_bits, MAX_BITS)
    if kind == LshProjectionType.SPARSE and num_hash > 1:
        check(num_bits + math.ceil(math.log2(num_hash)) <= MAX_BITS,
              "{}: {} hash functions of {} bits overflow a sparse projection's int32 signatures",
              ctx.name, num_hash, num_bits)


def check_weight_rows(ctx: OperationContext, input_rows: int, weight_rows: int) -> None:
    check(input_rows == weight_rows, "{}: input 2 (weight) has {} rows, input 1 (input) {}",
          ctx.name, weight_rows, input_rows)


def check_lsh(ctx: OperationContext) -> None:
    kind, hash_dims = ctx.scalar(TYPE), ctx.inputs[HASH].dimensions
    if kind is not None and len(hash_dims) == 2 and hash_dims[1]:
        check_bits(ctx, kind, hash_dims[0], hash_dims[1])


def infer_shapes(ctx: OperationContext, shapes: Sequence[Shape]) -> list[Shape]:
    hash_shape, inp, weight, _ = shapes
    if inp is not None and weight is not None and inp[0] and weight[0]:
        check_weight_rows(ctx, inp[0], weight[0])
    kind = ctx.scalar(TYPE)
    if hash_shape is None or kind is None:
        return [(0,)]
    num_hash, num_bits = hash_shape
    return [(num_hash * num_bits,) if kind == LshProjectionType.DENSE else (num_hash,)]


#: How many key bytes are hashed at once: many seeds over large rows are hashed a batch of
#: seeds at a time, so that the keys (each seed before each row) never take more memory.
KEY_BYTES_PER_BATCH = 1 << 22


#: What one round of FarmHash's loop over the 64-byte blocks of keys longer than 64 bytes
#: costs whatever the number of keys (some hundred numpy calls), in bytes hashed.
ROUND_COST_BYTES = 1 << 14


def seeds_per_batch(rows: int, row_size: int) -> int:
    return max(1, KEY_BYTES_PER_BATCH // max(1, rows * (4 + row_size)))


def hashing_cost(seeds: int, rows: int, row_size: int) -> int:
    """The bytes sign_bits hashes, each round of the loop over long keys' blocks counted as
    ROUND_COST_BYTES more (few long rows cost their rounds, not their bytes)."""
    key_size = 4 + row_size
    rounds = (key_size - 1) // 64 if key_size > 64 else 0
    batches = -(-seeds // seeds_per_batch(rows, row_size))
    return seeds * rows * key_size + batches * rounds * ROUND_COST_BYTES


def sign_bits(seeds: np.ndarray, x: np.ndarray, weight: Optional[np.ndarray]) -> np.ndarray:
    """One bit per seed: the sign of the weighted sum of the rows' fingerprints."""
    rows = x.shape[0]
    row_size = x[:1].nbytes         # one row's bytes (0 when there is none)
    row_bytes = np.frombuffer(np.ascontiguousarray(x).tobytes(), np.uint8).reshape(rows, row_size)
    seed_bytes = seeds.astype("<f4").reshape(-1, 1).view(np.uint8)
    weights = None if weight is None else weight.astype(np.float64)
    batch = seeds_per_batch(rows, row_size)
    scores = []
    for start in range(0, seed_bytes.shape[0], batch):
        checkpoint()
        scores.append(weighted_sums(seed_bytes[start:start + batch], row_bytes, weights))
    return (np.concatenate(scores or [np.zeros(0)]) > 0).astype(np.int64)


def weighted_sums(seed_bytes: np.ndarray, row_bytes: np.ndarray, weights: Optional[np.ndarray]) -> np.ndarray:
    """Per seed, the sum over rows of weight * Fingerprint64(seed + row) read as signed."""
    seeds, rows = seed_bytes.shape[0], row_bytes.shape[0]
    if rows == 0:
        return np.zeros(seeds)
    keys = np.concatenate([np.repeat(seed_bytes, rows, axis=0), np.tile(row_bytes, (seeds, 1))], axis=1)
    signed = fingerprint64(keys).view(np.int64).astype(np.float64).reshape(seeds, rows)
    if weights is not None:
        signed = signed * weights
    # The reference adds row after row: cumsum keeps that order (np.sum would not).
    return np.cumsum(signed, axis=1)[:, -1]


def build(ctx: OperationContext) -> Kernel:
    def kernel(hash_, x, weight, kind):
        kind = int(kind)
        TYPE_OPERAND.check_value(ctx, TYPE, kind)
        num_hash, num_bits = hash_.shape
        check_bits(ctx, kind, num_hash, num_bits)
        if weight is not None:
            check_weight_rows(ctx, x.shape[0], weight.shape[0])
        check_cost(hashing_cost(hash_.size, x.shape[0], x[:1].nbytes), MAX_HASHED_BYTES,
                   "bytes to hash", ctx.name)
        bits = sign_bits(hash_, x, weight).reshape(num_hash, num_bits)
        if kind == LshProjectionType.DENSE:
            return (bits.reshape(-1).astype(np.int32),)
        signatures = bits @ (np.int64(1) << np.arange(num_bits - 1, -1, -1, dtype=np.int64))
        if kind == LshProjectionType.SPARSE:
            signatures = signatures + (np.arange(num_hash, dtype=np.int64) << num_bits)
        return (signatures.astype(np.uint32).view(np.int32),)
    return kernel


#: A dense projection of float16 hash and weight over quantized rows, and a sparse one
#: without weight over int32 rows.
EXAMPLES = (Example(inputs=(ExampleOperand(T.TENSOR_FLOAT16, (3, 2)), ExampleOperand(T.TENSOR_QUANT8_ASYMM, (2, 3),
                                                                                      scale=0.5, zero_point=1),
                            ExampleOperand(T.TENSOR_FLOAT16, (2,)), ExampleOperand(T.INT32, constant=2)),
                    outputs=((T.TENSOR_INT32, 0.0, 0),)),
            Example(inputs=(ExampleOperand(T.TENSOR_FLOAT32, (4, 3)), ExampleOperand(T.TENSOR_INT32, (3,)),
                            ExampleOperand(T.TENSOR_FLOAT32, omitted=True), ExampleOperand(T.INT32, constant=3)),
                    outputs=((T.TENSOR_INT32, 0.0, 0),)))

register(OperationDef(OperationType.LSH_PROJECTION, SIGNATURES, infer_shapes, build, check_lsh, EXAMPLES))
