"""Capabilities three ways (issue 32 item 5): claimed vs reported vs observed, findings in the reports.

The probe case runs on CPU (validation) and the sim; the comparison (results/reports/capabilities.py) is
checked on records that plant each disagreement: a claimed dtype failing its probe, a backend
reporting bfloat16 unsupported while the manifest claims it (the sim's device module, patched in
a child process), a device count that differs, a dtype that works without being claimed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers.runs import latest_run
from helpers.suite_runs import run_clean

from torchcts.cases.context import CaseContext
from torchcts.cases.suites import capabilities as suite
from torchcts.manifest.templates import validation_manifest
from torchcts.model.record import CaseRecord
from torchcts.model.run import Run
from torchcts.model.status import Status
from torchcts.oracle.compare import OracleMismatch
from torchcts.results.reports.capabilities import compare, markdown_lines, render_html


def _run(claimed: dict[str, bool], *, device_count: int = 1, caps: dict[str, bool] | None = None) -> Run:
    return Run.from_json({"manifest": {"supported_dtypes": claimed, "capabilities": caps or {}, "device_count": device_count}})


def _probe(observed: dict[str, str], reported: dict | None = None) -> list[CaseRecord]:
    return [CaseRecord(id="capabilities/probe", status=Status("passed"),
                       info={"observed": observed, "reported": reported or {}})]


def _findings(run: Run, records: list[CaseRecord]) -> set[tuple[str, str]]:
    comp = compare(run, records)
    assert comp is not None
    return {(f.severity, f.subject) for f in comp.findings}


def test_probe_passes_on_cpu_and_reports_into_summary_and_html(tmp_path: Path) -> None:
    recs = run_clean(tmp_path, ("capabilities/probe",))
    info = recs["capabilities/probe"]["info"]
    assert info["observed"]["float32"] == "works" and info["reported"]["module.is_available"] is True
    run_dir = latest_run(tmp_path)
    assert "## Capabilities: claimed, reported, observed" in (run_dir / "summary.md").read_text()
    assert "<section id='capabilities'>" in (run_dir / "report.html").read_text()


def test_a_claimed_dtype_failing_its_probe_fails_the_case(monkeypatch: pytest.MonkeyPatch) -> None:
    real = torch.zeros

    def zeros(*args, dtype=None, **kwargs):
        if dtype == torch.float64:
            raise RuntimeError("no float64 zeros kernel")
        return real(*args, dtype=dtype, **kwargs)

    monkeypatch.setattr(torch, "zeros", zeros)
    ctx = CaseContext(device=torch.device("cpu"), manifest=validation_manifest())
    with pytest.raises(OracleMismatch, match="basic probe .*: float64 zeros: RuntimeError: no float64 zeros kernel$"):
        suite.probe(ctx)  # the message names the dtype and why (pytorch_ocl's bool add gave 2s: said nowhere)
    assert ctx.info["observed"]["float64"] == "fails: zeros: RuntimeError: no float64 zeros kernel"
    run = _run({"float64": True, "float32": True})
    assert ("failure", "float64") in _findings(run, _probe(ctx.info["observed"], ctx.info["reported"]))


def test_findings_for_each_disagreement() -> None:
    run = _run({"float32": True, "bfloat16": True}, device_count=2, caps={"multi_device": True})
    recs = _probe({"float32": "works", "bfloat16": "works", "uint16": "works", "complex32": "fails: add: x"},
                  {"module.is_bf16_supported": False, "module.device_count": 1})
    assert _findings(run, recs) == {("disagreement", "bfloat16"), ("info", "uint16"),
                                    ("disagreement", "device_count"), ("disagreement", "multi_device")}
    # an unclaimed dtype that fails is no finding; agreement says so in both reports
    clean = _probe({"float32": "works", "complex32": "fails: add: x"}, {"module.device_count": 1})
    assert _findings(_run({"float32": True}), clean) == set()
    assert "agree" in "".join(markdown_lines(_run({"float32": True}), clean))
    assert "agree" in render_html(_run({"float32": True}), clean)


def test_no_section_without_the_probe_record() -> None:
    assert compare(_run({"float32": True}), []) is None
    assert markdown_lines(_run({}), []) == [] and render_html(_run({}), []) == ""


_SIM_BF16 = """
import json, torch
import torchcts.sim
from torchcts import compat
torch.sim.is_bf16_supported = lambda including_emulation=True: False
print(json.dumps(compat.reported_capabilities("sim")))
"""


def test_sim_reporting_bf16_unsupported_is_a_disagreement_not_a_failure() -> None:
    """The sim claims bfloat16; a device module answering is_bf16_supported() False is a finding."""
    r = subprocess.run([sys.executable, "-c", _SIM_BF16], capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    reported = json.loads(r.stdout.strip().splitlines()[-1])
    assert reported["accelerator.current"] == "sim" and reported["module.get_amp_supported_dtype"] == ["float16", "bfloat16"]
    run = _run({"float32": True, "bfloat16": True})
    findings = _findings(run, _probe({"float32": "works", "bfloat16": "works"}, reported))
    assert findings == {("disagreement", "bfloat16")}
