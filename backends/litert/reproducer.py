"""Standalone reproducers of LiteRT's discrepancies with the reference driver.

A finding of the fuzzer (a fuzz input: model, request, choices) is turned into what an
engineer of LiteRT can run without this project: the .tflite LiteRT ran, the inputs it
received, the outputs the reference computes for them, and a copy of standalone.py that
runs the model with the finding's kernel set and says whether LiteRT still disagrees.

``reproduce`` runs a case on the LiteRT device (its engine records the .tflite and the
inputs of each execution: ``LiteRTEngine.recording``) and on the reference, through the
HAL, and keeps the first of these that still shows the discrepancy:

1. the first diverging operation alone, when the finding says which one it is (its
   ``divergence``, read by ``Divergence.read``): a model of that one operation, lowered by
   the same converter, fed the values the reference computes for its inputs;
2. the case's whole model;
3. for a finding of a metamorphic relation (LiteRT against itself), the rewritten model.

A discrepancy is a wrong value (beyond the accuracy criteria, hal_client/accuracy.py),
LiteRT failing what the reference runs, LiteRT giving outputs where the reference fails the
execution (NNAPI defines none), or LiteRT's worker dying (a native crash).
"""
from __future__ import annotations

import copy
import re
import stat
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from driver.errors import ValidationError
from driver.hal import ErrorStatus, Model, Operation, Subgraph
from driver.hal.dtypes import STORAGE_DTYPE
from driver.hal.enums import SCALAR_OPERAND_TYPES, OperandLifeTime as L
from driver.operands import subgraph_infos
from fuzz import harness, relations, routes
from fuzz.case import ExecutionChoices, FuzzCase, Relation
from fuzz.divergence import describe_operation as selected_kernel, kernel_text, one_operation_model
from fuzz.oracles import computes_in_float16
from fuzz.spec import with_outputs
from hal_client.accuracy import tolerance_for

from . import standalone
from .engine import UNBOUNDED_LIMIT_NS
from .worker import KERNEL_SETS, Worker, WorkerDied, WorkerTimeout

#: What a standalone reproducer folder holds besides its script.
TFLITE, ARRAYS, SCRIPT = ".tflite", ".npz", ".py"


litert_version = standalone.litert_version


# --- what the oracle says of the first diverging operation -----------------------------------

@dataclass(frozen=True)
class Divergence:
    """The first operation whose results differ from the reference's, as the reference
    oracle reports it: a mapping, its failure's or its sidecar's ``divergence``, with the keys
    operation, subgraph, type, inputs and outputs (operand types), parameters, driver,
    max_abs and index. Only ``operation`` is needed: its index among the main subgraph's
    operations (``subgraph`` None; an index of Model.referenced otherwise, which the whole
    model stands for); the rest describes it. Anything missing or malformed reads as no
    divergence: the whole model."""
    operation: int
    subgraph: Optional[int] = None
    type: str = ""
    operand_types: tuple[str, ...] = ()
    parameters: tuple[str, ...] = ()
    driver: str = ""
    max_abs: Optional[float] = None
    index: Optional[int] = None

    @classmethod
    def read(cls, raw: Any) -> "Divergence | None":
        if not isinstance(raw, Mapping) or type(raw.get("operation")) is not int:
            return None
        subgraph = raw.get("subgraph")
        if subgraph is not None and type(subgraph) is not int:
            return None
        try:
            return cls(raw["operation"], subgraph, str(raw.get("type", "")),
                       tuple(str(t) for t in (*raw.get("inputs", ()), *raw.get("outputs", ()))),
                       tuple(str(p) for p in raw.get("parameters", ())), str(raw.get("driver", "")),
                       _number(raw.get("max_abs")), _number(raw.get("index")))
        except TypeError:
            return None


def _number(value: Any):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def divergence_of(failure: Any = None, sidecar: Optional[Mapping] = None) -> Divergence | None:
    """The divergence a triage Failure or a sidecar carries, if any."""
    raw = getattr(failure, "divergence", None) if failure is not None else None
    if raw is None and sidecar is not None:
        raw = sidecar.get("divergence")
    return Divergence.read(raw)


# --- a specimen: one model run by LiteRT and by the reference ----------------------------------

