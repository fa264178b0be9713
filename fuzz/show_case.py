"""Show fuzz inputs as the harness sees them: the decoded Model, Request and execution
choices, in readable form, and optionally as a Graphviz picture.

    nnhal-show-case FILE... [--dot OUT.dot] [--png]

For each operand: index, type, dimensions, scale/zero point, lifetime, consumers, location,
how the input described its value (``gen#SEED``, ``literal``, ``zero``, ``explicit``) and a
preview of the value. ``--dot`` writes one graph (per file: FILE's name before the suffix
when several files are given); subgraphs are clusters and IF/WHILE operations have edges to
the subgraphs they run. ``--png`` also renders it when graphviz's ``dot`` is installed.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Sequence

import numpy as np

from driver.hal import (CONTROL_FLOW_OPERATION_TYPES, DataLocation, Model, Operand,
                        OperandLifeTime, OperandType, OperationType, Subgraph)
from driver.operations.common import STORAGE_DTYPE
from fuzz import codec
from fuzz.case import PLACED_RELATIONS, FuzzCase

PREVIEW_VALUES = 8


def name_of(enum_type, value: int) -> str:
    try:
        return enum_type(value).name
    except ValueError:
        return str(value)


def preview(raw: bytes | None, operand_type: int) -> str:
    """The first values of ``raw`` read as the type's storage dtype."""
    if raw is None:
        return "(unreadable)"
    if not raw:
        return ""
    dtype = STORAGE_DTYPE.get(operand_type)
    if dtype is None or len(raw) % dtype.itemsize:
        return raw[:16].hex() + ("…" if len(raw) > 16 else "")
    values = np.frombuffer(raw, dtype=dtype.newbyteorder("<"))
    shown = ", ".join(f"{v:.4g}" if dtype.kind == "f" else str(int(v))
                      for v in values[:PREVIEW_VALUES].tolist())
    more = f", … ({values.size} values)" if values.size > PREVIEW_VALUES else ""
    return f"[{shown}{more}]"


def read_location(blob: bytes | None, location: DataLocation) -> bytes | None:
    if blob is None or location.offset + location.length > len(blob):
        return None
    return blob[location.offset:location.offset + location.length]


def constant_bytes(model: Model, operand: Operand) -> bytes | None:
    location = operand.location
    if operand.lifetime == OperandLifeTime.CONSTANT_COPY:
        return read_location(model.operandValues, location)
    if operand.lifetime == OperandLifeTime.CONSTANT_REFERENCE:
        if location.poolIndex >= len(model.pools):
            return None
        return read_location(model.pools[location.poolIndex].read(), location)
    return b""


def recipe(value: codec.ValueSpec | None, explicit: bool) -> str:
    if explicit:
        return "explicit"
    if value is None:
        return ""
    if value.kind == codec.ValueKind.GENERATED:
        return f"gen#{value.seed}"
    return "literal" if value.kind == codec.ValueKind.LITERAL else "zero"


def format_location(location: DataLocation) -> str:
    return f"{location.poolIndex}:{location.offset}+{location.length}"


def table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
            for row in rows]


def describe_subgraph(model: Model, number: int, sg: Subgraph,
                      spec: codec.SubgraphSpec | None) -> list[str]:
    title = "main" if number == 0 else f"referenced[{number - 1}]"
    lines = [f"subgraph {number} ({title}): inputs {sg.inputIndexes} outputs {sg.outputIndexes}"]
    rows = [["#", "type", "dims", "scale/zp", "lifetime", "uses", "location", "value"]]
    for i, o in enumerate(sg.operands):
        o_spec = spec.operands[i] if spec is not None and i < len(spec.operands) else None
        lifetime = o.lifetime
        if lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE):
            how = recipe(o_spec.value if o_spec else None,
                         o_spec is not None and o_spec.location is not None)
            value = f"{how} {preview(constant_bytes(model, o), o.type)}".strip()
        elif lifetime == OperandLifeTime.SUBGRAPH:
            value = f"-> subgraph {o.location.offset + 1}"
        else:
            value = ""
        quant = f"{o.scale:g}/{o.zeroPoint}" if o.scale or o.zeroPoint else ""
        if o.extraParams.channelQuant is not None:
            channel = o.extraParams.channelQuant
            quant += f" ch{channel.channelDim}:{channel.scales}"
        rows.append([str(i), name_of(OperandType, o.type), str(list(o.dimensions)), quant,
                     name_of(OperandLifeTime, lifetime), str(o.numberOfConsumers),
                     format_location(o.location), value])
    return lines + table(rows) + [f"  op {k}: {name_of(OperationType, op.type)} {op.inputs} -> {op.outputs}"
                                  for k, op in enumerate(sg.operations)]


