"""Exit codes and the error types that map onto them: 0 pass, 1 backend failure, 2 usage, 3 internal, 130
interrupted by SIGINT; no others (README.md)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from enum import IntEnum


class ExitCode(IntEnum):
    """Every status a command exits with, one enum as pytest's `ExitCode`: a member is its int."""

    OK = 0
    FAILURES = 1
    USAGE = 2
    INTERNAL = 3
    # SIGINT (Ctrl-C): no verdict. 128 + SIGINT, what a shell reports for a process the signal ended, so
    # CI shows a cancelled job; finished records are kept and run.json says "interrupted".
    INTERRUPTED = 130

    def __str__(self) -> str:  # the number, as Python 3.11+ prints an IntEnum (3.10 prints the name)
        return str(self.value)


# A list of problems (a manifest's, an evidence store's) is shown up to this many lines, then a
# count: a generated or garbled file can hold thousands, and the first ones say what to fix.
MAX_PROBLEMS = 20


class UsageError(Exception):
    """A wrong input from the user: printed as one line, exit status 2.

    The message must name the problem and the fix.
    """


class ManifestError(UsageError):
    """A manifest with one or more problems; each problem is reported on its own line."""

    def __init__(self, problems: list[str], source: str = "manifest") -> None:
        self.problems = list(problems)
        self.source = source
        super().__init__(f"{source}: " + "; ".join(self.problems))


def first_line(exc: BaseException, limit: int | None = None) -> str:
    """The first non-blank line of an exception's text (at most `limit` characters; "" for none):
    what a one-line message (a record, a usage error, a not_applicable reason) shows of it."""
    text = str(exc).strip()
    return text.splitlines()[0][:limit] if text else ""


def did_you_mean(word: str, known: Iterable[str], otherwise: str, prefix: str = "") -> str:
    """The fix for an unknown name, to end a UsageError: ": did you mean 'X'?" for the closest known
    name (`prefix` before it, as a key path), else "; " + `otherwise` (where the names are listed).
    Seventy names in one line hide the fix."""
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f": did you mean '{prefix}{close[0]}'?" if close else f"; {otherwise}"
