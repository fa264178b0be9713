"""fuzz.codec: every byte string decodes, encode is decode's exact inverse, values are
generated as promised, sizes stay bounded, and seeds keep their compact form."""
from __future__ import annotations

import dataclasses
import math
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from driver.hal import (DataLocation, ExtensionNameAndPrefix, MeasureTiming, MemoryPool, Model,
                        Operand, OperandExtraParams, OperandLifeTime as L, OperandType as T,
                        Operation, OperationType as Op, Request, RequestArgument, Subgraph,
                        SymmPerChannelQuantParams)
from driver.memory import Memory
from fuzz import codec
from fuzz.codec import grammar
from fuzz.codec.decoding import UNFUSED_DECODE_ENV, fused_decode
from fuzz.case import ExecutionChoices, ExecutionPath, FuzzCase, Relation, RequestChange
from fuzz.codec import (ArgumentSpec, CaseSpec, ElementKind, ModelSpec, OperandSpec,
                        RequestPoolSpec, RequestSpec, SubgraphSpec, ValueKind, ValueSpec)
from fuzz.seed_models import SEEDS, seed_specs
from hal_client.paths import DeadlineEdge, deadline_point
from tests import models
from tests.scripts import load_script

REPO_ROOT = Path(__file__).resolve().parents[2]
CTS = REPO_ROOT.parent / "shared" / "conformance" / "cts"

SEED_SPECS = seed_specs()
SEED_BYTES = [codec.serialize(spec) for spec in SEED_SPECS.values()]


def assert_round_trip(case: FuzzCase) -> bytes:
    data = codec.encode(case)
    again = codec.decode(data)
    assert again == case
    assert codec.encode(again) == data
    return data


# --- any bytes ------------------------------------------------------------------------------

@st.composite
def edited_seeds(draw) -> bytes:
    """A seed with a few bytes replaced, inserted or cut: deeper structures than random
    bytes reach."""
    data = bytearray(draw(st.sampled_from(SEED_BYTES)))
    for _ in range(draw(st.integers(0, 6))):
        position = draw(st.integers(0, len(data)))
        action = draw(st.integers(0, 2))
        if action == 0 and position < len(data):
            data[position] = draw(st.integers(0, 255))
        elif action == 1:
            data[position:position] = draw(st.binary(min_size=1, max_size=4))
        else:
            del data[position:position + draw(st.integers(1, 8))]
    return bytes(data)


ANY_INPUT = st.one_of(st.binary(max_size=400), edited_seeds())


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ANY_INPUT)
def test_every_input_decodes_and_encodes_back_exactly(data):
    case = codec.decode(data)
    assert isinstance(case, FuzzCase)
    assert_round_trip(case)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ANY_INPUT)
def test_one_pass_decode_equals_parse_then_lower(data):
    """The fused pass of fuzz/codec/decoding.py against the definition of decode, which reads
    through the grammar's field tables."""
    assert fused_decode(data) == codec.lower(codec.parse(data))


def stored_files() -> list:
    """The files of corpus/ and crashes/ (not crashes/litert/, LiteRT's standalone reproducers)."""
    return [path for path in sorted(REPO_ROOT.glob("corpus/*")) + sorted(REPO_ROOT.glob("crashes/*"))
            if path.is_file()]


def test_one_pass_decode_equals_parse_then_lower_on_the_corpus():
    for path in stored_files():
        data = path.read_bytes()
        assert fused_decode(data) == codec.lower(codec.parse(data)), path.name


def test_the_unfused_decode_is_chosen_by_its_environment_variable():
    """What the fused pass is worth is measured with it off (scripts/bench_fuzz.py run with
    the variable set), in the fuzzer's processes and their children."""
    script = "from fuzz import codec; print(codec.decode.__name__)"
    for value, chosen in (("", "fused_decode"), ("1", "unfused_decode")):
        run = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, check=True,
                             env={**os.environ, UNFUSED_DECODE_ENV: value},
                             capture_output=True, text=True)
        assert run.stdout.strip() == chosen


