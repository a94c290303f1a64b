"""Issue 40 item 1: one record never ends a run. A record crosses from a worker to the controller
whatever a case put in it (int64 extremes, which execnet's serializer refuses as numbers; keys of
mixed types; deep nesting); a TorchCTS error around one case is that case's `error` record with
`internal_error`, the run goes on and exits 3, the same alone and in a full run; a run whose planned
cases lack results is never called complete."""

from __future__ import annotations

import json
import struct

import execnet
import pytest
from _pytest.reports import TestReport
from helpers.paths import TESTS
from helpers.runs import pythonpath, run_cli

from torchcts.engine import judge
from torchcts.errors import ExitCode
from torchcts.model.record import MAX_DEPTH, CaseRecord
from torchcts.model.run import Run
from torchcts.results.ledger.apply import verdict_exit
from torchcts.results.records import rundir

INT64_MIN, INT64_MAX = -2**63, 2**63 - 1


def _shipped(record: CaseRecord, **report_fields: object) -> tuple[dict, CaseRecord]:
    """What xdist does: the report's data through execnet's own serializer, then rebuilt."""
    report = TestReport(f"torchcts::{record.id}", ("torchcts", 0, record.id), {}, "failed", None, "call")
    for name, value in report_fields.items():
        setattr(report, name, value)
    judge.attach(report, record)
    data = report._to_json()
    judge.serializable(report, data)
    data = execnet.loads(execnet.dumps(data))  # raises where a real send would
    back = TestReport._from_json(data)
    judge.from_serializable(back)
    out = judge.record_of(back)
    assert out is not None
    return data, out


def test_int64_extremes_in_an_explore_record_cross_execnet():
    # execnet writes an int below -2**31 with struct '!i' and fails: the record travels as text
    with pytest.raises(struct.error):
        execnet.dumps({"v": INT64_MIN})
    info = {"explore": {"shrunk": {"tensor": {"dtype": "int64", "shape": [2], "values": [INT64_MIN, INT64_MAX]}}}}
    record = CaseRecord(id="opinfo/neg/int64/explore", status="failed", info=info,
                        mismatch={"expected": INT64_MIN, "actual": 0})
    _, back = _shipped(record)
    assert back == record and back.info == info and back.mismatch == {"expected": INT64_MIN, "actual": 0}


def test_keys_of_mixed_types_and_deep_nesting_cross_as_text():
    deep: dict = {}
    node = deep
    for _ in range(MAX_DEPTH + 200):
        node["x"] = {}
        node = node["x"]
    record = CaseRecord(id="x/1", status="failed", info={1: "int key", "a": "str key", (2, 3): "tuple key", "deep": deep})
    _, back = _shipped(record)
    assert back.status == "failed" and back.internal_error is None
    assert back.info is not None and back.info["1"] == "int key" and back.info["(2, 3)"] == "tuple key"
    depth, node = 0, back.info["deep"]
    while isinstance(node, dict):
        node, depth = node["x"], depth + 1
    assert isinstance(node, str) and depth < MAX_DEPTH  # the rest as text, not a lost record


def test_cases_jsonl_takes_any_record(tmp_path):
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    writer = rundir.RecordWriter(tmp_path)
    writer.append(CaseRecord(id="a/1", status="failed", info={"deep": deep, 3: INT64_MIN}))
    writer.close()
    (line,) = (tmp_path / rundir.CASES_JSONL).read_text().splitlines()
    assert json.loads(line)["info"]["3"] == INT64_MIN


def test_a_report_execnet_cannot_send_becomes_the_cases_internal_error():
    """Not the record (text always travels) but another field of pytest's report: the case's record
    says TorchCTS failed to send it, and the data is sendable."""
    record = CaseRecord(id="x/2", suite="operators", status="passed", message="fine")
    data, back = _shipped(record, user_properties=[("n", INT64_MIN)])
    assert back.status == "error" and back.internal_error and "sending its report" in back.internal_error
    assert "passed: fine" in (back.message or "") and data["outcome"] == "failed"
    assert back.suite == "operators"


