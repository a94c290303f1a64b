"""What a worker and its forked case child say to each other (workers/case_process.py).

    child -> worker   Ready, or Refused(why) when it cannot run cases as its worker would
    worker -> child   RunCase(case_id) ... then Stop
    child -> worker   CaseDone(outcome) for each case, or CaseRaised when running it raised

The outcome is `one_case.CaseOutcome`'s own JSON form (a CaseRecord inside): typed again by
`CaseOutcome.from_json` on the worker's side. Each reply also lists the modules the case imported,
which the worker imports before its next fork.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from torchcts.process import Message, Protocol


@dataclass(frozen=True)
class Ready(Message):
    """The child passed its probe: send it cases."""

    kind: ClassVar[str] = "ready"


@dataclass(frozen=True)
class Refused(Message):
    """The child cannot run cases as its worker would (case_process._fork_probe): why."""

    kind: ClassVar[str] = "refused"
    why: str


@dataclass(frozen=True)
class RunCase(Message):
    """Run the planned case of this id."""

    kind: ClassVar[str] = "run"
    case_id: str


@dataclass(frozen=True)
class Stop(Message):
    """The worker is done: run the exit handlers the cases registered, and leave."""

    kind: ClassVar[str] = "stop"


@dataclass(frozen=True)
class CaseDone(Message):
    """The case ran: its outcome (CaseOutcome.to_json) and the modules it imported."""

    kind: ClassVar[str] = "done"
    outcome: dict[str, Any]
    imported: list[str]


@dataclass(frozen=True)
class CaseRaised(Message):
    """Running the case raised around it (not in the plan, ...): the worker records the case's error."""

    kind: ClassVar[str] = "raised"
    error: str
    traceback: str
    imported: list[str]


CASE_PROTOCOL = Protocol(Ready, Refused, RunCase, Stop, CaseDone, CaseRaised)