def test_the_field_tables_name_every_field_of_their_specs():
    """serialize writes what the grammar's field tables name: a field of a spec that they
    left out would be lost on the way through the bytes."""
    def names(cls: type, prefix: str = "") -> set[str]:
        return {prefix + f.name for f in dataclasses.fields(cls)}
    tables = {cls: {f.name for f in fields} for cls, fields in (
        (OperandSpec, grammar.OPERAND_FIELDS), (Operation, grammar.OPERATION_FIELDS),
        (ArgumentSpec, grammar.ARGUMENT_FIELDS), (RequestPoolSpec, grammar.REQUEST_POOL_FIELDS))}
    assert tables[OperandSpec] == names(OperandSpec) - {"extraParams"} | names(
        OperandExtraParams, "extraParams.")
    for cls in (Operation, ArgumentSpec, RequestPoolSpec):
        assert tables[cls] == names(cls)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ANY_INPUT)
def test_spec_serialization_round_trips(data):
    spec = codec.parse(data)
    assert codec.parse(codec.serialize(spec)) == spec


def test_multi_byte_counts_dimensions_and_indexes_read_as_varints():
    # One-byte values are read in bulk; a longer varint anywhere must still be read whole.
    operands = [OperandSpec(T.TENSOR_FLOAT32, [200, 1 << 20, 3]),
                OperandSpec(T.TENSOR_INT32, [1] * codec.MAX_RANK)]
    wide = Operation(Op.ADD, [0, 1] * 63 + [1 << 31, 0], [0] * codec.MAX_OPERATION_OUTPUTS)
    spec = CaseSpec(ModelSpec(SubgraphSpec(operands, [wide, Operation(Op.ADD, [0, 1], [300])],
                                           [0] * codec.MAX_IO_INDEXES, [1, 128])))
    data = codec.serialize(spec)
    assert codec.parse(data) == spec
    main = codec.decode(data).model.main
    assert main.operands[0].dimensions == [200, 1 << 20, 3]
    assert main.operations[0].inputs == wide.inputs and main.operations[1].outputs == [300]
    assert len(main.inputIndexes) == codec.MAX_IO_INDEXES and main.outputIndexes == [1, 128]
    assert [o.numberOfConsumers for o in main.operands] == [65, 64]


def test_an_input_cut_inside_dimensions_or_indexes_reads_zeros_past_its_end():
    spec = CaseSpec(ModelSpec(SubgraphSpec(
        [OperandSpec(T.TENSOR_FLOAT32, [5, 6, 7, 8])], [Operation(Op.ADD, [0, 0, 0], [0])])))
    data = codec.serialize(spec)
    for cut in range(len(data)):
        case = fused_decode(data[:cut])
        assert case == codec.lower(codec.parse(data[:cut]))
        for operand in case.model.main.operands:     # cut before its rank: no dimensions
            dims = operand.dimensions
            read = len([d for d in dims if d])
            assert len(dims) in (0, 4) and dims == [5, 6, 7, 8][:read] + [0] * (len(dims) - read)
        for operation in case.model.main.operations:
            assert operation.inputs in ([], [0, 0, 0])
    # A varint cut by the end: its last byte had the continuation bit set.
    cut_varint = codec.serialize(CaseSpec(ModelSpec(SubgraphSpec(
        [OperandSpec(T.TENSOR_FLOAT32, [1, 1 << 20])]))))
    cut_varint = cut_varint[:cut_varint.index(bytes([0x80, 0x80, 0x40])) + 2]
    assert codec.decode(cut_varint).model.main.operands[0].dimensions == [1, 0]


def test_decoding_is_deterministic():
    for data in SEED_BYTES + [bytes(range(256)), b"\xff" * 300]:
        assert codec.decode(data) == codec.decode(data)


def test_the_empty_input_is_an_empty_case():
    case = codec.decode(b"")
    assert case.model.main.operands == [] and case.request.inputs == []
    assert case.choices.loopTimeoutDuration_ns is None
    assert_round_trip(case)


# --- what the decoder can express ---------------------------------------------------------------

def hal_case(operands, operations=(), inputs=(), outputs=(), *, values=b"", pools=(),
             request=None, referenced=(), **model_fields) -> FuzzCase:
    main = Subgraph(list(operands), list(operations), list(inputs), list(outputs))
    model = Model(main, list(referenced), values, list(pools), **model_fields)
    return FuzzCase(model, request or Request(), ExecutionChoices())


