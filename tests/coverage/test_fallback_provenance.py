"""CPU-fallback provenance (issue 48 item 4): which dispatched overloads ran on the backend's boxed
CPU fallback, which passes rest on it, and the fallback ops ranked by the cases they carry, in the
scorecard, summary.md, report.html and `coverage report RUN` (by name, with no --manifest).

The dispatcher half runs in a fresh process that registers, as a C++ backend in bring-up does, a
whole-key fallback for PrivateUse1 and a kernel for one out= overload (`add.out`); the real backend
(pytorch_ocl) is checked in tests/real_backends/test_real_backend_ocl.py.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

from helpers.paths import REPO

from torchcts.model.record import CaseRecord
from torchcts.model.run import Run
from torchcts.results.reports.fallback_section import markdown_lines, render_html, scorecard_lines, summarize
from torchcts.results.reports.scorecard import print_scorecard

CLASSIFY = """import json, torch
from torchcts.cases import fallback
before = fallback.fallback_ops(["aten::sin"], "privateuseone")
lib = torch.library.Library("aten", "IMPL")
lib.impl("add.out", lambda *a, **k: None, "PrivateUse1")
lib.impl("abs", lambda *a, **k: None, "PrivateUse1")
every = torch.library.Library("_", "IMPL")
every.fallback(lambda *a, **k: None, "PrivateUse1")
names = ["aten::sin", "aten::add.Tensor", "aten::add_.Tensor", "aten::abs", "aten::mul.Scalar", "aten::view",
         "aten::erfinv"]
print(json.dumps({"before": before, "after": fallback.fallback_ops(names, "privateuseone"),
                  "cpu": fallback.fallback_ops(names, "cpu")}))
"""


def test_dispatcher_tables_name_what_ran_on_the_fallback():
    out = subprocess.run([sys.executable, "-c", CLASSIFY], capture_output=True, text=True, timeout=300,
                         cwd=REPO)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["before"] == [] and got["cpu"] == []  # no fallback registered; the CPU is the reference
    # sin -> sin.out, erfinv -> erfinv.out (structured: their out= overload runs); view has no kernel here;
    # add.Tensor/add_.Tensor run the backend's add.out, abs its own kernel, mul.Scalar a composite (mul.Tensor)
    assert got["after"] == ["aten::erfinv.out", "aten::sin.out", "aten::view"]


def _rec(i: str, status: str, fallback: list[str] | None) -> CaseRecord:
    return CaseRecord.from_json({"id": i, "suite": "opinfo", "status": status, "fallback": fallback,
                                 "dispatched": ["aten::x"]})


RECORDS = [
    _rec("opinfo/sin/float32/forward", "passed", ["aten::sin.out"]),
    _rec("opinfo/sin/float32/out", "failed", ["aten::sin.out"]),
    _rec("opinfo/cumsum/float32/forward", "passed", ["aten::cumsum.out", "aten::sin.out"]),
    _rec("opinfo/add/float32/forward", "passed", None),
    _rec("opinfo/erf/float32/forward", "not_applicable", ["aten::erf.out"]),  # not executed: not counted
    _rec("opinfo/bad/float32/forward", "passed", "aten::x"),  # crafted: not a list, nothing claimed
]


def test_summary_counts_passes_on_the_fallback_and_ranks_the_ops():
    s = summarize(RECORDS)
    assert (s.passes, s.passes_on_fallback, s.cases_on_fallback) == (
        4, ["opinfo/sin/float32/forward", "opinfo/cumsum/float32/forward"], 3)
    assert [(o.op, o.cases, o.passed, o.failing) for o in s.ops] == [
        ("aten::sin.out", 3, 2, 1), ("aten::cumsum.out", 1, 1, 0)]
    assert summarize(RECORDS[3:]).ops == []  # no executed record with a list of fallback ops


def test_scorecard_summary_and_report_show_the_fallback():
    lines = scorecard_lines(RECORDS)
    assert lines[0].startswith("CPU fallback: 2 of 4 passes ran at least one op on the backend's CPU fallback (2 fallback ops")
    assert "aten::sin.out 3, aten::cumsum.out 1" in lines[1]
    md = "\n".join(markdown_lines(RECORDS))
    assert "| `aten::sin.out` | 3 | 2 | 1 |" in md and "- `opinfo/cumsum/float32/forward`" in md
    html = render_html(RECORDS)
    assert "<code>opinfo/sin/float32/forward</code>: aten::sin.out" in html and "id='fallback-ops'" in html
    assert scorecard_lines([_rec("a", "passed", None)]) == [] and render_html([]) == ""
    out = io.StringIO()
    run = Run.from_json({"name": "r", "status": "complete", "device": {"type": "ocl"}, "totals": {"passed": 4}})
    print_scorecard(Path("."), run, out, records=RECORDS)
    assert "CPU fallback: 2 of 4 passes" in out.getvalue()


def test_coverage_report_lists_fallback_ops_by_name_without_a_manifest(cli, workdir, capsys):
    run = workdir / "results" / "20260101T000000Z-abcdef"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"name": run.name, "status": "complete", "device": {"type": "ocl"},
                                              "manifest": {}, "selection": {}}))
    (run / "cases.jsonl").write_text("".join(json.dumps(r.to_json()) + "\n" for r in RECORDS))
    assert cli(["coverage", "report", str(run), "--json"]) == 0
    fb = json.loads(capsys.readouterr().out)["fallback"]
    assert fb["passes_on_fallback"] == 2 and [o["op"] for o in fb["ops"]] == ["aten::sin.out", "aten::cumsum.out"]
    assert cli(["coverage", "report", str(run)]) == 0
    text = capsys.readouterr().out
    assert "## Ran on the backend's CPU fallback: 2 ops" in text and "| `aten::sin.out` | 3 | 2 | 1 |" in text
    assert "CPU fallback" in (run / "summary.md").read_text() and "id='fallback-ops'" in (run / "report.html").read_text()
