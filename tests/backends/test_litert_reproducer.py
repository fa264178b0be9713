"""Standalone reproducers of LiteRT's discrepancies (backends/litert/reproducer.py,
fuzz/litert_repro.py): made of a converter bug planted on purpose (ADD lowered to SUB,
tests/backends/planted_litert.py), of a case on which LiteRT and the reference agree, and
of a native crash of LiteRT. The scripts written must run with numpy and ai_edge_litert
alone and exit 1 exactly while the discrepancy reproduces. Skipped without the ``litert``
extra."""
from __future__ import annotations

import ast
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ai_edge_litert")

from backends.litert import KERNEL_SETS, builtin_ref, reproducer, standalone  # noqa: E402
from driver import SampleDriver  # noqa: E402
from driver.hal.enums import OperandType as T, OperationType  # noqa: E402
from fuzz import harness, litert_repro  # noqa: E402
from fuzz.case import ExecutionChoices, FuzzCase  # noqa: E402
from fuzz.codec import encode  # noqa: E402
from fuzz.harness import Oracles, run_case  # noqa: E402
from fuzz.oracles import ReferenceMismatchViolation  # noqa: E402
from hal_client.builder import ModelBuilder, make_request, out_like  # noqa: E402
from tests.backends.planted_litert import add_as_sub, running  # noqa: E402
from tests.fuzz.test_spec import chain as float16_chain  # noqa: E402

SHAPE = [2, 3]


def chain_case() -> FuzzCase:
    """out = RELU(a * b + c): the planted ADD is the second of three operations."""
    mb = ModelBuilder()
    g = mb.main
    a, b, c = (g.input(T.TENSOR_FLOAT32, SHAPE) for _ in range(3))
    product = g.mul(a, b)
    total = g.add(product, c)
    (out,) = g.operation(OperationType.RELU, [total], [(T.TENSOR_FLOAT32, SHAPE)])
    g.outputs(out)
    values = [np.arange(6, dtype=np.float32).reshape(SHAPE) + k for k in (1, 2, 3)]
    io = make_request(values, [out_like(np.float32, SHAPE)])
    return FuzzCase(mb.build(), io.request)


@pytest.fixture(scope="module")
def planted():
    with running(add_as_sub) as device:
        yield device


@pytest.fixture(scope="module")
def litert():
    """LiteRT as it is (the reference kernels)."""
    with running(builtin_ref) as device:
        yield device


@pytest.fixture(scope="module")
def reference():
    return SampleDriver()