def test_invalid_values_stay_expressible():
    huge = [(1 << 32) - 1, 1 << 31, 7]
    operands = [
        Operand(T.TENSOR_FLOAT32, huge, 3, 1e30, -(1 << 31), L.CONSTANT_COPY,
                DataLocation(0, (1 << 32) - 1, 4)),                       # out of bounds
        Operand(12345, [], 0, float("inf"), 1 << 20, 9, DataLocation(5, 6, 7)),  # type, lifetime
        Operand(T.TENSOR_INT32, [2], 1, 0.0, 0, L.CONSTANT_COPY, DataLocation(0, 2, 8)),  # overlap
        Operand(T.TENSOR_INT32, [2], 1, 0.0, 0, L.CONSTANT_COPY, DataLocation(0, 0, 8)),
        Operand(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, [2, 2], 0, 0.0, 0, L.TEMPORARY_VARIABLE,
                DataLocation(), OperandExtraParams(SymmPerChannelQuantParams([0.5, -1.0], 9),
                                                   b"\x01\x02")),
        Operand(0x10002, [1], 0, 0.0, 0, L.SUBGRAPH, DataLocation(3, 99, 1)),
    ]
    operations = [Operation(Op.ADD, [0, 1, 1 << 20], [2, 2]),
                  Operation(0xFFFF_FFFF, [], [(1 << 32) - 1])]
    request = Request([RequestArgument(True, DataLocation(1, 2, 3), [0, 5])],
                      [RequestArgument(False, DataLocation(7, 0, 4), [])],
                      [MemoryPool(token=42), MemoryPool(hidlMemory=Memory.from_bytes(b"ab", "x"))])
    case = hal_case(operands, operations, [0, 77], [1 << 31], values=bytes(range(12)),
                    pools=[Memory.from_bytes(b"\0" * 5, "mmap_fd")], request=request,
                    relaxComputationFloat32toFloat16=True,
                    extensionNameToPrefix=[ExtensionNameAndPrefix("vendor.ext", 7)])
    assert_round_trip(case)


def test_nan_scales_decode_as_infinity():
    spec = CaseSpec(ModelSpec(SubgraphSpec([OperandSpec(T.TENSOR_QUANT8_ASYMM, [1],
                                                        scale=float("nan"))])))
    case = codec.decode(codec.serialize(spec))
    assert case.model.main.operands[0].scale == math.inf
    assert_round_trip(case)


def test_memory_names_lose_nul_bytes_so_a_pool_can_always_be_created():
    spec = CaseSpec(request=RequestSpec(pools=[RequestPoolSpec()]))
    spec.request.pools[0].blob.name = "a\0b"
    case = codec.decode(codec.serialize(spec))
    assert case.request.pools[0].hidlMemory.name == "ab"


def test_decoder_fills_at_most_its_budget():
    # 16 constants of 2^32 x 4 floats each would be 256 GiB: the decoder caps each value and
    # the case's total (and the case is invalid, as it should be).
    operands = [OperandSpec(T.TENSOR_FLOAT32, [1 << 16, 1 << 16], lifetime=L.CONSTANT_COPY,
                            value=ValueSpec(kind)) for kind in [ValueKind.GENERATED,
                                                                ValueKind.ZERO] * 8]
    data = codec.serialize(CaseSpec(ModelSpec(SubgraphSpec(operands))))
    case = codec.decode(data)
    assert case.model.main.operands[0].location.length == codec.MAX_GENERATED_VALUE
    assert len(case.model.operandValues) <= codec.FILL_BUDGET
    assert_round_trip(case)


def test_large_pools_hold_exactly_their_zeros_and_values():
    # A large pool is written piece by piece, its zeros left to the new memory's own pages,
    # and operandValues is joined from the pieces: the content is still the one laid out.
    segments = [codec.Segment(ValueKind.ZERO, 300_000),
                codec.Segment(ValueKind.LITERAL, data=b"abc"),
                codec.Segment(ValueKind.GENERATED, 100, ElementKind.FLOAT32, 7),
                codec.Segment(ValueKind.ZERO, 5)]
    laid_out = (bytes(300_000) + b"abc" + codec.generated_bytes(ElementKind.FLOAT32, 7, 100)
                + bytes(5))
    constant = OperandSpec(T.TENSOR_INT32, [3], lifetime=L.CONSTANT_REFERENCE,
                           value=ValueSpec(ValueKind.GENERATED, 4))
    model = ModelSpec(SubgraphSpec([constant]), operandValues=list(segments),
                      pools=[codec.BlobSpec("mmap_fd", list(segments))])
    request = RequestSpec(inputs=[codec.ArgumentSpec(size_delta=200_000),
                                  codec.ArgumentSpec(value=ValueSpec(ValueKind.LITERAL,
                                                                     data=b"xyz"))],
                          pools=[RequestPoolSpec()])
    data = codec.serialize(CaseSpec(model, request))
    case = codec.decode(data)
    assert case == codec.lower(codec.parse(data))
    assert case.model.operandValues == laid_out
    location = case.model.main.operands[0].location
    assert location.offset == len(laid_out)
    assert case.model.pools[0].read() == laid_out + codec.generated_bytes(ElementKind.INT32, 4, 12)
    inputs = [a.location for a in case.request.inputs]
    assert [(a.offset, a.length) for a in inputs] == [(0, 200_000), (200_000, 3)]
    assert case.request.pools[0].hidlMemory.read() == bytes(200_000) + b"xyz"
    assert_round_trip(case)


