"""Exit codes and the error types that map onto them: 0 pass, 1 backend failure, 2 usage, 3 internal (README.md)."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILURES = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3


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
