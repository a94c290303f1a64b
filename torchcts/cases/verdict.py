"""The verdict a running case builds for its record, besides passed or failed.

The case notes what a person needs (`info`: `CaseContext.describe`), the oracle what its comparisons
showed (`CaseContext.assert_close`: precision, exactness, weakness), a helper op its failures
(`CaseContext.helper_op`), and `engine/runner.py` what reached the device. The record takes it whole
(`Verdict.write_to`), so a field added here reaches every record in one place.
The runner's reruns without the dispatch observer each measure their own notes and precision
(`for_rerun`), and the record keeps those of the run its outcome comes from (`deciding`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from torchcts.model.record import CaseRecord
from torchcts.model.status import Status
from torchcts.oracle.precision import Precision


@dataclass
class Verdict:
    """What one run of a case body found out, for its record."""

    # What the case attached (sample description, metrics, notes): the record's `info`.
    info: dict[str, Any] = field(default_factory=dict)
    # The aten overloads that reached the device (cases/observe.py), or why the case was not observed.
    dispatched: list[str] | None = None
    dispatch_unobserved: str | None = None
    # Which of `dispatched` ran on the backend's CPU fallback (cases/fallback.py); None: not known.
    fallback: list[str] | None = None
    # The worst precision of the case's comparisons against a truth (oracle/precision.py), for the
    # record's `precision`; None when no comparison measured one.
    precision: Precision | None = None
    # Each exception raised inside `helper_op`, with the op named there: the record names that op
    # (`failed_op`) when that exception decides the verdict (`failed_op_of`).
    helper_failures: list[tuple[BaseException, str]] = field(default_factory=list)
    # How values were compared: "exact" while every tensor compared was compared bit for bit
    # (oracle/exactness.py, integer and bool dtypes), "tolerance" once one was not; None: nothing.
    exactness: str | None = None
    # Weak comparisons (oracle/weak.py): the first weak reference's reason, and whether any
    # comparison's reference could tell a right result from a wrong one (then the case is not weak).
    weak_reason: str | None = None
    discriminated: bool = False

    def write_to(self, record: CaseRecord, failure: BaseException | None = None) -> None:
        """Onto `record`, whole: the notes, dispatch, precision and how values were compared; the
        helper op `failure` is, when it decided a failed or error record; why a pass proves
        nothing, on a passed record. The record's status is set first."""
        record.info = self.info
        record.dispatched, record.dispatch_unobserved = self.dispatched, self.dispatch_unobserved
        record.fallback = self.fallback or None  # only a record that ran something on the fallback says so
        record.precision = self.precision.to_json() if self.precision is not None else None
        record.exactness = self.exactness
        if failure is not None and record.status in (Status.FAILED, Status.ERROR):
            record.failed_op = self.failed_op_of(failure)  # a helper op's failure names that op
        if record.status == Status.PASSED:
            record.weak = self.weak

    def compared(self, exact: bool) -> None:
        """One tensor compared, bit for bit or within a tolerance: "exact" holds only while all were."""
        self.exactness = "exact" if exact and self.exactness != "tolerance" else "tolerance"

    def keep_precision(self, precision: Precision) -> None:
        """The worst of every comparison's precision is the case's."""
        self.precision = precision if self.precision is None else self.precision.merge(precision)

    def weighed(self, reason: str | None) -> None:
        """A passing comparison judged for weakness: `reason` why it proves nothing, None when it could
        tell a right result from a wrong one (then no later weak one makes the case weak)."""
        self.discriminated = self.discriminated or reason is None
        self.weak_reason = self.weak_reason or reason

    @property
    def weak(self) -> str | None:
        """Why the case's passing comparisons prove nothing (oracle/weak.py), None when one of them
        could tell a right result from a wrong one, or nothing was compared."""
        return None if self.discriminated else self.weak_reason

    def for_rerun(self) -> Verdict:
        """The verdict of the case body run again (engine/runner.py: without the dispatch observer):
        notes, precision and dispatch of its own, as each run measures its own; how values were
        compared (exactness, weakness) and the helper failures carried on, as the record says that of
        every comparison the case made (an explore case's finding run and its confirmation)."""
        return Verdict(helper_failures=self.helper_failures, exactness=self.exactness,
                       weak_reason=self.weak_reason, discriminated=self.discriminated)

    def deciding(self, run: Verdict) -> Verdict:
        """This verdict (the latest run's) with the notes and precision of `run`, the run whose
        outcome is the case's."""
        return replace(self, info=run.info, precision=run.precision)

    def failed_op_of(self, exc: BaseException) -> str | None:
        """The helper op whose failure `exc` is (itself, or the exception it was raised from), else None."""
        seen: set[int] = set()
        cur: BaseException | None = exc
        while cur is not None and id(cur) not in seen:
            seen.add(id(cur))
            for failed, op in reversed(self.helper_failures):
                if failed is cur:
                    return op
            cur = cur.__cause__ or (None if cur.__suppress_context__ else cur.__context__)
        return None
