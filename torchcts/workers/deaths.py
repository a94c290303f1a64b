"""Worker-death policy: the controller's one place that decides what a dead process means.

Why: a worker process can die for reasons that call for opposite answers. A case crashed it (the
case's `crashed` record, and the run's cases fork from then on); it died before its next case
started (that case is not to blame: it runs again elsewhere); or it left on purpose, its device
found poisoned by the canary (workers/canary.py), before its next case. The last was once handled
as the second, rescheduled only the first time a case met it: a worker retired before a case that
had been rescheduled already gave that case a false `crashed` record (exit code 87) and counted it
against the crash budget.

How: xdist's DSession (`loop_once`, `handle_crashitem`) dispatches each worker event to one handler;
`WorkerDeaths.node_down` decides how a dead worker is replaced (the run's crash server, or xdist's
fresh python) and `WorkerDeaths.crash_item` classifies a death from the worker's log, read once (workers/isolation.py:
read_log, parse_log), and its exit status, and hands it to the handler of its event (`EVENTS`):
- `retired`: the log ends with the worker's RETIRED_MARK (or, no log, exit code RETIRED_EXIT) and the
  case never started: rescheduled every time, no record, nothing counted (budget, suspects);
- `between_cases`: died before the case started: rescheduled once, and, killed by a signal, its last
  cases are crash attribution's suspects (workers/attribution.py); a second such death before the
  same case is recorded as its crash;
- `in_case`: the case's `crashed` or `timeout` record (judged as any record) and `worker_died`
  (workers/crash_budget.py: cases fork from now on); a crash whose tail shows no stack of the case's
  thread makes attribution's suspects.
A crash record a worker reports for a case its forked child ran (workers/case_process.py) comes as a
plain report: `recorded` takes its suspects. A rescheduled item's report (xdist logs one per crash
item) is marked RESCHEDULED, so pytest neither prints it as a failure nor counts it for `-x`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import pytest

from torchcts.model.case import Case
from torchcts.model.record import CaseRecord
from torchcts.model.status import Status
from torchcts.workers.attribution import Suspicion, suspicion
from torchcts.workers.crash_budget import CrashBudget
from torchcts.workers.isolation import crash_record, read_log, retired, worker_exit

RESCHEDULED = "rescheduled"  # a crash item's report outcome when the case never started and runs again


class Replacer(Protocol):
    """What makes a dead worker's replacement cheap (workers/crash_server.py: CrashServer)."""

    def replace(self, node: Any) -> None: ...


