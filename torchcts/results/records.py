"""Case records: one JSON object per case, the single source every report is rebuilt from.

`CaseRecord` types the fields the code reads; the other fields a record carries (mismatch metrics,
crash details, ledger notes...) travel unchanged in `extra`. `CaseRecord.from_json(d).to_json()`
gives `d` back, so typed code and code that still reads the dict agree on every line.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from torchcts.cases.model import Case, repro_command
from torchcts.results.statuses import STATUSES, Status

__all__ = ["CaseRecord", "base_record", "repro_command", "repro_script_command", "skip_record"]

# Written for every case (base_record): present in a record even when None.
_BASE = ("id", "suite", "level", "ops", "dtype", "kind", "oracle", "requires")
# Read by name where present; absent (None) ones are not written.
_OPTIONAL = ("status", "message", "duration_s", "op", "repro", "repro_script", "signature", "attempt")


@dataclass
class CaseRecord:
    id: str
    suite: str | None = None
    level: int | None = None
    ops: list[str] = field(default_factory=list)
    dtype: str | None = None
    kind: str | None = None
    oracle: str | None = None
    requires: list[str] = field(default_factory=list)
    status: Status | None = None
    message: str | None = None
    duration_s: float | None = None
    op: str | None = None  # the OpInfo name of an OpInfo case (added by results/annotate.py)
    repro: str | None = None
    repro_script: str | None = None
    signature: str | None = None
    attempt: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # Which base fields the source held (a record from an older or foreign run may lack some).
    _base: tuple[str, ...] = field(default=_BASE, repr=False)

    @classmethod
    def from_case(cls, case: Case, **fields: Any) -> CaseRecord:
        return cls(id=case.id, suite=case.suite, level=case.level, ops=list(case.ops), dtype=case.dtype,
                   kind=case.kind, oracle=case.oracle, requires=list(case.requires), **fields)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CaseRecord:
        known = {k: data[k] for k in (*_BASE, *_OPTIONAL) if k in data}
        status = known.get("status")
        if isinstance(status, str) and status in STATUSES:
            known["status"] = Status(status)
        extra = {k: v for k, v in data.items() if k not in known}
        return cls(**known, extra=extra, _base=tuple(k for k in _BASE if k in data))

    def to_json(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self._base}
        for k in _OPTIONAL:
            value = getattr(self, k)
            if value is not None:
                out[k] = value.value if isinstance(value, Status) else value
        return {**out, **self.extra}

    @property
    def is_failure(self) -> bool:
        """Listed as a failure (reports, triage, the exit status)."""
        return isinstance(self.status, Status) and self.status.is_failure


def repro_script_command(case_id: str, run_name: str) -> str:
    """One line that writes a standalone script reproducing this case from this run."""
    return f"torchcts repro {shlex.quote(case_id)} --run {shlex.quote(run_name)}"


def base_record(case: Case) -> dict[str, Any]:
    return CaseRecord.from_case(case).to_json()


def skip_record(case: Case, status: str, reason: str) -> dict[str, Any]:
    return CaseRecord.from_case(case, status=Status(status), message=reason, duration_s=0.0).to_json()
