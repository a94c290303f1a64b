"""`torchcts expectations update`: proposed entries for a run's failures, written for review."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from torchcts.manifest.expectations import validate_entries
from torchcts.results.ledger.apply import apply, run_date
from torchcts.results.records import rundir

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MISSING = "NotImplementedError: Could not run 'aten::sub.Tensor' with arguments from the 'npu' backend."


def _rec(case_id: str, status: str, message: str = "", **extra) -> dict:
    parts = case_id.split("/")
    return {"id": case_id, "suite": parts[0], "kind": parts[1], "ops": [f"aten::{parts[2]}"], "dtype": parts[-1],
            "status": status, "message": message, **extra}


def make_run(root: Path) -> Path:
    """A run folder as `torchcts run` leaves it, with a rerun record superseding an earlier one."""
    run_dir = root / "results" / "20261130T000000Z-abcdef"
    run_dir.mkdir(parents=True)
    (root / "results" / "latest").write_text(run_dir.name + "\n")
    run = {"name": run_dir.name, "started": "2026-11-30T00:00:00Z", "status": "complete",
           "device": {"type": "npu"}, "manifest": {"expectations": []}}
    (run_dir / "run.json").write_text(json.dumps(run))
    records = [
        _rec("operators/elementwise/sub/float32", "error", MISSING, exception="NotImplementedError"),
        _rec("operators/elementwise/sub/float16", "error", MISSING, exception="NotImplementedError"),
        _rec("operators/elementwise/add/float32", "failed", "values differ", mismatch={"what": "values differ"},
             expectation={"entry": 0, "note": "expects another signature"}),
        _rec("operators/elementwise/mul/float32", "crashed", "worker exited with signal 11"),
        _rec("operators/elementwise/neg/float32", "error", "RuntimeError: transient"),
        _rec("operators/elementwise/neg/float32", "flaky", "passed on attempt 2"),  # supersedes: not proposed
        _rec("operators/elementwise/abs/float32", "xfailed", "already known"),
        _rec("operators/elementwise/abs/int64", "passed"),
    ]
    (run_dir / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return run_dir


def _final_failures(run_dir: Path) -> list[dict]:
    from torchcts.results.records.rundir import final_records

    return [r for r in final_records(run_dir) if r.status in ("failed", "error", "crashed", "timeout")]


def test_update_writes_python_entries_that_validate_and_xfail_exactly_these_failures(tmp_path, monkeypatch, cli, capsys):
    monkeypatch.chdir(tmp_path)
    run_dir = make_run(tmp_path)
    assert cli(["expectations", "update", run_dir.name, "--group", "case"]) == 0
    assert "nothing applied" in capsys.readouterr().out
    ns: dict = {}
    exec((tmp_path / "expectations.proposed.py").read_text(), ns)  # noqa: S102 - the ledger file it wrote
    entries = ns["expectations"]
    assert validate_entries(entries) == []
    assert [e["match"] for e in entries] == [
        "operators/elementwise/sub/float32", "operators/elementwise/sub/float16",
        "operators/elementwise/add/float32", "operators/elementwise/mul/float32"]
    assert entries[3]["status"] == "known_crash" and entries[0]["signature"] == "missing_kernel: aten::sub.Tensor"
    assert entries[2]["reason"].endswith("replaces expectations[0], whose signature no longer matches")
    assert all(e["expires"] == "2027-02-28" for e in entries)
    # adopting the proposal turns every current failure into xfailed, with the same signature
    today = run_date(rundir.read_run(run_dir))
    assert {apply(r, entries, today).status for r in _final_failures(run_dir)} == {"xfailed"}
    # never overwrites silently
    assert cli(["expectations", "update", run_dir.name, "--group", "case"]) == 2


def test_update_by_selector_writes_toml_selectors(tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)
    run_dir = make_run(tmp_path)
    assert cli(["expectations", "update", "--group", "selector", "--output", "ledger.toml", "--expires-days", "30"]) == 0
    entries = tomllib.loads((tmp_path / "ledger.toml").read_text())["expectations"]
    assert validate_entries(entries) == []
    assert entries[0]["match"] == {"suite": "operators", "kind": "elementwise", "op": "aten::sub",
                                   "dtype": ["float16", "float32"]}
    assert entries[0]["expires"] == "2026-12-30"
    assert len(entries) == 3
    today = run_date(rundir.read_run(run_dir))
    assert {apply(r, entries, today).status for r in _final_failures(run_dir)} == {"xfailed"}


LONG = ("RuntimeError: the device queue rejected the reduction because its workspace request of many bytes "
        "exceeds the per-stream limit configured for this backend; raise the limit or split the reduction")


def test_update_proposes_one_entry_per_triage_cluster_with_the_whole_reason(tmp_path, monkeypatch, cli):
    """issue 30: one entry per case with reasons cut mid-word; now one per cluster, a glob plus a signature."""
    monkeypatch.chdir(tmp_path)
    run_dir = make_run(tmp_path)
    more = [_rec("operators/reduction/sum/float32", "error", LONG), _rec("operators/reduction/mean/float32", "error", LONG),
            _rec("operators/reduction/amax/float32", "passed")]  # a glob over all three would make amax xpassed
    with (run_dir / "cases.jsonl").open("a") as f:
        f.write("".join(json.dumps(r) + "\n" for r in more))
    assert cli(["expectations", "update"]) == 0
    ns: dict = {}
    exec((tmp_path / "expectations.proposed.py").read_text(), ns)  # noqa: S102 - the ledger file it wrote
    entries = ns["expectations"]
    assert validate_entries(entries) == []
    by_match = {json.dumps(e["match"], sort_keys=True): e for e in entries}
    assert len(entries) == 4  # sub's missing kernel, the reduction error, add's mismatch, mul's crash
    sub = by_match['"operators/elementwise/sub/*"']
    assert sub["signature"] == "missing_kernel: aten::sub.Tensor" and sub["reason"].startswith("TODO: why it fails (2 cases")
    reduction = by_match[json.dumps({"case": ["operators/reduction/mean/float32", "operators/reduction/sum/float32"]})]
    assert LONG in reduction["reason"] and reduction["signature"].startswith("RuntimeError: ")
    assert by_match['"operators/elementwise/mul/float32"']["status"] == "known_crash"
    today = run_date(rundir.read_run(run_dir))
    from torchcts.results.records.rundir import final_records

    applied = {r.id: apply(r, entries, today).status for r in final_records(run_dir)}
    assert {applied[r.id] for r in _final_failures(run_dir)} == {"xfailed"}
    assert applied["operators/reduction/amax/float32"] == "passed"
    assert applied["operators/elementwise/abs/int64"] == "passed"


def test_case_patterns_name_exactly_the_cluster():
    from torchcts.results.ledger.proposals import case_patterns

    ids = ["s/k/add/float16", "s/k/add/float32", "s/k/mul/float32", "t/x"]
    assert case_patterns(ids[:2], ids) == ["s/k/add/*"]
    assert case_patterns(["s/k/add/float32", "s/k/mul/float32"], ids) == ["s/k/*/float32"]
    assert case_patterns(["s/k/add/float16", "s/k/mul/float32"], ids) == ["s/k/add/float16", "s/k/mul/float32"]
    assert case_patterns(["s/k/add/float16", "t/x"], ids) == ["s/k/add/float16", "t/x"]
