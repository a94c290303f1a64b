"""The one reader of a run's JSON-lines files (cases.jsonl, plan.jsonl): every line, parsed or with its problem.

A reader that skipped what it could not parse would lose a case without a word. This one yields
each non-blank line with its number in the file and either the value or why it is unreadable, and
each caller decides what a bad line means: `rundir.scan_records` counts it in every report,
`plan.read_plan` refuses the run folder (exit 2), the self-test reports it in its outcome.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torchcts import untrusted
from torchcts.untrusted import Unreadable, loads, open_regular, read_lines

__all__ = ["MAX_LINE", "JsonLine", "read_jsonl"]

MAX_LINE = untrusted.MAX_LINE  # a longer line is one unreadable line (read_lines), never held whole


@dataclass(frozen=True)
class JsonLine:
    number: int  # 1-based, as an editor counts the file's lines (blank ones included)
    value: Any = None  # the parsed value; None when `error` is set
    error: ValueError | None = None  # UnicodeDecodeError (not UTF-8), json.JSONDecodeError (not JSON), Unreadable

    @property
    def problem(self) -> str | None:
        """What a report says of an unreadable line; None for a readable one."""
        if self.error is None:
            return None
        if isinstance(self.error, UnicodeDecodeError):
            return "not UTF-8 text"
        if isinstance(self.error, Unreadable):
            return f"JSON out of bounds ({self.error.msg})"
        return "not JSON (a torn or garbled line)"


def read_jsonl(path: Path) -> Iterator[JsonLine]:
    """Every non-blank line of `path` in order, one at a time (memory holds one line of at most
    MAX_LINE bytes, whatever the file's size). OSError as open raises it (a missing file is the
    caller's case); untrusted.NotRegular (a ValueError) for a FIFO or a device, never opened to block."""
    with open_regular(path) as fh:
        for number, raw in enumerate(read_lines(fh, MAX_LINE), 1):
            if raw is None:
                yield JsonLine(number, error=Unreadable(f"a line longer than {MAX_LINE} bytes"))
                continue
            if not raw.strip():
                continue
            try:
                value = loads(raw.decode("utf-8"))
            except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError are both ValueErrors
                yield JsonLine(number, error=exc)
                continue
            yield JsonLine(number, value)