def test_counts_beyond_the_limits_are_refused_by_encode():
    operands = [Operand(T.INT32, []) for _ in range(codec.MAX_OPERANDS + 1)]
    with pytest.raises(codec.CodecLimitError, match="operand count"):
        codec.encode(hal_case(operands))


def test_times_are_capped_so_one_input_cannot_make_the_fuzzer_slow():
    for data in [bytes([0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F]), b"\x80\x00" + b"\xff" * 12]:
        choices = codec.decode(data).choices
        assert choices.loopTimeoutDuration_ns is None or \
            choices.loopTimeoutDuration_ns <= codec.LOOP_TIMEOUT_CAP_US * 1000
        assert choices.wait_fence_delay_ns <= codec.WAIT_FENCE_DELAY_CAP_US * 1000
    with pytest.raises(codec.CodecLimitError, match="loopTimeoutDuration"):
        codec.serialize(CaseSpec(choices=ExecutionChoices(loopTimeoutDuration_ns=1500)))


def test_choices_round_trip():
    choices = ExecutionChoices(path=ExecutionPath.FENCED, second_path=ExecutionPath.BURST,
                               measureTiming=MeasureTiming.YES,
                               deadline_ns=1_000_000_000, loopTimeoutDuration_ns=0,
                               wait_fences=3, wait_fence_delay_ns=5_000_000,
                               fenced_duration_ns=7_000, request_change=RequestChange.CLOSED,
                               relation=Relation.UNKNOWN_OUTPUT_SHAPES)
    assert_round_trip(FuzzCase(choices=choices))


def test_the_request_change_takes_bits_every_older_input_left_clear():
    """Inputs written before the field decode as they did: no change."""
    data = codec.encode(FuzzCase())
    assert data[1] >> 5 == 0
    assert codec.decode(data).choices.request_change == RequestChange.NONE
    changed = bytes([data[0], data[1] | RequestChange.POOLS << 5]) + data[2:]
    assert codec.decode(changed).choices.request_change == RequestChange.POOLS


def test_the_relation_takes_a_bit_every_older_input_left_clear():
    """Inputs written before the field decode as they did: no relation. With the bit set, a
    varint after the other choices names one; past the last, it reads as the last."""
    data = codec.encode(FuzzCase())
    assert not data[1] & 0x80
    assert codec.decode(data).choices.relation == Relation.NONE
    for written, meant in ((0, Relation.IF_THEN), (5, Relation.RENUMBERED), (99, list(Relation)[-1])):
        related = bytes([data[0], data[1] | 0x80, data[2], written]) + data[3:]
        case = codec.decode(related)
        assert case.choices.relation == meant
        assert codec.decode(codec.encode(case)) == case


def test_ranks_past_the_one_byte_cap_are_written_long():
    """A one-byte rank over MAX_RANK reads as MAX_RANK, as it always has; the encoder writes
    longer ranks as a two-byte varint, read up to MAX_LONG_RANK."""
    ranks = [codec.MAX_RANK + 1, 33, 65, codec.MAX_LONG_RANK]
    operands = [OperandSpec(T.TENSOR_FLOAT32, [1] * rank) for rank in ranks]
    spec = CaseSpec(ModelSpec(SubgraphSpec(operands)))
    data = codec.serialize(spec)
    assert codec.parse(data) == spec
    assert [len(o.dimensions) for o in codec.decode(data).model.main.operands] == ranks
    one_byte = codec.serialize(CaseSpec(ModelSpec(SubgraphSpec([OperandSpec(T.TENSOR_FLOAT32, [1])]))))
    rank_at = one_byte.index(bytes([T.TENSOR_FLOAT32, 1, 1])) + 1
    for rank_bytes in (bytes([40]), bytes([0x80 | 70, 0])):     # one byte; long, over the cap
        data = one_byte[:rank_at] + rank_bytes + bytes([1] * 70)
        assert len(codec.parse(data).model.main.operands[0].dimensions) == codec.MAX_RANK


