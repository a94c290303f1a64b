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
    record = {**base_record(CASE), "status": "failed", "message": "mismatch", "duration_s": 0.25,
              "mismatch": {"max_abs": 1.5}, "repro": "torchcts run --device npu --case x", "attempt": 2,
              "expectation": {"entry": 0}, "signature": "mismatch: <n>"}
    typed = CaseRecord.from_json(record)
    assert typed.status is Status.FAILED and typed.is_failure and typed.attempt == 2
    assert typed.extra == {"mismatch": {"max_abs": 1.5}, "expectation": {"entry": 0}}
    assert typed.to_json() == record


def test_a_partial_or_foreign_record_round_trips_without_gaining_fields():
    partial = {"id": "x/1", "status": "no_such_status", "custom": [1]}
    typed = CaseRecord.from_json(partial)
    assert typed.to_json() == partial and not typed.is_failure


def test_skip_records_keep_their_shape():
    assert skip_record(CASE, "not_claimed", "dtype float32 not claimed") == {
        "id": CASE.id, "suite": "operators", "level": 1, "ops": ["aten::neg"], "dtype": "float32",
        "kind": "elementwise", "oracle": "cpu", "requires": [], "status": "not_claimed",
        "message": "dtype float32 not claimed", "duration_s": 0.0,
    }
