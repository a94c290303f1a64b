"""The run plan: the cases a run executes, written once by the CLI and read by every worker.

Workers never rebuild the case list: they read plan.jsonl, so collection in a worker costs a file
read, whatever the size of the OpInfo database.
"""

from __future__ import annotations

import json
from pathlib import Path

from torchcts.cases.model import Case
from torchcts.results.jsonl import read_jsonl
from torchcts.untrusted import Unreadable

PLAN = "plan.jsonl"


def write_plan(run_dir: Path, cases: list[Case]) -> None:
    from torchcts.safe_io import write_atomic

    write_atomic(run_dir, PLAN, "".join(json.dumps(case.to_json(), sort_keys=True) + "\n" for case in cases))


def read_plan(run_dir: Path) -> list[Case]:
    """The plan's cases; a line that is not a case (garbled, edited) is a data problem (exit 2)."""
    from torchcts.errors import UsageError

    cases = []
    for line in read_jsonl(run_dir / PLAN):
        try:
            if line.error is not None:
                raise line.error
            case = Case.from_json(line.value)
            if not isinstance(case.id, str) or not isinstance(case.runner, str) or not isinstance(case.params, dict):
                raise TypeError("id, runner or params of the wrong type")
        except (ValueError, TypeError, AttributeError) as exc:
            why = exc.msg if isinstance(exc, Unreadable) else type(exc).__name__  # nesting, long integers
            raise UsageError(f"{run_dir.name}/{PLAN} line {line.number} is not a case ({why}): the run "
                             "folder was edited or damaged; rerun") from None
        cases.append(case)
    return cases