# --- generated values ---------------------------------------------------------------------------

@pytest.mark.parametrize("operand_type", [T.TENSOR_FLOAT32, T.FLOAT16, T.TENSOR_INT32, T.UINT32,
                                          T.TENSOR_BOOL8, T.TENSOR_QUANT8_ASYMM,
                                          T.TENSOR_QUANT16_SYMM, T.TENSOR_QUANT8_SYMM_PER_CHANNEL])
def test_generated_values_suit_their_type(operand_type):
    kind = codec.element_kind(operand_type)
    dtype = {ElementKind.FLOAT32: "<f4", ElementKind.FLOAT16: "<f2", ElementKind.INT32: "<i4",
             ElementKind.UINT32: "<u4", ElementKind.BOOL: "u1", ElementKind.BYTES: "u1",
             ElementKind.INT16: "<i2", ElementKind.INT8: "i1"}[kind]
    values = np.concatenate([np.frombuffer(codec.generated_bytes(kind, seed, 64), dtype)
                             for seed in range(20)])
    if kind in (ElementKind.FLOAT32, ElementKind.FLOAT16):
        assert np.isfinite(values).all() and np.abs(values).max() <= 4
    elif kind in (ElementKind.INT32, ElementKind.UINT32):
        assert set(values.tolist()) == set(range(8))      # small: loop counts, sizes
    elif kind == ElementKind.BOOL:
        assert set(values.tolist()) == {0, 1}
    else:
        assert len(set(values.tolist())) > 100             # the whole range
    assert codec.generated_bytes(kind, 3, 64) == codec.generated_bytes(kind, 3, 64)
    assert codec.generated_bytes(kind, 3, 64) != codec.generated_bytes(kind, 4, 64)


def test_a_longer_value_extends_the_shorter_one():
    short = codec.generated_bytes(ElementKind.FLOAT32, 9, 16)
    assert codec.generated_bytes(ElementKind.FLOAT32, 9, 4096).startswith(short)


def test_find_seed_inverts_generation():
    for kind in ElementKind:
        for seed in (0, 17, codec.NUM_SEEDS - 1):
            data = codec.generated_bytes(kind, seed, 40)
            found = codec.find_seed(kind, data)
            assert found is not None and codec.generated_bytes(kind, found, 40) == data
    assert codec.find_seed(ElementKind.FLOAT32, b"\x01\x02\x03\x04" * 10) is None


def test_literal_values_are_reproduced_exactly():
    loop_bound = np.array([123456], "<i4").tobytes()
    spec = CaseSpec(ModelSpec(SubgraphSpec([OperandSpec(
        T.TENSOR_INT32, [1], lifetime=L.CONSTANT_COPY,
        value=ValueSpec(ValueKind.LITERAL, data=loop_bound))])))
    case = codec.decode(codec.serialize(spec))
    assert case.model.operandValues == loop_bound
    assert_round_trip(case)


# --- placement --------------------------------------------------------------------------------

def test_placed_values_follow_type_and_shape():
    spec = codec.relayout(SEEDS["add_float16_const"]())
    constant = next(o for o in spec.model.main.operands if o.lifetime == L.CONSTANT_COPY
                    and o.type == T.TENSOR_FLOAT16)
    constant.dimensions = [3, 5]
    case = codec.lower(spec)
    location = next(o.location for o in case.model.main.operands if o.dimensions == [3, 5])
    assert location.length == 3 * 5 * 2 and location.offset % codec.VALUE_ALIGNMENT == 0


def test_request_buffers_follow_their_operands_and_size_delta():
    spec = codec.relayout(SEEDS["add_float32"]())
    spec.request.outputs[0].size_delta = -1
    case = codec.lower(spec)
    assert [a.location.length for a in case.request.inputs] == [24, 12]
    assert case.request.outputs[0].location.length == 23
    assert [a.location.offset for a in case.request.inputs + case.request.outputs] == [0, 24, 36]
    assert case.request.pools[0].hidlMemory.size == 36 + 23


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_seed_models_encode_compactly_and_exactly(name):
    case = codec.lower(SEED_SPECS[name])
    data = assert_round_trip(case)
    spec = codec.parse(data)
    # The encoder found the decoder's own layout: nothing spelled out.
    for sg in spec.model.subgraphs():
        assert all(o.location is None and o.consumers is None for o in sg.operands)
    assert all(a.location is None for a in spec.request.inputs + spec.request.outputs)
    assert len(data) <= len(codec.serialize(SEED_SPECS[name]))