def test_a_garbled_record_text_is_an_internal_error_never_a_lost_case():
    back = CaseRecord.from_text("{not json", "x/3")
    assert back.id == "x/3" and back.status == "error" and back.internal_error


def test_internal_errors_exit_3_before_any_other_verdict():
    assert verdict_exit(Run(totals={"passed": 3})) == ExitCode.OK
    assert verdict_exit(Run(totals={"failed": 1})) == ExitCode.FAILURES
    assert verdict_exit(Run(totals={"failed": 1, "error": 1}, internal_errors=1)) == ExitCode.INTERNAL


SIM = ["--device", "sim", "--manifest", "torchcts:sim/manifest.py"]


def _records(workdir) -> dict[str, CaseRecord]:
    return {r.id: r for r in rundir.final_records(rundir.latest_run(workdir / "results"))}


def test_an_int64_explore_failure_fails_the_case_and_the_run_goes_on(workdir):
    """The sim fault `neg_int64_low_word`: the shrunk explore sample holds int64 extremes. Before, the
    worker's report ended the run with INTERNALERROR (exit 3, the rest not_run)."""
    proc = run_cli("run", *SIM, "--op", "neg", "--dtype", "int64", cwd=workdir,
                   env={"TORCHCTS_SIM_FAULT": "neg_int64_low_word"})
    assert proc.returncode == ExitCode.FAILURES, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "INTERNALERROR" not in proc.stdout + proc.stderr and "run complete" in proc.stdout
    records = _records(workdir)
    explore = records["opinfo/neg/int64/explore"]
    assert explore.status == "failed" and explore.internal_error is None
    assert str(INT64_MIN) in json.dumps(explore.info) or str(INT64_MAX) in json.dumps(explore.info)
    assert all(r.status in ("passed", "failed") for r in records.values() if r.status != "filtered")
    assert sum(r.status == "passed" for r in records.values()) >= 5


@pytest.mark.parametrize("isolated", [True, False], ids=["workers", "in-process"])
def test_a_judge_error_is_that_cases_error_and_the_run_exits_3(workdir, isolated):
    """A TorchCTS error while judging one case (tests/helpers/judge_fault.py, loaded into every
    process with -p): that case is `error` with `internal_error`, every other case runs, exit 3,
    with xdist workers and in one process alike."""
    case = "opinfo/neg/float32/forward"
    extra = [] if isolated else ["--no-isolation"]
    proc = run_cli("run", "--device", "cpu", "--op", "neg", "--dtype", "float32", *extra,
                   "--", "-p", "helpers.judge_fault", cwd=workdir,
                   env={"TORCHCTS_TEST_JUDGE_FAULT": case, **pythonpath(TESTS)})
    assert proc.returncode == ExitCode.INTERNAL, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "INTERNALERROR" not in proc.stdout + proc.stderr
    records = _records(workdir)
    assert records[case].status == "error" and "planted judge fault" in (records[case].internal_error or "")
    others = [r for r in records.values() if r.id != case and r.status not in ("filtered", "not_claimed")]
    assert others and all(r.status == "passed" for r in others)
    assert "TorchCTS internal errors" in proc.stdout or "internal error" in proc.stdout


def test_planned_cases_without_a_result_are_never_a_complete_run(workdir):
    proc = run_cli("run", "--device", "cpu", "--op", "neg", "--dtype", "float32", cwd=workdir)
    assert proc.returncode == ExitCode.OK, proc.stdout[-2000:]
    run_dir = rundir.latest_run(workdir / "results")
    lines = (run_dir / rundir.CASES_JSONL).read_text().splitlines()
    kept = [line for line in lines if json.loads(line)["status"] != "passed"]
    (run_dir / rundir.CASES_JSONL).write_text("".join(f"{line}\n" for line in kept))
    report = run_cli("report", cwd=workdir)
    assert report.returncode == ExitCode.FAILURES
    assert "run incomplete" in report.stdout and "run complete" not in report.stdout
    assert rundir.read_run(run_dir).status == "incomplete"
