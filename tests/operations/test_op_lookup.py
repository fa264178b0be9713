"""TOPK_V2, EMBEDDING_LOOKUP, HASHTABLE_LOOKUP, LSH_PROJECTION and RANDOM_MULTINOMIAL:
hand-computed cases for the tricky parts (the order of equal values, hits and misses,
FarmHash's known fingerprints, the Philox stream), one-field mutations of valid instances,
and runs on a device on every execution path."""
from __future__ import annotations

import numpy as np
import pytest

from driver.errors import ValidationError
from driver.hal.enums import ErrorStatus, OperandType as T, OperationType as Op
from driver.operations import lsh_projection
from driver.operations.lsh_projection import fingerprint64
from driver.operations.random_multinomial import philox_4x32_10, uniform_doubles
from tests.operations.helpers import (F16, F32, I32, OMITTED, Q8, QS8, const, context, definition,
                                      omitted, output, rejects, run, run1, scalar, tensor)
from tests.operations.on_device import assert_same_everywhere, constant_input, fed_input, run_everywhere


# --- TOPK_V2 -------------------------------------------------------------------------------------

def topk(x_info, k):
    return [x_info, const(T.INT32, k)], [output(x_info.type, (), x_info.scale, x_info.zeroPoint), output(I32)]


def test_topk_orders_equal_values_larger_index_first():
    x = np.array([[7, 9, 7, 1, 7], [5, 5, 5, 5, 5]], np.int32)
    values, indices = run(Op.TOPK_V2, *topk(tensor(I32, [2, 5]), 3), [x])
    assert values.tolist() == [[9, 7, 7], [5, 5, 5]]
    # Of the 7s at 0, 2 and 4 the two kept are 4 and 2, in that order.
    assert indices.tolist() == [[1, 4, 2], [4, 3, 2]]


def test_topk_float_with_nan_and_higher_rank():
    x = np.array([0.5, np.nan, -1.0, 2.0], np.float16).reshape(1, 1, 4)
    values, indices = run(Op.TOPK_V2, *topk(tensor(F16, [1, 1, 4]), 2), [x])
    assert indices.tolist() == [[[1, 3]]] and np.isnan(values[0, 0, 0]) and values[0, 0, 1] == 2.0
    values, indices = run(Op.TOPK_V2, *topk(tensor(QS8, [4], 0.5, -3), 4), [np.array([-128, 127, 0, -1], np.int8)])
    assert values.tolist() == [127, 0, -1, -128] and indices.tolist() == [1, 2, 3, 0]


def test_topk_rejections():
    good_in, good_out = topk(tensor(Q8, [2, 3], 0.5, 3), 2)
    rejects(Op.TOPK_V2, good_in[:1], good_out, "expected 2 inputs")
    rejects(Op.TOPK_V2, good_in, good_out[:1], "expected 2 outputs")
    rejects(Op.TOPK_V2, [good_in[0], const(T.INT32, 4)], good_out, r"\(k\) 4 exceeds the last dimension 3")
    rejects(Op.TOPK_V2, [good_in[0], const(T.INT32, 0)], good_out, "k 0 must be >= 1")
    rejects(Op.TOPK_V2, good_in, [output(Q8, (), 0.25, 3), good_out[1]], "output 0")
    rejects(Op.TOPK_V2, good_in, [good_out[0], output(F32)], "output 1")
    rejects(Op.TOPK_V2, [tensor(T.TENSOR_BOOL8, [2, 3]), good_in[1]], [output(T.TENSOR_BOOL8), good_out[1]], "input 0")
    ctx = context(Op.TOPK_V2, [tensor(F32, [2, 3]), scalar(T.INT32)], [output(F32), output(I32)])
    kernel = definition(Op.TOPK_V2).build(ctx)
    with pytest.raises(ValidationError, match=r"\(k\) 5 exceeds the last dimension 3"):
        kernel(np.ones((2, 3), np.float32), np.int32(5))


# --- EMBEDDING_LOOKUP ------------------------------------------------------------------------------

