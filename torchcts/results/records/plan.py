"""The run plan: the cases a run executes, written once by the CLI and read by every worker.

Workers never rebuild the case list: they read plan.jsonl, so collection in a worker costs a file
read, whatever the size of the OpInfo database.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from torchcts.model.case import Case
from torchcts.results.records.jsonl import read_jsonl
from torchcts.untrusted import Unreadable

PLAN = "plan.jsonl"


def write_plan(run_dir: Path, cases: list[Case]) -> None:
    from torchcts.safe_io import write_atomic

    write_atomic(run_dir, PLAN, "".join(json.dumps(case.to_json(), sort_keys=True) + "\n" for case in cases))


_TEXT = ("id", "runner")
_OPTIONAL_TEXT = ("suite", "dtype", "oracle", "kind")
_TEXT_LISTS = ("ops", "dtypes", "requires")


def _wrong_field(case: Case) -> str | None:
    """The first field of a plan line whose type no written plan has (a crafted or damaged line):
    every reader (repro, the workers) then takes the case's fields as they are."""
    for name in _TEXT:
        if not isinstance(getattr(case, name), str):
            return name
    for name in _OPTIONAL_TEXT:
        if not isinstance(getattr(case, name), (str, type(None))):
            return name
    for name in _TEXT_LISTS:
        if not all(isinstance(v, str) for v in getattr(case, name)):
            return name
    if not isinstance(case.params, dict):
        return "params"
    if case.level is not None and (isinstance(case.level, bool) or not isinstance(case.level, int)):
        return "level"
    return None


def read_plan(run_dir: Path) -> list[Case]:
    """The plan's cases; a line that is not a case (garbled, edited) is a data problem (exit 2)."""
    return list(iter_plan(run_dir))


def iter_plan(run_dir: Path) -> Iterator[Case]:
    """The plan's cases one at a time, as `read_plan` (a garbled line raises UsageError when reached):
    a reader that needs a few of 10^6 planned cases never holds them all."""
    from torchcts.errors import UsageError

    for line in read_jsonl(run_dir / PLAN):
        wrong = None
        try:
            if line.error is not None:
                raise line.error
            case = Case.from_json(line.value)
            wrong = _wrong_field(case)
            if wrong:
                raise TypeError(wrong)
        except (ValueError, TypeError, AttributeError) as exc:
            why = (f"{wrong} of the wrong type" if wrong else exc.msg if isinstance(exc, Unreadable)  # nesting, long ints
                   else type(exc).__name__)
            raise UsageError(f"{run_dir.name}/{PLAN} line {line.number} is not a case ({why}): the run "
                             "folder was edited or damaged; rerun") from None
        yield case
