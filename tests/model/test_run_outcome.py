"""run.json typed (model/run.py: Run, issue 42 item 1): one reader of the untrusted file,
an exact round trip of what TorchCTS writes, older files read as before, wrong types refused in one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers.paths import REPO

from torchcts.errors import UsageError
from torchcts.manifest.templates import validation_manifest
from torchcts.model.run import Run
from torchcts.results.ledger.apply import gate_failures, verdict_exit
from torchcts.results.records import rundir
from torchcts.results.records.finalize import finalize

PASSED = {"id": "operators/elementwise/add/float32", "suite": "operators", "level": 1, "status": "passed"}
FAILED = {"id": "operators/elementwise/mul/float32", "suite": "operators", "level": 1, "status": "failed",
          "message": "values differ"}


def _run_dir(root: Path, run: dict, records: list[dict], plan: bool = True) -> Path:
    """A run folder holding `run` as run.json, the records, and a plan of exactly those cases."""
    run_dir = root / "results" / str(run.get("name") or "r")
    run_dir.mkdir(parents=True)
    (run_dir / rundir.RUN_JSON).write_text(json.dumps(run))
    (run_dir / rundir.CASES_JSONL).write_text("".join(json.dumps(r) + "\n" for r in records))
    if plan:
        cases = [{"id": r["id"], "suite": r["suite"], "level": 1, "runner": "m:f"} for r in records]
        (run_dir / "plan.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    rundir.point_latest(root / "results", run_dir)
    return run_dir


def _spec(name: str = "r", **changes: object) -> dict:
    """run.json as a run opens it (the spec, a Run, with what the run opened with)."""
    manifest = validation_manifest().to_json()
    return {"name": name, "device": {"type": "cpu", "gate": "cpu", "count": 1, "model": None}, "gate": "cpu",
            "validation": True, "manifest": manifest, "manifest_hash": "h", "manifest_source": "validation",
            "manifest_arg": None, "command": ["run", "--validation"], "selection": {"ops": ["add"], "shard": None},
            "started": "2026-01-01T00:00:00Z", "filtered": 3, "sharded_out": 0, "expectations_outside_selection": [],
            "planned": 2, "strict_expectations": False, "rerun_failures": 0, "isolation": True, "timeout_s": None,
            "crash_budget": 3, "explore": 0, "torchcts": "0", "torch": {"torch": "2.x"}, "python": "3.12",
            "os": "Linux", "arch": "x86_64", "compat_fallbacks": {}, "threads": {"torch": 1}, "ended": None,
            "status": "running", **changes}


def test_a_finished_run_json_round_trips_exactly_and_reads_typed(tmp_path):
    run_dir = _run_dir(tmp_path, _spec(), [PASSED, FAILED])
    finished, _ = finalize(run_dir, "complete")
    on_disk = json.loads((run_dir / rundir.RUN_JSON).read_text())
    assert finished.to_json() == on_disk  # what finalize returns is what it wrote
    read = rundir.read_run(run_dir)
    assert read.to_json() == on_disk and Run.from_json(on_disk).to_json() == on_disk
    assert set(on_disk) >= set(_spec()) | {"totals", "ledger", "unreadable_records", "internal_errors",
                                           "record_problems"}  # key names on disk as before
    assert (read.status, read.totals, read.unreadable_records, read.plan_missing) == \
        ("complete", {"passed": 1, "failed": 1}, 0, None)
    assert read.extra == {"python": "3.12", "os": "Linux", "arch": "x86_64", "threads": {"torch": 1}}
    assert read.ended and read.device_type == "cpu" and verdict_exit(read) == 1
    assert gate_failures(read) == ["1 failed"]


def test_the_plan_marks_come_and_go_with_the_plan(tmp_path):
    run_dir = _run_dir(tmp_path, _spec(), [PASSED], plan=False)
    run, _ = finalize(run_dir, "complete")
    assert (run.status, run.plan_missing, run.missing_records) == ("interrupted", True, 1)
    assert "plan.jsonl is missing (1 planned cases have no record)" in gate_failures(run)
    (run_dir / "plan.jsonl").write_text(json.dumps({"id": PASSED["id"], "suite": "operators", "level": 1,
                                                    "runner": "m:f"}) + "\n")
    run, _ = finalize(run_dir, "complete")
    on_disk = json.loads((run_dir / rundir.RUN_JSON).read_text())
    assert "plan_missing" not in on_disk and "missing_records" not in on_disk  # dropped, not written as null
    assert run.status == "complete" and gate_failures(run) == []


def test_an_older_run_json_missing_keys_is_read_as_before(tmp_path, cli, capsys):
    old = {"name": "old", "device": {"type": "cpu"}, "manifest": {}, "selection": {}, "status": "complete",
           "compat_fallbacks": ["a list, as older runs kept them"]}
    outcome = Run.from_json(old)
    assert outcome.to_json() == old  # no key added by reading
    assert (outcome.gate, outcome.started, outcome.filtered, outcome.totals, outcome.isolation) == (None,) * 5
    assert outcome.entries == [] and outcome.device_type == "cpu"
    run_dir = _run_dir(tmp_path, old, [PASSED])
    assert cli(["report", str(run_dir)]) == 0
    assert "device cpu gate None; run complete" in capsys.readouterr().out
    rewritten = json.loads((run_dir / rundir.RUN_JSON).read_text())
    assert rewritten["totals"] == {"passed": 1} and "gate" not in rewritten and "started" not in rewritten


@pytest.mark.parametrize("key, value", [
    ("unreadable_records", "5"), ("internal_errors", True), ("plan_missing", "yes"), ("totals", {"passed": "1"}),
    ("ledger", []), ("record_problems", [1]), ("status", 3), ("planned", 2.5), ("torch", None),
    ("compat_fallbacks", [1]), ("missing_shards", "1"),
])
def test_a_wrong_typed_field_is_one_line_exit_2(tmp_path, cli, capsys, key, value):
    run_dir = _run_dir(tmp_path, _spec(**{key: value}), [PASSED])
    assert cli(["report", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"r/run.json: {key} has the wrong type" in err and "Traceback" not in err


def test_a_run_json_that_is_no_run_is_refused_by_the_one_reader():
    for data in ([], {"device": None}, {"manifest": "claims"}, {"selection": []}):
        with pytest.raises(UsageError, match=r"^x/run.json is not a TorchCTS run description"):
            Run.from_json(data, "x/run.json")
    with pytest.raises(UsageError, match="device.type has the wrong type"):
        Run.from_json({"device": {"type": 1}})
    assert Run.from_json({"expectations_outside_selection": "all"}).expectations_outside_selection == []



def test_the_device_claims_and_selection_read_typed_and_written_back_as_read(tmp_path):
    """One type for run.json (issue 52 item 1): its nested objects are typed for every reader, and
    what was read is written back exactly, an older run's partial object too; a field given a new
    value is written from it."""
    from dataclasses import replace

    from torchcts.model.device import DeviceInfo
    from torchcts.model.manifest import Manifest
    from torchcts.model.selection import Selection

    run_dir = _run_dir(tmp_path, _spec(), [PASSED])
    run = rundir.read_run(run_dir)
    assert isinstance(run.device, DeviceInfo) and (run.device.type, run.device.gate, run.device.count) == ("cpu", "cpu", 1)
    assert isinstance(run.manifest, Manifest) and run.manifest.claims("inference") and run.entries == []
    assert isinstance(run.selection, Selection) and run.selection.ops == ["add"] and run.selection.shard is None
    assert run.to_json() == _spec()
    partial = {"device": {"type": "cpu", "added_by_a_newer_torchcts": 1}, "selection": {"ops": ["add"]}}
    older = Run.from_json(partial)
    assert older.to_json() == partial and older.unread_keys("device") == ["added_by_a_newer_torchcts"]
    older.selection = replace(older.selection, shard=(1, 2))  # given a new value: written from it
    assert older.to_json()["selection"] == {**Selection(ops=["add"]).to_json(), "shard": (1, 2)}


def test_a_key_another_torchcts_wrote_is_read_around_by_reports_and_refused_by_a_run(tmp_path, cli):
    """A selection, device or manifest key no field names (a newer TorchCTS's): every report reads the
    run (the key written back as it was); the run's own processes refuse it, as they refuse claims
    that lack a key Manifest needs (the repro script too: it would run with claims of nothing)."""
    from torchcts.engine.spec import RunSpec

    newer = _spec(selection={"ops": ["add"], "shard": None, "tags": ["x"]})
    run_dir = _run_dir(tmp_path, newer, [PASSED])
    run = rundir.read_run(run_dir)
    assert run.selection is not None and run.selection.ops == ["add"] and run.unread_keys("selection") == ["tags"]
    assert run.to_json() == newer and cli(["report", str(run_dir)]) == 0
    with pytest.raises(UsageError, match="does not describe a run .selection holds tags"):
        RunSpec.from_run(run)
    manifest = {k: v for k, v in _spec()["manifest"].items() if k != "capabilities"}
    lacking = Run.from_json(_spec(manifest=manifest))
    assert lacking.missing_keys("manifest") == ["capabilities"] and lacking.manifest is not None
    with pytest.raises(UsageError, match="manifest lacks capabilities"):
        RunSpec.from_run(lacking)
    assert Run.from_json(_spec()).missing_keys("manifest") == []
    from torchcts.results.reports.html import claimed_dtypes

    # claims that name no dtypes are unknown claims to the report, not claims of no dtype
    assert claimed_dtypes(Run.from_json({"manifest": {"device_name": "x"}})) is None
    assert claimed_dtypes(Run.from_json(_spec())) and claimed_dtypes(Run(manifest=Run.from_json(_spec()).manifest))


@pytest.mark.parametrize("nested, line", [
    ({"device": {"type": "cpu", "count": "2"}}, "device.count has the wrong type"),
    ({"device": {"type": "cpu", "gate": ["cpu"]}}, "device.gate has the wrong type"),
    ({"selection": {"ops": "add"}}, "selection.ops has the wrong type"),
    ({"selection": {"shard": [1, 2, 3]}}, "selection.shard has the wrong type"),
    ({"selection": {"level": True}}, "selection.level has the wrong type"),
])
def test_a_nested_field_of_the_wrong_type_is_one_line_exit_2(tmp_path, cli, capsys, nested, line):
    run_dir = _run_dir(tmp_path, _spec(**nested), [PASSED])
    assert cli(["report", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"r/run.json: {line}" in err and "Traceback" not in err

# --- no string-key reads of run.json outside its serialiser -----------------------------------------

# Names the code gives a run.json (read or being written); `run["status"]`, `finished.get("totals")` on
# one of them is a string-key read of run.json, which must be an attribute of Run instead.
RUN_NAMES = {"run", "finished", "old_run", "new_run", "outcome", "meta", "read_run(run_dir)",
             "rundir.read_run(run_dir)", "rundir.read_run(out)"}
SERIALISERS = {"torchcts/model/run.py"}  # run.json's one reader and writer


def test_no_string_key_reads_of_run_json_outside_its_serialiser():
    from dataclasses import fields

    keys = "|".join(sorted((f.name for f in fields(Run) if not f.name.startswith("_")), key=len, reverse=True))
    access = re.compile(rf"""([\w.]+(?:\([^()]*\))?)\s*(?:\[|\.get\(|\.pop\()\s*["']({keys})["']""")
    root = REPO
    bad = []
    for top in ("torchcts", "bench"):
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel in SERIALISERS:
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                bad += [f"{rel}:{n}: {line.strip()}" for m in access.finditer(line) if m.group(1) in RUN_NAMES]
    assert not bad, "string-key reads of run.json (use Run's attributes):\n" + "\n".join(bad)