def describe_request(case: FuzzCase, spec: codec.RequestSpec) -> list[str]:
    request, main = case.request, case.model.main
    contents = [None if p.hidlMemory is None else p.hidlMemory.read() for p in request.pools]
    lines = ["request:"]
    for role, args, arg_specs, indexes in (
            ("input", request.inputs, spec.inputs, main.inputIndexes),
            ("output", request.outputs, spec.outputs, main.outputIndexes)):
        for i, arg in enumerate(args):
            arg_spec = arg_specs[i] if i < len(arg_specs) else None
            operand_index = indexes[i] if i < len(indexes) else None
            known = operand_index is not None and operand_index < len(main.operands)
            operand = main.operands[operand_index] if known else None
            text = f"  {role} {i} (operand {operand_index}):"
            if arg.hasNoValue:
                lines.append(f"{text} no value")
                continue
            location = arg.location
            blob = contents[location.poolIndex] if location.poolIndex < len(contents) else None
            text += f" {format_location(location)}"
            if arg.dimensions:
                text += f" dims {arg.dimensions}"
            if arg_spec is not None and arg_spec.size_delta:
                text += f" size{arg_spec.size_delta:+d}"
            if role == "input" and operand is not None:
                how = recipe(arg_spec.value if arg_spec else None,
                             arg_spec is not None and arg_spec.location is not None)
                text += f" {how} {preview(read_location(blob, location), operand.type)}"
            lines.append(text.rstrip())
    return lines + [f"  pool {j}: token {pool.token}" if pool.hidlMemory is None else
                    f"  pool {j}: {pool.hidlMemory.name} {pool.hidlMemory.size} bytes"
                    for j, pool in enumerate(request.pools)]


def ms(ns: int | None) -> str:
    return "omitted" if ns is None else f"{ns / 1e6:g} ms"


def describe(case: FuzzCase, spec: codec.CaseSpec) -> str:
    c = case.choices
    lines = [
        f"choices: path {c.path.name}, then {c.second_path.name}; measure {c.measureTiming.name};"
        f" preference {c.preference.name}; priority {c.priority.name};"
        f" deadline {ms(c.deadline_ns)};"
        f" loop timeout {ms(c.loopTimeoutDuration_ns)}; wait fences {c.wait_fences}"
        f" after {ms(c.wait_fence_delay_ns)}; fenced duration {ms(c.fenced_duration_ns)};"
        f" request after launch {c.request_change.name}; relation {c.relation.name}"
        + (f" at {c.corruption}" if c.relation in PLACED_RELATIONS else "")]
    model = case.model
    pools = ", ".join(f"{m.name} {m.size} B" for m in model.pools) or "none"
    lines.append(f"model: relaxed {model.relaxComputationFloat32toFloat16}; operandValues "
                 f"{len(model.operandValues)} B; pools: {pools}"
                 + (f"; extensions {[(e.name, e.prefix) for e in model.extensionNameToPrefix]}"
                    if model.extensionNameToPrefix else ""))
    spec_subgraphs = spec.model.subgraphs()
    for number, sg in enumerate([model.main, *model.referenced]):
        lines += describe_subgraph(model, number, sg, spec_subgraphs[number]
                                   if number < len(spec_subgraphs) else None)
    lines += describe_request(case, spec.request)
    return "\n".join(lines)


# --- Graphviz ---------------------------------------------------------------------------------

