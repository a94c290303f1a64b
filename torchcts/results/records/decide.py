"""A case's status, decided once: what its call raised, classified by one pure function.

Why: the status of a case that ran was set in several places with two vocabularies (the record's
status beside the word pytest is told; the plugin recognised pytest-timeout's failure by its text).
pytest's own shape is the model: the call is captured as a value (`CallInfo`: the exception, or
none), and one function makes the report of it (`TestReport.from_item_and_call`). Here `decide`
makes a `Decision` (the record's status and fields, and what pytest is told, from the status
table's `told` column), and `engine/one_case.py` applies it. A process's death and the ledger's
and reruns' rewrites are decided where they happen (workers/, results/ledger/apply.py), from evidence no
call holds.
"""

from __future__ import annotations

import traceback as _traceback
from dataclasses import dataclass
from typing import Any

import pytest

from torchcts.errors import first_line
from torchcts.model.case import NotApplicable, NotClaimed, Pending
from torchcts.model.status import Status
from torchcts.oracle.mismatch import OracleMismatch

TRACEBACK_LINES = 30  # the end of an error's traceback the record keeps


@dataclass(frozen=True)
class Decision:
    """What a case's call comes to: its record's status and fields, and what pytest is told."""

    status: Status | None  # None: pytest's own exception (Ctrl-C), raised as it came, no verdict
    message: str | None = None
    mismatch: dict[str, Any] | None = None
    exception: str | None = None  # the backend exception's type name, on an error
    traceback: str | None = None
    said: str = ""  # what pytest is told with a skip or a failure

    @property
    def told(self) -> str:
        """pytest's word (workers/outcome.py): the status table's, failed for pytest's own exception."""
        return self.status.info.told if self.status is not None else "failed"

    def apply(self, record: Any) -> None:
        """Onto a record (model/record.py: CaseRecord): the status and the fields decided."""
        if self.status is not None:
            record.status = self.status
        for name in ("message", "mismatch", "exception", "traceback"):
            if getattr(self, name) is not None:
                setattr(record, name, getattr(self, name))


def decide(exc: BaseException | None, formatted: str | None = None) -> Decision:
    """The decision for a call that raised `exc` (None: it returned). `formatted`: its traceback as
    `traceback.format_exc()` gave it where it was caught (an error keeps its end)."""
    if exc is None:
        return Decision(Status.PASSED)
    if isinstance(exc, NotApplicable):  # Pending and NotClaimed are ones: no verdict, shown apart
        status = (Status.PENDING if isinstance(exc, Pending) else
                  Status.NOT_CLAIMED if isinstance(exc, NotClaimed) else Status.NOT_APPLICABLE)
        return Decision(status, str(exc), said=f"{status.replace('_', ' ')}: {exc}")
    if isinstance(exc, OracleMismatch):
        return Decision(Status.FAILED, str(exc), exc.mismatch.to_json(), said=str(exc))
    if isinstance(exc, (Exception, SystemExit)):  # the backend's own exception, of any type: the case's error
        message = f"{type(exc).__name__}: {first_line(exc, 500)}"
        tail = formatted if formatted is not None else "".join(_traceback.format_exception(exc))
        return Decision(Status.ERROR, message, exception=type(exc).__name__,
                        traceback="\n".join(tail.splitlines()[-TRACEBACK_LINES:]),
                        said=message)
    if is_timeout(exc):  # pytest-timeout's signal method, in the case's own process
        return Decision(Status.TIMEOUT, str(exc).strip())
    return Decision(None)  # pytest's own (Ctrl-C, an exit): raised as it came, the record filled


def is_timeout(exc: BaseException | None) -> bool:
    """pytest-timeout's failure (`Failed: Timeout >Ns`), which has no type of its own."""
    return isinstance(exc, pytest.fail.Exception) and str(exc).lstrip().startswith("Timeout")