@dataclass
class Specimen:
    """A model and its inputs, run by LiteRT and by the reference: what a standalone
    reproducer is made of. ``content`` and ``inputs`` are what LiteRT ran; ``expected`` the
    reference's outputs, ``compared`` the positions of those judged (NaN or infinite ones
    are not, as in the oracle)."""
    model: Model
    kernel_set: str
    content: bytes
    inputs: list[np.ndarray]
    status: ErrorStatus                  # LiteRT's
    got: list[np.ndarray]
    crash: Optional[str]
    expected: list[np.ndarray]
    compared: list[int]
    reference_status: ErrorStatus = ErrorStatus.NONE
    #: where it comes from: "operation N" (isolated), "operations 0 to N" (a crash's
    #: prefix: first_crash), "model", "relation NAME"
    origin: str = "model"
    #: the operation of ``model``'s main subgraph whose run crashes LiteRT, and what of
    #: its operands' values the crash's bucket names (first_crash, crash_conditions)
    crashing: Optional[int] = None
    conditions: tuple[str, ...] = ()

    def tolerance(self, k: int):
        operand = self.model.main.operands[self.model.main.outputIndexes[k]]
        return tolerance_for(operand.type, float16_criterion=computes_in_float16(self.model))

    def dtype(self, k: int) -> np.dtype:
        return STORAGE_DTYPE[self.model.main.operands[self.model.main.outputIndexes[k]].type]

    def differences(self) -> dict[int, dict]:
        """Per compared output that differs: standalone.compare's account (a shape that
        differs: {"shape": got, "expected shape": expected})."""
        if self.status != ErrorStatus.NONE or self.crash:
            return {}
        found = {}
        for k in self.compared:
            got, want = self.got[k], self.expected[k]
            if got.shape != want.shape:
                found[k] = {"shape": list(got.shape), "expected shape": list(want.shape)}
                continue
            tolerance = self.tolerance(k)
            difference = standalone.compare(got, want, tolerance.atol, tolerance.rtol)
            if difference is not None:
                found[k] = difference
        return found

    @property
    def kind(self) -> str:
        """crash; error (LiteRT failed what the reference ran); accepts (LiteRT gave outputs
        where the reference failed the execution: NNAPI defines none); values (wrong ones);
        or none."""
        if self.crash:
            return "crash"
        if self.reference_status != ErrorStatus.NONE:
            return "accepts" if self.status == ErrorStatus.NONE else "none"
        if self.status != ErrorStatus.NONE:
            return "error"
        return "values" if self.differences() else "none"


def specimen(device: Any, reference: Any, model: Model, inputs: Sequence[Optional[np.ndarray]],
             choices: ExecutionChoices, origin: str) -> Specimen | None:
    """The model run by LiteRT (recorded) and by the reference; None when LiteRT never ran
    it, or, but for a crash of LiteRT (never right), when the reference did not prepare it
    or failed it otherwise than at run time (GENERAL_FAILURE: an operation's run-time
    conditions unmet, where NNAPI defines no result)."""
    expected = harness.run_on_values(reference, model, inputs, choices)
    engine = device.engine
    engine.take_crashes()
    engine.recording = []
    try:
        got = harness.run_on_values(device, model, inputs, choices)
    finally:
        recorded, engine.recording = engine.recording, None
    crash = "; ".join(engine.take_crashes()) or None
    if not recorded or (crash is None and expected.status not in (ErrorStatus.NONE, ErrorStatus.GENERAL_FAILURE)):
        return None
    content, values = recorded[-1]
    compared = [k for k, value in enumerate(expected.outputs)
                if value.dtype.kind != "f" or np.isfinite(value).all()]
    return Specimen(model, engine.resolver, content, list(values), got.status, list(got.outputs), crash,
                    list(expected.outputs), compared, reference_status=expected.status, origin=origin)


# --- the first diverging operation alone --------------------------------------------------------

def operation_inputs(device: Any, reference: Any, model: Model, inputs: list, index: int,
                     choices: ExecutionChoices) -> dict[int, Optional[np.ndarray]] | None:
    """The values of main operation ``index``'s operands that are not constants: the model's
    inputs given, the temporaries as the reference computes them running the operations
    before ``index`` (as LiteRT does where the reference fails them: it may fail the same
    operations as NNAPI defines no result for them, where LiteRT crashes later). None:
    neither runs them."""
    main = model.main
    values: dict[int, Optional[np.ndarray]] = dict(zip(main.inputIndexes, inputs))
    temporaries = [i for i in dict.fromkeys(main.operations[index].inputs)
                   if main.operands[i].lifetime in (L.TEMPORARY_VARIABLE, L.SUBGRAPH_OUTPUT)]
    if not temporaries:
        return values
    before = prefix_model(model, index - 1, temporaries)
    for driver in (reference, device):
        run = harness.run_on_values(driver, before, inputs, choices)
        if run.status == ErrorStatus.NONE:
            return {**values, **dict(zip(before.main.outputIndexes, run.outputs))}
    return None


