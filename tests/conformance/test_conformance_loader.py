"""The conformance loader: JSON test models -> HAL Model, Request and expected outputs."""
from __future__ import annotations

import numpy as np
import pytest

from driver.hal import OperandLifeTime, OperandType, OperationType
from driver.memory import Memory
from driver.operations.common import STORAGE_DTYPE
from hal_client.conformance.loader import (INPUT_POOL_INDEX, OPERAND_DTYPE, OUTPUT_POISON_BYTE,
                                           OUTPUT_POOL_INDEX, VALUE_ALIGNMENT, LoadError,
                                           build_model, build_request, find_model_files,
                                           load_examples, shrinkable_output)
from hal_client.paths import read_outputs

from tests.conformance.helpers import add_model, model_entry, operand, rich_model, write_models


@pytest.fixture
def rich(tmp_path):
    return next(load_examples(write_models(tmp_path / "rich.json.gz", [rich_model()])))


def constant_bytes(model, operand_):
    location = operand_.location
    if operand_.lifetime == OperandLifeTime.CONSTANT_COPY:
        return model.operandValues[location.offset:location.offset + location.length]
    return model.pools[location.poolIndex].read(location.offset, location.length)


def test_storage_dtypes_agree_with_the_bundled_driver():
    for operand_type, dtype in STORAGE_DTYPE.items():
        if operand_type in OPERAND_DTYPE:
            assert OPERAND_DTYPE[operand_type] == dtype, OperandType(operand_type).name


def test_example_fields(rich):
    assert rich.name == "rich"
    assert rich.source.endswith("rich.json.gz")
    assert rich.isRelaxed and rich.useSharedMemoryForWeights and not rich.expectFailure
    assert len(rich.referenced) == 2
    assert rich.main.operations[0].type == OperationType.IF
    assert [o.name for o in rich.main.outputs] == ["out", "empty", "ignored"]
    assert rich.has_operand_type(OperandType.TENSOR_FLOAT16)
    assert not rich.has_operand_type(OperandType.TENSOR_QUANT16_ASYMM)
    assert rich.main.operands[5].values.dtype == np.float16
    assert rich.main.operands[0].values.dtype == np.bool_


def test_model_constants_by_copy_are_aligned_and_round_trip(rich):
    model = build_model(rich)
    copies = [(spec, op) for spec, op in zip(rich.main.operands, model.main.operands)
              if spec.lifetime == OperandLifeTime.CONSTANT_COPY]
    copies += [(spec, op) for sub_spec, sub in zip(rich.referenced, model.referenced)
               for spec, op in zip(sub_spec.operands, sub.operands)
               if spec.lifetime == OperandLifeTime.CONSTANT_COPY]
    assert len(copies) == 8   # 4 in main, 2 in each branch
    for spec, op in copies:
        assert op.location.offset % VALUE_ALIGNMENT == 0, spec.name
        assert op.location.length == spec.values.nbytes
        assert constant_bytes(model, op) == spec.values.tobytes(), spec.name
    # A one-byte constant (the bool) does not make the next value unaligned.
    offsets = sorted(op.location.offset for _, op in copies)
    assert len(set(offsets)) == len(offsets)


def test_model_constants_by_reference_live_in_a_shared_memory_pool(rich):
    model = build_model(rich)
    assert len(model.pools) == 1 and isinstance(model.pools[0], Memory)
    ref, ref2 = model.main.operands[6], model.main.operands[7]
    assert ref.lifetime == OperandLifeTime.CONSTANT_REFERENCE
    assert ref.location.poolIndex == 0 and ref.location.offset == 0
    assert ref2.location.offset % VALUE_ALIGNMENT == 0 and ref2.location.offset >= 16
    assert np.frombuffer(constant_bytes(model, ref), np.int32).tolist() == [7, 8, 9, 10]
    assert np.frombuffer(constant_bytes(model, ref2), np.float32).tolist() == [1.0, 2.0, 3.0]


def test_model_without_references_has_no_pool(tmp_path):
    example = next(load_examples(write_models(tmp_path / "add.json", [add_model()])))
    assert build_model(example).pools == []


