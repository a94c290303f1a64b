"""The case model (docs/internals.md, "Cases"), independent of pytest.

A case is pure data: it names the function that runs it ("module:function") and JSON-able
parameters, so a case list can be cached on disk, sharded, merged and turned into a repro script
without importing the code that runs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Case:
    id: str
    suite: str
    level: int
    runner: str
    params: Mapping[str, Any] = field(default_factory=dict)
    ops: tuple[str, ...] = ()
    dtype: str | None = None
    # Every dtype the case uses when it mixes several (a promotion pair); all must be claimed.
    dtypes: tuple[str, ...] = ()
    # Each entry is a capability, or several joined by "|" where any one of them suffices.
    requires: tuple[str, ...] = ()
    oracle: str = "cpu"
    kind: str = ""
    # Known at collection: the build or PyTorch version lacks what the case needs.
    not_applicable: str | None = None
    # The URL of the real bug report the case replays (the field suite, docs/bug-classes.md); None elsewhere.
    cite: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "suite": self.suite,
            "level": self.level,
            "runner": self.runner,
            "params": dict(self.params),
            "ops": list(self.ops),
            "dtype": self.dtype,
            "dtypes": list(self.dtypes),
            "requires": list(self.requires),
            "oracle": self.oracle,
            "kind": self.kind,
            "not_applicable": self.not_applicable,
            # only where set: the plan of a run without field cases stays as it was
            **({"cite": self.cite} if self.cite is not None else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Case:
        d = dict(data)
        d["ops"] = tuple(d.get("ops", ()))
        d["requires"] = tuple(d.get("requires", ()))
        d["dtypes"] = tuple(d.get("dtypes", ()))
        return cls(**d)

    def missing_capabilities(self, claims: Mapping[str, bool]) -> list[str]:
        """Requirements the manifest does not claim (any-of groups reported whole)."""
        return [req for req in self.requires if not any(claims.get(c) for c in req.split("|"))]

    @property
    def all_dtypes(self) -> tuple[str, ...]:
        """The dtypes a claim check must cover: the pair when set, else the single dtype."""
        return self.dtypes or ((self.dtype,) if self.dtype is not None else ())


class NotApplicable(Exception):
    """Raised by a case at run time: this build, PyTorch version or device lacks what it needs."""


class NotClaimed(NotApplicable):
    """Raised by a case at run time whose every sample holds a tensor (an input or a result) of a dtype
    the manifest does not claim (polar of float32 returns complex64): recorded `not_claimed`, as
    selection records a case of an unclaimed dtype. A NotApplicable, so code that only knows that skips it."""


class Pending(NotApplicable):
    """Raised by a generated case that could not reach a verdict (CPU rejected every input the
    generator made, so there is no reference): recorded `pending`, visible, never a pass. A
    NotApplicable, so code that only knows that (the evidence oracles) still skips it."""
