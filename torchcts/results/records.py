"""Case records: one JSON object per case, the single source every report is rebuilt from."""

from __future__ import annotations

import shlex
from typing import Any

from torchcts.cases.model import Case


def repro_command(case_id: str, device: str, validation: bool = False, *, manifest: str | None = None,
                  sample: int | None = None, level: int | None = None) -> str:
    """One line that reruns just this case, as printed: the manifest when it is not the one found
    by default, the level when the case is above the manifest's, the one failing sample."""
    parts = ["torchcts run", "--validation" if validation else f"--device {shlex.quote(device)}"]
    if manifest and not validation:
        parts.append(f"--manifest {shlex.quote(manifest)}")
    parts.append(f"--case {shlex.quote(case_id)}")
    if level is not None:
        parts.append(f"--level {level}")
    if sample is not None:
        parts.append(f"--sample {sample}")
    return " ".join(parts)


def record_repro(record: dict[str, Any], spec: dict[str, Any], manifest: str | None) -> str:
    """`repro_command` for a run's record; `manifest` is the `--manifest` value as given."""
    from torchcts.cases.repro_builders import failing_sample

    level = record.get("level")
    claimed = (spec.get("manifest") or {}).get("semantic_level")
    above = isinstance(level, int) and isinstance(claimed, int) and level > claimed
    return repro_command(str(record["id"]), str((spec.get("device") or {}).get("type", "DEVICE")),
                         bool(spec.get("validation")), manifest=manifest, sample=failing_sample(record),
                         level=level if above else None)


def repro_script_command(case_id: str, run_dir: str) -> str:
    """One line that writes a standalone script reproducing this case from this run folder."""
    return f"torchcts repro {shlex.quote(case_id)} --run {shlex.quote(run_dir)}"


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
