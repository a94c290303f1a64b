"""Case records: one JSON object per case, the single source every report is rebuilt from."""

from __future__ import annotations

import shlex
from typing import Any

from torchcts.cases.model import Case, repro_command

__all__ = ["base_record", "repro_command", "repro_script_command", "skip_record"]


def repro_script_command(case_id: str, run_name: str) -> str:
    """One line that writes a standalone script reproducing this case from this run."""
    return f"torchcts repro {shlex.quote(case_id)} --run {shlex.quote(run_name)}"


def base_record(case: Case) -> dict[str, Any]:
    return {
        "id": case.id,
        "suite": case.suite,
        "level": case.level,
        "ops": list(case.ops),
        "dtype": case.dtype,
        "kind": case.kind,
        "oracle": case.oracle,
        "requires": list(case.requires),
    }


def skip_record(case: Case, status: str, reason: str) -> dict[str, Any]:
    return {**base_record(case), "status": status, "message": reason, "duration_s": 0.0}
