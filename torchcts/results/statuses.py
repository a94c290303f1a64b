"""The status registry (SPEC §7): a new status is one entry here."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Status:
    name: str
    # Listed as a failure (reports, triage) and counts against the exit status; `flaky` fails only
    # a --strict-expectations run, since its rerun passed (results/ledger.py: gate_failures).
    failure: bool
    executed: bool  # the case ran (or tried to)
    description: str


STATUSES: dict[str, Status] = {
    s.name: s
    for s in (
        Status("passed", False, True, "matched the oracle or property"),
        Status("failed", True, True, "ran and disagreed with the oracle or property"),
        Status("error", True, True, "the backend raised an exception"),
        Status("crashed", True, True, "the case killed its worker process"),
        Status("timeout", True, True, "the case exceeded its time limit"),
        Status("xfailed", False, True, "failed as the expectations ledger says"),
        Status("xpassed", False, True, "passed although the ledger expects a failure"),
        Status("flaky", True, True, "failed, then passed on a rerun"),
        Status("not_claimed", False, False, "the manifest does not claim the dtype or capability"),
        Status("filtered", False, False, "deselected by the user's selection"),
        Status("not_applicable", False, False, "this build, PyTorch version or device lacks it"),
        # Never written to cases.jsonl: reports add it for planned cases without a record (a killed or
        # interrupted run, pytest's -x or -k), so they show and fail the run instead of vanishing.
        Status("not_run", False, False, "planned, but no result was recorded (interrupted or stopped early)"),
    )
}

FAILURES = tuple(n for n, s in STATUSES.items() if s.failure)
ORDER = tuple(STATUSES)
