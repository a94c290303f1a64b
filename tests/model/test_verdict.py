"""The verdict a case builds (cases/verdict.py) reaches its record whole (Verdict.write_to), and each
run of a case body, the observer's reruns included (engine/runner.py), builds its own."""

from __future__ import annotations

from dataclasses import fields

from helpers.run_state import run_state

from torchcts.cases.verdict import Verdict
from torchcts.engine.one_case import run_one
from torchcts.model.case import Case
from torchcts.model.record import CaseRecord
from torchcts.model.status import Status
from torchcts.oracle.precision import Precision
from torchcts.workers.outcome import FAILED, PASSED

# Each field of a Verdict -> the record field it decides. A field added to Verdict without a place
# in the record fails the first test until it is given one here and in CaseRecord.take.
REACHES = {"info": "info", "dispatched": "dispatched", "dispatch_unobserved": "dispatch_unobserved",
           "precision": "precision", "exactness": "exactness", "helper_failures": "failed_op",
           "weak_reason": "weak", "discriminated": "weak", "fallback": "fallback"}


def _filled() -> tuple[Verdict, BaseException]:
    helper = RuntimeError("no abs kernel")
    verdict = Verdict(info={"sample": "x: (4,)"}, dispatched=["aten::neg"], dispatch_unobserved="why not",
                      precision=Precision(truth="float64", samples=1, max_ulp_vs_cpu=2.0),
                      helper_failures=[(helper, "aten::abs")], exactness="tolerance", weak_reason="zeros",
                      fallback=["aten::neg"])
    return verdict, helper


def test_every_field_of_a_verdict_reaches_the_record():
    assert set(REACHES) == {f.name for f in fields(Verdict)}
    verdict, helper = _filled()
    failed = CaseRecord(id="s/c/float32", status=Status.FAILED)
    verdict.write_to(failed, helper)
    data = failed.to_json()
    assert data["info"] == {"sample": "x: (4,)"} and data["dispatched"] == ["aten::neg"]
    assert data["dispatch_unobserved"] == "why not" and data["exactness"] == "tolerance"
    assert data["precision"] == verdict.precision.to_json() and data["precision"]["max_ulp_vs_cpu"] == 2.0
    assert data["failed_op"] == "aten::abs" and "weak" not in data  # a failure is never weak
    assert data["fallback"] == ["aten::neg"]
    assert CaseRecord.from_json(data).to_json() == data
    passed = CaseRecord(id="s/c/float32", status=Status.PASSED)
    verdict.write_to(passed, None)
    assert passed.weak == "zeros" and passed.failed_op is None
    verdict.weighed(None)  # one comparison could tell right from wrong: not weak
    verdict.write_to(passed)
    assert passed.weak is None
    other = CaseRecord(id="s/c/float32", status=Status.ERROR)
    verdict.write_to(other, RuntimeError("the op under test"))  # not the helper's failure: no failed_op
    assert other.failed_op is None and other.weak is None


def _probe(body: str) -> Case:
    return Case(f"observedprobe/{body}/float32", "observedprobe", 1, f"helpers.observed_cases:{body}",
                {"dtype": "float32"}, ops=("aten::neg",), dtype="float32")


def test_run_one_records_what_the_case_built(tmp_path):
    case = Case("observedprobe/tan/float32", "observedprobe", 1, "helpers.observed_cases:tan_and_backward",
                {"dtype": "float32"}, ops=("aten::tan",), dtype="float32")
    outcome = run_one(case, run_state(tmp_path), None)
    record = outcome.record
    assert outcome.kind == PASSED and record.status == Status.PASSED, record.message
    assert "aten::tan" in record.dispatched and record.dispatch_unobserved is None
    assert record.exactness == "tolerance" and record.info["tolerance"]["category"] == "elementwise"
    assert record.weak is None and record.failed_op is None


def test_a_rerun_notes_and_measures_its_own_and_carries_how_values_were_compared():
    first, helper = _filled()
    first.exactness = "exact"
    again = first.for_rerun()
    assert again.info == {} and again.precision is None and again.dispatched is None
    assert again.dispatch_unobserved is None and again.failed_op_of(helper) == "aten::abs"
    assert (again.exactness, again.weak_reason, again.discriminated) == ("exact", "zeros", False)
    again.compared(False)  # the rerun compared within a tolerance: so did the case
    again.info["sample"] = "y"
    decided = again.deciding(first)  # the first run's outcome is the case's: its notes and precision
    assert decided.info == {"sample": "x: (4,)"} and decided.precision == first.precision
    assert decided.exactness == "tolerance" and first.exactness == "exact"


def test_a_verdict_decided_by_the_rerun_without_the_observer_keeps_its_helper_op(tmp_path):
    """Observed, then unobserved: both fail in the helper op, so the unobserved run's outcome is the
    record's, and the helper failure that decided it names the op."""
    outcome = run_one(_probe("fails_in_a_helper"), run_state(tmp_path), None)
    record = outcome.record
    assert outcome.kind == FAILED and record.status == Status.FAILED, record.message
    assert record.failed_op == "aten::abs" and record.mismatch
    assert "observer_changed_result" not in record.info and "nondeterministic" not in record.info
    assert "aten::abs" in record.dispatched  # observed before the failure, kept on the deciding verdict


def test_a_failure_only_the_observer_causes_records_the_unobserved_runs_verdict(tmp_path):
    outcome = run_one(_probe("fails_only_observed"), run_state(tmp_path), None)
    record = outcome.record
    assert outcome.kind == PASSED and record.status == Status.PASSED
    assert "OracleMismatch" in record.info["observer_changed_result"] and record.dispatched is None
    assert "changed this case's result" in record.dispatch_unobserved and record.exactness == "tolerance"
