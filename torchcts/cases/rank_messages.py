"""What the distributed suite's pool (cases/ranks.py) and each rank (cases/rank_worker.py) say.

    pool -> rank   RankCall(seq, check, params) ...; closing the channel ends the rank
    rank -> pool   RankAnswer(seq): seq 0 once it joined the group, then one per call

Why a file beside the message: a check returns CPU tensors (gathered chunks, a model's state),
which JSON cannot carry exactly; the rank saves its value with torch.save under `payload_name`
before it answers, and the pool reads it (weights_only) once every rank answered with a value.
The control message says whether there is one, so the pool waits on the channels, never polls files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from torchcts.process import Message, Protocol

JOINED = 0  # the seq of the answer to joining the process group (its value: the c10d backend's name)


@dataclass(frozen=True)
class RankCall(Message):
    """Run `check` ("module:function") as function(env, **params) on this rank."""

    kind: ClassVar[str] = "call"
    seq: int
    check: str
    params: dict[str, Any]


@dataclass(frozen=True)
class RankAnswer(Message):
    """One rank's outcome of call `seq`: a value (in the payload file), not applicable, or an error."""

    kind: ClassVar[str] = "answer"
    seq: int
    error: str | None = None  # the exception's type, first 500 characters and where it was raised
    not_applicable: str | None = None  # the check's NotApplicable: the case proves nothing

    @property
    def has_value(self) -> bool:
        return self.error is None and self.not_applicable is None


RANK_PROTOCOL = Protocol(RankCall, RankAnswer)


def payload_name(seq: int, rank: int) -> str:
    """The file in the pool's folder that holds rank's value for call seq."""
    return f"answer-{seq}-{rank}.pt"
