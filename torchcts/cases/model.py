"""The case model (docs/architecture.md), independent of pytest.

A case is pure data: it names the function that runs it ("module:function") and JSON-able
parameters, so a case list can be cached on disk, sharded, merged and turned into a repro script
without importing the code that runs it.
"""

from __future__ import annotations

import fnmatch
import shlex
from collections.abc import Iterable, Mapping
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
    def covered_ops(self) -> tuple[str, ...]:
        """The ops this case covers: `--op` selection, ledger op selectors and coverage all use it."""
        return covered_ops(self.ops, self.params.get("op"))

    @property
    def all_dtypes(self) -> tuple[str, ...]:
        """The dtypes a claim check must cover: the pair when set, else the single dtype."""
        return self.dtypes or ((self.dtype,) if self.dtype is not None else ())


class NotApplicable(Exception):
    """Raised by a case at run time: this build, PyTorch version or device lacks what it needs."""


def repro_command(case_id: str, device: str, validation: bool = False) -> str:
    """One line that reruns just this case."""
    dev = "--validation" if validation else f"--device {shlex.quote(device)}"
    return f"torchcts run {dev} --case {shlex.quote(case_id)}"


def covered_ops(ops: Iterable[str], op: Any = None) -> tuple[str, ...]:
    """A case's aten ops, and the OpInfo name of an OpInfo case (`params["op"]`) when it has one.

    Takes the fields rather than a Case so that records (which carry `ops` and `op`) use it too."""
    names = list(ops)
    if isinstance(op, str) and op and op not in names:
        names.append(op)
    return tuple(names)


def _strip_overload(name: str) -> str:
    return name.split(".", 1)[0] if name.startswith("aten::") else name


def op_matches(pattern: str, ops: Iterable[str]) -> bool:
    """`add`, `aten::add.Tensor` and globs such as `linalg.*` against the ops a case covers."""
    for op in ops:
        if fnmatch.fnmatchcase(op, pattern):
            return True
        if pattern.startswith("aten::") and op.startswith("aten::"):
            if "." not in op and _strip_overload(pattern) == op:
                return True
        elif not pattern.startswith("aten::") and fnmatch.fnmatchcase(op, f"aten::{pattern}"):
            return True
    return False
