"""The compute engine behind the HAL surface.

SampleDriver's HAL surface (validation, request checks, pools, memory domains, the four
execution paths, timing, fences, bursts, caching) serves any engine; an engine only
decides which operations of a validated model it computes, and turns such a model into a
*compiled model* that runs a request's values. The bundled executor's plan is one
(``BUNDLED``); ``backends/`` holds others, over real runtimes.
"""
from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np

from .executor.plan import ModelAnalysis
from .executor.steps import ExecutionContext
from .hal.structs import Model


class CompiledModel(Protocol):
    """What executions of a prepared model run. Immutable once made: many executions run
    it at once."""

    #: positions of the main inputs an operation needs a value for (hasNoValue refused)
    required_inputs: frozenset[int]

    def run_outputs(self, inputs: list, ctx: ExecutionContext) -> list[np.ndarray]:
        """The main outputs' values (storage dtype, in output order) for the main inputs'
        values (None for an omitted one), within the limits of ``ctx`` (deadline, loop
        timeout, memory budget). A failure raises a DriverError with the HAL status the
        execution ends with; nothing else may escape."""


class OperandValues(Protocol):
    """What a compiled model may offer besides, for diagnosis only: the fuzz harness asks
    for it (through SamplePreparedModel.operand_values) after a wrong answer, to find the
    first operation that computed differently from a reference. A compiled model without
    it is judged by its outputs alone."""

    def operand_values(self, inputs: list, ctx: ExecutionContext) -> dict[int, np.ndarray]:
        """The value of each main-subgraph operand a run on ``inputs`` computes, by operand
        index, in the layout and storage dtype of the operand (those it does not keep left
        out). Raises as run_outputs does."""


class Engine(Protocol):
    def supports(self, model: Model, analysis: ModelAnalysis) -> Sequence[bool]:
        """Per operation of the main subgraph, whether this engine computes it, for a model
        validation accepted (``analysis``: what the bundled compiler found). The device
        reports an operation supported when both this and its own analysis say so.
        Never raises."""

    def compile(self, model: Model, analysis: ModelAnalysis) -> CompiledModel:
        """The compiled model of a validated model whose main operations are all supported;
        raises a DriverError (GENERAL_FAILURE at worst) when it cannot."""


class BundledEngine:
    """The bundled executor: the plans compile_model made while validating."""

    def supports(self, model: Model, analysis: ModelAnalysis) -> Sequence[bool]:
        return analysis.supported[0]

    def compile(self, model: Model, analysis: ModelAnalysis) -> CompiledModel:
        return analysis.plans[0]


BUNDLED = BundledEngine()
