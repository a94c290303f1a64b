"""Typed statuses and records: the enum, the status sets derived from STATUSES, CaseRecord round trips."""

from __future__ import annotations

import json

from torchcts.cases.model import Case
from torchcts.results import statuses as st
from torchcts.results.records import CaseRecord, base_record, skip_record
from torchcts.results.statuses import STATUSES, Status

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
