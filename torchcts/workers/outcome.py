"""One case's outcome, as it crosses from the process that ran it to the worker that reports it.

Why here: a worker runs a case itself or in a forked child (workers/case_process.py), and crash
attribution runs it alone in a fresh process (workers/attribution.py); all three read the same typed
record with its own serialiser. Running the case is engine/one_case.py's (`run_one`), which the
worker hands to its case processes, so process supervision never imports the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest

from torchcts.model.case import Case
from torchcts.model.record import CaseRecord


class CaseState(Protocol):  # engine/plugin.py: RunState, as running a case uses it
    spec: Any  # engine/spec.py: RunSpec (the selection's sample limits, validation, explore, manifest, device)
    run_dir: Path
    work_dir: Path | None  # a worker's scratch folder (its log), None without isolation
    worker: str
    setup_fallbacks: set[str]
    budget: Any  # workers/crash_budget.py: BudgetReader, or None

    def context_parts(self) -> tuple[Any, Any]: ...
    def plan(self) -> dict[str, Case]: ...

PASSED, SKIPPED, FAILED = "passed", "skipped", "failed"


class CaseFailed(Exception):
    """A case's failure raised in the worker for a case a forked child ran: the record holds the
    evidence (message, traceback, mismatch), which is what the report shows (CaseItem.repr_failure)."""


@dataclass
class CaseOutcome:
    """A case's record and what pytest must be told: passed, skipped (with the reason) or failed."""

    record: CaseRecord
    kind: str = PASSED
    message: str = ""
    error: BaseException | None = None  # the exception itself, only in the process that ran the case

    def raise_for_pytest(self) -> None:
        """Ends the item's call as pytest expects: returns (passed), skips or raises."""
        if self.kind == PASSED:
            return
        if self.kind == SKIPPED:
            pytest.skip(self.message)
        if self.error is not None:
            raise self.error  # in the process that ran it: the real exception (--pdb, tracebacks)
        raise CaseFailed(self.message)

    def to_json(self) -> dict[str, Any]:
        return {"record": self.record.to_json(), "kind": self.kind, "message": self.message}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CaseOutcome:
        kind = data.get("kind")
        record = CaseRecord.from_json(data["record"])
        if kind not in (PASSED, SKIPPED, FAILED):
            kind = FAILED
        return cls(record, str(kind), str(data.get("message", "")))
