"""FuzzCases built from the test models of tests/models.py, shared by the fuzz tests: the
shapes that set off each planted bug of broken_drivers.py, and a short-loop default."""
from __future__ import annotations

import numpy as np

from driver.hal import Operand, OperandType, Operation, OperationType
from fuzz.case import ExecutionChoices, ExecutionPath, FuzzCase
from hal_client.builder import ModelBuilder
from tests import models

SHORT_LOOP_NS = 10_000_000


def make_case(model_case: models.ModelCase, path=ExecutionPath.SYNC, second=ExecutionPath.ASYNC,
              **choices) -> FuzzCase:
    choices.setdefault("loopTimeoutDuration_ns", SHORT_LOOP_NS)
    return FuzzCase(model_case.model, model_case.request(),
                    ExecutionChoices(path=path, second_path=second, **choices))


def loop_condition(operation_type: OperationType) -> models.ModelCase:
    """The counting loop with another comparison as its condition."""
    model_case = models.while_counter_model()
    model_case.model.referenced[0].operations[0].type = operation_type
    return model_case


def endless_loop_case(path: ExecutionPath, **choices) -> FuzzCase:
    """A counting loop that never counts (step 0)."""
    return make_case(models.while_counter_model(5, 0, 0), path, ExecutionPath.SYNC, **choices)


def sqrt_branch_model() -> models.ModelCase:
    """The IF model with SQRT(x) as its then branch (the branch's constants left unread)."""
    model_case = models.if_model()
    branch = model_case.model.referenced[0]
    operation = branch.operations[0]
    for unread in operation.inputs[1:]:
        branch.operands[unread].numberOfConsumers = 0
    operation.type, operation.inputs = OperationType.SQRT, operation.inputs[:1]
    return model_case


def split_model() -> models.ModelCase:
    """SPLIT of a TENSOR_FLOAT32 [2, 2] input along axis 0 into two [1, 2] outputs."""
    mb = ModelBuilder()
    graph = mb.main
    x = graph.input(OperandType.TENSOR_FLOAT32, [2, 2])
    graph.outputs(*graph.operation(OperationType.SPLIT, [x, graph.int32(0), graph.int32(2)],
                                   [(OperandType.TENSOR_FLOAT32, [1, 2])] * 2))
    value = np.array([[1.5, -2.0], [0.25, 8.0]], np.float32)
    return models.ModelCase("split", mb.build(), [value], [value[:1], value[1:]])


def tanh_model() -> models.ModelCase:
    """TANH of a TENSOR_FLOAT32 [2] input."""
    mb = ModelBuilder()
    graph = mb.main
    graph.outputs(graph.apply(OperationType.TANH, [graph.input(OperandType.TENSOR_FLOAT32, [2])],
                              OperandType.TENSOR_FLOAT32, [2]))
    value = np.array([0.5, -2.0], np.float32)
    return models.ModelCase("tanh", mb.build(), [value], [np.tanh(value)])


def six_operation_loop() -> models.ModelCase:
    """The counting loop with its body stretched to six operations: ADD, then NEG four
    times and ABS (the same count, in more steps)."""
    model_case = models.while_counter_model()
    body = model_case.model.referenced[1]
    result = body.outputIndexes[0]
    previous = len(body.operands)
    body.operands.append(Operand(OperandType.TENSOR_INT32, [1], numberOfConsumers=1))
    body.operations[0].outputs = [previous]
    for operation_type in (OperationType.NEG,) * 4 + (OperationType.ABS,):
        last = operation_type == OperationType.ABS
        target = result if last else len(body.operands)
        if not last:
            body.operands.append(Operand(OperandType.TENSOR_INT32, [1], numberOfConsumers=1))
        body.operations.append(Operation(operation_type, [previous], [target]))
        previous = target
    return model_case