def test_embedding_lookup_rows():
    values = np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    got = run1(Op.EMBEDDING_LOOKUP, [tensor(I32, [4]), tensor(F32, [3, 2, 2])], [output(F32)],
               [np.array([2, 0, 2, 1], np.int32), values])
    np.testing.assert_array_equal(got, values[[2, 0, 2, 1]])


def test_embedding_lookup_rejections():
    good_in, good_out = [tensor(I32, [2]), tensor(QS8, [3, 2], 0.5, -1)], [output(QS8, (), 0.5, -1)]
    rejects(Op.EMBEDDING_LOOKUP, good_in[:1], good_out, "expected 2 inputs")
    rejects(Op.EMBEDDING_LOOKUP, [tensor(I32, [2, 1]), good_in[1]], good_out, "rank 2 > 1")
    rejects(Op.EMBEDDING_LOOKUP, [good_in[0], tensor(QS8, [3], 0.5, -1)], good_out, "rank 1 < 2")
    rejects(Op.EMBEDDING_LOOKUP, [tensor(F32, [2]), good_in[1]], good_out, "input 0")
    rejects(Op.EMBEDDING_LOOKUP, good_in, [output(QS8, (), 0.5, 0)], "output 0")
    rejects(Op.EMBEDDING_LOOKUP, [const(I32, [0, 3]), good_in[1]], good_out, r"must lie in \[0, 3\)")
    kernel = definition(Op.EMBEDDING_LOOKUP).build(context(Op.EMBEDDING_LOOKUP, good_in, good_out))
    with pytest.raises(ValidationError, match=r"lookups\) must lie in \[0, 3\)"):
        kernel(np.array([-1], np.int32), np.zeros((3, 2), np.int8))


# --- HASHTABLE_LOOKUP ------------------------------------------------------------------------------

def hashtable(values_type=F32, scale=0.0, zero_point=0, hits=(Q8, 1.0, 0)):
    return ([tensor(I32, [4]), tensor(I32, [3]), tensor(values_type, [3, 2], scale, zero_point)],
            [output(values_type, (), scale, zero_point), output(hits[0], (), *hits[1:])])


def test_hashtable_hits_and_misses():
    keys = np.array([-11, 0, 1234], np.int32)
    values = np.array([[0, 1], [10, 11], [20, 21]], np.float32)
    got, hits = run(Op.HASHTABLE_LOOKUP, *hashtable(), [np.array([1234, -292, -11, 0], np.int32), keys, values])
    assert got.tolist() == [[20, 21], [0, 0], [0, 1], [10, 11]]
    assert hits.dtype == np.uint8 and hits.tolist() == [1, 0, 1, 1]
    # Lookups beyond both ends miss too.
    got, hits = run(Op.HASHTABLE_LOOKUP, *hashtable(), [np.array([-12, 1235, 1, 5000], np.int32), keys, values])
    assert hits.tolist() == [0, 0, 0, 0] and not got.any()


def test_hashtable_rejections():
    good_in, good_out = hashtable(Q8, 0.5, 3)
    rejects(Op.HASHTABLE_LOOKUP, good_in[:2], good_out, "expected 3 inputs")
    rejects(Op.HASHTABLE_LOOKUP, good_in, good_out[:1], "expected 2 outputs")
    rejects(Op.HASHTABLE_LOOKUP, good_in, [good_out[0], output(Q8, (), 0.5, 0)], "must have scale 1.0")
    rejects(Op.HASHTABLE_LOOKUP, good_in, [output(Q8, (), 0.5, 4), good_out[1]], "output 0")
    rejects(Op.HASHTABLE_LOOKUP, [*good_in[:2], tensor(QS8, [3, 2], 0.5, 3)],
            [output(QS8, (), 0.5, 3), good_out[1]], "input 2")
    rejects(Op.HASHTABLE_LOOKUP, [good_in[0], tensor(I32, [4]), good_in[2]], good_out, "keys.*rows")
    rejects(Op.HASHTABLE_LOOKUP, [good_in[0], const(I32, [1, 5, 5]), good_in[2]], good_out, "strictly increasing")
    kernel = definition(Op.HASHTABLE_LOOKUP).build(context(Op.HASHTABLE_LOOKUP, *hashtable()))
    with pytest.raises(ValidationError, match="keys\\) must be strictly increasing"):
        kernel(np.zeros(4, np.int32), np.array([3, 1, 2], np.int32), np.zeros((3, 2), np.float32))