def alone(device: Any, reference: Any, model: Model, index: int,
          values: Mapping[int, Optional[np.ndarray]], choices: ExecutionChoices) -> Specimen | None:
    """The specimen of main operation ``index`` alone, fed ``values`` (operation_inputs)."""
    one, one_inputs = one_operation_model(model, model.main.operations[index], values)
    return specimen(device, reference, one, one_inputs, choices, f"operation {index}")


def isolated(device: Any, reference: Any, case: FuzzCase, inputs: list, divergence: Divergence,
             choices: ExecutionChoices) -> Specimen | None:
    """The specimen of the first diverging operation alone (None: it cannot be isolated,
    or alone it does not diverge)."""
    if divergence.subgraph is not None or not 0 <= divergence.operation < len(case.model.main.operations):
        return None
    values = operation_inputs(device, reference, case.model, inputs, divergence.operation, choices)
    found = alone(device, reference, case.model, divergence.operation, values, choices) if values is not None else None
    return found if found is not None and found.kind != "none" else None


# --- the first crashing operation ---------------------------------------------------------------

def prefix_model(model: Model, last: int, results: Optional[Sequence[int]] = None) -> Model:
    """The model cut after main operation ``last``, ``results`` made outputs too (by default
    the results of ``last``). The operands only later operations wrote are left omitted
    (NO_VALUE): the operands keep their indexes."""
    main = copy.deepcopy(model.main)
    main.operations, dropped = main.operations[:last + 1], main.operations[last + 1:]
    unwritten = {o for operation in dropped for o in operation.outputs}
    for operation in dropped:
        for index in operation.inputs:
            main.operands[index].numberOfConsumers -= 1
    for index in unwritten:
        operand = main.operands[index]
        operand.lifetime, operand.location = L.NO_VALUE, type(operand.location)()
    main.outputIndexes = [i for i in main.outputIndexes if i not in unwritten]
    results = main.operations[last].outputs if results is None else results
    return with_outputs(replace(model, main=main), [i for i in results if i not in main.outputIndexes])


def first_crash(device: Any, reference: Any, model: Model, inputs: list,
                choices: ExecutionChoices) -> Specimen | None:
    """The specimen of the first main operation whose run crashes LiteRT: that operation
    alone, fed the values the reference computes for its inputs, when alone it crashes;
    else the shortest prefix of the main operations that crashes (``prefix_model``). None:
    no prefix crashes. (A crash inside an IF or a WHILE is found at the IF or WHILE.)"""
    for last in range(len(model.main.operations)):
        prefix = prefix_model(model, last)
        found = specimen(device, reference, prefix, inputs, choices, f"operations 0 to {last}")
        if found is None or found.kind != "crash":
            continue
        values = operation_inputs(device, reference, prefix, inputs, last, choices)
        operation = prefix.main.operations[last]
        known = {**(values or {}), **dict(zip(prefix.main.outputIndexes, found.expected))}
        conditions = crash_conditions([known.get(i) for i in (*operation.inputs, *operation.outputs)])
        single = alone(device, reference, prefix, last, values, choices) if values is not None else None
        if single is not None and single.kind == "crash":
            return replace(single, crashing=0, conditions=conditions)
        return replace(found, crashing=last, conditions=conditions)
    return None


#: The most dimensions LiteRT's kernels hold in place (its RuntimeShape keeps 6 inline,
#: XNNPACK's tensors have at most 6): a value of more is a condition of a crash.
KERNEL_RANK = 6


def crash_conditions(values: Sequence[Optional[np.ndarray]]) -> tuple[str, ...]:
    """What of an operation's operand values (None: not known) a crash's bucket names: a
    zero-sized one; one of a rank above KERNEL_RANK."""
    shapes = [np.shape(value) for value in values if value is not None]
    return (*(["zero-sized operand"] if any(0 in shape for shape in shapes) else []),
            *([f"rank above {KERNEL_RANK}"] if any(len(shape) > KERNEL_RANK for shape in shapes) else []))


def death(found: Specimen) -> str:
    """How LiteRT's worker died: 'signal 11', 'exit status 1' (as its crash message says)."""
    said = re.search(r"died \(([^)]*)\)", found.crash or "")
    return said.group(1) if said else "unknown"


