"""The controller's worker-death policy (workers/deaths.py): what a dead worker means.

A worker that left on purpose, its device poisoned (workers/canary.py), is no crash: the case it
would have run next is rescheduled however often that happens, never recorded `crashed` with the
retirement's exit code 87, never counted against the crash budget. The end-to-end proof on the
sim's planted sticky error is tests/workers/test_crash_attribution.py.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from torchcts.model.case import Case
from torchcts.model.record import CaseRecord
from torchcts.model.status import Status
from torchcts.workers.crash_budget import CrashBudget
from torchcts.workers.deaths import RESCHEDULED, WorkerDeaths
from torchcts.workers.isolation import CASE_MARK, FRESH_MARK, RETIRED_MARK, log_path, retired

A, B = (Case(id=f"s/{n}/float32", suite="s", level=1, runner="m:f", ops=("aten::x",), dtype="float32") for n in "ab")
PLAN = {A.id: A, B.id: B}


class Sched:
    """xdist's scheduler as the controller uses it: cases handed back to run again."""

    def __init__(self) -> None:
        self.pending: list[str] = []

    def mark_test_pending(self, nodeid: str) -> None:
        self.pending.append(nodeid)


def _deaths(tmp_path: Path) -> tuple[WorkerDeaths, CrashBudget, list[str]]:
    budget = CrashBudget(tmp_path, 1)
    forgotten: list[str] = []
    return WorkerDeaths(tmp_path, 1, lambda: PLAN, lambda r: r, budget, forgotten.append), budget, forgotten


def _died(tmp_path: Path, worker: str, log: str) -> pytest.TestReport:
    """A dead worker's log and xdist's crash report for it (no local process: no exit status)."""
    log_path(tmp_path, worker).write_text(log, encoding="utf-8")
    report = pytest.TestReport(nodeid=f"torchcts::{B.id}", location=("torchcts", None, "torchcts"), keywords={},
                               outcome="failed", longrepr="worker crashed", when="???")  # type: ignore[arg-type]
    report.node = SimpleNamespace(gateway=SimpleNamespace(id=worker))  # type: ignore[attr-defined]
    return report


RAN_A = f"\n{FRESH_MARK}\n\n{CASE_MARK}1.0 torchcts::{A.id}\n"


def test_a_case_met_by_two_retirements_is_rescheduled_both_times_and_never_crashed(tmp_path):
    deaths, budget, forgotten = _deaths(tmp_path)
    sched = Sched()
    for worker in ("gw0", "gw1"):  # two workers retire before the same case
        report = _died(tmp_path, worker, f"{RAN_A}\n{RETIRED_MARK}\n")
        assert deaths.crash_item(f"torchcts::{B.id}", report, sched, recorded=False) is None
        assert report.outcome == RESCHEDULED and not report.failed  # pytest neither prints nor counts it
    assert sched.pending == [f"torchcts::{B.id}"] * 2 and forgotten == [B.id, B.id]
    assert deaths.retirements == 2 and deaths.suspicions == []
    assert not budget.fork_cases and not budget.counts  # nothing counted against the crash budget


def test_a_death_between_cases_reschedules_once_then_is_the_cases_crash(tmp_path):
    deaths, budget, _ = _deaths(tmp_path)
    sched = Sched()
    first = _died(tmp_path, "gw0", RAN_A)  # no retirement mark: it died before B started
    assert deaths.crash_item(f"torchcts::{B.id}", first, sched, recorded=False) is None
    record = deaths.crash_item(f"torchcts::{B.id}", _died(tmp_path, "gw1", RAN_A), sched, recorded=False)
    assert sched.pending == [f"torchcts::{B.id}"]
    assert record is not None and record.status == Status.CRASHED and budget.fork_cases


def test_a_retirement_a_scheduler_cannot_undo_is_not_run_never_crashed(tmp_path):
    deaths, budget, _ = _deaths(tmp_path)
    record = deaths.crash_item(f"torchcts::{B.id}", _died(tmp_path, "gw0", f"{RAN_A}\n{RETIRED_MARK}\n"),
                               object(), recorded=False)  # xdist's loadscope/each: no mark_test_pending
    assert record is not None and record.status == Status.NOT_RUN and "poisoned" in record.message
    assert not budget.fork_cases


def test_retirement_is_the_log_mark_or_without_a_log_the_exit_code():
    assert retired(f"{RAN_A}\n{RETIRED_MARK}\n", {})
    assert not retired(RAN_A, {"exit_code": 87})  # the log says it died otherwise: the log decides
    assert retired(None, {"exit_code": 87})
    assert not retired(None, {"exit_code": -11, "signal": "SIGSEGV"})


def test_a_crash_reads_its_workers_log_once(tmp_path, monkeypatch):
    """The crash item's handler reads the log once (its record and its suspects); logging that record
    reads nothing more. A forked child's crash, a plain report, is read when it is logged."""
    from torchcts.workers import deaths as worker_deaths

    reads: list[str] = []

    def counted(work_dir: Path | None, worker_id: str) -> str | None:
        reads.append(worker_id)
        return read_log(work_dir, worker_id)

    read_log = worker_deaths.read_log
    monkeypatch.setattr(worker_deaths, "read_log", counted)
    deaths, _, _ = _deaths(tmp_path)
    log = f"{RAN_A}\n{CASE_MARK}2.0 torchcts::{B.id}\nFatal Python error: Aborted\n"
    record = deaths.crash_item(f"torchcts::{B.id}", _died(tmp_path, "gw0", log), Sched(), recorded=False)
    assert record is not None and record.status == Status.CRASHED
    deaths.recorded(record, f"torchcts::{B.id}")
    assert reads == ["gw0"]
    child = CaseRecord.from_case(A, status=Status.CRASHED, signal="SIGSEGV", worker="gw1")
    deaths.recorded(child, f"torchcts::{A.id}")
    assert reads == ["gw0", "gw1"]