class WorkerDeaths:
    """Controller side (engine/plugin.py: Recorder): what each dead worker means for its case, the
    crash budget and crash attribution."""

    def __init__(self, work_dir: Path | None, attempt: int, plan: Callable[[], dict[str, Case]],
                 judge: Callable[[CaseRecord], CaseRecord], budget: CrashBudget | None,
                 forget: Callable[[str], None]) -> None:
        self.work_dir = work_dir
        self.attempt = attempt
        self.plan = plan
        self.judge = judge  # engine/judge.py: RecordJudge (repro line, ledger)
        self.budget = budget
        self.forget = forget  # the progress line's: a rescheduled case is not running any more
        self.rescheduled: set[str] = set()  # cases rescheduled after a death between cases (once each)
        self.retirements = 0  # workers that left their poisoned device (workers/canary.py)
        self.suspicions: list[Suspicion] = []  # crashes that may belong to an earlier case (workers/attribution.py)
        self.replacer: Replacer | None = None  # the run's crash server, when it has one (engine/execute.py)
        self._judged: set[str] = set()  # crash items' records on their way to cases.jsonl: suspects taken

    def node_down(self, node: Any, error: Any) -> None:
        """xdist: a worker is down, and a dead one is cloned next (its popen spec reused). One that
        finished (error None) or saw Ctrl-C is not replaced; a dead one's clone is made a fork of the
        run's crash server when there is one (a fresh python otherwise, xdist's own way)."""
        if error is None or error == "keyboard-interrupt" or self.replacer is None:
            return
        self.replacer.replace(node)

    def crash_item(self, crashitem: str, report: pytest.TestReport, sched: Any, recorded: bool) -> CaseRecord | None:
        """xdist: a worker died while `crashitem` was its next case. The judged record to attach to
        `report`, or None (rescheduled: the report is marked RESCHEDULED). `recorded`: the case has a
        record already (its checks finished before the crash)."""
        case = self.plan().get(crashitem.split("::", 1)[-1])
        if case is None:
            return None
        node = getattr(report, "node", None)
        worker_id = getattr(getattr(node, "gateway", None), "id", "?")
        log = read_log(self.work_dir, worker_id)
        exits = worker_exit(node)
        started, record = crash_record(case, log, self.work_dir, worker_id, crashitem, exits)
        event = "in_case" if started else "retired" if retired(log, exits) else "between_cases"
        return EVENTS[event](self, Death(case, crashitem, record, log, report, sched, recorded))

    def _retired(self, death: Death) -> CaseRecord | None:
        self.retirements += 1
        if death.reschedule(self.forget):
            return None
        # A scheduler that cannot run it again (xdist's loadscope, loadfile, each): not run, never crashed.
        return self.judge(CaseRecord.from_case(
            death.case, status=Status.NOT_RUN, duration_s=0.0, worker=death.record.worker,
            message="its worker left before it, its device found poisoned (workers/canary.py), and this "
                    "xdist scheduler cannot run a case again"))

    def _between_cases(self, death: Death) -> CaseRecord | None:
        if death.record.signal:  # it died between cases: its last cases are suspects
            self._suspect(death.record, death.log, None)
        if death.nodeid not in self.rescheduled:
            self.rescheduled.add(death.nodeid)  # it never ran: not its fault; run it on another worker
            if death.reschedule(self.forget):
                return None
        return self._in_case(death)

    def _in_case(self, death: Death) -> CaseRecord | None:
        record = death.record
        if death.recorded:  # last record per id wins: this one replaces its earlier result
            record.message = (f"{record.message}; its checks had finished, "
                              "so the crash came after them (teardown or deferred work)")
        record = self.judge(record)
        if self.budget is not None:
            self.budget.worker_died()
        if record.status == Status.CRASHED:
            self._suspect(record, death.log, death.nodeid)
        self._judged.add(record.id)
        return record

    def recorded(self, record: CaseRecord, nodeid: str) -> None:
        """Every record the controller writes: a forked child's crash (a plain report; a crash item's
        suspects were taken from the log its handler read) may have landed in the wrong case."""
        if record.id in self._judged:
            self._judged.discard(record.id)
            return
        if record.status == Status.CRASHED:
            self._suspect(record, read_log(self.work_dir, record.worker or ""), nodeid)

    def _suspect(self, record: CaseRecord, log: str | None, nodeid: str | None) -> None:
        """A first attempt's crash that may have landed in the wrong case is kept for attribution."""
        if self.attempt != 1 or log is None or not record.worker:
            return
        found = suspicion(record, log, nodeid)
        if found is not None:
            self.suspicions.append(found)


class Death:
    """One dead worker's crash item, as its handler sees it."""

    def __init__(self, case: Case, nodeid: str, record: CaseRecord, log: str | None, report: pytest.TestReport,
                 sched: Any, recorded: bool) -> None:
        self.case, self.nodeid, self.record, self.log = case, nodeid, record, log
        self.report, self.sched, self.recorded = report, sched, recorded

    def reschedule(self, forget: Callable[[str], None]) -> bool:
        """The case runs again on another worker; False when the scheduler cannot do that."""
        try:
            self.sched.mark_test_pending(self.nodeid)
        except (AttributeError, NotImplementedError):
            return False
        self.report.outcome = RESCHEDULED  # type: ignore[assignment] - not a failure: pytest neither prints nor counts it
        forget(self.case.id)
        return True


EVENTS: dict[str, Callable[[WorkerDeaths, Death], CaseRecord | None]] = {
    "retired": WorkerDeaths._retired,
    "between_cases": WorkerDeaths._between_cases,
    "in_case": WorkerDeaths._in_case,
}
