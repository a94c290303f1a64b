"""What the controller adds to a case record before appending it: ledger, flakiness, repro script.

The Recorder (engine/plugin.py, the only writer of cases.jsonl) calls one `RecordAnnotator` per
pytest session. In a rerun session (`attempt` > 1: engine/rerun.py passes `--torchcts-attempt N`
to pytest, the plugin hands it to the Recorder) a case that failed before and passes now is
`flaky`; its new record supersedes the old one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchcts.results.ledger import FAILING, apply, compile_entries, run_date, run_entries
from torchcts.results.records import repro_script_command
from torchcts.results.rundir import final_records


class RecordAnnotator:
    def __init__(self, spec: dict[str, Any], run_dir: Path, attempt: int = 1) -> None:
        self.entries = run_entries(spec)
        self.matcher = compile_entries(self.entries)
        self.today = run_date(spec)
        self.run_name = str(spec.get("name") or run_dir.name)
        self.attempt = attempt
        self.previous = {r["id"]: r for r in final_records(run_dir)} if self.attempt > 1 else {}
        self.run_dir = run_dir
        self._op_names: dict[str, str] | None = None

    def op_name(self, case_id: str) -> str | None:
        """The case's `params["op"]` (an OpInfo name such as nn.functional.conv2d), from the plan."""
        if self._op_names is None:
            from torchcts.results.plan import PLAN, read_plan

            plan = read_plan(self.run_dir) if (self.run_dir / PLAN).is_file() else []
            self._op_names = {c.id: str(c.params["op"]) for c in plan if c.params.get("op")}
        return self._op_names.get(case_id)

    def __call__(self, record: dict[str, Any]) -> dict[str, Any]:
        prev = self.previous.get(record.get("id", ""))
        op = self.op_name(record.get("id", "")) if "op" not in record else None
        if op:  # ledger selectors and triage name OpInfo ops by their OpInfo name too
            record = {**record, "op": op}
        if self.attempt > 1:
            record = {**record, "attempt": self.attempt}
        if prev is not None and prev.get("status") in FAILING and record.get("status") == "passed":
            record = flaky_record(record, prev)
        else:
            record = apply(record, self.entries, self.today, self.matcher)
        if record.get("repro") and record.get("status") != "xpassed":
            record["repro_script"] = repro_script_command(record["id"], self.run_name)
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
