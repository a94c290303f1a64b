"""results/records/decide.py: a case's status decided once, by one pure function of what its call raised
(issue 52 item 2), and the status table's `told` column that says what pytest hears of it."""

from __future__ import annotations

import pytest

from torchcts.model.case import NotApplicable, NotClaimed, Pending
from torchcts.model.record import CaseRecord
from torchcts.model.status import STATUSES, Status
from torchcts.oracle.mismatch import Mismatch, OracleMismatch
from torchcts.results.records.decide import decide, is_timeout


def _mismatch(error: float) -> Mismatch:
    return Mismatch("values differ", max_abs_error=error, max_rel_error=0.5, mismatched=1, total=4, atol=0.0, rtol=0.0)


def _raised(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as caught:  # noqa: BLE001
        return caught


@pytest.mark.parametrize(("exc", "status", "told"), [
    (None, Status.PASSED, "passed"),
    (NotApplicable("no such kernel in this build"), Status.NOT_APPLICABLE, "skipped"),
    (NotClaimed("complex64"), Status.NOT_CLAIMED, "skipped"),
    (Pending("CPU rejected every input"), Status.PENDING, "skipped"),
    (OracleMismatch(_mismatch(1.0)), Status.FAILED, "failed"),
    (RuntimeError("Unsupported data type:ComplexFloat"), Status.ERROR, "failed"),
    (SystemExit(3), Status.ERROR, "failed"),
    (pytest.fail.Exception("Timeout >15.0s"), Status.TIMEOUT, "failed"),
])
def test_each_outcome_of_a_call_has_one_status_and_one_word_for_pytest(exc, status, told) -> None:
    decision = decide(exc)
    assert decision.status == status and decision.told == told == STATUSES[status].told


def test_pytests_own_exceptions_get_no_status_and_are_raised_as_they_came() -> None:
    for exc in (KeyboardInterrupt(), pytest.fail.Exception("not a time limit")):
        assert decide(exc).status is None
    assert not is_timeout(RuntimeError("Timeout >15.0s"))  # only pytest-timeout's Failed is one


def test_the_decision_fills_the_record_with_its_evidence() -> None:
    error = decide(_raised(ValueError("the backend's message\nits second line")))
    assert error.exception == "ValueError" and error.message == "ValueError: the backend's message"
    assert "raise exc" in error.traceback  # the traceback's end, where it was caught
    record = CaseRecord(id="suite/case", suite="suite")
    decide(OracleMismatch(_mismatch(2.0))).apply(record)
    assert record.status == Status.FAILED and record.mismatch["max_abs_error"] == 2.0
    skipped = decide(NotClaimed("a tensor of the unclaimed dtype complex64"))
    assert skipped.said == "not claimed: a tensor of the unclaimed dtype complex64"
