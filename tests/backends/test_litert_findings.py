"""End to end: a discrepancy planted in LiteRT's converter (tests/backends/planted_litert.py,
ADD lowered to SUB) goes from a fuzz artifact through triage to a reproducer stored with
the status upstream and its standalone reproducer; the script exits 1, the replay finds the
discrepancy still there, the findings report lists its bucket, and the nightly job does the
same for a night's finding. Skipped without the ``litert`` extra."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("ai_edge_litert")

from fuzz import litert_report, nightly, triage  # noqa: E402
from fuzz.codec import encode  # noqa: E402
from fuzz.drivers import DRIVER_ENV, REFERENCE_ENV  # noqa: E402
from fuzz.litert_repro import mark_upstream, run_script  # noqa: E402
from hal_client.device import DEFAULT_DRIVER  # noqa: E402
from driver.hal.enums import OperationType  # noqa: E402
from tests.backends.test_litert_reproducer import COMPARISON_CRASH, chain_case, comparison_between  # noqa: E402
from tests.fuzz.test_replay import replay_upstream  # noqa: E402

PLANTED = "tests.backends.planted_litert:add_as_sub"


@pytest.fixture(scope="module")
def triaged(tmp_path_factory):
    """The planted discrepancy's artifact triaged into a crashes/-like folder: that folder,
    and the stored reproducer."""
    folder = tmp_path_factory.mktemp("triage")
    artifact = folder / "crash-planted"
    artifact.write_bytes(encode(chain_case()))
    out = folder / "crashes"
    with pytest.MonkeyPatch.context() as patch:
        for variable in (DRIVER_ENV, REFERENCE_ENV):    # main sets them for its worker
            patch.setenv(variable, "")
        assert triage.main([str(artifact), "--driver", PLANTED, "--reference", DEFAULT_DRIVER,
                            "--out", str(out), "--libfuzzer-seconds", "0", "--structural-seconds", "30"]) == 0
    (stored,) = [p for p in out.iterdir() if p.is_file() and not p.suffix]
    return out, stored


def test_triage_stores_it_upstream_with_its_standalone_reproducer(triaged):
    out, stored = triaged
    sidecar = json.loads(stored.with_suffix(".json").read_text())
    assert sidecar["status"] == "upstream" and sidecar["rule"] == "reference-mismatch"
    litert = sidecar["litert"]
    assert litert["kernel_set"] == "BUILTIN_REF" and litert["kind"] == "values"
    assert litert["class"] == "LiteRT bug" and litert["reproducer"] == f"litert/{stored.name}/"
    assert litert["operation"] == "ADD", litert     # the minimised model: the ADD alone
    assert "max abs diff" in litert["magnitude"]
    script = out / litert["reproducer"] / f"{stored.name}.py"
    result = run_script(script)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "REPRODUCED" in result.stdout


def test_the_replay_finds_it_still_there(triaged):
    _, stored = triaged
    replay_upstream(stored, json.loads(stored.with_suffix(".json").read_text()))


def test_the_report_lists_its_bucket(triaged, tmp_path):
    out, stored = triaged
    findings = litert_report.findings_in(out)
    assert [f.name for f in findings] == [stored.name]
    markdown, page = litert_report.write_report(findings, tmp_path / "report")
    text = markdown.read_text()
    row = next(line for line in text.splitlines() if line.startswith(f"| {stored.name} "))
    cells = [cell.strip() for cell in row.strip("|").split(" | ")]
    assert cells[1].startswith("ADD(TENSOR_FLOAT32[") and "max abs diff" in cells[2]
    assert "OperationType::ADD" in cells[3] and "tfl.add" in cells[3]
    assert cells[4] == "LiteRT bug" and cells[5] == "" and cells[7] == "1"
    assert f"{stored.name}.py](" in cells[6]
    link = cells[6].split("](")[1].split(")")[0]
    assert (markdown.parent / link).resolve() == (out / "litert" / stored.name / f"{stored.name}.py").resolve()
    assert "## Spec ambiguities (filtered from findings)" in text and "TENSOR_FLOAT16" in text
    assert f'href="{link}"' in page.read_text()


def test_a_reviewers_class_and_cause_outlive_a_new_reproducer(triaged, tmp_path):
    """Written again (a new LiteRT, a better input), the reproducer keeps what a reviewer
    found, and the report says it."""
    from hal_client.device import make_device
    out, stored = triaged
    folder = tmp_path / "crashes"
    shutil.copytree(out, folder)
    copy = folder / stored.name
    sidecar = json.loads(copy.with_suffix(".json").read_text())
    sidecar["litert"].update({"class": "converter bug (fixed)", "cause": "ADD lowered to SUB"})
    copy.with_suffix(".json").write_text(json.dumps(sidecar))
    assert mark_upstream(copy, make_device(PLANTED), make_device(DEFAULT_DRIVER), log=lambda *_: None)
    litert = json.loads(copy.with_suffix(".json").read_text())["litert"]
    assert (litert["class"], litert["cause"]) == ("converter bug (fixed)", "ADD lowered to SUB")
    markdown, _ = litert_report.write_report(litert_report.findings_in(folder), tmp_path / "report")
    assert "| converter bug (fixed) | ADD lowered to SUB |" in markdown.read_text()


def test_the_nightly_writes_a_new_findings_reproducer_and_the_nights_report(triaged, tmp_path, monkeypatch):
    out, stored = triaged
    findings = tmp_path / "findings"
    findings.mkdir()
    night = findings / stored.name
    shutil.copy(stored, night)
    sidecar = json.loads(stored.with_suffix(".json").read_text())
    sidecar.pop("litert")
    sidecar["status"] = "open"
    night.with_suffix(".json").write_text(json.dumps(sidecar))
    monkeypatch.setenv(REFERENCE_ENV, DEFAULT_DRIVER)
    results = [nightly.Finding("crash-a", "new", None, night, "b"), nightly.Finding("crash-b", "duplicate", bucket="b")]
    report = nightly.litert_findings(results, PLANTED, tmp_path, deadline=float("inf"))
    assert report == tmp_path / "litert" / "findings.md"
    assert json.loads(night.with_suffix(".json").read_text())["status"] == "upstream"
    assert (findings / "litert" / stored.name / f"{stored.name}.py").exists()
    assert f"| {stored.name} |" in report.read_text() and "| 2 |" in report.read_text()
    assert "[litert/findings.md](litert/findings.md)" in nightly_summary(report)


def nightly_summary(report: Path) -> str:
    args = nightly.parse_args(["--seconds", "60"])
    return nightly.summary_markdown(DEFAULT_DRIVER, args, 60, nightly.Progress(), "harness: 0 inputs",
                                    (0, 0, 0), {}, [], (60, {}), report)


def test_another_drivers_nightly_has_no_litert_report(tmp_path):
    assert nightly.litert_findings([nightly.Finding("crash-a", "new", None, tmp_path / "x", "b")],
                                   DEFAULT_DRIVER, tmp_path, deadline=float("inf")) is None


def test_triage_isolates_the_first_diverging_operation(tmp_path, monkeypatch):
    """Left unminimised (its three operations kept), the finding carries the oracle's
    divergence, operation 1 (the ADD): the standalone reproducer is that operation alone,
    fed the product the reference computes."""
    artifact = tmp_path / "crash-planted"
    artifact.write_bytes(encode(chain_case()))
    for variable in (DRIVER_ENV, REFERENCE_ENV):
        monkeypatch.setenv(variable, "")
    assert triage.main([str(artifact), "--driver", PLANTED, "--reference", DEFAULT_DRIVER,
                        "--out", str(tmp_path / "out"), "--libfuzzer-seconds", "0",
                        "--structural-seconds", "0.001"]) == 0
    (sidecar,) = (tmp_path / "out").glob("*.json")
    info = json.loads(sidecar.read_text())
    assert info["divergence"]["operation"] == 1 and info["divergence"]["type"] == "ADD"
    assert info["litert"]["origin"] == "operation 1"
    assert info["litert"]["description"].startswith("ADD(TENSOR_FLOAT32[2, 3], TENSOR_FLOAT32[2, 3]")


def comparison_crashes(folder: Path, monkeypatch) -> None:
    """Two unminimised artifacts crashing LiteRT in the same comparison, crash-add (after
    an ADD, before a LOGICAL_NOT) and crash-maximum (after a MAXIMUM), in ``folder``; the
    drivers left to the command lines."""
    for name, (before, after) in {"crash-add": (OperationType.ADD, OperationType.LOGICAL_NOT),
                                  "crash-maximum": (OperationType.MAXIMUM, None)}.items():
        (folder / name).write_bytes(encode(comparison_between(before, after)))
    for variable in (DRIVER_ENV, REFERENCE_ENV):
        monkeypatch.setenv(variable, "")


def test_triage_buckets_a_native_crash_by_its_first_crashing_operation(tmp_path, monkeypatch):
    """Two unminimised crashes in the same comparison, one after an ADD and before a
    LOGICAL_NOT, the other after a MAXIMUM: one bucket, named by the comparison, and the
    report's row names it too."""
    comparison_crashes(tmp_path, monkeypatch)
    out = tmp_path / "out"
    assert triage.main([str(tmp_path / "crash-add"), str(tmp_path / "crash-maximum"),
                        "--driver", "backends.litert:builtin_ref", "--reference", DEFAULT_DRIVER,
                        "--out", str(out), "--libfuzzer-seconds", "0", "--structural-seconds", "0.001"]) == 0
    (sidecar,) = out.glob("*.json")
    info = json.loads(sidecar.read_text())
    assert info["signature"] == f"assertion | runtime-crash | {COMPARISON_CRASH}"
    assert info["litert"]["origin"] == "operation 1"
    (finding,) = litert_report.findings_in(out)
    cells = litert_report.row(finding, tmp_path)
    assert cells[1][0].startswith("GREATER_EQUAL(TENSOR_QUANT8_ASYMM[1] scale 1 zp 127")
    assert cells[2][0].endswith("; crashes on every kernel set")


def test_the_nightly_knows_a_crash_by_its_first_crashing_operation(tmp_path, monkeypatch):
    """A crash stored by triage (named by its first crashing operation) is known to the
    nightly from another model crashing in the same comparison: not stored again."""
    comparison_crashes(tmp_path, monkeypatch)
    known = tmp_path / "crashes"
    assert triage.main([str(tmp_path / "crash-add"), "--driver", "backends.litert:builtin_ref",
                        "--reference", DEFAULT_DRIVER, "--out", str(known), "--libfuzzer-seconds", "0",
                        "--structural-seconds", "0.001", "--keep"]) == 0
    monkeypatch.setenv(REFERENCE_ENV, DEFAULT_DRIVER)
    findings = tmp_path / "findings"
    findings.mkdir()
    (result,) = nightly.triage_findings([tmp_path / "crash-maximum"], "backends.litert:builtin_ref", findings,
                                        nightly.parse_args(["--seconds", "60"]), known=known)
    assert result.status == "known", result
    assert result.failure.signature == f"assertion | runtime-crash | {COMPARISON_CRASH}"