# --- LSH_PROJECTION --------------------------------------------------------------------------------

def as_keys(*strings: bytes) -> np.ndarray:
    return np.frombuffer(b"".join(strings), np.uint8).reshape(len(strings), -1)


def test_fingerprint64_known_values():
    # FarmHash Fingerprint64 values published with other implementations (Guava's tests
    # give "test", "test" * 8 and "test" * 64 as signed longs).
    assert int(fingerprint64(as_keys(b""))[0]) == 0x9ae16a3b2f90404f
    assert int(fingerprint64(as_keys(b"a"))[0]) == 0xb3454265b6df75e3
    assert fingerprint64(as_keys(b"test")).view(np.int64).tolist() == [8581389452482819506]
    assert fingerprint64(as_keys(b"test" * 8)).view(np.int64).tolist() == [-4196240717365766262]
    assert fingerprint64(as_keys(b"test" * 64)).view(np.int64).tolist() == [3500507768004279527]
    # Many keys at once hash as each alone (every length branch: 4-7, 8-16, 17-32, 33-64, more).
    for length in (5, 12, 20, 40, 130):
        keys = np.random.default_rng(length).integers(0, 256, (6, length), dtype=np.uint8)
        assert fingerprint64(keys).tolist() == [int(fingerprint64(key[None])[0]) for key in keys]


#: The AOSP LSH_PROJECTION specs' model (V1_0 lsh_projection*.mod.py): 4 hash functions of
#: 2 bits over 3 int32 rows of 2.
HASH = [[0.123, 0.456], [-0.321, -0.654], [1.234, 5.678], [-4.321, -8.765]]
ROWS = np.array([[12345, 54321], [67890, 9876], [-12345678, -87654321]], np.int32)
WEIGHT = np.array([0.12, 0.34, 0.56], np.float32)


@pytest.mark.parametrize("kind, weight, expected", [(2, WEIGHT, [1, 1, 1, 0, 1, 1, 1, 0]),
                                                    (1, None, [1, 2, 2, 0]),
                                                    (3, None, [1, 6, 10, 12])])
def test_lsh_projection_reference_values(kind, weight, expected):
    inputs = [const(F32, HASH), tensor(I32, [3, 2]), tensor(F32, [3]), const(T.INT32, kind)]
    got = run1(Op.LSH_PROJECTION, inputs, [output(I32)], [ROWS, OMITTED if weight is None else weight])
    assert got.tolist() == expected


def test_lsh_projection_float16_and_weight_optional_for_every_type():
    inputs = [const(F16, HASH), tensor(I32, [3, 2]), tensor(F16, [3]), const(T.INT32, 2)]
    assert run1(Op.LSH_PROJECTION, inputs, [output(I32)], [ROWS, WEIGHT.astype(np.float16)]).tolist() == \
        [1, 1, 1, 1, 1, 0, 0, 0]
    # Without weight every row weighs 1; a sparse projection is dense bits read as numbers.
    dense = run1(Op.LSH_PROJECTION, [const(F32, HASH), tensor(I32, [3, 2]), omitted(F32), const(T.INT32, 2)],
                 [output(I32)], [ROWS]).reshape(4, 2)
    sparse = run1(Op.LSH_PROJECTION, [const(F32, HASH), tensor(I32, [3, 2]), tensor(F32, [3]), const(T.INT32, 3)],
                  [output(I32)], [ROWS, np.ones(3, np.float32)])
    assert sparse.tolist() == (dense[:, 0] * 2 + dense[:, 1] + 4 * np.arange(4)).tolist()


