"""Typed statuses and records: the enum, the status sets derived from STATUSES, CaseRecord round trips."""

from __future__ import annotations

import json

from helpers.paths import REPO

from torchcts.model import status as st
from torchcts.model.case import Case
from torchcts.model.record import CaseRecord, base_record, skip_record
from torchcts.model.status import STATUSES, Status

CASE = Case(id="operators/elementwise/neg/float32", suite="operators", level=1, runner="m:f",
            ops=("aten::neg",), dtype="float32", kind="elementwise")


def test_status_is_its_string_value_in_records_and_dict_keys():
    assert Status.PASSED == "passed" and {"passed": 1}[Status.PASSED] == 1
    assert json.dumps({"status": Status.CRASHED}) == '{"status": "crashed"}'
    assert f"{Status.NOT_CLAIMED}" == "not_claimed" and str(Status.FLAKY) == "flaky"
    assert [s.value for s in Status] == list(STATUSES)


def test_every_status_set_is_derived_from_the_registry():
    assert st.FAILURES == ("failed", "error", "crashed", "timeout", "flaky")
    assert st.FORGIVABLE == ("failed", "error", "crashed", "timeout")  # flaky passed on rerun: not forgiven
    assert st.CRASH_LIKE == ("crashed", "timeout")
    assert st.PASSING == ("passed", "xfailed", "xpassed")
    assert set(st.EXECUTED) == set(st.FAILURES) | set(st.PASSING)
    assert Status.TIMEOUT.crash_like and Status.TIMEOUT.forgivable and Status.TIMEOUT.is_failure
    assert not Status.FLAKY.forgivable and Status.FLAKY.is_failure
    assert not Status.NOT_CLAIMED.executed and not Status.NOT_CLAIMED.is_failure


def test_a_full_record_round_trips_unchanged():
    record = {**base_record(CASE).to_json(), "status": "failed", "message": "mismatch", "duration_s": 0.25,
              "mismatch": {"max_abs": 1.5}, "repro": "torchcts run --device npu --case x", "attempt": 2,
              "expectation": {"entry": 0}, "signature": "mismatch: <n>"}
    typed = CaseRecord.from_json(record)
    assert typed.status is Status.FAILED and typed.is_failure and typed.attempt == 2
    assert typed.mismatch == {"max_abs": 1.5} and typed.expectation == {"entry": 0} and typed.extra == {}
    assert typed.to_json() == record


def test_a_partial_or_foreign_record_round_trips_without_gaining_fields():
    partial = {"id": "x/1", "status": "passed", "custom": [1], "repro": None}
    typed = CaseRecord.from_json(partial)
    assert typed.extra == {"custom": [1]} and typed.to_json() == partial and not typed.is_failure


def test_an_unknown_status_is_an_error_that_keeps_the_recorded_one():
    typed = CaseRecord.from_json({"id": "x/1", "status": "no_such_status", "message": "m"})
    assert typed.status is Status.ERROR and typed.is_failure and typed.recorded_status == "no_such_status"
    assert typed.message == "cases.jsonl holds unknown status 'no_such_status', counted as error: m"
    assert CaseRecord.from_json({"id": "x/2"}).recorded_status == "None"


def test_from_json_coerces_what_reports_cannot_use():
    typed = CaseRecord.from_json({"id": "x/1", "status": "failed", "message": {"a": 1}, "duration_s": float("nan"),
                                  "level": "3", "ops": "aten::add", "requires": None, "info": [1], "mismatch": 7,
                                  "dispatched": "aten::add", "attempt": True, "signal": 11})
    assert typed.message == '{"a": 1}' and typed.duration_s is None and typed.level is None
    assert typed.ops == ["aten::add"] and typed.requires == [] and typed.info == {"value": "[1]"}
    assert typed.mismatch == {"value": "7"} and typed.dispatched == "aten::add"
    assert typed.attempt is None and typed.signal == "11"
    again = CaseRecord.from_json(typed.to_json())  # coerced once, then it round-trips
    assert again.to_json() == typed.to_json()