#: What a status disagreement's bucket says LiteRT did, by the specimen's kind.
STATUS_DISAGREEMENTS = {"error": "LiteRT fails", "accepts": "LiteRT returns outputs where the reference fails"}


def specimen_bucket(found: Specimen) -> str | None:
    """The bucket of a crash or a status disagreement, by the operation the reduced
    specimen is about and the kernel set, not by the execution path that met it (LiteRT
    computes alike on every path): 'crash (signal 11) in SOFTMAX(TENSOR_FLOAT32 ->
    TENSOR_FLOAT32; zero-sized operand; float) on AUTO' (how the worker died, the first
    operation whose run crashes, by what selects its kernel (fuzz/divergence.py) and the
    crash's conditions), 'LiteRT fails DEQUANTIZE(...) on AUTO'. None: a wrong value
    (bucketed by its first diverging operation), or no operation was found."""
    if found.kind == "crash" and found.crashing is not None:
        type_, inputs, outputs, _, quantization = selected_kernel(found.model, found.model.main.operations[found.crashing])
        return (f"crash ({death(found)}) in {kernel_text(type_, inputs, outputs, found.conditions, quantization)} "
                f"on {found.kernel_set}")
    operation = culprit(found) if found.kind in STATUS_DISAGREEMENTS else None
    if operation is None:
        return None
    return f"{STATUS_DISAGREEMENTS[found.kind]}: {kernel_text(*selected_kernel(found.model, operation))} on {found.kernel_set}"


#: What the outputs of such a run may take.
CRASH_RUN_BUDGET_BYTES = 1 << 30


def crashing_kernel_sets(found: Specimen) -> tuple[str, ...]:
    """The kernel sets whose run of the specimen's .tflite and inputs crashes LiteRT (a
    worker of each runs it once)."""
    crashing = []
    for kernel_set in KERNEL_SETS.values():
        worker = Worker(kernel_set)
        try:
            limit_ns = time.monotonic_ns() + UNBOUNDED_LIMIT_NS
            if worker.load(b"", found.content, limit_ns)[0] == "ok":
                worker.run(b"", found.inputs, CRASH_RUN_BUDGET_BYTES, limit_ns)
        except WorkerDied:
            crashing.append(kernel_set)
        except WorkerTimeout:
            pass
        finally:
            worker.close()
    return tuple(crashing)


def reproduce(device: Any, reference: Any, case: FuzzCase,
              divergence: Divergence | None = None) -> Specimen | None:
    """The smallest specimen that shows the case's discrepancy (see the module's
    docstring), or None when none does."""
    choices = harness.plain_choices(case)
    try:
        inputs = harness.request_values(case)
    except ValidationError:
        return None
    if divergence is not None:
        found = isolated(device, reference, case, inputs, divergence, choices)
        if found is not None:
            return found
    candidates = [(case.model, inputs, "model")]
    relation = case.choices.relation
    if relation in relations.RULES and relation not in routes.ROUTES:
        derived = relations.RULES[relation].derive(case.model, harness.with_fresh_pools(
            case.request, harness.snapshot_pools(case.request)))
        try:
            if derived is not None:
                candidates.append((derived[0], harness.request_values(FuzzCase(*derived)),
                                   f"relation {Relation(relation).name}"))
        except ValidationError:
            pass
    for model, values, origin in candidates:
        found = specimen(device, reference, model, values, choices, origin)
        if found is not None and found.kind == "crash":
            return first_crash(device, reference, model, values, choices) or found
        if found is not None and found.kind != "none":
            return found
    return None


# --- what it says --------------------------------------------------------------------------------

#: Constant tensors up to this many elements are described with their values.
SHOWN_CONSTANT = 8


def operand_text(subgraph: Subgraph, index: int, infos) -> str:
    """An operand in a few words: type, dimensions, quantization, a small constant's value,
    the subgraph a SUBGRAPH operand names."""
    operand, value = subgraph.operands[index], infos[index].value
    name = getattr(operand.type, "name", str(operand.type))
    if operand.lifetime == L.NO_VALUE:
        return f"{name} (omitted)"
    if operand.lifetime == L.SUBGRAPH:
        return f"subgraph {operand.location.offset + 1}"
    if value is not None and operand.type in SCALAR_OPERAND_TYPES:
        return f"{name} {value.reshape(-1)[0].item()!r}"
    quantized = f" scale {operand.scale:g} zp {operand.zeroPoint}" if operand.scale else ""
    constant = ("" if value is None else f" = {value.reshape(-1).tolist()}"
                if value.size <= SHOWN_CONSTANT else " constant")
    return f"{name}{list(operand.dimensions)}{quantized}{constant}"