@pytest.mark.parametrize("build", [models.add_model, models.quant8_add_model,
                                   models.constant_reference_model, models.per_channel_model,
                                   models.if_model, models.fibonacci_while_model,
                                   models.nested_model, models.extension_model],
                         ids=lambda b: b.__name__)
def test_hand_built_hal_models_round_trip(build):
    model_case = build()
    assert_round_trip(FuzzCase(model_case.model, model_case.request(),
                               ExecutionChoices(loopTimeoutDuration_ns=5_000_000)))


def test_relayout_keeps_values_and_lets_the_decoder_place_them():
    model_case = models.constant_reference_model()
    case = FuzzCase(model_case.model, model_case.request())
    spec = codec.relayout(case)
    placed = codec.lower(spec)
    for before, after in zip(case.model.main.operands, placed.model.main.operands):
        if before.lifetime == L.CONSTANT_REFERENCE:
            old = case.model.pools[before.location.poolIndex].read(before.location.offset,
                                                                   before.location.length)
            new = placed.model.pools[after.location.poolIndex].read(after.location.offset,
                                                                    after.location.length)
            assert old == new
    assert all(o.location is None for o in spec.model.main.operands)


def test_relayout_can_put_every_request_buffer_in_one_pool():
    from driver.validation import validate_model, validate_request
    model_case = models.add_model()
    case = FuzzCase(model_case.model, model_case.request())
    assert len(case.request.pools) == 2
    merged = codec.lower(codec.relayout(case, one_request_pool=True))
    assert len(merged.request.pools) == 1
    validate_model(merged.model)
    validate_request(merged.request, merged.model)
    assert [a.location.length for a in merged.request.inputs + merged.request.outputs] == \
        [a.location.length for a in case.request.inputs + case.request.outputs]


# --- conformance models (read from ../shared at run time) --------------------------------------

@pytest.mark.skipif(not CTS.is_dir(), reason="../shared/conformance not present")
def test_a_sample_of_conformance_models_round_trips_exactly():
    from hal_client.conformance.loader import (build_model, build_request, find_model_files,
                                               load_examples)
    files = find_model_files([CTS])
    sample = random.Random(7).sample(files, min(40, len(files)))
    checked = 0
    for file in sample:
        for example in list(load_examples(file))[:3]:
            case = FuzzCase(build_model(example), build_request(example))
            assert_round_trip(case)
            relaid = codec.lower(codec.relayout(case, max_literal=64))
            assert [o.type for o in relaid.model.main.operands] == \
                [o.type for o in case.model.main.operands]
            checked += 1
    assert checked >= 40


# --- encoding part by part (the custom mutator's path) ------------------------------------------

@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ANY_INPUT)
def test_encode_parts_is_serialize_and_a_copy_reuses_every_part(data):
    spec = codec.parse(data)
    encoded = codec.encode_parts(spec)
    assert encoded.data == codec.serialize(spec)
    origins: codec.Origins = {}
    copy = encoded.copy(origins)
    assert copy == spec
    again = codec.encode_parts(copy, origins)
    assert again.data == encoded.data
    tail = len(encoded.parts) - 2          # the extensions are always written again
    assert all(new is old for k, (new, old) in enumerate(zip(again.parts, encoded.parts))
               if k != tail)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ANY_INPUT)
def test_parse_parts_is_encode_parts_of_parse(data):
    expected = codec.encode_parts(codec.parse(data))
    got = codec.parse_parts(data)
    assert got.spec == expected.spec
    assert got.parts == expected.parts and got.elements == expected.elements


def test_a_changed_part_is_serialized_again_and_the_original_stays_as_it_was():
    data = codec.serialize(SEED_SPECS["nested_while_in_if"])
    encoded = codec.encode_parts(codec.parse(data))
    for change in range(6):
        origins: codec.Origins = {}
        copy = encoded.copy(origins)
        # A copy shares operands, operations and arguments with the original: they are
        # replaced by copies of their own before they change.
        main, inner = copy.model.main, copy.model.referenced[-1]
        if change == 0:
            codec.writable_operand(inner, 0).dimensions[0] += 1
        elif change == 1:
            codec.writable_operation(main, 0).inputs.reverse()
        elif change == 2:
            codec.writable_argument(copy.request.inputs, 0).value = \
                ValueSpec(ValueKind.GENERATED, 5)
        elif change == 3:
            copy.choices.loopTimeoutDuration_ns = 7000
        elif change == 4:
            copy.model.relaxComputationFloat32toFloat16 = True
        else:
            copy.model.referenced.append(copy.model.referenced[0])
        again = codec.encode_parts(copy, origins)
        assert again.data == codec.serialize(copy) != data
        assert codec.parse(data) == encoded.spec and encoded.data == data