def test_model_special_operands(rich):
    model = build_model(rich)
    subgraph = model.main.operands[1]
    assert subgraph.type == OperandType.SUBGRAPH
    assert subgraph.lifetime == OperandLifeTime.SUBGRAPH
    assert (subgraph.location.offset, subgraph.location.length) == (1, 0)
    no_value = model.main.operands[8]
    assert no_value.lifetime == OperandLifeTime.NO_VALUE
    assert no_value.location.length == 0
    per_channel = model.main.operands[9]
    assert per_channel.extraParams.channelQuant.scales == [0.5, 0.25]
    assert per_channel.extraParams.channelQuant.channelDim == 0
    assert model.main.operands[4].scale == 0.5 and model.main.operands[4].zeroPoint == 1
    assert model.main.operands[13].numberOfConsumers == 2
    assert model.relaxComputationFloat32toFloat16 is True
    assert model.main.inputIndexes == [0, 2, 3] and model.main.outputIndexes == [10, 11, 12]
    assert model.referenced[1].operations[0].type == OperationType.ADD


def test_model_with_zeroed_output_dims_keeps_ranks(rich):
    model = build_model(rich, zero_output_dims=True)
    assert [model.main.operands[i].dimensions for i in model.main.outputIndexes] == [
        [0], [0, 0], [0]]
    # Only the main subgraph's outputs: a referenced subgraph's stay as declared.
    assert model.referenced[0].operands[3].dimensions == [2]
    assert build_model(rich).main.operands[10].dimensions == [2]


def test_request_layout(rich):
    request = build_request(rich)
    cond, x, omitted = request.inputs
    assert omitted.hasNoValue
    assert not cond.hasNoValue and not x.hasNoValue
    assert cond.location.poolIndex == x.location.poolIndex == INPUT_POOL_INDEX
    assert x.location.offset % VALUE_ALIGNMENT == 0
    pool = request.pools[INPUT_POOL_INDEX].hidlMemory
    assert np.frombuffer(pool.read(x.location.offset, x.location.length),
                         np.float32).tolist() == [1.5, -2.0]
    assert pool.read(cond.location.offset, cond.location.length) == b"\x01"
    out, empty, ignored = request.outputs
    assert all(o.location.poolIndex == OUTPUT_POOL_INDEX for o in request.outputs)
    assert (out.location.length, empty.location.length, ignored.location.length) == (8, 1, 12)
    assert all(o.dimensions == [] for o in request.inputs + request.outputs)


def test_request_outputs_start_poisoned(rich):
    request = build_request(rich)
    assert all(set(raw) == {OUTPUT_POISON_BYTE} for raw in read_outputs(request))


def test_insufficient_request_shrinks_one_output_by_one_byte(rich):
    assert shrinkable_output(rich) == 0
    request = build_request(rich, shrink_output=0)
    assert [o.location.length for o in request.outputs] == [7, 1, 12]
    with pytest.raises(ValueError, match="cannot be made smaller"):
        build_request(rich, shrink_output=1)   # the zero-sized output has a 1-byte buffer


def test_output_without_reference_gets_its_declared_size(tmp_path):
    entry = add_model()
    entry["main"]["operands"][3]["data"] = None
    example = next(load_examples(write_models(tmp_path / "noref.json", [entry])))
    assert build_request(example).outputs[0].location.length == 16
    assert shrinkable_output(example) == 0


def test_request_with_only_omitted_inputs_still_has_a_mapped_pool(tmp_path):
    entry = add_model()
    for spec in entry["main"]["operands"][:2]:
        spec["data"] = None
    example = next(load_examples(write_models(tmp_path / "omit.json", [entry])))
    request = build_request(example)
    assert all(argument.hasNoValue for argument in request.inputs)
    assert request.pools[INPUT_POOL_INDEX].hidlMemory.size >= 1


