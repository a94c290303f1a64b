"""The status registry (docs/internals.md, "Statuses and records"): a new status is one entry here.

`Status` is a string enum: records and run.json hold its value ("passed"), and a member compares
equal to that string, so code reading records may use either. Every set of statuses the code uses
(failures, what the ledger may forgive, crash-like, passing) is derived from STATUSES.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Status(str, Enum):
    """A case's outcome."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    CRASHED = "crashed"
    TIMEOUT = "timeout"
    XFAILED = "xfailed"
    XPASSED = "xpassed"
    FLAKY = "flaky"
    NOT_CLAIMED = "not_claimed"
    FILTERED = "filtered"
    NOT_APPLICABLE = "not_applicable"
    PENDING = "pending"
    NOT_RUN = "not_run"

    __hash__ = str.__hash__  # a member and its value are one dict key (Python 3.10 too)

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @property
    def info(self) -> StatusInfo:
        return STATUSES[self]

    @property
    def is_failure(self) -> bool:
        """Listed as a failure and counts against the exit status (flaky only under --strict-expectations
        or --repeat)."""
        return self.info.failure

    @property
    def forgivable(self) -> bool:
        """A ledger entry may expect it: the record becomes xfailed (results/ledger/apply.py)."""
        return self.info.forgivable

    @property
    def crash_like(self) -> bool:
        """The worker died or hit the time limit: a `known_crash` entry's default, a JUnit <error>."""
        return self.info.crash_like

    @property
    def executed(self) -> bool:
        return self.info.executed


@dataclass(frozen=True)
class StatusInfo:
    name: str
    # Listed as a failure (reports, triage) and counts against the exit status; `flaky` fails only
    # a --strict-expectations or --repeat run, since its rerun passed (results/ledger/apply.py: gate_failures).
    failure: bool
    executed: bool  # the case ran (or tried to)
    description: str
    forgivable: bool = False  # a ledger entry can turn it into xfailed
    crash_like: bool = False  # the worker died or the case hit its time limit
    passing: bool = False  # counts as a pass (HTML pass rates; a failure becoming this is a fix)
    # No verdict reached: pytest's progress line shows it by this letter (engine/plugin.py), not "s".
    letter: str | None = None
    repro: bool = True  # its record carries a repro line (engine/judge.py): nothing to reproduce otherwise
    # What pytest is told of a case's call that came to it (results/records/decide.py): a failure fails the item
    # (-x, --maxfail, --lf see it), a case without a verdict is its skip. The ledger's xfailed/xpassed
    # are told after (engine/judge.py: align_report).
    told: str = "skipped"


STATUSES: dict[str, StatusInfo] = {
    s.name: s
    for s in (
        StatusInfo("passed", False, True, "matched the oracle or property", passing=True, repro=False, told="passed"),
        StatusInfo("failed", True, True, "ran and disagreed with the oracle or property", forgivable=True, told="failed"),
        StatusInfo("error", True, True, "the backend raised an exception", forgivable=True, told="failed"),
        StatusInfo("crashed", True, True, "the case killed its worker process", forgivable=True, crash_like=True,
                   told="failed"),
        StatusInfo("timeout", True, True, "the case exceeded its time limit", forgivable=True, crash_like=True,
                   told="failed"),
        StatusInfo("xfailed", False, True, "failed as the expectations ledger says", passing=True),
        StatusInfo("xpassed", False, True, "passed although the ledger expects a failure", passing=True, told="passed"),
        StatusInfo("flaky", True, True, "failed, then passed on a rerun; or failed some of its --repeat runs",
                   told="failed"),
        StatusInfo("not_claimed", False, False, "the manifest does not claim the dtype or capability", letter="c"),
        StatusInfo("filtered", False, False, "deselected by the user's selection"),
        StatusInfo("not_applicable", False, False, "this build, PyTorch version or device lacks it", letter="n",
                   repro=False),
        # No reference, so no verdict: a generated case (cases/schema/) whose inputs CPU rejected, or
        # a case whose CPU reference died (workers/isolation.py). Shown in every report, never a
        # pass, never a gate failure.
        StatusInfo("pending", False, False, "ran, but there is no reference (CPU rejected the generated inputs, "
                   "or CPU's reference died): no verdict", letter="p"),
        # Reports add it for planned cases without a record (a killed or interrupted run, pytest's -x or
        # --maxfail), so they show and fail the run instead of vanishing; the crash budget records it,
        # with its reason, for the cases of an op family it stopped (workers/crash_budget.py). Never a
        # pass: any not_run fails the run (results/ledger/apply.py: gate_failures), never forgiven.
        # pytest's -k/-m/--lf deselections are recorded `filtered` (engine/plugin.py: pytest_deselected).
        StatusInfo("not_run", False, False, "planned, but not run: the run was interrupted or stopped early, "
                   "or the crash budget stopped its op family", letter="-"),
    )
}
assert set(STATUSES) == {s.value for s in Status}, "Status and STATUSES list the same statuses"

ORDER = tuple(STATUSES)
FAILURES = tuple(n for n, s in STATUSES.items() if s.failure)
FORGIVABLE = tuple(n for n, s in STATUSES.items() if s.forgivable)  # the ledger's FAILING
CRASH_LIKE = tuple(n for n, s in STATUSES.items() if s.crash_like)
PASSING = tuple(n for n, s in STATUSES.items() if s.passing)
EXECUTED = tuple(n for n, s in STATUSES.items() if s.executed)
NO_VERDICT_LETTERS = {n: s.letter for n, s in STATUSES.items() if s.letter}  # pytest's progress letters
NO_REPRO = tuple(n for n, s in STATUSES.items() if not s.repro)