def test_a_repeated_rank_is_a_few_bytes_and_round_trips():
    """A shape far past every rank limit (one dimension repeated) is written as a repeated
    rank: a few bytes, read back as the same shape, in the model and in the request."""
    huge = [codec.UINT32_MAX] * 100_000
    spec = CaseSpec(ModelSpec(SubgraphSpec([OperandSpec(T.TENSOR_FLOAT32, huge)], [], [0], [0])),
                    RequestSpec(inputs=[ArgumentSpec(dimensions=[1] * codec.MAX_REPEATED_RANK)]))
    data = codec.serialize(spec)
    assert len(data) < 40
    assert codec.parse(data) == spec
    case = codec.decode(data)
    assert case.model.main.operands[0].dimensions == huge
    assert case.request.inputs[0].dimensions == [1] * codec.MAX_REPEATED_RANK
    assert codec.decode(codec.encode(case)) == case


def test_a_rank_past_the_long_ranks_of_unequal_dimensions_is_refused():
    for dims in ([1] * codec.MAX_LONG_RANK + [2], [1] * (codec.MAX_REPEATED_RANK + 1)):
        with pytest.raises(codec.CodecLimitError, match="rank"):
            codec.serialize(CaseSpec(ModelSpec(SubgraphSpec([OperandSpec(T.TENSOR_FLOAT32, dims)]))))


def test_the_storage_of_a_repeated_rank_is_not_multiplied_out():
    assert codec.storage_bytes(T.TENSOR_FLOAT32, [1] * 100_000) == 4
    assert codec.storage_bytes(T.TENSOR_FLOAT32, [7] * 100_000) == 0
    assert codec.storage_bytes(T.TENSOR_FLOAT32, [7] * 99_999 + [0]) == 0


@pytest.mark.parametrize("edge", list(DeadlineEdge)[1:], ids=lambda e: e.name)
def test_a_deadline_at_an_edge_of_the_clock_round_trips(edge):
    case = FuzzCase(choices=ExecutionChoices(deadline_ns=0, deadline_edge=edge))
    assert_round_trip(case)
    point = deadline_point(case.choices).nanosecondsSinceEpoch
    assert {DeadlineEdge.EPOCH: point == 0, DeadlineEdge.END: point == 2**64 - 1,
            DeadlineEdge.JUST_PASSED: 0 < point < time.monotonic_ns()}[edge]
    with pytest.raises(codec.CodecLimitError, match="deadline_edge"):
        codec.encode(FuzzCase(choices=ExecutionChoices(deadline_ns=1000, deadline_edge=edge)))


#: The reproducers in crashes/ that were found through those encodings (a pool handed over
#: as a cache file, a rank of 100,000 dimensions, a deadline at the end of the clock, a
#: forged cache), and so are written in them.
FOUND_THROUGH_LATER_ENCODINGS = {"69842adf3dc17bd9", "738c10d690c89964", "88cdb16abdbe978c",
                                 "bc231bb31fe4b5ac"}


def test_the_encodings_added_later_are_codes_no_stored_input_uses():
    """Repeated ranks, deadline edges and the routes after CACHE_OTHER_TOKEN read codes that
    decoded otherwise before (as MAX_RANK, the deadline cap, CACHE_OTHER_TOKEN): no input of
    corpus/ or crashes/ stored before them holds one, so each decodes as it did."""
    later = set(Relation) - set(Relation(r) for r in range(Relation.CACHE_OTHER_TOKEN + 1))
    for path in stored_files():
        if path.suffix in (".json", ".md") or path.name in FOUND_THROUGH_LATER_ENCODINGS:
            continue
        spec = codec.parse(path.read_bytes())
        assert spec.choices.deadline_edge == DeadlineEdge.NONE, path
        assert spec.choices.relation not in later, path
        shapes = [o.dimensions for sg in spec.model.subgraphs() for o in sg.operands] + [
            a.dimensions for a in (*spec.request.inputs, *spec.request.outputs)]
        assert max(map(len, shapes), default=0) <= codec.MAX_LONG_RANK, path