def test_lsh_projection_hashes_seeds_in_batches_alike(monkeypatch):
    inputs = [tensor(F32, [40, 3]), tensor(I32, [5, 7]), tensor(F32, [5]), const(T.INT32, 2)]
    rng = np.random.default_rng(3)
    values = [rng.normal(size=(40, 3)).astype(np.float32), rng.integers(-99, 99, (5, 7)).astype(np.int32),
              rng.normal(size=5).astype(np.float32)]
    whole = run1(Op.LSH_PROJECTION, inputs, [output(I32)], values)
    monkeypatch.setattr(lsh_projection, "KEY_BYTES_PER_BATCH", 64)     # two seeds at a time
    assert run1(Op.LSH_PROJECTION, inputs, [output(I32)], values).tolist() == whole.tolist()


def test_lsh_projection_rejections():
    good_in, good_out = [const(F32, HASH), tensor(I32, [3, 2]), tensor(F32, [3]), const(T.INT32, 2)], [output(I32)]
    rejects(Op.LSH_PROJECTION, good_in[:3], good_out, "expected 4 inputs")
    rejects(Op.LSH_PROJECTION, [*good_in[:3], const(T.INT32, 4)], good_out, "projection type 4 is not one of")
    rejects(Op.LSH_PROJECTION, [good_in[0], good_in[1], tensor(F16, [3]), good_in[3]], good_out, "weight")
    rejects(Op.LSH_PROJECTION, [good_in[0], good_in[1], tensor(F32, [4]), good_in[3]], good_out, "rows")
    rejects(Op.LSH_PROJECTION, [const(F32, np.zeros(8)), *good_in[1:]], good_out, "rank 1 < 2")
    rejects(Op.LSH_PROJECTION, [tensor(F32, [2, 33]), *good_in[1:]], good_out, "33 bits per hash function")
    rejects(Op.LSH_PROJECTION, [tensor(F32, [3, 31]), *good_in[1:3], const(T.INT32, 3)], good_out, "overflow")
    rejects(Op.LSH_PROJECTION, [tensor(I32, [3, 2]), *good_in[1:]], good_out, "input 0")
    rejects(Op.LSH_PROJECTION, good_in, [output(F32)], "output 0")


# --- RANDOM_MULTINOMIAL ----------------------------------------------------------------------------

def test_philox_known_answer_and_the_references_doubles():
    # Random123's known answer for Philox4x32-10 with a zero counter and key.
    assert philox_4x32_10(1, (0, 0), (0, 0)).tolist() == [[0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]]
    words = philox_4x32_10(1, (0, 0), (0, 0))[0].astype(np.uint64)
    first = ((words[0] & np.uint64(0xfffff)) << np.uint64(32) | words[1]) / float(1 << 52)
    assert uniform_doubles(2, 0, 0)[0] == first


def multinomial(logits_type=F32, dims=(2, 3), samples=4, seeds=(37, 42)):
    return [tensor(logits_type, dims), const(T.INT32, samples), const(I32, seeds)], [output(I32)]


def test_multinomial_is_seeded_and_follows_the_distribution():
    with np.errstate(divide="ignore"):
        logits = np.log(np.array([[0.2, 0.8, 0.0], [0.5, 0.0, 0.5]], np.float32))      # log 0 = -inf
    draw = run1(Op.RANDOM_MULTINOMIAL, *multinomial(samples=4000), [logits])
    assert draw.shape == (2, 4000) and np.array_equal(draw, run1(Op.RANDOM_MULTINOMIAL, *multinomial(samples=4000),
                                                                 [logits]))
    assert abs(np.mean(draw[0] == 1) - 0.8) < 0.03 and abs(np.mean(draw[1] == 2) - 0.5) < 0.03
    assert not (draw[0] == 2).any() and not (draw[1] == 1).any()
    other = run1(Op.RANDOM_MULTINOMIAL, *multinomial(samples=4000, seeds=(37, -42)), [logits])
    assert not np.array_equal(draw, other)
    # A row with no finite logit draws past the last class, as std::upper_bound finds it.
    none = run1(Op.RANDOM_MULTINOMIAL, *multinomial(F16, (1, 2), samples=3), [np.full((1, 2), np.nan, np.float16)])
    assert none.tolist() == [[2, 2, 2]]


