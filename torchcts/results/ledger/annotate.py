"""What the controller adds to a case record before appending it: ledger, flakiness, repro script.

The process that builds a record calls one `RecordAnnotator` per pytest session (engine/plugin.py:
a worker for the cases it runs, the controller for the crash records it makes), so each record is
judged once, where pytest's outcome must already agree with it (a worker's own `-x`). In a rerun session \
(`attempt` > 1: engine/rerun.py passes `--torchcts-attempt N`
to pytest, the plugin hands it to the Recorder) a case that failed before and passes now is
`flaky`; its new record supersedes the old one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from torchcts.cases.repro_builders import has_script
from torchcts.model.case import Case
from torchcts.model.record import CaseRecord
from torchcts.model.run import Run
from torchcts.model.status import Status
from torchcts.results.ledger.apply import CRASHES, FAILING, RunLedger, forgives_crashes
from torchcts.results.records.plan import PLAN, read_plan
from torchcts.results.records.rundir import final_records
from torchcts.results.repro.commands import repro_script_command


class RecordAnnotator:
    def __init__(self, run: Run, run_dir: Path, attempt: int = 1,
                 plan: Callable[[], dict[str, Case]] | None = None) -> None:
        self.ledger = RunLedger(run)
        self.attempt = attempt
        self.previous = {r.id: r for r in final_records(run_dir)} if self.attempt > 1 else {}
        self.run_dir = run_dir
        # The plugin shares its process's plan (engine/plugin.py: RunState.plan) instead of a second read.
        self._load_plan = plan or (lambda: {c.id: c for c in read_plan(run_dir)} if (run_dir / PLAN).is_file() else {})
        self._cases: dict[str, Case] | None = None

    def planned(self, case_id: str) -> Case | None:
        """The planned case, from plan.jsonl read once (None without a plan)."""
        if self._cases is None:
            self._cases = self._load_plan()
        return self._cases.get(case_id)

    def op_name(self, case_id: str) -> str | None:
        """The case's `params["op"]` (an OpInfo name such as nn.functional.conv2d), from the plan."""
        case = self.planned(case_id)
        return str(case.params["op"]) if case is not None and case.params.get("op") else None

    def __call__(self, record: CaseRecord) -> CaseRecord:
        """A new record: `record` judged by the ledger (or as flaky on a rerun), with its op name,
        attempt and repro script; `record` itself is left as it was."""
        prev = self.previous.get(record.id)
        op = self.op_name(record.id) if record.op is None else None
        if op:  # ledger selectors and triage name OpInfo ops by their OpInfo name too
            record = record.copy(op=op)
        if self.attempt > 1:
            record = record.copy(attempt=self.attempt)
        if prev is not None and prev.status in FAILING and record.status == "passed":
            if prev.status in CRASHES and not forgives_crashes(self.ledger.device):
                record = crash_stands(record, prev, self.ledger.device)
            else:
                record = flaky_record(record, prev)
        else:
            record = self.ledger(record)
        case = self.planned(record.id) if record.repro and record.status != "xpassed" else None
        # a result that changed after later calls (cases/opinfo/effects.py) needs every sample: no script
        if case is not None and has_script(case) and "retained_sample" not in record.info_dict:
            record = record.copy(repro_script=repro_script_command(record.id, str(self.run_dir)))
        return record


_FIRST_FAILURE = ("status", "message", "signature", "mismatch", "exception")


def flaky_record(record: CaseRecord, prev: CaseRecord) -> CaseRecord:
    """A case that failed, then passed on a rerun: still reported, with its first failure."""
    first = {k: getattr(prev, k) for k in _FIRST_FAILURE if getattr(prev, k)}
    return record.copy(
        status=Status.FLAKY,
        message=f"passed on attempt {record.attempt} after {prev.status}: {prev.message or ''}"[:600],
        first_failure={k: v.value if isinstance(v, Status) else v for k, v in first.items()},
        repro=prev.repro,
        signature=prev.signature or record.signature,
    )


def crash_stands(record: CaseRecord, prev: CaseRecord, device: str | None) -> CaseRecord:
    """A crash that passed on a rerun, on a device that never forgives crashes: the crash stands."""
    return prev.copy(
        attempt=record.attempt,
        message=(f"{prev.message or ''}; passed on rerun attempt {record.attempt}, but a "
                 f"{prev.status} on {device} always fails the run")[:600],
    )