def test_find_model_files_recurses_and_sorts(tmp_path):
    (tmp_path / "b").mkdir()
    write_models(tmp_path / "b" / "two.json.gz", [add_model("two")])
    write_models(tmp_path / "one.json", [add_model("one")])
    (tmp_path / "notes.txt").write_text("not a model")
    files = find_model_files([tmp_path])
    assert [f.relative_to(tmp_path).as_posix() for f in files] == ["b/two.json.gz", "one.json"]
    with pytest.raises(LoadError, match="no such file"):
        find_model_files([tmp_path / "missing"])


def bad(entry_change, *, match: str):
    entry = add_model()
    entry_change(entry)
    return entry, match


MALFORMED = {
    "missing main": bad(lambda e: e.pop("main"), match="missing field 'main'"),
    "unknown operand type": bad(lambda e: e["main"]["operands"][0].update(type="TENSOR_FLOAT64"),
                                match=r"operand 0 \(a\): unknown OperandType 'TENSOR_FLOAT64'"),
    "unknown operation": bad(lambda e: e["main"]["operations"][0].update(type="ADDD"),
                             match="operation 0: unknown OperationType"),
    "value count": bad(lambda e: e["main"]["operands"][1].update(data=[1.0]),
                       match=r"operand 1 \(b\): dimensions \[2, 2\] take 4 values, got 1"),
    "int out of range": bad(lambda e: e["main"]["operands"][2].update(data=[2**40]),
                            match=r"operand 2 \(act\): INT32 values .* outside"),
    "float as int": bad(lambda e: e["main"]["operands"][2].update(data=[0.5]),
                        match="INT32 data must be integers"),
    "string value": bad(lambda e: e["main"]["operands"][0].update(data=["x", 1, 2, 3]),
                        match="TENSOR_FLOAT32 data must be numbers"),
    "bad index": bad(lambda e: e["main"].update(outputIndexes=[9]),
                     match=r"outputIndexes \[9\] out of range"),
    "bool name": bad(lambda e: e.update(name=True), match="field 'name' must be str"),
    "subgraph index": bad(lambda e: e["main"]["operands"].append(
        operand("SUBGRAPH", [], "SUBGRAPH", [3])), match="SUBGRAPH operand's data must be"),
    "negative dim": bad(lambda e: e["main"]["operands"][0].update(dimensions=[-1, 2]),
                        match="negative dimension"),
}


@pytest.mark.parametrize("case", MALFORMED, ids=list(MALFORMED))
def test_malformed_model_is_a_load_error_naming_the_fault(tmp_path, case):
    entry, match = MALFORMED[case]
    path = write_models(tmp_path / "bad.json", [entry])
    with pytest.raises(LoadError, match=match) as error:
        list(load_examples(path))
    assert str(path) in str(error.value)


@pytest.mark.parametrize("content, match", [
    (b"{not json", "not valid JSON"),
    (b'{"name": "x"}', "expected a list of test models"),
    (b"\x1f\x8b\x08garbage", "cannot read"),
])
def test_unreadable_file_is_a_load_error(tmp_path, content, match):
    path = tmp_path / ("bad.json.gz" if content.startswith(b"\x1f") else "bad.json")
    path.write_bytes(content)
    with pytest.raises(LoadError, match=match):
        list(load_examples(path))


def test_plain_and_gzipped_files_load_the_same(tmp_path):
    plain = next(load_examples(write_models(tmp_path / "m.json", [add_model()])))
    packed = next(load_examples(write_models(tmp_path / "m.json.gz", [add_model()])))
    assert plain.main.outputs[0].values.tolist() == packed.main.outputs[0].values.tolist()


def test_example_classification(tmp_path):
    loop = model_entry("loop", {
        "operands": [operand("TENSOR_FLOAT32", [1], "SUBGRAPH_INPUT", [1.0])],
        "operations": [{"type": "WHILE", "inputs": [], "outputs": []}],
        "inputIndexes": [0], "outputIndexes": [0]}, expectFailure=True)
    scalar = add_model("scalar_out")
    scalar["main"]["outputIndexes"] = [2]
    examples = list(load_examples(write_models(tmp_path / "c.json", [loop, scalar, add_model()])))
    assert [e.is_infinite_loop_test for e in examples] == [True, False, False]
    assert [e.has_scalar_outputs for e in examples] == [False, True, False]