def test_skip_records_keep_their_shape():
    assert skip_record(CASE, "not_claimed", "dtype float32 not claimed").to_json() == {
        "id": CASE.id, "suite": "operators", "level": 1, "ops": ["aten::neg"], "dtype": "float32",
        "kind": "elementwise", "oracle": "cpu", "requires": [], "status": "not_claimed",
        "message": "dtype float32 not claimed", "duration_s": 0.0,
    }


def test_a_record_rides_pytests_report_serialisation_exactly():
    """What xdist does with a worker's report (engine/judge.py): pytest's JSON, then back."""
    from _pytest.reports import TestReport

    from torchcts.engine import judge

    record = CaseRecord.from_json({**base_record(CASE).to_json(), "status": "xfailed", "duration_s": 0.5,
                                   "expectation": {"entry": 0, "reason": "r"}, "custom": {"kept": True}})
    report = TestReport("torchcts::x", ("torchcts", 0, "x"), {}, "skipped", None, "call")
    judge.attach(report, record)
    data = report._to_json()
    judge.serializable(report, data)
    shipped = json.loads(json.dumps(data))  # plain JSON, as execnet sends it
    assert json.loads(shipped[judge.RECORD_ATTR]) == record.to_json()  # one JSON text
    back = TestReport._from_json(shipped)
    judge.from_serializable(back)
    assert judge.record_of(back) == record and judge.record_of(back).to_json() == record.to_json()
    assert back.user_properties == []


# --- no string-key access to case records outside their serialiser ---------------------------------

ROOTS = ("torchcts", "bench")
SERIALISER = "torchcts/model/record.py"
# Names the code gives case records (and lists of them): `r["id"]`, `record.get("message")`,
# `records[0]["status"]`, `prev.get("status")` on any of them is a string-key record access.
RECORD_NAMES = {"r", "rec", "record", "records", "recs", "prev", "failing", "done", "held", "mem", "top", "grew",
                "found", "fails", "missing", "slow", "members", "before", "after"}
# Such a name that is not a case record there, with the reason.
NOT_RECORDS = {
    ("torchcts/results/records/merge.py", "r"): "run.json of each shard",
    ("torchcts/results/records/rundir.py", "rec"): "the raw JSON line scan_records checks before CaseRecord.from_json",
    ("bench/bench.py", "r"): "bench's own timing of one measured run",
}
# Files whose records are another schema: the backend evidence store (evidence/: oracle results).
OTHER_RECORDS = {"torchcts/evidence/collect.py", "torchcts/evidence/store.py", "torchcts/evidence/oracles.py"}
# `status` is also a key of run.json, ledger entries, evidence results and the warm server's
# messages: `["status"]` / `.get("status")` is allowed only on these receivers.
STATUS_RECEIVERS = {
    "entry": "a ledger entry", "e": "a ledger entry", "entries[index]": "a ledger entry",
    "note": "a record's ledger note, read by its own reader (results/ledger/note.py)",
    "first": "a flaky record's first_failure (a nested dict, records.py says why)",
    "recv_msg(sock)[0]": "the warm server's reply (workers/zygote.py)",
}


def _record_field_accesses():
    import re
    from dataclasses import fields

    names = "|".join(sorted((f.name for f in fields(CaseRecord) if not f.name.startswith("_")), key=len, reverse=True))
    access = re.compile(rf"""((?:[\w.]+(?:\([^()]*\))?(?:\[[^\[\]]*\])*))\s*(?:\[|\.get\()\s*["']({names})["']""")
    root = REPO
    for top in ROOTS:
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel == SERIALISER or rel in OTHER_RECORDS:
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                for m in access.finditer(line):
                    yield rel, n, m.group(1), m.group(2), line.strip()