def describe_operation(model: Model, operation: Operation, subgraph: Subgraph | None = None) -> str:
    """``TYPE(operand, ...) -> operand, ...`` with scalar parameters' values (an operation
    of ``subgraph``, by default the main one)."""
    subgraph = subgraph or model.main
    infos = subgraph_infos(model, subgraph)
    name = getattr(operation.type, "name", str(operation.type))
    return (f"{name}({', '.join(operand_text(subgraph, i, infos) for i in operation.inputs)}) -> "
            f"{', '.join(operand_text(subgraph, o, infos) for o in operation.outputs)}")


#: A reproducer's docstring lists up to this many operations of each subgraph.
LISTED_OPERATIONS = 8


def describe_model(model: Model) -> list[str]:
    """A line per operation, LISTED_OPERATIONS at most per subgraph; the subgraphs IF and
    WHILE run (1 on) under their own heading."""
    lines = []
    for index, subgraph in enumerate([model.main, *model.referenced]):
        if index:
            lines.append(f"  subgraph {index}:")
        lines += [f"    {describe_operation(model, op, subgraph)}" for op in subgraph.operations[:LISTED_OPERATIONS]]
        lines += ["    ..."] if len(subgraph.operations) > LISTED_OPERATIONS else []
    return lines


def culprit(found: Specimen) -> Operation | None:
    """The operation a specimen is about: the one crashing LiteRT, its only one, else the
    producer of the first output that differs (or of the first output)."""
    main = found.model.main
    if found.crashing is not None:
        return main.operations[found.crashing]
    if len(main.operations) == 1:
        return main.operations[0]
    differing = sorted(found.differences()) or [0]
    if not main.outputIndexes:
        return None
    target = main.outputIndexes[differing[0]]
    return next((op for op in main.operations if target in op.outputs), None)


def magnitude(found: Specimen) -> str:
    """The size of the discrepancy in words: the worst element, or the crash or status."""
    if found.kind == "crash":
        return "crash: " + found.crash.splitlines()[0].split(" (model sha1")[0].rstrip(": ")[:200]
    if found.kind == "error":
        return f"LiteRT fails it ({found.status.name}); the reference runs it"
    if found.kind == "accepts":
        return f"LiteRT returns outputs; the reference fails it ({found.reference_status.name})"
    parts = []
    for k, difference in found.differences().items():
        if "shape" in difference:
            parts.append(f"output {k}: shape {difference['shape']}, expected {difference['expected shape']}")
            continue
        worst = difference["worst"]
        parts.append(f"output {k}: {difference['count']} of {difference['size']} elements; "
                     f"max abs diff {worst['abs']:.6g}, rel diff {worst['rel']:.6g} "
                     f"(got {worst['got']:.9g}, expected {worst['expected']:.9g}; {found.tolerance(k)})")
    return "; ".join(parts)


def kernel_sets_text(crashes_on: Sequence[str]) -> str:
    """Which kernel sets a crash's reproducer crashes, as the magnitude ends: '; crashes on
    AUTO only' (the XNNPACK delegate's), '; crashes on every kernel set'."""
    if len(crashes_on) == len(KERNEL_SETS):
        return "; crashes on every kernel set"
    return f"; crashes on {', '.join(crashes_on)} only" if crashes_on else "; crashes on no kernel set run once"


# --- the standalone reproducer ----------------------------------------------------------------

FINDING_BEGIN = "# --- the finding "
FINDING_END = "# --- end of the finding "


def standalone_source(name: str, found: Specimen) -> str:
    """standalone.py with its docstring and the finding's block filled in."""
    template = Path(standalone.__file__).read_text()
    head, _, rest = template.partition('"""')
    _, _, code = rest.partition('"""')
    lines = code.split("\n")
    begin = next(i for i, line in enumerate(lines) if line.startswith(FINDING_BEGIN))
    end = next(i for i, line in enumerate(lines) if line.startswith(FINDING_END))
    outputs = [(k, found.dtype(k).name, found.tolerance(k).atol, found.tolerance(k).rtol)
               for k in found.compared]
    block = [
        f"NAME = {name!r}",
        f"KERNEL_SET = {found.kernel_set!r}",
        "#: Per output the reference computed: (index, NNAPI's numpy type, atol, rtol), the",
        "#: tolerance being |got - expected| <= atol + rtol * |expected| (the Android CTS's).",
        f"OUTPUTS = {outputs!r}",
        "#: LiteRT crashed the process it ran in: it runs in a child process.",
        f"IN_CHILD = {found.kind == 'crash'!r}",
        "#: How the reference failed the execution, where NNAPI defines no result (None: it ran).",
        f"REFERENCE_FAILS = {found.reference_status.name if found.reference_status else None!r}",
    ]
    code = "\n".join([*lines[:begin + 1], *block, *lines[end:]])
    return head + '"""' + docstring(name, found) + '"""' + code


