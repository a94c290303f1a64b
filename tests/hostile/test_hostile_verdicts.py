"""Issue 31, class 5 and the mps rule: a verdict rebuilt from crafted or damaged records never reads clean.

`report` (and `merge`) exit by the verdict they state, as `run` would; a run whose plan.jsonl is
missing cannot be shown complete; junit.xml carries not-run cases and unreadable records as errors;
on mps a crash is never forgiven, also when `report` rebuilds the verdict from edited records.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from helpers.crafted import case_json, failed, fake_run

ADD = "operators/elementwise/add/float32"
MUL = "operators/elementwise/mul/float32"


def passed(case_id: str) -> dict:
    return {"id": case_id, "suite": "operators", "level": 1, "dtype": "float32", "status": "passed"}


@pytest.mark.parametrize("status", ["failed", "crashed", "timeout", "error"])
def test_report_exits_1_on_a_failing_run(workdir, cli, status):
    fake_run(workdir, "r", [passed(MUL), {**failed(ADD, message="m"), "status": status}],
             plan=[case_json(ADD), case_json(MUL)])
    assert cli(["report"]) == 1
    assert cli(["report", "--triage"]) == 1


def test_report_exits_0_on_a_clean_run_and_1_on_not_run(workdir, cli):
    fake_run(workdir, "r", [passed(ADD)], plan=[case_json(ADD)])
    assert cli(["report"]) == 0
    fake_run(workdir, "r2", [passed(ADD)], plan=[case_json(ADD), case_json(MUL)], status="running")
    assert cli(["report"]) == 1  # MUL planned, never recorded


def test_a_run_without_its_plan_is_incomplete(workdir, cli, capsys):
    """plan.jsonl removed and the trailing records cut: the run must not read complete."""
    run_dir = fake_run(workdir, "r", [passed(ADD)], plan=None)
    spec = json.loads((run_dir / "run.json").read_text())
    spec["planned"] = 2
    (run_dir / "run.json").write_text(json.dumps(spec))
    assert cli(["report"]) == 1
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] != "complete" and run["plan_missing"] is True and run["missing_records"] == 1
    assert "plan.jsonl is missing" in capsys.readouterr().out
    assert "plan.jsonl is missing" in (run_dir / "summary.md").read_text()
    assert "plan.jsonl is missing" in (run_dir / "junit.xml").read_text()


def test_junit_carries_not_run_and_unreadable_records_as_errors(workdir, cli):
    run_dir = fake_run(workdir, "r", [passed(ADD)], plan=[case_json(ADD), case_json(MUL)], status="running")
    with open(run_dir / "cases.jsonl", "ab") as fh:
        fh.write(b'{"id": "torn\n')
    assert cli(["report"]) == 2
    root = ET.fromstring((run_dir / "junit.xml").read_text().encode())
    errors = {(e.get("type"), c.get("name")) for c in root.iter("testcase") for e in c.findall("error")}
    assert ("not_run", MUL) in errors
    assert any(t == "unreadable_record" for t, _ in errors)
    assert not [c for c in root.iter("testcase") if c.find("skipped") is not None and c.get("name") == MUL]
    assert sum(int(s.get("errors")) for s in root.iter("testsuite")) == 2


def test_merge_exits_by_the_verdict(workdir, cli):
    """A failing shard fails the merge; shards whose plan is missing merge into an incomplete run."""
    for i, records, plan in ((1, [passed(ADD)], None), (2, [passed(MUL)], None), (3, [passed(ADD)], [case_json(ADD)]),
                             (4, [failed(MUL, message="m")], [case_json(MUL)])):
        d = fake_run(workdir, f"s{i}", records, plan=plan)
        spec = json.loads((d / "run.json").read_text())
        spec["selection"] = {"shard": [1 + (i - 1) % 2, 2]}
        (d / "run.json").write_text(json.dumps(spec))
    assert cli(["merge", "s1", "s2"]) == 1  # every case passed, but nothing shows the run whole
    assert cli(["merge", "s3", "s4"]) == 1


def test_report_never_forgives_a_crash_on_mps(workdir, cli):
    """Records edited to say xfailed or flaky for a crash: on mps, report counts the crash again
    (elsewhere the records stand)."""
    flaky = {**passed(ADD), "status": "flaky", "attempt": 2,
             "first_failure": {"status": "crashed", "message": "signal SIGSEGV"}}
    xfailed = {**passed(MUL), "status": "xfailed",
               "expectation": {"entry": 0, "original_status": "crashed", "reason": "r"}}
    for device in ("cuda", "mps"):
        run_dir = fake_run(workdir, device, [flaky, xfailed], plan=[case_json(ADD), case_json(MUL)], device=device)
        code = cli(["report", str(run_dir)])
        totals = json.loads((run_dir / "run.json").read_text())["totals"]
        if device == "mps":
            assert code == 1 and totals == {"crashed": 2}
        else:
            assert code == 0 and totals == {"flaky": 1, "xfailed": 1}
