"""The findings report of LiteRT as a driver under test, in Markdown and HTML.

    nnhal-litert-report [--crashes crashes/] [--out reports/litert]

One row per bucket (a reproducer whose sidecar has a "litert" part: fuzz/litert_repro.py
writes it when triage stores a LiteRT finding): the operation and its operands, the size of
the discrepancy (the worst element's absolute and relative difference, or the crash or the
status), the semantics it breaks with the documentation cited (fuzz/spec.py, CITATIONS),
its class (LiteRT bug, converter bug (fixed), reference bug (fixed), spec ambiguity
(documented)) and cause as a reviewer found them (the sidecar's "class" and "cause"), the
standalone reproducer and how many findings fell in the bucket. Then the table of the
documented ambiguities, which the oracle filters from findings (fuzz/spec.py, AMBIGUITIES).
fuzz/nightly.py writes the same report of a night's findings.

Writes OUT/findings.md and OUT/findings.html.
"""
from __future__ import annotations

import argparse
import html
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence, Union

from fuzz import spec

REPO_ROOT = Path(__file__).resolve().parent.parent

#: A piece of a cell: text, or (text, address) for a link.
Piece = Union[str, tuple[str, str]]
Cell = Sequence[Piece]
HEADER = ("bucket", "operation and operands", "magnitude", "semantics broken", "class",
          "cause", "reproducer", "findings")


@dataclass(frozen=True)
class Finding:
    """One bucket of LiteRT findings, as a stored reproducer's sidecar describes it."""
    name: str               # the reproducer's name (the bucket's digest)
    signature: str
    status: str
    litert: dict
    folder: Path            # the standalone reproducer's folder
    count: int

    @property
    def operation(self) -> str:
        return self.litert.get("operation", "")


def finding_of(reproducer: Path, count: int | None = None) -> Finding | None:
    """The finding a stored reproducer's sidecar describes (None: not a LiteRT one); its
    count is the sidecar's (the reproducer and its duplicates) unless given."""
    sidecar = reproducer.with_suffix(".json")
    try:
        info = json.loads(sidecar.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    litert = info.get("litert") if isinstance(info, dict) else None
    if not isinstance(litert, dict):
        return None
    folder = reproducer.parent / litert.get("reproducer", f"litert/{reproducer.name}/")
    return Finding(reproducer.name, str(info.get("signature", "")), str(info.get("status", "")),
                   litert, folder, count if count is not None else 1 + int(info.get("duplicates", 0)))


def findings_in(folder: Path) -> list[Finding]:
    """The LiteRT findings stored in a folder laid out like crashes/."""
    if not folder.is_dir():
        return []
    found = (finding_of(p) for p in sorted(folder.iterdir()) if p.is_file() and not p.suffix)
    return [f for f in found if f is not None]


# --- the cells ----------------------------------------------------------------------------------

def citation_cell(citation: spec.Citation) -> list[Piece]:
    return [citation.says, " (", (citation.where, citation.url), ")"]


def semantics_cell(operation: str) -> list[Piece]:
    semantics = spec.semantics_of(operation)
    cell: list[Piece] = ["NNAPI: ", *citation_cell(semantics.nnapi)]
    if semantics.tflite is not None:
        cell += ["; TFLite: ", *citation_cell(semantics.tflite)]
    return cell


def row(finding: Finding, base: Path) -> list[Cell]:
    litert = finding.litert
    script = finding.folder / f"{finding.name}.py"
    link = os.path.relpath(script, base)
    return [[finding.name],
            [litert.get("description") or finding.operation or "the model"],
            [litert.get("magnitude", "")],
            semantics_cell(finding.operation),
            [litert.get("class", "")],
            [litert.get("cause", "")],
            [(f"{finding.name}.py", link), f" ({litert.get('kernel_set', '')}, LiteRT {litert.get('version', '')})"],
            [str(finding.count)]]


AMBIGUITY_HEADER = ("operation", "condition", "reason", "citation")


def ambiguity_rows() -> list[list[Cell]]:
    return [[[a.operation], [a.condition], [a.reason],
             [piece for k, c in enumerate(a.citations) for piece in ([] if k == 0 else ["; "]) + citation_cell(c)]]
            for a in spec.AMBIGUITIES]


# --- rendering -------------------------------------------------------------------------------------

def markdown_cell(cell: Cell) -> str:
    text = "".join(piece if isinstance(piece, str) else f"[{piece[0]}]({piece[1]})" for piece in cell)
    return text.replace("|", "\\|").replace("\n", " ")


def html_cell(cell: Cell) -> str:
    return "".join(html.escape(piece) if isinstance(piece, str) else
                   f'<a href="{html.escape(piece[1])}">{html.escape(piece[0])}</a>' for piece in cell)


def headline(findings: Sequence[Finding]) -> str:
    versions = sorted({f.litert.get("version", "?") for f in findings})
    return (f"{len(findings)} buckets, {sum(f.count for f in findings)} findings "
            f"(LiteRT {', '.join(versions) or 'none'}).")


def markdown(findings: Sequence[Finding], base: Path, title: str) -> str:
    def table(header: Sequence[str], rows: Iterable[Sequence[Cell]]) -> list[str]:
        return ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header),
                *("| " + " | ".join(markdown_cell(c) for c in cells) + " |" for cells in rows)]
    lines = [f"# {title}", "", headline(findings), ""]
    lines += table(HEADER, (row(f, base) for f in findings)) if findings else ["None."]
    lines += ["", "## Spec ambiguities (filtered from findings)", "",
              "The reference oracle does not count a difference these explain (fuzz/spec.py).", "",
              *table(AMBIGUITY_HEADER, ambiguity_rows())]
    return "\n".join(lines) + "\n"


def html_page(findings: Sequence[Finding], base: Path, title: str) -> str:
    def table(header: Sequence[str], rows: Iterable[Sequence[Cell]]) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(f"<td>{html_cell(c)}</td>" for c in cells) + "</tr>" for cells in rows)
        return f"<table><tr>{head}</tr>{body}</table>"
    findings_table = table(HEADER, (row(f, base) for f in findings)) if findings else "<p>None.</p>"
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            "<style>table{border-collapse:collapse}td,th{border:1px solid #999;padding:4px;"
            "vertical-align:top}</style></head><body>"
            f"<h1>{html.escape(title)}</h1><p>{html.escape(headline(findings))}</p>{findings_table}"
            "<h2>Spec ambiguities (filtered from findings)</h2>"
            f"{table(AMBIGUITY_HEADER, ambiguity_rows())}</body></html>\n")


def write_report(findings: Sequence[Finding], out: Path, title: str = "LiteRT findings") -> tuple[Path, Path]:
    """OUT/findings.md and OUT/findings.html (links relative to OUT)."""
    out.mkdir(parents=True, exist_ok=True)
    md, page = out / "findings.md", out / "findings.html"
    md.write_text(markdown(findings, out, title))
    page.write_text(html_page(findings, out, title))
    return md, page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--crashes", type=Path, default=REPO_ROOT / "crashes", help="the stored reproducers")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "reports" / "litert", help="where the report goes")
    args = parser.parse_args(argv)
    findings = findings_in(args.crashes)
    md, page = write_report(findings, args.out)
    print(f"{md} and {page}: {headline(findings)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