def test_multinomial_rejections():
    good_in, good_out = multinomial()
    rejects(Op.RANDOM_MULTINOMIAL, good_in[:2], good_out, "expected 3 inputs")
    rejects(Op.RANDOM_MULTINOMIAL, [tensor(F32, [6]), *good_in[1:]], good_out, "rank 1 < 2")
    rejects(Op.RANDOM_MULTINOMIAL, [good_in[0], const(T.INT32, 0), good_in[2]], good_out, "sample count 0 must be >= 1")
    rejects(Op.RANDOM_MULTINOMIAL, [*good_in[:2], const(I32, [1, 2, 3])], good_out, "must hold 2 seeds, has 3")
    rejects(Op.RANDOM_MULTINOMIAL, [tensor(Q8, [2, 3], 0.5, 0), *good_in[1:]], good_out, "input 0")
    rejects(Op.RANDOM_MULTINOMIAL, good_in, [output(F32)], "output 0")


# --- on a device -------------------------------------------------------------------------------------

def test_on_device_every_path():
    x = np.array([[7, 9, 7, 1]], np.uint8)
    assert_same_everywhere(run_everywhere(Op.TOPK_V2, [fed_input(Q8, x, scale=0.5, zero_point=3),
                                                       constant_input(T.INT32, 2)],
                                          [(Q8, (1, 2), 0.5, 3), (I32, (1, 2), 0.0, 0)]),
                           [np.array([[9, 7]], np.uint8), np.array([[1, 2]], np.int32)])
    values = np.arange(6, dtype=np.float16).reshape(3, 2)
    assert_same_everywhere(run_everywhere(Op.EMBEDDING_LOOKUP, [fed_input(I32, [2, 0]), fed_input(F16, values)],
                                          [(F16, (2, 2), 0.0, 0)]), [values[[2, 0]]])
    assert_same_everywhere(run_everywhere(Op.HASHTABLE_LOOKUP, [fed_input(I32, [5, 4]), constant_input(I32, [1, 5]),
                                                                fed_input(I32, [[10], [50]])],
                                          [(I32, (2, 1), 0.0, 0), (Q8, (2,), 1.0, 0)]),
                           [np.array([[50], [0]], np.int32), np.array([1, 0], np.uint8)])
    assert_same_everywhere(run_everywhere(Op.LSH_PROJECTION, [constant_input(F32, HASH), fed_input(I32, ROWS),
                                                              fed_input(F32, None, dims=[3]),
                                                              constant_input(T.INT32, 3)],
                                          [(I32, (4,), 0.0, 0)]), [np.array([1, 6, 10, 12], np.int32)])
    logits = np.log(np.array([[0.25, 0.75]], np.float32))
    results = run_everywhere(Op.RANDOM_MULTINOMIAL, [fed_input(F32, logits), constant_input(T.INT32, 8),
                                                     fed_input(I32, [37, 42])], [(I32, (1, 8), 0.0, 0)])
    draws = [outputs[0] for status, outputs in results.values()]
    assert all(status == ErrorStatus.NONE for status, _ in results.values())
    assert all(np.array_equal(d, draws[0]) for d in draws) and set(draws[0].ravel()) <= {0, 1}


def test_on_device_lookup_out_of_range_is_a_status():
    results = run_everywhere(Op.EMBEDDING_LOOKUP, [fed_input(I32, [0, 3]),
                                                   fed_input(F32, np.zeros((3, 2), np.float32))],
                             [(F32, (2, 2), 0.0, 0)])
    assert {status for status, _ in results.values()} == {ErrorStatus.GENERAL_FAILURE}
