"""What the controller adds to a case record before appending it: ledger, flakiness, repro script.

The Recorder (engine/plugin.py, the only writer of cases.jsonl) calls one `RecordAnnotator` per
pytest session. In a rerun session (`attempt` > 1: engine/rerun.py passes `--torchcts-attempt N`
to pytest, the plugin hands it to the Recorder) a case that failed before and passes now is
`flaky`; its new record supersedes the old one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from torchcts.cases.model import Case
from torchcts.cases.repro_builders import has_script
from torchcts.results.ledger import CRASHES, FAILING, RunLedger, forgives_crashes
from torchcts.results.plan import PLAN, read_plan
from torchcts.results.records import repro_script_command
from torchcts.results.rundir import final_records


class RecordAnnotator:
    def __init__(self, spec: dict[str, Any], run_dir: Path, attempt: int = 1,
                 plan: Callable[[], dict[str, Case]] | None = None) -> None:
        self.ledger = RunLedger(spec)
        self.attempt = attempt
        self.previous = {r["id"]: r for r in final_records(run_dir)} if self.attempt > 1 else {}
        self.run_dir = run_dir
        # The Recorder shares its process's plan (engine/plugin.py: RunState.plan) instead of a second read.
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

    def __call__(self, record: dict[str, Any]) -> dict[str, Any]:
        prev = self.previous.get(record.get("id", ""))
        op = self.op_name(record.get("id", "")) if "op" not in record else None
        if op:  # ledger selectors and triage name OpInfo ops by their OpInfo name too
            record = {**record, "op": op}
        if self.attempt > 1:
            record = {**record, "attempt": self.attempt}
        if prev is not None and prev.get("status") in FAILING and record.get("status") == "passed":
            if prev.get("status") in CRASHES and not forgives_crashes(self.ledger.device):
                record = crash_stands(record, prev, self.ledger.device)
            else:
                record = flaky_record(record, prev)
        else:
            record = self.ledger(record)
        case = self.planned(record.get("id", "")) if record.get("repro") and record.get("status") != "xpassed" else None
        if case is not None and has_script(case):
            record["repro_script"] = repro_script_command(record["id"], str(self.run_dir))
        return record


def flaky_record(record: dict[str, Any], prev: dict[str, Any]) -> dict[str, Any]:
    """A case that failed, then passed on a rerun: still reported, with its first failure."""
    first = {k: prev[k] for k in ("status", "message", "signature", "mismatch", "exception") if prev.get(k)}
    return {
        **record,
        "status": "flaky",
        "message": f"passed on attempt {record.get('attempt')} after {prev.get('status')}: {prev.get('message', '')}"[:600],
        "first_failure": first,
        "repro": prev.get("repro"),
        **({"signature": prev["signature"]} if prev.get("signature") else {}),
    }


def crash_stands(record: dict[str, Any], prev: dict[str, Any], device: str | None) -> dict[str, Any]:
    """A crash that passed on a rerun, on a device that never forgives crashes: the crash stands."""
    return {
        **prev,
        "attempt": record.get("attempt"),
        "message": (f"{prev.get('message', '')}; passed on rerun attempt {record.get('attempt')}, but a "
                    f"{prev.get('status')} on {device} always fails the run")[:600],
    }
