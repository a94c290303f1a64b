"""What pytest itself prints during a run goes through the scrubber and the terminal quoting too.

pytest's tracebacks, FAILED lines and xdist's `[gw0] linux Python ... cwd: /home/...` lines are
written by its terminal reporter, not by TorchCTS: they would show host names, home folders and
absolute paths, and a case id or message holding escape sequences would reach the terminal raw
(issue 31). The guard wraps the reporter's writer, before the session header is printed: every
text is scrubbed (`results/records/scrub.py`) and stripped of escape sequences and control characters
(`results/reports/quoting.py: terminal`); pytest's own colours are added after, and the carriage return
that starts one of its rewritten lines is kept.
"""

from __future__ import annotations

from typing import Any

import pytest

from torchcts.results.records.scrub import scrub
from torchcts.results.reports.quoting import terminal


def clean(msg: str) -> str:
    """`msg` as the terminal may show it: a leading carriage return (pytest's rewrite) survives."""
    body = msg.lstrip("\r")
    return msg[: len(msg) - len(body)] + terminal(scrub(body))


def guard_writer(writer: Any) -> None:
    """Route `writer.write` (which `line`, `write_line` and `_write_source` use) through `clean`."""
    if getattr(writer, "_torchcts_guarded", False):
        return
    original = writer.write

    def write(msg: str, **kwargs: Any) -> None:
        original(clean(msg) if msg else msg, **kwargs)

    writer.write = write
    writer._torchcts_guarded = True


class TerminalGuard:
    """Registered by the plugin; wraps the terminal reporter before it prints the session header."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        writer = getattr(reporter, "_tw", None)
        if writer is not None:
            guard_writer(writer)
