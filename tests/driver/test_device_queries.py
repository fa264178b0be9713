"""IDevice queries (the cache files asked for: test_compilation_cache; allocate:
test_memory_domains), and getSupportedOperations_1_3 for control flow: IF and WHILE are
supported only if every operation of every subgraph they reach is."""
from __future__ import annotations

import math

import numpy as np
import pytest

from driver.device import SampleDriver
from driver.hal.enums import (DeviceStatus, DeviceType, ErrorStatus, OperandType as T,
                              OperationType as Op)
from driver.hal.structs import Capabilities
from driver.operations.registry import lookup
from hal_client.builder import ModelBuilder, SubgraphBuilder, make_request, out_like
from tests.driver.execution import Path, execute, prepare, prepare_status


@pytest.fixture(scope="module")
def device():
    return SampleDriver()


def test_capabilities(device):
    status, capabilities = device.getCapabilities_1_3()
    assert status == ErrorStatus.NONE
    assert isinstance(capabilities, Capabilities)
    types = [entry.type for entry in capabilities.operandPerformance]
    assert types == sorted(set(types)), "operandPerformance must be sorted by type, without repeats"
    assert T.SUBGRAPH not in types, "no operand performance may be reported for SUBGRAPH"
    infos = [entry.info for entry in capabilities.operandPerformance] + [
        capabilities.relaxedFloat32toFloat16PerformanceScalar,
        capabilities.relaxedFloat32toFloat16PerformanceTensor,
        capabilities.ifPerformance, capabilities.whilePerformance]
    for info in infos:
        assert math.isfinite(info.execTime) and info.execTime > 0
        assert math.isfinite(info.powerUsage) and info.powerUsage > 0


def test_type_version_extensions_status(device):
    status, device_type = device.getType()
    assert status == ErrorStatus.NONE and device_type in set(DeviceType)
    status, version = device.getVersionString()
    assert status == ErrorStatus.NONE and isinstance(version, str) and version
    status, extensions = device.getSupportedExtensions()
    assert status == ErrorStatus.NONE and isinstance(extensions, list)
    assert device.getStatus() in set(DeviceStatus)


# --- getSupportedOperations_1_3 -----------------------------------------------------------

def test_every_operation_of_hal_1_3_is_implemented():
    """The driver is complete: every operation type of HAL 1.3 has a registered definition,
    but IF and WHILE (the executor's own) and OEM_OPERATION (vendor-defined, with no
    semantics to implement). Each signature variant's seed model is claimed supported and
    runs (tests/fuzz/test_mutator.py), and the CTS models cover every operand type."""
    missing = [operation.name for operation in Op
               if operation not in (Op.IF, Op.WHILE, Op.OEM_OPERATION) and lookup(operation) is None]
    assert missing == []


def unsupported_operation() -> Op:
    """An operation type that validation accepts but this driver does not implement."""
    for operation in Op:
        if operation not in (Op.IF, Op.WHILE) and lookup(operation) is None:
            return operation
    pytest.skip("every operation type is implemented")


def loop(mb: ModelBuilder, caller: SubgraphBuilder, x: int, *, body_op: Op = Op.ADD,
         cond_op: Op = Op.LESS) -> int:
    """WHILE x < 10: x = body_op(x) on TENSOR_FLOAT32 [1]; ``body_op``/``cond_op`` other than
    ADD/LESS are used with a one-input signature (never executed)."""
    cond = mb.subgraph()
    value = cond.input(T.TENSOR_FLOAT32, [1])
    ten = cond.constant(T.TENSOR_FLOAT32, [10])
    cond.outputs(cond.compare(Op.LESS, value, ten) if cond_op == Op.LESS
                 else cond.apply(cond_op, [value], T.TENSOR_BOOL8, [1]))
    body = mb.subgraph()
    value = body.input(T.TENSOR_FLOAT32, [1])
    body.outputs(body.add(value, body.constant(T.TENSOR_FLOAT32, [1])) if body_op == Op.ADD
                 else body.apply(body_op, [value], T.TENSOR_FLOAT32, [1]))
    return caller.while_(cond, body, [x])[0]


def test_while_with_supported_subgraphs_is_supported(device):
    """The WHILE, and the plain ADD after it."""
    mb = ModelBuilder()
    x = mb.main.input(T.TENSOR_FLOAT32, [1])
    mb.main.outputs(mb.main.add(loop(mb, mb.main, x), x))
    assert device.getSupportedOperations_1_3(mb.build()) == (ErrorStatus.NONE, [True, True])


@pytest.mark.parametrize("where", ["body", "condition"])
def test_while_reaching_an_unsupported_operation_is_unsupported(device, where):
    missing = unsupported_operation()
    mb = ModelBuilder()
    x = mb.main.input(T.TENSOR_FLOAT32, [1])
    kwargs = {"body_op": missing} if where == "body" else {"cond_op": missing}
    mb.main.outputs(mb.main.add(loop(mb, mb.main, x, **kwargs), x))
    model = mb.build()
    assert device.getSupportedOperations_1_3(model) == (ErrorStatus.NONE, [False, True])
    launch, status, prepared = prepare_status(device, model)
    assert status != ErrorStatus.NONE and prepared is None
    assert launch in (ErrorStatus.NONE, status)


def test_support_is_transitive_through_nested_control_flow(device):
    """main: IF(c, then: WHILE(body uses the unsupported operation), else: x + 1)."""
    missing = unsupported_operation()
    mb = ModelBuilder()
    then, otherwise = mb.subgraph(), mb.subgraph()
    x = then.input(T.TENSOR_FLOAT32, [1])
    then.outputs(loop(mb, then, x, body_op=missing))
    x = otherwise.input(T.TENSOR_FLOAT32, [1])
    otherwise.outputs(otherwise.add(x, otherwise.constant(T.TENSOR_FLOAT32, [1])))
    c, x = mb.main.input(T.TENSOR_BOOL8, [1]), mb.main.input(T.TENSOR_FLOAT32, [1])
    mb.main.outputs(*mb.main.if_(c, then, otherwise, [x]))
    model = mb.build()
    assert device.getSupportedOperations_1_3(model) == (ErrorStatus.NONE, [False])
    _launch, status, prepared = prepare_status(device, model)
    assert status != ErrorStatus.NONE and prepared is None


def test_unreferenced_subgraph_does_not_affect_support(device):
    missing = unsupported_operation()
    mb = ModelBuilder()
    x = mb.main.input(T.TENSOR_FLOAT32, [1])
    mb.main.outputs(loop(mb, mb.main, x))
    orphan = mb.subgraph()
    y = orphan.input(T.TENSOR_FLOAT32, [1])
    orphan.outputs(orphan.apply(missing, [y], T.TENSOR_FLOAT32, [1]))
    model = mb.build()
    assert device.getSupportedOperations_1_3(model) == (ErrorStatus.NONE, [True])
    prepared = prepare(model, device)
    io = make_request([np.array([2.5], np.float32)], [out_like(np.float32, [1])])
    assert execute(prepared, io.request, Path.SYNC).status == ErrorStatus.NONE
    assert io.output(0, [1]).tolist() == [10.5]
