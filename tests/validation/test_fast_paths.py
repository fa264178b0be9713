"""The fast paths of validation (operand_is_plainly_valid, operation_is_plainly_valid) may
only accept what the detailed checks accept: on every operand and operation of the test
models, their one-field mutations and a few thousand fuzz inputs, whenever a fast path
says yes, the detailed check must pass."""
from __future__ import annotations

import dataclasses
import math
import random
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

from driver.errors import ValidationError
from driver.hal import (DataLocation, Model, Operand, OperandLifeTime as L, OperandType as T,
                        Subgraph)
from driver.operands import constant_value, operation_context, subgraph_infos
from driver.operations.registry import OperandInfo
from driver.validation.compat import check_compatible, compatible
from driver.validation.graph import check_operation, operation_is_plainly_valid
from driver.validation.model import check_extension_table, check_pools
from driver.validation.operand import (ModelStorage, check_operand, operand_is_plainly_valid,
                                       storage_of)
from fuzz import codec, mutator
from tests.models import ALL_MODELS
from tests.validation.mutations import all_model_mutations, valid_variants

CORPUS = Path(__file__).resolve().parents[2] / "corpus"


def _fuzz_models(count: int) -> Iterator[Model]:
    inputs = [path.read_bytes() for path in sorted(CORPUS.iterdir()) if path.is_file()]
    rng = random.Random(7)
    for data in inputs:
        yield codec.decode(data).model
    for _ in range(count):
        data = mutator.mutate(rng.choice(inputs), 4096, rng.randrange(1 << 30))
        yield codec.decode(data).model


def _all_models() -> Iterator[Model]:
    for build in ALL_MODELS.values():
        yield build().model
    for make in valid_variants().values():
        yield make()
    for mutation in all_model_mutations():
        yield mutation.invalid_model()
    yield from _fuzz_models(1000)


def _storage(model: Model) -> ModelStorage | None:
    try:
        prefixes = check_extension_table(model.extensionNameToPrefix)
        check_pools(model.pools)
    except ValidationError:
        return None
    if not isinstance(model.operandValues, (bytes, bytearray)):
        return None
    return storage_of(model, prefixes)


def _accepted(check, *args) -> bool:
    try:
        check(*args)
    except ValidationError:
        return False
    return True


def test_fast_paths_accept_only_what_the_detailed_checks_accept():
    wrongly_accepted: list[str] = []
    fast_operands = fast_operations = 0
    for model in _all_models():
        storage = _storage(model)
        if storage is None or not isinstance(model.referenced, list):
            continue
        subgraphs = [subgraph for subgraph in [model.main, *model.referenced]
                     if isinstance(subgraph, Subgraph) and isinstance(subgraph.operands, list)
                     and isinstance(subgraph.operations, list)]
        operands_valid = True
        for s, subgraph in enumerate(subgraphs):
            for index, operand in enumerate(subgraph.operands):
                accepted = _accepted(check_operand, operand, storage, "here")
                operands_valid = operands_valid and accepted
                if operand_is_plainly_valid(operand, storage):
                    fast_operands += 1
                    if not accepted:
                        wrongly_accepted.append(f"subgraph {s} operand {index}: {operand}")
        if not operands_valid:
            continue    # operations are only checked once every operand is valid
        for s, subgraph in enumerate(subgraphs):
            for op_index, operation in enumerate(subgraph.operations):
                if operation_is_plainly_valid(operation, subgraph.operands):
                    fast_operations += 1
                    if not _accepted(check_operation, operation, op_index, subgraph.operands,
                                     storage.extension_prefixes, "here"):
                        wrongly_accepted.append(f"subgraph {s} operation {op_index}: {operation}")
    assert wrongly_accepted == []
    assert fast_operands > 5_000 and fast_operations > 1_000   # the fast paths do run


@pytest.mark.parametrize("name", sorted(ALL_MODELS))
def test_plain_operands_of_the_test_models_take_the_fast_path(name):
    model = ALL_MODELS[name]().model
    storage = _storage(model)
    for subgraph in [model.main, *model.referenced]:
        for operand in subgraph.operands:
            unusual = operand.type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL or operand.type > 0xFFFF
            assert operand_is_plainly_valid(operand, storage) != unusual, operand