def test_no_string_key_access_to_case_records_outside_the_serialiser():
    """Every writer and reader uses CaseRecord's attributes (issue 27): the fields have one
    definition, and a typo is an AttributeError, not a silent None."""
    bad = []
    for rel, n, receiver, key, line in _record_field_accesses():
        base = receiver.split("[", 1)[0]
        if base in RECORD_NAMES and (rel, base) not in NOT_RECORDS:
            bad.append(f"{rel}:{n}: {line}")
        elif key == "status" and base not in RECORD_NAMES and receiver not in STATUS_RECEIVERS:
            bad.append(f"{rel}:{n}: {line}  (status of what? a record: use .status; else add it to STATUS_RECEIVERS)")
    assert not bad, "string-key access to case records:\n" + "\n".join(bad)


def test_the_record_access_check_sees_what_it_must():
    import re

    samples = ['x = rec["status"]', 'record.get("message")', 'r["id"]', 'records[0]["status"]', 'prev.get("status", "?")']
    names = "|".join(("status", "message", "id"))
    access = re.compile(rf"""((?:[\w.]+(?:\([^()]*\))?(?:\[[^\[\]]*\])*))\s*(?:\[|\.get\()\s*["']({names})["']""")
    found = [access.search(s) for s in samples]
    assert all(m is not None and m.group(1).split("[", 1)[0] in RECORD_NAMES for m in found), found


def test_a_shipped_record_holds_only_json_as_cases_jsonl_would():
    """A case may note any object in `info`: the worker ships its text (execnet carries only
    plain data), the same text cases.jsonl gets from a record written in-process."""
    from _pytest.reports import TestReport

    from torchcts.engine import judge

    class Odd:
        def __str__(self) -> str:
            return "odd"

    record = CaseRecord(id="x/1", status="failed", info={"shape": (2, 3), "what": Odd()})
    report = TestReport("torchcts::x/1", ("torchcts", 0, "x/1"), {}, "failed", None, "call")
    judge.attach(report, record)
    data = report._to_json()
    judge.serializable(report, data)
    assert json.loads(data[judge.RECORD_ATTR])["info"] == {"shape": [2, 3], "what": "odd"}


def test_copy_is_replace_without_init_and_coerces_status():
    """`CaseRecord.copy` gives what dataclasses.replace gives (a new record, the source untouched);
    a status set by name is typed, an unknown field is refused."""
    import dataclasses

    import pytest

    rec = CaseRecord(id="a/b/float32", suite="a", ops=["aten::add"], status=Status.FAILED, message="m")
    out = rec.copy(message="n", status="passed")
    assert out is not rec and rec.message == "m" and rec.status is Status.FAILED
    assert out.status is Status.PASSED and out.to_json() == dataclasses.replace(rec, message="n", status="passed").to_json()
    with pytest.raises(TypeError):
        rec.copy(no_such_field=1)


_HELD_PROBE = '''
import json, pathlib

def pytest_sessionfinish(session):
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    reports = [r for rs in tr.stats.values() for r in rs]
    held = sum(hasattr(r, "torchcts_record") for r in reports)
    pathlib.Path("held.json").write_text(json.dumps({"reports": len(reports), "held": held}))
'''


def test_written_records_are_not_held_by_pytests_kept_reports(tmp_path):
    """pytest's terminal reporter keeps every report to the session's end; the controller drops a
    record from its report once written (engine/judge.py: detach), or a level-8 run holds every
    record twice (~450 MB measured). A plugin reads the kept reports at session finish."""
    import os

    from helpers.runs import latest_run, run_cli

    (tmp_path / "held_probe.py").write_text(_HELD_PROBE)
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    r = run_cli("run", "--validation", "--suite", "operators", "--level", "1", "--dtype", "float32", "--",
                "-n", "0", "-p", "held_probe", "-p", "no:cacheprovider", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    held = json.loads((tmp_path / "held.json").read_text())
    records = (latest_run(tmp_path) / "cases.jsonl").read_text().splitlines()
    assert held["reports"] >= len(records) > 0 and held["held"] == 0, held