def test_a_part_over_a_limit_still_raises():
    encoded = codec.encode_parts(codec.parse(codec.serialize(SEED_SPECS["add_float32"])))
    origins: codec.Origins = {}
    copy = encoded.copy(origins)
    codec.writable_operand(copy.model.main, 0).dimensions = [1] * codec.MAX_LONG_RANK + [2]
    with pytest.raises(codec.CodecLimitError, match="main operand 0: rank"):
        codec.encode_parts(copy, origins)


# --- the scripts built on the codec --------------------------------------------------------------

def test_make_seeds_own_only_writes_decodable_seeds(tmp_path, capsys):
    make_seeds = load_script("make_seeds")
    assert make_seeds.main([str(tmp_path), "--own-only"]) == 0
    files = sorted(tmp_path.iterdir())
    assert len(files) == len(SEEDS)
    assert all(f.name.startswith("own-") for f in files)
    decoded = [codec.decode(f.read_bytes()) for f in files]
    assert sum(harness_has_control_flow(case) for case in decoded) >= 12


def harness_has_control_flow(case: FuzzCase) -> bool:
    return any(op.type in (Op.IF, Op.WHILE) for op in case.model.main.operations)


def test_show_case_prints_the_case_and_draws_its_graph(tmp_path, capsys):
    show_case = load_script("show_case")
    seed = tmp_path / "nested"
    seed.write_bytes(codec.serialize(SEED_SPECS["nested_while_in_if"]))
    assert show_case.main([str(seed), "--dot", str(tmp_path / "g.dot")]) == 0
    text = capsys.readouterr().out
    assert "op 0: IF [0, 3, 4, 1, 2] -> [5]" in text
    assert "literal [3]" in text                   # the loop count fed by the request
    dot = (tmp_path / "g.dot").read_text()
    assert dot.count("subgraph cluster_") == 5
    assert 'lhead=cluster_3, style=dashed, color=blue, label="then"' in dot
    assert dot.startswith("digraph") and dot.rstrip().endswith("}")


def test_choices_are_read_and_replaced_without_touching_the_rest():
    rng = random.Random(11)
    seed = models.while_counter_model()
    inputs = [codec.encode(FuzzCase(seed.model, seed.request(), ExecutionChoices()))] + [
        bytes(rng.randrange(256) for _ in range(rng.randrange(0, 60))) for _ in range(300)]
    for data in inputs:
        case = codec.decode(data)
        choices, used = codec.read_choices(data)
        assert choices == case.choices and 0 <= used <= min(len(data), codec.CHOICES_MAX_BYTES)
        new = dataclasses.replace(choices, loopTimeoutDuration_ns=250_000, wait_fence_delay_ns=0)
        again = codec.decode(codec.with_choices(data, new))
        assert again.choices == new
        assert again.model == case.model and again.request == case.request


# --- parsing near a known source, encoding under a size limit -------------------------------------

_CORPUS_INPUTS = sorted((Path(__file__).resolve().parents[2] / "corpus").iterdir())[:200]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(_CORPUS_INPUTS) - 1), st.integers(0, 1 << 30))
def test_parsing_near_the_source_of_a_byte_mutant_changes_nothing(index, seed):
    """A byte-level mutant parsed reusing its source's unchanged parts gives exactly what a
    full parse gives: spec, parts and element bytes."""
    from fuzz.mutator import builtin_byte_mutate
    data = _CORPUS_INPUTS[index].read_bytes()
    source = codec.parse_parts(data)
    mutant = builtin_byte_mutate(data, 4096, random.Random(seed))
    near, full = codec.parse_parts(mutant, source), codec.parse_parts(mutant)
    assert near.spec == full.spec
    assert near.parts == full.parts and near.elements == full.elements
    assert near.data == mutant or codec.parse(near.data) == codec.parse(mutant)


@pytest.mark.parametrize("index", range(0, 200, 7))
def test_encoding_under_a_size_limit_raises_exactly_past_it(index):
    data = _CORPUS_INPUTS[index].read_bytes()
    spec = codec.parse_parts(data).spec
    size = len(codec.encode_parts(spec).data)
    assert codec.encode_parts(spec, max_size=size).data == codec.encode_parts(spec).data
    with pytest.raises(codec.CodecLimitError):
        codec.encode_parts(spec, max_size=size - 1)