def docstring(name: str, found: Specimen) -> str:
    count = len(found.model.main.operations)
    what = "\n".join([f"The model is {'one NNAPI operation' if count == 1 else f'{count} NNAPI operations'}, "
                      f"lowered to TFLite builtins:", *describe_model(found.model)])
    expected = (f"{name}.tflite is the model LiteRT ran, {name}.npz its inputs (input_<i>)"
                + ("\nand the outputs NNAPI's semantics give for them (expected_<k>), as a reference\n"
                   "driver computes them." if found.compared else "."))
    if found.kind == "accepts":
        expected += (f"\nNNAPI's reference driver fails the execution ({found.reference_status.name}): "
                     f"NNAPI defines no\nresult for these inputs, yet LiteRT returns some.")
    elif found.kind == "crash":
        expected += "\nThe process running LiteRT dies: the script runs it in a child process."
    return f"""{headline(found)}

LiteRT {litert_version()}, kernel set {found.kernel_set} (OpResolverType.{found.kernel_set}).
{what}
{expected}

    python {name}.py    # needs only numpy and ai-edge-litert

prints the inputs, LiteRT's outputs and the expected ones, and the first and worst elements
that differ; exit status 1 while LiteRT still disagrees, 0 once it agrees.
"""


def headline(found: Specimen) -> str:
    operation = culprit(found)
    name = getattr(operation.type, "name", str(operation.type)) if operation is not None else "a model"
    return {"crash": f"LiteRT crashes running {name}",
            "error": f"LiteRT fails {name}, which NNAPI's semantics define",
            "accepts": f"LiteRT returns outputs for {name} where NNAPI's semantics define none",
            "values": f"LiteRT computes {name} differently from NNAPI's semantics"}.get(found.kind, name)


@dataclass(frozen=True)
class Bundle:
    """A standalone reproducer written to ``folder``: the files, and what the report says."""
    folder: Path
    name: str
    kind: str
    kernel_set: str
    version: str
    operation: str
    description: str
    magnitude: str
    origin: str
    #: for a crash: the kernel sets whose run of it crashes (crashing_kernel_sets)
    crashes_on: tuple[str, ...] = ()

    @property
    def script(self) -> Path:
        return self.folder / f"{self.name}{SCRIPT}"

    def facts(self) -> dict:
        """What a sidecar and the findings report keep of it (paths relative to the
        folder's parent of parents: the repository, for crashes/litert/<digest>/)."""
        return {"version": self.version, "kernel_set": self.kernel_set, "kind": self.kind,
                "operation": self.operation, "description": self.description,
                "magnitude": self.magnitude, "origin": self.origin,
                **({"crashes_on": list(self.crashes_on)} if self.kind == "crash" else {})}


def write(found: Specimen, folder: Path, name: str) -> Bundle:
    """The standalone reproducer of a specimen: folder/name.tflite, .npz and .py."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}{TFLITE}").write_bytes(found.content)
    arrays = {f"input_{i}": value for i, value in enumerate(found.inputs)}
    arrays.update({f"expected_{k}": found.expected[k] for k in found.compared})
    np.savez(folder / f"{name}{ARRAYS}", **arrays)
    script = folder / f"{name}{SCRIPT}"
    script.write_text(standalone_source(name, found))
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    operation = culprit(found)
    crashes_on = crashing_kernel_sets(found) if found.kind == "crash" else ()
    return Bundle(folder, name, found.kind, found.kernel_set, litert_version(),
                  getattr(operation.type, "name", "") if operation is not None else "",
                  describe_operation(found.model, operation) if operation is not None else "",
                  magnitude(found) + (kernel_sets_text(crashes_on) if found.kind == "crash" else ""),
                  found.origin, crashes_on)


__all__ = ["Bundle", "Divergence", "Specimen", "divergence_of", "reproduce", "specimen_bucket", "write"]