def test_the_template_imports_nothing_of_the_project():
    tree = ast.parse(Path(standalone.__file__).read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert imported <= {"os", "subprocess", "sys", "tempfile", "importlib", "numpy", "ai_edge_litert"}


def test_compare_finds_the_first_and_worst_element():
    found = standalone.compare(np.array([[1.0, 5.0], [3.0, 9.0]]), np.array([[1.0, 2.0], [3.0, 4.0]]),
                               atol=0.5, rtol=0.0)
    assert found["count"] == 2 and found["size"] == 4
    assert found["first"] == {"index": [0, 1], "got": 5.0, "expected": 2.0, "abs": 3.0, "rel": 1.5}
    assert found["worst"]["index"] == [1, 1] and found["worst"]["abs"] == 5.0
    assert standalone.compare(np.array([1.0, 2.0]), np.array([1.2, 2.0]), atol=0.25, rtol=0.0) is None
    assert standalone.compare(np.array([np.nan]), np.array([1.0]), atol=1.0, rtol=0.0)["count"] == 1


def run(script: Path) -> subprocess.CompletedProcess:
    return litert_repro.run_script(script)


def test_the_diverging_operation_is_isolated(planted, reference, tmp_path):
    """With the divergence the oracle reports (operation 1, the ADD), the reproducer is that
    operation alone, fed the product the reference computes; the script exits 1."""
    case = chain_case()
    found = reproducer.reproduce(planted, reference, case, reproducer.Divergence(operation=1))
    assert found is not None and found.kind == "values" and found.origin == "operation 1"
    assert [op.type for op in found.model.main.operations] == [OperationType.ADD]
    product = np.arange(1, 7, dtype=np.float32).reshape(SHAPE) * np.arange(2, 8, dtype=np.float32).reshape(SHAPE)
    assert np.array_equal(found.inputs[0], product)
    bundle = reproducer.write(found, tmp_path / "isolated", "add")
    assert {p.name for p in bundle.folder.iterdir()} == {"add.tflite", "add.npz", "add.py"}
    assert bundle.operation == "ADD" and bundle.kind == "values"
    checked = run(bundle.script)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "REPRODUCED" in checked.stdout and "kernel set BUILTIN_REF" in checked.stdout
    assert "first: index [0, 0]" in checked.stdout and "abs diff" in checked.stdout


def test_without_a_divergence_the_whole_model_is_the_reproducer(planted, reference, tmp_path):
    found = reproducer.reproduce(planted, reference, chain_case(), None)
    assert found is not None and found.origin == "model" and len(found.model.main.operations) == 3
    assert reproducer.culprit(found).type == OperationType.RELU    # the output that differs
    checked = run(reproducer.write(found, tmp_path, "chain").script)
    assert checked.returncode == 1, checked.stdout + checked.stderr


def test_a_divergence_is_read_from_what_the_oracle_reports():
    raw = {"operation": 2, "type": "ADD", "inputs": ["TENSOR_FLOAT32", "TENSOR_FLOAT32"],
           "outputs": ["TENSOR_FLOAT32"], "parameters": ["activation RELU"], "quantization": "float",
           "driver": "litert-auto", "max_abs": 3.0, "index": 4, "subgraph": None, "bucket": "..."}
    found = reproducer.Divergence.read(raw)
    assert (found.operation, found.subgraph, found.type, found.max_abs, found.index) == (2, None, "ADD", 3.0, 4)
    assert found.operand_types == ("TENSOR_FLOAT32",) * 3 and found.parameters == ("activation RELU",)
    assert reproducer.divergence_of(sidecar={"divergence": raw}) == found
    assert reproducer.divergence_of(sidecar={}) is None


def test_a_malformed_divergence_reads_as_none():
    for raw in (None, {}, {"operation": "2"}, {"operation": True}, [1], {"operation": 1, "inputs": 5},
                {"operation": 1, "subgraph": "0"}):
        assert reproducer.Divergence.read(raw) is None, raw


def test_a_case_litert_computes_right_has_no_reproducer(litert, reference, tmp_path):
    assert reproducer.reproduce(litert, reference, chain_case(), reproducer.Divergence(1)) is None
    artifact = tmp_path / "agreed"
    artifact.write_bytes(encode(chain_case()))
    assert litert_repro.main([str(artifact), "--driver", "backends.litert:builtin_ref"]) == 1


def test_the_script_says_when_litert_agrees(planted, litert, reference, tmp_path):
    """A written script run against a .tflite LiteRT computes right (an upgrade that fixed
    it, here the correct lowering put in its place) exits 0."""
    found = reproducer.reproduce(planted, reference, chain_case(), reproducer.Divergence(1))
    bundle = reproducer.write(found, tmp_path, "add")
    right = reproducer.specimen(litert, reference, found.model, found.inputs, ExecutionChoices(), "model")
    (tmp_path / "add.tflite").write_bytes(right.content)
    checked = run(bundle.script)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "not reproduced" in checked.stdout


def comparison_between(before: int | None = None, after: int | None = None) -> FuzzCase:
    """GREATER_EQUAL of two uint8 tensors of scale 1, which LiteRT aborts in (SIGABRT) with
    any kernel set (a scale of 0.5 runs): of the inputs, or of the result of ``before``
    (MAXIMUM or ADD of the inputs), followed by ``after`` (LOGICAL_NOT), if any."""
    mb = ModelBuilder()
    g = mb.main
    a, b = (g.input(T.TENSOR_QUANT8_ASYMM, [1], scale=1.0, zero_point=127) for _ in range(2))
    first = a
    if before is not None:
        inputs = [a, b] if before == OperationType.MAXIMUM else [a, b, g.int32(0)]
        first = g.apply(before, inputs, T.TENSOR_QUANT8_ASYMM, [1], 1.0, 127)
    result = g.compare(OperationType.GREATER_EQUAL, first, b, [1])
    if after is not None:
        result = g.apply(after, [result], T.TENSOR_BOOL8, [1])
    g.outputs(result)
    io = make_request([np.array([200], np.uint8), np.array([127], np.uint8)], [out_like(np.bool_, [1])])
    return FuzzCase(mb.build(), io.request)


#: The bucket of a crash in the comparison, on the reference kernels.
COMPARISON_CRASH = ("crash (signal 6) in GREATER_EQUAL(TENSOR_QUANT8_ASYMM, TENSOR_QUANT8_ASYMM -> "
                    "TENSOR_BOOL8; asymmetric) on BUILTIN_REF")


def test_a_native_crash_is_reduced_to_its_first_crashing_operation(litert, reference, tmp_path):
    """ADD, GREATER_EQUAL, LOGICAL_NOT: LiteRT dies in the second operation, which alone,
    fed the sum the reference computes, still crashes it: it is the reproducer and the
    bucket, on every kernel set."""
    found = reproducer.reproduce(litert, reference, comparison_between(OperationType.ADD, OperationType.LOGICAL_NOT))
    assert found is not None and found.kind == "crash" and found.origin == "operation 1", found and found.origin
    assert [op.type for op in found.model.main.operations] == [OperationType.GREATER_EQUAL]
    assert [value.tolist() for value in found.inputs] == [[200], [127]]      # the sum, 73 + 0
    assert reproducer.specimen_bucket(found) == COMPARISON_CRASH
    bundle = reproducer.write(found, tmp_path, "chain")
    assert bundle.operation == "GREATER_EQUAL" and bundle.facts()["crashes_on"] == list(KERNEL_SETS.values())
    assert bundle.magnitude.endswith("; crashes on every kernel set")


def test_a_crash_that_needs_the_operations_before_is_their_prefix(litert, reference):
    """The prefix up to the comparison (where a crash needs what comes before, it is the
    reproducer): MAXIMUM and GREATER_EQUAL, the comparison's result the output, LOGICAL_NOT
    dropped. It crashes LiteRT, and its bucket names the comparison."""
    case = comparison_between(OperationType.MAXIMUM, OperationType.LOGICAL_NOT)
    prefix = reproducer.prefix_model(case.model, 1)
    assert [op.type for op in prefix.main.operations] == [OperationType.MAXIMUM, OperationType.GREATER_EQUAL]
    assert prefix.main.outputIndexes == case.model.main.operations[1].outputs
    found = reproducer.specimen(litert, reference, prefix, harness.request_values(case),
                                harness.plain_choices(case), "prefix")
    assert found is not None and found.kind == "crash"
    assert reproducer.specimen_bucket(replace(found, crashing=1)) == COMPARISON_CRASH


def test_a_native_crash_reproduces_in_a_child_process(litert, reference, tmp_path):
    """LiteRT's worker dies on the comparison: the reproducer is a crash, and its script
    runs LiteRT in a child process, reports how it died and exits 1."""
    found = reproducer.reproduce(litert, reference, comparison_between())
    assert found is not None and found.kind == "crash", found and found.kind
    bundle = reproducer.write(found, tmp_path, "compare")
    assert bundle.operation == "GREATER_EQUAL"
    assert bundle.magnitude == "crash: the LiteRT worker died (signal 6); crashes on every kernel set"
    assert "IN_CHILD = True" in bundle.script.read_text()
    checked = run(bundle.script)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "REPRODUCED: the process running LiteRT died (signal 6)" in checked.stdout


# --- the documented ambiguities, on LiteRT -----------------------------------------------------

def test_a_float16_chain_is_the_documented_ambiguity_not_a_finding(litert, reference):
    """LiteRT's lowering computes (x + c) - x in float32: [3, 0.25] where the reference,
    rounding x + c to float16, gives [0, 0]. The oracle filters it and counts it."""
    before = harness.STATS.ambiguous
    run_case(float16_chain(), litert, Oracles(reference, relations=False))
    assert harness.STATS.ambiguous == before + 1


def test_a_wrong_float16_chain_is_still_a_finding(planted, reference):
    """The near miss: the planted SUB for ADD gives [-3, -0.25], which the chain computed in
    float32 does not explain."""
    with pytest.raises(ReferenceMismatchViolation):
        run_case(float16_chain(), planted, Oracles(reference, relations=False))


def constant_dequantized() -> FuzzCase:
    """A model that is only a DEQUANTIZE of a constant int8 tensor, without inputs: LiteRT
    2.3's XNNPACK delegate takes it, then fails to set up."""
    mb = ModelBuilder()
    g = mb.main
    q = g.constant(T.TENSOR_QUANT8_ASYMM_SIGNED, [[-4]], [1, 1], scale=0.1, zero_point=-28)
    g.outputs(g.apply(OperationType.DEQUANTIZE, [q], T.TENSOR_FLOAT32, [1, 1]))
    return FuzzCase(mb.build(), make_request([], [out_like(np.float32, [1, 1])]).request)


def test_a_status_disagreement_is_bucketed_by_its_operation_whatever_the_path(reference):
    """LiteRT (XNNPACK) fails what the reference runs: the bucket is the operation and the
    kernel set; triage's bucket drops the execution path that met it (its key)."""
    from backends.litert import auto
    from fuzz.triage import Failure
    with running(auto) as xnnpack:
        found = reproducer.reproduce(xnnpack, reference, constant_dequantized())
        assert found is not None and found.kind == "error"
        bucket = "LiteRT fails: DEQUANTIZE(TENSOR_QUANT8_ASYMM_SIGNED -> TENSOR_FLOAT32; signed) on AUTO"
        assert reproducer.specimen_bucket(found) == bucket
        sync, burst = (Failure("assertion", "reference-mismatch", "", f"{path} execution vs the reference's: "
                               "output values", "", bucket="output of DEQUANTIZE") for path in ("SYNC", "BURST"))
        assert sync.signature != burst.signature
        merged = [litert_repro.localised(f, constant_dequantized(), xnnpack, reference) for f in (sync, burst)]
    assert merged[0].signature == merged[1].signature and merged[0].bucket == bucket


def test_an_interpreter_that_failed_is_not_run_again(reference):
    """XNNPACK fails the first invoke of constant_dequantized's interpreter and passes the
    next: every execution meets a fresh one, and fails alike."""
    from backends.litert import auto
    from driver.hal import ErrorStatus
    case = constant_dequantized()
    with running(auto) as xnnpack:
        statuses = [harness.run_on_values(xnnpack, case.model, [], harness.plain_choices(case)).status
                    for _ in range(3)]
    assert statuses == [ErrorStatus.GENERAL_FAILURE] * 3