def dot_label(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def to_dot(case: FuzzCase, title: str) -> str:
    model = case.model
    subgraphs = [model.main, *model.referenced]
    out = ["digraph case {", f'  label="{dot_label(title)}"; labelloc=t; compound=true;',
           "  rankdir=TB; node [fontsize=10, fontname=Helvetica]; edge [fontsize=8];"]
    anchors = {}
    for number, sg in enumerate(subgraphs):
        name = "main" if number == 0 else f"subgraph {number} (referenced[{number - 1}])"
        out.append(f"  subgraph cluster_{number} {{")
        out.append(f'    label="{dot_label(name)}"; style=rounded; color=gray50;')
        anchors[number] = f"s{number}_anchor"
        out.append(f'    {anchors[number]} [shape=point, style=invis];')
        inputs, outputs = set(sg.inputIndexes), set(sg.outputIndexes)
        for i, o in enumerate(sg.operands):
            if o.lifetime == OperandLifeTime.SUBGRAPH:
                continue        # drawn as an edge from the operation to the cluster
            label = f"{i}: {name_of(OperandType, o.type)} {list(o.dimensions)}"
            style = "shape=ellipse"
            if o.lifetime in (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE):
                label += "\n" + preview(constant_bytes(model, o), o.type)[:60]
                style = "shape=note, style=filled, fillcolor=lightyellow"
            elif i in inputs:
                style = "shape=ellipse, style=filled, fillcolor=lightblue"
            elif i in outputs:
                style = "shape=ellipse, style=filled, fillcolor=palegreen"
            out.append(f'    s{number}_o{i} [{style}, label="{dot_label(label)}"];')
        for k, op in enumerate(sg.operations):
            out.append(f'    s{number}_op{k} [shape=box, style="rounded,filled", '
                       f'fillcolor=gray90, label="{k}: {name_of(OperationType, op.type)}"];')
        out.append("  }")
        for k, op in enumerate(sg.operations):
            node = f"s{number}_op{k}"
            for slot, i in enumerate(op.inputs):
                operand = sg.operands[i] if i < len(sg.operands) else None
                if operand is None:
                    out.append(f'  s{number}_missing{i} [shape=octagon, color=red, '
                               f'label="missing operand {i}"];')
                    out.append(f"  s{number}_missing{i} -> {node} [color=red];")
                elif operand.lifetime == OperandLifeTime.SUBGRAPH and op.type in CONTROL_FLOW_OPERATION_TYPES:
                    target = operand.location.offset + 1
                    role = ("then" if slot == 1 else "else") if op.type == OperationType.IF \
                        else ("cond" if slot == 0 else "body")
                    if target < len(subgraphs):
                        out.append(f"  {node} -> s{target}_anchor [lhead=cluster_{target}, "
                                   f'style=dashed, color=blue, label="{role}"];')
                    else:
                        out.append(f'  s{number}_nosub{i} [shape=octagon, color=red, '
                                   f'label="missing subgraph {target}"];')
                        out.append(f'  {node} -> s{number}_nosub{i} [style=dashed, color=red, '
                                   f'label="{role}"];')
                elif operand.lifetime != OperandLifeTime.SUBGRAPH:
                    out.append(f'  s{number}_o{i} -> {node} [label="{slot}"];')
            for i in op.outputs:
                if i < len(sg.operands):
                    out.append(f"  {node} -> s{number}_o{i};")
                else:
                    out.append(f'  s{number}_missing{i} [shape=octagon, color=red, '
                               f'label="missing operand {i}"];')
                    out.append(f"  {node} -> s{number}_missing{i} [color=red];")
    out.append("}")
    return "\n".join(out) + "\n"


def render_png(dot_path: Path) -> Path | None:
    dot = shutil.which("dot")
    if dot is None:
        print("graphviz `dot` not found: no PNG written", file=sys.stderr)
        return None
    png = dot_path.with_suffix(".png")
    subprocess.run([dot, "-Tpng", str(dot_path), "-o", str(png)], check=True)
    return png


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--dot", type=Path, help="write a Graphviz graph here")
    parser.add_argument("--png", action="store_true", help="also render the graph as PNG")
    args = parser.parse_args(argv)
    for path in args.files:
        data = path.read_bytes()
        case = codec.decode(data)
        print(f"== {path} ({len(data)} bytes)")
        print(describe(case, codec.parse(data)))
        if args.dot is not None:
            dot_path = (args.dot if len(args.files) == 1
                        else args.dot.with_name(f"{path.stem}.{args.dot.name}"))
            dot_path.write_text(to_dot(case, path.name))
            print(f"graph written to {dot_path}")
            if args.png:
                png = render_png(dot_path)
                if png is not None:
                    print(f"picture written to {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