def _storage_for_edges() -> ModelStorage:
    return ModelStorage(operand_values_size=64, pool_sizes=(32,), referenced_count=1,
                        extension_prefixes=frozenset())


EDGE_OPERANDS = {
    "positive scale of -0.0": Operand(T.TENSOR_QUANT8_ASYMM, [2], scale=-0.0,
                                      lifetime=L.SUBGRAPH_INPUT),
    "positive scale of 0.0": Operand(T.TENSOR_QUANT8_ASYMM, [2], scale=0.0,
                                     lifetime=L.SUBGRAPH_INPUT),
    "smallest positive double scale (0 as a float32)": Operand(
        T.TENSOR_QUANT8_ASYMM, [2], scale=5e-324, lifetime=L.SUBGRAPH_INPUT),
    "scale rounding to 0 as a float32": Operand(T.TENSOR_QUANT8_ASYMM, [2], scale=2.0 ** -150,
                                                lifetime=L.SUBGRAPH_INPUT),
    "smallest positive float32 scale": Operand(T.TENSOR_QUANT8_ASYMM, [2], scale=2.0 ** -149,
                                               lifetime=L.SUBGRAPH_INPUT),
    "NaN scale": Operand(T.TENSOR_QUANT8_ASYMM, [2], scale=math.nan, lifetime=L.SUBGRAPH_INPUT),
    "infinite OEM scale": Operand(T.TENSOR_OEM_BYTE, [2], scale=math.inf,
                                  lifetime=L.SUBGRAPH_INPUT),
    "largest float32 scale": Operand(T.TENSOR_INT32, [2], scale=3.4028234663852886e38,
                                     lifetime=L.SUBGRAPH_INPUT),
    "negative zero scale of TENSOR_INT32": Operand(T.TENSOR_INT32, [2], scale=-0.0,
                                                   lifetime=L.SUBGRAPH_INPUT),
    "dimensions product at the limit": Operand(T.TENSOR_QUANT8_ASYMM, [65536, 65535, 0],
                                               scale=1.0, lifetime=L.SUBGRAPH_INPUT),
    "dimensions product past the limit": Operand(T.TENSOR_QUANT8_ASYMM, [65536, 65536, 0],
                                                 scale=1.0, lifetime=L.SUBGRAPH_INPUT),
    "negative dimension": Operand(T.TENSOR_FLOAT32, [-1, -2], lifetime=L.SUBGRAPH_INPUT),
    "constant of exact size": Operand(T.TENSOR_FLOAT32, [4], lifetime=L.CONSTANT_COPY,
                                      location=DataLocation(0, 48, 16)),
    "constant past operandValues": Operand(T.TENSOR_FLOAT32, [4], lifetime=L.CONSTANT_COPY,
                                           location=DataLocation(0, 52, 16)),
    "constant of unknown rank": Operand(T.TENSOR_FLOAT32, [], lifetime=L.CONSTANT_COPY,
                                        location=DataLocation(0, 0, 0)),
    "constant with a zero dimension": Operand(T.TENSOR_FLOAT32, [0], lifetime=L.CONSTANT_COPY,
                                              location=DataLocation(0, 0, 0)),
    "pool constant at the end": Operand(T.INT32, [], lifetime=L.CONSTANT_REFERENCE,
                                        location=DataLocation(0, 28, 4)),
    "pool constant of a missing pool": Operand(T.INT32, [], lifetime=L.CONSTANT_REFERENCE,
                                               location=DataLocation(1, 0, 4)),
    "negative offset": Operand(T.INT32, [], lifetime=L.CONSTANT_REFERENCE,
                               location=DataLocation(0, -4, 4)),
    "subgraph reference": Operand(T.SUBGRAPH, [], lifetime=L.SUBGRAPH,
                                  location=DataLocation(0, 0, 0)),
    "subgraph reference out of range": Operand(T.SUBGRAPH, [], lifetime=L.SUBGRAPH,
                                               location=DataLocation(0, 1, 0)),
    "temporary with a location": Operand(T.INT32, [], lifetime=L.TEMPORARY_VARIABLE,
                                         location=DataLocation(0, 0, 4)),
    "zero point at the top of its range": Operand(T.TENSOR_QUANT16_ASYMM, [1], scale=1.0,
                                                  zeroPoint=65535, lifetime=L.SUBGRAPH_INPUT),
    "zero point past its range": Operand(T.TENSOR_QUANT16_ASYMM, [1], scale=1.0,
                                         zeroPoint=65536, lifetime=L.SUBGRAPH_INPUT),
    "consumers past uint32": Operand(T.INT32, [], numberOfConsumers=2 ** 32,
                                     lifetime=L.SUBGRAPH_INPUT),
}


