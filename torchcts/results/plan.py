"""The run plan: the cases a run executes, written once by the CLI and read by every worker.

Workers never rebuild the case list: they read plan.jsonl, so collection in a worker costs a file
read, whatever the size of the OpInfo database.
"""

from __future__ import annotations

import json
from pathlib import Path

from torchcts.cases.model import Case

PLAN = "plan.jsonl"


def write_plan(run_dir: Path, cases: list[Case]) -> None:
    with open(run_dir / PLAN, "w", encoding="utf-8") as fh:
        for case in cases:
            fh.write(json.dumps(case.to_json(), sort_keys=True) + "\n")


def read_plan(run_dir: Path) -> list[Case]:
    with open(run_dir / PLAN, encoding="utf-8") as fh:
        return [Case.from_json(json.loads(line)) for line in fh if line.strip()]
