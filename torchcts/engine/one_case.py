"""One case run to its record and pytest outcome, in whichever process runs it.

A worker runs a case itself, or, once its run has crashed, in a forked child of its own
(engine/case_process.py): the same function runs in both, and its result (`CaseOutcome`) is a
typed record with its own serialiser, since it crosses from the child to the worker.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest

from torchcts import compat
from torchcts.cases.model import Case, NotApplicable, NotClaimed, Pending
from torchcts.engine.probe import CaseProbe, release_memory
from torchcts.errors import first_line
from torchcts.oracle.mismatch import OracleMismatch
from torchcts.results.records import CaseRecord
from torchcts.results.statuses import Status


class CaseState(Protocol):  # engine/plugin.py: RunState, as running a case uses it
    spec: Any  # engine/spec.py: RunSpec (the selection's sample limits, validation, explore, manifest, device)
    run_dir: Path
    work_dir: Path | None  # a worker's scratch folder (its log), None without isolation
    worker: str
    setup_fallbacks: set[str]
    budget: Any  # engine/crash_budget.py: BudgetReader, or None

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


def run_one(case: Case, state: CaseState, corpus: str | None) -> CaseOutcome:
    """Run `case` on the run's device; its record filled with the verdict and the evidence."""
    from torchcts.cases.context import CaseContext
    from torchcts.engine.runner import run_case

    device, manifest = state.context_parts()
    sel = state.spec.selection
    ctx = CaseContext(device=device, manifest=manifest, max_samples=sel.max_samples, sample=sel.sample,
                      validation=state.spec.validation, explore=state.spec.explore,
                      corpus=Path(corpus) if corpus else None, run_dir=state.run_dir)
    record = CaseRecord.from_case(case)
    outcome = CaseOutcome(record)
    probe = CaseProbe(state.worker)
    warmed = sum(compat.WARMUP_S.values())
    start = time.perf_counter()
    try:
        with compat.watch_fallbacks() as fallbacks:
            run_case(case, ctx)
    except NotApplicable as exc:  # Pending and NotClaimed are ones: no verdict, shown apart (results/statuses.py)
        record.status = (Status.PENDING if isinstance(exc, Pending) else Status.NOT_CLAIMED
                         if isinstance(exc, NotClaimed) else Status.NOT_APPLICABLE)
        record.message = str(exc)
        outcome.kind, outcome.message = SKIPPED, f"{record.status.replace('_', ' ')}: {exc}"
    except OracleMismatch as exc:
        record.status, record.message, record.mismatch = Status.FAILED, str(exc), exc.mismatch.to_json()
        outcome.kind, outcome.message, outcome.error = FAILED, record.message, exc
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the backend's own exception, of any type: the case's error
        record.status = Status.ERROR
        record.message = f"{type(exc).__name__}: {first_line(exc, 500)}"
        record.exception = type(exc).__name__
        record.traceback = _tail(traceback.format_exc(), 30)
        outcome.kind, outcome.message, outcome.error = FAILED, record.message, exc
    except BaseException as exc:  # noqa: BLE001 - pytest's own (an in-process timeout's Failed, Ctrl-C):
        outcome.kind, outcome.error = FAILED, exc  # raised as they came, the record filled (its sample)
    finally:
        warmup = sum(compat.WARMUP_S.values()) - warmed  # the worker's one-time cost, paid in this case
        record.duration_s = round(time.perf_counter() - start - warmup, 6)
        record.warmup_s = round(warmup, 3) if warmup > 0 else None
        probe.fill(record)  # engine/probe.py: when, where, memory
        # Compatibility fallbacks behind this result: the backend setup's and the case's own.
        record.compat_fallbacks = sorted(state.setup_fallbacks | fallbacks) or None
        if outcome.kind == PASSED:
            record.status = Status.PASSED
        # What the case built for its record (cases/verdict.py): its notes, what reached the device,
        # the oracle's precision, exactness and weakness, the helper op a failure names.
        record.take(ctx.verdict, outcome.error)
        rss = release_memory()  # the process's resident set after the case, freed heap returned
        if rss is not None:
            record.rss_mb = round(rss, 1)
    return outcome


def _tail(text: str, lines: int) -> str:
    return "\n".join(text.splitlines()[-lines:])