@pytest.mark.parametrize("name", sorted(EDGE_OPERANDS))
def test_edge_operands_get_the_detailed_verdict(name):
    operand = EDGE_OPERANDS[name]
    storage = _storage_for_edges()
    if operand_is_plainly_valid(operand, storage):
        check_operand(operand, storage, "here")     # must not raise


def test_edge_operands_include_fast_accepts():
    storage = _storage_for_edges()
    accepted = {name for name, operand in EDGE_OPERANDS.items()
                if operand_is_plainly_valid(operand, storage)}
    assert {"smallest positive float32 scale", "constant of exact size", "pool constant at the end",
            "subgraph reference", "dimensions product at the limit",
            "zero point at the top of its range", "largest float32 scale",
            "negative zero scale of TENSOR_INT32"} <= accepted
    assert not {"smallest positive double scale (0 as a float32)",
                "scale rounding to 0 as a float32"} & accepted
    for name in ("smallest positive double scale (0 as a float32)", "scale rounding to 0 as a float32"):
        with pytest.raises(ValidationError, match="0 as a float32"):
            check_operand(EDGE_OPERANDS[name], storage, "here")


# --- the views operations see -----------------------------------------------------------

@pytest.mark.parametrize("name", sorted(ALL_MODELS))
def test_operand_infos_and_contexts_carry_the_right_fields(name):
    """operand_info and operation_context build their dataclasses positionally: each
    field must still get its own value."""
    model = ALL_MODELS[name]().model
    for subgraph in [model.main, *model.referenced]:
        infos = subgraph_infos(model, subgraph)
        for index, (operand, info) in enumerate(zip(subgraph.operands, infos)):
            expected = OperandInfo(
                index=index, type=operand.type, dimensions=tuple(operand.dimensions),
                scale=operand.scale, zeroPoint=operand.zeroPoint,
                lifetime=L(operand.lifetime), value=constant_value(model, operand),
                channelQuant=operand.extraParams.channelQuant)
            for field in dataclasses.fields(OperandInfo):
                got, want = getattr(info, field.name), getattr(expected, field.name)
                if field.name == "value" and want is not None:
                    assert got.dtype == want.dtype and np.array_equal(got, want)
                    assert not got.flags.writeable
                else:
                    assert got == want and type(got) is type(want), field.name
        for op_index, operation in enumerate(subgraph.operations):
            if operation.type > 0xFFFF:
                continue
            context = operation_context(model, subgraph, op_index, infos)
            assert context.type == operation.type and context.index == op_index
            assert context.inputs == tuple(infos[i] for i in operation.inputs)
            assert context.outputs == tuple(infos[i] for i in operation.outputs)
            assert context.relaxed is model.relaxComputationFloat32toFloat16


def test_compatible_agrees_with_check_compatible():
    operands = [operand for build in ALL_MODELS.values()
                for subgraph in [build().model.main, *build().model.referenced]
                for operand in subgraph.operands]
    variants = []
    for operand in operands[:40]:
        variants += [operand, dataclasses.replace(operand, dimensions=[]),
                     dataclasses.replace(operand, dimensions=[0] * len(operand.dimensions)),
                     dataclasses.replace(operand, scale=operand.scale + 1),
                     dataclasses.replace(operand, zeroPoint=operand.zeroPoint + 1)]
    for outer in variants:
        for inner in variants[::7]:
            assert compatible(outer, inner) == _accepted(check_compatible, outer, inner, "here")
